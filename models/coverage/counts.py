"""Label counts, the one input shape of the coverage functions: `label_counts` (prompt-level labels ->
prompts per labeler x benchmark x task x label-depth bucket), label depths, the labeler choice, and the
distinct prompts per benchmark x task that coverage counts."""

from __future__ import annotations

from typing import Literal

import polars as pl

THRESHOLDS: tuple[int, ...] = (1, 5)
# The three readings of an estimated probability covered (per-unit p_covered), shared by the coverage map's
# tiles and the gap finder's lists: likely covered (>= LIKELY_COVERED), unsure, likely not (< LIKELY_NOT).
LIKELY_COVERED, LIKELY_NOT = 0.9, 0.1
TASK_KEY = ["onet_soc_code", "task_id"]
HoursWeighting = Literal["pi", "equal"]

# Label depths the sensitivity table compares (None = every label the labeler kept).
LABEL_DEPTHS: tuple[int | None, ...] = (1, 3, 5, None)

LABEL_COUNT_SCHEMA: dict[str, pl.DataType] = {
    "labeler": pl.Utf8(),
    "labeler_version": pl.Utf8(),
    "benchmark": pl.Utf8(),
    "onet_soc_code": pl.Utf8(),
    "task_id": pl.Int64(),
    # the smallest label depth of LABEL_DEPTHS that keeps these labels (rank <= min_depth); null: kept only
    # when every label counts (rank beyond the deepest cut, or no rank)
    "min_depth": pl.Int64(),
    "n_prompts": pl.Int64(),
}


def label_counts(labels: pl.DataFrame) -> pl.DataFrame:
    """Prompt-level labels -> label counts (LABEL_COUNT_SCHEMA): prompts per labeler x benchmark x task x
    label-depth bucket. A prompt counts once per task and labeler (its best rank decides the bucket), so
    summing n_prompts over benchmarks and buckets gives distinct (benchmark, prompt_id) per task, as
    `task_coverage` defines it. The warehouse computes the same in DuckDB (resources/label_queries.py
    `label_counts_sql`; a test holds the two equal). Missing labeler / labeler_version / rank columns count as
    null."""
    frame = labels.select(
        *(pl.col(c).cast(pl.Utf8) if c in labels.columns else pl.lit(None, pl.Utf8).alias(c)
          for c in ("labeler", "labeler_version")),
        pl.col("benchmark").cast(pl.Utf8),
        pl.col("prompt_id").cast(pl.Utf8),
        pl.col("onet_soc_code").cast(pl.Utf8),
        pl.col("task_id").cast(pl.Int64),
        pl.col("rank").cast(pl.Int64) if "rank" in labels.columns else pl.lit(None, pl.Int64).alias("rank"),
    )
    best_rank = pl.col("best_rank")
    bucket: pl.Expr = pl.lit(None, pl.Int64)
    for depth in sorted((d for d in LABEL_DEPTHS if d is not None), reverse=True):  # the smallest depth wins
        bucket = pl.when(best_rank <= depth).then(pl.lit(depth, pl.Int64)).otherwise(bucket)
    keys = ["labeler", "labeler_version", "benchmark", "onet_soc_code", "task_id", "min_depth"]
    return (
        frame.group_by("labeler", "benchmark", "prompt_id", "onet_soc_code", "task_id")
        .agg(pl.col("labeler_version").min(), pl.col("rank").min().alias("best_rank"))
        .with_columns(bucket.alias("min_depth"))
        .group_by(keys)
        .agg(pl.len().cast(pl.Int64).alias("n_prompts"))
        .sort(keys, nulls_last=True)
        .select(list(LABEL_COUNT_SCHEMA))
        .cast(LABEL_COUNT_SCHEMA)  # type: ignore[arg-type]
    )


def labels_at_depth(counts: pl.DataFrame, depth: int | None) -> pl.DataFrame:
    """Only the label counts of each prompt's top-`depth` labels by rank (None: all); counts know only the
    depths of LABEL_DEPTHS."""
    if depth is None:
        return counts
    if depth not in LABEL_DEPTHS:
        raise ValueError(f"label counts are bucketed at depths {LABEL_DEPTHS}; got {depth}")
    return counts.filter(pl.col("min_depth") <= depth)


