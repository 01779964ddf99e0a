"""Coverage regressions on simulated data with known parameters."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import polars as pl
import pytest
import statsmodels.api as sm
from scipy import stats as scipy_stats

from models import logit
from models.logit import Margin, interval_from_margin
from models.regression import (
    adjusted_probabilities,
    build_task_frame,
    exposure_wage_model,
    fit_logit_clustered,
    importance_fe_model,
    importance_quintile,
    probability_ratio,
    run_coverage_models,
    tidy_coefficients,
    workbank_model,
    workbank_zone_coverage,
)
from models.stats import logistic, wilson_ci


def simulate_clustered_logit(
    n_clusters: int = 200,
    per_cluster: int = 15,
    intercept: float = -0.5,
    slope: float = 1.0,
    cluster_sd: float = 0.0,
    x_between_share: float = 0.0,
    seed: int = 0,
) -> pl.DataFrame:
    """y ~ Bernoulli(logistic(intercept + slope x + u_g)), u_g ~ N(0, cluster_sd^2) shared within a cluster.

    x_between_share is the share of x's variance that is constant within a cluster: with both it and
    cluster_sd large, errors and regressor are correlated within clusters and naive SEs are too small.
    """
    rng = np.random.default_rng(seed)
    cluster = np.repeat(np.arange(n_clusters), per_cluster)
    x = np.sqrt(x_between_share) * rng.normal(size=n_clusters)[cluster] + np.sqrt(
        1 - x_between_share
    ) * rng.normal(size=cluster.size)
    u = rng.normal(0, cluster_sd, n_clusters)[cluster] if cluster_sd > 0 else 0.0
    y = rng.random(cluster.size) < logistic(intercept + slope * x + u)
    return pl.DataFrame({"y": y.astype(np.int8), "x": x, "cluster": [f"c{g:03d}" for g in cluster]})


def test_clustered_logit_recovers_known_coefficient() -> None:
    data = simulate_clustered_logit(n_clusters=300, per_cluster=10, slope=1.0, seed=11)
    coefficients = tidy_coefficients(fit_logit_clustered(data, "y ~ x", "cluster", model="sim"))
    slope = coefficients.filter(pl.col("term") == "x").row(0, named=True)
    assert abs(slope["coef"] - 1.0) < 3 * slope["se"]
    assert slope["ci_low"] < slope["coef"] < slope["ci_high"]
    assert (slope["n"], slope["n_clusters"], slope["cov_type"], slope["model"]) == (
        3000,
        300,
        "cluster",
        "sim",
    )
    assert slope["formula"] == "y ~ x" and slope["converged"]


def test_clustered_logit_ci_covers_true_coefficient_at_nominal_rate() -> None:
    """Over repeated simulations with cluster effects the 95% CI holds the true slope ~95% of the time."""
    hits = []
    for seed in range(60):
        data = simulate_clustered_logit(n_clusters=60, per_cluster=10, slope=1.0, cluster_sd=0.3, seed=seed)
        slope = tidy_coefficients(fit_logit_clustered(data, "y ~ x", "cluster")).filter(pl.col("term") == "x")
        hits.append(slope["ci_low"][0] < 1.0 < slope["ci_high"][0])
    # P(Binomial(60, 0.95) < 51) < 0.005; the cluster effect attenuates the marginal slope only slightly
    assert sum(hits) >= 51


def test_clustered_se_exceed_naive_se_under_cluster_effects() -> None:
    data = simulate_clustered_logit(
        n_clusters=100, per_cluster=20, cluster_sd=1.5, x_between_share=0.9, seed=5
    )
    clustered = fit_logit_clustered(data, "y ~ x", "cluster")
    naive = fit_logit_clustered(data, "y ~ x", None, cov_type="nonrobust")
    np.testing.assert_allclose(clustered.params, naive.params)  # same point estimates, different SEs
    se_clustered = tidy_coefficients(clustered).filter(pl.col("term") == "x")["se"][0]
    se_naive = tidy_coefficients(naive).filter(pl.col("term") == "x")["se"][0]
    assert se_clustered > 1.5 * se_naive


def test_delta_method_ci_matches_cluster_bootstrap() -> None:
    data = simulate_clustered_logit(
        n_clusters=120, per_cluster=12, cluster_sd=0.8, x_between_share=0.5, seed=8
    )
    fit = fit_logit_clustered(data, "y ~ x", "cluster")

    point = adjusted_probabilities(fit, pl.DataFrame({"x": [0.5]})).row(0, named=True)
    # cluster bootstrap: resample whole clusters, refit, predict at x = 0.5
    rng = np.random.default_rng(123)
    y, x = data["y"].to_numpy().astype(float), data["x"].to_numpy()
    cluster_ids = data["cluster"].to_numpy()
    members = {c: np.flatnonzero(cluster_ids == c) for c in np.unique(cluster_ids)}
    names = list(members)
    replicates = []
    for _ in range(400):
        rows = np.concatenate([members[names[i]] for i in rng.integers(0, len(names), len(names))])
        params = sm.Logit(y[rows], sm.add_constant(x[rows])).fit(disp=0).params
        replicates.append(float(logistic(params[0] + 0.5 * params[1])))
    boot_low, boot_high = np.quantile(replicates, [0.025, 0.975])
    boot_se = float(np.std(replicates, ddof=1))
    assert point["se"] == pytest.approx(boot_se, rel=0.2)
    width = point["ci_high"] - point["ci_low"]
    assert abs(point["ci_low"] - boot_low) < 0.15 * width
    assert abs(point["ci_high"] - boot_high) < 0.15 * width


def test_adjusted_probabilities_match_statsmodels_prediction() -> None:
    """Our analytic delta method (pointwise and averaged) agrees with statsmodels' get_prediction."""
    data = simulate_clustered_logit(n_clusters=80, per_cluster=10, cluster_sd=0.5, seed=2)
    fit = fit_logit_clustered(data, "y ~ x + I(x**2)", "cluster")

    grid = pl.DataFrame({"x": [-1.0, 0.0, 1.5]})
    ours = adjusted_probabilities(fit, grid)
    theirs = fit.result.get_prediction(exog=grid.to_pandas()).summary_frame()
    np.testing.assert_allclose(ours["prob"], theirs["predicted"], rtol=1e-8)
    np.testing.assert_allclose(ours["se"], theirs["se"], rtol=1e-4)
    averaged = adjusted_probabilities(fit, pl.DataFrame({"x": [0.25]}), average_over=data)
    counterfactual = data.to_pandas().assign(x=0.25)
    expected = fit.result.get_prediction(exog=counterfactual, average=True).summary_frame()
    assert averaged["prob"][0] == pytest.approx(float(expected["predicted"].iloc[0]), rel=1e-8)
    assert averaged["se"][0] == pytest.approx(float(expected["se"].iloc[0]), rel=1e-4)


