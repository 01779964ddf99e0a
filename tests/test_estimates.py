"""Headline estimates (issue 16): estimators on simulated data with a known truth, the judge sample's draw and
design, reliability, Rubin's rules, and the estimates assets on the mirror."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from models import estimates as es
from models import exports as ex

# --- simulation: known truth, labeler of known error ------------------------------------------------------


@pytest.fixture(scope="module")
def study() -> pl.DataFrame:
    return es.simulation_study(replications=24, n_draws=60, seed=5)


def _row(study: pl.DataFrame, quantity: str, threshold: int, estimator: str) -> dict:
    return study.filter(
        (pl.col("quantity") == quantity) & (pl.col("threshold") == threshold) & (pl.col("estimator") == estimator)
    ).row(0, named=True)


@pytest.mark.parametrize("quantity", ["tasks_covered", "hours_share_covered", "occupations_covered"])
@pytest.mark.parametrize("threshold", [1, 5])
def test_model_assisted_intervals_cover_the_truth(study, quantity, threshold):
    row = _row(study, quantity, threshold, "model_assisted")
    # 95% intervals over 24 replications: nominal would miss 1.2 on average; allow a little model error
    assert row["coverage"] >= 0.75, row


@pytest.mark.parametrize("quantity", ["tasks_covered", "hours_share_covered", "occupations_covered"])
def test_bounds_at_one_prompt_hold_the_truth(study, quantity):
    row = _row(study, quantity, 1, "bounds")
    # at least 21 of 24: at a true 95% fewer happen 3% of the time, at 80% they happen 74% of the time (with 12
    # replications and 11 of 12 the test failed 12% of the time at a true 95%)
    assert row["coverage"] >= 21 / 24 - 1e-9, row


def test_bounds_floor_is_what_the_sample_saw_or_the_next_thresholds_lower_bound():
    frame = pl.DataFrame({
        "benchmark_index": ["all"] * 3, "scope": ["all"] * 3, "quantity": ["tasks_covered"] * 3,
        "threshold": [1, 1, 5], "estimator": ["design", "model_assisted", "model_assisted"],
        "value": [100.0, 300.0, 130.0], "ci_low": [90.0, 280.0, 120.0], "ci_high": [110.0, 320.0, 140.0],
    })
    bounds = es.with_bounds(frame).filter(pl.col("estimator") == "bounds").row(0, named=True)
    # the value no lower than the estimate at >= 5 (an audit: tau2_bench read 1.17% of hours at >= 1, 1.43% at >= 5)
    assert (bounds["value"], bounds["ci_low"], bounds["ci_high"]) == (130.0, 120.0, 320.0)
    lower = es.with_bounds(frame.with_columns(pl.when(pl.col("threshold") == 5).then(50.0).otherwise(pl.col("ci_low"))
                                              .alias("ci_low")))
    assert lower.filter(pl.col("estimator") == "bounds")["ci_low"][0] == 100.0  # the sample's own count
    below = es.with_bounds(frame.with_columns(pl.when(pl.col("threshold") == 5).then(pl.col("value") / 2)
                                              .otherwise(pl.col("value")).alias("value")))
    assert below.filter(pl.col("estimator") == "bounds")["value"][0] == 120.0  # the floor, above the estimate at 5


def test_bounds_floor_rises_to_the_species_estimate():
    frame = pl.DataFrame({
        "benchmark_index": ["all"] * 4, "scope": ["all"] * 4, "quantity": ["tasks_covered"] * 4,
        "threshold": [1, 1, 5, 1], "estimator": ["design", "model_assisted", "model_assisted", "richness"],
        "value": [100.0, 300.0, 130.0, 200.0], "ci_low": [90.0, 280.0, 120.0, 160.0],
        "ci_high": [110.0, 320.0, 140.0, 250.0],
    })
    bounds = es.with_bounds(frame).filter(pl.col("estimator") == "bounds").row(0, named=True)
    assert (bounds["value"], bounds["ci_low"], bounds["ci_high"]) == (200.0, 160.0, 320.0)
    # a species lower limit below the certain floor does not lower it
    low = es.with_bounds(frame.with_columns(pl.when(pl.col("estimator") == "richness").then(100.0)
                                            .otherwise(pl.col("ci_low")).alias("ci_low")))
    assert low.filter(pl.col("estimator") == "bounds").select("value", "ci_low").row(0) == (200.0, 120.0)
    framed = frame.with_columns(pl.lit("").alias("basis"))
    assert es.with_bounds(framed).filter(pl.col("estimator") == "bounds")["basis"][0] == es.BOUNDS_BASIS
    # a species estimate above both 97.5th percentiles: ci_high is raised to it and the basis says they disagree
    above = es.with_bounds(framed.with_columns(pl.when(pl.col("estimator") == "richness").then(400.0)
                                               .otherwise(pl.col("value")).alias("value")))
    row = above.filter(pl.col("estimator") == "bounds").row(0, named=True)
    assert (row["value"], row["ci_high"]) == (400.0, 400.0)
    assert row["basis"].startswith(es.BOUNDS_BASIS) and "disagree" in row["basis"] and "up to 320" in row["basis"]


def test_species_floors_of_nested_scopes_never_say_a_part_covers_more():
    """A scope inside another covers no more than it: its species value and lower limit are capped at the
    larger scope's (NaN cells stay NaN, upper limits stay as estimated, an unsampled scope is left alone)."""
    from models.estimates.richness import capped_by_supersets

    values = np.array([
        [[10.0, 8.0, 12.0], [np.nan] * 3],  # the pool of benchmarks 0 and 1
        [[11.0, 9.0, 15.0], [5.0, 4.0, 6.0]],  # benchmark 0 alone, above the pool: capped
        [[7.0, 6.0, 9.0], [np.nan] * 3],  # benchmark 1 alone, below it: unchanged
        [[np.nan] * 3, [np.nan] * 3],  # no sampled benchmark
    ])
    capped = capped_by_supersets(values, [frozenset({0, 1}), frozenset({0}), frozenset({1}), frozenset()])
    assert capped[1, 0].tolist() == [10.0, 8.0, 15.0]
    assert np.array_equal(capped[[0, 2]], values[[0, 2]], equal_nan=True)
    assert capped[1, 1].tolist() == [5.0, 4.0, 6.0] and np.isnan(capped[3]).all()
    # which scope capped which: the capped value's reader is told it is the larger scope's (capped_note), and
    # the summary repeats it beside the figure
    from models.estimates.richness import capping_scopes
    from models.estimates.tables import _carried_cap, capped_note
    from models.report.answer import capped_phrase

    caps = capping_scopes(values, capped, [frozenset({0, 1}), frozenset({0}), frozenset({1}), frozenset()])
    assert caps.tolist() == [[-1, -1], [0, -1], [-1, -1], [-1, -1]]
    scopes = [es.Scope("all", "all", (0, 1)), es.Scope("all", "b0", (0,))]
    note = capped_note(scopes, int(caps[1, 0]), "11")
    assert note.startswith("; capped at the value of index all (") and capped_note(scopes, -1) == ""
    assert note.endswith("this scope's own estimate was higher: 11")
    basis = "species estimate" + note
    assert _carried_cap(10.0, 10.0, basis) == note and _carried_cap(12.0, 10.0, basis) == ""  # floor above it
    # the reader gets the scope's own estimate too (it was published nowhere), beside the value it replaced
    assert capped_phrase({"basis": basis}).startswith(" (capped at index all's value: its own estimate, 11, was "
                                                      "higher")
    assert capped_phrase({"basis": "species estimate" + capped_note(scopes, 0)}).startswith(
        " (capped at index all's value: its own estimate was higher")
    assert capped_phrase({"basis": "species estimate"}) == ""
    from models.report.answer import _phrase

    row = {"quantity": "tasks_covered", "estimator": "bounds", "value": 10.0, "ci_low": 8.0, "ci_high": 15.0,
           "denominator": 18796.0, "basis": basis}
    assert _phrase(row).startswith("at least about 10 (capped at index all's value: its own estimate, 11, was "
                                   "higher, and a part never covers more than the whole) (lower limit 8), up to "
                                   "about 15")


