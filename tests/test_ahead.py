"""Computations started ahead in a worker (assets/ahead.py): a step takes the result started by an earlier step
only when its own inputs give the same key; from other inputs it computes itself (never the stale result)."""

from __future__ import annotations

import polars as pl
import pytest

from assets import ahead
from resources.dagster_resources import Warehouse
from resources.worker_pool import WorkerPool


def total(frame: pl.DataFrame) -> int:
    return int(frame["x"].sum())


@pytest.fixture
def pool(monkeypatch):
    with WorkerPool(workers=0) as inline:  # a task runs in this process when gathered
        monkeypatch.setattr(ahead, "shared_pool", lambda: inline)
        yield inline


def test_a_result_started_ahead_is_taken_only_for_the_same_inputs(tmp_path, pool):
    warehouse = Warehouse(path=str(tmp_path / "benchmap.duckdb"))
    computed: list[int] = []
    frame = pl.DataFrame({"x": [1, 2, 3]})

    def take(current: pl.DataFrame, parts: list[str]) -> tuple[int, bool]:
        return ahead.take(warehouse, "sum", parts, [current],
                          lambda: computed.append(1) or total(current))

    assert take(frame, ["p"]) == (6, False) and computed == [1]  # nothing started: computed here
    assert ahead.start(warehouse, "sum", ["p"], [frame], total, frame)
    assert take(frame.clone(), ["p"]) == (6, True) and computed == [1]  # the same rows: taken
    assert take(frame, ["p"]) == (6, False) and computed == [1, 1]  # taken once
    assert ahead.start(warehouse, "sum", ["p"], [frame], total, frame)
    changed = frame.with_columns(pl.Series("x", [1, 2, 30]))
    started = next(iter(pool._tasks))
    assert take(changed, ["p"]) == (33, False) and started.cancelled()  # other rows: computed, the other dropped
    assert ahead.start(warehouse, "sum", ["p"], [frame], total, frame)
    assert take(frame, ["q"]) == (6, False) and len(computed) == 4  # another parameter: computed


def test_pieces_started_ahead_are_taken_together_and_only_for_the_same_inputs(tmp_path, pool):
    warehouse = Warehouse(path=str(tmp_path / "benchmap.duckdb"))
    frame = pl.DataFrame({"x": [1, 2, 3, 4]})
    halves = [(total, (frame.head(2),)), (total, (frame.tail(2),))]
    assert ahead.take_parts(warehouse, "sum", ["p"], [frame], 2) is None  # nothing started
    assert ahead.start_parts(warehouse, "sum", ["p"], [frame], halves)
    assert ahead.take_parts(warehouse, "sum", ["p"], [frame.clone()], 2) == [3, 7]  # both, in order
    assert ahead.take_parts(warehouse, "sum", ["p"], [frame], 2) is None  # taken once
    assert ahead.start_parts(warehouse, "sum", ["p"], [frame], halves)
    started = list(pool._tasks)
    changed = frame.with_columns(pl.Series("x", [1, 2, 3, 40]))
    assert ahead.take_parts(warehouse, "sum", ["p"], [changed], 2) is None  # other rows: neither piece
    assert all(f.cancelled() for f in started)  # both dropped, never gathered
    assert ahead.take_parts(warehouse, "sum", ["p"], [frame], 2) is None
