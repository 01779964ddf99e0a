"""The headline's kept model-assisted count draws as a table and back (issue 28: coverage_regressions_mi is an
asset of its own, so the draws it refits on travel through the warehouse as `headline_count_draws`).

Long form, one row per draw and task with at least one prompt: a task absent from a draw had none, which is
what the regressions read it as (covered_5 false)."""

from __future__ import annotations

import numpy as np
import polars as pl

TASK_KEY = ["onet_soc_code", "task_id"]
COUNT_DRAWS_SCHEMA: dict[str, pl.DataType] = {
    "draw": pl.Int32(), "onet_soc_code": pl.Utf8(), "task_id": pl.Int64(), "prompts": pl.Float64(),
}


def count_draws_frame(task_keys: pl.DataFrame, count_draws: list[np.ndarray]) -> pl.DataFrame:
    """draw, onet_soc_code, task_id, prompts: `count_draws[d][k]` for the task `task_keys[k]` where it is
    above zero (prompts as Float64: exact for any count, and for expected counts if a draw holds them)."""
    frames = []
    for d, counts in enumerate(count_draws):
        values = np.asarray(counts, dtype=np.float64)
        nonzero = np.flatnonzero(values)
        frames.append(pl.DataFrame({
            "draw": np.full(nonzero.size, d, dtype=np.int32),
            "k": nonzero.astype(np.int64),
            "prompts": values[nonzero],
        }))
    if not frames:
        return pl.DataFrame(schema=COUNT_DRAWS_SCHEMA)
    keys = task_keys.select(*TASK_KEY).with_row_index("k").with_columns(pl.col("k").cast(pl.Int64))
    return (pl.concat(frames).join(keys, on="k", how="left")
            .select(*COUNT_DRAWS_SCHEMA).cast(COUNT_DRAWS_SCHEMA).sort("draw", *TASK_KEY))  # type: ignore[arg-type]


def count_draws_of(frame: pl.DataFrame) -> tuple[pl.DataFrame, list[np.ndarray]]:
    """(task keys, one count vector per draw in draw order) of a `count_draws_frame` table: the tasks are those
    with a prompt in some draw; a task missing from a draw counts 0."""
    keys = frame.select(*TASK_KEY).unique().sort(TASK_KEY)
    if frame.is_empty():
        return keys, []
    indexed = frame.join(keys.with_row_index("k"), on=TASK_KEY, how="left")
    n_draws = int(frame["draw"].max()) + 1  # type: ignore[arg-type]
    matrix = np.zeros((n_draws, keys.height), dtype=np.float64)
    matrix[indexed["draw"].to_numpy(), indexed["k"].to_numpy()] = indexed["prompts"].to_numpy()
    return keys, list(matrix)
