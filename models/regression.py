"""Which tasks do benchmarks cover? Logit models of task coverage with occupation-clustered errors.

Every public function takes polars frames and returns tidy polars frames carrying a `model` column; the
statsmodels results stay inside `LogitFit`. Adjusted probabilities use the delta method with the clustered
covariance: intervals are built on the logit scale and mapped back, so they stay inside [0, 1] and always
contain the estimate; `se` is reported on the probability scale.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import patsy
import polars as pl
import statsmodels.formula.api as smf
from statsmodels.tools.sm_exceptions import (
    ConvergenceWarning,
    HessianInversionWarning,
    PerfectSeparationWarning,
)

from models.fe_logit import FixedEffectsLogitFit, fit_fe_logit
from models.soc import major_group_of
from models.stats import log_ratio_interval, logistic, with_wilson_ci, z_value

TASK_KEY = ["onet_soc_code", "task_id"]
WAGE_GRID_RANGE = (0.5e9, 50e9)  # adjusted-probability grid for model 1, in dollars of annual wage bill

COEFFICIENT_SCHEMA = {
    "model": pl.Utf8,
    "term": pl.Utf8,
    "coef": pl.Float64,
    "se": pl.Float64,
    "z": pl.Float64,
    "p": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n": pl.Int64,
    "n_clusters": pl.Int64,
    "cov_type": pl.Utf8,
    "formula": pl.Utf8,
    "converged": pl.Boolean,
    "note": pl.Utf8,
}
CONTRAST_SCHEMA = {
    "model": pl.Utf8,
    "contrast": pl.Utf8,
    "prob_a": pl.Float64,
    "prob_b": pl.Float64,
    "ratio": pl.Float64,
    "se_log_ratio": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "margin": pl.Utf8,
    "note": pl.Utf8,
}


@dataclass
class LogitFit:
    """A fitted logit: the statsmodels result plus what the tidy tables need to describe it."""

    model: str
    formula: str
    result: Any  # statsmodels BinaryResultsWrapper
    data: pd.DataFrame  # the estimation sample (rows the model actually used)
    cluster_col: str | None
    cov_type: str
    n: int
    n_clusters: int | None
    converged: bool
    note: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def params(self) -> np.ndarray:
        return np.asarray(self.result.params, dtype=float)

    @property
    def cov(self) -> np.ndarray:
        return np.asarray(self.result.cov_params(), dtype=float)

    def design(self, frame: pl.DataFrame | pd.DataFrame) -> np.ndarray:
        """Design matrix of new rows, built with the fitted formula's encoding (levels, transforms)."""
        data = _to_pandas(frame) if isinstance(frame, pl.DataFrame) else frame
        model_data = self.result.model.data
        # statsmodels >= 0.15 calls the RHS design info `model_spec`; older versions `design_info`
        spec = getattr(model_data, "model_spec", None) or model_data.design_info
        (matrix,) = patsy.build_design_matrices([spec], data, NA_action="raise")
        return np.asarray(matrix, dtype=float)


class ModelTables(NamedTuple):
    """What each coverage model returns; every frame has a `model` column."""

    coefficients: pl.DataFrame
    probabilities: pl.DataFrame
    contrasts: pl.DataFrame
    sample: pl.DataFrame  # model, item, value: sample sizes and exclusions
    fit: LogitFit | FixedEffectsLogitFit | None

    def summary(self) -> dict[str, Any]:
        """JSON-ready regression summary: formula, n, clusters, covariance, coefficients, probabilities."""
        first = self.coefficients.row(0, named=True) if self.coefficients.height else {}
        return {
            "model": first.get("model"),
            "formula": first.get("formula"),
            "n": first.get("n"),
            "n_clusters": first.get("n_clusters"),
            "cov_type": first.get("cov_type"),
            "note": first.get("note"),
            "coefficients": self.coefficients.to_dicts(),
            "adjusted_probabilities": self.probabilities.to_dicts(),
            "contrasts": self.contrasts.to_dicts(),
            "sample": self.sample.to_dicts(),
        }


