"""The published estimate beside today's headline (coverage_headline, summary.md, coverage map): the
published rows of `headline_estimates` (models/estimates/tables.py) in coverage_headline's units, and in plain
sentences with their intervals and Monte Carlo error notes."""

from __future__ import annotations

import math
import re

import polars as pl

from models.estimates.mc_error import MC_EXPLAINED, mc_rounded
from models.estimates.problem import ALL_INDEX, ALL_SCOPE, BOUNDS, DEFAULT_DRAWS, QUANTITIES
from models.estimates.tables import CAPPED

PUBLISHED_COLUMNS: dict[str, pl.DataType] = {
    "published_estimator": pl.Utf8(),
    "published_value": pl.Float64(),
    "published_ci_low": pl.Float64(),
    "published_ci_high": pl.Float64(),
    "published_note": pl.Utf8(),
}
_METRIC_OF: dict[str, tuple[str, bool]] = {  # coverage_headline metric -> (quantity, complement)
    "tasks_covered": ("tasks_covered", False),
    "occupations_covered": ("occupations_covered", False),
    "major_groups_uncovered": ("major_groups_covered", True),
    "hours_share_covered": ("hours_share_covered", False),
    "hours_share_uncovered": ("hours_share_covered", True),
}


def with_published(headline: pl.DataFrame, estimates: pl.DataFrame | None) -> pl.DataFrame:
    """coverage_headline plus the published estimate of each row in the row's own unit (a share of tasks /
    occupations / hours; a count of uncovered major groups): published_estimator, published_value,
    published_ci_low, published_ci_high (null where headline_estimates has no such row), and published_note where
    the value is a larger scope's capped species estimate (its basis' note: which scope, and the row's own)."""
    empty = headline.with_columns([pl.lit(None, t).alias(c) for c, t in PUBLISHED_COLUMNS.items()])
    if estimates is None or estimates.is_empty() or headline.is_empty():
        return empty
    published = estimates.filter(pl.col("published"))
    keys = ["scope", "threshold"] + (
        ["benchmark_index"] if "benchmark_index" in headline.columns and "benchmark_index" in published.columns else []
    )
    if "benchmark_index" not in keys:
        published = published.filter(pl.col("benchmark_index") == ALL_INDEX)
    mapping = pl.DataFrame(
        {"metric": list(_METRIC_OF), "quantity": [q for q, _ in _METRIC_OF.values()],
         "_complement": [c for _, c in _METRIC_OF.values()]}
    )
    joined = (
        headline.with_row_index("_row")
        .join(mapping, on="metric", how="left")
        .join(
            published.select(*keys, "quantity", pl.col("estimator").alias("published_estimator"),
                             pl.col("value").alias("_v"), pl.col("ci_low").alias("_lo"), pl.col("ci_high").alias("_hi"),
                             pl.col("denominator").alias("_den"),
                             (pl.col("basis") if "basis" in published.columns else pl.lit(None, pl.Utf8))
                             .str.extract(f"({re.escape(CAPPED)}[^;]*)").alias("published_note")),
            on=[*keys, "quantity"],
            how="left",
        )
    )
    counts = pl.col("quantity").is_in(["tasks_covered", "occupations_covered"])
    groups = pl.col("quantity") == "major_groups_covered"

    def scaled(column: str) -> pl.Expr:
        share = pl.col(column) / pl.col("denominator")
        return (
            pl.when(counts).then(share)
            .when(groups).then(pl.col("denominator") - pl.col(column))  # groups uncovered, a count
            .when(pl.col("_complement")).then(1.0 - pl.col(column))
            .otherwise(pl.col(column))
        )

    swap = pl.col("_complement").fill_null(False)
    out = joined.with_columns(
        scaled("_v").alias("published_value"),
        pl.when(swap).then(scaled("_hi")).otherwise(scaled("_lo")).alias("published_ci_low"),
        pl.when(swap).then(scaled("_lo")).otherwise(scaled("_hi")).alias("published_ci_high"),
    )
    return out.sort("_row").select(*headline.columns, *PUBLISHED_COLUMNS).cast(PUBLISHED_COLUMNS)  # type: ignore[arg-type]


