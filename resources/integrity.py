"""Integrity before trust: is the warehouse file whole, and can every table in it be read?

Every run checks this first (`python -m pipelines.run_all` before it plans anything; runs launched by the
sensors, the schedule or the UI when the `Warehouse` resource is set up for the run). The checks are cheap and
use DuckDB's own bookkeeping:

- the file opens (read-only) and its catalog loads;
- the file is at least as long as DuckDB's used blocks need (`pragma_database_size`: a 12 KiB header plus
  used_blocks x block_size), which catches a truncated or half-copied file before any table is read;
- every block a table's columns are stored in (`pragma_storage_info`) lies inside the file, and `count(*)` of
  every table succeeds (metadata only: about 0.1 s for the whole warehouse).

A file that is byte for byte the one a passing full check or a clean run of this pipeline left is not read again
(`vouch` / `vouched`): `<warehouse>.checked/sound.json` holds that file's inode, size, modification and change
times (ns) and those of its WAL. Any write since changes them (the change time cannot be set back), so such a
file gets the full check again. A clean run is one whose setup check passed and whose connections to the file
raised no DuckDB or OS error (`warehouse.failures`); its Warehouse resource vouches for the file at teardown,
once no connection of its process is open. What this gives up: damage written to the file in the instant
between a run's last write and its teardown's vouch goes unseen until the file changes again (issue 29: a
sensor's benchmark run and the analysis run it triggers each read the whole file again otherwise, 0.4 s on the
mirror and ~12 s at 50x, right after the previous run wrote it).

A damaged warehouse stops the run with one message naming the file, what cannot be read, and the recovery
command (`python -m pipelines.run_all --rebuild`: moves the file aside, restores the label cache from the label
store outside DuckDB and rebuilds everything else; no label is computed again).

No dagster here.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from resources import label_store
from resources import warehouse as wh

HEADER_BYTES = 3 * 4096  # DuckDB's main header and two database headers precede the first block
REBUILD_COMMAND = "python -m pipelines.run_all --rebuild"
RESTORE_COMMAND = "python -m pipelines.restore_labels"
PRECIOUS = ("label_cache", "label_failures", "prompt_task_labels", "benchmark_prompts", "onet_tasks")  # named first
_TRUSTED: set[str] = set()  # warehouse files this process checked and writes itself (run_all)
# environment errors a command turns into one line (a damaged warehouse, a held lock, a full disk, ...)
ENVIRONMENT_ERRORS: tuple[type[BaseException], ...] = (duckdb.IOException, wh.WarehouseLockTimeout, OSError)


@dataclass
class IntegrityReport:
    path: Path
    exists: bool
    counts: dict[str, int] = field(default_factory=dict)  # table -> rows, for every readable table
    by_benchmark: dict[str, dict[str, int]] = field(default_factory=dict)  # table -> benchmark -> rows
    problems: list[str] = field(default_factory=list)  # about the file as a whole
    unreadable: dict[str, str] = field(default_factory=dict)  # table -> why it cannot be read
    seconds: float = 0.0
    vouched: bool = False  # not read: the file is the one a passing check or a clean run left (`vouched`)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.unreadable

    def message(self) -> str:
        """One message: the file, what cannot be read, the exact recovery command and what it keeps."""
        store = label_store.store_dir(self.path)
        labels = (f"restores the label cache from {store}" if label_store.has_segments(self.path)
                  else f"finds no label store at {store} (labels will be computed again)")
        parts = list(self.problems)
        if self.unreadable:
            names = sorted(self.unreadable, key=lambda n: (n not in PRECIOUS, n))
            shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            detail = f" ({self.unreadable[names[0]]})" if len(names) == 1 else ""
            parts.append(f"{len(names)} table{'s' if len(names) > 1 else ''} cannot be read: {shown}{detail}")
        return (f"warehouse {self.path} is damaged: {'; '.join(parts)}. Recover with `{REBUILD_COMMAND}`: it "
                f"moves the damaged file aside to {self.path.name}.damaged-<time>, {labels}, and rebuilds every "
                f"other table from the landing zone and the reference data")


class WarehouseDamaged(RuntimeError):
    """The warehouse file cannot be trusted: its message says what is unreadable and how to recover."""

    def __init__(self, report: IntegrityReport) -> None:
        self.report = report
        super().__init__(report.message())


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


def _read_every_block(con: duckdb.DuckDBPyConnection, name: str, table: str) -> None:
    """Read every value of every column of the table: DuckDB verifies each block's checksum as it reads it, so
    data-block damage (bytes overwritten inside the file, which leaves its length and catalog whole) raises
    here. hash() of each value, folded with bit_xor, makes the scan touch the values themselves (a count can be
    answered from the row groups' statistics without reading a block)."""
    columns = [r[0] for r in con.execute(
        "select column_name from information_schema.columns where table_schema = 'main' and table_name = ? "
        "order by ordinal_position", [name]).fetchall()]
    quoted = ('"' + c.replace('"', '""') + '"' for c in columns)  # any column name, quoted as SQL says
    folded = ", ".join(f"bit_xor(hash({c}))" for c in quoted)
    con.execute(f"select {folded} from {table}").fetchall()


def check_warehouse(path: str | Path, *, per_benchmark: bool = False, tables: Iterable[str] | None = None,
                    checksums: bool = True) -> IntegrityReport:
    """Open the warehouse read-only and check its length and every table (or only `tables`).

    A missing file is fine (a fresh warehouse: nothing to trust). `per_benchmark` also counts the rows per
    benchmark of every table with a `benchmark` column (what run_all compares a skipped partition's outputs
    with; it reads that column, so it is a deeper check of those tables too). `checksums` (the default) reads
    every block of every table, which finds bytes damaged inside the file (bench/integrity_cost.py measures
    it); without it only the file's length, the catalog and the row counts are checked."""
    started = time.monotonic()
    path = Path(path)
    report = IntegrityReport(path, path.exists())
    if not path.exists():
        return report
    try:
        with wh.connect(path, read_only=True) as con:
            try:
                _, block_size, used_blocks = con.execute(
                    "select database_name, block_size, used_blocks from pragma_database_size() "
                    "where database_name = current_database()").fetchone()
                # every used block lies inside the file (free blocks at its end may have been cut off by DuckDB)
                expected = HEADER_BYTES + int(block_size) * int(used_blocks)
                actual = path.stat().st_size
                blocks_in_file = max(0, (actual - HEADER_BYTES) // int(block_size))
                if actual < expected:
                    report.problems.append(f"the file is {actual:,} bytes but its {used_blocks:,} used blocks "
                                           f"need at least {expected:,} (truncated)")
            except duckdb.Error as exc:
                report.problems.append(f"its block table cannot be read ({_first_line(exc)})")
                blocks_in_file = None
            names = [r[0] for r in con.execute(
                "select table_name from information_schema.tables where table_schema = 'main' "
                "and table_type = 'BASE TABLE' order by table_name").fetchall()]
            columns = {(t, c) for t, c in con.execute(
                "select table_name, column_name from information_schema.columns where table_schema = 'main' "
                "and column_name = 'benchmark'").fetchall()}
            wanted = set(tables) if tables is not None else None
            for name in names:
                if wanted is not None and name not in wanted:
                    continue
                table = wh.quote_identifier(name)
                try:
                    if blocks_in_file is not None:  # every block the table's columns live in is in the file
                        last = con.execute("select max(greatest(block_id, coalesce(list_max(additional_block_ids),"
                                           " -1))) from pragma_storage_info(?) where persistent", [name]
                                           ).fetchone()[0]
                        if last is not None and int(last) >= blocks_in_file:
                            report.unreadable[name] = (f"its data is in block {last}, the file ends at "
                                                       f"block {blocks_in_file}")
                            continue
                    report.counts[name] = int(con.execute(f"select count(*) from {table}").fetchone()[0])
                    if checksums and report.counts[name]:
                        _read_every_block(con, name, table)
                    if per_benchmark and (name, "benchmark") in columns:
                        report.by_benchmark[name] = {
                            str(b): int(n) for b, n in con.execute(
                                f"select benchmark, count(*) from {table} group by benchmark").fetchall()}
                except duckdb.Error as exc:
                    report.unreadable[name] = _first_line(exc)
    except wh.WarehouseLockTimeout:
        raise  # held by another writer: not damage
    except duckdb.Error as exc:
        report.problems.append(f"it cannot be opened ({_first_line(exc)})")
    report.seconds = time.monotonic() - started
    return report


def require_sound(path: str | Path, **kwargs: object) -> IntegrityReport:
    """check_warehouse, raising WarehouseDamaged when anything is unreadable."""
    report = check_warehouse(path, **kwargs)  # type: ignore[arg-type]
    if not report.ok:
        raise WarehouseDamaged(report)
    return report


@contextlib.contextmanager
def trusted(path: str | Path) -> Iterator[None]:
    """Within the block, this process trusts the warehouse it checked and now writes itself (run_all): the
    resource setup of its in-process runs does not check it again. A block that ends without an exception or a
    failed connection vouches for the file it leaves (`vouch`)."""
    key = str(Path(path).resolve())
    _TRUSTED.add(key)
    failures = wh.failures(path)
    try:
        yield
    finally:
        _TRUSTED.discard(key)
    vouch_if_clean(path, failures)


def check_for_run(path: str | Path, run_id: str | None = None) -> IntegrityReport | None:
    """The check a Dagster run makes when its Warehouse resource is set up (sensor, schedule and UI runs, each
    step process): raises WarehouseDamaged; None when this process already trusts the file; a report marked
    `vouched` (nothing read) when the file is unchanged since a passing full check or a clean run (`vouched`).

    The checksum pass reads the whole file (seconds on a large warehouse), so with a `run_id` it runs once per
    run: the first step process to set up records the run under `<warehouse>.checked/`, and the run's other
    step processes make the cheap check (length, catalog, row counts) only."""
    if str(Path(path).resolve()) in _TRUSTED:
        return None
    marker = _run_marker(Path(path), run_id) if run_id else None
    if vouched(path):
        report = IntegrityReport(Path(path), True, vouched=True)
    elif marker is not None and marker.exists():
        return require_sound(path, checksums=False)
    else:
        report = require_sound(path)
        vouch(path)
    if marker is not None:
        with contextlib.suppress(OSError):  # only a saving: a read-only folder checks every step in full
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
            _prune_markers(marker.parent)
    return report


def file_state(path: str | Path) -> list[int] | None:
    """What changes whenever the file's bytes may have: inode, size, modification and change time (ns) of the
    file and of its WAL (zeros when there is none); None without the file."""
    path = Path(path)
    state: list[int] = []
    for file in (path, path.with_name(path.name + ".wal")):
        try:
            stat = file.stat()
        except FileNotFoundError:
            if file == path:
                return None
            state += [0, 0, 0, 0]
            continue
        state += [stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]
    return state


def _sound_file(path: Path) -> Path:
    return path.with_name(path.name + ".checked") / "sound.json"


def vouch(path: str | Path) -> None:
    """Record the file as it is now as sound: call right after a passing full check, or when a clean run of this
    pipeline closed its last connection to it (resources/dagster_resources.py)."""
    path = Path(path)
    state = file_state(path)
    if state is None or vouched(path):  # not rewritten when it stands (the warm run's fingerprint sees this folder)
        return
    target = _sound_file(path)
    with contextlib.suppress(OSError):  # only a saving: without it the next run checks in full
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{os.getpid()}")
        temporary.write_text(json.dumps({"path": str(path.resolve()), "state": state}))
        temporary.replace(target)


def vouch_if_clean(path: str | Path, failures_before: int) -> None:
    """`vouch` for the file a writer leaves, when its connections raised no DuckDB or OS error since it counted
    `failures_before` (warehouse.failures) and none is open any more (what it wrote is checkpointed)."""
    if wh.failures(path) == failures_before and not wh.is_open(path):
        vouch(path)


def vouched(path: str | Path) -> bool:
    """Whether the file is unchanged since `vouch` (same inode, size, times, WAL)."""
    path = Path(path)
    try:
        recorded = json.loads(_sound_file(path).read_text())
    except (OSError, ValueError):
        return False
    state = file_state(path)
    return state is not None and recorded.get("path") == str(path.resolve()) and recorded.get("state") == state


def _run_marker(path: Path, run_id: str) -> Path:
    return path.with_name(path.name + ".checked") / run_id


def _prune_markers(folder: Path, keep_s: float = 2 * 86400) -> None:
    cutoff = time.time() - keep_s
    for marker in folder.iterdir():
        if marker.name == "sound.json":
            continue
        with contextlib.suppress(OSError):
            if marker.stat().st_mtime < cutoff:
                marker.unlink()


__all__ = ["ENVIRONMENT_ERRORS", "REBUILD_COMMAND", "RESTORE_COMMAND", "IntegrityReport", "WarehouseDamaged",
           "check_for_run", "check_warehouse", "file_state", "require_sound", "trusted", "vouch", "vouch_if_clean", "vouched"]
