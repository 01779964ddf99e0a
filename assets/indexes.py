"""Benchmark indexes (group "analysis"): which landed benchmarks each named index counts (models/indexes/).

The index definitions are the TOML files in `data/indexes/` (or `$BENCHMAP_INDEX_DIR`), read here and passed
to the pure evaluation as text. `benchmark_index_membership` has one row per index x landed benchmark; the
coverage headline, coverage tables, regressions and gap finder read it to compute their numbers per index.
The asset is in the analysis group, so every analysis refresh (the analysis automation, `analysis_refresh_job`
or `run_all`) recomputes membership after a benchmark lands or changes. The index files themselves are the
external asset `benchmark_index_files`: the landing sensor reports it materialized when their content changes
(pipelines/sensors.py), which the analysis automation then follows like any other upstream update.

A broken index file (unknown field, a rule on a column that does not exist, a benchmark never landed) is
logged with its file and line and left out; the other indexes still compute, and the check
`benchmark_index_files_valid` fails naming the file and line.
"""

from pathlib import Path

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    MetadataValue,
    asset,
    asset_check,
)

from assets import labels as label_assets
from models import indexes as ix
from pipelines import readers
from pipelines.resources import Warehouse
from pipelines.run_state import index_files_fingerprint
from pipelines.settings import settings

GROUP = "analysis"
PROMPT_WORK = "prompt_work"
# each text's estimated occupations (issue 25): a benchmark's major group for the cap is read from them
OCCUPATION_ESTIMATES = "prompt_occupation_estimates"
INDEX_FILES_KEY = AssetKey("benchmark_index_files")
INDEX_FINGERPRINT = "index_files_fingerprint"  # metadata of benchmark_index_membership and benchmark_index_files

# Not materialized by Dagster: edited by hand; its updates are reported by benchmark_landing_sensor. In a group
# of its own so that no job selects it.
benchmark_index_files = AssetSpec(
    INDEX_FILES_KEY,
    group_name="landing",
    kinds={"toml"},
    description="The benchmark index definitions, data/indexes/*.toml (or $BENCHMAP_INDEX_DIR).",
)


def index_dir() -> Path:
    return settings().index_dir


def read_index_files(folder: Path | None = None) -> dict[str, str]:
    """path -> text of every `*.toml` in the index folder (default: the settings' index_dir)."""
    return readers.read_index_files(folder or index_dir())


def _defined_keys() -> set[AssetKey]:
    keys: set[AssetKey] = set()
    for definition in label_assets.ASSETS:
        keys |= set(getattr(definition, "keys", set()))
    return keys


# prompt_work (the labeler's per-prompt work decision) is a dependency once the labels domain defines it
_DEPS = [AssetKey("benchmarks"), AssetKey("task_label_counts"), INDEX_FILES_KEY] + (
    [AssetKey(PROMPT_WORK)] if AssetKey(PROMPT_WORK) in _defined_keys() else []
)


def occupation_estimates(warehouse: Warehouse) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """(prompt_occupation_estimates, prompts per text) when the estimates exist, else (None, None): the
    benchmarks' major groups then come from their raw labels (and membership says so per benchmark)."""
    if not warehouse.table_exists(OCCUPATION_ESTIMATES):
        return None, None
    estimates = warehouse.query(
        f"select benchmark, prompt_hash, onet_soc_code, p from {OCCUPATION_ESTIMATES}"
    )
    text_prompts = warehouse.query(
        "select benchmark, prompt_hash, count(*) as n_prompts from benchmark_prompts group by 1, 2"
    )
    return estimates, text_prompts


def compute_membership(warehouse: Warehouse, files: dict[str, str] | None = None) -> ix.IndexResult:
    benchmarks = warehouse.read_table("benchmarks")
    counts = warehouse.read_table("task_label_counts") if warehouse.table_exists("task_label_counts") else None
    work = None
    if warehouse.table_exists(PROMPT_WORK):
        work = warehouse.read_table(PROMPT_WORK, columns=["benchmark", "prompt_id", "labeler", "is_work"])
    estimates, text_prompts = occupation_estimates(warehouse)
    properties = ix.measured_properties(benchmarks, counts, work, occupation_estimates=estimates,
                                        text_prompts=text_prompts)
    return ix.evaluate_indexes(read_index_files() if files is None else files, properties)


@asset(group_name=GROUP, kinds={"polars", "duckdb"}, deps=_DEPS)
def benchmark_index_membership(context: AssetExecutionContext, warehouse: Warehouse) -> pl.DataFrame:
    """Per index (data/indexes/<name>.toml) x landed benchmark: included or not, the rule or entry that
    decided, why, and every value read (unknown values say so). `all` is every landed benchmark."""
    result = compute_membership(warehouse)
    for name, message in result.errors.items():
        context.log.error(f"index {name!r} not computed: {message}")
    if not warehouse.table_exists(PROMPT_WORK):
        context.log.warning("prompt_work is not in the warehouse: work_share is unknown for every benchmark")
    frame = result.membership
    sizes = frame.group_by("benchmark_index").agg(pl.col("included").sum()).sort("benchmark_index")
    context.add_output_metadata(
        {
            "indexes": MetadataValue.json({r["benchmark_index"]: int(r["included"]) for r in sizes.to_dicts()}),
            "errors": MetadataValue.json(result.errors),
            "index_dir": MetadataValue.path(str(index_dir())),
            # the landing sensor compares this with the files now and reports benchmark_index_files updated
            INDEX_FINGERPRINT: index_files_fingerprint(),
            "preview": MetadataValue.md(
                frame.filter(pl.col("benchmark_index") != ix.ALL_INDEX)
                .select("benchmark_index", "benchmark", "included", "decided_by", "reason", "major_group",
                        "major_group_rule", "major_group_share")
                .to_pandas()
                .to_markdown(index=False)
            ),
        }
    )
    return frame


@asset_check(
    asset=benchmark_index_membership,
    blocking=False,
    description="Every index file in data/indexes parses and names only landed benchmarks.",
)
def benchmark_index_files_valid(warehouse: Warehouse) -> AssetCheckResult:
    result = compute_membership(warehouse)
    return AssetCheckResult(
        passed=not result.errors,
        severity=AssetCheckSeverity.ERROR,
        metadata={"errors": MetadataValue.json(result.errors), "indexes": sorted(result.definitions)},
    )


ASSETS: list = [benchmark_index_files, benchmark_index_membership]
CHECKS: list = [benchmark_index_files_valid]
