"""The landing sensor: refresh a benchmark's partition when its landing folder appears or changes.

`benchmark_landing_sensor` scans the landing roots each tick and hashes every benchmark folder
(models.benchmarks.content_hash). The cursor (JSON) holds the last hash acted on per benchmark. A new folder or a
changed hash adds the dynamic partition (if needed) and requests `benchmark_refresh_job` for exactly that partition
(run_key = name:hash: the daemon never launches one key twice; a retry has a key of its own, and so has a folder
back to a content it held before, name:hash:again-N). An unchanged folder
requests nothing; nor does any folder while an analysis run is queued or running (its release would mix old and
new). When the cursor has no entry (a fresh sensor after `run_all`), the hash in the latest `benchmarks`
materialization of that partition counts as seen. A refresh whose run did not succeed (failed or cancelled; not
while it is queued or running) and whose content no successful run has made since (the `benchmarks` table may hold
it: a run whose labeling failed wrote it first) is requested again with run_key name:hash:retry-N, at most
MAX_REFRESH_RETRIES times per content; then a warning, once, and nothing until the folder changes
(`failed_refreshes`). A partition whose folder disappeared logs a warning once and requests nothing: its warehouse
rows are kept until a plain `python -m pipelines.run_all` removes them (the warning says so). A folder that cannot be
a benchmark is warned about when the problem list changes (the tick that records it under `_landing`); every quiet
tick's skip reason names such folders.

The same tick reports the external asset `benchmark_index_files` materialized when the index files
(data/indexes/*.toml) differ from the ones the latest `benchmark_index_membership` was built from, and watches the
reference files (pipelines/reference_watch.py: observed, the reference data requested when made from other files,
then the labels read from an older task index requested again).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from dagster import (
    AddDynamicPartitionsRequest,
    AssetKey,
    AssetMaterialization,
    AssetRecordsFilter,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from assets.benchmarks import TABLES
from assets.indexes import INDEX_FILES_KEY, INDEX_FINGERPRINT
from assets.partitions import BENCHMARK_PARTITIONS_NAME
from models import benchmarks as bm
from models.labeling.limits import MAX_LABEL_RUNS
from models.report.formatting import count
from pipelines.jobs import (
    BENCHMARK_SELECTION,
    BENCHMARK_TAG,
    CONTENT_TAG,
    PENDING_STATUSES,
    REFERENCE_SELECTION,
    RETRY_STATUSES,
    TRIGGER_TAG,
    benchmark_refresh_job,
    reference_refresh_job,
    run_kinds,
)
from pipelines.reference_watch import (
    LABELS_KEY,
    RELABEL,
    reference_run_pending,
    reference_watch,
    relabel_plan,
)
from resources.landing import folder_content_hash
from resources.source_versions import LANDING_FOLDERS_KEY, index_files_fingerprint, observation
from resources.sources import discover_landing

CURSOR_VERSION = 1
LANDING_INTERVAL_S = 30
MEMBERSHIP_KEY = AssetKey("benchmark_index_membership")
# runs requested again for one content after its first run did not succeed: a passing cause (a cancel, a killed
# worker, a locked warehouse) is over within a few, and a lasting one (a file every run refuses) is not run again
# on every tick
MAX_REFRESH_RETRIES = 3


@dataclass
class LandingPlan:
    """What one evaluation of the landing sensor decides (pure: testable without Dagster)."""

    add_partitions: list[str] = field(default_factory=list)
    refresh: list[tuple[str, str, str]] = field(default_factory=list)  # (partition, hash, 'new'|'changed')
    newly_missing: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # folders that could not be hashed this tick
    unchanged: dict[str, str] = field(default_factory=dict)  # registered partition -> its content, seen before
    state: dict = field(default_factory=dict)


def load_cursor(cursor: str | None) -> dict:
    if not cursor:
        return {"v": CURSOR_VERSION, "hashes": {}, "missing": []}
    state = json.loads(cursor)
    if state.get("v") != CURSOR_VERSION:
        return {"v": CURSOR_VERSION, "hashes": {}, "missing": []}
    return state


def plan_landing_refresh(landing: bm.Landing, state: dict, registered: Iterable[str],
                         stored_hash: Callable[[str], str | None],
                         refreshed: Callable[[str], str | None] | None = None) -> LandingPlan:
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
            # e.g. materialized by run_all before this sensor had a cursor: seen when that refresh was whole
            seen = stored_hash(name) if refreshed is None else refreshed(name)
        elif seen != digest and name in registered and refreshed is not None and refreshed(name) == digest:
            # a run that succeeded made this content since the cursor took the folder (run_all, or the UI's job
            # while the sensor was stopped): a probe saw it refreshed again, and a whole analysis run after it
            seen = digest
        if seen == digest and name in registered:
            hashes[name] = digest
            plan.unchanged[name] = digest
            continue
        if name not in registered:
            plan.add_partitions.append(name)
        plan.refresh.append((name, digest, "new" if seen is None else "changed"))
        hashes[name] = digest
    missing = sorted(registered - set(current) - skipped - {bm.LANDING_PARTITION})
    plan.newly_missing = [name for name in missing if name not in set(state.get("missing", []))]
    plan.state = {"v": CURSOR_VERSION, "hashes": hashes, "missing": missing}
    return plan


def _latest_landing(instance: DagsterInstance, partition: str) -> tuple[str | None, str | None, int]:
    """(run id, content hash, storage id) of the latest `benchmarks` materialization of one partition; (None, None,
    -1) without."""
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("benchmarks"), asset_partitions=[partition]), limit=1).records
    if not records or records[0].asset_materialization is None:
        return None, None, -1
    value = records[0].asset_materialization.metadata.get("content_hash")
    return records[0].run_id, None if value is None else str(value.value), records[0].storage_id


def stored_content_hash(instance: DagsterInstance, partition: str) -> str | None:
    """The content hash recorded by the latest `benchmarks` materialization of one partition."""
    return _latest_landing(instance, partition)[1]


def _labeled_after(instance: DagsterInstance, partition: str, storage_id: int) -> bool:
    """Whether the partition's labels were materialized after its `benchmarks` materialization `storage_id`."""
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=LABELS_KEY, asset_partitions=[partition]), limit=1).records
    return bool(records) and records[0].storage_id > storage_id


