"""Exports (group "exports"): immutable releases `<warehouse dir>/exports/<date>T<time>Z-<input hash>/`.

- `report_figures`: the report's figures as PNG and SVG in `figures/`, each shown in the asset's metadata.
- `coverage_map`: `coverage_map.html`, the self-contained browsable map of occupations.
- `report_summary`: `summary.md`, opening with the one-line answer (models/report/answer.py).
- `exports`: every table as Parquet + CSV, one XLSX workbook, `data_dictionary.md`, the tidy `release.csv` /
  `release.parquet` with `data_documentation.md`, and `manifest.json` (written last); then the run's folder is
  published as a release -- only when a published figure or the code version changed (resources/release.py).
- `headline_history`: one row per release and headline quantity (also `exports/headline_history.csv`), with the
  latest headline as numeric metadata the Dagster UI plots over runs.

Every step of one run writes into that run's staging folder `exports/.staging/<run>/`; a release is that folder
renamed, never rewritten. The release's date is the run tag `benchmap/export_date` when set, else the run's
creation date (UTC). Where a run's export goes, the tables it reads and the metadata helpers that show a figure
or table in the UI are in assets/export_context.py.
"""

from pathlib import Path
from typing import Any

import polars as pl
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    MaterializeResult,
    MetadataValue,
    asset,
    asset_check,
)

from assets import TABLE_KINDS
from assets import indexes as index_assets
from assets.export_context import (
    EXPORTED_TABLES,
    FIGURES_DIR,
    MEMBERSHIP,
    export_date,
    export_folder,
    exported_tables,
    for_index,
    headline_metadata,
    in_release,
    latest_metadata,
    occupation_titles_or_none,
    published_headlines,
    read_membership,
    rendered_figure_metadata,
    run_moment,
    staging_key,
    summary_name,
    table_preview_metadata,
    warehouse_held,
)
from assets.figure_reuse import report_figure_future, report_figure_inputs
from assets.judge_sample import configured_sample
from assets.release_gate import refuse_broken_index_files, refuse_labels_behind, refuse_missing_tables
from models import coverage_map as cmap
from models import exports as ex
from models import figures as fg
from models import indexes as ix
from models import report
from resources import export_files as ef
from resources import export_writer as ew
from resources import interrupts
from resources import release as rl
from resources.coverage_map_queries import ESTIMATES_RELATION, SIMULATION_CHECK_RELATION
from resources.dagster_resources import LabelerResource, Warehouse
from resources.readers import read_text
from resources.sources import discover_landing, index_file_checksums, source_checksums
from resources.worker_pool import shared_pool

GROUP = "exports"
COVERAGE_MAP_NAME = "coverage_map.html"

FIGURE_TABLES = sorted({t for spec in fg.FIGURES for t in spec.tables})
SUMMARY_TABLES = [*ex.REQUIRED_TABLES, "benchmarks", MEMBERSHIP, "headline_estimates", "estimate_split_check",
                  "coverage_regressions_mi", "task_analysis_frame", "occupation_model_scores_estimated",
                  "occupation_gaps", "unit_coverage_simulation_check"]
MAP_TABLES = ["occupation_coverage", "task_coverage", "prompt_task_labels", "benchmark_prompts", "onet_tasks",
              MEMBERSHIP, "headline_estimates"]


# --- assets ---------------------------------------------------------------------------------------


# The report steps (figures, map, summary) run after every other ready step (priority -2; coverage_sensitivity's
# -1 included): the exported tables are then final, and the first of them starts the release's workbook
REPORT_STEP_TAGS = {"dagster/priority": "-2"}