def test_probability_ratio_is_ratio_of_probabilities() -> None:
    data = simulate_clustered_logit(n_clusters=100, per_cluster=10, slope=0.8, seed=4)
    fit = fit_logit_clustered(data, "y ~ x", "cluster")
    ratio = probability_ratio(fit, {"x": 1.0}, {"x": 0.0}).row(0, named=True)
    b0, b1 = fit.params
    assert ratio["prob_a"] == pytest.approx(float(logistic(b0 + b1)))
    assert ratio["ratio"] == pytest.approx(ratio["prob_a"] / ratio["prob_b"])
    assert ratio["ci_low"] < ratio["ratio"] < ratio["ci_high"]
    assert ratio["ci_low"] > 1  # a positive slope, estimated on 1000 observations


# --- task-level frames -------------------------------------------------------------------------------------


def simulate_task_frame(
    n_occupations: int = 150, per_occupation: int = 12, seed: int = 0, share_importance: float = 0.6
) -> pl.DataFrame:
    """A task analysis frame as build_task_frame makes it, with coverage driven by exposure, wage bill,
    importance (within occupation) and an occupation effect."""
    rng = np.random.default_rng(seed)
    occupation = np.repeat(
        [f"{13 + 2 * (i % 20)}-{1000 + i:04d}.00" for i in range(n_occupations)], per_occupation
    )
    n = occupation.size
    occupation_effect = np.repeat(rng.normal(0, 1.0, n_occupations), per_occupation)
    wage_bill = np.repeat(np.exp(rng.normal(np.log(5e9), 1.2, n_occupations)), per_occupation)
    exposed = rng.random(n) < 0.45
    importance = rng.uniform(1, 5, n)
    eta = -1.5 + 0.9 * exposed + 0.3 * np.log(wage_bill / 5e9) + 0.5 * (importance - 3) + occupation_effect
    covered_5 = rng.random(n) < logistic(eta)
    covered_1 = covered_5 | (rng.random(n) < 0.3)
    in_workbank = rng.random(n) < 0.4
    desire = rng.uniform(1, 5, n)
    capability = rng.uniform(1, 5, n)
    return pl.DataFrame(
        {
            "onet_soc_code": occupation,
            "task_id": np.arange(n),
            "n_prompts": np.where(covered_5, 5, covered_1 * 1),
            "covered_1": covered_1,
            "covered_5": covered_5,
            "exposed": exposed,
            "gpt4_exposed": exposed ^ (rng.random(n) < 0.1),
            "wage_bill": wage_bill,
            "importance": np.where(rng.random(n) < share_importance, importance, np.nan),
            "desire_mean": np.where(in_workbank, desire, np.nan),
            "capability_mean": np.where(in_workbank, capability, np.nan),
            "zone": [
                zone if rated else None
                for zone, rated in zip(
                    rng.choice(["green_light", "red_light", "rnd_opportunity", "low_priority"], n),
                    in_workbank,
                    strict=True,
                )
            ],
            "in_workbank": in_workbank,
        }
    ).with_columns(pl.col("importance", "desire_mean", "capability_mean").fill_nan(None))