def refreshed_content(instance: DagsterInstance, partition: str) -> str | None:
    """The content hash of the latest `benchmarks` materialization of one partition, when the run that wrote it
    succeeded (or is still going) and the partition's labels were made after it: the whole refresh was made. A run
    whose labeling failed after its landing step had written the new content to `benchmarks` made only half of it;
    so did a successful run of the benchmark tables alone (the UI's "Materialize selected" on them: the sensor took
    its content as refreshed, and the analysis waited for labels nothing requested; a probe, 2026-12-07)."""
    run_id, content, storage_id = _latest_landing(instance, partition)
    run = instance.get_run_by_id(run_id) if run_id else None
    if run is None or (run.status != DagsterRunStatus.SUCCESS and run.status not in PENDING_STATUSES):
        return None
    if run.status == DagsterRunStatus.SUCCESS and partition != bm.LANDING_PARTITION and not _labeled_after(
            instance, partition, storage_id):  # `_landing` has no labels: its tables are the whole refresh
        return None
    return content


@dataclass(frozen=True)
class FailedRefresh:
    """The latest run requested for a folder's current content, which did not succeed."""

    partition: str
    digest: str
    runs: int  # runs made for this content so far: the first and its retries
    run_id: str
    status: str

    @property
    def given_up(self) -> bool:
        return self.runs > MAX_REFRESH_RETRIES


