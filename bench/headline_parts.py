"""headline_parts: CPU-s of each part of the headline_estimates step and of membership's group shares, outside
Dagster, on a copy of a materialized warehouse (issue 29: A/B of models/estimates changes).

    PYTHONPATH=<code> .venv/bin/python bench/headline_parts.py WAREHOUSE_COPY OUT.pkl

Runs membership's estimated_group_shares, then the headline step's computations in its order (the draws of
membership are replayed where the code keeps them; the judged checks are read from their cache beside the
warehouse when their key matches, `judged_checks_cached` says so), prints one JSON object of CPU-s per part and pickles every
table, for comparing two code versions table by table (`polars.DataFrame.equals`). PYTHONPATH picks the code
(the editable install points at the main checkout). Writes nothing into the warehouse, but opens it for
writing: use a copy per run.
"""

from __future__ import annotations

import json
import pickle
import sys
import time

import polars as pl

from assets import estimates as ea
from assets import indexes as ia
from assets.estimates_split import start_judged_checks
from models import estimates as es
from models.estimates.judged import split_check
from models.regression_mi import regressions_mi
from resources.dagster_resources import Warehouse


def headline(wh: Warehouse, timings: dict[str, float]) -> dict[str, pl.DataFrame | None]:
    from bench.common import code_version

    config = ea.EstimatesConfig()
    inputs = ea.read_inputs(wh)
    judge_rows = inputs["judge_rows"]
    texts = es.text_frame(inputs["prompts"], judge_rows)
    problem = ea._problem(inputs, judge_rows, inputs["labels"])
    scopes = es.scopes_for(problem, inputs["membership"])
    thresholds = tuple(sorted(set(config.thresholds) | {5}))
    pending = start_judged_checks(wh, inputs, texts, problem, config, [code_version()])  # in a worker meanwhile
    t = time.process_time()
    unit_draws = es.UnitDraws(problem, scopes, config.n_draws, with_texts=True)
    extra = {}
    replay = ea.kept_draws(problem) if hasattr(ea, "kept_draws") else None
    if replay is not None:
        extra["replay"] = replay
    timings["replayed"] = float(replay is not None)
    result = es.run_estimators(problem, scopes, thresholds=thresholds, n_draws=config.n_draws, seed=config.seed,
                               keep_counts=config.mi_draws, unit_draws=unit_draws, **extra)
    frame = es.estimates_frame(problem, scopes, result, thresholds)
    timings["draws_and_frame"] = time.process_time() - t
    t = time.process_time()
    counted_problem = problem if inputs["published_labels"] is inputs["labels"] else ea._problem(
        inputs, judge_rows, inputs["published_labels"])
    units = es.unit_estimates(unit_draws, es.labels_as_truth_counts(counted_problem), thresholds)
    units |= es.benchmark_share_estimates(unit_draws)
    timings["units"] = time.process_time() - t
    t = time.process_time()
    if True:  # issue 29: on the judged benchmarks, cached by their key, in a worker process
        judged = pending.result()
        units["occupation_probability_calibration"], recal = judged.calibration, judged.recalibration
        units["unit_coverage_simulation_check"] = judged.coverage
        split = judged.split
        timings["judged_checks_cached"] = float(judged.cached)
    else:  # the code before: the asset's calls, on every benchmark
        from assets.estimates_split import split_relabeler
        relabel, held = split_relabeler(wh, inputs["labeler_version"], texts, problem)
        units["occupation_probability_calibration"], recal = es.text_probability_calibration(
            problem, n_draws=config.calibration_draws, seed=config.seed)
        units["unit_coverage_simulation_check"] = es.unit_coverage_check(
            problem, replications=config.coverage_repeats, n_draws=min(config.n_draws, config.coverage_draws),
            seed=config.seed, simulated=config.coverage_simulations, relabel=relabel).table
        split = split_check(problem, scopes, config.split_repeats, min(config.n_draws, 50), config.seed, relabel,
                               held)
    timings["judged_checks"] = time.process_time() - t
    t = time.process_time()
    units["prompt_occupation_estimates"] = unit_draws.text_estimates.table(texts, recalibrate=recal)
    timings["text_table"] = time.process_time() - t
    t = time.process_time()
    if inputs["published_labels"] is not inputs["labels"]:
        counted = ea._labels_as_counted(counted_problem, scopes, thresholds, config.seed)
        frame = pl.concat([frame.filter(pl.col("estimator") != "labels_as_truth"), counted.select(frame.columns)])
    frame = ea._with_labeler(frame, inputs)
    pass_b = ea._start_pass_b(wh, ea._pass_b_problem(wh, inputs, judge_rows), scopes, thresholds, config)
    frame_b = ea._pass_b_rows(pass_b, inputs)
    if frame_b is not None:
        frame = pl.concat([frame, frame_b], how="vertical_relaxed")
    timings["counted_and_pass_b"] = time.process_time() - t
    t = time.process_time()
    reliability = es.reliability_table(problem)
    timings["reliability"] = time.process_time() - t
    t = time.process_time()
    mi = None
    if wh.table_exists("task_analysis_frame"):
        task_frame = wh.read_table("task_analysis_frame")
        if "benchmark_index" in task_frame.columns:
            task_frame = task_frame.filter(pl.col("benchmark_index") == es.ALL_INDEX)
        mi = regressions_mi(task_frame, problem.task_keys, result.count_draws["model_assisted"], "model_assisted")
    timings["mi_regressions"] = time.process_time() - t
    return {"headline_estimates": frame, "estimate_split_check": split, "coverage_regressions_mi": mi,
            "labeler_reliability": reliability, **units}


def main(argv: list[str]) -> int:
    import resource

    from resources.worker_pool import shared_pool

    wh = Warehouse(path=argv[0])
    timings: dict[str, float] = {}
    wall = time.perf_counter()
    started = time.process_time()
    t = time.process_time()
    shares = ia.estimated_group_shares(wh)
    timings["membership_group_shares"] = time.process_time() - t
    tables = headline(wh, timings)
    timings["total"] = time.process_time() - started
    timings["wall"] = time.perf_counter() - wall
    shared_pool().close()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    timings["workers_cpu"] = children.ru_utime + children.ru_stime  # the judged checks' worker processes
    tables["membership_group_shares"] = shares
    with open(argv[1], "wb") as f:
        pickle.dump({k: v for k, v in tables.items() if v is not None}, f)
    print(json.dumps({k: round(v, 2) for k, v in timings.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
