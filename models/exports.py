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

No dagster here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import importlib.metadata
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import xlsxwriter

from models.data_dictionary import DATA_DICTIONARY, TABLE_DESCRIPTIONS, describe, undocumented_columns
from models.sources import PROJECT_ROOT, SOURCES
from pipelines.sources import candidate_paths, sha256_file

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
    "coverage_gaps",
    "occupation_gaps",
    "major_group_gaps",
    "jobbench_shortlist",
    "benchmarks",
    "benchmark_index_membership",
)
EXPORT_TABLES: tuple[str, ...] = REQUIRED_TABLES + OPTIONAL_TABLES
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
# Tables computed per benchmark index sort by it first, index 'all' first (models/indexes.py).
for _table in ("coverage_headline", "task_coverage", "occupation_coverage", "major_group_coverage",
               "task_analysis_frame", "coverage_regressions", "coverage_adjusted_probabilities",
               "workbank_coverage", "coverage_gaps", "occupation_gaps", "major_group_gaps", "jobbench_shortlist",
               "benchmark_index_membership"):
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


# --- files ----------------------------------------------------------------------------------------


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


# --- data dictionary ------------------------------------------------------------------------------


def dictionary_frame(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """table, column, type, meaning, unit, source, documented -- one row per exported column."""
    rows = []
    for table, frame in tables.items():
        for column, dtype in frame.schema.items():
            entry = describe(table, column)
            meaning, unit, source = entry if entry else ("UNDOCUMENTED", "", "")
            rows.append(
                {
                    "table": table,
                    "column": column,
                    "type": str(dtype),
                    "meaning": meaning,
                    "unit": unit,
                    "source": source,
                    "documented": entry is not None,
                }
            )
    schema = {
        "table": pl.Utf8,
        "column": pl.Utf8,
        "type": pl.Utf8,
        "meaning": pl.Utf8,
        "unit": pl.Utf8,
        "source": pl.Utf8,
        "documented": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema)


def _md_cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def data_dictionary_markdown(
    tables: Mapping[str, pl.DataFrame], sheets: Mapping[str, str] | None = None, missing: Sequence[str] = ()
) -> str:
    """`data_dictionary.md`: per table its description and columns (column, type, meaning, unit, source)."""
    sheets = sheets or {}
    lines = [
        "# benchmap export: data dictionary",
        "",
        "Every column of every exported table, with its meaning, unit and source. Each table is in "
        f"`{TABLES_DIR}/<table>.parquet` and `{TABLES_DIR}/<table>.csv` and on its own sheet of "
        f"`{WORKBOOK_NAME}`. Shares are fractions between 0 and 1; intervals are 95%.",
        "",
        "| table | rows | description |",
        "|---|---|---|",
    ]
    lines += [
        f"| [{t}](#{t}) | {f.height} | {_md_cell(TABLE_DESCRIPTIONS.get(t, ''))} |" for t, f in tables.items()
    ]
    if missing:
        lines += [
            "",
            "Not exported (the warehouse has no such table yet): " + ", ".join(f"`{m}`" for m in missing),
        ]
    for table, frame in tables.items():
        sheet = f"; sheet `{sheets[table]}`" if table in sheets else ""
        lines += [
            "",
            f"## {table}",
            "",
            TABLE_DESCRIPTIONS.get(table, ""),
            "",
            f"{frame.height} rows; files `{TABLES_DIR}/{table}.parquet`, `{TABLES_DIR}/{table}.csv`{sheet}.",
            "",
            "| column | type | meaning | unit | source |",
            "|---|---|---|---|---|",
        ]
        for column, dtype in frame.schema.items():
            entry = describe(table, column)
            meaning, unit, source = entry if entry else ("**UNDOCUMENTED**", "", "")
            lines.append(
                f"| `{column}` | {dtype} | {_md_cell(meaning)} | {_md_cell(unit)} | {_md_cell(source)} |"
            )
    return "\n".join(lines) + "\n"


# --- manifest parts -------------------------------------------------------------------------------


def code_version(root: Path = PROJECT_ROOT) -> str:
    """`git describe --always --dirty --tags` of the checkout, else the installed package version."""
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
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


def source_checksums() -> list[dict[str, Any]]:
    """Every registered source file: version, licence, where it was found (data/raw or the mirror) and its
    SHA-256 -- without downloading anything. Files found nowhere are listed with status 'not present'."""
    entries = []
    for key in sorted(SOURCES):
        spec = SOURCES[key]
        entry: dict[str, Any] = {
            "source_file": key,
            "version": spec.version,
            "licence": spec.licence,
            "url": spec.url,
        }
        for origin, path in candidate_paths(spec):
            if path.is_file():
                entry |= {
                    "status": "present",
                    "origin": origin,
                    "path": str(path),
                    "bytes": path.stat().st_size,
                    "sha256": sha256_file(path),
                }
                break
        else:
            entry |= {"status": "not present", "origin": None, "path": None, "bytes": None, "sha256": None}
        entries.append(entry)
    return entries


BENCHMARK_MANIFEST_COLUMNS = (
    "benchmark",
    "title",
    "version",
    "license",
    "source_url",
    "n_prompts",
    "n_results",
    "n_rejects",
    "content_hash",
)


def benchmark_entries(benchmarks: pl.DataFrame | None) -> list[dict[str, Any]]:
    """The benchmarks table's identity columns (name, version, licence, counts, content hash), by name."""
    if benchmarks is None or benchmarks.is_empty():
        return []
    columns = [c for c in BENCHMARK_MANIFEST_COLUMNS if c in benchmarks.columns]
    return benchmarks.select(columns).sort("benchmark").to_dicts()


def labeler_entries(labels: pl.DataFrame | None) -> list[dict[str, Any]]:
    """Who labeled the prompts: labeler, labeler_version, labels, prompts, benchmarks (from prompt_task_labels
    or an aggregate of it with those columns)."""
    if labels is None or labels.is_empty() or "labeler" not in labels.columns:
        return []
    if {"n_labels", "n_prompts"} <= set(labels.columns):
        return labels.sort(labels.columns).to_dicts()
    keys = ["labeler"] + (["labeler_version"] if "labeler_version" in labels.columns else [])
    return (
        labels.group_by(keys)
        .agg(
            pl.len().alias("n_labels"),
            pl.struct("benchmark", "prompt_id").n_unique().alias("n_prompts"),
            pl.col("benchmark").n_unique().alias("n_benchmarks"),
        )
        .sort(keys)
        .to_dicts()
    )


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


# --- the export -----------------------------------------------------------------------------------


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
    table when given in `tables`). labelers: `labeler_entries(...)`. sources: `source_checksums()` (computed
    when None). The manifest also lists every other file already in the folder (figures, map, summary).
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
    table_dir = directory / TABLES_DIR
    for leftover in directory.glob(f".{TABLES_DIR}.*"):  # of a writer killed mid-export (we hold the lock)
        shutil.rmtree(leftover, ignore_errors=True)
    ordered = [t for t in expected if t in tables] + sorted(t for t in tables if t not in expected)
    prepared = {t: prepare_table(t, tables[t]) for t in ordered}
    missing = [t for t in expected if t not in tables]
    # every table into a private folder, then swapped in whole: no stale table of an earlier export lingers,
    # and no file of another writer is ever deleted
    staging = Path(tempfile.mkdtemp(prefix=f".{TABLES_DIR}.", suffix=".tmp", dir=directory))
    try:
        staged = [write_table_files(t, frame, staging) for t, frame in prepared.items()]
        _swap_in(staging, table_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    os.chmod(table_dir, 0o755)  # mkdtemp makes 0700; exports are meant to be read by others
    files = [dataclasses.replace(f, parquet=table_dir / f.parquet.name, csv=table_dir / f.csv.name) for f in staged]
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
        "sources": list(source_checksums() if sources is None else sources),
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


def read_export_table(directory: str | Path, table: str) -> pl.DataFrame:
    return pl.read_parquet(Path(directory) / TABLES_DIR / f"{table}.parquet")


def verify_export(directory: str | Path) -> list[str]:
    """Problems with an export folder: files whose checksum differs from the manifest, tables whose Parquet
    and CSV row counts disagree with it, undocumented columns, missing required tables. Empty when sound."""
    directory = Path(directory)
    manifest_path = directory / MANIFEST_NAME
    if not manifest_path.is_file():
        return [f"no {MANIFEST_NAME} in {directory}"]
    manifest = json.loads(manifest_path.read_text())
    problems = []
    for entry in manifest.get("files", []):
        path = directory / entry["path"]
        if not path.is_file():
            problems.append(f"{entry['path']} is listed in the manifest but missing")
        elif sha256_file(path) != entry["sha256"]:
            problems.append(f"{entry['path']} changed after the manifest was written")
    for entry in manifest.get("tables", []):
        parquet = directory / entry["parquet"]
        if parquet.is_file():
            rows = pl.scan_parquet(parquet).select(pl.len()).collect().item()
            if rows != entry["rows"]:
                problems.append(f"{entry['table']}: parquet has {rows} rows, manifest says {entry['rows']}")
    for table, columns in manifest.get("undocumented_columns", {}).items():
        problems.append(f"{table}: undocumented columns {columns}")
    missing_required = [t for t in manifest.get("missing_tables", []) if t in REQUIRED_TABLES]
    if missing_required:
        problems.append(f"required tables not exported: {missing_required}")
    return problems


__all__ = [
    "DATA_DICTIONARY",
    "EXPORT_TABLES",
    "HEADLINE_TABLES",
    "OPTIONAL_TABLES",
    "REQUIRED_TABLES",
    "ExportResult",
    "TableFile",
    "benchmark_entries",
    "canonical_order",
    "code_version",
    "data_dictionary_markdown",
    "dictionary_frame",
    "export_directory",
    "file_entries",
    "labeler_entries",
    "prepare_table",
    "read_export_table",
    "sheet_names",
    "source_checksums",
    "verify_export",
    "write_exports",
    "write_text",
    "write_workbook",
]
