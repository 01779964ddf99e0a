"""The landing sensor's retries of a refresh that did not succeed, and the retirement of a benchmark whose landing
folder was removed (the sensor's advice, run_all's removal).

Uses the stand-in Definitions and landing zone of tests/test_benchmarks.py (its `env` fixture).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from dagster import (
    AssetIn,
    AssetKey,
    DagsterInstance,
    DagsterRunStatus,
    Definitions,
    SensorResult,
    asset,
    build_sensor_context,
)

from assets import benchmarks as bench_assets
from assets import module_assets, module_checks
from assets.partitions import benchmark_partitions
from models import benchmarks as bm
from pipelines import run_all
from pipelines.jobs import JOBS
from pipelines.landing_sensor import MAX_REFRESH_RETRIES, benchmark_landing_sensor
from resources import warehouse as wh
from resources.dagster_resources import Warehouse
from resources.io_manager import WarehouseIOManager
from resources.landing import folder_content_hash
from tests.test_benchmarks import Env, add_fixture, env, reference_stub, requested  # noqa: F401 - env is a fixture


def edit_a_prompt(folder: Path, suffix: str) -> None:
    """A new content hash for the folder: one prompt's text changes."""
    lines = (folder / "prompts.jsonl").read_text(encoding="utf-8").rstrip("\n").split("\n")
    record = json.loads(lines[0])
    record["prompt"] += suffix
    lines[0] = json.dumps(record, ensure_ascii=False)
    (folder / "prompts.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def logged_tick(setup: Env, cursor: str | None, caplog: pytest.LogCaptureFixture) -> SensorResult:
    """A tick whose log lines reach caplog (the sensor's logger is Dagster's own, outside logging's tree)."""
    context = build_sensor_context(instance=setup.instance, cursor=cursor, definitions=setup.defs)
    context.log.addHandler(caplog.handler)
    return benchmark_landing_sensor(context)


def stored_hash(setup: Env, name: str) -> str:
    return setup.table("benchmarks", name)["content_hash"][0]


def test_a_cancelled_refresh_is_requested_again_once_it_has_ended(env: Env) -> None:  # noqa: F811
    """The cursor records a content when its run is requested, and run_key name:hash never launches twice: a
    cancelled (or failed) run left the partition on the old content until the folder changed again."""
    folder = add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    assert all(run.success for run in env.apply(first))
    edit_a_prompt(folder, " (second edition)")
    digest = folder_content_hash(folder)
    changed = env.tick(first.cursor)
    assert [r.run_key for r in changed.run_requests] == [f"tiny_bench:{digest}"]
    job = env.defs.resolve_job_def("benchmark_refresh_job")
    tags = {**job.tags, **changed.run_requests[0].tags}
    run = env.instance.create_run_for_job(job, status=DagsterRunStatus.STARTED, tags=tags)  # as the daemon does

    waiting = env.tick(changed.cursor)
    assert waiting.run_requests == []  # its run is still in progress: not twice
    env.instance.report_run_canceled(run)
    assert stored_hash(env, "tiny_bench") != digest

    retry = env.tick(waiting.cursor)
    assert [r.run_key for r in retry.run_requests] == [f"tiny_bench:{digest}:retry-1"]
    assert retry.run_requests[0].tags["benchmap/trigger"] == "retry"
    assert all(run.success for run in env.apply(retry))
    assert stored_hash(env, "tiny_bench") == digest
    # nothing changed and nothing failed: nothing, with the cursor or a fresh one
    assert env.tick(retry.cursor).run_requests == []
    assert env.tick(None).run_requests == []


def test_a_refresh_that_keeps_failing_is_retried_a_bounded_number_of_times(
        env: Env, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    """Every run of this content fails (a results file the refresh refuses): the first run and MAX_REFRESH_RETRIES
    retries, each logged; then one warning and nothing more until the folder changes."""
    folder = add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    env.apply(first)
    results = (folder / "results.csv").read_bytes()
    (folder / "results.csv").write_bytes(b"")  # fails every run: it would erase the stored results
    digest = folder_content_hash(folder)
    tick = env.tick(first.cursor)
    assert requested(tick) == ["tiny_bench"]
    assert not any(run.success for run in env.apply(tick))
    keys = []
    for _ in range(MAX_REFRESH_RETRIES):
        tick = logged_tick(env, tick.cursor, caplog)
        keys += [r.run_key for r in tick.run_requests]
        assert not any(run.success for run in env.apply(tick))
    assert keys == [f"tiny_bench:{digest}:retry-{n}" for n in range(1, MAX_REFRESH_RETRIES + 1)]
    assert "refresh of content" in caplog.text and "requesting it again (retry 1 of" in caplog.text

    caplog.clear()
    given_up = logged_tick(env, tick.cursor, caplog)
    assert given_up.run_requests == []
    assert f"did not succeed in {MAX_REFRESH_RETRIES + 1} runs" in caplog.text  # said once ...
    caplog.clear()
    quiet = logged_tick(env, given_up.cursor, caplog)
    assert quiet.run_requests == []
    assert "did not succeed" not in caplog.text and "retry" not in caplog.text  # ... not on every tick
    # ... but every quiet tick names it (a real daemon's said "1 refreshes given up after 3 retries", not which)
    assert quiet.skip_reason is not None
    assert "given up after 3 retries (tiny_bench: requested again when the folder changes)" in \
        quiet.skip_reason.skip_message

    (folder / "results.csv").write_bytes(results)  # fixed, back to the first content, which the warehouse holds
    fixed = env.tick(given_up.cursor)  # (every failed run failed before writing): nothing to refresh, none given up
    assert fixed.run_requests == [] and stored_hash(env, "tiny_bench") == folder_content_hash(folder)
    assert fixed.skip_reason is not None and "given up" not in fixed.skip_reason.skip_message
    (folder / "results.csv").write_bytes(results + b"\n")  # a content never made: requested
    assert requested(env.tick(fixed.cursor)) == ["tiny_bench"]


def test_a_given_up_refresh_made_since_by_hand_is_no_longer_reported(env: Env) -> None:  # noqa: F811
    """An audit on a real daemon: after the sensor gave up on apex_agents (an HTTP 401 in labeling, 4 runs), a
    benchmark_refresh_job launched from the UI made that content, yet every quiet tick still said "2 refreshes
    given up after 3 retries", naming a benchmark that was up to date."""
    folder = add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    assert all(run.success for run in env.apply(first))
    edit_a_prompt(folder, " (second edition)")
    tick = env.tick(first.cursor)
    job = env.defs.resolve_job_def("benchmark_refresh_job")
    for _ in range(MAX_REFRESH_RETRIES + 1):  # the first run and every retry end cancelled
        assert len(tick.run_requests) == 1
        run = env.instance.create_run_for_job(job, status=DagsterRunStatus.STARTED,
                                              tags={**job.tags, **tick.run_requests[0].tags})
        env.instance.report_run_canceled(run)
        tick = env.tick(tick.cursor)
    assert tick.run_requests == [] and tick.skip_reason is not None
    assert "; 1 refresh given up after 3 retries (tiny_bench: requested again" in tick.skip_reason.skip_message

    assert env.run_partition("tiny_bench").success  # by hand (the UI), once the cause is gone
    assert stored_hash(env, "tiny_bench") == folder_content_hash(folder)
    quiet = env.tick(tick.cursor)
    assert quiet.run_requests == [] and quiet.skip_reason is not None
    assert "given up" not in quiet.skip_reason.skip_message
    assert "given_up" not in json.loads(quiet.cursor)


def test_an_analysis_run_launched_from_the_asset_graph_holds_back_a_refresh(env: Env) -> None:  # noqa: F811
    """An audit on a real daemon: an analysis run launched on the asset graph (the UI's Materialize, launchRun of
    the implicit asset job: no benchmap/kind tag) did not hold back the landing sensor, which refreshed apex_agents
    12 s into it; that run then published its release from tables read before and after the refresh."""
    folder = add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    assert all(run.success for run in env.apply(first))
    edit_a_prompt(folder, " (second edition)")
    analysis = env.defs.resolve_implicit_global_asset_job_def().get_subset(
        asset_selection={AssetKey("analysis_stub")})
    ui_run = env.instance.create_run_for_job(analysis, status=DagsterRunStatus.STARTED,
                                             asset_selection=frozenset({AssetKey("analysis_stub")}))
    held = env.tick(first.cursor)
    assert held.run_requests == [] and held.skip_reason is not None
    assert "an analysis run is queued or running" in held.skip_reason.skip_message
    env.instance.report_run_canceled(ui_run)
    assert requested(env.tick(held.cursor)) == ["tiny_bench"]
    # a run of other assets without the tag (the reference) holds nothing back
    reference = env.defs.resolve_implicit_global_asset_job_def().get_subset(
        asset_selection={AssetKey("reference_stub")})
    env.instance.create_run_for_job(reference, status=DagsterRunStatus.STARTED,
                                    asset_selection=frozenset({AssetKey("reference_stub")}))
    edit_a_prompt(folder, " (third edition)")
    assert requested(env.tick(held.cursor)) == ["tiny_bench"]


def test_a_folder_back_to_an_earlier_content_is_refreshed(env: Env) -> None:  # noqa: F811
    """A second read: content X -> Y -> X asked again for run key name:X, which the daemon had launched already,
    so no run started and the partition kept Y's rows."""
    folder = add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    assert all(run.success for run in env.apply(first))
    original = folder_content_hash(folder)
    saved = (folder / "prompts.jsonl").read_bytes()
    edit_a_prompt(folder, " (second edition)")
    second = env.tick(first.cursor)
    assert all(run.success for run in env.apply(second))
    (folder / "prompts.jsonl").write_bytes(saved)  # back to the first content
    back = env.tick(second.cursor)
    assert [r.run_key for r in back.run_requests] == [f"tiny_bench:{original}:again-1"]
    assert all(run.success for run in env.apply(back))
    assert stored_hash(env, "tiny_bench") == original
    assert env.tick(back.cursor).run_requests == []


def test_a_folder_refreshed_by_run_all_since_the_last_tick_is_not_refreshed_again(env: Env) -> None:  # noqa: F811
    """A probe (2026-12-07): a folder changed, `run_all --benchmarks` refreshed it, and the sensor's next tick,
    whose cursor still held the old content, requested the refresh again (nothing to label), and a whole analysis
    run followed. Content a successful run made since counts as seen; a change after it is still requested."""
    folder = add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    assert all(run.success for run in env.apply(first))
    edit_a_prompt(folder, " (second edition)")
    assert run_all.main(["--benchmarks", "tiny_bench"], defs=env.defs, instance=env.instance) == 0
    assert stored_hash(env, "tiny_bench") == folder_content_hash(folder)
    quiet = env.tick(first.cursor)
    assert quiet.run_requests == []  # it asked for tiny_bench:<the new content>
    edit_a_prompt(folder, " (third edition)")
    assert [r.partition_key for r in env.tick(quiet.cursor).run_requests] == ["tiny_bench"]


def test_run_all_retires_a_benchmark_whose_partition_was_deleted_by_hand(
        env: Env, capsys: pytest.CaptureFixture) -> None:  # noqa: F811
    """The sensor's old advice for a removed folder, "delete the partition", disabled run_all's removal (it only
    looked at registered partitions): the rows stayed in every table and the release, and the run exited 0."""
    add_fixture(env.landing, "tiny_bench")
    gone = add_fixture(env.mirror, "tiny_bench", "tiny_two")
    assert run_all.main([], defs=env.defs, instance=env.instance) == 0
    shutil.rmtree(gone)
    result = env.tick()
    assert json.loads(result.cursor)["missing"] == ["tiny_two"]
    env.instance.delete_dynamic_partition("benchmark", "tiny_two")
    capsys.readouterr()

    assert run_all.main([], defs=env.defs, instance=env.instance) == 0
    out = capsys.readouterr().out
    assert "removed benchmark tiny_two (its landing folder is gone)" in out
    for table in ("benchmarks", "benchmark_prompts", "benchmark_results", "prompt_work"):
        assert env.table(table, "tiny_two").height == 0, table
        assert env.table(table, "tiny_bench").height > 0, table
    assert wh.query(env.warehouse, "select benchmark from analysis_stub")["benchmark"].to_list() == ["tiny_bench"]
    assert env.instance.get_dynamic_partitions("benchmark") == ["tiny_bench"]
    assert bm.LANDING_PARTITION not in env.table("benchmarks")["benchmark"].to_list()


def test_the_sensor_says_how_to_retire_a_removed_benchmark(
        env: Env, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    folder = add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    env.apply(first)
    shutil.rmtree(folder)
    warned = logged_tick(env, first.cursor, caplog)
    assert "python -m pipelines.run_all" in caplog.text
    assert "delete the partition" not in caplog.text
    # every quiet tick names it (a real daemon's said "1 partitions without a folder", not which)
    quiet = env.tick(warned.cursor)
    assert quiet.skip_reason is not None
    assert "; 1 partition without a folder (tiny_bench: `python -m pipelines.run_all` retires it)" in \
        quiet.skip_reason.skip_message


def test_a_folder_that_cannot_land_is_warned_once_and_named_in_every_quiet_tick(
        env: Env, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    """A folder that cannot be a benchmark (a bad name, no prompts.jsonl): its warning was logged on every tick (every
    30 s, for ever), and the quiet tick's reason, "1 benchmark folders unchanged", did not say it was skipped."""
    add_fixture(env.landing, "tiny_bench")
    add_fixture(env.landing, "tiny_bench", "Bad-Name")
    (env.landing / "no_prompts").mkdir()
    first = logged_tick(env, None, caplog)
    assert requested(first) == [bm.LANDING_PARTITION, "tiny_bench"]  # the problems are recorded under `_landing`
    assert caplog.text.count("landing problem") == 2 and "'Bad-Name' is not a safe benchmark identifier" in caplog.text
    assert all(run.success for run in env.apply(first))

    caplog.clear()
    quiet = logged_tick(env, first.cursor, caplog)
    assert quiet.run_requests == [] and "landing problem" not in caplog.text
    assert quiet.skip_reason is not None
    assert quiet.skip_reason.skip_message == (
        "no benchmark folder new or changed (1 benchmark folder in the landing zone); 2 folders not landed "
        "(Bad-Name, no_prompts; why: benchmark_rejects of partition _landing)")
    assert env.tick(quiet.cursor).skip_reason.skip_message == quiet.skip_reason.skip_message  # nothing else moved

    (env.landing / "no_prompts").rmdir()  # one problem fixed: the new list is said, and recorded
    caplog.clear()
    fixed = logged_tick(env, quiet.cursor, caplog)
    assert requested(fixed) == [bm.LANDING_PARTITION]
    assert caplog.text.count("landing problem") == 1 and "Bad-Name" in caplog.text


def test_a_refresh_whose_labeling_failed_is_requested_again(env: Env, tmp_path: Path) -> None:  # noqa: F811
    """The landing step wrote the new content, then the labeling step failed: the `benchmarks` table held the new
    content hash, which the sensor took for "made since by another run", so the refresh was never requested again
    and the partition's labels stayed behind its prompts (the automation's analysis then published them mixed,
    tests/test_release_gate.py) until someone ran run_all."""
    broken = tmp_path / "labeler_down"

    @asset(name="prompt_work", group_name="labels", partitions_def=benchmark_partitions,
           metadata={"partition_expr": "benchmark"}, ins={"benchmark_prompts": AssetIn()}, deps=[reference_stub])
    def flaky_labels(benchmark_prompts: pl.DataFrame) -> pl.DataFrame:
        if broken.exists():
            raise RuntimeError("HTTP 401 from the labeler (stand-in)")
        return benchmark_prompts.select("benchmark", "prompt_id", "prompt_hash")

    warehouse = Warehouse(path=str(env.warehouse))
    env.defs = Definitions(assets=[*module_assets(bench_assets), reference_stub, flaky_labels],
                           asset_checks=module_checks(bench_assets), jobs=JOBS,
                           resources={"warehouse": warehouse, "io_manager": WarehouseIOManager(warehouse=warehouse)})
    folder = add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    assert all(run.success for run in env.apply(first))
    edit_a_prompt(folder, " (second edition)")
    digest = folder_content_hash(folder)
    broken.touch()
    changed = env.tick(first.cursor)
    assert not any(run.success for run in env.apply(changed))
    assert stored_hash(env, "tiny_bench") == digest  # the landing step wrote the new content ...
    labels = env.table("prompt_work", "tiny_bench")["prompt_hash"].to_list()
    assert set(labels) != set(env.table("benchmark_prompts", "tiny_bench")["prompt_hash"])  # ... its labels did not

    broken.unlink()  # the labeler is back
    retry = env.tick(changed.cursor)
    assert [r.run_key for r in retry.run_requests] == [f"tiny_bench:{digest}:retry-1"]
    assert all(run.success for run in env.apply(retry))
    assert set(env.table("prompt_work", "tiny_bench")["prompt_hash"]) == set(
        env.table("benchmark_prompts", "tiny_bench")["prompt_hash"])
    assert env.tick(retry.cursor).run_requests == []  # done: not again


def test_a_refresh_of_the_benchmark_tables_alone_is_not_taken_for_the_whole_refresh(env: Env) -> None:  # noqa: F811
    """The UI's "Materialize selected" on a changed benchmark's four tables (they are one step) succeeded, and the
    sensor's next tick took that content as refreshed: nothing requested the labels, the analysis automation
    waited for them without a word, and a benchmark landed later never reached a release (a probe, 2026-12-07).
    Content counts as refreshed when its labels were made after it."""
    from dagster import AssetSelection, materialize

    folder = add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    assert all(run.success for run in env.apply(first))
    edit_a_prompt(folder, " (second edition)")
    digest = folder_content_hash(folder)
    tables = [a for a in env.defs.assets if AssetKey("benchmarks") in getattr(a, "keys", ())]
    assert materialize(tables, selection=AssetSelection.assets(*tables[0].keys), partition_key="tiny_bench",
                       resources=env.defs.resources, instance=env.instance).success
    assert stored_hash(env, "tiny_bench") == digest  # the new content is in the tables, its labels are not
    after = env.tick(first.cursor)
    assert [(r.partition_key, r.run_key) for r in after.run_requests] == [("tiny_bench", f"tiny_bench:{digest}")]
    assert all(run.success for run in env.apply(after))
    assert set(env.table("prompt_work", "tiny_bench")["prompt_hash"]) == set(
        env.table("benchmark_prompts", "tiny_bench")["prompt_hash"])
    assert env.tick(after.cursor).run_requests == []
    # a sensor without a cursor (a new instance's first tick after such a run) asks for the labels too
    edit_a_prompt(folder, " (third edition)")
    assert materialize(tables, selection=AssetSelection.assets(*tables[0].keys), partition_key="tiny_bench",
                       resources=env.defs.resources, instance=env.instance).success
    assert requested(env.tick()) == ["tiny_bench"]


def test_a_new_instance_makes_the_reference_data_before_the_benchmarks(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`make dev` on a fresh clone: the sensor's first tick requested a refresh per folder, each failed in its
    labeling (no onet_tasks) and was given up after its retries two minutes later (a probe, 2026-12-07). Now the
    first tick requests reference_refresh_job and records nothing; once it has run, the folders are requested."""
    from tests.test_benchmarks import build_defs

    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(tmp_path / "raw"))
    monkeypatch.setenv("BENCHMAP_MIRROR", str(tmp_path / "mirror"))
    monkeypatch.setenv("BENCHMAP_OFFLINE", "1")
    warehouse = tmp_path / "warehouse" / "benchmap.duckdb"
    monkeypatch.setenv("BENCHMAP_WAREHOUSE", str(warehouse))
    (tmp_path / "raw" / "benchmarks").mkdir(parents=True)
    setup = Env(tmp_path / "raw" / "benchmarks", tmp_path / "mirror", warehouse, build_defs(warehouse),
                DagsterInstance.ephemeral())
    add_fixture(setup.landing, "tiny_bench")
    first = setup.tick()
    assert [(r.job_name, r.tags["benchmap/trigger"]) for r in first.run_requests] == [
        ("reference_refresh_job", "reference first")]
    assert first.cursor is None and not first.dynamic_partitions_requests  # nothing recorded
    job = setup.defs.resolve_job_def("reference_refresh_job")
    # a reference run launched otherwise (the UI's, run_all's step) and not yet ended: waited for, not doubled
    launched = setup.instance.create_run_for_job(job, tags={"benchmap/kind": "reference"})
    waiting = setup.tick(first.cursor)
    assert not waiting.run_requests and "a run making the reference data is about to start (" in waiting.skip_reason.skip_message
    setup.instance.delete_run(launched.run_id)
    assert job.execute_in_process(instance=setup.instance, tags=first.run_requests[0].tags).success  # the daemon's run
    second = setup.tick(first.cursor)
    assert requested(second) == ["tiny_bench"]
    assert all(result.success for result in setup.apply(second))
