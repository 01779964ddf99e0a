"""pipelines/warehouse.held: within the block every connect reuses one open DuckDB instance (run_all holds the
warehouse for each offline benchmark partition run); reads, writes and transactions behave as without it, and the
file is released (and other processes can open it) when the block ends."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from resources import warehouse as wh

OPEN_FROM_ANOTHER_PROCESS = (
    "import duckdb, sys\n"
    "try:\n"
    "    duckdb.connect(sys.argv[1], read_only=True).close()\n"
    "except duckdb.IOException as exc:\n"
    "    print('locked' if 'lock' in str(exc).lower() else 'error', exc)\n"
    "    raise SystemExit(1)\n"
)


def _other_process_can_open(path: Path) -> bool:
    done = subprocess.run([sys.executable, "-c", OPEN_FROM_ANOTHER_PROCESS, str(path)], capture_output=True,
                          text=True)
    return done.returncode == 0


def test_held_connections_read_write_and_roll_back_as_plain_ones(tmp_path: Path) -> None:
    path = tmp_path / "w" / "benchmap.duckdb"
    frame = pl.DataFrame({"benchmark": ["a", "a", "b"], "x": [1, 2, 3]})
    with wh.held(path):
        wh.replace_table(path, "t", frame)
        wh.replace_partition(path, "t", pl.DataFrame({"benchmark": ["a"], "x": [10]}), "benchmark", "a")
        # a read-only connect inside the hold is served by the held read-write instance (DuckDB would refuse a
        # second, read-only instance of the same file in this process)
        assert wh.read_table(path, "t").sort("x")["x"].to_list() == [3, 10]
        with pytest.raises(ValueError), wh.connect(path) as con, wh.transaction(con):
            con.execute("insert into t values ('c', 99)")
            raise ValueError("roll back")
        assert wh.query(path, "select count(*) as n from t")["n"][0] == 2
        assert wh._HELD[wh._held_key(path)] is not None  # noqa: SLF001 - the instance is open in the block
        assert not _other_process_can_open(path)  # as for any writer: other processes wait for the file
    assert wh._held_key(path) not in wh._HELD  # noqa: SLF001
    assert _other_process_can_open(path)  # released, and what was written is in the file
    assert wh.read_table(path, "t").sort("x")["x"].to_list() == [3, 10]


def test_nested_and_absent_holds(tmp_path: Path) -> None:
    path = tmp_path / "benchmap.duckdb"
    with wh.held(None):  # run_all passes None for runs it does not hold
        wh.append_rows(path, "t", pl.DataFrame({"x": [1]}))
    assert _other_process_can_open(path)
    with wh.held(path), wh.held(path):
        wh.append_rows(path, "t", pl.DataFrame({"x": [2]}))
    assert wh.query(path, "select sum(x) as s from t")["s"][0] == 3
    assert _other_process_can_open(path)


def test_lingering_reuses_one_instance_and_lets_go_after_a_pause(tmp_path: Path) -> None:
    """run_all's reference and analysis runs: connects in the block share one instance; another process gets
    the file within idle_s of a pause, and everything written is in the file when the block ends."""
    path = tmp_path / "benchmap.duckdb"
    wh.append_rows(path, "t", pl.DataFrame({"x": [1]}))
    with wh.lingering(path, idle_s=0.3):
        state = wh._LINGER[wh._held_key(path)]  # noqa: SLF001
        with wh.connect(path, read_only=True) as con:
            first = state.con
            assert first is not None and con.execute("select sum(x) from t").fetchone()[0] == 1
            assert not _other_process_can_open(path)  # in use: other processes wait, as for any writer
        wh.append_rows(path, "t", pl.DataFrame({"x": [2]}))
        assert state.con is first  # the same instance, not a second open of the file
        with pytest.raises(ValueError), wh.connect(path) as con, wh.transaction(con):
            con.execute("insert into t values (100)")
            raise ValueError("roll back")
        deadline = time.monotonic() + 10
        while state.con is not None and time.monotonic() < deadline:  # the watcher closes it after the pause
            time.sleep(0.05)
        assert state.con is None and _other_process_can_open(path)
        assert wh.query(path, "select sum(x) as s from t")["s"][0] == 3  # opened again on demand
        with wh.held(path):  # a hold inside takes the lingering instance's place for its block
            wh.append_rows(path, "t", pl.DataFrame({"x": [4]}))
    assert wh._held_key(path) not in wh._LINGER  # noqa: SLF001
    assert _other_process_can_open(path)
    assert wh.read_table(path, "t")["x"].sum() == 7
