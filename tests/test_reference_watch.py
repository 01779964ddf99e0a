"""The landing sensor's watch on the reference files (pipelines/reference_watch.py): a replaced reference file
used to leave everything downstream FRESH on the Dagster UI path, since only run_all recorded the files' data
versions (a probe, 2026-12-07). Stand-in Definitions: a reference asset that reads the real observable source
`reference_source_files`, and labels that read it, as the task index and prompt_task_labels do."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
from dagster import AssetIn, AssetKey, DagsterInstance, DagsterRunStatus, Definitions, asset

from assets import benchmarks as bench_assets
from assets import module_assets, module_checks
from assets.partitions import benchmark_partitions
from assets.sources import reference_source_files
from pipelines.jobs import JOBS
from pipelines.reference_watch import REFERENCE_CHANGED, RELABEL
from pipelines.sensors import SENSORS
from resources import source_versions as sv
from resources.dagster_resources import Warehouse
from resources.io_manager import WarehouseIOManager
from tests.test_benchmarks import Env, add_fixture, analysis_tick, requested


@asset(name="task_index_stub", group_name="reference", deps=[reference_source_files], code_version="1")
def task_index_stub() -> pl.DataFrame:
    return pl.DataFrame({"x": [1]})


@asset(name="prompt_work", group_name="labels", partitions_def=benchmark_partitions, code_version="1",
       metadata={"partition_expr": "benchmark"}, ins={"benchmark_prompts": AssetIn()}, deps=[task_index_stub])
def labels_from_the_index(benchmark_prompts: pl.DataFrame) -> pl.DataFrame:
    return benchmark_prompts.select("benchmark", "prompt_id", "prompt_hash")


@asset(group_name="analysis", deps=[labels_from_the_index, task_index_stub])
def analysis_of_the_labels() -> pl.DataFrame:
    return pl.DataFrame({"x": [1]})


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    raw = tmp_path / "raw"
    (raw / "benchmarks").mkdir(parents=True)
    (raw / "onet").mkdir()
    (raw / "onet" / "Task Statements.txt").write_text("O*NET 29.2\n", encoding="utf-8")
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(raw))
    monkeypatch.setenv("BENCHMAP_MIRROR", str(tmp_path / "mirror"))
    monkeypatch.setenv("BENCHMAP_OFFLINE", "1")
    monkeypatch.setenv("BENCHMAP_ANALYSIS_QUIET_S", "0")
    warehouse = tmp_path / "warehouse" / "benchmap.duckdb"
    monkeypatch.setenv("BENCHMAP_WAREHOUSE", str(warehouse))
    resource = Warehouse(path=str(warehouse))
    defs = Definitions(
        assets=[*module_assets(bench_assets), reference_source_files, task_index_stub, labels_from_the_index,
                analysis_of_the_labels],
        asset_checks=module_checks(bench_assets), jobs=JOBS, sensors=SENSORS,
        resources={"warehouse": resource, "io_manager": WarehouseIOManager(warehouse=resource)})
    return Env(raw / "benchmarks", tmp_path / "mirror", warehouse, defs, DagsterInstance.ephemeral())


def run_reference(setup: Env, tags: dict[str, str]) -> None:
    job = setup.defs.resolve_job_def("reference_refresh_job")
    assert job.execute_in_process(instance=setup.instance, tags=tags).success


def record(setup: Env, result) -> None:  # noqa: ANN001 - a SensorResult
    """What the daemon does with a tick's asset events."""
    for event in result.asset_events or []:
        setup.instance.report_runless_asset_event(event)


