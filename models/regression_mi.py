"""The coverage logits with labeler error (issue 16): refitted on each model-assisted draw of the label set and
combined with Rubin's rules. Pure: the draws come in as count vectors (models/estimates/count_draws.py)."""

from __future__ import annotations

import numpy as np
import polars as pl

from models import coverage as cov
from models import regression as reg
from models.estimates.checks import rubin_combine

Fits = dict[tuple[str, str, str], list[tuple[float, float]]]  # (model, kind, term) -> per draw (estimate, variance)


def regressions_mi(task_frame: pl.DataFrame, task_keys: pl.DataFrame, count_draws: list[np.ndarray],
                   source: str) -> pl.DataFrame:
    """The coverage logits refitted on each draw's covered_5 (tasks >= 5 prompts in that completed label set),
    combined with Rubin's rules; coefficients and (log) probability ratios. `count_draws[d][k]`: the prompts of
    task `task_keys[k]` in draw d (models/estimates/count_draws.py: the headline step's headline_count_draws)."""
    return combine_fits([draw_fits(task_frame, task_keys, count_draws)], source)


def draw_fits(task_frame: pl.DataFrame, task_keys: pl.DataFrame, count_draws: list[np.ndarray]) -> Fits:
    """The per-draw fits of `regressions_mi` (each draw's estimates and variances, in draw order): the draws are
    independent, so a worker process may fit some while the caller fits the others (assets/estimates_mi.py)."""
    keys = task_keys.with_row_index("k")
    frame = task_frame.join(keys, on=cov.TASK_KEY, how="left")
    k_index = frame["k"].to_numpy()
    fits: Fits = {}
    for counts in count_draws:
        covered = np.where(np.isnan(k_index.astype(float)), 0, counts[np.nan_to_num(k_index).astype(int)]) >= 5
        draw = frame.with_columns(pl.Series("covered_5", covered))
        # coefficients and contrasts are what Rubin's rules combine: no adjusted-probability grids
        for tables in (reg.exposure_wage_model(draw, with_probabilities=False),
                       reg.importance_fe_model(draw, with_probabilities=False),
                       reg.workbank_model(draw, with_probabilities=False)):
            for r in tables.coefficients.iter_rows(named=True):
                if r["coef"] is not None and r["se"] is not None:
                    fits.setdefault((r["model"], "coefficient", r["term"]), []).append((r["coef"], r["se"] ** 2))
            for r in tables.contrasts.iter_rows(named=True):
                if r.get("ratio") and r.get("se_log_ratio") is not None and r["ratio"] > 0:
                    fits.setdefault((r["model"], "log_ratio", r["contrast"]), []).append(
                        (float(np.log(r["ratio"])), r["se_log_ratio"] ** 2)
                    )
    return fits


def combine_fits(parts: list[Fits], source: str) -> pl.DataFrame:
    """Rubin's rules over the fits of consecutive groups of draws (`draw_fits` of each, in draw order: the same
    table as one `draw_fits` of all of them)."""
    fits: Fits = {}
    for part in parts:
        for key, values in part.items():
            fits.setdefault(key, []).extend(values)
    rows = []
    for (model, kind, term), values in sorted(fits.items()):
        combined = rubin_combine(np.array([v[0] for v in values]), np.array([v[1] for v in values]))
        scale = np.exp if kind == "log_ratio" else (lambda x: x)
        rows.append({
            "model": model, "kind": kind, "term": term, "estimate": float(scale(combined["coef"])),
            "coef": combined["coef"], "se": combined["se"],
            "ci_low": float(scale(combined["ci_low"])), "ci_high": float(scale(combined["ci_high"])),
            "within_var": combined["within_var"], "between_var": combined["between_var"],
            "fraction_missing_info": combined["fraction_missing_info"], "df": combined["df"],
            "m": int(combined["m"]), "draws": source,
        })
    schema = {"model": pl.Utf8, "kind": pl.Utf8, "term": pl.Utf8, "estimate": pl.Float64, "coef": pl.Float64,
              "se": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "within_var": pl.Float64,
              "between_var": pl.Float64, "fraction_missing_info": pl.Float64, "df": pl.Float64, "m": pl.Int64,
              "draws": pl.Utf8}
    return pl.DataFrame(rows, schema=schema)
