"""The release file: every published figure in one long, tidy frame (`release.csv` / `release.parquet`), its
documentation (`data_documentation.md`, with what changed since the previous release), the release's name and
content hash, and the headline history across releases.

Columns (RELEASE_SCHEMA, stable between releases -- tests/test_release.py pins it):
benchmark_index, unit_type, unit_id, quantity, threshold, value, ci_low, ci_high, basis.

Pure: frames in, frames and text out; `resources/release.py` writes and publishes. No dagster, no I/O.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from models.exports.tables import csv_safe
from models.markdown import markdown_literal

RELEASE_SCHEMA: dict[str, pl.DataType] = {
    "benchmark_index": pl.Utf8(),
    "unit_type": pl.Utf8(),
    "unit_id": pl.Utf8(),
    "quantity": pl.Utf8(),
    "threshold": pl.Int64(),
    "value": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "basis": pl.Utf8(),
}
RELEASE_KEY = ("benchmark_index", "unit_type", "unit_id", "quantity", "threshold", "basis")
RELEASE_CSV = "release.csv"
RELEASE_PARQUET = "release.parquet"
DOCUMENTATION_NAME = "data_documentation.md"
HISTORY_NAME = "headline_history.csv"
LATEST_NAME = "latest"
LATEST_TEXT = "latest.txt"

COLUMN_MEANINGS: dict[str, str] = {
    "benchmark_index": "the benchmark index the figure describes (`all` = every landed benchmark; others: "
    "data/indexes/<name>.toml)",
    "unit_type": "what the figure is about: index (the pooled headline), benchmark, major_group, occupation, "
    "task, or model (a regression)",
    "unit_id": "the unit: the index name, benchmark name, SOC major group code, O*NET-SOC code, "
    "'<O*NET-SOC code>/<task id>', or the regression model",
    "quantity": "what is measured (see the quantities below)",
    "threshold": "prompts a task needs to count as covered (1 or 5); empty where it does not apply",
    "value": "the figure: a count, a share (0-1, not a percent), a probability or a ratio",
    "ci_low": "lower end of its 95% interval (for basis `bounds`: the floor); empty when none",
    "ci_high": "upper end of its 95% interval (for basis `bounds`: the ceiling); empty when none. Equal to ci_low "
    "where the draws' 2.5th and 97.5th percentiles are equal: that is the draws agreeing, not certainty "
    "(headline_estimates' basis "
    "says how many of the texts the judge read)",
    "basis": "how it was obtained (see the bases below)",
}
QUANTITY_MEANINGS: dict[str, str] = {
    "tasks_covered": "O*NET tasks with at least `threshold` prompts (count)",
    "occupations_covered": "occupations with at least one covered task (count)",
    "major_groups_covered": "SOC major groups with at least one covered occupation (count)",
    "hours_share_covered": "share of US work hours spent on covered tasks (0-1)",
    "benchmarks_counted": "benchmarks the index counts (count; excluded ones are listed in this file); an index "
    "that counts none has this row only",
    "task_share_covered": "share of the occupation's tasks covered (labels as counted, 0-1)",
    "occupation_share_covered": "share of the major group's occupations covered (labels as counted, 0-1)",
    "prompts": "prompts labeled with the task (labels as counted, count)",
    "p_covered": "probability that the unit is covered, across the estimate's draws (0-1)",
    "expected_prompts": "expected prompts across the draws, with a 2.5-97.5% interval: for a task, the prompts "
    "exercising it; for an occupation or major group, those on its most exercised task (what its threshold reads); "
    "where 97.5% of the draws agree both ends are that value and the mean may lie outside them",
    "ratio:<term>": "a regression's probability ratio (e.g. exposed vs not exposed) with its 95% interval",
    "coef:<term>": "a regression coefficient (log-odds) with its 95% interval",
}
BASIS_MEANINGS: dict[str, str] = {
    "model_assisted": "the labeler's labels on every prompt, corrected by the judge's labels of a stratified "
    "random sample of prompt texts; 95% percentile interval over the draws (the published headline at >= 5)",
    "bounds": "at >= 1 prompt: value = species estimate from the judge sample (capped at that of a scope holding "
    "all its judged benchmarks where that is lower: coverage_headline.published_note and the summary say which, "
    "with the scope's own estimate), ci_low its floor, ci_high the imputation's ceiling (raised to the species "
    "estimate where that is higher: the estimators then disagree, and headline_estimates.basis says so)",
    "labeler": "the labeler's calibrated labels alone (a scope without judge-read texts)",
    "design": "the judge sample alone",
    "labels_as_counted": "every label counted as true, no correction and no interval (for comparison only)",
    "multiple_imputation": "a regression refitted on imputed label sets and combined with Rubin's rules "
    "(carries labeler error)",
    "draws": "per-unit summary of the same draws as the headline; at >= 1 prompt a sum over units is the "
    "imputation's mean count, which runs high in the split checks (estimate_split_check): the published figure "
    "there is the bounds, whose floor is lower (about half for tasks, occupations and hours)",
    "count": "a count of inputs",
}


def _frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=RELEASE_SCHEMA) if rows else pl.DataFrame(schema=RELEASE_SCHEMA)


def _has(tables: Mapping[str, pl.DataFrame], name: str, columns: Sequence[str]) -> pl.DataFrame | None:
    frame = tables.get(name)
    if frame is None or frame.is_empty() or not set(columns) <= set(frame.columns):
        return None
    return frame


def _index_col(frame: pl.DataFrame) -> pl.Expr:
    return pl.col("benchmark_index") if "benchmark_index" in frame.columns else pl.lit("all")


def _headline_rows(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    estimates = _has(tables, "headline_estimates", ["scope", "quantity", "threshold", "estimator", "published"])
    if estimates is None:
        return _frame([])
    kept = estimates.filter(pl.col("published") | (pl.col("estimator") == "labels_as_truth"))
    return kept.select(
        _index_col(kept).alias("benchmark_index"),
        pl.when(pl.col("scope") == "all").then(pl.lit("index")).otherwise(pl.lit("benchmark")).alias("unit_type"),
        pl.when(pl.col("scope") == "all").then(_index_col(kept)).otherwise(pl.col("scope")).alias("unit_id"),
        pl.col("quantity"),
        pl.col("threshold").cast(pl.Int64),
        pl.col("value").cast(pl.Float64),
        pl.col("ci_low").cast(pl.Float64),
        pl.col("ci_high").cast(pl.Float64),
        pl.when(pl.col("estimator") == "labels_as_truth").then(pl.lit("labels_as_counted"))
        .otherwise(pl.col("estimator")).alias("basis"),
    )


def _count_rows(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    membership = _has(tables, "benchmark_index_membership", ["benchmark_index", "benchmark", "included"])
    if membership is None:
        return _frame([])
    counted = membership.group_by("benchmark_index").agg(pl.col("included").sum().cast(pl.Float64).alias("value"))
    return counted.select(
        "benchmark_index", pl.lit("index").alias("unit_type"), pl.col("benchmark_index").alias("unit_id"),
        pl.lit("benchmarks_counted").alias("quantity"), pl.lit(None, pl.Int64).alias("threshold"), "value",
        pl.lit(None, pl.Float64).alias("ci_low"), pl.lit(None, pl.Float64).alias("ci_high"),
        pl.lit("count").alias("basis"),
    )


def _wide_rows(frame: pl.DataFrame, unit_type: str, unit_id: pl.Expr, quantity: str, pattern: str,
               thresholds: Sequence[int], basis: str) -> list[pl.DataFrame]:
    out = []
    for t in thresholds:
        column = pattern.format(t=t)
        if column not in frame.columns:
            continue
        out.append(frame.select(
            _index_col(frame).alias("benchmark_index"), pl.lit(unit_type).alias("unit_type"),
            unit_id.alias("unit_id"), pl.lit(quantity).alias("quantity"), pl.lit(t, pl.Int64).alias("threshold"),
            pl.col(column).cast(pl.Float64).alias("value"), pl.lit(None, pl.Float64).alias("ci_low"),
            pl.lit(None, pl.Float64).alias("ci_high"), pl.lit(basis).alias("basis"),
        ))
    return out


def _unit_rows(tables: Mapping[str, pl.DataFrame], thresholds: Sequence[int]) -> list[pl.DataFrame]:
    """Per occupation / major group / task: the labels as counted, and the per-unit estimates when present."""
    out: list[pl.DataFrame] = []
    occupations = _has(tables, "occupation_coverage", ["onet_soc_code"])
    if occupations is not None:
        if "benchmark" in occupations.columns:  # pooled rows only
            occupations = occupations.filter(pl.col("benchmark") == "all")
        out += _wide_rows(occupations, "occupation", pl.col("onet_soc_code"), "task_share_covered",
                          "task_share_covered_{t}", thresholds, "labels_as_counted")
        out += _wide_rows(occupations, "occupation", pl.col("onet_soc_code"), "hours_share_covered",
                          "hours_share_covered_{t}", thresholds, "labels_as_counted")
    groups = _has(tables, "major_group_coverage", ["major_group_code"])
    if groups is not None:
        if "benchmark" in groups.columns:
            groups = groups.filter(pl.col("benchmark") == "all")
        out += _wide_rows(groups, "major_group", pl.col("major_group_code"), "occupation_share_covered",
                          "occupation_share_covered_{t}", thresholds, "labels_as_counted")
    tasks = _has(tables, "task_coverage", ["onet_soc_code", "task_id", "n_prompts"])
    if tasks is not None:
        out.append(tasks.select(
            _index_col(tasks).alias("benchmark_index"), pl.lit("task").alias("unit_type"),
            pl.concat_str(pl.col("onet_soc_code"), pl.col("task_id").cast(pl.Utf8), separator="/").alias("unit_id"),
            pl.lit("prompts").alias("quantity"), pl.lit(None, pl.Int64).alias("threshold"),
            pl.col("n_prompts").cast(pl.Float64).alias("value"), pl.lit(None, pl.Float64).alias("ci_low"),
            pl.lit(None, pl.Float64).alias("ci_high"), pl.lit("labels_as_counted").alias("basis"),
        ))
    # per-unit estimates (issue 25), exported when the warehouse has them
    for table, unit_type, code in (("task_estimates", "task", None),
                                   ("occupation_estimates", "occupation", "onet_soc_code"),
                                   ("major_group_estimates", "major_group", "major_group_code")):
        frame = _has(tables, table, ["threshold", "p_covered"])
        if frame is None:
            continue
        if code is None:
            unit = pl.concat_str(pl.col("onet_soc_code"), pl.col("task_id").cast(pl.Utf8), separator="/")
        else:
            unit = pl.col(code)
        base = [_index_col(frame).alias("benchmark_index"), pl.lit(unit_type).alias("unit_type"),
                unit.alias("unit_id")]
        out.append(frame.select(
            *base, pl.lit("p_covered").alias("quantity"), pl.col("threshold").cast(pl.Int64),
            pl.col("p_covered").cast(pl.Float64).alias("value"), pl.lit(None, pl.Float64).alias("ci_low"),
            pl.lit(None, pl.Float64).alias("ci_high"), pl.lit("draws").alias("basis"),
        ))
        if {"prompts_mean", "prompts_low", "prompts_high"} <= set(frame.columns):
            out.append(frame.filter(pl.col("threshold") == pl.col("threshold").min()).select(
                *base, pl.lit("expected_prompts").alias("quantity"), pl.lit(None, pl.Int64).alias("threshold"),
                pl.col("prompts_mean").cast(pl.Float64).alias("value"),
                pl.col("prompts_low").cast(pl.Float64).alias("ci_low"),
                pl.col("prompts_high").cast(pl.Float64).alias("ci_high"), pl.lit("draws").alias("basis"),
            ))
    return out


def _regression_rows(tables: Mapping[str, pl.DataFrame], threshold: int) -> pl.DataFrame:
    mi = _has(tables, "coverage_regressions_mi", ["model", "kind", "term", "estimate", "ci_low", "ci_high"])
    if mi is None:
        return _frame([])
    return mi.select(
        pl.lit("all").alias("benchmark_index"), pl.lit("model").alias("unit_type"), pl.col("model").alias("unit_id"),
        pl.when(pl.col("kind") == "log_ratio").then(pl.lit("ratio:")).otherwise(pl.lit("coef:"))
        .add(pl.col("term")).alias("quantity"),
        pl.lit(threshold, pl.Int64).alias("threshold"), pl.col("estimate").cast(pl.Float64).alias("value"),
        pl.col("ci_low").cast(pl.Float64), pl.col("ci_high").cast(pl.Float64),
        pl.lit("multiple_imputation").alias("basis"),
    )


def release_frame(tables: Mapping[str, pl.DataFrame], thresholds: Sequence[int] = (1, 5)) -> pl.DataFrame:
    """Every published figure, long and tidy (RELEASE_SCHEMA), in a canonical order: the same tables give the
    same bytes. Non-finite values become nulls (CSV and Parquet agree on them)."""
    counts = _count_rows(tables)
    parts = [_headline_rows(tables), counts, *_unit_rows(tables, thresholds), _regression_rows(tables, max(thresholds))]
    frame = pl.concat([p.select(list(RELEASE_SCHEMA)).cast(RELEASE_SCHEMA) for p in parts], how="vertical")
    # an index that counts no benchmark measures nothing: its count, no figure of 0.0 (a probe, 2026-12-07, found
    # 81,755 such rows: headline, per-unit estimates and coverage)
    empty = counts.filter(pl.col("value") == 0)["benchmark_index"].to_list()
    if empty:
        frame = frame.filter(~pl.col("benchmark_index").is_in(empty) | (pl.col("quantity") == "benchmarks_counted"))
    floats = ["value", "ci_low", "ci_high"]
    frame = frame.with_columns(pl.when(pl.col(c).is_finite()).then(pl.col(c)).otherwise(None).alias(c)
                               for c in floats)
    order = pl.when(pl.col("unit_type") == "index").then(0).when(pl.col("unit_type") == "benchmark").then(1) \
        .when(pl.col("unit_type") == "major_group").then(2).when(pl.col("unit_type") == "occupation").then(3) \
        .when(pl.col("unit_type") == "task").then(4).otherwise(5)
    return (frame.with_columns((pl.col("benchmark_index") != "all").alias("_not_all"), order.alias("_unit"))
            .sort(["_not_all", "benchmark_index", "_unit", "unit_id", "quantity", "threshold", "basis"],
                  nulls_last=True)
            .drop("_not_all", "_unit"))


def release_csv_bytes(frame: pl.DataFrame) -> bytes:
    return csv_safe(frame).write_csv().encode("utf-8")


def content_hash(frame: pl.DataFrame) -> str:
    """SHA-256 of the release file's CSV bytes: equal exactly when every published figure is equal."""
    return hashlib.sha256(release_csv_bytes(frame)).hexdigest()


