"""Reading a membership table: the indexes it holds, an index's members, per-index frames and the lines the
run summary prints."""

from __future__ import annotations

import polars as pl

from models.indexes.definition import ALL_INDEX, IndexDefinition
from models.indexes.evaluate import rule_text


def index_names(membership: pl.DataFrame | None) -> list[str]:
    """The indexes of a membership table, `all` first (just `all` without one)."""
    if membership is None or membership.is_empty():
        return [ALL_INDEX]
    names = sorted(set(membership["benchmark_index"].to_list()) - {ALL_INDEX})
    return [ALL_INDEX, *names]


def members(membership: pl.DataFrame | None, index: str) -> list[str] | None:
    """The included benchmarks of `index` (None for `all` or without a membership table: no filter)."""
    if membership is None or membership.is_empty() or index == ALL_INDEX:
        return None
    rows = membership.filter((pl.col("benchmark_index") == index) & pl.col("included"))
    return sorted(rows["benchmark"].to_list())


def per_index(frame: pl.DataFrame, membership: pl.DataFrame | None) -> list[tuple[str, pl.DataFrame]]:
    """(index, the rows of `frame` -- anything with a `benchmark` column, e.g. task_label_counts -- whose
    benchmark the index includes), `all` first and unfiltered."""
    out = []
    for name in index_names(membership):
        wanted = members(membership, name)
        out.append((name, frame if wanted is None else frame.filter(pl.col("benchmark").is_in(wanted))))
    return out


def with_index(frame: pl.DataFrame, index: str) -> pl.DataFrame:
    """`frame` with a leading `benchmark_index` column."""
    return frame.select(pl.lit(index, dtype=pl.Utf8).alias("benchmark_index"), pl.all())


def only_index(frame: pl.DataFrame, index: str = ALL_INDEX) -> pl.DataFrame:
    """The rows of one index, without the column (frames without it are returned as they are)."""
    if "benchmark_index" not in frame.columns:
        return frame
    return frame.filter(pl.col("benchmark_index") == index).drop("benchmark_index")


def membership_lines(membership: pl.DataFrame, index: str) -> tuple[list[str], list[str]]:
    """(included benchmarks, 'benchmark: why' for each excluded one) of one index, for the summary."""
    rows = membership.filter(pl.col("benchmark_index") == index).sort("benchmark")
    included = rows.filter(pl.col("included"))["benchmark"].to_list()
    excluded = [
        f"{r['benchmark']} ({r['decided_by']}: {r['reason'] or 'no reason recorded'})"
        for r in rows.filter(~pl.col("included")).iter_rows(named=True)
    ]
    return included, excluded


def describe_rules(definition: IndexDefinition) -> list[str]:
    """Human-readable criteria of an index, in file order."""
    out = [f"{r.name}: {rule_text(r)}" + (" (unknown passes, flagged)" if r.unknown == "include" else
                                           " (unknown fails)") for r in definition.rules]
    if definition.cap is not None:
        ties = ", ".join(f"{c} {'desc' if d else 'asc'}" for c, d in definition.cap.tie_break)
        out.append(f"at most {definition.cap.max} per {definition.cap.group} (tie-break: {ties})")
    return out
