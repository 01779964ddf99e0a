"""Policy-report exports: every headline and analysis table as Parquet, CSV and one XLSX workbook, with a data
dictionary and a manifest, written into one dated folder.

Layout of `<warehouse dir>/exports/<YYYY-MM-DD>/`:

    tables/<table>.parquet, tables/<table>.csv   one pair per exported table
    benchmap_tables.xlsx                          README + data_dictionary sheets, then one sheet per table
    data_dictionary.md                            every column: meaning, unit, source
    manifest.json                                 sources and checksums, benchmarks and hashes, labeler and
                                                  model, code version, run id, every file with its SHA-256
    figures/, coverage_map.html, summary.md       written by the figure, map and summary steps

Tables are written in a canonical row order (`canonical_order`) and hold no timestamps, so re-running on
unchanged inputs gives identical table contents (and identical Parquet and CSV bytes).

Modules: `tables` (what is exported, row order), `files` (atomic writes, Parquet/CSV, workbook, checksums),
`dictionary`, `manifest` (its parts, `verify_export`), `writer` (`write_exports` under the folder's lock).
The source checksums are `pipelines.sources.source_checksums()` (they look on disk); the asset passes them.
This module re-exports the public names, so `models.exports.X` works as before. No dagster here.
"""

from __future__ import annotations

from models.data_dictionary import DATA_DICTIONARY
from models.exports.dictionary import data_dictionary_markdown, dictionary_frame
from models.exports.files import (
    TableFile,
    atomic_write,
    file_entries,
    read_export_table,
    sha256_file,
    sheet_names,
    write_table_files,
    write_text,
    write_workbook,
)
from models.exports.manifest import (
    BENCHMARK_MANIFEST_COLUMNS,
    benchmark_entries,
    code_version,
    labeler_entries,
    verify_export,
)
from models.exports.tables import (
    DICTIONARY_NAME,
    EXCEL_MAX_CHARS,
    EXCEL_MAX_ROWS,
    EXCLUDED_COLUMNS,
    EXPORT_TABLES,
    HEADLINE_TABLES,
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    OPTIONAL_TABLES,
    POOLED_FIRST,
    REQUIRED_TABLES,
    SORT_KEYS,
    TABLES_DIR,
    WORKBOOK_NAME,
    canonical_order,
    flatten_nested,
    prepare_table,
)
from models.exports.writer import (
    LOCK_NAME,
    LOCK_WAIT_S,
    ExportResult,
    export_directory,
    export_lock,
    write_exports,
)

__all__ = [
    "BENCHMARK_MANIFEST_COLUMNS",
    "DATA_DICTIONARY",
    "DICTIONARY_NAME",
    "EXCEL_MAX_CHARS",
    "EXCEL_MAX_ROWS",
    "EXCLUDED_COLUMNS",
    "EXPORT_TABLES",
    "HEADLINE_TABLES",
    "LOCK_NAME",
    "LOCK_WAIT_S",
    "MANIFEST_FORMAT",
    "MANIFEST_NAME",
    "OPTIONAL_TABLES",
    "POOLED_FIRST",
    "REQUIRED_TABLES",
    "SORT_KEYS",
    "TABLES_DIR",
    "WORKBOOK_NAME",
    "ExportResult",
    "TableFile",
    "atomic_write",
    "benchmark_entries",
    "canonical_order",
    "code_version",
    "data_dictionary_markdown",
    "dictionary_frame",
    "export_directory",
    "export_lock",
    "file_entries",
    "flatten_nested",
    "labeler_entries",
    "prepare_table",
    "read_export_table",
    "sha256_file",
    "sheet_names",
    "verify_export",
    "write_exports",
    "write_table_files",
    "write_text",
    "write_workbook",
]
