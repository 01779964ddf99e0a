"""Interval helpers in models.stats."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from models.stats import (
    binomial_ci,
    bootstrap_accuracy_ci,
    bootstrap_ci,
    log_ratio_interval,
    wilson_ci,
    with_wilson_ci,
)


def test_wilson_known_values() -> None:
    interval = wilson_ci(5, 10)
    assert (interval.estimate, interval.ci_low, interval.ci_high) == pytest.approx(
        (0.5, 0.2366, 0.7634), abs=1e-4
    )
    zero = wilson_ci(0, 20)
    assert zero.ci_low == pytest.approx(0.0, abs=1e-12) and 0 < zero.ci_high < 0.2
    assert np.isnan(wilson_ci(0, 0).estimate)
    # the ends at 0 of n and n of n are exact, so a share of 1 lies inside its interval (the float formula gives
    # 0.9999999999999999 at 7, 9, 12, ... of as many)
    for n in range(1, 60):
        assert wilson_ci(0, n).ci_low == 0.0 and wilson_ci(n, n).ci_high == 1.0, n
    frame = with_wilson_ci(pl.DataFrame({"k": [7, 0], "n": [7, 7]}), "k", "n")
    assert frame["ci_high"][0] == 1.0 and frame["ci_low"][1] == 0.0


def test_exact_binomial_interval_is_wider_than_wilson() -> None:
    exact, wilson = binomial_ci(3, 30), wilson_ci(3, 30)
    assert exact.ci_low <= wilson.ci_low and exact.ci_high >= wilson.ci_high


def test_with_wilson_ci_frame() -> None:
    frame = with_wilson_ci(pl.DataFrame({"k": [5, 0], "n": [10, 0]}), "k", "n")
    assert frame["share"].to_list() == [0.5, None]
    assert frame["ci_low"][0] == pytest.approx(wilson_ci(5, 10).ci_low)
    assert frame["ci_high"][1] is None


def test_bootstrap_mean_interval_matches_normal_theory() -> None:
    values = np.random.default_rng(0).normal(10, 2, 500)
    interval = bootstrap_ci(values, n_boot=2000, seed=1)
    assert interval.ci_low < interval.estimate < interval.ci_high
    assert interval.ci_high - interval.ci_low == pytest.approx(2 * 1.96 * 2 / np.sqrt(500), rel=0.15)
    assert bootstrap_ci(values, n_boot=2000, seed=1) == interval  # seeded


def test_bootstrap_generic_statistic_and_nan_handling() -> None:
    values = [1.0, 2.0, float("nan"), 3.0, 100.0]
    interval = bootstrap_ci(values, stat=np.median, n_boot=500, seed=2)
    assert interval.n == 4 and interval.estimate == 2.5
    assert interval.ci_low <= interval.estimate <= interval.ci_high
    assert np.isnan(bootstrap_ci([]).estimate)


def test_bootstrap_accuracy() -> None:
    hits = pl.Series([True] * 80 + [False] * 20)
    interval = bootstrap_accuracy_ci(hits, n_boot=1000, seed=3)
    assert interval.estimate == pytest.approx(0.8)
    assert interval.ci_low < 0.8 < interval.ci_high
    assert interval.ci_low == pytest.approx(wilson_ci(80, 100).ci_low, abs=0.03)


def test_log_ratio_interval() -> None:
    ratio, low, high = log_ratio_interval(np.log(2.0), 0.1)
    assert ratio == pytest.approx(2.0)
    assert (low, high) == pytest.approx((2 * np.exp(-1.959964 * 0.1), 2 * np.exp(1.959964 * 0.1)))


def test_z_95_is_scipys_normal_quantile() -> None:
    """Z_95 is a literal (scipy is imported lazily, issue 29): it must be the very float scipy computes."""
    from scipy import stats as scipy_stats

    from models.stats import Z_95, z_value

    assert float(scipy_stats.norm.ppf(0.975)) == Z_95
    assert z_value(0.05) == Z_95
