"""Analysis: what share of tasks, occupations, major groups and US work hours benchmarks cover, what predicts
coverage, and how models score per occupation. Thin wrappers over `models.coverage`, `models.regression` and
`models.scores`; every asset is a tidy table of the same name in the warehouse.
"""

import json

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetIn,
    AssetOut,
    Config,
    MetadataValue,
    Output,
    asset,
    asset_check,
    multi_asset,
)

from assets import TABLE_KINDS, ahead
from assets.figure_reuse import table_figures_ahead
from assets.kept_rows import counted_rows_store, model_score_rows_store
from assets.release_gate import refuse_labels_behind, refuse_missing_tables
from models import coverage as cov
from models import indexes as ix
from models import regression as reg
from models import scores
from models.markdown import markdown_table
from models.sources import ONET_VERSION
from resources import label_cache
from resources.dagster_resources import Warehouse

GROUP = "analysis"
# Model scores need prompt-level labels, but only of the prompts that have model results (a semi join in
# DuckDB) and only these columns: the label table grows with every benchmark, scored prompts far less.
LABEL_COLUMNS = ["benchmark", "prompt_id", "onet_soc_code", "task_id", "labeler", "labeler_version", "rank"]
SCORED_LABELS = AssetIn(
    "prompt_task_labels", metadata={"columns": LABEL_COLUMNS, "keys_in": "benchmark_results"}
)
ALL_RESULTS = AssetIn("benchmark_results")
# what the labeler comparison reads of a prompt, and of the active labeler's labels of the compared prompts
PROMPT_KEYS: dict[str, pl.DataType] = {"benchmark": pl.Utf8, "prompt_id": pl.Utf8, "prompt_hash": pl.Utf8}
ACTIVE_LABEL_COLUMNS = ("benchmark", "prompt_id", "prompt_hash", "onet_soc_code", "task_id", "labeler",
                        "labeler_version", "rank")


class CoverageConfig(Config):
    """Coverage thresholds (prompts per task) and which labeler's labels to count (None: the active one)."""

    thresholds: list[int] = [1, 5]
    labeler: str | None = None


def _markdown(frame: pl.DataFrame, limit: int = 25) -> MetadataValue:
    return MetadataValue.md(markdown_table(frame, max_rows=limit, digits=4))


MEMBERSHIP = "benchmark_index_membership"


def _membership(warehouse: Warehouse) -> pl.DataFrame | None:
    """benchmark_index_membership (models/indexes/), None before it is materialized: then only `all`."""
    return warehouse.read_table(MEMBERSHIP) if warehouse.table_exists(MEMBERSHIP) else None