def test_species_estimate_of_occupations_never_above_the_tasks():
    """Every covered occupation has a covered task, so a scope's occupations' species estimate is capped at its
    tasks' (the audit of 2026-12-07 found da_code's published floor at 92 occupations on 56 tasks), and the
    capped value's reader is told why."""
    from models.estimates.richness import BY_TASKS, OCCUPATIONS, TASKS, capped_by_tasks
    from models.estimates.tables import capped_note
    from models.report.answer import capped_phrase

    values = np.full((3, len(es.QUANTITIES), 3), np.nan)
    values[0, TASKS], values[0, OCCUPATIONS] = [56.5, 26.8, 197.0], [92.3, 45.3, 198.6]  # above: capped
    values[1, TASKS], values[1, OCCUPATIONS] = [40.0, 30.0, 60.0], [12.0, 10.0, 20.0]  # below: unchanged
    values[2, TASKS] = [5.0, 4.0, 6.0]  # no occupations' estimate: stays NaN
    capped = capped_by_tasks(values)
    assert capped[0, OCCUPATIONS].tolist() == [56.5, 26.8, 197.0]
    assert np.array_equal(capped[1], values[1], equal_nan=True) and np.isnan(capped[2, OCCUPATIONS]).all()
    assert np.array_equal(capped[:, TASKS], values[:, TASKS], equal_nan=True)
    note = capped_note([], BY_TASKS, "92")
    assert note == ("; capped at the value of the tasks' species estimate (every covered occupation has a covered "
                    "task): this scope's own estimate was higher: 92")
    assert capped_phrase({"basis": "species estimate" + note}) == (
        " (capped at the tasks' species estimate's value: its own estimate, 92, was higher, and every covered "
        "occupation has a covered task)")


def test_published_floors_of_occupations_never_above_the_tasks(mirror_tables):
    """On the mirror, for every index and scope: the published bounds of occupations at >= 1 prompt (value and
    lower limit) are no higher than the tasks'."""
    bounds = mirror_tables("headline_estimates").filter(
        (pl.col("estimator") == "bounds") & (pl.col("threshold") == 1)
        & pl.col("quantity").is_in(["tasks_covered", "occupations_covered"]))
    wide = bounds.pivot(on="quantity", index=["benchmark_index", "scope"], values=["value", "ci_low"])
    assert wide.height >= 30
    assert (wide["value_occupations_covered"] <= wide["value_tasks_covered"] + 1e-9).all()
    assert (wide["ci_low_occupations_covered"] <= wide["ci_low_tasks_covered"] + 1e-9).all()


def test_chao_lin_unseen_count_by_hand():
    from models.estimates.richness import log_normal_interval, unseen_count

    n, fraction = 788, 788 / 10365
    f0, var = unseen_count(316, 74, n, fraction, observed=502)
    assert f0 == pytest.approx(316**2 / (2 * 74 * n / (n - 1) + 316 * fraction / (1 - fraction)))
    assert 500 < f0 < 650 and var > 0
    low, high = log_normal_interval(502, f0, var)
    assert 502 < low < 502 + f0 < high
    assert unseen_count(316, 74, n, 1.0, 502) == (0.0, 0.0)  # the whole population read: nothing unseen
    assert unseen_count(0, 74, n, fraction, 502) == (0.0, 0.0)  # no singletons: nothing unseen
    f0_no_doubles, _ = unseen_count(10, 0, 100, 0.2, 50)
    assert f0_no_doubles == pytest.approx(10 * 0.8 / 0.2)  # Q2 = 0: Q1 (1 - q) / q


def test_chao_lin_is_unbiased_for_equally_common_tasks_and_low_for_mixed():
    """Incidence sampled without replacement from a finite population of texts: when every task is equally
    common the estimate is close to the truth; with a few common and many rare tasks it is a lower bound,
    still nearer the truth than the tasks seen."""
    from models.estimates.richness import richness_estimates

    rng = np.random.default_rng(11)

    def population(rates: np.ndarray, n_texts: int) -> tuple[np.ndarray, np.ndarray]:
        hits = rng.random((n_texts, rates.size)) < rates
        text, task = np.nonzero(hits)
        return text, task

    for rates, tolerance in ((np.full(400, 0.004), 0.06), (np.r_[np.full(40, 0.05), np.full(800, 0.001)], None)):
        n_texts, k = 2000, rates.size
        text, task = population(rates, n_texts)
        truth = np.unique(task).size
        estimates, seen = [], []
        for _ in range(20):
            sampled = np.zeros(n_texts, dtype=bool)
            sampled[rng.choice(n_texts, 300, replace=False)] = True
            keep = sampled[text]
            problem = es.Problem(
                benchmarks=["b"], task_keys=pl.DataFrame({"onet_soc_code": ["x"] * k, "task_id": np.arange(k)}),
                text_bench=np.zeros(n_texts, dtype=np.int64), text_mult=np.ones(n_texts), text_sampled=sampled,
                lab_text=np.zeros(0, np.int64), lab_task=np.zeros(0, np.int64), lab_p=np.zeros(0),
                jud_text=text[keep], jud_task=task[keep], jud_in_labels=np.zeros(keep.sum(), dtype=bool),
                task_occ=np.arange(k) // 10, occ_group=np.zeros(k // 10 + 1, dtype=np.int64), n_groups=1,
                task_hours=np.ones(k), total_hours=float(k),
            )
            estimates.append(richness_estimates(problem, es.scopes_for(problem, per_benchmark=False))[0, 0, 0])
            seen.append(np.unique(task[keep]).size)
        mean = float(np.mean(estimates))
        if tolerance is not None:
            assert abs(mean / truth - 1) < tolerance, (mean, truth)
        else:
            assert np.mean(seen) < mean < truth, (np.mean(seen), mean, truth)


@pytest.mark.parametrize("quantity", ["tasks_covered", "hours_share_covered"])
@pytest.mark.parametrize("threshold", [1, 5])
def test_model_assisted_is_closer_than_labeler_and_design(study, quantity, threshold):
    assisted = _row(study, quantity, threshold, "model_assisted")
    labeler = _row(study, quantity, threshold, "labeler")
    design = _row(study, quantity, threshold, "design")
    assert assisted["mean_abs_error"] < labeler["mean_abs_error"], (assisted, labeler)
    assert assisted["mean_abs_error"] < design["mean_abs_error"], (assisted, design)
    if quantity == "tasks_covered":
        # the labeler alone is overconfident (true rate 0.7 p) and blind to its misses: its interval misses
        assert labeler["coverage"] <= 0.5


def test_design_counts_are_unbiased_for_linear_totals():
    """The expansion estimator of the total number of (prompt, task) labels is unbiased under the design."""
    rng = np.random.default_rng(11)
    errors, totals = [], []
    for _ in range(30):
        sim = es.simulate(rng, texts_per_benchmark=(200, 400))
        errors.append(es.design_counts(sim.problem).sum() - sim.truth_counts.sum())
        totals.append(sim.truth_counts.sum())
    mean_error, se = float(np.mean(errors)), float(np.std(errors, ddof=1) / math.sqrt(len(errors)))
    assert abs(mean_error) < 3 * se + 1e-9, (mean_error, se)
    assert abs(mean_error) / np.mean(totals) < 0.03


def test_design_at_one_prompt_counts_exactly_the_tasks_the_sample_saw():
    sim = es.simulate(np.random.default_rng(2))
    problem = sim.problem
    scopes = es.scopes_for(problem, per_benchmark=False)
    agg = es.Aggregator(problem, scopes, (1, 5))
    headline = agg.headline(es.design_counts(problem))
    assert headline[0, 0, 0] == np.unique(problem.jud_task).size
    # at >= 5 a task seen once counts when N_b/n_b >= 5, so it is at most the >= 1 count
    assert headline[0, 0, 1] <= headline[0, 0, 0]


