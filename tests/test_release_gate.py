"""The headline and release steps refuse, in a run Dagster launches (the UI, the analysis automation, `dagster asset
materialize`), what run_all refuses before its analysis (assets/release_gate.py).

An audit of the Dagster path: after a benchmark's prompts changed and only its benchmark tables were refreshed (its
labeling failed, or only those tables were materialized), `analysis_refresh_job` succeeded and published, as
`latest`, a headline of 7.9% / 127.4 occupations instead of 8.0% / 129.2 (the benchmark's labels were of its old
texts); `exports` materialized alone on a warehouse without the analysis published an empty release as `latest` and
succeeded, and `coverage_map` alone failed with DuckDB's `Catalog Error` from deep in its SQL.

On tests/test_exports.py's world (every exported table, computed from simulated labels) written to a warehouse.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from dagster import AssetKey, AssetSelection, DagsterInstance, materialize

from assets.export_context import EXPORT_DATE_TAG
from models import coverage as cov
from resources import release as rl
from resources import warehouse as wh
from tests.test_exports import build_world, fill_warehouse


@pytest.fixture(scope="module")
def world() -> dict[str, pl.DataFrame]:
    return build_world()


@pytest.fixture
def warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(tmp_path / "raw"))
    monkeypatch.setenv("BENCHMAP_MIRROR", str(tmp_path / "no_mirror"))
    monkeypatch.setenv("BENCHMAP_OFFLINE", "1")
    return tmp_path / "warehouse" / "benchmap.duckdb"


def run(path: Path, asset: str) -> Any:
    """`asset` materialized alone (no check; with the other outputs of its step), as the UI's "Materialize
    selected" does."""
    from pipelines.definitions import build_definitions

    defs = build_definitions(str(path))
    [step] = [a for a in defs.assets if AssetKey(asset) in getattr(a, "keys", ())]
    return materialize(list(defs.assets), selection=AssetSelection.assets(*step.keys).without_checks(),
                       resources=defs.resources, instance=DagsterInstance.ephemeral(),
                       tags={EXPORT_DATE_TAG: "2031-02-03"}, raise_on_error=False)


def failure(result: Any) -> str:
    messages = [event.event_specific_data.user_failure_data.description for event in result.all_events
                if event.is_step_failure and event.event_specific_data.user_failure_data is not None]
    assert len(messages) == 1, [e.event_specific_data.error.message for e in result.all_events if e.is_step_failure]
    return messages[0]


def refresh_prompts_only(path: Path, world: dict[str, pl.DataFrame], benchmark: str) -> None:
    """What a benchmark refresh whose labeling failed leaves: the benchmark's prompts have new texts (new hashes),
    its label tables still hold the old ones."""
    prompts = world["benchmark_prompts"].with_columns(
        pl.when(pl.col("benchmark") == benchmark).then(pl.col("prompt") + " (second edition)").otherwise(
            pl.col("prompt")).alias("prompt"))
    prompts = prompts.with_columns(pl.when(pl.col("benchmark") == benchmark).then(
        pl.col("prompt").map_elements(lambda text: hashlib.sha256(text.encode()).hexdigest(), return_dtype=pl.Utf8)).otherwise(
        pl.col("prompt_hash")).alias("prompt_hash"))
    wh.replace_table(path, "benchmark_prompts", prompts)


def catch_up_labels(path: Path, benchmark: str) -> None:
    """What the labeling that finishes the refresh writes: the labels of the current texts."""
    new = wh.read_table(path, "benchmark_prompts").select("benchmark", "prompt_id", pl.col("prompt_hash").alias("new"))
    for table in ("prompt_task_labels", "prompt_work"):
        rows = wh.read_table(path, table).join(new, on=["benchmark", "prompt_id"], how="left")
        wh.replace_table(path, table, rows.with_columns(pl.when(pl.col("benchmark") == benchmark).then(
            pl.col("new")).otherwise(pl.col("prompt_hash")).alias("prompt_hash")).drop("new"))


def test_the_release_refuses_labels_behind_their_prompts_until_they_catch_up(
        world: dict[str, pl.DataFrame], warehouse: Path) -> None:
    fill_warehouse(world, warehouse)
    wh.replace_table(warehouse, "task_label_counts", cov.label_counts(world["prompt_task_labels"]))
    moved = sorted(world["benchmark_prompts"]["benchmark"].unique())[0]
    n_prompts = world["benchmark_prompts"].filter(pl.col("benchmark") == moved).height
    refresh_prompts_only(warehouse, world, moved)
    root = warehouse.parent / "exports"

    exports = run(warehouse, "exports")
    assert not exports.success  # it succeeded and published the mixed figures as `latest`
    message = failure(exports)
    assert message.startswith("exports: not run, nothing published (there is no release yet): labels behind the "
                              f"prompts ({moved}: {n_prompts} prompts without labels, labels of {n_prompts} texts it "
                              "no longer has)"), message
    assert f"benchmark_refresh_job for partition {moved}" in message
    assert rl.list_releases(root) == [] and not (root / "latest").exists()
    assert not (root / "headline_history.csv").exists()

    # the headline step (every published figure) refuses too, before it reads anything: what the analysis
    # automation's run meets first
    before = wh.read_table(warehouse, "headline_estimates")
    headline = run(warehouse, "headline_estimates")
    assert not headline.success
    assert failure(headline).startswith("headline_estimates: not run, nothing published (there is no release yet): "
                                        f"labels behind the prompts ({moved}: ")
    assert wh.read_table(warehouse, "headline_estimates").equals(before)  # untouched

    catch_up_labels(warehouse, moved)
    released = run(warehouse, "exports")
    assert released.success
    assert [folder.name[:10] for folder in rl.list_releases(root)] == ["2031-02-03"]


@pytest.mark.parametrize("step", ["exports", "report_summary", "coverage_map"])
def test_a_release_step_on_a_warehouse_without_the_analysis_says_what_to_run(warehouse: Path, step: str) -> None:
    """A fresh warehouse (nothing materialized): `exports` published an empty release as `latest` and succeeded,
    report_summary wrote a summary of "not available" lines and succeeded, coverage_map failed with DuckDB's
    `Catalog Error: Table with name occupation_coverage does not exist!` from deep in its SQL."""
    result = run(warehouse, step)
    assert not result.success
    message = failure(result)
    assert message.startswith(f"{step}: not run, nothing published (there is no release yet): the warehouse has no "
                              "coverage_headline, task_coverage, "), message
    assert "(10 of the 10 tables it is made of)" in message
    assert "analysis_refresh_job" in message and "python -m pipelines.run_all" in message
    root = warehouse.parent / "exports"
    assert not root.exists() or rl.list_releases(root) == []
    assert AssetKey(step) not in {e.asset_key for e in result.get_asset_materialization_events()}