def failed_refreshes(instance: DagsterInstance, unchanged: dict[str, str],
                     refreshed: Callable[[str], str | None]) -> list[FailedRefresh]:
    """The folders of `unchanged` (partition -> current content, already requested or seen) whose latest run for
    that content failed or was cancelled while no successful run has made that content (`refreshed`: partition -> the
    content its latest successful refresh wrote, `refreshed_content`). The cursor records a content when its run is
    requested, and the daemon never launches a run key twice, so without this a failed run left the partition
    stale until the folder changed again. A run queued or running is waited for; a content made since by another
    run (run_all) is not requested. (It used to look at the `benchmarks` table's content only, which a run whose
    labeling failed had already written: that refresh was never requested again, its labels stayed behind.)"""
    if not unchanged:
        return []
    records = instance.get_run_records(RunsFilter(  # newest first; one read for every folder
        tags={BENCHMARK_TAG: sorted(unchanged), CONTENT_TAG: sorted(set(unchanged.values()))}))
    runs: dict[str, list] = {}
    for record in records:
        run = record.dagster_run
        partition = run.tags.get(BENCHMARK_TAG, "")
        if unchanged.get(partition) == run.tags.get(CONTENT_TAG):
            runs.setdefault(partition, []).append(run)
    failed = []
    for partition, made in sorted(runs.items()):
        latest = made[0]
        if latest.status not in RETRY_STATUSES or refreshed(partition) == unchanged[partition]:
            continue
        # this request's runs: back to its first (a folder that went back to an earlier content was requested
        # anew then, and the runs of that earlier time do not use up this one's retries)
        first = next((i for i, run in enumerate(made) if run.tags.get(TRIGGER_TAG) != "retry"), len(made) - 1)
        failed.append(FailedRefresh(partition, unchanged[partition], first + 1, latest.run_id,
                                    latest.status.value.lower()))
    return failed


def first_run_key(instance: DagsterInstance, name: str, digest: str) -> str:
    """The run key of a first request for a folder's content: name:hash, or name:hash:again-N when the folder
    held that content before (X -> Y -> X): the daemon never launches a key twice, so the old key would leave
    the partition with Y's rows."""
    before = instance.get_run_records(RunsFilter(tags={BENCHMARK_TAG: name, CONTENT_TAG: digest}))
    requests = sum(1 for record in before if record.dagster_run.tags.get(TRIGGER_TAG) != "retry")
    return f"{name}:{digest}" if not requests else f"{name}:{digest}:again-{requests}"


def refresh_request(name: str, digest: str, why: str, run_key: str, tags: dict[str, str] | None = None) -> RunRequest:
    """The run of `benchmark_refresh_job` for one partition's content (`_landing`: its tables only)."""
    return RunRequest(
        run_key=run_key,
        partition_key=name,
        asset_selection=[AssetKey(t) for t in TABLES] if name == bm.LANDING_PARTITION else None,
        # the job runs no check on these tables (they are warehouse-wide: the analysis job's); a subset without
        # this ran two of them (a probe, 2026-12-07: Dagster subsets the checks with the assets)
        asset_check_keys=[] if name == bm.LANDING_PARTITION else None,
        tags={BENCHMARK_TAG: name, CONTENT_TAG: digest, TRIGGER_TAG: why, **(tags or {})},
        job_name=benchmark_refresh_job.name,
    )


# ------------------------------------------------------------------------------------------- reference first
REFERENCE_FIRST = "reference first"  # trigger tag of the reference run this sensor requests on a new instance


def missing_reference(instance: DagsterInstance, graph: Any) -> list[str]:
    """The reference assets a benchmark refresh reads (its labeling: the O*NET tasks, the task index) that were
    never materialized in this instance: a new one (`make dev` on a fresh clone) before any reference run."""
    if graph is None:
        return []
    needed = (REFERENCE_SELECTION & BENCHMARK_SELECTION.upstream()).resolve(graph) & graph.materializable_asset_keys
    return sorted(key.to_user_string() for key in needed if instance.get_latest_materialization_event(key) is None)


