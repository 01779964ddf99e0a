"""The counts every output quotes -- benchmarks, tasks, rated tasks -- each from one function that says what it
counts, so summary.md, the map header, the release and the run's last lines cannot disagree.

- benchmarks: `benchmark_counts` per index and landed benchmark: counted in the index or not (with the reason
  the index file gives), prompts, prompts labeled as work; a counted benchmark without a single labeled prompt
  is named (it adds nothing to any tile and cannot be picked on the map).
- tasks: `task_counts`: O*NET task statements, those with an importance rating, and the importance model's
  sample (rated tasks that also have exposure labels, then those in occupations whose coverage varies).
- an index's members: `index_findings`, the lines a per-index summary opens its findings with.

Pure; no dagster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from models.markdown import markdown_literal
from models.report.answer import ALL_INDEX
from models.report.formatting import MODEL_IMPORTANCE, Tables, num, present_table

NO_WORK_REASON = "no prompt labeled as work, so it adds to no task"


def benchmark_counts(
    benchmarks: pl.DataFrame | None,
    membership: pl.DataFrame | None,
    labeled: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """benchmark_index, benchmark, counted, reason, n_prompts, n_labeled_prompts: one row per index and landed
    benchmark. `labeled`: benchmark, n_labeled_prompts (prompts with at least one task label). Without a
    membership table every landed benchmark is in index `all`."""
    schema = {"benchmark_index": pl.Utf8, "benchmark": pl.Utf8, "counted": pl.Boolean, "reason": pl.Utf8,
              "n_prompts": pl.Int64, "n_labeled_prompts": pl.Int64}
    if benchmarks is None or "benchmark" not in benchmarks.columns:
        return pl.DataFrame(schema=schema)
    landed = benchmarks.select("benchmark", (pl.col("n_prompts") if "n_prompts" in benchmarks.columns
                                             else pl.lit(None)).cast(pl.Int64).alias("n_prompts"))
    if membership is not None and {"benchmark_index", "benchmark", "included"} <= set(membership.columns):
        reason = pl.col("reason") if "reason" in membership.columns else pl.lit(None, pl.Utf8)
        rows = membership.select("benchmark_index", "benchmark", pl.col("included").alias("counted"),
                                 reason.cast(pl.Utf8).alias("reason")).join(landed, on="benchmark", how="left")
    else:
        rows = landed.select(pl.lit("all").alias("benchmark_index"), "benchmark", pl.lit(True).alias("counted"),
                             pl.lit(None, pl.Utf8).alias("reason"), "n_prompts")
    if labeled is not None and {"benchmark", "n_labeled_prompts"} <= set(labeled.columns):
        rows = rows.join(labeled.select("benchmark", pl.col("n_labeled_prompts").cast(pl.Int64)), on="benchmark",
                         how="left").with_columns(pl.col("n_labeled_prompts").fill_null(0))
    else:
        rows = rows.with_columns(pl.lit(None, pl.Int64).alias("n_labeled_prompts"))
    return rows.select(list(schema)).cast(schema).sort("benchmark_index", "benchmark")


def index_benchmarks(counts: pl.DataFrame, index: str = "all") -> tuple[int, list[tuple[str, str]]]:
    """(benchmarks the index counts, [(benchmark, why it adds nothing or is left out)]) of one index."""
    rows = counts.filter(pl.col("benchmark_index") == index)
    counted = rows.filter(pl.col("counted"))
    notes = [(r["benchmark"], f"not in this index: {r['reason'] or 'excluded by the index file'}")
             for r in rows.filter(~pl.col("counted")).iter_rows(named=True)]
    notes += [(r["benchmark"], NO_WORK_REASON)
              for r in counted.filter(pl.col("n_labeled_prompts") == 0).iter_rows(named=True)]
    return counted.height, notes


@dataclass(frozen=True)
class TaskCounts:
    tasks: int | None  # O*NET task statements (onet_tasks rows)
    rated: int | None  # with an O*NET importance rating
    rated_with_exposure: int | None  # rated and with exposure labels and an outcome: the importance model's input
    kept: int | None  # of those, in occupations whose coverage varies (the fixed-effects model's sample)
    occupations_kept: int | None
    occupations_dropped: int | None


def _importance_sizes(tables: Tables) -> dict[str, Any]:
    regressions = present_table(tables, "coverage_regressions")
    if regressions is None or not {"item", "value", "model"} <= set(regressions.columns):
        return {}
    rows = regressions.filter((pl.col("model") == MODEL_IMPORTANCE) & pl.col("item").is_not_null())
    if "benchmark_index" in rows.columns:
        rows = rows.filter(pl.col("benchmark_index") == "all")
    return dict(rows.select("item", "value").drop_nulls().iter_rows())


def task_counts(tables: Tables, onet_tasks: pl.DataFrame | None = None) -> TaskCounts:
    """The task counts, from onet_tasks (statements, ratings) and the importance model's recorded sample."""
    sizes = _importance_sizes(tables)
    tasks = rated = None
    if onet_tasks is not None and onet_tasks.height:
        tasks = onet_tasks.height
        rated = int(onet_tasks["has_ratings"].sum()) if "has_ratings" in onet_tasks.columns else None
    elif {"n_tasks_input", "n_tasks_without_importance"} <= set(sizes):
        tasks = int(sizes["n_tasks_input"])
        rated = int(sizes["n_tasks_input"] - sizes["n_tasks_without_importance"])

    def get(key: str) -> int | None:
        return int(sizes[key]) if key in sizes else None

    return TaskCounts(tasks, rated, get("n_tasks_rated"), get("n_tasks_kept"), get("n_occupations_kept"),
                      get("n_occupations_dropped_no_variation"))