def input_hash(inputs: Mapping[str, Any]) -> str:
    """SHA-256 of the inputs' versions (benchmark content hashes, source checksums, labelers), as sorted JSON."""
    import json

    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def release_name(created_at: dt.datetime, inputs_sha256: str) -> str:
    """`<YYYY-MM-DD>T<HHMMSS>Z-<first 8 hex of the input hash>`: sorts by time, names what went in."""
    moment = created_at.astimezone(dt.UTC)
    return f"{moment:%Y-%m-%dT%H%M%SZ}-{inputs_sha256[:8]}"


def is_release_name(name: str) -> bool:
    import re

    return re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{6}Z-[0-9a-f]{8}", name) is not None


# --- what changed --------------------------------------------------------------------------------------------


def release_changes(current: pl.DataFrame, previous: pl.DataFrame | None, *, tolerance: float = 1e-12
                    ) -> pl.DataFrame:
    """Per figure that differs from the previous release: the key, change ('added', 'removed', 'changed'),
    the previous and current value. Empty frame when nothing changed (or no previous release)."""
    key = list(RELEASE_KEY)
    schema = {**{k: RELEASE_SCHEMA[k] for k in key}, "change": pl.Utf8(), "previous": pl.Float64(),
              "current": pl.Float64()}
    if previous is None:
        return pl.DataFrame(schema=schema)
    joined = current.select(*key, pl.col("value").alias("current"), pl.lit(True).alias("_in_cur")).join(
        previous.select(*key, pl.col("value").alias("previous"), pl.lit(True).alias("_in_prev")),
        on=key, how="full", coalesce=True, nulls_equal=True)
    change = (pl.when(pl.col("_in_prev").is_null()).then(pl.lit("added"))
              .when(pl.col("_in_cur").is_null()).then(pl.lit("removed"))
              .otherwise(pl.lit("changed")))
    differs = (pl.col("_in_prev").is_null() | pl.col("_in_cur").is_null()
               | ((pl.col("current") - pl.col("previous")).abs() > tolerance)
               | (pl.col("current").is_null() != pl.col("previous").is_null()))
    return joined.filter(differs).with_columns(change.alias("change")).select(list(schema)).cast(schema)


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _fmt_change(previous: Any, current: Any) -> tuple[str, str]:
    """A changed figure's two values with as many significant digits (4 to 12) as it takes to tell them apart:
    at 4 a table row read '268.3 -> 268.3' (an audit)."""
    if not (isinstance(previous, float) and isinstance(current, float)
            and math.isfinite(previous) and math.isfinite(current)):
        return _fmt(previous), _fmt(current)
    for digits in range(4, 13):
        a, b = f"{previous:.{digits}g}", f"{current:.{digits}g}"
        if a != b:
            return a, b
    return a, b


