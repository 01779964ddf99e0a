"""The export's files: atomic writes, the Parquet/CSV pair per table, the XLSX workbook, and the checksums
the manifest lists. This is the file I/O of the export (models/exports/writer.py drives it)."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import xlsxwriter

from models.exports.tables import EXCEL_MAX_CHARS, EXCEL_MAX_ROWS, MANIFEST_NAME, TABLES_DIR


def sha256_file(path: Path) -> str:
    """SHA-256 of a file, read in 1 MiB chunks (the manifest's checksums; pipelines.sources uses it too)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Write via a temporary file in the same folder, then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(handle)
    try:
        write(Path(temporary))
        os.chmod(temporary, 0o644)  # mkstemp makes 0600; exports are meant to be read by others
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def write_text(path: Path, text: str) -> Path:
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


@dataclass(frozen=True)
class TableFile:
    table: str
    rows: int
    columns: list[str]
    parquet: Path
    csv: Path
    parquet_sha256: str
    csv_sha256: str
    sheet: str | None = None

    def manifest_entry(self, root: Path) -> dict[str, Any]:
        return {
            "table": self.table,
            "rows": self.rows,
            "columns": self.columns,
            "parquet": self.parquet.relative_to(root).as_posix(),
            "parquet_sha256": self.parquet_sha256,
            "csv": self.csv.relative_to(root).as_posix(),
            "csv_sha256": self.csv_sha256,
            "sheet": self.sheet,
        }


def write_table_files(table: str, frame: pl.DataFrame, directory: Path) -> TableFile:
    """`<table>.parquet` and `<table>.csv` of an already prepared frame."""
    parquet = atomic_write(
        directory / f"{table}.parquet", lambda p: frame.write_parquet(p, compression="zstd", statistics=True)
    )
    csv = atomic_write(directory / f"{table}.csv", lambda p: frame.write_csv(p))
    return TableFile(
        table, frame.height, list(frame.columns), parquet, csv, sha256_file(parquet), sha256_file(csv)
    )


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


def _excel_safe(frame: pl.DataFrame) -> pl.DataFrame:
    text = [c for c, dtype in frame.schema.items() if dtype == pl.Utf8]
    frame = frame.with_columns([pl.col(c).str.slice(0, EXCEL_MAX_CHARS) for c in text]) if text else frame
    return frame.head(EXCEL_MAX_ROWS)


def write_workbook(
    path: Path,
    tables: Mapping[str, pl.DataFrame],
    dictionary: pl.DataFrame,
    readme: Sequence[tuple[str, str]] = (),
) -> dict[str, str]:
    """One XLSX: a README sheet (key/value pairs), the data dictionary, then one sheet per table.

    Returns table -> sheet name. Tables longer than Excel's row limit are cut there (noted in the README).
    """
    names = sheet_names(tables, reserved=("README", "data_dictionary"))

    def write(target: Path) -> None:
        workbook = xlsxwriter.Workbook(
            str(target),
            {
                "nan_inf_to_errors": True,
                "strings_to_formulas": False,
                "strings_to_urls": False,
                "strings_to_numbers": False,
            },
        )
        workbook.set_properties({"title": "benchmap export", "created": dt.datetime(2000, 1, 1)})
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
        readme_frame = pl.DataFrame(notes or [("export", "benchmap")], schema=["item", "value"], orient="row")
        readme_frame.write_excel(workbook, "README", table_name="readme", autofit=True)
        dictionary.write_excel(
            workbook, "data_dictionary", table_name="data_dictionary", autofit=dictionary.height <= 2000
        )
        for index, (table, frame) in enumerate(tables.items()):
            safe = _excel_safe(frame)
            safe.write_excel(
                workbook,
                names[table],
                table_name=f"t{index:02d}_{table}"[:250],
                autofit=safe.height <= 2000,
                float_precision=4,
                freeze_panes=(1, 0),
            )
        workbook.close()

    atomic_write(path, write)
    return names



def file_entries(directory: Path, exclude: Iterable[str] = (MANIFEST_NAME,)) -> list[dict[str, Any]]:
    """Every file under `directory` (relative path, bytes, SHA-256), sorted; hidden temp files left out."""
    skip = set(exclude)
    entries = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        relative = path.relative_to(directory).as_posix()
        if relative in skip or any(part.startswith(".") for part in path.relative_to(directory).parts):
            continue
        entries.append({"path": relative, "bytes": path.stat().st_size, "sha256": sha256_file(path)})
    return entries



def read_export_table(directory: str | Path, table: str) -> pl.DataFrame:
    return pl.read_parquet(Path(directory) / TABLES_DIR / f"{table}.parquet")


