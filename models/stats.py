"""Small statistical helpers shared by the analysis and the labeler-validation stages.

Intervals are returned as plain floats (or tidy polars frames); nothing here knows about benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import polars as pl

# scipy and statsmodels (which brings pandas) are imported inside the functions that use them: importing them
# here cost ~2 CPU-s of every Definitions build, i.e. of every warm `run_all` that skips every step (issue 29).
Z_95 = 1.959963984540054  # float(scipy.stats.norm.ppf(0.975)), the same float (tests/test_stats_helpers.py)


@dataclass(frozen=True)
class Interval:
    """A point estimate with its interval; `n` is the number of observations behind it."""

    estimate: float
    ci_low: float
    ci_high: float
    n: int

    def as_dict(self, prefix: str = "") -> dict[str, float | int]:
        return {
            f"{prefix}estimate": self.estimate,
            f"{prefix}ci_low": self.ci_low,
            f"{prefix}ci_high": self.ci_high,
            f"{prefix}n": self.n,
        }


@lru_cache(maxsize=64)  # norm.ppf costs ~0.1 ms a call and the delta-method intervals ask thousands of times
def z_value(alpha: float = 0.05) -> float:
    """Two-sided normal critical value (1.96 for alpha = 0.05)."""
    from scipy import stats as scipy_stats

    return float(scipy_stats.norm.ppf(1 - alpha / 2))


def bootstrap_resample_counts(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, n) matrix: how often each of n units is drawn in each resample (with replacement).

    Counts instead of index lists let weighted statistics be computed as matrix products.
    """
    if n == 0:
        return np.zeros((n_boot, 0), dtype=np.int64)
    draws = rng.integers(0, n, size=(n_boot, n)) + (np.arange(n_boot) * n)[:, None]
    return np.bincount(draws.ravel(), minlength=n_boot * n).reshape(n_boot, n)


def percentile_interval(replicates: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates, ignoring replicates where the statistic is undefined."""
    finite = np.asarray(replicates, dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return float("nan"), float("nan")
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray | pl.Series,
    stat: Callable[[np.ndarray], float] = np.mean,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> Interval:
    """Percentile bootstrap interval of `stat` over i.i.d. `values` (nulls/NaN dropped).

    `stat` is applied to each resample separately, so any callable of a 1-d array works.
    """
    array = np.asarray(values.to_numpy() if isinstance(values, pl.Series) else values, dtype=float)
    array = array[np.isfinite(array)]
    if array.size == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    estimate = float(stat(array))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, array.size, size=(n_boot, array.size))
    if stat is np.mean:  # vectorised fast path for the common case
        replicates = array[draws].mean(axis=1)
    else:
        replicates = np.array([stat(array[row]) for row in draws])
    low, high = percentile_interval(replicates, alpha)
    return Interval(estimate, low, high, int(array.size))


def bootstrap_accuracy_ci(
    hits: Sequence[bool] | np.ndarray | pl.Series, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05
) -> Interval:
    """Accuracy (share of hits) with a percentile bootstrap interval; used for labeler validation."""
    array = np.asarray(hits.to_numpy() if isinstance(hits, pl.Series) else hits, dtype=float)
    return bootstrap_ci(array, np.mean, n_boot=n_boot, seed=seed, alpha=alpha)


def wilson_ci(k: int, n: int, alpha: float = 0.05) -> Interval:
    """Share k/n with the Wilson score interval (good coverage for small n and shares near 0 or 1)."""
    if n <= 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(k, n, alpha=alpha, method="wilson")
    # Wilson's ends are exactly 0 at k = 0 and 1 at k = n; the float formula lands a rounding error off
    # (0.9999999999999999), which would put the interval just inside a share of 1
    low, high = (0.0 if k == 0 else float(low)), (1.0 if k == n else float(high))
    return Interval(k / n, low, high, int(n))


def binomial_ci(k: int, n: int, alpha: float = 0.05, method: str = "beta") -> Interval:
    """Share k/n with an exact (Clopper-Pearson, method='beta') or other statsmodels binomial interval."""
    if n <= 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(k, n, alpha=alpha, method=method)
    return Interval(k / n, float(low), float(high), int(n))


def with_wilson_ci(
    frame: pl.DataFrame, k_col: str, n_col: str, alpha: float = 0.05, share_col: str = "share"
) -> pl.DataFrame:
    """Add share, ci_low, ci_high (Wilson) columns computed from count columns of `frame`."""
    k = frame[k_col].to_numpy().astype(float)
    n = frame[n_col].to_numpy().astype(float)
    safe_n = np.where(n > 0, n, 1.0)
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(k, safe_n, alpha=alpha, method="wilson")
    low, high = np.where(k == 0, 0.0, low), np.where(k == safe_n, 1.0, high)  # exact ends (wilson_ci)
    undefined = n <= 0
    return frame.with_columns(
        pl.Series(share_col, np.where(undefined, np.nan, k / safe_n)).fill_nan(None),
        pl.Series("ci_low", np.where(undefined, np.nan, low)).fill_nan(None),
        pl.Series("ci_high", np.where(undefined, np.nan, high)).fill_nan(None),
    )


def logistic(x: np.ndarray) -> np.ndarray:
    """Inverse logit, numerically stable for large |x|. scipy's `logistic.cdf` is this same `expit` behind
    ~0.1 ms of argument checking per call, which the per-grid-point margins paid thousands of times."""
    from scipy import special as scipy_special

    return scipy_special.expit(np.asarray(x, dtype=float))


def log_ratio_interval(
    log_ratio: float, se_log_ratio: float, alpha: float = 0.05
) -> tuple[float, float, float]:
    """Ratio and its interval from a log-scale estimate and standard error (delta method on the log scale)."""
    z = z_value(alpha)
    return (
        float(np.exp(log_ratio)),
        float(np.exp(log_ratio - z * se_log_ratio)),
        float(np.exp(log_ratio + z * se_log_ratio)),
    )
