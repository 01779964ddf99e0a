"""The headline's draws benchmark by benchmark, kept by benchmark (issue 29 item 3).

Each benchmark draws its labeler, design and model-assisted count rows from random streams of its own
(models/estimates/streams.py). What a benchmark's rows depend on:

- its own texts, labels and judge labels (the fingerprint of the problem restricted to it), the seed, the
  number of draws, the estimators and the code;
- for a benchmark WITH judged texts, also the pooled parameters of each model-assisted draw: the bootstrap of
  every judged benchmark's sample, the calibration factors (shrunk to the pooled factor) and the mixture
  weights (chosen on every judged benchmark's misses). These are not additive: they are computed on the
  problem restricted to the judged benchmarks (`pooled_parameters`), and when a benchmark with judged texts
  lands or changes they change, so every judged benchmark is redrawn;
- a benchmark WITHOUT judged texts reads nothing pooled: its model-assisted rows are its labeler rows (the same
  draw of its own labels), so an index of such benchmarks has one set of draws behind both its published
  labeler row and its per-unit tables.

So a new or changed benchmark without judged texts draws its own rows only; every other benchmark's rows are
read back (`draw_record`, through a `store` of the I/O layer keyed by the above) and the count matrices, which
are sums of benchmark rows, are assembled from them: the same bits as drawing every benchmark anew.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.cache_keys import result_key
from models.estimates.draws import (
    GroupedLabels,
    ModelAssisted,
    StratifiedBootstrap,
    calibration_factors,
    design_counts,
    one_blas_thread,
)
from models.estimates.judged import judged_benchmarks, restrict_to_benchmarks
from models.estimates.problem import CALIBRATION_PRIOR, Problem
from models.estimates.streams import BenchStreams, DrawStreams
from models.estimates.tables import DrawRecord

DRAWN = ("labeler", "design", "model_assisted")

Read = Callable[[str, str], Any]
Write = Callable[[str, str, Any], None]


@dataclass
class PooledParameters:
    """Per model-assisted draw, on the judged benchmarks: each sampled text's bootstrap weight, each judged
    benchmark's calibration factor, the pooled factor and the mixture weights."""

    benchmarks: list[str]  # the judged benchmarks, in problem order
    n_texts: list[int]  # texts per judged benchmark (their order within a benchmark is the problem's)
    sampled: np.ndarray  # positions of the sampled texts in the judged problem
    boots: list[np.ndarray]  # per draw: bootstrap weights of `sampled`
    factors: list[np.ndarray]  # per draw: per judged benchmark
    pooled: list[float]
    mixtures: list[np.ndarray]

    def for_problem(self, problem: Problem) -> DrawParameters:
        """The (boot, factors, mixture) of every draw over `problem`'s texts and benchmarks (a benchmark without
        judged texts: boot 0, the pooled factor as calibration_factors gives it, unused by its draws)."""
        starts = np.searchsorted(problem.text_bench, np.arange(problem.n_bench))
        position = {name: b for b, name in enumerate(problem.benchmarks)}
        text_map = np.full(int(sum(self.n_texts)), -1, dtype=np.int64)
        judged_at: list[tuple[int, int]] = []  # (index in the judged problem, index in `problem`)
        offset = 0
        for j, (name, size) in enumerate(zip(self.benchmarks, self.n_texts, strict=True)):
            b = position.get(name)
            if b is not None:
                text_map[offset:offset + size] = starts[b] + np.arange(size)
                judged_at.append((j, b))
            offset += size
        mapped = text_map[self.sampled]
        present = mapped >= 0
        return DrawParameters(self, problem.text_bench.shape[0], problem.n_bench, mapped[present], present,
                              judged_at)


