"""How `run_all` runs a step: the plan of steps read from the Definitions (reference, benchmark partitions,
downstream analysis), and the Runner that materializes one step in process (unpartitioned, one partition or a
range of partitions as one Dagster run), holding the warehouse and the labeling locks as the step needs, and
prints its line. pipelines/run_all.py decides which steps run and in what order."""

from __future__ import annotations

import contextlib
import datetime as dt
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from dagster import (
    AssetKey,
    AssetSelection,
    DagsterInstance,
    Definitions,
    ExecuteInProcessResult,
    materialize,
)
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from assets.benchmarks import FIRST_REJECT
from assets.judge_sample import ALL_NOT_WORK, JUDGE_LABELED
from assets.judge_sample import FAILED_BY_BENCHMARK as JUDGE_FAILED_BY_BENCHMARK
from assets.partitions import BENCHMARK_PARTITIONS_NAME
from assets.written_with_failures import RETRY_GIVEN_UP_TAG
from models import benchmarks as bm
from models.report.formatting import count
from pipelines import run_report as rr
from pipelines.jobs import KIND_TAG, WAREHOUSE_CHECKS
from resources import interrupts
from resources import warehouse as wh
from resources.label_cache import LabelCache
from resources.run_launcher import in_process_tags
from resources.untrusted import untrusted_scrubber

QUIET_LOGGERS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


@dataclass
class RunPlan:
    reference: list[AssetKey] = field(default_factory=list)  # unpartitioned, not downstream of benchmarks
    partitioned: list[AssetKey] = field(default_factory=list)  # per benchmark: tables, labels, ...
    landing_only: list[AssetKey] = field(default_factory=list)  # what the `_landing` partition materializes
    downstream: list[AssetKey] = field(default_factory=list)  # unpartitioned, downstream of benchmarks
    other: list[AssetKey] = field(default_factory=list)  # other partitioning: not run here


def plan_from_definitions(defs: Definitions) -> RunPlan:
    graph = defs.resolve_asset_graph()
    plan = RunPlan()
    keys = graph.toposorted_asset_keys
    materializable = set(graph.materializable_asset_keys)
    partitioned = [k for k in keys if k in materializable and graph.get(k).partitions_def is not None
                   and getattr(graph.get(k).partitions_def, "name", None) == BENCHMARK_PARTITIONS_NAME]
    downstream = AssetSelection.assets(*partitioned).downstream().resolve(graph) if partitioned else set()
    for key in keys:
        if key not in materializable:
            continue
        node = graph.get(key)
        if key in partitioned:
            plan.partitioned.append(key)
            if node.group_name == "benchmarks":
                plan.landing_only.append(key)
        elif node.partitions_def is not None:
            plan.other.append(key)
        elif key in downstream:
            plan.downstream.append(key)
        else:
            plan.reference.append(key)
    return plan


# --- the run ------------------------------------------------------------------------------------------------

def spare_log_helpers_from_ctrl_c() -> None:
    """Start the helpers that mirror a Dagster run's output to the console with SIGINT blocked. Dagster starts a
    `tail` and a Python watcher per stream for each run (its compute logs); a terminal's Ctrl-C reaches the whole
    process group, and each watcher died with a raw KeyboardInterrupt traceback. A child inherits the signal
    mask, so now only run_all takes the interrupt; Dagster still ends the helpers with SIGTERM. A signal that
    arrives while the mask is set waits for it to be lifted. Once per process."""
    from dagster._core.execution import compute_logs

    original = getattr(compute_logs, "execute_posix_tail", None)  # private: a Dagster without it keeps its helpers
    if original is None or getattr(original, "spared_from_ctrl_c", False):
        return

    @contextlib.contextmanager
    def execute_posix_tail(path: str, stream: Any) -> Iterator[Any]:
        with contextlib.ExitStack() as stack:
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                pids = stack.enter_context(original(path, stream))
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            yield pids

    execute_posix_tail.spared_from_ctrl_c = True  # type: ignore[attr-defined]
    compute_logs.execute_posix_tail = execute_posix_tail  # tail_to_stream looks it up in the module


