"""Agreement between labelers (group "label_validation"): for prompts two labelers have labeled (label_cache), per
benchmark, task F1, work agreement, task-set Jaccard, top-1 occupation agreement and occupation rank correlation
with bootstrap intervals. The validation against human and reference labels is assets/label_validation.py.
"""

import polars as pl
from dagster import AssetExecutionContext, MetadataValue, asset

from assets import TABLE_KINDS
from assets.gold_labels import VALIDATION_GROUP, read_prompts
from assets.label_validation import occupation_ranker
from assets.labels import markdown_table
from assets.release_gate import refuse_missing_tables
from models import validation as val
from models.labeling import cache as lc
from models.sources import ONET_VERSION
from resources.dagster_resources import Warehouse


@asset(
    group_name=VALIDATION_GROUP,
    kinds=TABLE_KINDS,
    deps=["prompt_task_labels", "prompt_work", "benchmark_prompts"],
    description="For prompts labeled by two labelers (label_cache, current O*NET version), per benchmark: "
    "task F1 and work agreement (prompts judged not work included), task-set Jaccard, top-1 occupation "
    "agreement, occupation rank correlation (Spearman over the union), each with n and a 95% bootstrap "
    "interval. Empty when only one labeler exists.",
)
def labeler_agreement(context: AssetExecutionContext, warehouse: Warehouse) -> pl.DataFrame:
    # the distinct cache keys first (one small query): with one labeler there is nothing to compare, and the
    # whole cache (every label set, JSON parsed) is not read (50x the mirror: +878 MiB, 17.7 CPU-s for nothing)
    keys = lc.disambiguate_versions(warehouse.label_cache_labeler_keys(ONET_VERSION))
    if keys.is_empty():  # nothing labeled yet: a failure naming the labels, not "one labeler" with an empty table
        refuse_missing_tables(warehouse, "labeler_agreement", ["prompt_task_labels"])
    if keys.select("labeler", "labeler_version").unique().height < 2:
        return _no_agreement(context, keys.select("labeler", "labeler_version").unique().sort("labeler_version"))
    rows = warehouse.label_cache().read_frame().filter(pl.col("onet_version") == ONET_VERSION)
    cached = lc.disambiguate_versions(lc.cache_frame_to_labels(rows))
    # every labeled prompt, also those judged not work (no label rows): task F1 and work agreement count them
    labeled = lc.disambiguate_versions(rows.with_columns(
        pl.coalesce("labeler_version", pl.col("model") + "+" + pl.col("template_version")).alias("labeler_version")
    )).select("prompt_hash", "labeler", "labeler_version")
    labelers = cached.select("labeler", "labeler_version").unique()
    if labelers.height < 2:  # two cache keys, but one of them without a single task label
        return _no_agreement(context, labelers)
    ranker, _ = occupation_ranker(("prompt_hash",))
    table = val.labeler_agreement(cached, read_prompts(warehouse, ("benchmark", "prompt_hash")), rank_fn=ranker,
                                  labeled=labeled)
    context.add_output_metadata(
        {
            "n_labelers": labelers.height,
            "labelers": ", ".join(sorted(labelers["labeler_version"].to_list())),
            "agreement": MetadataValue.md(
                markdown_table(
                    table.select(
                        "benchmark",
                        "labeler_version_a",
                        "labeler_version_b",
                        "metric",
                        "value",
                        "ci_low",
                        "ci_high",
                        "n",
                    ),
                    limit=60,
                )
            ),
        }
    )
    return table


def _no_agreement(context: AssetExecutionContext, labelers: pl.DataFrame) -> pl.DataFrame:
    note = (
        f"only {labelers.height} labeler in label_cache "
        f"({', '.join(labelers['labeler_version'].to_list()) or 'none'}): agreement needs two; run "
        "the other labeler (BENCHMAP_LABELER=openai or offline) over the same benchmarks"
    )
    context.log.info(note)
    context.add_output_metadata({"note": note, "n_labelers": labelers.height})
    return pl.DataFrame(schema=val.AGREEMENT_COLUMNS)
