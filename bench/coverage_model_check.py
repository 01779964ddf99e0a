"""coverage_model_check: is per-unit p_covered calibrated on a truth drawn from the estimator's own model? (issue 25)

    .venv/bin/python bench/coverage_model_check.py --warehouse PATH [--populations 4] [--draws 40] [--seed 25]

The `model` check of models/estimates/coverage_check.py, on a materialized warehouse: `populations` truths drawn
from the fitted miss model (model_population), each with a new judge sample of the same size, re-estimated with
`draws` model-assisted draws. Not in the pipeline (docs/estimates.md: each population costs a headline fit).
One JSON object on stdout: the mixture weights fitted on the sample and on each population's new sample, the
pooled covered counts (estimated = sum of p_covered, true) per unit level and threshold, the bins with >= 40
units (mean p, share covered, difference and its Monte Carlo standard error), how many bins are more than 0.05
off, and CPU seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402

MIN_UNITS = 40
TOLERANCE = 0.05


def run(warehouse: str, populations: int, draws: int, seed: int) -> dict:
    import numpy as np
    import polars as pl

    from assets.estimates import _problem, read_inputs
    from models.estimates import coverage_check as cc
    from models.estimates.draws import ModelAssisted
    from resources.dagster_resources import Warehouse

    inputs = read_inputs(Warehouse(path=warehouse))
    problem = _problem(inputs, inputs["judge_rows"], inputs["labels"])  # type: ignore[arg-type]
    cpu = time.process_time()
    rng = np.random.default_rng(seed)
    assisted = ModelAssisted(problem)
    refits, found = [], []
    for r in range(populations):
        population, truth = cc.model_population(problem, rng, assisted)
        refits.append(ModelAssisted(population).weights.round(2).tolist())
        found.append(cc.coverage_pairs(population, truth, draws, seed + 200 + r, replication=r))
    pairs = pl.concat(found)
    counts = (pairs.group_by("unit", "threshold", "replication")
              .agg(pl.col("p_covered").sum().alias("estimated"), pl.col("covered").sum().alias("true"))
              .group_by("unit", "threshold").agg(pl.col("estimated").mean(), pl.col("true").mean())
              .sort("unit", "threshold"))
    bins = cc.bin_coverage(pairs, "model", populations).filter(pl.col("n_units") >= MIN_UNITS).select(
        "unit", "threshold", "bin", "n_units", "mean_p", "share_covered", "difference", "difference_se")
    return {
        "populations": populations, "draws": draws, "seed": seed,
        "weights": assisted.weights.round(2).tolist(), "refit_weights": refits,
        "counts": counts.to_dicts(), "bins": bins.to_dicts(),
        "bins_off": int((bins["difference"].abs() > TOLERANCE).sum()), "bins_checked": bins.height,
        "max_abs_difference": float(bins["difference"].abs().max() or 0.0),
        "cpu_seconds": round(time.process_time() - cpu, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--populations", type=int, default=4)
    parser.add_argument("--draws", type=int, default=40)
    parser.add_argument("--seed", type=int, default=25)
    args = parser.parse_args()
    common.emit(run(args.warehouse, args.populations, args.draws, args.seed))


if __name__ == "__main__":
    main()
