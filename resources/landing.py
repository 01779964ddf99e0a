"""The benchmark landing zone on disk: listing the folders and reading their files (models/benchmarks.py parses).

`discover` lists the landing roots (`resources.sources.discover_landing` passes the configured ones),
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
from models.errors import InputError
from resources.settings import settings


def outside_zone(path: Path, zone: Path, *, follow_links: bool | None = None) -> str | None:
    """Why `path` is refused (None when it is not): it resolves, through a link in it or its folders, to a place
    outside the landing zone `zone` (data/raw, or the mirror). A landing folder is untrusted input: a link to
    /etc/passwd named prompts.jsonl must not be read. BENCHMAP_FOLLOW_LINKS=1 (`follow_links`) follows them."""
    if follow_links is None:
        follow_links = settings().follow_links
    if follow_links or not (path.is_symlink() or path.exists()):
        return None
    target = path.resolve()
    if target.is_relative_to(zone.resolve()):
        return None
    return (f"{path} is a link to {target}, outside the landing zone {zone}: refused "
            "(BENCHMAP_FOLLOW_LINKS=1 follows such links)")


def _zone_of(root: Path) -> Path:
    """The landing zone a root's links must stay in: the root's parent (data/raw for data/raw/benchmarks, the
    mirror for its benchmarks/)."""
    return root.parent


def discover(roots: Iterable[tuple[str, Path]]) -> bm.Landing:
    """Every benchmark folder in the landing roots (earlier roots win) and every folder that cannot be one.

    `roots` are (origin, folder) pairs, highest priority first; `resources.sources.landing_roots()` gives the
    configured ones (data/raw/benchmarks, then the mirror's) and `discover_landing()` calls this with them.
    A root that is not a folder is skipped; hidden entries and files (INDEX.md, .git, .DS_Store) are not
    folders of benchmarks. A folder, or its prompts.jsonl, that links outside the landing zone is a landing
    problem (`outside_zone`), as a folder without prompts.jsonl is."""
    listing = []
    for origin, root in roots:
        if not root.is_dir():
            continue
        entries: list[tuple[Path, bool | str]] = []
        for entry in sorted(root.iterdir()):
            if entry.name.startswith("."):
                continue
            refused = outside_zone(entry, _zone_of(root))
            if refused is None and not entry.is_dir():
                continue
            if refused is None:
                refused = outside_zone(entry / bm.PROMPTS_FILE, _zone_of(root))
            entries.append((entry, refused or (entry / bm.PROMPTS_FILE).is_file()))
        listing.append((origin, entries))
    return bm.landing_from_listing(listing)


def refused_files(folder: Path) -> dict[str, str]:
    """file name -> why, for the folder's CONTENT_FILES that link outside its landing zone (never read)."""
    zone = _zone_of(folder.parent)
    return {name: why for name in bm.CONTENT_FILES if (why := outside_zone(folder / name, zone)) is not None}


def read_folder(folder: Path) -> dict[str, bytes]:
    """file name -> bytes of the benchmark folder's CONTENT_FILES that exist (prompts, results, metadata);
    files linking outside the landing zone are left out (`refused_files`)."""
    refused = refused_files(folder)
    return {name: (folder / name).read_bytes() for name in bm.CONTENT_FILES
            if name not in refused and (folder / name).is_file()}


def folder_content_hash(folder: Path) -> str:
    """`models.benchmarks.content_hash` of the folder's files."""
    return bm.content_hash(read_folder(folder))


def ingest_folder(folder: bm.BenchmarkFolder, *, previous: Mapping[str, Any] | None = None,
                  now: datetime | None = None) -> bm.IngestedBenchmark:
    """`models.benchmarks.ingest_benchmark` of the folder's files, each read once; a refused file (a link
    outside the landing zone) is a reject row, and a refused prompts.jsonl an InputError."""
    files = read_folder(folder.path)
    refused = refused_files(folder.path)
    # a results.csv or metadata file that is a folder was left out without a word (a probe: 0 results, exit 0)
    refused |= {name: f"{name} is a directory, not a file: not read" for name in bm.CONTENT_FILES
                if name != bm.PROMPTS_FILE and name not in refused and (folder.path / name).is_dir()}
    if bm.PROMPTS_FILE in refused:
        raise InputError(refused[bm.PROMPTS_FILE], path=folder.path / bm.PROMPTS_FILE)
    if bm.PROMPTS_FILE not in files:  # raise the OSError (missing, a directory) that names the file
        files[bm.PROMPTS_FILE] = (folder.path / bm.PROMPTS_FILE).read_bytes()
    return bm.ingest_benchmark(folder, files, previous=previous, now=now, refused=refused)


def read_prompts(path: Path, benchmark: str, *, label: str | None = None) -> tuple[pl.DataFrame, list[bm.Reject]]:
    """`models.benchmarks.parse_prompts` of one prompts.jsonl file."""
    return bm.parse_prompts(Path(path).read_bytes(), benchmark, label=label)
