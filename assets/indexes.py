"""Benchmark indexes (group "analysis"): which landed benchmarks each named index counts (models/indexes/).

The index definitions are the TOML files in `data/indexes/` (or `$BENCHMAP_INDEX_DIR`), read here and passed
to the pure evaluation as text. `benchmark_index_membership` has one row per index x landed benchmark; the
coverage headline, coverage tables, regressions and gap finder read it to compute their numbers per index.
The asset is in the analysis group, so every analysis refresh (the analysis automation, `analysis_refresh_job`
or `run_all`) recomputes membership after a benchmark lands or changes. The index files themselves are the
external asset `benchmark_index_files`: the landing sensor reports it materialized when their content changes
(pipelines/landing_sensor.py), which the analysis automation then follows like any other upstream update.

A broken index file (unknown field, a rule on a column that does not exist, a benchmark neither landed nor in
a landing folder) is logged with its file and line and left out; the other indexes still compute, the check
`benchmark_index_files_valid` fails naming the file and line, and the release waits (`exports` refuses:
assets/release_gate.py), since it would drop that index.
"""

import time
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
from assets import module_assets
from assets.release_gate import refuse_labels_behind
from models import indexes as ix
from models.markdown import markdown_table
from resources import readers, sources
from resources.dagster_resources import Warehouse
from resources.settings import settings
from resources.source_versions import index_files_fingerprint

GROUP = "analysis"
PROMPT_WORK = "prompt_work"
# a benchmark's major group for the cap is the largest share of its estimated work (issue 25 item 5)
GROUP_SHARES = "benchmark_major_group_estimates"
INDEX_FILES_KEY = AssetKey("benchmark_index_files")
INDEX_FINGERPRINT = "index_files_fingerprint"  # metadata of benchmark_index_membership and benchmark_index_files

# Not materialized by Dagster: edited by hand; its updates are reported by benchmark_landing_sensor. In a group
# of its own so that no job selects it.
benchmark_index_files = AssetSpec(
    INDEX_FILES_KEY,
    group_name="landing",
    kinds={"toml"},
    description="The benchmark index definitions, `data/indexes/*.toml` (or $BENCHMAP_INDEX_DIR).",
)


def index_dir() -> Path:
    return settings().index_dir


def read_index_files(folder: Path | None = None) -> dict[str, bytes]:
    """path -> text of every `*.toml` in the index folder (default: the settings' index_dir)."""
    return readers.read_index_files(folder or index_dir())


def _defined_keys() -> set[AssetKey]:
    keys: set[AssetKey] = set()
    for definition in module_assets(label_assets):
        keys |= set(getattr(definition, "keys", set()))
    return keys


# prompt_work (the labeler's per-prompt work decision) is a dependency once the labels domain defines it; the
# estimated group shares read what the headline's draws read
_DEPS = [AssetKey("benchmarks"), AssetKey("task_label_counts"), INDEX_FILES_KEY] + (
    [AssetKey(PROMPT_WORK)] if AssetKey(PROMPT_WORK) in _defined_keys() else []
) + [AssetKey(t) for t in ("prompt_task_labels", "benchmark_prompts", "onet_tasks", "task_hours",
                           "judge_sample_labels")]


def estimated_group_shares(warehouse: Warehouse, log: object = None) -> pl.DataFrame | None:
    """Each benchmark's estimated share of its work per SOC major group: benchmark_major_group_estimates as
    the headline computes it, from the very same draws (same estimators, seed and number of draws).

    The headline's estimates are computed per index, so they come after membership; the draws themselves do
    not depend on any index (a draw is a benchmark x task count matrix), so membership draws them here over
    the benchmarks alone and keeps them (assets.estimates.keep_draws): the headline of the same process replays
    them instead of drawing again (the check benchmark_group_shares_match_the_headline compares the two). None
    without labels."""
    if not warehouse.table_exists("prompt_task_labels") or not warehouse.table_exists("benchmark_prompts"):
        return None
    from assets import estimates as estimate_assets
    from assets.estimate_draws import headline_draws, kept_share_tables

    config = estimate_assets.EstimatesConfig()
    with warehouse.held():  # one open of the file for the dozen reads (~30 CPU-ms each)
        inputs = estimate_assets.read_inputs(warehouse)  # the headline step logs what the inputs lack, once
    problem = estimate_assets._problem(inputs, inputs["judge_rows"], inputs["labels"])  # type: ignore[arg-type]
    # each benchmark's rows from its own random streams, kept by benchmark: a landed benchmark draws its own only
    record = headline_draws(warehouse, problem, config.seed, config.n_draws, log=log)
    estimate_assets.keep_draws(problem, record)
    # a benchmark's shares are reductions of its own rows of the draws: kept by benchmark with them
    return kept_share_tables(warehouse, problem, record, log)[GROUP_SHARES]


