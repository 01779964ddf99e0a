"""The benchmark landing zone on disk: listing the folders and reading their files (models/benchmarks.py parses).

`discover` lists the landing roots (`pipelines.sources.discover_landing` passes the configured ones),
`read_folder` reads a folder's CONTENT_FILES, `folder_content_hash` hashes them (the sensor's and run_all's
change test), `ingest_folder` parses one folder into the four tables' rows and `read_prompts` parses one
prompts.jsonl file. A file that cannot be read raises the OSError it raises (the command lines name it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from models import benchmarks as bm


def discover(roots: Iterable[tuple[str, Path]]) -> bm.Landing:
    """Every benchmark folder in the landing roots (earlier roots win) and every folder that cannot be one.

    `roots` are (origin, folder) pairs, highest priority first; `pipelines.sources.landing_roots()` gives the
    configured ones (data/raw/benchmarks, then the mirror's) and `discover_landing()` calls this with them.
    A root that is not a folder is skipped; hidden entries and files (INDEX.md, .git, .DS_Store) are not
    folders of benchmarks."""
    listing = []
    for origin, root in roots:
        if not root.is_dir():
            continue
        entries = [(entry, (entry / bm.PROMPTS_FILE).is_file()) for entry in sorted(root.iterdir())
                   if not entry.name.startswith(".") and entry.is_dir()]
        listing.append((origin, entries))
    return bm.landing_from_listing(listing)


def read_folder(folder: Path) -> dict[str, bytes]:
    """file name -> bytes of the benchmark folder's CONTENT_FILES that exist (prompts, results, metadata)."""
    return {name: (folder / name).read_bytes() for name in bm.CONTENT_FILES if (folder / name).is_file()}


def folder_content_hash(folder: Path) -> str:
    """`models.benchmarks.content_hash` of the folder's files."""
    return bm.content_hash(read_folder(folder))


def ingest_folder(folder: bm.BenchmarkFolder, *, previous: Mapping[str, Any] | None = None,
                  now: datetime | None = None) -> bm.IngestedBenchmark:
    """`models.benchmarks.ingest_benchmark` of the folder's files, each read once."""
    files = read_folder(folder.path)
    if bm.PROMPTS_FILE not in files:  # raise the OSError (missing, a directory) that names the file
        files[bm.PROMPTS_FILE] = (folder.path / bm.PROMPTS_FILE).read_bytes()
    return bm.ingest_benchmark(folder, files, previous=previous, now=now)


def read_prompts(path: Path, benchmark: str, *, label: str | None = None) -> tuple[pl.DataFrame, list[bm.Reject]]:
    """`models.benchmarks.parse_prompts` of one prompts.jsonl file."""
    return bm.parse_prompts(Path(path).read_bytes(), benchmark, label=label)
