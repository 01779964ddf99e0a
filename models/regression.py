"""Which tasks do benchmarks cover? Logit models of task coverage with occupation-clustered errors.

Every public function takes polars frames and returns tidy polars frames carrying a `model` column. The fits,
tables, adjusted probabilities and ratios come from models/logit.py; this module holds the analysis frame
(`build_task_frame`) and models 1 and 3; model 2 (importance with occupation fixed effects) is in
models/regression_importance.py. The logit names it builds on are part of its API (`__all__`), so
`regression.fit_logit_clustered` and friends keep working.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from models.logit import (
    COEFFICIENT_SCHEMA,
    CONTRAST_SCHEMA,
    WAGE_GRID_RANGE,
    LogitFit,
    Margin,
    ModelTables,
    adjusted_probabilities,
    as_binary,
    fit_logit_clustered,
    not_estimated,
    outcome_problem,
    probabilities_skipped,
    probability_ratio,
    safe_fit,
    sample_frame,
    tidy_coefficients,
)
from models.regression_importance import importance_fe_model, importance_quintile
from models.soc import major_group_of
from models.stats import with_wilson_ci

TASK_KEY = ["onet_soc_code", "task_id"]


# --- the analysis frame -------------------------------------------------------------------------------------


def build_task_frame(
    task_cov: pl.DataFrame,
    tasks: pl.DataFrame,
    task_exposure: pl.DataFrame,
    occupation_wages: pl.DataFrame,
    workbank_tasks: pl.DataFrame,
) -> pl.DataFrame:
    """One row per task: coverage (n_prompts, covered_*), O*NET importance/is_core, exposure labels,
    the occupation's wage bill and employment, and WORKBank desire/capability/zone where rated."""
    if "benchmark" in task_cov.columns:
        raise ValueError(
            "build_task_frame needs the pooled task coverage (one row per task), not per benchmark"
        )
    base = task_cov.with_columns(pl.col("onet_soc_code").cast(pl.Utf8), pl.col("task_id").cast(pl.Int64))
    task_cols = [c for c in ("importance", "is_core", "task_type") if c in tasks.columns]
    task_info = tasks.select(
        pl.col("onet_soc_code").cast(pl.Utf8), pl.col("task_id").cast(pl.Int64), *task_cols
    ).unique(TASK_KEY)
    exposure_cols = [
        c
        for c in ("exposed", "gpt4_exposed", "human_exposure", "gpt4_exposure")
        if c in task_exposure.columns
    ]
    exposure = task_exposure.select(
        pl.col("onet_soc_code").cast(pl.Utf8), pl.col("task_id").cast(pl.Int64), *exposure_cols
    ).unique(TASK_KEY)
    wage_cols = [c for c in ("wage_bill", "employment", "annual_mean_wage") if c in occupation_wages.columns]
    wages = occupation_wages.select(
        pl.col("onet_soc_code").cast(pl.Utf8), *[pl.col(c).cast(pl.Float64) for c in wage_cols]
    ).unique("onet_soc_code")
    # WORKBank may rate a task more than once; average so the frame stays one row per task
    workbank = (
        workbank_tasks.select(
            pl.col("onet_soc_code").cast(pl.Utf8),
            pl.col("task_id").cast(pl.Int64),
            pl.col("desire_mean").cast(pl.Float64),
            pl.col("capability_mean").cast(pl.Float64),
            pl.col("zone").cast(pl.Utf8),
        )
        .group_by(TASK_KEY)
        .agg(
            pl.col("desire_mean").mean(),
            pl.col("capability_mean").mean(),
            pl.col("zone").drop_nulls().first(),
        )
        .with_columns(pl.lit(True).alias("in_workbank"))
    )
    frame = (
        base.join(task_info, on=TASK_KEY, how="left")
        .join(exposure, on=TASK_KEY, how="left")
        .join(wages, on="onet_soc_code", how="left")
        .join(workbank, on=TASK_KEY, how="left")
    )
    return frame.with_columns(
        pl.col("in_workbank").fill_null(False), major_group_of().alias("major_group_code")
    ).sort(TASK_KEY)


# --- model 1: exposure and wage bill ------------------------------------------------------------------------