def compute_membership(warehouse: Warehouse, files: dict[str, str] | None = None,
                       group_shares: pl.DataFrame | None = None) -> ix.IndexResult:
    """Membership of every index file; `group_shares` (benchmark_major_group_estimates) places each benchmark
    in a major group (computed by estimated_group_shares when None; an empty frame: the raw labels place
    every benchmark)."""
    benchmarks = warehouse.read_table("benchmarks")
    counts = warehouse.read_table("task_label_counts") if warehouse.table_exists("task_label_counts") else None
    work = None
    if warehouse.table_exists(PROMPT_WORK):
        work = warehouse.read_table(PROMPT_WORK, columns=["benchmark", "prompt_id", "labeler", "is_work"])
    shares = group_shares if group_shares is not None else estimated_group_shares(warehouse)
    properties = ix.measured_properties(
        benchmarks, counts, work,
        group_shares=ix.shares_from_benchmark_estimates(shares) if shares is not None else None,
    )
    # an entry may name a benchmark this warehouse did not land: one of the landing roots' (the shipped file's
    # assumptions about the mirror's benchmarks, in a warehouse of a few of them) or, on a machine without the
    # mirror, one of the benchmarks the vendored reference sampled; it applies to nothing here. A name known
    # nowhere is a typo
    available = {*sources.discover_landing().benchmarks, *readers.sampling_design()["benchmark"].to_list()}
    return ix.evaluate_indexes(read_index_files() if files is None else files, properties, available)


def validate_index_files(warehouse: Warehouse) -> ix.IndexResult:
    """Every index file evaluated as membership does, without the group shares: whether a file is valid does not
    depend on them (no draws; ~0.15 CPU-s on the mirror). `errors` names each broken file with its line."""
    return compute_membership(warehouse, group_shares=pl.DataFrame(schema={
        "benchmark": pl.Utf8, "major_group_code": pl.Utf8, "share_mean": pl.Float64}))


@asset(group_name=GROUP, kinds={"polars", "duckdb"}, deps=_DEPS)
def benchmark_index_membership(context: AssetExecutionContext, warehouse: Warehouse) -> pl.DataFrame:
    """Per index (`data/indexes/<name>.toml`) x landed benchmark: included or not, the rule or entry that
    decided, why, and every value read (unknown values say so). `all` is every landed benchmark."""
    refuse_labels_behind(warehouse, "benchmark_index_membership")  # reads prompt_work and the label counts
    started = time.perf_counter()
    shares = estimated_group_shares(warehouse, context.log)
    seconds = time.perf_counter() - started
    result = compute_membership(warehouse, group_shares=shares)
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
            "group_shares": "estimated (model-assisted draws)" if shares is not None else "raw labels (no labels yet)",
            "group_shares_seconds": round(seconds, 2),
            # the landing sensor compares this with the files now and reports benchmark_index_files updated
            INDEX_FINGERPRINT: index_files_fingerprint(),
            # bounded (an audit: every index x benchmark row with its whole reason, 14 KB a run, growing)
            "preview": MetadataValue.md(markdown_table(
                frame.filter(pl.col("benchmark_index") != ix.ALL_INDEX),
                ["benchmark_index", "benchmark", "included", "decided_by", "reason", "major_group",
                 "major_group_rule", "major_group_share"], max_rows=60, max_chars=120)),
        }
    )
    return frame


@asset_check(
    asset=benchmark_index_membership,
    blocking=False,
    description="Every index file in data/indexes (or $BENCHMAP_INDEX_DIR) parses and names only known "
    "benchmarks: landed here, in a landing root, or sampled by the vendored reference (a name known nowhere is "
    "a typo).",
)
def benchmark_index_files_valid(warehouse: Warehouse) -> AssetCheckResult:
    result = validate_index_files(warehouse)
    return AssetCheckResult(
        passed=not result.errors,
        severity=AssetCheckSeverity.ERROR,
        metadata={"errors": MetadataValue.json(result.errors), "indexes": sorted(result.definitions)},
    )




@asset_check(
    asset=AssetKey(GROUP_SHARES),
    blocking=False,
    additional_deps=[AssetKey("benchmark_index_membership")],
    description="The major group that placed each benchmark in benchmark_index_membership (when read from "
    "its estimated work) is its largest share in the headline's benchmark_major_group_estimates, with the "
    "same share: membership reran the same draws.",
)
def benchmark_group_shares_match_the_headline(warehouse: Warehouse) -> AssetCheckResult:
    names = ("benchmark_index_membership", GROUP_SHARES)
    if not all(warehouse.table_exists(n) for n in names):
        return AssetCheckResult(passed=False, metadata={"missing": [n for n in names if not warehouse.table_exists(n)]})
    placed = warehouse.read_table(names[0]).filter(
        (pl.col("benchmark_index") == ix.ALL_INDEX) & (pl.col("major_group_rule") == ix.RULE_ESTIMATED)
    ).select("benchmark", "major_group", "major_group_share")
    top = warehouse.read_table(GROUP_SHARES).filter(pl.col("rank") == 1).select(
        "benchmark", pl.col("major_group_code").alias("top_group"), pl.col("share_mean").alias("top_share"))
    joined = placed.join(top, on="benchmark", how="left")
    differ = joined.filter((pl.col("major_group") != pl.col("top_group"))
                           | ((pl.col("major_group_share") - pl.col("top_share")).abs() > 1e-9)
                           | pl.col("top_group").is_null())
    return AssetCheckResult(
        passed=differ.is_empty(),
        metadata={"benchmarks_placed_by_estimate": placed.height, "disagreeing": differ["benchmark"].to_list()},
    )