def test_a_replaced_reference_file_refreshes_the_reference_data_then_relabels(setup: Env) -> None:
    add_fixture(setup.landing, "tiny_bench")
    first = setup.tick()  # a new instance: the reference data first, with the files' version observed
    assert [r.tags["benchmap/trigger"] for r in first.run_requests] == ["reference first"]
    record(setup, first)
    run_reference(setup, first.run_requests[0].tags)
    second = setup.tick(first.cursor)
    assert requested(second) == ["tiny_bench"]
    assert all(run.success for run in setup.apply(second))
    quiet = setup.tick(second.cursor)
    assert not quiet.run_requests and not quiet.asset_events  # nothing changed: no observation, no request
    assert "labels_reference" in quiet.cursor

    # a new O*NET release replaces a reference file
    before = sv.reference_files_version()
    (setup.landing.parent / "onet" / "Task Statements.txt").write_text("O*NET 30.0\n", encoding="utf-8")
    changed = setup.tick(quiet.cursor)
    assert sv.reference_files_version() != before
    assert [(r.job_name, r.tags["benchmap/trigger"]) for r in changed.run_requests] == [
        ("reference_refresh_job", REFERENCE_CHANGED)]
    assert [e.asset_key for e in changed.asset_events] == [sv.REFERENCE_FILES_KEY]  # the UI now shows it stale
    record(setup, changed)
    # while that run is pending, nothing else is requested (a labeling would read a task index being rewritten)
    launched = setup.instance.create_run_for_job(setup.defs.resolve_job_def("reference_refresh_job"),
                                                 tags={"benchmap/kind": "reference"})
    waiting = setup.tick(quiet.cursor)
    assert not waiting.run_requests and "a run making the reference data is about to start" in waiting.skip_reason.skip_message
    setup.instance.delete_run(launched.run_id)
    automation = analysis_tick(setup).cursor  # the automation's first tick starts its clock
    run_reference(setup, changed.run_requests[0].tags)
    # the analysis waits for the relabels (it would publish labels of the older task index, then run again)
    assert analysis_tick(setup, automation).run_requests == []
    # the labels were made from the older task index: relabeled (from the cache), once
    relabel = setup.tick(quiet.cursor)
    assert [(r.partition_key, r.tags["benchmap/trigger"]) for r in relabel.run_requests] == [("tiny_bench", RELABEL)]
    assert all(run.success for run in setup.apply(relabel))
    after = setup.tick(relabel.cursor)
    assert not after.run_requests and not after.asset_events
    due = analysis_tick(setup, automation)  # labels current: the analysis runs, once
    assert [set(r.asset_selection) for r in due.run_requests] == [{AssetKey("analysis_of_the_labels")}]


