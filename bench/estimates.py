"""estimates: the headline-estimates step (issue 16) at 1x and 10x the mirrored prompt texts; wall time and peak RSS.

    .venv/bin/python bench/estimates.py [--warehouse PATH] [--factors 1,10] [--draws 200]

Reads a materialized warehouse (--warehouse, else $BENCHMAP_WAREHOUSE, else the `cold` bench state, built by
bench/cold.py when missing). For each factor F a child process builds the inputs of `headline_estimates` from
the warehouse and replicates every benchmark's distinct prompt texts F times as *new* texts (fresh prompt_hash,
the same labels and p_exercised), so N_b grows F-fold while the judge sample stays the same, then runs what the
asset runs: every estimator (--draws draws), the reliability table, the split-sample check (10 splits) and the
regressions with Rubin's rules (20 draws), and the per-unit / per-text tables of the same draws with their
calibration checks (issue 25; `*_cpu` are CPU seconds). Each stage's seconds and the child's peak RSS are reported; one JSON
object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402


def replicate(frame, factor: int):  # type: ignore[no-untyped-def]
    import polars as pl

    if factor == 1:
        return frame
    copies = [frame] + [
        frame.with_columns((pl.col("prompt_hash") + pl.lit(f"~r{k}")).alias("prompt_hash"),
                           *([(pl.col("prompt_id") + pl.lit(f"~r{k}")).alias("prompt_id")]
                             if "prompt_id" in frame.columns else []))
        for k in range(1, factor)
    ]
    return pl.concat(copies)


def one(warehouse: str, factor: int, draws: int) -> dict:
    import polars as pl

    from assets.estimates import EstimatesConfig, read_inputs
    from assets.estimates_split import split_check
    from models import estimates as es
    from models.regression_mi import regressions_mi
    from resources import warehouse as wh
    from resources.dagster_resources import Warehouse

    times: dict[str, float] = {}
    started = time.perf_counter()
    inputs = read_inputs(Warehouse(path=warehouse))
    prompts = replicate(inputs["prompts"], factor)
    labels = replicate(inputs["labels"], factor)
    judge_rows = inputs["judge_rows"]
    times["read_inputs"] = time.perf_counter() - started
    t = time.perf_counter()
    texts = es.text_frame(prompts, judge_rows)
    problem = es.build_problem(texts, es.labeler_pairs(labels), es.judge_pairs(judge_rows.drop_nulls("task_id")),
                               inputs["tasks"], inputs["task_hours"])
    scopes = es.scopes_for(problem, inputs["membership"])
    times["build"] = time.perf_counter() - t
    t = time.perf_counter()
    cpu = time.process_time()
    units = es.UnitDraws(problem, scopes, draws, with_texts=True)  # the per-unit / per-text tables (issue 25)
    result = es.run_estimators(problem, scopes, n_draws=draws, keep_counts=20, unit_draws=units)
    frame = es.estimates_frame(problem, scopes, result)
    times["estimators"] = time.perf_counter() - t
    times["estimators_cpu"] = time.process_time() - cpu
    t = time.perf_counter()
    cpu = time.process_time()
    tables = es.unit_estimates(units, es.labels_as_truth_counts(problem), es.THRESHOLDS)
    tables |= es.benchmark_share_estimates(units)
    tables["prompt_occupation_estimates"] = units.text_estimates.table(texts)  # type: ignore[attr-defined]
    times["unit_tables"] = time.perf_counter() - t
    times["unit_tables_cpu"] = time.process_time() - cpu
    t = time.perf_counter()
    cpu = time.process_time()
    config = EstimatesConfig()  # the asset's settings
    es.occupation_probability_calibration(problem, n_draws=config.calibration_draws, seed=config.seed)
    es.unit_coverage_check(problem, replications=config.coverage_repeats, n_draws=min(draws, config.coverage_draws),
                           seed=config.seed, simulated=config.coverage_simulations)
    times["unit_calibration"] = time.perf_counter() - t
    times["unit_calibration_cpu"] = time.process_time() - cpu
    t = time.perf_counter()
    es.reliability_table(problem)
    split_check(problem, scopes, 10, min(draws, 50), 16)
    times["reliability_and_split_check"] = time.perf_counter() - t
    t = time.perf_counter()
    task_frame = wh.query(warehouse, "select * from task_analysis_frame")
    if "benchmark_index" in task_frame.columns:
        task_frame = task_frame.filter(pl.col("benchmark_index") == "all")
    mi = regressions_mi(task_frame, problem.task_keys, result.count_draws["model_assisted"], "model_assisted")
    times["regressions_mi"] = time.perf_counter() - t
    published = frame.filter(pl.col("published") & (pl.col("scope") == "all") & (pl.col("benchmark_index") == "all")
                             & (pl.col("quantity") == "tasks_covered"))
    return {
        "factor": factor,
        "distinct_texts": int(problem.text_bench.size),
        "prompts": int(problem.text_mult.sum()),
        "label_rows": int(problem.lab_p.size),
        "judge_sampled_texts": int(problem.text_sampled.sum()),
        "scopes": len(scopes),
        "draws": draws,
        "seconds": {k: round(v, 2) for k, v in times.items()},
        "total_seconds": round(time.perf_counter() - started, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "estimate_rows": frame.height,
        "mi_rows": mi.height,
        "unit_table_rows": {name: table.height for name, table in tables.items()},
        "published_tasks_covered_all": published.select("threshold", "value", "ci_low", "ci_high").to_dicts(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", default=os.environ.get("BENCHMAP_WAREHOUSE"))
    parser.add_argument("--factors", default="1,10")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    warehouse = args.warehouse
    if not warehouse:
        state, _ = common.cold_state()
        warehouse = str(state.warehouse)
    if args.one is not None:
        common.emit(one(warehouse, args.one, args.draws))
        return 0
    runs = []
    for factor in (int(f) for f in args.factors.split(",")):
        common.log(f"[estimates] factor {factor}")
        proc = subprocess.run(
            [sys.executable, __file__, "--warehouse", warehouse, "--one", str(factor), "--draws", str(args.draws)],
            capture_output=True, text=True, check=False,
        )
        if proc.returncode != 0:
            common.log(proc.stderr[-3000:])
            runs.append({"factor": factor, "error": proc.stderr.strip().splitlines()[-1:]})
            continue
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    common.emit({
        "bench": "estimates",
        "measured_at": common.now_iso(),
        "machine": common.machine(),
        "warehouse": warehouse,
        "runs": runs,
        "budget": {"seconds": 60, "peak_rss_mib": 2048},
        "within_budget": all(r.get("total_seconds", 1e9) < 60 and r.get("peak_rss_mib", 1e9) < 2048 for r in runs),
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
