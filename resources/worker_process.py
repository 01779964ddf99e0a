"""One worker process and its pipe: the transport under both pools of worker processes (issue 29: the second
core): resources/worker_pool.py (independent pure tasks of the analysis) and resources/label_pool.py (the offline
labeler's workers, with per-worker state).

- A worker is `python -c BOOT`: a fresh interpreter (no fork of a process with DuckDB's and polars' threads) with
  the parent's sys.path (the same checkout), importing only what its tasks' functions need (pickle imports the
  function's module), not the parent's `__main__` (multiprocessing's spawn imports it in every worker: for
  `python -m pipelines.run_all` that is Dagster and every asset module, ~2 CPU-s and ~140 MB each).
- A task is a module-level function with picklable arguments and result, sent as a length-prefixed pickle over
  the worker's stdin; the answer (ok, result or exception, traceback text) comes back the same way over its
  stdout. `call` queues a task and returns its future at once; a thread writes the queue (a full pipe never
  blocks the caller), another reads the answers in order, so a worker can be given many tasks ahead.
- A task that raises fails its future with `WorkerError` naming the task, the worker (its pid) and the worker's
  traceback, the original exception as its cause when it can be pickled; the worker goes on. A worker that dies
  fails the task it was running ("ended while running it (exit code N)") and every task queued behind it ("not
  run: ... exited with code N"). Workers still running at exit are stopped.
- Per-worker state (the labeler's index loaded once) is a module global of the task's module in the worker.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import ctypes
import gc
import importlib
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, BinaryIO

# the worker's entry: the parent's sys.path first (so it imports the same checkout), then the serve loop
BOOT = ("import pickle, sys; sys.path[:0] = pickle.load(sys.stdin.buffer); "
        "from resources.worker_process import serve; serve()")
_HEADER = struct.Struct("!Q")  # each message: its length, then the pickle


class WorkerError(RuntimeError):
    """A task failed in a worker process, could not be sent to it, or its worker died."""


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask; os.cpu_count() where there is none)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def send(stream: BinaryIO, payload: bytes) -> None:
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


def receive(stream: BinaryIO) -> bytes:
    """The next message, or EOFError when the other side closed the pipe."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("the stream ended")
    size = _HEADER.unpack(header)[0]
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError("the stream ended within a message")
    return payload


_LIVE: weakref.WeakSet[WorkerProcess] = weakref.WeakSet()


