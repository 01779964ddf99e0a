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
from models.reference_labels import REFERENCE_SCHEMA
from models.validation import GOLD_SCHEMA
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


# every analysis step that reads the prompt labels (prompt_task_labels, prompt_work, the label cache, the label
# counts, the per-prompt estimates), one output of each; the steps that only derive from these steps' tables
# (occupation_coverage, major_group_coverage, task_analysis_frame, coverage_models, coverage_regressions_mi) are
# not run when one of them refuses, and alone they recompute what those tables hold
LABEL_READERS = {"task_label_counts": "task_label_counts", "task_coverage": "task_coverage",
                 "coverage_sensitivity": "coverage_sensitivity", "occupation_model_scores": "occupation_model_scores",
                 "occupation_model_scores_estimated": "occupation_model_scores_estimated",
                 "benchmark_index_membership": "benchmark_index_membership", "gap_finder": "coverage_gaps",
                 "occupation_score_power": "occupation_score_power", "labeler_validation": "labeler_validation",
                 "coverage_map": "coverage_map", "report_figures": "report_figures", "report_summary": "report_summary"}


def stored(path: Path, name: str) -> pl.DataFrame | None:
    with wh.connect(path, read_only=True) as con:
        if not wh.table_exists(con, name):
            return None
    return wh.read_table(path, name)


@pytest.fixture(scope="module")
def behind_world(world: dict[str, pl.DataFrame], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, int]:
    """A warehouse of the world whose first benchmark's prompts were refreshed without its labels (copied per
    test: a step that is not refused writes into it)."""
    path = tmp_path_factory.mktemp("behind") / "benchmap.duckdb"
    fill_warehouse(world, path)
    wh.replace_table(path, "task_label_counts", cov.label_counts(world["prompt_task_labels"]))
    # labeler_validation's other inputs: no human or reference label in this world
    wh.replace_table(path, "gold_task_labels", pl.DataFrame(schema=GOLD_SCHEMA))
    wh.replace_table(path, "reference_task_labels", pl.DataFrame(schema=REFERENCE_SCHEMA))
    moved = sorted(world["benchmark_prompts"]["benchmark"].unique())[0]
    refresh_prompts_only(path, world, moved)
    return path, moved, world["benchmark_prompts"].filter(pl.col("benchmark") == moved).height


@pytest.mark.parametrize("step", LABEL_READERS)
def test_an_analysis_step_that_reads_the_labels_refuses_them_behind_the_prompts(
        behind_world: tuple[Path, str, int], warehouse: Path, step: str) -> None:
    """Before: materialized from the UI (or by a sensor's run) while a benchmark's labels were of its old texts,
    each of these steps succeeded, its table or page computed from the old labels of the new prompts."""
    source, moved, n_prompts = behind_world
    warehouse.parent.mkdir(parents=True)
    warehouse.write_bytes(source.read_bytes())
    asset = LABEL_READERS[step]
    before = stored(warehouse, asset)
    result = run(warehouse, asset)
    assert not result.success
    message = failure(result)
    assert message.startswith(f"{step}: not run, nothing published (there is no release yet): labels behind the "
                              f"prompts ({moved}: {n_prompts} prompts without labels, labels of {n_prompts} texts it "
                              "no longer has)"), message
    assert f"benchmark_refresh_job for partition {moved}" in message
    assert not result.get_asset_materialization_events()
    assert stored(warehouse, asset) is None if before is None else stored(warehouse, asset).equals(before)

    if step in ("task_label_counts", "gap_finder"):  # once the labels catch up, the step runs
        catch_up_labels(warehouse, moved)
        assert run(warehouse, asset).success


def test_the_whatif_of_a_candidate_refuses_labels_behind_but_not_its_skip(
        behind_world: tuple[Path, str, int], warehouse: Path, tmp_path: Path) -> None:
    """A candidate is compared with the landed labels: behind their prompts, the gain would be against both
    contents. Without a candidate (every analysis run) the step does nothing and is not refused."""
    from pipelines.definitions import build_definitions

    source, moved, _ = behind_world
    warehouse.parent.mkdir(parents=True)
    warehouse.write_bytes(source.read_bytes())
    candidate = tmp_path / "cand"
    candidate.mkdir()
    (candidate / "prompts.jsonl").write_text('{"prompt_id": "1", "prompt": "Inspect the boiler"}\n')
    defs = build_definitions(str(warehouse))
    [step] = [a for a in defs.assets if AssetKey("whatif_marginal_gain") in getattr(a, "keys", ())]

    def whatif(folder: str) -> Any:
        return materialize(list(defs.assets), selection=AssetSelection.assets(*step.keys).without_checks(),
                           resources=defs.resources, instance=DagsterInstance.ephemeral(), raise_on_error=False,
                           run_config={"ops": {"candidate_benchmark_whatif": {"config": {"candidate_folder": folder}}}})

    assert whatif("").success
    refused = whatif(str(candidate))
    assert not refused.success
    assert failure(refused).startswith("candidate_benchmark_whatif: not run, nothing published (there is no release "
                                       f"yet): labels behind the prompts ({moved}: ")


