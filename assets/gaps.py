"""Gap finder assets (group "gaps"): what to benchmark next. The logic lives in models/gaps/ (pure); the
what-if's reads of the candidate folder and the warehouse in pipelines/whatif.py.

- `gap_finder` (one multi-asset, one config): `coverage_gaps`, `occupation_gaps`, `jobbench_shortlist`,
  `major_group_gaps`.
- `candidate_benchmark_whatif` (one multi-asset, one config): label a candidate folder; its marginal gain is
  four assets of its own (`whatif_*`) plus the run summary `candidate_benchmark_whatif`; every published
  table is left untouched (checked by fingerprint before and after).
- `occupation_score_power`: prompts per task needed for a target CI width of the O*NET-weighted score.

Inputs are read through the `warehouse` resource (the labels are benchmark-partitioned; these assets use all
partitions), and declared as `deps` so the lineage shows them.
"""

import time
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
    Failure,
    MetadataValue,
    Output,
    asset,
    asset_check,
    multi_asset,
)
from pydantic import Field

from models import gaps
from models import indexes as ix
from models.coverage import LABEL_COUNT_SCHEMA
from pipelines import label_queries, whatif
from pipelines.resources import LabelerResource, Warehouse

GROUP = "gaps"
LABELS = "prompt_task_labels"
LABEL_COUNTS = "task_label_counts"  # coverage needs prompts per task, not the (much larger) label table
MEMBERSHIP = "benchmark_index_membership"  # the gap lists are computed per benchmark index
GAP_DEPS = [AssetKey(t) for t in (*gaps.REFERENCE_TABLES, LABEL_COUNTS, MEMBERSHIP)]
WHATIF_DEPS = [AssetKey(t) for t in (*gaps.REFERENCE_TABLES, *whatif.INDEX_TABLES, LABELS, "benchmark_prompts")]
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
    if df.is_empty():
        return "None."
    view = df.select([c for c in columns if c in df.columns]).head(limit)
    lines = ["| " + " | ".join(view.columns) + " |", "|" + "---|" * len(view.columns)]
    for row in view.iter_rows():
        cells = [f"{v:.3g}" if isinstance(v, float) else str(v)[:80] for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _scored_tasks(
    warehouse: Warehouse, threshold: int, weights: gaps.PriorityWeights, labeler: str | None = None,
    members: list[str] | None = None,
) -> pl.DataFrame:
    tables = {name: warehouse.read_table(name) for name in gaps.REFERENCE_TABLES}
    if warehouse.table_exists(LABEL_COUNTS):
        counts = warehouse.read_table(LABEL_COUNTS)
    elif warehouse.table_exists(LABELS):  # task_label_counts not materialized yet: the same SQL, on the fly
        counts = label_queries.task_label_counts(warehouse.path)[1]
    else:
        counts = pl.DataFrame(schema=LABEL_COUNT_SCHEMA)
    if members is not None:  # a benchmark index: only its members' prompts count
        counts = counts.filter(pl.col("benchmark").is_in(members))
    return gaps.score_reference_tasks(counts, tables, threshold, weights, labeler)


@multi_asset(
    name="gap_finder",
    outs={
        "coverage_gaps": AssetOut(
            description="Tasks below the coverage threshold ranked by the documented "
            "priority (docs/gap_finder.md); every component is a column."
        ),
        "occupation_gaps": AssetOut(
            description="Occupations with no task at the threshold, ranked by the same "
            "priority over occupation-level components."
        ),
        "jobbench_shortlist": AssetOut(
            description="Occupations with mean WORKBank worker desire > 3, ranked by "
            "wage bill, with coverage and the uncovered tasks driving it."
        ),
        "major_group_gaps": AssetOut(
            description="Per SOC major group: the largest uncovered blocks of work hours "
            "(occupations' uncovered task hours)."
        ),
    },
    deps=GAP_DEPS,
    group_name=GROUP,
    can_subset=False,
    description="Turn the coverage map into ranked to-do lists for benchmark builders and funders.",
)
def gap_finder(context: AssetExecutionContext, config: GapFinderConfig, warehouse: Warehouse):
    weights = config.weights()
    membership = warehouse.read_table(MEMBERSHIP) if warehouse.table_exists(MEMBERSHIP) else None
    scored = _scored_tasks(warehouse, config.threshold, weights, config.labeler)
    labeler = scored["labeler"][0] if "labeler" in scored.columns and scored.height else None
    per_index: dict[str, list[pl.DataFrame]] = {k: [] for k in ("task", "occ", "short", "groups")}
    for name in ix.index_names(membership):
        wanted = ix.members(membership, name)
        index_scored = scored if wanted is None else _scored_tasks(
            warehouse, config.threshold, weights, labeler, members=wanted
        )
        per_index["task"].append(ix.with_index(gaps.coverage_gaps(index_scored, config.threshold), name))
        per_index["occ"].append(
            ix.with_index(gaps.occupation_gaps(index_scored, config.threshold, weights), name)
        )
        per_index["short"].append(ix.with_index(
            gaps.jobbench_shortlist(index_scored, config.threshold, min_desire=config.min_desire), name
        ))
        per_index["groups"].append(ix.with_index(
            gaps.major_group_gaps(index_scored, None, config.threshold, config.top_k_blocks), name
        ))
    task_gaps, occ_gaps, shortlist, groups = (
        pl.concat(per_index[k], how="vertical_relaxed") for k in ("task", "occ", "short", "groups")
    )
    common = {
        "threshold": config.threshold,
        "labeler": str(labeler),
        "weights": MetadataValue.json(weights.as_dict()),
    }
    def output(
        frame: pl.DataFrame,
        name: str,
        counts: dict[str, Any],
        preview_columns: list[str],
        preview_key: str = "top_10",
        preview: pl.DataFrame | None = None,
    ) -> Output:
        """One output with the common metadata, its counts and a markdown preview (`preview` or `frame`)."""
        table = MetadataValue.md(_markdown(frame if preview is None else preview, preview_columns))
        return Output(frame, output_name=name, metadata={**common, **counts, preview_key: table})

    pooled_gaps = ix.only_index(task_gaps)
    yield output(
        task_gaps,
        "coverage_gaps",
        {
            "indexes": ", ".join(ix.index_names(membership)),
            "n_gaps": pooled_gaps.height,
            "n_tasks": scored.height,
            "uncovered_hours": float(pooled_gaps["task_annual_hours"].sum() or 0.0),
        },
        ["rank", "occupation_title", "task", "task_annual_hours", "priority"],
    )
    yield output(
        occ_gaps,
        "occupation_gaps",
        {"n_occupations": occ_gaps.height},
        ["rank", "occupation_title", "uncovered_hours", "wage_bill", "priority"],
    )
    yield output(
        shortlist,
        "jobbench_shortlist",
        {
            "n_occupations": shortlist.height,
            "n_not_covered": int((~shortlist["occupation_covered"]).sum()) if shortlist.height else 0,
        },
        ["rank", "occupation_title", "wage_bill", "desire_mean", "tasks_covered", "n_driving_tasks"],
    )
    yield output(
        groups,
        "major_group_gaps",
        {"n_rows": groups.height},
        ["major_group_code", "occupation_title", "block_uncovered_hours", "group_uncovered_share"],
        preview_key="largest_blocks",
        preview=groups.sort("block_uncovered_hours", descending=True, nulls_last=True),
    )
    context.log.info(
        f"{task_gaps.height} task gaps, {occ_gaps.height} occupation gaps, "
        f"{shortlist.height} shortlisted occupations at threshold {config.threshold}"
    )


# --- what-if -------------------------------------------------------------------------------------------


class WhatIfConfig(Config):
    candidate_folder: str = Field(
        default="",
        description="folder holding the candidate's prompts.jsonl (landing format); empty = nothing to do",
    )
    threshold: int = Field(default=gaps.DEFAULT_THRESHOLD)
    top_n: int = Field(default=100, description="gap ranks compared before/after")
    reuse_label_cache: bool = Field(default=True, description="read (never write) label_cache for the LLM")


def _build_labeler(resource: LabelerResource, warehouse: Warehouse, log: Any = None) -> Any:
    """The configured labeler (LabelerResource.build) over the labels stage's TaskIndex (the stored pickle
    when task_search_index was materialized, else built from the reference tables)."""
    from assets.labels import load_task_index

    index, _, _ = load_task_index(warehouse, log)
    return resource.build(index)


def _cached_labels(warehouse: Warehouse, labeler: Any, hashes: list[str]) -> dict[str, list[Any]]:
    from models.sources import ONET_VERSION
    from pipelines.label_cache import CacheKey, LabelCache

    return LabelCache(warehouse.path).read(CacheKey.for_labeler(labeler, ONET_VERSION), hashes)


WHATIF_SUMMARY = "candidate_benchmark_whatif"
WHATIF_OUTS = {
    WHATIF_SUMMARY: AssetOut(
        description="One-row summary of the last what-if: candidate, threshold, labeler, prompts counted, "
        "tasks/occupations/hours newly covered, top gaps closed, published_tables_unchanged.",
        is_required=False,  # no candidate_folder configured: nothing is written
    ),
    "whatif_marginal_gain": AssetOut(
        description="Per metric (tasks, occupations, major groups, hours covered, top-N gaps closed, gap "
        "priority mass, candidate prompt counts): before, after and gain.",
        is_required=False,
    ),
    "whatif_newly_covered_tasks": AssetOut(
        description="The tasks the candidate would newly bring to the threshold, with their work hours.",
        is_required=False,
    ),
    "whatif_newly_covered_occupations": AssetOut(
        description="The occupations that would newly have a task at the threshold.", is_required=False
    ),
    "whatif_gap_rank_changes": AssetOut(
        description="Gap ranks before and after for the top N gaps and for every gap the candidate closes.",
        is_required=False,
    ),
}


def _whatif_summary(
    result: gaps.WhatIfResult, config: WhatIfConfig, model: Any, unchanged: bool, seconds: float
) -> pl.DataFrame:
    gain = {r["metric"]: r for r in result.marginal_gain.iter_rows(named=True)}

    def value(metric: str, field: str = "gain") -> float | None:
        return gain[metric][field] if metric in gain else None

    return pl.DataFrame(
        [
            {
                "candidate": result.marginal_gain["candidate"][0],
                "candidate_folder": config.candidate_folder,
                "threshold": config.threshold,
                "labeler": model.name,
                "labeler_version": model.labeler_version,
                "candidate_prompts": value("candidate_prompts", "after"),
                "candidate_prompts_counted": value("candidate_prompts_counted", "after"),
                "tasks_newly_covered": value("tasks_covered"),
                "occupations_newly_covered": value("occupations_covered"),
                "hours_newly_covered": value("hours_covered"),
                "hours_share_gain": value("hours_share_covered"),
                "top_gaps_closed": value(f"top_{config.top_n}_gaps_closed", "after"),
                "published_tables_unchanged": unchanged,
                "seconds": round(seconds, 2),
            }
        ]
    )


def _changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return sorted(set(before) ^ set(after) | {k for k in before if before.get(k) != after.get(k)})


@multi_asset(
    name="candidate_benchmark_whatif",
    outs=WHATIF_OUTS,
    deps=WHATIF_DEPS,
    group_name=GROUP,
    can_subset=False,
    description="What would a candidate benchmark add? Labels the candidate folder's prompts (not landed) "
    "and writes the marginal gain to whatif_marginal_gain, whatif_newly_covered_tasks, "
    "whatif_newly_covered_occupations and whatif_gap_rank_changes, and a run summary to "
    "candidate_benchmark_whatif. Published tables are never written (fingerprinted before and after).",
)
def candidate_benchmark_whatif(
    context: AssetExecutionContext, config: WhatIfConfig, warehouse: Warehouse, labeler: LabelerResource
):
    if not config.candidate_folder.strip():
        context.log.info("no candidate_folder configured: nothing to do (tables unchanged)")
        yield Output(None, output_name=WHATIF_SUMMARY, metadata={"skipped": "no candidate_folder configured"})
        return
    started = time.monotonic()
    before = whatif.table_fingerprints(warehouse.path)
    model = _build_labeler(labeler, warehouse, context.log)
    cached = None
    if config.reuse_label_cache and labeler.kind != "offline":
        prompts, _ = whatif.read_candidate_prompts(config.candidate_folder)
        cached = _cached_labels(warehouse, model, prompts["prompt_hash"].unique().to_list())
    params = gaps.WhatIfParams(threshold=config.threshold, top_n=config.top_n)
    result = whatif.run_whatif(warehouse.path, config.candidate_folder, params, labeler=model, cached=cached)
    changed = _changed(before, whatif.table_fingerprints(warehouse.path))
    if changed:
        raise Failure(description=f"published tables changed during the what-if: {changed}")
    # Dagster hands each yielded output to the IO manager before the body resumes, so the fingerprints
    # taken after this loop see the what-if tables written
    for name, frame in gaps.whatif_tables(result).items():
        yield Output(frame, output_name=name)
    unchanged = whatif.table_fingerprints(warehouse.path) == before
    if not unchanged:
        raise Failure(description="a published table changed while writing the what-if tables")
    summary = _whatif_summary(result, config, model, unchanged, time.monotonic() - started)
    context.log.info(f"what-if {config.candidate_folder}: {summary.row(0, named=True)}")
    row = summary.row(0, named=True)
    yield Output(
        summary,
        output_name=WHATIF_SUMMARY,
        metadata={
            "tasks_newly_covered": int(row["tasks_newly_covered"] or 0),
            "occupations_newly_covered": int(row["occupations_newly_covered"] or 0),
            "hours_newly_covered": float(row["hours_newly_covered"] or 0.0),
            "published_tables_unchanged": unchanged,
            "tables": ", ".join(gaps.WHATIF_TABLES),
            "newly_covered_tasks": MetadataValue.md(
                _markdown(
                    result.newly_covered_tasks,
                    ["occupation_title", "task", "n_prompts_before", "n_prompts_after", "task_annual_hours"],
                )
            ),
        },
    )


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
    description="Per occupation x model: more prompts per task needed for the O*NET-weighted score's CI to "
    "be "
    "narrower than the target width (default 0.10), from the observed per-task variance; next to "
    "occupation_model_scores' bootstrap interval.",
)
def occupation_score_power(
    context: AssetExecutionContext, config: PowerConfig, warehouse: Warehouse
) -> pl.DataFrame:
    empty = pl.DataFrame(schema=gaps.POWER_SCHEMA)
    if not (warehouse.table_exists(LABELS) and warehouse.table_exists("benchmark_results")):
        context.log.warning("no labels or results yet: occupation_score_power is empty")
        return empty
    scores = (
        warehouse.read_table("occupation_model_scores")
        if warehouse.table_exists("occupation_model_scores")
        else None
    )
    power = gaps.score_power(
        warehouse.read_table("benchmark_results"),
        # only the labels of prompts with model results, loaded by a semi join in DuckDB
        warehouse.read_table(LABELS, columns=SCORED_LABEL_COLUMNS, keys_in="benchmark_results"),
        config.target_width,
        config.min_prompts,
        labeler=config.labeler,
        alpha=config.alpha,
        scores=scores,
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
    description="Ranks run 1..n, priority never increases down the ranking, every component and the "
    "priority lie in [0, 1], each task appears once and no row is at the threshold.",
)
def coverage_gaps_ranked(context: AssetCheckExecutionContext, warehouse: Warehouse) -> AssetCheckResult:
    if not warehouse.table_exists("coverage_gaps"):
        return AssetCheckResult(passed=False, metadata={"missing_table": "coverage_gaps"})
    df = ix.only_index(warehouse.read_table("coverage_gaps")).sort("rank")  # index `all`
    components = list(gaps.PRIORITY_COMPONENTS)
    problems = {
        "ranks_not_1_to_n": df["rank"].to_list() != list(range(1, df.height + 1)),
        "priority_not_descending": not df["priority"].is_sorted(descending=True),
        "out_of_unit_range": int(
            df.select(pl.any_horizontal([~pl.col(c).is_between(0.0, 1.0) for c in components]).sum()).item()
            or 0
        )
        > 0,
        "duplicate_tasks": df.select("onet_soc_code", "task_id").is_duplicated().any(),
        "covered_rows": int((df["n_prompts"] >= df["threshold"]).sum()) > 0,
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


ASSETS: list = [gap_finder, candidate_benchmark_whatif, occupation_score_power]
CHECKS: list = [coverage_gaps_ranked, major_group_gaps_all_groups, jobbench_shortlist_rule]
