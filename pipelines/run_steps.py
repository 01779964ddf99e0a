"""run_all's bookkeeping of its steps (pipelines/run_state.py): which to skip, forget before and remember after,
one run_all at a time per unpartitioned step, and which benchmarks still have prompts to retry."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from dagster import ExecuteInProcessResult

from models import benchmarks as bm
from pipelines import integrity, run_state
from pipelines import run_report as rr


class Steps:
    """The run_state bookkeeping of one run: which steps to skip, forget before and remember after."""

    def __init__(self, warehouse_path: str | None, report: integrity.IntegrityReport | None, force: bool) -> None:
        self.path = warehouse_path
        self.report = report
        self.force = force
        self.stored = run_state.load_records(warehouse_path) if warehouse_path else {}

    def unchanged(self, step: str, fingerprint: str, label: str, *, partition: str | None = None,
                  open_failures: int = 0) -> bool:
        record = self.stored.get(step)
        if self.force or record is None or record.fingerprint != fingerprint:
            return False
        if open_failures:  # a failure is not done: the plain re-run retries exactly the failed prompts
            print(f"- {label}: inputs unchanged, but {open_failures} prompts failed to label: running it")
            return False
        why = run_state.outputs_intact(record, self.report.counts if self.report else {},
                                       self.report.by_benchmark if self.report else {}, partition)
        if why is not None:
            print(f"- {label}: inputs unchanged, but {why}: running it")
            return False
        print(f"- {label}: unchanged since its last successful run, skipped (--force to run it)")
        return True

    @contextlib.contextmanager
    def exclusive(self, step: str, label: str) -> Iterator[None]:
        """Hold `step`'s lock (an flock in `<warehouse folder>/.run_all_locks/`, released when the process dies).
        After waiting for another run_all, re-read what that run recorded, so an identical step is skipped."""
        if not self.path:
            yield
            return
        import fcntl

        folder = Path(self.path).parent / ".run_all_locks"
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f"{step.replace(':', '_').replace('/', '_')}.lock", "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print(f"- {label}: another run_all is running this step: waiting for it", flush=True)
                fcntl.flock(handle, fcntl.LOCK_EX)
                fresh = run_state.load_records(self.path).get(step)
                if fresh != self.stored.get(step):  # it finished (or failed) meanwhile: its record and row counts
                    self.stored.pop(step, None)
                    if fresh is not None:
                        self.stored[step] = fresh
                    self.report = integrity.check_warehouse(self.path, per_benchmark=True)
            yield

    def retryable_failures(self, benchmarks: Sequence[str], labeler: object) -> dict[str, int]:
        """Per benchmark, its prompts in label_failures (this labeler) that a plain run still retries (one
        query for all; benchmarks without any are absent)."""
        names = [b for b in benchmarks if b != bm.LANDING_PARTITION]
        if not self.path or not Path(self.path).exists() or not names:
            return {}
        from models.labeling.cache import MAX_LABEL_RUNS
        from pipelines.label_cache import LabelCache

        return LabelCache(self.path).open_failures_by_benchmark(names, getattr(labeler, "kind", None),
                                                                retry_below_runs=MAX_LABEL_RUNS)

    def attempt(self, step: str) -> None:  # a failed attempt may have written part of its output: redo it next time
        if self.path and step in self.stored:
            run_state.forget(self.path, step)
            self.stored.pop(step)

    def remember(self, step: str, fingerprint: str, result: ExecuteInProcessResult | None) -> None:
        if not self.path or result is None or not result.success:
            return
        outputs = rr.written_tables(result)  # the rows each table (a benchmark step: its partition) got
        run_state.save(self.path, step, fingerprint, outputs)
        self.stored[step] = run_state.StepRecord(fingerprint, outputs)
