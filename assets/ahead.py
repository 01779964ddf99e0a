"""Computations started ahead in a worker (issue 29 item 3): Dagster runs the analysis steps one after the other
in one process, and the worker process (resources/worker_pool.py) is idle through most of them. A step whose
pure computation's inputs are all materialized early is started in the worker by the earlier step that makes
the last of them (`start`), keyed by those inputs (their rows, the parameters, the models/ source); the step
itself takes the result (`take`) only when its own inputs give the same key (the same values), else computes as
before. Nothing is read back across processes or runs: a step in another process finds nothing and computes.

- coverage_sensitivity: started when task_label_counts is made (its other inputs are reference tables).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import polars as pl

from resources.dagster_resources import Warehouse
from resources.worker_pool import shared_pool

_AHEAD: dict[str, tuple[str, Future]] = {}  # name -> (key, future), this process only
_LOCK = threading.Lock()


def _key(warehouse: Warehouse, name: str, parts: Sequence[str], frames: Sequence[pl.DataFrame]) -> str | None:
    return warehouse.frames_key([warehouse.source_digest("models"), name, *parts], list(frames))


def start(warehouse: Warehouse, name: str, parts: Sequence[str], frames: Sequence[pl.DataFrame],
          fn: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
    """Submit fn(*args, **kwargs) (pure: a function of `frames` and `parts`) to the worker pool, kept under their
    key for `take`; False when the frames cannot be hashed (nothing started)."""
    key = _key(warehouse, name, parts, frames)
    if key is None:
        return False
    pool = shared_pool()
    future = pool.submit(fn, *args, name=f"{name} (ahead)", **kwargs)
    with _LOCK:
        previous = _AHEAD.pop(name, None)
        _AHEAD[name] = (key, future)
    if previous is not None:
        pool.discard([previous[1]])
    return True


def take(warehouse: Warehouse, name: str, parts: Sequence[str], frames: Sequence[pl.DataFrame],
         compute: Callable[[], Any]) -> tuple[Any, bool]:
    """(the result, whether it was computed ahead): the one started ahead under the key of these `frames` and
    `parts` when there is one, else compute() here (one started from other inputs is dropped)."""
    with _LOCK:
        ahead = _AHEAD.pop(name, None)
    if ahead is None:
        return compute(), False
    pool = shared_pool()
    if ahead[1].cancelled() or ahead[0] != _key(warehouse, name, parts, frames):
        pool.discard([ahead[1]])
        return compute(), False
    return pool.gather([ahead[1]])[0], True


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