@asset(
    group_name=GROUP,
    kinds={"matplotlib"},
    op_tags=REPORT_STEP_TAGS,
    deps=[AssetKey(t) for t in [*FIGURE_TABLES, "prompt_task_labels"]],
    description="The report's figures (PNG and SVG in the release's figures/), each shown in this asset's "
    "metadata: adjusted coverage vs wage bill and by importance quintile (exposed vs not, 95% CIs), covered "
    "occupations per major group and work hours by coverage level (both labels as counted, and titled so), their "
    "estimated twin (hours share and occupations covered per major group at >= 5 prompts, from the per-unit "
    "estimates), labeler validation, model-score heatmap.",
)
@warehouse_held
def report_figures(context: AssetExecutionContext, warehouse: Warehouse, labeler: LabelerResource
                   ) -> MaterializeResult:
    refuse_missing_tables(warehouse, "report_figures")
    refuse_labels_behind(warehouse, "report_figures")
    start_release_workbook(context, warehouse, labeler)
    tables, missing = warehouse.read_tables(FIGURE_TABLES)
    tables = for_index(tables)  # the figures show index `all`
    titles = occupation_titles_or_none(warehouse)
    if titles is not None:
        tables["occupations"] = titles
    directory = export_folder(context, warehouse) / FIGURES_DIR
    metadata: dict[str, Any] = {"figures_dir": MetadataValue.text(f"{in_release(directory)}/ in this run's release")}
    # each figure drawn by a worker process or this one (resources/worker_pool.py): ~0.8 CPU-s each, independent
    specs = [spec for spec in fg.FIGURES if all(t in tables for t in spec.tables)]
    pool = shared_pool()
    inputs = {spec.name: report_figure_inputs(spec.name, tables) for spec in specs}
    # a figure whose tables did not change is read back, one started ahead by the step of its table is taken
    # (assets/figure_reuse.py)
    rendered = pool.gather([report_figure_future(warehouse, pool, spec.name, inputs[spec.name])  # type: ignore[arg-type]
                            for spec in specs])
    drawn = {spec.name for spec in specs}
    for spec, (files, preview) in zip(specs, rendered, strict=True):
        metadata |= rendered_figure_metadata(spec.name, files, preview, directory, title=spec.title)
    not_drawn = [spec.name for spec in fg.FIGURES if spec.name not in drawn]
    for name in not_drawn:
        context.log.warning(f"figure {name} not drawn: its tables are missing ({', '.join(missing)})")
    metadata |= {
        "n_figures": len(drawn),
        "figures_not_drawn": ", ".join(not_drawn) or "none",
        "missing_tables": ", ".join(missing) or "none",
    }
    return MaterializeResult(metadata=metadata)


@asset(
    group_name=GROUP,
    kinds={"html"},
    op_tags=REPORT_STEP_TAGS,
    # + the tiles' estimates (issue 25) and the check the legend quotes on how far their outer bands hold
    deps=[AssetKey(t) for t in [*MAP_TABLES, ESTIMATES_RELATION, SIMULATION_CHECK_RELATION]],
    description="coverage_map.html of the release: a self-contained page (no network) with every occupation "
    "as a tile in its SOC major group, coloured by its estimated probability of being covered "
    "(occupation_estimates: likely covered / unsure / likely not) for the chosen index and threshold; "
    "toggles for the threshold and each benchmark (a hand-picked set shows the labels as counted); the header "
    "gives the published answer of the chosen index and threshold; hover "
    "for expected prompts, the labels as counted, tasks, benchmarks and example prompts.",
)
@warehouse_held
def coverage_map(context: AssetExecutionContext, warehouse: Warehouse, labeler: LabelerResource) -> MaterializeResult:
    refuse_missing_tables(warehouse, "coverage_map")
    refuse_labels_behind(warehouse, "coverage_map")
    start_release_workbook(context, warehouse, labeler)
    occupations = warehouse.all_index_occupations(["onet_soc_code", "title", "n_tasks"])
    labeler_rows = warehouse.coverage_labelers()
    labeler = labeler_rows["labeler"][0] if labeler_rows.height else None
    folder = export_folder(context, warehouse)
    membership = read_membership(warehouse)
    # aggregated in DuckDB: the labels and prompt texts are never loaded whole
    html, data = warehouse.coverage_map(
        occupations,
        labeler=labeler,
        footer=f"benchmap export of {export_date(context)}; labeler {labeler or 'n/a'}. Data: O*NET 29.2 tasks, "
        "benchmark "
        "prompts labeled with O*NET tasks. Self-contained page: no network access.",
        membership=membership,
        # the header follows the chosen index and threshold; the page opens at index all's headline
        headlines=published_headlines(warehouse, export_date(context), membership),
        opening_threshold=report.ANSWER_THRESHOLD,
    )
    path = ef.write_text(folder / COVERAGE_MAP_NAME, html)
    covered = sum(1 for o in data["occupations"] if o["k"])
    context.log.info(f"coverage map: {len(data['occupations'])} tiles, {len(data['benchmarks'])} benchmarks")
    return MaterializeResult(
        metadata={
            "file": MetadataValue.text(f"{in_release(path)} in this run's release"),
            "n_tiles": len(data["occupations"]),
            "n_major_groups": len({o["g"] for o in data["occupations"]}),
            "n_benchmarks": len(data["benchmarks"]),
            "occupations_with_labeled_tasks": covered,
            "labeler": str(data["labeler"]),
            "indexes": ", ".join(i["name"] for i in data["indexes"]),
            "size_bytes": path.stat().st_size,
        }
    )