def test_a_relabel_that_keeps_failing_is_given_up(setup: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.landing_sensor import MAX_REFRESH_RETRIES

    add_fixture(setup.landing, "tiny_bench")
    first = setup.tick()
    record(setup, first)
    run_reference(setup, first.run_requests[0].tags)
    second = setup.tick(first.cursor)
    assert all(run.success for run in setup.apply(second))
    (setup.landing.parent / "onet" / "Task Statements.txt").write_text("O*NET 30.0\n", encoding="utf-8")
    changed = setup.tick(second.cursor)
    record(setup, changed)
    run_reference(setup, changed.run_requests[0].tags)
    cursor = second.cursor
    keys = []
    for _ in range(MAX_REFRESH_RETRIES + 1):
        tick = setup.tick(cursor)
        assert requested(tick) == ["tiny_bench"]
        keys.append(tick.run_requests[0].run_key)
        run = setup.instance.create_run_for_job(setup.defs.resolve_job_def("benchmark_refresh_job"),
                                                tags=tick.run_requests[0].tags)
        setup.instance.report_run_failed(run)
        assert setup.instance.get_run_by_id(run.run_id).status == DagsterRunStatus.FAILURE
        cursor = tick.cursor
    assert len(set(keys)) == len(keys)  # each retry a key of its own: the daemon never launches a key twice
    last = setup.tick(cursor)
    assert not last.run_requests and "relabel after a reference change failed" in last.skip_reason.skip_message


def test_a_reference_refresh_that_keeps_failing_is_requested_a_bounded_number_of_times(setup: Env) -> None:
    from pipelines.landing_sensor import MAX_REFRESH_RETRIES

    add_fixture(setup.landing, "tiny_bench")
    first = setup.tick()
    record(setup, first)
    run_reference(setup, first.run_requests[0].tags)
    (setup.landing.parent / "onet" / "Task Statements.txt").write_text("O*NET 30.0\n", encoding="utf-8")
    keys = []
    for _ in range(MAX_REFRESH_RETRIES + 1):
        tick = setup.tick(first.cursor)
        record(setup, tick)
        assert [r.job_name for r in tick.run_requests] == ["reference_refresh_job"]
        keys.append(tick.run_requests[0].run_key)
        run = setup.instance.create_run_for_job(setup.defs.resolve_job_def("reference_refresh_job"),
                                                tags=tick.run_requests[0].tags)
        setup.instance.report_run_failed(run)
    assert len(set(keys)) == len(keys)
    last = setup.tick(first.cursor)
    assert not last.run_requests and f"failed in {MAX_REFRESH_RETRIES + 1} runs" in \
        last.skip_reason.skip_message


def landed(setup: Env, *names: str) -> str:
    """A cursor after the reference data and `names` were made on a new instance."""
    for name in names:
        add_fixture(setup.landing, "tiny_bench", None if name == "tiny_bench" else name)
    first = setup.tick()
    record(setup, first)
    run_reference(setup, first.run_requests[0].tags)
    second = setup.tick(first.cursor)
    assert requested(second) == sorted(names)
    assert all(run.success for run in setup.apply(second))
    return second.cursor


def test_reference_files_back_and_forth_are_refreshed_every_time(setup: Env) -> None:
    """A probe (2026-12-08) changed a reference file back and forth: the watch counted the runs that had made each
    version, succeeded included, and after four it held the sensor for good ("did not make them in 4 runs"), the
    analysis with it. Only failed runs count now."""
    from pipelines.landing_sensor import MAX_REFRESH_RETRIES

    cursor = landed(setup, "tiny_bench")
    statements = setup.landing.parent / "onet" / "Task Statements.txt"
    for turn in range(2 * (MAX_REFRESH_RETRIES + 2)):  # each version made MAX_REFRESH_RETRIES + 2 times
        statements.write_text(f"O*NET {'30.0' if turn % 2 == 0 else '29.2'}\n", encoding="utf-8")
        changed = setup.tick(cursor)
        record(setup, changed)
        assert [r.tags["benchmap/trigger"] for r in changed.run_requests] == [REFERENCE_CHANGED], turn
        run_reference(setup, changed.run_requests[0].tags | {"dagster/run_key": changed.run_requests[0].run_key})
        relabel = setup.tick(cursor)
        assert requested(relabel) == ["tiny_bench"], turn
        assert all(run.success for run in setup.apply(relabel))
        cursor = relabel.cursor
        assert not setup.tick(cursor).run_requests


def test_a_benchmark_whose_folder_is_gone_does_not_hold_the_analysis(setup: Env) -> None:
    """After a reference change the sensor relabels the partitions with a folder; one whose folder was removed keeps
    its rows until run_all retires it and is not relabeled, so the analysis must not wait for it (a probe,
    2026-12-08: it waited for good, and nothing said so)."""
    cursor = landed(setup, "tiny_bench", "tiny_two")
    shutil.rmtree(setup.landing / "tiny_two")
    automation = analysis_tick(setup).cursor
    (setup.landing.parent / "onet" / "Task Statements.txt").write_text("O*NET 30.0\n", encoding="utf-8")
    changed = setup.tick(cursor)
    record(setup, changed)
    run_reference(setup, changed.run_requests[0].tags)
    relabel = setup.tick(cursor)
    assert requested(relabel) == ["tiny_bench"]
    assert analysis_tick(setup, automation).run_requests == []  # tiny_bench's relabel first
    assert all(run.success for run in setup.apply(relabel))
    due = analysis_tick(setup, automation)
    assert [set(r.asset_selection) for r in due.run_requests] == [{AssetKey("analysis_of_the_labels")}]
