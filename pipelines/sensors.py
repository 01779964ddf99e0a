"""Sensors: refresh a benchmark when its landing folder appears or changes, then refresh the analysis once.

`benchmark_landing_sensor` scans the landing roots each tick and hashes every benchmark folder
(models.benchmarks.content_hash). The cursor (JSON) holds the last hash acted on per benchmark. A new folder
or a changed hash adds the dynamic partition (if needed) and requests `benchmark_refresh_job` for exactly that
partition (run_key = name:hash, so the daemon never runs one content twice). An unchanged folder requests
nothing.
When the cursor has no entry (a fresh sensor after `run_all`), the hash in the latest `benchmarks`
materialization of that partition counts as seen. A partition whose folder disappeared logs a warning once and
requests nothing: its warehouse rows are kept.

`analysis_refresh_sensor` requests `analysis_refresh_job` once after benchmark or reference materializations:
when the newest upstream materialization is newer than both the newest analysis materialization and the last
request, no benchmark/reference run is queued or running, and the upstream has been quiet for
BENCHMAP_ANALYSIS_QUIET_S seconds (default 30). Several benchmarks refreshed together give one analysis run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from dagster import (
    AddDynamicPartitionsRequest,
    AssetCheckKey,
    AssetKey,
    AssetRecordsFilter,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RepositoryDefinition,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from assets.benchmarks import TABLES
from models import benchmarks as bm
from pipelines.jobs import analysis_refresh_job, benchmark_refresh_job, reference_refresh_job
from pipelines.landing import folder_content_hash
from pipelines.partitions import BENCHMARK_PARTITIONS_NAME
from pipelines.run_state import index_files_fingerprint
from pipelines.settings import settings
from pipelines.sources import discover_landing

CURSOR_VERSION = 1
LANDING_INTERVAL_S = 30
ANALYSIS_INTERVAL_S = 60
PENDING_STATUSES = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
                    DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
UPSTREAM_KINDS = ["benchmark", "reference"]  # run tag benchmap/kind of jobs the analysis waits for


# ------------------------------------------------------------------------------------------- landing sensor
@dataclass
class LandingPlan:
    """What one evaluation of the landing sensor decides (pure: testable without Dagster)."""

    add_partitions: list[str] = field(default_factory=list)
    refresh: list[tuple[str, str, str]] = field(default_factory=list)  # (partition, hash, 'new'|'changed')
    newly_missing: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # folders that could not be hashed this tick
    state: dict = field(default_factory=dict)


def load_cursor(cursor: str | None) -> dict:
    if not cursor:
        return {"v": CURSOR_VERSION, "hashes": {}, "missing": []}
    state = json.loads(cursor)
    if state.get("v") != CURSOR_VERSION:
        return {"v": CURSOR_VERSION, "hashes": {}, "missing": []}
    return state


def plan_landing_refresh(landing: bm.Landing, state: dict, registered: Iterable[str],
                         stored_hash: Callable[[str], str | None]) -> LandingPlan:
    registered = set(registered)
    hashes: dict[str, str] = dict(state.get("hashes", {}))
    plan = LandingPlan()
    current: dict[str, str] = {}
    skipped: set[str] = set()
    for name, folder in landing.benchmarks.items():
        try:
            current[name] = folder_content_hash(folder.path)
        except OSError as exc:  # e.g. a file being replaced: try again next tick
            skipped.add(name)
            plan.unreadable.append(f"{name}: {exc}")
    problems = landing.problems_hash()
    if problems is not None or bm.LANDING_PARTITION in registered:
        current[bm.LANDING_PARTITION] = problems or bm.NO_PROBLEMS_HASH
    for name, digest in sorted(current.items()):
        seen = hashes.get(name)
        if seen is None and name in registered:
            seen = stored_hash(name)  # e.g. materialized by run_all before this sensor had a cursor
        if seen == digest and name in registered:
            hashes[name] = digest
            continue
        if name not in registered:
            plan.add_partitions.append(name)
        plan.refresh.append((name, digest, "new" if seen is None else "changed"))
        hashes[name] = digest
    missing = sorted(registered - set(current) - skipped - {bm.LANDING_PARTITION})
    plan.newly_missing = [name for name in missing if name not in set(state.get("missing", []))]
    plan.state = {"v": CURSOR_VERSION, "hashes": hashes, "missing": missing}
    return plan


def stored_content_hash(instance: DagsterInstance, partition: str) -> str | None:
    """The content hash recorded by the latest `benchmarks` materialization of one partition."""
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("benchmarks"), asset_partitions=[partition]), limit=1).records
    if not records or records[0].asset_materialization is None:
        return None
    value = records[0].asset_materialization.metadata.get("content_hash")
    return None if value is None else str(value.value)


@sensor(
    name="benchmark_landing_sensor",
    job=benchmark_refresh_job,
    minimum_interval_seconds=LANDING_INTERVAL_S,
    default_status=DefaultSensorStatus.RUNNING,
    description="Watches data/raw/benchmarks and $BENCHMAP_MIRROR/benchmarks: a new benchmark folder or a "
                "changed content hash refreshes exactly that benchmark's partition.",
)
def benchmark_landing_sensor(context: SensorEvaluationContext) -> SensorResult:
    instance = context.instance
    landing = discover_landing()
    registered = instance.get_dynamic_partitions(BENCHMARK_PARTITIONS_NAME)
    plan = plan_landing_refresh(landing, load_cursor(context.cursor), registered,
                                lambda name: stored_content_hash(instance, name))
    for name in plan.newly_missing:
        context.log.warning(
            f"benchmark {name!r} has a partition but its landing folder is gone; nothing is requested and "
            "its warehouse rows are kept. Restore the folder or delete the partition to retire it.")
    for problem in plan.unreadable:
        context.log.warning(f"could not hash a landing folder (retried next tick): {problem}")
    for problem in landing.problems:
        context.log.warning(f"landing problem ({problem.origin}) {problem.path}: {problem.reason}")
    run_requests = []
    for name, digest, why in plan.refresh:
        context.log.info(f"benchmark {name!r}: {why} content {digest[:12]}: requesting a refresh")
        run_requests.append(RunRequest(
            run_key=f"{name}:{digest}",
            partition_key=name,
            asset_selection=[AssetKey(t) for t in TABLES] if name == bm.LANDING_PARTITION else None,
            tags={"benchmap/benchmark": name, "benchmap/content_hash": digest, "benchmap/trigger": why},
        ))
    cursor = json.dumps(plan.state, sort_keys=True)
    if not run_requests:
        message = f"{len(landing.benchmarks)} benchmark folders unchanged"
        if plan.state["missing"]:
            message += f"; {len(plan.state['missing'])} partitions without a folder"
        return SensorResult(skip_reason=SkipReason(message), cursor=cursor)
    adds = [AddDynamicPartitionsRequest(BENCHMARK_PARTITIONS_NAME, plan.add_partitions)] if plan.add_partitions else []
    return SensorResult(run_requests=run_requests, dynamic_partitions_requests=adds, cursor=cursor)


# ------------------------------------------------------------------------------------------- analysis sensor
def _latest(instance: DagsterInstance, keys: Iterable[AssetKey]) -> tuple[int, float]:
    """(storage id, timestamp) of the newest materialization of any of `keys` (0, 0.0 when none)."""
    best = (0, 0.0)
    keys = list(keys)
    if not keys:
        return best
    for record in instance.get_asset_records(keys):
        event = record.asset_entry.last_materialization_record
        if event is not None and event.storage_id > best[0]:
            best = (event.storage_id, event.timestamp)
    return best


def job_selection(repo: RepositoryDefinition, job_name: str) -> tuple[set[AssetKey], set[AssetCheckKey]]:
    """The asset keys a job materializes and the check keys it executes."""
    layer = repo.get_job(job_name).asset_layer
    return set(layer.selected_asset_keys), set(layer.asset_graph.asset_check_keys)


MEMBERSHIP_KEY = AssetKey("benchmark_index_membership")
INDEX_FINGERPRINT = "index_files_fingerprint"  # metadata of benchmark_index_membership


def changed_index_files(instance: DagsterInstance) -> str | None:
    """The current fingerprint of the index files (data/indexes/*.toml) when it differs from the one the
    latest benchmark_index_membership materialization recorded; None when unchanged or never materialized."""
    event = instance.get_latest_materialization_event(MEMBERSHIP_KEY)
    if event is None or event.asset_materialization is None:
        return None
    recorded = event.asset_materialization.metadata.get(INDEX_FINGERPRINT)
    current = index_files_fingerprint()
    return current if recorded is not None and str(recorded.value) != current else None


def quiet_seconds() -> float:
    return settings().analysis_quiet_s


@sensor(
    name="analysis_refresh_sensor",
    job=analysis_refresh_job,
    minimum_interval_seconds=ANALYSIS_INTERVAL_S,
    default_status=DefaultSensorStatus.RUNNING,
    description="After benchmark (or reference) refreshes settle, requests one refresh of the unpartitioned "
                "analysis and export assets.",
)
def analysis_refresh_sensor(context: SensorEvaluationContext) -> SensorResult | SkipReason:
    repo = context.repository_def
    if repo is None:
        return SkipReason("no repository definition in the sensor context")
    analysis_keys, analysis_checks = job_selection(repo, analysis_refresh_job.name)
    if not analysis_keys and not analysis_checks:
        return SkipReason("analysis_refresh_job selects no assets or checks yet")
    upstream_keys: set[AssetKey] = set()
    for job in (benchmark_refresh_job, reference_refresh_job):
        upstream_keys |= job_selection(repo, job.name)[0]
    instance = context.instance
    upstream_id, upstream_ts = _latest(instance, upstream_keys)
    analysis_id, _ = _latest(instance, analysis_keys)
    requested = int(context.cursor or 0)
    if upstream_id <= max(analysis_id, requested):
        # an edited index file (data/indexes/*.toml) refreshes the analysis too: membership and every
        # per-index table; the run key makes one request per content of the index files
        changed = changed_index_files(instance) if MEMBERSHIP_KEY in analysis_keys else None
        if changed is None:
            return SkipReason("analysis is up to date with the benchmark and reference tables")
        context.log.info("the benchmark index files changed: refreshing the analysis")
        return SensorResult(
            run_requests=[RunRequest(run_key=f"indexes-{changed[:16]}", tags={"benchmap/trigger": "index-files"})],
            cursor=context.cursor,
        )
    pending = instance.get_runs(RunsFilter(statuses=PENDING_STATUSES, tags={"benchmap/kind": UPSTREAM_KINDS}),
                                limit=1)
    if pending:
        return SkipReason(f"waiting for run {pending[0].run_id} ({pending[0].job_name}) to finish")
    if time.time() - upstream_ts < quiet_seconds():
        return SkipReason(f"waiting for {quiet_seconds():.0f}s without new benchmark materializations")
    context.log.info(f"upstream materialization {upstream_id} is newer than the analysis: refreshing it")
    return SensorResult(
        run_requests=[RunRequest(run_key=f"analysis-after-{upstream_id}",
                                 tags={"benchmap/trigger": f"upstream-{upstream_id}"})],
        cursor=str(upstream_id),
    )


SENSORS: list = [benchmark_landing_sensor, analysis_refresh_sensor]
