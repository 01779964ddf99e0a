"""Per-unit and per-text estimates from the headline's draws, and their calibration (issue 25): on simulated
populations with a known truth."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from models import estimates as es
from models.estimates import calibration as cal


@pytest.fixture(scope="module")
def run() -> dict:
    sim = es.simulate(np.random.default_rng(3), unsampled_benchmarks=1)
    problem = sim.problem
    membership = pl.DataFrame({"benchmark_index": ["small"] * 2, "benchmark": ["bench0", "bench5"],
                               "included": [True, True]})
    scopes = es.scopes_for(problem, membership)
    draws = es.UnitDraws(problem, scopes, 60, with_texts=True)
    result = es.run_estimators(problem, scopes, n_draws=60, seed=4, unit_draws=draws)
    headline = es.estimates_frame(problem, scopes, result)
    units = es.unit_estimates(draws, es.labels_as_truth_counts(problem), es.THRESHOLDS)
    texts = pl.DataFrame({"benchmark": [problem.benchmarks[b] for b in problem.text_bench],
                          "prompt_hash": [f"h{t:05d}" for t in range(problem.text_bench.size)]})
    return {"problem": problem, "scopes": scopes, "draws": draws, "result": result, "headline": headline,
            "units": units, "texts": texts, "table": draws.text_estimates.table(texts)}


def test_collecting_units_leaves_the_headline_draws_alone(run):
    again = es.run_estimators(run["problem"], run["scopes"], n_draws=60, seed=4)
    assert np.array_equal(again.draws["model_assisted"], run["result"].draws["model_assisted"])


def test_unit_tables_computed_in_a_worker_are_the_steps_own(run):
    """The headline step hands unit_estimates to a worker process, over the draws without their per-text sums
    (UnitDraws.without_texts, pickled): the same tables to the bit as in the step, whose draws keep their texts."""
    from resources.worker_pool import WorkerPool

    slim = run["draws"].without_texts()
    assert slim.text_estimates is None and run["draws"].text_estimates is not None  # a copy: the step's keeps them
    with WorkerPool(1) as pool:
        tables, cpu_s = pool.gather([pool.submit(es.timed_unit_estimates, slim,
                                                 es.labels_as_truth_counts(run["problem"]), es.THRESHOLDS)],
                                    steal=False)[0]
    assert cpu_s > 0 and list(tables) == list(run["units"])
    assert all(tables[name].equals(run["units"][name]) for name in tables)


def test_unit_sums_equal_the_headline_means(run):
    check = es.unit_sum_check(run["units"], run["headline"], run["problem"].total_hours)
    # two indexes (all, small) x 4 quantities x 2 thresholds
    assert check.height == 16
    assert check["ok"].all(), check.filter(~pl.col("ok"))
    assert check["difference"].max() < 1e-9
    # and the sums are not trivially equal: coverage differs by threshold and index
    tasks = check.filter(pl.col("quantity") == "tasks_covered").sort("benchmark_index", "threshold")
    assert tasks["unit_sum"].n_unique() == 4


def test_unit_tables_are_consistent(run):
    units = run["units"]
    tasks = units["task_estimates"].filter((pl.col("benchmark_index") == "all") & (pl.col("threshold") == 5))
    occ = units["occupation_estimates"].filter((pl.col("benchmark_index") == "all") & (pl.col("threshold") == 5))
    assert tasks.height == run["problem"].n_tasks and occ.height == run["problem"].n_occ
    assert tasks["p_covered"].is_between(0, 1).all()
    assert (tasks["prompts_low"] <= tasks["prompts_high"]).all()
    # p_covered is the share of draws at or above the threshold: zero where even the 97.5th percentile is below
    assert tasks.filter(pl.col("prompts_high") < 5)["p_covered"].max() < 0.05  # 60 draws: at most 2 above
    # an occupation is covered when its best task is: at least as likely as any of its tasks
    best = tasks.group_by("onet_soc_code").agg(pl.col("p_covered").max().alias("best"))
    joined = occ.join(best, on="onet_soc_code")
    assert (joined["p_covered"] >= joined["best"] - 1e-12).all()
    # labels as counted: every label counted once per prompt
    counted = es.labels_as_truth_counts(run["problem"]).sum(axis=0)
    assert np.allclose(tasks.sort("onet_soc_code", "task_id")["labels_count"].to_numpy(), counted)
    # expected uncovered hours of an occupation = sum over its tasks of hours x (1 - p_covered)
    lost = tasks.group_by("onet_soc_code").agg(((1 - pl.col("p_covered")) * pl.col("hours")).sum().alias("lost"))
    joined = occ.join(lost, on="onet_soc_code")
    # to float64 rounding (summed in float32 it was off by up to ~700 h of billions: an audit, 2026-12-07)
    assert np.allclose(joined["uncovered_hours_mean"], joined["lost"], rtol=1e-12, atol=1e-3)
    assert (joined["uncovered_hours_low"] <= joined["uncovered_hours_high"]).all()
    # judged texts exercising a task: from the judge rows
    judged = tasks.filter(pl.col("judged_texts") > 0)
    assert judged["judged_texts"].sum() == np.unique(
        np.stack([run["problem"].jud_text, run["problem"].jud_task]), axis=1).shape[1]


def test_benchmark_shares_sum_to_one(run):
    shares = es.benchmark_share_estimates(run["draws"])["benchmark_major_group_estimates"]
    totals = shares.group_by("benchmark").agg(pl.col("share_mean").sum())
    assert np.allclose(totals["share_mean"], 1.0)
    assert (shares["share_low"] <= shares["share_mean"] + 1e-12).all()
    assert shares.filter(pl.col("rank") == 1).height == run["problem"].n_bench
    assert shares.filter(pl.col("share_mean") == 0)["rank"].null_count() == shares.filter(
        pl.col("share_mean") == 0).height


def test_judged_texts_get_their_judge_labels(run):
    problem, table = run["problem"], run["table"]
    judged = table.filter(pl.col("judged"))
    assert judged["p"].eq(1.0).all()
    hashes = run["texts"]["prompt_hash"]
    codes = es.units.occupation_codes(problem)
    expected = {(hashes[int(t)], codes[int(o)]) for t, o in zip(problem.jud_text, problem.task_occ[problem.jud_task],
                                                                strict=True)}
    assert set(zip(judged["prompt_hash"], judged["onet_soc_code"], strict=True)) == expected
    # a judged text has no other (imputed) rows: its other occupations are p = 0
    sampled = {hashes[int(t)] for t in np.flatnonzero(problem.text_sampled)}
    assert table.filter(~pl.col("judged") & pl.col("prompt_hash").is_in(list(sampled))).is_empty()


def test_every_text_of_every_benchmark_gets_probabilities(run):
    problem, table = run["problem"], run["table"]
    assert table["p"].is_between(0.01, 1.0).all()
    # the benchmark without a judge sample speaks through the recalibrated labels and the pooled miss model
    unsampled_bench = problem.benchmarks[-1]
    rows = table.filter(pl.col("benchmark") == unsampled_bench)
    labeled = {int(t) for t in problem.lab_text[problem.text_bench[problem.lab_text] == problem.n_bench - 1]}
    assert rows["prompt_hash"].n_unique() >= len(labeled)
    # a text's label of an occupation makes that occupation at least as likely as its calibrated p
    factors = es.calibration_factors(problem, es.StratifiedBootstrap(problem).draw(None))
    t = int(problem.lab_text[~problem.text_sampled[problem.lab_text]][0])
    row = int(np.flatnonzero(problem.lab_text == t)[0])
    code = es.units.occupation_codes(problem)[int(problem.task_occ[problem.lab_task[row]])]
    p = table.filter((pl.col("prompt_hash") == f"h{t:05d}") & (pl.col("onet_soc_code") == code))["p"][0]
    assert p >= 0.5 * min(1.0, factors[problem.text_bench[t]] * problem.lab_p[row])


@pytest.fixture(scope="module")
def calibrated() -> tuple:
    sim = es.simulate(np.random.default_rng(11), texts_per_benchmark=(300, 500, 200, 800), sample_fraction=0.15)
    table, recalibration = cal.text_probability_calibration(sim.problem, n_draws=20, seed=3)
    return sim.problem, table, recalibration


@pytest.fixture(scope="module")
def calibration(calibrated) -> pl.DataFrame:
    return calibrated[1]


@pytest.mark.parametrize("evaluation", ["within_benchmark", "leave_one_benchmark_out"])
def test_text_probabilities_are_calibrated_and_beat_the_raw_labels(calibration, evaluation):
    rows = calibration.filter(pl.col("bin").is_null() & (pl.col("evaluation") == evaluation))
    model = rows.filter(pl.col("predictor") == "model").row(0, named=True)
    raw = rows.filter(pl.col("predictor") == "raw_labels").row(0, named=True)
    assert model["ece"] <= 0.05, model
    assert model["brier"] < raw["brier"], (model, raw)
    # the first occupation: better within the benchmark; without its sample about the labeler's own
    assert model["top1_accuracy"] >= raw["top1_accuracy"] - (0.0 if evaluation == "within_benchmark" else 0.02)
    # the simulated labeler is overconfident by a factor 0.7: read as 0/1 it is far off
    assert raw["ece"] > 0.2
    recalibrated = rows.filter(pl.col("predictor") == "model_recalibrated").row(0, named=True)
    assert recalibrated["ece"] <= 0.05 and recalibrated["brier"] < raw["brier"], recalibrated


def test_a_benchmark_left_out_is_labeled_as_a_new_one(calibrated):
    """Leaving a benchmark out stands for one that arrives without judged texts, whose texts keep the selector's
    labels (fitted without it) when the published labels learn from judged texts: the evaluation reads those
    (`relabel` with nothing judged), not the published ones its own judged texts voted. It read the published
    ones, and so scored a new benchmark's texts at top-1 0.75 where their labels name a judge's occupation first
    for about a third of them. The within-benchmark rows do not move."""
    problem, table, _ = calibrated
    calls: list[tuple[np.ndarray, np.ndarray]] = []

    def labels_nothing(kept: np.ndarray, sampled: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        calls.append((kept.copy(), sampled.copy()))
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)

    relabeled, _ = cal.text_probability_calibration(problem, n_draws=20, seed=3, relabel=labels_nothing)
    assert calls and all(problem.text_sampled[kept].all() and not sampled.any() for kept, sampled in calls)
    summary = relabeled.filter(pl.col("bin").is_null())
    lobo = {r["predictor"]: r for r in summary.filter(pl.col("evaluation") == "leave_one_benchmark_out")
            .iter_rows(named=True)}
    assert lobo["raw_labels"]["top1_accuracy"] == 0.0  # a labeler that labels nothing names no occupation
    within = pl.col("evaluation") == "within_benchmark"
    assert relabeled.filter(within).equals(table.filter(within))

    # the held-out texts get the new labels; their benchmark's other texts lose theirs; other benchmarks keep theirs
    held = problem.text_sampled & (problem.text_bench == 0)
    new = cal.as_new_benchmark(problem, held, lambda kept, sampled: (
        np.arange(kept.size), np.zeros(kept.size, dtype=np.int64), np.full(kept.size, 0.9)))
    mine = problem.text_bench[new.lab_text] == 0
    assert sorted(new.lab_text[mine].tolist()) == np.flatnonzero(held).tolist()
    assert (new.lab_task[mine] == 0).all() and (new.lab_p[mine] == 0.9).all()
    others = problem.text_bench[problem.lab_text] != 0

    def rows(text: np.ndarray, task: np.ndarray, p: np.ndarray) -> list[tuple]:
        return sorted(zip(text.tolist(), task.tolist(), p.tolist(), strict=True))

    assert rows(new.lab_text[~mine], new.lab_task[~mine], new.lab_p[~mine]) == \
        rows(problem.lab_text[others], problem.lab_task[others], problem.lab_p[others])


def test_recalibration_reaches_the_table(calibrated, run):
    _, _, recalibration = calibrated
    assert recalibration.within is not None and recalibration.without is not None
    table = run["draws"].text_estimates.table(run["texts"], recalibrate=recalibration)
    plain = run["table"]
    assert plain["p_calibrated"].equals(plain["p"])  # no map: p_calibrated is p
    assert table["p"].equals(plain["p"])
    judged = table.filter(pl.col("judged"))
    assert judged["p_calibrated"].eq(1.0).all()
    imputed = table.filter(~pl.col("judged"))
    assert imputed["p_calibrated"].is_between(0, 1).all()
    assert (imputed["p_calibrated"] - imputed["p"]).abs().max() > 0.01  # the map moves something
    # within a kind of pair the map is monotone in p
    for labeled_kind in (True, False):
        probe = pl.DataFrame({"p": [0.05, 0.2, 0.5, 0.9], "labeled": [labeled_kind] * 4,
                              "sampled_benchmark": [True] * 4})
        values = recalibration(probe).to_numpy()
        assert (np.diff(values) >= 0).all() or (np.diff(values) <= 0).all()


def test_score_by_hand():
    predictions = pl.DataFrame({"t": [0, 0, 1], "o": [1, 2, 3], "p": [0.8, 0.3, 0.6]})
    truth = pl.DataFrame({"t": [0, 1], "o": [1, 4]})
    universe = pl.concat([predictions.select("t", "o"), truth])
    summary, bins = cal.score(predictions, truth, np.array([0, 1]), universe)
    assert summary["top1_accuracy"] == 0.5  # text 0 right (1), text 1 wrong (3 vs 4)
    assert summary["brier"] == pytest.approx((0.2**2 + 0.3**2 + 0.6**2 + 1.0) / 4)
    # bins: 0.3 (y 0), 0.6 (y 0), 0.8 (y 1): |0.3| + |0.6| + |0.2| over 3
    assert summary["ece"] == pytest.approx((0.3 + 0.6 + 0.2) / 3)
    assert bins["n_pairs"].sum() == 3


@pytest.mark.parametrize("world", ["simulated", "simulated_mirror_like"])
def test_p_covered_matches_a_known_truth_at_five_prompts(world):
    check = es.unit_coverage_simulation_check(None, n_draws=40, simulated=24, seed=7,
                                              worlds={world: es.SIMULATED_WORLDS[world]})
    assert set(check["check"].unique().to_list()) == {world}
    tasks = check.filter((pl.col("unit") == "task") & (pl.col("threshold") == 5) & (pl.col("n_units") >= 100))
    assert tasks.height >= 8
    weighted = (tasks["difference"].abs() * tasks["n_units"]).sum() / tasks["n_units"].sum()
    if world == "simulated_mirror_like":
        # the target, 0.05, up to the bins' Monte Carlo error (the larger of the replications' and the
        # units' standard errors): over seeds 7-11 the largest excess was -0.02 (docs/estimates_calibration_log.md)
        excess = tasks["difference"].abs() - 0.05 - 2 * tasks.select(
            pl.max_horizontal("difference_se", "difference_se_units")).to_series()
        assert (excess <= 0).all(), tasks
        assert weighted <= 0.03, tasks
    else:
        # the stress case misses 0.05 + 2 se by up to 0.006 over seeds 7-11: each bin within 0.1
        assert tasks["difference"].abs().max() <= 0.1, tasks
        assert weighted <= 0.05, tasks


def test_per_text_estimates_without_any_judged_text():
    """A warehouse whose benchmarks have no judge sample at all (a new user's own benchmark): the per-text
    probabilities come from the labels alone (no misses to learn from), and nothing fails on the empty sample
    (before: numpy refused to divide bincount's integer zeros)."""
    sim = es.simulate(np.random.default_rng(5), texts_per_benchmark=(40, 30), unsampled_benchmarks=2)
    problem = sim.problem
    assert not problem.text_sampled.any()
    scopes = es.scopes_for(problem, None)
    draws = es.UnitDraws(problem, scopes, 10, with_texts=True)
    es.run_estimators(problem, scopes, n_draws=10, seed=1, unit_draws=draws)
    texts = pl.DataFrame({"benchmark": [problem.benchmarks[b] for b in problem.text_bench],
                          "prompt_hash": [f"h{t:05d}" for t in range(problem.text_bench.size)]})
    table = draws.text_estimates.table(texts)
    assert table.height > 0 and table["p"].is_between(0.01, 1.0).all() and not table["judged"].any()


# --- the calibration's cost cuts give the same numbers (issue 29) -------------------------------------------------


def test_held_out_texts_alone_get_the_same_probabilities(calibrated):
    """TextOccupationDraws restricted to some texts computes exactly what the full collector does for them."""
    from models.estimates.texts import TextOccupationDraws, batch_parameters

    problem = calibrated[0]
    held = problem.text_sampled & (problem.text_bench == 1)
    hidden = cal.hide_texts(problem, held)
    assisted = es.ModelAssisted(hidden)
    parameters = batch_parameters(assisted, np.random.default_rng(2), 6)
    full, alone = TextOccupationDraws(assisted), TextOccupationDraws(assisted, np.flatnonzero(held))
    for draw in parameters:
        full.add(parameters=draw)
        alone.add(parameters=draw)
    keys = ["t", "o"]
    expected = full.long_frame().filter(pl.col("t").is_in(np.flatnonzero(held).tolist())).sort(keys)
    got = alone.long_frame().sort(keys)
    assert got.height == expected.height > 0
    assert got.select(keys).equals(expected.select(keys))
    assert np.array_equal(got["p"].to_numpy(), expected["p"].to_numpy())


def test_batched_parameters_are_the_draws_parameters(calibrated):
    from models.estimates.texts import batch_parameters

    assisted = es.ModelAssisted(calibrated[0])
    batched = batch_parameters(assisted, np.random.default_rng(4), 5)
    rng = np.random.default_rng(4)
    for boot, factors, mixture in batched:
        b, f, m = assisted.parameters(rng)
        assert np.array_equal(boot, b) and np.array_equal(factors, f) and np.array_equal(mixture, m)


def test_leaving_a_benchmark_out_reuses_the_full_mixture_fit(calibrated):
    """The leave-one-benchmark-out fits reuse the full problem's per-text log likelihoods: the same as a fresh
    fit (the check fails if ModelAssisted's mixture fit comes to depend on other benchmarks' samples)."""
    problem = calibrated[0]
    full = es.ModelAssisted(problem)
    for b in range(problem.n_bench):
        hidden = cal.hide_texts(problem, problem.text_sampled & (problem.text_bench == b))
        fresh, reused = es.ModelAssisted(hidden), cal._WithoutBenchmarks(hidden, full)
        assert np.array_equal(fresh.loglik_texts, reused.loglik_texts)
        assert np.allclose(fresh.text_loglik, reused.text_loglik, rtol=0, atol=1e-9)
        assert np.array_equal(fresh.weights, reused.weights)


def test_calibration_reports_its_monte_carlo_error(calibration):
    summary = calibration.filter(pl.col("bin").is_null() & (pl.col("predictor") != "raw_labels"))
    assert summary["ece_se"].is_not_null().all() and (summary["ece_se"] > 0).all()
    # 20 draws: the draws' noise is well below the 0.05 target (the raw labels do not depend on the draws)
    assert summary["ece_se"].max() < 0.02, summary
    raw = calibration.filter(pl.col("bin").is_null() & (pl.col("predictor") == "raw_labels"))
    assert raw["ece_se"].abs().max() < 1e-12


# --- p_covered: the model's own populations, the map, the check's noise ------------------------------------------


def test_model_population_keeps_the_design():
    sim = es.simulate(np.random.default_rng(8), texts_per_benchmark=(200, 300, 150), unsampled_benchmarks=1)
    problem = sim.problem
    population, truth = es.model_population(problem, np.random.default_rng(1))
    # as many sampled texts per benchmark as before, none in the benchmark without a sample
    before = np.bincount(problem.text_bench, weights=problem.text_sampled, minlength=problem.n_bench)
    after = np.bincount(population.text_bench, weights=population.text_sampled, minlength=problem.n_bench)
    assert np.array_equal(before, after) and after[-1] == 0
    assert not np.array_equal(problem.text_sampled, population.text_sampled)
    # the new judge rows are the truth of the new sample: counted per task they are within the truth counts
    judged = es.task_counts(population, population.jud_text, population.jud_task,
                            population.text_mult[population.jud_text])
    assert (judged <= truth + 1e-9).all() and judged.sum() > 0
    # a judged pair is "in labels" exactly when the labeler has it
    keys = population.lab_text * population.n_tasks + population.lab_task
    own = np.isin(population.jud_text * population.n_tasks + population.jud_task, keys)
    assert np.array_equal(own, population.jud_in_labels)
    # texts of the benchmark without a sample exercise only tasks the labeler gave them
    last = population.text_bench == problem.n_bench - 1
    assert truth[-1].sum() <= population.text_mult[last].sum() * 10


def test_coverage_map_recovers_a_known_miscalibration():
    """Units whose truth is covered with probability p / 2 (an estimator twice too optimistic): the map brings
    every well-filled bin of the cross-fitted calibrated p within 0.05 of the share covered."""
    from models.estimates import coverage_check as cc

    rng = np.random.default_rng(0)
    frames = []
    for r in range(4):
        p = rng.beta(0.6, 0.6, 3000)
        frames.append(pl.DataFrame({"replication": r, "unit": "task", "threshold": 5,
                                    "unit_index": np.arange(p.size), "p_covered": p,
                                    "covered": rng.random(p.size) < p / 2}, schema=cc.PAIR_SCHEMA))
    pairs = pl.concat(frames)
    raw = cc.bin_coverage(pairs, "x", 4).filter(pl.col("n_units") >= 200)
    assert raw["difference"].min() < -0.3  # far off before
    fitted = cc.cross_fitted(pairs)
    after = cc.bin_coverage(fitted, "x", 4, cc.CALIBRATED).filter(pl.col("n_units") >= 200)
    assert after.height >= 4 and after["difference"].abs().max() <= 0.05, after
    # the map keeps 0 at 0 and is increasing on (0, 1]
    whole = cc.fit_coverage_map(pairs)
    grid = np.array([0.0, 0.05, 0.2, 0.5, 0.8, 0.99])
    mapped = whole.apply("task", 5, grid)
    assert mapped[0] == 0.0 and (np.diff(mapped[1:]) > 0).all()


def test_the_map_read_at_the_headlines_draws_stays_monotone():
    """Fitted on the check's draws (p_covered in steps of 1/30) and read at the headline's (200): values the fit
    never saw (below 1/30, between 29/30 and 1) stay between their neighbours. A share covered that dips after
    1/30 and jumps at p = 1 (as the mirror's major groups at >= 1 and occupations at >= 5) bent the old formula's
    square: 1 draw of 200 mapped above 1/30's value, 199 of 200 below 29/30's."""
    from models.estimates import coverage_check as cc

    rng = np.random.default_rng(1)
    p = rng.integers(1, 31, 6000) / 30
    share = np.where(p >= 1, 0.97, np.where(p < 0.05, 0.5, 0.05 + 0.8 * p**2))
    pairs = pl.DataFrame({"replication": 0, "unit": "occupation", "threshold": 5, "unit_index": np.arange(p.size),
                          "p_covered": p, "covered": rng.random(p.size) < share}, schema=cc.PAIR_SCHEMA)
    fitted = cc.fit_coverage_map(pairs)
    knots, values, at_one = fitted.curves[("occupation", 5)]
    assert np.allclose(knots, np.arange(1, 30) / 30) and at_one is not None
    headline = np.arange(201) / 200
    mapped = fitted.apply("occupation", 5, headline)
    assert mapped[0] == 0.0 and (np.diff(mapped) >= 0).all()
    assert np.allclose(fitted.apply("occupation", 5, knots), values)  # the fitted values where the fit saw p
    assert (mapped[headline < 1 / 30] < values[0]).all()  # 1-6 draws of 200: between 0 and 1/30's value
    assert np.allclose(mapped[(headline > 29 / 30) & (headline < 1)], values[-1])  # an imputed unit, not p = 1
    assert mapped[-1] == at_one >= values[-1]
    assert np.allclose(fitted.apply("occupation", 1, headline), headline)  # no map there: p_covered as it is


def test_calibrated_p_covered_sits_beside_p_covered(run):
    from models.estimates import coverage_check as cc

    knots, values = np.array([0.1, 0.5, 0.9]), np.array([0.05, 0.3, 0.6])
    coverage_map = cc.CoverageMap(curves={("task", 5): (knots, values, 0.95)})
    out = es.with_calibrated_p_covered(run["units"], coverage_map, es.UNIT_TABLES)
    tasks = out["task_estimates"]
    assert tasks.columns[tasks.columns.index("p_covered") + 1] == "p_covered_calibrated"
    assert tasks["p_covered"].equals(run["units"]["task_estimates"]["p_covered"])  # the sums stay the headline's
    at5 = tasks.filter(pl.col("threshold") == 5)
    p = at5["p_covered"].to_numpy()
    expected = np.where(p >= 1, 0.95, np.interp(p, np.r_[0.0, knots], np.r_[0.0, values]))
    assert ((p > 0) & (p < 1)).any() and (p >= 1).any()
    assert np.allclose(at5["p_covered_calibrated"].to_numpy(), expected)
    at1 = tasks.filter(pl.col("threshold") == 1)  # no map for this level and threshold: p_covered as it is
    assert at1["p_covered_calibrated"].equals(at1["p_covered"].alias("p_covered_calibrated"))


def test_an_occupation_without_hours_data_has_null_hours():
    """Its tasks count 0 hours in the draws; the tables say unknown, not zero. An occupation with data whose task
    has no hours share keeps its 0."""
    units = {
        "task_estimates": pl.DataFrame({"benchmark_index": ["all"] * 3, "onet_soc_code": ["A", "A", "B"],
                                        "task_id": [1, 2, 3], "threshold": [5] * 3, "hours": [0.0, 0.0, 0.0]}),
        "occupation_estimates": pl.DataFrame({
            "benchmark_index": ["all", "all"], "onet_soc_code": ["B", "A"], "threshold": [5, 5],
            "hours": [0.0, 0.0], "uncovered_hours_mean": [0.0, 0.0], "uncovered_hours_low": [0.0, 0.0],
            "uncovered_hours_high": [0.0, 0.0]}),
        "major_group_estimates": pl.DataFrame({"major_group_code": ["1"], "hours": [0.0]}),
    }
    task_hours = pl.DataFrame({"onet_soc_code": ["A", "A", "B"], "task_id": [1, 2, 3],
                               "occupation_annual_hours": [None, None, 1e6]},
                              schema_overrides={"occupation_annual_hours": pl.Float64})
    out = es.with_unknown_hours(units, task_hours)
    assert out["task_estimates"]["hours"].to_list() == [None, None, 0.0]
    occupations = out["occupation_estimates"]
    assert occupations["onet_soc_code"].to_list() == ["B", "A"]  # row order kept
    for column in ("hours", "uncovered_hours_mean", "uncovered_hours_low", "uncovered_hours_high"):
        assert occupations[column].to_list() == [0.0, None]
    assert out["major_group_estimates"].equals(units["major_group_estimates"])


def test_bin_difference_standard_error_by_hand():
    from models.estimates import coverage_check as cc

    pairs = pl.DataFrame({"replication": [0, 0, 1, 1], "unit": "task", "threshold": 1, "unit_index": [0, 1, 0, 1],
                          "p_covered": [0.52, 0.58, 0.54, 0.56], "covered": [True, True, False, False]},
                         schema=cc.PAIR_SCHEMA)
    row = cc.bin_coverage(pairs, "x", 2).row(0, named=True)
    assert row["n_units"] == 4 and row["mean_p"] == pytest.approx(0.55)
    assert row["difference"] == pytest.approx(0.5 - 0.55)
    # per replication: covered - p - difference x n = (2 - 1.1 + 0.1) and (0 - 1.1 + 0.1): +1 and -1
    assert row["difference_se"] == pytest.approx(np.sqrt(2 / 1 * 2) / 4)
    # units as the clusters: unit 0 sums (1 - 0.52) + (0 - 0.54) = -0.06, unit 1 -0.14; around -0.05 x 2:
    # +0.04 and -0.04 -> sqrt(2 / 1 x 0.0032) / 4 = 0.02 (the units agree, the replications do not)
    assert row["difference_se_units"] == pytest.approx(0.02)


def test_unit_clustered_standard_error_sees_units_that_repeat():
    """Each unit's truth is fixed over the replications (covered or not, p_covered the same noisy guess): the
    replications then agree bin by bin and only the units are noise, which difference_se_units counts and
    difference_se does not; with a known truth the pooled difference stays within two of it."""
    from models.estimates import coverage_check as cc

    rng = np.random.default_rng(5)
    units = 60
    p = rng.uniform(0.3, 0.4, units)
    truly = rng.random(units) < p  # drawn once per unit
    pairs = pl.concat([pl.DataFrame({"replication": r, "unit": "task", "threshold": 1, "unit_index": np.arange(units),
                                     "p_covered": p, "covered": truly}, schema=cc.PAIR_SCHEMA) for r in range(10)])
    row = cc.bin_coverage(pairs, "x", 10).row(0, named=True)
    assert row["n_units"] == 600 and row["difference_se"] == pytest.approx(0.0, abs=1e-12)
    expected = np.sqrt(np.sum((10 * (truly - p) - row["difference"] * 10) ** 2) * units / (units - 1)) / 600
    assert row["difference_se_units"] == pytest.approx(expected) and row["difference_se_units"] > 0.04
    assert abs(row["difference"]) <= 2 * row["difference_se_units"]
