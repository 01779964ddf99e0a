"""What `run_all` runs: each step (the reference data, one benchmark partition, the analysis) when Dagster's
records say one of its assets is stale or missing, else it is skipped. `--force` runs every step.

An asset (a benchmark step: its partition) must run when
- it has no materialization this warehouse can trust (see below), or an attempt since its latest one did not
  finish (Dagster's planned-but-not-materialized record: a failed attempt may have written part of its output);
- a dependency was materialized after it (the storage ids of the latest materializations; Dagster's own
  CachingStaleStatusResolver does not see changed data across a partitioned-to-unpartitioned edge, and asks
  the instance one or two queries per asset partition and dependency partition; these records: a few per
  asset);
- its latest materialization's data provenance (what Dagster's stale status compares) names another code
  version than the asset's now (pipelines/code_versions.py: its module, what it imports, the settings that
  change results), or another data version of a source it reads than the one observed now (assets/sources.py:
  landing folder hashes, reference file checksums);
- its table is missing, unreadable or has other row counts than its latest materialization recorded
  (`row_count` metadata against resources/integrity.py's counts): rows lost behind Dagster's back.

Trusting the instance: Dagster's records live in DAGSTER_HOME, apart from the warehouse file. The warehouse
holds its own identity (table `warehouse_identity`, a random id written when run_all first sees the file); the
instance keeps, per its current warehouse, the event id from which its records describe that file. A warehouse
the instance has not seen (deleted and rebuilt, `--rebuild`, another file) is adopted at the instance's newest
event id, so every earlier materialization counts as missing and everything runs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    Definitions,
    RunsFilter,
)
from dagster._core.definitions.data_version import extract_data_provenance_from_entry
from dagster._core.storage.event_log.base import EventLogRecord

from assets.labels import COMPLETE_CHECK
from models import benchmarks as bm
from pipelines.jobs import WAREHOUSE_CHECKS
from resources import integrity
from resources import label_queries as lq
from resources import warehouse as wh

IDENTITY_TABLE = "warehouse_identity"
TRUST_KEY = "benchmap/warehouse_trust"  # instance key-value: {"id": warehouse id, "since": event id}


# --- the warehouse's identity and the instance's trust ------------------------------------------------------

def warehouse_identity(path: str | Path) -> str:
    """The warehouse's id (written on first use: a new or rebuilt file gets a new one)."""
    if Path(path).exists():  # the warm path: one read-only look
        with wh.connect(path, read_only=True) as con:
            if wh.table_exists(con, IDENTITY_TABLE):
                row = con.execute(f"select id from {IDENTITY_TABLE} limit 1").fetchone()
                if row is not None:
                    return str(row[0])
    with wh.connect(path) as con:
        con.execute(f"create table if not exists {IDENTITY_TABLE} (id varchar, created_at timestamp)")
        row = con.execute(f"select id from {IDENTITY_TABLE} limit 1").fetchone()
        if row is not None:
            return str(row[0])
        ident = uuid.uuid4().hex
        con.execute(f"insert into {IDENTITY_TABLE} values (?, ?)",
                    [ident, dt.datetime.now(dt.UTC).replace(tzinfo=None)])
        return ident


def trusted_since(instance: DagsterInstance, warehouse_path: str | None) -> int:
    """The event id after which the instance's materializations describe this warehouse (0: all of them)."""
    if not warehouse_path:
        return 0
    import fcntl

    ident = warehouse_identity(warehouse_path)
    folder = Path(warehouse_path).parent / ".run_all_locks"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "trust.lock", "a+") as handle:  # two run_alls starting together adopt the file once
        fcntl.flock(handle, fcntl.LOCK_EX)
        stored = instance.run_storage.get_cursor_values({TRUST_KEY}).get(TRUST_KEY)
        trust = json.loads(stored) if stored else {}
        if trust.get("id") == ident:
            return int(trust.get("since", 0))
        since = int(instance.event_log_storage.get_maximum_record_id() or 0)
        instance.run_storage.set_cursor_values({TRUST_KEY: json.dumps({"id": ident, "since": since})})
    if trust:
        print(f"  the instance's records are of another warehouse file: every step runs ({warehouse_path} "
              f"is adopted from event {since})")
    return since


# --- the records of one step's assets -----------------------------------------------------------------------

