"""Immutable, versioned releases under `<warehouse dir>/exports/`:

    exports/.staging/<run>/                   where one run's figures, map, summary and tables are written
    exports/<YYYY-MM-DD>T<HHMMSS>Z-<hash8>/   a release: the staging folder renamed whole, never written again
    exports/latest -> <newest release>        a symlink (where the file system allows one) ...
    exports/latest.txt                        ... and the newest release's name as text (zip and Windows users)
    exports/headline_history.csv              one row per release and headline quantity

A run publishes only when its published figures (`release.csv`) differ from the latest release's; otherwise
its staging folder is dropped and the latest release stands. Publishing happens under the exports folder's
lock, so two runs never race for `latest` or compute "what changed" against the same release.

The content comes from `models.exports.release`; no dagster here.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import io
import os
import shutil
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from models import exports as ex
from models.exports import release as rel
from resources import export_writer as ew
from resources.export_files import atomic_write, export_lock, read_manifest, write_bytes, write_text
from resources.export_stream import StreamedTable

STAGING_DIR = ".staging"
UNRELEASED_DIR = ".unreleased"  # release folders whose promotion a killed run never finished
STALE_STAGING_S = 24 * 3600.0


def exports_root(warehouse_path: str | Path) -> Path:
    """`<folder of the warehouse file>/exports`."""
    return Path(warehouse_path).parent / "exports"


def staging_path(root: Path, run_key: str) -> Path:
    """Where the run's private folder is (not created: a check looks there for this run's files)."""
    return root / STAGING_DIR / run_key


def staging_folder(root: Path, run_key: str) -> Path:
    """The run's private folder (created): every export step of one run writes here."""
    folder = staging_path(root, run_key)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def release_lock(root: Path, run_id: str | None) -> Iterator[None]:
    """The exports folder's lock: one run at a time decides and publishes a release."""
    root.mkdir(parents=True, exist_ok=True)
    with export_lock(root, run_id):
        yield


def list_releases(root: Path) -> list[Path]:
    """Every complete release (a manifest inside), oldest first (names sort by time)."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir()
                  if p.is_dir() and not p.is_symlink() and rel.is_release_name(p.name) and (p / "manifest.json").is_file())


def latest_release(root: Path) -> Path | None:
    """The release `latest.txt` names (when it is a release here), else the newest by name."""
    text = root / rel.LATEST_TEXT
    if text.is_file():
        named = root / text.read_text(encoding="utf-8").strip()
        if rel.is_release_name(named.name) and (named / "manifest.json").is_file():
            return named
    releases = list_releases(root)
    return releases[-1] if releases else None


def read_release_frame(folder: Path) -> pl.DataFrame | None:
    path = folder / rel.RELEASE_PARQUET
    return pl.read_parquet(path) if path.is_file() else None


def stands(folder: Path | None, published: str, version: str, tables: Mapping[str, str]) -> bool:
    """Whether the release in `folder` has these figures (content hash), these tables (`table_hashes`) and was
    made by this code version: then nothing is written. Other code may change what no figure holds (the
    summary's wording, the checks' tables), and a release's files must be what its manifest's code version makes;
    other inputs may change a table no figure holds (a probe, 2026-12-07: labeler_validation with a new gold label
    file, while the release kept the old table and the run said "this run's figures are the same")."""
    if folder is None:
        return False
    manifest = read_manifest(folder) or {}
    release = manifest.get("release") or {}
    return (release.get("published_sha256") == published
            and (release.get("inputs") or {}).get("code_version") == version
            and release.get("tables_sha256") == dict(tables))


def table_hashes(tables: Mapping[str, Any]) -> dict[str, str]:
    """Per exported table, a SHA-256 of its content, which no row order changes: of the uncompressed Arrow IPC bytes
    of the frame as exported (`models.exports.prepare_table`) with its rows sorted, or a streamed table's own
    (`StreamedTable.content_sha256`)."""
    out = {}
    for name in sorted(tables):
        table = tables[name]
        if isinstance(table, StreamedTable):
            out[name] = table.content_sha256()
        else:  # as exported, every column sorted: the warehouse's row order may differ between runs of the same
            # inputs, and the export's canonical order leaves ties in it
            prepared = ex.prepare_table(name, table)
            sink = io.BytesIO()
            # the oldest Arrow layout: a string view's buffers keep how its column was built, not only its values
            prepared.sort(prepared.columns, nulls_last=True).rechunk().write_ipc(
                sink, compression="uncompressed", compat_level=pl.CompatLevel.oldest())
            out[name] = hashlib.sha256(sink.getvalue()).hexdigest()
    return out


def tables_changed(previous: Path | None, tables: Mapping[str, str]) -> list[str]:
    """The tables whose content differs from the release in `previous` (added or left out included); none for
    a release whose manifest predates the tables' hashes."""
    before = ((read_manifest(previous) or {}).get("release") or {}).get("tables_sha256") if previous else None
    if not isinstance(before, dict):
        return []
    return sorted(n for n in set(before) | set(tables) if before.get(n) != tables.get(n))


