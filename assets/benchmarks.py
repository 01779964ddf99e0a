"""Benchmark tables, one dynamic partition per benchmark: `benchmarks`, `benchmark_prompts`,
`benchmark_results`, `benchmark_rejects` (see docs/ARCHITECTURE.md). The parsing lives in models/benchmarks.py.

One multi-asset parses a landing folder once and writes all four tables' rows for that benchmark; the
WarehouseIOManager replaces exactly the rows `benchmark = <partition key>` in one transaction per table, so
other benchmarks' rows are never touched. A run of a range of partitions (run_all) parses each folder and writes
each table once for all of them.
"""

from typing import Any

import polars as pl
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetOut,
    Failure,
    MetadataValue,
    Output,
    asset_check,
    multi_asset,
)

from assets import TABLE_KINDS
from assets.partitions import benchmark_partitions
from models import benchmarks as bm
from models.markdown import markdown_table
from resources.dagster_resources import Warehouse
from resources.io_manager import add_partition_metadata
from resources.landing import ingest_folder
from resources.source_versions import LANDING_FOLDERS_KEY
from resources.sources import discover_landing, landing_roots

GROUP = "benchmarks"
PARTITIONED = {"partition_expr": "benchmark"}
TABLES = ("benchmarks", "benchmark_prompts", "benchmark_results", "benchmark_rejects")
REJECT_RATE_WARN = 0.05
FIRST_REJECT = "first_reject"  # metadata: the first reject's `file:line: reason` (run_all's partition line)

_DESCRIPTIONS = {
    "benchmarks": "One row per benchmark: metadata (defaults named in metadata_warnings), counts, content "
                  "hash, first seen / last changed.",
    "benchmark_prompts": "Every accepted prompt with prompt_hash (sha256 of the NFC, whitespace-collapsed "
                         "text) and the labels its source gives.",
    "benchmark_results": "Per-prompt model scores in [0, 1] from results.csv.",
    "benchmark_rejects": "Every line (or landing folder) that could not be taken: file, line number, reason.",
}


def _previous_row(warehouse: Warehouse, name: str) -> dict[str, Any] | None:
    if not warehouse.table_exists("benchmarks"):
        return None
    rows = warehouse.benchmark_registry_row(name)
    return rows.row(0, named=True) if rows.height else None


def _stored_prompt_count(warehouse: Warehouse, name: str) -> int:
    if not warehouse.table_exists("benchmark_prompts"):
        return 0
    return warehouse.stored_prompt_count(name)


def _outputs(frames: dict[str, pl.DataFrame], metadata: dict[str, Any]):
    for table in TABLES:
        yield Output(frames[table], output_name=table, metadata=metadata)


@multi_asset(
    name="benchmark_landing",
    deps=[LANDING_FOLDERS_KEY],  # its data version per partition: the folder's content hash (assets/sources.py)
    outs={table: AssetOut(metadata=PARTITIONED, description=_DESCRIPTIONS[table], is_required=True,
                               kinds=TABLE_KINDS)
          for table in TABLES},
    partitions_def=benchmark_partitions,
    group_name=GROUP,
    can_subset=False,
    description="Parse one landing folder (data/raw/benchmarks/<name>, else "
                "$BENCHMAP_MIRROR/benchmarks/<name>) into the four benchmark tables.",
)
def benchmark_landing(context: AssetExecutionContext, warehouse: Warehouse):
    landing = discover_landing()
    names = context.partition_keys  # one partition, or several when run_all runs a range of them in one run
    if len(names) == 1:
        frames, metadata = _ingest_partition(context, warehouse, landing, names[0])
        yield from _outputs(frames, metadata)
        return
    parts = [_ingest_partition(context, warehouse, landing, name) for name in names]
    for table in TABLES:  # each partition's record: its own counts
        add_partition_metadata(context, table, {name: metadata for name, (_, metadata) in zip(names, parts, strict=True)})
    frames = {table: pl.concat([p[0][table] for p in parts], how="vertical_relaxed") for table in TABLES}
    yield from _outputs(frames, {})


