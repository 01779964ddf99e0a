"""What would a candidate benchmark add? The what-if multi-asset (group "gaps").

`candidate_benchmark_whatif` (one multi-asset, one config) labels a candidate folder that has not been landed
and computes its marginal gain (pipelines/whatif.py's `run_whatif`; the pure computation is
models/gaps/whatif.py). Its outputs are the four tables of the gain (`whatif_*`) and a one-row run summary
(`candidate_benchmark_whatif`), all stored by the IO manager. Every published table is left untouched: the
asset fingerprints them before the run, after reading and after its own tables are written.
"""

import time
from typing import Any

import polars as pl
from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetOut,
    Config,
    Failure,
    MetadataValue,
    Output,
    multi_asset,
)
from pydantic import Field

from assets import TABLE_KINDS
from assets.release_gate import refuse_labels_behind
from models import gaps
from models.gaps.expected import EXPECTED_THRESHOLDS
from models.report import markdown_table
from resources import whatif
from resources.dagster_resources import LabelerResource, Warehouse

GROUP = "gaps"
WHATIF_DEPS = [
    AssetKey(t) for t in (*gaps.REFERENCE_TABLES, *whatif.INDEX_TABLES, whatif.LABELS, "benchmark_prompts",
                          *whatif.ESTIMATE_TABLES)
]


class WhatIfConfig(Config):
    candidate_folder: str = Field(
        default="",
        description="folder holding the candidate's prompts.jsonl (landing format); empty = nothing to do",
    )
    threshold: int = Field(default=gaps.DEFAULT_THRESHOLD)
    top_n: int = Field(default=100, description="gap ranks compared before/after")
    reuse_label_cache: bool = Field(default=True, description="read (never write) label_cache for the LLM")


def _build_labeler(resource: LabelerResource, warehouse: Warehouse, log: Any = None) -> Any:
    """The configured labeler (LabelerResource.build) over the labels stage's TaskIndex (the stored pickle
    when task_search_index was materialized, else built from the reference tables)."""
    from assets.labels import load_task_index

    index, _, _ = load_task_index(warehouse, log)
    return resource.build(index)


def _cached_labels(warehouse: Warehouse, labeler: Any, hashes: list[str]) -> dict[str, list[Any]]:
    from models.sources import ONET_VERSION
    from resources.label_cache import CacheKey

    return warehouse.label_cache().read(CacheKey.for_labeler(labeler, ONET_VERSION), hashes)


WHATIF_SUMMARY = "candidate_benchmark_whatif"
WHATIF_OUTS = {
    WHATIF_SUMMARY: AssetOut(
        kinds=TABLE_KINDS,
        description="One-row summary of the last what-if: candidate, threshold, labeler, prompts counted, "
        "tasks/occupations/hours newly covered (labels as counted, and expected from the per-unit estimates), "
        "top gaps closed, published_tables_unchanged. Without a candidate_folder configured (every analysis "
        "run) it is materialized as skipped and nothing is written: run `python -m pipelines.whatif`.",
        is_required=False,  # no candidate_folder configured: nothing is written
    ),
    "whatif_marginal_gain": AssetOut(
        kinds=TABLE_KINDS,
        description="Per metric (tasks, occupations, major groups, hours covered, top-N gaps closed, gap "
        "priority mass, candidate prompt counts): before, after and gain.",
        is_required=False,
    ),
    "whatif_newly_covered_tasks": AssetOut(
        kinds=TABLE_KINDS,
        description="The tasks the candidate would newly bring to the threshold, with their work hours.",
        is_required=False,
    ),
    "whatif_newly_covered_occupations": AssetOut(
        kinds=TABLE_KINDS,
        description="The occupations that would newly have a task at the threshold.", is_required=False
    ),
    "whatif_gap_rank_changes": AssetOut(
        kinds=TABLE_KINDS,
        description="Gap ranks before and after for the top N gaps and for every gap the candidate closes; at "
        "thresholds 1 and 5 the gaps are those coverage_gaps lists at that threshold (not likely covered by the "
        "estimates; the published table is at 5), else the labels' "
        "(listed_by).",
        is_required=False,
    ),
    "whatif_expected_occupation_gain": AssetOut(
        kinds=TABLE_KINDS,
        description="Where the expected gain lands: per occupation the candidate's labels reach, its expected "
        "candidate prompts and its expected uncovered hours before and after (at thresholds 1 and 5, from the "
        "per-unit estimates; empty at another threshold).",
        is_required=False,
    ),
}