def data_documentation(
    frame: pl.DataFrame,
    *,
    release: str,
    previous_release: str | None,
    changes: pl.DataFrame,
    excluded: Sequence[tuple[str, str, str]] = (),
    max_changes: int = 40,
    tables_changed: Sequence[str] = (),
) -> str:
    """data_documentation.md: the file, each column, each quantity and basis present, the benchmarks left out
    of an index (index, benchmark, reason), and what changed since the previous release."""
    lines = [
        f"# benchmap release {release}: data documentation",
        "",
        f"`{RELEASE_CSV}` and `{RELEASE_PARQUET}` hold the same {frame.height:,} rows: every coverage figure this "
        "release publishes (estimated and as counted, per index, benchmark, task, occupation and major group) and "
        "the regressions that carry labeler error, one per row (long format); the label quality, model scores, "
        "gaps, sensitivity figures, raw-label regressions and checks are in their tables only. The schema is the "
        "same in every release; a release folder is never "
        "rewritten, and `latest` / `latest.txt` beside the releases name the newest one.",
        "",
        "## Columns",
        "",
        "| column | type | meaning |",
        "|---|---|---|",
        *[f"| `{c}` | {RELEASE_SCHEMA[c]} | {COLUMN_MEANINGS[c]} |" for c in RELEASE_SCHEMA],
        "",
        "## Quantities",
        "",
        "| quantity | unit types | rows | meaning |",
        "|---|---|---|---|",
    ]
    by_quantity = (frame.with_columns(pl.col("quantity").str.replace(r"^(ratio|coef):.*$", "$1:<term>")
                                      .alias("_q"))
                   .group_by("_q").agg(pl.col("unit_type").unique().sort().str.join(", ").alias("units"),
                                       pl.len().alias("rows")).sort("_q"))
    for r in by_quantity.iter_rows(named=True):
        lines.append(f"| `{r['_q']}` | {r['units']} | {r['rows']:,} | {QUANTITY_MEANINGS.get(r['_q'], '')} |")
    lines += ["", "## Bases", "", "| basis | rows | meaning |", "|---|---|---|"]
    for basis, n in frame.group_by("basis").agg(pl.len()).sort("basis").iter_rows():
        lines.append(f"| `{basis}` | {n:,} | {BASIS_MEANINGS.get(basis, '')} |")
    lines += ["", "## Benchmarks not counted, or counted but adding to no task", ""]
    if excluded:
        # a benchmark left out of an index has a reason opening "not in this index" (report.index_benchmarks);
        # the others are counted, with no prompt labeled as work
        lines += ["| index | benchmark | counted | reason |", "|---|---|---|---|",
                  *[f"| {i} | {b} | {'no' if why.startswith('not in this index') else 'yes'} | {markdown_literal(why)} |"
                    for i, b, why in excluded]]
    else:
        lines.append("Every landed benchmark is counted in every index, and each adds to some task.")
    lines += ["", "## What changed since the previous release", ""]
    if previous_release is None:
        lines.append("This is the first release in this folder.")
    elif changes.is_empty():
        lines.append(f"No figure of this file differs from {previous_release}"
                     + (f"; these tables do: {', '.join(tables_changed)}." if tables_changed else "."))
    else:
        counts = dict(changes.group_by("change").agg(pl.len()).iter_rows())
        lines.append(f"Against {previous_release}: " + ", ".join(
            f"{counts.get(k, 0):,} {k}" for k in ("changed", "added", "removed")) + " figures.")
        headline = changes.filter(pl.col("unit_type").is_in(["index", "model"]))
        shown = pl.concat([headline, changes.filter(~pl.col("unit_type").is_in(["index", "model"]))]).head(max_changes)
        lines += ["", "| index | unit | quantity | threshold | basis | change | previous | current |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in shown.iter_rows(named=True):
            previous, current = _fmt_change(r["previous"], r["current"])
            lines.append(f"| {r['benchmark_index']} | {r['unit_type']} {r['unit_id']} | {r['quantity']} | "
                         f"{_fmt(r['threshold'])} | {r['basis']} | {r['change']} | {previous} | {current} |")
        if changes.height > shown.height:
            lines.append(f"\n{changes.height - shown.height:,} more changes: compare the two `{RELEASE_PARQUET}`.")
        if tables_changed:
            lines.append(f"\nTables that differ: {', '.join(tables_changed)}.")
    return "\n".join(lines) + "\n"


# --- headline history ----------------------------------------------------------------------------------------

HISTORY_SCHEMA: dict[str, pl.DataType] = {
    "release": pl.Utf8(),
    "released_at": pl.Utf8(),
    "benchmark_index": pl.Utf8(),
    "quantity": pl.Utf8(),
    "threshold": pl.Int64(),
    "value": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "basis": pl.Utf8(),
    "benchmarks": pl.Int64(),
}


def history_rows(release: str, released_at: str, frame: pl.DataFrame) -> pl.DataFrame:
    """One release's headline rows: per index, the published pooled quantities (not the labels as counted)
    with the number of benchmarks the index counted."""
    pooled = frame.filter((pl.col("unit_type") == "index") & (pl.col("basis") != "labels_as_counted"))
    counts = pooled.filter(pl.col("quantity") == "benchmarks_counted").select(
        "benchmark_index", pl.col("value").cast(pl.Int64).alias("benchmarks"))
    rows = pooled.filter(pl.col("quantity") != "benchmarks_counted").join(counts, on="benchmark_index", how="left")
    return rows.select(
        pl.lit(release).alias("release"), pl.lit(released_at).alias("released_at"), "benchmark_index", "quantity",
        "threshold", "value", "ci_low", "ci_high", "basis", "benchmarks",
    ).cast(HISTORY_SCHEMA)


def headline_history(releases: Sequence[tuple[str, str, pl.DataFrame]]) -> pl.DataFrame:
    """headline_history: one row per release and headline quantity, oldest release first."""
    parts = [history_rows(name, at, frame) for name, at, frame in sorted(releases, key=lambda r: r[0])]
    if not parts:
        return pl.DataFrame(schema=HISTORY_SCHEMA)
    return pl.concat(parts).sort("release", "benchmark_index", "quantity", "threshold", "basis")


# --- the dictionary entries of the tables this module adds to an export -------------------------------------

def _register_dictionary() -> None:
    from models.data_dictionary import DATA_DICTIONARY, TABLE_DESCRIPTIONS
    from models.data_dictionary.common import BOOL, COUNT, TEXT

    counts = "computed: models/report/counts.py from benchmarks, benchmark_index_membership, prompt_task_labels"
    DATA_DICTIONARY["benchmark_counts"] = {
        "benchmark_index": ("benchmark index (data/indexes/<name>.toml; `all` = every landed benchmark)", TEXT,
                            counts),
        "benchmark": ("landed benchmark", TEXT, counts),
        "counted": ("the index counts this benchmark", BOOL, counts),
        "reason": ("why the index file includes or leaves it out", TEXT, counts),
        "n_prompts": ("prompts landed", COUNT, counts),
        "n_labeled_prompts": ("prompts labeled with at least one O*NET task (0: it adds to no task and is not "
                              "on the map's benchmark picker)", COUNT, counts),
    }
    TABLE_DESCRIPTIONS["benchmark_counts"] = (
        "Per index and landed benchmark: counted or not and why, prompts, prompts labeled -- the one source of "
        "every benchmark count."
    )
    history = "computed: resources/release.py from every release's release.parquet"
    DATA_DICTIONARY["headline_history"] = {
        "release": ("release folder name (<date>T<time>Z-<input hash>)", TEXT, history),
        "released_at": ("when the release's run was created (UTC, ISO 8601)", TEXT, history),
        **{c: (COLUMN_MEANINGS[c], "see release.csv", history)
           for c in ("benchmark_index", "quantity", "threshold", "value", "ci_low", "ci_high", "basis")},
        "benchmarks": ("benchmarks the index counted in that release", COUNT, history),
    }
    TABLE_DESCRIPTIONS["headline_history"] = "One row per release and published headline quantity."


_register_dictionary()
