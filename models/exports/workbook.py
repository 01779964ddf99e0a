"""The workbook's content, without the file: sheet names Excel accepts, frames cut to Excel's limits, and the
README sheet's rows. `resources/export_files.py` writes the XLSX from these."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence

import polars as pl

from models.exports.tables import (
    DICTIONARY_NAME,
    EXCEL_MAX_CHARS,
    EXCEL_MAX_ROWS,
    FILE_ONLY_TABLES,
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


def sheet_tables(tables: Mapping[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """The tables that get a workbook sheet: all but FILE_ONLY_TABLES (a row per task or per text)."""
    return {table: frame for table, frame in tables.items() if table not in FILE_ONLY_TABLES}


def excel_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame within Excel's limits: text cells cut at EXCEL_MAX_CHARS, rows at EXCEL_MAX_ROWS."""
    text = [c for c, dtype in frame.schema.items() if dtype == pl.Utf8]
    frame = frame.with_columns([pl.col(c).str.slice(0, EXCEL_MAX_CHARS) for c in text]) if text else frame
    return frame.head(EXCEL_MAX_ROWS)


PERCENT_UNITS: tuple[str, ...] = ("share (0-1)", "probability (0-1)")


def percent_columns(dictionary: pl.DataFrame) -> set[tuple[str, str]]:
    """(table, column) pairs the data dictionary gives a share or probability unit: shown as percents."""
    if dictionary.is_empty() or not {"table", "column", "unit"} <= set(dictionary.columns):
        return set()
    rows = dictionary.filter(pl.col("unit").is_in(list(PERCENT_UNITS)))
    return set(rows.select("table", "column").iter_rows())


PIXELS_PER_CHARACTER = 7  # polars' write_excel takes column widths in pixels (Calibri 11)


def column_widths(frame: pl.DataFrame, *, sample: int = 500, min_width: int = 8, max_width: int = 60) -> dict[str, int]:
    """A width per column, in pixels: the longest of the header and the first `sample` cells, within
    [min_width, max_width] characters -- set directly, so large sheets need no autofit pass."""
    head = frame.head(sample)
    widths = {}
    for column in frame.columns:
        cells = head[column].cast(pl.Utf8, strict=False).str.len_chars().max() if head.height else 0
        longest = max(len(column) + 2, int(cells or 0) + 1)
        widths[column] = PIXELS_PER_CHARACTER * max(min_width, min(max_width, longest))
    return widths


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
        ("files", f"{TABLES_DIR}/<table>.parquet and .csv; {DICTIONARY_NAME}; {MANIFEST_NAME}; release.csv "
                  "(every published figure, long format) and data_documentation.md"),
        ("how to read", "one sheet per table, except the tables with a row per task or per prompt text (listed "
                        "below as 'no sheet': open their Parquet or CSV file); every sheet has filters on its "
                        "header row, which stays in view when scrolling; shares and probabilities are shown as "
                        "percents (the cell holds the 0-1 value); units and sources of every column (of every "
                        "table, with or without a sheet) are in the data_dictionary sheet"),
    ]


def readme_frame(readme: Sequence[tuple[str, str]], tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The README sheet (item, value): `readme`, a line per table without a sheet (FILE_ONLY_TABLES) naming its
    files, and a note for each sheet cut at Excel's row limit or with text cut at its cell limit."""
    notes = list(readme)
    for table, frame in tables.items():
        if table in FILE_ONLY_TABLES:
            notes.append((f"{table} (no sheet)", f"{frame.height:,} rows (a row per task or per prompt text): "
                                                 f"{TABLES_DIR}/{table}.parquet and {TABLES_DIR}/{table}.csv"))
            continue
        # a probe: a 40,015-character title was cut on its sheet without a word
        long = {c: int((frame[c].str.len_chars() > EXCEL_MAX_CHARS).sum()) for c, dtype in frame.schema.items()
                if dtype == pl.Utf8}
        cut = {c: n for c, n in long.items() if n}
        if cut:
            n = sum(cut.values())
            notes.append((f"{table} (text cut)", f"{n:,} {'cell' if n == 1 else 'cells'} of "
                          f"{', '.join(cut)} {'holds its' if n == 1 else 'hold their'} first {EXCEL_MAX_CHARS:,} "
                          "characters only (Excel's cell limit); the Parquet and CSV files hold all"))
        if frame.height > EXCEL_MAX_ROWS:
            notes.append(
                (
                    f"{table} (truncated)",
                    f"sheet holds the first {EXCEL_MAX_ROWS} of {frame.height} "
                    "rows; the Parquet and CSV files hold all",
                )
            )
    return pl.DataFrame(notes or [("export", "benchmap")], schema=["item", "value"], orient="row")