def _to_pandas(frame: pl.DataFrame) -> pd.DataFrame:
    """pandas copy with booleans as 0/1 so patsy treats them as numbers, not two-level factors."""
    bool_cols = [c for c, dtype in frame.schema.items() if dtype == pl.Boolean]
    return frame.with_columns([pl.col(c).cast(pl.Int8) for c in bool_cols]).to_pandas()


def fit_logit_clustered(
    df: pl.DataFrame,
    formula: str,
    cluster_col: str | None,
    *,
    model: str = "logit",
    cov_type: str = "cluster",
    maxiter: int = 100,
    note: str = "",
    check_rank: bool = True,
) -> LogitFit:
    """Logit of `formula` on `df` with standard errors clustered by `cluster_col`.

    Rows with missing values in formula variables are dropped (patsy) and the cluster ids are aligned to the
    rows kept. `cov_type='nonrobust'` gives the naive ML standard errors (for comparisons). The cluster
    covariance is statsmodels' CRV1 with its default small-sample correction. Separation and convergence
    warnings are appended to the note. `check_rank=False` skips statsmodels' QR rank check, which dominates
    the run time with hundreds of fixed-effect columns.
    """
    data = _to_pandas(df)
    logit_model = smf.logit(formula, data=data, check_rank=check_rank)
    used = data.loc[logit_model.data.row_labels]
    fit_kwargs: dict[str, Any] = {"disp": 0, "maxiter": maxiter}
    n_clusters = None
    if cov_type == "cluster":
        if cluster_col is None:
            raise ValueError("cov_type='cluster' needs a cluster_col")
        cluster_ids, uniques = pd.factorize(used[cluster_col])
        if (cluster_ids < 0).any():
            raise ValueError(f"cluster column {cluster_col!r} has missing values in the estimation sample")
        n_clusters = len(uniques)
        fit_kwargs |= {"cov_type": "cluster", "cov_kwds": {"groups": cluster_ids}}
    elif cov_type != "nonrobust":
        fit_kwargs["cov_type"] = cov_type
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = logit_model.fit(**fit_kwargs)
    converged = bool(result.mle_retvals.get("converged", True))
    messages = sorted(
        {
            str(w.message).splitlines()[0]
            for w in caught
            if issubclass(w.category, (ConvergenceWarning, RuntimeWarning, UserWarning))
        }
    )
    model_problems = [
        str(w.message).splitlines()[0]
        for w in caught
        if issubclass(w.category, (PerfectSeparationWarning, HessianInversionWarning))
    ]
    if model_problems:
        note = f"{note} statsmodels warned: {'; '.join(sorted(set(model_problems)))}".strip()
    if not converged:
        note = f"{note} Did not converge in {maxiter} iterations.".strip()
    return LogitFit(
        model=model,
        formula=formula,
        result=result,
        data=used,
        cluster_col=cluster_col,
        cov_type=cov_type,
        n=int(result.nobs),
        n_clusters=n_clusters,
        converged=converged,
        note=note,
        warnings=messages,
    )


def tidy_coefficients(
    fit: LogitFit, alpha: float = 0.05, drop_prefixes: tuple[str, ...] = ()
) -> pl.DataFrame:
    """One row per coefficient: model, term, coef, se, z, p, ci_low, ci_high, n, n_clusters, cov_type,
    formula, converged, note. Terms starting with any of `drop_prefixes` (e.g. fixed effects) are left out."""
    result = fit.result
    intervals = np.asarray(result.conf_int(alpha=alpha), dtype=float)
    rows = [
        {
            "model": fit.model,
            "term": term,
            "coef": float(result.params.iloc[i]),
            "se": float(result.bse.iloc[i]),
            "z": float(result.tvalues.iloc[i]),
            "p": float(result.pvalues.iloc[i]),
            "ci_low": float(intervals[i, 0]),
            "ci_high": float(intervals[i, 1]),
            "n": fit.n,
            "n_clusters": fit.n_clusters,
            "cov_type": fit.cov_type,
            "formula": fit.formula,
            "converged": fit.converged,
            "note": fit.note,
        }
        for i, term in enumerate(result.params.index)
        if not str(term).startswith(drop_prefixes)
    ]
    return pl.DataFrame(rows, schema=COEFFICIENT_SCHEMA)


