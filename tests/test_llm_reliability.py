"""Issue 26 (the LLM half): no secret stored, no failed label called done, no label requested twice.

Through the real assets, `run_all` and the local OpenAI-wire stub (tests/openai_stub.py), on a copy of the
labels snapshot (tests/test_faults.py's `world`):

- a server that echoes the API key in its errors and answers: the key is in no table, no file under the
  warehouse folder (Parquet and XLSX read, not just grepped), no export, no Dagster storage, no output;
- a server failing 6 of 16 prompts: the run says so and exits EXIT_LABEL_FAILURES, the partition's check fails,
  a plain re-run retries exactly the failed prompts, a prompt that keeps failing is given up after
  MAX_LABEL_RUNS runs with its last error kept;
- two `run_all` at once on the same new prompts request each prompt once and compute the analysis once; a run
  SIGKILLed after a batch reached the label store but not the warehouse never requests that batch again.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from dagster import AssetKey, DagsterRunStatus

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from models.scrub import MASK  # noqa: E402
from tests import test_faults as faults  # noqa: E402
from tests.test_faults import World, real_records, step_error  # noqa: E402

world = faults.world  # the fixture, by name: a copied labels snapshot (conftest `snapshot`) and its landing zone

EXIT_LABEL_FAILURES = 4


def marked(records: list[dict], prefix: str) -> list[dict]:
    """The records with a unique marker `[<prefix>NN]` in front of each prompt (real prompts of one benchmark
    often share their first words); the marker is what the stub's rules and the request counts look for."""
    return [{**r, "prompt": f"[{prefix}{i:02d}] {r['prompt']}"} for i, r in enumerate(records)]


def needle(record: dict) -> str:
    return record["prompt"].split("]", 1)[0] + "]"


# ------------------------------------------------------------------------------------------------ searching
def _duckdb_hits(con: duckdb.DuckDBPyConnection, relation: str, needles: list[str]) -> int:
    """Rows of `relation` (a table, or read_parquet(...)) with a needle in any column, every column as text."""
    columns = [r[0] for r in con.execute(f"describe select * from {relation}").fetchall()]
    if not columns:
        return 0
    text = " || '|' || ".join(f"coalesce(cast(\"{c}\" as varchar), '')" for c in columns)
    where = " or ".join(f"strpos({text}, ?) > 0" for _ in needles)
    return int(con.execute(f"select count(*) from {relation} where {where}", needles).fetchone()[0])


def tables_containing(warehouse: Path, needles: list[str]) -> dict[str, int]:
    """table -> rows holding a needle, over every table of the warehouse (DuckDB compresses strings: a byte
    grep of the file proves nothing)."""
    hits = {}
    with duckdb.connect(str(warehouse), read_only=True) as con:
        names = [r[0] for r in con.execute("select table_name from information_schema.tables "
                                           "where table_schema = 'main'").fetchall()]
        for name in names:
            n = _duckdb_hits(con, f'"{name}"', needles)
            if n:
                hits[name] = n
    return hits


def files_containing(roots: list[Path], needles: list[str]) -> list[str]:
    """Every file under `roots` holding a needle: its bytes (also UTF-16), and the decoded contents of Parquet
    files and ZIP containers (XLSX), which compress their text."""
    raw = [v for n in needles for v in (n.encode(), n.encode("utf-16-le"))]
    hits = []
    for root in roots:
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in paths:
            data = path.read_bytes()
            found = any(v in data for v in raw)
            if not found and data[:4] == b"PAR1":
                with duckdb.connect() as con:
                    found = _duckdb_hits(con, f"read_parquet('{path}')", needles) > 0
            if not found and data[:2] == b"PK":
                with zipfile.ZipFile(path) as archive:
                    found = any(v in archive.read(member) for member in archive.namelist() for v in raw)
            if found:
                hits.append(str(path))
    return hits