@asset(
    group_name=GROUP,
    kinds={"markdown"},
    op_tags=REPORT_STEP_TAGS,
    deps=[AssetKey(t) for t in [*SUMMARY_TABLES, "onet_tasks", "prompt_task_labels"]],
    description="summary.md of the release (and summary_<index>.md for each other benchmark index): the one-line "
    "answer, then the findings with their numbers and 95% CIs, generated from the tables, plus the limitations "
    "that apply (benchmarks, labeler accuracy, task ratings, hours data).",
)
@warehouse_held
def report_summary(
    context: AssetExecutionContext, warehouse: Warehouse, labeler: LabelerResource
) -> MaterializeResult:
    refuse_missing_tables(warehouse, "report_summary")
    refuse_labels_behind(warehouse, "report_summary")
    start_release_workbook(context, warehouse, labeler)
    tables, missing = warehouse.read_tables(SUMMARY_TABLES)
    membership = tables.get(MEMBERSHIP)
    counts = warehouse.benchmark_counts(tables.get("benchmarks"), membership)
    onet_tasks = (
        warehouse.onet_task_ratings()
        if warehouse.table_exists("onet_tasks")
        else None
    )
    folder = export_folder(context, warehouse)
    model = _labeler_model(labeler, warehouse)
    # prompts a failed labeling left without labels (label_failures): every figure counts them with no task
    unlabeled = dict(warehouse.undecided_prompts().iter_rows()) if warehouse.table_exists("benchmark_prompts") else {}
    # sampled texts without the LLM judge's reading (failed on, or a lost sample): the estimates' sample is short
    unjudged = dict(warehouse.judge_failed_texts(configured_sample()).iter_rows())
    # landing folders the warehouse holds no rows of (partitions never materialized, or a first refresh that failed)
    stored = set(tables["benchmarks"]["benchmark"]) if tables.get("benchmarks") is not None else set()
    not_landed = sorted(set(discover_landing().benchmarks) - stored)
    # one summary per benchmark index: summary.md for `all`, summary_<index>.md for the others
    paths, texts = {}, {}
    for index in ix.index_names(membership):
        texts[index] = report.summary_markdown(
            for_index(tables, index) | {"benchmark_counts": counts},
            onet_tasks=onet_tasks,
            labeler_model=model,
            export_date=export_date(context),
            missing_tables=missing,
            benchmark_index=index,
            membership=membership,
            benchmark_rows=tables.get("headline_estimates"),  # per-benchmark rows are index `all`'s
            unlabeled=unlabeled,
            unjudged=unjudged,
            not_landed=not_landed,
        )
        paths[index] = ef.write_text(folder / summary_name(index), texts[index])
    for name in missing:
        context.log.warning(f"summary written without table {name}")
    return MaterializeResult(
        metadata={
            "summary": MetadataValue.md(texts[ix.ALL_INDEX]),
            "file": MetadataValue.text(f"{in_release(paths[ix.ALL_INDEX])} in this run's release"),
            "index_summaries": MetadataValue.json({k: in_release(v) for k, v in paths.items()}),
            "missing_tables": ", ".join(missing) or "none",
            **headline_metadata(tables.get("headline_estimates")),
        }
    )


def _labeler_model(labeler: LabelerResource, warehouse: Warehouse) -> str:
    """The model behind the labels in use: from label_cache when it says, else the configured resource."""
    if warehouse.table_exists("label_cache") and warehouse.table_exists("prompt_task_labels"):
        used = warehouse.published_labeler_names()
        if used:
            models = warehouse.label_cache_models(used)
            if models:
                return ", ".join(str(m) for m in models)
    return labeler.model if labeler.kind != "offline" else "offline (no LLM)"


def _labeler_entries(warehouse: Warehouse) -> list[dict[str, Any]]:
    if not warehouse.table_exists("prompt_task_labels"):
        return []
    summary = warehouse.labeler_summary()
    return ex.labeler_entries(summary)


