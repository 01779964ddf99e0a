"""The analysis automation: refresh the analysis once after benchmark, reference or index-file updates.

`analysis_automation_sensor` (Dagster's declarative automation, evaluated in the code server) refreshes every
asset and check of `analysis_refresh_job` once after benchmark, reference or index-file updates:
`ANALYSIS_AUTOMATION` (`AnalysisDue`, one Python condition per target) is true for a target when an asset it
reads from outside the analysis was materialized since the target was last requested or made, no run is about
to make it, and the upstream has settled (the same answer for every target of a tick): no benchmark, reference
or analysis run is queued or running and no upstream asset was materialized in the last
BENCHMAP_ANALYSIS_QUIET_S seconds (default 30), and no benchmark's labels are behind its prompts (a labeling
that failed: every analysis step would refuse to run; the analysis follows once the labels are made). All targets
then fire on the same tick, so several benchmarks refreshed together give one run.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from dagster import (
    AssetKey,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    AutomationContext,
    AutomationResult,
    BetaWarning,
    DagsterEventType,
    DagsterInstance,
    DefaultSensorStatus,
    RunsFilter,
)

from assets.partitions import BENCHMARK_PARTITIONS_NAME
from pipelines.jobs import (
    ANALYSIS_SELECTION,
    BENCHMARK_SELECTION,
    GATED_KINDS,
    KIND_TAG,
    PENDING_STATUSES,
    REFERENCE_SELECTION,
    TRIGGER_TAG,
    run_kinds,
)
from pipelines.reference_watch import LABELS_KEY, labels_behind_reference, reference_data_version
from resources.label_queries import labels_behind_prompts
from resources.settings import settings
from resources.sources import discover_landing

ANALYSIS_INTERVAL_S = 60
UPSTREAM_SELECTION = (BENCHMARK_SELECTION | REFERENCE_SELECTION).without_checks()


@dataclass(frozen=True)
class AnalysisTick:
    """What one tick of the analysis automation reads from the instance, once for all its targets."""

    settled: bool  # no benchmark, reference or analysis run pending; upstream quiet for the quiet period
    latest: dict[AssetKey, int]  # storage id of each asset's latest materialization (any partition)
    made: dict[AssetKey, int]  # target -> storage id of the start of the run that made it (handled up to there)
    in_progress: frozenset  # asset and check keys a queued or running run is to materialize or evaluate
    roots: dict  # target (asset or check key) -> the assets outside the targets it reads, directly or through targets
    parents: dict  # target -> the targets it reads directly
    instance: Any = None  # read by labels_behind_reference, only on a tick where the analysis is otherwise due
    graph: Any = None

    @cached_property
    def labels_behind_reference(self) -> list[str]:
        """Benchmarks whose labels were made from an older task index than the warehouse's (a reference change):
        the landing sensor requests their relabel; an analysis before it would publish labels of the old O*NET
        beside the new reference tables, then run again."""
        if self.instance is None or self.graph is None:
            return []
        current = reference_data_version(self.instance, self.graph, LABELS_KEY)
        if not current:
            return []
        # a partition whose folder is gone is not relabeled (its rows stay until run_all retires it): not waited for
        landed = set(discover_landing().benchmarks)
        partitions = [p for p in self.instance.get_dynamic_partitions(BENCHMARK_PARTITIONS_NAME) if p in landed]
        return [name for name in partitions
                if labels_behind_reference(self.instance, LABELS_KEY, name, current)]

    @cached_property  # read once per tick, and only on a tick where the analysis is otherwise due
    def labels_behind(self) -> dict[str, tuple[int, int]]:
        """The release gate's answer (`labels_behind_prompts`): benchmarks whose labels are not of their current
        prompts. Every analysis step would refuse to run, so the analysis waits for them instead of failing:
        after a labeling failure each of the landing sensor's retries set off one refused run (up to 4 failed
        runs). A warehouse that cannot be read (locked, damaged) holds nothing back: the run says what is wrong."""
        try:
            return labels_behind_prompts(settings().warehouse)
        except Exception:  # noqa: BLE001 - any error is the run's to report, not the tick's
            return {}


def upstream_settled(pending: list, newest_upstream: float, now: float, graph: Any = None) -> bool:
    """No benchmark, reference or analysis run among the queued or running runs `pending` (`run_kinds`: by tag, or
    by the assets a run without one selects; a run of a whole job may make any target), and no upstream
    materialization (the newest at `newest_upstream`) in the last BENCHMAP_ANALYSIS_QUIET_S seconds (the gaps
    between the runs of `run_all` or of a backfill)."""
    if any(run_kinds(run, graph) & set(GATED_KINDS) for run in pending):
        return False
    return now - newest_upstream >= settings().analysis_quiet_s


def read_tick(instance: DagsterInstance, graph: Any, now: float) -> AnalysisTick:
    """The instance as one tick sees it: every target gets the same answers (a run starting in the middle of a
    tick must not split the analysis into two runs)."""
    targets: set = set(ANALYSIS_SELECTION.resolve(graph)) | set(ANALYSIS_SELECTION.resolve_checks(graph))
    roots: dict = {}

    def roots_of(key: Any) -> set[AssetKey]:
        if key not in roots:
            roots[key] = set()  # a cycle cannot occur in an asset graph; this only guards the recursion
            found: set[AssetKey] = set()
            for parent in graph.get(key).parent_entity_keys:
                found |= roots_of(parent) if parent in targets else {parent}
            roots[key] = found
        return roots[key]

    for target in targets:
        roots_of(target)
    parents = {target: frozenset(p for p in graph.get(target).parent_entity_keys if p in targets) for target in targets}
    upstream = set(UPSTREAM_SELECTION.resolve(graph))
    keys = sorted(upstream | {k for found in roots.values() for k in found}
                  | {k for k in targets if isinstance(k, AssetKey)}, key=lambda k: k.to_user_string())
    latest: dict[AssetKey, int] = {}
    made: dict[AssetKey, int] = {}  # target -> storage id from which its latest materialization may have read
    run_starts: dict[str, int | None] = {}
    newest_upstream = 0.0
    for record in instance.get_asset_records(keys):
        key, last = record.asset_entry.asset_key, record.asset_entry.last_materialization_record
        if last is None:
            continue
        latest[key] = last.storage_id
        if key in upstream:
            newest_upstream = max(newest_upstream, last.timestamp)
        if key in targets:  # what a run made reflects its inputs as of its start, not as of its writes
            run_id = last.event_log_entry.run_id
            if run_id and run_id not in run_starts:
                started = instance.get_records_for_run(run_id, of_type=DagsterEventType.RUN_START, limit=1).records
                run_starts[run_id] = started[0].storage_id if started else None
            made[key] = run_starts.get(run_id) or last.storage_id
    pending = instance.get_runs(RunsFilter(statuses=PENDING_STATUSES))  # one read for the gate and in_progress
    in_progress = frozenset(k for run in pending for k in (*(run.asset_selection or ()),
                                                          *(run.asset_check_selection or ())))
    return AnalysisTick(upstream_settled(pending, newest_upstream, now, graph), latest, made, in_progress, roots,
                        parents, instance, graph)


class AnalysisDue(AutomationCondition):
    """True for a target when an asset it reads from outside the analysis (a benchmark, label or reference
    table, the index files; directly or through other targets) was materialized after the target was last
    handled (requested by this condition, or made by a run that started later), no run is about to make it, and
    the upstream has settled (`upstream_settled`); or when a target it reads is requested on the same tick (a benchmark that
    landed while an analysis run was running: the targets that run made after it are newer than the change but were
    computed from older targets; seen on a real daemon 2026-12-04, the follow-up run left out the report, the
    exports and the headline history). The first evaluation only starts the clock.

    One node per target, where Dagster's `any_deps_updated().since_last_handled() & ~in_progress()` is ~55 (per
    dependency): its evaluation and cursor took 0.37-0.65 s of a tick for the 62 targets, this 0.08-0.10 s
    (bench/new_benchmark.py). The node's cursor is the event-log storage id up to which it has handled."""

    @property
    def name(self) -> str:
        return "analysis_due"

    def evaluate(self, context: AutomationContext) -> AutomationResult:
        now = context.evaluation_time.timestamp()
        if now not in _TICKS:
            _TICKS.clear()
            _TICKS[now] = read_tick(context.asset_graph_view.instance, context.asset_graph, now)
        tick = _TICKS[now]
        empty = context.get_empty_subset()
        if context.cursor is None:  # a new target or a new sensor: what happened before is not its to refresh
            return AutomationResult(context, empty, cursor=str(context.max_storage_id or 0))
        handled = max(int(context.cursor), tick.made.get(context.key, -1))  # type: ignore[arg-type]
        # ... or a target it reads is requested on this tick (evaluated before it: Dagster evaluates by topological
        # level): a target made after the change by a run that read older targets (a benchmark landed while an
        # analysis run was running) is handled by the first rule but not up to date
        requested = context.request_subsets_by_key
        due = (tick.settled and context.key not in tick.in_progress
               and (any(tick.latest.get(root, -1) > handled for root in tick.roots.get(context.key, ()))
                    or any(p in requested and not requested[p].is_empty for p in tick.parents.get(context.key, ())))
               and not tick.labels_behind  # held, not handled: due again once the labels are made
               and not tick.labels_behind_reference)
        if not due:
            return AutomationResult(context, empty, cursor=context.cursor)
        return AutomationResult(context, context.candidate_subset, cursor=str(context.max_storage_id or 0))