def test_exposure_wage_model_tables() -> None:
    tables = exposure_wage_model(simulate_task_frame(seed=1))
    exposed = tables.coefficients.filter(pl.col("term") == "exposed").row(0, named=True)
    assert exposed["coef"] > 0 and exposed["ci_low"] > 0  # simulated effect 0.9 on the conditional scale
    assert set(tables.coefficients["term"]) == {"Intercept", "exposed", "np.log(wage_bill)"}
    probabilities = tables.probabilities
    assert probabilities.height == 42
    assert probabilities["wage_bill"].min() == pytest.approx(0.5e9)
    assert probabilities["wage_bill"].max() == pytest.approx(50e9)
    # higher wage bill -> higher coverage probability (positive simulated slope), for both exposure levels
    for level in (0, 1):
        probs = probabilities.filter(pl.col("exposed") == level).sort("wage_bill")["prob"].to_numpy()
        assert np.all(np.diff(probs) > 0)
    contrast = tables.contrasts.row(0, named=True)
    assert contrast["ci_low"] < contrast["ratio"] < contrast["ci_high"] and contrast["ratio"] > 1
    assert "median wage bill" in contrast["contrast"]
    summary = tables.summary()
    assert (
        summary["formula"] == "covered_5 ~ exposed + np.log(wage_bill)" and summary["cov_type"] == "cluster"
    )
    assert summary["n_clusters"] == 150
    gpt4 = exposure_wage_model(simulate_task_frame(seed=1), exposure_col="gpt4_exposed")
    assert "gpt4_exposed" in gpt4.coefficients["note"][0]


