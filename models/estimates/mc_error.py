"""Monte Carlo error of the published figures: how much a value or interval end would move if the same
estimator were run again with other random numbers (another seed), from the draws at hand alone.

- A draw mean (labeler, model_assisted): its standard error sd / sqrt(n).
- A percentile of the draws (an interval end): the exact bootstrap (Maritz-Jarrett) standard error of the
  order statistic (Beta weights over the sorted draws: what resampling the draws would give with infinitely
  many resamples; no random numbers, so the tables stay reproducible). Where the draws have a second mode near the percentile (a few draws far out) it is large.
- The design estimator's recentred ends (q - median + plug-in): the quantile's and the median's errors added
  in quadrature (the two move together, so this overstates a little); its plug-in value has none.
- Deterministic figures (labels as counted, the species estimate) have none (0.0).

Pure numpy/scipy: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

INTERVAL_PROBABILITIES = (0.025, 0.975)
MC_COLUMNS = ("value_mc_se", "ci_low_mc_se", "ci_high_mc_se")  # headline_estimates' Monte Carlo errors


def mean_mc_se(draws: np.ndarray) -> float:
    """Standard error of the mean of the draws (sd / sqrt(n)); 0.0 for fewer than two draws."""
    values = np.asarray(draws, dtype=float)
    if values.size < 2:
        return 0.0
    return float(values.std(ddof=1) / math.sqrt(values.size))


@lru_cache(maxsize=64)
def order_weights(n: int, p: float) -> np.ndarray:
    """The Maritz-Jarrett weights of the sample quantile at `p` of `n` draws over the sorted draws (read-only).
    They depend on n and p alone, and scipy's beta.cdf costs ~2 ms a call: the headline's ~1,200 interval ends
    (every row of every estimator and scope) share three, so they are computed once per process."""
    from scipy.stats import beta  # here, not at import: building the Definitions stays light (warm run)

    m = (n - 1) * p + 1
    weights = np.diff(beta.cdf(np.arange(n + 1) / n, m, n + 1 - m))
    weights.setflags(write=False)
    return weights


def quantile_mc_se(draws: np.ndarray, probabilities: tuple[float, ...] = INTERVAL_PROBABILITIES) -> list[float]:
    """Standard errors of the draws' sample quantiles at `probabilities` (numpy's linear interpolation: order
    statistic m = (n - 1) p + 1): the exact bootstrap standard error of the m-th order statistic, which puts
    weight I_{i/n}(m, n + 1 - m) - I_{(i-1)/n}(m, n + 1 - m) on the i-th smallest draw (Maritz and Jarrett
    1978; scipy's beta, `order_weights`). 0.0 when the draws are all equal or fewer than 3."""
    values = np.sort(np.asarray(draws, dtype=float))
    n = values.size
    if n < 3 or values[0] == values[-1]:
        return [0.0] * len(probabilities)
    out = []
    for p in probabilities:
        weights = order_weights(n, p)
        mean = float(weights @ values)
        se = math.sqrt(max(float(weights @ (values - mean) ** 2), 0.0))
        out.append(se if se > 1e-9 * max(1.0, abs(mean)) else 0.0)  # rounding noise of a constant tail: none
    return out


def share_mc_se(share: np.ndarray, n: int) -> np.ndarray:
    """Standard error of a share of `n` independent draws (p_covered): sqrt(p (1 - p) / (n - 1)), the same as
    mean_mc_se of the draws' 0/1 indicators. 0 where p is 0 or 1 (then read the rule of three: the unseen
    rate may be up to about 3 / n). Zeros for fewer than two draws."""
    p = np.asarray(share, dtype=np.float64)
    if n < 2:
        return np.zeros_like(p)
    return np.sqrt(np.clip(p * (1.0 - p), 0.0, None) / (n - 1))


def draws_mc_se(draws: np.ndarray, probabilities: tuple[float, ...] = INTERVAL_PROBABILITIES
                ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Monte Carlo standard errors of many quantities' draw means and quantiles at once: `draws` (draws x ...);
    (mean_mc_se of each, [quantile_mc_se of each at p for p in probabilities]), arrays of the other axes'
    shape. The Maritz-Jarrett weights depend only on the number of draws, so every unit shares them: one
    matrix product over the sorted draws of the units whose value moves at all (a unit with the same value in
    every draw has none), over the order statistics where a weight is above 1e-15. No loop per unit."""
    n = draws.shape[0]
    shape = draws.shape[1:]
    mean_se, out = np.zeros(shape), [np.zeros(shape) for _ in probabilities]
    flat = draws.reshape(n, -1)
    varying = np.flatnonzero(flat.max(axis=0) > flat.min(axis=0)) if n >= 2 else np.empty(0, dtype=np.int64)
    if varying.size == 0:
        return mean_se, out
    ordered = np.sort(np.ascontiguousarray(flat[:, varying].T), axis=1)  # (units, draws): order statistics
    mean_se.reshape(-1)[varying] = ordered.std(axis=1, ddof=1, dtype=np.float64) / math.sqrt(n)
    if n < 3:
        return mean_se, out
    for p, se_out in zip(probabilities, out, strict=True):
        weights = order_weights(n, p)
        support = np.flatnonzero(weights > 1e-15)
        first, last = int(support[0]), int(support[-1]) + 1
        span, part = ordered[:, first:last].astype(np.float64), weights[first:last]
        mean = span @ part
        se = np.sqrt(np.clip(np.square(span - mean[:, None]) @ part, 0.0, None))
        se_out.reshape(-1)[varying] = np.where(se > 1e-9 * np.maximum(1.0, np.abs(mean)), se, 0.0)
    return mean_se, out


def interval_mc_se(estimator: str, draws: np.ndarray) -> tuple[float, float, float]:
    """(value, ci_low, ci_high) Monte Carlo standard errors of one estimator's row from its draws (see the
    module docstring; the design estimator's value is the plug-in of the whole sample, no draw)."""
    low, high = quantile_mc_se(draws)
    if estimator == "design":
        (median,) = quantile_mc_se(draws, (0.5,))
        return 0.0, math.hypot(low, median), math.hypot(high, median)
    return mean_mc_se(draws), low, high


def bounds_mc_se(design_value: float, next_low: float | None, next_low_se: float | None,
                 richness: float | None, richness_low: float | None,
                 design_high: float | None, design_high_se: float | None,
                 assisted_high: float | None, assisted_high_se: float | None,
                 bounds: tuple[float, float, float], next_value: float | None = None,
                 next_value_se: float | None = None) -> tuple[float, float, float]:
    """(value, ci_low, ci_high) Monte Carlo standard errors of a `bounds` row (tables.bounds_interval): each is
    the error of the figure it was taken from (the design plug-in and the species estimate have none; the
    model-assisted lower bound and estimate at the next threshold and the 97.5th percentiles have theirs)."""
    value, low, high = bounds
    floor_se = (next_low_se or 0.0) if next_low is not None and next_low > design_value else 0.0
    low_se = floor_se if richness_low is None or low > richness_low else 0.0
    value_se = low_se if richness is None or value > richness else 0.0
    if next_value is not None and value == next_value and value > low and (richness is None or value > richness):
        value_se = next_value_se or 0.0  # the value is the next threshold's estimate
    if assisted_high is not None and high == assisted_high:
        high_se = assisted_high_se or 0.0
    elif design_high is not None and high == design_high:
        high_se = design_high_se or 0.0
    else:
        high_se = value_se
    return value_se, low_se, high_se


# --- saying it in the summary ----------------------------------------------------------------------------------

MC_LABELS = (("value", "estimate"), ("ci_low", "lower end"), ("ci_high", "upper end"))
MC_EXPLAINED = ("Monte Carlo error: one standard error of a figure over reruns with other random draws (the "
                "estimates' {n_draws} draws; headline_estimates *_mc_se); a figure with one is printed rounded to "
                "what the draws support; the others' error is at most one unit of their last printed digit "
                "(1 for a count, 0.1 point for a share).")


def supported(value: float | None, se: float | None, share: bool) -> tuple[float | None, str | None]:
    """A printed figure and its Monte Carlo error note. Printed rounding: 1 for counts, 0.1 point for shares.
    When the figure's Monte Carlo standard error is larger than that, the figure is rounded to the power of ten
    at or below the error (what the draws support; the next one when the error rounds up to it: 2,429 with an
    error of 96 prints 2,400 ±100, not 2,430 ±100) and the note gives the error at that rounding ('±200',
    '±0.2 points'); otherwise the figure is unchanged and there is no note."""
    unit = 0.001 if share else 1.0
    if value is None or se is None or not (math.isfinite(value) and math.isfinite(se)) or se <= unit:
        return value, None
    step = unit * 10 ** math.floor(math.log10(se / unit) + 1e-9)
    if round(se / step) >= 10:  # the error rounds up to the next decade (96 -> ±100): the figure rounds there too
        step *= 10
    rounded, error = round(value / step) * step, round(se / step) * step
    return rounded, (f"\u00b1{100 * error:.1f} points" if share else f"\u00b1{error:,.0f}")


def mc_rounded(row: Mapping[str, Any], share: bool) -> tuple[dict[str, float | None], str]:
    """value, ci_low, ci_high of a headline_estimates row as supported() prints them, and the note for those
    whose Monte Carlo error exceeds their rounding ('Monte Carlo error: upper end ±200'; '' when none). Rows
    without the *_mc_se columns print as they are."""
    figures: dict[str, float | None] = {}
    notes = []
    for column, label in MC_LABELS:
        figures[column], note = supported(row.get(column), row.get(f"{column}_mc_se"), share)
        if note:
            notes.append(f"{label} {note}")
    return figures, ("Monte Carlo error: " + ", ".join(notes)) if notes else ""