def exposure_wage_model(
    task_df: pl.DataFrame,
    *,
    outcome: str = "covered_5",
    exposure_col: str = "exposed",
    cluster_col: str = "onet_soc_code",
    model: str = "exposure_wage",
    n_grid: int = 21,
    with_probabilities: bool = True,
) -> ModelTables:
    """Model 1: `covered_5 ~ exposed + log(wage_bill)`, SEs clustered by occupation.

    Adjusted probabilities on a log-spaced grid of wage bills ($0.5B-$50B) for exposed = 0/1, and the
    exposed/non-exposed probability ratio at the median occupation wage bill of the estimation sample
    (`with_probabilities=False`: no adjusted probabilities, `probabilities_skipped`).
    `exposure_col='gpt4_exposed'` swaps in the GPT-4 exposure labels (renamed to `exposed` in the formula).
    """
    formula = f"{outcome} ~ exposed + np.log(wage_bill)"
    sample = task_df.filter(
        pl.col(outcome).is_not_null() & pl.col(exposure_col).is_not_null() & (pl.col("wage_bill") > 0)
    ).select(
        as_binary(task_df, outcome).alias(outcome),
        as_binary(task_df, exposure_col).alias("exposed"),
        pl.col("wage_bill").cast(pl.Float64),
        pl.col(cluster_col),
    )
    sizes = {
        "n_tasks_input": task_df.height,
        "n_tasks_used": sample.height,
        "n_tasks_excluded_missing": task_df.height - sample.height,
        "n_occupations": sample[cluster_col].n_unique(),
    }
    note = f"exposure labels: {exposure_col}; tasks without exposure or wage bill excluded"
    problem = outcome_problem(sample, outcome, cluster_col) or (
        None if sample["exposed"].n_unique() == 2 else "exposure does not vary"
    )
    if problem:
        return not_estimated(model, formula, f"{note}. Not estimated: {problem}", sizes, sample.height)
    fit, note = safe_fit(sample, formula, cluster_col, model, note)
    if fit is None:
        return not_estimated(model, formula, note, sizes, sample.height)
    probabilities = probabilities_skipped()
    if with_probabilities:
        wage_grid = np.geomspace(*WAGE_GRID_RANGE, n_grid)
        grid = pl.DataFrame(
            {"exposed": np.repeat([0, 1], n_grid).astype(np.int8), "wage_bill": np.tile(wage_grid, 2)}
        )
        probabilities = adjusted_probabilities(fit, grid).with_columns(pl.lit(fit.note).alias("note"))
    median_wage_bill = float(
        sample.group_by(cluster_col).agg(pl.col("wage_bill").first())["wage_bill"].median()
    )
    contrasts = probability_ratio(
        fit,
        {"exposed": 1, "wage_bill": median_wage_bill},
        {"exposed": 0, "wage_bill": median_wage_bill},
        contrast=f"exposed vs not, at median wage bill {median_wage_bill:.4g}",
    )
    return ModelTables(tidy_coefficients(fit), probabilities, contrasts, sample_frame(model, sizes), fit)


# --- model 3: WORKBank worker desire and AI capability ------------------------------------------------------


def workbank_model(
    task_df: pl.DataFrame,
    *,
    outcome: str = "covered_5",
    cluster_col: str = "onet_soc_code",
    model: str = "workbank",
    n_grid: int = 9,
    with_probabilities: bool = True,
) -> ModelTables:
    """Model 3: `covered_5 ~ desire_mean + capability_mean` on WORKBank-rated tasks, clustered by occupation.

    Adjusted probabilities vary one rating over its observed range with the other at its sample mean
    (`varying` says which; none with `with_probabilities=False`).
    """
    formula = f"{outcome} ~ desire_mean + capability_mean"
    sample = task_df.filter(
        pl.col(outcome).is_not_null()
        & pl.col("desire_mean").is_not_null()
        & pl.col("capability_mean").is_not_null()
    ).select(
        as_binary(task_df, outcome).alias(outcome),
        pl.col("desire_mean").cast(pl.Float64),
        pl.col("capability_mean").cast(pl.Float64),
        pl.col(cluster_col),
    )
    sizes = {
        "n_tasks_input": task_df.height,
        "n_tasks_workbank": sample.height,
        "n_occupations": sample[cluster_col].n_unique(),
    }
    note = "WORKBank-rated tasks only"
    problem = outcome_problem(sample, outcome, cluster_col)
    if problem:
        return not_estimated(model, formula, f"{note}. Not estimated: {problem}", sizes, sample.height)
    fit, note = safe_fit(sample, formula, cluster_col, model, note)
    if fit is None:
        return not_estimated(model, formula, note, sizes, sample.height)
    means = {c: float(sample[c].mean()) for c in ("desire_mean", "capability_mean")}
    probabilities = _workbank_probabilities(fit, sample, means, n_grid) if with_probabilities else (
        probabilities_skipped())
    contrasts = pl.concat(
        [
            probability_ratio(
                fit,
                {**means, column: means[column] + 1.0},
                means,
                contrast=f"{column} +1 point from its mean (other rating at mean)",
            )
            for column in ("desire_mean", "capability_mean")
        ]
    )
    return ModelTables(tidy_coefficients(fit), probabilities, contrasts, sample_frame(model, sizes), fit)


