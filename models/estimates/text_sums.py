"""The per-text table's sums kept by benchmark (issue 29 item 3): a refresh after a new benchmark recomputes
the per-text probabilities (models/estimates/texts.py) of the benchmarks whose inputs changed only.

TextOccupationDraws.add sums, over the headline's model-assisted draws, one value per (text, occupation) pair
and per (benchmark, occupation) background. A benchmark's values read its own texts, labels and judged misses
(the problem restricted to it), the task structure, and each draw's pooled parameters (bootstrap of the judged
texts, calibration factors, mixture weights, the pooled donors' miss counts): all of it in the benchmark's
kept draw rows' key and the pooled parameters' key (models/estimates/bench_draws.py), both on the DrawRecord the
headline replays. So a benchmark's sums are kept under (rows key, pooled key) and read back; the others are
summed by a TextOccupationDraws restricted to their texts (`texts=`: the same arithmetic per element, in the same
order, so the same bits) and the full collector is assembled from both (`merged`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.estimates.problem import Problem
from models.estimates.texts import TextOccupationDraws

Read = Callable[[str, str], Any]
Write = Callable[[str, str, Any], None]
NAME = "text_sums_"  # + purpose + benchmark: one kept result per benchmark


@dataclass
class BenchTextSums:
    """One benchmark's sums over `n` draws: its (text, occupation) pairs (text local to the benchmark) and its
    background rows (labeled and unlabeled texts)."""

    pair_keys: np.ndarray  # local text * n_occ + occupation, ascending
    sum_pair: np.ndarray
    bg_labeled: np.ndarray  # (n_occ,)
    bg_unlabeled: np.ndarray
    n: int


def text_keys(record: Any, purpose: str = "headline") -> list[str] | None:
    """Per benchmark the key of its text sums (None: the record carries no keys, e.g. drawn in place)."""
    bench_keys, pooled_key = getattr(record, "bench_keys", None), getattr(record, "pooled_key", None)
    if not bench_keys or pooled_key is None:
        return None
    return [f"texts:{purpose}:{key}:{pooled_key}" for key in bench_keys]


def _text_starts(problem: Problem) -> np.ndarray:
    return np.searchsorted(problem.text_bench, np.arange(problem.n_bench + 1))


class KeptTextSums:
    """The kept sums of `problem`'s benchmarks under `keys` (text_keys), read through `read`."""

    def __init__(self, problem: Problem, keys: list[str] | None, read: Read | None = None,
                 purpose: str = "headline") -> None:
        self.problem, self.keys, self.purpose = problem, keys, purpose
        self.kept: dict[int, BenchTextSums] = {}
        if keys is not None and read is not None:
            for b, name in enumerate(problem.benchmarks):
                stored = read(NAME + purpose + "_" + name, keys[b])
                if isinstance(stored, BenchTextSums):
                    self.kept[b] = stored

    def missing(self) -> list[int]:
        return [b for b in range(self.problem.n_bench) if b not in self.kept]

    def texts_to_sum(self) -> np.ndarray | None:
        """The texts whose sums must be computed (those of the benchmarks without kept sums); None: every one."""
        if not self.kept:
            return None
        starts = _text_starts(self.problem)
        parts = [np.arange(starts[b], starts[b + 1]) for b in self.missing()]
        return np.concatenate(parts).astype(np.int64) if parts else np.empty(0, dtype=np.int64)

    def merged(self, computed: TextOccupationDraws, write: Write | None = None) -> TextOccupationDraws:
        """The collector over every text: the kept benchmarks' sums and `computed`'s (which summed the others'
        texts, or every text); the computed benchmarks' sums are kept through `write`."""
        pr, n_occ = self.problem, self.problem.n_occ
        full = computed if computed.only.all() else TextOccupationDraws(computed.assisted)
        starts = _text_starts(pr)
        for b in self.missing():
            part = _bench_sums(computed, b, starts, n_occ)
            if full is not computed:
                _place(full, b, part, starts, n_occ)
            if write is not None and self.keys is not None:
                write(NAME + self.purpose + "_" + pr.benchmarks[b], self.keys[b], part)
        if full is computed:
            return full
        for b, part in self.kept.items():
            if part.n != computed.n:
                raise ValueError(f"kept text sums of {pr.benchmarks[b]}: {part.n} draws, not {computed.n}")
            _place(full, b, part, starts, n_occ)
        full.n = computed.n
        return full


def _bench_rows(collector: TextOccupationDraws, b: int) -> np.ndarray:
    return np.flatnonzero(collector.pair_bench == b)


def _bench_sums(collector: TextOccupationDraws, b: int, starts: np.ndarray, n_occ: int) -> BenchTextSums:
    rows = _bench_rows(collector, b)
    local = (collector.pair_text[rows] - starts[b]) * n_occ + collector.pair_occ[rows]
    return BenchTextSums(local.astype(np.int64), collector.sum_pair[rows].copy(),
                         collector.sum_bg_labeled[b].copy(), collector.sum_bg_unlabeled[b].copy(), collector.n)


def _place(full: TextOccupationDraws, b: int, part: BenchTextSums, starts: np.ndarray, n_occ: int) -> None:
    rows = _bench_rows(full, b)
    local = (full.pair_text[rows] - starts[b]) * n_occ + full.pair_occ[rows]
    if not np.array_equal(local, part.pair_keys):
        raise ValueError(f"kept text sums of benchmark {full.problem.benchmarks[b]}: other (text, occupation) "
                         "pairs than the problem's (its key should have changed)")
    full.sum_pair[rows] = part.sum_pair
    full.sum_bg_labeled[b] = part.bg_labeled
    full.sum_bg_unlabeled[b] = part.bg_unlabeled
