"""Jobs, selected by asset group so that assets other domains add later are included automatically.

- `benchmark_refresh_job`: one benchmark partition: the benchmark tables, then its labels (groups
  "benchmarks" and "labels"; partitioned by `benchmark`, which Dagster infers from the selected assets).
- `analysis_refresh_job`: every unpartitioned asset downstream of the benchmarks (groups "analysis", "gaps",
  "exports", plus anything else downstream of the benchmark/label groups) and the warehouse-wide benchmark
  and label checks.
- `reference_refresh_job`: the reference data (group "reference").
"""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

REFERENCE_GROUPS = ("reference",)
BENCHMARK_GROUPS = ("benchmarks", "labels")
ANALYSIS_GROUPS = ("analysis", "gaps", "exports")

# Warehouse-wide checks over all benchmarks: run once per analysis refresh, not once per partition. Each scans
# every benchmark's rows, so per partition it costs O(partitions x rows) time, and the label check
# (prompt_task_labels_valid, the checks of the "labels" group) was the largest memory peak of a partition run
# at 50x the mirrored prompts (bench/scale.py). Selected by group (every check of the group's assets), so
# Definitions without labels still resolve and a check added to either group is included.
BENCHMARK_CHECKS = AssetSelection.groups("benchmarks") - AssetSelection.groups("benchmarks").without_checks()
LABEL_CHECKS = AssetSelection.groups("labels") - AssetSelection.groups("labels").without_checks()
WAREHOUSE_CHECKS = BENCHMARK_CHECKS | LABEL_CHECKS
BENCHMARK_SELECTION = AssetSelection.groups(*BENCHMARK_GROUPS)
REFERENCE_SELECTION = AssetSelection.groups(*REFERENCE_GROUPS)
ANALYSIS_SELECTION = (
    AssetSelection.groups(*ANALYSIS_GROUPS)
    | (BENCHMARK_SELECTION.downstream() - BENCHMARK_SELECTION - REFERENCE_SELECTION)
    | WAREHOUSE_CHECKS
)

benchmark_refresh_job = define_asset_job(
    "benchmark_refresh_job",
    selection=BENCHMARK_SELECTION - WAREHOUSE_CHECKS,
    description="Refresh one benchmark partition: prompts, results, rejects and registry row, then labels.",
    tags={"benchmap/kind": "benchmark"},
)
analysis_refresh_job = define_asset_job(
    "analysis_refresh_job",
    selection=ANALYSIS_SELECTION,
    description="Refresh the unpartitioned assets over all benchmarks: label validation, analysis, the estimates "
    "(the published headline among them), gaps, what-if and exports.",
    tags={"benchmap/kind": "analysis"},
)
reference_refresh_job = define_asset_job(
    "reference_refresh_job",
    selection=REFERENCE_SELECTION,
    description="Refresh the reference data (O*NET, OEWS, exposure, WORKBank).",
    tags={"benchmap/kind": "reference"},
)

JOBS: list = [benchmark_refresh_job, analysis_refresh_job, reference_refresh_job]
