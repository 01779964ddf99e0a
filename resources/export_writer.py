"""Writing one export folder: tables swapped in whole, workbook, data dictionary and manifest under the
folder's lock; the report's figures; verifying a folder against its manifest; the code version it records.

The content is `models.exports` (prepared frames, dictionary, README rows, manifest dict) and
`models.figures` (figure bytes); the file mechanics are `resources/export_files.py`. The assets in
`assets/exports.py` call `write_exports`, `save_figure` and `verify_export`. No dagster here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import importlib.metadata
import json
import re
import subprocess
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from models import exports as ex
from models import figures as fg
from resources.export_files import (
    LOCK_NAME,
    LOCK_WAIT_S,
    TableFile,
    export_lock,
    file_entries,
    read_export_table,
    read_manifest,
    sha256_file,
    write_bytes,
    write_tables,
    write_text,
    write_workbook_sheets,
)
from resources.export_stream import StreamedTable
from resources.settings import PROJECT_ROOT
from resources.worker_pool import shared_pool

if TYPE_CHECKING:  # matplotlib only where a figure is drawn: not in every Definitions build (issue 29)
    from matplotlib.figure import Figure

__all__ = [
    "LOCK_NAME", "LOCK_WAIT_S", "ExportResult", "code_version", "export_directory", "export_lock", "make_export_directory",
    "read_export_table", "read_manifest", "save_figure", "save_figures", "verify_export", "write_exports",
]


def export_directory(warehouse_path: str | Path, date: dt.date | str) -> Path:
    """`<folder of the warehouse file>/exports/<YYYY-MM-DD>`."""
    stamp = date.isoformat() if isinstance(date, dt.date) else str(date)
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", stamp):
        raise ValueError(f"export date must look like YYYY-MM-DD, got {stamp!r}")
    return Path(warehouse_path).parent / "exports" / stamp


def make_export_directory(warehouse_path: str | Path, date: dt.date | str) -> Path:
    """`export_directory`, created if it is not there yet."""
    folder = export_directory(warehouse_path, date)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


CODE_FOLDERS = ("assets", "models", "pipelines", "resources")  # what computes a release (not tests, bench, docs)
# the libraries whose versions can move a published number: recorded in the manifest (nothing is pinned)
RECORDED_PACKAGES = ("dagster", "duckdb", "numpy", "openai", "polars", "pyarrow", "scikit-learn", "scipy",
                     "statsmodels", "matplotlib", "openpyxl")


def runtime_versions() -> dict[str, Any]:
    """Python's and RECORDED_PACKAGES' versions (None when a package is absent), for the manifest: with the
    same inputs and code, a library upgrade that moved a figure would otherwise publish a change nothing names."""
    import platform

    packages: dict[str, str | None] = {}
    for package in RECORDED_PACKAGES:
        try:
            packages[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            packages[package] = None
    return {"python": platform.python_version(), "packages": packages}


def code_version(root: Path = PROJECT_ROOT) -> str:
    """`git describe --always --dirty --tags` of the checkout, else the installed package version. A dirty
    checkout also gets the first 8 hex of the SHA-256 of its diff against HEAD, and one with untracked Python
    files in the code's folders `-untracked+` that of their paths and bytes (git's `--dirty` does not see them):
    two releases made from different uncommitted code must not name the same version."""
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        if described.endswith("-dirty"):
            diff = subprocess.run(["git", "diff", "HEAD", "--no-ext-diff", "--binary"], cwd=root,
                                  capture_output=True, timeout=30, check=True).stdout
            described += "+" + hashlib.sha256(diff).hexdigest()[:8]
        untracked = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "--", *CODE_FOLDERS],
                                   cwd=root, capture_output=True, text=True, timeout=10, check=True).stdout.splitlines()
        untracked = sorted(p for p in untracked if p.endswith(".py"))
        if untracked:
            digest = hashlib.sha256()
            for path in untracked:
                digest.update(path.encode() + b"\0" + (root / path).read_bytes() + b"\0")
            described += "-untracked+" + digest.hexdigest()[:8]
        if described:
            return f"git:{described}"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return f"package:benchmap=={importlib.metadata.version('benchmap')}"
    except importlib.metadata.PackageNotFoundError:
        pyproject = root / "pyproject.toml"
        found = (
            re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), re.M)
            if pyproject.exists()
            else None
        )
        return f"pyproject:{found.group(1)}" if found else "unknown"


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
    workbook_ahead: bool = False  # the workbook an earlier step of the run started (start_workbook_ahead)

    @property
    def missing_required(self) -> list[str]:
        return [t for t in self.missing_tables if t in ex.REQUIRED_TABLES]


def write_exports(
    tables: Mapping[str, pl.DataFrame | StreamedTable],
    directory: str | Path,
    *,
    run_id: str | None = None,
    benchmarks: pl.DataFrame | None = None,
    labelers: Sequence[dict[str, Any]] = (),
    labeler_model: str | None = None,
    sources: Sequence[dict[str, Any]] | None = None,
    version: str | None = None,
    expected: Sequence[str] = ex.REPORT_TABLES,  # the others (the estimates) are not listed as missing
    created_at: dt.datetime | None = None,
    extra: Mapping[str, Any] | None = None,
    name: str | None = None,
    readme_first: Sequence[tuple[str, str]] = (),
    started: StartedWorkbook | None = None,
) -> ExportResult:
    """Write the export folder's tables, workbook, data dictionary and manifest.

    tables: warehouse table name -> frame (only tables that exist; the others of `expected` are listed as
    missing; a `resources.export_stream.StreamedTable` is written from the warehouse in slices). benchmarks: the `benchmarks` table, for names, versions and content hashes (also exported as a
    table when given in `tables`). labelers: `models.exports.labeler_entries(...)`. sources:
    `resources.sources.source_checksums()` (None records none). version: default `code_version()`. name: what
    the manifest and README call the export (default: the folder's name; a staged release passes the name it
    will be published under). The manifest also lists every other file already in the folder (figures, map,
    summary, release file). `started`: the workbook start_workbook started with these arguments (else dropped).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with export_lock(directory, run_id):  # one writer per export folder: a second run waits its turn
        return _write_exports_locked(tables, directory, run_id=run_id, benchmarks=benchmarks, labelers=labelers,
                                     labeler_model=labeler_model, sources=sources, version=version,
                                     expected=expected, created_at=created_at, extra=extra,
                                     name=name or directory.name, readme_first=readme_first, started=started)


