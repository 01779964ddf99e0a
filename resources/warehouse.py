"""DuckDB warehouse access without Dagster: short-lived connections, lock retries, transactional writes.

The one place that opens the warehouse: the resource and IO manager (resources/dagster_resources.py,
resources/io_manager.py) and the stores (label_cache, label_queries, coverage_map_queries, task_index) go
through it; models/ never does.

DuckDB lets one process write a database file at a time. Every access here opens a connection, does its work
in one transaction and closes it, retrying while another process holds the lock, so partition-parallel runs
take turns instead of failing.
"""

from __future__ import annotations

import contextlib
import errno
import random
import re
import shutil
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from resources.settings import settings

LOCK_WAIT_S = 120.0
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class WarehouseLockTimeout(TimeoutError):
    pass


class DiskFull(OSError):
    """A write found no space left on the warehouse's device: says so, with the folder and its free space."""

    def __init__(self, folder: Path, detail: str) -> None:
        self.folder = folder
        self.message = f"disk full: {free_mib(folder):,.0f} MB free in {folder} ({detail})"
        super().__init__(errno.ENOSPC, self.message)

    def __str__(self) -> str:
        return self.message


def free_mib(folder: Path) -> float:
    """Free space of the device holding `folder` (or its nearest existing parent), in MB (2**20 bytes)."""
    probe = Path(folder)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free / 2**20


def is_disk_full(exc: BaseException) -> bool:
    """An OSError with ENOSPC, or a DuckDB IO error whose text says the device is full."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return isinstance(exc, duckdb.Error) and ("No space left on device" in str(exc)
                                              or "Disk quota exceeded" in str(exc))


def quote_identifier(name: str) -> str:
    """Table and column names are code-defined; refuse anything that is not a plain identifier."""
    if not _IDENTIFIER.match(name):
        raise ValueError(f"not a safe SQL identifier: {name!r}")
    return f'"{name}"'


@contextlib.contextmanager
def connect(path: str | Path, *, read_only: bool = False, lock_wait_s: float = LOCK_WAIT_S,
            memory_limit: str | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to the warehouse file, closed on exit; waits up to `lock_wait_s` for another writer.

    `memory_limit` (DuckDB syntax, e.g. '1GB'): None takes Settings.duckdb_memory (BENCHMAP_DUCKDB_MEMORY,
    default 1GB; DuckDB's own default is 80% of RAM, and a bound makes big aggregations spill to disk instead of
    growing the process: the analysis steps aggregate the whole label table in SQL)."""
    path = Path(path)
    config = _connection_config(path, memory_limit or settings().duckdb_memory)
    if read_only and not path.exists():
        read_only = False  # a fresh warehouse: create it
    path.parent.mkdir(parents=True, exist_ok=True)
    key = _held_key(path)
    held_con = _HELD.get(key)  # see held(): a cursor of the open instance, its own transactions
    linger = _LINGER.get(key) if held_con is None else None  # see lingering()
    deadline = time.monotonic() + lock_wait_s
    delay = 0.05
    while True:
        try:
            if held_con is not None:
                con = _cursor(held_con)
            elif linger is not None:
                con = linger.cursor(lambda: duckdb.connect(str(path), config=config))
            else:
                con = duckdb.connect(str(path), read_only=read_only, config=config)
            break
        except duckdb.IOException as exc:  # "Could not set lock on file": another process is writing
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                if "lock" in str(exc).lower():
                    raise WarehouseLockTimeout(
                        f"warehouse {path} stayed locked for {lock_wait_s:.0f}s: {exc}"
                    ) from exc
                raise
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 2.0)
    try:
        yield con
    except DiskFull:
        _count_failure(key)
        raise
    except (duckdb.Error, OSError) as exc:  # a full disk says so, whichever write found it
        _count_failure(key, exc)
        if is_disk_full(exc):
            raise DiskFull(path.parent, error_first_line(exc)) from None  # summaries show the deepest cause
        raise
    finally:
        try:
            con.close()  # a checkpoint on close writes too
        except duckdb.Error as exc:
            _count_failure(key, exc)
            if not is_disk_full(exc) or sys.exc_info()[0] is not None:
                raise
            raise DiskFull(path.parent, error_first_line(exc)) from None  # summaries show the deepest cause
        finally:
            if linger is not None:
                linger.release()


