"""Gap finder assets (group "gaps"): what to benchmark next. The logic lives in models/gaps/ (pure).

- `gap_finder` (one multi-asset, one config): `coverage_gaps`, `occupation_gaps`, `jobbench_shortlist`,
  `major_group_gaps`.
- the what-if of a candidate benchmark (`candidate_benchmark_whatif` and `whatif_*`): assets/whatif.py.
- `occupation_score_power`: prompts per task needed for a target CI width of the O*NET-weighted score.

Inputs are read through the `warehouse` resource (the labels are benchmark-partitioned; these assets use all
partitions), and declared as `deps` so the lineage shows them.
"""

from typing import Any

import polars as pl
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    AssetOut,
    Config,
    MetadataValue,
    Output,
    asset,
    asset_check,
    multi_asset,
)
from pydantic import Field

from assets import TABLE_KINDS
from assets.figure_reuse import heatmap_ahead
from assets.kept_rows import model_score_rows_store
from assets.release_gate import refuse_labels_behind
from models import gaps
from models import indexes as ix
from models.coverage import LABEL_COUNT_SCHEMA
from models.markdown import markdown_table
from resources.dagster_resources import Warehouse

GROUP = "gaps"
LABELS = "prompt_task_labels"
LABEL_COUNTS = "task_label_counts"  # coverage needs prompts per task, not the (much larger) label table
MEMBERSHIP = "benchmark_index_membership"  # the gap lists are computed per benchmark index

# the per-unit estimates (issue 25): occupation_gaps ranks by expected uncovered hours when they exist
TASK_ESTIMATES, OCCUPATION_ESTIMATES = "task_estimates", "occupation_estimates"
GAP_DEPS = [AssetKey(t) for t in (*gaps.REFERENCE_TABLES, LABEL_COUNTS, MEMBERSHIP, TASK_ESTIMATES,
                                  OCCUPATION_ESTIMATES)]
SCORED_LABEL_COLUMNS = ["benchmark", "prompt_id", "onet_soc_code", "task_id", "labeler", "labeler_version", "rank"]
POWER_DEPS = [AssetKey(t) for t in (LABELS, "benchmark_results", "occupation_model_scores")]

_DEFAULT_WEIGHTS = gaps.PriorityWeights()


class GapFinderConfig(Config):
    """Threshold and priority weights (docs/gap_finder.md)."""

    threshold: int = Field(
        default=gaps.DEFAULT_THRESHOLD, description="a task is covered with >= this many prompts"
    )
    weight_hours: float = _DEFAULT_WEIGHTS.hours
    weight_wage_bill: float = _DEFAULT_WEIGHTS.wage_bill
    weight_exposure: float = _DEFAULT_WEIGHTS.exposure
    weight_desire: float = _DEFAULT_WEIGHTS.desire
    weight_capability: float = _DEFAULT_WEIGHTS.capability
    weight_importance: float = _DEFAULT_WEIGHTS.importance  # O*NET importance percentile in the occupation
    digital_factor_not_exposed: float = _DEFAULT_WEIGHTS.digital_factor_not_exposed
    digital_factor_unknown: float = _DEFAULT_WEIGHTS.digital_factor_unknown
    unrated_rating: float = _DEFAULT_WEIGHTS.unrated_rating
    min_desire: float = Field(default=3.0, description="shortlist: mean worker desire must exceed this")
    top_k_blocks: int = Field(default=3, description="major_group_gaps: uncovered blocks listed per group")
    labeler: str | None = Field(default=None, description="labels to use (default: coverage's preference)")

    def weights(self) -> gaps.PriorityWeights:
        return gaps.PriorityWeights(
            hours=self.weight_hours,
            wage_bill=self.weight_wage_bill,
            exposure=self.weight_exposure,
            desire=self.weight_desire,
            capability=self.weight_capability,
            importance=self.weight_importance,
            digital_factor_not_exposed=self.digital_factor_not_exposed,
            digital_factor_unknown=self.digital_factor_unknown,
            unrated_rating=self.unrated_rating,
        )