def _by_index(frame: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """(index, its rows without the column) of a per-index table, `all` first."""
    if "benchmark_index" not in frame.columns:
        return [(ix.ALL_INDEX, frame)]
    names = frame["benchmark_index"].unique().to_list()
    ordered = [ix.ALL_INDEX] * (ix.ALL_INDEX in names) + sorted(n for n in names if n != ix.ALL_INDEX)
    return [(name, ix.only_index(frame, name)) for name in ordered]


def _thresholds(config: CoverageConfig) -> tuple[int, ...]:
    thresholds = tuple(sorted(set(config.thresholds)))
    if 5 not in thresholds:  # the regressions and the headline are defined at 5 prompts
        thresholds = (*thresholds, 5)
    return thresholds


@asset(group_name=GROUP, kinds=TABLE_KINDS, deps=["prompt_task_labels"])
def task_label_counts(context: AssetExecutionContext, warehouse: Warehouse) -> pl.DataFrame:
    """Prompts per labeler x benchmark x O*NET task x label-depth bucket (top 1 / 3 / 5 / all), aggregated in
    DuckDB from every partition of prompt_task_labels. Everything coverage needs, at a size that does not
    grow with the prompts of a benchmark, so no analysis step loads the label table itself."""
    # no labels yet: a failure naming them, not an empty table reported as a success (a probe, 2026-12-07)
    refuse_missing_tables(warehouse, "task_label_counts", ["prompt_task_labels"])
    refuse_labels_behind(warehouse, "task_label_counts")
    label_rows, frame = warehouse.task_label_counts()
    context.add_output_metadata(
        {
            "label_rows": int(label_rows),
            "rows": frame.height,
            "labelers": ", ".join(sorted(frame["labeler"].drop_nulls().unique().to_list())) or "none",
            "prompt_task_pairs": int(frame["n_prompts"].sum() or 0),
        }
    )
    # coverage_sensitivity (default config) reads these counts and reference tables only: a worker starts it now
    ahead.start_sensitivity(warehouse, _counts_of_every_labeler(warehouse, frame), _thresholds(CoverageConfig()), None)
    return frame


@asset(group_name=GROUP, kinds=TABLE_KINDS, deps=[MEMBERSHIP])
def task_coverage(
    context: AssetExecutionContext,
    config: CoverageConfig,
    warehouse: Warehouse,
    task_label_counts: pl.DataFrame,
    onet_tasks: pl.DataFrame,
) -> pl.DataFrame:
    """Per benchmark index x O*NET task (all 18,796): prompts and benchmarks of the index's members mapped to
    it, and covered_1 / covered_5 flags, from the labels as counted (the estimated coverage, with the labeler's
    error: task_estimates). Index `all` counts every landed benchmark."""
    refuse_labels_behind(warehouse, "task_coverage")
    _, labeler = cov.select_labeler(task_label_counts, config.labeler)
    frame = pl.concat(
        [
            ix.with_index(cov.task_coverage(counts, onet_tasks, _thresholds(config), labeler=labeler), name)
            for name, counts in ix.per_index(task_label_counts, _membership(warehouse))
        ],
        how="vertical_relaxed",
    )
    pooled = ix.only_index(frame)
    covered = {f"tasks_covered_{t}": int(pooled[f"covered_{t}"].sum()) for t in _thresholds(config)}
    context.add_output_metadata(
        {
            "tasks": pooled.height,
            "indexes": ", ".join(name for name, _ in _by_index(frame)),
            **covered,
            "labeler": str(frame["labeler"].first()) if frame.height else "none",
        }
    )
    return frame


@asset(group_name=GROUP, kinds=TABLE_KINDS)
def occupation_coverage(
    context: AssetExecutionContext,
    config: CoverageConfig,
    warehouse: Warehouse,
    task_coverage: pl.DataFrame,
    task_hours: pl.DataFrame,
    onet_occupations: pl.DataFrame,
) -> pl.DataFrame:
    """Per benchmark index x occupation with tasks (923 per index; filter on benchmark_index before summing), the
    labels as counted: tasks covered / tasks, covered flag, share of its work hours covered. The estimates:
    occupation_estimates."""
    frame = cov.occupation_coverage(task_coverage, task_hours, onet_occupations, _thresholds(config))
    table_figures_ahead(warehouse, "occupation_coverage", frame)  # report_figures' figure, by a worker meanwhile
    pooled = ix.only_index(frame)
    context.add_output_metadata(
        {
            "occupations": pooled.height,
            **{f"occupations_covered_{t}": int(pooled[f"covered_{t}"].sum()) for t in _thresholds(config)},
        }
    )
    return frame


@asset(group_name=GROUP, kinds=TABLE_KINDS)
def major_group_coverage(
    context: AssetExecutionContext,
    config: CoverageConfig,
    warehouse: Warehouse,
    occupation_coverage: pl.DataFrame,
    onet_occupations: pl.DataFrame,
    occupation_wages: pl.DataFrame,
) -> pl.DataFrame:
    """Per benchmark index x the 22 SOC major groups, the labels as counted: covered occupations / occupations
    per threshold (`label_<t>`, e.g. "Computer and Mathematical k/36"), employment and wage bill. The estimates:
    major_group_estimates."""
    frame = cov.major_group_coverage(
        occupation_coverage, onet_occupations, occupation_wages, _thresholds(config)
    )
    table_figures_ahead(warehouse, "major_group_coverage", frame)  # report_figures' figure, by a worker meanwhile
    label_cols = [c for c in frame.columns if c.startswith("label_")]
    pooled = ix.only_index(frame)
    context.add_output_metadata(
        {"major_groups": pooled.height, "preview": _markdown(pooled.select(label_cols))}
    )
    return frame


def counted_headline(
    warehouse: Warehouse,
    task_label_counts: pl.DataFrame,
    onet_tasks: pl.DataFrame,
    task_hours: pl.DataFrame,
    onet_occupations: pl.DataFrame,
    membership: pl.DataFrame | None,
    thresholds: tuple[int, ...],
    labeler: str | None = None,
) -> pl.DataFrame:
    """coverage_headline's labels-as-counted rows (without the published_* columns): computed by the headline
    step (assets/estimates.py `headline_estimates`) from the same inputs as the estimates, not by an asset of
    its own, so every published figure comes from one step (issue 28)."""
    _, chosen = cov.select_labeler(task_label_counts, labeler)
    kept_rows = counted_rows_store(warehouse, thresholds, chosen, [onet_tasks, task_hours, onet_occupations])
    landed = (warehouse.read_table("benchmarks", columns=["benchmark"])["benchmark"].to_list()
              if warehouse.table_exists("benchmarks") else [])
    return pl.concat(
        [
            ix.with_index(
                cov.coverage_headline(
                    counts,
                    onet_tasks,
                    task_hours,
                    onet_occupations,
                    thresholds,
                    labeler=chosen,
                    per_benchmark=name == ix.ALL_INDEX,
                    benchmarks=landed,
                    scope_rows=kept_rows(name),
                ),
                name,
            )
            for name, counts in ix.per_index(task_label_counts, membership)
        ],
        how="vertical_relaxed",
    )


# first among the steps ready after the headline step (Dagster runs ready steps by priority, then in plan order),
# so that the MI fits it starts ahead have a worker idle until the report figures
@asset(group_name=GROUP, kinds=TABLE_KINDS, op_tags={"dagster/priority": "1"})
def task_analysis_frame(
    warehouse: Warehouse,
    task_coverage: pl.DataFrame,
    onet_tasks: pl.DataFrame,
    task_exposure: pl.DataFrame,
    occupation_wages: pl.DataFrame,
    workbank_tasks: pl.DataFrame,
    task_hours: pl.DataFrame,
) -> pl.DataFrame:
    """One row per benchmark index x task: coverage, importance, exposure labels, occupation wage bill,
    WORKBank desire and capability, and the task's US annual work hours. The input of the regressions."""
    hours = task_hours.select(
        "onet_soc_code", pl.col("task_id").cast(pl.Int64), "pi", "pi_is_fallback", "task_annual_hours"
    )
    frames = []
    for name, coverage in _by_index(task_coverage):
        frame = reg.build_task_frame(coverage, onet_tasks, task_exposure, occupation_wages, workbank_tasks)
        frames.append(ix.with_index(frame.join(hours, on=["onet_soc_code", "task_id"], how="left"), name))
    frame = pl.concat(frames, how="vertical_relaxed")
    ahead.start_mi_fits(warehouse, frame)  # coverage_regressions_mi's fits, in a worker meanwhile
    return frame


@multi_asset(
    group_name=GROUP,
    outs={
        "coverage_regressions": AssetOut(
            kinds=TABLE_KINDS,
            description=(
                "Task-level logits of covered_5 with occupation-clustered SEs: coefficients (table='coefficients'), "
                "probability ratios with delta-method CIs (table='contrasts') and sample sizes/exclusions "
                "(table='sample') for model exposure_wage (exposure + log wage bill), importance_fe (exposure + "
                "importance quintile + occupation FE) and workbank (WORKBank desire + capability); from the labels "
                "as counted (with the labeler's error: coverage_regressions_mi)."
            ),
        ),
        "coverage_adjusted_probabilities": AssetOut(
            kinds=TABLE_KINDS,
            description=(
                "Adjusted coverage probabilities with 95% delta-method CIs: over a $0.5B-$50B wage-bill grid by "
                "exposure (model exposure_wage), by importance quintile and exposure (importance_fe), and over "
                "desire and capability (workbank); `margin` says whether a row is at one covariate point "
                "(pointwise) or averaged over the tasks (average, e.g. importance_fe with its occupation fixed "
                "effects)."
            ),
        ),
        "workbank_coverage": AssetOut(
            kinds=TABLE_KINDS,
            description=(
                "Per benchmark index and threshold, the labels as counted: coverage share per WORKBank zone (green "
                "light, red light, R&D opportunity, low priority, and none: tasks WORKBank lists without a worker-"
                "desire rating) with Wilson 95% CIs: do benchmarks measure the work people want delegated?"
            ),
        ),
    },
)
def coverage_models(context: AssetExecutionContext, warehouse: Warehouse, task_analysis_frame: pl.DataFrame):
    # one fit per benchmark index (rows tagged benchmark_index); metadata and logs describe index `all`
    per_index = [(name, reg.run_coverage_models(frame)) for name, frame in _by_index(task_analysis_frame)]

    def stacked(key: str) -> pl.DataFrame:
        return pl.concat([ix.with_index(t[key], name) for name, t in per_index], how="diagonal_relaxed")

    tables = per_index[0][1]
    regressions = pl.concat(
        [
            stacked("coefficients").with_columns(pl.lit("coefficients").alias("table")),
            stacked("contrasts").with_columns(pl.lit("contrasts").alias("table")),
            stacked("samples").with_columns(pl.lit("sample").alias("table")),
        ],
        how="diagonal_relaxed",
    )
    probabilities = stacked("adjusted_probabilities").with_columns(pl.lit("human").alias("exposure_source"))
    # report_figures' two figures of the probabilities, by a worker while the MI fits run
    table_figures_ahead(warehouse, "coverage_adjusted_probabilities", probabilities)
    coefficients = tables["coefficients"]
    summaries = {}
    for model_name in coefficients["model"].unique().sort().to_list():
        rows = coefficients.filter(pl.col("model") == model_name)
        first = rows.row(0, named=True)
        summaries[model_name] = {k: first.get(k) for k in ("formula", "n", "n_clusters", "cov_type", "note")}
        context.log.info(
            f"{model_name}: n={first.get('n')}, clusters={first.get('n_clusters')}, note={first.get('note')}"
        )
    contrasts = tables["contrasts"]
    yield Output(
        regressions,
        "coverage_regressions",
        metadata={
            "models": MetadataValue.json(summaries),
            "coefficients": _markdown(
                coefficients.filter(~pl.col("term").str.starts_with("C(onet_soc_code)")).select(
                    "model", "term", "coef", "se", "z", "p", "n", "n_clusters"
                )
            ),
            "contrasts": _markdown(contrasts),
        },
    )
    yield Output(probabilities, "coverage_adjusted_probabilities", metadata={"rows": probabilities.height})
    yield Output(
        stacked("workbank_zone_coverage"),
        "workbank_coverage",
        metadata={"preview": _markdown(tables["workbank_zone_coverage"])},
    )


@asset(
    group_name=GROUP, kinds=TABLE_KINDS, ins={"prompt_task_labels": SCORED_LABELS, "benchmark_results": ALL_RESULTS}
)
def occupation_model_scores(
    context: AssetExecutionContext,
    config: CoverageConfig,
    warehouse: Warehouse,
    benchmark_results: pl.DataFrame,
    prompt_task_labels: pl.DataFrame,
) -> pl.DataFrame:
    """Per occupation x model: plain mean score over the occupation's prompts next to the task-weighted mean
    (the scores averaged within each O*NET task first, then the tasks weighted equally; tasks with at least
    min_prompts prompts, 5 and 1), with bootstrap 95% CIs and the difference; from the labels as counted (with
    the labeler's error: occupation_model_scores_estimated)."""
    refuse_labels_behind(warehouse, "occupation_model_scores")
    frame = scores.occupation_model_scores(  # a model's rows kept by its inputs (assets/kept_rows.py)
        benchmark_results, prompt_task_labels, min_prompts=(5, 1), labeler=config.labeler,
        kept=model_score_rows_store(warehouse),
    )
    context.add_output_metadata(
        {
            "rows": frame.height,
            "models": frame["model"].n_unique() if frame.height else 0,
            "occupations": frame["onet_soc_code"].n_unique() if frame.height else 0,
        }
    )
    return frame


@asset(
    group_name=GROUP, kinds=TABLE_KINDS, deps=["benchmark_results", "benchmark_prompts", "prompt_occupation_estimates"]
)
def occupation_model_scores_estimated(context: AssetExecutionContext, warehouse: Warehouse) -> pl.DataFrame:
    """Per occupation x model: the mean score over the prompts whose texts are estimated to exercise the
    occupation (prompt_occupation_estimates: each prompt counts with its text's calibrated probability), multiply
    imputed; the 95% interval carries the labeler's error (between draws) and the benchmark-clustered
    sampling error (models/scores_estimated.py). Empty without results or estimates."""
    from models.scores_estimated import ESTIMATED_SCORES_SCHEMA, estimated_occupation_scores

    refuse_labels_behind(warehouse, "occupation_model_scores_estimated")
    needed = ("benchmark_results", "benchmark_prompts", "prompt_occupation_estimates")
    missing = [name for name in needed if not warehouse.table_exists(name)]
    if missing:
        context.log.warning(f"occupation_model_scores_estimated is empty: no {', '.join(missing)}")
        return pl.DataFrame(schema=ESTIMATED_SCORES_SCHEMA)
    results = warehouse.read_table("benchmark_results")
    # only the scored prompts' texts and estimates
    prompts = warehouse.scored_prompt_keys()
    # a single text's weight: its calibrated probability (docs/estimates.md), the share of draws without one
    estimates = warehouse.scored_prompt_estimates()
    frame = estimated_occupation_scores(results, prompts, estimates,  # a model's rows kept by its inputs
                                        kept=model_score_rows_store(warehouse, "estimated_scores"))
    context.add_output_metadata({
        "rows": frame.height,
        "occupations": frame["onet_soc_code"].n_unique() if frame.height else 0,
        "median_fraction_missing_info": float(frame["fraction_missing_info"].median() or 0.0) if frame.height
        else 0.0,
        "preview": _markdown(frame.sort("expected_prompts", descending=True).head(15)),
    })
    return frame


# last among ready steps: its computation, started in the worker when task_label_counts is made, is then done
@asset(group_name=GROUP, kinds=TABLE_KINDS, deps=["benchmark_prompts"], op_tags={"dagster/priority": "-1"})
def coverage_sensitivity(
    context: AssetExecutionContext,
    config: CoverageConfig,
    warehouse: Warehouse,
    task_label_counts: pl.DataFrame,
    onet_tasks: pl.DataFrame,
    task_hours: pl.DataFrame,
    onet_occupations: pl.DataFrame,
    task_exposure: pl.DataFrame,
    occupation_wages: pl.DataFrame,
    workbank_tasks: pl.DataFrame,
) -> pl.DataFrame:
    """How the labels-as-counted headline numbers move (not the published estimates): threshold 1 vs 5, π work
    hours vs equal split within occupation, human vs GPT-4 exposure labels, label depth (top 1 / 3 / 5 / all
    labels per prompt), and offline vs LLM labels when the label cache holds both."""
    refuse_labels_behind(warehouse, "coverage_sensitivity")
    labels = _counts_of_every_labeler(warehouse, task_label_counts)
    tables = [onet_tasks, task_hours, onet_occupations, task_exposure, occupation_wages, workbank_tasks]
    # computed by a worker since task_label_counts was made, when from these very inputs (assets/ahead.py)
    frame, _ = ahead.take(warehouse, "coverage_sensitivity", ahead.sensitivity_parts(_thresholds(config), config.labeler),
                          [labels, *tables], lambda: cov.coverage_sensitivity(
                              labels, *tables, thresholds=_thresholds(config), labeler=config.labeler))
    same = _same_prompt_rows(warehouse, task_label_counts, onet_tasks, task_hours, onet_occupations, config)
    if same.height:
        frame = pl.concat([frame, same], how="vertical_relaxed")
    context.add_output_metadata(
        {
            "preview": _markdown(frame, 40),
            "labelers": sorted(labels["labeler"].unique().to_list()) if labels.height else [],
            "labelers_same_prompts": int(same.filter(pl.col("metric") == "n_prompts")["value"].max() or 0)
            if same.height else 0,
        }
    )
    return frame


def _same_prompt_rows(warehouse: Warehouse, counts: pl.DataFrame, onet_tasks: pl.DataFrame,
                      task_hours: pl.DataFrame, onet_occupations: pl.DataFrame, config: CoverageConfig
                      ) -> pl.DataFrame:
    """With another labeler in the label cache: each labeler's headline on the prompts both labeled
    (not-work answers included), from prompt-level labels (the active labeler's of those prompts only)."""
    cache = warehouse.label_cache()
    if not label_cache.has_other_labelers(cache, counts, ONET_VERSION):
        return pl.DataFrame(schema=cov.SENSITIVITY_SCHEMA)
    prompts = warehouse.prompt_columns(PROMPT_KEYS)
    extra = label_cache.other_labelers_labels(cache, counts, prompts, ONET_VERSION)
    labeled = cache.labeled_hashes(ONET_VERSION).join(prompts, on="prompt_hash")
    active_names = counts["labeler"].drop_nulls().unique().to_list()
    hashes = sorted(set(labeled.filter(~pl.col("labeler").is_in(active_names))["prompt_hash"].to_list()))
    active = warehouse.labels_of_hashes(hashes, columns=ACTIVE_LABEL_COLUMNS)
    both = pl.concat([active, extra.select(active.columns)], how="vertical_relaxed")
    return cov.labeler_same_prompt_sensitivity(both, onet_tasks, task_hours, onet_occupations,
                                               _thresholds(config),
                                               labeled=labeled.select("benchmark", "prompt_id", "labeler"))


def _counts_of_every_labeler(warehouse: Warehouse, counts: pl.DataFrame) -> pl.DataFrame:
    """The published label counts plus the counts of other labelers' cached labels of the current prompts
    (for the labeler row); prompts are read only when the cache holds another labeler."""
    cache = warehouse.label_cache()
    if not label_cache.has_other_labelers(cache, counts, ONET_VERSION):
        return counts
    prompts = warehouse.prompt_columns(PROMPT_KEYS)
    extra = label_cache.other_labelers_labels(cache, counts, prompts, ONET_VERSION)
    if extra.is_empty():
        return counts
    return pl.concat([counts, cov.label_counts(extra)], how="vertical_relaxed")


@asset_check(
    asset="coverage_headline",
    blocking=True,
    additional_ins={"onet_tasks": AssetIn()},
    description="Shares in [0,1], covered <= total; tasks out of every O*NET task (18,796), occupations out of "
    "those with tasks (923), major groups out of the 22 SOC groups, in every row; the published figures in range, "
    "inside their intervals (but where an interval is one point), and present for every pooled row.",
)
def coverage_headline_invariants(coverage_headline: pl.DataFrame, onet_tasks: pl.DataFrame) -> AssetCheckResult:
    problems = cov.headline_invariant_problems(coverage_headline, onet_tasks)
    return AssetCheckResult(
        passed=not problems,
        severity=AssetCheckSeverity.ERROR,
        metadata={"problems": json.dumps(problems), "tasks": onet_tasks.height},
    )


@asset_check(
    asset="coverage_adjusted_probabilities",
    blocking=False,
    description="Every adjusted probability lies in its own 95% CI, and in [0, 1].",
)
def adjusted_probabilities_in_ci(coverage_adjusted_probabilities: pl.DataFrame) -> AssetCheckResult:
    frame = coverage_adjusted_probabilities.filter(pl.col("prob").is_not_null())
    bad = frame.filter(
        (pl.col("ci_low") > pl.col("prob") + 1e-12)
        | (pl.col("ci_high") < pl.col("prob") - 1e-12)
        | (pl.col("ci_low") < 0)
        | (pl.col("ci_high") > 1)
    )
    return AssetCheckResult(passed=bad.is_empty(), metadata={"rows": frame.height, "violations": bad.height})
