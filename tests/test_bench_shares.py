"""Each benchmark's estimated shares kept by benchmark (issue 29 item 3, models/estimates/bench_shares.py): the
share tables read back and assembled are those of collecting every draw anew (benchmark_share_estimates over
UnitDraws), bit for bit; after a benchmark lands only its shares are computed; a changed benchmark's kept shares
are never used (its draws' key changed)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from models import estimates as es
from models.estimates.bench_draws import draw_record
from tests.test_bench_draws import N_DRAWS, SEED, Store
from tests.test_text_sums import problems  # noqa: F401  (the fixture: before, after a benchmark lands)


def _collected(problem: es.Problem, record: es.DrawRecord) -> dict:
    """The share tables as benchmark_index_membership computed them before: UnitDraws fed every replayed draw."""
    units = es.UnitDraws(problem, es.scopes_for(problem, None), N_DRAWS)
    es.run_estimators(problem, [], n_draws=N_DRAWS, seed=SEED, unit_draws=units, replay=record,
                      estimators=tuple(e for e in es.ESTIMATORS if e != "labels_as_truth"))
    return es.benchmark_share_estimates(units)


def _kept(problem: es.Problem, store: Store | None) -> tuple[dict, list[str], es.DrawRecord]:
    record, _ = draw_record(problem, SEED, N_DRAWS, read=store.read if store else None,
                            write=store.write if store else None)
    tables, computed = es.kept_share_estimates(problem, record, store.read if store else None,
                                               store.write if store else None)
    return tables, computed, record


def _equal(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(a[name].equals(b[name]) for name in a)


def test_kept_shares_are_the_collected_ones(problems):  # noqa: F811
    _, after = problems
    tables, computed, record = _kept(after, Store())
    assert computed == list(after.benchmarks)
    collected = _collected(after, record)
    assert tables["benchmark_major_group_estimates"].height == after.n_bench * after.n_groups
    assert tables["benchmark_occupation_estimates"].height > after.n_bench
    assert _equal(tables, collected)  # same rows, same order, same floats


def test_a_new_benchmark_computes_its_own_shares_only(problems):  # noqa: F811
    before, after = problems
    store = Store()
    _kept(before, store)
    tables, computed, record = _kept(after, store)
    assert computed == sorted(set(after.benchmarks) - set(before.benchmarks))
    assert _equal(tables, _collected(after, record))
    again, computed_again, _ = _kept(after, store)
    assert computed_again == [] and _equal(again, tables)


def test_a_changed_benchmark_is_not_read_back(problems):  # noqa: F811
    _, after = problems
    store = Store()
    first, _, _ = _kept(after, store)
    unjudged = next(b for b in range(after.n_bench) if b not in set(es.judged_benchmarks(after).tolist()))
    rows = after.text_bench[after.lab_text] == unjudged
    edited = replace(after, lab_p=np.where(rows, after.lab_p * 0.3, after.lab_p))
    tables, computed, record = _kept(edited, store)
    assert computed == [after.benchmarks[unjudged]]  # its draws' key changed, the others' did not
    assert _equal(tables, _collected(edited, record))
    assert not _equal(tables, first)  # the edit moved its shares: the kept ones would have been stale


def test_draws_without_the_mass_refuse_the_shares(problems):  # noqa: F811
    _, after = problems
    units = es.UnitDraws(after, es.scopes_for(after, None), N_DRAWS, with_shares=False)
    with pytest.raises(ValueError, match="label mass"):
        es.benchmark_share_estimates(units)
