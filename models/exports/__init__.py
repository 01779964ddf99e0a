"""Policy-report exports, the pure half: which tables are exported and how each frame is prepared, the data
dictionary, the workbook's sheet names and README, and the manifest's content. The files are written by
`resources/export_writer.py` (and `resources/export_files.py`), into one dated folder.

Layout of a release `<warehouse dir>/exports/<YYYY-MM-DD>T<HHMMSS>Z-<input hash>/` (resources/release.py; never
rewritten, `exports/latest` names the newest):

    tables/<table>.parquet, tables/<table>.csv   one pair per exported table
    benchmap_tables.xlsx                          README + data_dictionary sheets, then one sheet per table
                                                  (not the per-task and per-text tables: FILE_ONLY_TABLES)
    data_dictionary.md                            every column: meaning, unit, source
    manifest.json                                 sources and checksums, benchmarks and hashes, labeler and
                                                  model, code version, run id, every file with its SHA-256
    figures/, coverage_map.html, summary.md       written by the figure, map and summary steps
    release.csv, release.parquet                  every published figure, long and tidy (`release`)
    data_documentation.md                         its columns, quantities, bases and what changed

Tables are written in a canonical row order (`canonical_order`) and hold no timestamps, so re-running on
unchanged inputs gives identical table contents (and identical Parquet and CSV bytes).

Modules: `tables` (what is exported, row order, file names), `dictionary`, `workbook` (sheet names, Excel
limits, README rows), `manifest` (its content from plain values, `manifest_problems`). This module re-exports
the public names, so `models.exports.X` works as before. No dagster and no file I/O here.
"""

from __future__ import annotations

from models.data_dictionary import DATA_DICTIONARY
from models.exports import release  # noqa: F401  (registers the release tables' dictionary entries)
from models.exports.dictionary import data_dictionary_markdown, dictionary_frame
from models.exports.manifest import (
    BENCHMARK_MANIFEST_COLUMNS,
    benchmark_entries,
    build_manifest,
    labeler_entries,
    manifest_problems,
)
from models.exports.tables import (
    DICTIONARY_NAME,
    ESTIMATE_TABLES,
    EXCEL_MAX_CHARS,
    EXCEL_MAX_ROWS,
    EXCLUDED_COLUMNS,
    EXPORT_TABLES,
    EXPORTED,
    FILE_ONLY_TABLES,
    HEADLINE_TABLES,
    INTERNAL_TABLES,
    LOCK_NAME,
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    OPTIONAL_TABLES,
    POOLED_FIRST,
    REFERENCE_TABLES,
    REPORT_TABLES,
    REQUIRED_TABLES,
    SORT_KEYS,
    STREAMED_TABLES,
    TABLES_DIR,
    WORKBOOK_NAME,
    canonical_order,
    csv_safe,
    csv_unsafe,
    flatten_nested,
    plain_sort_columns,
    prepare_table,
)
from models.exports.workbook import (
    DICTIONARY_SHEET,
    PERCENT_UNITS,
    README_SHEET,
    RESERVED_SHEETS,
    WORKBOOK_PROPERTIES,
    column_widths,
    excel_safe,
    percent_columns,
    readme_frame,
    readme_rows,
    sheet_names,
    sheet_tables,
)

__all__ = [
    "PERCENT_UNITS",
    "column_widths",
    "percent_columns",
    "release",
    "BENCHMARK_MANIFEST_COLUMNS",
    "DATA_DICTIONARY",
    "DICTIONARY_NAME",
    "DICTIONARY_SHEET",
    "EXCEL_MAX_CHARS",
    "EXCEL_MAX_ROWS",
    "ESTIMATE_TABLES",
    "EXCLUDED_COLUMNS",
    "EXPORT_TABLES",
    "EXPORTED",
    "FILE_ONLY_TABLES",
    "HEADLINE_TABLES",
    "INTERNAL_TABLES",
    "LOCK_NAME",
    "MANIFEST_FORMAT",
    "MANIFEST_NAME",
    "OPTIONAL_TABLES",
    "POOLED_FIRST",
    "README_SHEET",
    "REFERENCE_TABLES",
    "REPORT_TABLES",
    "REQUIRED_TABLES",
    "RESERVED_SHEETS",
    "SORT_KEYS",
    "STREAMED_TABLES",
    "TABLES_DIR",
    "WORKBOOK_NAME",
    "WORKBOOK_PROPERTIES",
    "benchmark_entries",
    "build_manifest",
    "canonical_order",
    "data_dictionary_markdown",
    "dictionary_frame",
    "excel_safe",
    "flatten_nested",
    "labeler_entries",
    "manifest_problems",
    "plain_sort_columns",
    "csv_safe",
    "csv_unsafe",
    "prepare_table",
    "readme_frame",
    "readme_rows",
    "sheet_names",
    "sheet_tables",
]