def _markdown(df: pl.DataFrame, columns: list[str], limit: int = 10) -> str:
    return markdown_table(df, columns, max_rows=limit, max_chars=80, empty="None.")


def _scoring_inputs(warehouse: Warehouse) -> tuple[pl.DataFrame, dict[str, pl.DataFrame]]:
    """(the label counts, the reference tables) the task scoring reads: read once for every index."""
    tables = {name: warehouse.read_table(name) for name in gaps.REFERENCE_TABLES}
    if warehouse.table_exists(LABEL_COUNTS):
        counts = warehouse.read_table(LABEL_COUNTS)
    elif warehouse.table_exists(LABELS):  # task_label_counts not materialized yet: the same SQL, on the fly
        counts = warehouse.task_label_counts()[1]
    else:
        counts = pl.DataFrame(schema=LABEL_COUNT_SCHEMA)
    return counts, tables


def _scored_tasks(
    inputs: tuple[pl.DataFrame, dict[str, pl.DataFrame]], threshold: int, weights: gaps.PriorityWeights,
    labeler: str | None = None, members: list[str] | None = None,
) -> pl.DataFrame:
    counts, tables = inputs
    if members is not None:  # a benchmark index: only its members' prompts count
        counts = counts.filter(pl.col("benchmark").is_in(members))
    return gaps.score_reference_tasks(counts, tables, threshold, weights, labeler)


@multi_asset(
    name="gap_finder",
    outs={
        "coverage_gaps": AssetOut(
            kinds=TABLE_KINDS,
            description="Tasks not likely covered at the threshold (the estimates' p_covered < 0.9; without "
            "estimates, below it by the labels as counted), ranked by the documented priority "
            "(docs/gap_finder.md); every component is a column."
        ),
        "occupation_gaps": AssetOut(
            kinds=TABLE_KINDS,
            description="Every occupation, likely covered or not, ranked by expected uncovered work hours (its "
            "tasks' hours x P(not covered)) with an interval across the headline's draws, its p_covered beside; "
            "without estimates, occupations with no task at the threshold, ranked by the priority over "
            "occupation-level components."
        ),
        "jobbench_shortlist": AssetOut(
            kinds=TABLE_KINDS,
            description="Occupations with mean WORKBank worker desire > 3, ranked by "
            "wage bill, with coverage (the labels as counted) and the uncovered tasks driving it."
        ),
        "major_group_gaps": AssetOut(
            kinds=TABLE_KINDS,
            description="Per SOC major group: the largest uncovered blocks of work hours (occupations' "
            "expected uncovered task hours, 1 - p_covered per task; without estimates, the labels as counted)."
        ),
    },
    deps=GAP_DEPS,
    group_name=GROUP,
    can_subset=False,
    description="Turn the coverage map into ranked to-do lists for benchmark builders and funders.",
)
def gap_finder(context: AssetExecutionContext, config: GapFinderConfig, warehouse: Warehouse):
    refuse_labels_behind(warehouse, "gap_finder")
    weights = config.weights()
    membership = warehouse.read_table(MEMBERSHIP) if warehouse.table_exists(MEMBERSHIP) else None
    inputs = _scoring_inputs(warehouse)
    scored = _scored_tasks(inputs, config.threshold, weights, config.labeler)
    labeler = scored["labeler"][0] if "labeler" in scored.columns and scored.height else None
    task_gaps, occ_gaps, shortlist, groups = _gap_lists(warehouse, config, inputs, scored, labeler, membership)
    common = {
        "threshold": config.threshold,
        "labeler": str(labeler),
        "weights": MetadataValue.json(weights.as_dict()),
    }
    pooled_gaps = ix.only_index(task_gaps)
    yield _output(
        task_gaps,
        "coverage_gaps",
        common | {
            "indexes": ", ".join(ix.index_names(membership)),
            "n_gaps": pooled_gaps.height,
            "n_tasks": scored.height,
            "uncovered_hours": float(pooled_gaps["task_annual_hours"].sum() or 0.0),
        },
        ["rank", "occupation_title", "task", "task_annual_hours", "priority"],
    )
    yield _output(
        occ_gaps,
        "occupation_gaps",
        common | {"n_occupations": occ_gaps.height,
                  "ranked_by": str(occ_gaps["ranked_by"][0]) if occ_gaps.height else "none"},
        ["rank", "occupation_title", "p_covered", "expected_uncovered_hours", "expected_uncovered_hours_low",
         "expected_uncovered_hours_high", "uncovered_hours", "priority"],
    )
    yield _output(
        shortlist,
        "jobbench_shortlist",
        common | {
            "n_occupations": shortlist.height,
            "n_not_covered": int((~shortlist["occupation_covered"]).sum()) if shortlist.height else 0,
        },
        ["rank", "occupation_title", "wage_bill", "desire_mean", "tasks_covered", "n_driving_tasks"],
    )
    yield _output(
        groups,
        "major_group_gaps",
        common | {"n_rows": groups.height},
        ["major_group_code", "occupation_title", "block_uncovered_hours", "group_uncovered_share"],
        preview_key="largest_blocks",
        preview=groups.sort("block_uncovered_hours", descending=True, nulls_last=True),
    )
    context.log.info(
        f"{task_gaps.height} task gaps, {occ_gaps.height} occupation gaps, "
        f"{shortlist.height} shortlisted occupations at threshold {config.threshold}"
    )


