"""Estimates (group "estimates"): `coverage_regressions_mi`, the coverage logits refitted on the headline step's
model-assisted draws of the label set (`headline_count_draws`, over `task_analysis_frame`) and combined with
Rubin's rules (models/regression_mi.py), beside `coverage_regressions`. Its own step: it needs the analysis
frame, which itself follows membership, so it cannot be part of the headline step (issue 28)."""

import json
import time

import polars as pl
from dagster import AssetExecutionContext, MetadataValue, asset

from assets import TABLE_KINDS, ahead
from assets.estimates import GROUP
from models.markdown import markdown_table
from models.regression_mi import combine_fits, draw_fits
from resources.dagster_resources import Warehouse
from resources.worker_pool import shared_pool


@asset(group_name=GROUP, kinds=TABLE_KINDS)
def coverage_regressions_mi(context: AssetExecutionContext, warehouse: Warehouse, headline_count_draws: pl.DataFrame,
                            task_analysis_frame: pl.DataFrame) -> pl.DataFrame:
    """The coverage logits with labeler error: refitted on the headline's model-assisted draws of the label set
    (headline_count_draws) and combined with Rubin's rules (coefficients and probability ratios), beside
    coverage_regressions."""
    started = time.perf_counter()
    # the fits started ahead by task_analysis_frame's step when its inputs were these (assets/ahead.py)
    fits = ahead.take_parts(warehouse, ahead.MI_NAME, [], [task_analysis_frame, headline_count_draws], 2)
    task_frame, task_keys, count_draws, half = ahead.mi_inputs(task_analysis_frame, headline_count_draws)
    taken = fits is not None
    if fits is None:  # the first half of the draws fitted by a worker process while this one fits the rest
        pool = shared_pool()
        first = pool.submit(draw_fits, task_frame, task_keys, count_draws[:half], name="MI fits of the first draws")
        rest = draw_fits(task_frame, task_keys, count_draws[half:])
        fits = [*pool.gather([first]), rest]
    mi = combine_fits(fits, "model_assisted")
    seconds = time.perf_counter() - started
    context.log.info(f"MI regressions {seconds:.1f}s over {len(count_draws)} draws"
                     f"{' (started ahead)' * taken}")
    context.add_output_metadata({"preview": MetadataValue.md(markdown_table(mi, max_rows=30)), "seconds": round(seconds, 2),
                                 "summary": MetadataValue.json(json.loads(mi.head(10).write_json()))})
    return mi