def _ingest_partition(context: AssetExecutionContext, warehouse: Warehouse, landing: bm.Landing, name: str
                      ) -> tuple[dict[str, pl.DataFrame], dict[str, Any]]:
    """One benchmark's four tables and the metadata of its materializations."""
    if name == bm.LANDING_PARTITION:
        rejects = bm.landing_rejects(landing.problems)
        for row in rejects.iter_rows(named=True):
            context.log.warning(f"landing reject: {row['file']}: {row['reason']}")
        frames = {"benchmarks": pl.DataFrame(schema=bm.BENCHMARKS_SCHEMA),
                  "benchmark_prompts": pl.DataFrame(schema=bm.PROMPTS_SCHEMA),
                  "benchmark_results": pl.DataFrame(schema=bm.RESULTS_SCHEMA),
                  "benchmark_rejects": rejects}
        digest = landing.problems_hash() or bm.NO_PROBLEMS_HASH
        metadata = {"n_rejects": rejects.height, "content_hash": digest,
                    "rejects_preview": MetadataValue.md(bm.rejects_markdown(rejects))}
        return frames, metadata

    folder = landing.benchmarks.get(name)
    if folder is None:
        roots = ", ".join(f"{origin}: {path / name}" for origin, path in landing_roots())
        raise Failure(
            description=f"benchmark {name!r} has a partition but no landing folder (looked in {roots}). "
                        "Its rows in the warehouse are kept unchanged. Restore the folder, or delete the "
                        f"partition {name!r} (and its rows) to retire the benchmark.",
            metadata={"benchmark": name},
        )
    ingested = ingest_folder(folder, previous=_previous_row(warehouse, name))
    if ingested.prompts.is_empty():  # a benchmark without a prompt measures nothing: never an "ok" step
        _log_rejects(context, name, ingested.rejects)  # its rejects are not written: the log keeps them
        stored = _stored_prompt_count(warehouse, name)
        kept = (f"the warehouse keeps its {stored} prompts for {name!r} (not replaced with nothing)" if stored
                else "nothing was written")
        raise Failure(  # one line: run_all prints the first line of a failure
            description=f"{folder.path / bm.PROMPTS_FILE} yielded no valid prompts: "
                        f"{bm.no_prompt_reason(ingested.rejects, name)}; {kept}",
            metadata={"rejects_preview": MetadataValue.md(bm.rejects_markdown(ingested.rejects))},
        )
    results_file = folder.path / bm.RESULTS_FILE
    stored_results = warehouse.stored_result_count(name) if results_file.exists() and ingested.results.is_empty() \
        else 0
    if stored_results:  # a results.csv emptied or cut to nothing (a crash mid-rewrite) must not erase the scores
        own = ingested.rejects.filter(pl.col("file") == f"{name}/{bm.RESULTS_FILE}")
        why = f"{own.height} rejects" + (f"; first {first}" if (first := bm.first_reject(own)) else "")
        raise Failure(
            description=f"{results_file} yielded no valid result ({why}) but the "
                        f"warehouse holds {stored_results} results for {name!r}: refusing to replace them with "
                        "nothing. Fix the file, or remove it to retire the results; the warehouse is unchanged.",
            metadata={"rejects_preview": MetadataValue.md(bm.rejects_markdown(ingested.rejects))},
        )
    _log_rejects(context, name, ingested.rejects)
    for warning in ingested.warnings:
        context.log.warning(f"{name}: metadata: {warning}")
    context.log.info(
        f"{name} ({folder.origin}: {folder.path}): {ingested.prompts.height} prompts, "
        f"{ingested.results.height} results, {ingested.rejects.height} rejects, "
        f"content hash {ingested.content_hash[:12]}")
    metadata = {
        "n_prompts": ingested.prompts.height,
        "n_results": ingested.results.height,
        "n_rejects": ingested.rejects.height,
        **({FIRST_REJECT: first} if (first := bm.first_reject(ingested.rejects)) else {}),  # run_all prints it
        "n_distinct_prompt_hashes": ingested.prompts["prompt_hash"].n_unique(),
        "content_hash": ingested.content_hash,
        "landing_path": MetadataValue.path(str(folder.path)),
        "rejects_preview": MetadataValue.md(bm.rejects_markdown(ingested.rejects)),
    }
    frames = {"benchmarks": ingested.registry, "benchmark_prompts": ingested.prompts,
              "benchmark_results": ingested.results, "benchmark_rejects": ingested.rejects}
    return frames, metadata


