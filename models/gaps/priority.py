"""Gap priority: the documented score of a task (and an occupation) and the ranked gap lists.

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

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import polars as pl

from models.coverage import (
    LIKELY_COVERED,
    TASK_KEY,
    HoursWeighting,
    major_group_of,
    task_coverage,
    task_hour_weights,
)

DEFAULT_THRESHOLD = 5
# The warehouse tables the priority is computed from (score_reference_tasks takes them by name).
REFERENCE_TABLES: tuple[str, ...] = (
    "onet_tasks",
    "onet_occupations",
    "task_hours",
    "task_exposure",
    "occupation_wages",
    "workbank_tasks",
)
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


def task_texts(tasks: pl.DataFrame) -> pl.DataFrame:
    """onet_soc_code, task_id, task: one row per task of the onet_tasks table."""
    return tasks.select(
        pl.col("onet_soc_code").cast(pl.Utf8), pl.col("task_id").cast(pl.Int64), pl.col("task").cast(pl.Utf8)
    ).unique(TASK_KEY)


def occupation_titles(occupations: pl.DataFrame) -> pl.DataFrame:
    """onet_soc_code, occupation_title: one row per occupation of the onet_occupations table."""
    return occupations.select(
        pl.col("onet_soc_code").cast(pl.Utf8), pl.col("title").cast(pl.Utf8).alias("occupation_title")
    ).unique("onet_soc_code")


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
    replaced = ("task", "occupation_title", "task_annual_hours", "weight_share", "occupation_annual_hours")
    frame = frame.drop([c for c in replaced if c in frame.columns])
    return (
        frame.join(task_texts(tasks), on=TASK_KEY, how="left")
        .join(hours, on=TASK_KEY, how="left")
        .join(occupation_titles(occupations), on="onet_soc_code", how="left")
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
    tables: Mapping[str, pl.DataFrame],
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


def rank_by_priority(
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
    "p_covered",
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
    """The tasks not covered at `threshold`, ranked by priority (1 = build first).

    `scored` is score_tasks' output (it needs n_prompts). With a `p_covered` column (the per-unit estimates:
    models.gaps.expected.with_task_p_covered) the list holds the tasks not likely covered (p_covered <
    LIKELY_COVERED, the map's cut); without it, those below the threshold by the labels as counted
    (p_covered null). prompts_needed = threshold - n_prompts, at least 0 (the labels as counted).
    """
    estimated = "p_covered" in scored.columns
    listed = pl.col("p_covered") < LIKELY_COVERED if estimated else pl.col("n_prompts") < threshold
    gaps = scored.filter(listed).with_columns(
        pl.lit(threshold, dtype=pl.Int64).alias("threshold"),
        (pl.lit(threshold) - pl.col("n_prompts")).clip(lower_bound=0).cast(pl.Int64).alias("prompts_needed"),
        *([] if estimated else [pl.lit(None, dtype=pl.Float64).alias("p_covered")]),
    )
    if "major_group_code" not in gaps.columns:
        gaps = gaps.with_columns(major_group_of().alias("major_group_code"))
    for col in ("occupation_title", "task", "zone", "human_exposure"):
        if col not in gaps.columns:
            gaps = gaps.with_columns(pl.lit(None, dtype=pl.Utf8).alias(col))
    if "importance" not in gaps.columns:
        gaps = gaps.with_columns(pl.lit(None, dtype=pl.Float64).alias("importance"))
    ranked = rank_by_priority(gaps)
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
        # clipped: the shares' float sum can reach 1.0000000000000007
        (share * uncovered.cast(pl.Float64)).sum().clip(0.0, 1.0).alias("hours_share_uncovered"),
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
        # without hours data its uncovered hours are unknown, not 0 (c_hours still counts them as 0)
        pl.when(pl.col("occupation_annual_hours").is_not_null()).then(pl.col("uncovered_hours"))
        .alias("uncovered_hours"),
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
    ranked = rank_by_priority(occ, hours_col="uncovered_hours", key=["onet_soc_code"])
    return ranked.select(OCCUPATION_GAP_COLUMNS)
