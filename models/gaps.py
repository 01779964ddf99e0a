"""Gap finder: what to benchmark next.

Turns the coverage map into ranked to-do lists:

* `coverage_gaps`: tasks below the coverage threshold, ranked by a documented priority (docs/gap_finder.md);
* `occupation_gaps`: occupations with no task at the threshold, ranked the same way;
* `jobbench_shortlist`: occupations whose workers want automation (mean WORKBank desire > 3), by wage bill;
* `major_group_gaps`: per SOC major group, the largest uncovered blocks of work hours;
* `whatif_gain`: the marginal gain of a candidate benchmark's labels, computed without touching any table;
* `score_power`: how many more prompts per task would shrink an occupation score's CI below a target width.

The priority of a task is coverage-independent (it only depends on the economy and the task's ratings), so
covering a task removes it from the ranking without reshuffling the others, and a what-if's new ranking is
the old one minus the tasks it would close.

    priority = digital_factor * (w_h*c_hours + w_w*c_wage_bill + w_e*c_exposure + w_d*c_desire
                                 + w_c*c_capability + w_i*c_importance) / (w_h + w_w + w_e + w_d + w_c + w_i)

Every component is a column in [0, 1]; see `PriorityWeights` and docs/gap_finder.md. `c_importance` is the
task's O*NET importance as a within-occupation percentile, so among the uncovered tasks of one occupation the
most important ones rank first; it has no occupation-level counterpart (OCCUPATION_COMPONENTS).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from models.coverage import (
    TASK_KEY,
    HoursWeighting,
    is_label_counts,
    label_counts,
    label_counts_from_connection,
    major_group_of,
    major_groups,
    occupation_coverage,
    prompt_task_pairs,
    select_labeler,
    task_coverage,
    task_hour_weights,
)
from models.errors import InputError
from models.scores import mean_prompt_scores
from models.stats import z_value

DEFAULT_THRESHOLD = 5
COMPONENTS: tuple[str, ...] = ("hours", "wage_bill", "exposure", "desire", "capability", "importance")
# importance is a within-occupation percentile (mean ~0.5 in every occupation): occupation ranks leave it out
OCCUPATION_COMPONENTS: tuple[str, ...] = tuple(c for c in COMPONENTS if c != "importance")
# Eloundou et al.'s beta: direct exposure (E1) counts fully, exposure through LLM-powered software (E2) half.
EXPOSURE_SCORE: dict[str, float] = {"E0": 0.0, "E1": 1.0, "E2": 0.5}


@dataclass(frozen=True)
class PriorityWeights:
    """Weights of the gap priority (docs/gap_finder.md). All components are normalised to [0, 1].

    hours, wage_bill, exposure, desire, capability, importance: weights of the additive part (any >= 0, not
        all 0); importance is the task's O*NET importance percentile within its occupation.
    digital_factor_*: the multiplicative gate for "digital enough to benchmark" (Eloundou human E1/E2):
        1.0 for exposed tasks, `digital_factor_not_exposed` for E0, `digital_factor_unknown` when unlabelled.
    unrated_rating: the value a missing rating component (exposure, WORKBank desire/capability, O*NET
        importance) takes;
        0.5 is the middle of the scale (neutral). Missing hours or wage bill count as 0 (no evidence of
        economic weight).
    """

    hours: float = 1.0
    wage_bill: float = 1.0
    exposure: float = 1.0
    desire: float = 1.0
    capability: float = 1.0
    importance: float = 1.0
    digital_factor_not_exposed: float = 0.25
    digital_factor_unknown: float = 0.5
    unrated_rating: float = 0.5

    def __post_init__(self) -> None:
        weights = [getattr(self, c) for c in COMPONENTS]
        if any(w < 0 for w in weights) or sum(weights) <= 0:
            raise ValueError(f"priority weights must be >= 0 and not all 0, got {self.additive()}")
        for name in ("digital_factor_not_exposed", "digital_factor_unknown", "unrated_rating"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {value}")

    def additive(self, components: Sequence[str] = COMPONENTS) -> dict[str, float]:
        return {c: float(getattr(self, c)) for c in components}

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


# --- the task frame --------------------------------------------------------------------------------------


def gap_task_frame(
    task_cov: pl.DataFrame,
    tasks: pl.DataFrame,
    task_hours: pl.DataFrame,
    task_exposure: pl.DataFrame,
    occupation_wages: pl.DataFrame,
    workbank_tasks: pl.DataFrame,
    occupations: pl.DataFrame,
    hours_weighting: HoursWeighting = "pi",
) -> pl.DataFrame:
    """One row per task: the regression task frame plus task text, occupation title and task hours.

    `task_annual_hours` is coverage.task_hour_weights' task_hours_used (pi share x occupation hours), so hour
    totals here match the coverage headline's.
    """
    from models.regression import build_task_frame  # heavy imports (statsmodels, patsy) only when used

    if "benchmark" in task_cov.columns:
        raise ValueError(
            "the gap finder needs the pooled task coverage (one row per task), not per benchmark"
        )
    frame = build_task_frame(task_cov, tasks, task_exposure, occupation_wages, workbank_tasks)
    hours = task_hour_weights(task_cov.select(TASK_KEY), task_hours, hours_weighting).select(
        *TASK_KEY,
        "weight_share",
        pl.col("task_hours_used").alias("task_annual_hours"),
        "occupation_annual_hours",
    )
    text = tasks.select(
        pl.col("onet_soc_code").cast(pl.Utf8), pl.col("task_id").cast(pl.Int64), pl.col("task").cast(pl.Utf8)
    ).unique(TASK_KEY)
    titles = occupations.select(
        pl.col("onet_soc_code").cast(pl.Utf8), pl.col("title").cast(pl.Utf8).alias("occupation_title")
    ).unique("onet_soc_code")
    frame = frame.drop(
        [
            c
            for c in (
                "task",
                "occupation_title",
                "task_annual_hours",
                "weight_share",
                "occupation_annual_hours",
            )
            if c in frame.columns
        ]
    )
    return (
        frame.join(text, on=TASK_KEY, how="left")
        .join(hours, on=TASK_KEY, how="left")
        .join(titles, on="onet_soc_code", how="left")
        .sort(TASK_KEY)
    )


# --- components and priority -----------------------------------------------------------------------------


def log_minmax(values: pl.Series) -> pl.Series:
    """ln-scaled min-max to [0, 1] over the positive values; <= 0 or null -> 0. A constant series -> 1."""
    array = values.cast(pl.Float64).to_numpy().astype(float)
    positive = np.isfinite(array) & (array > 0)
    out = np.zeros_like(array)
    if positive.any():
        logs = np.log(array[positive])
        low, high = logs.min(), logs.max()
        out[positive] = (logs - low) / (high - low) if high > low else 1.0
    return pl.Series(values.name, out)


def _rating_component(col: str, low: float, high: float, fill: float) -> pl.Expr:
    return ((pl.col(col).cast(pl.Float64) - low) / (high - low)).clip(0.0, 1.0).fill_null(fill).fill_nan(fill)


def importance_percentile(occupation_col: str = "onet_soc_code") -> pl.Expr:
    """A task's O*NET importance as its mid-rank percentile among the rated tasks of its occupation:
    (rank - 0.5) / n in (0, 1), ties sharing their average rank; null when unrated. The occupation's most
    important task is near 1, its least important near 0, a single rated task 0.5."""
    importance = pl.col("importance").cast(pl.Float64)
    n = importance.count().over(occupation_col)
    return (importance.rank("average").over(occupation_col) - 0.5) / n


def score_tasks(frame: pl.DataFrame, weights: PriorityWeights | None = None) -> pl.DataFrame:
    """Add the priority components and the priority to a task frame (gap_task_frame's columns).

    Uses task_annual_hours, wage_bill, human_exposure, exposed, desire_mean, capability_mean and importance
    (O*NET IM; treated as unrated when the column is absent). Components (each in [0, 1]): c_hours,
    c_wage_bill (ln-min-max over all rows), c_exposure (Eloundou beta from the human label), c_desire,
    c_capability ((x - 1) / 4 on WORKBank's 1-5 scales), c_importance (importance_percentile within the
    occupation, over every task of `frame`); digital_factor (the gate);
    imputed (comma list of components that took the default); priority. Normalisation runs over every row of
    `frame`, covered or not, so a task's priority does not depend on coverage.
    """
    weights = weights or PriorityWeights()
    w = weights.additive()
    fill = weights.unrated_rating
    if "importance" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, dtype=pl.Float64).alias("importance"))
    frame = frame.with_columns(
        log_minmax(frame["task_annual_hours"]).alias("c_hours"),
        log_minmax(frame["wage_bill"]).alias("c_wage_bill"),
    )
    exposure_score = (
        pl.col("human_exposure")
        .cast(pl.Utf8)
        .replace_strict(EXPOSURE_SCORE, default=None, return_dtype=pl.Float64)
    )
    exposed = pl.col("exposed").cast(pl.Boolean)
    frame = frame.with_columns(
        exposure_score.fill_null(fill).alias("c_exposure"),
        _rating_component("desire_mean", 1.0, 5.0, fill).alias("c_desire"),
        _rating_component("capability_mean", 1.0, 5.0, fill).alias("c_capability"),
        importance_percentile().fill_null(fill).fill_nan(fill).alias("c_importance"),
        pl.when(exposed)
        .then(1.0)
        .when(exposed.not_())
        .then(weights.digital_factor_not_exposed)
        .otherwise(weights.digital_factor_unknown)
        .alias("digital_factor"),
    )
    imputed_flags = [
        pl.when(pl.col("task_annual_hours").is_null()).then(pl.lit("hours")),
        pl.when(pl.col("wage_bill").is_null()).then(pl.lit("wage_bill")),
        pl.when(exposure_score.is_null()).then(pl.lit("exposure")),
        pl.when(pl.col("desire_mean").is_null()).then(pl.lit("desire")),
        pl.when(pl.col("capability_mean").is_null()).then(pl.lit("capability")),
        pl.when(pl.col("importance").is_null()).then(pl.lit("importance")),
        pl.when(exposed.is_null()).then(pl.lit("digital")),
    ]
    additive = sum(w[c] * pl.col(f"c_{c}") for c in COMPONENTS) / sum(w.values())
    return frame.with_columns(
        pl.concat_str(imputed_flags, separator=",", ignore_nulls=True).alias("imputed"),
        (pl.col("digital_factor") * additive).alias("priority"),
    )


def score_reference_tasks(
    labels: pl.DataFrame,
    tables: dict[str, pl.DataFrame],
    threshold: int = DEFAULT_THRESHOLD,
    weights: PriorityWeights | None = None,
    labeler: str | None = None,
) -> pl.DataFrame:
    """Every task's coverage by `labels` at `threshold` (task_coverage), joined to the reference tables
    (REFERENCE_TABLES by name: gap_task_frame) and scored (score_tasks)."""
    task_cov = task_coverage(labels, tables["onet_tasks"], [threshold], labeler=labeler)
    frame = gap_task_frame(
        task_cov,
        tables["onet_tasks"],
        tables["task_hours"],
        tables["task_exposure"],
        tables["occupation_wages"],
        tables["workbank_tasks"],
        tables["onet_occupations"],
    )
    return score_tasks(frame, weights)


def _rank_by_priority(
    frame: pl.DataFrame, hours_col: str = "task_annual_hours", key: Sequence[str] = TASK_KEY
) -> pl.DataFrame:
    """Sort by priority (desc), ties by hours (desc) then key; add `rank` (1 = build first)."""
    ordered = frame.sort(
        ["priority", hours_col, *key], descending=[True, True] + [False] * len(key), nulls_last=True
    )
    return ordered.with_row_index("rank", offset=1).with_columns(pl.col("rank").cast(pl.Int64))


# The priority's components and the priority itself, in the order tables show them.
PRIORITY_COMPONENTS: tuple[str, ...] = (
    "c_hours", "c_wage_bill", "c_exposure", "c_desire", "c_capability", "digital_factor", "priority",
)


TASK_GAP_COLUMNS = [
    "rank",
    "onet_soc_code",
    "occupation_title",
    "major_group_code",
    "task_id",
    "task",
    "threshold",
    "n_prompts",
    "prompts_needed",
    "task_annual_hours",
    "wage_bill",
    "human_exposure",
    "exposed",
    "desire_mean",
    "capability_mean",
    "zone",
    "importance",
    *PRIORITY_COMPONENTS[:5],
    "c_importance",
    *PRIORITY_COMPONENTS[5:],
    "imputed",
]


def coverage_gaps(scored: pl.DataFrame, threshold: int = DEFAULT_THRESHOLD) -> pl.DataFrame:
    """Tasks with fewer than `threshold` prompts, ranked by priority (1 = build first).

    `scored` is score_tasks' output (it needs n_prompts). prompts_needed = threshold - n_prompts.
    """
    gaps = scored.filter(pl.col("n_prompts") < threshold).with_columns(
        pl.lit(threshold, dtype=pl.Int64).alias("threshold"),
        (pl.lit(threshold) - pl.col("n_prompts")).cast(pl.Int64).alias("prompts_needed"),
    )
    if "major_group_code" not in gaps.columns:
        gaps = gaps.with_columns(major_group_of().alias("major_group_code"))
    for col in ("occupation_title", "task", "zone", "human_exposure"):
        if col not in gaps.columns:
            gaps = gaps.with_columns(pl.lit(None, dtype=pl.Utf8).alias(col))
    if "importance" not in gaps.columns:
        gaps = gaps.with_columns(pl.lit(None, dtype=pl.Float64).alias("importance"))
    ranked = _rank_by_priority(gaps)
    extra = [c for c in ("labeler",) if c in ranked.columns]
    return ranked.select(TASK_GAP_COLUMNS + extra)


def occupation_priorities(
    scored: pl.DataFrame, threshold: int = DEFAULT_THRESHOLD, weights: PriorityWeights | None = None
) -> pl.DataFrame:
    """One row per occupation with the same formula applied to occupation-level components.

    c_hours: ln-min-max of the occupation's *uncovered* hours (tasks below threshold); c_wage_bill: of the
    wage bill; c_exposure and digital_factor: pi-weighted means of the task values; c_desire and
    c_capability: from the mean of the occupation's WORKBank-rated tasks (the default when none is rated).
    Importance is left out (OCCUPATION_COMPONENTS): a within-occupation percentile averages ~0.5 everywhere.
    """
    weights = weights or PriorityWeights()
    w = weights.additive(OCCUPATION_COMPONENTS)
    if sum(w.values()) <= 0:  # only importance weighted: occupations rank by hours alone
        w = {c: float(c == "hours") for c in OCCUPATION_COMPONENTS}
    fill = weights.unrated_rating
    share = pl.col("weight_share").fill_null(0.0)
    uncovered = pl.col("n_prompts") < threshold
    occ = scored.group_by("onet_soc_code").agg(
        pl.col("occupation_title").first(),
        pl.len().cast(pl.Int64).alias("n_tasks"),
        uncovered.not_().sum().cast(pl.Int64).alias("tasks_covered"),
        pl.col("n_prompts").sum().cast(pl.Int64).alias("n_prompt_labels"),
        pl.col("occupation_annual_hours").first(),
        pl.col("task_annual_hours").filter(uncovered).sum().alias("uncovered_hours"),
        (share * uncovered.cast(pl.Float64)).sum().alias("hours_share_uncovered"),
        pl.col("wage_bill").first(),
        ((share * pl.col("c_exposure")).sum() / share.sum()).alias("c_exposure_w"),
        pl.col("c_exposure").mean().alias("c_exposure_mean"),
        ((share * pl.col("digital_factor")).sum() / share.sum()).alias("digital_w"),
        pl.col("digital_factor").mean().alias("digital_mean"),
        pl.col("exposed").cast(pl.Float64).mean().alias("exposed_task_share"),
        pl.col("desire_mean").mean().alias("desire_mean"),
        pl.col("capability_mean").mean().alias("capability_mean"),
        pl.col("desire_mean").is_not_null().sum().cast(pl.Int64).alias("n_desire_rated"),
    )
    occ = occ.with_columns(
        # an occupation whose tasks all lack pi weights falls back to the unweighted mean
        pl.coalesce(pl.col("c_exposure_w").fill_nan(None), "c_exposure_mean").alias("c_exposure"),
        pl.coalesce(pl.col("digital_w").fill_nan(None), "digital_mean").alias("digital_factor"),
    ).drop("c_exposure_w", "c_exposure_mean", "digital_w", "digital_mean")
    occ = occ.with_columns(
        log_minmax(occ["uncovered_hours"]).alias("c_hours"),
        log_minmax(occ["wage_bill"]).alias("c_wage_bill"),
        _rating_component("desire_mean", 1.0, 5.0, fill).alias("c_desire"),
        _rating_component("capability_mean", 1.0, 5.0, fill).alias("c_capability"),
    )
    additive = sum(w[c] * pl.col(f"c_{c}") for c in OCCUPATION_COMPONENTS) / sum(w.values())
    return occ.with_columns(
        (pl.col("digital_factor") * additive).alias("priority"),
        major_group_of().alias("major_group_code"),
        (pl.col("tasks_covered") >= 1).alias("occupation_covered"),
        pl.lit(threshold, dtype=pl.Int64).alias("threshold"),
    )


OCCUPATION_GAP_COLUMNS = [
    "rank",
    "onet_soc_code",
    "occupation_title",
    "major_group_code",
    "threshold",
    "n_tasks",
    "tasks_covered",
    "n_prompt_labels",
    "occupation_annual_hours",
    "uncovered_hours",
    "hours_share_uncovered",
    "wage_bill",
    "exposed_task_share",
    "desire_mean",
    "capability_mean",
    "n_desire_rated",
    *PRIORITY_COMPONENTS,
]


def occupation_gaps(
    scored: pl.DataFrame, threshold: int = DEFAULT_THRESHOLD, weights: PriorityWeights | None = None
) -> pl.DataFrame:
    """Occupations with no task at the threshold (not covered at t), ranked by occupation priority."""
    occ = occupation_priorities(scored, threshold, weights).filter(~pl.col("occupation_covered"))
    ranked = _rank_by_priority(occ, hours_col="uncovered_hours", key=["onet_soc_code"])
    return ranked.select(OCCUPATION_GAP_COLUMNS)


# --- JobBench-style shortlist ----------------------------------------------------------------------------


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
    return short.select(
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
    )


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
    """
    uncovered = pl.col("n_prompts") < threshold
    frame = scored.with_columns(major_group_of().alias("major_group_code"))
    biggest = (
        frame.filter(uncovered)
        .sort(["task_annual_hours", "task_id"], descending=[True, False], nulls_last=True)
        .group_by("onet_soc_code", maintain_order=True)
        .agg(
            pl.col("task").first().alias("largest_uncovered_task"),
            pl.col("task_annual_hours").first().alias("largest_uncovered_task_hours"),
        )
    )
    blocks = (
        frame.group_by("major_group_code", "onet_soc_code")
        .agg(
            pl.col("occupation_title").first(),
            pl.col("task_annual_hours").filter(uncovered).sum().alias("block_uncovered_hours"),
            uncovered.sum().cast(pl.Int64).alias("block_uncovered_tasks"),
            pl.len().cast(pl.Int64).alias("block_n_tasks"),
            pl.col("task_annual_hours").sum().alias("occupation_hours"),
        )
        .join(biggest, on="onet_soc_code", how="left")
    )
    group_totals = blocks.group_by("major_group_code").agg(
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
        pl.col("group_uncovered_tasks").fill_null(0),
        pl.lit(threshold, dtype=pl.Int64).alias("threshold"),
    ).with_columns(
        pl.when(pl.col("group_hours") > 0)
        .then(pl.col("group_uncovered_hours") / pl.col("group_hours"))
        .alias("group_uncovered_share"),
        pl.when(pl.col("group_uncovered_hours") > 0)
        .then(pl.col("block_uncovered_hours") / pl.col("group_uncovered_hours"))
        .alias("block_share_of_group_uncovered"),
    )
    return out.select(
        "major_group_code",
        "major_group_title",
        "threshold",
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
    ).sort(["major_group_code", "block_rank"], nulls_last=True)


# --- what-if -----------------------------------------------------------------------------------------


@dataclass
class WhatIfResult:
    """The marginal gain of a candidate benchmark (each frame is one whatif_* table)."""

    marginal_gain: pl.DataFrame  # metric, before, after, gain
    newly_covered_tasks: pl.DataFrame
    newly_covered_occupations: pl.DataFrame
    gap_rank_changes: pl.DataFrame


LABEL_COLUMNS = ["benchmark", "prompt_id", "prompt_hash", "onet_soc_code", "task_id"]


def _label_keys(labels: pl.DataFrame) -> pl.DataFrame:
    cols = [c for c in LABEL_COLUMNS if c in labels.columns]
    out = labels.select(
        [pl.col(c).cast(pl.Int64) if c == "task_id" else pl.col(c).cast(pl.Utf8) for c in cols]
        + ([pl.col("labeler").cast(pl.Utf8)] if "labeler" in labels.columns else [])
    )
    if "prompt_hash" not in out.columns:
        out = out.with_columns(pl.lit(None, dtype=pl.Utf8).alias("prompt_hash"))
    return out


def dedupe_candidate(
    existing: pl.DataFrame,
    candidate: pl.DataFrame,
    existing_prompt_hashes: Sequence[str] | None = None,
    landed_keys: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Keep only candidate prompts that add new evidence.

    A candidate prompt does not count when its text is already in the warehouse (its prompt_hash appears in
    the existing labels or in `existing_prompt_hashes`), when its (benchmark, prompt_id) is already landed
    (in the existing labels, or in `landed_keys` when the existing labels are label counts), or when an
    earlier candidate prompt has the same text. Returns the kept label rows and counts.
    """
    candidate = _label_keys(candidate)
    known_hashes = (
        set(existing["prompt_hash"].drop_nulls().to_list()) if "prompt_hash" in existing.columns else set()
    )
    known_hashes |= set(existing_prompt_hashes or [])
    prompts = candidate.select("benchmark", "prompt_id", "prompt_hash").unique(maintain_order=True)
    if landed_keys is None and "prompt_id" not in existing.columns:
        raise ValueError("existing label counts carry no prompt ids: pass landed_keys")
    landed_ids = (existing if landed_keys is None else landed_keys).select(
        pl.col("benchmark").cast(pl.Utf8), pl.col("prompt_id").cast(pl.Utf8)
    ).unique()
    id_landed = prompts.join(landed_ids, on=["benchmark", "prompt_id"], how="semi")
    dropped_ids = (
        pl.concat([prompts.filter(pl.col("prompt_hash").is_in(list(known_hashes))), id_landed])
        .select("benchmark", "prompt_id")
        .unique()
    )
    remaining = prompts.join(dropped_ids, on=["benchmark", "prompt_id"], how="anti")
    with_hash = remaining.filter(pl.col("prompt_hash").is_not_null())
    first_of_text = with_hash.unique("prompt_hash", keep="first", maintain_order=True)
    kept_prompts = pl.concat([first_of_text, remaining.filter(pl.col("prompt_hash").is_null())])
    kept = candidate.join(
        kept_prompts.select("benchmark", "prompt_id"), on=["benchmark", "prompt_id"], how="semi"
    )
    counts = {
        "candidate_prompts_labeled": prompts.height,
        "duplicates_of_landed": dropped_ids.height,
        "duplicates_within_candidate": with_hash.height - first_of_text.height,
        "candidate_prompts_counted": kept_prompts.height,
    }
    return kept, counts


def whatif_gain(
    existing_labels: pl.DataFrame,
    candidate_labels: pl.DataFrame,
    tasks: pl.DataFrame,
    task_hours: pl.DataFrame,
    occupations: pl.DataFrame,
    threshold: int = DEFAULT_THRESHOLD,
    *,
    priorities: pl.DataFrame | None = None,
    labeler: str | None = None,
    existing_prompt_hashes: Sequence[str] | None = None,
    landed_keys: pl.DataFrame | None = None,
    n_candidate_prompts: int | None = None,
    top_n: int = 100,
    hours_weighting: HoursWeighting = "pi",
) -> WhatIfResult:
    """Marginal gain of adding `candidate_labels` to `existing_labels` at `threshold`. Pure: writes nothing.

    Both label frames have prompt_task_labels' columns (benchmark, prompt_id, prompt_hash, onet_soc_code,
    task_id[, labeler]); the existing labels may instead be label counts (coverage.label_counts, what the
    warehouse path passes so that memory does not grow with the label table), then with `landed_keys`. The existing labels are restricted to one labeler (`labeler`, else the candidate's,
    else coverage.select_labeler's choice) so the comparison never mixes labelers. Candidate prompts already
    landed (same text or same benchmark/prompt_id) add nothing (dedupe_candidate).

    `priorities` (onet_soc_code, task_id, priority[, task_annual_hours]; score_tasks' output) enables the gap
    ranking comparison; without it gap_rank_changes is empty. `n_candidate_prompts` (prompts in the folder,
    labeled or not) is reported when given.
    """
    if labeler is None and "labeler" in candidate_labels.columns and candidate_labels.height:
        names = candidate_labels["labeler"].drop_nulls().unique().to_list()
        if len(names) > 1:
            raise ValueError(f"candidate labels mix labelers {sorted(names)}; label with one labeler")
        labeler = names[0] if names else None
    existing = existing_labels if is_label_counts(existing_labels) else _label_keys(existing_labels)
    if existing.height and "labeler" in existing.columns:
        present = set(existing["labeler"].drop_nulls().to_list())
        if labeler is not None and labeler not in present:
            raise ValueError(
                f"the warehouse has no {labeler!r} labels to compare the candidate with; "
                f"present: {sorted(present)}"
            )
        existing, labeler = select_labeler(existing, labeler)
    candidate, counts = dedupe_candidate(existing, candidate_labels, existing_prompt_hashes, landed_keys)
    if is_label_counts(existing):
        candidate_in_counts = label_counts(candidate).drop("labeler", "labeler_version")
    else:
        candidate_in_counts = candidate.drop("labeler", strict=False)
    candidate = candidate.drop("labeler", strict=False)
    existing = existing.drop("labeler", strict=False)
    before = task_coverage(existing, tasks, [threshold])
    after = task_coverage(
        pl.concat([existing.drop("labeler_version", strict=False), candidate_in_counts], how="diagonal_relaxed"),
        tasks,
        [threshold],
    )
    covered = f"covered_{threshold}"
    cand_counts = task_coverage(candidate, tasks, [threshold]).select(
        *TASK_KEY, pl.col("n_prompts").alias("candidate_prompts")
    )
    tasks_cmp = (
        before.select(
            *TASK_KEY, pl.col("n_prompts").alias("n_prompts_before"), pl.col(covered).alias("covered_before")
        )
        .join(
            after.select(
                *TASK_KEY,
                pl.col("n_prompts").alias("n_prompts_after"),
                pl.col(covered).alias("covered_after"),
            ),
            on=TASK_KEY,
        )
        .join(cand_counts, on=TASK_KEY)
    )
    weighted = task_hour_weights(tasks_cmp, task_hours, hours_weighting)
    text = tasks.select(
        pl.col("onet_soc_code").cast(pl.Utf8), pl.col("task_id").cast(pl.Int64), pl.col("task").cast(pl.Utf8)
    ).unique(TASK_KEY)
    titles = occupations.select(
        pl.col("onet_soc_code").cast(pl.Utf8), pl.col("title").cast(pl.Utf8).alias("occupation_title")
    ).unique("onet_soc_code")
    newly = (
        weighted.filter(pl.col("covered_after") & ~pl.col("covered_before"))
        .join(text, on=TASK_KEY, how="left")
        .join(titles, on="onet_soc_code", how="left")
        .with_columns(
            major_group_of().alias("major_group_code"), pl.lit(threshold, dtype=pl.Int64).alias("threshold")
        )
        .select(
            "onet_soc_code",
            "occupation_title",
            "major_group_code",
            "task_id",
            "task",
            "threshold",
            "n_prompts_before",
            "candidate_prompts",
            "n_prompts_after",
            pl.col("task_hours_used").alias("task_annual_hours"),
        )
        .sort(TASK_KEY)
    )

    occ_before = occupation_coverage(before, task_hours, occupations, [threshold], hours_weighting)
    occ_after = occupation_coverage(after, task_hours, occupations, [threshold], hours_weighting)
    occ_cmp = occ_before.select(
        "onet_soc_code",
        "title",
        "major_group_code",
        "n_tasks",
        "occupation_annual_hours",
        pl.col(f"tasks_covered_{threshold}").alias("tasks_covered_before"),
        pl.col(covered).alias("covered_before"),
        pl.col(f"hours_share_covered_{threshold}").alias("hours_share_covered_before"),
    ).join(
        occ_after.select(
            "onet_soc_code",
            pl.col(f"tasks_covered_{threshold}").alias("tasks_covered_after"),
            pl.col(covered).alias("covered_after"),
            pl.col(f"hours_share_covered_{threshold}").alias("hours_share_covered_after"),
        ),
        on="onet_soc_code",
    )
    newly_occ = (
        occ_cmp.filter(pl.col("covered_after") & ~pl.col("covered_before"))
        .rename({"title": "occupation_title"})
        .with_columns(pl.lit(threshold, dtype=pl.Int64).alias("threshold"))
        .sort("onet_soc_code")
    )

    hours_known = weighted.filter(pl.col("task_hours_used").is_not_null())
    total_hours = float(hours_known["task_hours_used"].sum())
    hours_before = float(hours_known.filter(pl.col("covered_before"))["task_hours_used"].sum())
    hours_after = float(hours_known.filter(pl.col("covered_after"))["task_hours_used"].sum())

    def groups_covered(frame: pl.DataFrame, col: str) -> int:
        return frame.filter(pl.col(col))["major_group_code"].n_unique()

    metrics: list[tuple[str, float, float]] = [
        ("tasks_covered", float(before[covered].sum()), float(after[covered].sum())),
        (
            "occupations_covered",
            float(occ_cmp["covered_before"].sum()),
            float(occ_cmp["covered_after"].sum()),
        ),
        (
            "major_groups_covered",
            float(groups_covered(occ_cmp, "covered_before")),
            float(groups_covered(occ_cmp, "covered_after")),
        ),
        ("hours_covered", hours_before, hours_after),
        (
            "hours_share_covered",
            hours_before / total_hours if total_hours else math.nan,
            hours_after / total_hours if total_hours else math.nan,
        ),
        (
            "tasks_with_any_prompt",
            float((before["n_prompts"] > 0).sum()),
            float((after["n_prompts"] > 0).sum()),
        ),
    ]
    rank_changes = _gap_rank_changes(tasks_cmp, priorities, top_n)
    if rank_changes.height or priorities is not None:
        closed_top = rank_changes.filter(pl.col("closed") & (pl.col("rank_before") <= top_n)).height
        open_before = (
            priorities.join(tasks_cmp.filter(~pl.col("covered_before")), on=TASK_KEY, how="semi")
            if priorities is not None
            else pl.DataFrame()
        )
        open_after = (
            priorities.join(tasks_cmp.filter(~pl.col("covered_after")), on=TASK_KEY, how="semi")
            if priorities is not None
            else pl.DataFrame()
        )
        metrics += [
            (f"top_{top_n}_gaps_closed", 0.0, float(closed_top)),
            ("gap_priority_mass", float(open_before["priority"].sum()), float(open_after["priority"].sum())),
        ]
    rows = [{"metric": m, "before": b, "after": a, "gain": a - b} for m, b, a in metrics]
    for name, value in counts.items():
        rows.append({"metric": name, "before": None, "after": float(value), "gain": None})
    if n_candidate_prompts is not None:
        rows.append(
            {"metric": "candidate_prompts", "before": None, "after": float(n_candidate_prompts), "gain": None}
        )
    gain = pl.DataFrame(
        rows, schema={"metric": pl.Utf8, "before": pl.Float64, "after": pl.Float64, "gain": pl.Float64}
    ).with_columns(
        pl.lit(threshold, dtype=pl.Int64).alias("threshold"), pl.lit(labeler, dtype=pl.Utf8).alias("labeler")
    )
    return WhatIfResult(gain, newly, newly_occ, rank_changes)


RANK_CHANGE_SCHEMA = {
    "onet_soc_code": pl.Utf8,
    "task_id": pl.Int64,
    "priority": pl.Float64,
    "rank_before": pl.Int64,
    "rank_after": pl.Int64,
    "rank_change": pl.Int64,
    "closed": pl.Boolean,
}


def _gap_rank_changes(tasks_cmp: pl.DataFrame, priorities: pl.DataFrame | None, top_n: int) -> pl.DataFrame:
    """Gap ranks before and after: rows for tasks in either top `top_n` or closed by the candidate.

    rank_change = rank_before - rank_after (positive = moved up because gaps above it closed); closed tasks
    have rank_after null.
    """
    if priorities is None:
        return pl.DataFrame(schema=RANK_CHANGE_SCHEMA)
    cols = [c for c in ("task_annual_hours",) if c in priorities.columns]
    prio = priorities.select(
        pl.col("onet_soc_code").cast(pl.Utf8),
        pl.col("task_id").cast(pl.Int64),
        pl.col("priority").cast(pl.Float64),
        *cols,
    )
    if not cols:
        prio = prio.with_columns(pl.lit(0.0).alias("task_annual_hours"))
    frame = tasks_cmp.join(prio, on=TASK_KEY, how="inner")
    before = _rank_by_priority(frame.filter(~pl.col("covered_before"))).select(
        *TASK_KEY, pl.col("rank").alias("rank_before")
    )
    after = _rank_by_priority(frame.filter(~pl.col("covered_after"))).select(
        *TASK_KEY, pl.col("rank").alias("rank_after")
    )
    out = (
        frame.select(*TASK_KEY, "priority", "covered_before", "covered_after")
        .join(before, on=TASK_KEY, how="left")
        .join(after, on=TASK_KEY, how="left")
        .filter(pl.col("rank_before").is_not_null() | pl.col("rank_after").is_not_null())
        .with_columns(
            (pl.col("rank_before") - pl.col("rank_after")).alias("rank_change"),
            (pl.col("covered_after") & ~pl.col("covered_before")).alias("closed"),
        )
    )
    out = out.filter((pl.col("rank_before") <= top_n) | (pl.col("rank_after") <= top_n) | pl.col("closed"))
    return (
        out.select(list(RANK_CHANGE_SCHEMA))
        .cast(RANK_CHANGE_SCHEMA)
        .sort(["rank_before", "rank_after"], nulls_last=True)
    )


# --- statistical power of occupation scores ----------------------------------------------------------

POWER_SCHEMA = {
    "onet_soc_code": pl.Utf8,
    "model": pl.Utf8,
    "min_prompts": pl.Int64,
    "n_tasks": pl.Int64,
    "n_prompt_task_pairs": pl.Int64,
    "mean_prompts_per_task": pl.Float64,
    "min_prompts_per_task": pl.Int64,
    "pooled_sd": pl.Float64,
    "tasks_variance_pooled": pl.Int64,
    "tasks_variance_smoothed": pl.Int64,
    "analytic_ci_width": pl.Float64,
    "target_width": pl.Float64,
    "meets_target": pl.Boolean,
    "extra_prompts_per_task": pl.Int64,
    "extra_prompts_total": pl.Int64,
    "projected_ci_width": pl.Float64,
}


def smoothed_bernoulli_variance(totals: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """p (1 - p) with p = (total + 0.5) / (n + 1): the variance a [0, 1] score with that smoothed mean can
    have at most, standing in for an observed variance of 0 (all scores equal)."""
    p = (np.asarray(totals, dtype=float) + 0.5) / (np.asarray(counts, dtype=float) + 1.0)
    return p * (1.0 - p)


def extra_prompts_needed(
    variances: np.ndarray, counts: np.ndarray, target_width: float, alpha: float = 0.05
) -> tuple[int | None, float, float]:
    """Smallest d >= 0 such that the CI of the equally weighted mean of task means, with d more prompts in
    every task, is at most `target_width` wide: 2 z / K * sqrt(sum_k var_k / (n_k + d)) <= target_width.

    Returns (d, current width, width with d). d is None when there is no task (K = 0).
    """
    variances = np.asarray(variances, dtype=float)
    counts = np.asarray(counts, dtype=float)
    k = variances.size
    if k == 0:
        return None, math.nan, math.nan
    scale = 2.0 * z_value(alpha) / k

    def width(extra: int) -> float:
        return float(scale * math.sqrt(float(np.sum(variances / (counts + extra)))))

    current = width(0)
    if current <= target_width:
        return 0, current, current
    # with every task at >= d prompts the sum is <= sum(var) / d, so this d is always enough
    high = max(1, math.ceil(scale**2 * float(variances.sum()) / target_width**2))
    low = 0
    while high - low > 1:
        middle = (low + high) // 2
        if width(middle) <= target_width:
            high = middle
        else:
            low = middle
    return high, current, width(high)


def score_power(
    results: pl.DataFrame,
    labels: pl.DataFrame,
    target_width: float = 0.10,
    min_prompts: Sequence[int] = (5, 1),
    *,
    labeler: str | None = None,
    alpha: float = 0.05,
    scores: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per occupation x model x min_prompts (the rows of occupation_model_scores): how many more prompts per
    task would bring the (1 - alpha) CI of the O*NET-weighted score below `target_width` (score scale [0, 1]).

    The weighted score is the equal-weight mean of the task means of the K tasks with >= min_prompts scored
    prompts (models/scores.py), so Var = sum_k s_k^2 / n_k / K^2 with s_k^2 each task's observed sample
    variance of prompt scores (ddof 1). Two repairs keep a handful of identical scores from looking certain:
    a task whose n_k >= 2 scores are all equal (s_k^2 = 0) takes the smoothed Bernoulli variance
    p(1 - p), p = (sum + 0.5) / (n_k + 1) (`tasks_variance_smoothed`); a task with a single prompt, whose
    variance is not observed, takes the pooled within-task variance of the occupation x model, or when no
    task has two prompts the variance of all its prompt scores, smoothed the same way when it is 0
    (`tasks_variance_pooled`). `scores` (occupation_model_scores) adds its bootstrap interval for comparison.
    """
    if target_width <= 0:
        raise ValueError(f"target_width must be > 0, got {target_width}")
    labels, _ = select_labeler(labels, labeler)
    prompt_tasks = prompt_task_pairs(labels)
    prompt_scores = mean_prompt_scores(results)
    rows: list[dict[str, object]] = []
    # one model at a time: the prompt x task x model join is the largest frame; groups are independent
    for _, model_scores in prompt_scores.sort("model").group_by("model", maintain_order=True):
        rows += _power_rows(model_scores, prompt_tasks, target_width, min_prompts, alpha)
    out = pl.DataFrame(rows, schema=POWER_SCHEMA)
    if scores is not None and scores.height:
        observed_ci = scores.select(
            pl.col("onet_soc_code").cast(pl.Utf8),
            pl.col("model").cast(pl.Utf8),
            pl.col("min_prompts").cast(pl.Int64),
            "weighted_mean",
            "weighted_ci_low",
            "weighted_ci_high",
            (pl.col("weighted_ci_high") - pl.col("weighted_ci_low")).alias("bootstrap_ci_width"),
        )
        out = out.join(observed_ci, on=["onet_soc_code", "model", "min_prompts"], how="left")
    return out.sort("onet_soc_code", "model", "min_prompts")


def _power_rows(
    prompt_scores: pl.DataFrame,
    prompt_tasks: pl.DataFrame,
    target_width: float,
    min_prompts: Sequence[int],
    alpha: float,
) -> list[dict[str, object]]:
    """score_power's rows for the models in `prompt_scores` (one model per call)."""
    per_task = (
        prompt_scores.join(prompt_tasks, on=["benchmark", "prompt_id"], how="inner")
        .group_by("onet_soc_code", "model", "task_id")
        .agg(
            pl.len().cast(pl.Int64).alias("n"),
            pl.col("score").var(ddof=1).alias("var"),
            pl.col("score").sum().alias("total"),
            pl.col("score").alias("scores"),
        )
        .sort("onet_soc_code", "model", "task_id")
    )
    rows: list[dict[str, object]] = []
    for (occupation, model), group in per_task.group_by(["onet_soc_code", "model"], maintain_order=True):
        counts_all = group["n"].to_numpy().astype(float)
        var_all = group["var"].fill_null(math.nan).to_numpy().astype(float)
        observed = np.isfinite(var_all) & (counts_all >= 2)
        smoothed = observed & (var_all <= 0.0)
        var_all = np.where(
            smoothed, smoothed_bernoulli_variance(group["total"].to_numpy(), counts_all), var_all
        )
        if observed.any():
            pooled = float(
                np.sum((counts_all[observed] - 1) * var_all[observed]) / np.sum(counts_all[observed] - 1)
            )
        else:
            every = np.concatenate([np.asarray(s, dtype=float) for s in group["scores"].to_list()])
            pooled = float(np.var(every, ddof=1)) if every.size >= 2 else 0.0
            if not pooled > 0.0:
                pooled = float(
                    smoothed_bernoulli_variance(np.array([every.sum()]), np.array([every.size]))[0]
                )
        for m in min_prompts:
            eligible = counts_all >= m
            variances = np.where(observed, var_all, pooled)[eligible]
            counts = counts_all[eligible]
            extra, current, projected = extra_prompts_needed(variances, counts, target_width, alpha)
            rows.append(
                {
                    "onet_soc_code": occupation,
                    "model": model,
                    "min_prompts": int(m),
                    "n_tasks": int(eligible.sum()),
                    "n_prompt_task_pairs": int(counts.sum()),
                    "mean_prompts_per_task": float(counts.mean()) if counts.size else None,
                    "min_prompts_per_task": int(counts.min()) if counts.size else None,
                    "pooled_sd": math.sqrt(pooled),
                    "tasks_variance_pooled": int((~observed[eligible]).sum()),
                    "tasks_variance_smoothed": int(smoothed[eligible].sum()),
                    "analytic_ci_width": None if math.isnan(current) else current,
                    "target_width": target_width,
                    "meets_target": None if extra is None else extra == 0,
                    "extra_prompts_per_task": extra,
                    "extra_prompts_total": None if extra is None else extra * int(eligible.sum()),
                    "projected_ci_width": None if math.isnan(projected) else projected,
                }
            )
    return rows


# --- what-if over a candidate folder (reads the warehouse read-only, writes nothing) ------------------------

REFERENCE_TABLES = (
    "onet_tasks",
    "onet_occupations",
    "task_hours",
    "task_exposure",
    "occupation_wages",
    "workbank_tasks",
)
INDEX_TABLES = ("onet_job_titles", "onet_technology_skills")
WHATIF_TABLES = (
    "whatif_marginal_gain",
    "whatif_newly_covered_tasks",
    "whatif_newly_covered_occupations",
    "whatif_gap_rank_changes",
)


def _candidate_prompts_file(folder: Path) -> Path:
    path = folder / "prompts.jsonl" if folder.is_dir() else folder
    if not path.is_file():
        raise InputError("a candidate benchmark needs a prompts.jsonl (landing format)", path=path)
    return path


def candidate_benchmark_name(folder: str | Path) -> str:
    """The candidate's benchmark name: the most common `benchmark` field of its prompts.jsonl lines, else the
    folder name made safe (lowercase, non-alphanumerics to '_')."""
    path = _candidate_prompts_file(Path(folder))
    names: dict[str, int] = {}
    for raw in path.read_bytes().split(b"\n"):
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if (
            isinstance(record, dict)
            and isinstance(record.get("benchmark"), str)
            and record["benchmark"].strip()
        ):
            names[record["benchmark"].strip()] = names.get(record["benchmark"].strip(), 0) + 1
    if names:
        return max(sorted(names), key=lambda n: names[n])
    stem = path.parent.name if path.name == "prompts.jsonl" else path.stem
    safe = re.sub(r"[^a-z0-9_]+", "_", stem.lower()).strip("_")
    return safe if safe and safe[0].isalpha() else f"candidate_{safe}" if safe else "candidate"


def read_candidate_prompts(folder: str | Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Parse a candidate folder's prompts.jsonl with the landing parser (models.benchmarks): prompt rows
    (benchmark_prompts columns, with prompt_hash) and reject rows. Nothing is written anywhere."""
    from models import benchmarks as bm

    path = _candidate_prompts_file(Path(folder))
    name = candidate_benchmark_name(folder)
    prompts, rejects = bm.parse_prompts(path, name, label=str(path))
    return prompts, bm.rejects_frame(rejects)


def label_candidate(
    prompts: pl.DataFrame, labeler: Any, cached: dict[str, list[Any]] | None = None, batch_size: int = 256
) -> tuple[pl.DataFrame, int]:
    """Label candidate prompts with `labeler` (models.labeling.base.Labeler), reusing `cached` labels by
    prompt hash (e.g. read from label_cache) and writing nothing. Returns prompt_task_labels rows and the
    number of prompts the labeler failed on."""
    from models.labeling.base import PromptRecord
    from models.labeling.cache import batched, labels_frame, unique_by_hash

    records = [
        PromptRecord(r["benchmark"], r["prompt_id"], r["prompt_hash"], r["prompt"])
        for r in prompts.iter_rows(named=True)
    ]
    labels_by_hash: dict[str, list[Any]] = dict(cached or {})
    todo = [group[0] for h, group in unique_by_hash(records).items() if h not in labels_by_hash]
    failed = 0
    for batch in batched(todo, batch_size):
        for record, outcome in zip(batch, labeler.label(batch), strict=True):
            if outcome.ok:
                labels_by_hash[record.prompt_hash] = list(outcome.labels)
            else:
                failed += 1
    return labels_frame(records, labels_by_hash, labeler.name, labeler.labeler_version), failed


def build_task_index(tables: dict[str, pl.DataFrame], warehouse_path: str | Path | None = None) -> Any:
    """The labelers' TaskIndex, as the labels stage uses it: the index it pickled (table task_search_index)
    when one was built by the current offline labeler code for this O*NET version, so candidate prompts are
    labeled exactly like the landed ones; else built from the reference tables (onet_tasks,
    onet_occupations, onet_job_titles, onet_technology_skills) plus O*NET's task -> DWA titles."""
    from models.labeling import index_store

    stored = index_store.stored_index_path(warehouse_path) if warehouse_path is not None else None
    if stored is not None:
        return index_store.load_pickle(stored)
    return index_store.build_index(tables)


def build_offline_labeler(tables: dict[str, pl.DataFrame], warehouse_path: str | Path | None = None) -> Any:
    """The offline labeler (default settings) over build_task_index(tables, warehouse_path)."""
    from models.labeling.offline import OfflineLabeler

    return OfflineLabeler.calibrated(build_task_index(tables, warehouse_path))


def _read_tables(warehouse_path: str | Path, names: Sequence[str]) -> dict[str, pl.DataFrame]:
    from models import warehouse as wh

    return {name: wh.read_table(warehouse_path, name) for name in names}


def _existing_label_counts(warehouse_path: str | Path, benchmarks: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The warehouse's label counts (aggregated in DuckDB: the label table itself is never loaded) and the
    labeled (benchmark, prompt_id) keys of the candidate's benchmark names (to drop already-landed ids)."""
    from models import warehouse as wh

    with wh.connect(warehouse_path, read_only=True) as con:
        if not wh.table_exists(con, "prompt_task_labels"):
            raise LookupError(
                f"table 'prompt_task_labels' is not in the warehouse {warehouse_path}: "
                "label the landed benchmarks first"
            )
        counts = label_counts_from_connection(con, "prompt_task_labels")
        keys = wh.fetch_polars(
            con,
            "select distinct benchmark, prompt_id from prompt_task_labels "
            "where benchmark in (select unnest(?::varchar[]))",
            [list(benchmarks)],
        )
    return counts, keys


def _landed_hashes(warehouse_path: str | Path) -> list[str]:
    from models import warehouse as wh

    with wh.connect(warehouse_path, read_only=True) as con:
        if not wh.table_exists(con, "benchmark_prompts"):
            return []
        return [r[0] for r in con.execute("select distinct prompt_hash from benchmark_prompts").fetchall()]


def table_fingerprints(
    warehouse_path: str | Path,
    exclude_prefixes: Sequence[str] = ("whatif_",),
    exclude: Sequence[str] = ("candidate_benchmark_whatif",),
) -> dict[str, tuple[int, int]]:
    """(row count, order-independent hash of all rows) of every table, except the what-if's own: compare
    before and after a what-if to show the published tables are untouched."""
    from models import warehouse as wh

    if not Path(warehouse_path).exists():
        return {}
    out: dict[str, tuple[int, int]] = {}
    with wh.connect(warehouse_path, read_only=True) as con:
        names = [
            r[0]
            for r in con.execute(
                "select table_name from information_schema.tables where table_schema = 'main' order by 1"
            ).fetchall()
        ]
        for name in names:
            if name in exclude or any(name.startswith(p) for p in exclude_prefixes):
                continue
            table = wh.quote_identifier(name)
            count, digest = con.execute(
                f"select count(*), coalesce(sum(hash(t)), 0) from {table} t"
            ).fetchone()
            out[name] = (int(count), int(digest))
    return out


def run_whatif(
    warehouse_path: str | Path,
    folder: str | Path,
    threshold: int = DEFAULT_THRESHOLD,
    *,
    labeler: Any = None,
    cached: dict[str, list[Any]] | None = None,
    weights: PriorityWeights | None = None,
    top_n: int = 100,
) -> WhatIfResult:
    """Label a candidate folder and compute its marginal gain against the warehouse, reading the warehouse
    read-only. `labeler` defaults to the offline labeler built from the warehouse's reference tables; pass
    `cached` (hash -> labels, e.g. from label_cache) to reuse labels. Each result frame carries `candidate`.
    """
    tables = _read_tables(warehouse_path, REFERENCE_TABLES)
    if labeler is None:
        tables |= _read_tables(warehouse_path, INDEX_TABLES)
        labeler = build_offline_labeler(tables, warehouse_path)
    prompts, rejects = read_candidate_prompts(folder)
    if prompts.is_empty():
        raise InputError(
            f"no valid prompts ({rejects.height} rejected lines)", path=_candidate_prompts_file(Path(folder))
        )
    candidate_labels, failed = label_candidate(prompts, labeler, cached)
    existing, landed_keys = _existing_label_counts(warehouse_path, prompts["benchmark"].unique().to_list())
    scored = score_reference_tasks(existing, tables, threshold, weights, labeler.name)
    result = whatif_gain(
        existing,
        candidate_labels,
        tables["onet_tasks"],
        tables["task_hours"],
        tables["onet_occupations"],
        threshold,
        priorities=scored,
        labeler=labeler.name,
        existing_prompt_hashes=_landed_hashes(warehouse_path),
        landed_keys=landed_keys,
        n_candidate_prompts=prompts.height,
        top_n=top_n,
    )
    extra = pl.DataFrame(
        {
            "metric": ["candidate_rejected_lines", "candidate_prompts_label_failed"],
            "before": [None, None],
            "after": [float(rejects.height), float(failed)],
            "gain": [None, None],
        },
        schema={"metric": pl.Utf8, "before": pl.Float64, "after": pl.Float64, "gain": pl.Float64},
    )
    gain = pl.concat(
        [
            result.marginal_gain,
            extra.with_columns(
                pl.lit(threshold, dtype=pl.Int64).alias("threshold"), pl.lit(labeler.name).alias("labeler")
            ),
        ]
    )
    candidate = prompts["benchmark"][0]
    tag = pl.lit(candidate, dtype=pl.Utf8).alias("candidate")
    return WhatIfResult(
        *(
            frame.with_columns(tag).select("candidate", *frame.columns)
            for frame in (
                gain,
                result.newly_covered_tasks,
                result.newly_covered_occupations,
                result.gap_rank_changes,
            )
        )
    )


def whatif_tables(result: WhatIfResult) -> dict[str, pl.DataFrame]:
    """The what-if's own tables by name."""
    return dict(
        zip(
            WHATIF_TABLES,
            (
                result.marginal_gain,
                result.newly_covered_tasks,
                result.newly_covered_occupations,
                result.gap_rank_changes,
            ),
            strict=True,
        )
    )


def _print_frame(title: str, frame: pl.DataFrame, limit: int = 20) -> None:
    print(f"\n## {title} ({frame.height} rows)")
    with pl.Config(
        tbl_rows=limit, tbl_cols=12, fmt_str_lengths=60, tbl_width_chars=160, tbl_hide_dataframe_shape=True
    ):
        print(frame.head(limit))


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m models.gaps whatif <folder> [--threshold N] [--warehouse PATH] [--out DIR]`."""
    import argparse
    import os

    from models.cli import DEBUG_HELP
    from models.sources import PROJECT_ROOT

    parser = argparse.ArgumentParser(prog="python -m models.gaps", description=__doc__.split("\n\n")[0],
                                     epilog=DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", required=True)
    whatif = sub.add_parser("whatif", help="marginal gain of a candidate benchmark folder (prompts.jsonl)")
    whatif.add_argument("folder", type=Path)
    whatif.add_argument("--threshold", type=int, default=DEFAULT_THRESHOLD)
    whatif.add_argument(
        "--warehouse",
        default=os.environ.get(
            "BENCHMAP_WAREHOUSE", str(PROJECT_ROOT / "data" / "warehouse" / "benchmap.duckdb")
        ),
    )
    whatif.add_argument("--top", type=int, default=100, help="gap ranks compared (default 100)")
    whatif.add_argument("--out", type=Path, help="also write the four tables as CSV into this folder")
    args = parser.parse_args(argv)
    if not Path(args.warehouse).exists():
        parser.error(f"no warehouse at {args.warehouse}: run `make run` first or pass --warehouse")
    folder, prompts_file = Path(args.folder), Path(args.folder) / "prompts.jsonl"
    if not folder.exists():
        raise InputError("no such candidate folder (or prompts.jsonl file)", path=folder)
    if folder.is_dir() and prompts_file.is_dir():
        raise InputError("is a directory, not a file: a candidate's prompts.jsonl must be a file with one JSON "
                         "object per line", path=prompts_file)
    if folder.is_dir() and not prompts_file.exists():
        raise InputError("no prompts.jsonl in this folder: a candidate benchmark folder needs one (one JSON object "
                         "per line: benchmark, prompt_id, prompt; see README 'What would a new benchmark add?')",
                         path=folder)
    result = run_whatif(args.warehouse, args.folder, args.threshold, top_n=args.top)
    for name, frame in whatif_tables(result).items():
        _print_frame(
            name,
            frame.drop("candidate")
            if name != "whatif_gap_rank_changes"
            else frame.drop("candidate").filter(pl.col("closed")),
        )
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            frame.write_csv(args.out / f"{name}.csv")
    return 0


if __name__ == "__main__":
    from models.cli import run_cli

    raise SystemExit(run_cli(main, prog="python -m models.gaps"))
