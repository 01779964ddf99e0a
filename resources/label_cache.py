"""The label cache's store: tables label_cache and label_failures in the DuckDB warehouse.

`LabelCache` is the one implementation of the `models.labeling.cache.LabelStore` protocol the labeling loop
(`label_with_cache`) writes through: every batch is one transaction, and it goes to the append-only label
store (`resources.label_store`) first, so paid labels survive a damaged warehouse.

`label_failures` holds the *outstanding* failures: a prompt's row is replaced when it fails again (attempts
accumulate across runs) and deleted once the prompt is labeled.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
import random
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import duckdb
import polars as pl

from models.labeling.base import LabelOutcome, PromptRecord, TaskLabel, stacked_on
from models.labeling.cache import (
    LABEL_COLUMNS,
    USAGE_COLUMNS,
    CacheKey,
    LabelSet,
    cache_frame_to_labels,
    clean_outcome,
    disambiguate_versions,
    labels_from_json,
    labels_to_json,
)
from resources import label_queries as lq
from resources import label_store
from resources import warehouse as wh
from resources.untrusted import untrusted_scrubber

CACHE_TABLE = "label_cache"
FAILURES_TABLE = "label_failures"

# label_cache: the contract's columns (docs/ARCHITECTURE.md) plus labeler_version and token counts.
_CACHE_DDL = f"""
create table if not exists {CACHE_TABLE} (
    prompt_hash varchar not null,
    onet_version varchar not null,
    labeler varchar not null,
    model varchar not null,
    template_version varchar not null,
    labels_json varchar not null,
    created_at timestamp not null,
    labeler_version varchar,
    input_tokens bigint,
    output_tokens bigint,
    cached_input_tokens bigint,
    step1_input_tokens bigint,
    step1_cached_input_tokens bigint,
    step1_output_tokens bigint,
    step2_input_tokens bigint,
    step2_cached_input_tokens bigint,
    step2_output_tokens bigint,
    requests bigint
)"""
_CACHE_MIGRATE = [f"alter table {CACHE_TABLE} add column if not exists {c} bigint" for c in USAGE_COLUMNS]
_FAILURES_DDL = f"""
create table if not exists {FAILURES_TABLE} (
    prompt_hash varchar not null,
    benchmark varchar,
    prompt_id varchar,
    labeler varchar not null,
    labeler_version varchar not null,
    error varchar,
    attempts integer,
    failed_at timestamp,
    runs integer
)"""
_FAILURES_MIGRATE = f"alter table {FAILURES_TABLE} add column if not exists runs integer"

FAILURE_SCHEMA: dict[str, pl.DataType] = {
    "prompt_hash": pl.Utf8, "benchmark": pl.Utf8, "prompt_id": pl.Utf8, "labeler": pl.Utf8,
    "labeler_version": pl.Utf8, "error": pl.Utf8, "attempts": pl.Int32, "failed_at": pl.Datetime("us"),
    "runs": pl.Int32}
CACHE_SCHEMA: dict[str, pl.DataType] = {
    "prompt_hash": pl.Utf8, "onet_version": pl.Utf8, "labeler": pl.Utf8, "model": pl.Utf8,
    "template_version": pl.Utf8, "labels_json": pl.Utf8, "created_at": pl.Datetime, "labeler_version": pl.Utf8,
    "input_tokens": pl.Int64, "output_tokens": pl.Int64, **{c: pl.Int64 for c in USAGE_COLUMNS}}

# attempts accumulate over runs: add the attempts of the outstanding failure being replaced
_PREV_ATTEMPTS_SQL = (
    f"create temp table _prev_attempts as select prompt_hash, coalesce(prompt_id, '') as pid, "
    f"max(attempts) as attempts, max(coalesce(runs, 1)) as runs from {FAILURES_TABLE} where labeler = ? and labeler_version = ? "
    f"and prompt_hash in (select unnest(?::varchar[])) group by all")
_DELETE_FAILURES_SQL = (f"delete from {FAILURES_TABLE} where labeler = ? and labeler_version = ? "
                        f"and prompt_hash in (select unnest(?::varchar[]))")
_INSERT_FAILURES_SQL = (
    f"insert into {FAILURES_TABLE} by name select f.prompt_hash, f.benchmark, f.prompt_id, f.labeler, "
    f"f.labeler_version, f.error, f.attempts + coalesce(p.attempts, 0) as attempts, f.failed_at, "
    f"f.runs + coalesce(p.runs, 0) as runs from {{view}} f "
    f"left join _prev_attempts p on p.prompt_hash = f.prompt_hash and p.pid = coalesce(f.prompt_id, '')")
# the first label set written for a (hash, key) wins: a re-run never replaces paid labels
_INSERT_CACHE_SQL = (
    f"insert into {CACHE_TABLE} by name select * from {{view}} c where not exists (select 1 from {CACHE_TABLE} t "
    f"where t.prompt_hash = c.prompt_hash and t.onet_version = c.onet_version and t.labeler = c.labeler and "
    f"t.model = c.model and t.template_version = c.template_version)")


# an offline label set made with another benchmark context is replaced (the LLM's are only ever inserted)
_DELETE_CACHE_SQL = (f"delete from {CACHE_TABLE} where onet_version = ? and labeler = ? and model = ? and "
                     f"template_version = ? and prompt_hash in (select unnest(?::varchar[]))")

_LABELING_LOCKS = threading.local()  # .held: benchmarks whose labeling lock this thread holds (labeling_lock)


def _locks_held() -> set[str]:
    if not hasattr(_LABELING_LOCKS, "held"):
        _LABELING_LOCKS.held = set()
    return _LABELING_LOCKS.held


class LabelCache:
    """label_cache and label_failures in one DuckDB file; every write is one transaction."""

    def __init__(self, warehouse_path: str | Path) -> None:
        self.path = Path(warehouse_path)

    def ensure_tables(self) -> None:
        """Create (or migrate) both tables: what a restore from the label store writes into."""
        with wh.connect(self.path) as con:
            self._ensure(con)

    @staticmethod
    def _ensure(con: duckdb.DuckDBPyConnection) -> None:
        con.execute(_CACHE_DDL)
        for migrate in _CACHE_MIGRATE:  # a cache written before the per-step usage columns
            con.execute(migrate)
        con.execute(_FAILURES_DDL)
        con.execute(_FAILURES_MIGRATE)  # failures recorded before runs were counted

    def exists(self, table: str = CACHE_TABLE) -> bool:
        if not self.path.exists():
            return False
        with wh.connect(self.path, read_only=True) as con:
            return wh.table_exists(con, table)

    # -- what label_with_cache asks of its store besides read/write_batch (models/labeling/cache.py)
    @staticmethod
    def text_scrubber() -> Callable[[str | None], str | None]:
        """Masks the secrets this process knows in untrusted text (errors, rationales) before it is stored."""
        return untrusted_scrubber()

    @contextlib.contextmanager
    def labeling_lock(self, benchmarks: Sequence[str], log: Callable[[str], None] | None = None
                      ) -> Iterator[None]:
        """Hold the right to label these benchmarks' prompts (an flock per benchmark under the label store's
        `.locks/`, released when the process dies): a second run labeling the same benchmark waits here for the
        first, then reads the cache and finds its labels; runs labeling other benchmarks do not wait."""
        folder = label_store.store_dir(self.path) / ".locks"
        folder.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as stack:
            # one order everywhere: two runs never wait for each other; a lock this thread already holds
            # (run_all takes it before it holds the warehouse open) is not taken again
            held = _locks_held()
            for name in sorted(set(benchmarks) - held):
                held.add(name)
                stack.callback(held.discard, name)
                handle = stack.enter_context(open(folder / f"{_lock_name(name)}.lock", "a+"))
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    handle.seek(0)
                    holder = handle.read().strip() or "another process"
                    if log:
                        log(f"labeling of {name!r} is in progress in {holder}: waiting for it")
                    fcntl.flock(handle, fcntl.LOCK_EX)
                handle.seek(0)
                handle.truncate()
                handle.write(f"pid {os.getpid()}\n")
                handle.flush()
            yield

    def exhausted(self, labeler: str, labeler_version: str, hashes: Sequence[str], max_runs: int) -> set[str]:
        """The hashes whose outstanding failure has already failed in `max_runs` runs: not asked again."""
        if not hashes or not self.exists(FAILURES_TABLE):
            return set()
        frame = wh.query(self.path, f"select distinct prompt_hash from {FAILURES_TABLE} where labeler = ? and "
                         f"labeler_version = ? and coalesce(runs, 1) >= ? and prompt_hash in "
                         f"(select unnest(?::varchar[]))", [labeler, labeler_version, max_runs, list(hashes)])
        return set(frame["prompt_hash"].to_list())

    def read(self, key: CacheKey, hashes: Sequence[str] | None = None) -> dict[str, list[TaskLabel]]:
        """Cached labels by prompt hash for one key (all hashes when `hashes` is None). Hashes the warehouse
        lacks but the label store holds (a run killed between the store's write and the commit) are copied
        into the warehouse first, so they are never labeled again."""
        frame = self.read_frame(key, hashes)
        if hashes is not None:
            missing = sorted(set(hashes) - set(frame["prompt_hash"].to_list()))
            if missing and self.adopt_from_store(key, missing):
                frame = self.read_frame(key, hashes)
        return {row["prompt_hash"]: labels_from_json(row["labels_json"])
                for row in frame.iter_rows(named=True)}

    def adopt_from_store(self, key: CacheKey, missing: Sequence[str]) -> int:
        """Copy the label store's label sets of `missing` (hashes label_cache lacks for this key) into it, and
        drop their outstanding failures; returns how many."""
        files = [str(seg.path) for seg in label_store.segments(self.path) if seg.kind == label_store.CACHE_KIND]
        if not files or not missing:
            return 0
        missing = list(missing)
        where = ("onet_version = ? and labeler = ? and model = ? and template_version = ? and prompt_hash in "
                 "(select unnest(?::varchar[]))")
        params = [key.onet_version, key.labeler, key.model, key.template_version, missing]
        try:
            found = wh.query(self.path, f"select * from read_parquet(?, union_by_name = true) where {where}",
                             [files, *params])
        except duckdb.Error:  # a damaged segment: the verified reader skips it
            found = pl.concat([f.filter(pl.col("prompt_hash").is_in(missing))
                               for f in label_store.verified_cache_frames(self.path)] or [pl.DataFrame()],
                              how="diagonal_relaxed")
            if not found.is_empty():
                found = found.filter((pl.col("onet_version") == key.onet_version) & (pl.col("labeler") == key.labeler)
                                     & (pl.col("model") == key.model)
                                     & (pl.col("template_version") == key.template_version))
        if found.is_empty():
            return 0
        found = found.sort("created_at").unique(subset=label_store.CACHE_KEY, keep="first", maintain_order=True)
        # the columns label_cache has: a segment's extra one (a newer benchmap) failed every labeling step
        found = found.select([c for c in found.columns if c in CACHE_SCHEMA])
        with wh.connect(self.path) as con:
            self._ensure(con)
            view = f"_adopt_{random.randrange(1 << 30)}"
            con.register(view, found.to_arrow())
            with wh.transaction(con):
                con.execute(_INSERT_CACHE_SQL.format(view=view))
                versions = found.select(pl.coalesce("labeler_version", pl.col("model") + "+" + pl.col(
                    "template_version"))).to_series().unique().to_list()
                for version in versions:
                    con.execute(_DELETE_FAILURES_SQL, [key.labeler, version, found["prompt_hash"].to_list()])
        return found.height

    def read_frame(self, key: CacheKey | None = None, hashes: Sequence[str] | None = None) -> pl.DataFrame:
        """label_cache rows (one per hash and key: the first written), optionally for a key / some hashes."""
        if not self.exists(CACHE_TABLE):
            return pl.DataFrame(schema=CACHE_SCHEMA)
        where, params = [], []
        if key is not None:
            where.append("onet_version = ? and labeler = ? and model = ? and template_version = ?")
            params += [key.onet_version, key.labeler, key.model, key.template_version]
        if hashes is not None:
            where.append("prompt_hash in (select unnest(?::varchar[]))")
            params.append(list(hashes))
        sql = (f"select * from {CACHE_TABLE}" + (" where " + " and ".join(where) if where else "")
               + " qualify row_number() over (partition by prompt_hash, onet_version, labeler, model,"
                 " template_version order by created_at) = 1")
        return wh.query(self.path, sql, params)

    def failures(self) -> pl.DataFrame:
        if not self.exists(FAILURES_TABLE):
            return pl.DataFrame(schema=FAILURE_SCHEMA)
        return wh.query(self.path, f"select * from {FAILURES_TABLE} order by failed_at, prompt_hash")

    def open_failures(self, benchmark: str, labeler: str | None = None, labeler_version: str | None = None, *,
                      retry_below_runs: int | None = None) -> int:
        """Distinct prompts of `benchmark` (still among its prompts) in label_failures, optionally of one
        labeler and version, and only those that failed in fewer than `retry_below_runs` runs (the ones a plain
        run asks again): a partition with any is not done (run_all runs it again; its check fails)."""
        return self.open_failures_by_benchmark([benchmark], labeler, labeler_version,
                                               retry_below_runs=retry_below_runs).get(benchmark, 0)

    def open_failures_by_benchmark(self, benchmarks: Sequence[str], labeler: str | None = None,
                                   labeler_version: str | None = None, *,
                                   retry_below_runs: int | None = None,
                                   labeler_version_prefix: str | None = None,
                                   unlabeled_only: bool = False) -> dict[str, int]:
        """`open_failures` of several benchmarks in one connection (run_all asks for every partition at once:
        a connection costs ~30 CPU-ms); `labeler_version_prefix`: versions starting so (a model's, e.g. the LLM
        judge's); `unlabeled_only`: only prompts the published labels have no work decision for (prompt_work),
        so a failure of an earlier version (another model or template) whose prompt was labeled since is not
        open (the asset's own count, taken before it writes prompt_work, asks for its exact version instead). Benchmarks without open failures are absent."""
        if not benchmarks or not self.path.exists():
            return {}
        where, params = ["f.benchmark in (select unnest(?::varchar[]))"], [list(benchmarks)]
        if retry_below_runs is not None:
            where.append("coalesce(f.runs, 1) < ?")
            params.append(retry_below_runs)
        if labeler is not None:
            where.append("f.labeler = ?")
            params.append(labeler)
        if labeler_version_prefix is not None:
            where.append("starts_with(f.labeler_version, ?)")
            params.append(labeler_version_prefix)
        if labeler_version is not None:
            where.append("f.labeler_version = ?")
            params.append(labeler_version)
        with wh.connect(self.path, read_only=True) as con:
            if not wh.table_exists(con, FAILURES_TABLE):
                return {}
            if wh.table_exists(con, "benchmark_prompts"):
                where.append("(f.benchmark, f.prompt_hash) in (select (benchmark, prompt_hash) "
                             "from benchmark_prompts)")
            if unlabeled_only and wh.table_exists(con, lq.WORK):
                where.append(lq.UNLABELED_FAILURE_SQL)
            rows = con.execute(f"select f.benchmark, count(distinct f.prompt_hash) from {FAILURES_TABLE} f "
                               f"where {' and '.join(where)} group by 1", params).fetchall()
        return {str(b): int(n) for b, n in rows}

    def committed_since(self, benchmark: str, since: dt.datetime, labeler: str | None = None) -> tuple[int, int]:
        """(prompt texts of `benchmark` labeled, those that failed) in batches committed at or after `since`
        (naive UTC, as the rows are stamped), by `labeler` when given: what a labeling step that failed or was
        stopped did before it ended (its metadata, which says it otherwise, was never written)."""
        if not self.path.exists():
            return 0, 0
        only = " and labeler = ?" if labeler is not None else ""
        extra = [labeler] if labeler is not None else []
        with wh.connect(self.path, read_only=True) as con:
            labeled = failed = 0
            if wh.table_exists(con, CACHE_TABLE) and wh.table_exists(con, "benchmark_prompts"):
                labeled = con.execute(
                    f"select count(distinct prompt_hash) from {CACHE_TABLE} where created_at >= ?{only} and "
                    "prompt_hash in (select prompt_hash from benchmark_prompts where benchmark = ?)",
                    [since, *extra, benchmark]).fetchone()[0]
            if wh.table_exists(con, FAILURES_TABLE):
                failed = con.execute(
                    f"select count(distinct prompt_hash) from {FAILURES_TABLE} where failed_at >= ?{only} and "
                    "benchmark = ?", [since, *extra, benchmark]).fetchone()[0]
        return int(labeled), int(failed)

    def outstanding_failures(self) -> int:
        """How many label_failures rows wait for a retry (0 without the table)."""
        if not self.exists(FAILURES_TABLE):
            return 0
        return int(wh.query(self.path, f"select count(*) as n from {FAILURES_TABLE}")["n"][0])

    def write_batch(self, key: CacheKey, labeler_version: str, outcomes: Sequence[LabelOutcome],
                    prompts_by_hash: dict[str, list[PromptRecord]]) -> None:
        """Cache the successes and record the failures of one batch, in one transaction. The outcomes' texts
        (errors, rationales) are masked here too: a caller other than label_with_cache (the Batch API's outcomes
        written by hand) must not store a secret either."""
        clean = self.text_scrubber()
        outcomes = [clean_outcome(o, clean) for o in outcomes]
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        cache_rows = _cache_rows(key, labeler_version, [o for o in outcomes if o.ok], now)
        failure_rows = _failure_rows(key, labeler_version, [o for o in outcomes if not o.ok], prompts_by_hash,
                                     now)
        touched = [o.prompt_hash for o in outcomes]
        # labels made with a benchmark context replace the hash's earlier ones, made with another context
        # (models/labeling/cache.py plan_labeling); the store keeps both (one adopted from it is checked again)
        replaced = [o.prompt_hash for o in outcomes if o.ok and o.context is not None]
        # the paid labels live twice: this batch also goes to the append-only store outside DuckDB, first
        label_store.append_batch(self.path, cache_rows, failure_rows)
        with wh.connect(self.path) as con:
            self._ensure(con)
            cache_view = f"_cache_batch_{random.randrange(1 << 30)}"
            fail_view = f"_fail_batch_{random.randrange(1 << 30)}"
            con.register(cache_view, cache_rows.to_arrow())
            con.register(fail_view, failure_rows.to_arrow())
            with wh.transaction(con):
                con.execute(_PREV_ATTEMPTS_SQL, [key.labeler, labeler_version, touched])
                con.execute(_DELETE_FAILURES_SQL, [key.labeler, labeler_version, touched])
                con.execute(_INSERT_FAILURES_SQL.format(view=fail_view))
                if replaced:
                    con.execute(_DELETE_CACHE_SQL, [key.onet_version, key.labeler, key.model, key.template_version,
                                                    replaced])
                con.execute(_INSERT_CACHE_SQL.format(view=cache_view))
                con.execute("drop table _prev_attempts")

    def labeled_hashes(self, onet_version: str) -> pl.DataFrame:
        """The distinct (prompt_hash, labeler) cached for this O*NET version: every prompt each labeler
        labeled, also those it judged not occupational work (no label row)."""
        return wh.query(self.path, f"select distinct prompt_hash, labeler from {CACHE_TABLE} where onet_version = ?",
                        [onet_version])

    def other_labeler_keys(self, current: pl.DataFrame, onet_version: str) -> pl.DataFrame:
        """The cache keys (with labeler_version) of this O*NET version whose (labeler, labeler_version) is not
        in `current`, nor the version a current neighbour-stacked version was stacked on: those cached labels
        are the current labels before the neighbour step, not another labeler's (counted as one, they were
        added to the current labeler's counts)."""
        keys = wh.query(self.path, f"select distinct onet_version, labeler, model, template_version, "
                        f"labeler_version from {CACHE_TABLE} where onet_version = ?", [onet_version])
        keys = keys.with_columns(pl.coalesce("labeler_version", pl.col("model") + "+" + pl.col("template_version"))
                                 .alias("labeler_version"))
        versions = current.select("labeler", "labeler_version").unique()
        bases = versions.with_columns(pl.col("labeler_version").map_elements(stacked_on, return_dtype=pl.Utf8))
        return keys.join(pl.concat([versions, bases.drop_nulls()]), on=["labeler", "labeler_version"], how="anti")


def _lock_name(benchmark: str) -> str:
    """A file name for any benchmark name (partition keys are identifiers; anything else is escaped)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", benchmark)[:100] or "_"


def _cache_rows(key: CacheKey, labeler_version: str, ok: Sequence[LabelOutcome], now: dt.datetime
                ) -> pl.DataFrame:
    return pl.DataFrame({
        "prompt_hash": [o.prompt_hash for o in ok],
        "onet_version": [key.onet_version] * len(ok),
        "labeler": [key.labeler] * len(ok),
        "model": [key.model] * len(ok),
        "template_version": [key.template_version] * len(ok),
        "labels_json": [labels_to_json(LabelSet(o.labels, o.is_work, o.p_work, context=o.context)) for o in ok],
        "created_at": [now] * len(ok),
        "labeler_version": [labeler_version] * len(ok),
        "input_tokens": [int(o.input_tokens) for o in ok],
        "output_tokens": [int(o.output_tokens) for o in ok],
        **{c: [getattr(o, c, None) for o in ok] for c in USAGE_COLUMNS},
    }, schema_overrides={"created_at": pl.Datetime("us"), "input_tokens": pl.Int64,
                         "output_tokens": pl.Int64, **{c: pl.Int64 for c in USAGE_COLUMNS}})


def _failure_rows(key: CacheKey, labeler_version: str, bad: Sequence[LabelOutcome],
                  prompts_by_hash: dict[str, list[PromptRecord]], now: dt.datetime) -> pl.DataFrame:
    """One row per failed prompt record (a hash shared by several records fails for each of them)."""
    records = [
        {"prompt_hash": o.prompt_hash, "benchmark": p.benchmark if p else None,
         "prompt_id": p.prompt_id if p else None, "labeler": key.labeler, "labeler_version": labeler_version,
         "error": str(o.error)[:2000], "attempts": int(o.attempts), "failed_at": now, "runs": 1}
        for o in bad for p in (prompts_by_hash.get(o.prompt_hash) or [None])]
    return pl.DataFrame(records, schema=FAILURE_SCHEMA)


def has_other_labelers(cache: LabelCache, current: pl.DataFrame, onet_version: str) -> bool:
    """Whether the cache holds labels of a labeler/version not in `current` (labeler, labeler_version)."""
    return cache.exists(CACHE_TABLE) and not cache.other_labeler_keys(current, onet_version).is_empty()


def other_labelers_labels(cache: LabelCache, current: pl.DataFrame, prompts: pl.DataFrame,
                          onet_version: str) -> pl.DataFrame:
    """Cached labels of the labelers/versions *not* in `current` (labeler, labeler_version), joined to the
    prompts (benchmark, prompt_id, prompt_hash) they label, in LABEL_COLUMNS (rationale null).

    Only the other labelers' cache rows are read: the cache of the active labeler is as large as the label
    table itself, and validation, agreement and sensitivity need it only for the labeler comparison.
    """
    empty = pl.DataFrame(schema=LABEL_COLUMNS)
    if not cache.exists(CACHE_TABLE):
        return empty
    other_keys = cache.other_labeler_keys(current, onet_version)
    if other_keys.is_empty():
        return empty
    rows = pl.concat([cache.read_frame(CacheKey(r["onet_version"], r["labeler"], r["model"], r["template_version"]))
                      for r in other_keys.iter_rows(named=True)], how="vertical_relaxed")
    others = disambiguate_versions(cache_frame_to_labels(rows))
    return (others.join(prompts.select("benchmark", "prompt_id", "prompt_hash"), on="prompt_hash")
            .with_columns(pl.lit(None, pl.Utf8).alias("rationale"))
            .select(list(LABEL_COLUMNS)))


__all__ = ["CACHE_TABLE", "FAILURES_TABLE", "FAILURE_SCHEMA", "CacheKey", "LabelCache", "has_other_labelers",
           "other_labelers_labels"]
