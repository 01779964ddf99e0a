"""The judged checks as independent parts (assets/estimates_split.py JudgedParts, issue 29): each part starts its
random stream where the serial check's stream is at that point, so the checks assembled from the parts equal the
serial ones value for value, whichever process ran which part; the split check's half splits serve the p_covered
check too when the two draw them from the same seed."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from assets.estimates import EstimatesConfig
from assets.estimates_split import JudgedParts
from models import estimates as es
from models.estimates.checks import skip_splits, split_sample_problem
from models.estimates.judged import split_check
from resources.worker_pool import WorkerPool


@pytest.fixture(scope="module")
def sim() -> es.Simulation:
    return es.simulate(np.random.default_rng(11), texts_per_benchmark=(200, 300, 150, 250), unsampled_benchmarks=2)


def _serial(problem: es.Problem, config: EstimatesConfig) -> tuple:
    calibration, recalibration = es.text_probability_calibration(problem, n_draws=config.calibration_draws,
                                                                 seed=config.seed)
    coverage = es.unit_coverage_check(problem, replications=config.coverage_repeats,
                                      n_draws=min(config.n_draws, config.coverage_draws), seed=config.seed,
                                      simulated=config.coverage_simulations,
                                      model_replications=config.coverage_model_populations)
    split = split_check(problem, es.scopes_for(problem, per_benchmark=False), config.split_repeats,
                        min(config.n_draws, 50), config.seed, None, "as published")
    return calibration, recalibration, coverage, split


def _assembled(problem: es.Problem, config: EstimatesConfig, pool: WorkerPool | None = None):
    plan = JudgedParts(problem, es.scopes_for(problem, per_benchmark=False), config, None, "as published")
    if pool is None:
        return plan, plan.assembled([fn(*args, **kwargs) for _, fn, args, kwargs in plan.tasks()])
    futures = [pool.submit(fn, *args, name=name, **kwargs) for name, fn, args, kwargs in plan.tasks()]
    return plan, plan.assembled(pool.gather(futures))


@pytest.mark.parametrize("coverage_repeats", [2, 3])  # 3 > split_repeats: the p_covered check's own half splits
def test_the_parts_assembled_equal_the_serial_checks(sim, coverage_repeats):
    sub, _ = es.judged_problem(sim.problem, pl.DataFrame({"benchmark": sim.problem.text_bench}))
    config = EstimatesConfig(n_draws=8, calibration_draws=3, coverage_repeats=coverage_repeats, coverage_draws=8,
                             coverage_simulations=2, split_repeats=2, coverage_model_populations=2)
    calibration, recalibration, coverage, split = _serial(sub, config)
    plan, parts = _assembled(sub, config)
    names = [name for name, *_ in plan.tasks()]
    assert ("p_covered split_half" in names) == (coverage_repeats > 2)  # else shared with the split check's part
    assert "p_covered model" in names and "model" in set(coverage.table["check"])
    assert parts.calibration.equals(calibration)
    assert np.array_equal(parts.recalibration.within, recalibration.within)
    assert np.array_equal(parts.recalibration.without, recalibration.without)
    assert parts.coverage.equals(coverage.table)
    assert coverage.coverage_map.curves  # 8 draws: enough distinct units below p = 1 for a map (MIN_MAP_UNITS)
    assert parts.coverage_map.curves.keys() == coverage.coverage_map.curves.keys()
    for key, (knots, values, at_one) in coverage.coverage_map.curves.items():
        mine = parts.coverage_map.curves[key]
        assert np.array_equal(mine[0], knots) and np.array_equal(mine[1], values) and mine[2] == at_one
    assert parts.split.equals(split)


def test_the_parts_in_a_worker_equal_the_serial_checks(sim):
    sub, _ = es.judged_problem(sim.problem, pl.DataFrame({"benchmark": sim.problem.text_bench}))
    config = EstimatesConfig(n_draws=6, calibration_draws=3, coverage_repeats=2, coverage_draws=4,
                             coverage_simulations=1, split_repeats=2)
    calibration, _, coverage, split = _serial(sub, config)
    with WorkerPool(workers=1) as pool:
        _, parts = _assembled(sub, config, pool)  # the worker takes the first parts, this process the last
    assert parts.calibration.equals(calibration) and parts.coverage.equals(coverage.table) and parts.split.equals(split)


def test_skipping_splits_leaves_the_stream_where_the_splits_leave_it(sim):
    built, skipped = np.random.default_rng(3), np.random.default_rng(3)
    for fraction in (0.5, 0.2):
        for _ in range(3):
            split_sample_problem(sim.problem, built, fraction=fraction)
        skip_splits(sim.problem, skipped, fraction, 3)
    assert built.bit_generator.state == skipped.bit_generator.state
