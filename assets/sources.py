"""The project's sources as observable source assets: Dagster's data versions of what the raw-loading assets
read (resources/source_versions.py computes them; run_all reports them before it decides what is stale).

- `reference_source_files`: the checksums of the reference files (data/raw and the mirror outside benchmarks/ and
  gold_labels/); the reference assets and the labeler validation, which reads the reference labels, depend on it.
- `gold_label_files`: the checksums of the annotators' CSVs (data/raw/gold_labels/); `gold_task_labels` depends on
  it, so a new file re-runs the validation only.
- `benchmark_landing_folders`: per benchmark partition, its landing folder's content hash; the four benchmark
  tables depend on it.

"Observe sources" in the UI computes the same versions; a changed one makes its dependents stale.
"""

from __future__ import annotations

import warnings

from dagster import BetaWarning, DataVersion, DataVersionsByPartition, observable_source_asset

from assets.partitions import benchmark_partitions
from resources import source_versions as sv
from resources.sources import discover_landing


def _reference_version() -> DataVersion:
    return DataVersion(sv.reference_files_version())


def _gold_version() -> DataVersion:
    return DataVersion(sv.gold_files_version())


def _landing_versions(context) -> DataVersionsByPartition:  # noqa: ANN001 - Dagster's observe context
    partitions = context.instance.get_dynamic_partitions(benchmark_partitions.name)
    return DataVersionsByPartition(sv.landing_versions(discover_landing(), list(partitions)))


# files observed, not tables written (observable_source_asset takes no `kinds`: its kind tag)
FILE_KIND = {"dagster/kind/file": ""}

# observable_source_asset is beta in Dagster 1.13: without the filter every import of the code location warns
with warnings.catch_warnings():
    warnings.simplefilter("ignore", BetaWarning)
    reference_source_files = observable_source_asset(
        key=sv.REFERENCE_FILES_KEY, group_name="reference", tags=FILE_KIND,
        description="The reference files (O*NET, OEWS, WORKBank, reference labels, ...) in data/raw "
                    "and the mirror: data version = a hash of their SHA-256 checksums.")(_reference_version)
    gold_label_files = observable_source_asset(
        key=sv.GOLD_FILES_KEY, group_name="label_validation", tags=FILE_KIND,
        description="The annotators' gold label CSVs in data/raw/gold_labels/ (docs/gold_labels.md): data version "
                    "= a hash of their SHA-256 checksums.")(_gold_version)
    benchmark_landing_folders = observable_source_asset(
        key=sv.LANDING_FOLDERS_KEY, group_name="benchmarks", partitions_def=benchmark_partitions, tags=FILE_KIND,
        description="One benchmark landing folder per partition: data version = its content hash.")(
        _landing_versions)