# ------------------------------------------------------------------------------------------------ item 1
def test_a_server_echoing_the_key_leaves_it_in_no_table_file_log_or_export(world: World) -> None:
    from tests.openai_stub import OpenAIStub, Status, rate_limited

    key = f"sk-test-{secrets.token_hex(16)}"
    # the whole key, its random part alone, and the forms the stub's errors also echo (upper-cased, spaced out)
    needles = [key, key[8:], key[8:].upper(), " ".join(key[8:24])]
    records = real_records("gdpval", 6)
    world.add("keyed", records)
    env = world.state.env()
    env.pop("BENCHMAP_LABELER")  # the key alone selects the openai labeler, as for a user
    env.update({"OPENAI_API_KEY": key, "BENCHMAP_LLM_MODEL": "gpt-4o-mini"})
    with OpenAIStub(echo_key=True) as stub:
        stub.script(rate_limited(retry_after=0))  # an error text with the key, then retried
        stub.on(records[5]["prompt"][:60], Status(400, "This model's maximum context length is exceeded"))
        env["OPENAI_BASE_URL"] = stub.base_url
        run = subprocess.run([sys.executable, "-m", "pipelines.run_all", "--skip-reference", "--benchmarks", "keyed"],
                             env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert run.returncode == EXIT_LABEL_FAILURES, (run.stdout + run.stderr)[-3000:]
        echoed = [r for r in stub.chat_requests() if r["headers"].get("authorization") == f"Bearer {key}"]
    assert len(echoed) == len(stub.chat_requests()) > 10  # the key was in use, and the server echoed it

    # the echo reached the process and was masked where it is stored (so the grep below has something to miss)
    labels = world.table("prompt_task_labels", "keyed")
    assert labels["prompt_id"].n_unique() == 5
    assert labels["rationale"].str.contains("[served with key [redacted]]", literal=True).all()
    failures = world.table("label_failures")
    assert failures.height == 1 and "maximum context length" in failures["error"][0]
    assert "Incorrect API key provided: [redacted]" in failures["error"][0]
    assert f"[raw {MASK}; {MASK}; {MASK}]" in failures["error"][0]  # each echoed form masked where it stood
    assert list(world.state.exports.rglob("manifest.json")), "no export was written"

    output = world.state.root / "run_output.txt"
    output.write_text(run.stdout + run.stderr)
    assert list((world.state.home / "logs").rglob("*.err")), "no compute logs were captured"
    planted = world.state.root / "planted.parquet"  # the search finds the key when it is there
    pl.DataFrame({"x": [f"{i}..{key}..{i}" for i in range(1000)]}).write_parquet(planted, compression="zstd",
                                                                                     statistics=False)
    assert files_containing([planted], needles) == [str(planted)]
    assert key.encode() not in planted.read_bytes()  # compressed: a byte grep alone would miss it

    assert tables_containing(world.state.warehouse, needles) == {}
    # every file under the warehouse folder (label store segments, exports: Parquet, CSV, XLSX, figures, logs),
    # Dagster's run and event storage and compute logs, and what run_all printed
    roots = [world.state.home, world.state.warehouse.parent, output]
    assert files_containing(roots, needles) == []


# ------------------------------------------------------------------------------------------------ item 2
def _openai_defs(world: World, monkeypatch: pytest.MonkeyPatch, base_url: str) -> Any:
    from pipelines.definitions import build_definitions

    monkeypatch.setenv("BENCHMAP_LABELER", "openai")
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-failing-server-0001")
    return build_definitions(str(world.state.warehouse))


def _latest_metadata(world: World, name: str) -> Any:
    from dagster import AssetKey

    event = world.instance.get_latest_materialization_event(AssetKey("prompt_task_labels"))
    return event.asset_materialization.metadata[name].value


def _completeness_check(world: World, defs: Any) -> tuple[bool, dict[str, Any]]:
    """Run the `prompt_task_labels_complete` check alone: (passed, metadata)."""
    from dagster import AssetSelection, materialize

    from assets.labels import prompt_task_labels_complete

    result = materialize([*defs.assets, *defs.asset_checks], selection=AssetSelection.checks(
        prompt_task_labels_complete), resources=defs.resources, instance=world.instance)
    [evaluation] = result.get_asset_check_evaluations()
    return evaluation.passed, {k: v.value for k, v in evaluation.metadata.items()}


def test_failed_prompts_fail_the_run_and_a_plain_rerun_retries_exactly_them(
        world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from models.labeling.cache import MAX_LABEL_RUNS
    from pipelines import run_all
    from tests.openai_stub import OpenAIStub, Status, user_text

    records = marked(real_records("officebench", 16), "flaky")
    failing = [needle(r) for r in records[:6]]  # 6 of 16 prompts fail on the first run
    stubborn = failing[0]  # and this one on every run
    world.add("flaky", records)
    args = ["--skip-reference", "--skip-analysis", "--benchmarks", "flaky"]

    def requested(stub: OpenAIStub, since: int) -> list[str]:
        """The needles of the failing prompts whose step-1 request came after request number `since`."""
        bodies = [user_text(r["body"]) for r in stub.chat_requests()[since:]]
        return sorted(n for n in failing for b in bodies if n in b and "Step 2." not in b)

    with OpenAIStub() as stub:
        stub.on(stubborn, *[Status(400, f"bad request #{run}") for run in range(1, MAX_LABEL_RUNS + 2)])
        for marker in failing[1:]:
            stub.on(marker, Status(400, "bad request #1"))
        defs = _openai_defs(world, monkeypatch, stub.base_url)

        # run 1: 10 labeled, 6 failed: said, counted, exit 4, the partition's check fails
        assert run_all.main(args, defs=defs, instance=world.instance) == EXIT_LABEL_FAILURES
        out = capsys.readouterr().out
        assert "10 labeled, 6 failed (see label_failures; 6 prompts without labels, exit 4)" in out, out
        assert "(10 prompts labeled, 6 FAILED, 0 from the cache)" in out, out  # it said "16 prompts labeled"
        # a failure in Dagster's run list too (it was a SUCCESS beside a failed check), its labels written
        assert "1 labeling step FAILED on some prompts, every other step succeeded" in out, out
        [run] = world.instance.get_runs(limit=1)
        assert run.status == DagsterRunStatus.FAILURE, run.status
        assert ("6 of 16 prompts of 'flaky' have no labels: 6 failed in this run (first error: step 1 "
                "(occupations): HTTP 400") in out, out
        log = Path(re.search(r"Dagster log: (\S+)", out).group(1)).read_text()  # the reason too, not only "failed"
        assert re.search(r"STEP_FAILURE .*6 of 16 prompts of 'flaky' have no labels", log), log[-2000:]
        labels_event = world.instance.get_latest_materialization_event(AssetKey("prompt_task_labels"))
        assert labels_event is not None and labels_event.run_id == run.run_id
        assert _latest_metadata(world, "n_failed") == 6 and _latest_metadata(world, "open_label_failures") == 6
        passed, check = _completeness_check(world, defs)
        assert not passed and check["open_label_failures"] == 6 and check["given_up"] == 0
        assert check["prompts_without_labels"] == 6  # no work decision for their texts either
        failures = world.table("label_failures")
        assert failures.height == 6 and set(failures["runs"]) == {1}
        assert len(stub.chat_requests()) == 10 * 2 + 6  # a work prompt: two steps; a 400 is not retried

        # run 2, plain: only the 6 failed prompts are asked again (nothing else); 5 now succeed
        before = len(stub.chat_requests())
        assert run_all.main(args, defs=defs, instance=world.instance) == EXIT_LABEL_FAILURES
        out = capsys.readouterr().out
        assert "prompts failed to label: running it" in out, out
        assert "5 labeled, 1 failed" in out, out
        assert requested(stub, before) == sorted(failing)
        assert len(stub.chat_requests()) - before == 5 * 2 + 1
        failures = world.table("label_failures")
        assert failures.height == 1 and failures["runs"][0] == 2 and "HTTP 400: bad request #2" in failures["error"][0]

        # run 3 retries the stubborn one (its last allowed run), run 4 does not ask it again and skips the step
        before = len(stub.chat_requests())
        assert run_all.main(args, defs=defs, instance=world.instance) == EXIT_LABEL_FAILURES
        assert requested(stub, before) == [stubborn] and len(stub.chat_requests()) - before == 1
        capsys.readouterr()
        before = len(stub.chat_requests())
        assert run_all.main(args, defs=defs, instance=world.instance) == EXIT_LABEL_FAILURES
        out = capsys.readouterr().out
        assert len(stub.chat_requests()) == before and "flaky: unchanged since it last wrote its outputs" in out
        assert "0 labeled, 0 failed (see label_failures; 1 prompt without labels" in out, out

        # run 5: a new prompt lands; the step runs, labels it, does not ask the given-up one, and still fails
        # (a probe: the landing sensor's last retry asked nothing and its run was a SUCCESS)
        records.append({**records[-1], "prompt_id": "added", "prompt": f"[flakyNEW] {records[-1]['prompt']}"})
        world.add("flaky", records)
        before = len(stub.chat_requests())
        assert run_all.main(args, defs=defs, instance=world.instance) == EXIT_LABEL_FAILURES
        out = capsys.readouterr().out
        assert requested(stub, before) == [] and len(stub.chat_requests()) - before == 2  # the new prompt alone
        assert (f"1 of 17 prompts of 'flaky' have no labels: 1 given up after failing in {MAX_LABEL_RUNS} runs, "
                "not asked again") in out, out
        assert world.instance.get_runs(limit=1)[0].status == DagsterRunStatus.FAILURE
        assert "(1 prompt labeled, 1 given up (not asked), 15 from the cache)" in out, out
        assert "The next run asks" not in out  # nothing failed in this run: only --force asks again

        # run 6, --force: the given-up prompt is asked again (nothing else: the rest is cached); it fails again
        before = len(stub.chat_requests())
        assert run_all.main([*args, "--force"], defs=defs, instance=world.instance) == EXIT_LABEL_FAILURES
        out = capsys.readouterr().out
        assert requested(stub, before) == [stubborn] and len(stub.chat_requests()) - before == 1
        assert "1 of 17 prompts of 'flaky' have no labels: 1 failed in this run" in out, out
    failures = world.table("label_failures")
    assert failures.height == 1 and failures["runs"][0] == MAX_LABEL_RUNS + 1
    assert failures["attempts"][0] == MAX_LABEL_RUNS + 1
    assert f"bad request #{MAX_LABEL_RUNS + 1} " in failures["error"][0]
    assert world.labels("flaky")["prompt_id"].n_unique() == 16
    passed, check = _completeness_check(world, defs)
    assert not passed and check["open_label_failures"] == 1 and check["given_up"] == 1
    # a prompt without a work decision fails the check even with no failure row to say so
    with duckdb.connect(str(world.state.warehouse)) as con:
        con.execute("delete from label_failures")
        con.execute("delete from prompt_work where benchmark = 'flaky' and prompt_id = (select min(prompt_id) "
                    "from prompt_work where benchmark = 'flaky')")
    passed, check = _completeness_check(world, defs)
    assert not passed and check["open_label_failures"] == 0 and check["prompts_without_labels"] == 2


def test_an_earlier_models_failures_are_not_open_once_the_current_model_labeled_them(
        world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """label_failures keeps each labeler version's failures. A prompt one model failed on and the next model
    labeled was still counted as open: run_all exited 4 with every prompt labeled, and ran the partition again on
    every plain run ("prompts failed to label: running it")."""
    from pipelines import run_all
    from tests.openai_stub import OpenAIStub, Status

    records = marked(real_records("officebench", 8), "switch")
    world.add("switch", records)
    args = ["--skip-reference", "--skip-analysis", "--benchmarks", "switch"]
    with OpenAIStub() as stub:
        for record in records[:2]:
            stub.on(needle(record), Status(400, "bad request"))  # model A fails twice; then answers
        defs = _openai_defs(world, monkeypatch, stub.base_url)
        assert run_all.main(args, defs=defs, instance=world.instance) == EXIT_LABEL_FAILURES
        assert "6 labeled, 2 failed" in capsys.readouterr().out

        monkeypatch.setenv("BENCHMAP_LLM_MODEL", "another-model")  # model B labels every prompt
        defs = _openai_defs(world, monkeypatch, stub.base_url)
        assert run_all.main(args, defs=defs, instance=world.instance) == 0
        out = capsys.readouterr().out
        assert "8 labeled, 0 failed" in out and "without labels" not in out, out
        assert world.instance.get_runs(limit=1)[0].status == DagsterRunStatus.SUCCESS
        failures = world.table("label_failures")  # model A's rows are kept, as its history
        assert failures.height == 2 and not failures["labeler_version"].str.starts_with("another-model").any()
        assert world.labels("switch")["prompt_id"].n_unique() == 8
        passed, check = _completeness_check(world, defs)  # the warehouse-wide check (run with the analysis)
        assert passed and check["open_label_failures"] == 0, check

        before = len(stub.chat_requests())
        assert run_all.main(args, defs=defs, instance=world.instance) == 0
        out = capsys.readouterr().out
        assert "switch: unchanged since it last wrote its outputs" in out and "running it" not in out, out
        assert len(stub.chat_requests()) == before

def test_a_benchmark_the_llm_labels_after_an_offline_run_is_counted_beside_the_offline_ones(
        world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """An audit (2026-12-07): after an offline run, labeling one more benchmark with the LLM published a release
    counting the LLM's benchmarks alone ("tasks covered: 1 of 18,796"); the first mend then failed the analysis
    ("labeler 'openai+offline' has no labels"). Each benchmark is now counted by its own labeler, end to end."""
    from pipelines import run_all
    from pipelines.definitions import build_definitions
    from tests.openai_stub import OpenAIStub

    # an index leaving the LLM's benchmark out (a probe: every analysis then failed, exit 1, on "labelers
    # ['openai'] have no labels")
    indexes = world.state.root / "indexes"
    indexes.mkdir()
    (indexes / "all.toml").write_text((ROOT / "data" / "indexes" / "all.toml").read_text())
    (indexes / "without_llm.toml").write_text('title = "Without the LLM benchmark"\nversion = "1"\n'
                                              '[[exclude]]\nbenchmark = "llm"\nreason = "a probe"\n')
    monkeypatch.setenv("BENCHMAP_INDEX_DIR", str(indexes))
    world.add("plain", real_records("gdpval", 6))
    world.add("llm", real_records("occubench", 4))  # landed, labeled later (the index file names it)
    offline = build_definitions(str(world.state.warehouse))
    assert run_all.main(["--skip-reference", "--benchmarks", "plain"], defs=offline, instance=world.instance) == 0
    with OpenAIStub() as stub:
        defs = _openai_defs(world, monkeypatch, stub.base_url)
        code = run_all.main(["--skip-reference", "--benchmarks", "llm"], defs=defs, instance=world.instance)
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    labels = world.table("prompt_task_labels")
    assert set(labels.select("benchmark", "labeler").unique().rows()) == {("plain", "offline"), ("llm", "openai")}
    coverage = world.table("task_coverage")
    assert dict(coverage.select("benchmark_index", "labeler").unique().rows()) == {
        "all": "openai+offline", "without_llm": "offline"}
    counted = coverage.filter(pl.col("n_prompts") > 0)["benchmarks"].str.split(",").explode().unique().to_list()
    assert {"plain", "llm"} <= set(counted)  # both benchmarks' labels are counted
    summary = (world.state.exports / "latest" / "summary.md").read_text()
    assert "what the raw labels say (all benchmarks, labeler openai+offline)" in out
    assert "by the **openai+offline** labeler (model: gpt-4o-mini, tfidf-hybrid+selector)" in summary


# ------------------------------------------------------------------------------------------------ item 7
def test_two_run_alls_at_once_request_each_new_prompt_once(world: World) -> None:
    from tests.openai_stub import OpenAIStub, Slow, user_text, valid

    records = marked(real_records("officebench", 16), "together")
    world.add("together", records)
    env = world.state.env(labeler="openai", OPENAI_API_KEY="sk-test-concurrent-0001")
    with OpenAIStub(default=lambda body: Slow(0.3, valid(2))) as stub:  # ~2.5 s of labeling per run
        env["OPENAI_BASE_URL"] = stub.base_url
        command = [sys.executable, "-m", "pipelines.run_all", "--skip-reference", "--skip-analysis",
                   "--benchmarks", "together"]
        runs = [subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True) for _ in range(2)]
        outputs = [r.communicate(timeout=300)[0] for r in runs]
        step1 = [user_text(r["body"]) for r in stub.chat_requests() if "Step 2." not in user_text(r["body"])]
    assert [r.returncode for r in runs] == [0, 0], "\n".join(o[-2000:] for o in outputs)
    per_prompt = {r["prompt_id"]: sum(needle(r) in b for b in step1) for r in records}
    assert per_prompt == {r["prompt_id"]: 1 for r in records}, per_prompt  # each prompt requested once
    assert len(stub.chat_requests()) == 2 * len(records)
    labeled = sorted(int(m) for o in outputs for m in re.findall(r"(\d+) labeled, 0 failed", o))
    assert labeled == [0, len(records)]  # one run labeled all of them, the other found them cached
    assert world.labels("together")["prompt_id"].n_unique() == len(records)


def test_two_offline_run_alls_at_once_label_each_new_prompt_once(world: World) -> None:
    """The offline labeler's partition run keeps the warehouse open (pipelines/warehouse.held): run_all takes
    the benchmark's labeling lock before it opens the file, so the second run waits for the lock, not with the
    file open while the first one cannot commit (before: the first failed on a 120 s lock timeout)."""
    records = marked(real_records("officebench", 40), "offline-together")
    world.add("offlinetogether", records)
    command = [sys.executable, "-m", "pipelines.run_all", "--skip-reference", "--skip-analysis",
               "--benchmarks", "offlinetogether"]
    runs = [subprocess.Popen(command, env=world.state.env(), cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outputs = [r.communicate(timeout=600)[0] for r in runs]
    assert [r.returncode for r in runs] == [0, 0], "\n".join(o[-2000:] for o in outputs)
    labeled = sorted(int(m) for o in outputs for m in re.findall(r"(\d+) labeled, 0 failed", o))
    assert labeled[0] == 0 and labeled[1] > 0, "\n".join(o[-2000:] for o in outputs)
    assert world.labels("offlinetogether")["prompt_id"].n_unique() > 0


def test_two_run_alls_at_once_compute_the_analysis_once(world: World, tmp_path: Path) -> None:
    """Two run_alls on the same new benchmark: one computes the analysis, the other waits for it, then skips
    it. The run holding the analysis lock goes on only once the other has found the lock taken (`meeting`
    below), so they overlap whatever the machine's timing (once, on a busy machine, the second reached the
    step after the first had finished it: it skipped without waiting, and the test failed)."""
    records = marked(real_records("tau_bench", 20), "analysis")
    world.add("analysed", records)
    command = [sys.executable, __file__, "run-all-meeting", str(tmp_path), "--skip-reference",
               "--benchmarks", "analysed"]
    runs = [subprocess.Popen(command, env=world.state.env(), cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outputs = [r.communicate(timeout=900)[0] for r in runs]
    shown = "\n".join(o[-2000:] for o in outputs)
    assert [r.returncode for r in runs] == [0, 0], shown
    label = "analysis/exports (+ warehouse-wide benchmark checks)"
    ran = [o for o in outputs if re.search(r"- analysis/exports .*: ok in", o)]
    waited = [o for o in outputs if f"{label}: another run_all is running this step: waiting for it" in o]
    skipped = [o for o in outputs if f"{label}: unchanged since it last wrote its outputs, skipped" in o]
    assert len(ran) == 1, shown  # computed once: not by both, not by neither
    assert len(waited) == 1 and waited == skipped and waited[0] is not ran[0], shown
    headlines = [re.findall(r"^AI benchmarks exercise .*$", o, re.MULTILINE) for o in outputs]
    assert headlines[0] and headlines[0] == headlines[1], headlines  # the one that waited reads the same numbers


def test_labels_in_the_label_store_are_never_requested_again_after_a_sigkill(world: World) -> None:
    from resources import label_store
    from resources import warehouse as wh
    from resources.dagster_resources import LabelerResource
    from tests.openai_stub import OpenAIStub, user_text

    records = marked(real_records("officebench", 12), "killed")
    world.add("killed", records)
    assert world.materialize("killed", keys=["benchmarks", "benchmark_prompts", "benchmark_results",
                                             "benchmark_rejects"]).success
    with OpenAIStub() as stub:
        # the child labels in batches of 4 and kills itself (SIGKILL) right after the second batch reached the
        # label store, before its DuckDB commit: the worst moment
        child = subprocess.run([sys.executable, __file__, "label-and-die", str(world.state.warehouse), "killed",
                                stub.base_url, "2"], env=world.state.env(), cwd=ROOT, capture_output=True,
                               text=True, timeout=240)
        assert child.returncode == -signal.SIGKILL, (child.stdout + child.stderr)[-3000:]
        first_requests = len(stub.chat_requests())
        # two batches of 4 work prompts, two steps each; the pool works one batch ahead, so requests of the third
        # batch may have been sent too (those answers are lost with the kill: at most one batch more)
        assert 8 * 2 <= first_requests <= 12 * 2
        stored = label_store.read_store(world.state.warehouse).cache_frame()
        committed = wh.query(world.state.warehouse, "select count(*) as n from label_cache")["n"][0]
        assert stored.height == 8 and committed == 4  # batch 2 is in the store only

        labeler = LabelerResource(kind="openai", model="gpt-4o-mini", base_url=stub.base_url,
                                  api_key="sk-test-sigkill-0001", batch_size=4, backoff_base_s=0.01)
        rerun = world.materialize("killed", labeler=labeler, keys=["prompt_task_labels"])
        assert rerun.success, step_error(rerun)
        again = [user_text(r["body"]) for r in stub.chat_requests()[first_requests:]]
    assert len(again) == 4 * 2  # only the 4 prompts of the third batch
    hash_of = dict(world.table("benchmark_prompts", "killed").select("prompt_id", "prompt_hash").iter_rows())
    in_store = set(stored["prompt_hash"].to_list())
    for record in records:  # a prompt in the label store is never asked again; the others once (two steps)
        asked = sum(needle(record) in b for b in again)
        assert asked == (0 if hash_of[record["prompt_id"]] in in_store else 2), record["prompt_id"]
    cache = wh.query(world.state.warehouse, "select prompt_hash, count(*) as n from label_cache group by 1")
    assert cache.height == 12 and cache["n"].max() == 1  # each label set once
    assert world.labels("killed")["prompt_id"].n_unique() == 12


# ------------------------------------------------------------------------------------------------ child process
def child(argv: list[str]) -> int:
    """`label-and-die <warehouse> <partition> <base_url> <n>`: label the partition with the openai labeler in
    batches of 4 and SIGKILL this process right after the n-th batch is written to the label store."""
    from dagster import AssetSelection, DagsterInstance, materialize

    from pipelines.definitions import build_definitions
    from resources import label_store
    from resources.dagster_resources import LabelerResource

    _command, warehouse, partition, base_url, n = argv
    appended = label_store.append_batch
    calls = {"n": 0}

    def append_then_die(*args: Any, **kwargs: Any) -> Any:
        seq = appended(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == int(n):
            os.kill(os.getpid(), signal.SIGKILL)
        return seq

    label_store.append_batch = append_then_die
    defs = build_definitions(warehouse)
    labeler = LabelerResource(kind="openai", model="gpt-4o-mini", base_url=base_url, api_key="sk-test-sigkill-0001",
                              batch_size=4, max_concurrency=1, backoff_base_s=0.01)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("benchmark", [partition])
    result = materialize(list(defs.assets), selection=AssetSelection.assets("prompt_task_labels").without_checks(),
                         partition_key=partition, resources={**defs.resources, "labeler": labeler},
                         instance=instance, raise_on_error=False)
    print(json.dumps({"success": result.success}), flush=True)
    return 0


def run_all_meeting(argv: list[str]) -> int:
    """`run-all-meeting <folder> <run_all arguments>`: run_all, whose analysis step, once this process holds the
    step's lock, goes on only when the other run_all has found that lock taken (its non-blocking flock failed:
    it touches `<folder>/waiting`, then prints that it waits and blocks), at most 300 s (then the test's
    assertions say what happened). The lock and the step are run_all's own (pipelines/run_steps.py)."""
    import contextlib
    import fcntl
    import time

    from pipelines import cli, run_all, run_steps
    from resources import integrity

    folder, *args = argv
    waiting = Path(folder) / "waiting"
    real_flock, real_exclusive = fcntl.flock, run_steps.Steps.exclusive

    def flock(handle: Any, operation: int) -> None:
        try:
            real_flock(handle, operation)
        except BlockingIOError:
            if str(getattr(handle, "name", "")).endswith("analysis.lock"):
                waiting.touch()
            raise

    @contextlib.contextmanager
    def exclusive(self: Any, step: str, label: str) -> Any:
        with real_exclusive(self, step, label):
            deadline = time.monotonic() + 300
            while step == "analysis" and not waiting.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            yield

    fcntl.flock = flock
    run_steps.Steps.exclusive = exclusive
    code = cli.run_cli(run_all.main, args, prog="run_all (run-all-meeting)",
                       extra_errors=(integrity.WarehouseDamaged,))
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    if sys.argv[1:2] == ["run-all-meeting"]:
        sys.exit(run_all_meeting(sys.argv[2:]))
    sys.exit(child(sys.argv[1:]))
