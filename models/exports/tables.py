"""Which tables are exported, in which row order and with which cells: `prepare_table` makes a frame
what the files hold (excluded columns dropped, nested cells as JSON text, a total canonical row order)."""

from __future__ import annotations

import json
import re
from typing import Any

import polars as pl

from models.data_dictionary import INDEXED_TABLES

# One list per fact (issue 28 item 5): every table an asset writes is either exported, with its role, or internal,
# with why (tests/test_table_registry.py fails on an asset table that is neither, and on an exported table without
# its dictionary entry). The order is this dict's: the report's tables, then the estimates' (the order they had).
REQUIRED = "required"  # the report needs it: a missing one fails the exports check
OPTIONAL = "optional"  # exported whenever the warehouse has it (listed as missing in the manifest otherwise)
ESTIMATE = "estimate"  # the estimates' tables (models/estimates/), exported whenever the warehouse has them
# the O*NET lookups of the codes every other table carries: a task_id in task_estimates names no task without them
# (O*NET is CC BY 4.0, so the release may carry a copy; the other sources it names by checksum only)
REFERENCE = "reference"
EXPORTED: dict[str, str] = {
    "coverage_headline": REQUIRED,
    "task_coverage": REQUIRED,
    "occupation_coverage": REQUIRED,
    "major_group_coverage": REQUIRED,
    "coverage_regressions": REQUIRED,
    "coverage_adjusted_probabilities": REQUIRED,
    "workbank_coverage": REQUIRED,
    "occupation_model_scores": REQUIRED,
    "coverage_sensitivity": REQUIRED,
    "labeler_validation": REQUIRED,
    "task_analysis_frame": OPTIONAL,
    "labeler_agreement": OPTIONAL,
    "occupation_model_scores_estimated": OPTIONAL,
    "coverage_gaps": OPTIONAL,
    "occupation_gaps": OPTIONAL,
    "major_group_gaps": OPTIONAL,
    "jobbench_shortlist": OPTIONAL,
    "benchmarks": OPTIONAL,
    "benchmark_index_membership": OPTIONAL,
    "headline_estimates": OPTIONAL,  # the published estimates the summary's answer quotes (models/estimates/)
    "estimate_design": ESTIMATE,
    "labeler_reliability": ESTIMATE,
    "estimate_split_check": ESTIMATE,
    "coverage_regressions_mi": ESTIMATE,
    "task_estimates": ESTIMATE,
    "occupation_estimates": ESTIMATE,
    "major_group_estimates": ESTIMATE,
    "benchmark_occupation_estimates": ESTIMATE,
    "benchmark_major_group_estimates": ESTIMATE,
    "prompt_occupation_estimates": ESTIMATE,
    "occupation_probability_calibration": ESTIMATE,
    "unit_coverage_simulation_check": ESTIMATE,
    "onet_occupations": REFERENCE,
    "onet_tasks": REFERENCE,
}
_SOURCE = "source data: the release carries its checksums (manifest sources), not a copy"
_PROMPTS = "per prompt: the prompt texts and raw results stay in the warehouse; the export carries the benchmarks' " \
    "counts and every table computed from them (and coverage_map.html a few example prompts per occupation, cut " \
    "short: docs/outputs.md)"
