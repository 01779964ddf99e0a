"""A benchmark that drops prompts the vendored task-level reference judged (a new version with fewer items)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from dagster import build_asset_context

from assets.label_validation import reference_task_labels
from resources import readers
from resources.dagster_resources import Warehouse


def test_a_judged_prompt_removed_from_its_benchmark_is_left_out_not_a_failed_analysis(
        tmp_path: Path, monkeypatch) -> None:
    """An audit of the daemon path: apex_agents' prompts.jsonl cut to its first 30 lines (a benchmark release with
    fewer items) failed `reference_task_labels` with `InputError: prompt apex_agents/... is not in
    benchmark_prompts (19 reference rows have no landed prompt)`, so labeler_validation, the report and `exports`
    did not run: no release for any benchmark until the prompts came back (the vendored reference cannot be
    edited by the user). A judged prompt whose text changed was already left out with a warning; a removed one
    is the same case."""
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(tmp_path / "raw"))  # the vendored reference, not an override
    reference = readers.load_reference(readers.REFERENCE_DIR)
    judged = reference.filter(pl.col("benchmark") == "cybench")
    keys = judged.select("benchmark", "prompt_id", "prompt_hash").unique().sort("prompt_id")
    removed, changed = keys["prompt_id"][0], keys["prompt_id"][1]
    prompts = (keys.filter(pl.col("prompt_id") != removed)
               .with_columns(pl.when(pl.col("prompt_id") == changed).then(pl.lit("new text hash"))
                             .otherwise(pl.col("prompt_hash")).alias("prompt_hash")))
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    warehouse.replace_table("benchmark_prompts", prompts)
    tasks = pl.DataFrame({"task_id": sorted({t for ids in reference["task_ids"] for t in ids})})

    context = build_asset_context()
    rows = reference_task_labels(context, warehouse=warehouse, onet_tasks=tasks)

    assert set(rows["benchmark"]) == {"cybench"}
    kept = set(rows["prompt_id"])
    assert removed not in kept and changed not in kept
    assert kept == set(keys["prompt_id"]) - {removed, changed}
    metadata = context.get_output_metadata("result")
    assert metadata["removed_prompts_left_out"] == judged.filter(pl.col("prompt_id") == removed).height
    assert metadata["changed_prompts_left_out"] == judged.filter(pl.col("prompt_id") == changed).height
