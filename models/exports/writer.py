"""Writing one export folder under its lock: tables swapped in whole, workbook, data dictionary, manifest."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from models.data_dictionary import undocumented_columns
from models.exports.dictionary import data_dictionary_markdown, dictionary_frame
from models.exports.files import TableFile, file_entries, write_table_files, write_text, write_workbook
from models.exports.manifest import benchmark_entries, code_version
from models.exports.tables import (
    DICTIONARY_NAME,
    EXPORT_TABLES,
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    REQUIRED_TABLES,
    TABLES_DIR,
    WORKBOOK_NAME,
    prepare_table,
)


def export_directory(warehouse_path: str | Path, date: dt.date | str) -> Path:
    """`<folder of the warehouse file>/exports/<YYYY-MM-DD>`."""
    stamp = date.isoformat() if isinstance(date, dt.date) else str(date)
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", stamp):
        raise ValueError(f"export date must look like YYYY-MM-DD, got {stamp!r}")
    return Path(warehouse_path).parent / "exports" / stamp


@dataclass
class ExportResult:
    directory: Path
    tables: list[TableFile]
    missing_tables: list[str]
    undocumented: dict[str, list[str]]
    workbook: Path
    dictionary: Path
    manifest_path: Path
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def missing_required(self) -> list[str]:
        return [t for t in self.missing_tables if t in REQUIRED_TABLES]


def write_exports(
    tables: Mapping[str, pl.DataFrame],
    directory: str | Path,
    *,
    run_id: str | None = None,
    benchmarks: pl.DataFrame | None = None,
    labelers: Sequence[dict[str, Any]] = (),
    labeler_model: str | None = None,
    sources: Sequence[dict[str, Any]] | None = None,
    version: str | None = None,
    expected: Sequence[str] = EXPORT_TABLES,
    created_at: dt.datetime | None = None,
    extra: Mapping[str, Any] | None = None,
) -> ExportResult:
    """Write the export folder's tables, workbook, data dictionary and manifest.

    tables: warehouse table name -> frame (only tables that exist; the others of `expected` are listed as
    missing). benchmarks: the `benchmarks` table, for names, versions and content hashes (also exported as a
    table when given in `tables`). labelers: `labeler_entries(...)`. sources: `pipelines.sources.source_checksums()`
    (the callers look them up on disk; None records none). The manifest also lists every other file already in the folder (figures, map, summary).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with export_lock(directory, run_id):  # one writer per export folder: a second run waits its turn
        return _write_exports_locked(tables, directory, run_id=run_id, benchmarks=benchmarks, labelers=labelers,
                                     labeler_model=labeler_model, sources=sources, version=version,
                                     expected=expected, created_at=created_at, extra=extra)


LOCK_NAME = ".export.lock"
LOCK_WAIT_S = 900.0


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


def _swap_in(staging: Path, target: Path) -> None:
    """Put the freshly written folder `staging` where `target` is (rename; the old one is removed after)."""
    old = target.with_name(f".{target.name}.old-{os.getpid()}-{secrets.token_hex(3)}")
    if target.exists():
        os.replace(target, old)
    os.replace(staging, target)
    shutil.rmtree(old, ignore_errors=True)


def _write_tables(prepared: Mapping[str, pl.DataFrame], directory: Path) -> list[TableFile]:
    """Every table's Parquet and CSV into a private folder, then swapped in whole as `tables/`: no stale table
    of an earlier export lingers, and no file of another writer is ever deleted."""
    table_dir = directory / TABLES_DIR
    for leftover in directory.glob(f".{TABLES_DIR}.*"):  # of a writer killed mid-export (we hold the lock)
        shutil.rmtree(leftover, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{TABLES_DIR}.", suffix=".tmp", dir=directory))
    try:
        staged = [write_table_files(t, frame, staging) for t, frame in prepared.items()]
        _swap_in(staging, table_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    os.chmod(table_dir, 0o755)  # mkdtemp makes 0700; exports are meant to be read by others
    return [dataclasses.replace(f, parquet=table_dir / f.parquet.name, csv=table_dir / f.csv.name) for f in staged]


def _write_exports_locked(
    tables: Mapping[str, pl.DataFrame],
    directory: Path,
    *,
    run_id: str | None,
    benchmarks: pl.DataFrame | None,
    labelers: Sequence[dict[str, Any]],
    labeler_model: str | None,
    sources: Sequence[dict[str, Any]] | None,
    version: str | None,
    expected: Sequence[str],
    created_at: dt.datetime | None,
    extra: Mapping[str, Any] | None,
) -> ExportResult:
    ordered = [t for t in expected if t in tables] + sorted(t for t in tables if t not in expected)
    prepared = {t: prepare_table(t, tables[t]) for t in ordered}
    missing = [t for t in expected if t not in tables]
    files = _write_tables(prepared, directory)
    dictionary = dictionary_frame(prepared)
    created_at = created_at or dt.datetime.now(dt.UTC)
    version = version or code_version()
    readme = [
        ("export folder", directory.name),
        ("run id", run_id or ""),
        ("code version", version),
        (
            "labeler",
            ", ".join(f"{e.get('labeler')} {e.get('labeler_version', '')}".strip() for e in labelers),
        ),
        ("tables", ", ".join(prepared)),
        ("not exported (missing)", ", ".join(missing) or "none"),
        ("files", f"{TABLES_DIR}/<table>.parquet and .csv; {DICTIONARY_NAME}; {MANIFEST_NAME}"),
    ]
    sheets = write_workbook(directory / WORKBOOK_NAME, prepared, dictionary, readme)
    files = [dataclasses.replace(f, sheet=sheets.get(f.table)) for f in files]
    dictionary_path = write_text(
        directory / DICTIONARY_NAME, data_dictionary_markdown(prepared, sheets, missing)
    )
    manifest = {
        "format": MANIFEST_FORMAT,
        "export_date": directory.name,
        "created_at": created_at.isoformat(),
        "run_id": run_id,
        "code_version": version,
        "labeler": {"model": labeler_model, "labelers": list(labelers)},
        "benchmarks": benchmark_entries(benchmarks),
        "sources": list(sources or ()),
        "tables": [f.manifest_entry(directory) for f in files],
        "missing_tables": missing,
        "undocumented_columns": undocumented_columns({t: f.columns for t, f in prepared.items()}),
        **dict(extra or {}),
    }
    manifest["files"] = file_entries(directory)
    manifest_path = write_text(
        directory / MANIFEST_NAME, json.dumps(manifest, indent=2, default=str, ensure_ascii=False) + "\n"
    )
    return ExportResult(
        directory,
        files,
        missing,
        manifest["undocumented_columns"],
        directory / WORKBOOK_NAME,
        dictionary_path,
        manifest_path,
        manifest,
    )


