"""bootstrap_coverage_map: a p_covered map learnt by parametric bootstrap, against raw p_covered and the published
split_fifth map, in the worlds of the p_covered check (issue 25, item 4).

    .venv/bin/python bench/bootstrap_coverage_map.py --world simulated_mirror_like --populations 40
    .venv/bin/python bench/bootstrap_coverage_map.py --world split_fifth --warehouse data/warehouse/benchmap.duckdb
    .venv/bin/python bench/bootstrap_coverage_map.py --world split_half --fraction 0.8 --warehouse ...

The published map (CoverageMap on `split_fifth`) is learnt where a fifth of the judged texts are the sample and
does not carry to the headline's scale (docs/estimates_calibration_log.md). The bootstrap map is learnt at the scale of the
problem it corrects, from that problem alone: `model-populations` truths drawn from the estimator's model
fitted on the problem (coverage_check.model_population, a new judge sample of the same size each), p_covered
re-estimated in each, and the same logistic map (fit_coverage_map) fitted on those pairs; then applied to the
problem's own p_covered. A population's truth is never seen by its map.

Worlds: `model` (truths drawn from the model fitted on the warehouse: the issue's own simulation check),
`simulated` / `simulated_mirror_like` (the check's simulated populations) and `split_fifth` / `split_half` (the
judged texts as the population, relabeled from each split's estimation part as the pipeline's check does;
`--fraction` sets another sampled share). With `--warehouse` the published reading is beside them: the
warehouse's own map in `model` and the simulated worlds (as the asset carries it), on split_fifth the fifth's
map cross-fitted over unit folds, on any other split the map fitted on six fifth splits. One JSON object: per
reading, coverage_model_check.pair_figures' bins, bins off, ECE and sums per unit level and threshold.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench.coverage_model_check import pair_figures, published_map  # noqa: E402

SPLIT_WORLDS = {"split_fifth": 0.2, "split_half": 0.5}
PUBLISHED_FITS = 6  # fifth splits behind the published map carried to another split, as the asset fits it


def _model_pairs(problem: Any, rng: Any, populations: int, draws: int, seed: int) -> list[tuple[Any, Any]]:
    """`populations` (population, pairs) of the problem's own fitted model, each re-estimated."""
    from models.estimates import coverage_check as cc
    from models.estimates.draws import ModelAssisted

    assisted = ModelAssisted(problem)
    found = []
    for r in range(populations):
        population, truth = cc.model_population(problem, rng, assisted)
        found.append((population, cc.coverage_pairs(population, truth, draws, seed + 500 + r, replication=r)))
    return found


def _remapped(pairs: Any, coverage_map: Any) -> Any:
    """`pairs` with p_covered replaced by its mapped value (the input of a map one level up)."""
    import polars as pl

    from models.estimates import coverage_check as cc

    return cc._mapped_pairs(pairs, coverage_map).with_columns(pl.col(cc.CALIBRATED).alias(cc.RAW)).drop(
        cc.CALIBRATED)


def bootstrap_map(problem: Any, rng: Any, populations: int, draws: int, seed: int,
                  second_level: int = 0) -> Callable[[Any], Any]:
    """A function pairs -> pairs with p_covered_calibrated: the CoverageMap of p_covered -> covered over
    `populations` populations of the problem's own fitted model. With `second_level` > 0, iterated once (a
    double bootstrap): each of those populations gets its own map from `second_level` populations of *its*
    refitted model, and a second map learns what such a map one level down still gets wrong; it is applied
    after the first."""
    import polars as pl

    from models.estimates import coverage_check as cc

    level_one = _model_pairs(problem, rng, populations, draws, seed)
    first = cc.fit_coverage_map(pl.concat([pairs for _, pairs in level_one]), "model")
    if not second_level:
        return lambda pairs: cc._mapped_pairs(pairs, first)
    residual = [_remapped(pairs, cc.fit_coverage_map(pl.concat(
        [inner for _, inner in _model_pairs(population, rng, second_level, draws, seed + 1000 * (k + 1))]), "model"))
        for k, (population, pairs) in enumerate(level_one)]
    second = cc.fit_coverage_map(pl.concat(residual), "model")
    return lambda pairs: cc._mapped_pairs(_remapped(pairs, first), second).with_columns(pairs[cc.RAW])


