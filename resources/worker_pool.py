"""Worker processes for pure computations of a step that do not depend on each other (issue 29: the second
core). Dagster runs `run_all`'s analysis steps one after the other in one process, so a cold run used one core
of two; a step hands its independent parts (the judged checks, the figures, the workbook) to `submit` and
gathers them with `gather`, doing its own work meanwhile.

    pool = shared_pool()
    later = pool.submit(f, x, name="what f computes")  # runs in a worker process as soon as one is free
    ...                                                 # the step's own work
    value, = pool.gather([later])                       # runs here any task no worker has started, then waits

- Workers: one fewer than the usable CPUs (`os.sched_getaffinity`), so the step's process and its workers use
  one core each; with one CPU there is none and `gather` runs every task in the calling process, the same
  functions on the same arguments: the results do not depend on where a task ran.
- A task is a function importable by name (module-level) with picklable arguments and result; tasks are pure
  (no warehouse, no Dagster context): files a task writes are its own output files.
- The workers and their pipes are resources/worker_process.py's: a task that raises fails its `gather` with
  `WorkerError` naming the task, the worker's pid and the worker's traceback; a worker that dies fails the task
  it was running the same way, and its other tasks run in the calling process.
"""

from __future__ import annotations

import atexit
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from resources.worker_process import WorkerError, WorkerProcess, import_modules, usable_cpus

__all__ = ["WorkerError", "WorkerPool", "default_workers", "shared_pool", "usable_cpus"]


def default_workers() -> int:
    """One worker per usable CPU but the one of the calling process."""
    return max(0, usable_cpus() - 1)


@dataclass(eq=False)
class _Task:
    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    future: Future = field(default_factory=Future)
    background: bool = False  # started ahead, not yet waited for: queued behind the tasks a step waits for


def _run_inline(task: _Task) -> None:
    try:
        task.future.set_result(task.fn(*task.args, **task.kwargs))
    except BaseException as error:  # noqa: BLE001 - the caller's gather raises it
        task.future.set_exception(error)


class _Worker:
    """One worker process and the thread that feeds it the pool's queued tasks, one at a time."""

    def __init__(self, pool: WorkerPool) -> None:
        self.pool = pool
        self.process = WorkerProcess()
        self.thread = threading.Thread(target=self._feed, name=f"worker-{self.process.pid}", daemon=True)
        self.thread.start()

    def _feed(self) -> None:
        while (task := self.pool._next_task()) is not None:
            try:
                task.future.set_result(self.process.call(task.name, task.fn, task.args, task.kwargs).result())
            except WorkerError as error:
                task.future.set_exception(error)
                if self.process.ended is not None:
                    self.pool._worker_died(self)
                    return

    def close(self, timeout: float = 10.0) -> None:
        self.process.close(timeout)


class WorkerPool:
    """Worker processes started on the first `submit` (or `warm`), closed by `close` (or leaving the `with`)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = default_workers() if workers is None else max(0, workers)
        self._pending: deque[_Task] = deque()
        self._tasks: dict[Future, _Task] = {}
        self._condition = threading.Condition()
        self._running: list[_Worker] = []
        self._closed = False

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        with self._condition:
            if self._closed:
                raise RuntimeError("the worker pool is closed")
            while len(self._running) < self.workers:
                self._running.append(_Worker(self))

    def warm(self, modules: Sequence[str] = ()) -> None:
        """Start the workers now and have each import `modules` first (while the caller works)."""
        if not self.workers:
            return
        self._start()
        if modules:
            for _ in self._running:
                self.submit(import_modules, tuple(modules), name=f"import {', '.join(modules)}")

    def submit(self, fn: Callable[..., Any], /, *args: Any, name: str | None = None, background: bool = False,
               **kwargs: Any) -> Future:
        """Queue fn(*args, **kwargs) for a worker; `name` says what it computes (in errors). `background`: a
        computation started ahead for a later step (assets/figure_reuse.py): a task submitted without it is
        queued before the background ones not started yet (a step's own parallel part, which it gathers soon,
        does not wait behind a figure report_figures takes at the run's end)."""
        task = _Task(name or getattr(fn, "__qualname__", repr(fn)), fn, args, kwargs, background=background)
        with self._condition:
            if self._closed:
                raise RuntimeError("the worker pool is closed")
            if background:
                self._pending.append(task)
            else:
                first_background = next((i for i, t in enumerate(self._pending) if t.background),
                                        len(self._pending))
                self._pending.insert(first_background, task)
            self._tasks[task.future] = task
            self._condition.notify()
        if self.workers and len(self._running) < self.workers:
            self._start()
        return task.future

    def _next_task(self) -> _Task | None:
        with self._condition:
            while True:
                while self._pending:
                    task = self._pending.popleft()
                    if task.future.set_running_or_notify_cancel():
                        return task
                if self._closed:
                    return None
                self._condition.wait()

    def _worker_died(self, worker: _Worker) -> None:
        with self._condition:
            if worker in self._running:
                self._running.remove(worker)
            self.workers = min(self.workers, len(self._running))  # no new worker: the rest run in the caller

    def gather(self, futures: Iterable[Future], steal: bool = True) -> list[Any]:
        """The futures' results in their order: the tasks no worker has started run here (the last submitted
        first, so a worker keeps the ones it was given first; `steal=False`: wait for a worker), then the others
        are waited for. A failed task raises (WorkerError from a worker)."""
        futures = list(futures)
        for future in reversed(futures) if steal or not self.workers else ():
            task = self._tasks.get(future)
            with self._condition:
                taken = task is not None and task in self._pending
                if taken:
                    self._pending.remove(task)  # type: ignore[arg-type]
            if taken and task is not None and task.future.set_running_or_notify_cancel():
                _run_inline(task)
        try:
            return [future.result() for future in futures]
        finally:
            for future in futures:
                self._tasks.pop(future, None)

    def discard(self, futures: Iterable[Future]) -> None:
        """Nobody will gather these: the ones no worker has started are dropped (a running one finishes, unread)."""
        with self._condition:
            for future in futures:
                task = self._tasks.pop(future, None)
                if task is not None and task in self._pending:
                    self._pending.remove(task)
                future.cancel()

    def close(self, timeout: float = 10.0) -> None:
        """Stop the workers once their current task is done, killing one still busy after `timeout` seconds
        (queued tasks nobody gathered are dropped)."""
        with self._condition:
            self._closed = True
            for task in self._pending:
                task.future.cancel()
            self._pending.clear()
            self._condition.notify_all()
            workers, self._running = self._running, []
        for worker in workers:
            worker.close(timeout)

    @property
    def pids(self) -> list[int]:
        return [w.process.pid for w in self._running]


_SHARED: WorkerPool | None = None
_SHARED_LOCK = threading.Lock()


def shared_pool() -> WorkerPool:
    """The process's pool (started on first use, closed at exit): the steps of one run share its workers, so
    a worker's imports (numpy, polars, matplotlib) are paid once per run."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or _SHARED._closed:
            _SHARED = WorkerPool()
            atexit.register(_SHARED.close, 1.0)  # at exit nobody gathers: a task still running is not waited for
        return _SHARED