class Records:
    """The latest materialization of each asset (per partition), read from the instance once per stage."""

    def __init__(self, instance: DagsterInstance, defs: Definitions, since: int) -> None:
        self.instance = instance
        self.graph = defs.resolve_asset_graph()
        self.since = since
        self.refresh()

    def refresh(self) -> None:
        keys = list(self.graph.get_all_asset_keys())
        self.entries = {r.asset_entry.asset_key: r.asset_entry for r in self.instance.get_asset_records(keys)}
        self._by_partition: dict[AssetKey, dict[str, int]] = {}
        self._attempts: dict[AssetKey, dict[str, tuple[str, int]]] = {}
        self._run_success: dict[str, bool] = {}
        self._step_successes: dict[str, set[str | None]] = {}
        self._records: dict[int, EventLogRecord] = {}
        self._sources: dict[AssetKey, str | None] = {}
        self._observations: dict[AssetKey, dict[str, int]] = {}

    def failed_error_checks(self, keys: Sequence[AssetKey], *, warehouse_checks: bool = False) -> list[str]:
        """'asset:check' of the checks on `keys` (and, with `warehouse_checks`, the warehouse-wide checks the step
        runs, which sit on partitioned assets) of severity ERROR whose latest evaluation did not pass."""
        from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

        check_keys = list(self.graph.get_check_keys_for_assets(set(keys)))
        if warehouse_checks:
            check_keys = sorted({*check_keys, *WAREHOUSE_CHECKS.resolve_checks(self.graph)}, key=str)
        if not check_keys:
            return []
        latest = self.instance.event_log_storage.get_latest_asset_check_execution_by_key(check_keys)
        failed = []
        for key, record in latest.items():
            if record.status != AssetCheckExecutionRecordStatus.FAILED or record.event is None:
                continue
            evaluation = record.event.dagster_event.event_specific_data if record.event.dagster_event else None
            severity = getattr(evaluation, "severity", None)
            if severity is not None and severity.value == "ERROR":
                failed.append(f"{key.asset_key.to_user_string()}:{key.name}")
        return sorted(failed)

    def _partition_ids(self, key: AssetKey) -> dict[str, int]:
        if key not in self._by_partition:
            self._by_partition[key] = dict(self.instance.get_latest_storage_id_by_partition(
                key, DagsterEventType.ASSET_MATERIALIZATION))
            self._attempts[key] = dict(self.instance.event_log_storage
                                       .get_latest_asset_partition_materialization_attempts_without_materializations(
                                           key))
        return self._by_partition[key]

    def left_out_by_choice(self, key: AssetKey, partition: str | None) -> bool:
        """An optional output its asset chose not to emit when it last ran (the what-if's tables without a
        candidate folder; the judge sample while it is off): the latest run that planned it materialized
        nothing of it and succeeded. It cannot make its step stale; the outputs it emits do."""
        if not self.graph.get(key).assets_def.specs_by_key[key].skippable:
            return False
        run_id = self._latest_attempt(key, partition)
        return run_id is not None and (self._succeeded(run_id) or self._step_succeeded(run_id, key))

    def _step_succeeded(self, run_id: str, key: AssetKey) -> bool:
        """Whether the asset's step finished in a run that failed elsewhere: the judge sample's step chose not to
        emit its tables in a run whose labeling step failed after writing the labels
        (assets/written_with_failures.py)."""
        if run_id not in self._step_successes:
            records = self.instance.get_records_for_run(run_id, of_type=DagsterEventType.STEP_SUCCESS).records
            self._step_successes[run_id] = {r.event_log_entry.step_key for r in records}
        return self.graph.get(key).assets_def.node_def.name in self._step_successes[run_id]

    def _latest_attempt(self, key: AssetKey, partition: str | None) -> str | None:
        """The run that last planned the asset (partition) without materializing it after, if any."""
        if partition is not None and self.graph.get(key).is_partitioned:
            self._partition_ids(key)
            attempt = self._attempts[key].get(partition)
            return attempt[0] if attempt is not None else None
        entry = self.entries.get(key)
        if entry is None or entry.last_run_id is None:  # last_run_id: the latest run that planned it
            return None
        record = entry.last_materialization_record
        return None if record is not None and record.run_id == entry.last_run_id else entry.last_run_id

    def _succeeded(self, run_id: str | None) -> bool:
        if run_id is None:
            return False
        if run_id not in self._run_success:  # with every other run an attempt names: one query, not one per run
            wanted = {run_id} | {r for attempts in self._attempts.values() for r, _ in attempts.values()}
            wanted |= {e.last_run_id for e in self.entries.values() if e.last_run_id is not None}
            wanted -= set(self._run_success)
            for start in range(0, len(wanted), 500):
                batch = sorted(wanted)[start:start + 500]
                found = {r.dagster_run.run_id: r.dagster_run.status for r in self.instance.get_run_records(
                    RunsFilter(run_ids=batch), limit=len(batch))}
                self._run_success.update({r: found.get(r) == DagsterRunStatus.SUCCESS for r in batch})
        return self._run_success[run_id]

    def latest_id(self, key: AssetKey, partition: str | None) -> int | None:
        """Storage id of the latest materialization (of the partition; None: none, or one before `since`)."""
        if partition is None or not self.graph.get(key).is_partitioned:
            entry = self.entries.get(key)
            record = entry.last_materialization_record if entry is not None else None
            found = record.storage_id if record is not None else None
        else:
            found = self._partition_ids(key).get(partition)
        return found if found is not None and found > self.since else None

    def unfinished_attempt(self, key: AssetKey, partition: str | None) -> bool:
        """A planned materialization with none after it, in a run that did not succeed (failed, killed, still
        going); in a run that succeeded the asset chose not to emit it (left_out_by_choice)."""
        run_id = self._latest_attempt(key, partition)
        return run_id is not None and not self._succeeded(run_id)

    def _record(self, key: AssetKey, partition: str | None) -> EventLogRecord | None:
        """The latest trusted materialization record (a partitioned asset's: fetched for every partition at
        once, one query per asset)."""
        if partition is None or not self.graph.get(key).is_partitioned:
            entry = self.entries.get(key)
            record = entry.last_materialization_record if entry is not None else None
            return record if record is not None and record.storage_id > self.since else None
        wanted = self.latest_id(key, partition)
        if wanted is None:
            return None
        if wanted not in self._records:
            ids = [i for i in self._partition_ids(key).values() if i > self.since and i not in self._records]
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                for record in self.instance.fetch_materializations(
                        AssetRecordsFilter(asset_key=key, storage_ids=chunk), limit=len(chunk)).records:
                    self._records[record.storage_id] = record
        return self._records.get(wanted)

    def row_counts(self, keys: Sequence[AssetKey], partition: str | None) -> dict[str, int]:
        """table -> rows its latest materialization recorded (IO manager `table`/`row_count` metadata)."""
        out = {}
        for key in keys:
            record = self._record(key, partition)
            materialization = record.asset_materialization if record is not None else None
            if materialization is not None and "table" in materialization.metadata:
                rows = materialization.metadata.get("row_count")
                out[key.path[-1]] = int(rows.value) if rows is not None else 0
        return out

    def newer_parent(self, key: AssetKey, partition: str | None, own: int) -> AssetKey | None:
        """A materializable dependency whose latest materialization came after `own` (this asset's)."""
        for parent in sorted(self.graph.get(key).parent_keys):
            node = self.graph.get(parent)
            if not (node.is_materializable or node.is_external) or node.is_observable:
                continue
            if node.is_partitioned and partition is not None:
                latest = self._partition_ids(parent).get(partition)
            else:
                entry = self.entries.get(parent)
                record = entry.last_materialization_record if entry is not None else None
                latest = record.storage_id if record is not None else None
            if latest is not None and latest > own:
                return parent
        return None

    def _observation_ids(self, key: AssetKey) -> dict[str, int]:
        """partition -> storage id of the latest observation of a partitioned source (one query)."""
        if key not in self._observations:
            self._observations[key] = dict(self.instance.get_latest_storage_id_by_partition(
                key, DagsterEventType.ASSET_OBSERVATION))
        return self._observations[key]

    def _source_version(self, key: AssetKey) -> str | None:
        """The latest observed data version of an unpartitioned source."""
        from resources.source_versions import observed

        if key not in self._sources:
            self._sources[key] = observed(self.instance, key, None).get(None)
        return self._sources[key]

    def provenance_cause(self, key: AssetKey, partition: str | None) -> str | None:
        """Dagster's stale causes that are not a newer dependency (`newer_parent`), read from the data
        provenance of the latest materialization: a new code version, a new data version of a source it reads."""
        record = self._record(key, partition)
        provenance = extract_data_provenance_from_entry(record.event_log_entry) if record is not None else None
        name = key.to_user_string()
        if provenance is None:
            return None
        code_version = self.graph.get(key).code_version
        if code_version and code_version != provenance.code_version:
            return f"{name} has a new code version"
        for parent in sorted(self.graph.get(key).parent_keys):
            if not self.graph.get(parent).is_observable:
                continue
            if self.graph.get(parent).is_partitioned and partition is not None:
                # Dagster records a partitioned input by the event it read: a newer observation of the
                # partition is a new version (report_source_versions records only changed ones)
                latest = self._observation_ids(parent).get(partition)
                read = provenance.input_storage_ids.get(parent)
                changed = latest is not None and (read is None or latest > read)
            else:
                current = self._source_version(parent)
                recorded = provenance.input_data_versions.get(parent)
                changed = current is not None and (recorded is None or recorded.value != current)
            if changed:
                return f"{name} has a new dependency data version ({parent.to_user_string()})"
        return None


