"""Estimates (group "estimates"): headline numbers that stay right when the labeler is weak (issue 16).

- `judge_sample_labels` + `judge_sample_design` (partitioned by benchmark): with `BENCHMAP_JUDGE_SAMPLE`
  (fraction, or "fraction:minimum", e.g. "0.1:12") and an LLM judge configured (`BENCHMAP_JUDGE=openai` or an
  `OPENAI_API_KEY`), the judge labels a stratified random sample of each benchmark's distinct prompt texts
  (through the label cache); the cheap labeler (`BENCHMAP_LABELER=offline`) labels every prompt as before. The
  design (N_b, n_b, fraction, minimum, seed, judge) is recorded per benchmark. Off by default: both tables
  are empty and the estimates use the reference labels (resources.readers.reference_folder) as the judge sample.
- the headline step `headline_estimates` (one multi-asset, unpartitioned, after benchmark_index_membership):
  every published figure from one read of its inputs (issue 28): `coverage_headline` (the labels as counted,
  with the published estimate beside), `headline_estimates` (every headline quantity under every estimator with
  95% intervals and which one is published, models/estimates/), `estimate_design`, `labeler_reliability`,
  `estimate_split_check`, the per-unit tables, and `headline_count_draws` (internal: the draws' counts);
- `coverage_regressions_mi`: the coverage logits refitted on those model-assisted draws of the label set
  (headline_count_draws, over task_analysis_frame) and combined with Rubin's rules.
"""


import time
from concurrent.futures import Future
from typing import Any

import polars as pl
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetExecutionContext,
    AssetOut,
    Config,
    MetadataValue,
    Output,
    asset_check,
    multi_asset,
)

from assets.analysis import counted_headline
from assets.estimate_draws import headline_draws, kept_reliability_table, kept_share_tables, kept_text_sums
from assets.estimate_figures import ESTIMATE_FIGURES, figure_later, figures_not_drawn
from assets.estimate_inputs import read_inputs, read_judge_rows
from assets.estimate_outputs import HEADLINE_OUTS
from assets.estimates_split import split_relabeler, start_judged_checks
from assets.export_context import headline_metadata
from assets.release_gate import refuse_labels_behind
from models import estimates as es
from models.estimates.count_draws import count_draws_frame
from models.figures import reliability_figure
from models.figures.estimates import occupation_probability_figure, unit_coverage_figure
from resources.dagster_resources import Warehouse
from resources.worker_pool import shared_pool

GROUP = "estimates"
PARTITIONED = {"partition_expr": "benchmark"}
JUDGE_SAMPLE_ENV = "BENCHMAP_JUDGE_SAMPLE"
JUDGE_ENV = "BENCHMAP_JUDGE"
MI_DRAWS = 20
SPLIT_REPEATS = 10


# --- reading the inputs -------------------------------------------------------------------------------------


def _md(frame: pl.DataFrame, limit: int = 30) -> str:
    from models.markdown import markdown_table

    return markdown_table(frame, max_rows=limit)


# --- the estimates --------------------------------------------------------------------------------------------


class EstimatesConfig(Config):
    thresholds: list[int] = [1, 5]
    n_draws: int = es.DEFAULT_DRAWS
    mi_draws: int = MI_DRAWS
    split_repeats: int = SPLIT_REPEATS
    calibration_draws: int = 20  # per-text p is exact per draw; the table's *_se columns give the draws' noise
    coverage_repeats: int = 6  # splits per fraction of the p_covered check (its difference_se gives the noise)
    coverage_draws: int = 30
    # populations of each simulated world of the p_covered check (models.estimates.simulation.simulate; ~0.06
    # CPU-s each in the default world, ~0.14 in MIRROR_LIKE): with 4 the bins' standard errors were 0.03-0.14,
    # with 16 about half that
    coverage_simulations: int = 16
    # truths drawn from the estimator's own fitted model (the `model` rows, the simulation check; ~0.35
    # CPU-s each on the mirror, in a worker beside the other parts): 8 cost the cold run ~2 s of wall time (an
    # A/B, 2026-12-07), 4 show the same picture (bench/coverage_model_check.py runs more)
    coverage_model_populations: int = 4
    seed: int = 16
    labeler: str | None = None  # whose labels coverage_headline counts (None: the active one, as CoverageConfig)


