"""The label cache's store: tables label_cache and label_failures in the DuckDB warehouse.

`LabelCache` is the one implementation of the `models.labeling.cache.LabelStore` protocol the labeling loop
(`label_with_cache`) writes through: every batch is one transaction, and it goes to the append-only label
store (`pipelines.label_store`) first, so paid labels survive a damaged warehouse.

`label_failures` holds the *outstanding* failures: a prompt's row is replaced when it fails again (attempts
accumulate across runs) and deleted once the prompt is labeled.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from pathlib import Path

import duckdb
import polars as pl

from models.labeling.base import LabelOutcome, PromptRecord, TaskLabel
from models.labeling.cache import (
    LABEL_COLUMNS,
    USAGE_COLUMNS,
    CacheKey,
    LabelSet,
    cache_frame_to_labels,
    disambiguate_versions,
    labels_from_json,
    labels_to_json,
)
from pipelines import label_store
from pipelines import warehouse as wh

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
    failed_at timestamp
)"""

FAILURE_SCHEMA: dict[str, pl.DataType] = {
    "prompt_hash": pl.Utf8, "benchmark": pl.Utf8, "prompt_id": pl.Utf8, "labeler": pl.Utf8,
    "labeler_version": pl.Utf8, "error": pl.Utf8, "attempts": pl.Int32, "failed_at": pl.Datetime("us")}
CACHE_SCHEMA: dict[str, pl.DataType] = {
    "prompt_hash": pl.Utf8, "onet_version": pl.Utf8, "labeler": pl.Utf8, "model": pl.Utf8,
    "template_version": pl.Utf8, "labels_json": pl.Utf8, "created_at": pl.Datetime, "labeler_version": pl.Utf8,
    "input_tokens": pl.Int64, "output_tokens": pl.Int64, **{c: pl.Int64 for c in USAGE_COLUMNS}}

# attempts accumulate over runs: add the attempts of the outstanding failure being replaced
_PREV_ATTEMPTS_SQL = (
    f"create temp table _prev_attempts as select prompt_hash, coalesce(prompt_id, '') as pid, "
    f"max(attempts) as attempts from {FAILURES_TABLE} where labeler = ? and labeler_version = ? "
    f"and prompt_hash in (select unnest(?::varchar[])) group by all")
_DELETE_FAILURES_SQL = (f"delete from {FAILURES_TABLE} where labeler = ? and labeler_version = ? "
                        f"and prompt_hash in (select unnest(?::varchar[]))")
_INSERT_FAILURES_SQL = (
    f"insert into {FAILURES_TABLE} by name select f.prompt_hash, f.benchmark, f.prompt_id, f.labeler, "
    f"f.labeler_version, f.error, f.attempts + coalesce(p.attempts, 0) as attempts, f.failed_at from {{view}} f "
    f"left join _prev_attempts p on p.prompt_hash = f.prompt_hash and p.pid = coalesce(f.prompt_id, '')")
# the first label set written for a (hash, key) wins: a re-run never replaces paid labels
_INSERT_CACHE_SQL = (
    f"insert into {CACHE_TABLE} by name select * from {{view}} c where not exists (select 1 from {CACHE_TABLE} t "
    f"where t.prompt_hash = c.prompt_hash and t.onet_version = c.onet_version and t.labeler = c.labeler and "
    f"t.model = c.model and t.template_version = c.template_version)")


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

    def exists(self, table: str = CACHE_TABLE) -> bool:
        if not self.path.exists():
            return False
        with wh.connect(self.path, read_only=True) as con:
            return wh.table_exists(con, table)

    def read(self, key: CacheKey, hashes: Sequence[str] | None = None) -> dict[str, list[TaskLabel]]:
        """Cached labels by prompt hash for one key (all hashes when `hashes` is None)."""
        frame = self.read_frame(key, hashes)
        return {row["prompt_hash"]: labels_from_json(row["labels_json"])
                for row in frame.iter_rows(named=True)}

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

    def outstanding_failures(self) -> int:
        """How many label_failures rows wait for a retry (0 without the table)."""
        if not self.exists(FAILURES_TABLE):
            return 0
        return int(wh.query(self.path, f"select count(*) as n from {FAILURES_TABLE}")["n"][0])

    def write_batch(self, key: CacheKey, labeler_version: str, outcomes: Sequence[LabelOutcome],
                    prompts_by_hash: dict[str, list[PromptRecord]]) -> None:
        """Cache the successes and record the failures of one batch, in one transaction."""
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        cache_rows = _cache_rows(key, labeler_version, [o for o in outcomes if o.ok], now)
        failure_rows = _failure_rows(key, labeler_version, [o for o in outcomes if not o.ok], prompts_by_hash,
                                     now)
        touched = [o.prompt_hash for o in outcomes]
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
                con.execute(_INSERT_CACHE_SQL.format(view=cache_view))
                con.execute("drop table _prev_attempts")

    def labeled_hashes(self, onet_version: str) -> pl.DataFrame:
        """The distinct (prompt_hash, labeler) cached for this O*NET version: every prompt each labeler
        labeled, also those it judged not occupational work (no label row)."""
        return wh.query(self.path, f"select distinct prompt_hash, labeler from {CACHE_TABLE} where onet_version = ?",
                        [onet_version])

    def other_labeler_keys(self, current: pl.DataFrame, onet_version: str) -> pl.DataFrame:
        """The cache keys (with labeler_version) of this O*NET version whose (labeler, labeler_version) is not
        in `current`."""
        keys = wh.query(self.path, f"select distinct onet_version, labeler, model, template_version, "
                        f"labeler_version from {CACHE_TABLE} where onet_version = ?", [onet_version])
        keys = keys.with_columns(pl.coalesce("labeler_version", pl.col("model") + "+" + pl.col("template_version"))
                                 .alias("labeler_version"))
        return keys.join(current.select("labeler", "labeler_version").unique(),
                         on=["labeler", "labeler_version"], how="anti")


def _cache_rows(key: CacheKey, labeler_version: str, ok: Sequence[LabelOutcome], now: dt.datetime
                ) -> pl.DataFrame:
    return pl.DataFrame({
        "prompt_hash": [o.prompt_hash for o in ok],
        "onet_version": [key.onet_version] * len(ok),
        "labeler": [key.labeler] * len(ok),
        "model": [key.model] * len(ok),
        "template_version": [key.template_version] * len(ok),
        "labels_json": [labels_to_json(LabelSet(o.labels, o.is_work, o.p_work)) for o in ok],
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
         "error": str(o.error)[:2000], "attempts": int(o.attempts), "failed_at": now}
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