def _estimates(warehouse: Warehouse) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """(task_estimates, occupation_estimates), or (None, None) when the per-unit estimates are absent."""
    if not warehouse.table_exists(TASK_ESTIMATES):
        return None, None
    occupations = warehouse.read_table(OCCUPATION_ESTIMATES) if warehouse.table_exists(OCCUPATION_ESTIMATES) else None
    return warehouse.read_table(TASK_ESTIMATES), occupations


def _index_task_estimates(task_estimates: pl.DataFrame | None, name: str) -> pl.DataFrame | None:
    """`task_estimates` when it holds rows of index `name` (the gap lists then read the estimates), else None."""
    if task_estimates is None or task_estimates.filter(pl.col("benchmark_index") == name).is_empty():
        return None
    return task_estimates


def _occupation_gaps(index_scored: pl.DataFrame, config: GapFinderConfig, name: str,
                     task_estimates: pl.DataFrame | None, occupation_estimates: pl.DataFrame | None
                     ) -> pl.DataFrame:
    """occupation_gaps of one index: by expected uncovered hours from the estimates of the index when they
    exist (`task_estimates` not None: models/gaps/expected.py), else by priority over the labels as counted."""
    weights = config.weights()
    if task_estimates is not None:
        return gaps.occupation_gaps_from_estimates(index_scored, config.threshold, task_estimates, name,
                                                   occupation_estimates, weights)
    return gaps.with_expected_columns(gaps.occupation_gaps(index_scored, config.threshold, weights))


