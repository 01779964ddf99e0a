"""Each benchmark's estimated occupation and major-group shares, kept by benchmark (issue 29 item 3).

benchmark_major_group_estimates and benchmark_occupation_estimates (models/estimates/units.py
`benchmark_share_estimates`) are, per benchmark, reductions over the draws of that benchmark's own row of the
headline's model-assisted count matrices: its label mass per occupation in each draw, its shares, their mean and
2.5-97.5 percentiles across draws. Nothing of another benchmark enters them but the final ranking's sort. A
benchmark's row of every draw is what its kept draw rows hold (models/estimates/bench_draws.py), so its share
rows depend on exactly what those rows' key says (its texts, labels and judge labels, the task structure, seed,
draws, estimators, the code; and the pooled parameters' key when it has judged texts). They are kept under that
key and read back: after a new benchmark lands only its own shares are computed (benchmark_index_membership
needs them before the headline, which needs them again).

`share_parts` does the arithmetic of every benchmark given (the same numpy reductions along the draws axis, per
element, as over all benchmarks at once: the same bits), `share_frames` assembles the tables from the parts in
the problem's benchmark order, as `benchmark_share_estimates` always did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from models.estimates.problem import Problem

Read = Callable[[str, str], Any]
Write = Callable[[str, str, Any], None]
NAME = "bench_shares_"  # + purpose + benchmark: one kept result per benchmark
SHARE_TABLES: dict[str, str] = {
    "occupation": "benchmark_occupation_estimates",
    "major_group": "benchmark_major_group_estimates",
}
SHARE_MIN = 0.001  # benchmark_occupation_estimates keeps occupations with a mean share at least this


@dataclass
class SharePart:
    """One benchmark's rows of one share table: the units kept (positions in the level's code order, ascending)
    and their share mean, low and high."""

    units: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray


def occupation_codes(problem: Problem) -> list[str]:
    """Occupation codes in the problem's occupation index order (build_problem sorts them)."""
    return sorted(set(problem.task_keys["onet_soc_code"].to_list()))


def group_codes(problem: Problem) -> list[str]:
    """SOC major group codes ('15-0000') in the problem's group index order."""
    return [f"{g}-0000" for g in sorted({c[:2] for c in occupation_codes(problem)})]


def level_shares(bench_occ: np.ndarray, group_starts: np.ndarray, level: str) -> np.ndarray:
    """(draws, benchmarks, units) the unit's share of the benchmark's prompt x task labels per draw (NaN in a
    draw where the benchmark has no label); `bench_occ`: (draws, benchmarks, occupations) label mass."""
    mass = bench_occ.astype(np.float64)
    if level == "major_group":
        mass = np.add.reduceat(mass, group_starts, axis=2)
    total = mass.sum(axis=2, keepdims=True)
    return np.divide(mass, total, out=np.full_like(mass, np.nan), where=total > 0)  # NaN: no label in the draw


def share_parts(bench_occ: np.ndarray, group_starts: np.ndarray) -> dict[str, list[SharePart]]:
    """Per level, each benchmark's SharePart (in `bench_occ`'s benchmark order). Draws in which a benchmark has
    no label are left out of its shares, so its mean shares sum to 1; occupations with a mean share >=
    SHARE_MIN, every major group."""
    out: dict[str, list[SharePart]] = {}
    for level in SHARE_TABLES:
        shares = level_shares(bench_occ, group_starts, level)
        labeled = ~np.isnan(shares).all(axis=0)  # draws of a benchmark without any label say nothing of shares
        filled = np.where(labeled, shares, 0.0)
        mean = np.nan_to_num(np.nanmean(filled, axis=0))
        gaps = np.isnan(filled).any(axis=(0, 2))  # benchmarks with an empty draw (nanquantile is slow: only those)
        low, high = np.quantile(np.where(np.isnan(filled), 0.0, filled), [0.025, 0.975], axis=0)
        if gaps.any():
            low[gaps], high[gaps] = np.nanquantile(filled[:, gaps], [0.025, 0.975], axis=0)
        keep = mean >= (SHARE_MIN if level == "occupation" else -1.0)
        parts = []
        for b in range(mean.shape[0]):
            units = np.flatnonzero(keep[b])
            parts.append(SharePart(units, mean[b, units], low[b, units], high[b, units]))
        out[level] = parts
    return out


