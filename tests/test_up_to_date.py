"""The warm run's fast path (pipelines/up_to_date.py): a plain `run_all` with nothing changed since the last
complete run prints its summary and exits before Dagster is imported; any change to what a run depends on
takes the full path (issue 29 item 4).

Most tests work on a small world (a landing zone, a mirror, a warehouse file, a real Dagster instance in a
temporary DAGSTER_HOME with benchmap's storage) and a copy of the project's code, and check which part of the
fingerprint each change moves; `test_run_all_*` (slow) run `python -m pipelines.run_all` on a copy of the full
pipeline's state."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from dagster import AssetMaterialization, DagsterInstance, DagsterRunStatus, asset, materialize

from pipelines import up_to_date

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = {"headline": ["AI benchmarks exercise about 9.6% of US work hours"], "n_benchmarks": 2,
           "totals": {"n_prompts": 3, "n_results": 1, "n_rejects": 0}, "release": "release: r1 (newest)"}
STORAGE_YAML = """storage:
  custom:
    module: resources.dagster_storage
    class: PooledSqliteStorage
    config:
      base_dir: {home}/storage
telemetry:
  enabled: false
"""


class World:
    """A landing zone, a mirror, a warehouse, a Dagster instance and a project copy: what the fingerprint reads."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root, self.monkeypatch = root, monkeypatch
        self.project = root / "project"
        for package in up_to_date.CODE_PACKAGES:
            (self.project / package).mkdir(parents=True)
            (self.project / package / "__init__.py").write_text('"""a package."""\n')
        (self.project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
        (self.project / "data" / "reference").mkdir(parents=True)
        (self.project / "data" / "reference" / "gold.csv").write_text("task,label\n1,1\n")
        self.raw = root / "raw"
        self.prompts = self._benchmark(self.raw, "alpha", 2)
        self.mirror = root / "mirror"
        self._benchmark(self.mirror, "beta", 1)
        (self.mirror / "onet").mkdir()
        self.reference = self.mirror / "onet" / "task_statements.csv"
        self.reference.write_text("task_id,task\n1,Write code\n")
        self.indexes = root / "indexes"
        self.indexes.mkdir()
        (self.indexes / "all.toml").write_text("name = 'all'\n")
        self.warehouse = root / "warehouse" / "benchmap.duckdb"
        self.warehouse.parent.mkdir()
        with duckdb.connect(str(self.warehouse)) as con:
            con.execute("create table label_failures (benchmark varchar, prompt_id varchar, error varchar)")
        (self.warehouse.parent / "benchmap.label_store").mkdir()
        (self.warehouse.parent / "benchmap.label_store" / "one.cache.parquet").write_bytes(b"PAR1")
        self.home = root / "dagster_home"
        self.home.mkdir()
        (self.home / "dagster.yaml").write_text(STORAGE_YAML.format(home=self.home))
        env = {"DAGSTER_HOME": str(self.home), "BENCHMAP_WAREHOUSE": str(self.warehouse),
               "BENCHMAP_RAW_DIR": str(self.raw), "BENCHMAP_MIRROR": str(self.mirror),
               "BENCHMAP_INDEX_DIR": str(self.indexes), "BENCHMAP_OFFLINE": "1", "BENCHMAP_LABELER": "offline"}
        self.env = env
        for name in [n for n in os.environ if n.startswith(up_to_date.PREFIXES)]:
            monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(up_to_date, "PROJECT_ROOT", self.project)
        monkeypatch.setattr(up_to_date, "DEFAULT_WAREHOUSE", self.project / "data" / "warehouse" / "x.duckdb")
        self.instance = DagsterInstance.get()

    @staticmethod
    def _benchmark(root: Path, name: str, n: int) -> Path:
        folder = root / "benchmarks" / name
        folder.mkdir(parents=True)
        prompts = folder / "prompts.jsonl"
        prompts.write_text("".join(json.dumps({"id": f"p{i}", "prompt": f"Write a report {i}"}) + "\n"
                                   for i in range(n)))
        return prompts

    def record(self) -> Path:
        up_to_date._STARTED.clear()
        written = up_to_date.record(log_path=self.warehouse.parent / "logs" / "run.log", **SUMMARY)
        assert written == up_to_date.fingerprint_file(self.warehouse) and written.is_file()
        return written

    def changed(self) -> list[str] | None:
        up_to_date._STARTED.clear()  # a new process computes the parts anew
        return up_to_date.changed_parts()


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    up_to_date._STARTED.clear()
    built = World(tmp_path, monkeypatch)
    yield built
    up_to_date._STARTED.clear()


def test_nothing_changed_takes_the_fast_path(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert world.changed() is None  # no complete run recorded yet
    assert None is up_to_date.fast_path([])
    world.record()
    assert world.changed() == []
    up_to_date._STARTED.clear()
    assert up_to_date.fast_path([]) == 0
    out = capsys.readouterr().out
    assert "nothing changed since" in out and "every step up to date" in out
    assert SUMMARY["headline"][0] in out and "release: r1 (newest)" in out
    assert "done in 0s: 2 benchmarks, 3 prompts, 1 result, 0 rejects; all steps succeeded; 0 labeled, 0 failed" in out
    assert up_to_date.fast_path(["--verbose"]) == 0  # changes nothing a run does
    for argv in (["--force"], ["--rebuild"], ["--benchmarks", "alpha"], ["--skip-reference"], ["--skip-analysis"],
                 ["--debug"]):
        assert None is up_to_date.fast_path(argv), argv


def _append_prompt(w: World) -> None:
    with open(w.prompts, "a") as handle:
        handle.write(json.dumps({"id": "p9", "prompt": "Draft a contract"}) + "\n")


def _same_size_new_mtime(w: World) -> None:  # rewritten in place, one character different, same length
    w.prompts.write_text(w.prompts.read_text().replace("report 0", "report 7"))
    os.utime(w.prompts, ns=(time.time_ns(), time.time_ns() + 10**9))


def _materialize_through_dagster(w: World) -> None:
    w.instance.report_runless_asset_event(AssetMaterialization("coverage_headline"))


def _failed_run(w: World) -> None:
    @asset
    def breaks() -> None:
        raise RuntimeError("boom")

    assert not materialize([breaks], instance=w.instance, raise_on_error=False).success


def _interrupted_run(w: World) -> None:  # a run_all killed mid-run: its Dagster run stays STARTED
    from dagster._core.test_utils import create_run_for_test

    create_run_for_test(w.instance, job_name="__ASSET_JOB", status=DagsterRunStatus.STARTED)


def _warehouse_row(w: World) -> None:  # e.g. an open label failure written by another process
    with duckdb.connect(str(w.warehouse)) as con:
        con.execute("insert into label_failures values ('alpha', 'p0', 'timeout')")


def _warehouse_replaced_same_mtime(w: World) -> None:  # a backup copied back with its times kept
    backup = w.root / "backup.duckdb"
    shutil.copy2(w.warehouse, backup)
    w.warehouse.unlink()
    shutil.copy2(backup, w.warehouse)


def _code_file(w: World) -> None:
    (w.project / "models" / "estimator.py").write_text("def f() -> int:\n    return 1\n")


def _set(name: str, value: str) -> Callable[[World], None]:
    def change(w: World) -> None:
        w.monkeypatch.setenv(name, value)
    return change


CHANGES: dict[str, tuple[Callable[[World], None], str]] = {
    "a benchmark's prompts": (_append_prompt, "sources"),
    "a prompt edited, same size": (_same_size_new_mtime, "sources"),
    "a new benchmark folder": (lambda w: World._benchmark(w.mirror, "gamma", 1), "sources"),
    "a removed benchmark folder": (lambda w: shutil.rmtree(w.prompts.parent), "sources"),
    "a reference source file": (lambda w: w.reference.write_text("task_id,task\n1,Write tests\n"), "sources"),
    "a vendored reference file": (lambda w: (w.project / "data" / "reference" / "gold.csv").write_text("x\n"),
                                  "sources"),
    "an index definition": (lambda w: (w.indexes / "economic.toml").write_text("name = 'e'\n"), "sources"),
    "a code file": (_code_file, "code"),
    "fitted parameters": (lambda w: (w.project / "models" / "selector_fit.json").write_text("{}"), "code"),
    "the dependency pins": (lambda w: (w.project / "pyproject.toml").write_text("[project]\nname = 'y'\n"), "code"),
    "the labeler": (_set("BENCHMAP_LABELER", "openai"), "settings"),
    "the neighbour step": (_set("BENCHMAP_NEIGHBOUR_STEP", "0"), "settings"),
    "the LLM model": (_set("BENCHMAP_LLM_MODEL", "gpt-4o"), "settings"),
    "an API key set": (_set("OPENAI_API_KEY", "sk-test-secret"), "settings"),
    "another mirror": (lambda w: w.monkeypatch.setenv("BENCHMAP_MIRROR", str(w.raw)), "settings"),
    "the instance's dagster.yaml": (lambda w: (w.home / "dagster.yaml").write_text(
        (w.home / "dagster.yaml").read_text() + "# edited\n"), "settings"),
    "a materialization through Dagster": (_materialize_through_dagster, "instance"),
    "a failed run": (_failed_run, "instance"),
    "an interrupted run": (_interrupted_run, "instance"),
    "a new partition": (lambda w: w.instance.add_dynamic_partitions("benchmarks", ["delta"]), "instance"),
    "the warehouse written": (_warehouse_row, "warehouse"),
    "the warehouse replaced, same mtime": (_warehouse_replaced_same_mtime, "warehouse"),
    "the warehouse deleted": (lambda w: w.warehouse.unlink(), "warehouse"),
    "the label store emptied": (lambda w: shutil.rmtree(w.warehouse.parent / "benchmap.label_store"), "warehouse"),
}


@pytest.mark.parametrize("what", sorted(CHANGES))
def test_any_change_takes_the_full_path(world: World, what: str, capsys: pytest.CaptureFixture[str]) -> None:
    change, part = CHANGES[what]
    world.record()
    assert world.changed() == []
    change(world)
    changed = world.changed()
    assert changed is not None and part in changed, (what, changed)
    up_to_date._STARTED.clear()
    assert None is up_to_date.fast_path([])
    assert "nothing changed" not in capsys.readouterr().out
    up_to_date._STARTED.clear()
    why, sound = up_to_date.why_full()
    assert part in why and sound == (part != "warehouse")  # the header names it; the file's blocks: read again


def test_log_files_and_a_new_fingerprint_change_nothing(world: World) -> None:
    """What a run writes beside the warehouse that is no state: its logs (and the fingerprint file itself)."""
    world.record()
    (world.warehouse.parent / "logs").mkdir(exist_ok=True)
    (world.warehouse.parent / "logs" / "run_all-x.log").write_text("a log\n")
    assert world.changed() == []


def test_the_fast_path_repeats_the_landing_warnings(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    up_to_date._STARTED.clear()
    up_to_date.record(log_path=world.root / "x.log", warnings=["landing folder /x/broken: no prompts.jsonl"],
                      **SUMMARY)
    up_to_date._STARTED.clear()
    assert up_to_date.fast_path([]) == up_to_date.EXIT_LANDING_PROBLEMS == 7  # as the full run it repeats
    out = capsys.readouterr()
    assert "  warning: landing folder /x/broken: no prompts.jsonl" in out.out
    assert "error: 1 landing folder did not land" in out.err


def test_the_fingerprint_holds_no_secret(world: World) -> None:
    world.monkeypatch.setenv("OPENAI_API_KEY", "sk-test-do-not-store-0123456789")
    text = world.record().read_text()
    assert "sk-test-do-not-store" not in text
    world.monkeypatch.setenv("OPENAI_API_KEY", "sk-test-another-key-0123456789")  # presence only, not the value
    assert world.changed() == []


def test_another_storage_has_no_fast_path(world: World) -> None:
    (world.home / "dagster.yaml").write_text("storage:\n  postgres:\n    postgres_url: postgresql://h/db\n")
    assert up_to_date.storage_folder(world.home) is None
    up_to_date._STARTED.clear()
    assert up_to_date.record(log_path=world.root / "x.log", **SUMMARY) is None
    assert world.changed() is None


def test_the_fast_path_imports_no_dagster(world: World) -> None:
    """`python -m pipelines.run_all` (its module run as __main__) over the recorded world: exit 0, the summary,
    and no dagster module in sys.modules; the project's own code this time (the fingerprint of /work code)."""
    world.monkeypatch.setattr(up_to_date, "PROJECT_ROOT", ROOT)
    world.monkeypatch.setattr(up_to_date, "DEFAULT_WAREHOUSE", ROOT / "data" / "warehouse" / "benchmap.duckdb")
    world.record()
    probe = ("import json, runpy, sys\n"
             "sys.argv = ['run_all']\n"
             "try:\n"
             "    runpy.run_module('pipelines.run_all', run_name='__main__', alter_sys=True)\n"
             "    code = None\n"
             "except SystemExit as exc:\n"
             "    code = exc.code\n"
             "print(json.dumps([code, sorted(m for m in sys.modules if m.split('.')[0] == 'dagster')]))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], cwd=os.getcwd(), env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    code, dagster_modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert code == 0 and dagster_modules == [], (code, dagster_modules[:5])
    assert "nothing changed since" in done.stdout and SUMMARY["headline"][0] in done.stdout


def _copy_state(source: Path, target: Path) -> None:
    """A copy of a pipeline state (Dagster home, warehouse, landing zone); the task index path points into it."""
    shutil.copytree(source, target, symlinks=True)
    with duckdb.connect(str(target / "warehouse" / "benchmap.duckdb")) as con:
        if con.execute("select count(*) from information_schema.tables where table_name = 'task_search_index'"
                       ).fetchone()[0]:
            con.execute("update task_search_index set path = replace(path, ?, ?)", [str(source), str(target)])


@pytest.mark.slow
def test_run_all_warm_takes_the_fast_path_until_something_changes(full_pipeline: object, tmp_path: Path) -> None:
    """On a copy of the full pipeline's state: the first plain run takes the full path (the copy moved every
    path: nothing recorded matches), skips every step and records; the second answers from the fingerprint with
    the same headline; a file added to the landing zone (hidden: no source version) makes the third a full run
    again (every step unchanged), after which the fourth is fast again."""
    source = full_pipeline.root  # type: ignore[attr-defined]
    root = tmp_path / "state"
    _copy_state(source, root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(up_to_date.PREFIXES)}
    env.update({k: v.replace(str(source), str(root)) for k, v in full_pipeline.env.items()})  # type: ignore[attr-defined]
    env["PYTHONPATH"] = str(ROOT)

    def run() -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "pipelines.run_all"], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=1800)
        assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
        return done

    def headline(out: str) -> str:
        return next(line for line in out.splitlines() if line.startswith("AI benchmarks exercise"))

    first = run()
    assert "up-to-date check (before Dagster): " in first.stdout and "nothing changed since" not in first.stdout
    assert "0 labeled, 0 failed" in first.stdout and first.stdout.count("unchanged since it last wrote") >= 30
    assert up_to_date.fingerprint_file(root / "warehouse" / "benchmap.duckdb").is_file()
    second = run()
    assert "nothing changed since" in second.stdout and "unchanged since it last wrote" not in second.stdout
    assert headline(second.stdout) == headline(first.stdout)
    assert "all steps succeeded; 0 labeled, 0 failed" in second.stdout
    (root / "raw" / ".note").write_text("added after the complete run\n")
    third = run()
    assert "changed since the complete run of" in third.stdout and "sources" in third.stdout
    # every step skipped (the first run may have run a step the fixture's other users left stale: never fewer)
    assert third.stdout.count("unchanged since it last wrote") >= max(30, first.stdout.count("unchanged since it last wrote"))
    assert "0 labeled, 0 failed" in third.stdout
    assert "nothing changed since" in run().stdout


def test_the_storage_folder_as_dagster_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The project's dagster.yaml (`base_dir: .dagster/storage`, relative to the working directory), `storage:
    sqlite`, no dagster.yaml (Dagster keeps everything in DAGSTER_HOME), and what has no fast path."""
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    assert up_to_date.storage_folder(home) == home.resolve()
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    assert up_to_date.storage_folder(home) == (tmp_path / ".dagster" / "storage").resolve()
    (home / "dagster.yaml").write_text("storage:\n  sqlite:\n    base_dir: /srv/dagster\n")
    assert up_to_date.storage_folder(home) == Path("/srv/dagster")
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    assert up_to_date.storage_folder(home) == home.resolve()
    for text in ("run_storage:\n  module: x\n", "storage:\n  sqlite:\n    base_dir:\n      env: DIR\n", "{{{"):
        (home / "dagster.yaml").write_text(text)
        assert up_to_date.storage_folder(home) is None, text


def test_a_full_run_forgets_the_record_until_it_completes(world: World) -> None:
    """A full run removes the record when it starts (start()): one that fails or is killed leaves none, so the
    next plain run is full as well; the header says why, and whether the warehouse's blocks are read again."""
    world.record()
    up_to_date._STARTED.clear()
    why, sound = up_to_date.start()
    assert why.endswith("none (the warehouse file is as that run left it: its blocks are not read again)")
    assert sound and not up_to_date.fingerprint_file(world.warehouse).exists()
    _warehouse_row(world)  # the run writes, then fails: no record
    assert world.changed() is None and up_to_date.fast_path([]) is None
    assert up_to_date.why_full() == ("no complete run recorded", False)