def test_labels_as_truth_and_scopes_add_up():
    sim = es.simulate(np.random.default_rng(3), unsampled_benchmarks=1)
    problem = sim.problem
    membership = pl.DataFrame(
        {"benchmark_index": ["pair", "pair", "pair"], "benchmark": ["bench0", "bench1", "bench2"],
         "included": [True, True, False]}
    )
    scopes = es.scopes_for(problem, membership)
    assert [s.scope for s in scopes][:2] == ["all", "bench0"]
    assert scopes[-1].benchmark_index == "pair" and scopes[-1].members == (0, 1)
    result = es.run_estimators(problem, scopes, n_draws=20, seed=1)
    frame = es.estimates_frame(problem, scopes, result)
    assert frame.schema == pl.Schema(es.HEADLINE_ESTIMATE_SCHEMA)
    truth_counts = es.labels_as_truth_counts(problem)
    tasks_all = frame.filter(
        (pl.col("scope") == "all") & (pl.col("benchmark_index") == "all") & (pl.col("estimator") == "labels_as_truth")
        & (pl.col("quantity") == "tasks_covered") & (pl.col("threshold") == 1)
    )["value"][0]
    assert tasks_all == int((truth_counts.sum(axis=0) >= 1).sum())
    # exactly one published estimator per scope x quantity x threshold; model-assisted where sampled
    published = frame.filter(pl.col("published"))
    assert published.group_by("benchmark_index", "scope", "quantity", "threshold").len()["len"].max() == 1
    assert published.height == frame.select("benchmark_index", "scope", "quantity", "threshold").unique().height
    by_scope = {(scope, t): e for scope, t, e in published.select("scope", "threshold", "estimator").unique().iter_rows()}
    assert by_scope["bench0", 5] == by_scope["all", 5] == "model_assisted"
    assert by_scope["bench0", 1] == by_scope["all", 1] == "bounds"  # a species count: floor and ceiling
    assert by_scope["bench5", 5] == by_scope["bench5", 1] == "labeler"  # the benchmark without a judge sample
    assert "no judge sample" in published.filter(pl.col("scope") == "all")["basis"][0]
    # no design / model-assisted rows for the benchmark without a sample
    assert frame.filter((pl.col("scope") == "bench5") & pl.col("estimator").is_in(["design", "model_assisted"])).is_empty()
    # intervals bracket the value for the draw-based estimators (value = mean of the draws)
    drawn = frame.filter(pl.col("estimator").is_in(["labeler", "model_assisted"]))
    assert drawn.filter((pl.col("ci_low") > pl.col("value") + 1e-9) | (pl.col("ci_high") < pl.col("value") - 1e-9)).is_empty()
    shares = frame.filter(pl.col("quantity") == "hours_share_covered")
    assert shares.filter((pl.col("value") < 0) | (pl.col("value") > 1)).is_empty()


def test_calibration_factor_recovers_the_labelers_overconfidence():
    sim = es.simulate(np.random.default_rng(4), texts_per_benchmark=(2000,), sample_fraction=0.2, overconfidence=0.6)
    boot = sim.problem.text_sampled.astype(float)
    factor = es.calibration_factors(sim.problem, boot)[0]
    assert 0.5 < factor < 0.7


def test_simulate_draws_the_population_its_docstring_states():
    """The vectorised simulate (2026-12-05): per work text 1 + Poisson(2) distinct emitted tasks from its
    benchmark's pool, each truly exercised with 0.7 p; Poisson(1) misses outside its labels and inside the pool;
    the judge's rows of a sampled text are exactly its true tasks; the truth counts add every true task's
    multiplicity. Checked on one large population (means within ~4 standard errors)."""
    texts = (3000, 2000)
    sim = es.simulate(np.random.default_rng(21), texts_per_benchmark=texts, sample_fraction=1.0)
    pr = sim.problem
    n_texts = sum(texts)
    assert pr.text_bench.size == n_texts and pr.text_sampled.all()
    labeled = np.bincount(pr.lab_text, minlength=n_texts)
    work = labeled > 0
    assert abs(work.mean() - 0.9) < 0.02  # not_work_share 0.1
    assert abs(labeled[work].mean() - 3.0) < 0.1  # 1 + Poisson(2)
    assert np.unique(pr.lab_text * pr.n_tasks + pr.lab_task).size == pr.lab_text.size  # distinct per text
    assert pr.lab_p.min() >= 0.05 and pr.lab_p.max() <= 0.95
    missed = ~pr.jud_in_labels
    assert abs(np.bincount(pr.jud_text[missed], minlength=n_texts)[work].mean() - 1.0) < 0.06  # Poisson(1)
    label_keys = pr.lab_text * pr.n_tasks + pr.lab_task
    judge_keys = pr.jud_text * pr.n_tasks + pr.jud_task
    assert np.array_equal(np.isin(judge_keys, label_keys), pr.jud_in_labels)  # misses are outside the labels
    # true emitted labels: 0.7 x p on average (overconfidence 0.7)
    kept = np.isin(label_keys, judge_keys)
    assert abs(kept.mean() - 0.7 * pr.lab_p.mean()) < 0.015
    # each benchmark's labels and misses stay inside one pool of 80 tasks
    for b in range(len(texts)):
        tasks = np.union1d(pr.lab_task[pr.text_bench[pr.lab_text] == b], pr.jud_task[pr.text_bench[pr.jud_text] == b])
        assert tasks.size <= 80
    truth = np.zeros_like(sim.truth_counts)
    np.add.at(truth, (pr.text_bench[pr.jud_text], pr.jud_task), pr.text_mult[pr.jud_text])
    assert np.array_equal(truth, sim.truth_counts)  # every text judged: the truth is the judge's rows


def test_a_judge_sample_of_every_text_gives_the_truth_exactly():
    """BENCHMAP_JUDGE_SAMPLE=1 (the judge reads every text) failed the analysis: with no unjudged text the
    labeler's draw was an int64 matrix, and adding the judged counts raised a casting error. The estimate is then
    the judge's reading itself: no labeler error left, every interval a point on the truth."""
    sim = es.simulate(np.random.default_rng(8), texts_per_benchmark=(60, 40), sample_fraction=1.0)
    assert sim.problem.text_sampled.all()
    scopes = es.scopes_for(sim.problem, per_benchmark=False)
    rows = es.check_against_truth(sim.problem, sim.truth_counts, scopes, n_draws=5, seed=1).filter(
        pl.col("estimator") == "model_assisted")
    assert rows.height > 0 and (rows["error"].abs() < 1e-9).all() and rows["covered"].all()


# --- reliability -------------------------------------------------------------------------------------------


def test_reliability_shows_calibration_and_its_absence():
    rng = np.random.default_rng(6)
    good_problem = es.simulate(rng, overconfidence=1.0, sample_fraction=0.3).problem
    calibrated = es.reliability_table(good_problem)
    overconfident = es.reliability_table(es.simulate(rng, overconfidence=0.6, sample_fraction=0.3).problem)
    ece_good = calibrated.filter(pl.col("benchmark") == "all")["ece"][0]
    ece_bad = overconfident.filter(pl.col("benchmark") == "all")["ece"][0]
    assert ece_good < 0.06 < ece_bad
    pooled = overconfident.filter(pl.col("benchmark") == "all")
    assert pooled.filter((pl.col("observed") < pl.col("ci_low")) | (pl.col("observed") > pl.col("ci_high"))).is_empty()
    # recall: the simulated judge holds Poisson(1) missed tasks per work text, so recall is well below 1
    assert 0.3 < pooled["recall"][0] < 0.8
    good_pooled = calibrated.filter(pl.col("benchmark") == "all")
    assert good_pooled["n"].sum() == int(good_problem.text_sampled[good_problem.lab_text].sum())


# --- Rubin's rules -------------------------------------------------------------------------------------------


def test_rubin_rules():
    same = es.rubin_combine(np.array([0.5, 0.5, 0.5]), np.array([0.04, 0.04, 0.04]))
    assert same["coef"] == pytest.approx(0.5) and same["se"] == pytest.approx(0.2)
    spread = es.rubin_combine(np.array([0.0, 1.0]), np.array([0.01, 0.01]))
    # W = 0.01, B = 0.5, T = W + 1.5 B = 0.76
    assert spread["se"] == pytest.approx(math.sqrt(0.76))
    assert spread["ci_low"] < spread["coef"] - 1.96 * spread["se"]  # t with few df is wider than normal
    assert spread["fraction_missing_info"] == pytest.approx(0.75 / 0.76)


# --- the judge sample ----------------------------------------------------------------------------------------


def _texts(sizes: dict[str, int]) -> pl.DataFrame:
    rows = [(b, f"{b}-h{i}", 1, False) for b, n in sizes.items() for i in range(n)]
    return pl.DataFrame(rows, schema=["benchmark", "prompt_hash", "multiplicity", "sampled"], orient="row")