@dataclass
class StepOutcome:
    result: ExecuteInProcessResult | None
    seconds: float = 0.0
    started: dt.datetime | None = None  # naive UTC, as label batches are stamped


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class Runner:
    """One `run_all`: materializes steps in process, prints one line each, logs Dagster's events to a file."""

    def __init__(self, defs: Definitions, instance: DagsterInstance, *, log: TextIO | None, verbose: bool) -> None:
        self.defs = defs
        self.instance = instance
        self.assets = [*defs.assets, *(defs.asset_checks or [])]
        self.resources = dict(defs.resources or {})
        self.graph = defs.resolve_asset_graph()
        self.log = log
        self.verbose = verbose
        self.failures: list[str] = []
        # checks of ERROR severity that did not pass: a non-blocking check does not fail its step, but the run is
        # then no success (run_all exits EXIT_CHECK_FAILED and does not record itself as up to date)
        self.failed_error_checks: list[str] = []
        # steps that wrote their labels but failed on some prompts (a Dagster failure; counted as exit 4)
        self.label_failed_steps: list[str] = []
        self.retry_given_up = False  # `--force`: ask again the prompts given up after MAX_LABEL_RUNS failed runs
        self.totals = {"n_prompts": 0, "n_results": 0, "n_rejects": 0, "labeler_calls": 0, "n_labeled": 0,
                       "n_failed": 0, "judge_failed": 0, "judge_labeled": 0}
        self.current: str | None = None  # the step running (what an interrupt names)
        self.current_partitions: list[str] = []
        self.current_started = utc_now()
        spare_log_helpers_from_ctrl_c()

    def _write_log(self, label: str, result: ExecuteInProcessResult) -> None:
        if self.log is None:
            return
        self.log.write(f"\n===== {label}: run {result.run_id} =====\n")
        clean = untrusted_scrubber()  # the log file holds what exceptions said: secrets masked
        for entry in self.instance.all_logs(result.run_id):
            stamp = dt.datetime.fromtimestamp(entry.timestamp, dt.UTC).strftime("%H:%M:%S.%f")[:-3]
            event = entry.dagster_event.event_type_value if entry.dagster_event is not None else ""
            level = {10: "DEBUG", 20: "INFO", 30: "WARNING", 40: "ERROR", 50: "CRITICAL"}.get(entry.level,
                                                                                            str(entry.level))
            message = entry.user_message or (entry.dagster_event.message if entry.dagster_event else "") or ""
            if entry.dagster_event is not None and entry.dagster_event.is_step_failure:
                message += f" {rr.step_error(entry.dagster_event)}"  # the reason, not only that it failed
            self.log.write(f"{stamp} {level:<7} {entry.step_key or '-'} {event} {clean(message)}\n")
        self.log.flush()

    def run(self, label: str, keys: list[AssetKey], kind: str, partition: str | None = None, *,
            with_warehouse_checks: bool = False, last_partition: str | None = None) -> StepOutcome:
        """One Dagster run: unpartitioned, of one partition, or of the range `partition`..`last_partition` (in
        the instance's order of the dynamic partitions: one run materializes each partition of it, with a
        materialization record per partition)."""
        selection = AssetSelection.assets(*keys) - WAREHOUSE_CHECKS
        if with_warehouse_checks:
            selection = selection | WAREHOUSE_CHECKS
        if not keys and not (with_warehouse_checks and WAREHOUSE_CHECKS.resolve_checks(self.graph)):
            print(f"- {label}: no assets defined yet, skipped")
            return StepOutcome(None)
        interrupts.check()  # an interrupt that a warehouse read between steps turned into its error
        self.current, self.current_started = label, utc_now()
        t0 = time.monotonic()
        hold = self._warehouse_to_hold(partition)
        tags = {KIND_TAG: kind, "benchmap/run_all": "1", **in_process_tags(),
                **({RETRY_GIVEN_UP_TAG: "1"} if self.retry_given_up else {})}
        locked = [partition] if partition else []
        if partition is not None and last_partition is not None and last_partition != partition:
            tags.update({ASSET_PARTITION_RANGE_START_TAG: partition, ASSET_PARTITION_RANGE_END_TAG: last_partition})
            locked = self.partition_range(partition, last_partition)
            partition = None
        self.current_partitions = locked
        # the labeling lock before the file: a second run_all waiting for this benchmark's labeling must not sit
        # on the open warehouse meanwhile (the first could then not commit its labels)
        # runs not held (reference, analysis) keep the file open between their many short connects, releasing it
        # within half a second of a pause for other processes (warehouse.lingering)
        linger = None if hold or partition else getattr(self.resources.get("warehouse"), "path", None)
        with (LabelCache(hold).labeling_lock(locked) if hold and locked else contextlib.nullcontext()), \
                wh.held(hold), wh.lingering(linger):
            result = materialize(self.assets, selection=selection, instance=self.instance,
                                 resources=self.resources, partition_key=partition, raise_on_error=False,
                                 run_config=None if self.verbose else QUIET_LOGGERS, tags=tags)
        seconds = time.monotonic() - t0
        self._write_log(label, result)
        # Dagster's handlers took the signal: the run ended (or a step swallowed it), run_all must stop too
        interrupts.check()
        self.current = None
        return StepOutcome(result, seconds, self.current_started)

    def _warehouse_to_hold(self, partition: str | None) -> str | None:
        """The warehouse a run keeps open (pipelines/warehouse.held: some 30 connections of a partition run
        reuse one DuckDB instance instead of paying ~30 CPU-ms each): a benchmark partition's short run with
        the offline labeler. Not a run that waits on a remote labeler or a long analysis run: meanwhile
        another process could not open the file."""
        if partition is None or not self.offline_labeler:
            return None
        return getattr(self.resources.get("warehouse"), "path", None)

    @property
    def offline_labeler(self) -> bool:
        return getattr(self.resources.get("labeler"), "kind", None) == "offline"

    def partition_range(self, first: str, last: str) -> list[str]:
        """The partitions a range run of `first`..`last` materializes (the instance's order)."""
        order = self.instance.get_dynamic_partitions(BENCHMARK_PARTITIONS_NAME)
        return order[order.index(first):order.index(last) + 1]

    def report(self, label: str, outcome: StepOutcome, detail: str = "", partition: str | None = None) -> None:
        """The stage's one line (plus the first errors and failed checks, indented); `partition`: one partition's
        line of a run of several (a labeling failure of another partition is not its own)."""
        result = outcome.result
        if result is None:
            return
        tables = rr.written_tables(result)
        what = detail or (f"{len(rr.materializations(result))} assets, {len(tables)} tables, "
                          f"{sum(tables.values()):,} rows")
        after_writing = rr.failed_after_writing(result)
        success = result.success or (after_writing and partition is not None
                                     and partition not in rr.failed_prompts_by_benchmark(result))
        status = "ok" if success else "FAILED"
        print(f"- {label}: {status} in {outcome.seconds:.1f}s: {what}", flush=True)
        if not success:
            errors = rr.errors(result)
            if after_writing:  # its failed prompts are counted (exit 4), not a failed step
                self.label_failed_steps.append(label)
            else:
                self.failures.append(f"{label}: {errors[0] if errors else 'failed'}")
            for message in errors[:3]:
                print(f"    {message.splitlines()[0][:800]}")  # the whole reason, within reason
        for evaluation in rr.failed_evaluations(result):
            print(f"    check not passed: {rr.check_label(evaluation)}")
            for error in rr.check_errors(evaluation):
                print(f"      {error.splitlines()[0][:300]}")
        self.failed_error_checks += [f"{label}: {check}" for check in rr.failed_checks(result, "ERROR")]

    def committed(self, names: list[str], since: dt.datetime) -> tuple[int, int]:
        """(prompts labeled, prompts failed) of these benchmarks in label batches committed since `since`: what a
        labeling step that failed or was stopped did (its metadata was never written), added to the totals."""
        path = getattr(self.resources.get("warehouse"), "path", None)
        if not path or not names:
            return 0, 0
        cache, kind = LabelCache(path), getattr(self.resources.get("labeler"), "kind", None)
        counts = [cache.committed_since(name, since, kind) for name in names if name != bm.LANDING_PARTITION]
        labeled, failed = sum(c[0] for c in counts), sum(c[1] for c in counts)
        self.totals["n_labeled"] += labeled
        self.totals["n_failed"] += failed
        return labeled, failed

    def labeled_so_far(self) -> int:
        """Prompts labeled by this run, the step running when it was stopped included (committed batches)."""
        return self.totals["n_labeled"] + (self.committed(self.current_partitions, self.current_started)[0]
                                           if self.current is not None else 0)

    def partition_detail(self, name: str, result: ExecuteInProcessResult, partition: str | None = None,
                         started: dt.datetime | None = None) -> str:
        """The partition's line (counts from its materializations; `partition`: of a run of several; `started`:
        when its run began, to count what a failed labeling step committed)."""
        counts = {k: int(rr.metadata_value(result, "benchmarks" if k != "n_rejects" else "benchmark_rejects", k,
                                           partition) or 0)
                  for k in ("n_prompts", "n_results", "n_rejects")}
        for k, v in counts.items():
            self.totals[k] += v
        labels = rr.written_tables(result, partition).get("prompt_task_labels")
        calls = rr.metadata_value(result, "prompt_task_labels", "labeler_calls", partition)
        cached = rr.metadata_value(result, "prompt_task_labels", "n_cached", partition)
        labeled = int(rr.metadata_value(result, "prompt_task_labels", "n_labeled", partition) or 0)
        failed = int(rr.metadata_value(result, "prompt_task_labels", "n_failed", partition) or 0)
        # the judge's failed texts when it lost a benchmark's whole sample (its step failed; no design was written)
        judge_failed = sum(int(by.get(name, 0)) for by in rr.failure_metadata_value(result, JUDGE_FAILED_BY_BENCHMARK)
                           if isinstance(by, dict))
        self.totals["labeler_calls"] += int(calls or 0)
        self.totals["n_labeled"] += labeled
        self.totals["n_failed"] += failed
        self.totals["judge_failed"] += judge_failed
        judge_labeled = int(rr.metadata_value(result, "judge_sample_labels", JUDGE_LABELED, partition) or 0)
        self.totals["judge_labeled"] += judge_labeled
        if name == bm.LANDING_PARTITION:
            return f"{counts['n_rejects']} landing problems recorded"
        text = f"{counts['n_prompts']:,} prompts, {counts['n_results']:,} results, {counts['n_rejects']:,} rejects"
        first = rr.metadata_value(result, "benchmark_rejects", FIRST_REJECT, partition)
        if counts["n_rejects"] and first:  # where to look, not only how many
            text += (f" (first {first}; all {counts['n_rejects']:,} in benchmark_rejects)" if counts["n_rejects"] > 1
                     else f" ({first}; in benchmark_rejects)")
        if labels is not None:  # labeled = asked and answered: a failed prompt was asked too (it said "labeled")
            given_up = int(rr.metadata_value(result, "prompt_task_labels", "n_given_up", partition) or 0)
            failures = (f", {failed:,} FAILED" if failed else "") + (f", {given_up:,} given up (not asked)"
                                                                     if given_up else "")
            text += (f"; {count(labels, 'label')} ({count(labeled, 'prompt')} labeled{failures}, "
                     f"{int(cached or 0):,} from the cache)")
        elif not result.success and started is not None:  # the labels step failed: what it committed before
            labeled, failed = self.committed([name], started)
            if labeled or failed:
                # what was answered is in the label cache, what failed in label_failures (an audit read "0
                # prompts labeled, 6 FAILED ... (kept in the label cache)")
                kept = [where for n, where in ((labeled, "the answers kept in the label cache"),
                                               (failed, "the failures in label_failures")) if n]
                failures = f", {failed:,} FAILED" if failed else ""
                text += (f"; no labels written, but {count(labeled, 'prompt')} labeled{failures} before the step "
                         f"failed ({' and '.join(kept)})")
        if judge_labeled:  # its paid answers, apart from the labeler's
            text += f"; the judge labeled {count(judge_labeled, 'sampled text')}"
        no_work = rr.metadata_value(result, "judge_sample_labels", ALL_NOT_WORK, partition)
        if isinstance(no_work, dict) and no_work.get(name):  # the benchmark then counts no task: said where it happens
            text += (f"; the judge read all {count(int(no_work[name]), 'sampled text')} as NOT WORK, so it counts "
                     "no task (judge_sample_labels)")
        if judge_failed:
            text += f"; the judge FAILED on {judge_failed:,} sampled texts"
        return text