def _workbank_probabilities(fit: LogitFit, sample: pl.DataFrame, means: dict[str, float], n_grid: int
                            ) -> pl.DataFrame:
    """Model 3's adjusted probabilities: each rating over its observed range, the other at its sample mean."""
    grids = []
    for varying, held in (("desire_mean", "capability_mean"), ("capability_mean", "desire_mean")):
        values = np.linspace(float(sample[varying].min()), float(sample[varying].max()), n_grid)
        grids.append(
            pl.DataFrame(
                {"varying": [varying] * n_grid, varying: values, held: [means[held]] * n_grid}
            ).select("varying", "desire_mean", "capability_mean")
        )
    grid = pl.concat(grids)
    return adjusted_probabilities(fit, grid.drop("varying")).with_columns(
        grid["varying"], pl.lit(fit.note).alias("note")
    )


def workbank_zone_coverage(
    task_df: pl.DataFrame, thresholds: tuple[int, ...] = (1, 5), model: str = "workbank_zone"
) -> pl.DataFrame:
    """Coverage share per WORKBank zone (tasks in WORKBank; unzoned ones as 'none') with Wilson 95% CIs.

    Columns: model, zone, threshold, n_tasks, n_covered, share, ci_low, ci_high.
    """
    rated = task_df.filter(
        pl.col("in_workbank") if "in_workbank" in task_df.columns else pl.col("desire_mean").is_not_null()
    )
    rated = rated.with_columns(pl.col("zone").fill_null("none"))
    frames = [
        rated.group_by("zone")
        .agg(
            pl.len().cast(pl.Int64).alias("n_tasks"),
            pl.col(f"covered_{t}").sum().cast(pl.Int64).alias("n_covered"),
        )
        .with_columns(pl.lit(t, dtype=pl.Int64).alias("threshold"))
        for t in thresholds
    ]
    schema = {"zone": pl.Utf8, "n_tasks": pl.Int64, "n_covered": pl.Int64, "threshold": pl.Int64}
    counts = pl.concat(frames) if frames else pl.DataFrame(schema=schema)
    out = with_wilson_ci(counts, "n_covered", "n_tasks").with_columns(pl.lit(model).alias("model"))
    return out.select(
        "model", "zone", "threshold", "n_tasks", "n_covered", "share", "ci_low", "ci_high"
    ).sort("threshold", "zone")


def run_coverage_models(task_df: pl.DataFrame, exposure_col: str = "exposed") -> dict[str, pl.DataFrame]:
    """All three models on one task frame: coefficients, adjusted_probabilities, contrasts, samples
    (each stacked across models) and workbank_zone_coverage."""
    tables = [
        exposure_wage_model(task_df, exposure_col=exposure_col),
        importance_fe_model(task_df, exposure_col=exposure_col),
        workbank_model(task_df),
    ]
    return {
        "coefficients": pl.concat([t.coefficients for t in tables], how="diagonal_relaxed"),
        "adjusted_probabilities": pl.concat([t.probabilities for t in tables], how="diagonal_relaxed"),
        "contrasts": pl.concat([t.contrasts for t in tables], how="diagonal_relaxed"),
        "samples": pl.concat([t.sample for t in tables], how="diagonal_relaxed"),
        "workbank_zone_coverage": workbank_zone_coverage(task_df),
    }


__all__ = [
    "COEFFICIENT_SCHEMA", "CONTRAST_SCHEMA", "TASK_KEY", "WAGE_GRID_RANGE", "LogitFit", "Margin", "ModelTables",
    "adjusted_probabilities", "build_task_frame", "exposure_wage_model", "fit_logit_clustered",
    "importance_fe_model", "importance_quintile", "not_estimated", "probability_ratio", "run_coverage_models",
    "tidy_coefficients", "workbank_model", "workbank_zone_coverage",
]
