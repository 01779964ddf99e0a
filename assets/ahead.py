"""Computations started ahead in a worker (issue 29 item 3): Dagster runs the analysis steps one after the other
in one process, and the worker process (resources/worker_pool.py) is idle through most of them. A step whose
pure computation's inputs are all materialized early is started in the worker by the earlier step that makes
the last of them (`start`), keyed by those inputs (their rows, the parameters, the models/ source); the step
itself takes the result (`take`) only when its own inputs give the same key (the same values), else computes as
before. Nothing is read back across processes or runs: a step in another process finds nothing and computes.

- coverage_sensitivity: started when task_label_counts is made (its other inputs are reference tables).
- coverage_regressions_mi's per-draw fits, in two parts: started when task_analysis_frame is made (its other
  input, headline_count_draws, is the headline step's, which runs before it); the step takes the parts a
  worker has done and computes here a part no worker has started (`start_parts`, `take_parts`).
- report figures drawn ahead (assets/figure_reuse.py `draw_ahead`) are registered here too (`register`, `claim`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import polars as pl

from resources.dagster_resources import Warehouse
from resources.worker_pool import WorkerPool, shared_pool

_AHEAD: dict[str, tuple[str, Future, WorkerPool]] = {}  # name -> (key, future, its pool), this process only
_LOCK = threading.Lock()


def register(name: str, key: str, future: Future, pool: WorkerPool | None = None) -> None:
    """Keep `future` (submitted to `pool`, the shared one by default) as `name` computed ahead under `key`, for
    `claim`; one per name (an earlier one is discarded)."""
    pool = pool or shared_pool()
    with _LOCK:
        previous = _AHEAD.pop(name, None)
        _AHEAD[name] = (key, future, pool)
    if previous is not None:
        previous[2].discard([previous[1]])


def claim(name: str, key: str | None) -> Future | None:
    """The future registered as `name` under `key`, once; None when there is none, or one of another key (then
    discarded: a worker that started it finishes it, unread)."""
    with _LOCK:
        ahead = _AHEAD.pop(name, None)
    if ahead is None:
        return None
    if key is not None and ahead[0] == key and not ahead[1].cancelled():
        return ahead[1]
    ahead[2].discard([ahead[1]])
    return None


def _key(warehouse: Warehouse, name: str, parts: Sequence[str], frames: Sequence[pl.DataFrame]) -> str | None:
    return warehouse.frames_key([warehouse.source_digest("models"), name, *parts], list(frames))


def start(warehouse: Warehouse, name: str, parts: Sequence[str], frames: Sequence[pl.DataFrame],
          fn: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
    """Submit fn(*args, **kwargs) (pure: a function of `frames` and `parts`) to the worker pool, kept under their
    key for `take`; False when the frames cannot be hashed (nothing started)."""
    return start_parts(warehouse, name, parts, frames, [(functools.partial(fn, **kwargs), args)])


def take(warehouse: Warehouse, name: str, parts: Sequence[str], frames: Sequence[pl.DataFrame],
         compute: Callable[[], Any]) -> tuple[Any, bool]:
    """(the result, whether it was computed ahead): the one started ahead under the key of these `frames` and
    `parts` when there is one, else compute() here (one started from other inputs is dropped)."""
    taken = take_parts(warehouse, name, parts, frames, 1)
    return (compute(), False) if taken is None else (taken[0], True)


def start_parts(warehouse: Warehouse, name: str, parts: Sequence[str], frames: Sequence[pl.DataFrame],
                calls: Sequence[tuple[Callable[..., Any], tuple[Any, ...]]]) -> bool:
    """`start` for a computation in independent pieces: each call fn(*args) is submitted on its own (kept as
    `name#i`), so that `take_parts` can compute here one no worker has started yet."""
    key = _key(warehouse, name, parts, frames)
    if key is None:
        return False
    pool = shared_pool()
    for i, (fn, args) in enumerate(calls):
        label = f"{name} (ahead)" if len(calls) == 1 else f"{name} part {i + 1} of {len(calls)} (ahead)"
        register(f"{name}#{i}", key, pool.submit(fn, *args, name=label), pool)
    return True


def take_parts(warehouse: Warehouse, name: str, parts: Sequence[str], frames: Sequence[pl.DataFrame],
               n_parts: int) -> list[Any] | None:
    """The pieces `start_parts` started under the key of these `frames` and `parts`, in order (a piece no worker
    has started runs here); None when they are not all there (those that are are dropped): compute as usual.
    The key (a hash of the frames) is computed only when something was started under `name`."""
    with _LOCK:
        started = any(f"{name}#{i}" in _AHEAD for i in range(n_parts))
    if not started:
        return None
    key = _key(warehouse, name, parts, frames)
    futures = [claim(f"{name}#{i}", key) for i in range(n_parts)]  # one of another key is dropped by claim
    if any(f is None for f in futures):
        shared_pool().discard([f for f in futures if f is not None])
        return None
    return shared_pool().gather(futures)  # type: ignore[arg-type]


MI_NAME = "coverage_regressions_mi"


def mi_inputs(task_analysis_frame: pl.DataFrame, headline_count_draws: pl.DataFrame
              ) -> tuple[pl.DataFrame, pl.DataFrame, list[Any], int]:
    """(the task frame of index `all`, the task keys, the count vector of each draw, where the second part of
    the draws starts) of coverage_regressions_mi: the first part is a worker's, the second the step's."""
    from models import estimates as es
    from models.estimates.count_draws import count_draws_of

    task_frame = task_analysis_frame
    if "benchmark_index" in task_frame.columns:  # per-index tables (issue 18): the regressions of index 'all'
        task_frame = task_frame.filter(pl.col("benchmark_index") == es.ALL_INDEX)
    task_keys, count_draws = count_draws_of(headline_count_draws)
    half = (len(count_draws) + 1) // 2 if shared_pool().workers else 0
    return task_frame, task_keys, count_draws, half


def start_mi_fits(warehouse: Warehouse, task_analysis_frame: pl.DataFrame) -> bool:
    """coverage_regressions_mi's per-draw fits (models.regression_mi.draw_fits, the two parts of its draws) from
    this task frame and the headline_count_draws the warehouse holds."""
    if not warehouse.table_exists("headline_count_draws"):
        return False
    from models.regression_mi import draw_fits

    draws = warehouse.read_table("headline_count_draws")
    task_frame, task_keys, count_draws, half = mi_inputs(task_analysis_frame, draws)
    if not half:
        return False
    return start_parts(warehouse, MI_NAME, [], [task_analysis_frame, draws],
                       [(draw_fits, (task_frame, task_keys, count_draws[:half])),
                        (draw_fits, (task_frame, task_keys, count_draws[half:]))])


def sensitivity_parts(thresholds: Sequence[int], labeler: str | None) -> list[str]:
    return [repr(tuple(thresholds)), str(labeler)]


SENSITIVITY_TABLES = ("onet_tasks", "task_hours", "onet_occupations", "task_exposure", "occupation_wages",
                      "workbank_tasks")


def start_sensitivity(warehouse: Warehouse, labels: pl.DataFrame, thresholds: Sequence[int],
                      labeler: str | None) -> bool:
    """coverage_sensitivity's computation (models.coverage.coverage_sensitivity) from `labels` (the counts of
    every labeler, as the step reads them) and the reference tables as the warehouse holds them."""
    if not all(warehouse.table_exists(t) for t in SENSITIVITY_TABLES):
        return False
    from models import coverage as cov

    tables = [warehouse.read_table(t) for t in SENSITIVITY_TABLES]
    return start(warehouse, "coverage_sensitivity", sensitivity_parts(thresholds, labeler), [labels, *tables],
                 cov.coverage_sensitivity, labels, *tables, thresholds=tuple(thresholds), labeler=labeler)