@dataclass
class StartedWorkbook:
    """The workbook started in a worker before write_exports (`start_workbook`), with what it was made from."""

    key: tuple
    prepared: dict[str, Any]
    missing: list[str]
    dictionary: pl.DataFrame
    readme: list[tuple[str, str]]
    future: Future
    source: tuple  # (the tables, the other arguments): an export of equal ones has this workbook
    ahead: bool = False  # started by an earlier step of the run (`start_workbook_ahead`) and taken

    def made_from(self, source: tuple) -> bool:
        (tables, args), (other_tables, other_args) = self.source, source
        return args == other_args and list(tables) == list(other_tables) and all(
            _same_table(tables[t], other_tables[t]) for t in tables)


def _same_table(a: pl.DataFrame | StreamedTable, b: pl.DataFrame | StreamedTable) -> bool:
    # frames by value (nulls and NaNs equal), a streamed table by its shape: it has no sheet (STREAMED_TABLES are
    # file-only, tests/test_release.py), so its shape is all the workbook shows of it
    if isinstance(a, pl.DataFrame) and isinstance(b, pl.DataFrame):
        return a.schema == b.schema and a.equals(b)
    return a == b


def _workbook_key(tables: Mapping[str, Any], directory: Path, run_id: str | None, labelers: Sequence[dict[str, Any]],
                  version: str, expected: Sequence[str], name: str, readme_first: Sequence[tuple[str, str]]) -> tuple:
    return (id(tables), str(directory), run_id, repr(list(labelers)), version, tuple(expected), name,
            tuple(readme_first))


def _workbook_inputs(tables: Mapping[str, pl.DataFrame | StreamedTable], *, run_id: str | None,
                     labelers: Sequence[dict[str, Any]], version: str, expected: Sequence[str], name: str,
                     readme_first: Sequence[tuple[str, str]]) -> tuple[dict[str, Any], list[str], pl.DataFrame,
                                                                       list[tuple[str, str]]]:
    """(prepared tables, missing tables, dictionary frame, README rows) of an export."""
    ordered = [t for t in expected if t in tables] + sorted(t for t in tables if t not in expected)
    # a StreamedTable is written from the warehouse in slices: only its shape reaches the dictionary and README
    prepared = {t: f if isinstance(f, StreamedTable) else ex.prepare_table(t, f)
                for t in ordered for f in [tables[t]]}
    missing = [t for t in expected if t not in tables]
    dictionary = ex.dictionary_frame(prepared)
    readme = [*readme_first, *ex.readme_rows(name, run_id=run_id, version=version, labelers=labelers,
                                             tables=prepared, missing=missing)]
    return prepared, missing, dictionary, readme


