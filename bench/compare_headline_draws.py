"""compare_headline_draws: are two headline_estimates tables the same up to Monte Carlo noise? (issue 29 item 3)

    .venv/bin/python bench/compare_headline_draws.py BEFORE.pkl AFTER.pkl [OUT.json]

BEFORE/AFTER: pickles of bench/headline_parts.py (a dict of tables with `headline_estimates`). For every
draw-based row of index `all`, scope `all` (estimators labeler, design, model_assisted, model_assisted_pass_b and
the published bounds) and each of value, ci_low, ci_high: the difference and z = difference / sqrt(se_before^2 +
se_after^2), the se being the rows' own Monte Carlo standard errors (value_mc_se, ...). Two independent sets of
200 draws differ by |z| > 2 in about 5% of figures and > 3 in 0.3%; prints the figures with |z| > 2 and a
summary, one JSON object.
"""

from __future__ import annotations

import json
import math
import pickle
import sys

import polars as pl

KEYS = ["benchmark_index", "scope", "quantity", "threshold", "estimator"]


def main(argv: list[str]) -> int:
    tables = []
    for path in argv[:2]:
        with open(path, "rb") as handle:
            frame = pickle.load(handle)["headline_estimates"]
        tables.append(frame.filter((pl.col("benchmark_index") == "all") & (pl.col("scope") == "all")
                                   & (pl.col("n_draws") > 0)))
    joined = tables[0].join(tables[1], on=KEYS, suffix="_after")
    rows, zs = [], []
    for row in joined.iter_rows(named=True):
        for column in ("value", "ci_low", "ci_high"):
            a, b = row[column], row[f"{column}_after"]
            se_a, se_b = row[f"{column}_mc_se"], row[f"{column}_mc_se_after"]
            if a is None or b is None or se_a is None or se_b is None:
                continue
            se = math.sqrt(se_a**2 + se_b**2)
            z = (b - a) / se if se > 0 else (0.0 if a == b else math.inf)
            zs.append(z)
            rows.append({"quantity": row["quantity"], "threshold": row["threshold"], "estimator": row["estimator"],
                         "figure": column, "before": a, "after": b, "mc_se": round(se, 4), "z": round(z, 2),
                         "published": row["published"]})
    finite = [abs(z) for z in zs if math.isfinite(z)]
    result = {
        "bench": "compare_headline_draws",
        "figures": len(zs),
        "abs_z_over_2": sum(1 for z in finite if z > 2),
        "abs_z_over_3": sum(1 for z in finite if z > 3),
        "infinite_z": len(zs) - len(finite),
        "max_abs_z": round(max(finite), 2) if finite else None,
        "published": [r for r in rows if r["published"]],
        "over_2": [r for r in rows if abs(r["z"]) > 2],
    }
    text = json.dumps(result, indent=1)
    if len(argv) > 2:
        with open(argv[2], "w") as handle:
            handle.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