def test_draw_judge_sample_sizes_and_stability():
    texts = _texts({"a": 500, "b": 30, "c": 5})
    drawn = es.draw_judge_sample(texts, 0.1, 12, seed=1)
    sizes = dict(drawn.group_by("benchmark").len().iter_rows())
    assert sizes == {"a": 50, "b": 12, "c": 5}
    assert drawn.equals(es.draw_judge_sample(texts, 0.1, 12, seed=1))
    assert not drawn.equals(es.draw_judge_sample(texts, 0.1, 12, seed=2))
    # adding texts to one benchmark leaves another benchmark's draw alone
    grown = es.draw_judge_sample(_texts({"a": 900, "b": 30, "c": 5}), 0.1, 12, seed=1)
    assert grown.filter(pl.col("benchmark") == "b").equals(drawn.filter(pl.col("benchmark") == "b"))
    with pytest.raises(ValueError):
        es.draw_judge_sample(texts, 1.5, 1)


def test_label_judge_sample_with_any_labeler(tmp_path):
    from assets.judge_sample import judge_sample_setting, label_judge_sample
    from models.labeling.base import LabelOutcome, TaskLabel
    from resources import label_cache as lc

    class FakeJudge:
        name = "openai"
        model = "fake-judge"
        template_version = "t1"
        labeler_version = "fake-judge+t1"

        def __init__(self) -> None:
            self.seen: list[str] = []

        def prepare(self, prompts) -> None:  # no benchmark context
            pass

        def label(self, prompts):
            self.seen += [p.prompt_hash for p in prompts]
            return [
                LabelOutcome(p.prompt_hash, [] if p.prompt.startswith("chat") else
                             [TaskLabel(task_id=100 + i, onet_soc_code="15-1252.00", rank=1, score=1.0)])
                for i, p in enumerate(prompts)
            ]

    prompts = pl.DataFrame(
        {
            "benchmark": ["x"] * 40 + ["y"] * 6,
            "prompt_id": [str(i) for i in range(46)],
            "prompt_hash": [f"h{i % 30}" if i < 40 else f"y{i}" for i in range(46)],  # x: 30 texts, 10 repeats
            "prompt": [("chat " if i % 3 == 0 else "work ") + str(i % 30) for i in range(40)] + ["work"] * 6,
        }
    )
    judge = FakeJudge()
    cache = lc.LabelCache(str(tmp_path / "wh.duckdb"))
    labels, design, stats = label_judge_sample(prompts, judge, cache, 0.2, 4, seed=3)
    design_rows = {r["benchmark"]: r for r in design.iter_rows(named=True)}
    assert design_rows["x"]["distinct_texts"] == 30 and design_rows["x"]["n_sampled"] == 6
    assert design_rows["x"]["prompts"] == 40
    assert design_rows["y"]["n_sampled"] == 4 and design_rows["y"]["n_labeled"] == 4
    assert len(judge.seen) == 10 and len(set(judge.seen)) == 10  # each sampled text judged once
    assert stats.n_labeled == 10  # what run_all's closing line counts as the judge's (paid) answers
    assert labels.filter(~pl.col("is_work"))["task_id"].null_count() == labels.filter(~pl.col("is_work")).height
    # a second run makes no judge call (the label cache)
    again = FakeJudge()
    assert label_judge_sample(prompts, again, cache, 0.2, 4, seed=3)[2].n_labeled == 0
    assert again.seen == []
    assert judge_sample_setting("0.1:8") == (0.1, 8)
    assert judge_sample_setting("") is None
    with pytest.raises(ValueError):
        judge_sample_setting("2")


# --- split-sample check on simulated data ----------------------------------------------------------------------


def test_split_sample_problem_holds_out_half():
    sim = es.simulate(np.random.default_rng(8), sample_fraction=0.2)
    split, truth = es.split_sample_problem(sim.problem, np.random.default_rng(1))
    assert split.text_bench.size == int(sim.problem.text_sampled.sum())
    assert 0.4 < split.text_sampled.mean() < 0.6
    assert truth.sum() == sim.problem.jud_text.size  # every judge label of the sampled texts, multiplicity 1
    assert split.jud_text.size < sim.problem.jud_text.size
    assert set(split.jud_text.tolist()) <= set(np.flatnonzero(split.text_sampled).tolist())


def test_split_check_bounds_are_the_published_bounds():
    """The check's bounds rows come from the published table's own function (with_bounds): the floor is the
    larger of the sample's own count and the model-assisted lower bound at >= 5 prompts, not the sample's
    count alone, so the split check measures the interval the headline publishes."""
    sim = es.simulate(np.random.default_rng(13))
    scopes = es.scopes_for(sim.problem, per_benchmark=False)
    checks = es.check_against_truth(sim.problem, sim.truth_counts, scopes, n_draws=30, seed=3)
    result = es.run_estimators(sim.problem, scopes, n_draws=30, seed=3)
    published = es.estimates_frame(sim.problem, scopes, result).filter(pl.col("estimator") == "bounds")
    keys = ["benchmark_index", "scope", "quantity", "threshold"]
    bounds = checks.filter(pl.col("estimator") == "bounds").join(published, on=keys, suffix="_published")
    assert bounds.height == published.height == len(es.QUANTITIES)
    for column in ("value", "ci_low", "ci_high"):
        assert (bounds[column] == bounds[f"{column}_published"]).all(), bounds
    design = checks.filter((pl.col("estimator") == "design") & (pl.col("threshold") == 1))
    raised = bounds.join(design.select(*keys, pl.col("value").alias("design")), on=keys)
    # here the model-assisted lower bound at >= 5 tasks is above what the sample saw: a design-only floor differs
    assert (raised["ci_low"] > raised["design"] + 1e-9).any(), raised
    inside = (bounds["ci_low"] - 1e-9 <= bounds["truth"]) & (bounds["truth"] <= bounds["ci_high"] + 1e-9)
    assert (bounds["covered"] == inside).all()
    assert ((bounds["error"] - (bounds["value"] - bounds["truth"])).abs() < 1e-9).all()


# --- the headline's count draws travel through the warehouse to coverage_regressions_mi -------------------------


def test_count_draws_survive_the_table_and_give_the_same_regressions():
    """headline_count_draws (long, zero counts left out) gives back every draw's count per task, so the MI
    regressions refitted from the table equal those from the draws in memory (what the headline step did)."""
    from models.estimates.count_draws import count_draws_frame, count_draws_of
    from models.regression_mi import regressions_mi

    sim = es.simulate(np.random.default_rng(11))
    scopes = es.scopes_for(sim.problem)
    result = es.run_estimators(sim.problem, scopes, n_draws=6, seed=3, keep_counts=4)
    draws = result.count_draws["model_assisted"]
    assert len(draws) == 4 and any((d == 0).any() for d in draws) and any((d >= 5).any() for d in draws)
    table = count_draws_frame(sim.problem.task_keys, draws)
    assert table.height == sum(int((d > 0).sum()) for d in draws) and (table["prompts"] > 0).all()
    keys, back = count_draws_of(table)
    position = {k: i for i, k in enumerate(sim.problem.task_keys.iter_rows())}
    for original, restored in zip(draws, back, strict=True):
        expanded = np.zeros(sim.problem.task_keys.height)
        expanded[[position[k] for k in keys.iter_rows()]] = restored
        assert np.array_equal(expanded, original)
    # a task frame as the regressions read it: every task, and one task no draw has (it counts 0)
    rng = np.random.default_rng(5)
    n = sim.problem.task_keys.height
    frame = sim.problem.task_keys.with_columns(
        pl.Series("exposed", rng.integers(0, 2, n)).cast(pl.Int64),
        pl.Series("wage_bill", np.exp(rng.normal(22, 1, n))),
        pl.Series("importance", rng.uniform(1, 5, n)),
        pl.Series("desire_mean", rng.uniform(1, 5, n)), pl.Series("capability_mean", rng.uniform(1, 5, n)),
    )
    in_memory = regressions_mi(frame, sim.problem.task_keys, draws, "model_assisted")
    from_table = regressions_mi(frame, keys, back, "model_assisted")
    assert in_memory.height > 0
    assert in_memory.equals(from_table)


# --- every column of the estimate tables is in the data dictionary ---------------------------------------------


