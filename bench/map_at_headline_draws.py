"""map_at_headline_draws: the published p_covered map read at the headline's draws, as a curve against the formula
it was read by before 2026-12-06 (issue 25, item 4; docs/estimates_calibration_log.md).

    .venv/bin/python bench/map_at_headline_draws.py --warehouse data/warehouse/benchmap.duckdb

The map is fitted on the split check's 30 draws (p_covered in steps of 1/30) and applied to the headline's 200.
Here both readings are fitted on `--fit` split_fifth splits at `--fit-draws` draws (relabeled from their
estimation part, as the pipeline's check is) and read on `--held` other split_fifth splits at `--draws` draws,
whose truth is the held-out judged texts: `new_curve` is coverage_check.fit_coverage_map as published;
`old_formula` is the same logistic read as a formula at any p (its p ~ 1 flag at p >= 0.995, every level with >= 20
pairs mapped). One JSON object: per reading, coverage_model_check.pair_figures' bins off, ECE and sums.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench.coverage_model_check import pair_figures  # noqa: E402

KEEP = ("bins", "bins_off", "bins_checked", "bins_beyond_two_se", "max_abs_difference", "ece", "counts")


def _formula_map(pairs: Any) -> dict[tuple[str, int], Any]:
    """The logistic of fit_coverage_map per level and threshold, as fitted before 2026-12-06."""
    import polars as pl
    from sklearn.linear_model import LogisticRegression

    fitted = {}
    for (level, threshold), group in pairs.filter(pl.col("p_covered") > 0).group_by("unit", "threshold"):
        covered = group["covered"].to_numpy().astype(float)
        if group.height < 20 or covered.min() == covered.max():
            continue
        fitted[(str(level), int(threshold))] = LogisticRegression(
            C=100.0, max_iter=200, solver="newton-cholesky").fit(_formula_features(group["p_covered"].to_numpy()),
                                                                 covered)
    return fitted


def _formula_features(p: Any) -> Any:
    import numpy as np

    q = np.clip(p, 1e-3, 1 - 1e-3)
    x = np.log(q / (1 - q))
    return np.column_stack([x, x**2, (p >= 0.995).astype(float)])


def run(warehouse: str, fit: int, held: int, fit_draws: int, draws: int, seed: int) -> dict:
    import numpy as np
    import polars as pl

    from assets.estimates import warehouse_judged_split
    from models.estimates import coverage_check as cc
    from models.estimates.checks import split_sample_problem
    from resources.dagster_resources import Warehouse

    sub, relabel, _ = warehouse_judged_split(Warehouse(path=warehouse))
    cpu = time.process_time()
    rng = np.random.default_rng(seed)

    def splits(count: int, n_draws: int, offset: int) -> pl.DataFrame:
        return pl.concat([cc.coverage_pairs(*split_sample_problem(sub, rng, fraction=0.2, relabel=relabel),
                                            n_draws, seed + offset + r, replication=r) for r in range(count)])

    fitted_on, read_on = splits(fit, fit_draws, 100), splits(held, draws, 200)
    curve, formula = cc.fit_coverage_map(fitted_on), _formula_map(fitted_on)

    def read(level: str, threshold: int, p: Any, which: str) -> Any:
        if which == "new_curve":
            return curve.apply(level, threshold, p)
        model = formula.get((level, threshold))
        return p if model is None else np.where(p > 0, model.predict_proba(_formula_features(p))[:, 1], 0.0)

    out: dict[str, Any] = {"date": common.now_iso(), "code": common.code_version(), "warehouse_fit_splits": fit,
                           "held_splits": held, "fit_draws": fit_draws, "draws": draws, "seed": seed}
    raw = pair_figures(read_on, "split_fifth", held)
    out["p_covered"] = {k: raw[k] for k in KEEP}
    for which in ("old_formula", "new_curve"):
        values = np.empty(read_on.height)
        for (level, threshold), index in read_on.with_row_index("_i").group_by("unit", "threshold"):
            values[index["_i"].to_numpy()] = read(str(level), int(threshold), index["p_covered"].to_numpy(), which)
        figures = pair_figures(read_on.with_columns(pl.Series(cc.CALIBRATED, values)), "split_fifth", held,
                               cc.CALIBRATED)
        out[which] = {k: figures[k] for k in KEEP}
    out["cpu_seconds"] = round(time.process_time() - cpu, 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warehouse", required=True, help="a materialized warehouse")
    parser.add_argument("--fit", type=int, default=6, help="split_fifth splits the maps are fitted on")
    parser.add_argument("--held", type=int, default=6, help="other split_fifth splits they are read on")
    parser.add_argument("--fit-draws", type=int, default=30)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--seed", type=int, default=41)
    args = parser.parse_args()
    common.emit(run(args.warehouse, args.fit, args.held, args.fit_draws, args.draws, args.seed))


if __name__ == "__main__":
    main()
