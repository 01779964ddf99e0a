"""family_cv: the selector's leave-one-benchmark-out label quality against leaving the benchmark's close relative
out too (audit of 2026-12-05; docs/offline_labeler.md, "What leaving one benchmark out does not see").

    .venv/bin/python bench/family_cv.py [--families tau_bench+tau2_bench,financebench+finance_agent_benchmark,...]
                                        [--controls tau_bench=agentclinic,...] [--out FILE]

The selector's two strongest features are priors of which occupations and tasks the judge picked across the
mirrored benchmarks' reference texts. Leaving one benchmark out (models/labeling/selector_cv.py) refits them
without it, but a sibling benchmark stays in the fit. For each benchmark b of each family (chosen in advance by
domain: tau_bench+tau2_bench, financebench+finance_agent_benchmark, webarena+visualwebarena) the selector is
fitted with its thresholds (`fit_with_thresholds`, `predict`, `decide`: the project's own code) three times:
- `lobo`: without b (the published leave-one-benchmark-out);
- `lofo`: without b's whole family;
- `ctl` (control, where `--controls` names one): without b and an unrelated benchmark, so a drop under `lofo`
  is not just a smaller training set.
Each fit labels b's reference texts, scored over both splits and both passes against the vendored reference
(data/reference/, `per_prompt_metrics`): task F1, first-occupation agreement, work accuracy (means over the
(text, pass) rows; `n` rows). Reads the mirror ($BENCHMAP_MIRROR) for the reference texts; writes nothing.

One JSON object on stdout (and in `--out`): one row per benchmark. A full run (the defaults: 3 families, 5
controls, 17 fits) took 101 s on the 2-core machine (prepare 13 s, then ~5 s a fit). Recorded:
bench/family-cv-2026-12-05.json (rerun 2026-12-05 at a51e6b5: every value equal).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402

FAMILIES = "tau_bench+tau2_bench,financebench+finance_agent_benchmark,webarena+visualwebarena"
# an unrelated benchmark left out as well (visualwebarena has none: its task F1 is 0 either way)
CONTROLS = ("tau_bench=agentclinic,tau2_bench=cybench,webarena=agentclinic,financebench=cybench,"
            "finance_agent_benchmark=agentclinic")
METRICS = ("task_f1", "first_occupation_agreement", "work_accuracy")


def evaluate(prepared: tuple, left_out: set[str], benchmark: str) -> dict[str, Any]:
    """Fit without `left_out`, label `benchmark`'s reference texts, score them against the reference."""
    import polars as pl

    from models.labeling import selector_cv as cv
    from models.labeling.selector import Selector
    from models.reference_labels import per_prompt_metrics

    reference, prompts, index, evidence = prepared
    train = [p for p in prompts if p.benchmark not in left_out]
    test = [p for p in prompts if p.benchmark == benchmark]
    fit = cv.fit_with_thresholds(train, index, evidence)
    predicted = cv.predict(Selector(fit, index), test, index, evidence)
    rows = cv.decide(predicted, fit.work.threshold, fit.task_threshold)
    frame = pl.DataFrame([{"prompt_hash": p.prompt_hash, **r} for p, r in zip(test, rows, strict=True)],
                         schema={"prompt_hash": pl.Utf8, "is_work": pl.Boolean, "tasks": pl.List(pl.Int64),
                                 "ranking": pl.List(pl.Int64), "first_occupation": pl.Utf8})
    metrics = per_prompt_metrics(frame, reference.filter(pl.col("benchmark") == benchmark))
    return {k: metrics[k].mean() for k in METRICS if k in metrics.columns} | {"n": metrics.height}


def run(families: list[list[str]], controls: dict[str, str]) -> dict[str, Any]:
    from pipelines.fit_labeler import prepare
    from resources.readers import REFERENCE_DIR

    start = time.time()
    prepared = prepare(REFERENCE_DIR)
    prepare_s = round(time.time() - start, 1)
    common.log(f"[family_cv] prepared in {prepare_s} s")
    known = {p.benchmark for p in prepared[1]}
    unknown = sorted(({b for fam in families for b in fam} | set(controls.values())) - known)
    if unknown:
        raise SystemExit(f"not in the reference: {', '.join(unknown)}")
    rows = []
    for family in families:
        for benchmark in family:
            t = time.time()
            row: dict[str, Any] = {"benchmark": benchmark, "family": "+".join(family)}
            for tag, left_out in (("lobo", {benchmark}), ("lofo", set(family))):
                row |= {f"{tag}_{k}": v for k, v in evaluate(prepared, left_out, benchmark).items()}
            if benchmark in controls:
                row["also_dropped"] = controls[benchmark]
                row |= {f"ctl_{k}": v for k, v in
                        evaluate(prepared, {benchmark, controls[benchmark]}, benchmark).items()}
            rows.append(row)
            common.log(f"[family_cv] {benchmark}: task F1 lobo {row['lobo_task_f1']:.3f}, "
                       f"lofo {row['lofo_task_f1']:.3f}, ctl {row.get('ctl_task_f1')} ({time.time() - t:.1f} s)")
    return {"bench": "family_cv", "measured_at": common.now_iso(), "script": "bench/family_cv.py",
            "code_version": common.code_version(), "mirror": str(common.mirror_path()),
            "families": ["+".join(f) for f in families], "controls": controls, "rows": rows,
            "prepare_seconds": prepare_s, "seconds": round(time.time() - start, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", default=FAMILIES, help="comma-separated families, members joined by '+'")
    parser.add_argument("--controls", default=CONTROLS,
                        help="comma-separated benchmark=unrelated pairs ('' for none); pairs of benchmarks "
                             "outside --families are ignored")
    parser.add_argument("--out", type=Path, help="also write the JSON object to this file")
    args = parser.parse_args()
    families = [f.split("+") for f in args.families.split(",") if f]
    members = {b for f in families for b in f}
    controls = dict(pair.split("=", 1) for pair in args.controls.split(",") if pair)
    result = run(families, {b: u for b, u in controls.items() if b in members})
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    common.emit(result)


if __name__ == "__main__":
    main()
