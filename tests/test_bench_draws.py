"""Per-benchmark random streams and the kept per-benchmark draws (issue 29 item 3, models/estimates/bench_draws.py):
landing a benchmark draws that benchmark only, and the result is the same, bit for bit, as drawing every
benchmark anew on the same state."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from models import estimates as es
from models.estimates.bench_draws import draw_record
from models.estimates.streams import BenchStreams, SingleStream, name_words

N_DRAWS = 12
SEED = 16


class Store:
    """An in-memory store (the I/O layer's estimate cache in the pipeline)."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[str, object]] = {}
        self.reads: list[str] = []

    def read(self, name: str, key: str) -> object | None:
        stored = self.values.get(name)
        if stored is None or stored[0] != key:
            return None
        self.reads.append(name)
        return stored[1]

    def write(self, name: str, key: str, value: object) -> None:
        self.values[name] = (key, value)


@pytest.fixture(scope="module")
def problems() -> tuple[es.Problem, es.Problem]:
    """(before, after): after = before plus one benchmark without judged texts, in the middle of the order."""
    sim = es.simulate(np.random.default_rng(3), texts_per_benchmark=(120, 200, 90, 150, 80), unsampled_benchmarks=2)
    after = sim.problem
    judged = es.judged_benchmarks(after)
    unjudged = [b for b in range(after.n_bench) if b not in set(judged.tolist())]
    assert len(unjudged) == 2
    before, _ = es.restrict_to_benchmarks(after, np.array([b for b in range(after.n_bench) if b != unjudged[0]]))
    return before, after


def _same(a: es.DrawRecord, b: es.DrawRecord) -> None:
    assert set(a.entries) == set(b.entries)
    for name in a.entries:
        for d in range(a.n_draws):
            assert np.array_equal(a.counts(name, d), b.counts(name, d)), (name, d)
    assert len(a.parameters) == len(b.parameters)
    for pa, pb in zip(a.parameters, b.parameters, strict=True):
        for x, y in zip(pa, pb, strict=True):
            assert np.array_equal(x, y)


def test_a_benchmarks_rows_do_not_depend_on_the_other_benchmarks(problems):
    before, after = problems
    rec_before, _ = draw_record(before, SEED, N_DRAWS)
    rec_after, _ = draw_record(after, SEED, N_DRAWS)
    rows_after = {name: b for b, name in enumerate(after.benchmarks)}
    for b, name in enumerate(before.benchmarks):
        for estimator in ("labeler", "design", "model_assisted"):
            for d in range(N_DRAWS):
                assert np.array_equal(rec_before.counts(estimator, d)[b],
                                      rec_after.counts(estimator, d)[rows_after[name]]), (name, estimator, d)


def test_incremental_refresh_equals_drawing_everything_anew(problems):
    before, after = problems
    store = Store()
    draw_record(before, SEED, N_DRAWS, read=store.read, write=store.write)
    incremental, report = draw_record(after, SEED, N_DRAWS, read=store.read, write=store.write)
    new = sorted(set(after.benchmarks) - set(before.benchmarks))
    assert report.drawn == new  # only the new benchmark was drawn
    assert sorted(report.kept) == sorted(before.benchmarks)
    assert report.pooled_cached
    scratch, scratch_report = draw_record(after, SEED, N_DRAWS)
    assert sorted(scratch_report.drawn) == sorted(after.benchmarks)
    _same(incremental, scratch)
    # and run_estimators replaying it gives the same headline as replaying the scratch record
    scopes = es.scopes_for(after)
    a = es.run_estimators(after, scopes, n_draws=N_DRAWS, seed=SEED, replay=incremental)
    b = es.run_estimators(after, scopes, n_draws=N_DRAWS, seed=SEED, replay=scratch)
    for name in a.draws:
        assert np.array_equal(a.draws[name], b.draws[name])


def test_a_changed_benchmark_is_redrawn_not_read_stale(problems):
    _, after = problems
    store = Store()
    first, _ = draw_record(after, SEED, N_DRAWS, read=store.read, write=store.write)
    judged = set(es.judged_benchmarks(after).tolist())
    changed = next(b for b in range(after.n_bench) if b not in judged)
    rows = after.text_bench[after.lab_text] == changed
    edited = replace(after, lab_p=np.where(rows, after.lab_p * 0.5, after.lab_p))
    refreshed, report = draw_record(edited, SEED, N_DRAWS, read=store.read, write=store.write)
    assert report.drawn == [after.benchmarks[changed]]
    scratch, _ = draw_record(edited, SEED, N_DRAWS)
    _same(refreshed, scratch)
    stale = any(not np.array_equal(first.counts("labeler", d)[changed], refreshed.counts("labeler", d)[changed])
                for d in range(N_DRAWS))
    assert stale, "the changed benchmark's rows were read back instead of drawn"
    # a change to a judged benchmark changes the pooled parameters: every judged benchmark is redrawn, the others
    # (without judged texts) are read back
    judged_b = min(judged)
    rows = after.text_bench[after.lab_text] == judged_b
    edited_judged = replace(edited, lab_p=np.where(rows, edited.lab_p * 0.5, edited.lab_p))
    refreshed, report = draw_record(edited_judged, SEED, N_DRAWS, read=store.read, write=store.write)
    assert sorted(report.drawn) == sorted(after.benchmarks[b] for b in judged)
    assert not report.pooled_cached
    _same(refreshed, draw_record(edited_judged, SEED, N_DRAWS)[0])


def test_per_benchmark_streams_are_keyed_by_name_not_position():
    names = ["alpha", "beta"]
    a = BenchStreams(1, "x", names).random(np.array([0, 0, 1, 1, 1]))
    b = BenchStreams(1, "x", ["beta"]).random(np.array([0, 0, 0]))
    assert np.array_equal(a[2:], b)
    assert not np.array_equal(a[:2], b[:2])
    assert name_words("alpha") == name_words("alpha") and name_words("alpha") != name_words("beta")
    # the single stream is a plain Generator (the judged checks' numbers are unchanged)
    assert np.array_equal(SingleStream(np.random.default_rng(5)).random(np.zeros(4, dtype=int)),
                          np.random.default_rng(5).random(4))
    with pytest.raises(ValueError, match="non-decreasing"):
        BenchStreams(1, "x", names).random(np.array([1, 0]))


def test_a_benchmark_without_judged_texts_has_its_labeler_draws_as_its_model_assisted_draws(problems):
    """Its model-assisted rows are its labeler rows, draw for draw (also when drawn without the labeler): an
    index of such benchmarks publishes the labeler row from the draws its per-unit tables sum (the one-benchmark
    world's unit_estimates_sum_to_headline, tests/test_small_world.py)."""
    _, after = problems
    unjudged = sorted(set(range(after.n_bench)) - set(es.judged_benchmarks(after).tolist()))
    record, _ = draw_record(after, SEED, N_DRAWS)
    alone, _ = draw_record(after, SEED, N_DRAWS, ("model_assisted",))
    differ = 0
    for d in range(N_DRAWS):
        labeler, assisted = record.counts("labeler", d), record.counts("model_assisted", d)
        assert np.array_equal(assisted[unjudged], labeler[unjudged]), d
        assert np.array_equal(alone.counts("model_assisted", d), assisted), d
        assert labeler[unjudged].sum() > 0
        judged = es.judged_benchmarks(after)
        differ += not np.array_equal(assisted[judged], labeler[judged])
    assert differ == N_DRAWS  # the judged benchmarks' rows are imputations, not their labeler draws