class DrawParameters(Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]):
    """PooledParameters.for_problem: draw d's (boot, factors, mixture) over one problem, built when asked for.
    Held whole, the draws' bootstrap weights of every text are 200 x texts floats (50x the mirror: ~0.8 GiB per
    record, twice in headline_estimates), all but the judged texts' zeros."""

    def __init__(self, pooled: PooledParameters, n_texts: int, n_bench: int, positions: np.ndarray,
                 present: np.ndarray, judged_at: list[tuple[int, int]]) -> None:
        self.pooled, self.n_texts, self.n_bench = pooled, n_texts, n_bench
        self.positions, self.present, self.judged_at = positions, present, judged_at

    def __len__(self) -> int:
        return len(self.pooled.boots)

    def __getitem__(self, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # type: ignore[override]
        if not -len(self) <= d < len(self):
            raise IndexError(d)
        d %= len(self)
        boot = np.zeros(self.n_texts)
        boot[self.positions] = self.pooled.boots[d][self.present]
        pooled = self.pooled.pooled[d]
        factors = np.full(self.n_bench, (0.0 + CALIBRATION_PRIOR * pooled) / (0.0 + CALIBRATION_PRIOR))
        for j, b in self.judged_at:
            factors[b] = self.pooled.factors[d][j]
        return boot, factors, self.pooled.mixtures[d]


def pooled_parameters(judged: Problem, seed: int, n_draws: int, purpose: str,
                      assisted: ModelAssisted | None = None) -> PooledParameters:
    """The pooled parameters of `n_draws` model-assisted draws on `judged` (the problem restricted to the
    benchmarks with judged texts), the bootstrap from each benchmark's own stream (`assisted`: ModelAssisted of
    `judged`, when already built)."""
    assisted = assisted or ModelAssisted(judged)
    streams = DrawStreams(seed, purpose, judged.benchmarks)
    sampled = assisted.bootstrap.sampled
    boots, factors, pooled, mixtures = [], [], [], []
    with one_blas_thread():
        for _ in range(n_draws):
            boot = assisted.bootstrap.draw(streams.boot)
            f, p = calibration_factors(judged, boot, assisted.prior, assisted.sampled_rows, with_pooled=True)
            boots.append(boot[sampled])
            factors.append(f)
            pooled.append(p)
            mixtures.append(assisted.weights_for(boot))
    return PooledParameters(list(judged.benchmarks), [judged.n_texts(b) for b in range(judged.n_bench)], sampled,
                            boots, factors, pooled, mixtures)


Rows = tuple[np.ndarray, np.ndarray, np.ndarray]  # one benchmark's draws: offsets per draw, task positions, values


class _SparseRows:
    """The nonzero entries of every draw's count matrix, split by benchmark at the end (a dense draws x
    benchmarks x tasks stack of 200 draws is gigabytes)."""

    def __init__(self, n_bench: int, n_tasks: int) -> None:
        self.n_bench, self.n_tasks = n_bench, n_tasks
        self.draws: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # flat positions, values, bench cuts

    def add(self, counts: np.ndarray) -> None:
        flat = counts.ravel()
        where = np.flatnonzero(flat != 0)  # a boolean's nonzero is ~4x faster than a float's
        cuts = np.searchsorted(where, np.arange(self.n_bench + 1) * self.n_tasks)
        self.draws.append((where, flat[where], cuts))

    def rows(self, b: int) -> Rows:
        where = [w[c[b]:c[b + 1]] for w, _, c in self.draws]
        values = [v[c[b]:c[b + 1]] for _, v, c in self.draws]
        offsets = np.concatenate([[0], np.cumsum([w.size for w in where])]).astype(np.int64)
        tasks = (np.concatenate(where) - b * self.n_tasks).astype(np.int32)
        return offsets, tasks, np.concatenate(values)


def draw_rows(problem: Problem, parameters: list[tuple[np.ndarray, np.ndarray, np.ndarray]], seed: int,
              n_draws: int, estimators: Sequence[str], purpose: str,
              assisted: ModelAssisted | None = None) -> dict[str, list[Rows]]:
    """Per estimator, each benchmark's rows of every draw (`Rows`), each benchmark from its own streams;
    `parameters`: the pooled parameters of each model-assisted draw over `problem` (PooledParameters)."""
    names = problem.benchmarks
    fill = np.bincount(problem.text_bench, weights=problem.text_sampled, minlength=problem.n_bench) == 0
    kept = {e: _SparseRows(problem.n_bench, problem.n_tasks) for e in estimators}
    with one_blas_thread():
        if "labeler" in estimators:
            every_label = GroupedLabels(problem, np.arange(problem.lab_p.shape[0]))
            streams = BenchStreams(seed, f"{purpose}/labeler", names)
            for _ in range(n_draws):
                kept["labeler"].add(every_label.draw(streams))
        if "design" in estimators:
            bootstrap = StratifiedBootstrap(problem)
            streams = BenchStreams(seed, f"{purpose}/design", names)
            for _ in range(n_draws):
                kept["design"].add(design_counts(problem, streams, bootstrap))
        if "model_assisted" in estimators:
            assisted = assisted or ModelAssisted(problem)
            draw_streams = DrawStreams(seed, f"{purpose}/model_assisted", names)
            fill_labels = GroupedLabels(problem, np.flatnonzero(fill[problem.text_bench[problem.lab_text]])) \
                if fill.any() else None
            # a benchmark without judged texts: its model-assisted rows ARE its labeler rows (the labeler's own
            # streams, so the same numbers as the labeler estimator's draw d). An index of such benchmarks
            # publishes the labeler row, and its per-unit tables (summed from the model-assisted draws) must be
            # the same draws: before, a second draw from other streams made them disagree (issue 25's check
            # unit_estimates_sum_to_headline failed in a world without a judge sample).
            fill_streams = BenchStreams(seed, f"{purpose}/labeler", names) if fill_labels is not None else None
            for d in range(n_draws):
                counts = assisted.draw(draw_streams, parameters=parameters[d])
                if fill_labels is not None:
                    counts[fill] = fill_labels.draw(fill_streams)[fill]
                kept["model_assisted"].add(counts)
    return {e: [kept[e].rows(b) for b in range(problem.n_bench)] for e in estimators}


@dataclass
class DrawReport:
    drawn: list[str]  # benchmarks drawn in this call
    kept: list[str]  # benchmarks whose rows were read back
    pooled_cached: bool


def draw_record(problem: Problem, seed: int, n_draws: int, estimators: Sequence[str] = DRAWN, *,
                purpose: str = "headline", code_version: str = "", read: Read | None = None,
                write: Write | None = None) -> tuple[DrawRecord, DrawReport]:
    """The DrawRecord of `estimators` over `problem` (run_estimators(replay=) reads it), each benchmark's rows from
    its own streams; with `read`/`write` (a store of the I/O layer: name, key -> value) a benchmark's rows are
    kept under the key of what they depend on (module docstring) and read back instead of drawn."""
    estimators = [e for e in DRAWN if e in estimators]
    judged_idx = judged_benchmarks(problem)
    judged, _ = restrict_to_benchmarks(problem, judged_idx)
    pooled_key = result_key(("pooled", judged.fingerprint(), seed, n_draws, purpose, code_version))
    pooled = read("draws_pooled_" + purpose, pooled_key) if read is not None else None
    pooled_cached = isinstance(pooled, PooledParameters)
    is_judged = np.zeros(problem.n_bench, dtype=bool)
    is_judged[judged_idx] = True
    keys, rows = [], {}
    for b, name in enumerate(problem.benchmarks):
        own, _ = restrict_to_benchmarks(problem, np.array([b]))
        keys.append(result_key(("rows", own.fingerprint(), seed, n_draws, estimators, purpose, code_version,
                                pooled_key if is_judged[b] else None)))
        stored = read(f"draws_{purpose}_{name}", keys[b]) if read is not None else None
        if isinstance(stored, dict) and set(stored) == set(estimators):
            rows[b] = stored
    missing = np.array([b for b in range(problem.n_bench) if b not in rows], dtype=np.int64)
    # every benchmark judged (the mirror) and every one drawn: the judged problem is the problem, one ModelAssisted
    shared = ModelAssisted(problem) if judged_idx.size == missing.size == problem.n_bench \
        and "model_assisted" in estimators else None
    if not pooled_cached:
        pooled = pooled_parameters(judged, seed, n_draws, f"{purpose}/model_assisted", shared)
        if write is not None:
            write("draws_pooled_" + purpose, pooled_key, pooled)
    assert isinstance(pooled, PooledParameters)
    if missing.size:
        sub, _ = restrict_to_benchmarks(problem, missing)
        drawn = draw_rows(sub, pooled.for_problem(sub), seed, n_draws, estimators, purpose, shared)
        for i, b in enumerate(missing.tolist()):
            rows[b] = {e: drawn[e][i] for e in estimators}
            if write is not None:
                write(f"draws_{purpose}_{problem.benchmarks[b]}", keys[b], rows[b])
    record = DrawRecord((problem.n_bench, problem.n_tasks), seed, n_draws)
    record.bench_keys, record.pooled_key = keys, pooled_key
    k = problem.n_tasks
    for e in estimators:
        for d in range(n_draws):
            where, values = [], []
            for b in range(problem.n_bench):
                offsets, tasks, vals = rows[b][e]
                where.append(tasks[offsets[d]:offsets[d + 1]].astype(np.int64) + b * k)
                values.append(vals[offsets[d]:offsets[d + 1]])
            flat_where, flat_values = np.concatenate(where), np.concatenate(values)
            narrow = flat_values.astype(np.float32)
            record.entries.setdefault(e, []).append(
                (flat_where.astype(np.int32), narrow if np.array_equal(narrow, flat_values) else flat_values))
    if "model_assisted" in estimators:
        record.parameters = pooled.for_problem(problem)
    report = DrawReport([problem.benchmarks[b] for b in missing.tolist()],
                        [n for b, n in enumerate(problem.benchmarks) if b not in set(missing.tolist())], pooled_cached)
    return record, report
