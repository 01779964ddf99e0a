"""world_statistics: how much each simulated world's judge sample resembles the mirror's (issue 25).

    .venv/bin/python bench/world_statistics.py --warehouse data/warehouse/benchmap.duckdb [--populations 8]

models.estimates.simulation.judge_sample_statistics of the mirror's judge sample (a materialized warehouse),
beside its mean over `populations` populations of simulate's default world and of MIRROR_LIKE. One JSON object
on stdout: per statistic the three values.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402


def run(warehouse: str, populations: int, seed: int) -> dict:
    from assets.estimates import warehouse_problem
    from models import estimates as es
    from resources.dagster_resources import Warehouse

    mirror = es.judge_sample_statistics(warehouse_problem(Warehouse(path=warehouse)))
    worlds = {name: es.world_statistics(settings, populations, seed)["value"].to_list()
              for name, settings in (("default", {}), ("mirror_like", es.MIRROR_LIKE))}
    rows = [{"statistic": s, "mirror": round(float(m), 4),
             **{name: round(float(values[i]), 4) for name, values in worlds.items()}}
            for i, (s, m) in enumerate(zip(mirror["statistic"], mirror["value"], strict=True))]
    return {"date": common.now_iso(), "code": common.code_version(), "populations": populations, "seed": seed,
            "mirror_like": {k: list(v) if isinstance(v, tuple) else v for k, v in es.MIRROR_LIKE.items()},
            "statistics": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--populations", type=int, default=8)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    common.emit(run(args.warehouse, args.populations, args.seed))


if __name__ == "__main__":
    main()
