"""One set of draws for membership and the headline (issue 29): the draws recorded over the benchmarks alone
(no scopes), replayed into the per-index headline, give what drawing again gives, bit for bit."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from models import estimates as es


@pytest.fixture(scope="module")
def sim() -> es.Simulation:
    return es.simulate(np.random.default_rng(3), unsampled_benchmarks=1)


def _scopes(problem: es.Problem) -> list[es.Scope]:
    membership = pl.DataFrame({"benchmark_index": ["small"] * 2, "benchmark": ["bench0", "bench5"],
                               "included": [True, True]})
    return es.scopes_for(problem, membership)


def test_replayed_draws_give_the_drawn_headline_units_and_texts(sim):
    problem = sim.problem
    scopes = _scopes(problem)
    fresh_units = es.UnitDraws(problem, scopes, 40, with_texts=True)
    fresh = es.run_estimators(problem, scopes, n_draws=40, seed=4, keep_counts=5, unit_draws=fresh_units)
    # membership's pass: no scopes, only the benchmark shares and the record
    record = es.DrawRecord((problem.n_bench, problem.n_tasks), 4, 40)
    share_units = es.UnitDraws(problem, es.scopes_for(problem, None), 40)
    es.run_estimators(problem, [], n_draws=40, seed=4, unit_draws=share_units, record=record,
                      estimators=tuple(e for e in es.ESTIMATORS if e != "labels_as_truth"))
    replay_units = es.UnitDraws(problem, scopes, 40, with_texts=True)
    replayed = es.run_estimators(problem, scopes, n_draws=40, seed=4, keep_counts=5, unit_draws=replay_units,
                                 replay=record)
    for name in es.ESTIMATORS:
        assert np.array_equal(fresh.point[name], replayed.point[name], equal_nan=True), name
    for name in ("labeler", "design", "model_assisted"):
        assert np.array_equal(fresh.draws[name], replayed.draws[name], equal_nan=True), name
    for name, vectors in fresh.count_draws.items():
        assert all(np.array_equal(a, b) for a, b in zip(vectors, replayed.count_draws[name], strict=True))
    assert np.array_equal(fresh_units.index_counts, replay_units.index_counts)
    assert np.array_equal(fresh_units.bench_occ, replay_units.bench_occ)
    assert fresh_units.text_estimates.sum_pair.sum() > 0
    assert np.array_equal(fresh_units.text_estimates.sum_pair, replay_units.text_estimates.sum_pair)
    # the shares membership reads are the headline's
    assert es.benchmark_share_estimates(share_units)["benchmark_major_group_estimates"].equals(
        es.benchmark_share_estimates(fresh_units)["benchmark_major_group_estimates"])
    headline = es.estimates_frame(problem, scopes, fresh)
    assert headline.equals(es.estimates_frame(problem, scopes, replayed))


def test_a_record_replays_only_its_own_draws(sim):
    problem = sim.problem
    record = es.DrawRecord((problem.n_bench, problem.n_tasks), 4, 10)
    es.run_estimators(problem, [], n_draws=10, seed=4, record=record)
    assert record.covers(es.ESTIMATORS, 4, 10, (problem.n_bench, problem.n_tasks))
    assert not record.covers(es.ESTIMATORS, 5, 10, (problem.n_bench, problem.n_tasks))
    assert not record.covers(es.ESTIMATORS, 4, 20, (problem.n_bench, problem.n_tasks))
    with pytest.raises(ValueError, match="replay"):
        es.run_estimators(problem, [], n_draws=10, seed=5, replay=record)
    # counts that are not exact in float32 (the design's N_b/n_b weights) are kept in float64, whole counts
    # (the labeler's and the imputation's) in float32
    assert {v.dtype for _, v in record.entries["design"]} == {np.dtype(np.float64)}
    assert {v.dtype for _, v in record.entries["labeler"]} == {np.dtype(np.float32)}


def test_the_fingerprint_follows_the_inputs(sim):
    problem = sim.problem
    assert problem.fingerprint() == problem.fingerprint()
    changed = es.Problem(**{**problem.__dict__, "lab_p": np.clip(problem.lab_p * 0.5, 0, 1)})
    assert changed.fingerprint() != problem.fingerprint()


def test_a_replayed_draw_is_read_from_its_entries_as_from_its_matrix(sim):
    """The replay's sparse path (Aggregator.headline_sparse, UnitDraws.add_sparse: no dense matrix) gives the
    dense path's headline and per-index task sums, bit for bit, with the headline's own UnitDraws (no shares)
    and entries that hold an explicit zero."""
    problem = sim.problem
    scopes = _scopes(problem)
    agg = es.Aggregator(problem, scopes, (1, 2, 5))
    rng = np.random.default_rng(9)
    for _ in range(5):
        counts = np.where(rng.random((problem.n_bench, problem.n_tasks)) < 0.05,
                          rng.integers(1, 8, (problem.n_bench, problem.n_tasks)), 0).astype(np.float64)
        where = np.flatnonzero(counts.ravel() != 0)
        where = np.sort(np.concatenate([where, rng.choice(np.flatnonzero(counts.ravel() == 0), 3)]))
        values = counts.ravel()[where].astype(np.float32)
        assert (values == 0).sum() == 3
        assert np.array_equal(agg.headline(counts), agg.headline_sparse(where, values), equal_nan=True)
        dense, sparse = (es.UnitDraws(problem, scopes, 1, with_shares=False) for _ in range(2))
        dense.add(counts)
        sparse.add_sparse(where, values)
        assert dense.index_counts.sum() > 0
        assert np.array_equal(dense.index_counts, sparse.index_counts)
    record = es.DrawRecord((problem.n_bench, problem.n_tasks), 4, 20)
    es.run_estimators(problem, [], n_draws=20, seed=4, record=record)
    units = [es.UnitDraws(problem, scopes, 20, with_texts=True, with_shares=False) for _ in range(2)]
    fresh = es.run_estimators(problem, scopes, n_draws=20, seed=4, unit_draws=units[0])
    replayed = es.run_estimators(problem, scopes, n_draws=20, seed=4, unit_draws=units[1], replay=record)
    for name in ("labeler", "design", "model_assisted"):
        assert np.array_equal(fresh.draws[name], replayed.draws[name], equal_nan=True), name
    assert np.array_equal(units[0].index_counts, units[1].index_counts)
    assert np.array_equal(units[0].text_estimates.sum_pair, units[1].text_estimates.sum_pair)