def _gap_lists(
    warehouse: Warehouse, config: GapFinderConfig, inputs: tuple[pl.DataFrame, dict[str, pl.DataFrame]],
    scored: pl.DataFrame, labeler: str | None, membership: pl.DataFrame | None,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The four gap lists, each computed per benchmark index (the pooled `scored` for index `all`, the index
    members' label counts for the others) and stacked with an `index` column."""
    weights = config.weights()
    estimates = _estimates(warehouse)
    per_index: dict[str, list[pl.DataFrame]] = {k: [] for k in ("task", "occ", "short", "groups")}
    for name in ix.index_names(membership):
        wanted = ix.members(membership, name)
        index_scored = scored if wanted is None else _scored_tasks(
            inputs, config.threshold, weights, labeler, members=wanted
        )
        # every list by the estimates of the index when they exist (issue 25)
        task_estimates = _index_task_estimates(estimates[0], name)
        listed = index_scored if task_estimates is None else gaps.with_task_p_covered(
            index_scored, task_estimates, name, config.threshold)
        per_index["task"].append(ix.with_index(gaps.coverage_gaps(listed, config.threshold), name))
        per_index["occ"].append(ix.with_index(
            _occupation_gaps(index_scored, config, name, task_estimates, estimates[1]), name))
        per_index["short"].append(ix.with_index(
            gaps.jobbench_shortlist(index_scored, config.threshold, min_desire=config.min_desire), name
        ))
        per_index["groups"].append(ix.with_index(
            gaps.major_group_gaps(listed, None, config.threshold, config.top_k_blocks), name
        ))
    task_gaps, occ_gaps, shortlist, groups = (
        pl.concat(per_index[k], how="vertical_relaxed") for k in ("task", "occ", "short", "groups")
    )
    return task_gaps, occ_gaps, shortlist, groups


def _output(
    frame: pl.DataFrame,
    name: str,
    metadata: dict[str, Any],
    preview_columns: list[str],
    preview_key: str = "top_10",
    preview: pl.DataFrame | None = None,
) -> Output:
    """One output with its metadata and a markdown preview (`preview` or `frame`)."""
    table = MetadataValue.md(_markdown(frame if preview is None else preview, preview_columns))
    return Output(frame, output_name=name, metadata={**metadata, preview_key: table})


# --- statistical power ---------------------------------------------------------------------------------


class PowerConfig(Config):
    target_width: float = Field(default=0.10, description="target CI width on the [0, 1] score scale")
    min_prompts: list[int] = Field(default=[5, 1], description="as occupation_model_scores' min_prompts")
    alpha: float = 0.05
    labeler: str | None = None


@asset(
    name="occupation_score_power",
    deps=POWER_DEPS,
    group_name=GROUP,
    kinds=TABLE_KINDS,
    description="Per occupation x model: more prompts per task needed for the O*NET-weighted score's CI to "
    "be "
    "narrower than the target width (default 0.10), from the observed per-task variance; next to "
    "occupation_model_scores' bootstrap interval.",
)
def occupation_score_power(
    context: AssetExecutionContext, config: PowerConfig, warehouse: Warehouse
) -> pl.DataFrame:
    refuse_labels_behind(warehouse, "occupation_score_power")
    empty = pl.DataFrame(schema=gaps.POWER_SCHEMA)
    if not (warehouse.table_exists(LABELS) and warehouse.table_exists("benchmark_results")):
        context.log.warning("no labels or results yet: occupation_score_power is empty")
        return empty
    scores = (
        warehouse.read_table("occupation_model_scores")
        if warehouse.table_exists("occupation_model_scores")
        else None
    )
    # report_figures' heatmap of this very table, drawn by a worker meanwhile (after coverage_sensitivity, which
    # task_label_counts started a level earlier: assets/ahead.py)
    if scores is not None:
        heatmap_ahead(warehouse, scores)
    power = gaps.score_power(
        warehouse.read_table("benchmark_results"),
        # only the labels of prompts with model results, loaded by a semi join in DuckDB
        warehouse.read_table(LABELS, columns=SCORED_LABEL_COLUMNS, keys_in="benchmark_results"),
        config.target_width,
        config.min_prompts,
        labeler=config.labeler,
        alpha=config.alpha,
        scores=scores,
        kept=model_score_rows_store(warehouse, "score_power"),  # a model's rows kept by its inputs
    )
    context.add_output_metadata(
        {
            "rows": power.height,
            "occupations": power["onet_soc_code"].n_unique(),
            "meeting_target": int(power["meets_target"].sum() or 0) if power.height else 0,
            "median_extra_prompts_per_task": float(power["extra_prompts_per_task"].median() or 0.0)
            if power.height
            else 0.0,
        }
    )
    return power


# --- checks -------------------------------------------------------------------------------------------


@asset_check(
    asset="coverage_gaps",
    name="coverage_gaps_ranked",
    blocking=False,
    description="Index `all`: ranks run 1..n, priority never increases down the ranking, every component "
    "(c_importance too) and the priority lie in [0, 1], each task appears once and no row is likely covered "
    "(p_covered >= 0.9; without estimates: at the threshold by the labels as counted).",
)
def coverage_gaps_ranked(context: AssetCheckExecutionContext, warehouse: Warehouse) -> AssetCheckResult:
    if not warehouse.table_exists("coverage_gaps"):
        return AssetCheckResult(passed=False, metadata={"missing_table": "coverage_gaps"})
    df = ix.only_index(warehouse.read_table("coverage_gaps")).sort("rank")  # index `all`
    components = [*gaps.PRIORITY_COMPONENTS, *(["c_importance"] if "c_importance" in df.columns else [])]
    problems = {
        "ranks_not_1_to_n": df["rank"].to_list() != list(range(1, df.height + 1)),
        "priority_not_descending": not df["priority"].is_sorted(descending=True),
        "out_of_unit_range": int(
            df.select(pl.any_horizontal([~pl.col(c).is_between(0.0, 1.0) for c in components]).sum()).item()
            or 0
        )
        > 0,
        "duplicate_tasks": df.select("onet_soc_code", "task_id").is_duplicated().any(),
        # listed by the estimates: none likely covered; else by the labels: none at the threshold
        "covered_rows": int((df["p_covered"] >= gaps.LIKELY_COVERED).sum()) > 0
        if "p_covered" in df.columns and df["p_covered"].null_count() < df.height
        else int((df["n_prompts"] >= df["threshold"]).sum()) > 0,
    }
    return AssetCheckResult(
        passed=not any(problems.values()),
        metadata={k: bool(v) for k, v in problems.items()} | {"rows": df.height},
    )


@asset_check(
    asset="major_group_gaps",
    name="major_group_gaps_all_groups",
    blocking=False,
    description="All 22 SOC major groups are listed and uncovered hours never exceed the group's hours.",
)
def major_group_gaps_all_groups(
    context: AssetCheckExecutionContext, warehouse: Warehouse
) -> AssetCheckResult:
    if not warehouse.table_exists("major_group_gaps"):
        return AssetCheckResult(passed=False, metadata={"missing_table": "major_group_gaps"})
    df = warehouse.read_table("major_group_gaps")
    n_groups = df["major_group_code"].n_unique()
    over = int((df["group_uncovered_hours"] > df["group_hours"] * (1 + 1e-9) + 1e-6).sum())
    return AssetCheckResult(
        passed=n_groups == 22 and over == 0,
        metadata={"major_groups": n_groups, "groups_uncovered_over_total": over},
    )


@asset_check(
    asset="jobbench_shortlist",
    name="jobbench_shortlist_rule",
    blocking=False,
    description="Every shortlisted occupation has mean desire above the cut and ranks follow wage bill.",
)
def jobbench_shortlist_rule(context: AssetCheckExecutionContext, warehouse: Warehouse) -> AssetCheckResult:
    if not warehouse.table_exists("jobbench_shortlist"):
        return AssetCheckResult(passed=False, metadata={"missing_table": "jobbench_shortlist"})
    df = ix.only_index(warehouse.read_table("jobbench_shortlist")).sort("rank")  # index `all`
    low_desire = int((df["desire_mean"] <= 3.0).sum())
    ordered = df["wage_bill"].drop_nulls().is_sorted(descending=True)
    return AssetCheckResult(
        passed=low_desire == 0 and ordered,
        severity=AssetCheckSeverity.WARN,
        metadata={"rows": df.height, "rows_at_or_below_3": low_desire, "ordered_by_wage_bill": ordered},
    )
