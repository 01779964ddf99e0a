"""The per-text table's sums kept per benchmark (issue 29 item 3, models/estimates/text_sums.py): after a benchmark
without judged texts lands, only its texts are summed and the per-text probabilities are those of summing every
text anew, bit for bit; a change to a judged benchmark (the pooled parameters) sums every text again."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from models import estimates as es
from models.estimates.bench_draws import draw_record
from tests.test_bench_draws import N_DRAWS, SEED, Store


@pytest.fixture(scope="module")
def problems() -> tuple[es.Problem, es.Problem]:
    """(before, after): after = before plus one benchmark without judged texts, in the middle of the order."""
    sim = es.simulate(np.random.default_rng(3), texts_per_benchmark=(120, 200, 90, 150, 80), unsampled_benchmarks=2)
    after = sim.problem
    judged = set(es.judged_benchmarks(after).tolist())
    unjudged = [b for b in range(after.n_bench) if b not in judged]
    before, _ = es.restrict_to_benchmarks(after, np.array([b for b in range(after.n_bench) if b != unjudged[0]]))
    return before, after


def _per_text(problem: es.Problem, store: Store | None) -> tuple[pl.DataFrame, es.KeptTextSums]:
    """The headline's per-text long frame as the asset builds it: the draws (kept in `store`), the text sums
    kept/read through `store` (None: everything summed, nothing kept)."""
    record, _ = draw_record(problem, SEED, N_DRAWS, read=store.read if store else None,
                            write=store.write if store else None)
    kept = es.KeptTextSums(problem, es.text_keys(record) if store else None, store.read if store else None)
    scopes = es.scopes_for(problem)
    units = es.UnitDraws(problem, scopes, N_DRAWS, with_texts=True)
    units.text_subset = kept.texts_to_sum()
    es.run_estimators(problem, scopes, n_draws=N_DRAWS, seed=SEED, unit_draws=units, replay=record)
    merged = kept.merged(units.text_estimates, store.write if store else None)  # type: ignore[arg-type]
    return merged.long_frame(p_min=0.0), kept


def test_a_new_benchmark_sums_its_own_texts_only_and_the_table_is_the_same(problems):
    before, after = problems
    store = Store()
    _per_text(before, store)
    incremental, kept = _per_text(after, store)
    new = sorted(set(after.benchmarks) - set(before.benchmarks))
    assert [after.benchmarks[b] for b in kept.missing()] == new
    texts = kept.texts_to_sum()
    assert texts is not None and set(after.text_bench[texts].tolist()) == {after.benchmarks.index(new[0])}
    scratch, _ = _per_text(after, None)
    assert incremental.height > 100
    assert incremental.equals(scratch)  # same rows, same order, same floats


def test_a_changed_judged_benchmark_sums_every_text_again(problems):
    _, after = problems
    store = Store()
    _per_text(after, store)
    judged_b = int(es.judged_benchmarks(after)[0])
    rows = after.text_bench[after.lab_text] == judged_b
    edited = replace(after, lab_p=np.where(rows, after.lab_p * 0.5, after.lab_p))
    refreshed, kept = _per_text(edited, store)
    assert kept.kept == {}  # the pooled parameters changed: no benchmark's sums are read back
    scratch, _ = _per_text(edited, None)
    assert refreshed.equals(scratch)
    first, _ = _per_text(after, None)
    assert not refreshed.equals(first)


def test_kept_sums_of_other_pairs_are_refused(problems):
    _, after = problems
    store = Store()
    _per_text(after, store)
    record, _ = draw_record(after, SEED, N_DRAWS, read=store.read)
    kept = es.KeptTextSums(after, es.text_keys(record), store.read)
    b = next(iter(kept.kept))
    part = kept.kept[b]
    kept.kept[b] = replace(part, pair_keys=part.pair_keys + 1)
    kept.kept.pop(next(k for k in kept.kept if k != b))  # one benchmark to sum, so the kept ones are placed
    scopes = es.scopes_for(after)
    units = es.UnitDraws(after, scopes, N_DRAWS, with_texts=True)
    units.text_subset = kept.texts_to_sum()
    es.run_estimators(after, scopes, n_draws=N_DRAWS, seed=SEED, unit_draws=units, replay=record)
    with pytest.raises(ValueError, match="other \\(text, occupation\\) pairs"):
        kept.merged(units.text_estimates)  # type: ignore[arg-type]


def test_the_reliability_table_is_the_judged_benchmarks_alone(problems):
    """assets/estimate_draws.kept_reliability_table keys it by the draws' pooled key: a benchmark without judged
    texts changes neither the key nor the table."""
    before, after = problems
    rec_before, _ = draw_record(before, SEED, N_DRAWS)
    rec_after, _ = draw_record(after, SEED, N_DRAWS)
    assert rec_before.pooled_key == rec_after.pooled_key
    table = es.reliability_table(after)
    assert table.height > 5 and table.equals(es.reliability_table(before))
    judged_b = int(es.judged_benchmarks(after)[0])
    rows = after.text_bench[after.lab_text] == judged_b
    edited = replace(after, lab_p=np.where(rows, after.lab_p * 0.5, after.lab_p))
    assert draw_record(edited, SEED, N_DRAWS)[0].pooled_key != rec_after.pooled_key
    assert not es.reliability_table(edited).equals(table)