# The draws benchmark_index_membership made for its group shares (assets.indexes.estimated_group_shares), by the
# problem's fingerprint: the headline of the same process (run_all's analysis run) replays them instead of drawing
# again (the same counts, so the same values). One entry, taken by the headline; a step in another process
# (the multiprocess executor) finds none and draws anew.
_KEPT_DRAWS: dict[str, es.DrawRecord] = {}


def keep_draws(problem: es.Problem, record: es.DrawRecord) -> None:
    _KEPT_DRAWS.clear()
    _KEPT_DRAWS[problem.fingerprint()] = record


def kept_draws(problem: es.Problem) -> es.DrawRecord | None:
    """The kept draws of this very problem (taken: a second call finds none)."""
    record = _KEPT_DRAWS.pop(problem.fingerprint(), None)
    _KEPT_DRAWS.clear()
    return record


def _problem(inputs: dict, judge_rows: pl.DataFrame, labels: pl.DataFrame,
             texts: pl.DataFrame | None = None) -> es.Problem:
    """The estimates' Problem over the warehouse's texts, `labels` and the judge rows (`texts`: their text_frame,
    when the caller has it)."""
    return es.build_problem(
        texts if texts is not None else es.text_frame(inputs["prompts"], judge_rows),
        es.labeler_pairs(labels),
        es.judge_pairs(judge_rows.drop_nulls("task_id")),
        inputs["tasks"],
        inputs["task_hours"],
    )


def warehouse_problem(warehouse: Warehouse) -> es.Problem:
    """The estimates' Problem of a materialized warehouse, as the headline step builds it (bench, tests)."""
    inputs = read_inputs(warehouse)
    return _problem(inputs, inputs["judge_rows"], inputs["labels"])  # type: ignore[arg-type]


def warehouse_judged_split(warehouse: Warehouse) -> tuple[es.Problem, Any, str]:
    """The judged checks' problem of a materialized warehouse (its benchmarks with judged texts), the relabeling of
    a split's judged texts and what the split check says of it, as the estimates step builds them (bench)."""
    inputs = read_inputs(warehouse)
    texts = es.text_frame(inputs["prompts"], inputs["judge_rows"])
    problem = _problem(inputs, inputs["judge_rows"], inputs["labels"], texts)  # type: ignore[arg-type]
    judged, judged_texts = es.judged_problem(problem, texts)
    relabel, held_out_labels = split_relabeler(warehouse, inputs["labeler_version"], judged_texts, judged)
    return judged, relabel, held_out_labels


def _labels_as_counted(problem: es.Problem, scopes: list[es.Scope], thresholds: tuple[int, ...],
                       seed: int) -> pl.DataFrame:
    """The labels_as_truth rows of the published labels (`problem`: built from them; the estimators see the
    selector's cross-validated labels of the judge texts; the labels as counted are the ones in
    prompt_task_labels)."""
    result = es.run_estimators(problem, scopes, thresholds=thresholds, n_draws=1, seed=seed,
                               estimators=("labels_as_truth",))
    return es.estimates_frame(problem, scopes, result, thresholds).filter(pl.col("estimator") == "labels_as_truth")


def _with_labeler(frame: pl.DataFrame, inputs: dict) -> pl.DataFrame:
    frame = frame.with_columns(
        pl.lit(inputs["labeler"], pl.Utf8).alias("labeler"),
        pl.lit(inputs["labeler_version"], pl.Utf8).alias("labeler_version"),
    )
    if inputs["has_p"]:
        return frame
    return frame.with_columns(
        pl.when(pl.col("estimator") == "labeler")
        .then(pl.col("basis") + pl.lit("; the labels carry no p_exercised, so every label counts as p = 1"))
        .otherwise(pl.col("basis"))
        .alias("basis")
    )