def run(world: str, warehouse: str | None, populations: int, model_populations: int, draws: int, seed: int,
        pairs_out: str | None = None, fraction: float | None = None, second_level: int = 0) -> dict:
    import numpy as np
    import polars as pl

    from models.estimates import coverage_check as cc
    from models.estimates.checks import split_sample_problem
    from models.estimates.simulation import simulate

    rng = np.random.default_rng(seed)
    cpu = time.process_time()
    raw, boot = [], []
    readings: dict[str, pl.DataFrame] = {}
    if world in SPLIT_WORLDS:
        if warehouse is None:
            raise SystemExit(f"--world {world} needs --warehouse")
        from assets.estimates import warehouse_judged_split
        from resources.dagster_resources import Warehouse

        sub, relabel, _ = warehouse_judged_split(Warehouse(path=warehouse))
        fraction = SPLIT_WORLDS[world] if fraction is None else fraction

        def population(_: int) -> tuple[Any, np.ndarray]:
            return split_sample_problem(sub, rng, fraction=fraction, relabel=relabel)
    elif world == "model":  # the literal simulation check: truths from the model fitted on the warehouse
        if warehouse is None:
            raise SystemExit("--world model needs --warehouse")
        from assets.estimates import warehouse_problem
        from models.estimates.draws import ModelAssisted
        from resources.dagster_resources import Warehouse

        fitted = warehouse_problem(Warehouse(path=warehouse))
        assisted = ModelAssisted(fitted)

        def population(_: int) -> tuple[Any, np.ndarray]:
            return cc.model_population(fitted, rng, assisted)
    else:
        settings = cc.SIMULATED_WORLDS[world]

        def population(_: int) -> tuple[Any, np.ndarray]:
            sim = simulate(rng, **settings)  # type: ignore[arg-type]
            return sim.problem, sim.truth_counts
    for r in range(populations):
        problem, truth = population(r)
        pairs = cc.coverage_pairs(problem, truth, draws, seed + 100 + r, replication=r)
        raw.append(pairs)
        boot.append(bootstrap_map(problem, rng, model_populations, draws, seed + r, second_level)(pairs))
    readings["p_covered"] = pl.concat(raw)
    readings["bootstrap_map"] = pl.concat(boot)
    if pairs_out:  # every unit's raw and bootstrap-mapped p_covered with its truth, for a reading of one's own
        readings["bootstrap_map"].write_parquet(pairs_out)
    if world == "split_fifth" and fraction == SPLIT_WORLDS[world]:
        readings["published_map"] = cc.cross_fitted(readings["p_covered"])
    elif world in SPLIT_WORLDS:
        fifths = [cc.coverage_pairs(*split_sample_problem(sub, rng, fraction=0.2, relabel=relabel), draws,
                                    seed + 300 + r, replication=r) for r in range(PUBLISHED_FITS)]
        readings["published_map"] = cc._mapped_pairs(readings["p_covered"], cc.fit_coverage_map(pl.concat(fifths)))
    elif warehouse is not None:
        readings["published_map"] = cc._mapped_pairs(readings["p_covered"], published_map(warehouse))
    out: dict[str, Any] = {"date": common.now_iso(), "code": common.code_version(), "world": world,
                           "populations": populations, "model_populations": model_populations, "draws": draws,
                           "seed": seed, "second_level": second_level, **({"fraction": fraction} if world in SPLIT_WORLDS else {})}
    for name, pairs in readings.items():  # a map's reading in p_covered_calibrated, beside the raw p_covered
        figures = pair_figures(pairs, world, populations, cc.RAW if name == "p_covered" else cc.CALIBRATED)
        out[name] = {key: figures[key] for key in ("bins", "bins_off", "bins_checked", "bins_beyond_two_se",
                                                    "max_abs_difference", "levels", "ece")}
    out["cpu_seconds"] = round(time.process_time() - cpu, 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--world", choices=("model", "simulated", "simulated_mirror_like", *SPLIT_WORLDS),
                        default="simulated_mirror_like")
    parser.add_argument("--warehouse", help="a materialized warehouse (the split worlds; the published map)")
    parser.add_argument("--populations", type=int, default=40)
    parser.add_argument("--model-populations", type=int, default=8)
    parser.add_argument("--draws", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pairs-out", help="write the pairs (raw and bootstrap-mapped) to this Parquet file")
    parser.add_argument("--fraction", type=float, help="a split world's sampled share of each benchmark's judged "
                        "texts, instead of the world's own (0.2, 0.5)")
    parser.add_argument("--second-level", type=int, default=0,
                        help="iterate the bootstrap once: populations per first-level population (0: a plain map)")
    args = parser.parse_args()
    common.emit(run(args.world, args.warehouse, args.populations, args.model_populations, args.draws, args.seed,
                    args.pairs_out, args.fraction, args.second_level))


if __name__ == "__main__":
    main()
