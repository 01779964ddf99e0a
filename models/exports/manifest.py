"""The manifest's parts (code version, benchmarks, labelers) and `verify_export`, which checks a folder
against its manifest. The sources part is `pipelines.sources.source_checksums()` (it looks on disk for them)."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import polars as pl

from models.exports.files import sha256_file
from models.exports.tables import MANIFEST_NAME, REQUIRED_TABLES
from models.sources import PROJECT_ROOT


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


