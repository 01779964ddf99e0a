"""Monte Carlo error of the published figures (issue 29 item 2): the standard errors against known values and
against repeated runs, their way into headline_estimates (bounds included), and the summary saying them."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from models import estimates as es
from models.estimates.mc_error import interval_mc_se, mean_mc_se, quantile_mc_se, supported


def test_mean_se_is_sd_over_root_n_and_matches_repeated_runs():
    rng = np.random.default_rng(3)
    draws = rng.normal(500.0, 40.0, 200)
    assert mean_mc_se(draws) == pytest.approx(draws.std(ddof=1) / math.sqrt(200))
    assert mean_mc_se(draws) == pytest.approx(40.0 / math.sqrt(200), rel=0.15)
    assert mean_mc_se(np.array([3.0])) == 0.0


def test_quantile_se_matches_the_spread_over_repeated_runs():
    """The se of the 2.5/97.5 percentiles of 200 normal draws against their sd over 2,000 runs."""
    rng = np.random.default_rng(4)
    runs = rng.normal(0.0, 1.0, (2000, 200))
    spread = np.quantile(runs, [0.025, 0.975], axis=1).std(axis=1)
    estimated = np.mean([quantile_mc_se(run) for run in runs[:50]], axis=0)
    assert estimated == pytest.approx(spread, rel=0.25)
    assert quantile_mc_se(np.full(200, 7.0)) == [0.0, 0.0]


def test_a_second_mode_above_the_percentile_gives_a_large_ceiling_error():
    """The headline's case: 6 of 200 draws in a second mode far above the rest. The ceiling's se is several
    times that of the same draws without the mode, equals what resampling the draws gives (the exact bootstrap),
    and is near the ceiling's sd over repeated runs (a ~3% mode)."""
    rng = np.random.default_rng(5)

    def run(n_high: int) -> np.ndarray:
        return np.concatenate([rng.normal(2400.0, 150.0, 200 - n_high), rng.normal(3000.0, 100.0, n_high)])

    bimodal = run(6)
    _, _, high_se = interval_mc_se("model_assisted", bimodal)
    _, _, plain_se = interval_mc_se("model_assisted", run(0))
    assert high_se > 60.0 and high_se > 3 * plain_se
    resampled = np.quantile(bimodal[rng.integers(0, 200, (4000, 200))], 0.975, axis=1)
    assert high_se == pytest.approx(float(resampled.std()), rel=0.1)
    repeated = [np.quantile(run(int(rng.binomial(200, 0.03))), 0.975) for _ in range(1000)]
    assert high_se == pytest.approx(float(np.std(repeated)), rel=0.5)
    # the design estimator's value is the plug-in (no Monte Carlo error); its ends carry the median's too
    value_se, low_se, _ = interval_mc_se("design", bimodal)
    assert value_se == 0.0 and low_se > quantile_mc_se(bimodal)[0]


def _frame(ma_high_se: float) -> pl.DataFrame:
    return pl.DataFrame({
        "benchmark_index": ["all"] * 4, "scope": ["all"] * 4, "quantity": ["tasks_covered"] * 4,
        "threshold": [1, 1, 5, 1], "estimator": ["design", "model_assisted", "model_assisted", "richness"],
        "value": [100.0, 300.0, 130.0, 200.0], "ci_low": [90.0, 280.0, 120.0, 160.0],
        "ci_high": [110.0, 3003.2, 140.0, 250.0], "value_mc_se": [0.0, 2.0, 0.5, 0.0],
        "ci_low_mc_se": [1.0, 6.0, 4.0, 0.0], "ci_high_mc_se": [1.0, ma_high_se, 1.5, 0.0],
        "denominator": [18796.0] * 4, "published": [False, False, True, False], "n_sampled": [788] * 4, "n_draws": [200] * 4,
    })


def test_bounds_carry_the_error_of_the_figure_they_take():
    bounds = es.with_bounds(_frame(227.0)).filter(pl.col("estimator") == "bounds").row(0, named=True)
    # value: the species estimate (no MC error); floor: its lower limit 160 (none); ceiling: the MA percentile
    assert (bounds["value_mc_se"], bounds["ci_low_mc_se"], bounds["ci_high_mc_se"]) == (0.0, 0.0, 227.0)
    no_species = es.with_bounds(_frame(227.0).filter(pl.col("estimator") != "richness"))
    row = no_species.filter(pl.col("estimator") == "bounds").row(0, named=True)
    # floor 120 from the model-assisted lower bound at >= 5: its error (4.0); the value is the estimate at >= 5
    # (130, above the floor: covered at >= 1 holds covered at >= 5), with that estimate's error (0.5)
    assert (row["value"], row["value_mc_se"], row["ci_low_mc_se"]) == (130.0, 0.5, 4.0)


