"""Partition-parallel labeling, sharing one DuckDB warehouse.

Two `dagster asset materialize --partition <p>` processes are started at once over one Dagster instance (sqlite
storage in a temporary DAGSTER_HOME) and one warehouse.

- offline labeler, BENCHMAP_EXECUTOR=multiprocess (each step in a subprocess, max_concurrent from
  BENCHMAP_MAX_CONCURRENT): the two labeling steps run at the same time and both commit (every warehouse write
  is a short transaction that waits for DuckDB's file lock), with no lock failure;
- openai labeler (local stub server), the default in-process executor: the labeling asset is in the `llm_api`
  concurrency pool; with a pool limit of 1 the second step is blocked until the first has finished.

The child processes load `location()` below: the project's Definitions with a labeler that sleeps before
each batch (`BENCHMAP_TEST_PACE_S`), so the labeling windows are long enough to overlap on a busy machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402
from resources import warehouse as wh  # noqa: E402

LANDING_KEYS = ["benchmarks", "benchmark_prompts", "benchmark_results", "benchmark_rejects"]


def location() -> Any:
    """The code location of the child processes (`dagster asset materialize -f <this file> -a location`)."""
    from dagster import Definitions

    from models.labeling.base import LabelOutcome, PromptRecord
    from pipelines.definitions import build_definitions
    from resources.dagster_resources import LabelerResource

    defs = build_definitions()
    pace = float(os.environ.get("BENCHMAP_TEST_PACE_S", "0"))
    configured = defs.resources["labeler"]

    class Paced:
        def __init__(self, inner: Any) -> None:
            self.inner = inner
            self.name, self.model, self.template_version = inner.name, inner.model, inner.template_version

        @property
        def labeler_version(self) -> str:
            return self.inner.labeler_version

        def label(self, prompts: list[PromptRecord]) -> list[LabelOutcome]:
            time.sleep(pace)
            return self.inner.label(prompts)

        def prepare(self, prompts: list[PromptRecord]) -> None:  # the benchmark context, as unwrapped
            getattr(self.inner, "prepare", lambda _prompts: None)(prompts)

    class PacedLabelerResource(LabelerResource):
        def build(self, index: Any) -> Any:
            return Paced(super().build(index))

    fields = {k: getattr(configured, k) for k in LabelerResource.model_fields if getattr(configured, k) is not None}
    labeler = PacedLabelerResource(**{**fields, "batch_size": 40, "progress_every": 40})
    return Definitions(assets=list(defs.assets), executor=defs.executor,
                       resources={**defs.resources, "labeler": labeler})


# ------------------------------------------------------------------------------------------------ fixtures
def prepare(snapshot: common.State, root: Path, *, pool_limit: int, labeler: str, n_prompts: int,
            extra: dict[str, str] | None = None) -> common.State:
    """A copy of the snapshot with a persistent instance, two ingested benchmark partitions `mp_a`, `mp_b`."""
    from dagster import AssetSelection, DagsterInstance, materialize

    from pipelines.definitions import build_definitions
    from resources.dagster_resources import LabelerResource

    state = snapshot.copy_to(root)
    common.write_dagster_yaml(state.home, pool_limit=pool_limit)
    for name, source, start in (("mp_a", "crmarena", 0), ("mp_b", "da_code", 0)):
        lines = (common.mirror_path() / "benchmarks" / source / "prompts.jsonl").read_text().splitlines()
        import json

        records = [json.loads(x) for x in lines[start:start + n_prompts] if x.strip()]
        common.write_benchmark(state.landing, name, [{"prompt_id": r["prompt_id"], "prompt": r["prompt"]}
                                                     for r in records])
    env = {**{k: v for k, v in state.env(labeler=labeler).items() if k.startswith("BENCHMAP_")}, **(extra or {})}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with DagsterInstance.from_config(str(state.home)) as instance:
            instance.add_dynamic_partitions("benchmark", ["mp_a", "mp_b"])
            defs = build_definitions(str(state.warehouse))
            for name in ("mp_a", "mp_b"):
                result = materialize(list(defs.assets), selection=AssetSelection.assets(*LANDING_KEYS),
                                     partition_key=name, instance=instance, raise_on_error=False,
                                     resources={**defs.resources, "labeler": LabelerResource()})
                assert result.success
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return state


def launch_two(state: common.State, env: dict[str, str], *, second_after: Callable[[], bool] | None = None,
               wait_s: float = 180.0) -> list[subprocess.CompletedProcess]:
    """Two `dagster asset materialize` runs of prompt_task_labels (mp_a, mp_b); with `second_after`, mp_b
    starts once it returns True (polled), else both at once."""
    cmd = [sys.executable, "-m", "dagster", "asset", "materialize", "-f", __file__, "-a", "location",
           "--select", "prompt_task_labels", "--partition"]

    def launch(name: str) -> subprocess.Popen:
        return subprocess.Popen([*cmd, name], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

    procs = [launch("mp_a")]
    deadline = time.monotonic() + wait_s
    while second_after is not None and not second_after() and time.monotonic() < deadline \
            and procs[0].poll() is None:
        time.sleep(0.1)
    procs.append(launch("mp_b"))
    out = []
    for proc in procs:
        stdout, _ = proc.communicate(timeout=240)
        out.append(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, ""))
    return out


def label_steps(home: Path) -> dict[str, dict[str, Any]]:
    """partition -> start, end, step pid, run pid, blocked (pool) of the prompt_task_labels step."""
    from dagster import DagsterEventType, DagsterInstance

    out: dict[str, dict[str, Any]] = {}
    with DagsterInstance.from_config(str(home)) as instance:
        for run in instance.get_runs():
            if "prompt_task_labels" not in {k.path[-1] for k in (run.asset_selection or [])}:
                continue
            info: dict[str, Any] = {"blocked": False, "status": run.status.value}
            for record in instance.all_logs(run.run_id):
                event = record.dagster_event
                if event is None:
                    continue
                if event.event_type == DagsterEventType.RUN_START:
                    info["run_pid"] = event.pid
                if event.step_key == "prompt_task_labels":
                    if event.event_type == DagsterEventType.STEP_START:
                        info["start"], info["step_pid"] = record.timestamp, event.pid
                    elif event.event_type in (DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE):
                        info["end"] = record.timestamp
                    elif "blocked by limit for pool llm_api" in (event.message or ""):
                        info["blocked"] = True
            out[run.tags["dagster/partition"]] = info
    return out


def check_warehouse(state: common.State, n_prompts: int) -> None:
    prompts = wh.read_table(state.warehouse, "benchmark_prompts")
    labels = wh.read_table(state.warehouse, "prompt_task_labels")
    for name in ("mp_a", "mp_b"):
        ids = set(prompts.filter(pl.col("benchmark") == name)["prompt_id"])
        labeled = labels.filter(pl.col("benchmark") == name)
        assert set(labeled["prompt_id"]) == ids and len(ids) == n_prompts
        assert labeled.select("prompt_id", "task_id").is_unique().all()
    cache = wh.query(state.warehouse, "select count(*) as n, count(distinct prompt_hash) as d from label_cache")
    assert cache.row(0) == (prompts["prompt_hash"].n_unique(),) * 2  # each text labeled exactly once
    failures = wh.query(state.warehouse, "select count(*) as n from label_failures")["n"][0]
    assert failures == 0


# ------------------------------------------------------------------------------------------------ tests
def test_two_partitions_label_in_parallel_step_processes(snapshot: common.State, tmp_path: Path) -> None:
    state = prepare(snapshot, tmp_path / "state", pool_limit=4, labeler="offline", n_prompts=160)
    env = {**state.env(labeler="offline"), "BENCHMAP_TEST_PACE_S": "1.5", "BENCHMAP_MAX_CONCURRENT": "2",
           "BENCHMAP_EXECUTOR": "multiprocess"}
    runs = launch_two(state, env)
    for run in runs:
        assert run.returncode == 0, run.stdout[-4000:]  # a lock failure (WarehouseLockTimeout) fails the run
        assert "Multiprocess executor" in run.stdout
    steps = label_steps(state.home)
    assert set(steps) == {"mp_a", "mp_b"} and all(s["status"] == "SUCCESS" for s in steps.values())
    for info in steps.values():
        assert info["step_pid"] != info["run_pid"]  # the step ran in its own process
    a, b = steps["mp_a"], steps["mp_b"]
    overlap = min(a["end"], b["end"]) - max(a["start"], b["start"])
    assert overlap > 1.0, f"labeling steps did not run in parallel: {steps}"
    check_warehouse(state, 160)


def test_llm_pool_limits_concurrent_labeling_steps(snapshot: common.State, tmp_path: Path) -> None:
    from tests.openai_stub import OpenAIStub, Slow, valid

    with OpenAIStub(default=lambda body: Slow(0.05, valid(2))) as stub:
        llm = {"BENCHMAP_LABELER": "openai", "OPENAI_BASE_URL": stub.base_url, "OPENAI_API_KEY": "sk-test-pool"}
        state = prepare(snapshot, tmp_path / "state", pool_limit=1, labeler="openai", n_prompts=40, extra=llm)
        env = {**state.env(labeler="openai"), **llm, "BENCHMAP_TEST_PACE_S": "2.0"}
        # the second run starts once the first step holds the pool's one slot (its first request arrived):
        # Dagster's SQLite storage claims a slot without a row lock, so two claims in the same instant can both
        # win (seen once in CI: 8 requests in flight); what this test checks is that a labeling step that
        # finds the slot taken waits for it (docs/scale_out.md)
        runs = launch_two(state, env, second_after=lambda: len(stub.chat_requests()) > 0)
        for run in runs:
            assert run.returncode == 0, run.stdout[-4000:]
        assert stub.max_in_flight <= 4  # one labeling step at a time, each with max_concurrency=4 requests
    steps = label_steps(state.home)
    assert set(steps) == {"mp_a", "mp_b"} and all(s["status"] == "SUCCESS" for s in steps.values())
    first, second = sorted(steps.values(), key=lambda s: s["start"])
    assert second["start"] >= first["end"] - 0.5, f"the llm_api pool let two labeling steps overlap: {steps}"
    assert second["blocked"], "the second labeling step was never blocked by the llm_api pool"
    check_warehouse(state, 40)


def test_two_run_alls_at_once_on_new_benchmarks_both_succeed_and_the_export_is_consistent(
        snapshot: common.State, tmp_path: Path) -> None:
    """Issue 19: two `python -m pipelines.run_all` started together over one warehouse, one instance and two new
    benchmarks. Both ingest and label (each partition's writes take turns on DuckDB's lock), both run the
    analysis and write the same export folder: one writer at a time (resources/export_files.py export_lock), each
    table folder written privately and swapped in, so neither fails on the other's files."""
    import json

    from models import exports as ex
    from resources.export_writer import verify_export

    state = snapshot.copy_to(tmp_path / "state")
    for name, source in (("two_a", "tau_bench"), ("two_b", "travelplanner")):
        lines = (common.mirror_path() / "benchmarks" / source / "prompts.jsonl").read_text().splitlines()
        records = [json.loads(x) for x in lines[:40] if x.strip()]
        common.write_benchmark(state.landing, name, [{"prompt_id": r["prompt_id"], "prompt": r["prompt"]}
                                                     for r in records])
    env = state.env(labeler="offline")
    cmd = [sys.executable, "-m", "pipelines.run_all", "--skip-reference", "--benchmarks", "two_a,two_b"]
    procs = [subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for _ in range(2)]
    outputs = [proc.communicate(timeout=900)[0] for proc in procs]
    for proc, out in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, out[-4000:]
        assert "all steps succeeded" in out and "Traceback" not in out
    folders = sorted(state.exports.glob("[0-9]*"))
    assert len(folders) == 1
    folder = folders[0]
    assert verify_export(folder) == []  # every file matches the manifest written last
    manifest = json.loads((folder / ex.MANIFEST_NAME).read_text())
    exported = {t["table"] for t in manifest["tables"]}
    assert set(ex.REQUIRED_TABLES) <= exported and manifest["missing_tables"] == [
        t for t in ex.REPORT_TABLES if t not in exported]
    on_disk = {p.name for p in (folder / ex.TABLES_DIR).iterdir()}
    assert on_disk == {f"{t}.{ext}" for t in exported for ext in ("parquet", "csv")}  # complete, nothing stale
    # no temporary left in the release (its writer's lock lives in the exports root, beside the releases)
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []
    benchmarks = set(pl.read_parquet(folder / ex.TABLES_DIR / "benchmarks.parquet")["benchmark"])
    assert {"two_a", "two_b"} <= benchmarks
    prompts = wh.read_table(state.warehouse, "benchmark_prompts")
    labels = wh.read_table(state.warehouse, "prompt_task_labels")
    for name in ("two_a", "two_b"):
        ids = set(prompts.filter(pl.col("benchmark") == name)["prompt_id"])
        assert len(ids) == 40 and set(labels.filter(pl.col("benchmark") == name)["prompt_id"]) <= ids
        assert labels.filter(pl.col("benchmark") == name).select("prompt_id", "task_id").is_unique().all()