def _submit_workbook(directory: Path, prepared: dict[str, Any], dictionary: pl.DataFrame,
                     readme: list[tuple[str, str]], background: bool = False) -> Future:
    # the workbook (xlsxwriter, cell by cell: most of the export's time) in a worker process while this one
    # writes the Parquet and CSV files (resources/worker_pool.py; here when there is no second CPU)
    return shared_pool().submit(write_workbook_sheets, directory / ex.WORKBOOK_NAME, ex.sheet_tables(prepared),
                                dictionary, ex.readme_frame(readme, prepared), name="the workbook",
                                background=background)


def start_workbook(tables: Mapping[str, pl.DataFrame | StreamedTable], directory: str | Path, *,
                   run_id: str | None, labelers: Sequence[dict[str, Any]], version: str, name: str,
                   readme_first: Sequence[tuple[str, str]] = (),
                   expected: Sequence[str] = ex.REPORT_TABLES, ahead: StartedWorkbook | None = None,
                   background: bool = False) -> StartedWorkbook:
    """Start the export's workbook now (a worker writes it into `directory`); write_exports with the same
    arguments takes it (`started=`), with other arguments it drops it and writes its own. `ahead`: one started
    earlier (`take_workbook_ahead`), taken when it was made from equal tables and arguments, else dropped."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    key = _workbook_key(tables, directory, run_id, labelers, version, expected, name, readme_first)
    source = (dict(tables), (str(directory), run_id, repr(list(labelers)), version, tuple(expected), name,
                             tuple(readme_first)))
    if ahead is not None and not ahead.future.cancelled() and ahead.made_from(source):
        return dataclasses.replace(ahead, key=key, ahead=True)  # its prepared tables are these tables' own
    drop_workbook(ahead)  # of other tables or arguments: never published
    prepared, missing, dictionary, readme = _workbook_inputs(tables, run_id=run_id, labelers=labelers,
                                                             version=version, expected=expected, name=name,
                                                             readme_first=readme_first)
    return StartedWorkbook(key, prepared, missing, dictionary, readme,
                           _submit_workbook(directory, prepared, dictionary, readme, background), source)


# workbooks a step started for the run's exports step (`start_workbook_ahead`), by export folder: this process only
_AHEAD: dict[str, StartedWorkbook] = {}
_AHEAD_LOCK = threading.Lock()


def start_workbook_ahead(tables: Mapping[str, pl.DataFrame | StreamedTable], directory: str | Path, **args: Any
                         ) -> None:
    """`start_workbook` for a later step (the exports step, `take_workbook_ahead`): queued behind the worker's
    other computations started ahead (the report figures); one per folder (an earlier one is dropped)."""
    started = start_workbook(tables, directory, **args, background=True)
    with _AHEAD_LOCK:
        previous = _AHEAD.pop(str(Path(directory)), None)
        _AHEAD[str(Path(directory))] = started
    drop_workbook(previous)


def has_workbook_ahead(directory: str | Path) -> bool:
    with _AHEAD_LOCK:
        return str(Path(directory)) in _AHEAD


def take_workbook_ahead(directory: str | Path) -> StartedWorkbook | None:
    """The workbook started ahead for `directory`, once (for start_workbook's `ahead`)."""
    with _AHEAD_LOCK:
        return _AHEAD.pop(str(Path(directory)), None)


def drop_workbook(started: StartedWorkbook | None) -> None:
    """A started workbook nobody takes: not started yet, dropped; being written, waited for (its folder may be
    removed next), its error ignored."""
    if started is None:
        return
    pool = shared_pool()
    pool.discard([started.future])
    if not started.future.cancelled():
        with contextlib.suppress(Exception):
            started.future.result()


def _write_exports_locked(
    tables: Mapping[str, pl.DataFrame | StreamedTable],
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
    name: str,
    readme_first: Sequence[tuple[str, str]] = (),
    started: StartedWorkbook | None = None,
) -> ExportResult:
    version = version or code_version()
    pool = shared_pool()
    key = _workbook_key(tables, directory, run_id, labelers, version, expected, name, readme_first)
    if started is not None and started.key == key and not started.future.cancelled():
        prepared, missing, dictionary, readme = started.prepared, started.missing, started.dictionary, started.readme
        written = started.future
    else:
        drop_workbook(started)  # of other arguments: never published
        prepared, missing, dictionary, readme = _workbook_inputs(tables, run_id=run_id, labelers=labelers,
                                                                 version=version, expected=expected, name=name,
                                                                 readme_first=readme_first)
        written = _submit_workbook(directory, prepared, dictionary, readme)
    files = write_tables(prepared, directory)
    # while the worker writes the workbook: the data dictionary (its sheet names are a function of the tables,
    # the worker's own are checked below) and the checksums of every file written so far
    names = ex.sheet_names(ex.sheet_tables(prepared), reserved=ex.RESERVED_SHEETS)
    dictionary_path = write_text(
        directory / ex.DICTIONARY_NAME, ex.data_dictionary_markdown(prepared, names, missing)
    )
    known = {e["path"]: e for e in file_entries(directory, exclude=(ex.MANIFEST_NAME, ex.WORKBOOK_NAME))}
    sheets = pool.gather([written])[0]
    if sheets != names:  # not expected: the workbook named its sheets otherwise, the dictionary follows it
        dictionary_path = write_text(
            directory / ex.DICTIONARY_NAME, ex.data_dictionary_markdown(prepared, sheets, missing)
        )
        known.pop(ex.DICTIONARY_NAME, None)
    files = [dataclasses.replace(f, sheet=sheets.get(f.table)) for f in files]
    manifest = ex.build_manifest(
        export_date=name,
        created_at=created_at or dt.datetime.now(dt.UTC),
        run_id=run_id,
        version=version,
        labeler_model=labeler_model,
        labelers=labelers,
        benchmarks=benchmarks,
        sources=sources,
        tables=[f.manifest_entry(directory) for f in files],
        missing=missing,
        columns={t: f.columns for t, f in prepared.items()},
        files=file_entries(directory, known=known),  # everything but the manifest, written next
        # expected_tables: what verify_export holds the tables and missing_tables lists to
        extra={"environment": runtime_versions(), "expected_tables": list(expected), **dict(extra or {})},
    )
    manifest_path = write_text(
        directory / ex.MANIFEST_NAME, json.dumps(manifest, indent=2, default=str, ensure_ascii=False) + "\n"
    )
    return ExportResult(directory, files, missing, manifest["undocumented_columns"], directory / ex.WORKBOOK_NAME,
                        dictionary_path, manifest_path, manifest,
                        workbook_ahead=started is not None and started.ahead and written is started.future)


def verify_export(directory: str | Path) -> list[str]:
    """Problems with an export folder: files whose checksum differs from the manifest, files it does not list,
    tables whose Parquet row counts disagree with it, undocumented columns, missing required tables. Empty when
    sound."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    if manifest is None:
        return ex.manifest_problems(None, {}, {}, folder=str(directory))
    on_disk = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*")
                     if p.is_file() and p.name not in (ex.MANIFEST_NAME, LOCK_NAME))  # the lock: a folder being written
    hashes = {}
    for entry in manifest.get("files", []):
        path = directory / entry["path"]
        hashes[entry["path"]] = sha256_file(path) if path.is_file() else None
    rows = {}
    for entry in manifest.get("tables", []):
        parquet = directory / entry["parquet"]
        rows[entry["parquet"]] = (
            pl.scan_parquet(parquet).select(pl.len()).collect().item() if parquet.is_file() else None
        )
    return ex.manifest_problems(manifest, hashes, rows, folder=str(directory), on_disk=on_disk)


def save_figure(fig: Figure, directory: str | Path, name: str, dpi: int = 150) -> dict[str, Path]:
    """Write `<name>.png` and `<name>.svg` (`models.figures.figure_files`) into `directory`, each atomically;
    returns {'png': path, 'svg': path}."""
    return _write_figure_files(fg.figure_files(fig, dpi=dpi), Path(directory), name)


def save_figures(figures: Mapping[str, Mapping[str, bytes]], directory: str | Path) -> dict[str, dict[str, Path]]:
    """Write rendered figures (`models.figures.render_figure_files`: name -> {'png': .., 'svg': ..})."""
    return {name: _write_figure_files(files, Path(directory), name) for name, files in figures.items()}


def _write_figure_files(files: Mapping[str, bytes], directory: Path, name: str) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    return {kind: write_bytes(directory / f"{name}.{kind}", data) for kind, data in files.items()}
