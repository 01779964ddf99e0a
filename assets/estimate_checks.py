"""A data-quality check of the estimates' inputs: every landed benchmark has judged texts.

A benchmark without any (a new one, or one landed under another name than the reference's) is not corrected by
the judge sample: its model-assisted draws are its labeler's, whose interval carries no labeler error; on the
mirrored benchmarks such counts at >= 5 prompts were typically off by a factor of 1.6-1.9, either way
(docs/estimates.md, "Known limits").
The summary names such benchmarks ("Not corrected: ..."); this check shows them in the Dagster UI, where an
analyst materializing a new benchmark looks first.
"""

from __future__ import annotations

import polars as pl
from dagster import AssetCheckResult, AssetCheckSeverity, MetadataValue, asset_check

from models.estimates.published import judged_by_benchmark
from resources.dagster_resources import Warehouse


@asset_check(
    asset="headline_estimates",
    name="benchmarks_have_judged_texts",
    blocking=False,
    description="Every landed benchmark has judged texts (the reference's, or a judge sample of its own: "
    "BENCHMAP_JUDGE_SAMPLE). One without is counted through the labeler alone, uncorrected and without the "
    "labeler's error in its interval; summary.md names it. WARN: the figures are still published.",
)
def benchmarks_have_judged_texts(warehouse: Warehouse) -> AssetCheckResult:
    if not warehouse.table_exists("headline_estimates"):
        return AssetCheckResult(passed=False, severity=AssetCheckSeverity.WARN,
                                metadata={"missing_table": "headline_estimates"})
    estimates = warehouse.read_table("headline_estimates")
    judged = judged_by_benchmark(estimates)
    unjudged, n_benchmarks = [b for b, has in judged.items() if not has], len(judged)
    texts = (estimates.filter(pl.col("scope").is_in(unjudged) & (pl.col("benchmark_index") == "all"))
               .group_by("scope").agg(pl.col("n_texts").max()).sort("scope") if unjudged else None)
    return AssetCheckResult(
        passed=not unjudged,
        severity=AssetCheckSeverity.WARN,
        metadata={"benchmarks": n_benchmarks, "without_judged_texts": len(unjudged),
                  "names": MetadataValue.json(unjudged),
                  "distinct_texts": MetadataValue.json(dict(texts.iter_rows()) if texts is not None else {})},
    )