class WorkerProcess:
    """One worker process (see the module docstring). `description` names it in errors ({pid} is filled in);
    `env` is added to this process's environment for it."""

    def __init__(self, description: str = "worker process {pid}", env: Mapping[str, str] | None = None) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", BOOT], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env={**os.environ, **(env or {})})
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin: BinaryIO = self.process.stdin
        self.stdout: BinaryIO = self.process.stdout
        self.pid = self.process.pid
        self.name = description.format(pid=self.pid)
        self.ended: str | None = None  # why it ended ("... exited with code N"), once it has
        self._outbox: queue.SimpleQueue[tuple[Future, str, Callable[..., Any], tuple, dict] | None] = (
            queue.SimpleQueue())
        self._in_flight: collections.deque[tuple[Future, str]] = collections.deque()
        self._lock = threading.Lock()
        self._stopping = False
        pickle.dump([p or os.getcwd() for p in sys.path], self.stdin)
        self.stdin.flush()
        self._writer = threading.Thread(target=self._write, daemon=True, name=f"worker-{self.pid}-in")
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"worker-{self.pid}-out")
        self._writer.start()
        self._reader.start()
        _LIVE.add(self)

    def call(self, name: str, fn: Callable[..., Any], args: tuple = (), kwargs: dict | None = None) -> Future:
        """Queue fn(*args, **kwargs) for this worker (after what it was given before); `name` says what it
        computes, in errors. A future cancelled before it is sent is never run."""
        future: Future = Future()
        self._outbox.put((future, name, fn, args, kwargs or {}))
        return future

    def _write(self) -> None:
        while (item := self._outbox.get()) is not None:
            future, name, fn, args, kwargs = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                payload = pickle.dumps((fn, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as error:  # noqa: BLE001 - an argument that cannot be sent: the task's error
                future.set_exception(WorkerError(f"{name}: its function or arguments cannot be sent to a worker "
                                                 f"process: {type(error).__name__}: {error}"))
                continue
            with self._lock:
                ended = self.ended
                if ended is None:
                    self._in_flight.append((future, name))
            if ended is not None:
                future.set_exception(WorkerError(f"{name}: not run: {ended}"))
                continue
            with contextlib.suppress(OSError, ValueError):  # a dead worker: the reader fails what it was given
                send(self.stdin, payload)
        with contextlib.suppress(OSError):
            self.stdin.close()  # the worker's read ends: it exits

    def _read(self) -> None:
        while True:
            try:
                ok, value, text = pickle.loads(receive(self.stdout))  # noqa: S301 - our own worker's pipe
            except (EOFError, OSError, ValueError, pickle.UnpicklingError):
                break
            with self._lock:
                future, name = self._in_flight.popleft()
            if ok:
                future.set_result(value)
            else:
                failure = WorkerError(f"{name} failed in {self.name}:\n{text}")
                failure.__cause__ = value
                future.set_exception(failure)
        code = self.process.wait()
        with self._lock:
            self.ended = f"{self.name} exited with code {code}"
            in_flight, self._in_flight = list(self._in_flight), collections.deque()
        for position, (future, name) in enumerate(in_flight):
            future.set_exception(WorkerError(
                f"{name}: {self.name} ended while running it (exit code {code})" if position == 0 else
                f"{name}: not run: {self.ended} while running {in_flight[0][1]}"))

    def stop(self) -> None:
        """Ask the worker to exit once it has done what it was given (not waiting: `close` waits)."""
        if not self._stopping:
            self._stopping = True
            self._outbox.put(None)

    def close(self, timeout: float = 10.0) -> None:
        """Stop the worker once it has done what it was given, killing it after `timeout` seconds."""
        self.stop()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout)
        self.stdout.close()
        _LIVE.discard(self)


@atexit.register
def _close_all() -> None:
    """At exit nobody waits for a result: a worker still busy after a second is killed."""
    for worker in list(_LIVE):
        worker.close(1.0)


def import_modules(modules: Sequence[str]) -> None:
    """A task: import `modules` (a worker's imports while the caller still works). What they made lives as long as
    the worker: left out of the collector's later full passes (`gc.freeze`; the task index build's passes took
    ~0.45 CPU-s with the labeler's imports in them, ~0.24 without)."""
    for module in modules:
        importlib.import_module(module)
    gc.freeze()


RELEASE_AFTER_CPU_S = 2.0  # a task this long gives its freed memory back (short ones, e.g. labeling batches, not)


def release_memory() -> None:
    """Collect garbage and hand the C heap's free pages back to the system (glibc's malloc_trim; elsewhere only
    the collection): freed memory otherwise stays in the process's resident size."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def serve() -> None:
    """The worker's loop: read a task, run it, write (ok, result or exception, traceback text); until stdin
    ends, then the process exits at once: the interpreter's teardown of what the tasks left (a label worker's
    task index, ~1 s a worker when idle and several when loaded) frees nothing the OS would not, and the caller
    waits for it (run_all between the labels and the analysis). A task's prints go to stderr (stdout carries
    the results)."""
    # the parent stops its workers (it closes their pipe): a terminal's Ctrl-C, which reaches the whole process
    # group, must not end a worker mid-task or print its KeyboardInterrupt traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    results = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    tasks = sys.stdin.buffer
    while True:
        try:
            payload = receive(tasks)
        except EOFError:
            results.close()
            sys.stderr.flush()
            os._exit(0)
        started = time.process_time()
        try:
            fn, args, kwargs = pickle.loads(payload)  # noqa: S301 - our own parent, over a private pipe
            outcome: tuple[bool, Any, str] = (True, fn(*args, **kwargs), "")
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            outcome = (False, error, traceback.format_exc())
        try:
            message = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
            if not outcome[0]:
                pickle.loads(message)  # noqa: S301 - an exception that cannot be rebuilt in the parent: text only
        except Exception as error:  # noqa: BLE001
            text = outcome[2] or f"the result cannot be sent back: {type(error).__name__}: {error}"
            message = pickle.dumps((False, None, text), protocol=pickle.HIGHEST_PROTOCOL)
        send(results, message)
        # the task's arguments and result are not held until the next task comes (a long task's, 50x the mirror's
        # judged checks: ~1 GiB, counted in the process tree beside the step that waits for them)
        payload = fn = args = kwargs = outcome = message = None  # type: ignore[assignment]
        if time.process_time() - started >= RELEASE_AFTER_CPU_S:
            release_memory()