def test_estimate_tables_are_documented():
    from models.data_dictionary import DATA_DICTIONARY, undocumented_columns
    from models.regression_mi import regressions_mi

    sim = es.simulate(np.random.default_rng(9))
    scopes = es.scopes_for(sim.problem)
    draws = es.UnitDraws(sim.problem, scopes, 5, with_texts=True)
    result = es.run_estimators(sim.problem, scopes, n_draws=5, unit_draws=draws)
    units = es.unit_estimates(draws, es.labels_as_truth_counts(sim.problem), es.THRESHOLDS)
    units |= es.benchmark_share_estimates(draws)
    sim_texts = pl.DataFrame({"benchmark": [sim.problem.benchmarks[b] for b in sim.problem.text_bench],
                              "prompt_hash": [str(t) for t in range(sim.problem.text_bench.size)]})
    units["prompt_occupation_estimates"] = draws.text_estimates.table(sim_texts)
    units["occupation_probability_calibration"] = es.occupation_probability_calibration(
        sim.problem, n_draws=3, leave_benchmark_out=False)
    units["unit_coverage_simulation_check"] = es.unit_coverage_simulation_check(
        sim.problem, replications=1, n_draws=3, simulated=1)
    headline = es.estimates_frame(sim.problem, scopes, result).with_columns(
        pl.lit("offline").alias("labeler"), pl.lit("v").alias("labeler_version")
    )
    texts = pl.DataFrame({"benchmark": ["a", "a"], "prompt_hash": ["x", "y"], "multiplicity": [1, 2],
                          "sampled": [True, False]})
    design = es.sample_design(texts).with_columns(pl.lit("reference").alias("source"))
    split = es.summarize_checks(
        es.check_against_truth(sim.problem, sim.truth_counts, scopes[:1], n_draws=5, seed=1)
    ).with_columns(pl.lit("split_half").alias("check"))
    mi = regressions_mi(pl.DataFrame(schema={"onet_soc_code": pl.Utf8, "task_id": pl.Int64}),
                        sim.problem.task_keys, [], "x")
    tables = {
        "headline_estimates": headline.columns,
        "estimate_design": design.columns,
        "labeler_reliability": es.reliability_table(sim.problem).columns,
        "estimate_split_check": split.columns,
        "coverage_regressions_mi": mi.columns,
        **{name: table.columns for name, table in units.items()},
    }
    assert set(tables) == {*ex.ESTIMATE_TABLES, "headline_estimates"}  # all exported (models/exports/tables.py)
    assert undocumented_columns(tables) == {}
    for table in tables:
        assert all(all(entry) for entry in DATA_DICTIONARY[table].values())


def test_reliability_figure_draws():
    from models.figures import reliability_figure

    sim = es.simulate(np.random.default_rng(10), sample_fraction=0.3)
    fig = reliability_figure(es.reliability_table(sim.problem))
    ax = fig.axes[0]
    assert "ECE" in ax.get_title()
    assert len(ax.lines) >= 1
    empty = reliability_figure(pl.DataFrame(schema=es.RELIABILITY_SCHEMA))
    assert "No labels" in empty.axes[0].texts[0].get_text()


# --- on the mirror: the estimates assets after a full run ------------------------------------------------------


@pytest.fixture(scope="module")
def mirror_tables(full_pipeline):
    from resources import warehouse as wh

    def read(name: str) -> pl.DataFrame:
        return wh.read_table(full_pipeline.warehouse, name)

    return read


def test_headline_estimates_carry_the_published_numbers_as_numeric_metadata(full_pipeline, mirror_tables):
    """The Dagster UI plots a float metadata entry over materializations: the published headline of index
    'all' is there, the table's published row to six significant digits (the UI shows it as stored)."""
    from dagster import AssetKey, DagsterInstance

    published = mirror_tables("headline_estimates").filter(
        pl.col("published") & (pl.col("scope") == "all") & (pl.col("benchmark_index") == "all")
        & (pl.col("quantity") == "hours_share_covered") & (pl.col("threshold") == 5)).row(0, named=True)
    with DagsterInstance.from_config(str(full_pipeline.dagster_home)) as instance:
        event = instance.get_latest_materialization_event(AssetKey("headline_estimates"))
    metadata = event.asset_materialization.metadata
    value = metadata["headline_hours_share_covered_5"]
    assert type(value).__name__ == "FloatMetadataValue" and value.value == float(f"{published['value']:.6g}")
    assert metadata["headline_hours_share_covered_5_ci_low"].value == float(f"{published['ci_low']:.6g}")


def test_occupation_gaps_rank_every_occupation_by_the_draws_uncovered_hours(mirror_tables):
    """The gap list is every occupation, likely covered or not, in the order of the headline draws' mean
    uncovered hours (occupation_estimates, computed apart from the gap finder's sum over tasks): an occupation
    with a task at 5 prompts can still hold more open hours than any uncovered one (the audit of 2026-12-07 found
    one at rank 2 left out by a cut on p_covered)."""
    occupations = mirror_tables("occupation_estimates").filter(
        (pl.col("benchmark_index") == "all") & (pl.col("threshold") == 5))
    gaps = mirror_tables("occupation_gaps").filter(pl.col("benchmark_index") == "all").sort("rank")
    assert gaps.height == occupations.height == 923
    assert gaps["rank"].to_list() == list(range(1, 924))
    # in the gap list's order the draws' means never rise (beyond float noise: occupations sharing one OEWS
    # hours figure tie, and their order is the code's)
    in_order = gaps.select("onet_soc_code").join(occupations, on="onet_soc_code", how="left", maintain_order="left")
    means = in_order["uncovered_hours_mean"].drop_nulls()
    assert means.len() > 800 and means.diff().drop_nulls().max() < 1e3
    assert in_order["uncovered_hours_mean"].head(means.len()).null_count() == 0  # no hours data: last
    joined = gaps.join(occupations, on="onet_soc_code", suffix="_draws")
    assert (joined["expected_uncovered_hours"] - joined["uncovered_hours_mean"]).abs().max() < 1e-6 * 7.5e9
    likely = gaps.filter(pl.col("p_covered") >= 0.9)
    assert likely.height == occupations.filter(pl.col("p_covered") >= 0.9).height > 0


def test_columns_the_dictionary_calls_shares_or_probabilities_lie_in_0_1(full_pipeline, mirror_tables):
    """The data dictionary's unit is a promise about the values: on the mirror, no column documented as a share
    or a probability leaves [0, 1] (the audit of 2026-12-07 found unit_coverage_simulation_check.difference, a
    difference of shares down to -0.82, documented as a share)."""
    import duckdb

    from models.data_dictionary import DATA_DICTIONARY, PROB, SHARE

    with duckdb.connect(str(full_pipeline.warehouse), read_only=True) as con:
        tables = {row[0] for row in con.execute("select table_name from duckdb_tables()").fetchall()}
    outside, read = [], 0
    for table, entries in DATA_DICTIONARY.items():
        if table not in tables:
            continue
        frame = mirror_tables(table)
        read += 1
        for column, (_, unit, _) in entries.items():
            if unit in (SHARE, PROB) and column in frame.columns and frame[column].dtype.is_numeric():
                low, high = frame[column].min(), frame[column].max()
                if low is not None and (low < -1e-12 or high > 1 + 1e-12):
                    outside.append((table, column, low, high))
    assert read >= 25 and outside == []


