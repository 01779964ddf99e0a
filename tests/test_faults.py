"""Fault tests through the real assets and warehouse: a labeling process killed with SIGKILL, a misbehaving
OpenAI-compatible server, corrupted / truncated / deleted landing data, two materializations at once, and the
API key never leaving the environment.

Every test starts from a copy of one warehouse snapshot (the reference tables and the pickled task index, built
once per session by `bench.common.labels_snapshot`) and a temporary landing zone of 1-3 small benchmarks made of
real mirrored prompts. Child processes run this file as a script (see `child`).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402
from resources import label_cache as lc  # noqa: E402
from resources import warehouse as wh  # noqa: E402

LABEL_KEYS = ["benchmarks", "benchmark_prompts", "benchmark_results", "benchmark_rejects", "prompt_task_labels"]
LANDING_KEYS = LABEL_KEYS[:4]


# ------------------------------------------------------------------------------------------------ the world
def offline_resource(**overrides: Any) -> Any:
    from resources.dagster_resources import LabelerResource

    return LabelerResource(kind="offline", model="offline", **overrides)


class World:
    """A copied snapshot state + landing zone, materialized in this process (ephemeral Dagster instance)."""

    def __init__(self, state: common.State) -> None:
        from dagster import DagsterInstance

        self.state = state
        self.instance = DagsterInstance.ephemeral()

    def add(self, name: str, records: list[dict], results: list[tuple[str, str, float]] = ()) -> Path:
        folder = common.write_benchmark(self.state.landing, name, records, results=results)
        if name not in self.instance.get_dynamic_partitions("benchmark"):
            self.instance.add_dynamic_partitions("benchmark", [name])
        return folder

    def materialize(self, partition: str, *, labeler: Any = None, keys: list[str] = LABEL_KEYS) -> Any:
        from dagster import AssetSelection, materialize

        from pipelines.definitions import build_definitions

        defs = build_definitions(str(self.state.warehouse))
        resources = {**defs.resources, "labeler": labeler or offline_resource()}
        return materialize(list(defs.assets), selection=AssetSelection.assets(*keys).without_checks(),
                           partition_key=partition, resources=resources, instance=self.instance,
                           raise_on_error=False)

    def table(self, name: str, benchmark: str | None = None) -> pl.DataFrame:
        if benchmark is None:
            return wh.read_table(self.state.warehouse, name)
        return wh.read_table(self.state.warehouse, name, where_column="benchmark", where_values=[benchmark])

    def labels(self, benchmark: str) -> pl.DataFrame:
        return self.table("prompt_task_labels", benchmark).sort("prompt_id", "rank")

    def query(self, sql: str, params: list | None = None) -> pl.DataFrame:
        return wh.query(self.state.warehouse, sql, params)


def metadata(result: Any, asset: str, name: str) -> Any:
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key.path[-1] == asset and name in mat.metadata:
            return mat.metadata[name].value
    return None


def step_error(result: Any) -> str:
    texts = []
    for event in result.all_events:
        if event.is_step_failure:
            data = event.event_specific_data
            error = data.error
            while error is not None:
                texts.append(error.message)
                error = error.cause
            if data.user_failure_data is not None:
                texts.append(str(data.user_failure_data.description))
    return "\n".join(texts)


def real_records(benchmark: str, n: int, *, start: int = 0, tag: str = "") -> list[dict]:
    """`n` real prompts of a mirrored benchmark (fresh ids; `tag` appended to the text keeps hashes apart)."""
    lines = (common.mirror_path() / "benchmarks" / benchmark / "prompts.jsonl").read_bytes().split(b"\n")
    out = []
    for line in lines[start:]:
        if not line.strip():
            continue
        record = json.loads(line)
        out.append({"prompt_id": f"{benchmark}-{record['prompt_id']}",
                    "prompt": record["prompt"] + (f" {tag}" if tag else ""), "sector": record.get("sector")})
        if len(out) == n:
            break
    return out


@pytest.fixture
def world(snapshot: common.State, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    state = snapshot.copy_to(tmp_path / "state")
    for key, value in state.env(labeler="offline").items():
        if key.startswith("BENCHMAP_") or key == "DAGSTER_HOME":
            monkeypatch.setenv(key, value)
    return World(state)


# ------------------------------------------------------------------------------------------------ kill -9
def test_sigkill_mid_labeling_keeps_completed_batches_and_matches_a_clean_run(world: World, tmp_path: Path,
                                                                            snapshot: common.State) -> None:
    records = real_records("crmarena", 240)
    world.add("kill_me", records)
    # ingest first (in this process), then label in a child process that we SIGKILL halfway
    assert world.materialize("kill_me", keys=LANDING_KEYS).success
    child = subprocess.Popen(
        [sys.executable, __file__, "label", str(world.state.warehouse), "kill_me", "--batch", "20", "--pace", "0.3"],
        env=world.state.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    progress = re.compile(r"labeled (\d+)/(\d+) prompts")
    seen: list[int] = []
    deadline = time.monotonic() + 90
    assert child.stdout is not None
    for line in child.stdout:
        match = progress.search(line)
        if match:
            seen.append(int(match.group(1)))
            if int(match.group(1)) >= 0.4 * int(match.group(2)):
                child.send_signal(signal.SIGKILL)
                break
        if time.monotonic() > deadline:
            child.kill()
            pytest.fail("the labeling child never reported progress")
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL, "the child finished before it could be killed"

    cache = lc.LabelCache(world.state.warehouse)
    before = cache.read_frame().select("prompt_hash", "labels_json", "created_at")
    n_distinct = len({r["prompt"] for r in records})
    assert 0 < before.height < n_distinct, f"killed after {before.height} of {n_distinct} prompts"
    assert before.height >= seen[-1]  # every batch reported done was committed
    assert before["prompt_hash"].n_unique() == before.height
    assert world.table("label_failures").is_empty()

    # the rerun labels exactly the rest
    # (cache batches of 20 everywhere: the offline labeler's float scores can differ in the 6th decimal with the
    # composition of the batch they were computed in, so equal batches make the comparison exact)
    rerun = world.materialize("kill_me", keys=["prompt_task_labels"], labeler=offline_resource(batch_size=20))
    assert rerun.success, step_error(rerun)
    assert metadata(rerun, "prompt_task_labels", "n_cached") == before.height
    assert metadata(rerun, "prompt_task_labels", "labeler_calls") == n_distinct - before.height
    after = cache.read_frame().select("prompt_hash", "labels_json", "created_at")
    assert after.height == n_distinct
    raw_rows = world.query("select count(*) as n from label_cache")["n"][0]
    assert raw_rows == n_distinct  # nothing labeled twice
    kept = before.join(after, on="prompt_hash", how="left", suffix="_after")
    assert kept["labels_json"].equals(kept["labels_json_after"], null_equal=True)  # nothing lost or redone
    assert kept["created_at"].equals(kept["created_at_after"], null_equal=True)

    # the final table equals a clean, uninterrupted run
    clean = World(snapshot.copy_to(tmp_path / "clean"))
    clean.add("kill_me", records)
    run = clean.materialize("kill_me", labeler=offline_resource(batch_size=20))
    assert run.success, step_error(run)
    got, want = world.labels("kill_me"), clean.labels("kill_me")
    assert got.height == want.height > 0
    assert got.equals(want)


# ------------------------------------------------------------------------------------------------ the LLM server
CASES = {  # marker in the prompt text -> what the stub answers for that prompt
    "[case-429]": "429 then valid",
    "[case-500]": "500, 500 then valid",
    "[case-timeout]": "timeout then valid",
    "[case-mixed]": "429, 500, timeout, invalid JSON, unknown id, then valid",
    "[case-badjson]": "invalid JSON every time",
    "[case-unknown]": "unknown task id every time",
}


def test_llm_server_faults_are_retried_recorded_and_never_stored(world: World) -> None:
    from resources.dagster_resources import LabelerResource
    from tests.openai_stub import (
        OpenAIStub,
        Slow,
        invalid_json,
        offered_tasks,
        rate_limited,
        server_error,
        step_of,
        unknown_id,
        valid,
    )

    base = real_records("officebench", len(CASES) + 4)
    records = []
    for i, record in enumerate(base):
        marker = list(CASES)[i] if i < len(CASES) else ""
        records.append({**record, "prompt": f"{marker} {record['prompt']}".strip()})
    world.add("llm_faults", records)
    retries = 5
    # timeout 2.5 s against an 8 s slow answer: a normal answer on a loaded machine never times out (at 0.5 s
    # some did, and their retries broke the request counts), the slow one always does
    with OpenAIStub() as stub:
        stub.on("[case-429]", rate_limited(retry_after=0), valid(2))
        stub.on("[case-500]", server_error(), server_error(), valid(2))
        stub.on("[case-timeout]", Slow(8.0, valid(2)), valid(2))
        stub.on("[case-mixed]", rate_limited(retry_after=0), server_error(), Slow(8.0, valid(2)), invalid_json(),
                unknown_id(), valid(3), valid(3))  # step 1: five bad answers, then valid; step 2: 3 tasks
        stub.on("[case-badjson]", *[invalid_json() for _ in range(retries + 1)])
        stub.on("[case-unknown]", *[unknown_id() for _ in range(retries + 1)])
        labeler = LabelerResource(kind="openai", model="gpt-4o-mini", base_url=stub.base_url,
                                  api_key="sk-test-faults", max_retries=retries, timeout_s=2.5,
                                  backoff_base_s=0.01, max_concurrency=3, batch_size=4)
        first = world.materialize("llm_faults", labeler=labeler)
        # the labels written, then the run failed for the 2 prompts that kept failing (it was a success)
        from pipelines import run_report as rr

        assert not first.success and rr.failed_after_writing(first), step_error(first)
        assert "2 of 10 prompts of 'llm_faults' have no labels: 2 failed in this run" in step_error(first)
        requests = {marker: sum(marker in json.dumps(r["body"]) for r in stub.chat_requests()) for marker in CASES}
        shortlists = {}  # the task IDs a step-2 request offered (the chosen occupations' full task lists)
        for r in stub.chat_requests():
            if step_of(r["body"]) != 2:
                continue
            text = json.dumps(r["body"]["messages"])
            ids = set(offered_tasks(r["body"]))
            for record in records:
                if record["prompt"][:60] in text:
                    shortlists[record["prompt_id"]] = ids
        n_requests_first = len(stub.chat_requests())

        # every retry happened (+1 request for step 2 of the prompts that get there): 429 -> 2 + 1,
        # 500 x2 -> 3 + 1, timeout -> 2 + 1, mixed -> 6 + 1, bad -> 1 + retries (step 1 fails)
        assert requests == {"[case-429]": 3, "[case-500]": 4, "[case-timeout]": 3, "[case-mixed]": 7,
                            "[case-badjson]": retries + 1, "[case-unknown]": retries + 1}
        assert metadata(first, "prompt_task_labels", "n_failed") == 2
        by_marker = {m: next(r for r in records if r["prompt"].startswith(m)) for m in CASES}

        failures = world.table("label_failures").sort("prompt_id")
        assert failures["prompt_id"].to_list() == sorted([by_marker["[case-badjson]"]["prompt_id"],
                                                          by_marker["[case-unknown]"]["prompt_id"]])
        assert failures["attempts"].to_list() == [retries + 1, retries + 1]
        errors = dict(zip(failures["prompt_id"], failures["error"], strict=True))
        assert "malformed JSON" in errors[by_marker["[case-badjson]"]["prompt_id"]]
        assert "does not exist in O*NET" in errors[by_marker["[case-unknown]"]["prompt_id"]]
        assert set(failures["labeler"]) == {"openai"}

        labels = world.labels("llm_faults")
        labeled = set(labels["prompt_id"])
        assert labeled == {r["prompt_id"] for r in records} - set(failures["prompt_id"])
        # only valid, shortlisted, real task ids are stored; nothing of the failed prompts is cached
        assert 99_999_999 not in set(labels["task_id"])
        unknown = world.query("select count(*) as n from prompt_task_labels l anti join onet_tasks t "
                              "using (task_id, onet_soc_code)")["n"][0]
        assert unknown == 0
        for prompt_id, group in labels.group_by("prompt_id"):
            assert set(group["task_id"]) <= shortlists[prompt_id[0]]
        mixed = labels.filter(pl.col("prompt_id") == by_marker["[case-mixed]"]["prompt_id"])
        assert mixed.height == 3 and mixed["rank"].to_list() == [1, 2, 3]
        failed_hashes = world.table("benchmark_prompts", "llm_faults").filter(
            pl.col("prompt_id").is_in(failures["prompt_id"].to_list()))["prompt_hash"].to_list()
        assert lc.LabelCache(world.state.warehouse).read_frame(hashes=failed_hashes).is_empty()

        # next run: only the two failed prompts are asked again; they now succeed and leave label_failures
        second = world.materialize("llm_faults", labeler=labeler, keys=["prompt_task_labels"])
        assert second.success, step_error(second)
        assert metadata(second, "prompt_task_labels", "labeler_calls") == 2
        assert len(stub.chat_requests()) == n_requests_first + 2 * 2  # two steps each
    assert world.table("label_failures").is_empty()
    assert set(world.labels("llm_faults")["prompt_id"]) == {r["prompt_id"] for r in records}


# ------------------------------------------------------------------------------------------------ bad landing data
def test_corrupted_reference_source_fails_clearly_and_keeps_the_warehouse(world: World, mirror: Path) -> None:
    source = mirror / "onet" / "Task Statements.txt"
    target = world.state.raw / "onet" / "Task Statements.txt"  # data/raw wins over the mirror
    target.parent.mkdir(parents=True)
    lines = source.read_bytes().split(b"\n")
    lines[1000] = b"\x00\xff\xfe garbage \x89PNG\r\n\x1a"  # binary junk in place of one record
    target.write_bytes(b"\n".join(lines[:2000]))
    tasks_before = world.table("onet_tasks")
    index_before = world.table("task_search_index")
    result = _materialize_unpartitioned(world, ["onet_tasks", "task_search_index"])
    assert not result.success
    message = step_error(result)
    assert "Task Statements.txt" in message and re.search(r"line 1,?00[01]", message), message
    assert world.table("onet_tasks").equals(tasks_before)
    assert world.table("task_search_index").equals(index_before)


def _materialize_unpartitioned(world: World, keys: list[str]) -> Any:
    from dagster import AssetSelection, materialize

    from pipelines.definitions import build_definitions

    defs = build_definitions(str(world.state.warehouse))
    return materialize(list(defs.assets), selection=AssetSelection.assets(*keys).without_checks(),
                       resources={**defs.resources, "labeler": offline_resource()}, instance=world.instance,
                       raise_on_error=False)


def test_truncated_prompts_and_deleted_folder_leave_the_warehouse_consistent(world: World) -> None:
    a = world.add("trunc_a", real_records("tau_bench", 60))  # work prompts: every one gets labels
    b = world.add("gone_b", real_records("officebench", 30))
    for name in ("trunc_a", "gone_b"):
        assert world.materialize(name).success
    b_before = {t: world.table(t, "gone_b").sort(pl.all()) for t in LABEL_KEYS}

    # prompts.jsonl cut in the middle of line 41 (an interrupted copy)
    data = (a / "prompts.jsonl").read_bytes()
    cut = data.index(b"\n", len(b"\n".join(data.split(b"\n")[:40])) + 1) - 15
    (a / "prompts.jsonl").write_bytes(data[:cut])
    result = world.materialize("trunc_a")
    assert result.success, step_error(result)
    # the 40 kept prompts are labeled again: their benchmark's context (its 300 smallest hashes: here every
    # prompt) lost 20 texts, and a refresh labels as a run from scratch on the file would (no text is asked twice)
    assert metadata(result, "prompt_task_labels", "labeler_calls") == 40
    assert metadata(result, "prompt_task_labels", "n_other_context") == 40
    prompts = world.table("benchmark_prompts", "trunc_a")
    assert prompts.height == 40
    rejects = world.table("benchmark_rejects", "trunc_a")
    assert rejects["line_number"].to_list() == [41]
    assert "JSON" in rejects["reason"][0] or "json" in rejects["reason"][0]
    labels = world.labels("trunc_a")
    assert set(labels["prompt_id"]) == set(prompts["prompt_id"])  # no label of a vanished prompt survives
    assert world.query("select n_prompts, n_rejects from benchmarks where benchmark = 'trunc_a'").row(0) == (40, 1)

    # the folder of a benchmark that has a partition is deleted: a clear failure, its rows untouched
    for path in sorted(b.iterdir()):
        path.unlink()
    b.rmdir()
    gone = world.materialize("gone_b")
    assert not gone.success
    assert "has a partition but no landing folder" in step_error(gone)
    assert not any(e.event_type_value == "STEP_START" and e.step_key == "prompt_task_labels"
                   for e in gone.all_events)  # labels never ran over a missing benchmark
    for table, frame in b_before.items():
        assert world.table(table, "gone_b").sort(pl.all()).equals(frame), table
    assert world.table("prompt_task_labels", "trunc_a").height == labels.height


def test_run_all_redoes_failed_and_changed_partitions_only(world: World, capsys: pytest.CaptureFixture) -> None:
    from pipelines import run_all
    from pipelines.definitions import build_definitions

    a = world.add("rs_a", real_records("tau_bench", 40))
    world.add("rs_b", real_records("officebench", 40))
    defs = build_definitions(str(world.state.warehouse))
    args = ["--skip-reference", "--skip-analysis", "--benchmarks", "rs_a,rs_b"]

    def ran() -> list[str]:
        out = capsys.readouterr().out
        return sorted(n for n in ("rs_a", "rs_b") if re.search(rf"\] {n}: (ok|FAILED)", out))

    assert run_all.main(args, defs=defs, instance=world.instance) == 0
    assert ran() == ["rs_a", "rs_b"]
    assert run_all.main(args, defs=defs, instance=world.instance) == 0
    assert ran() == []  # nothing changed: both skipped
    good = (a / "prompts.jsonl").read_bytes()
    (a / "prompts.jsonl").write_bytes(b"{broken\n")  # no valid prompt: the step refuses and fails
    assert run_all.main(args, defs=defs, instance=world.instance) == 1
    assert ran() == ["rs_a"]
    assert world.table("benchmark_prompts", "rs_a").height == 40  # kept
    assert run_all.main(args, defs=defs, instance=world.instance) == 1
    assert ran() == ["rs_a"]  # a failed step is never remembered as done
    (a / "prompts.jsonl").write_bytes(good)
    assert run_all.main(args, defs=defs, instance=world.instance) == 0
    assert ran() == ["rs_a"]  # the content it last succeeded with, but an attempt (which may write) came since
    assert run_all.main(args, defs=defs, instance=world.instance) == 0
    assert ran() == []
    assert run_all.main([*args, "--force"], defs=defs, instance=world.instance) == 0
    assert ran() == ["rs_a", "rs_b"]


def test_neighbouring_partitions_run_as_one_run_and_a_failed_range_run_again_one_by_one(
        world: World, capsys: pytest.CaptureFixture) -> None:
    """run_all runs stale neighbouring partitions as one Dagster run of their range (offline labeler), with a
    record per partition holding that partition's counts; when the range run fails, each partition runs alone,
    so the failure is reported for its own benchmark and the others are done."""
    from dagster import AssetKey

    from pipelines import run_all
    from pipelines.definitions import build_definitions

    names = ["rr_a", "rr_b", "rr_c"]
    sources = {"rr_a": "tau_bench", "rr_b": "officebench", "rr_c": "spider2"}
    folders = {n: world.add(n, real_records(sources[n], 30)) for n in names}
    defs = build_definitions(str(world.state.warehouse))
    args = ["--skip-reference", "--skip-analysis", "--benchmarks", ",".join(names)]
    runs_before = len(world.instance.get_runs())
    assert run_all.main(args, defs=defs, instance=world.instance) == 0
    out = capsys.readouterr().out
    assert "(3 partitions in one run" in out
    assert all(re.search(rf"\] {n}: ok in [0-9.]+s: 30 prompts", out) for n in names), out
    assert len(world.instance.get_runs()) == runs_before + 1
    for table in ("benchmark_prompts", "prompt_task_labels", "prompt_work"):
        records = world.instance.fetch_materializations(AssetKey(table), limit=10).records
        recorded = {r.asset_materialization.partition: r.asset_materialization.metadata["row_count"].value
                    for r in records}
        assert recorded == {n: world.table(table, n).height for n in names}, table
    labeled = {r.asset_materialization.partition: r.asset_materialization.metadata
               for r in world.instance.fetch_materializations(AssetKey("prompt_task_labels"), limit=10).records}
    assert {n: labeled[n]["labeler_calls"].value + labeled[n]["n_cached"].value for n in names} == {
        n: world.table("benchmark_prompts", n)["prompt_hash"].n_unique() for n in names}  # each its own texts

    # all three change, rr_b into a file without a valid prompt: the range run fails, then one by one
    for name in ("rr_a", "rr_c"):
        common.write_benchmark(world.state.landing, name, real_records(sources[name], 20))
    (folders["rr_b"] / "prompts.jsonl").write_bytes(b"{broken\n")
    assert run_all.main(args, defs=defs, instance=world.instance) == 1
    out = capsys.readouterr().out
    assert "3 partitions rr_a..rr_c in one run: FAILED" in out and "running them one at a time" in out
    assert re.search(r"\] rr_a: ok in [0-9.]+s: 20 prompts", out) and re.search(r"\] rr_c: ok in [0-9.]+s: 20 prompts", out)
    assert re.search(r"\] rr_b: FAILED", out) and "yielded no valid prompts" in out
    assert [world.table("benchmark_prompts", n).height for n in names] == [20, 30, 20]  # rr_b's rows kept
    assert [world.table("prompt_task_labels", n)["prompt_id"].n_unique() <= 20 for n in ("rr_a", "rr_c")] == [True] * 2
    planned = world.instance.get_latest_planned_materialization_info(AssetKey("prompt_task_labels"), "rr_b")
    assert planned is not None  # its failed attempt is on record: the next run retries it
    assert run_all.main(args, defs=defs, instance=world.instance) == 1
    out = capsys.readouterr().out
    assert sorted(re.findall(r"\] (rr_[abc]): (?:ok|FAILED)", out)) == ["rr_b"]  # the others are done


# ------------------------------------------------------------------------------------------------ concurrency
def test_two_materializations_at_once_wait_for_each_other_and_never_corrupt(world: World) -> None:
    records = real_records("workbench", 150)
    world.add("twice", records)
    world.add("other", real_records("spider2", 80))
    # both children ingest and label `twice`; a third does `other` at the same time
    children = [subprocess.Popen([sys.executable, __file__, "label", str(world.state.warehouse), name, "--ingest",
                                  "--batch", "25", "--pace", "0.3"], env=world.state.env(), cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for name in ("twice", "twice", "other")]
    outputs = [c.communicate(timeout=180)[0] for c in children]
    codes = [c.returncode for c in children]
    windows = [common.last_json_line(out)["window"] for out in outputs[:2]]
    assert min(w[1] for w in windows) > max(w[0] for w in windows), "the two runs did not overlap in time"
    for code, out in zip(codes, outputs, strict=True):
        # each run either succeeded (it waited for the lock) or failed cleanly on the lock timeout
        assert code == 0 or "WarehouseLockTimeout" in out, out[-3000:]
    assert codes.count(0) >= 2

    prompts = world.table("benchmark_prompts", "twice")
    assert prompts.height == len(records) and prompts["prompt_id"].n_unique() == prompts.height
    assert world.table("benchmark_prompts", "other").height == 80
    labels = world.table("prompt_task_labels", "twice")
    assert labels.select("prompt_id", "task_id").is_unique().all()
    assert set(labels["prompt_id"]) == set(prompts["prompt_id"])
    assert world.query("select count(*) as n from benchmarks where benchmark = 'twice'")["n"][0] == 1
    # a label set may have been computed twice (both started before either committed), never stored twice
    cached = lc.LabelCache(world.state.warehouse).read_frame()
    assert cached["prompt_hash"].n_unique() == cached.height
    # the same labels as a single, uninterrupted run would give
    solo = world.materialize("twice", keys=["prompt_task_labels"])
    assert solo.success and metadata(solo, "prompt_task_labels", "labeler_calls") == 0
    assert world.labels("twice").equals(labels.sort("prompt_id", "rank"))
    with wh.connect(world.state.warehouse) as con:
        con.execute("checkpoint")  # the file is a sound DuckDB database


def test_the_paced_child_labeler_is_the_inner_labeler_to_the_label_asset() -> None:
    """The children above label through PacedLabeler: it must show the label asset everything of the offline
    labeler it wraps (the neighbour step reads its selector fit and config), else the children skip the step
    and publish another labeler_version than a plain run (the cause of this test's failure with the step on)."""
    from types import SimpleNamespace

    inner = SimpleNamespace(name="offline", model="offline", template_version="t", labeler_version="v",
                            selector=SimpleNamespace(fit="the fit"), config="the config", label=lambda ps: ps[::-1])
    paced = PacedLabeler(inner, 0.0)
    assert getattr(getattr(paced, "selector", None), "fit", None) == "the fit"  # as assets/labels.py reads it
    assert (paced.config, paced.labeler_version, paced.template_version) == ("the config", "v", "t")
    assert paced.label([1, 2]) == [2, 1]


# ------------------------------------------------------------------------------------------------ the API key
def files_containing(roots: list[Path], needles: list[bytes]) -> list[str]:
    """Every file under `roots` whose bytes contain one of `needles` (also as UTF-16, as some logs are)."""
    variants = [v for n in needles for v in (n, n.decode().encode("utf-16-le"))]
    hits = []
    for root in roots:
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in paths:
            data = path.read_bytes()
            if any(v in data for v in variants):
                hits.append(str(path))
    return hits


def test_api_key_never_reaches_logs_metadata_exports_or_warehouse(world: World) -> None:
    from tests.openai_stub import OpenAIStub, Status, rate_limited

    key = f"sk-test-{secrets.token_hex(16)}"
    needles = [key.encode(), key[8:].encode()]  # the whole key, and its random part alone
    records = real_records("gdpval", 6)
    world.add("keyed", records)
    env = world.state.env()
    env.pop("BENCHMAP_LABELER")  # the key alone selects the openai labeler, as for a user
    env.update({"OPENAI_API_KEY": key, "BENCHMAP_LLM_MODEL": "gpt-4o-mini"})
    with OpenAIStub() as stub:
        stub.script(rate_limited(retry_after=0))  # an error path: retried, logged
        stub.on(records[5]["prompt"][:60], Status(400, "This model's maximum context length is exceeded"))
        env["OPENAI_BASE_URL"] = stub.base_url
        # the benchmark's tables and labels, then analysis, gaps and exports (the snapshot holds the reference
        # data), into the instance at DAGSTER_HOME: run and event storage, compute logs
        run = subprocess.run([sys.executable, "-m", "pipelines.run_all", "--skip-reference", "--benchmarks", "keyed"],
                             env=env, cwd=ROOT, capture_output=True, text=True, timeout=240)
        # exit 4 (EXIT_LABEL_FAILURES): the prompt answered with HTTP 400 has no labels, and the run says so
        assert run.returncode == 4, (run.stdout + run.stderr)[-3000:]
        sent = {r["headers"].get("authorization") for r in stub.chat_requests()}
    assert sent == {f"Bearer {key}"}  # the key was in use, so a leak would have had something to leak
    labels = world.table("prompt_task_labels", "keyed")
    assert labels["labeler"].unique().to_list() == ["openai"] and labels["prompt_id"].n_unique() == 5
    failures = world.table("label_failures")
    assert failures.height == 1 and "maximum context length" in failures["error"][0]
    exports = sorted(world.state.exports.rglob("manifest.json"))
    assert exports, "no export was written"
    assert json.loads(exports[0].read_text())  # a real manifest, which names the configured labeler

    output = world.state.root / "run_output.txt"
    output.write_text(run.stdout + run.stderr)
    roots = [world.state.home, world.state.warehouse.parent, output]
    assert list((world.state.home / "logs").rglob("*.err")), "no compute logs were captured"
    # the grep finds the key when it is there (so an empty result means something)
    planted = world.state.root / "planted.txt"
    planted.write_text(f"x{key}x")
    assert files_containing([planted], needles) == [str(planted)]
    assert files_containing(roots, needles) == []


# ------------------------------------------------------------------------------------------------ commands (issue 19)
def _command(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=env)


def test_whatif_names_a_missing_or_directory_prompts_file_in_one_line(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh" / "benchmap.duckdb"
    wh.replace_table(warehouse, "placeholder", pl.DataFrame({"x": [1]}))
    empty, as_dir = tmp_path / "empty", tmp_path / "as_dir"
    empty.mkdir()
    (as_dir / "prompts.jsonl").mkdir(parents=True)
    cases = {empty: "no prompts.jsonl in this folder", as_dir: "prompts.jsonl: is a directory, not a file",
             tmp_path / "nowhere": "no such candidate folder"}
    for folder, expected in cases.items():
        done = _command(["pipelines.whatif", str(folder), "--warehouse", str(warehouse)])
        assert done.returncode == 1 and done.stdout == "", done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("python -m pipelines.whatif: error: "), done.stderr
        assert expected in lines[0] and str(folder) in lines[0] and "Traceback" not in done.stderr
    debug = _command(["pipelines.whatif", str(as_dir), "--warehouse", str(warehouse), "--debug"])
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "InputError" in debug.stderr


def test_run_all_and_restore_over_a_damaged_warehouse_say_so_in_one_line(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh" / "benchmap.duckdb"
    warehouse.parent.mkdir(parents=True)
    warehouse.write_bytes(b"this is not a DuckDB file\n" * 2000)
    home = tmp_path / "home"
    home.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("BENCHMAP_")},
           "BENCHMAP_WAREHOUSE": str(warehouse), "DAGSTER_HOME": str(home), "BENCHMAP_OFFLINE": "1",
           "BENCHMAP_RAW_DIR": str(tmp_path / "raw"), "BENCHMAP_MIRROR": str(common.mirror_path())}
    done = _command(["pipelines.run_all", "--skip-reference"], env)
    assert done.returncode == 3, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert f"warehouse {warehouse} is damaged: it cannot be opened" in lines[0]
    assert "Recover with `python -m pipelines.run_all --rebuild`" in lines[0]
    assert warehouse.read_bytes().startswith(b"this is not")  # nothing was written into it
    restore = _command(["pipelines.restore_labels"], env)
    assert restore.returncode == 1 and "no label store at" in restore.stderr and "Traceback" not in restore.stderr


def test_bom_metadata_and_bad_scores(tmp_path: Path) -> None:
    from models import benchmarks as bm
    from resources.landing import read_folder

    folder = tmp_path / "bom_bench"
    folder.mkdir()
    (folder / "benchmark.toml").write_bytes(b'\xef\xbb\xbftitle = "BOM Bench"\nversion = "v9"\nagentic = true\n')
    meta, warnings = bm.parse_metadata(read_folder(folder), "bom_bench", 3)
    assert (meta["title"], meta["version"], meta["agentic"]) == ("BOM Bench", "v9", True)
    assert not any("could not be read" in w for w in warnings)
    (folder / "benchmark.toml").unlink()
    (folder / "benchmark.yaml").write_bytes(b"\xef\xbb\xbftitle: YAML Bench\nsaturated: false\n")
    meta, _ = bm.parse_metadata(read_folder(folder), "bom_bench", 3)
    assert (meta["title"], meta["saturated"]) == ("YAML Bench", False)
    ids = ["p1", "p2", "p3", "p4", "p5", "p6", "p7"]
    scores = ["1e-400", "-0", "nan", "inf", "-1e-400", "0.25", "1e-300"]
    (folder / "results.csv").write_text("benchmark,prompt_id,model,score\n" + "".join(
        f"bom_bench,{i},m,{s}\n" for i, s in zip(ids, scores, strict=True)))
    results, rejects = bm.parse_results((folder / "results.csv").read_bytes(), "bom_bench", ids)
    kept = dict(zip(results["prompt_id"], results["score"], strict=True))
    assert kept == {"p2": 0.0, "p6": 0.25, "p7": 1e-300}
    assert str(kept["p2"]) == "0.0"  # not -0.0
    reasons = {r.line_number: r.reason for r in rejects}
    assert set(reasons) == {2, 4, 5, 6}  # the file's lines: header is line 1
    assert "underflows" in reasons[2] and "underflows" in reasons[6]
    assert "not a finite number" in reasons[4] and "not a finite number" in reasons[5]


# ------------------------------------------------------------------------------------------------ child driver
class PacedLabeler:
    """The child driver's labeler: `inner`, sleeping `pace` seconds before each batch. Every other attribute is
    the inner labeler's (its selector fit and config among them), so the label asset sees the calibrated
    offline labeler and runs the neighbour step as for the unwrapped one: a wrapper that hid them made the
    children skip the step and publish another labeler_version than a plain run."""

    def __init__(self, inner: Any, pace: float) -> None:
        self.inner, self.pace = inner, pace

    def __getattr__(self, name: str) -> Any:  # only called for what this class does not define
        return getattr(self.inner, name)

    def label(self, prompts: list[Any]) -> list[Any]:
        time.sleep(self.pace)
        return self.inner.label(prompts)

    def prepare(self, prompts: list[Any]) -> None:  # the benchmark context, as unwrapped
        getattr(self.inner, "prepare", lambda _prompts: None)(prompts)


def child(argv: list[str]) -> int:
    """`python tests/test_faults.py label <warehouse> <partition> [--ingest] [--batch N] [--pace S]`:
    materialize (ingest and) labels of one partition with the offline labeler; `--pace` sleeps S seconds
    before each labeler batch so a parent can kill the process mid-run."""
    import argparse

    from dagster import AssetSelection, DagsterInstance, materialize

    from pipelines.definitions import build_definitions
    from resources.dagster_resources import LabelerResource

    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["label"])
    ap.add_argument("warehouse")
    ap.add_argument("partition")
    ap.add_argument("--ingest", action="store_true")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--pace", type=float, default=0.0)
    args = ap.parse_args(argv)

    class PacedLabelerResource(LabelerResource):
        pace_s: float = 0.0

        def build(self, index: Any) -> Any:
            return PacedLabeler(super().build(index), self.pace_s)

    defs = build_definitions(args.warehouse)
    labeler = PacedLabelerResource(kind="offline", model="offline", batch_size=args.batch,
                                   progress_every=args.batch, pace_s=args.pace)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("benchmark", [args.partition])
    keys = LABEL_KEYS if args.ingest else ["prompt_task_labels"]
    started = time.time()
    result = materialize(list(defs.assets), selection=AssetSelection.assets(*keys).without_checks(),
                         partition_key=args.partition, resources={**defs.resources, "labeler": labeler},
                         instance=instance, raise_on_error=False)
    if not result.success:
        print(step_error(result), flush=True)
    print(json.dumps({"window": [started, time.time()], "success": result.success}), flush=True)
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(child(sys.argv[1:]))


def test_a_run_with_no_benchmark_landed_is_not_reported_as_success(world: World, tmp_path: Path) -> None:
    """A clone whose mirror has no benchmarks/ (benchmark prompts are never downloaded) measures nothing: the run
    fails (its analysis steps find no benchmark table: exit 1; with an earlier run's tables they pass and it exits
    5, EXIT_NO_BENCHMARKS) and names the cause, not only the steps' LookupErrors."""
    empty = tmp_path / "mirror_without_benchmarks"
    empty.mkdir()
    env = world.state.env(mirror=empty)
    run = subprocess.run([sys.executable, "-m", "pipelines.run_all", "--skip-reference"], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 1, (run.stdout + run.stderr)[-3000:]
    assert "no benchmark landed, so nothing was measured" in run.stderr
    assert "benchmark prompts are never downloaded" in run.stderr