def release_arguments(context: AssetExecutionContext, warehouse: Warehouse, labeler: LabelerResource
                      ) -> dict[str, Any]:
    """rl.publish_export's arguments for this run: every exported table, the staging folder and what the
    manifest records."""
    tables = exported_tables(warehouse)
    counts = warehouse.benchmark_counts(tables.get("benchmarks"), tables.get(MEMBERSHIP))
    tables["benchmark_counts"] = counts
    label_cache_models: list[dict[str, Any]] = []
    if warehouse.table_exists("label_cache"):
        label_cache_models = warehouse.label_cache_model_counts().to_dicts()
    return {
        "tables": tables,
        "staging": export_folder(context, warehouse),
        "root": warehouse.exports_root(),
        "created_at": run_moment(context),
        "run_id": context.run.run_id,
        "benchmarks": tables.get("benchmarks"),
        "labelers": _labeler_entries(warehouse),
        "labeler_model": _labeler_model(labeler, warehouse),
        "sources": source_checksums() + index_file_checksums(),
        "extra": {"label_cache": label_cache_models,
                  "configured_labeler": {"kind": labeler.kind, "model": labeler.model}},
        "excluded": [(index, name, why) for index in ix.index_names(tables.get(MEMBERSHIP))
                     for name, why in report.index_benchmarks(counts, index)[1]],
    }


def start_release_workbook(context: AssetExecutionContext, warehouse: Warehouse, labeler: LabelerResource) -> None:
    """Have a worker start the release's workbook (~1.5 s of xlsxwriter, the exports step's longest part) now,
    while the report steps run: they come after every exported table (their priority), so its tables are the
    exports step's, which takes it when they are (resources/release.py start_release_workbook), else writes
    its own. Once per run, by the first report step, when the run makes the exports."""
    if AssetKey("exports") not in context.job_def.asset_layer.selected_asset_keys:  # the run's assets
        return
    staging = export_folder(context, warehouse)
    if ew.has_workbook_ahead(staging):
        return
    if rl.start_release_workbook(**release_arguments(context, warehouse, labeler)):
        context.log.info("workbook started ahead in a worker for the exports step")


@asset(
    group_name=GROUP,
    kinds={"parquet", "csv", "excel"},
    deps=[AssetKey(t) for t in EXPORTED_TABLES]
    + [AssetKey("prompt_task_labels"), report_figures, coverage_map, report_summary],
    description="A release `exports/<date>T<time>Z-<input hash>/`, written only when a published figure or table or the "
    "code version changed (never rewritten; exports/latest and latest.txt name the newest): every published table "
    "(the registry's EXPORTED, with the O*NET lookups; the other reference, prompt and label tables stay in the "
    "warehouse) as "
    "Parquet and CSV, one XLSX "
    "workbook, data_dictionary.md, the tidy release.csv/.parquet of every published figure with "
    "data_documentation.md, and manifest.json (sources and checksums, benchmarks and hashes, labeler and model, "
    "code version, input hash, every file's SHA-256).",
)
@warehouse_held
def exports(
    context: AssetExecutionContext, warehouse: Warehouse, labeler: LabelerResource
) -> MaterializeResult:
    # the release is made of the analysis tables, of labels in step with their prompts (run_all asks the same
    # before its analysis; a run the UI or the automation launches did not)
    refuse_missing_tables(warehouse, "exports")
    refuse_labels_behind(warehouse, "exports")
    refuse_broken_index_files(warehouse, "exports", index_assets.validate_index_files(warehouse).errors)
    release = release_arguments(context, warehouse, labeler)
    tables = release["tables"]
    interrupts.check()  # run_all was asked to stop: no release from a run cut short
    published = rl.publish_export(**release)
    folder = published.folder
    manifest = ew.read_manifest(folder) or {}
    for name in published.set_aside:
        context.log.warning(f"release folder {name} was never released (a run was stopped before pointing latest "
                            f"at it): moved to {rl.UNRELEASED_DIR}/")
    if published.new:
        ahead = published.result is not None and published.result.workbook_ahead
        changed = (manifest.get("release") or {}).get("tables_changed") or []
        context.log.info(f"new release {folder.name} ({published.changes.height} figures"
                         + (f" and {len(changed)} tables ({', '.join(changed[:8])})" if changed else "")
                         + " changed since "
                         f"{published.previous.name if published.previous else 'none'}; workbook "
                         f"{'started ahead by a report step' if ahead else 'written in this step'})")
    else:
        context.log.info(f"published figures and tables unchanged: release {folder.name} stands, nothing written")
    for name in manifest.get("missing_tables", []):
        level = "error" if name in ex.REQUIRED_TABLES else "warning"
        getattr(context.log, level)(f"table {name} is not in the warehouse: not exported")
    metadata: dict[str, Any] = {
        "export_dir": MetadataValue.path(str(folder)),
        "release": folder.name,
        "new_release": published.new,
        "figures_changed": published.changes.height,
        "release_rows": published.release.height,
        "workbook": MetadataValue.path(str(folder / ex.WORKBOOK_NAME)),
        # written by a worker from an earlier report step (start_release_workbook), not after this step's start
        "workbook_started_ahead": bool(published.result is not None and published.result.workbook_ahead),
        "data_dictionary": MetadataValue.path(str(folder / ex.DICTIONARY_NAME)),
        "manifest": MetadataValue.path(str(folder / ex.MANIFEST_NAME)),
        "n_tables": len(manifest.get("tables", [])),
        "rows": MetadataValue.json({t["table"]: t["rows"] for t in manifest.get("tables", [])}),
        "missing_tables": ", ".join(manifest.get("missing_tables", [])) or "none",
        "undocumented_columns": MetadataValue.json(manifest.get("undocumented_columns", {})),
        "code_version": str(manifest.get("code_version")),
        **headline_metadata(tables.get("headline_estimates")),
    }
    for table in ex.HEADLINE_TABLES:
        if table in tables:
            metadata |= table_preview_metadata(table, ix.only_index(ex.prepare_table(table, tables[table])))
    return MaterializeResult(metadata=metadata)