def test_fe_model_drops_occupations_without_outcome_variation() -> None:
    frame = simulate_task_frame(n_occupations=80, per_occupation=10, seed=3, share_importance=1.0)
    # force 7 occupations to all-uncovered and 4 to all-covered: they carry no within-occupation information
    occupations = frame["onet_soc_code"].unique(maintain_order=True).to_list()
    all_zero, all_one = occupations[:7], occupations[7:11]
    frame = frame.with_columns(
        pl.when(pl.col("onet_soc_code").is_in(all_zero))
        .then(False)
        .when(pl.col("onet_soc_code").is_in(all_one))
        .then(True)
        .otherwise(pl.col("covered_5"))
        .alias("covered_5")
    )
    # and strip importance from 30 tasks of still-informative occupations
    frame = frame.with_columns(
        pl.when((pl.int_range(pl.len()) < 100) & (pl.int_range(pl.len()) % 10 < 3))
        .then(None)
        .otherwise(pl.col("importance"))
        .alias("importance")
    )
    naturally_constant = (
        frame.filter(pl.col("importance").is_not_null())
        .group_by("onet_soc_code")
        .agg(pl.col("covered_5").n_unique() == 1)
        .filter(pl.col("covered_5"))
        .height
    )
    rated = frame.filter(pl.col("importance").is_not_null())
    expected_dropped_tasks = rated.filter(pl.col("covered_5").n_unique().over("onet_soc_code") == 1).height
    tables = importance_fe_model(frame)
    sample = dict(zip(tables.sample["item"], tables.sample["value"], strict=True))
    assert sample["n_tasks_without_importance"] == 30
    assert sample["n_tasks_rated"] == 770
    assert sample["n_occupations_dropped_no_variation"] == naturally_constant >= 11
    assert sample["n_tasks_dropped_no_variation"] == expected_dropped_tasks
    assert sample["n_occupations_kept"] + sample["n_occupations_dropped_no_variation"] == 80
    assert tables.fit is not None and tables.fit.n == sample["n_tasks_kept"]
    assert tables.fit.n_clusters == sample["n_occupations_kept"]
    note = tables.coefficients["note"][0]
    assert "30 without importance excluded" in note and f"dropped {naturally_constant} occupations" in note
    # fixed effects stay out of the table; quintile terms 2..5 and exposure are in
    terms = set(tables.coefficients["term"])
    assert not any(t.startswith("C(occupation)") for t in terms)
    assert {"exposed", "C(importance_quintile)[T.5]"} <= terms
    assert tables.probabilities.height == 10  # 5 quintiles x exposed 0/1
    assert set(tables.probabilities["margin"]) == {"average"}
    contrast = tables.contrasts.row(0, named=True)
    assert contrast["contrast"].startswith("importance quintile 5 vs 1")
    assert contrast["ratio"] > 1  # importance raises coverage in the simulation


def test_fe_model_with_too_few_occupations_returns_a_note() -> None:
    frame = simulate_task_frame(n_occupations=6, per_occupation=8, seed=4, share_importance=1.0)
    occupations = frame["onet_soc_code"].unique(maintain_order=True).to_list()
    frame = frame.with_columns(
        pl.when(pl.col("onet_soc_code").is_in(occupations[1:]))
        .then(False)
        .otherwise(pl.col("covered_5"))
        .alias("covered_5")
    )
    frame = frame.with_columns(
        pl.when(pl.col("onet_soc_code") == occupations[0])
        .then(pl.int_range(pl.len()) % 2 == 0)
        .otherwise(pl.col("covered_5"))
        .alias("covered_5")
    )
    tables = importance_fe_model(frame)
    assert tables.fit is None
    assert tables.coefficients.height == 1 and tables.coefficients["coef"][0] is None
    assert "Not estimated" in tables.coefficients["note"][0]
    assert "1 occupation cluster" in tables.coefficients["note"][0]
    assert tables.probabilities["note"][0] == tables.coefficients["note"][0]
    # no rated task at all is also handled
    unrated = importance_fe_model(frame.with_columns(pl.lit(None, dtype=pl.Float64).alias("importance")))
    assert unrated.fit is None and "no observations" in unrated.coefficients["note"][0]