def test_estimates_on_the_mirror(mirror_tables):
    from resources.readers import load_reference, sampling_design

    design = mirror_tables("estimate_design")
    expected = sampling_design()
    joined = design.join(expected, on="benchmark", how="inner")
    assert joined.height == 29
    # every training and development text of the reference is found in the warehouse by its prompt_hash
    assert (joined["distinct_texts"] == joined["distinct_texts_right"]).all(), joined
    assert (joined["n_sampled"] == joined["n_train"] + joined["n_dev"]).all(), joined
    assert set(design["source"].to_list()) == {"reference"}

    estimates = mirror_tables("headline_estimates")
    pooled = estimates.filter((pl.col("benchmark_index") == "all") & (pl.col("scope") == "all"))

    def value(estimator: str, quantity: str, threshold: int) -> dict:
        return pooled.filter(
            (pl.col("estimator") == estimator) & (pl.col("quantity") == quantity) & (pl.col("threshold") == threshold)
        ).row(0, named=True)

    headline = mirror_tables("coverage_headline")
    if "benchmark_index" in headline.columns:
        headline = headline.filter(pl.col("benchmark_index") == "all")
    for t in (1, 5):
        published_tasks = headline.filter(
            (pl.col("scope") == "all") & (pl.col("metric") == "tasks_covered") & (pl.col("threshold") == t)
        )["numerator"][0]
        assert value("labels_as_truth", "tasks_covered", t)["value"] == published_tasks
    # the design estimate at >= 1 prompt counts exactly the distinct tasks the judge gave the sampled texts
    ref = load_reference()
    ref = ref.filter(pl.col("annotation") == "a").explode("task_ids").drop_nulls("task_ids")
    assert value("design", "tasks_covered", 1)["value"] == ref["task_ids"].n_unique()
    published = pooled.filter(pl.col("published"))
    # model-assisted at >= 5 prompts; at >= 1 (a species count) bounds: floor = what the judge saw, or the
    # model-assisted lower bound at >= 5 when that is higher (covered at >= 1 holds covered at >= 5)
    assert dict(published.select("threshold", "estimator").unique().iter_rows()) == {5: "model_assisted", 1: "bounds"}
    assert published.height == 8  # 4 quantities x 2 thresholds
    for row in published.iter_rows(named=True):
        assert row["ci_low"] <= row["value"] <= row["ci_high"], row
    for quantity in es.QUANTITIES:
        floor = max(value("design", quantity, 1)["value"], value("model_assisted", quantity, 5)["ci_low"])
        bounds = value("bounds", quantity, 1)
        if quantity == "major_groups_covered":  # 22 species: no species estimate, the floor is what was seen
            assert pooled.filter((pl.col("estimator") == "richness") & (pl.col("quantity") == quantity)).is_empty()
            assert bounds["value"] == bounds["ci_low"] == pytest.approx(floor)
        else:
            richness = value("richness", quantity, 1)
            assert bounds["ci_low"] == pytest.approx(max(floor, richness["ci_low"]))
            assert bounds["value"] == pytest.approx(max(bounds["ci_low"], richness["value"]))
        assert bounds["ci_high"] >= value("model_assisted", quantity, 1)["ci_high"] - 1e-9
    # the species estimate sees past the judge's own 502 tasks: Q1 = 316 tasks given one sampled text, Q2 = 74
    # two, so the unseen part is large; its 95% lower limit raises the published floor
    tasks = value("richness", "tasks_covered", 1)
    seen = value("design", "tasks_covered", 1)["value"]
    assert seen + 300 < tasks["ci_low"] < tasks["value"] < value("model_assisted", "tasks_covered", 1)["value"]
    # the judge's second pass gives one model-assisted row for each first-pass one, and nothing else
    pass_b = estimates.filter(pl.col("estimator") == "model_assisted_pass_b")
    assert pass_b.height == estimates.filter(pl.col("estimator") == "model_assisted").height
    assert pass_b.select("benchmark_index", "scope", "quantity", "threshold").is_duplicated().sum() == 0
    shares = estimates.filter(pl.col("quantity") == "hours_share_covered")
    assert shares.filter((pl.col("value") < 0) | (pl.col("value") > 1)).is_empty()
    # every benchmark of the mirror has judge-sampled texts, so each is published model-assisted
    per_bench = estimates.filter(pl.col("published") & (pl.col("scope") != "all"))
    assert set(per_bench["estimator"].to_list()) == {"model_assisted", "bounds"}
    assert per_bench["scope"].n_unique() == 29
    # no published floor at >= 1 says a part covers more than the whole: every benchmark alone and every other
    # index at most the pooled scope's (before the cap occubench alone said 281 occupations against 268)
    bounds = estimates.filter((pl.col("estimator") == "bounds") & (pl.col("quantity") != "major_groups_covered"))
    whole = bounds.filter((pl.col("benchmark_index") == "all") & (pl.col("scope") == "all")).select(
        "quantity", pl.col("value").alias("whole_value"), pl.col("ci_low").alias("whole_low"))
    parts = bounds.join(whole, on="quantity")
    assert parts.height == 3 * (29 + estimates["benchmark_index"].n_unique())
    assert parts.filter((pl.col("value") > pl.col("whole_value") + 1e-9)
                        | (pl.col("ci_low") > pl.col("whole_low") + 1e-9)).is_empty()

    reliability = mirror_tables("labeler_reliability").filter(pl.col("benchmark") == "all")
    assert reliability.height >= 1 and 0 <= reliability["ece"][0] <= 1
    assert reliability["n_judge_pairs"][0] == ref.select("benchmark", "prompt_hash", "task_ids").unique().height

    mi = mirror_tables("coverage_regressions_mi")
    estimated = mi.filter(pl.col("kind") == "coefficient")
    assert estimated.height > 0 and (estimated["m"] == 20).all()
    # Rubin's total variance is never below the within-draw variance
    assert (estimated["se"] ** 2 >= estimated["within_var"] - 1e-12).all()
    split = mirror_tables("estimate_split_check")
    assert set(split["estimator"].to_list()) == {"labels_as_truth", "labeler", "design", "model_assisted", "bounds",
                                                 "richness"}
    assert set(split["check"].to_list()) == {"split_half", "split_fifth"}
    # the published intervals held up on the judge sample itself: model-assisted at >= 5 prompts (0.0-0.1 for
    # tasks and occupations before the missed-label model spread over occupations and major groups), and the
    # bounds at >= 1 (the model-assisted interval alone covers almost none there: it over-extrapolates by 10-25%)
    def coverage(check: str, estimator: str, quantity: str, threshold: int) -> float:
        return split.filter((pl.col("scope") == "all") & (pl.col("check") == check)
                            & (pl.col("estimator") == estimator) & (pl.col("quantity") == quantity)
                            & (pl.col("threshold") == threshold))["coverage"][0]

    for check in ("split_half", "split_fifth"):
        for quantity in ("tasks_covered", "occupations_covered", "hours_share_covered"):
            assert coverage(check, "model_assisted", quantity, 5) >= 0.6, (check, quantity)
        for quantity in ("tasks_covered", "occupations_covered"):
            assert coverage(check, "bounds", quantity, 1) >= 0.9, (check, quantity)
            # the species estimate is a lower bound: below the truth on average, but nearer it than what the
            # part itself saw (design at >= 1)
            rich, seen = (split.filter((pl.col("scope") == "all") & (pl.col("check") == check)
                                       & (pl.col("estimator") == e) & (pl.col("quantity") == quantity)
                                       & (pl.col("threshold") == 1))["mean_error"][0] for e in ("richness", "design"))
            assert seen < rich < 0, (check, quantity, rich, seen)


def test_run_all_summary_leads_with_the_published_estimate(full_pipeline):
    from pipelines.run_report import headline_lines

    lines = headline_lines(str(full_pipeline.warehouse))
    assert lines[0].startswith("AI benchmarks exercise about ") and "model-assisted estimate" in lines[0]
    assert any(line.lstrip(" -").startswith("At >= 1 prompt: at least about") for line in lines[1:6])
    raw = next(i for i, line in enumerate(lines) if line.startswith("what the raw labels say"))
    assert lines[raw + 1].lstrip().startswith("tasks covered:")


def test_with_published_maps_every_headline_metric():
    headline = pl.DataFrame({
        "scope": ["all"] * 5, "threshold": [5] * 5,
        "metric": ["tasks_covered", "occupations_covered", "major_groups_uncovered", "hours_share_covered",
                   "hours_share_uncovered"],
        "value": [0.4, 0.9, 0.0, 0.6, 0.4], "numerator": [7518.0, 831, 0, 6, 4], "denominator": [18796.0, 923, 22, 10, 10],
    })
    estimates = pl.DataFrame({
        "benchmark_index": ["all"] * 5, "scope": ["all"] * 4 + ["x"], "threshold": [5] * 5,
        "quantity": ["tasks_covered", "occupations_covered", "major_groups_covered", "hours_share_covered",
                     "tasks_covered"],
        "estimator": ["model_assisted"] * 5, "value": [400.0, 150, 18, 0.08, 1], "ci_low": [380.0, 140, 16, 0.07, 0],
        "ci_high": [420.0, 160, 20, 0.09, 2], "denominator": [18796.0, 923, 22, 1, 18796], "published": [True] * 5,
    })
    out = es.with_published(headline, estimates)
    assert out.columns == [*headline.columns, *es.PUBLISHED_COLUMNS]
    rows = {r["metric"]: r for r in out.iter_rows(named=True)}
    assert rows["tasks_covered"]["published_value"] == pytest.approx(400 / 18796)
    assert rows["occupations_covered"]["published_ci_high"] == pytest.approx(160 / 923)
    assert (rows["major_groups_uncovered"]["published_value"], rows["major_groups_uncovered"]["published_ci_low"],
            rows["major_groups_uncovered"]["published_ci_high"]) == (4, 2, 6)
    assert rows["hours_share_uncovered"]["published_value"] == pytest.approx(0.92)
    assert rows["hours_share_uncovered"]["published_ci_low"] == pytest.approx(0.91)
    assert set(out["published_estimator"]) == {"model_assisted"}
    assert out["published_note"].null_count() == 5
    assert es.with_published(headline, None)["published_value"].null_count() == 5
    # a capped value says so in the table too (the audit found econ's tasks at >= 1 unflagged there)
    capped = estimates.with_columns(pl.lit("species; capped at the value of index all (why): this scope's own "
                                           "estimate was higher: 1,154; the draws agree").alias("basis"))
    note = es.with_published(headline, capped).filter(pl.col("metric") == "tasks_covered")["published_note"].item()
    assert note == "capped at the value of index all (why): this scope's own estimate was higher: 1,154"


