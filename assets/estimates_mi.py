"""Estimates (group "estimates"): `coverage_regressions_mi`, the coverage logits refitted on the headline step's
model-assisted draws of the label set (`headline_count_draws`, over `task_analysis_frame`) and combined with
Rubin's rules (models/regression_mi.py), beside `coverage_regressions`. Its own step: it needs the analysis
frame, which itself follows membership, so it cannot be part of the headline step (issue 28)."""

import json
import time

import polars as pl
from dagster import AssetExecutionContext, MetadataValue, asset

from assets.estimates import GROUP, KINDS
from models import estimates as es
from models.estimates.count_draws import count_draws_of
from models.markdown import markdown_table
from models.regression_mi import combine_fits, draw_fits
from resources.worker_pool import shared_pool


@asset(group_name=GROUP, kinds=KINDS)
def coverage_regressions_mi(context: AssetExecutionContext, headline_count_draws: pl.DataFrame,
                            task_analysis_frame: pl.DataFrame) -> pl.DataFrame:
    """The coverage logits with labeler error: refitted on the headline's model-assisted draws of the label set
    (headline_count_draws) and combined with Rubin's rules (coefficients and probability ratios), beside
    coverage_regressions."""
    started = time.perf_counter()
    task_frame = task_analysis_frame
    if "benchmark_index" in task_frame.columns:  # per-index tables (issue 18): the regressions of index 'all'
        task_frame = task_frame.filter(pl.col("benchmark_index") == es.ALL_INDEX)
    task_keys, count_draws = count_draws_of(headline_count_draws)
    # the first half of the draws fitted by a worker process while this one fits the rest (the same table)
    pool = shared_pool()
    half = (len(count_draws) + 1) // 2 if pool.workers else 0
    first = pool.submit(draw_fits, task_frame, task_keys, count_draws[:half], name="MI fits of the first draws")
    rest = draw_fits(task_frame, task_keys, count_draws[half:])
    mi = combine_fits([*pool.gather([first]), rest], "model_assisted")
    seconds = time.perf_counter() - started
    context.log.info(f"MI regressions {seconds:.1f}s over {len(count_draws)} draws")
    context.add_output_metadata({"preview": MetadataValue.md(markdown_table(mi, max_rows=30)), "seconds": round(seconds, 2),
                                 "summary": MetadataValue.json(json.loads(mi.head(10).write_json()))})
    return mi