def published_sentences(estimates: pl.DataFrame, benchmark_index: str = ALL_INDEX) -> list[str]:
    """Plain sentences of the published pooled headline of one index, with intervals, and what counting every
    label as true gives instead (for summary.md and the coverage map). Empty when nothing is published."""
    rows = estimates.filter(pl.col("scope") == ALL_SCOPE)
    if "benchmark_index" in rows.columns:  # a per-index summary may pass the index's rows without the column
        rows = rows.filter(pl.col("benchmark_index") == benchmark_index)
    published = rows.filter(pl.col("published"))
    if published.is_empty():
        return []

    def fmt(quantity: str, value: float | None) -> str:
        if value is None or not math.isfinite(value):
            return "n/a"
        return f"{100 * value:.1f}%" if quantity == "hours_share_covered" else f"{value:,.0f}"

    def part(frame: pl.DataFrame, quantity: str, threshold: int, with_ci: bool) -> str | None:
        hit = frame.filter((pl.col("quantity") == quantity) & (pl.col("threshold") == threshold))
        if hit.is_empty():
            return None
        row = hit.row(0, named=True)
        figures, note = mc_rounded(row, quantity == "hours_share_covered")  # what the draws support
        r = {**row, **figures}
        if r["estimator"] == BOUNDS:
            low = f" (95% lower limit {fmt(quantity, r['ci_low'])})" if row["ci_low"] < row["value"] - 1e-9 else ""
            span = f"at least {'about ' if low else ''}{fmt(quantity, r['value'])}{low}, up to about " \
                   f"{fmt(quantity, r['ci_high'])}" + (f" ({note})" if note else "")
            if quantity == "hours_share_covered":
                return f"{span} of US work hours"
            noun = {"tasks_covered": "tasks", "occupations_covered": "occupations",
                    "major_groups_covered": "SOC major groups"}[quantity]
            return f"{span} of {r['denominator']:,.0f} {noun}"
        ci = f" (95% CI {fmt(quantity, r['ci_low'])}\u2013{fmt(quantity, r['ci_high'])}" + (
            f"; {note})" if note else ")") if with_ci and r["ci_low"] is not None else ""
        if quantity == "hours_share_covered":
            return f"{fmt(quantity, r['value'])} of US work hours{ci}"
        noun = {"tasks_covered": "tasks", "occupations_covered": "occupations",
                "major_groups_covered": "SOC major groups"}[quantity]
        return f"{fmt(quantity, r['value'])}{ci} of {r['denominator']:,.0f} {noun}"

    estimator = "model_assisted" if (published["estimator"] == "model_assisted").any() else published["estimator"][0]
    n_sampled = int(published["n_sampled"][0])
    what = (
        f"model-assisted: the labeler's labels on every prompt, corrected by the judge's labels of a stratified "
        f"random sample of {n_sampled:,} prompt texts"
        if estimator == "model_assisted"
        else "the labeler alone, with its calibrated uncertainty (no judge-sampled prompts)"
    )
    out = []
    thresholds = sorted(set(published["threshold"].to_list()), reverse=True)
    pieces = []
    for t in thresholds:
        parts = [p for q in QUANTITIES if (p := part(published, q, t, True))]
        pieces.append(f"at >= {t} prompt{'s' if t != 1 else ''}: " + ", ".join(parts))
    out.append(f"Best-supported estimate ({what}) " + "; ".join(pieces) + ".")
    if "Monte Carlo error" in out[0]:
        drawn = published["n_draws"].max() if "n_draws" in published.columns else None
        out.append(MC_EXPLAINED.format(n_draws=drawn or DEFAULT_DRAWS))
    if (published["estimator"] == BOUNDS).any():
        out.append("At >= 1 prompt the count of distinct tasks exercised by any prompt cannot be pinned down "
                   "from a sample of a few hundred texts: the floor is a species estimate from the judge's "
                   "sample (Chao-Lin, a lower bound: on the judge sample itself it came out 6-23% low), never "
                   "below what the judge saw; the ceiling is the imputation's extrapolation to every unread "
                   "prompt (on the judge sample it came out 10-25% high).")
    truth = rows.filter(pl.col("estimator") == "labels_as_truth")
    if truth.height:
        pieces = []
        for t in thresholds:
            parts = [p for q in ("tasks_covered", "occupations_covered", "hours_share_covered")
                     if (p := part(truth, q, t, False))]
            pieces.append(f"at >= {t}: " + ", ".join(parts))
        out.append("Counting every label as true instead gives " + "; ".join(pieces) + ".")
    return out


def judged_by_benchmark(estimates: pl.DataFrame) -> dict[str, bool]:
    """benchmark -> whether it has judged texts, from index `all`'s per-benchmark rows (scope = the benchmark)
    of headline_estimates. One without is counted through the labeler alone (tables.py: its model-assisted
    draws are its labeler's): uncorrected, and without the labeler's error in its interval."""
    if not {"scope", "n_sampled", "estimator"} <= set(estimates.columns):
        return {}
    rows = estimates.filter((pl.col("scope") != ALL_SCOPE) & pl.col("estimator").is_in(["model_assisted", "labeler"]))
    if "benchmark_index" in rows.columns:  # per-benchmark rows are index `all`'s: a benchmark's own figures
        rows = rows.filter(pl.col("benchmark_index") == ALL_INDEX)
    sampled = rows.group_by("scope").agg(pl.col("n_sampled").fill_null(0).max())
    return {str(b): int(n) > 0 for b, n in sampled.sort("scope").iter_rows()}
