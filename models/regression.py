"""Which tasks do benchmarks cover? Logit models of task coverage with occupation-clustered errors.

Every public function takes polars frames and returns tidy polars frames carrying a `model` column. The fits,
tables, adjusted probabilities and ratios come from models/logit.py; this module holds the analysis frame
(`build_task_frame`) and the three models. The logit names it builds on are part of its API (`__all__`), so
`regression.fit_logit_clustered` and friends keep working.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from models.fe_logit import FixedEffectsLogitFit, fit_fe_logit
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
    interval_from_margin,
    not_estimated,
    outcome_problem,
    probability_ratio,
    safe_fit,
    sample_frame,
    tidy_coefficients,
)
from models.soc import major_group_of
from models.stats import log_ratio_interval, with_wilson_ci, z_value

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
) -> ModelTables:
    """Model 1: `covered_5 ~ exposed + log(wage_bill)`, SEs clustered by occupation.

    Adjusted probabilities on a log-spaced grid of wage bills ($0.5B-$50B) for exposed = 0/1, and the
    exposed/non-exposed probability ratio at the median occupation wage bill of the estimation sample.
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


# --- model 2: importance quintile with occupation fixed effects ---------------------------------------------


def importance_quintile(occupation_col: str = "onet_soc_code") -> pl.Expr:
    """Within-occupation importance quintile 1 (least) .. 5 (most important) by mid-rank percentile.

    Tied tasks share a quintile; an occupation with n rated tasks gets quintile floor(5 (rank - 0.5) / n) + 1,
    so an occupation with 5 distinct ratings has one task in each quintile.
    """
    n = pl.col("importance").count().over(occupation_col)
    mid_rank = pl.col("importance").rank("average").over(occupation_col)
    return (((mid_rank - 0.5) / n * 5).floor() + 1).clip(1, 5).cast(pl.Int64)


def importance_fe_model(
    task_df: pl.DataFrame,
    *,
    outcome: str = "covered_5",
    exposure_col: str = "exposed",
    occupation_col: str = "onet_soc_code",
    model: str = "importance_fe",
    min_occupations: int = 2,
    include_fixed_effects: bool = False,
    alpha: float = 0.05,
) -> ModelTables:
    """Model 2: `covered_5 ~ exposed + C(importance_quintile) + C(occupation)`, clustered by occupation.

    Run on every task with an O*NET importance rating (17,639 with the full ratings; the unrated are
    excluded and counted). Importance quintiles are within occupation (`importance_quintile`); exposure is
    the Eloundou et al. human label (E1/E2 = exposed). Occupations whose tasks are all covered or all
    uncovered carry no within-occupation information and would make their fixed effect run off to
    +-infinity, so they are dropped explicitly and counted. The logit is the unconditional fixed-effects
    logit (occupation intercepts as parameters), fitted by `models.fe_logit` (the same estimate and
    clustered covariance as statsmodels with dummies, in milliseconds instead of tens of seconds).

    Adjusted probabilities per quintile x exposure are average predictive margins over the kept tasks (each
    keeps its own occupation effect) with delta-method 95% CIs (logit scale, clustered covariance).
    Contrasts: top vs bottom quintile (exposure as observed) and exposed vs not (quintile as observed),
    ratios of average margins with log-scale delta-method CIs.
    """
    formula_full = f"{outcome} ~ exposed + C(importance_quintile) + C(occupation)"
    kept, sizes, note = _importance_sample(task_df, outcome, exposure_col, occupation_col)
    problem = outcome_problem(kept, outcome, "occupation", min_clusters=min_occupations)
    if problem is None and kept["importance_quintile"].n_unique() < 2:
        problem = "importance quintile does not vary"
    if problem:
        return not_estimated(
            model,
            formula_full,
            f"{note}. Not estimated: {problem}",
            sizes,
            kept.height,
            kept["occupation"].n_unique(),
        )
    # exposure is only identified from variation within occupations; without it the term is collinear
    exposure_varies = kept.group_by("occupation").agg(pl.col("exposed").n_unique() > 1)["exposed"].any()
    formula = formula_full if exposure_varies else f"{outcome} ~ C(importance_quintile) + C(occupation)"
    if not exposure_varies:
        note += "; exposure dropped (no within-occupation variation)"
    quintiles = sorted(kept["importance_quintile"].unique().to_list())
    terms = (["exposed"] if exposure_varies else []) + [f"C(importance_quintile)[T.{q}]" for q in quintiles[1:]]
    design = _ImportanceDesign(kept, quintiles, exposure_varies)
    labels, codes = np.unique(kept["occupation"].to_numpy(), return_inverse=True)
    try:
        fit = fit_fe_logit(
            kept[outcome].to_numpy().astype(float),
            design(),
            codes,
            terms=terms,
            group_labels=[str(label) for label in labels],
            model=model,
        )
    except (np.linalg.LinAlgError, ValueError) as error:
        note = f"{note} Could not be estimated: {type(error).__name__}: {error}"
        return not_estimated(model, formula, note, sizes, kept.height, kept["occupation"].n_unique())
    if not fit.converged:
        note = f"{note} Did not converge in {fit.iterations} iterations."
    if not np.all(np.isfinite(fit.beta)) or not np.all(np.isfinite(np.diag(fit.cov_beta))):
        note = f"{note} Could not be estimated: non-finite coefficients or standard errors"
        return not_estimated(model, formula, note, sizes, kept.height, kept["occupation"].n_unique())
    fit.note = note
    coefficients = _fe_coefficients(fit, formula, alpha, include_fixed_effects)
    probabilities = _importance_probabilities(fit, design, model, note, alpha)
    contrasts = _importance_contrasts(fit, design, alpha)
    return ModelTables(coefficients, probabilities, contrasts, sample_frame(model, sizes), fit)