def reference_first(instance: DagsterInstance, graph: Any, missing: list[str],
                    waiting: int) -> SensorResult | RunRequest:
    """While the reference data is missing, the benchmark refreshes wait (each would fail in its labeling step,
    and be given up after its retries: a probe, 2026-12-07, on a new instance): a run of reference_refresh_job is
    requested (again after a failure, up to MAX_REFRESH_RETRIES times), or a skip reason says why nothing is."""
    runs = [r.dagster_run for r in instance.get_run_records(RunsFilter(
        job_name=reference_refresh_job.name, tags={TRIGGER_TAG: REFERENCE_FIRST}))]  # newest first
    folders = f"{count(waiting, 'benchmark folder')} wait{'s' if waiting == 1 else ''} for it"
    making = reference_run_pending(instance, graph)
    if making is not None:
        return SensorResult(skip_reason=SkipReason(f"{making}; {folders}"))
    failed = [r for r in runs if r.status in RETRY_STATUSES]
    if len(failed) > MAX_REFRESH_RETRIES:
        return SensorResult(skip_reason=SkipReason(
            f"the reference data is not in the warehouse ({', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''}) "
            f"and {reference_refresh_job.name} failed in {len(failed)} runs (the last: {failed[0].run_id[:8]}): see "
            f"its log, then launch it from the UI or run `python -m pipelines.run_all`; {folders}"))
    return RunRequest(run_key=f"reference-first:{len(runs)}", job_name=reference_refresh_job.name,
                      tags={TRIGGER_TAG: REFERENCE_FIRST})