_FAILURES: dict[str, int] = {}  # file -> DuckDB/OS errors its connections raised in this process
_QUERY_ERRORS = (duckdb.CatalogException, duckdb.BinderException, duckdb.ParserException)  # about the SQL only


def _count_failure(key: str, exc: BaseException | None = None) -> None:
    if not isinstance(exc, _QUERY_ERRORS):
        _FAILURES[key] = _FAILURES.get(key, 0) + 1


def failures(path: str | Path) -> int:
    """How many DuckDB or OS errors (other than a query's own: an unknown table, a syntax error) connections to the
    file raised in this process: a run that saw one does not vouch for the file (resources/integrity.py)."""
    return _FAILURES.get(_held_key(Path(path)), 0)


def is_open(path: str | Path) -> bool:
    """Whether this process keeps the file open (`held` or `lingering`): what it wrote may not be checkpointed."""
    key = _held_key(Path(path))
    return key in _HELD or key in _LINGER


_HELD: dict[str, duckdb.DuckDBPyConnection | None] = {}
_HELD_LOCK = threading.Lock()


def _held_key(path: Path) -> str:
    return str(path.resolve())


def _cursor(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    with _HELD_LOCK:  # a connection object is not thread-safe; its cursors are, each on its own thread
        return con.cursor()


@contextlib.contextmanager
def held(path: str | Path | None) -> Iterator[None]:
    """Within the block this process keeps the warehouse's database open, so that every `connect` to it reuses
    the open DuckDB instance (about 1 ms) instead of opening the file again (about 30 CPU-ms: the catalog is
    read anew; a partition run connects some 30 times). Other processes wait for the file meanwhile (as for any
    write), so hold it for one short run (a benchmark partition), not for a long one. Nested holds are no-ops."""
    if path is None:
        yield
        return
    path = Path(path)
    key = _held_key(path)
    if key in _HELD:
        yield
        return
    _HELD[key] = None  # reserved: a failed open below leaves the plain behaviour
    try:
        with connect(path) as con:
            _HELD[key] = con
            yield
    finally:
        _HELD.pop(key, None)


class _Lingering:
    """The instance of one file that `lingering` keeps open between connects (see there)."""

    def __init__(self, key: str, idle_s: float) -> None:
        self.key = key
        self.idle_s = idle_s
        self.con: duckdb.DuckDBPyConnection | None = None
        self.users = 0
        self.last_used = time.monotonic()
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def cursor(self, open_instance: Any) -> duckdb.DuckDBPyConnection:
        with self.lock:
            if self.con is None:
                self.con = open_instance()  # may raise the lock error: connect() retries
            self.users += 1
            return self.con.cursor()

    def release(self) -> None:
        with self.lock:
            self.users -= 1
            self.last_used = time.monotonic()

    def close_if_idle(self, force: bool = False) -> None:
        with self.lock:
            idle = self.users == 0 and time.monotonic() - self.last_used >= self.idle_s
            if self.con is not None and (force or idle):
                con, self.con = self.con, None
                try:
                    con.close()  # the checkpoint: what was written is in the file for other processes
                except duckdb.Error as exc:
                    _count_failure(self.key, exc)
                    raise

    def watch(self) -> None:
        while not self.stop.wait(self.idle_s / 2):
            with contextlib.suppress(duckdb.Error):  # a failed checkpoint surfaces at the next close
                self.close_if_idle()


_LINGER: dict[str, _Lingering] = {}


@contextlib.contextmanager
def lingering(path: str | Path | None, idle_s: float = 0.5) -> Iterator[None]:
    """Within the block the warehouse's DuckDB instance stays open while it is in use and for `idle_s` after the
    last connection closed: a run of many short steps (the analysis: each input load, output write and named
    read a connect, ~27 CPU-ms each) opens the file a few times instead of hundreds, yet another process waiting
    for the file gets it within `idle_s` of a pause (a step computing without reading), unlike `held`. Connects
    in the block are cursors of that instance (read-write). A `held` block inside takes precedence."""
    if path is None:
        yield
        return
    key = _held_key(Path(path))
    if key in _LINGER or key in _HELD:
        yield
        return
    state = _LINGER[key] = _Lingering(key, idle_s)
    watcher = threading.Thread(target=state.watch, name="warehouse-linger", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        state.stop.set()
        watcher.join()
        _LINGER.pop(key, None)
        state.close_if_idle(force=True)


def _connection_config(path: Path, memory_limit: str) -> dict[str, str]:
    return {
        "memory_limit": memory_limit,
        "temp_directory": str(path.parent / ".duckdb_spill"),
    }


def table_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    # duckdb_tables() rather than the information_schema view over it: ~0.8 against ~1.5 CPU-ms, and a refresh
    # asks ~300 times (the same tables: base tables of every attached database's schema `main`)
    return bool(con.execute(
        "select count(*) from duckdb_tables() where schema_name = 'main' and table_name = ?", [name]
    ).fetchone()[0])


def fetch_polars(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence | None = None) -> pl.DataFrame:
    """Run a query and return a polars frame.

    DuckDB 2: an execute() result has no .pl(), and sql() refuses to run while an execute() result is unread
    (e.g. after fetchone()), so any such result is discarded first."""
    con.abort()
    return con.sql(sql, params=list(params or [])).pl()


def read_table(path: str | Path, name: str, *, where_column: str | None = None,
               where_values: Sequence[str] | None = None, columns: Sequence[str] | None = None,
               keys_in: str | None = None, key_columns: Sequence[str] = ("benchmark", "prompt_id")
               ) -> pl.DataFrame:
    """A whole table, or only `columns` of it (big tables such as prompt_task_labels: load what is used).

    `keys_in` names another table: only rows whose `key_columns` occur there are loaded (a semi join in DuckDB,
    e.g. the labels of the prompts that have model results, without loading every label first)."""
    selected = ", ".join(f"t.{quote_identifier(c)}" for c in columns) if columns else "t.*"
    sql = f"select {selected} from {quote_identifier(name)} t"
    params: list = []
    if keys_in is not None:
        keys = ", ".join(quote_identifier(c) for c in key_columns)
        sql += f" semi join (select distinct {keys} from {quote_identifier(keys_in)}) k using ({keys})"
    if where_column is not None and where_values is not None:
        sql += f" where t.{quote_identifier(where_column)} in (select unnest(?::varchar[]))"
        params.append(list(where_values))
    with connect(path, read_only=True) as con:
        try:
            return fetch_polars(con, sql, params)
        except duckdb.CatalogException:
            # which table is missing is asked only when the read failed: a check before every read cost ~1 ms,
            # ~300 times a refresh
            if not table_exists(con, name):
                raise LookupError(f"table {name!r} is not in the warehouse {path}: materialize the asset {name!r} "
                                  "first") from None
            if keys_in is not None and not table_exists(con, keys_in):
                raise LookupError(f"table {keys_in!r} is not in the warehouse {path}: materialize it first") from None
            raise


def query(path: str | Path, sql: str, params: Sequence | None = None) -> pl.DataFrame:
    with connect(path, read_only=True) as con:
        return fetch_polars(con, sql, list(params or []))


def _register(con: duckdb.DuckDBPyConnection, df: pl.DataFrame) -> str:
    view = f"_incoming_{random.randrange(1 << 30)}"
    con.register(view, df.to_arrow())
    return view


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection, folder: Path | None = None) -> Iterator[None]:
    """Run the block in one transaction: commit when it completes, roll back on any exception.

    The error that stopped the block is the one raised: when DuckDB already ended the transaction (a failed
    commit, e.g. a full disk while writing the WAL) the rollback's own "no transaction is active" is not.
    A full disk is raised as DiskFull naming `folder` (the warehouse's) and its free space."""
    con.execute("begin transaction")
    try:
        yield
        con.execute("commit")
    except BaseException as exc:
        with contextlib.suppress(duckdb.Error):  # nothing to roll back when DuckDB ended the transaction
            con.execute("rollback")
        if folder is not None and is_disk_full(exc):
            raise DiskFull(folder, error_first_line(exc)) from None  # summaries show the deepest cause
        raise


def error_first_line(exc: BaseException) -> str:
    """An error's first line (at most 300 characters), or its type's name when it has no text."""
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__


def replace_table(path: str | Path, name: str, df: pl.DataFrame) -> None:
    """Swap in a whole table atomically: on any error the old table stays as it was."""
    replace_table_in_slices(path, name, [df])


def replace_table_in_slices(path: str | Path, name: str, slices: Iterable[pl.DataFrame]) -> None:
    """As replace_table, for a table given slice by slice (models/sliced_frame.py: never whole in memory): the
    first slice creates it, the others are appended, in one transaction."""
    table = quote_identifier(name)
    with connect(path) as con, transaction(con, Path(path).parent):
        for number, part in enumerate(slices):
            view = _register(con, part)
            con.execute(f"insert into {table} select * from {view}" if number
                        else f"create or replace table {table} as select * from {view}")
            con.unregister(view)


def replace_partition(path: str | Path, name: str, df: pl.DataFrame, column: str, key: str) -> None:
    """Delete then insert the rows of one partition in one transaction (other partitions untouched)."""
    replace_partitions(path, name, df, column, [key])


def replace_partitions(path: str | Path, name: str, df: pl.DataFrame, column: str, keys: Sequence[str]) -> None:
    """Delete then insert the rows of the partitions `keys` in one transaction (other partitions untouched): one
    run materializing several benchmark partitions writes each table once."""
    table = quote_identifier(name)
    col = quote_identifier(column)
    keys = list(keys)
    if column not in df.columns:
        raise ValueError(f"partitioned table {name!r} needs a {column!r} column")
    if df.height:
        outside = sorted(set(df[column].cast(pl.Utf8).unique().to_list()) - set(keys))
        if outside:
            what = f"partition {keys[0]!r}" if len(keys) == 1 else f"partitions {', '.join(keys)}"
            raise ValueError(f"rows written to {what} of {name!r} must all have {column} in the written "
                             f"partitions, not {', '.join(map(repr, outside))}")
    with connect(path) as con:
        view = _register(con, df)
        with transaction(con, Path(path).parent):
            if not table_exists(con, name):
                con.execute(f"create table {table} as select * from {view}")
            else:
                existing = [r[0] for r in con.execute(
                    "select column_name from information_schema.columns where table_schema='main' and "
                    "table_name = ? order by ordinal_position", [name]).fetchall()]
                if existing == df.columns:
                    con.execute(f"delete from {table} where {col} in (select unnest(?::varchar[]))", [keys])
                    con.execute(f"insert into {table} by name select * from {view}")
                else:  # the schema changed: rebuild, keeping the other partitions' rows
                    kept = fetch_polars(con, f"select * from {table} where {col} not in "
                                             f"(select unnest(?::varchar[]))", [keys])
                    merged = pl.concat([kept, df], how="diagonal_relaxed")
                    merged_view = _register(con, merged)
                    con.execute(f"create or replace table {table} as select * from {merged_view}")


def append_rows(path: str | Path, name: str, df: pl.DataFrame) -> None:
    """Append rows (creating the table on first use) in one transaction: used for caches written as work goes."""
    if df.is_empty():
        return
    table = quote_identifier(name)
    with connect(path) as con:
        view = _register(con, df)
        with transaction(con, Path(path).parent):
            if not table_exists(con, name):
                con.execute(f"create table {table} as select * from {view}")
            else:
                con.execute(f"insert into {table} by name select * from {view}")


def delete_benchmark_rows(path: str | Path, benchmark: str, tables: Sequence[str]) -> dict[str, int]:
    """Delete one benchmark's rows from each of `tables` that exists and has a `benchmark` column, in one
    transaction (a benchmark whose landing folder was removed). Returns table -> rows deleted (non-zero only)."""
    deleted: dict[str, int] = {}
    with connect(path) as con:
        having = {r[0] for r in con.execute(
            "select table_name from information_schema.columns where table_schema = 'main' "
            "and column_name = 'benchmark'").fetchall()}
        with transaction(con, Path(path).parent):
            for name in tables:
                if name not in having:
                    continue
                table = quote_identifier(name)
                n = int(con.execute(f"select count(*) from {table} where benchmark = ?", [benchmark]).fetchone()[0])
                if n:
                    con.execute(f"delete from {table} where benchmark = ?", [benchmark])
                    deleted[name] = n
    return deleted
