"""Declarative automation of the analysis: Dagster's `AutomationCondition`, evaluated by its automation sensor.

After a benchmark partition (or the reference data, or the index files) changes, every unpartitioned asset of
`analysis_refresh_job` and the checks that job runs are materialized once, in one run, when nothing upstream
is still running. `ANALYSIS_AUTOMATION` is that condition; `with_analysis_automation` puts it on every asset
of the analysis selection (by group, as the jobs select, so an asset added later is included) and the checks
carry `ANALYSIS_CHECK_AUTOMATION` in their decorators (`assets/*`), because Dagster adds no check of its own to a run that requests
a check explicitly, and the warehouse-wide checks of the benchmarks and labels must be requested explicitly.

Why these parts and not `AutomationCondition.eager()`:
- `eager()` also waits while any upstream partition is missing. The reserved `_landing` partition never has
  labels (it holds only the landing zone's rejects), so eager would never fire. A partition run writes its
  benchmark tables and its labels together, so "no upstream run in progress" is the wait that matters.
- `code_version_changed()`: a deploy that changes an asset's code refreshes it (assets carry `code_version`).
- "No upstream run in progress" replaces the old sensor's quiet period: the landing sensor requests every new
  or changed folder of one tick together, so several benchmarks landing at once give one analysis run.

`make run` (`pipelines.run_all`) runs without a daemon and keeps its own step fingerprints
(`pipelines/run_state.py`); this module is what `dagster dev` and a deployed daemon use.
"""

from __future__ import annotations

from collections.abc import Sequence

from dagster import (
    AssetsDefinition,
    AssetSelection,
    AssetSpec,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    DagsterInstance,
    DefaultSensorStatus,
    Definitions,
    SensorResult,
    build_sensor_context,
    map_asset_specs,
)

from pipelines import run_state
from pipelines.jobs import ANALYSIS_SELECTION

ANALYSIS_INTERVAL_S = 60
SENSOR_NAME = "analysis_automation_sensor"
RUN_TAGS = {"benchmap/kind": "analysis", "benchmap/trigger": "automation"}

ANALYSIS_AUTOMATION = (
    (AutomationCondition.any_deps_updated() | AutomationCondition.code_version_changed()).since_last_handled()
    & ~AutomationCondition.any_deps_in_progress()
    & ~AutomationCondition.in_progress()
).with_label("after_upstream_settles")
# Checks have no code version; a check follows its asset (a dependency that will be requested this tick)
ANALYSIS_CHECK_AUTOMATION = (
    AutomationCondition.any_deps_updated().since_last_handled()
    & ~AutomationCondition.any_deps_in_progress()
    & ~AutomationCondition.in_progress()
).with_label("after_upstream_settles")


def analysis_assets() -> AssetSelection:
    """The assets (not checks) the condition goes on: those `analysis_refresh_job` materializes."""
    return ANALYSIS_SELECTION.without_checks()


def with_analysis_automation(assets: Sequence[AssetsDefinition | AssetSpec]) -> list[AssetsDefinition | AssetSpec]:
    """`assets` with `ANALYSIS_AUTOMATION` on every asset of the analysis selection (resolved over `assets`)."""
    keys = analysis_assets().resolve([a for a in assets if isinstance(a, AssetsDefinition)])
    return list(map_asset_specs(
        lambda spec: spec.replace_attributes(automation_condition=ANALYSIS_AUTOMATION) if spec.key in keys else spec,
        assets))


def with_code_versions(assets: Sequence[AssetsDefinition | AssetSpec],
                       version: str | None = None) -> list[AssetsDefinition | AssetSpec]:
    """`assets` with `code_version` on every asset that has none: the fingerprint of the code run_all hashes
    (models/, assets/, pipelines/, pyproject.toml), so the UI marks assets stale after a code change and the
    analysis refreshes once. An asset's own code_version (the task index's: the offline labeler's source)
    stays."""
    version = version or run_state.code_fingerprint()[:12]
    return list(map_asset_specs(
        lambda spec: spec if spec.code_version else spec.replace_attributes(code_version=version), assets))


def _sensor(in_process: bool) -> AutomationConditionSensorDefinition:
    return AutomationConditionSensorDefinition(
        SENSOR_NAME,
        target=ANALYSIS_SELECTION,
        run_tags=RUN_TAGS,
        default_status=DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=ANALYSIS_INTERVAL_S,
        description="After benchmark, reference or index-file changes settle, refreshes the analysis, gap and "
                    "export assets (and the warehouse-wide checks) once.",
        **({"use_user_code_server": True} if in_process else {}),  # a beta parameter: only where needed
    )


analysis_automation_sensor = _sensor(in_process=False)  # evaluated by the daemon, as Dagster recommends


def evaluate_analysis_automation(defs: Definitions, instance: DagsterInstance,
                                 cursor: str | None = None) -> SensorResult:
    """One tick of the analysis automation, evaluated in this process (bench/ and the tests): the same target,
    condition and run-request grouping as the daemon's `analysis_automation_sensor`."""
    context = build_sensor_context(instance=instance, definitions=defs, cursor=cursor)
    data = _sensor(in_process=True).evaluate_tick(context)
    return SensorResult(run_requests=list(data.run_requests or []), cursor=data.cursor)
