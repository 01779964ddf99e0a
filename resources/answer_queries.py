"""The warehouse reads behind the one-line answer and the benchmark counts (models/report/answer.py, counts.py):
one query for the prompts labeled per benchmark, so summary.md, the map header, the release and the end of
`run_all` count benchmarks the same way. No dagster here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from models import report
from resources import warehouse as wh

LABELED_PROMPTS_SQL = ("select benchmark, count(distinct prompt_id) as n_labeled_prompts "
                       "from prompt_task_labels group by benchmark")


def _table(path: str | Path, name: str) -> pl.DataFrame | None:
    with wh.connect(path, read_only=True) as con:
        return wh.fetch_polars(con, f"select * from {wh.quote_identifier(name)}") if wh.table_exists(con, name) \
            else None


def benchmark_counts(path: str | Path, benchmarks: pl.DataFrame | None = None,
                     membership: pl.DataFrame | None = None) -> pl.DataFrame:
    """benchmark_counts (models/report/counts.py) from the warehouse at `path`; `benchmarks` / `membership`
    when the caller has them already read."""
    with wh.connect(path, read_only=True) as con:
        labeled = wh.fetch_polars(con, LABELED_PROMPTS_SQL) if wh.table_exists(con, "prompt_task_labels") else None
    if benchmarks is None:
        benchmarks = _table(path, "benchmarks")
    if membership is None:
        membership = _table(path, "benchmark_index_membership")
    return report.benchmark_counts(benchmarks, membership, labeled)


def answer(path: str | Path, index: str = "all", released: str | None = None) -> report.Answer | None:
    """The one-line answer of `index` from the warehouse (headline_estimates and the benchmark counts)."""
    return answers(path, [index], released).get(index)


def answers(path: str | Path, indexes: Sequence[str], released: str | None = None) -> dict[str, report.Answer]:
    """The answers of several indexes, their tables read once (the map's header holds every index's); an index
    with nothing published is absent."""
    estimates = _table(path, "headline_estimates")
    if estimates is None:
        return {}
    counts = benchmark_counts(path)
    out = {}
    for index in indexes:
        n, excluded = report.index_benchmarks(counts, index)
        found = report.headline_answer(estimates, benchmark_index=index, n_benchmarks=n, released=released,
                                       excluded=excluded)
        if found is not None:
            out[index] = found
    return out