def _pass_b_problem(warehouse: Warehouse, inputs: dict, judge_rows: pl.DataFrame) -> es.Problem | None:
    """The estimates' Problem with the development split judged by its second pass 'b' (None when there is no
    second pass)."""
    other = read_judge_rows(warehouse, inputs["prompts"], dev_pass="b")
    if other.equals(judge_rows):
        return None
    return _problem(inputs, other, inputs["labels"])


def _drop_label_frames(inputs: dict) -> None:
    """Free the frames of strings the Problems were built from (50x the mirror: two 2.2M-row label frames and the
    555k prompts, ~0.5 GiB held until the step's end otherwise): what the estimates read of them is in the
    Problems (integer arrays)."""
    for name in ("labels", "published_labels", "prompts"):
        inputs[name] = None


def _start_pass_b(warehouse: Warehouse, problem_b: es.Problem | None, scopes: list[es.Scope],
                  thresholds: tuple[int, ...], config: EstimatesConfig) -> Future | None:
    """The judge's reproducibility (`es.pass_b_frame` of `_pass_b_problem`), submitted to a worker process, idle
    while this step draws (~0.15 s less of the step; `_pass_b_rows` takes it, or computes it here when no worker
    has started it); None when there is no second pass. Its draws are read (or drawn and kept) here: a worker
    never opens the warehouse."""
    if problem_b is None:
        return None
    replay = headline_draws(warehouse, problem_b, config.seed + 1, config.n_draws, ("model_assisted",), "pass_b")
    return shared_pool().submit(es.pass_b_frame, problem_b, scopes, thresholds, config.n_draws, config.seed + 1,
                                replay, name="pass b rows")


def _pass_b_rows(pass_b: Future | None, inputs: dict) -> pl.DataFrame | None:
    """The rows `_start_pass_b` started, with the labeler's columns (None when there is no second pass)."""
    if pass_b is None:
        return None
    return _with_labeler(shared_pool().gather([pass_b])[0], inputs)


CALIBRATION_TABLES = ("occupation_probability_calibration", "unit_coverage_simulation_check")


def code_versions_of(context: AssetExecutionContext) -> list[str]:
    """The code versions of the step's assets (pipelines/code_versions.py), sorted; empty without any."""
    return sorted(str(v) for v in (context.assets_def.code_versions_by_key or {}).values() if v)


def _in_group(outs: dict[str, AssetOut]) -> dict[str, AssetOut]:
    """The outputs in this group, except those that name their own (coverage_headline stays in `analysis`)."""
    return {name: out if out.group_name else AssetOut(kinds=out.kinds, description=out.description, group_name=GROUP)
            for name, out in outs.items()}


