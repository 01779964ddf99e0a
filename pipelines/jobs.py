"""Jobs, selected by asset group so that assets other domains add later are included automatically.

- `benchmark_refresh_job`: one benchmark partition: the benchmark tables, then its labels (groups
  "benchmarks" and "labels"; partitioned by `benchmark`, which Dagster infers from the selected assets).
- `analysis_refresh_job`: every unpartitioned asset downstream of the benchmarks (groups "analysis", "gaps",
  "exports", plus anything else downstream of the benchmark/label groups) and the warehouse-wide benchmark
  and label checks.
- `reference_refresh_job`: the reference data (group "reference").

Every run of these jobs (and of `run_all`) carries the tag benchmap/kind; `run_kinds` says what a run refreshes,
for the sensors that wait for one kind of run or another.
"""

from __future__ import annotations

from typing import Any

from dagster import AssetSelection, DagsterRunStatus, define_asset_job

KIND_TAG = "benchmap/kind"  # the jobs' runs (sensors, schedule, the UI's job launches) and run_all's carry it
TRIGGER_TAG = "benchmap/trigger"  # what requested a run: 'new', 'changed' or 'retry' (landing), 'automation'
BENCHMARK_TAG = "benchmap/benchmark"  # run tags of a requested refresh: which partition, which content
CONTENT_TAG = "benchmap/content_hash"
UPSTREAM_KINDS = ["benchmark", "reference"]  # run tag benchmap/kind of jobs the analysis waits for
GATED_KINDS = [*UPSTREAM_KINDS, "analysis"]  # ... and of the analysis itself (one run at a time)
PENDING_STATUSES = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
                    DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
RETRY_STATUSES = (DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED)  # a run that did not make its assets
# what a skip reason says of a pending run (a probe read "being made" of a run queued behind 29 others)
PENDING_WORDS = {DagsterRunStatus.QUEUED: "queued", DagsterRunStatus.NOT_STARTED: "about to start",
                 DagsterRunStatus.STARTING: "starting", DagsterRunStatus.STARTED: "running",
                 DagsterRunStatus.CANCELING: "being cancelled"}

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
    description="Refresh one benchmark partition: prompts, results, rejects and registry row, then labels. "
    "The warehouse-wide checks on these tables (consistency, reject rate, labels valid and complete) run with "
    "the analysis job, not here.",
    tags={KIND_TAG: "benchmark"},
)
analysis_refresh_job = define_asset_job(
    "analysis_refresh_job",
    selection=ANALYSIS_SELECTION,
    description="Refresh the unpartitioned assets over all benchmarks: label validation, analysis, the estimates "
    "(the published headline among them), gaps, what-if and exports; and the warehouse-wide checks on the "
    "benchmark and label tables (a labeling failure shows here first, as prompt_task_labels_complete).",
    tags={KIND_TAG: "analysis"},
)
reference_refresh_job = define_asset_job(
    "reference_refresh_job",
    selection=REFERENCE_SELECTION,
    description="Refresh the reference data (O*NET, OEWS, exposure, WORKBank, task hours, job titles and "
    "technology skills) and the offline labeler's task index built from it.",
    tags={KIND_TAG: "reference"},
)

JOBS: list = [benchmark_refresh_job, analysis_refresh_job, reference_refresh_job]


def run_kinds(run: Any, graph: Any) -> frozenset[str]:
    """What a run refreshes: its tag benchmap/kind, else the kinds ('benchmark', 'reference', 'analysis') of the
    assets and checks it selects (the UI's Materialize on the asset graph and `dagster asset materialize` run
    Dagster's implicit asset job, which has no tag: on a real daemon, 2026-12-07, such an analysis run did not hold
    back the landing sensor), else every kind (a run of a whole job, or no asset graph to tell: it may make any)."""
    kind = run.tags.get(KIND_TAG)
    if kind:
        return frozenset({kind})
    selected = set(run.asset_selection or ()) | set(run.asset_check_selection or ())
    if not selected or graph is None:
        return frozenset(GATED_KINDS)
    kinds = (("benchmark", BENCHMARK_SELECTION), ("reference", REFERENCE_SELECTION), ("analysis", ANALYSIS_SELECTION))
    return frozenset(name for name, selection in kinds
                     if selected & (set(selection.resolve(graph)) | set(selection.resolve_checks(graph))))
