"""The judged checks run on the benchmarks with judged texts and are cached by that problem's key (issue 29):
a benchmark without judged texts changes neither their values nor their key; a changed judge label does."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from assets.estimates_split import split_check
from models import estimates as es
from resources import estimate_cache


@pytest.fixture(scope="module")
def sim() -> es.Simulation:
    return es.simulate(np.random.default_rng(11), texts_per_benchmark=(200, 300, 150, 250), unsampled_benchmarks=2)


def _numeric_close(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    if a.columns != b.columns or a.height != b.height:
        return False
    for column, dtype in a.schema.items():
        if dtype.is_numeric():
            x, y = a[column].to_numpy().astype(float), b[column].to_numpy().astype(float)
            if not np.allclose(x, y, rtol=1e-12, atol=1e-12, equal_nan=True):
                return False
        elif not a[column].equals(b[column]):
            return False
    return True


def test_restriction_keeps_the_judged_benchmarks_and_their_texts(sim):
    problem = sim.problem
    texts = pl.DataFrame({"benchmark": [problem.benchmarks[b] for b in problem.text_bench],
                          "prompt_hash": [f"h{t:05d}" for t in range(problem.text_bench.size)]})
    sub, sub_texts = es.judged_problem(problem, texts)
    assert sub.benchmarks == problem.benchmarks[:2]  # the last two benchmarks have no judged text
    assert sub.text_bench.size == 500 and sub_texts.height == 500
    assert sub_texts["benchmark"].to_list() == [sub.benchmarks[b] for b in sub.text_bench]
    assert int(sub.text_sampled.sum()) == int(problem.text_sampled.sum())
    assert sub.jud_text.size == problem.jud_text.size
    assert sub.lab_text.size == int((problem.text_bench[problem.lab_text] < 2).sum())


def test_the_per_text_calibration_on_the_judged_benchmarks_equals_that_on_every_benchmark(sim):
    """A benchmark without judged texts enters no held-out text's probability (factors, mixture and donors come
    from the sampled texts): the calibration is the same on the restricted problem. (The split checks draw
    their splits from the judged texts alone; on the full problem their model-assisted draws also spend random
    numbers on the empty benchmarks' labeler fill, so they agree in distribution, and bit for bit on the
    mirror, where every benchmark has judged texts.)"""
    problem = sim.problem
    sub, _ = es.judged_problem(problem, pl.DataFrame({"benchmark": problem.text_bench}))
    full_cal, full_map = es.text_probability_calibration(problem, n_draws=6, seed=5)
    sub_cal, sub_map = es.text_probability_calibration(sub, n_draws=6, seed=5)
    assert _numeric_close(full_cal, sub_cal)
    assert np.allclose(full_map.within, sub_map.within) and np.allclose(full_map.without, sub_map.without)


def test_the_split_checks_run_on_the_judged_benchmarks(sim):
    sub, _ = es.judged_problem(sim.problem, pl.DataFrame({"benchmark": sim.problem.text_bench}))
    coverage = es.unit_coverage_check(sub, replications=2, n_draws=8, seed=5, simulated=0)
    assert coverage.table.height > 0 and set(coverage.table["check"].unique()) >= {"split_half", "split_fifth"}
    split = split_check(sub, es.scopes_for(sub, per_benchmark=False), 2, 8, 5)
    assert split.height > 0 and split["check"].unique().sort().to_list() == ["split_fifth", "split_half"]


def test_the_published_map_is_carried_into_the_simulated_worlds(sim):
    """The simulated worlds' p_covered_calibrated is the map fitted on the split checks, applied as published
    (a transfer test, never a map fitted on the world), and their table has rows of both predictors."""
    from models.estimates import coverage_check as cc

    sub, _ = es.judged_problem(sim.problem, pl.DataFrame({"benchmark": sim.problem.text_bench}))
    check = es.unit_coverage_check(sub, replications=2, n_draws=8, seed=5, simulated=1)
    assert check.coverage_map.curves
    for world in cc.SIMULATED_WORLDS:
        pairs = check.pairs[world]
        mapped = []
        for (level, threshold), rows in pairs.group_by("unit", "threshold"):
            mapped.append(rows.with_columns(pl.Series("p_covered_calibrated", check.coverage_map.apply(
                str(level), int(threshold), rows["p_covered"].to_numpy()))))
        # the map's values, a unit's at >= 1 raised to its value at >= 5 where the two maps cross
        expected = cc.not_rising(pl.concat(mapped), cc.PAIR_KEYS)
        keys = [*cc.PAIR_KEYS, "threshold"]
        assert pairs.sort(keys)["p_covered_calibrated"].equals(expected.sort(keys)["p_covered_calibrated"])
        predictors = check.table.filter(pl.col("check") == world)["predictor"].unique().sort().to_list()
        assert predictors == ["p_covered", "p_covered_calibrated"]
    moved = check.pairs["simulated_mirror_like"].filter(pl.col("p_covered").is_between(0.05, 0.95))
    assert (moved["p_covered_calibrated"] - moved["p_covered"]).abs().max() > 0.01  # the map does something


def test_the_key_ignores_benchmarks_without_judged_texts_and_follows_the_judge(sim):
    problem = sim.problem
    every, _ = es.judged_problem(problem, pl.DataFrame({"benchmark": problem.text_bench}))
    # the same problem without one of the unsampled benchmarks (as before a new benchmark arrived)
    fewer, _ = es.restrict_to_benchmarks(problem, np.arange(problem.n_bench - 1))
    before, _ = es.judged_problem(fewer, pl.DataFrame({"benchmark": fewer.text_bench}))
    assert es.checks_key(every, ["x"]) == es.checks_key(before, ["x"])
    assert es.checks_key(every, ["x"]) != es.checks_key(every, ["y"])
    relabeled = es.Problem(**{**every.__dict__, "jud_task": (every.jud_task + 1) % every.n_tasks})
    assert es.checks_key(relabeled, ["x"]) != es.checks_key(every, ["x"])


def test_the_cache_file_returns_only_its_own_key(tmp_path):
    path = estimate_cache.cache_path(tmp_path / "benchmap.duckdb", "judged_checks")
    assert estimate_cache.read(path, "k1") is None
    estimate_cache.write(path, "k1", {"table": pl.DataFrame({"a": [1, 2]})})
    assert estimate_cache.read(path, "k1")["table"]["a"].to_list() == [1, 2]
    assert estimate_cache.read(path, "k2") is None
    path.write_bytes(b"not a pickle")
    assert estimate_cache.read(path, "k1") is None


def test_the_step_reads_the_checks_back_until_the_judged_problem_or_the_code_changes(sim, tmp_path):
    from assets.estimates import EstimatesConfig
    from assets.estimates_split import judged_checks
    from resources.dagster_resources import Warehouse

    warehouse = Warehouse(path=str(tmp_path / "benchmap.duckdb"))  # only its folder is used (the cache file)
    config = EstimatesConfig(n_draws=6, calibration_draws=3, coverage_repeats=1, coverage_draws=4, coverage_simulations=2,
                             split_repeats=1)
    inputs = {"labeler_version": None}  # not the neighbour stack: no relabeling, nothing read from the warehouse

    def texts_of(problem: es.Problem) -> pl.DataFrame:
        return pl.DataFrame({"benchmark": [problem.benchmarks[b] for b in problem.text_bench],
                             "prompt_hash": [f"h{t:05d}" for t in range(problem.text_bench.size)]})

    # before the last (unjudged) benchmark arrived
    fewer, _ = es.restrict_to_benchmarks(sim.problem, np.arange(sim.problem.n_bench - 1))
    first = judged_checks(warehouse, inputs, texts_of(fewer), fewer, config, ["v1"])
    assert not first.cached and warehouse.estimate_cache_path("judged_checks").exists()
    # the new benchmark has no judged texts: read back, the same tables
    again = judged_checks(warehouse, inputs, texts_of(sim.problem), sim.problem, config, ["v1"])
    assert again.cached
    for name in ("calibration", "coverage", "split"):
        assert getattr(again, name).equals(getattr(first, name))
    # another code version, or another judge label: computed anew
    assert not judged_checks(warehouse, inputs, texts_of(sim.problem), sim.problem, config, ["v2"]).cached
    changed = es.Problem(**{**sim.problem.__dict__, "jud_task": (sim.problem.jud_task + 1) % sim.problem.n_tasks})
    assert not judged_checks(warehouse, inputs, texts_of(changed), changed, config, ["v2"]).cached
    # no code version (a bare materialize): never cached
    assert not judged_checks(warehouse, inputs, texts_of(sim.problem), sim.problem, config, []).cached