def _importance_sample(task_df: pl.DataFrame, outcome: str, exposure_col: str, occupation_col: str
                       ) -> tuple[pl.DataFrame, dict[str, int], str]:
    """(the tasks model 2 is fitted on, the sample sizes, the note saying what was excluded): rated tasks
    with outcome and exposure, less the occupations whose tasks do not vary in the outcome."""
    n_input = task_df.height
    rated = task_df.filter(
        pl.col("importance").is_not_null()
        & pl.col(outcome).is_not_null()
        & pl.col(exposure_col).is_not_null()
    )
    n_no_importance = int(task_df["importance"].is_null().sum())
    frame = rated.select(
        as_binary(task_df, outcome).alias(outcome),
        as_binary(task_df, exposure_col).alias("exposed"),
        pl.col("importance").cast(pl.Float64),
        pl.col(occupation_col).alias("occupation"),
    )
    frame = frame.with_columns(importance_quintile("occupation").alias("importance_quintile"))
    varies = pl.col(outcome).n_unique().over("occupation") > 1
    kept = frame.filter(varies).sort("occupation", maintain_order=True)
    dropped = frame.filter(~varies)
    sizes = {
        "n_tasks_input": n_input,
        "n_tasks_without_importance": n_no_importance,
        "n_tasks_missing_outcome_or_exposure": n_input - n_no_importance - rated.height,
        "n_tasks_rated": rated.height,
        "n_occupations_rated": frame["occupation"].n_unique(),
        "n_occupations_dropped_no_variation": dropped["occupation"].n_unique(),
        "n_tasks_dropped_no_variation": dropped.height,
        "n_occupations_kept": kept["occupation"].n_unique(),
        "n_tasks_kept": kept.height,
    }
    missing = sizes["n_tasks_missing_outcome_or_exposure"]
    note = (
        f"estimated on the {rated.height} of {n_input} tasks with an O*NET importance rating "
        f"({n_no_importance} without importance excluded"
        + (f", {missing} rated but without exposure labels or outcome excluded" if missing else "")
        + f"); dropped {sizes['n_occupations_dropped_no_variation']} occupations ({dropped.height} tasks) "
        f"with no variation in {outcome}"
    )
    return kept, sizes, note


class _ImportanceDesign:
    """The slope design of model 2's kept tasks; called with exposure and/or the quintile set for every task
    (the counterfactual designs of the margins), or with neither (the observed design the fit uses)."""

    def __init__(self, kept: pl.DataFrame, quintiles: list[int], exposure_varies: bool) -> None:
        self.n = kept.height
        self.quintiles = quintiles
        self.exposure_varies = exposure_varies
        self.observed_exposure = kept["exposed"].cast(pl.Float64).to_numpy()
        self.observed_quintile = kept["importance_quintile"].to_numpy()

    def __call__(self, exposed: float | None = None, quintile: int | None = None) -> np.ndarray:
        columns = []
        if self.exposure_varies:
            columns.append(self.observed_exposure if exposed is None else np.full(self.n, float(exposed)))
        q = self.observed_quintile if quintile is None else np.full(self.n, quintile)
        columns += [(q == level).astype(float) for level in self.quintiles[1:]]
        return np.column_stack(columns)


def _importance_probabilities(fit: FixedEffectsLogitFit, design: _ImportanceDesign, model: str, note: str,
                              alpha: float) -> pl.DataFrame:
    """Average predictive margins per quintile (x exposure, when it varies) with delta-method CIs."""
    exposure_varies = design.exposure_varies
    grid_rows = [(q, e) for q in design.quintiles for e in ([0, 1] if exposure_varies else [None])]
    estimates = []
    for q, e in grid_rows:
        prob, gradient = fit.average_margin(design(exposed=e, quintile=q))
        se, low, high = interval_from_margin(Margin(prob, gradient), fit.cov_beta, alpha)
        estimates.append({"prob": prob, "se": se, "ci_low": low, "ci_high": high})
    grid = pl.DataFrame(
        {"importance_quintile": [q for q, _ in grid_rows]}
        | ({"exposed": [e for _, e in grid_rows]} if exposure_varies else {}),
        schema={"importance_quintile": pl.Int64} | ({"exposed": pl.Int8} if exposure_varies else {}),
    )
    return pl.concat(
        [
            pl.DataFrame({"model": [model] * grid.height, "margin": ["average"] * grid.height}),
            grid,
            pl.DataFrame(
                estimates,
                schema={"prob": pl.Float64, "se": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64},
            ),
        ],
        how="horizontal",
    ).with_columns(pl.lit(note).alias("note"))