@asset(
    group_name=GROUP,
    deps=[exports],
    kinds=TABLE_KINDS,
    description="One row per release and headline quantity (value, 95% interval, index, threshold, basis, "
    "benchmarks counted), read from the release folders; also exports/headline_history.csv. The latest "
    "headline is numeric metadata, so the Dagster UI plots it over runs.",
)
def headline_history(context: AssetExecutionContext, warehouse: Warehouse) -> pl.DataFrame:
    root = warehouse.exports_root()
    frame, path = rl.write_history(root)
    latest = frame.filter((pl.col("release") == frame["release"].max()) & (pl.col("benchmark_index") == ix.ALL_INDEX)) \
        if frame.height else frame
    # six significant digits, as the headline's other metadata (export_context.headline_metadata)
    numbers = {f"{r['quantity']}_{r['threshold']}{suffix}": MetadataValue.float(float(f"{r[column]:.6g}"))
               for r in latest.iter_rows(named=True)
               for suffix, column in (("", "value"), ("_ci_low", "ci_low"), ("_ci_high", "ci_high"))
               if r[column] is not None}
    context.add_output_metadata({
        "csv": MetadataValue.path(str(path)),
        "n_releases": frame["release"].n_unique() if frame.height else 0,
        "latest_release": str(latest["release"][0]) if latest.height else "none",
        **numbers,
    })
    return frame


# --- checks ---------------------------------------------------------------------------------------


def _latest_path(context: AssetCheckExecutionContext, asset_name: str, key: str) -> Path | None:
    value = (latest_metadata(context, asset_name) or {}).get(key)
    return Path(value.value) if value is not None else None


@asset_check(
    asset=exports,
    name="exports_verified",
    blocking=False,
    description="Every file matches its manifest checksum, Parquet row counts match, every column is "
    "documented and every required table was exported.",
)
def exports_verified(context: AssetCheckExecutionContext) -> AssetCheckResult:
    folder = _latest_path(context, "exports", "export_dir")
    if folder is None:
        return AssetCheckResult(
            passed=False, metadata={"problem": "exports has no materialization with a folder"}
        )
    problems = ew.verify_export(folder)
    manifest = ew.read_manifest(folder) or {}
    optional_missing = [t for t in manifest.get("missing_tables", []) if t not in ex.REQUIRED_TABLES]
    return AssetCheckResult(
        passed=not problems,
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "export_dir": MetadataValue.path(str(folder)),
            "problems": "\n".join(problems) or "none",
            "optional_tables_missing": ", ".join(optional_missing) or "none",
            "n_files": len(manifest.get("files", [])),
        },
    )


@asset_check(
    asset=coverage_map,
    name="coverage_map_self_contained",
    blocking=False,
    description="The map has one tile per occupation of occupation_coverage and references no "
    "external resource (no `src`/`href` to a URL, no `<link>`, no `@import`).",
)
def coverage_map_self_contained(
    context: AssetCheckExecutionContext, warehouse: Warehouse
) -> AssetCheckResult:
    # this run's map while its staging folder stands (the check runs in the map's step), else the release's
    root = warehouse.exports_root()
    path = rl.staging_path(root, staging_key(context)) / COVERAGE_MAP_NAME
    if not path.is_file() and (latest := rl.latest_release(root)) is not None:
        path = latest / COVERAGE_MAP_NAME
    if not path.is_file():
        return AssetCheckResult(passed=False, metadata={"problem": f"no coverage map file ({path})"})
    tiles, external = cmap.map_self_containment(read_text(path))
    expected = warehouse.all_index_occupation_count()
    return AssetCheckResult(
        passed=not external and tiles == expected,
        metadata={"tiles": tiles, "occupations": int(expected), "external_references": external},
    )