def share_frames(problem: Problem, parts: dict[str, list[SharePart]]) -> dict[str, pl.DataFrame]:
    """The two share tables (SHARE_TABLES) from every benchmark's parts (in the problem's benchmark order):
    benchmark, the unit's code, share_mean, share_low, share_high, rank (1 = largest mean share; null for a zero
    share, so a benchmark whose draws hold no label at all has no rank 1)."""
    codes = {"occupation": ("onet_soc_code", occupation_codes(problem)),
             "major_group": ("major_group_code", group_codes(problem))}
    out: dict[str, pl.DataFrame] = {}
    for level, (column, unit_codes) in codes.items():
        level_parts = parts[level]
        b_idx = np.concatenate([np.full(p.units.size, b, dtype=np.int64) for b, p in enumerate(level_parts)])
        u_idx = np.concatenate([p.units for p in level_parts]).astype(np.int64)
        frame = pl.DataFrame({
            "benchmark": np.asarray(problem.benchmarks, dtype=object)[b_idx].tolist(),
            column: np.asarray(unit_codes, dtype=object)[u_idx].tolist(),
            "share_mean": np.concatenate([p.mean for p in level_parts]),
            "share_low": np.concatenate([p.low for p in level_parts]),
            "share_high": np.concatenate([p.high for p in level_parts]),
        }, schema={"benchmark": pl.Utf8, column: pl.Utf8, "share_mean": pl.Float64, "share_low": pl.Float64,
                   "share_high": pl.Float64})
        rank = pl.col("share_mean").rank("ordinal", descending=True).over("benchmark").cast(pl.Int64)
        out[SHARE_TABLES[level]] = frame.with_columns(  # a benchmark without any label has no ranking
            pl.when(pl.col("share_mean") > 0).then(rank).alias("rank")
        ).sort("benchmark", "rank", nulls_last=True)
    return out


def _starts(owner: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])


def record_bench_occ(problem: Problem, record: Any, benches: list[int]) -> np.ndarray:
    """(draws, len(benches), occupations) float32: the benchmarks' label mass per occupation in each
    model-assisted draw of `record` (a DrawRecord; UnitDraws.add's sums of the same count rows)."""
    k = problem.n_tasks
    occ_starts = _starts(problem.task_occ)
    entries = record.entries["model_assisted"]
    out = np.zeros((len(entries), len(benches), problem.n_occ), dtype=np.float32)
    lows = np.asarray(benches, dtype=np.int64) * k
    for d, (where, values) in enumerate(entries):
        counts = np.zeros((len(benches), k))
        cuts_low = np.searchsorted(where, lows)
        cuts_high = np.searchsorted(where, lows + k)
        for i, (lo, hi) in enumerate(zip(cuts_low.tolist(), cuts_high.tolist(), strict=True)):
            counts[i, where[lo:hi] - lows[i]] = values[lo:hi]
        out[d] = np.add.reduceat(counts, occ_starts, axis=1)
    return out


def share_keys(record: Any, purpose: str = "headline") -> list[str] | None:
    """Per benchmark the key of its share rows (None: the record carries no keys, e.g. drawn in place)."""
    bench_keys = getattr(record, "bench_keys", None)
    if not bench_keys:
        return None
    return [f"shares:{purpose}:{key}" for key in bench_keys]


def kept_share_estimates(problem: Problem, record: Any, read: Read | None = None, write: Write | None = None,
                         purpose: str = "headline") -> tuple[dict[str, pl.DataFrame], list[str]]:
    """(the two share tables of `record`'s model-assisted draws, the benchmarks computed): each benchmark's
    parts read back under its key (`share_keys`) when kept, the others computed from the record and kept."""
    keys = share_keys(record, purpose)
    kept: dict[int, dict[str, SharePart]] = {}
    if keys is not None and read is not None:
        for b, name in enumerate(problem.benchmarks):
            stored = read(NAME + purpose + "_" + name, keys[b])
            if isinstance(stored, dict) and set(stored) == set(SHARE_TABLES):
                kept[b] = stored
    missing = [b for b in range(problem.n_bench) if b not in kept]
    if missing:
        computed = share_parts(record_bench_occ(problem, record, missing), _starts(problem.occ_group))
        for i, b in enumerate(missing):
            kept[b] = {level: computed[level][i] for level in SHARE_TABLES}
            if keys is not None and write is not None:
                write(NAME + purpose + "_" + problem.benchmarks[b], keys[b], kept[b])
    parts = {level: [kept[b][level] for b in range(problem.n_bench)] for level in SHARE_TABLES}
    return share_frames(problem, parts), [problem.benchmarks[b] for b in missing]