def simulate_importance_frame(
    n_occupations: int = 900,
    per_occupation: int = 20,
    quintile_effects: tuple[float, ...] = (0.0, 0.35, 0.7, 1.05, 1.4),
    exposure_effect: float = 0.8,
    seed: int = 0,
) -> pl.DataFrame:
    """Tasks whose coverage follows the model-2 logit exactly: an occupation effect alpha_g ~ N(-1.6, 1),
    exposure and a planted effect per within-occupation importance quintile (the O*NET sizes by default:
    ~18,000 tasks in ~900 occupations). Keeps the true `alpha` and `quintile` columns."""
    rng = np.random.default_rng(seed)
    occupation = np.repeat([f"{11 + 2 * (i % 21)}-{1000 + i:04d}.00" for i in range(n_occupations)], per_occupation)
    n = occupation.size
    frame = pl.DataFrame(
        {
            "onet_soc_code": occupation,
            "task_id": np.arange(n),
            "exposed": rng.random(n) < 0.45,
            "importance": np.round(rng.uniform(2.5, 5.0, n), 2),
            "alpha": np.repeat(rng.normal(-1.6, 1.0, n_occupations), per_occupation),
        }
    ).with_columns(importance_quintile().alias("quintile"))
    eta = (
        frame["alpha"].to_numpy()
        + exposure_effect * frame["exposed"].to_numpy()
        + np.asarray(quintile_effects)[frame["quintile"].to_numpy() - 1]
    )
    return frame.with_columns(pl.Series("covered_5", rng.random(n) < logistic(eta)))


def _true_ratio(frame: pl.DataFrame, quintile_effects: tuple[float, ...], exposure_effect: float) -> float:
    """The Q5/Q1 ratio of average margins under the true parameters, over the tasks the model keeps."""
    kept = frame.filter(pl.col("covered_5").n_unique().over("onet_soc_code") > 1)
    base = kept["alpha"].to_numpy() + exposure_effect * kept["exposed"].to_numpy()
    return float(logistic(base + quintile_effects[-1]).mean() / logistic(base + quintile_effects[0]).mean())


def test_fe_logit_matches_statsmodels_with_occupation_dummies() -> None:
    """The fast FE logit is the dummy-variable logit: coefficients (fixed effects included), clustered SEs,
    adjusted probabilities and their CIs equal statsmodels' to rounding."""
    frame = simulate_task_frame(n_occupations=60, per_occupation=15, seed=5, share_importance=1.0)
    tables = importance_fe_model(frame, include_fixed_effects=True)
    sample = frame.select(
        pl.col("covered_5").cast(pl.Int8),
        pl.col("exposed").cast(pl.Int8),
        "importance",
        pl.col("onet_soc_code").alias("occupation"),
    ).with_columns(importance_quintile("occupation").alias("importance_quintile"))
    kept = sample.filter(pl.col("covered_5").n_unique().over("occupation") > 1)
    reference = fit_logit_clustered(
        kept, "covered_5 ~ exposed + C(importance_quintile) + C(occupation)", "occupation", check_rank=False
    )
    expected = tidy_coefficients(reference)
    joined = tables.coefficients.join(expected, on="term", suffix="_sm")
    assert joined.height == expected.height == tables.coefficients.height == 4 + 1 + 1 + kept["occupation"].n_unique() - 1
    for column in ("coef", "se", "p", "ci_low", "ci_high"):
        assert np.allclose(joined[column], joined[f"{column}_sm"], rtol=1e-7, atol=1e-9), column
    assert tables.fit is not None and tables.fit.n_clusters == reference.n_clusters == kept["occupation"].n_unique()
    grid = tables.probabilities.select("importance_quintile", "exposed")
    margins = adjusted_probabilities(reference, grid, average_over=kept)
    for column in ("prob", "se", "ci_low", "ci_high"):
        assert np.allclose(tables.probabilities[column], margins[column], rtol=1e-7, atol=1e-10), column
    ratio = probability_ratio(reference, {"importance_quintile": 5}, {"importance_quintile": 1}, average_over=kept)
    mine = tables.contrasts.row(0, named=True)
    assert mine["ratio"] == pytest.approx(ratio["ratio"][0], rel=1e-8)
    assert (mine["ci_low"], mine["ci_high"]) == pytest.approx((ratio["ci_low"][0], ratio["ci_high"][0]), rel=1e-7)
    exposure = probability_ratio(reference, {"exposed": 1}, {"exposed": 0}, average_over=kept)
    within = tables.contrasts.row(1, named=True)
    assert within["contrast"].startswith("exposed vs not, within occupations")
    assert within["ratio"] == pytest.approx(exposure["ratio"][0], rel=1e-8)
    assert within["se_log_ratio"] == pytest.approx(exposure["se_log_ratio"][0], rel=1e-7)


