"""Shortlists beside the gap ranking: JobBench-style occupations workers want automated, and per SOC major
group the largest uncovered blocks of work hours. Both take score_tasks' output (models/gaps/priority.py)."""

from __future__ import annotations

import polars as pl

from models.coverage import major_group_of, major_groups
from models.gaps.priority import DEFAULT_THRESHOLD

SHORTLIST_COLUMNS = [
    "rank",
    "onet_soc_code",
    "occupation_title",
    "major_group_code",
    "wage_bill",
    "employment",
    "desire_mean",
    "n_desire_rated",
    "threshold",
    "n_tasks",
    "tasks_covered",
    "task_share_covered",
    "hours_share_covered",
    "occupation_covered",
    "n_prompt_labels",
    "n_driving_tasks",
    "driving_task_ids",
    "driving_tasks",
    "driving_hours",
]

MAJOR_GROUP_GAP_COLUMNS = [
    "major_group_code",
    "major_group_title",
    "threshold",
    "uncovered_by",
    "group_n_occupations",
    "group_hours",
    "group_uncovered_hours",
    "group_uncovered_share",
    "group_uncovered_tasks",
    "block_rank",
    "onet_soc_code",
    "occupation_title",
    "block_uncovered_hours",
    "block_share_of_group_uncovered",
    "block_uncovered_tasks",
    "block_n_tasks",
    "largest_uncovered_task",
    "largest_uncovered_task_hours",
]


UNCOVERED_BY_ESTIMATES = "estimates: 1 - p_covered per task"
UNCOVERED_BY_LABELS = "labels as counted: tasks below the threshold"


def jobbench_shortlist(
    scored: pl.DataFrame,
    threshold: int = DEFAULT_THRESHOLD,
    *,
    min_desire: float = 3.0,
    min_rated_tasks: int = 1,
    max_listed_tasks: int = 5,
) -> pl.DataFrame:
    """Occupations whose mean WORKBank worker desire exceeds `min_desire`, ranked by wage bill (desc).

    Mean desire is the unweighted mean over the occupation's rated tasks (at least `min_rated_tasks`).
    Columns: rank, onet_soc_code, occupation_title, major_group_code, wage_bill, employment, desire_mean,
    n_desire_rated, n_tasks, tasks_covered, task_share_covered, hours_share_covered, occupation_covered,
    n_prompt_labels, n_driving_tasks (uncovered rated tasks with desire > min_desire), driving_task_ids,
    driving_tasks ('desire | task' for the `max_listed_tasks` most desired), driving_hours.
    """
    uncovered = pl.col("n_prompts") < threshold
    driving = (pl.col("desire_mean") > min_desire) & uncovered
    occ = (
        scored.sort(["desire_mean", "task_id"], descending=[True, False], nulls_last=True)
        .group_by("onet_soc_code", maintain_order=True)
        .agg(
            pl.col("occupation_title").first(),
            pl.col("wage_bill").first(),
            (
                pl.col("employment").first()
                if "employment" in scored.columns
                else pl.lit(None, dtype=pl.Float64)
            ).alias("employment"),
            pl.col("desire_mean").mean().alias("desire_mean"),
            pl.col("desire_mean").is_not_null().sum().cast(pl.Int64).alias("n_desire_rated"),
            pl.len().cast(pl.Int64).alias("n_tasks"),
            uncovered.not_().sum().cast(pl.Int64).alias("tasks_covered"),
            (pl.col("weight_share").fill_null(0.0) * uncovered.not_().cast(pl.Float64))
            .sum()
            .alias("hours_share_covered"),
            pl.col("n_prompts").sum().cast(pl.Int64).alias("n_prompt_labels"),
            driving.sum().cast(pl.Int64).alias("n_driving_tasks"),
            pl.col("task_id").filter(driving).cast(pl.Utf8).str.join(",").alias("driving_task_ids"),
            pl.format("{} | {}", pl.col("desire_mean").round(2), pl.col("task"))
            .filter(driving)
            .head(max_listed_tasks)
            .str.join(" ; ")
            .alias("driving_tasks"),
            pl.col("task_annual_hours").filter(driving).sum().alias("driving_hours"),
        )
    )
    short = occ.filter((pl.col("n_desire_rated") >= min_rated_tasks) & (pl.col("desire_mean") > min_desire))
    short = short.with_columns(
        (pl.col("tasks_covered") / pl.col("n_tasks")).alias("task_share_covered"),
        (pl.col("tasks_covered") >= 1).alias("occupation_covered"),
        major_group_of().alias("major_group_code"),
        pl.lit(threshold, dtype=pl.Int64).alias("threshold"),
    ).sort(["wage_bill", "onet_soc_code"], descending=[True, False], nulls_last=True)
    short = short.with_row_index("rank", offset=1).with_columns(pl.col("rank").cast(pl.Int64))
    return short.select(SHORTLIST_COLUMNS)


