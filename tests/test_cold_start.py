"""A cold `run_all` starts its label workers before anything else (pipelines/label_workers.py, issue 29), runs the
reference tables' Great Expectations checks in the last of them (resources/label_pool.py: validate), and stops
them on every exit; the checks a worker runs give the outcomes this process gives."""

from __future__ import annotations

import logging
import pickle
import signal
from pathlib import Path

import polars as pl
import pytest
from dagster import DagsterInstance

from models import expectations as ex
from pipelines import label_workers
from resources import label_pool
from resources.settings import settings


@pytest.fixture
def cold(tmp_path: Path, mirror: Path, empty_raw_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Settings of a cold run: two label workers, the offline labeler, a warehouse file not there yet."""
    warehouse = tmp_path / "warehouse" / "benchmap.duckdb"
    for name, value in (("BENCHMAP_WAREHOUSE", str(warehouse)), ("BENCHMAP_LABEL_WORKERS", "2"),
                        ("BENCHMAP_LABELER", "offline"), ("BENCHMAP_OFFLINE", "1")):
        monkeypatch.setenv(name, value)
    settings.cache_clear()
    yield warehouse
    label_pool.shutdown()
    settings.cache_clear()


def _frame() -> pl.DataFrame:
    return pl.DataFrame({"key": ["a", "b", "b", None], "share": [0.1, 0.5, 1.5, 0.2], "ok": [True, True, False, True]})


def _parts() -> list[tuple[str, pl.DataFrame, list[ex.Spec]]]:
    frame = _frame()
    return [("all", frame, [*ex.unique_key(["key"]), ex.between("share", 0, 1), ex.row_count(4),
                            ex.share_at_least("ok", 0.7), ex.in_set("missing_column", [1])]),
            ("metric", pl.DataFrame({"rate": [0.98]}), [ex.metric_at_least("rate", 0.99)])]


def test_the_checks_a_worker_runs_are_the_checks_this_process_runs(cold: Path) -> None:
    here = ex.run_parts(_parts())
    assert [o.n_failed for o in here] == [4, 1]  # nulls, duplicates, 1.5 out of range, the missing column; 0.98
    assert pickle.loads(pickle.dumps(_parts()[0][2])) == _parts()[0][2]  # plain data: specs go over the pipe
    pool = label_pool.prestart(warm_checks=True)
    assert pool is not None and pool.checks_worker is pool.workers[-1]
    there = label_pool.validate(_parts())
    for mine, theirs in zip(here, there, strict=True):
        assert theirs.success == mine.success and theirs.results.equals(mine.results)
    # the index task_search_index pickles: the checks worker loads it only when the checks are over
    label_pool.preload(cold.parent / "index.pkl")
    assert pool.checks_worker.opened is None and pool.deferred == str(cold.parent / "index.pkl")
    assert all(w.opened is not None for w in pool.workers[:-1])
    label_pool.end_checks()
    assert pool.checks_worker is None and pool.workers[-1].opened is not None
    assert label_pool.validate(_parts())[0].results.equals(here[0].results)  # now in this process


def test_a_failed_checks_worker_is_named_and_the_checks_run_here(cold: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """validate falls back to this process when the checks worker fails, and says so with the worker's error
    (before: silently)."""
    here = ex.run_parts(_parts())
    pool = label_pool.prestart(warm_checks=True)
    assert pool is not None and pool.checks_worker is not None
    process = pool.checks_worker.process.process
    process.kill()
    process.wait(timeout=60)
    with caplog.at_level(logging.WARNING, logger="resources.label_pool"):
        there = label_pool.validate(_parts())
    assert [o.results.equals(m.results) and o.success == m.success for o, m in zip(there, here, strict=True)] \
        == [True, True]
    [warning] = [r for r in caplog.records if r.name == "resources.label_pool"]
    assert warning.levelno == logging.WARNING
    text = warning.getMessage()
    assert "the checks worker failed the GX checks of all, metric" in text and "running them in this process" in text
    assert f"code {-signal.SIGKILL}" in text, text  # why: the worker's error (it was killed)


def test_a_cold_run_all_starts_the_workers_first_and_stops_them_when_it_exits_early(cold: Path) -> None:
    from pipelines import run_all
    from pipelines.definitions import build_definitions

    assert not label_workers.start_if_cold(["--skip-reference"]) and label_pool._SHARED is None
    assert label_workers.start_if_cold(["--benchmarks", "no_such_benchmark"])
    pool = label_pool._SHARED
    assert pool is not None and pool.checks_worker is not None and label_pool.has_prebuilt()
    processes = [worker.process.process for worker in pool.workers]
    assert all(p.poll() is None for p in processes)
    code = run_all.main(["--benchmarks", "no_such_benchmark"], defs=build_definitions(str(cold)),
                        instance=DagsterInstance.ephemeral())
    assert code == 2
    assert label_pool._SHARED is None and all(p.poll() is not None for p in processes)  # stopped, not left
    assert not list((cold.parent / "task_index").glob(".prebuilt-*"))  # the index built ahead: removed
    # not cold: a warehouse file is there (the reference stage starts them when it runs, as before)
    cold.parent.mkdir(parents=True, exist_ok=True)
    cold.touch()
    assert not label_workers.start_if_cold([]) and label_pool._SHARED is None


def test_exit_now_keeps_the_output_and_the_exit_code(tmp_path: Path) -> None:
    """run_all ends with cli.exit_now (no interpreter teardown): what it printed to a pipe (block-buffered) and
    what its logging handlers hold still reach their files, and the exit code is the run's."""
    import subprocess
    import sys

    log_file = tmp_path / "run.log"
    script = (
        "import logging\n"
        "from pipelines.cli import exit_now\n"
        f"handler = logging.FileHandler({str(log_file)!r})\n"
        "logging.getLogger('benchmap.test').addHandler(handler)\n"
        "logging.getLogger('benchmap.test').error('logged before the exit')\n"
        "print('summary line', end='')\n"
        "exit_now(4)\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 4, done.stderr
    assert done.stdout == "summary line"
    assert log_file.read_text().strip() == "logged before the exit"