@sensor(
    name="benchmark_landing_sensor",
    jobs=[benchmark_refresh_job, reference_refresh_job],
    minimum_interval_seconds=LANDING_INTERVAL_S,
    default_status=DefaultSensorStatus.RUNNING,
    description="Watches data/raw/benchmarks and $BENCHMAP_MIRROR/benchmarks: a new benchmark folder or a "
                "changed content hash refreshes exactly that benchmark's partition; a failed refresh is retried "
                f"up to {MAX_REFRESH_RETRIES} times, then left until the folder changes; it waits while an "
                "analysis run is queued or running, and on a new instance requests the reference data first "
                "(reference_refresh_job); it puts folders rejected whole in the _landing partition, "
                "records a changed index file (benchmark_index_files), and on changed reference files requests "
                "reference_refresh_job, then the relabel of each partition whose labels read an older task index.",
)
def benchmark_landing_sensor(context: SensorEvaluationContext) -> SensorResult:
    instance = context.instance
    graph = context.repository_def.asset_graph if context.repository_def is not None else None
    if any("analysis" in run_kinds(run, graph) for run in instance.get_runs(RunsFilter(statuses=PENDING_STATUSES))):
        # a benchmark refreshed while the analysis runs would be half in the release that run publishes (its first
        # steps read the old tables, its last ones the new: seen on a real daemon, 2026-12-04): look after it
        return SensorResult(skip_reason=SkipReason("an analysis run is queued or running: the landing zone is "
                                                   "looked at again once it has ended"), cursor=context.cursor)
    state = load_cursor(context.cursor)
    watch = reference_watch(instance, graph, MAX_REFRESH_RETRIES, state.get("reference_files"))
    if watch.waiting is not None:
        # a reference run pending or requested: a benchmark refresh now would label with a task index being rewritten
        if watch.request is not None:
            context.log.info(f"the reference files changed: requesting {reference_refresh_job.name}; the benchmark "
                             "folders and their labels are looked at once it has run")
            return SensorResult(run_requests=[watch.request], asset_events=watch.events, cursor=context.cursor)
        return SensorResult(skip_reason=SkipReason(f"{watch.waiting}; the landing zone is looked at once it has ended"),
                            asset_events=watch.events, cursor=context.cursor)
    landing = discover_landing()
    registered = instance.get_dynamic_partitions(BENCHMARK_PARTITIONS_NAME)
    # asked up to three times per folder below (the plan, the given-up list, the failed refreshes): read once a tick
    refreshed = functools.cache(lambda name: refreshed_content(instance, name))
    plan = plan_landing_refresh(landing, state, registered, lambda name: stored_content_hash(instance, name),
                                refreshed)
    for name in plan.newly_missing:
        # only run_all deletes a benchmark's rows (pipelines/run_all.py _remove_gone_benchmarks): a sensor that did
        # would drop a benchmark from the release whenever a mirror is briefly unmounted
        context.log.warning(
            f"benchmark {name!r} has a partition but its landing folder is gone; nothing is requested and its "
            "rows stay in the warehouse, the analysis and the release. To retire it, run `python -m "
            "pipelines.run_all`: it removes a gone benchmark's rows and partition and refreshes the analysis. "
            "To keep it, put the folder back.")
    for problem in plan.unreadable:
        context.log.warning(f"could not hash a landing folder (retried next tick): {problem}")
    if any(name == bm.LANDING_PARTITION for name, _, _ in plan.refresh):
        # said when the problem list changes (the tick that records it under `_landing`), not on every tick
        for problem in landing.problems:
            context.log.warning(f"landing problem ({problem.origin}) {problem.path}: {problem.reason}")
    run_requests = []
    observations = []  # the folder's data version (assets/sources.py), recorded before the run reads it
    for name, digest, why in plan.refresh:
        observations.append(observation(LANDING_FOLDERS_KEY, digest, name))
        context.log.info(f"benchmark {name!r}: {why} content {digest[:12]}: requesting a refresh")
        run_requests.append(refresh_request(name, digest, why, first_run_key(instance, name, digest)))
    # given up: partition -> content, warned once (kept while the folder holds that content and no run that
    # succeeded has made it: the UI's benchmark_refresh_job or run_all after the cause was fixed)
    given_up = {name: digest for name, digest in state.get("given_up", {}).items()
                if plan.unchanged.get(name) == digest and refreshed(name) != digest}
    failed_now = failed_refreshes(instance, plan.unchanged, refreshed)
    for failed in failed_now:
        name, digest = failed.partition, failed.digest
        if failed.given_up:
            if given_up.get(name) != digest:
                context.log.warning(
                    f"benchmark {name!r}: the refresh of content {digest[:12]} did not succeed in {failed.runs} runs "
                    f"(the last, {failed.run_id[:8]}, {failed.status}): not requested again until the folder "
                    f"changes; see that run's log, or run `python -m pipelines.run_all --force --benchmarks {name}` "
                    f"(--force also asks again the prompts given up after failing to label in {MAX_LABEL_RUNS} runs)")
                given_up[name] = digest
            continue
        context.log.info(f"benchmark {name!r}: the refresh of content {digest[:12]} ended {failed.status} (run "
                         f"{failed.run_id[:8]}): requesting it again (retry {failed.runs} of {MAX_REFRESH_RETRIES})")
        run_requests.append(refresh_request(name, digest, "retry", f"{name}:{digest}:retry-{failed.runs}"))
    # labels made from an older task index (a reference change): relabeled from the cache, as run_all does
    relabel = relabel_plan(
        instance, graph, LABELS_KEY, {n: d for n, d in plan.unchanged.items() if n != bm.LANDING_PARTITION},
        state.get("labels_reference"), {f.partition for f in failed_now} | set(given_up), MAX_REFRESH_RETRIES,
        lambda name, digest, key, tags: refresh_request(name, digest, RELABEL, key, tags))
    for request in relabel.requests:
        context.log.info(f"benchmark {request.partition_key!r}: its labels were made from an older task index: "
                         "requesting a refresh (labels from the cache)")
    run_requests += relabel.requests
    if run_requests and (missing := missing_reference(instance, graph)):
        # nothing recorded: the cursor stays, so each folder is requested once the reference data is made
        first = reference_first(instance, graph, missing, len({r.partition_key for r in run_requests}))
        if isinstance(first, SensorResult):
            return first
        context.log.info(f"the reference data is not in the warehouse ({', '.join(missing[:4])}): requesting "
                         f"{reference_refresh_job.name} first; the benchmark folders are requested once it has run")
        return SensorResult(run_requests=[first], asset_events=watch.events, cursor=context.cursor)
    state_out = {**plan.state, "given_up": given_up} if given_up else dict(plan.state)
    for key, value in (("labels_reference", relabel.current), ("reference_files", watch.current)):
        if value is not None:
            state_out[key] = value
    cursor = json.dumps(state_out, sort_keys=True)
    events: list = [*watch.events, *observations, *index_files_event(instance)]
    if len(events) > len(observations) + len(watch.events):
        context.log.info("the benchmark index files changed: reporting benchmark_index_files updated")
    if not run_requests:
        # "N unchanged" read as N landed, while a folder given up or never landed is unchanged too
        found = len(landing.benchmarks)
        message = f"no benchmark folder new or changed ({count(found, 'benchmark folder')} in the landing zone)"
        if landing.problems:
            message += (f"; {count(len(landing.problems), 'folder')} not landed ("
                        + ", ".join(sorted(p.path.name for p in landing.problems)[:10])
                        + f"; why: benchmark_rejects of partition {bm.LANDING_PARTITION})")
        if plan.state["missing"]:
            missing = plan.state["missing"]
            message += (f"; {count(len(missing), 'partition')} without a folder (" + ", ".join(missing[:10])
                        + f": `python -m pipelines.run_all` retires {'it' if len(missing) == 1 else 'them'})")
        if relabel.given_up:
            message += (f"; {count(len(relabel.given_up), 'relabel')} after a reference change failed "
                        f"{MAX_REFRESH_RETRIES + 1} times (" + ", ".join(relabel.given_up[:10])
                        + ": `python -m pipelines.run_all` makes them)")
        if given_up:
            message += (f"; {count(len(given_up), 'refresh', 'refreshes')} given up after {MAX_REFRESH_RETRIES} "
                        "retries (" + ", ".join(sorted(given_up)[:10]) + ": requested again when the folder changes)")
        if events:
            return SensorResult(asset_events=events, cursor=cursor)
        return SensorResult(skip_reason=SkipReason(message), cursor=cursor)
    adds = [AddDynamicPartitionsRequest(BENCHMARK_PARTITIONS_NAME, plan.add_partitions)] if plan.add_partitions else []
    return SensorResult(run_requests=run_requests, dynamic_partitions_requests=adds, cursor=cursor,
                        asset_events=events)