_TICKS: dict[float, AnalysisTick] = {}  # evaluation time of the latest tick -> what it read

ANALYSIS_AUTOMATION = AnalysisDue()
# a killed or crashed analysis run is re-executed from its failure by Dagster's run retries (dagster.yaml
# run_retries: step failures are not retried); the automation itself does not request its targets again
ANALYSIS_RUN_RETRIES = 2
ANALYSIS_RUN_TAGS = {KIND_TAG: "analysis", TRIGGER_TAG: "automation",
                     "dagster/max_retries": str(ANALYSIS_RUN_RETRIES)}

# `default_condition`: on every target without a condition of its own, i.e. every asset and check of the job
# (a check must be a target itself: Dagster adds no check to a run that requests checks explicitly)
# both parameters are beta in Dagster 1.13: without the filter every import of the code location (each `make run`
# step, each test) prints two BetaWarnings
with warnings.catch_warnings():
    warnings.simplefilter("ignore", BetaWarning)
    analysis_automation_sensor = AutomationConditionSensorDefinition(
        "analysis_automation_sensor",
        target=ANALYSIS_SELECTION,
        default_condition=ANALYSIS_AUTOMATION,
        use_user_code_server=True,  # AnalysisDue is Python: evaluated in the code location, not the daemon
        run_tags=ANALYSIS_RUN_TAGS,
        minimum_interval_seconds=ANALYSIS_INTERVAL_S,
        default_status=DefaultSensorStatus.RUNNING,
        description="After benchmark, reference or index-file updates settle, refreshes once what lies downstream "
                    "of them among the unpartitioned assets (label validation, analysis, estimates, gaps, what-if, "
                    "exports) with the warehouse-wide checks; it waits while any benchmark's labels are behind its "
                    "prompts (a labeling run failed or is under way).",
    )
