"""The report's number formats (pct, num, big, ratio, ci), the table previews of the Dagster UI and the small
readers the findings share (present_table, headline_values, labeler_of). Pure; no dagster."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from models.markdown import markdown_table

# Upstream names this module relies on (change here if an estimator renames them).
MODEL_EXPOSURE_WAGE = "exposure_wage"
MODEL_IMPORTANCE = "importance_fe"
MODEL_WORKBANK = "workbank"
WAGE_TERM = "np.log(wage_bill)"
ZONE_NAMES = {
    "green_light": "green-light",
    "red_light": "red-light",
    "rnd_opportunity": "R&D-opportunity",
    "low_priority": "low-priority",
    "none": "unzoned",
}

Tables = Mapping[str, pl.DataFrame]


# --- formatting -----------------------------------------------------------------------------------


def finite(value: Any) -> bool:
    return value is not None and isinstance(value, int | float) and math.isfinite(float(value))


def pct(value: Any, digits: int = 1) -> str:
    return f"{100 * float(value):.{digits}f}%" if finite(value) else "n/a"


def pct_for(*values: Any) -> Callable[[Any], str]:
    """pct, or two significant digits for each of `values` when one of them lies below 0.1% (an audit: 0.046%
    printed as "0.0%", which reads as never; an estimate and its interval in one precision)."""
    if any(finite(v) and 0 < abs(float(v)) < 0.001 for v in values):
        return lambda v: f"{100 * float(v):.2g}%" if finite(v) else "n/a"
    return pct


def num(value: Any) -> str:
    if not finite(value):
        return "n/a"
    return f"{int(round(float(value))):,}"


def big(value: Any) -> str:
    """3.2 billion, 410 million, 12,345."""
    if not finite(value):
        return "n/a"
    value = float(value)
    for size, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if abs(value) >= size:
            return f"{value / size:.1f} {word}"
    return num(value)


def points(value: Any, digits: int = 1) -> str:
    """A difference of two shares in percentage points ("-0.2 points"): "%" would read as a relative change."""
    return f"{100 * float(value):.{digits}f} points" if finite(value) else "n/a"


def count_error(value: Any) -> str:
    """An error in a count ("3.8"; "-12"): one decimal below ten, so two lines quoting it agree."""
    if not finite(value):
        return "n/a"
    return f"{float(value):,.1f}" if abs(float(value)) < 10 else f"{float(value):,.0f}"


def ratio(value: Any) -> str:
    return f"{float(value):.2f}" if finite(value) else "n/a"


def ci(low: Any, high: Any, fmt: Callable[[Any], str] = pct) -> str:
    if not (finite(low) and finite(high)):
        return "95% CI not available"
    return f"95% CI {fmt(low)}\u2013{fmt(high)}"


def plural(n: Any, word: str, many: str | None = None) -> str:
    """`word` for one, else `many` (default `word` + 's': 'refresh' needs many='refreshes')."""
    return f"{word}" if finite(n) and int(n) == 1 else many or f"{word}s"


def count(n: int, word: str, many: str | None = None) -> str:
    """'1 folder', '2 folders' ('1 refresh', '2 refreshes' with `many`)."""
    return f"{n:,} {plural(n, word, many)}"


def per_benchmark(by_benchmark: Mapping[str, int] | None, word: str, among: set[str] | None = None) -> str:
    """'cybench 13 prompts; nl2fix 1 prompt' (benchmarks in `among` only, when given; '' when none)."""
    return "; ".join(f"{b} {count(n, word)}" for b, n in sorted((by_benchmark or {}).items())
                     if n and (among is None or b in among))


PREVIEW_COLUMNS: dict[str, list[str]] = {
    "coverage_headline": ["scope", "threshold", "metric", "value", "numerator", "denominator", "detail"],
    "major_group_coverage": [
        "major_group_code",
        "major_group_title",
        "n_occupations",
        "occupations_covered_1",
        "occupations_covered_5",
        "occupation_share_covered_1",
        "occupation_share_covered_5",
    ],
    "workbank_coverage": ["zone", "threshold", "n_tasks", "n_covered", "share", "ci_low", "ci_high"],
    "labeler_validation": [
        "benchmark",
        "labeler",
        "labeler_version",
        "metric",
        "value",
        "ci_low",
        "ci_high",
        "n",
    ],
    "coverage_regressions": ["model", "term", "coef", "se", "p", "ci_low", "ci_high", "n", "n_clusters"],
    "coverage_sensitivity": ["dimension", "variant", "metric", "value", "labeler"],
}


def table_preview(table: str, frame: pl.DataFrame, max_rows: int = 25) -> str:
    """Markdown preview of a table for the Dagster UI (pooled rows first for the headline)."""
    if table == "coverage_headline" and "scope" in frame.columns:
        frame = frame.filter(pl.col("scope") == "all")
    columns = PREVIEW_COLUMNS.get(table)
    return markdown_table(frame, columns, max_rows=max_rows)


# --- reading the tables ---------------------------------------------------------------------------


def present_table(tables: Tables, name: str) -> pl.DataFrame | None:
    frame = tables.get(name)
    return frame if frame is not None and frame.height else None


def headline_values(headline: pl.DataFrame) -> dict[tuple[int, str], dict[str, Any]]:
    pooled = headline.filter(pl.col("scope") == "all") if "scope" in headline.columns else headline
    return {(int(r["threshold"]), r["metric"]): r for r in pooled.iter_rows(named=True)}


def with_ci(row: Mapping[str, Any]) -> str:
    if finite(row.get("ci_low")) and finite(row.get("ci_high")):
        return f", {ci(row['ci_low'], row['ci_high'])}"
    return ""


def labeler_of(tables: Tables) -> str | None:
    for name in ("task_coverage", "coverage_headline", "occupation_coverage"):
        frame = tables.get(name)
        if frame is not None and "labeler" in frame.columns and frame.height:
            values = frame["labeler"].drop_nulls().unique().sort().to_list()
            if values:
                return values[0]
    return None


def describe_behind(behind: Mapping[str, tuple[int, int]], limit: int = 5) -> str:
    """Benchmarks whose labels are behind their prompts (benchmark -> (label texts it no longer has, prompts
    without labels): resources/label_queries.py `labels_behind_prompts`) in words, the first `limit` of them."""
    names = sorted(behind)
    shown = "; ".join(f"{b}: {behind[b][1]:,} prompts without labels, labels of {behind[b][0]:,} texts it no "
                      "longer has" for b in names[:limit])
    return shown + (f"; and {len(names) - limit} more" if len(names) > limit else "")


def latest_release_phrase(latest: object | None) -> str:
    """What a step or run that published nothing leaves standing: the latest release (its name or path), or none."""
    return f"the latest release stays {latest}" if latest is not None else "there is no release yet"
