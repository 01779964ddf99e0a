"""A labeling worker process of the offline labeler (`python -m resources.label_worker`, started by
resources/label_pool.py; never run by hand).

It reads requests from stdin and writes one answer per request to stdout, in order, each a length-prefixed
pickle (`read_message` / `write_message`): ("open", index_path) loads the pickled TaskIndex and builds the
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


def offline_labeler(index_path: str) -> Any:
    """The calibrated offline labeler over the pickled index (what LabelerResource.build makes for 'offline')."""
    from pathlib import Path

    from models.labeling.offline import OfflineLabeler
    from resources.readers import load_selector_fit
    from resources.task_index import load_pickle

    return OfflineLabeler.calibrated(load_pickle(Path(index_path)), load_selector_fit())


def handle(state: _State, request: tuple[Any, ...]) -> Any:
    kind = request[0]
    if kind == "open":
        from models.labeling.offline.evidence import derived

        state.labeler = offline_labeler(request[1])
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