@dataclass(frozen=True)
class Margin:
    """A (possibly averaged) predicted probability and its gradient with respect to the coefficients."""

    prob: float
    gradient: np.ndarray


def _margin(fit: LogitFit, rows: pl.DataFrame | pd.DataFrame) -> Margin:
    """Mean predicted probability over `rows` and d(mean)/d(beta) = mean of p(1-p) x (logistic link)."""
    design = fit.design(rows)
    probs = logistic(design @ fit.params)
    gradient = ((probs * (1 - probs))[:, None] * design).mean(axis=0)
    return Margin(float(probs.mean()), gradient)


def _counterfactual(base: pd.DataFrame, setting: dict[str, Any]) -> pd.DataFrame:
    """`base` with the columns in `setting` overwritten for every row (for average predictive margins)."""
    frame = base.copy()
    for column, value in setting.items():
        frame[column] = value
    return frame


def _interval_from_margin(margin: Margin, cov: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """se on the probability scale and a logit-scale delta-method interval mapped back to [0, 1]."""
    se = float(math.sqrt(max(margin.gradient @ cov @ margin.gradient, 0.0)))
    p = margin.prob
    if not 0 < p < 1:
        return se, p, p
    z = z_value(alpha)
    logit_p = math.log(p / (1 - p))
    se_logit = se / (p * (1 - p))  # d logit(p) / dp = 1 / (p (1 - p))
    return (
        se,
        float(logistic(np.array(logit_p - z * se_logit))),
        float(logistic(np.array(logit_p + z * se_logit))),
    )


def _grid_rows(grid: pl.DataFrame) -> list[dict[str, Any]]:
    bool_cols = [c for c, dtype in grid.schema.items() if dtype == pl.Boolean]
    return grid.with_columns([pl.col(c).cast(pl.Int8) for c in bool_cols]).to_dicts()


def adjusted_probabilities(
    fit: LogitFit, grid: pl.DataFrame, *, average_over: pl.DataFrame | None = None, alpha: float = 0.05
) -> pl.DataFrame:
    """Predicted probability at each row of `grid` with a delta-method interval (clustered covariance).

    Without `average_over` each grid row is a full covariate profile (pointwise prediction). With
    `average_over` (a frame of observations, typically the estimation sample) the grid columns are set on
    every one of those rows and the predictions averaged: an average predictive margin, which is how
    occupation fixed effects are integrated out. Returns grid columns + model, margin, prob,
    se, ci_low, ci_high.
    """
    cov = fit.cov
    rows = _grid_rows(grid)
    base = _to_pandas(average_over) if average_over is not None else None
    results = []
    for setting in rows:
        frame = _counterfactual(base, setting) if base is not None else pd.DataFrame([setting])
        margin = _margin(fit, frame)
        se, low, high = _interval_from_margin(margin, cov, alpha)
        results.append({"prob": margin.prob, "se": se, "ci_low": low, "ci_high": high})
    estimates = pl.DataFrame(
        results, schema={"prob": pl.Float64, "se": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64}
    )
    return pl.concat(
        [
            pl.DataFrame(
                {
                    "model": [fit.model] * grid.height,
                    "margin": ["average" if base is not None else "pointwise"] * grid.height,
                }
            ),
            grid,
            estimates,
        ],
        how="horizontal",
    )


def _as_setting(row: pl.DataFrame | dict[str, Any]) -> dict[str, Any]:
    if isinstance(row, pl.DataFrame):
        if row.height != 1:
            raise ValueError(f"expected a one-row frame, got {row.height} rows")
        return _grid_rows(row)[0]
    return {k: int(v) if isinstance(v, bool) else v for k, v in row.items()}


def probability_ratio(
    fit: LogitFit,
    row_a: pl.DataFrame | dict[str, Any],
    row_b: pl.DataFrame | dict[str, Any],
    *,
    average_over: pl.DataFrame | None = None,
    contrast: str | None = None,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """P(a) / P(b) with a delta-method interval on the log scale (one-row frame, CONTRAST_SCHEMA).

    Rows are covariate profiles (dict or one-row frame); with `average_over` they are partial settings
    applied to every row of that frame, comparing average predictive margins.
    """
    setting_a, setting_b = _as_setting(row_a), _as_setting(row_b)
    base = _to_pandas(average_over) if average_over is not None else None

    def margin(setting: dict[str, Any]) -> Margin:
        return _margin(fit, _counterfactual(base, setting) if base is not None else pd.DataFrame([setting]))

    margin_a, margin_b = margin(setting_a), margin(setting_b)
    # d log(p) / d beta = gradient / p
    gradient = margin_a.gradient / margin_a.prob - margin_b.gradient / margin_b.prob
    se_log = float(math.sqrt(max(gradient @ fit.cov @ gradient, 0.0)))
    ratio, low, high = log_ratio_interval(math.log(margin_a.prob / margin_b.prob), se_log, alpha)
    label = contrast or f"{setting_a} vs {setting_b}"
    return pl.DataFrame(
        [
            {
                "model": fit.model,
                "contrast": label,
                "prob_a": margin_a.prob,
                "prob_b": margin_b.prob,
                "ratio": ratio,
                "se_log_ratio": se_log,
                "ci_low": low,
                "ci_high": high,
                "margin": "average" if base is not None else "pointwise",
                "note": fit.note,
            }
        ],
        schema=CONTRAST_SCHEMA,
    )


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


# --- helpers shared by the three models -------------------------------------------------------------------


def _sample_frame(model: str, items: dict[str, float | int | None]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "model": [model] * len(items),
            "item": list(items),
            "value": [None if v is None else float(v) for v in items.values()],
        },
        schema={"model": pl.Utf8, "item": pl.Utf8, "value": pl.Float64},
    )


def not_estimated(
    model: str,
    formula: str,
    note: str,
    sample: dict[str, float | int | None] | None = None,
    n: int = 0,
    n_clusters: int = 0,
) -> ModelTables:
    """Tables for a model that could not be estimated: one row each, saying why in `note`."""
    coefficients = pl.DataFrame(
        [
            {
                "model": model,
                "term": None,
                "coef": None,
                "se": None,
                "z": None,
                "p": None,
                "ci_low": None,
                "ci_high": None,
                "n": n,
                "n_clusters": n_clusters,
                "cov_type": "cluster",
                "formula": formula,
                "converged": False,
                "note": note,
            }
        ],
        schema=COEFFICIENT_SCHEMA,
    )
    probabilities = pl.DataFrame(
        [
            {
                "model": model,
                "margin": None,
                "prob": None,
                "se": None,
                "ci_low": None,
                "ci_high": None,
                "note": note,
            }
        ],
        schema={
            "model": pl.Utf8,
            "margin": pl.Utf8,
            "prob": pl.Float64,
            "se": pl.Float64,
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
            "note": pl.Utf8,
        },
    )
    contrasts = pl.DataFrame([{"model": model, "contrast": None, "note": note}], schema=CONTRAST_SCHEMA)
    return ModelTables(coefficients, probabilities, contrasts, _sample_frame(model, sample or {"n": n}), None)


def _binary(frame: pl.DataFrame, column: str) -> pl.Expr:
    return pl.col(column).cast(pl.Int8) if frame.schema[column] == pl.Boolean else pl.col(column)


def _outcome_problem(
    sample: pl.DataFrame, outcome: str, cluster_col: str, min_clusters: int = 2
) -> str | None:
    """Why a logit cannot be fitted on `sample`, or None."""
    if sample.height == 0:
        return "no observations"
    if sample[outcome].n_unique() < 2:
        return f"{outcome} does not vary (all {sample[outcome][0]})"
    if sample[cluster_col].n_unique() < min_clusters:
        return f"only {sample[cluster_col].n_unique()} occupation cluster(s)"
    return None


def _safe_fit(
    sample: pl.DataFrame, formula: str, cluster_col: str, model: str, note: str, check_rank: bool = True
) -> tuple[LogitFit | None, str]:
    """Fit, turning numerical failures (singular Hessian, separation) into a note instead of a crash."""
    try:
        fit = fit_logit_clustered(sample, formula, cluster_col, model=model, note=note, check_rank=check_rank)
    except (np.linalg.LinAlgError, ValueError, patsy.PatsyError) as error:
        return None, f"{note} Could not be estimated: {type(error).__name__}: {error}".strip()
    if not np.all(np.isfinite(fit.params)) or not np.all(np.isfinite(np.diag(fit.cov))):
        return None, f"{note} Could not be estimated: non-finite coefficients or standard errors".strip()
    return fit, fit.note


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
        _binary(task_df, outcome).alias(outcome),
        _binary(task_df, exposure_col).alias("exposed"),
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
    problem = _outcome_problem(sample, outcome, cluster_col) or (
        None if sample["exposed"].n_unique() == 2 else "exposure does not vary"
    )
    if problem:
        return not_estimated(model, formula, f"{note}. Not estimated: {problem}", sizes, sample.height)
    fit, note = _safe_fit(sample, formula, cluster_col, model, note)
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
    return ModelTables(tidy_coefficients(fit), probabilities, contrasts, _sample_frame(model, sizes), fit)


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
    n_input = task_df.height
    rated = task_df.filter(
        pl.col("importance").is_not_null()
        & pl.col(outcome).is_not_null()
        & pl.col(exposure_col).is_not_null()
    )
    n_no_importance = int(task_df["importance"].is_null().sum())
    frame = rated.select(
        _binary(task_df, outcome).alias(outcome),
        _binary(task_df, exposure_col).alias("exposed"),
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
    problem = _outcome_problem(kept, outcome, "occupation", min_clusters=min_occupations)
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
    observed_exposure = kept["exposed"].cast(pl.Float64).to_numpy()
    observed_quintile = kept["importance_quintile"].to_numpy()

    def design(exposed: float | None = None, quintile: int | None = None) -> np.ndarray:
        """Slope design of the kept tasks, with exposure and/or the quintile set for every task."""
        n = kept.height
        columns = []
        if exposure_varies:
            columns.append(observed_exposure if exposed is None else np.full(n, float(exposed)))
        q = observed_quintile if quintile is None else np.full(n, quintile)
        columns += [(q == level).astype(float) for level in quintiles[1:]]
        return np.column_stack(columns)

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
    grid_rows = [(q, e) for q in quintiles for e in ([0, 1] if exposure_varies else [None])]
    estimates = []
    for q, e in grid_rows:
        prob, gradient = fit.average_margin(design(exposed=e, quintile=q))
        se, low, high = _interval_from_margin(Margin(prob, gradient), fit.cov_beta, alpha)
        estimates.append({"prob": prob, "se": se, "ci_low": low, "ci_high": high})
    grid = pl.DataFrame(
        {"importance_quintile": [q for q, _ in grid_rows]}
        | ({"exposed": [e for _, e in grid_rows]} if exposure_varies else {}),
        schema={"importance_quintile": pl.Int64} | ({"exposed": pl.Int8} if exposure_varies else {}),
    )
    probabilities = pl.concat(
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
    comparisons = [
        (
            f"importance quintile {quintiles[-1]} vs {quintiles[0]} (exposure as observed)",
            design(quintile=quintiles[-1]),
            design(quintile=quintiles[0]),
        )
    ]
    if exposure_varies:
        comparisons.append(
            (
                "exposed vs not, within occupations (importance quintile as observed)",
                design(exposed=1),
                design(exposed=0),
            )
        )
    contrasts = pl.concat(
        [_fe_ratio(fit, label, design_a, design_b, alpha) for label, design_a, design_b in comparisons]
    )
    return ModelTables(coefficients, probabilities, contrasts, _sample_frame(model, sizes), fit)


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
        _binary(task_df, outcome).alias(outcome),
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
    problem = _outcome_problem(sample, outcome, cluster_col)
    if problem:
        return not_estimated(model, formula, f"{note}. Not estimated: {problem}", sizes, sample.height)
    fit, note = _safe_fit(sample, formula, cluster_col, model, note)
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
    return ModelTables(tidy_coefficients(fit), probabilities, contrasts, _sample_frame(model, sizes), fit)


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