def test_importance_model_recovers_a_planted_importance_effect() -> None:
    """~18,000 tasks in 900 occupations (the O*NET sizes): the quintile effects come back in order and
    close to the planted ones, the Q5/Q1 CI covers the true ratio of average margins, and it runs fast."""
    effects = (0.0, 0.35, 0.7, 1.05, 1.4)
    frame = simulate_importance_frame(quintile_effects=effects, seed=0)
    started = time.perf_counter()
    tables = importance_fe_model(frame)
    seconds = time.perf_counter() - started
    assert seconds < 5.0  # statsmodels with 900 dummy columns took 33 s here; this takes ~0.1 s
    sample = dict(zip(tables.sample["item"], tables.sample["value"], strict=True))
    assert sample["n_tasks_rated"] == 18_000 and sample["n_occupations_rated"] == 900
    assert sample["n_occupations_kept"] + sample["n_occupations_dropped_no_variation"] == 900
    assert sample["n_tasks_kept"] == 20 * sample["n_occupations_kept"]
    coefficients = dict(zip(tables.coefficients["term"], tables.coefficients["coef"], strict=True))
    estimated = [coefficients[f"C(importance_quintile)[T.{q}]"] for q in range(2, 6)]
    assert np.all(np.diff(estimated) > 0)
    # the unconditional FE logit's incidental-parameter bias is O(1/T): ~5% at 20 tasks per occupation
    assert estimated == pytest.approx(list(effects[1:]), abs=0.2)
    assert coefficients["exposed"] == pytest.approx(0.8, abs=0.12)
    contrast = tables.contrasts.row(0, named=True)
    truth = _true_ratio(frame, effects, 0.8)
    assert contrast["ci_low"] < truth < contrast["ci_high"]
    assert contrast["ratio"] == pytest.approx(truth, rel=0.08) and contrast["ci_low"] > 1.5
    # adjusted probabilities rise with the quintile for exposed and non-exposed tasks alike
    for level in (0, 1):
        probs = tables.probabilities.filter(pl.col("exposed") == level).sort("importance_quintile")["prob"]
        assert probs.is_sorted() and probs.n_unique() == 5


def test_importance_ratio_ci_covers_the_truth_at_about_the_nominal_rate() -> None:
    effects = (0.0, 0.2, 0.4, 0.6, 0.8)
    covered, null_covered = 0, 0
    replications = 40
    for seed in range(replications):
        frame = simulate_importance_frame(n_occupations=300, per_occupation=20, quintile_effects=effects, seed=seed)
        row = importance_fe_model(frame).contrasts.row(0, named=True)
        covered += row["ci_low"] < _true_ratio(frame, effects, 0.8) < row["ci_high"]
        # no importance effect at all: the ratio's CI should contain 1
        null = simulate_importance_frame(n_occupations=300, per_occupation=20, quintile_effects=(0.0,) * 5, seed=seed)
        null_row = importance_fe_model(null).contrasts.row(0, named=True)
        null_covered += null_row["ci_low"] < 1.0 < null_row["ci_high"]
    assert covered / replications >= 0.85
    assert null_covered / replications >= 0.85


