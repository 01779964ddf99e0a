"""Worker processes for the offline labeler: a range run's texts labeled on every core (issue 29).

The offline labeler is pure Python and numpy on one core (~2.5 CPU-ms a text); a cold run labels ~10,000
texts. `LabelPool` runs `resources.label_worker` in N processes (N = `settings().label_workers`, default 2 when
two cores are available to this process, `os.sched_getaffinity`; 0 or 1: everything in the step's process).
The workers are resources/worker_process.py's (fresh interpreters, not forks of a process with DuckDB's and
polars' threads; their pipe, errors and exit): each imports only the labeler, loads the pickled task index once (`open`) and label whole benchmarks: the batches of
one benchmark go to one worker, in order, so its context (prepare) is computed once and every batch is the
batch the in-process loop would label (the labels are the same bits). Benchmarks are assigned longest first to
the least loaded worker, and each worker takes its benchmarks in the range's order, so the step's process
writes the first benchmarks' batches (models/labeling/cache.py: run_plan, each batch one commit) while the
workers label the next ones. Workers never open the warehouse.

Each worker's state (the index, the benchmark being labeled) lives in its process
(resources/label_worker.py: the requests it handles). A worker that dies fails its pending batches with a
`WorkerError` naming the worker, its exit code and the benchmark and batch; the step writes every batch that was finished before it fails (nothing done is lost).

`run_all` starts the pool (`prestart`) first thing on a cold run (before it imports Dagster), else when its
reference stage runs, so the workers' imports overlap the main process's, and has them load the index as soon as
`task_search_index` pickled it (`preload`); it shuts the pool down after the partitions (and on every exit).
Started for a reference stage, the last worker imports Great Expectations first (`warm_checks`), and the
reference tables' GX checks run there (`validate`: the frames and plain expectation specs go over the pipe, the
outcomes come back), so the main process never pays GX's ~2.5 CPU-s import. That worker loads the index only
when the reference checks are over (`end_checks`; `preload` leaves it out): the checks after task_search_index
would otherwise wait behind it. Without run_all (the sensor's one-partition runs), a step with at least
MIN_PROMPTS_TO_START texts to label starts a pool for itself.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from resources import label_worker
from resources.settings import settings
from resources.worker_process import WorkerError, WorkerProcess, import_modules, usable_cpus

if TYPE_CHECKING:
    import polars as pl

    from models.expectations import Spec, ValidationOutcome

# starting two workers costs ~3.5 CPU-s each (imports, the index); labeling saves ~1.2 ms a text with two
MIN_PROMPTS_TO_START = 4000
GX_MODULES = ("great_expectations", "models.expectations")  # the checks worker's imports (before the labeler's)
THREAD_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "POLARS_MAX_THREADS")


LabelWorkerError = WorkerError  # the transport's error: one class for both pools
log = logging.getLogger(__name__)


def worker_count() -> int:
    """How many worker processes label (0: none, the step's own process labels)."""
    configured = settings().label_workers
    if configured is not None:
        return configured if configured >= 2 else 0
    return 2 if usable_cpus() >= 2 else 0


class _Worker:
    """One worker process; its requests are queued (it labels the next batch while this process writes the
    last) and run against its state (resources/label_worker.py)."""

    def __init__(self, number: int, first_imports: Sequence[str] = ()) -> None:
        self.number = number
        # the processes are the parallelism: one BLAS/polars thread each
        self.process = WorkerProcess(f"labeling worker {number} (pid {{pid}})", {name: "1" for name in THREAD_ENV})
        self.process.call("importing the labeler", import_modules, ((*first_imports, *label_worker.MODULES),))
        self.load = 0.0  # estimated work assigned (see LabelPool.label)
        self.opened: tuple[str, Future] | None = None

    @property
    def name(self) -> str:
        return self.process.name

    def submit(self, what: str, message: Any) -> Future:
        """Send a request; its future gets the answer. `what` names it in errors."""
        return self.process.call(what, label_worker.handle_request, (message,))

    def close(self, timeout: float = 10.0) -> None:
        self.process.close(timeout)


class LabelPool:
    """N labeling worker processes (see the module docstring)."""

    def __init__(self, workers: int, *, warm_checks: bool = False) -> None:
        """`warm_checks`: the last worker imports Great Expectations first and runs `validate`'s checks."""
        if workers < 1:
            raise ValueError(f"a label pool needs at least one worker, got {workers}")
        self.workers = [_Worker(n + 1, GX_MODULES if warm_checks and n == workers - 1 else ())
                        for n in range(workers)]
        self.checks_worker = self.workers[-1] if warm_checks else None
        self.deferred: str | None = None  # the index the checks worker opens after the checks (`end_checks`)
        self.prebuilt: tuple[Path, Future] | None = None

    def open(self, index_path: str | Path, *, defer_checks: bool = False) -> list[Future]:
        """Have every worker load the pickled index at `index_path` (once per path) and build the calibrated
        offline labeler; each future's result is the worker's (labeler_version, model, template_version).
        `defer_checks`: not the checks worker yet (it does when its checks are over: `end_checks`)."""
        path = str(index_path)
        for worker in self.workers:
            if defer_checks and worker is self.checks_worker:
                self.deferred = path
            elif worker.opened is None or worker.opened[0] != path:
                worker.opened = (path, worker.submit(f"the task index {path}", ("open", path)))
        return [worker.opened[1] for worker in self.workers if worker.opened is not None]

    def check(self, index_path: str | Path, labeler: Any) -> None:
        """Wait for the workers' labelers and make sure they are `labeler`'s (same cache key and version)."""
        expected = (labeler.labeler_version, labeler.model, labeler.template_version)
        for worker, future in zip(self.workers, self.open(index_path), strict=True):
            got = tuple(future.result())
            if got != expected:
                raise LabelWorkerError(f"{worker.name} built labeler {got}, not this process's {expected}: "
                                       "the workers import another version of the code")

    def label(self, jobs: Sequence[tuple[str, Sequence[Any], list[list[Any]]]]
              ) -> dict[str, list[Future]]:
        """Label each (benchmark, its prompts, its batches) on one worker: benchmark -> one future per batch
        (its outcomes, in order). Longest first to the least loaded worker; each worker in the jobs' order."""
        cost = {b: sum(_text_cost(p) for batch in batches for p in batch) for b, _, batches in jobs}
        owner: dict[str, _Worker] = {}
        for benchmark in sorted(cost, key=lambda b: -cost[b]):
            worker = min(self.workers, key=lambda w: w.load)
            worker.load += cost[benchmark]
            owner[benchmark] = worker
        futures: dict[str, list[Future]] = {}
        for benchmark, prompts, batches in jobs:
            worker = owner[benchmark]
            futures[benchmark] = [
                worker.submit(f"batch {i + 1} of {len(batches)} of benchmark {benchmark!r} "
                              f"({len(batch)} prompts, first {batch[0].prompt_id!r})",
                              ("label", benchmark, list(prompts) if i == 0 else None, batch))
                for i, batch in enumerate(batches)]
        for worker in self.workers:
            worker.load = 0.0
        return futures

    def contexts(self) -> dict[tuple[Any, ...], Any]:
        """The benchmark contexts the workers computed (after what they were given before)."""
        merged: dict[tuple[Any, ...], Any] = {}
        for future in [worker.submit("its benchmark contexts", ("contexts",)) for worker in self.workers]:
            merged.update(future.result())
        return merged

    def prebuild(self, path: Path) -> None:
        """Have the first worker build the task index from the O*NET files into `path` (`take_prebuilt`)."""
        self.prebuilt = (path, self.workers[0].submit("building the task index ahead", ("prebuild", str(path))))

    def crash(self, worker: int, code: int = 3) -> None:
        """Tests: make worker `worker` (0-based) exit with `code` when it reaches this request."""
        self.workers[worker].submit("a crash", ("crash", code))

    def close(self) -> None:
        for worker in self.workers:  # all asked first: they exit together
            worker.process.stop()
        for worker in self.workers:
            worker.close()


def _text_cost(prompt: Any) -> float:
    """A text's labeling cost, roughly: a fixed part (selection, writing) and its length (tokenizing)."""
    text = prompt.prompt if isinstance(prompt.prompt, str) else ""
    return 1.0 + len(text) / 1500.0


def outcomes_from(futures: list[Future]) -> Callable[[list[list[Any]]], Iterator[Any]]:
    """The `outcomes_of` of models.labeling.cache.run_plan: each batch's outcomes as its future completes."""
    def outcomes(batches: list[list[Any]]) -> Iterator[Any]:
        if len(batches) != len(futures):
            raise LabelWorkerError(f"{len(futures)} batches were sent to the workers, {len(batches)} asked for")
        return (future.result() for future in futures)

    return outcomes


def cancel(futures: dict[str, list[Future]]) -> None:
    """Drop the requests not yet sent to a worker (a failed step: its workers do not label on for nothing)."""
    for batch_futures in futures.values():
        for future in batch_futures:
            future.cancel()


def finished_prefix(futures: list[Future]) -> list[Any]:
    """The outcomes of the batches that finished, up to the first that did not (failed or still running)."""
    done = []
    for future in futures:
        if not future.done() or future.cancelled() or future.exception() is not None:
            break
        done.append(future.result())
    return done


# --- the pool of this process -------------------------------------------------------------------------------
_SHARED: LabelPool | None = None
_SHARED_LOCK = threading.Lock()


def prestart(prebuild_into: Path | None = None, *, warm_checks: bool = False) -> LabelPool | None:
    """Start this process's pool now (its workers import while other steps run), when workers are wanted; with
    `prebuild_into` (the folder of the pickled indexes) its first worker also builds the task index from the
    O*NET files meanwhile, for `task_search_index` to take when its inputs are what it was built from; with
    `warm_checks` its last worker imports Great Expectations for `validate`."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None and worker_count() >= 2:
            _SHARED = LabelPool(worker_count(), warm_checks=warm_checks)
            atexit.register(shutdown)
            if prebuild_into is not None:
                _SHARED.prebuild(Path(prebuild_into) / f".prebuilt-{os.getpid()}.pkl")
        return _SHARED


def has_prebuilt() -> bool:
    return _SHARED is not None and _SHARED.prebuilt is not None


def take_prebuilt(inputs_digest: str) -> tuple[Path, str, float] | None:
    """(pickle path, its sha256, build seconds) of the index the pool's worker built ahead, when it was built
    from inputs with this digest (resources/task_index.py: inputs_digest); else None (the file is removed and
    the caller builds the index itself). Waits for a build still running."""
    pool = _SHARED
    if pool is None or pool.prebuilt is None:
        return None
    (path, future), pool.prebuilt = pool.prebuilt, None
    try:
        digest, sha, seconds = future.result()
    except LabelWorkerError:
        digest = None
    if digest != inputs_digest:
        path.unlink(missing_ok=True)
        return None
    return path, sha, seconds


def preload(index_path: str | Path) -> None:
    """Have a running pool's workers load the index just pickled (no-op without a pool); its checks worker when
    the checks are over (`end_checks`)."""
    if _SHARED is not None:
        _SHARED.open(index_path, defer_checks=True)


def end_checks() -> None:
    """The reference checks are over (run_all, before the partitions): the pool's checks worker becomes a label
    worker like the others and loads the index `preload` was given (later checks validate in this process)."""
    pool = _SHARED
    if pool is not None and pool.checks_worker is not None:
        pool.checks_worker = None
        if pool.deferred is not None:
            pool.open(pool.deferred)


def shutdown() -> None:
    """Stop this process's pool (run_all: after the partitions; also at exit)."""
    global _SHARED
    with _SHARED_LOCK:
        pool, _SHARED = _SHARED, None
    if pool is not None:
        pool.close()
        if pool.prebuilt is not None:  # never taken: the reference run did not get to task_search_index
            from resources.task_index import partial_path

            # and its partial file: a worker stopped while it was still writing the index leaves that behind
            for leftover in (pool.prebuilt[0], partial_path(pool.prebuilt[0])):
                leftover.unlink(missing_ok=True)


def validate(parts: Sequence[tuple[str, pl.DataFrame, Sequence[Spec]]]) -> list[ValidationOutcome]:
    """GX validation of each (name, frame, expectation specs) (models/expectations.py, run_parts): in the running
    pool's checks worker when it has one, else in this process (also when the worker fails: the same outcomes,
    with a warning naming the worker's error)."""
    from models import expectations as ex

    pool = _SHARED
    worker = pool.checks_worker if pool is not None else None
    if worker is not None:
        names = ", ".join(name for name, _, _ in parts)
        try:
            return worker.process.call(f"the GX checks of {names}", ex.run_parts, (list(parts),)).result()
        except WorkerError as exc:  # the outcomes do not depend on where they run: say why, run them here
            log.warning("the checks worker failed the GX checks of %s (%s): running them in this process "
                        "(importing Great Expectations here, ~2.5 CPU-s)", names, exc)
    return ex.run_parts(parts)


@contextlib.contextmanager
def pool_for(n_prompts: int) -> Iterator[LabelPool | None]:
    """The pool to label `n_prompts` texts with: this process's running one, else a pool of its own for this
    block when there are enough texts to pay for starting it, else None (label in this process)."""
    if _SHARED is not None:
        yield _SHARED
        return
    workers = worker_count()
    if workers < 2 or n_prompts < MIN_PROMPTS_TO_START:
        yield None
        return
    pool = LabelPool(workers)
    try:
        yield pool
    finally:
        pool.close()
