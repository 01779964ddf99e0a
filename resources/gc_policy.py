"""Python's cyclic garbage collector during runs (issue 29 item 3).

A run's process holds ~330,000 container objects before its first step: Dagster, the code location, the
libraries. The collector's full passes walk all of them again, six or seven times a run, and the interpreter's
teardown walks them once more: measured in the daemon's two fresh processes after one new benchmark (2 cores,
2026-12-05), 0.5-0.75 s of full passes in each run and 0.85-0.95 s from the last atexit hook to the process's end
(0.3-0.45 s and 0.07-0.09 s frozen; bench/RESULTS.md, 2026-12-05).

`startup_objects_frozen` moves the objects alive when a run starts into the collector's permanent generation
(`gc.freeze`): the run's passes walk only what the run creates. It gives them back (`gc.unfreeze`) when the run
ends, so a process that runs on (run_all, the tests, a code server) collects them as before. The first run also
registers `gc.freeze` as an exit hook: the teardown then skips the walk; the objects it would have found are
freed by the operating system with the process (Python does not promise finalizers at exit; the run's own
resources are closed before: the warehouse by its resource, the event log by Dagster). Values are unchanged.
`gc.unfreeze` gives back every frozen object, also those run_all's CLI froze before its first run
(`_freeze_long_lived`): its next run freezes them again at its start, so only the moments between its runs see them.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import threading
from collections.abc import Iterator

_LOCK = threading.Lock()
_depth = 0  # runs of this process inside the block (nested: a run's second resource; threads: tests)
_exit_hook_registered = False


@contextlib.contextmanager
def startup_objects_frozen() -> Iterator[None]:
    """Within the block the collector skips what was alive when the outermost block began."""
    global _depth, _exit_hook_registered
    with _LOCK:
        if _depth == 0:
            gc.freeze()
        _depth += 1
        if not _exit_hook_registered:
            # registered after the libraries' own hooks, so it runs first (atexit is last in, first out): theirs
            # still run, they are plain calls, not collections
            atexit.register(gc.freeze)
            _exit_hook_registered = True
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0:
                gc.unfreeze()