REJECTS_LOGGED = 20  # each log line is an event Dagster writes and commits to its storage (~10 ms or more)


def _log_rejects(context: AssetExecutionContext, name: str, rejects: pl.DataFrame) -> None:
    """The first REJECTS_LOGGED rejects, one warning each, then one line for the rest: every reject is in the
    table benchmark_rejects and the metadata preview; a log event per line made a 200-reject file cost seconds."""
    for row in rejects.head(REJECTS_LOGGED).iter_rows(named=True):
        context.log.warning(f"reject {row['file']} line {row['line_number']}: {row['reason']}")
    if rejects.height > REJECTS_LOGGED:
        context.log.warning(f"{name}: {rejects.height - REJECTS_LOGGED} more rejects not logged here: all "
                            f"{rejects.height} are in table benchmark_rejects (benchmark = '{name}')")


@asset_check(asset="benchmarks", name="benchmark_tables_consistent", blocking=False,
             description="Warehouse-wide: every registry row's counts match the stored prompts/results/"
                         "rejects, prompt ids are unique per benchmark, and every result names a stored prompt "
                         "with a score in [0, 1].")
def benchmark_tables_consistent(context: AssetCheckExecutionContext, warehouse: Warehouse
                                ) -> AssetCheckResult:
    needed = ["benchmarks", "benchmark_prompts", "benchmark_results", "benchmark_rejects"]
    missing = [t for t in needed if not warehouse.table_exists(t)]
    if missing:
        return AssetCheckResult(passed=False, metadata={"missing_tables": ", ".join(missing)})
    mismatched = warehouse.benchmark_count_mismatches()
    orphans = warehouse.orphan_or_out_of_range_results()
    return AssetCheckResult(
        passed=mismatched.is_empty() and orphans == 0,
        metadata={"benchmarks_mismatched": mismatched.height,
                  "mismatched": MetadataValue.md(_markdown(mismatched)),
                  "orphan_or_out_of_range_results": orphans},
    )


@asset_check(asset="benchmark_rejects", name="benchmark_reject_rate", blocking=False,
             description=f"Warns when a benchmark rejects more than {REJECT_RATE_WARN:.0%} of its lines, or when "
             "a landing folder was rejected whole (the _landing partition's rows).")
def benchmark_reject_rate(context: AssetCheckExecutionContext, warehouse: Warehouse) -> AssetCheckResult:
    if not warehouse.table_exists("benchmarks"):
        return AssetCheckResult(passed=False, metadata={"missing_tables": "benchmarks"})
    rates = warehouse.benchmarks_over_reject_rate(REJECT_RATE_WARN)
    landing = 0
    if warehouse.table_exists("benchmark_rejects"):
        landing = warehouse.reject_count(bm.LANDING_PARTITION)
    return AssetCheckResult(
        passed=rates.is_empty() and landing == 0,
        severity=AssetCheckSeverity.WARN,
        metadata={"benchmarks_over_threshold": rates.height, "landing_folder_rejects": landing,
                  "over_threshold": MetadataValue.md(_markdown(rates))},
    )


def _markdown(df: pl.DataFrame, limit: int = 30) -> str:
    return markdown_table(df, max_rows=limit, empty="None.")
