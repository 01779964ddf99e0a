"""simulation_study: the headline estimators against a known truth in a simulated world (issue 25).

    .venv/bin/python bench/simulation_study.py [--world simulated_mirror_like] [--replications 24] [--draws 60]

models.estimates.simulation_study over `replications` populations of one of the p_covered check's worlds
(coverage_check.SIMULATED_WORLDS): per quantity, threshold and estimator, the share of populations whose
published interval holds the truth, the mean error and the mean truth. One JSON object on stdout.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402


def run(world: str, replications: int, draws: int, seed: int) -> dict:
    import polars as pl

    from models import estimates as es

    cpu = time.process_time()
    study = es.simulation_study(replications=replications, n_draws=draws, seed=seed,
                                **es.SIMULATED_WORLDS[world])
    rows = study.filter(pl.col("estimator").is_in(["model_assisted", "bounds"])).select(
        "quantity", "threshold", "estimator", "n_replications", "coverage", "mean_error", "mean_truth").sort(
        "estimator", "quantity", "threshold")
    return {"date": common.now_iso(), "code": common.code_version(), "world": world,
            "replications": replications, "draws": draws, "seed": seed, "rows": rows.to_dicts(),
            "cpu_seconds": round(time.process_time() - cpu, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--world", choices=("simulated", "simulated_mirror_like"), default="simulated_mirror_like")
    parser.add_argument("--replications", type=int, default=24)
    parser.add_argument("--draws", type=int, default=60)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    common.emit(run(args.world, args.replications, args.draws, args.seed))


if __name__ == "__main__":
    main()
