"""The export folder's file I/O: atomic writes, the Parquet/CSV pair per table and the `tables/` folder swapped
in whole, the XLSX workbook, checksums, the folder's writer lock, and reading an export back.

`resources/export_writer.py` drives these under the lock; the content (prepared frames, sheet names, README
rows, the manifest dict) comes from `models.exports`. `sha256_file` is the project's one file hash
(`resources.sources` uses it for the source checksums). No dagster here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import xlsxwriter

from models import exports as ex
from resources.export_stream import StreamedTable

LOCK_NAME = ex.LOCK_NAME
LOCK_WAIT_S = 900.0


def sha256_file(path: Path) -> str:
    """SHA-256 of a file, read in 1 MiB chunks (the manifest's checksums; resources.sources uses it too)."""
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


def write_bytes(path: Path, data: bytes) -> Path:
    return atomic_write(path, lambda p: p.write_bytes(data))


def write_csv(path: Path, frame: pl.DataFrame) -> Path:
    """`frame` as CSV at `path`, atomically (the folder is created), its formula-like text cells made text
    (`models.exports.csv_safe`)."""
    return atomic_write(path, ex.csv_safe(frame).write_csv)


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


def write_table_files(table: str, frame: pl.DataFrame | StreamedTable, directory: Path) -> TableFile:
    """`<table>.parquet` and `<table>.csv` of an already prepared frame, or of a table written from the
    warehouse in slices (resources/export_stream.py)."""
    if isinstance(frame, StreamedTable):
        parquet, csv = directory / f"{table}.parquet", directory / f"{table}.csv"
        atomic_write(parquet, lambda p: atomic_write(csv, lambda c: frame.write(p, c)))
    else:
        parquet = atomic_write(
            directory / f"{table}.parquet", lambda p: frame.write_parquet(p, compression="zstd", statistics=True)
        )
        csv = atomic_write(directory / f"{table}.csv", lambda p: ex.csv_safe(frame).write_csv(p))
    return TableFile(
        table, frame.height, list(frame.columns), parquet, csv, sha256_file(parquet), sha256_file(csv)
    )


def _swap_in(staging: Path, target: Path) -> None:
    """Put the freshly written folder `staging` where `target` is (rename; the old one is removed after)."""
    old = target.with_name(f".{target.name}.old-{os.getpid()}-{secrets.token_hex(3)}")
    if target.exists():
        os.replace(target, old)
    os.replace(staging, target)
    shutil.rmtree(old, ignore_errors=True)


def write_tables(prepared: Mapping[str, pl.DataFrame | StreamedTable], directory: Path) -> list[TableFile]:
    """Every table's Parquet and CSV into a private folder, then swapped in whole as `tables/`: no stale table
    of an earlier export lingers, and no file of another writer is ever deleted. Call under `export_lock`."""
    table_dir = directory / ex.TABLES_DIR
    for leftover in directory.glob(f".{ex.TABLES_DIR}.*"):  # of a writer killed mid-export (we hold the lock)
        shutil.rmtree(leftover, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{ex.TABLES_DIR}.", suffix=".tmp", dir=directory))
    try:
        staged = [write_table_files(t, frame, staging) for t, frame in prepared.items()]
        _swap_in(staging, table_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    os.chmod(table_dir, 0o755)  # mkdtemp makes 0700; exports are meant to be read by others
    return [dataclasses.replace(f, parquet=table_dir / f.parquet.name, csv=table_dir / f.csv.name) for f in staged]


def write_workbook(
    path: Path,
    tables: Mapping[str, pl.DataFrame],
    dictionary: pl.DataFrame,
    readme: Sequence[tuple[str, str]] = (),
) -> dict[str, str]:
    """One XLSX: a README sheet (key/value pairs), the data dictionary, then one sheet per table but those of
    `models.exports.FILE_ONLY_TABLES` (a row per task or per text: the README names their Parquet/CSV files).
    Every sheet has an autofilter, a frozen header row and set column widths; columns the dictionary calls
    shares or probabilities show as percents (the cells keep the 0-1 value).

    Returns table -> sheet name (tables with a sheet only). Tables longer than Excel's row limit are cut there
    (noted in the README).
    """
    return write_workbook_sheets(path, ex.sheet_tables(tables), dictionary, ex.readme_frame(readme, tables))


WORKBOOK_OPTIONS: dict[str, bool] = {
    "nan_inf_to_errors": True,
    "strings_to_formulas": False,
    "strings_to_urls": False,
    "strings_to_numbers": False,
    # the sheets' XML kept in memory, not in ~100 temporary files (xlsxwriter's default): the same content (only
    # the zip entries' dates differ), 0.3-0.4 s less of the workbook's ~1.8 s wall at 1x, the export's longest part
    "in_memory": True,
}


def write_workbook_sheets(path: Path, sheets: Mapping[str, pl.DataFrame], dictionary: pl.DataFrame,
                          readme_frame: pl.DataFrame) -> dict[str, str]:
    """`write_workbook` from its parts: the tables that get a sheet (`models.exports.sheet_tables`) and the
    README sheet (`models.exports.readme_frame`). Only what the workbook holds, so a worker process can write it
    while the caller writes the Parquet and CSV files (resources/export_writer.py)."""
    names = ex.sheet_names(sheets, reserved=ex.RESERVED_SHEETS)
    percent = ex.percent_columns(dictionary)

    def write(target: Path) -> None:
        workbook = xlsxwriter.Workbook(str(target), dict(WORKBOOK_OPTIONS))
        workbook.set_properties(dict(ex.WORKBOOK_PROPERTIES))
        readme_frame.write_excel(workbook, ex.README_SHEET, table_name="readme", freeze_panes=(1, 0),
                                 column_widths=ex.column_widths(readme_frame, max_width=120))
        dictionary.write_excel(workbook, ex.DICTIONARY_SHEET, table_name="data_dictionary", freeze_panes=(1, 0),
                               column_widths=ex.column_widths(dictionary))
        for index, (table, frame) in enumerate(sheets.items()):
            safe = ex.excel_safe(frame)
            shares = [c for c in safe.columns if (table, c) in percent and safe.schema[c].is_numeric()]
            safe.write_excel(
                workbook,
                names[table],
                table_name=f"t{index:02d}_{table}"[:250],
                column_widths=ex.column_widths(safe),
                column_formats=dict.fromkeys(shares, "0.0%") or None,
                float_precision=4,
                freeze_panes=(1, 0),
                autofilter=True,
            )
        workbook.close()

    atomic_write(path, write)
    return names


def file_entries(directory: Path, exclude: Iterable[str] = (ex.MANIFEST_NAME,),
                 known: Mapping[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Every file under `directory` (relative path, bytes, SHA-256), sorted; hidden temp files left out. `known`:
    entries of an earlier call by path (files not written since), reused instead of reading the file again."""
    skip = set(exclude)
    entries = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        relative = path.relative_to(directory).as_posix()
        if relative in skip or any(part.startswith(".") for part in path.relative_to(directory).parts):
            continue
        if known is not None and relative in known:
            entries.append(dict(known[relative]))
            continue
        entries.append({"path": relative, "bytes": path.stat().st_size, "sha256": sha256_file(path)})
    return entries


def read_export_table(directory: str | Path, table: str) -> pl.DataFrame:
    return pl.read_parquet(Path(directory) / ex.TABLES_DIR / f"{table}.parquet")


def read_manifest(directory: str | Path) -> dict[str, Any] | None:
    """The folder's manifest.json, or None when it has none."""
    path = Path(directory) / ex.MANIFEST_NAME
    return json.loads(path.read_text()) if path.is_file() else None


@contextlib.contextmanager
def export_lock(directory: Path, run_id: str | None, *, wait_s: float = LOCK_WAIT_S,
                log: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the export folder's lock (`<folder>/.export.lock`, an flock, so a killed holder releases it).

    A second writer prints one line naming the run that holds it and waits (up to `wait_s`), then writes the
    whole folder after it: two runs never delete or rename each other's files."""
    say = log or (lambda message: print(message, file=sys.stderr, flush=True))
    path = directory / LOCK_NAME
    with open(path, "a+", encoding="utf-8") as handle:
        deadline = time.monotonic() + wait_s
        waited = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waited:
                    handle.seek(0)
                    holder = handle.read().strip() or "another run"
                    say(f"export folder {directory} is being written by {holder}: waiting for it")
                    waited = True
                if time.monotonic() > deadline:
                    raise TimeoutError(f"export folder {directory} stayed locked for {wait_s:.0f}s "
                                       f"(see {path})") from None
                time.sleep(0.2)
        handle.seek(0)
        handle.truncate()
        handle.write(f"run {run_id or '?'} (pid {os.getpid()}, since {dt.datetime.now(dt.UTC):%H:%M:%S} UTC)\n")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)
