"""Which tables are exported, in which row order and with which cells: `prepare_table` makes a frame
what the files hold (excluded columns dropped, nested cells as JSON text, a total canonical row order)."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from models.data_dictionary import INDEXED_TABLES

# The analysis tables the report needs (missing ones fail the exports check) ...
REQUIRED_TABLES: tuple[str, ...] = (
    "coverage_headline",
    "task_coverage",
    "occupation_coverage",
    "major_group_coverage",
    "coverage_regressions",
    "coverage_adjusted_probabilities",
    "workbank_coverage",
    "occupation_model_scores",
    "coverage_sensitivity",
    "labeler_validation",
)
# ... and those exported whenever the warehouse has them (listed as missing in the manifest otherwise).
OPTIONAL_TABLES: tuple[str, ...] = (
    "task_analysis_frame",
    "labeler_agreement",
    "occupation_model_scores_estimated",
    "coverage_gaps",
    "occupation_gaps",
    "major_group_gaps",
    "jobbench_shortlist",
    "benchmarks",
    "benchmark_index_membership",
    "headline_estimates",  # the published estimates the summary's answer quotes (models/estimates/)
)
EXPORT_TABLES: tuple[str, ...] = REQUIRED_TABLES + OPTIONAL_TABLES
# Tables with a row per task or per prompt text (37k-116k rows, 95% of the cells of all tables): Parquet and CSV
# only, no workbook sheet. Written cell by cell they took ~40 CPU-s of every export and made a 22 MB workbook
# Excel opens slowly; an analyst filters them better in Parquet/CSV (or Power Query). The README sheet names their
# files; every other table (occupation level and coarser) has its sheet.
FILE_ONLY_TABLES: tuple[str, ...] = (
    "task_coverage",
    "task_analysis_frame",
    "coverage_gaps",
    "task_estimates",
    "prompt_occupation_estimates",
)
# Tables previewed as Markdown in the Dagster UI.
HEADLINE_TABLES: tuple[str, ...] = (
    "coverage_headline",
    "major_group_coverage",
    "workbank_coverage",
    "labeler_validation",
)

# Columns never exported: timestamps and machine-specific paths (they would change on every run).
EXCLUDED_COLUMNS: dict[str, tuple[str, ...]] = {
    "benchmarks": ("first_seen", "last_changed", "landing_origin", "landing_path"),
}
# Leading sort keys per table (the remaining columns break ties, so the order is total).
SORT_KEYS: dict[str, tuple[str, ...]] = {
    "coverage_headline": ("scope", "threshold", "metric"),
    "task_coverage": ("benchmark", "onet_soc_code", "task_id"),
    "task_analysis_frame": ("onet_soc_code", "task_id"),
    "occupation_coverage": ("benchmark", "onet_soc_code"),
    "major_group_coverage": ("benchmark", "major_group_code"),
    "coverage_regressions": ("model", "table", "kind", "term", "contrast", "item"),
    "coverage_adjusted_probabilities": (
        "model",
        "exposure_source",
        "varying",
        "exposed",
        "importance_quintile",
        "wage_bill",
        "desire_mean",
        "capability_mean",
    ),
    "workbank_coverage": ("threshold", "zone"),
    "occupation_model_scores": ("onet_soc_code", "model", "min_prompts"),
    "occupation_model_scores_estimated": ("onet_soc_code", "model"),
    "coverage_sensitivity": ("dimension", "variant", "metric"),
    "labeler_validation": ("benchmark", "labeler", "labeler_version", "metric"),
    "labeler_agreement": ("benchmark", "labeler_a", "labeler_b", "metric"),
    "coverage_gaps": ("threshold", "rank"),
    "occupation_gaps": ("threshold", "rank"),
    "major_group_gaps": ("threshold", "major_group_code", "block_rank"),
    "jobbench_shortlist": ("threshold", "rank"),
    "benchmarks": ("benchmark",),
    "benchmark_index_membership": ("benchmark_index", "benchmark"),
}
# Tables computed per benchmark index (the data dictionary's list) sort by it first, index 'all' first
# (models/indexes/); so does the membership table itself.
for _table in (*INDEXED_TABLES, "benchmark_index_membership"):
    SORT_KEYS[_table] = ("_index_is_not_all", "benchmark_index", *SORT_KEYS.get(_table, ()))
# Rows whose key is 'all' (pooled) come before the per-benchmark rows.
POOLED_FIRST: dict[str, str] = {
    "coverage_headline": "scope",
    "coverage_sensitivity": "scope",
    "labeler_validation": "benchmark",
}

TABLES_DIR = "tables"
WORKBOOK_NAME = "benchmap_tables.xlsx"
DICTIONARY_NAME = "data_dictionary.md"
MANIFEST_NAME = "manifest.json"
LOCK_NAME = ".export.lock"  # the folder's writer lock (resources/export_files.py export_lock)
MANIFEST_FORMAT = 1
EXCEL_MAX_ROWS = 1_048_575  # one row for the header
EXCEL_MAX_CHARS = 32_767
_NESTED = (pl.List, pl.Array, pl.Struct, pl.Object)


# --- row order and cell types ---------------------------------------------------------------------


def _json_cell(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, pl.Series):
        value = value.to_list()
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def flatten_nested(frame: pl.DataFrame) -> pl.DataFrame:
    """List/struct columns as JSON text (CSV and Excel hold only scalars); categoricals as text."""
    replacements = []
    for name, dtype in frame.schema.items():
        if isinstance(dtype, _NESTED):
            replacements.append(
                pl.Series(name, [_json_cell(v) for v in frame[name].to_list()], dtype=pl.Utf8)
            )
        elif isinstance(dtype, pl.Categorical | pl.Enum):
            replacements.append(frame[name].cast(pl.Utf8))
    return frame.with_columns(replacements) if replacements else frame


def canonical_order(table: str, frame: pl.DataFrame) -> pl.DataFrame:
    """Rows sorted by the table's SORT_KEYS, then by every other column (nulls last): a total order that does
    not depend on the order rows arrived in."""
    if frame.height < 2:
        return frame
    keys = [k for k in SORT_KEYS.get(table, ()) if k in frame.columns]
    keys += [c for c in frame.columns if c not in keys and not isinstance(frame.schema[c], _NESTED)]
    exprs: list[pl.Expr] = [pl.col(k) for k in keys]
    if "_index_is_not_all" in SORT_KEYS.get(table, ()) and "benchmark_index" in frame.columns:
        exprs = [(pl.col("benchmark_index") != "all").fill_null(True), *exprs]  # index 'all' first
    pooled = POOLED_FIRST.get(table)
    if pooled in frame.columns:
        exprs = [(pl.col(pooled) != "all").fill_null(True), *exprs]
    return frame.sort(exprs, nulls_last=True, maintain_order=True)


def prepare_table(table: str, frame: pl.DataFrame) -> pl.DataFrame:
    """The frame as exported: excluded columns dropped, nested cells as JSON text, canonical row order."""
    dropped = [c for c in EXCLUDED_COLUMNS.get(table, ()) if c in frame.columns]
    return canonical_order(table, flatten_nested(frame.drop(dropped)))