def test_the_release_waits_for_a_broken_index_file(world: dict[str, pl.DataFrame], warehouse: Path,
                                                    tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-character typo in an index file (`maxx = 3`) left its index out of a new release that `latest` then
    named: its figures and summary were gone, listed as "removed" with no reason (a probe, 2026-12-07). Now the
    release step fails naming the file and line, `latest` stands, and the mended file releases."""
    fill_warehouse(world, warehouse)
    wh.replace_table(warehouse, "task_label_counts", cov.label_counts(world["prompt_task_labels"]))
    folder = tmp_path / "indexes"
    folder.mkdir()
    monkeypatch.setenv("BENCHMAP_INDEX_DIR", str(folder))
    (folder / "mine.toml").write_text('title = "Mine"\nversion = "1"\n[cap]\nmaxx = 3\n')
    root = warehouse.parent / "exports"

    refused = run(warehouse, "exports")
    assert not refused.success
    message = failure(refused)
    assert message.startswith("exports: not run, nothing published (there is no release yet): 1 index file(s) "
                              "broken, so their indexes are not computed and a release would drop them: mine: "), message
    assert f"{folder / 'mine.toml'}, line 4: unknown field 'maxx' in [cap]" in message
    assert rl.list_releases(root) == [] and not (root / "latest").exists()

    (folder / "mine.toml").write_text('title = "Mine"\nversion = "1"\n')
    assert run(warehouse, "exports").success
    assert [f.name[:10] for f in rl.list_releases(root)] == ["2031-02-03"]


def test_the_summary_names_landing_folders_the_warehouse_does_not_hold(world: dict[str, pl.DataFrame],
                                                                        warehouse: Path) -> None:
    """The UI's analysis over 1 materialized partition of 29 published "1 of the 1 landed benchmarks count", with
    nothing about the 28 folders never refreshed (a probe, 2026-12-07): the summary now names them under the
    answer."""
    import shutil

    from tests.test_benchmarks import FIXTURES

    fill_warehouse(world, warehouse)
    wh.replace_table(warehouse, "task_label_counts", cov.label_counts(world["prompt_task_labels"]))
    landing = warehouse.parent.parent / "raw" / "benchmarks"  # the fixture's BENCHMAP_RAW_DIR
    shutil.copytree(FIXTURES / "tiny_bench", landing / "tiny_bench")
    assert "tiny_bench" not in set(world["benchmarks"]["benchmark"])
    assert run(warehouse, "report_summary").success
    [summary] = (warehouse.parent / "exports").rglob("summary.md")
    assert ("_Not in these figures: 1 landing folder with no rows in the warehouse (tiny_bench): never refreshed, "
            "or their first refresh failed.") in summary.read_text()


def test_the_label_counts_without_labels_fail_and_say_which_table(warehouse: Path) -> None:
    """`task_label_counts` materialized alone before any labels logged a warning and succeeded with an empty table
    (a probe of the UI path, 2026-12-07): a failure reported as a success."""
    result = run(warehouse, "task_label_counts")
    assert not result.success
    assert failure(result).startswith("task_label_counts: not run, nothing published (there is no release yet): the "
                                      "warehouse has no prompt_task_labels (1 of the 1 tables it is made of)")


@pytest.mark.parametrize("asset", ["labeler_validation", "labeler_agreement", "gold_annotation_sample"])
def test_the_label_validations_without_labels_fail_and_say_which_table(
        asset: str, world: dict[str, pl.DataFrame], warehouse: Path) -> None:
    """Materialized before any labels (the UI's "Materialize selected" on a warehouse with its reference and
    benchmark tables), these succeeded with empty tables: a validation of nothing, an annotators' sheet of no
    prompt (a probe of the UI path, 2026-12-07). Now each fails naming the labels."""
    import duckdb

    fill_warehouse(world, warehouse)
    wh.replace_table(warehouse, "gold_task_labels", pl.DataFrame(schema=GOLD_SCHEMA))
    wh.replace_table(warehouse, "reference_task_labels", pl.DataFrame(schema=REFERENCE_SCHEMA))
    with duckdb.connect(str(warehouse)) as con:
        con.execute("drop table prompt_task_labels")
    result = run(warehouse, asset)
    assert not result.success
    assert failure(result).startswith(f"{asset}: not run, nothing published (there is no release yet): the "
                                      "warehouse has no prompt_task_labels (1 of the 1 tables it is made of)")