# When a labels frame holds several labelers and none is named, the LLM labeler wins over the offline one.
LABELER_PREFERENCE: tuple[str, ...] = ("openai", "offline")


MIXED_LABELERS = "+"  # joins the names of a per-benchmark choice of several labelers ("openai+offline")


def _preference(name: str) -> tuple[int, str]:
    return (LABELER_PREFERENCE.index(name) if name in LABELER_PREFERENCE else len(LABELER_PREFERENCE), name)


def select_labeler(labels: pl.DataFrame, labeler: str | None = None) -> tuple[pl.DataFrame, str | None]:
    """Keep one labeler's labels per benchmark so no count mixes two labelers' judgements of one text.

    With `labeler=None`: in each benchmark (every row, without a `benchmark` column) the only labeler present,
    else the first of LABELER_PREFERENCE present, else the alphabetically first; the name returned is that
    labeler's, or the chosen ones joined by MIXED_LABELERS in order of preference when benchmarks differ (a run
    that labeled a few benchmarks with an LLM and the rest offline: before, the LLM's three benchmarks alone were
    counted, and the summary read "1 of 18,796 tasks"). Naming a labeler keeps its labels alone, naming such a
    joined name makes the same choice among those of its labelers present (callers hand the name back, also for
    an index's subset of the benchmarks); naming one absent from a non-empty frame is an error (it would silently
    report zero coverage).
    """
    if "labeler" not in labels.columns or labels.is_empty():
        return labels, labeler
    present = sorted(labels["labeler"].drop_nulls().unique().to_list())
    if labeler is not None and MIXED_LABELERS in labeler:  # a name this function returned: the same choice again
        # over the labelers of this frame's benchmarks: an index that leaves out the LLM's benchmarks has the
        # offline labels alone (a probe: every analysis failed on "labelers ['openai'] have no labels")
        names = [name for name in labeler.split(MIXED_LABELERS) if name in present]
        if not names:
            raise ValueError(f"labelers {labeler.split(MIXED_LABELERS)} have no labels; present: {present}")
        return select_labeler(labels.filter(pl.col("labeler").is_in(names)))
    if labeler is not None:
        if labeler not in present:
            raise ValueError(f"labeler {labeler!r} has no labels; present: {present}")
        return labels.filter(pl.col("labeler") == labeler), labeler
    if len(present) <= 1 or "benchmark" not in labels.columns:
        chosen = min(present, key=_preference) if present else None
        return (labels.filter(pl.col("labeler") == chosen) if chosen else labels), chosen
    order = {name: i for i, name in enumerate(sorted(present, key=_preference))}  # preference, then name
    rank = pl.col("labeler").replace_strict(order, default=None, return_dtype=pl.Int64)
    kept = labels.filter(rank == rank.min().over("benchmark"))
    names = sorted(kept["labeler"].drop_nulls().unique().to_list(), key=_preference)
    return kept, MIXED_LABELERS.join(names) if names else None


def prompt_task_pairs(labels: pl.DataFrame) -> pl.DataFrame:
    """The distinct (benchmark, prompt_id, onet_soc_code, task_id) rows of `labels`, with canonical dtypes."""
    return labels.select(
        pl.col("benchmark").cast(pl.Utf8),
        pl.col("prompt_id").cast(pl.Utf8),
        pl.col("onet_soc_code").cast(pl.Utf8),
        pl.col("task_id").cast(pl.Int64),
    ).unique()


def benchmark_task_counts(counts: pl.DataFrame) -> pl.DataFrame:
    """Distinct prompts per (benchmark, onet_soc_code, task_id), from label counts (one labeler)."""
    frame = counts.select(
        pl.col("benchmark").cast(pl.Utf8),
        pl.col("onet_soc_code").cast(pl.Utf8),
        pl.col("task_id").cast(pl.Int64),
        pl.col("n_prompts").cast(pl.Int64),
    )
    return frame.group_by("benchmark", *TASK_KEY).agg(pl.col("n_prompts").sum()).filter(pl.col("n_prompts") > 0)