def write_release_files(frame: pl.DataFrame, folder: Path) -> tuple[Path, Path]:
    """release.csv (the bytes the content hash is taken of) and release.parquet."""
    csv = write_bytes(folder / rel.RELEASE_CSV, rel.release_csv_bytes(frame))
    parquet = atomic_write(folder / rel.RELEASE_PARQUET,
                           lambda p: frame.write_parquet(p, compression="zstd", statistics=True))
    return csv, parquet


def _read_only(folder: Path) -> None:
    """Files of a release lose their write bits: an accidental write fails instead of changing a release."""
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            mode = stat.S_IMODE(path.stat().st_mode)
            os.chmod(path, mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def promote(staging: Path, root: Path, name: str) -> Path:
    """Rename the staging folder into the release `name` (never over an existing one), make its files
    read-only, and point `latest` at it. Call under `release_lock`."""
    target = root / name
    if target.exists():
        raise FileExistsError(f"release {target} exists already: releases are never rewritten")
    for leftover in staging.glob(".*"):  # the staging folder's lock file and temporaries
        if leftover.is_file():
            leftover.unlink(missing_ok=True)
    os.rename(staging, target)
    _read_only(target)
    update_latest(root, name)
    return target


def update_latest(root: Path, name: str) -> None:
    """`latest.txt` (always) and the `latest` symlink (where symlinks work), each replaced atomically."""
    write_text(root / rel.LATEST_TEXT, name + "\n")
    link = root / rel.LATEST_NAME
    temporary = root / f".{rel.LATEST_NAME}.{os.getpid()}"
    try:
        temporary.unlink(missing_ok=True)
        os.symlink(name, temporary, target_is_directory=True)
        os.replace(temporary, link)
    except OSError:  # no symlinks here (e.g. Windows without the privilege): latest.txt says it
        temporary.unlink(missing_ok=True)


def discard_staging(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)


def remove_stale_staging(root: Path, keep: Path | None = None, max_age_s: float = STALE_STAGING_S) -> list[Path]:
    """Staging folders of runs that died more than `max_age_s` ago (a live run's folder is never that old)."""
    removed = []
    now = time.time()
    for folder in (root / STAGING_DIR).glob("*") if (root / STAGING_DIR).is_dir() else []:
        if folder != keep and folder.is_dir() and now - folder.stat().st_mtime > max_age_s:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def set_aside_unreleased(root: Path) -> tuple[str, ...]:
    """Move out of the releases each folder a run renamed into place and was killed before pointing `latest` at
    (newer than the release latest.txt names, and made on top of it): never released, yet it stayed beside the
    next run's copy, half read-only, listed in headline_history (a probe, 2026-12-07). Moved, not deleted, to
    UNRELEASED_DIR. Call under `release_lock`."""
    text = root / rel.LATEST_TEXT
    named = text.read_text(encoding="utf-8").strip() if text.is_file() else ""
    if not rel.is_release_name(named) or not (root / named / "manifest.json").is_file():
        return ()
    moved = []
    for folder in list_releases(root):
        block = (read_manifest(folder) or {}).get("release") or {}
        if folder.name > named and block.get("previous_release") == named:
            (root / UNRELEASED_DIR).mkdir(exist_ok=True)
            os.rename(folder, root / UNRELEASED_DIR / folder.name)
            moved.append(folder.name)
    return tuple(moved)


def repair_latest(root: Path, release: Path) -> None:
    """Point latest.txt and the `latest` link at `release` when either names another or is gone (a probe: the
    link deleted by hand stayed gone while the release stood, and the run said "also .../latest")."""
    link = root / rel.LATEST_NAME
    try:
        pointed = os.readlink(link)
    except OSError:
        pointed = None
    text = root / rel.LATEST_TEXT
    named = text.read_text(encoding="utf-8").strip() if text.is_file() else None
    if pointed != release.name or named != release.name:
        update_latest(root, release.name)


def released_at(folder: Path) -> str:
    manifest = read_manifest(folder) or {}
    return str(manifest.get("created_at") or "")


def history(root: Path) -> pl.DataFrame:
    """headline_history over every release in `root`."""
    releases = []
    for folder in list_releases(root):
        frame = read_release_frame(folder)
        if frame is not None:
            releases.append((folder.name, released_at(folder), frame))
    return rel.headline_history(releases)


def write_history(root: Path) -> tuple[pl.DataFrame, Path]:
    """headline_history.csv beside the releases (rewritten from them: it is an index, not a release)."""
    frame = history(root)
    return frame, atomic_write(root / rel.HISTORY_NAME, frame.write_csv)


def release_date(name: str) -> str:
    """'2026-12-03' of '2026-12-03T071500Z-1a2b3c4d'."""
    return name.split("T", 1)[0]


def now_utc() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


# --- publishing ------------------------------------------------------------------------------------------------


@dataclass
class Published:
    folder: Path  # the latest release after this run (new, or the one that stands)
    new: bool  # False: the published figures equal the latest release's, nothing was written
    previous: Path | None  # the release before this one (None: the first)
    changes: pl.DataFrame  # figures that differ from `previous` (empty when not new)
    release: pl.DataFrame  # this run's release frame
    result: ew.ExportResult | None  # the export written (paths inside the staging folder, now renamed)
    history: pl.DataFrame  # headline_history after this run
    set_aside: tuple[str, ...] = ()  # release folders a killed run left unreleased, moved to UNRELEASED_DIR


def answer_rows(tables: Mapping[str, pl.DataFrame], rl_date: str) -> list[tuple[str, str]]:
    """The workbook README's first rows: the one-line answer of index `all` and its supporting lines."""
    from models import report

    counts = tables.get("benchmark_counts")
    n, excluded = report.index_benchmarks(counts, "all") if counts is not None else (None, [])
    answer = report.headline_answer(tables.get("headline_estimates"), n_benchmarks=n, released=rl_date,
                                    excluded=excluded)
    if answer is None:
        return []
    return [("answer", answer.sentence), *[("", line) for line in answer.supporting]]


def input_versions(benchmarks: pl.DataFrame | None, sources: Sequence[Mapping[str, Any]] | None,
                   labelers: Sequence[Mapping[str, Any]], version: str) -> dict[str, Any]:
    """What went into the figures: benchmark content hashes, source checksums, labelers, code version."""
    bench = [] if benchmarks is None or "content_hash" not in benchmarks.columns else sorted(
        (str(r["benchmark"]), str(r["content_hash"])) for r in benchmarks.iter_rows(named=True))
    return {
        "benchmarks": bench,
        "sources": sorted((str(s.get("source_file")), str(s.get("sha256"))) for s in sources or ()),
        "labelers": [{k: str(v) for k, v in e.items()} for e in labelers],
        "code_version": version,
    }


@dataclass(frozen=True)
class ReleasePlan:
    """What a release of these tables would be, before the lock: its figures, their hash, its name."""

    frame: pl.DataFrame
    published: str  # content hash of the release file
    tables: dict[str, str]  # per exported table, its content hash (table_hashes)
    version: str
    inputs: dict[str, Any]
    inputs_sha: str
    name: str
    readme_first: list[tuple[str, str]]

    def is_new(self, root: Path) -> bool:
        """Whether the figures or the code version differ from the latest release's (a look: the decision is
        taken under the lock)."""
        return not stands(latest_release(root), self.published, self.version, self.tables)


def release_plan(tables: Mapping[str, pl.DataFrame], *, created_at: dt.datetime, benchmarks: pl.DataFrame | None,
                 labelers: Sequence[dict[str, Any]], sources: Sequence[dict[str, Any]] | None,
                 version: str | None = None) -> ReleasePlan:
    frame = rel.release_frame(tables)
    version = version or ew.code_version()
    inputs = input_versions(benchmarks, sources, labelers, version)
    inputs_sha = rel.input_hash(inputs)
    name = rel.release_name(created_at, inputs_sha)
    return ReleasePlan(frame, rel.content_hash(frame), table_hashes(tables), version, inputs, inputs_sha, name,
                       answer_rows(tables, rl_date=release_date(name)))


def start_release_workbook(tables: Mapping[str, pl.DataFrame], staging: Path, root: Path, *,
                           created_at: dt.datetime, run_id: str | None, benchmarks: pl.DataFrame | None,
                           labelers: Sequence[dict[str, Any]], sources: Sequence[dict[str, Any]] | None,
                           version: str | None = None, **_: Any) -> bool:
    """Start, for the run's publish_export (same arguments), the workbook of the release these tables would make,
    when its figures are new (ew.start_workbook_ahead: publish_export takes it if its tables are still these);
    whether it was started. Takes publish_export's keyword arguments."""
    plan = release_plan(tables, created_at=created_at, benchmarks=benchmarks, labelers=labelers, sources=sources,
                        version=version)
    if not plan.is_new(root):
        return False
    ew.start_workbook_ahead(tables, staging, run_id=run_id, labelers=labelers, version=plan.version, name=plan.name,
                            readme_first=plan.readme_first)
    return True


def publish_export(
    tables: Mapping[str, pl.DataFrame],
    staging: Path,
    root: Path,
    *,
    created_at: dt.datetime,
    run_id: str | None,
    benchmarks: pl.DataFrame | None,
    labelers: Sequence[dict[str, Any]],
    labeler_model: str | None,
    sources: Sequence[dict[str, Any]] | None,
    extra: Mapping[str, Any] | None = None,
    excluded: Sequence[tuple[str, str, str]] = (),
    version: str | None = None,
) -> Published:
    """Publish the staged export as a new release when its figures or the code version changed, else drop it.

    Under the exports folder's lock: compare the release file's content hash and the code version with the
    latest release's; if both are equal, remove `staging` and return the latest; else write release.csv/.parquet, data_documentation.md
    (with what changed), the tables, workbook, dictionary and manifest into `staging`, rename it to
    `<date>T<time>Z-<input hash>` and point `latest` at it; then rewrite headline_history.csv."""
    plan = release_plan(tables, created_at=created_at, benchmarks=benchmarks, labelers=labelers, sources=sources,
                        version=version)
    # a look before the lock: when the figures changed, a worker writes the workbook (the longest part of the
    # export) while the release files are written, the one an earlier step started when its content is this
    # export's (start_release_workbook); the decision under the lock stands
    ahead = ew.take_workbook_ahead(staging)
    started = None
    if plan.is_new(root):
        started = ew.start_workbook(tables, staging, run_id=run_id, labelers=labelers, version=plan.version,
                                    name=plan.name, readme_first=plan.readme_first, ahead=ahead)
    else:
        ew.drop_workbook(ahead)
    try:
        return _publish_locked(tables, staging, root, frame=plan.frame, published=plan.published,
                               table_sha=plan.tables,
                               inputs=plan.inputs, inputs_sha=plan.inputs_sha, name=plan.name,
                               readme_first=plan.readme_first, started=started, run_id=run_id, benchmarks=benchmarks,
                               labelers=labelers, labeler_model=labeler_model, sources=sources, extra=extra,
                               excluded=excluded, version=plan.version, created_at=created_at)
    except BaseException:
        ew.drop_workbook(started)
        raise


def _publish_locked(tables: Mapping[str, pl.DataFrame], staging: Path, root: Path, *, frame: pl.DataFrame,
                    published: str, table_sha: dict[str, str], inputs: dict[str, Any], inputs_sha: str, name: str,
                    readme_first: list[tuple[str, str]], started: ew.StartedWorkbook | None, run_id: str | None,
                    benchmarks: pl.DataFrame | None, labelers: Sequence[dict[str, Any]], labeler_model: str | None,
                    sources: Sequence[dict[str, Any]] | None, extra: Mapping[str, Any] | None,
                    excluded: Sequence[tuple[str, str, str]], version: str, created_at: dt.datetime) -> Published:
    with release_lock(root, run_id):
        remove_stale_staging(root, keep=staging)
        set_aside = set_aside_unreleased(root)
        previous = latest_release(root)
        if stands(previous, published, version, table_sha):
            ew.drop_workbook(started)  # before its folder goes
            discard_staging(staging)
            repair_latest(root, previous)
            frame_history = write_history(root)[0] if set_aside else history(root)
            return Published(previous, False, previous, rel.release_changes(frame, frame), frame, None,
                             frame_history, set_aside)
        previous_frame = read_release_frame(previous) if previous is not None else None
        changes = rel.release_changes(frame, previous_frame)
        changed_tables = tables_changed(previous, table_sha)
        write_release_files(frame, staging)
        write_text(staging / rel.DOCUMENTATION_NAME, rel.data_documentation(
            frame, release=name, previous_release=previous.name if previous else None, changes=changes,
            excluded=excluded, tables_changed=changed_tables))
        block = {
            "name": name,
            "published_sha256": published,
            "tables_sha256": table_sha,
            "tables_changed": changed_tables,
            "input_sha256": inputs_sha,
            "inputs": inputs,
            "previous_release": previous.name if previous else None,
            "changes": dict(changes.group_by("change").agg(pl.len()).iter_rows()) if changes.height else {},
        }
        result = ew.write_exports(tables, staging, run_id=run_id, benchmarks=benchmarks, labelers=labelers,
                                  labeler_model=labeler_model, sources=sources, version=version,
                                  created_at=created_at, extra={**dict(extra or {}), "release": block}, name=name,
                                  readme_first=readme_first, started=started)
        folder = promote(staging, root, name)
        frame_history, _ = write_history(root)
    return Published(folder, True, previous, changes, frame, result, frame_history, set_aside)