def test_summary_states_a_large_monte_carlo_error_and_leaves_small_ones():
    from models.report.answer import _phrase
    from models.report.estimated import estimated_coverage_findings

    for se, expected in ((227.0, "up to about 3,000 (Monte Carlo error: upper end \u00b1200) of 18,796"),
                         (0.4, "up to about 3,003 of 18,796")):
        estimates = es.with_bounds(_frame(se))
        bounds = estimates.filter(pl.col("estimator") == "bounds").row(0, named=True)
        assert expected in _phrase(bounds)
        sentences = " ".join(es.published_sentences(estimates))
        assert expected.replace(" of 18,796", "") in sentences
        assert ("Monte Carlo error: one standard error of a figure over reruns with other random draws (the "
                "estimates' 200 draws" in sentences)  # the >= 5 row's lower end (se 4) has a note either way
        assert expected.replace(" of 18,796", "") in " ".join(
            estimated_coverage_findings({"headline_estimates": estimates}))
    assert "**Monte Carlo error.** One standard error of a figure over reruns" in " ".join(
        estimated_coverage_findings({"headline_estimates": estimates}))
    # the rule the notes follow, said as it is applied (supported(): a note where the error exceeds one unit)
    assert ("the others' error is at most one unit of their last printed digit (1 for a count, 0.1 point for a "
            "share)") in " ".join(estimated_coverage_findings({"headline_estimates": estimates}))
    assert supported(2429.0, 1.0, share=False) == (2429.0, None) and supported(0.0881, 0.0009, share=True)[1] is None
    exact = es.with_bounds(_frame(0.0).with_columns(pl.lit(0.0).alias(c) for c in ("ci_low_mc_se", "ci_high_mc_se")))
    assert "Monte Carlo" not in " ".join(es.published_sentences(exact))
    assert "Monte Carlo" not in " ".join(estimated_coverage_findings({"headline_estimates": exact}))
    assert supported(521.5, 1.8, False) == (522.0, "\u00b12")
    assert supported(132.4, 0.9, False) == (132.4, None)  # within the printed rounding: as it is
    assert supported(0.0823, 0.0031, True) == (pytest.approx(0.082), "\u00b10.3 points")
    # an error that rounds up to the next decade takes the figure with it (the summary printed 2,430 ±100)
    assert supported(2429.0, 96.0, False) == (2400.0, "\u00b1100")
    assert supported(2429.0, 94.0, False) == (2430.0, "\u00b190")
    assert supported(0.2227, 0.0097, True) == (pytest.approx(0.22), "\u00b11.0 points")


def test_headline_estimates_carry_the_errors_of_their_draws():
    sim = es.simulate(np.random.default_rng(12))
    scopes = es.scopes_for(sim.problem)
    result = es.run_estimators(sim.problem, scopes, n_draws=40)
    frame = es.estimates_frame(sim.problem, scopes, result)
    row = frame.filter((pl.col("scope") == "all") & (pl.col("estimator") == "model_assisted")
                       & (pl.col("quantity") == "tasks_covered") & (pl.col("threshold") == 5)).row(0, named=True)
    draws = result.draws["model_assisted"][:, 0, es.QUANTITIES.index("tasks_covered"), es.THRESHOLDS.index(5)]
    assert row["value_mc_se"] == pytest.approx(draws.std(ddof=1) / math.sqrt(40))
    assert row["ci_high_mc_se"] == pytest.approx(quantile_mc_se(draws)[1])
    published = frame.filter(pl.col("published"))
    assert published.select("value_mc_se", "ci_low_mc_se", "ci_high_mc_se").null_count().row(0) == (0, 0, 0)
    truth = frame.filter(pl.col("estimator") == "labels_as_truth")
    assert truth["value_mc_se"].max() == 0.0 and truth["ci_high_mc_se"].null_count() == truth.height
