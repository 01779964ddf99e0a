"""The logit machinery under the coverage models (models/regression.py): clustered-SE fits, tidy coefficient
tables, adjusted probabilities and probability ratios by the delta method, and the "not estimated" rows a model
returns when its data cannot identify it.

Intervals are built on the logit scale with the clustered covariance and mapped back, so they stay inside
[0, 1] and always contain the estimate; `se` is reported on the probability scale. The statsmodels results
stay inside `LogitFit`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import polars as pl

from models.fe_logit import FixedEffectsLogitFit
from models.stats import log_ratio_interval, logistic, z_value

if TYPE_CHECKING:
    import pandas as pd

# pandas, patsy and statsmodels are imported inside the functions that fit or predict: importing them with this
# module cost ~2 CPU-s of every Definitions build, i.e. of every warm `run_all` that skips every step (issue 29).

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


# the columns every adjusted-probability table has (each model adds its grid's columns after `margin`)
PROBABILITY_SCHEMA = {
    "model": pl.Utf8,
    "margin": pl.Utf8,
    "prob": pl.Float64,
    "se": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "note": pl.Utf8,
}


def probabilities_skipped() -> pl.DataFrame:
    """The probabilities of a model asked for its coefficients and contrasts only (no rows): the MI refits
    (models/regression_mi.py) combine those and would discard the grid, ~15% of a refit's time."""
    return pl.DataFrame(schema=PROBABILITY_SCHEMA)


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
        import patsy

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
    import pandas as pd
    import statsmodels.formula.api as smf
    from statsmodels.tools.sm_exceptions import (
        ConvergenceWarning,
        HessianInversionWarning,
        PerfectSeparationWarning,
    )

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


def _block_margin(design: np.ndarray, params: np.ndarray) -> Margin:
    """Mean predicted probability over the rows of `design` and d(mean)/d(beta) = mean of p(1-p) x."""
    probs = logistic(design @ params)
    gradient = ((probs * (1 - probs))[:, None] * design).mean(axis=0)
    return Margin(float(probs.mean()), gradient)


MAX_BATCH_CELLS = 4_000_000  # cap on one stacked counterfactual design (~32 MB of float64)


def _margins(fit: LogitFit, settings: list[dict[str, Any]], base: pd.DataFrame | None) -> list[Margin]:
    """The margin of each setting: at its pointwise profile, or averaged over `base` with the setting applied.

    patsy's cost is per call and per factor, hardly per row, and rebuilding one design per setting dominated
    the MI regressions (~1,300 builds); so the frames are stacked and built in one call (in chunks of at most
    MAX_BATCH_CELLS cells for average margins), then split. Each block's rows are the ones the per-setting
    build gave (the fitted design info fixes levels and transforms), so the margins are the same numbers.
    """
    if not settings:
        return []
    import pandas as pd

    params = fit.params  # a statsmodels Series converted on every access: once here
    if base is None:
        design = fit.design(pd.DataFrame(settings))
        return [_block_margin(design[i : i + 1], params) for i in range(len(settings))]
    n = len(base)
    per_chunk = max(1, MAX_BATCH_CELLS // max(n * params.size, 1))
    margins: list[Margin] = []
    for start in range(0, len(settings), per_chunk):
        chunk = settings[start : start + per_chunk]
        stacked = pd.concat([_counterfactual(base, setting) for setting in chunk], ignore_index=True)
        design = fit.design(stacked)
        margins += [_block_margin(design[i * n : (i + 1) * n], params) for i in range(len(chunk))]
    return margins


def _counterfactual(base: pd.DataFrame, setting: dict[str, Any]) -> pd.DataFrame:
    """`base` with the columns in `setting` overwritten for every row (for average predictive margins)."""
    frame = base.copy()
    for column, value in setting.items():
        frame[column] = value
    return frame


def interval_from_margin(margin: Margin, cov: np.ndarray, alpha: float) -> tuple[float, float, float]:
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
    for margin in _margins(fit, rows, base):
        se, low, high = interval_from_margin(margin, cov, alpha)
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
    margin_a, margin_b = _margins(fit, [setting_a, setting_b], base)
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


def sample_frame(model: str, items: dict[str, float | int | None]) -> pl.DataFrame:
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
        [{"model": model, "margin": None, "prob": None, "se": None, "ci_low": None, "ci_high": None, "note": note}],
        schema=PROBABILITY_SCHEMA,
    )
    contrasts = pl.DataFrame([{"model": model, "contrast": None, "note": note}], schema=CONTRAST_SCHEMA)
    return ModelTables(coefficients, probabilities, contrasts, sample_frame(model, sample or {"n": n}), None)


def as_binary(frame: pl.DataFrame, column: str) -> pl.Expr:
    return pl.col(column).cast(pl.Int8) if frame.schema[column] == pl.Boolean else pl.col(column)


def outcome_problem(
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


def safe_fit(
    sample: pl.DataFrame, formula: str, cluster_col: str, model: str, note: str, check_rank: bool = True
) -> tuple[LogitFit | None, str]:
    """Fit, turning numerical failures (singular Hessian, separation) into a note instead of a crash."""
    import patsy

    try:
        fit = fit_logit_clustered(sample, formula, cluster_col, model=model, note=note, check_rank=check_rank)
    except (np.linalg.LinAlgError, ValueError, patsy.PatsyError) as error:
        return None, f"{note} Could not be estimated: {type(error).__name__}: {error}".strip()
    if not np.all(np.isfinite(fit.params)) or not np.all(np.isfinite(np.diag(fit.cov))):
        return None, f"{note} Could not be estimated: non-finite coefficients or standard errors".strip()
    return fit, fit.note
