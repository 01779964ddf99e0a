"""Model 2 of the coverage models (models/regression.py): task coverage on within-occupation importance
quintile and exposure, with occupation fixed effects (the unconditional fixed-effects logit of models/fe_logit.py),
its average predictive margins and ratios. Its own module because the fixed-effects machinery (design,
margins, statsmodels-style coefficient names) is half of the regressions' code and shares nothing with the
other two models beyond models/logit.py.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from models.fe_logit import FixedEffectsLogitFit, fit_fe_logit
from models.logit import (
    COEFFICIENT_SCHEMA,
    CONTRAST_SCHEMA,
    Margin,
    ModelTables,
    as_binary,
    interval_from_margin,
    not_estimated,
    outcome_problem,
    probabilities_skipped,
    sample_frame,
)
from models.stats import log_ratio_interval, z_value


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
    with_probabilities: bool = True,
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
    keeps its own occupation effect) with delta-method 95% CIs (logit scale, clustered covariance); none with
    `with_probabilities=False`. Contrasts: top vs bottom quintile (exposure as observed) and exposed vs not
    (quintile as observed), ratios of average margins with log-scale delta-method CIs.
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
    probabilities = (_importance_probabilities(fit, design, model, note, alpha) if with_probabilities
                     else probabilities_skipped())
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
