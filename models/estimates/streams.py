"""Random streams of the draws (issue 29 item 3).

The headline's draws (labeler, design, model-assisted; benchmark_index_membership draws them, the headline
replays them) take each benchmark's random numbers from a stream of its own: a numpy Generator seeded by
SeedSequence([seed, purpose words, benchmark-name words]), the words from a blake2b digest of the name (stable
across processes, unlike Python's hash()). A benchmark's count rows then depend only on its own data (and, for a
benchmark with judged texts, on the pooled calibration and mixture: models/estimates/bench_draws.py), not on how
many other benchmarks drew before it, so landing a benchmark draws that benchmark only and the others' rows are
read back. The checks against the judge keep one stream for everything (`SingleStream`: their numbers are those
of a plain Generator, as before).

Every random call of the draws names the benchmark of each value it asks for (`bench`, non-decreasing along
the values: texts, labels and their groups are ordered by benchmark); a per-benchmark stream hands each
benchmark's values from its own Generator in that order.
"""

from __future__ import annotations

import hashlib

import numpy as np


def name_words(name: str) -> list[int]:
    """Four 32-bit words of the blake2b digest of `name` (a stable key; Python's hash() is salted per process)."""
    digest = hashlib.blake2b(name.encode(), digest_size=16).digest()
    return [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]


def segments(bench: np.ndarray) -> list[tuple[int, int, int]]:
    """(benchmark, start, end) of each run of equal values in `bench`, which must be non-decreasing (checked on
    the runs: a benchmark appearing in two runs is an error)."""
    if bench.size == 0:
        return []
    cuts = np.flatnonzero(bench[1:] != bench[:-1]) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [bench.size]])
    firsts = bench[starts]
    if firsts.size > 1 and bool((firsts[1:] <= firsts[:-1]).any()):
        raise ValueError("per-benchmark streams: the values' benchmarks must be non-decreasing")
    return list(zip(firsts.tolist(), starts.tolist(), ends.tolist(), strict=True))


class SingleStream:
    """One Generator for every benchmark: the same numbers as calling it directly (`bench` only gives sizes)."""

    per_benchmark = False

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def random(self, bench: np.ndarray) -> np.ndarray:
        return self.rng.random(bench.size)

    def integers(self, high: int, bench: np.ndarray) -> np.ndarray:
        return self.rng.integers(0, high, size=bench.size)

    def binomial(self, n: np.ndarray, p: np.ndarray, bench: np.ndarray) -> np.ndarray:
        return self.rng.binomial(n, p)


class BenchStreams:
    """One Generator per benchmark (by name) and purpose; each call hands benchmark b's values from b's
    Generator, in order, so b's numbers do not depend on the other benchmarks of the problem."""

    per_benchmark = True

    def __init__(self, seed: int, purpose: str, benchmarks: list[str]) -> None:
        self.seed = seed
        self.purpose = purpose
        self.benchmarks = benchmarks
        self._generators: list[np.random.Generator | None] = [None] * len(benchmarks)

    def generator(self, b: int) -> np.random.Generator:
        rng = self._generators[b]
        if rng is None:
            entropy = [self.seed, *name_words(self.purpose), *name_words(self.benchmarks[b])]
            rng = self._generators[b] = np.random.default_rng(np.random.SeedSequence(entropy))
        return rng

    def random(self, bench: np.ndarray) -> np.ndarray:
        out = np.empty(bench.size)
        for b, start, end in segments(bench):
            out[start:end] = self.generator(b).random(end - start)
        return out

    def integers(self, high: int, bench: np.ndarray) -> np.ndarray:
        out = np.empty(bench.size, dtype=np.int64)
        for b, start, end in segments(bench):
            out[start:end] = self.generator(b).integers(0, high, size=end - start)
        return out

    def binomial(self, n: np.ndarray, p: np.ndarray, bench: np.ndarray) -> np.ndarray:
        out = np.empty(bench.size, dtype=np.int64)
        for b, start, end in segments(bench):
            out[start:end] = self.generator(b).binomial(n[start:end], p[start:end])
        return out


Streams = SingleStream | BenchStreams
Rng = np.random.Generator | Streams  # a plain Generator (one stream) or per-benchmark streams


def as_streams(rng: Rng) -> Streams:
    return SingleStream(rng) if isinstance(rng, np.random.Generator) else rng


class DrawStreams:
    """The per-benchmark streams of a model-assisted draw: `boot` for the bootstrap of the judge sample (the pooled
    parameters read it), `draw` for everything else."""

    def __init__(self, seed: int, purpose: str, benchmarks: list[str]) -> None:
        self.boot = BenchStreams(seed, f"{purpose}/bootstrap", benchmarks)
        self.draw = BenchStreams(seed, purpose, benchmarks)