@multi_asset(
    deps=["benchmark_prompts", "prompt_task_labels", "judge_sample_labels", "benchmark_index_membership",
          "benchmarks"],
    outs=_in_group(HEADLINE_OUTS),
)
def headline_estimates(
    context: AssetExecutionContext, config: EstimatesConfig, warehouse: Warehouse, task_label_counts: pl.DataFrame,
    onet_tasks: pl.DataFrame, task_hours: pl.DataFrame, onet_occupations: pl.DataFrame,
):
    """Every published headline figure from one input set (issue 28): the labels as counted (coverage_headline)
    and the estimates (headline_estimates and its per-unit tables), read in one held connection."""
    started = time.perf_counter()
    thresholds = tuple(sorted(set(config.thresholds) | {5}))
    shared_pool().warm(["models.estimates"])  # the judged checks' worker starts while the inputs are read
    with warehouse.held():  # one open of the file for the dozen reads (~30 CPU-ms each)
        refuse_labels_behind(warehouse, "headline_estimates")  # every published figure is made here
        inputs = read_inputs(warehouse, context.log)  # the log: a judged text kept in sample is said there
        counted_rows = counted_headline(warehouse, task_label_counts, onet_tasks, task_hours, onet_occupations,
                                        inputs["membership"], thresholds, config.labeler)  # type: ignore[arg-type]
    judge_rows: pl.DataFrame = inputs["judge_rows"]  # type: ignore[assignment]
    texts = es.text_frame(inputs["prompts"], judge_rows)  # type: ignore[arg-type]
    problem = _problem(inputs, judge_rows, inputs["labels"], texts)  # type: ignore[arg-type]
    scopes = es.scopes_for(problem, inputs["membership"])  # type: ignore[arg-type]
    # the judged checks run in a worker process (or are read from their cache) while this one draws
    pending = start_judged_checks(warehouse, inputs, texts, problem, config, code_versions_of(context), context.log)
    # every Problem the step needs is built now, then the label frames go (the per-text table, later, is the
    # step's largest: 50x the mirror's peak was set there with them still held)
    published_is_labels = inputs["published_labels"] is inputs["labels"]
    counted_problem = problem if published_is_labels else _problem(
        inputs, judge_rows, inputs["published_labels"], texts)  # type: ignore[arg-type]
    problem_b = _pass_b_problem(warehouse, inputs, judge_rows)
    _drop_label_frames(inputs)
    pass_b = _start_pass_b(warehouse, problem_b, scopes, thresholds, config)
    del problem_b
    unit_draws = es.UnitDraws(problem, scopes, config.n_draws, with_texts=True, with_shares=False)
    replay = kept_draws(problem)
    replayed = replay is not None
    if replay is None or not replay.covers(es.ESTIMATORS, config.seed, config.n_draws,
                                           (problem.n_bench, problem.n_tasks)):
        replay, replayed = headline_draws(warehouse, problem, config.seed, config.n_draws, log=context.log), False
    text_sums = kept_text_sums(warehouse, problem, replay)  # a benchmark's per-text sums kept as its draws
    shares = kept_share_tables(warehouse, problem, replay, context.log)  # and its shares
    unit_draws.text_subset = text_sums.texts_to_sum()
    result = es.run_estimators(
        problem, scopes, thresholds=thresholds, n_draws=config.n_draws, seed=config.seed, keep_counts=config.mi_draws,
        unit_draws=unit_draws, replay=replay,
    )
    reliability = kept_reliability_table(warehouse, problem, replay)  # (keyed by the draws) unchanged unless a judged benchmark changed
    reliability_metadata = figure_later(context, warehouse, "labeler_reliability", reliability_figure, reliability,
                                        "Labeler calibration against the judge")
    del replay  # the draws' records: replayed
    frame = es.estimates_frame(problem, scopes, result, thresholds)
    # the per-unit tables in the worker, idle here (~0.5 CPU-s), while this process finishes the rest; taken
    # below, before the tables they are calibrated with (computed here when no worker has started them)
    unit_tables = shared_pool().submit(es.timed_unit_estimates, unit_draws.without_texts(),
                                       es.labels_as_truth_counts(counted_problem), thresholds,
                                       name="the per-unit estimates")
    # what does not need the judged checks comes first: a worker is still on them (their order does not change
    # a value: each part has its own seed)
    if not published_is_labels:  # labels as counted = the published labels
        counted = _labels_as_counted(counted_problem, scopes, thresholds, config.seed)
        frame = pl.concat([frame.filter(pl.col("estimator") != "labels_as_truth"), counted.select(frame.columns)])
    del counted_problem
    frame = _with_labeler(frame, inputs)
    frame_b = _pass_b_rows(pass_b, inputs)
    if frame_b is not None:
        frame = pl.concat([frame, frame_b], how="vertical_relaxed")
    t_estimates = time.perf_counter() - started
    cpu_calibration = time.process_time()
    judged = pending.result()
    recalibration = judged.recalibration
    figures = {  # drawn by the worker of their check, else by a worker while this process writes the tables first
        "occupation_probability_calibration": figure_later(
            context, warehouse, "occupation_probability_calibration", occupation_probability_figure,
            judged.calibration, "Per-text occupation probabilities against the judge",
            judged.figures.get("occupation_probability_calibration")),
        "unit_coverage_simulation_check": figure_later(
            context, warehouse, "unit_coverage_simulation_check", unit_coverage_figure, judged.coverage,
            "p_covered against a known truth", judged.figures.get("unit_coverage_simulation_check")),
    }
    cpu_calibration = time.process_time() - cpu_calibration
    assert unit_draws.text_estimates is not None
    started_texts = time.process_time()
    unit_draws.text_estimates = text_sums.merged(unit_draws.text_estimates, warehouse.keep_result)  # type: ignore[arg-type]
    # its strings are joined a slice at a time as the IO manager writes it (50x the mirror: 7.3M rows, ~1 GiB
    # whole; it set the step's peak)
    text_table = unit_draws.text_estimates.table_slices(texts, recalibrate=recalibration)  # type: ignore[attr-defined]
    cpu_texts = time.process_time() - started_texts
    del unit_draws  # the draws' sums: the per-text rows are taken
    sources = judge_rows.group_by("benchmark").agg(pl.col("source").first())
    design = (
        es.sample_design(texts)
        .join(sources, on="benchmark", how="left")
        .with_columns(pl.col("source").fill_null("none"))
    )
    split = judged.split
    t_split = time.perf_counter() - started - t_estimates
    count_draws = count_draws_frame(problem.task_keys, result.count_draws["model_assisted"])
    del result
    headline = es.with_published(counted_rows, frame)  # the published estimate beside the labels (issue 16)
    published = frame.filter(pl.col("published") & (pl.col("scope") == es.ALL_SCOPE))
    context.log.info(
        f"estimates {t_estimates:.1f}s ({'draws of benchmark_index_membership replayed' if replayed else 'kept draws read or drawn'}; "
        f"judged checks {judged.seconds:.1f}s, {'cached' if judged.cached else 'computed'}{' ahead' * pending.ahead}, "
        f"{judged.gathered:.1f}s of it gathering them), "
        f"split check {t_split:.1f}s; "
        f"{int(design['n_sampled'].sum())} judge-sampled texts over {(design['n_sampled'] > 0).sum()} benchmarks"
    )
    yield Output(headline, "coverage_headline", metadata={
        "rows": headline.height, "preview": MetadataValue.md(_md(headline.filter(pl.col("scope") == "all"), 25))})
    yield Output(
        frame,
        "headline_estimates",
        metadata={
            "published_all": MetadataValue.md(_md(published.select(
                "benchmark_index", "quantity", "threshold", "estimator", "value", "ci_low", "ci_high"))),
            "labeler": str(inputs["labeler"]),
            "labeler_version": str(inputs["labeler_version"]),
            "has_p_exercised": bool(inputs["has_p"]),
            "seconds": round(t_estimates, 2),
            **headline_metadata(frame),
        },
    )
    yield Output(design, "estimate_design", metadata={"preview": MetadataValue.md(_md(design))})
    pooled = reliability.filter(pl.col("benchmark") == "all")
    figure_meta = reliability_metadata()
    yield Output(
        reliability,
        "labeler_reliability",
        metadata={
            **figure_meta,
            "ece": float(pooled["ece"][0]) if pooled.height else None,
            "recall": float(pooled["recall"][0]) if pooled.height and pooled["recall"][0] is not None else None,
            "preview": MetadataValue.md(_md(pooled)),
        },
    )
    # the tables above are written while the worker computes the per-unit ones
    units, cpu_units = shared_pool().gather([unit_tables])[0]  # and the CPU-s they took where they ran
    units |= shares
    units["occupation_probability_calibration"] = judged.calibration
    units["unit_coverage_simulation_check"] = judged.coverage
    started_calibration = time.process_time()
    units |= es.with_calibrated_p_covered(units, judged.coverage_map, es.UNIT_TABLES)
    cpu_calibration += time.process_time() - started_calibration
    units |= es.with_unknown_hours(units, task_hours)
    units["prompt_occupation_estimates"] = text_table
    cpu_units += cpu_texts
    context.log.info(f"per-unit and per-text tables {cpu_units:.1f} CPU-s, their calibration {cpu_calibration:.1f} "
                     "CPU-s")
    for name, table in units.items():
        seconds = cpu_calibration if name in CALIBRATION_TABLES else cpu_units
        preview = table if isinstance(table, pl.DataFrame) else table.head(12)  # a SlicedFrame: its first rows
        yield Output(table, name, metadata={"rows": table.height, "preview": MetadataValue.md(_md(preview, 12)),
                                            "cpu_seconds": round(seconds, 2),
                                            **(figures[name]() if name in figures else {})})
    # the worker is free now: it imports what coverage_regressions_mi's fits need while the next steps run
    shared_pool().warm(["models.regression_mi", "statsmodels.formula.api"])
    yield Output(split, "estimate_split_check", metadata={"preview": MetadataValue.md(_md(split, 40)),
                                                          "seconds": round(t_split, 2),
                                                          "judged_checks_cached": judged.cached,
                                                          "judged_checks_started_ahead": pending.ahead})
    yield Output(count_draws, "headline_count_draws", metadata={
        "rows": count_draws.height, "draws": int(count_draws["draw"].n_unique()) if count_draws.height else 0})