def _whatif_summary(
    result: gaps.WhatIfResult, config: WhatIfConfig, model: Any, unchanged: bool, seconds: float
) -> pl.DataFrame:
    gain = {r["metric"]: r for r in result.marginal_gain.iter_rows(named=True)}

    def value(metric: str, field: str = "gain") -> float | None:
        return gain[metric][field] if metric in gain else None

    return pl.DataFrame(
        [
            {
                "candidate": result.marginal_gain["candidate"][0],
                "candidate_folder": config.candidate_folder,
                "threshold": config.threshold,
                "labeler": model.name,
                "labeler_version": model.labeler_version,
                "candidate_prompts": value("candidate_prompts", "after"),
                "candidate_prompts_counted": value("candidate_prompts_counted", "after"),
                "tasks_newly_covered": value("tasks_covered"),
                "occupations_newly_covered": value("occupations_covered"),
                "hours_newly_covered": value("hours_covered"),
                "hours_share_gain": value("hours_share_covered"),
                # the expected gain from the per-unit estimates (null without them)
                "expected_tasks_newly_covered": value("expected_tasks_covered"),
                "expected_occupations_newly_covered": value("expected_occupations_covered"),
                "expected_hours_newly_covered": value("expected_hours_covered"),
                "expected_hours_share_gain": value("expected_hours_share_covered"),
                "top_gaps_closed": value(f"top_{config.top_n}_gaps_closed", "after"),
                "published_tables_unchanged": unchanged,
                "seconds": round(seconds, 2),
            }
        ]
    )


def _changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return sorted(set(before) ^ set(after) | {k for k in before if before.get(k) != after.get(k)})


@multi_asset(
    name="candidate_benchmark_whatif",
    outs=WHATIF_OUTS,
    deps=WHATIF_DEPS,
    group_name=GROUP,
    can_subset=False,
    description="What would a candidate benchmark add? Labels the candidate folder's prompts (not landed) "
    "and writes the marginal gain to whatif_marginal_gain, whatif_newly_covered_tasks, "
    "whatif_newly_covered_occupations, whatif_gap_rank_changes and whatif_expected_occupation_gain, and a run "
    "summary to "
    "candidate_benchmark_whatif. Published tables are never written (fingerprinted before and after). Without a "
    "candidate folder (the default) every analysis run records it as skipped (metadata `skipped`, no table): a "
    "materialization here is a result only when its metadata names a candidate.",
)
def candidate_benchmark_whatif(
    context: AssetExecutionContext, config: WhatIfConfig, warehouse: Warehouse, labeler: LabelerResource
):
    if not config.candidate_folder.strip():
        context.log.info("no candidate_folder configured: nothing to do (tables unchanged)")
        yield Output(None, output_name=WHATIF_SUMMARY, metadata={"skipped": "no candidate_folder configured"})
        return
    refuse_labels_behind(warehouse, "candidate_benchmark_whatif")  # compared with the landed labels
    started = time.monotonic()
    before = warehouse.table_fingerprints()
    model = _build_labeler(labeler, warehouse, context.log)
    cached = None
    if config.reuse_label_cache and labeler.kind != "offline":
        prompts, _ = whatif.read_candidate_prompts(config.candidate_folder)
        cached = _cached_labels(warehouse, model, prompts["prompt_hash"].unique().to_list())
    params = gaps.WhatIfParams(threshold=config.threshold, top_n=config.top_n)
    result = warehouse.run_whatif(config.candidate_folder, params, labeler=model, cached=cached)
    changed = _changed(before, warehouse.table_fingerprints())
    if changed:
        raise Failure(description=f"published tables changed during the what-if: {changed}")
    # Dagster hands each yielded output to the IO manager before the body resumes, so the fingerprints
    # taken after this loop see the what-if tables written
    for name, frame in gaps.whatif_tables(result).items():
        yield Output(frame, output_name=name)
    unchanged = warehouse.table_fingerprints() == before
    if not unchanged:
        raise Failure(description="a published table changed while writing the what-if tables")
    summary = _whatif_summary(result, config, model, unchanged, time.monotonic() - started)
    context.log.info(f"what-if {config.candidate_folder}: {summary.row(0, named=True)}")
    row = summary.row(0, named=True)
    expected = row["expected_hours_newly_covered"]
    if expected is None:  # not 0.0: a reader of the metadata would take it for no expected gain
        why = (f"the per-unit estimates exist at thresholds {' and '.join(map(str, EXPECTED_THRESHOLDS))} only"
               if config.threshold not in EXPECTED_THRESHOLDS else "the warehouse has no per-unit estimates "
               "(task_estimates: materialize headline_estimates, or run python -m pipelines.run_all)")
        context.log.warning(f"what-if at threshold {config.threshold}: no expected gain (expected_* null): {why}")
    yield Output(
        summary,
        output_name=WHATIF_SUMMARY,
        metadata={
            "tasks_newly_covered": int(row["tasks_newly_covered"] or 0),
            "occupations_newly_covered": int(row["occupations_newly_covered"] or 0),
            "hours_newly_covered": float(row["hours_newly_covered"] or 0.0),
            "expected_hours_newly_covered": (float(expected) if expected is not None
                                             else MetadataValue.text("not estimated (see the run's warning)")),
            "published_tables_unchanged": unchanged,
            "tables": ", ".join(gaps.WHATIF_TABLES),
            "newly_covered_tasks": MetadataValue.md(
                markdown_table(
                    result.newly_covered_tasks,
                    ["occupation_title", "task", "n_prompts_before", "n_prompts_after", "task_annual_hours"],
                    max_rows=10,
                )
            ),
        },
    )