# --- per major group ----------------------------------------------------------------------------------


def major_group_gaps(
    scored: pl.DataFrame,
    occupations: pl.DataFrame | None = None,
    threshold: int = DEFAULT_THRESHOLD,
    top_k: int = 3,
) -> pl.DataFrame:
    """For each of the 22 SOC major groups, its `top_k` largest uncovered blocks of work hours.

    A block is one occupation's uncovered hours (its tasks below threshold). Group columns repeat on each
    block row: group_hours, group_uncovered_hours, group_uncovered_share, group_uncovered_tasks. Block
    columns: block_rank, onet_soc_code, occupation_title, block_uncovered_hours,
    block_share_of_group_uncovered,
    block_uncovered_tasks, block_n_tasks, largest_uncovered_task (the task with the most hours), its hours.
    A group with nothing uncovered (or no occupations) keeps one row with empty block columns.

    With a `p_covered` column (the per-unit estimates: models.gaps.expected.with_task_p_covered) a task counts
    as 1 - p_covered uncovered: hours and task counts are expected ones, the largest uncovered task the one with
    the most expected uncovered hours (`uncovered_by` says which); without it, the labels as counted.
    """
    estimated = "p_covered" in scored.columns
    open_share = (1.0 - pl.col("p_covered").cast(pl.Float64).fill_null(0.0)).clip(0.0, 1.0) if estimated else (
        pl.col("n_prompts") < threshold).cast(pl.Float64)
    uncovered = pl.col("open_share") > 0
    # rows and groups in a fixed order: float sums then add up in the same order on every run (bit-stable files)
    frame = (scored.with_columns(major_group_of().alias("major_group_code"), open_share.alias("open_share"))
             .with_columns((pl.col("task_annual_hours") * pl.col("open_share")).alias("open_hours"))
             .sort("onet_soc_code", "task_id"))
    biggest = (
        frame.filter(uncovered)
        .sort(["open_hours", "task_id"], descending=[True, False], nulls_last=True)
        .group_by("onet_soc_code", maintain_order=True)
        .agg(
            pl.col("task").first().alias("largest_uncovered_task"),
            pl.col("task_annual_hours").first().alias("largest_uncovered_task_hours"),
        )
    )
    blocks = (
        frame.group_by("major_group_code", "onet_soc_code", maintain_order=True)
        .agg(
            pl.col("occupation_title").first(),
            pl.col("open_hours").filter(uncovered).sum().alias("block_uncovered_hours"),
            pl.col("open_share").sum().alias("block_uncovered_tasks"),
            pl.len().cast(pl.Int64).alias("block_n_tasks"),
            pl.col("task_annual_hours").sum().alias("occupation_hours"),
        )
        .join(biggest, on="onet_soc_code", how="left")
        .sort("major_group_code", "onet_soc_code")  # a join keeps no order: sort again for the group sums
    )
    group_totals = blocks.group_by("major_group_code", maintain_order=True).agg(
        pl.col("occupation_hours").sum().alias("group_hours"),
        pl.col("block_uncovered_hours").sum().alias("group_uncovered_hours"),
        pl.col("block_uncovered_tasks").sum().alias("group_uncovered_tasks"),
        pl.len().cast(pl.Int64).alias("group_n_occupations"),
    )
    top = (
        blocks.filter(pl.col("block_uncovered_tasks") > 0)
        .sort(
            ["block_uncovered_hours", "block_uncovered_tasks", "onet_soc_code"],
            descending=[True, True, False],
            nulls_last=True,
        )
        .with_columns(
            pl.int_range(1, pl.len() + 1).over("major_group_code").cast(pl.Int64).alias("block_rank")
        )
        .filter(pl.col("block_rank") <= top_k)
    )
    out = (
        major_groups(occupations)
        .join(group_totals, on="major_group_code", how="left")
        .join(top.drop("occupation_hours"), on="major_group_code", how="left")
    )
    out = out.with_columns(
        pl.col("group_n_occupations").fill_null(0),
        pl.col("group_hours").fill_null(0.0),
        pl.col("group_uncovered_hours").fill_null(0.0),
        pl.col("group_uncovered_tasks").fill_null(0.0),
        pl.lit(threshold, dtype=pl.Int64).alias("threshold"),
        pl.lit(UNCOVERED_BY_ESTIMATES if estimated else UNCOVERED_BY_LABELS).alias("uncovered_by"),
    ).with_columns(
        pl.when(pl.col("group_hours") > 0)
        .then(pl.col("group_uncovered_hours") / pl.col("group_hours"))
        .alias("group_uncovered_share"),
        pl.when(pl.col("group_uncovered_hours") > 0)
        .then(pl.col("block_uncovered_hours") / pl.col("group_uncovered_hours"))
        .alias("block_share_of_group_uncovered"),
    )
    return out.select(MAJOR_GROUP_GAP_COLUMNS).sort(["major_group_code", "block_rank"], nulls_last=True)
