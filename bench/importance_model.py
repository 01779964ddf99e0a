"""Speed of the importance model (model 2: occupation fixed-effects logit) at the O*NET sizes. Prints one JSON object.

    .venv/bin/python bench/importance_model.py                      # simulated 17,600 tasks in 880 occupations
    .venv/bin/python bench/importance_model.py --warehouse /tmp/x/benchmap.duckdb   # + a warehouse's task frame
    .venv/bin/python bench/importance_model.py --compare             # + statsmodels with dummies (~30 s)

`models.fe_logit` (Newton on the block structure, no dummy matrix) against statsmodels' Logit with one dummy
column per occupation: wall seconds of `importance_fe_model` end to end (fit, 10 adjusted probabilities and 2
ratios with delta-method CIs), and with --compare the largest coefficient / SE difference between the two.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import emit, machine, now_iso  # noqa: E402
from models import regression as reg  # noqa: E402
from models.stats import logistic  # noqa: E402


def simulated(n_occupations: int = 880, per_occupation: int = 20, seed: int = 5) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    occupation = np.repeat([f"{11 + 2 * (i % 21)}-{1000 + i:04d}.00" for i in range(n_occupations)], per_occupation)
    n = occupation.size
    frame = pl.DataFrame(
        {
            "onet_soc_code": occupation,
            "exposed": rng.random(n) < 0.45,
            "importance": np.round(rng.uniform(2.5, 5.0, n), 2),
            "alpha": np.repeat(rng.normal(-1.0, 1.0, n_occupations), per_occupation),
        }
    ).with_columns(reg.importance_quintile().alias("q"))
    eta = frame["alpha"].to_numpy() + 0.6 * frame["exposed"].to_numpy() + 0.3 * (frame["q"].to_numpy() - 1)
    return frame.with_columns(pl.Series("covered_5", rng.random(n) < logistic(eta)))


def timed(frame: pl.DataFrame, repeats: int = 3) -> tuple[float, reg.ModelTables]:
    best = float("inf")
    tables = None
    for _ in range(repeats):
        started = time.perf_counter()
        tables = reg.importance_fe_model(frame)
        best = min(best, time.perf_counter() - started)
    assert tables is not None
    return best, tables


def compare_statsmodels(frame: pl.DataFrame, tables: reg.ModelTables) -> dict[str, float]:
    sample = frame.select(
        pl.col("covered_5").cast(pl.Int8),
        pl.col("exposed").cast(pl.Int8),
        "importance",
        pl.col("onet_soc_code").alias("occupation"),
    ).with_columns(reg.importance_quintile("occupation").alias("importance_quintile"))
    kept = sample.filter(pl.col("covered_5").n_unique().over("occupation") > 1)
    started = time.perf_counter()
    fit = reg.fit_logit_clustered(
        kept, "covered_5 ~ exposed + C(importance_quintile) + C(occupation)", "occupation", check_rank=False
    )
    seconds = time.perf_counter() - started
    joined = tables.coefficients.join(reg.tidy_coefficients(fit), on="term", suffix="_sm")
    return {
        "statsmodels_fit_seconds": round(seconds, 2),
        "max_abs_coef_difference": float((joined["coef"] - joined["coef_sm"]).abs().max()),
        "max_abs_se_difference": float((joined["se"] - joined["se_sm"]).abs().max()),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--warehouse", type=Path, help="also time a warehouse's task_analysis_frame")
    parser.add_argument("--compare", action="store_true", help="also fit statsmodels with dummies (slow)")
    args = parser.parse_args()
    frame = simulated()
    seconds, tables = timed(frame)
    sizes = dict(zip(tables.sample["item"], tables.sample["value"], strict=True))
    result: dict[str, object] = {
        "bench": "importance_model",
        "at": now_iso(),
        "machine": machine(),
        "simulated": {
            "tasks": frame.height,
            "occupations_kept": int(sizes["n_occupations_kept"]),
            "tasks_kept": int(sizes["n_tasks_kept"]),
            "fe_logit_seconds": round(seconds, 3),
            "iterations": tables.fit.iterations if tables.fit is not None else None,
        },
    }
    if args.compare:
        result["simulated"] |= compare_statsmodels(frame, tables)  # type: ignore[operator]
    if args.warehouse:
        import duckdb

        with duckdb.connect(str(args.warehouse), read_only=True) as con:
            real = con.sql("select * from task_analysis_frame").pl()
        if "benchmark_index" in real.columns:
            real = real.filter(pl.col("benchmark_index") == "all")
        seconds, tables = timed(real)
        sizes = dict(zip(tables.sample["item"], tables.sample["value"], strict=True))
        result["warehouse"] = {
            "tasks_rated": int(sizes["n_tasks_rated"]),
            "tasks_kept": int(sizes["n_tasks_kept"]),
            "occupations_kept": int(sizes["n_occupations_kept"]),
            "fe_logit_seconds": round(seconds, 3),
        }
    emit(result)


if __name__ == "__main__":
    main()
