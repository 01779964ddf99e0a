"""The landing sensor's watch on the reference files, for the Dagster UI and the automation (run_all reports the
same source versions itself, pipelines/run_all.py).

Replacing a reference file (a new OEWS or O*NET release in data/raw) and rerunning `reference_refresh_job` from the
UI used to leave everything downstream FRESH, and without the rerun nothing happened at all: only run_all recorded
the reference files' data versions (a probe, 2026-12-07). Each tick of the landing sensor now
- hashes the reference and gold-label files (`resources/source_versions.py`, ~0.04 s on the mirror) and records an
  observation of `reference_source_files` / `gold_label_files` when a version differs from the latest observed, so
  the UI marks their dependents stale;
- requests `reference_refresh_job` (trigger `reference files changed`) when the reference data was made from other
  reference files than the ones there now, and holds the benchmark refreshes while a reference run is pending
  (a labeling would read a task index being rewritten): `reference_watch`;
- requests the refresh of a partition whose labels were made from an older task index (trigger `reference data
  changed`; relabeled from the cache, as run_all does), retried and given up as a folder's refresh is:
  `labels_behind_reference`, `relabel_plan`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dagster import AssetKey, DagsterInstance, RunRequest, RunsFilter
from dagster._core.definitions.data_version import (
    extract_data_provenance_from_entry,
    extract_data_version_from_entry,
)

from pipelines.jobs import (
    BENCHMARK_TAG,
    PENDING_STATUSES,
    PENDING_WORDS,
    REFERENCE_SELECTION,
    RETRY_STATUSES,
    TRIGGER_TAG,
    reference_refresh_job,
    run_kinds,
)
from resources import source_versions as sv

LABELS_KEY = AssetKey("prompt_work")  # made with prompt_task_labels by the labeling step: the partition's labels
REFERENCE_CHANGED = "reference files changed"  # trigger of the reference run requested on a file change
RELABEL = "reference data changed"  # trigger of a partition's refresh after the reference data it reads changed
FILES_TAG = "benchmap/reference_files"  # the reference files' version a requested reference run makes
REFERENCE_DATA_TAG = "benchmap/reference_data"  # the reference data version a requested relabel reads


@dataclass
class ReferenceWatch:
    """What one tick decides about the reference files."""

    events: list = field(default_factory=list)  # observations of changed source versions, recorded this tick
    request: RunRequest | None = None  # reference_refresh_job, when the reference data is behind its files
    waiting: str | None = None  # why the benchmark refreshes wait this tick (None: they need not)
    current: str | None = None  # the files' version, when the reference data is made from it (the cursor keeps it)


def reference_run_pending(instance: DagsterInstance, graph: Any) -> str | None:
    """What a skip reason says of a queued or running run making the reference data (the UI's launch, run_all's
    step, the sensor's own request; a probe saw a second one requested), or None without one."""
    making = [run for run in instance.get_runs(RunsFilter(statuses=PENDING_STATUSES))
              if "reference" in run_kinds(run, graph)]
    if not making:
        return None
    return f"a run making the reference data is {PENDING_WORDS.get(making[0].status, 'pending')} ({making[0].run_id[:8]})"


def _recorded_files_version(instance: DagsterInstance, graph: Any) -> str | None:
    """The reference files' version the latest materialization of the reference data read (from one of the
    assets that read the files directly: they are made together by reference_refresh_job and run_all's step);
    None when none was made."""
    reference = REFERENCE_SELECTION.resolve(graph)  # once, not once per child key
    readers = sorted(key for key in graph.get(sv.REFERENCE_FILES_KEY).child_keys
                     if key in reference and key in graph.materializable_asset_keys)
    versions = []
    for key in readers:
        record = instance.get_latest_data_version_record(key)
        provenance = extract_data_provenance_from_entry(record.event_log_entry) if record is not None else None
        if provenance is not None and sv.REFERENCE_FILES_KEY in provenance.input_data_versions:
            versions.append((record.storage_id, provenance.input_data_versions[sv.REFERENCE_FILES_KEY].value))
    return max(versions)[1] if versions else None


def reference_watch(instance: DagsterInstance, graph: Any, max_retries: int, seen: str | None = None
                    ) -> ReferenceWatch:
    """Record changed source versions, and request the reference data when it was made from other files. `seen`:
    the files' version the cursor found the reference data made from (then only the observations are read)."""
    watch = ReferenceWatch()
    if graph is None or not graph.has(sv.REFERENCE_FILES_KEY):
        return watch
    current = sv.reference_files_version()
    for key, version in ((sv.REFERENCE_FILES_KEY, current), (sv.GOLD_FILES_KEY, sv.gold_files_version())):
        if graph.has(key) and sv.observed(instance, key, None).get(None) != version:
            watch.events.append(sv.observation(key, version))
    making = reference_run_pending(instance, graph)
    if making is not None:
        watch.waiting = making
        return watch
    if seen == current:  # a quiet tick: the reference data was made from these files
        watch.current = current
        return watch
    recorded = _recorded_files_version(instance, graph)
    if recorded is None or recorded == current:  # never made (the new-instance path requests it) or up to date
        watch.current = current if recorded == current else None
        return watch
    runs = [r.dagster_run for r in instance.get_run_records(RunsFilter(
        job_name=reference_refresh_job.name, tags={TRIGGER_TAG: REFERENCE_CHANGED, FILES_TAG: current}))]
    # the failed ones only: files back to an earlier version were made by a run that succeeded then (a probe,
    # 2026-12-08, counted every run and held the sensor for good after four changes back and forth)
    failed = [run for run in runs if run.status in RETRY_STATUSES]
    if len(failed) > max_retries:
        watch.waiting = (f"the reference files changed and {reference_refresh_job.name} failed in {len(failed)} "
                         f"runs (the last: {failed[0].run_id[:8]}): see its log, then launch it from the UI or run "
                         "`python -m pipelines.run_all`")
        return watch
    watch.request = RunRequest(run_key=f"reference-files:{current[:16]}:{len(runs)}",
                               job_name=reference_refresh_job.name,
                               tags={TRIGGER_TAG: REFERENCE_CHANGED, FILES_TAG: current})
    watch.waiting = "the reference files changed: the reference data is requested first"
    return watch


def reference_data_version(instance: DagsterInstance, graph: Any, labels_key: AssetKey) -> dict[AssetKey, str]:
    """The current data version of each reference asset the labels read (the task index)."""
    if graph is None or not graph.has(labels_key):
        return {}
    reference = REFERENCE_SELECTION.resolve(graph)
    current = {}
    for parent in sorted(graph.get(labels_key).parent_keys):
        if parent in reference:
            record = instance.get_latest_data_version_record(parent)
            version = extract_data_version_from_entry(record.event_log_entry) if record is not None else None
            if version is not None:
                current[parent] = version.value
    return current


def labels_behind_reference(instance: DagsterInstance, labels_key: AssetKey, partition: str,
                            current: dict[AssetKey, str]) -> bool:
    """Whether the partition's latest labels were made from another version of the reference data they read than
    `current` (reference_data_version): Dagster's own stale cause, read from the labels' data provenance."""
    record = instance.get_latest_data_version_record(labels_key, partition_key=partition)
    provenance = extract_data_provenance_from_entry(record.event_log_entry) if record is not None else None
    if provenance is None:
        return False
    return any(key in provenance.input_data_versions and provenance.input_data_versions[key].value != version
               for key, version in current.items())


def current_reference_tag(current: dict[AssetKey, str]) -> str:
    """One string naming the reference data version a relabel reads (run tag and run key part)."""
    return ",".join(f"{key.to_user_string()}={version}" for key, version in sorted(current.items()))


@dataclass
class RelabelPlan:
    """The partitions whose labels are behind the reference data, as one tick decides."""

    requests: list[RunRequest] = field(default_factory=list)
    given_up: list[str] = field(default_factory=list)  # their relabel failed in more than max_retries + 1 runs
    current: str | None = None  # the reference data every partition's labels are made from (cursor), else None


def relabel_plan(instance: DagsterInstance, graph: Any, labels_key: AssetKey, unchanged: dict[str, str],
                 seen: str | None, skip: set[str], max_retries: int,
                 make_request: Callable[[str, str, str, dict[str, str]], RunRequest]) -> RelabelPlan:
    """Requests (`make_request(partition, content, run key, extra tags)`) for the partitions of `unchanged`
    (partition -> content, outside `skip`: retried or given up by the folder's own rules) whose labels were made
    from an older version of the reference data they read. `seen` is the version the cursor found every label
    made from: then nothing is read but that version (a quiet tick: one query)."""
    current = reference_data_version(instance, graph, labels_key)
    tag = current_reference_tag(current)
    if not current or tag == seen:
        return RelabelPlan(current=tag or seen)
    behind = {name: digest for name, digest in sorted(unchanged.items())
              if name not in skip and labels_behind_reference(instance, labels_key, name, current)}
    plan = RelabelPlan(current=None if behind or skip & set(unchanged) else tag)
    if not behind:
        return plan
    runs: dict[str, list] = {}
    for record in instance.get_run_records(RunsFilter(tags={REFERENCE_DATA_TAG: tag})):  # newest first
        runs.setdefault(record.dagster_run.tags.get(BENCHMARK_TAG, ""), []).append(record.dagster_run)
    digest_of_tag = hashlib.sha256(tag.encode()).hexdigest()[:12]
    for name, digest in behind.items():
        made = runs.get(name, [])
        if made and made[0].status in PENDING_STATUSES:
            continue  # its relabel is under way
        if sum(run.status in RETRY_STATUSES for run in made) > max_retries:
            plan.given_up.append(name)
            continue
        plan.requests.append(make_request(name, digest, f"{name}:{digest}:reference-{digest_of_tag}-{len(made)}",
                                          {REFERENCE_DATA_TAG: tag}))
    return plan
