"""A Dagster run outside run_all (a sensor's, schedule's or the UI's) keeps the warehouse open between its
connects for the run, as run_all's runs do (resources/dagster_resources.Warehouse.yield_for_execution,
warehouse.lingering): the file is opened a few times, not once per input load, output write and read; the values
are the same as without it; and when the run ends the file is released with everything written in it."""

import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import AssetExecutionContext, DagsterInstance, asset, materialize

from resources import integrity
from resources import warehouse as wh
from resources.dagster_resources import Warehouse
from resources.io_manager import WarehouseIOManager


@asset
def counts_table() -> pl.DataFrame:
    return pl.DataFrame({"benchmark": ["a", "a", "b"], "n": [1, 2, 3]})


@asset
def doubled(context: AssetExecutionContext, warehouse: Warehouse, counts_table: pl.DataFrame) -> pl.DataFrame:
    # a step that reads the warehouse several times by name, as the analysis steps do
    for _ in range(5):
        assert warehouse.table_exists("counts_table")
        warehouse.read_table("counts_table")
    context.add_output_metadata({"lingering": wh._held_key(Path(warehouse.path)) in wh._LINGER})  # noqa: SLF001
    return counts_table.with_columns(pl.col("n") * 2)


@asset
def totals(warehouse: Warehouse, doubled: pl.DataFrame) -> pl.DataFrame:
    return warehouse.query("select benchmark, sum(n)::bigint as n from doubled group by 1 order by 1").vstack(
        doubled.group_by("benchmark").agg(pl.col("n").sum()).sort("benchmark"))


def _run(path: Path, monkeypatch: pytest.MonkeyPatch, checks: list[str | None] | None = None
         ) -> tuple[bool, int, bool]:
    """(success, files opened during the run, whether the step saw the run lingering); `checks` gets the run id of
    each integrity check the run's resources make."""
    opened = {"n": 0}
    original = duckdb.connect
    check = integrity.check_for_run

    def counted_check(path: str | Path, run_id: str | None = None) -> integrity.IntegrityReport | None:
        if checks is not None:
            checks.append(run_id)
        return check(path, run_id)

    monkeypatch.setattr(integrity, "check_for_run", counted_check)

    def counting(*args: object, **kwargs: object) -> duckdb.DuckDBPyConnection:
        opened["n"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", counting)
    warehouse = Warehouse(path=str(path))
    with DagsterInstance.ephemeral() as instance:
        result = materialize([counts_table, doubled, totals], instance=instance,
                             resources={"warehouse": warehouse, "io_manager": WarehouseIOManager(warehouse=warehouse)})
        lingered = result.asset_materializations_for_node("doubled")[0].metadata["lingering"].value
    monkeypatch.setattr(duckdb, "connect", original)
    monkeypatch.setattr(integrity, "check_for_run", check)
    return result.success, opened["n"], bool(lingered)


def _other_process_reads(path: Path) -> list[tuple[str, int]]:
    code = ("import duckdb, sys\n"
            "con = duckdb.connect(sys.argv[1], read_only=True)\n"
            "print(con.execute('select benchmark, n from totals order by 1, 2').fetchall())\n")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    return [tuple(row) for row in eval(done.stdout)]  # noqa: S307 - our own child's repr of a list of tuples


def test_a_run_opens_the_warehouse_a_few_times_and_releases_it_with_its_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "benchmap.duckdb"
    wh.append_rows(path, "seed", pl.DataFrame({"x": [1]}))  # the file exists: the run's integrity check reads it
    checks: list[str | None] = []
    ok, opened, lingered = _run(path, monkeypatch, checks)
    assert ok and lingered
    # one integrity check per run, though two resources (the warehouse and the IO manager's) are set up
    assert len(checks) == 1 and checks[0] is not None, checks
    # three output writes, two input loads, ten named reads, one query and the integrity check's reads would each
    # open the file without it
    assert opened <= 4, opened
    assert wh._held_key(path) not in wh._LINGER  # noqa: SLF001 - the run's block ended
    assert _other_process_reads(path) == [("a", 6), ("a", 6), ("b", 6), ("b", 6)]


def test_the_values_are_those_of_a_run_that_opens_the_file_each_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lingering, plain = tmp_path / "lingering.duckdb", tmp_path / "plain.duckdb"
    for path in (lingering, plain):
        wh.append_rows(path, "seed", pl.DataFrame({"x": [1]}))
    assert _run(lingering, monkeypatch)[0]
    # without the resource's block: every connect opens the file (what a sensor's run did before)
    monkeypatch.setattr(wh, "lingering", lambda path, idle_s=0.5: _no_block())
    ok, opened, lingered = _run(plain, monkeypatch)
    assert ok and not lingered and opened > 10
    for table in ("counts_table", "doubled", "totals"):
        assert wh.read_table(lingering, table).equals(wh.read_table(plain, table))


def _no_block():  # noqa: ANN202 - a stand-in context manager
    import contextlib

    return contextlib.nullcontext()


@asset
def unconvertible(warehouse: Warehouse, counts_table: pl.DataFrame) -> None:
    warehouse.query("select 'n/a'::integer")  # a DuckDB error about the data, not the SQL text


def _full_checks(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The `checksums` argument of every check_warehouse call from here on."""
    calls: list[bool] = []
    original = integrity.check_warehouse

    def counted(path: str | Path, **kwargs: object) -> integrity.IntegrityReport:
        calls.append(bool(kwargs.get("checksums", True)))
        return original(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(integrity, "check_warehouse", counted)
    return calls


def test_a_clean_run_vouches_for_the_file_it_leaves_and_any_later_write_voids_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "benchmap.duckdb"
    wh.append_rows(path, "seed", pl.DataFrame({"x": [1]}))
    reads = _full_checks(monkeypatch)
    assert _run(path, monkeypatch)[0]
    assert reads == [True]  # a file nobody vouched for: every block read
    assert integrity.vouched(path)  # the run wrote three tables and vouched for the file it left
    assert _run(path, monkeypatch)[0]
    assert reads == [True], reads  # the next run reads nothing: the file is the one the last run left
    # one byte written from outside (the length unchanged): no longer vouched, so the next run reads every block
    with open(path, "r+b") as handle:
        handle.seek(path.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(byte)
    assert not integrity.vouched(path)
    assert _run(path, monkeypatch)[0]
    assert reads == [True, True], reads
    # a run whose connection raised a DuckDB error does not vouch for what it leaves
    with DagsterInstance.ephemeral() as instance:
        warehouse = Warehouse(path=str(path))
        failed = materialize([counts_table, unconvertible], instance=instance, raise_on_error=False,
                             resources={"warehouse": warehouse, "io_manager": WarehouseIOManager(warehouse=warehouse)})
    assert not failed.success
    assert not integrity.vouched(path)
    assert _run(path, monkeypatch)[0]
    assert reads == [True, True, True], reads