def count_lines(tables: Tables, onet_tasks: pl.DataFrame | None = None, index: str = "all") -> list[str]:
    """What each count counts, in one place (the 'Counts' section of summary.md)."""
    out = []
    counts = present_table(tables, "benchmark_counts")
    if counts is not None:
        landed = counts["benchmark"].n_unique()
        n, notes = index_benchmarks(counts, index)
        out.append(
            f"**Benchmarks.** {n} of the {landed} landed benchmarks are counted in index `{index}`"
            + (": " + "; ".join(f"{b} ({why})" for b, why in notes) if notes else "; none is left out")
            + ". The coverage map's benchmark picker lists those with at least one labeled prompt "
            "(benchmark_counts)."
        )
    t = task_counts(tables, onet_tasks)
    if t.tasks is not None:
        parts = [f"{num(t.tasks)} O*NET task statements"]
        if t.rated is not None:
            parts.append(f"{num(t.rated)} of them carry an O*NET importance rating (\"rated tasks\")")
        if t.rated_with_exposure is not None:
            parts.append(f"{num(t.rated_with_exposure)} rated tasks also have exposure labels and enter the "
                         "importance model")
        if t.kept is not None:
            parts.append(f"{num(t.kept)} of those lie in the {num(t.occupations_kept)} occupations whose "
                         f"coverage varies ({num(t.occupations_dropped)} occupations without variation drop "
                         "out of the fixed-effects fit)")
        out.append("**Tasks.** " + "; ".join(parts) + " (onet_tasks, coverage_regressions).")
    return out


def index_findings(benchmark_index: str, membership: pl.DataFrame | None) -> list[str]:
    """Which benchmark index the numbers are for, its members, and why each other landed benchmark is out
    (benchmark_index_membership)."""
    if membership is None or membership.is_empty() or "benchmark_index" not in membership.columns:
        return [f"**Index.** The numbers are for the index `{benchmark_index}`; its membership table "
                "(benchmark_index_membership) is missing, so every landed benchmark counts."]
    rows = membership.filter(pl.col("benchmark_index") == benchmark_index).sort("benchmark")
    if rows.is_empty():
        return [f"**Index.** The index `{benchmark_index}` has no rows in benchmark_index_membership."]
    first = rows.row(0, named=True)
    included = rows.filter(pl.col("included"))["benchmark"].to_list()
    out = [
        # the index file's words, shown as written
        f"**Index.** Every number below is for the benchmark index **{markdown_literal(first['title'])}** "
        f"(`{benchmark_index}`, version {markdown_literal(first['version'])}, {markdown_literal(first['index_file'])}): "
        f"{len(included)} of the {rows.height} landed "
        f"benchmarks count. Members: {', '.join(included) or 'none'} (benchmark_index_membership)."
        + ("" if benchmark_index == ALL_INDEX else
           " Except what is computed over every landed benchmark: the fits on imputed label sets, the model "
           "scores and the sensitivity analysis (named below, not quoted), and the label quality, the split "
           "check of the headline's intervals and the per-unit check behind the map's bands "
           "(unit_coverage_simulation_check; quoted: all are measured on every benchmark's judged texts).")
    ]
    excluded = [
        f"{r['benchmark']} ({markdown_literal(r['reason'] or 'no reason recorded')}; {markdown_literal(r['decided_by'])})"
        for r in rows.filter(~pl.col("included")).iter_rows(named=True)
    ]
    if excluded:
        out.append("**Left out of the index.** " + "; ".join(excluded) + ".")
    unknown = rows.filter(pl.col("included") & pl.col("unknown_passed").is_not_null())
    if unknown.height:
        out.append(
            f"**Unknown values let through.** {unknown.height} members passed a rule on an unknown value, "
            f"as the index allows (e.g. {unknown['unknown_passed'][0]}); benchmark_index_membership lists them."
        )
    return out
