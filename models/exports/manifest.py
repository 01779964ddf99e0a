"""The manifest's content from plain values (its parts: benchmarks, labelers; the whole dict), and the
problems of a folder against its manifest given what is on disk. Nothing here reads or writes a file:
`resources/export_writer.py` hashes the files, counts the rows, finds the code version and writes the JSON.
The sources part is `resources.sources.source_checksums()` (it looks on disk for them)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from models.data_dictionary import undocumented_columns
from models.exports.tables import MANIFEST_FORMAT, MANIFEST_NAME, REQUIRED_TABLES

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


def build_manifest(
    *,
    export_date: str,
    created_at: dt.datetime,
    run_id: str | None,
    version: str,
    labeler_model: str | None,
    labelers: Sequence[dict[str, Any]],
    benchmarks: pl.DataFrame | None,
    sources: Sequence[dict[str, Any]] | None,
    tables: Sequence[dict[str, Any]],
    missing: Sequence[str],
    columns: Mapping[str, Sequence[str]],
    files: Sequence[dict[str, Any]],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """manifest.json's content. tables: one entry per exported table (rows, columns, files and checksums,
    sheet); columns: table -> exported columns (for `undocumented_columns`); files: every file of the folder
    (path, bytes, sha256). `extra` keys come after the standard ones and `files` last."""
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "export_date": export_date,
        "created_at": created_at.isoformat(),
        "run_id": run_id,
        "code_version": version,
        "labeler": {"model": labeler_model, "labelers": list(labelers)},
        "benchmarks": benchmark_entries(benchmarks),
        "sources": list(sources or ()),
        "tables": list(tables),
        "missing_tables": list(missing),
        "undocumented_columns": undocumented_columns({t: list(c) for t, c in columns.items()}),
        **dict(extra or {}),
    }
    manifest["files"] = list(files)
    return manifest


def manifest_problems(
    manifest: Mapping[str, Any] | None,
    file_sha256: Mapping[str, str | None],
    parquet_rows: Mapping[str, int | None],
    *,
    folder: str = "the export folder",
    on_disk: Sequence[str] | None = None,
) -> list[str]:
    """Problems of a folder against its manifest (None: there is none): files whose checksum differs
    (`file_sha256`: listed path -> SHA-256 on disk, None when missing), files in the folder it does not list
    (`on_disk`: every file's path but the manifest's; a file slipped in, or a manifest whose list was emptied,
    passed before), tables whose Parquet row count differs (`parquet_rows`: listed Parquet path -> rows, None
    when missing), undocumented columns, missing required tables, and tables the export expected
    (`expected_tables`) that it neither exported nor listed as missing. Empty when sound."""
    if manifest is None:
        return [f"no {MANIFEST_NAME} in {folder}"]
    problems = []
    listed = {entry["path"] for entry in manifest.get("files", [])}
    unlisted = [path for path in on_disk or () if path not in listed]
    if unlisted:
        problems.append(f"{len(unlisted)} file(s) in the folder are not in the manifest: {', '.join(unlisted[:5])}"
                        + (", ..." if len(unlisted) > 5 else ""))
    for entry in manifest.get("files", []):
        found = file_sha256.get(entry["path"])
        if found is None:
            problems.append(f"{entry['path']} is listed in the manifest but missing")
        elif found != entry["sha256"]:
            problems.append(f"{entry['path']} changed after the manifest was written")
    for entry in manifest.get("tables", []):
        rows = parquet_rows.get(entry["parquet"])
        if rows is not None and rows != entry["rows"]:
            problems.append(f"{entry['table']}: parquet has {rows} rows, manifest says {entry['rows']}")
    for table, columns in manifest.get("undocumented_columns", {}).items():
        problems.append(f"{table}: undocumented columns {columns}")
    missing_required = [t for t in manifest.get("missing_tables", []) if t in REQUIRED_TABLES]
    if missing_required:
        problems.append(f"required tables not exported: {missing_required}")
    exported = {entry.get("table") for entry in manifest.get("tables", [])}
    unaccounted = [t for t in manifest.get("expected_tables", [])
                   if t not in exported and t not in manifest.get("missing_tables", [])]
    if unaccounted:
        problems.append(f"expected tables neither exported nor listed as missing: {unaccounted}")
    return problems