@asset_check(
    asset="task_estimates",
    name="unit_estimates_sum_to_headline",
    blocking=False,
    additional_deps=["occupation_estimates", "major_group_estimates", "headline_estimates"],
    description="For each index and threshold the sum of p_covered over tasks, occupations and major groups, and "
    "the hours-weighted sum over tasks, equal the model-assisted means of headline_estimates (the same draws).",
)
def unit_estimates_sum_to_headline(warehouse: Warehouse) -> AssetCheckResult:
    names = ["task_estimates", "occupation_estimates", "major_group_estimates", "headline_estimates"]
    missing = [n for n in names if not warehouse.table_exists(n)]
    if missing:
        return AssetCheckResult(passed=False, metadata={"missing_tables": missing})
    units = {n: warehouse.read_table(n) for n in names[:3]}
    tasks = units["task_estimates"]
    one = tasks.filter((pl.col("benchmark_index") == es.ALL_INDEX) & (pl.col("threshold") == tasks["threshold"].min()))
    result = es.unit_sum_check(units, warehouse.read_table("headline_estimates"), float(one["hours"].sum()))
    return AssetCheckResult(
        passed=result.height > 0 and bool(result["ok"].all()),
        metadata={"rows": result.height, "largest_difference": float(result["difference"].max() or 0.0),
                  "table": MetadataValue.md(_md(result, 40))},
    )


@asset_check(
    asset="labeler_reliability",
    name="estimate_figures_drawn",
    blocking=False,
    additional_deps=["occupation_probability_calibration", "unit_coverage_simulation_check"],
    description="The headline step drew its three figures (labeler_reliability, "
    "occupation_probability_calibration, unit_coverage_simulation_check) into this run's release: a figure "
    "that failed is named with its error, and the next plain run of run_all runs the step again.",
)
def estimate_figures_drawn(context: AssetCheckExecutionContext) -> AssetCheckResult:
    # lazy: the export helpers' imports are not on this module's import path
    from assets.export_context import latest_metadata

    missing = figures_not_drawn({asset: latest_metadata(context, asset) for asset in ESTIMATE_FIGURES})
    return AssetCheckResult(
        passed=not missing,
        metadata={"figures": len(ESTIMATE_FIGURES), "not_drawn": MetadataValue.json(missing or {})},
    )