def test_workbank_model_and_zone_coverage() -> None:
    frame = simulate_task_frame(seed=6)
    tables = workbank_model(frame)
    assert set(tables.coefficients["term"]) == {"Intercept", "desire_mean", "capability_mean"}
    assert tables.fit is not None and tables.fit.n == frame["in_workbank"].sum()
    assert set(tables.probabilities["varying"]) == {"desire_mean", "capability_mean"}
    zones = workbank_zone_coverage(frame)
    assert set(zones["model"]) == {"workbank_zone"} and set(zones["threshold"]) == {1, 5}
    green = zones.filter((pl.col("zone") == "green_light") & (pl.col("threshold") == 5)).row(0, named=True)
    expected = wilson_ci(green["n_covered"], green["n_tasks"])
    assert (green["share"], green["ci_low"], green["ci_high"]) == pytest.approx(
        (expected.estimate, expected.ci_low, expected.ci_high)
    )
    assert zones["n_tasks"].sum() == 2 * frame["in_workbank"].sum()


def test_every_ci_contains_its_estimate() -> None:
    outputs = run_coverage_models(simulate_task_frame(seed=9))
    for name, estimate in (
        ("coefficients", "coef"),
        ("adjusted_probabilities", "prob"),
        ("contrasts", "ratio"),
        ("workbank_zone_coverage", "share"),
    ):
        table = outputs[name].drop_nulls(estimate)
        assert table.height > 0, name
        inside = (table["ci_low"] <= table[estimate]) & (table[estimate] <= table["ci_high"])
        assert inside.all(), name
        assert "model" in outputs[name].columns
    assert set(outputs["coefficients"]["model"]) == {"exposure_wage", "importance_fe", "workbank"}


def test_the_mi_refits_skip_only_the_probability_grids() -> None:
    """The MI refits (models/regression_mi.py) ask each model for its coefficients and contrasts alone: the same
    rows to the bit, and no adjusted probabilities (the grids Rubin's rules would discard)."""
    frame = simulate_task_frame(seed=11, share_importance=1.0)
    for model in (exposure_wage_model, importance_fe_model, workbank_model):
        full, lean = model(frame), model(frame, with_probabilities=False)
        assert full.probabilities.height > 0 and lean.probabilities.is_empty(), model.__name__
        assert lean.coefficients.equals(full.coefficients), model.__name__
        assert lean.contrasts.height > 0 and lean.contrasts.equals(full.contrasts), model.__name__
        assert lean.sample.equals(full.sample), model.__name__
        assert set(lean.probabilities.columns) <= set(full.probabilities.columns)


def test_build_task_frame_one_row_per_task() -> None:
    task_cov = pl.DataFrame(
        {
            "onet_soc_code": ["15-1211.00", "15-1211.00", "11-1011.00"],
            "task_id": [1, 2, 3],
            "n_prompts": [5, 0, 1],
            "covered_1": [True, False, True],
            "covered_5": [True, False, False],
        }
    )
    tasks = task_cov.select("onet_soc_code", "task_id").with_columns(
        pl.Series("importance", [4.2, None, 3.1]), pl.Series("is_core", [True, False, True])
    )
    exposure = task_cov.select("onet_soc_code", "task_id").with_columns(
        pl.Series("exposed", [True, False, False]), pl.Series("gpt4_exposed", [True, True, False])
    )
    wages = pl.DataFrame(
        {"onet_soc_code": ["15-1211.00", "11-1011.00"], "wage_bill": [1e10, 2e9], "employment": [1e5, 2e4]}
    )
    workbank = pl.DataFrame(
        {
            "task_id": [1, 1],
            "onet_soc_code": ["15-1211.00"] * 2,
            "desire_mean": [3.0, 4.0],
            "capability_mean": [2.0, 2.0],
            "zone": ["green_light", "green_light"],
        }
    )
    frame = build_task_frame(task_cov, tasks, exposure, wages, workbank)
    assert frame.height == 3
    first = frame.filter(pl.col("task_id") == 1).row(0, named=True)
    assert (first["desire_mean"], first["zone"], first["in_workbank"], first["wage_bill"]) == (
        3.5,
        "green_light",
        True,
        1e10,
    )
    assert frame.filter(pl.col("task_id") == 3)["major_group_code"][0] == "11-0000"
    assert not frame.filter(pl.col("task_id") == 3)["in_workbank"][0]
    with pytest.raises(ValueError, match="pooled"):
        build_task_frame(
            task_cov.with_columns(pl.lit("b").alias("benchmark")), tasks, exposure, wages, workbank
        )