def _importance_contrasts(fit: FixedEffectsLogitFit, design: _ImportanceDesign, alpha: float) -> pl.DataFrame:
    """Top vs bottom quintile (exposure as observed) and, when exposure varies, exposed vs not."""
    quintiles = design.quintiles
    comparisons = [
        (
            f"importance quintile {quintiles[-1]} vs {quintiles[0]} (exposure as observed)",
            design(quintile=quintiles[-1]),
            design(quintile=quintiles[0]),
        )
    ]
    if design.exposure_varies:
        comparisons.append(
            (
                "exposed vs not, within occupations (importance quintile as observed)",
                design(exposed=1),
                design(exposed=0),
            )
        )
    return pl.concat(
        [_fe_ratio(fit, label, design_a, design_b, alpha) for label, design_a, design_b in comparisons]
    )


def _fe_coefficients(
    fit: FixedEffectsLogitFit, formula: str, alpha: float, include_fixed_effects: bool
) -> pl.DataFrame:
    """Coefficient rows named as statsmodels names them for the dummy-variable formula: Intercept (the
    first occupation's effect), the slopes and, with `include_fixed_effects`, C(occupation)[T.<code>]
    (each occupation's effect minus the first's)."""
    z = z_value(alpha)
    rows = [("Intercept", float(fit.alpha[0]), fit.alpha_se(0))]
    rows += [
        (term, float(fit.beta[j]), float(math.sqrt(max(fit.cov_beta[j, j], 0.0))))
        for j, term in enumerate(fit.terms)
    ]
    if include_fixed_effects:
        rows += [
            (f"C(occupation)[T.{label}]", float(fit.alpha[g] - fit.alpha[0]), fit.alpha_se(g, reference=0))
            for g, label in enumerate(fit.group_labels)
            if g > 0
        ]
    out = []
    for term, coef, se in rows:
        stat = coef / se if se > 0 else float("nan")
        out.append(
            {
                "model": fit.model,
                "term": term,
                "coef": coef,
                "se": se,
                "z": stat,
                "p": float(math.erfc(abs(stat) / math.sqrt(2))) if math.isfinite(stat) else float("nan"),
                "ci_low": coef - z * se,
                "ci_high": coef + z * se,
                "n": fit.n,
                "n_clusters": fit.n_clusters,
                "cov_type": fit.cov_type,
                "formula": formula,
                "converged": fit.converged,
                "note": fit.note,
            }
        )
    return pl.DataFrame(out, schema=COEFFICIENT_SCHEMA)


def _fe_ratio(
    fit: FixedEffectsLogitFit, label: str, design_a: np.ndarray, design_b: np.ndarray, alpha: float
) -> pl.DataFrame:
    """Ratio of two average margins with a log-scale delta-method CI (one row, CONTRAST_SCHEMA)."""
    prob_a, grad_a = fit.average_margin(design_a)
    prob_b, grad_b = fit.average_margin(design_b)
    if not (prob_a > 0 and prob_b > 0):  # a degenerate fit (a tiny or outcome-free sample): no ratio
        ratio = low = high = se_log = float("nan")
    else:
        gradient = grad_a / prob_a - grad_b / prob_b  # d log(p_a / p_b) / d theta, reduced
        se_log = float(math.sqrt(max(gradient @ fit.cov_beta @ gradient, 0.0)))
        ratio, low, high = log_ratio_interval(math.log(prob_a / prob_b), se_log, alpha)
    return pl.DataFrame(
        [
            {
                "model": fit.model,
                "contrast": label,
                "prob_a": prob_a,
                "prob_b": prob_b,
                "ratio": ratio,
                "se_log_ratio": se_log,
                "ci_low": low,
                "ci_high": high,
                "margin": "average",
                "note": fit.note,
            }
        ],
        schema=CONTRAST_SCHEMA,
    )


# --- model 3: WORKBank worker desire and AI capability ------------------------------------------------------


def workbank_model(
    task_df: pl.DataFrame,
    *,
    outcome: str = "covered_5",
    cluster_col: str = "onet_soc_code",
    model: str = "workbank",
    n_grid: int = 9,
) -> ModelTables:
    """Model 3: `covered_5 ~ desire_mean + capability_mean` on WORKBank-rated tasks, clustered by occupation.

    Adjusted probabilities vary one rating over its observed range with the other at its sample mean
    (`varying` says which).
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
    grids = []
    for varying, held in (("desire_mean", "capability_mean"), ("capability_mean", "desire_mean")):
        values = np.linspace(float(sample[varying].min()), float(sample[varying].max()), n_grid)
        grids.append(
            pl.DataFrame(
                {"varying": [varying] * n_grid, varying: values, held: [means[held]] * n_grid}
            ).select("varying", "desire_mean", "capability_mean")
        )
    grid = pl.concat(grids)
    probabilities = adjusted_probabilities(fit, grid.drop("varying")).with_columns(
        grid["varying"], pl.lit(fit.note).alias("note")
    )
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
