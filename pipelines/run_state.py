"""What `run_all` already materialized: fingerprints of each step's inputs, kept in the warehouse itself.

`python -m pipelines.run_all` skips a step (the reference data, one benchmark partition, the analysis) when the
fingerprint of everything that step reads equals the one stored after its last successful run, so a second run
with nothing changed does no work (bench/warm.py). `--force` runs every step regardless.

A fingerprint is a sha256 over:
- code: every .py file under models/, assets/, pipelines/ and pyproject.toml (any code change reruns all);
- settings: the settings that change results (pipelines/settings.py `fingerprint_fields`: paths, concurrency and
  secrets excluded: the API key is never hashed or stored) and the labeler resource's configuration without its
  key;
- reference: size and modification time of every file of the landing zone and the mirror except benchmarks/;
- a benchmark partition: the reference fingerprint + the landing folder's content hash;
- the analysis: the reference fingerprint + the stored fingerprint of every partition + the index files
  (data/indexes/*.toml or BENCHMAP_INDEX_DIR).

A step's fingerprint is dropped when it starts and written when it succeeds, so a failed attempt (which may
have written part of its output) is always retried. Fingerprints live in the table `run_all_state` (step,
fingerprint, updated_at, outputs) of the warehouse they describe, so a deleted or replaced warehouse file simply
has none and everything runs.

A fingerprint alone is not trusted: `outputs` records the row count of every table the step wrote (its
partition's rows for a benchmark step) when it succeeded, and a step is skipped only when each of those tables
is still there, readable and as long (`outputs_intact`, fed by pipelines/integrity.py's counts). A state
written before `outputs` existed is never skipped.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipelines import warehouse as wh
from pipelines.settings import PROJECT_ROOT, Settings, settings

TABLE = "run_all_state"
CODE_DIRS = ("models", "assets", "pipelines")
def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def code_fingerprint(root: Path = PROJECT_ROOT) -> str:
    digest = hashlib.sha256()
    files = sorted(p for d in CODE_DIRS for p in (root / d).rglob("*.py") if "__pycache__" not in p.parts)
    for path in [*files, root / "pyproject.toml"]:
        if path.is_file():
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def settings_fingerprint(labeler: Any = None, config: Settings | None = None) -> str:
    """The settings that change results and the labeler resource's configuration, never the key."""
    config = config or settings()
    resource: dict[str, Any] = {}
    if labeler is not None and hasattr(labeler, "model_dump"):
        resource = {k: v for k, v in labeler.model_dump().items() if k != "api_key"}
    return _digest(config.fingerprint_fields(), resource)


def files_fingerprint(roots: Iterable[Path | None], exclude: tuple[str, ...] = ("benchmarks",)) -> str:
    """Relative path, size and mtime of every file under the roots, except top-level folders in `exclude`."""
    entries = []
    for number, root in enumerate(roots):
        if root is None or not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if rel.parts[0] in exclude or rel.parts[0].startswith(".") or not path.is_file():
                continue
            stat = path.stat()
            entries.append((number, str(rel), stat.st_size, stat.st_mtime_ns))
    return _digest(entries)


def reference_fingerprint(labeler: Any = None, config: Settings | None = None) -> str:
    config = config or settings()
    return _digest("reference", code_fingerprint(), settings_fingerprint(labeler, config),
                   files_fingerprint([config.raw_dir, config.mirror]))


def partition_fingerprint(reference: str, content_hash: str) -> str:
    return _digest("partition", reference, content_hash)


def index_files_fingerprint(folder: Path | None = None) -> str:
    """The benchmark index definitions (data/indexes/*.toml or $BENCHMAP_INDEX_DIR): editing one reruns the
    analysis, which recomputes benchmark_index_membership and every per-index table."""
    folder = folder or settings().index_dir
    files = sorted(folder.glob("*.toml")) if folder.is_dir() else []
    return _digest([(f.name, hashlib.sha256(f.read_bytes()).hexdigest()) for f in files])


def analysis_fingerprint(reference: str, partitions: Mapping[str, str | None]) -> str:
    return _digest("analysis", reference, sorted(partitions.items()), index_files_fingerprint())