def _one_design_per_row(fit, grid: pl.DataFrame, base: pl.DataFrame | None) -> list[tuple[float, float, float, float]]:
    """The margins as computed before the batched designs: one patsy build per grid row (the reference)."""
    out = []
    for setting in grid.to_dicts():
        frame = base.to_pandas().assign(**setting) if base is not None else pd.DataFrame([setting])
        design = fit.design(frame)
        probs = logistic(design @ fit.params)
        margin = Margin(float(probs.mean()), ((probs * (1 - probs))[:, None] * design).mean(axis=0))
        out.append((margin.prob, *interval_from_margin(margin, fit.cov, 0.05)))
    return out


@pytest.mark.parametrize("max_cells", [logit.MAX_BATCH_CELLS, 1])
def test_batched_designs_give_the_per_row_margins(monkeypatch: pytest.MonkeyPatch, max_cells: int) -> None:
    """Building the grid's designs in one patsy call (in chunks for average margins) gives the numbers the
    one-build-per-row computation gave: pointwise and averaged, with a transform and a categorical term."""
    monkeypatch.setattr(logit, "MAX_BATCH_CELLS", max_cells)  # 1: one setting per chunk
    data = simulate_clustered_logit(n_clusters=60, per_cluster=10, cluster_sd=0.4, seed=9).with_columns(
        (pl.col("x") > 0.3).cast(pl.Int8).alias("d"), (pl.col("x").abs() + 0.5).alias("w")
    )
    fit = fit_logit_clustered(data, "y ~ x + d + np.log(w) + C(cluster.str.slice(0, 3))", "cluster")
    grid = pl.DataFrame({"x": [-1.0, 0.0, 0.7, 2.0], "d": [0, 1, 0, 1], "w": [0.6, 1.0, 2.5, 4.0],
                         "cluster": ["c00", "c01", "c05", "c00"]})
    for base, frame in ((None, grid), (data, grid.select("x", "d"))):
        ours = adjusted_probabilities(fit, frame, average_over=base)
        expected = np.array(_one_design_per_row(fit, frame, base))
        got = ours.select("prob", "se", "ci_low", "ci_high").to_numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-8, atol=0)
    ratio = probability_ratio(fit, {"x": 1.0, "d": 1}, {"x": 0.0, "d": 0}, average_over=data).row(0, named=True)
    (prob_a, *_), (prob_b, *_) = _one_design_per_row(fit, pl.DataFrame({"x": [1.0, 0.0], "d": [1, 0]}), data)
    assert ratio["prob_a"] == pytest.approx(prob_a, rel=1e-12) and ratio["prob_b"] == pytest.approx(prob_b, rel=1e-12)


def test_logistic_is_scipy_logistic_cdf() -> None:
    values = np.array([-800.0, -30.0, -1.5, 0.0, 1e-9, 2.0, 40.0, 800.0, np.inf, -np.inf, np.nan])
    np.testing.assert_array_equal(logistic(values), scipy_stats.logistic.cdf(values))
    assert float(logistic(np.array(0.3))) == float(scipy_stats.logistic.cdf(0.3))


def test_the_doubling_line_says_how_its_ratio_comes_from_the_table() -> None:
    """The odds ratio per doubling of the wage bill is in no table (a probe, 2026-12-07, looked for 1.43): the
    line names the coefficient it is 2 to the power of."""
    import math

    import polars as pl

    from models.report.findings import _wage_bill_findings

    coef = 0.5156
    regressions = pl.DataFrame({"model": ["exposure_wage"], "term": ["np.log(wage_bill)"], "coef": [coef],
                                "ci_low": [0.33], "ci_high": [0.70]})
    [line] = _wage_bill_findings({}, regressions, "coverage_regressions_mi")
    assert f"by {2 ** coef:.2f} " in line and math.isclose(2 ** coef, math.exp(coef * math.log(2)))
    assert "coverage_regressions_mi: 2 to the power of model exposure_wage's np.log(wage_bill) coefficient, 0.5156)" in line
