"""A labeling worker process of the offline labeler (`python -m resources.label_worker`, started by
resources/label_pool.py; never run by hand).

It reads requests from stdin and writes one answer per request to stdout, in order, each a length-prefixed
pickle (`read_message` / `write_message`): ("prebuild", path) builds the task index from the O*NET files
and pickles it at `path` (answer: the digest of its inputs, the file's sha256, the build seconds); ("open",
index_path) loads the pickled TaskIndex and builds the
calibrated offline labeler (answer: its labeler_version); ("label", prompts, batch) labels one batch, first
preparing the benchmark's context from `prompts` when they are given (answer: the batch's LabelOutcomes).
An exception is answered as ("error", text) and the worker goes on; a worker that dies closes its stdout,
which the pool reports as an error naming the worker and what it was labeling.

No warehouse, no Dagster: the worker only computes; the pool's process writes every label (the label cache,
its lock and failures stay with the labeling loop, models/labeling/cache.py). Its module-level imports are the
standard library only, so the process starts without the pipeline's heavy modules; BLAS runs one thread per
worker (the workers are the parallelism).
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import traceback
from typing import IO, Any

HEADER = struct.Struct("<Q")


def write_message(stream: IO[bytes], message: Any) -> None:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(body)) + body)
    stream.flush()


def read_message(stream: IO[bytes]) -> Any:
    """The next message, or EOFError when the other side closed the pipe."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError("pipe closed")
    size = HEADER.unpack(header)[0]
    body = stream.read(size)
    if len(body) < size:
        raise EOFError("pipe closed mid-message")
    return pickle.loads(body)  # noqa: S301 - our own parent process, over a private pipe


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


def prebuild(state: _State, path: str, blas_threads: int) -> tuple[str, str, float]:
    """Build the task index from the O*NET files with the pool's process's BLAS threads (the LSA step's last
    bits depend on them) and pickle it at `path`: (inputs digest | threads, sha256, seconds)."""
    import time
    from pathlib import Path

    from threadpoolctl import threadpool_limits

    from resources import task_index

    tables, dwas = task_index.tables_from_sources(), task_index.task_dwas_frame()
    started = time.perf_counter()
    with threadpool_limits(limits=blas_threads, user_api="blas"):
        index = task_index.build_index(tables, dwas)
        threads = task_index.blas_threads()
    seconds = time.perf_counter() - started
    sha = task_index.save_index(index, Path(path))
    state.built = (_identity(path), index)
    return f"{task_index.inputs_digest(tables, dwas)}|blas{threads}", sha, seconds


def handle(state: _State, request: tuple[Any, ...]) -> Any:
    kind = request[0]
    if kind == "prebuild":
        return prebuild(state, request[1], request[2])
    if kind == "open":
        from models.labeling.offline.evidence import derived

        state.labeler = offline_labeler(state, request[1])
        derived(state.labeler.index)  # what every batch needs of the index, before the first batch
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
    if kind == "crash":  # tests: a worker dying mid-run
        os._exit(int(request[1]))
    raise ValueError(f"unknown request {kind!r}")


def main() -> int:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the answers
    state = _State()
    # the labeler's imports now, while the pool's process still runs other steps (not at the first batch)
    import models.labeling.offline  # noqa: F401
    import resources.readers  # noqa: F401
    while True:
        try:
            request = read_message(stdin)
        except EOFError:
            return 0
        try:
            answer: Any = ("ok", handle(state, request))
        except Exception as exc:  # noqa: BLE001 - answered, the pool raises it naming the request
            answer = ("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}")
        write_message(stdout, answer)


if __name__ == "__main__":
    sys.exit(main())