# ------------------------------------------------------------------------------------------- index files
def changed_index_files(instance: DagsterInstance) -> str | None:
    """The current fingerprint of the index files (data/indexes/*.toml) when it differs from the one the
    latest benchmark_index_membership materialization recorded and has not been reported yet; None when
    unchanged, already reported, or membership was never materialized."""
    event = instance.get_latest_materialization_event(MEMBERSHIP_KEY)
    if event is None or event.asset_materialization is None:
        return None
    recorded = event.asset_materialization.metadata.get(INDEX_FINGERPRINT)
    current = index_files_fingerprint()
    if recorded is None or str(recorded.value) == current:
        return None
    reported = instance.get_latest_materialization_event(INDEX_FILES_KEY)
    if reported is not None and reported.asset_materialization is not None:
        value = reported.asset_materialization.metadata.get(INDEX_FINGERPRINT)
        if value is not None and str(value.value) == current:
            return None
    return current


def index_files_event(instance: DagsterInstance) -> list[AssetMaterialization]:
    """A materialization of the external asset benchmark_index_files when the files changed (see above)."""
    changed = changed_index_files(instance)
    if changed is None:
        return []
    return [AssetMaterialization(INDEX_FILES_KEY, description="the benchmark index files changed",
                                 metadata={INDEX_FINGERPRINT: changed})]
