"""What the offline labeler's worker processes run (resources/label_pool.py; the process and its pipe are
resources/worker_process.py's): `handle_request`, a task over this worker's state, which stays in the process
between requests (the index loaded once, the benchmark being labeled).

("prebuild", path) builds the task index from the O*NET files and pickles it at `path` (answer:
the digest of its inputs, the file's sha256, the build seconds); ("open", index_path) loads the pickled
TaskIndex and builds the calibrated offline labeler (answer: its labeler_version, model, template_version);
("label", benchmark, prompts, batch) labels one batch, first preparing the benchmark's context from `prompts`
when they are given (answer: the batch's LabelOutcomes); ("contexts",) returns the benchmark contexts it computed (the pool's process reuses them); ("crash", code)
ends the process (tests).

No warehouse, no Dagster: the worker only computes; the pool's process writes every label (the label cache,
its lock and failures stay with the labeling loop, models/labeling/cache.py). Its module-level imports are the
standard library only; BLAS runs one thread per worker (the workers are the parallelism).
"""

from __future__ import annotations

import gc
import os
from typing import Any

# the labeler's modules, imported by a worker as soon as it starts (while the pool's process runs other steps)
MODULES = ("models.labeling.offline", "resources.readers")


class _State:
    def __init__(self) -> None:
        self.labeler: Any = None
        self.prepared_for: str | None = None
        self.built: tuple[tuple[int, int], Any] | None = None  # (inode, mtime) of the file it prebuilt, the index


def _identity(path: str) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_ino, stat.st_mtime_ns


def offline_labeler(state: _State, index_path: str) -> Any:
    """The calibrated offline labeler over the pickled index (what LabelerResource.build makes for 'offline');
    the index this worker prebuilt itself when the file is the one it wrote (renamed into place)."""
    from pathlib import Path

    from models.labeling.offline import OfflineLabeler
    from resources.readers import load_selector_fit
    from resources.task_index import load_pickle

    if state.built is not None and state.built[0] == _identity(index_path):
        index = state.built[1]
    else:
        index = load_pickle(Path(index_path))
    state.built = None
    return OfflineLabeler.calibrated(index, load_selector_fit())


def prebuild(state: _State, path: str) -> tuple[str, str, float]:
    """Build the task index from the O*NET files and pickle it at `path`: (inputs digest, sha256, seconds). The
    build is a pure function of its inputs (its one BLAS step runs on one thread: models/labeling/offline/build.py),
    so this worker's single-thread settings give the index the step's process would build."""
    import time
    from pathlib import Path

    from resources import task_index

    tables, dwas = task_index.tables_from_sources(), task_index.task_dwas_frame()
    started = time.perf_counter()
    index = task_index.build_index(tables, dwas)
    seconds = time.perf_counter() - started
    sha = task_index.save_index(index, Path(path))
    state.built = (_identity(path), index)
    return task_index.inputs_digest(tables, dwas), sha, seconds


def handle(state: _State, request: tuple[Any, ...]) -> Any:
    kind = request[0]
    if kind == "prebuild":
        return prebuild(state, request[1])
    if kind == "open":
        from models.labeling.offline.evidence import derived

        state.labeler = offline_labeler(state, request[1])
        derived(state.labeler.index)  # what every batch needs of the index, before the first batch
        gc.freeze()  # the index and labeler live as long as the worker: out of the collector's full passes
        return state.labeler.labeler_version, state.labeler.model, state.labeler.template_version
    if kind == "label":
        _, benchmark, prompts, batch = request
        if prompts is not None:  # the first batch of a benchmark: its context, as the loop's prepare() does
            state.labeler.prepare(prompts)
            state.prepared_for = benchmark
        elif state.prepared_for != benchmark:
            raise RuntimeError(f"batch of {benchmark!r} before its prompts were sent (worker has "
                               f"{state.prepared_for!r})")
        return state.labeler.label(batch)
    if kind == "contexts":
        from models.labeling.offline.labeler import computed_contexts

        return computed_contexts(state.labeler.index) if state.labeler is not None else {}
    if kind == "crash":  # tests: a worker dying mid-run
        os._exit(int(request[1]))
    raise ValueError(f"unknown request {kind!r}")


_STATE = _State()  # this worker process's


def handle_request(request: tuple[Any, ...]) -> Any:
    """The task the pool sends: `request` against this worker's state."""
    return handle(_STATE, request)
