"""Data versions of the project's sources, as Dagster sees them (assets/sources.py):

- `reference_source_files`: a sha256 over the SHA-256 of every file of data/raw and the mirror outside their
  benchmarks/ and gold_labels/ folders (O*NET, OEWS, WORKBank, reference labels, ...: about 35 MB, some 50 ms);
- `gold_label_files`: the same over data/raw/gold_labels/, the annotators' CSVs, which only the label validation
  reads (under `reference_source_files` a new file re-ran the reference step and every labeling partition);
- `benchmark_landing_folders`, one data version per benchmark partition: the landing folder's content hash
  (resources.landing.folder_content_hash, the same hash the landing sensor and the `benchmarks` metadata use;
  the `_landing` partition: the hash of the landing problems);
- the index files (data/indexes/*.toml): `index_files_fingerprint`, recorded by benchmark_index_membership.

`report_source_versions` records an observation (Dagster's DATA_VERSION tag) for each source whose version
differs from its latest observation, so Dagster's stale status of the raw-loading assets that depend on them
("has a new dependency data version") answers whether a landing folder or a reference file changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path

from dagster import AssetKey, AssetObservation, DagsterEventType, DagsterInstance
from dagster._core.definitions.data_version import DATA_VERSION_TAG

from models import benchmarks as bm
from resources.landing import folder_content_hash
from resources.settings import Settings, settings
from resources.sources import index_file_checksums

REFERENCE_FILES_KEY = AssetKey("reference_source_files")
GOLD_FILES_KEY = AssetKey("gold_label_files")
LANDING_FOLDERS_KEY = AssetKey("benchmark_landing_folders")
GOLD_DIR_NAME = "gold_labels"  # data/raw/gold_labels/: the annotators' CSVs (docs/gold_labels.md)


def reference_files_version(config: Settings | None = None) -> str:
    """Relative path and SHA-256 of every file under data/raw and the mirror except their top-level benchmarks/,
    gold_labels/ and hidden entries, hashed."""
    config = config or settings()
    return _files_version([config.raw_dir, config.mirror], lambda top: top not in ("benchmarks", GOLD_DIR_NAME))


def gold_files_version(config: Settings | None = None) -> str:
    """The same hash over data/raw/gold_labels/ (the landing zone's only: the mirror has no annotators' files)."""
    config = config or settings()
    return _files_version([config.raw_dir], lambda top: top == GOLD_DIR_NAME)


def _files_version(roots: list[Path | None], wanted: Callable[[str], bool]) -> str:
    """Relative path and SHA-256 of every file under `roots` whose top-level entry is `wanted` and not hidden.
    Only the wanted entries are walked (the gold files' version walked every landing folder to skip it), in the
    order a sort of the whole tree gives, so the hash is the same."""
    digest = hashlib.sha256()
    for number, root in enumerate(roots):
        if root is None or not root.is_dir():
            continue
        for top in sorted(root.iterdir()):
            if not wanted(top.name) or top.name.startswith("."):
                continue
            for path in sorted(top.rglob("*")) if top.is_dir() else [top]:
                if path.is_file():
                    with open(path, "rb") as handle:
                        digest.update(f"{number}\0{path.relative_to(root)}\0"
                                      f"{hashlib.file_digest(handle, 'sha256').hexdigest()}\0".encode())
    return digest.hexdigest()


def landing_versions(landing: bm.Landing, partitions: list[str]) -> dict[str, str]:
    """partition -> the content hash of its landing folder (`_landing`: of the landing problems)."""
    out = {}
    for name in partitions:
        if name == bm.LANDING_PARTITION:
            out[name] = landing.problems_hash() or bm.NO_PROBLEMS_HASH
        elif name in landing.benchmarks:
            out[name] = folder_content_hash(landing.benchmarks[name].path)
    return out


def index_files_fingerprint(folder: Path | None = None) -> str:
    """The benchmark index definitions (data/indexes/*.toml or $BENCHMAP_INDEX_DIR): editing one reruns the
    analysis, which recomputes benchmark_index_membership and every per-index table."""
    entries = [(Path(entry["path"]).name, entry["sha256"]) for entry in index_file_checksums(folder)]
    return hashlib.sha256(json.dumps([entries], sort_keys=True).encode()).hexdigest()


def observation(key: AssetKey, version: str, partition: str | None = None) -> AssetObservation:
    """An observation carrying a source's data version (Dagster's DATA_VERSION tag: `dagster/data_version`)."""
    return AssetObservation(key, partition=partition, tags={DATA_VERSION_TAG: version})


def observed(instance: DagsterInstance, key: AssetKey, partitions: list[str] | None) -> dict[str | None, str]:
    """The data version of the latest observation of `key` (per partition when `partitions` is given)."""
    if partitions is None:
        record = instance.get_latest_data_version_record(key, is_source=True)
        tags = record.event_log_entry.tags if record is not None else {}
        return {None: tags[DATA_VERSION_TAG]} if DATA_VERSION_TAG in tags else {}
    by_partition = instance.event_log_storage.get_latest_tags_by_partition(
        key, DagsterEventType.ASSET_OBSERVATION, [DATA_VERSION_TAG], asset_partitions=partitions)
    return {p: tags[DATA_VERSION_TAG] for p, tags in by_partition.items() if DATA_VERSION_TAG in tags}


def report_source_versions(instance: DagsterInstance, *, reference: str | None = None, gold: str | None = None,
                           landing: Mapping[str, str] | None = None) -> int:
    """Record an observation for each source version that differs from the latest one observed; returns how
    many were recorded (0 on a warm run: three small queries)."""
    reported = 0
    for key, version in ((REFERENCE_FILES_KEY, reference), (GOLD_FILES_KEY, gold)):
        if version is not None and observed(instance, key, None).get(None) != version:
            instance.report_runless_asset_event(observation(key, version))
            reported += 1
    if landing:
        seen = observed(instance, LANDING_FOLDERS_KEY, sorted(landing))
        for name, version in sorted(landing.items()):
            if seen.get(name) != version:
                instance.report_runless_asset_event(observation(LANDING_FOLDERS_KEY, version, name))
                reported += 1
    return reported
