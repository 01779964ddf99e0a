"""The workbook's content, without the file: sheet names Excel accepts, frames cut to Excel's limits, and the
README sheet's rows. `pipelines/export_files.py` writes the XLSX from these."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence

import polars as pl

from models.exports.tables import (
    DICTIONARY_NAME,
    EXCEL_MAX_CHARS,
    EXCEL_MAX_ROWS,
    MANIFEST_NAME,
    TABLES_DIR,
)

README_SHEET = "README"
DICTIONARY_SHEET = "data_dictionary"
RESERVED_SHEETS: tuple[str, ...] = (README_SHEET, DICTIONARY_SHEET)
# The workbook's document properties: a fixed creation date, so re-exports give identical bytes.
WORKBOOK_PROPERTIES: dict[str, object] = {"title": "benchmap export", "created": dt.datetime(2000, 1, 1)}

_SHEET_FORBIDDEN = re.compile(r"[\[\]:*?/\\]")


def sheet_names(tables: Iterable[str], reserved: Iterable[str] = ()) -> dict[str, str]:
    """Excel sheet name per table: forbidden characters replaced, at most 31 characters, unique
    (case-insensitively, as Excel compares them)."""
    used = {r.lower() for r in reserved}
    names: dict[str, str] = {}
    for table in tables:
        base = _SHEET_FORBIDDEN.sub("_", table).strip("'")[:31] or "sheet"
        name, counter = base, 2
        while name.lower() in used:
            suffix = f"~{counter}"
            name = base[: 31 - len(suffix)] + suffix
            counter += 1
        used.add(name.lower())
        names[table] = name
    return names


def excel_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame within Excel's limits: text cells cut at EXCEL_MAX_CHARS, rows at EXCEL_MAX_ROWS."""
    text = [c for c, dtype in frame.schema.items() if dtype == pl.Utf8]
    frame = frame.with_columns([pl.col(c).str.slice(0, EXCEL_MAX_CHARS) for c in text]) if text else frame
    return frame.head(EXCEL_MAX_ROWS)


def readme_rows(
    export_name: str,
    *,
    run_id: str | None,
    version: str,
    labelers: Sequence[Mapping[str, object]],
    tables: Iterable[str],
    missing: Sequence[str],
) -> list[tuple[str, str]]:
    """The README sheet's key/value pairs: folder, run, code version, labelers, tables, missing ones, files."""
    return [
        ("export folder", export_name),
        ("run id", run_id or ""),
        ("code version", version),
        (
            "labeler",
            ", ".join(f"{e.get('labeler')} {e.get('labeler_version', '')}".strip() for e in labelers),
        ),
        ("tables", ", ".join(tables)),
        ("not exported (missing)", ", ".join(missing) or "none"),
        ("files", f"{TABLES_DIR}/<table>.parquet and .csv; {DICTIONARY_NAME}; {MANIFEST_NAME}"),
    ]


def readme_frame(readme: Sequence[tuple[str, str]], tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The README sheet (item, value): `readme`, plus a note for each table cut at Excel's row limit."""
    notes = list(readme)
    for table, frame in tables.items():
        if frame.height > EXCEL_MAX_ROWS:
            notes.append(
                (
                    f"{table} (truncated)",
                    f"sheet holds the first {EXCEL_MAX_ROWS} of {frame.height} "
                    "rows; the Parquet and CSV files hold all",
                )
            )
    return pl.DataFrame(notes or [("export", "benchmap")], schema=["item", "value"], orient="row")