INTERNAL_TABLES: dict[str, str] = {
    "onet_job_titles": _SOURCE,
    "onet_technology_skills": _SOURCE, "oews_wages": _SOURCE, "occupation_wages": _SOURCE,
    "task_exposure": _SOURCE, "workbank_tasks": _SOURCE, "task_hours": _SOURCE,
    "task_search_index": "the offline labeler's search index (a file path and a build record)",
    "benchmark_prompts": _PROMPTS, "benchmark_results": _PROMPTS, "prompt_task_labels": _PROMPTS,
    "prompt_work": _PROMPTS,
    "benchmark_rejects": "landing problems: the run's own log (run_all prints them)",
    "judge_sample_labels": "the judge's labels of sampled texts: an input of the estimates (estimate_design "
    "exports the sample's design)",
    "judge_sample_design": "the judge sample per benchmark: estimate_design exports it with the estimates' view",
    "gold_task_labels": "validation input: labeler_validation exports what it measures",
    "reference_task_labels": "validation input: labeler_validation exports what it measures",
    "gold_annotation_sample": "the sample handed to human annotators (a work list, not a result)",
    "task_label_counts": "an aggregate of prompt_task_labels for the coverage steps (task_coverage exports it "
    "per task)",
    "headline_count_draws": "the headline's kept count draws: the input of coverage_regressions_mi",
    "occupation_score_power": "a planning aid of the gap analysis (what a new benchmark would need to detect)",
    "candidate_benchmark_whatif": "the what-if of a candidate benchmark folder: written by `whatif`, not released",
    "whatif_gap_rank_changes": "the what-if of a candidate benchmark folder: written by `whatif`, not released",
    "whatif_marginal_gain": "the what-if of a candidate benchmark folder: written by `whatif`, not released",
    "whatif_newly_covered_occupations": "the what-if of a candidate benchmark folder: written by `whatif`, not "
    "released",
    "whatif_newly_covered_tasks": "the what-if of a candidate benchmark folder: written by `whatif`, not released",
    "whatif_expected_occupation_gain": "the what-if of a candidate benchmark folder: written by `whatif`, not "
    "released",
    "coverage_map": "the exports' own record: the map file in the release folder",
    "report_figures": "the exports' own record: the figure files in the release folder",
    "report_summary": "the exports' own record: summary.md in the release folder",
    "exports": "the exports' own record: the release folder and its manifest",
    "headline_history": "the exports' own record: headline_history.csv beside the release folders",
}
REQUIRED_TABLES: tuple[str, ...] = tuple(t for t, role in EXPORTED.items() if role == REQUIRED)
OPTIONAL_TABLES: tuple[str, ...] = tuple(t for t, role in EXPORTED.items() if role == OPTIONAL)
ESTIMATE_TABLES: tuple[str, ...] = tuple(t for t, role in EXPORTED.items() if role == ESTIMATE)
REFERENCE_TABLES: tuple[str, ...] = tuple(t for t, role in EXPORTED.items() if role == REFERENCE)
REPORT_TABLES: tuple[str, ...] = REQUIRED_TABLES + OPTIONAL_TABLES  # the tables summary.md's sections read
EXPORT_TABLES: tuple[str, ...] = tuple(EXPORTED)
# Tables with a row per task or per prompt text (19k-116k rows, 95% of the cells of all tables): Parquet and CSV
# only, no workbook sheet. Written cell by cell they took ~40 CPU-s of every export and made a 22 MB workbook
# Excel opens slowly; an analyst filters them better in Parquet/CSV (or Power Query). The README sheet names their
# files; every other table (occupation level and coarser) has its sheet.
FILE_ONLY_TABLES: tuple[str, ...] = (
    "task_coverage",
    "task_analysis_frame",
    "coverage_gaps",
    "task_estimates",
    "prompt_occupation_estimates",
    "onet_tasks",
)
# Tables written to Parquet/CSV straight from the warehouse in slices, never whole in memory (issue 29 item 5: at 50x
# prompt_occupation_estimates has 7.3M rows, and reading and sorting it whole added ~1.9 GB to the exports step).
# Only flat tables whose canonical order is a plain sort by columns (`plain_sort_columns`); the files are the same.
STREAMED_TABLES: tuple[str, ...] = ("prompt_occupation_estimates",)
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
    "onet_occupations": ("onet_soc_code",),
    "onet_tasks": ("onet_soc_code", "task_id"),
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


_PLAIN_TYPES = (pl.Utf8, pl.Boolean, pl.Float64, pl.Float32, pl.Int64, pl.Int32, pl.Int16, pl.Int8, pl.UInt64,
                pl.UInt32, pl.UInt16, pl.UInt8, pl.Date)


def plain_sort_columns(table: str, schema: pl.Schema) -> list[str] | None:
    """The columns `canonical_order` sorts by (nulls last), when that is all it does: no excluded, nested or
    categorical column, no 'all'-first rule; else None. A database ORDER BY these columns gives the same rows in
    the same order (text compares bytewise, false before true, NaN after numbers, in both)."""
    if EXCLUDED_COLUMNS.get(table) or "_index_is_not_all" in SORT_KEYS.get(table, ()) or table in POOLED_FIRST:
        return None
    if not all(isinstance(dtype, _PLAIN_TYPES) for dtype in schema.values()):
        return None
    keys = [k for k in SORT_KEYS.get(table, ()) if k in schema]
    return keys + [c for c in schema if c not in keys]


# A CSV cell opening with one of these is a formula to Excel and LibreOffice when the file is opened directly.
CSV_FORMULA_START = r"^[=+\-@\t\r]"


def csv_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame as its CSV file holds it: a text cell a spreadsheet would run as a formula (it opens with =, +,
    -, @, a tab or a carriage return) gets a leading apostrophe, so it shows as text (OWASP's advice on CSV
    injection). A probe landed a results.csv model `=HYPERLINK("http://...","click")` and index titles alike, and
    the CSVs carried them as live formulas; the Parquet files keep every value as it is, and the workbook writes no
    formula from text."""
    text = [c for c, dtype in frame.schema.items() if dtype == pl.Utf8]
    if not text:
        return frame
    return frame.with_columns(pl.when(pl.col(c).str.contains(CSV_FORMULA_START)).then("'" + pl.col(c))
                              .otherwise(pl.col(c)).alias(c) for c in text)


def csv_unsafe(value: str) -> str:
    """A cell of a CSV written by `csv_safe` as it was (read back: the annotators' file)."""
    return value[1:] if len(value) > 1 and value[0] == "'" and re.match(CSV_FORMULA_START, value[1:]) else value


def prepare_table(table: str, frame: pl.DataFrame) -> pl.DataFrame:
    """The frame as exported: excluded columns dropped, nested cells as JSON text, empty text as null (a CSV or
    XLSX cell cannot tell "" from a missing value, so the Parquet copy says the same), canonical row order."""
    dropped = [c for c in EXCLUDED_COLUMNS.get(table, ()) if c in frame.columns]
    flat = flatten_nested(frame.drop(dropped))
    text = [c for c, dtype in flat.schema.items() if dtype == pl.Utf8]
    return canonical_order(table, flat.with_columns(pl.col(text).replace("", None)) if text else flat)