def test_summary_and_map_quote_the_published_estimate():
    from models import report
    from models.coverage_map import coverage_map_html

    sim = es.simulate(np.random.default_rng(12))
    scopes = es.scopes_for(sim.problem)
    estimates = es.estimates_frame(sim.problem, scopes, es.run_estimators(sim.problem, scopes, n_draws=20))
    findings = report.headline_estimate_findings({"headline_estimates": estimates})
    assert len(findings) == 1 and findings[0].startswith("**Headline.** Best-supported estimate (model-assisted")
    published = estimates.filter(
        pl.col("published") & (pl.col("scope") == "all") & (pl.col("quantity") == "tasks_covered")
        & (pl.col("threshold") == 5)
    ).row(0, named=True)
    assert f"{published['value']:,.0f} (95% CI {published['ci_low']:,.0f}" in findings[0]
    assert "Counting every label as true instead" in findings[0]
    assert report.headline_estimate_findings({}) == []
    text = " ".join(es.published_sentences(estimates))
    page = coverage_map_html({"occupations": [], "benchmarks": [], "labeler": "offline"}, headline=text)
    assert 'id="estimate"' in page and "Best-supported estimate" in page
    assert 'id="estimate"' not in coverage_map_html({"occupations": [], "benchmarks": [], "labeler": "offline"})


def test_summary_says_which_way_the_headline_may_err():
    """The fifth-split check names the quantities whose interval missed in more than a fifth of the splits and
    the side their mean error fell on; quantities that held (or that only the half split checks) are not named."""
    from models.report.limitations import direction_of_the_miss

    def row(check, quantity, threshold, coverage, mean_error, estimator="model_assisted"):
        return {"check": check, "scope": "all", "estimator": estimator, "quantity": quantity,
                "threshold": threshold, "coverage": coverage, "mean_error": mean_error, "mean_truth": 6.0}

    check = pl.DataFrame([
        row("split_fifth", "major_groups_covered", 5, 0.0, 3.8),
        row("split_fifth", "hours_share_covered", 5, 0.6, -0.002),
        row("split_fifth", "tasks_covered", 5, 0.9, 8.2),  # held often enough: not named
        row("split_fifth", "tasks_covered", 1, 0.0, 9.0),  # >= 1 is published as bounds: not this sentence
        row("split_half", "occupations_covered", 5, 0.1, 5.0),  # only the fifth split stands for the headline
        row("split_fifth", "occupations_covered", 5, 0.1, 5.0, estimator="design"),
    ])
    (text,) = direction_of_the_miss(check)
    assert "major groups at >= 5 as possibly too high (in the check by 3.8 against 6 on average)" in text
    # an error in a share is a difference of shares, in points ("0.2%" would read as a relative change)
    assert "the hours share at >= 5 as possibly too low (in the check by 0.2 points against" in text
    assert "tasks" not in text and "occupations" not in text
    assert direction_of_the_miss(check.filter(pl.col("quantity") == "tasks_covered")) == []
    # with the neighbour step's labels published, the fifth split (below its min_judged) runs on a new
    # benchmark's labels: the sentence says the check's labels are not the headline's
    assert "new benchmark's" not in text
    (stacked,) = direction_of_the_miss(check, stacked=True)
    assert "(whose labels, though, are a new benchmark's, not the headline's neighbour-step labels)" in stacked


def test_an_interval_of_no_width_says_it_is_not_certainty():
    """Where the draws' percentile ends are equal (up to float rounding) while the judge read only some of the
    texts, the basis says so, and where a few draws move the mean off that point (2.995 in 3-3) it says that
    too; a row with an interval, one without any, or one whose texts were all read keeps its basis."""
    frame = pl.DataFrame({
        "value": [3.0, 2.995, 0.000160598, 3.0, None, 5.0],
        "ci_low": [3.0, 3.0, 0.00016057557158567448, 2.0, None, 5.0],
        "ci_high": [3.0, 3.0, 0.0001605755715856745, 4.0, None, 5.0],
        "n_sampled": [28, 28, 28, 28, 28, 40], "n_texts": [40] * 6, "basis": ["b"] * 6})
    bases = es.with_flat_interval_basis(frame)["basis"].to_list()
    assert bases[0].startswith("b; the draws' 2.5th and 97.5th percentiles are equal")
    assert "the judge read 28 of 40 texts" in bases[0] and "a few draws" not in bases[0]
    # the mean off the ends: not "every draw"; ends equal but for float rounding count as equal
    assert "the value, the draws' mean, lies just off that point" in bases[1]
    assert "percentiles are equal" in bases[2] and "lies just off that point" in bases[2]
    assert bases[3:] == ["b", "b", "b"]


def test_summary_gives_the_split_checks_errors_in_shares_as_points():
    """An error in the hours share is a difference of two shares: the summary says "points" ("-0.2%" would read
    as a relative change); counts stay counts."""
    from models.report.limitations import estimate_limitations

    def row(quantity, threshold, estimator, mean_error, mean_truth):
        return {"check": "split_half", "scope": "all", "estimator": estimator, "quantity": quantity,
                "threshold": threshold, "coverage": 0.8, "mean_error": mean_error, "mean_truth": mean_truth,
                "n_replications": 10}

    check = pl.DataFrame([
        row("hours_share_covered", 5, "model_assisted", -0.0021, 0.022),
        row("hours_share_covered", 1, "bounds", -0.019, 0.088),
        row("tasks_covered", 5, "model_assisted", -1.2, 75.0),
        row("occupations_covered", 5, "model_assisted", -23.4, 150.0),
    ])
    text = estimate_limitations({"estimate_split_check": check})[0]
    assert "the hours share at >= 5: 80% (mean error -0.2 points against 2.2%)" in text
    assert "the hours share at >= 1: 80% (bounds; their lower value off by -1.9 points against 8.8%)" in text
    # an error in a count: one decimal below ten, as the direction sentence prints it ("3.8", not "4" and "3.8")
    assert "tasks at >= 5: 80% (mean error -1.2 against 75)" in text
    assert "occupations at >= 5: 80% (mean error -23 against 150)" in text


