"""Results kept by their input frames (assets/kept_rows.py kept_result, labeler_validation's metrics): read back
only while every frame and part of the key is the same; a changed frame or part computes."""

from __future__ import annotations

import polars as pl

from assets.kept_rows import kept_result
from resources.dagster_resources import Warehouse


def test_a_kept_result_is_read_back_only_for_the_same_inputs(tmp_path):
    warehouse = Warehouse(path=str(tmp_path / "benchmap.duckdb"))
    calls: list[int] = []

    def total(frame: pl.DataFrame, parts: list[str]) -> int:
        def compute() -> int:
            calls.append(1)
            return int(frame["x"].sum())

        return kept_result(warehouse, "validation_test", parts, [frame, frame.head(1)], compute)

    frame = pl.DataFrame({"x": [1, 2, 3], "y": ["a", "b", "c"]})
    assert total(frame, ["v1"]) == 6 and len(calls) == 1
    assert total(frame.clone(), ["v1"]) == 6 and len(calls) == 1  # the same rows: read back
    changed = frame.with_columns(pl.when(pl.col("y") == "c").then(30).otherwise(pl.col("x")).alias("x"))
    assert total(changed, ["v1"]) == 33 and len(calls) == 2  # a changed row: computed, not the kept 6
    assert total(changed, ["v2"]) == 33 and len(calls) == 3  # another part of the key (a ranking, a mapping)
    assert total(changed, ["v2"]) == 33 and len(calls) == 3