@dataclass(frozen=True)
class StepRecord:
    fingerprint: str
    outputs: dict[str, int] | None  # table -> rows when the step last succeeded (None: not recorded)


def load_records(warehouse: str | Path) -> dict[str, StepRecord]:
    """step -> its stored fingerprint and outputs (empty when there are none)."""
    path = Path(warehouse)
    if not path.exists():
        return {}
    with wh.connect(path, read_only=True) as con:
        if not wh.table_exists(con, TABLE):
            return {}
        has_outputs = bool(con.execute(
            "select count(*) from information_schema.columns where table_schema = 'main' and table_name = ? "
            "and column_name = 'outputs'", [TABLE]).fetchone()[0])
        rows = con.execute(f"select step, fingerprint, {'outputs' if has_outputs else 'null'} from {TABLE}"
                           ).fetchall()
    return {str(step): StepRecord(str(fp), {str(k): int(v) for k, v in json.loads(out).items()} if out else None)
            for step, fp, out in rows}


def load(warehouse: str | Path) -> dict[str, str]:
    """step -> fingerprint stored in the warehouse (empty when there is none)."""
    return {step: record.fingerprint for step, record in load_records(warehouse).items()}


def output_counts(counts: Mapping[str, int], by_benchmark: Mapping[str, Mapping[str, int]],
                  tables: Iterable[str], partition: str | None = None) -> dict[str, int]:
    """The rows of each of `tables` now (of `partition` for tables with a benchmark column); tables absent
    from `counts` (missing or unreadable) are left out."""
    out = {}
    for table in tables:
        if table not in counts:
            continue
        if partition is not None and table in by_benchmark:
            out[table] = int(by_benchmark[table].get(partition, 0))
        else:
            out[table] = int(counts[table])
    return out


def outputs_intact(record: StepRecord | None, counts: Mapping[str, int],
                   by_benchmark: Mapping[str, Mapping[str, int]], partition: str | None = None) -> str | None:
    """None when every output table of the step's last success is present, readable (it is in `counts`) and
    has the row count it had then (a benchmark step: its partition's rows); else why the step must run."""
    if record is None or record.outputs is None:
        return "no record of its output tables"
    now = output_counts(counts, by_benchmark, record.outputs, partition)
    for table, rows in sorted(record.outputs.items()):
        if table not in now:
            return f"its output table {table} is missing"
        if now[table] != rows:
            return f"its output table {table} has {now[table]:,} rows, {rows:,} when it last succeeded"
    return None


def forget(warehouse: str | Path, step: str) -> None:
    """Drop a step's fingerprint before it runs: an attempt that fails halfway may have written part of its
    output, so the step must run again even if its inputs go back to what last succeeded."""
    if not Path(warehouse).exists():
        return
    with wh.connect(warehouse) as con:
        if wh.table_exists(con, TABLE):
            con.execute(f"delete from {TABLE} where step = ?", [step])


def save(warehouse: str | Path, step: str, fingerprint: str, outputs: Mapping[str, int] | None = None) -> None:
    """Record a step's fingerprint (and its output tables' row counts) after it succeeded (one transaction;
    replaces the step's row)."""
    row = pl.DataFrame({"step": [step], "fingerprint": [fingerprint],
                        "updated_at": [dt.datetime.now(dt.UTC).replace(tzinfo=None)],
                        "outputs": [json.dumps(dict(outputs), sort_keys=True) if outputs is not None else None]},
                       schema={"step": pl.Utf8, "fingerprint": pl.Utf8, "updated_at": pl.Datetime("us"),
                               "outputs": pl.Utf8})
    with wh.connect(warehouse) as con:
        con.execute(f"create table if not exists {TABLE} (step varchar, fingerprint varchar, updated_at timestamp,"
                    f" outputs varchar)")
        con.execute(f"alter table {TABLE} add column if not exists outputs varchar")  # a state from before
        con.register("_run_state_row", row.to_arrow())
        con.execute("begin transaction")
        try:
            con.execute(f"delete from {TABLE} where step = ?", [step])
            con.execute(f"insert into {TABLE} by name select * from _run_state_row")
            con.execute("commit")
        except BaseException:
            con.execute("rollback")
            raise
