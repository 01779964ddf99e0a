"""A stop request (SIGINT: Ctrl-C, SIGTERM) that `run_all` honours wherever it arrives.

While one of run_all's in-process Dagster runs executes, Dagster's own handlers take SIGINT and SIGTERM: the
step running is interrupted, but the run (and run_all) went on, and an interrupt that reached a DuckDB query
became that query's error (`Query interrupted`), so nothing told run_all it was asked to stop. Within
`watching()` the process notes every such signal whichever Python handler is in place (the interpreter writes
its number to a wakeup pipe, `signal.set_wakeup_fd`), and between Dagster runs its own handler raises
`StopRequested`. `check()` raises it once a stop was asked for: run_all calls it before and after each step, and
the warehouse writes and the release call it, so a step that swallowed the interrupt cannot write or publish.

Outside `watching()` (a Dagster run launched by the daemon or the UI, a test) `received()` is None and
`check()` does nothing. No dagster here (resources/io_manager.py and assets/exports.py call it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequested(KeyboardInterrupt):
    """The process was asked to stop (a KeyboardInterrupt, so Dagster ends the whole run, not only the step)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


class _Watch:
    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)  # the interpreter's write must never block a signal handler
        self.signum: int | None = None


_WATCH: _Watch | None = None


def _stop(signum: int, _frame: FrameType | None) -> None:
    raise StopRequested(signum)


@contextlib.contextmanager
def watching() -> Iterator[None]:
    """Note SIGINT and SIGTERM for the block (run_all's main): raise StopRequested between Dagster runs, and
    remember the ones Dagster's handlers take. Main thread only (Python's rule for signals); elsewhere a no-op."""
    global _WATCH
    if threading.current_thread() is not threading.main_thread() or _WATCH is not None:
        yield
        return
    watch = _Watch()
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    previous_fd = signal.set_wakeup_fd(watch.write_fd, warn_on_full_buffer=False)
    _WATCH = watch
    try:
        for s in STOP_SIGNALS:
            signal.signal(s, _stop)
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        signal.set_wakeup_fd(previous_fd)
        _WATCH = None
        os.close(watch.read_fd)
        os.close(watch.write_fd)


def received() -> int | None:
    """The first stop signal this process got within `watching()` (None: none, or not watching)."""
    watch = _WATCH
    if watch is None:
        return None
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(watch.read_fd, 512):
            if watch.signum is None:
                watch.signum = next((s for s in chunk if s in STOP_SIGNALS), None)
    return watch.signum


def check() -> None:
    """Raise StopRequested when a stop was asked for (see the module doc)."""
    signum = received()
    if signum is not None:
        raise StopRequested(signum)


__all__ = ["STOP_SIGNALS", "StopRequested", "check", "received", "watching"]
