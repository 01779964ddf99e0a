"""coverage_model_check: is per-unit p_covered calibrated on a known truth, over many populations? (issue 25)

    .venv/bin/python bench/coverage_model_check.py --warehouse PATH [--populations 4] [--draws 40] [--seed 25]
    .venv/bin/python bench/coverage_model_check.py --world simulated --populations 40 --draws 30 --seed 7
    .venv/bin/python bench/coverage_model_check.py --world simulated_mirror_like --populations 40 --draws 30 --seed 7

`--world model` (the default): the `model` check of models/estimates/coverage_check.py, on a materialized
warehouse: `populations` truths drawn from the fitted miss model (model_population), each with a new judge
sample of the same size, re-estimated with `draws` model-assisted draws. The pipeline runs 4 populations
(`EstimatesConfig.coverage_model_populations`; each costs a fit and draws over the whole problem); this runs as
many as it takes to resolve a bin.
`--world simulated` / `--world simulated_mirror_like`: those rows of the pipeline's
unit_coverage_simulation_check (populations from models.estimates.simulation.simulate, a labeler model the
estimator does not assume, in its default world / in MIRROR_LIKE), with as many populations as it takes to
resolve a bin to a few hundredths (the pipeline runs `EstimatesConfig.coverage_simulations`, 16); no warehouse
needed; with `--warehouse`, the map that warehouse publishes for p_covered_calibrated is carried into the world
too, as the asset does (its figures under "p_covered_calibrated").
One JSON object on stdout: the mixture weights fitted on the sample and on each population's new sample (model
world), the pooled covered counts (estimated = sum of p_covered, true) per unit level and threshold, the bins
with >= 40 units (mean p, share covered, difference and its Monte Carlo standard errors), how many bins are more
than 0.05 off, how many beyond 0.05 + 2 standard errors (in all, and per unit level and threshold: `levels`), the
calibration error over units per unit level and threshold (`ece`: every bin's |difference| weighted by its
units), and CPU seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402

if TYPE_CHECKING:
    import polars as pl

    from models.estimates.coverage_check import CoverageMap

MIN_UNITS = 40
TOLERANCE = 0.05


def run(warehouse: str | None, populations: int, draws: int, seed: int, world: str = "model") -> dict:
    import numpy as np
    import polars as pl

    from models.estimates import coverage_check as cc

    weights: dict = {}
    columns = [cc.RAW]
    if world in cc.SIMULATED_WORLDS:  # the pipeline's own rows of that world, with more populations
        cpu = time.process_time()
        pairs = cc.unit_coverage_check(None, simulated=populations, n_draws=draws, seed=seed,
                                       worlds={world: cc.SIMULATED_WORLDS[world]}).pairs[world]
        if warehouse is not None:  # the map the warehouse publishes, carried into the world as the asset does
            pairs = cc._mapped_pairs(pairs, published_map(warehouse))
            columns.append(cc.CALIBRATED)
    else:
        from assets.estimates import warehouse_problem
        from models.estimates.draws import ModelAssisted
        from resources.dagster_resources import Warehouse

        if warehouse is None:
            raise SystemExit("--world model needs --warehouse")
        problem = warehouse_problem(Warehouse(path=warehouse))
        cpu = time.process_time()
        rng = np.random.default_rng(seed)
        assisted = ModelAssisted(problem)
        refits, found = [], []
        for r in range(populations):
            population, truth = cc.model_population(problem, rng, assisted)
            refits.append(ModelAssisted(population).weights.round(2).tolist())
            found.append(cc.coverage_pairs(population, truth, draws, seed + 200 + r, replication=r))
        pairs = pl.concat(found)
        weights = {"weights": assisted.weights.round(2).tolist(), "refit_weights": refits}
    out = {"date": common.now_iso(), "code": common.code_version(), "world": world, "populations": populations,
           "draws": draws, "seed": seed, **weights}
    for column in columns:  # the calibrated reading's figures under "p_covered_calibrated"
        figures = pair_figures(pairs, world, populations, column)
        out.update(figures if column == cc.RAW else {column: figures})
    out["cpu_seconds"] = round(time.process_time() - cpu, 2)
    return out


def pair_figures(pairs: pl.DataFrame, world: str, populations: int, column: str = "p_covered") -> dict:
    """The check's figures of `pairs` (PAIR_SCHEMA) read through `column`: pooled covered counts per unit level
    and threshold, the bins with >= MIN_UNITS units, the calibration error over units (`ece`), how many bins are
    off by more than TOLERANCE and beyond it + 2 se (in all and per level: `levels`), the largest difference."""
    import polars as pl

    from models.estimates import coverage_check as cc

    keys = ["unit", "threshold"]
    counts = (pairs.group_by(*keys, "replication")
              .agg(pl.col(column).sum().alias("estimated"), pl.col("covered").sum().alias("true"))
              .group_by(keys).agg(pl.col("estimated").mean(), pl.col("true").mean()).sort(keys))
    every_bin = cc.bin_coverage(pairs, world, populations, column)
    # calibration error over units: every bin's |difference| weighted by its units (p_covered = 0 left out)
    ece = (every_bin.group_by(keys)
           .agg(((pl.col("difference").abs() * pl.col("n_units")).sum() / pl.col("n_units").sum()).alias("ece"))
           .sort(keys))
    bins = every_bin.filter(pl.col("n_units") >= MIN_UNITS).select(
        *keys, "bin", "n_units", "mean_p", "share_covered", "difference", "difference_se", "difference_se_units")
    se = pl.max_horizontal("difference_se", "difference_se_units").fill_null(0.0)
    off, beyond = pl.col("difference").abs() > TOLERANCE, pl.col("difference").abs() > TOLERANCE + 2 * se
    levels = (bins.group_by(keys).agg(off.sum().alias("bins_off"), beyond.sum().alias("beyond_two_se"),
                                      pl.len().alias("bins"), pl.col("difference").abs().max().alias(
                                          "max_abs_difference"))
              .join(counts, on=keys).sort(keys))
    return {
        "ece": ece.to_dicts(), "counts": counts.to_dicts(), "bins": bins.to_dicts(), "levels": levels.to_dicts(),
        "bins_off": int(bins.filter(off).height), "bins_checked": bins.height,
        "bins_beyond_two_se": int(bins.filter(beyond).height),
        "max_abs_difference": float(bins["difference"].abs().max() or 0.0),
    }


def published_map(warehouse: str) -> CoverageMap:
    """The p_covered map of the warehouse's last judged checks (their cache beside it, whatever its key)."""
    import pickle

    from resources.dagster_resources import Warehouse

    path = Warehouse(path=warehouse).estimate_cache_path("judged_checks")
    with path.open("rb") as handle:  # the pipeline's own pickle, beside the warehouse it wrote
        return pickle.load(handle)["value"].coverage_map


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--world", choices=("model", "simulated", "simulated_mirror_like"), default="model")
    parser.add_argument("--warehouse", help="a materialized warehouse (the model world)")
    parser.add_argument("--populations", type=int, default=4)
    parser.add_argument("--draws", type=int, default=40)
    parser.add_argument("--seed", type=int, default=25)
    args = parser.parse_args()
    common.emit(run(args.warehouse, args.populations, args.draws, args.seed, args.world))


if __name__ == "__main__":
    main()
