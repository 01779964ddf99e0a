"""The sampling machinery under the model-assisted imputation (models/estimates/draws.py ModelAssisted): discrete
distributions held as sorted CSR blocks (one per text or benchmark) that draw one value per entry and are
reweighted by a bootstrap replicate without being rebuilt; the grid of mixture weights; and each row's
leave-its-own-text-out share within its benchmark. Plain numpy; its own module because it knows nothing of
the estimators.
"""

from __future__ import annotations

import copy

import numpy as np

from models.estimates.streams import Rng, Streams, as_streams, segments

MIX_STEP = 0.1  # grid step of the mixture weights (a simplex of three weights)


def simplex_grid(parts: int, step: float = MIX_STEP) -> np.ndarray:
    """Every weight vector of `parts` non-negative weights on a grid of `step` that sums to 1."""
    n = int(round(1 / step))
    rows: list[tuple[int, ...]] = [()]
    for _ in range(parts - 1):
        rows = [r + (i,) for r in rows for i in range(n + 1 - sum(r))]
    return np.array([(*r, n - sum(r)) for r in rows], dtype=float) / n


def loo_share(texts: np.ndarray, bench: np.ndarray, values: np.ndarray, n_values: int,
               total_loo: np.ndarray) -> np.ndarray:
    """Each row's value's share among the other texts' rows of its benchmark (leave its own text out)."""
    _, in_bench = np.unique(bench.astype(np.int64) * n_values + values, return_inverse=True)
    _, in_text = np.unique(texts.astype(np.int64) * n_values + values, return_inverse=True)
    counts = np.bincount(in_bench)[in_bench] - np.bincount(in_text)[in_text]
    return np.divide(counts.astype(float), total_loo, out=np.zeros(values.size), where=total_loo > 0)


class WeightedBlocks:
    """Discrete distributions over values (occupations, tasks, ...), one per owner (a text, or a benchmark), as
    sorted CSR rows: owner, value, weight. `draw(owners)` picks one value per entry by its owner's weights;
    `reweighted(row_weights)` is the same support with new weights of the input rows (a bootstrap replicate)."""

    def __init__(self, owner: np.ndarray, occ: np.ndarray, weight: np.ndarray, n_owners: int, n_occ: int,
                 owner_bench: np.ndarray | None = None) -> None:
        """`owner_bench`: the benchmark of each owner (None: the owners are benchmarks), for per-benchmark draws."""
        self.owner_bench = owner_bench
        keys, inverse = np.unique(owner.astype(np.int64) * n_occ + occ, return_inverse=True)
        self.n_occ = n_occ
        self.n_owners = n_owners
        self.keys = keys
        self.inverse = inverse
        self.owner = keys // n_occ
        self.occ = keys % n_occ
        self.first = np.searchsorted(self.owner, np.arange(n_owners))
        self.last = np.searchsorted(self.owner, np.arange(n_owners), side="right")
        self._set(np.bincount(inverse, weights=weight, minlength=keys.size))

    def _set(self, weight: np.ndarray) -> None:
        self.weight = weight
        self.cum = np.cumsum(weight)
        self.total = np.bincount(self.owner, weights=weight, minlength=self.n_owners)
        self._local: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def _bench(self, owners: np.ndarray) -> np.ndarray:
        return owners if self.owner_bench is None else self.owner_bench[owners]

    def _local_cum(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Cumulative weights restarting at each benchmark's first entry, and each entry's benchmark's first and
        end position: a per-benchmark draw reads only its benchmark's entries, so its result does not depend on
        the other benchmarks' weights (a global cumsum would: its rounding carries the mass before)."""
        if self._local is None:
            local = np.empty(self.weight.size)
            first = np.empty(self.weight.size, dtype=np.int64)
            end = np.empty(self.weight.size, dtype=np.int64)
            for _, start, stop in segments(self._bench(self.owner)):
                local[start:stop] = np.cumsum(self.weight[start:stop])
                first[start:stop], end[start:stop] = start, stop
            self._local = (local, first, end)
        return self._local

    def reweighted(self, weight: np.ndarray) -> WeightedBlocks:
        out = copy.copy(self)
        out._set(np.bincount(self.inverse, weights=weight, minlength=self.keys.size))
        return out

    def has(self, owners: np.ndarray) -> np.ndarray:
        return self.last[owners] > self.first[owners]

    def share(self, owners: np.ndarray, occ: np.ndarray) -> np.ndarray:
        """Each owner's weight share of `occ` (0 where the owner has none)."""
        keys = owners.astype(np.int64) * self.n_occ + occ
        pos = np.minimum(np.searchsorted(self.keys, keys), max(self.keys.size - 1, 0))
        hit = self.keys[pos] == keys if self.keys.size else np.zeros(keys.shape, dtype=bool)
        weight = np.where(hit, self.weight[pos] if self.keys.size else 0.0, 0.0)
        total = self.total[owners]
        return np.divide(weight, total, out=np.zeros(weight.shape), where=total > 0)

    def draw(self, rng: Rng, owners: np.ndarray) -> np.ndarray:
        """One occupation per owner (owners without a distribution: -1)."""
        streams = as_streams(rng)
        first, last = self.first[owners], self.last[owners]
        has = last > first
        out = np.full(owners.size, -1, dtype=np.int64)
        if not has.any():
            return out
        if streams.per_benchmark:
            out[has] = self.occ[self._draw_per_benchmark(streams, owners[has], first[has], last[has])]
            return out
        lo = np.where(first > 0, self.cum[np.maximum(first - 1, 0)], 0.0)  # mass before each owner's block
        value = lo[has] + streams.random(self._bench(owners[has])) * self.total[owners[has]]
        pos = np.clip(np.searchsorted(self.cum, value, side="right"), first[has], last[has] - 1)
        out[has] = self.occ[pos]
        return out

    def _draw_per_benchmark(self, streams: Streams, owners: np.ndarray, first: np.ndarray,
                            last: np.ndarray) -> np.ndarray:
        """Positions drawn within each owner's block against its benchmark's own cumulative weights (the first
        entry of the block whose cumulative weight exceeds the drawn value, else the block's last). The global
        cumsum's search is the guess (the two differ only by rounding); each guess is checked exactly and the
        few that fail are found by a binary search within their block."""
        local, bench_first, _ = self._local_cum()
        u = streams.random(self._bench(owners))
        total = self.total[owners]
        value = np.where(first > bench_first[first], local[np.maximum(first - 1, 0)], 0.0) + u * total
        start = np.where(first > 0, self.cum[np.maximum(first - 1, 0)], 0.0)
        low = np.clip(np.searchsorted(self.cum, start + u * total, side="right"), first, last - 1)
        ok = ((local[low] > value) | (low == last - 1)) & ((low == first) | (local[np.maximum(low - 1, 0)] <= value))
        active = np.flatnonzero(~ok)
        if active.size == 0:
            return low
        low[active], high = first[active], last - 1
        while active.size:
            mid = (low[active] + high[active]) // 2
            right = local[mid] <= value[active]
            low[active] = np.where(right, mid + 1, low[active])
            high[active] = np.where(right, high[active], mid)
            active = active[low[active] < high[active]]
        return low