def lock_file(warehouse_path: str | Path, step: str) -> Path:
    """The file one run_all flocks while it does `step` (beside the warehouse; released when the process dies)."""
    folder = Path(warehouse_path).parent / ".run_all_locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{step.replace(':', '_').replace('/', '_')}.lock"


# --- the steps of one run_all -------------------------------------------------------------------------------

def only_label_gaps(failed_checks: Sequence[str]) -> bool:
    """Whether the failed ERROR checks are the completeness check alone: their cause is prompts without labels
    (exit 4; a step unchanged since would fail on the same ones)."""
    return bool(failed_checks) and all(COMPLETE_CHECK in check for check in failed_checks)


class Steps:
    """Which steps of one run_all to skip: asked of Dagster's records (module doc)."""

    def __init__(self, defs: Definitions, instance: DagsterInstance, warehouse_path: str | None,
                 report: integrity.IntegrityReport | None, force: bool, started_ns: int | None = None) -> None:
        self.path = warehouse_path
        # when `report` was taken (before it): a step another run_all finished after this is not in it
        self.started_ns = time.time_ns() if started_ns is None else started_ns
        self.report = report
        self.force = force
        self.instance = instance
        self.records = Records(instance, defs, trusted_since(instance, warehouse_path))
        self.outdated = False
        # ERROR checks of skipped steps that still fail (the completeness check alone): the run reports them
        self.carried_checks: list[str] = []

    def refresh(self) -> None:
        """Re-read the records when something ran since they were read (its materializations are what the next
        stage compares to); a warm run reads them once."""
        if self.outdated:
            self.records.refresh()
            self.outdated = False

    def ran(self) -> None:
        """A step ran (or another run_all did): the records must be read again before the next decision."""
        self.outdated = True

    def why_run(self, keys: Sequence[AssetKey], partition: str | None = None) -> tuple[str | None, bool]:
        """Why the step must run (None: every asset is up to date) and whether it ever ran before."""
        records = self.records
        latest = {k: records.latest_id(k, partition) for k in keys}
        ran_before = any(v is not None for v in latest.values())
        keys = [k for k in keys if not records.left_out_by_choice(k, partition)]
        for key in keys:
            name = key.to_user_string()
            if latest[key] is None:
                return f"{name} was never materialized in this warehouse", ran_before
            if records.unfinished_attempt(key, partition):
                return f"an attempt to materialize {name} did not finish", ran_before
        why = self._outputs_changed(keys, partition)
        if why is not None:
            return why, ran_before
        for key in keys:
            parent = records.newer_parent(key, partition, latest[key] or 0)
            if parent is not None:
                return f"{parent.to_user_string()} was materialized after {key.to_user_string()}", ran_before
            cause = records.provenance_cause(key, partition)
            if cause is not None:
                return cause, ran_before
        return None, ran_before

    def _outputs_changed(self, keys: Sequence[AssetKey], partition: str | None) -> str | None:
        """A table the step wrote that is now missing, unreadable or of another length (its partition's rows)."""
        recorded = self.records.row_counts(keys, partition)
        counts = self.report.counts if self.report else {}
        by_benchmark = self.report.by_benchmark if self.report else {}
        for table, rows in sorted(recorded.items()):
            if table not in counts:
                return f"its output table {table} is missing"
            now = int(by_benchmark[table].get(partition, 0)) if partition is not None and table in by_benchmark \
                else int(counts[table])
            if now != rows:
                return f"its output table {table} has {now:,} rows, {rows:,} when it last succeeded"
        return None

    def unchanged(self, keys: Sequence[AssetKey], label: str, *, partition: str | None = None,
                  open_failures: int = 0, force: bool = False, warehouse_checks: bool = False) -> bool:
        """True (and says so) when the step can be skipped."""
        if self.force or force or not keys:
            return False
        why, ran_before = self.why_run(keys, partition)
        if why is None and open_failures:  # a failure is not done: the plain re-run retries exactly those prompts
            print(f"- {label}: inputs unchanged, but {open_failures} prompts failed to label: running it")
            return False
        failed = (self.records.failed_error_checks(keys, warehouse_checks=warehouse_checks)
                  if why is None and partition is None else [])
        if only_label_gaps(failed):
            # its one failure is prompts without labels (given up, or another benchmark's), and with its inputs
            # unchanged it would fail on the same ones: reported, not re-run (a probe: 16 s a plain run)
            self.carried_checks += [f"{label}: {check} (ERROR)" for check in failed]
            print(f"- {label}: unchanged since it last wrote its outputs, skipped; its check {COMPLETE_CHECK} "
                  "still fails on the same prompts without labels (--force to run it)")
            return True
        if failed:  # nor is a failed check: run again, so the run reports it (exit 6) until it passes
            print(f"- {label}: inputs unchanged, but a check of severity ERROR did not pass in its last run "
                  f"({', '.join(failed[:3])}{', ...' if len(failed) > 3 else ''}): running it")
            return False
        if why is not None:
            if ran_before:
                print(f"- {label}: {why}: running it")
            return False
        print(f"- {label}: unchanged since it last wrote its outputs, skipped (--force to run it)")
        return True

    @contextlib.contextmanager
    def exclusive(self, step: str, label: str) -> Iterator[None]:
        """Hold `step`'s lock (an flock in `<warehouse folder>/.run_all_locks/`, released when the process dies).
        After waiting for another run_all, re-read Dagster's records, so a step it just ran is skipped."""
        if not self.path:
            yield
            return
        import fcntl

        with open(lock_file(self.path, step), "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                waited = False
            except BlockingIOError:
                print(f"- {label}: another run_all is running this step: waiting for it", flush=True)
                fcntl.flock(handle, fcntl.LOCK_EX)
                waited = True
            handle.seek(0)
            stamp = handle.read().strip()
            # another run_all ran the step since this one read the warehouse (whether or not this one had to
            # wait for it): its records and tables are newer than the run's start-up report
            if waited or (stamp.isdigit() and int(stamp) > self.started_ns):
                self.ran()
                self.report = integrity.check_warehouse(self.path, per_benchmark=True)
            try:
                yield
            finally:
                handle.seek(0)
                handle.truncate()
                handle.write(str(time.time_ns()))  # when this run_all last left the step
                handle.flush()

    def retryable_failures(self, benchmarks: Sequence[str], labeler: object) -> dict[str, int]:
        """Per benchmark, its prompts in label_failures (this labeler's) that a plain run still retries, and the
        texts the judge failed on in its latest run while its failures are below the retry limit (benchmarks
        without any are absent)."""
        names = [b for b in benchmarks if b != bm.LANDING_PARTITION]
        if not self.path or not Path(self.path).exists() or not names:
            return {}
        from models.labeling.cache import MAX_LABEL_RUNS
        from resources.label_cache import LabelCache

        cache = LabelCache(self.path)
        out = cache.open_failures_by_benchmark(names, getattr(labeler, "kind", None), retry_below_runs=MAX_LABEL_RUNS,
                                               unlabeled_only=True)  # not an earlier model's, labeled since
        judged = judge_failures(self.path, names)
        judge = judge_of_the_run()
        if judged and judge is not None:  # the judge's own failures still below the retry limit
            retry = cache.open_failures_by_benchmark(list(judged), judge[0], retry_below_runs=MAX_LABEL_RUNS,
                                                     labeler_version_prefix=judge[1])
            for name in retry:
                out[name] = out.get(name, 0) + judged[name]
        return out


def judge_of_the_run() -> tuple[str, str] | None:
    """(labeler, labeler_version prefix) of the LLM judge when a judge sample is configured (None also when the
    setting is malformed: the judge_sample step reports that). The prefix is the judge's model."""
    from assets.judge_sample import labeler_resource_for_judge

    try:
        judge = labeler_resource_for_judge()
    except ValueError:
        return None
    return (judge.kind, f"{judge.model}+") if judge is not None else None


def judge_failures(path: str | None, names: Sequence[str]) -> dict[str, int]:
    """Per benchmark, the sampled texts without the LLM judge's reading while a judge sample is configured: those
    it failed on in its latest run (judge_sample_design.n_failed), and the whole sample of a benchmark it labeled
    none of (no design: its estimates use the vendored reference). They leave the sample short, so they count like
    the labeler's failures (the run said "0 failed" while the sample shrank). Read from the design, not from
    label_failures: a text that left the sample, or an earlier openai labeler's failure, is not the judge's open
    work."""
    from assets.judge_sample import configured_sample

    sample = configured_sample()  # None without a judge sample, or with a malformed setting (the step says so)
    if not path or not Path(path).exists() or not names or sample is None:
        return {}
    return lq.judge_sample_gaps(path, sample, names)