def test_unit_estimates_on_the_mirror(mirror_tables):
    """Issue 25: the per-unit tables add up to the headline's means, judged texts carry their judge labels, every
    landed benchmark's texts get probabilities, and the recalibrated per-text probabilities meet the targets."""
    units = {name: mirror_tables(name) for name in es.UNIT_TABLES.values()}
    headline = mirror_tables("headline_estimates")
    total_hours = float(units["task_estimates"].filter(
        (pl.col("benchmark_index") == "all") & (pl.col("threshold") == 5))["hours"].sum())
    check = es.unit_sum_check(units, headline, total_hours)
    assert check.height >= 8 and check["ok"].all(), check.filter(~pl.col("ok"))
    occupations = units["occupation_estimates"].filter(pl.col("benchmark_index") == "all")
    assert occupations.height == 2 * 923
    # the gap lists read the same estimates: the groups' expected uncovered hours are the hours the headline's
    # share leaves uncovered, and no listed task is likely covered
    groups = mirror_tables("major_group_gaps").filter(pl.col("benchmark_index") == "all").unique("major_group_code")
    share = headline.filter((pl.col("benchmark_index") == "all") & (pl.col("scope") == "all")
                            & (pl.col("estimator") == "model_assisted") & (pl.col("quantity") == "hours_share_covered")
                            & (pl.col("threshold") == 5))["value"][0]
    assert set(groups["uncovered_by"].to_list()) == {"estimates: 1 - p_covered per task"}
    assert groups["group_uncovered_hours"].sum() == pytest.approx(total_hours * (1 - share), rel=1e-6)
    assert groups["group_hours"].sum() == pytest.approx(total_hours, rel=1e-6)
    listed = mirror_tables("coverage_gaps").filter(pl.col("benchmark_index") == "all")
    assert listed.height > 18_000 and listed["p_covered"].max() < 0.9
    texts = mirror_tables("prompt_occupation_estimates")
    assert texts.filter(pl.col("judged"))["p"].eq(1.0).all()
    labeled = mirror_tables("prompt_task_labels").select("benchmark").unique()
    assert set(labeled["benchmark"].to_list()) <= set(texts["benchmark"].unique().to_list())
    assert texts["p_calibrated"].is_between(0, 1).all()
    calibration = mirror_tables("occupation_probability_calibration").filter(pl.col("bin").is_null())
    for evaluation in ("within_benchmark", "leave_one_benchmark_out"):
        rows = {r["predictor"]: r for r in calibration.filter(pl.col("evaluation") == evaluation).iter_rows(named=True)}
        assert rows["model_recalibrated"]["ece"] <= 0.05, rows
        assert rows["model_recalibrated"]["brier"] < rows["raw_labels"]["brier"], rows
        assert rows["model_recalibrated"]["top1_accuracy"] > rows["raw_labels"]["top1_accuracy"], rows
    # a benchmark left out is labeled as a new one is (the selector's labels, fitted without it), not with the
    # published labels its own judged texts voted (top-1 0.75 before, against 0.33 for a new benchmark's labels):
    # its raw labels' top-1 is the labels' leave-one-benchmark-out first occupation of labeler_validation
    raw_top1 = calibration.filter((pl.col("evaluation") == "leave_one_benchmark_out")
                                  & (pl.col("predictor") == "raw_labels"))["top1_accuracy"][0]
    new_benchmark = mirror_tables("labeler_validation").filter(
        (pl.col("benchmark") == "all") & (pl.col("labeler") == "offline")
        & (pl.col("metric") == "ref_cv_new_benchmark_first_occupation_agreement"))["value"][0]
    assert abs(raw_top1 - new_benchmark) < 0.05, (raw_top1, new_benchmark)
    # the p_covered check (issue 25 item 4): every well-filled bin of p_covered_calibrated (split_fifth
    # cross-fitted by units, split_half through the fifth's map) within 0.05 of its mean p up to two standard
    # errors, the larger of the replications' and the units' (thin middle bins hold few distinct units: 0.04-0.10
    # on the mirror, so 0.05 alone cannot be resolved there); the raw p_covered fails the same bound
    bins = mirror_tables("unit_coverage_simulation_check").filter(
        pl.col("check").is_in(["split_fifth", "split_half"]) & (pl.col("n_units") >= 40)).with_columns(
        (pl.col("difference").abs() - 0.05
         - 2 * pl.max_horizontal("difference_se", "difference_se_units")).alias("excess"))
    calibrated = bins.filter(pl.col("predictor") == "p_covered_calibrated")
    assert calibrated.height >= 20 and (calibrated["excess"] <= 0).all(), calibrated.filter(pl.col("excess") > 0)
    assert (bins.filter(pl.col("predictor") == "p_covered")["excess"] > 0).sum() >= 5
    # read at the headline's 200 draws, the map (fitted at 30) keeps the order of p_covered: a unit covered in more
    # draws never reads as less likely covered (before: an occupation at >= 5 in 199 of 200 draws 0.36, at 0.99 1.0);
    # at >= 1 a unit's value is at least its value at >= 5 (an audit: 164 occupations read more likely covered at
    # >= 5), so there the order is over both thresholds' draws: more at each never reads as less likely
    rng = np.random.default_rng(3)
    for table, unit in (("task_estimates", ["onet_soc_code", "task_id"]), ("occupation_estimates", ["onet_soc_code"]),
                        ("major_group_estimates", ["major_group_code"])):
        frame = mirror_tables(table)
        steps = frame.filter(pl.col("threshold") == 5).sort("benchmark_index", "p_covered").group_by(
            "benchmark_index", maintain_order=True).agg(
            pl.col("p_covered_calibrated").diff().min().alias("step"), pl.col("p_covered").n_unique().alias("n"))
        assert (steps["n"] >= 2).all() and (steps["step"] >= -1e-12).all(), (table, steps)
        wide = frame.pivot(on="threshold", index=["benchmark_index", *unit],
                           values=["p_covered", "p_covered_calibrated"]).filter(pl.col("benchmark_index") == "all")
        assert (wide["p_covered_calibrated_1"] >= wide["p_covered_calibrated_5"] - 1e-12).all(), table
        some = wide[rng.choice(wide.height, min(wide.height, 1500), replace=False)]
        p1, p5, c1 = (some[c].to_numpy() for c in ("p_covered_1", "p_covered_5", "p_covered_calibrated_1"))
        dominates = (p1[:, None] >= p1[None, :]) & (p5[:, None] >= p5[None, :])
        assert not (dominates & (c1[:, None] < c1[None, :] - 1e-12)).any(), table
    between = mirror_tables("occupation_estimates")["p_covered"]  # values the check's 30 draws cannot take
    assert between.is_between(29 / 30, 1, closed="none").any() and between.is_between(0, 1 / 30, closed="none").any()
    # an occupation without hours data (no occupation_annual_hours) has null hours, every other has hours
    unknown = mirror_tables("task_hours").group_by("onet_soc_code").agg(
        pl.col("occupation_annual_hours").is_null().all().alias("unknown"))
    hours = mirror_tables("occupation_estimates").join(unknown, on="onet_soc_code", how="left")
    assert hours["unknown"].any() and (hours["hours"].is_null() == hours["unknown"].fill_null(True)).all()
    # a bounds row whose species estimate lies above the model-assisted and design upper ends says the estimators
    # disagree (5 rows on the mirror, e.g. occubench's occupations: 249 against 229)
    estimates = mirror_tables("headline_estimates")
    keys = ["benchmark_index", "scope", "quantity", "threshold"]
    highs = estimates.filter(pl.col("estimator").is_in(["model_assisted", "design"])).group_by(keys).agg(
        pl.col("ci_high").max().alias("_high"))
    bounds = estimates.filter(pl.col("estimator") == "bounds").join(highs, on=keys)
    above = bounds["value"] > bounds["_high"]
    assert above.any() and (bounds["basis"].str.contains("disagree") == above).all()
    # a published interval of no width (e.g. visualwebarena's tasks at >= 5: 0 (0-0), 28 of 837 texts judged) says
    # it is the draws agreeing, and only such rows say so
    flat = ((estimates["ci_high"] - estimates["ci_low"]).abs() <= 1e-9 * estimates["ci_high"].abs().clip(1.0)
            ).fill_null(False) & (estimates["n_sampled"] < estimates["n_texts"])
    assert (flat & estimates["published"]).sum() >= 10
    assert (estimates["basis"].str.contains("the draws agreeing, not certainty") == flat).all()
    # the simulated worlds read the same map, as published (a transfer test: docs/estimates_calibration_log.md)
    worlds = mirror_tables("unit_coverage_simulation_check").filter(pl.col("check").str.starts_with("simulated"))
    carried = worlds.filter(pl.col("predictor") == "p_covered_calibrated")["check"].unique().sort().to_list()
    assert carried == ["simulated", "simulated_mirror_like"]
    # the issue's own simulation check (truths drawn from the fitted model, a new judge sample each) is in the
    # release, for p_covered only, and the summary's and the legend's bands read it: its outer occupation bins
    # hold (likely not: 0.11-0.18 covered on the mirror), its middle band runs high (the target not met,
    # docs/estimates_calibration_log.md)
    model = mirror_tables("unit_coverage_simulation_check").filter((pl.col("check") == "model")
                                                                     & (pl.col("n_units") >= 40))
    assert set(model["predictor"]) == {"p_covered"} and set(model["unit"]) == {"task", "occupation", "major_group"}
    outer = model.filter(pl.col("unit") == "occupation")
    assert (outer.filter(pl.col("p_low") >= 0.9)["share_covered"] >= 0.95).all()
    assert (outer.filter(pl.col("p_high") <= 0.1)["share_covered"] <= 0.2).all()
    shares = mirror_tables("benchmark_major_group_estimates")
    sums = shares.group_by("benchmark").agg(pl.col("share_mean").sum())
    assert sums.filter(pl.col("share_mean") > 0)["share_mean"].is_between(1 - 1e-9, 1 + 1e-9).all()
