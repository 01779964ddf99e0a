"""Exports (group "exports"): the policy-report folder `<warehouse dir>/exports/<YYYY-MM-DD>/`.

- `report_figures`: the report's figures as PNG and SVG in `figures/`, each shown in the asset's metadata.
- `coverage_map`: `coverage_map.html`, the self-contained browsable map of occupations.
- `report_summary`: `summary.md`, findings and limitations generated from the tables.
- `exports`: every headline and analysis table as Parquet + CSV, one XLSX workbook, `data_dictionary.md` and
  `manifest.json` (written last, so it lists the checksums of every file above too).

The folder's date is the run tag `benchmap/export_date` when set, else the run's creation date (UTC), so all
four assets of one run write into the same folder. `figure_metadata` and `table_preview_metadata` turn a
figure or table into Dagster metadata and may be reused by any asset.
"""

import datetime as dt
import re
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
from matplotlib.figure import Figure

from models import coverage_map as cmap
from models import estimates as es
from models import exports as ex
from models import figures as fg
from models import indexes as ix
from models import report
from pipelines import export_files as ef
from pipelines import export_writer as ew
from pipelines.coverage_map_queries import ESTIMATES_RELATION, build_coverage_map_from_warehouse
from pipelines.readers import read_text
from pipelines.resources import LabelerResource, Warehouse
from pipelines.sources import source_checksums

GROUP = "exports"
EXPORT_DATE_TAG = "benchmap/export_date"
COVERAGE_MAP_NAME = "coverage_map.html"
SUMMARY_NAME = "summary.md"
FIGURES_DIR = "figures"

FIGURE_TABLES = sorted({t for spec in fg.FIGURES for t in spec.tables})
MEMBERSHIP = "benchmark_index_membership"
SUMMARY_TABLES = [*ex.REQUIRED_TABLES, "benchmarks", MEMBERSHIP, "headline_estimates", "estimate_split_check"]
MAP_TABLES = ["occupation_coverage", "task_coverage", "prompt_task_labels", "benchmark_prompts", "onet_tasks",
              MEMBERSHIP, "headline_estimates"]


# --- reusable metadata helpers --------------------------------------------------------------------


def figure_metadata(
    name: str, fig: Figure, directory: str | Path | None = None, *, title: str | None = None, dpi: int = 80
) -> dict[str, MetadataValue]:
    """Metadata showing `fig` in the Dagster UI: `<name>` = Markdown with the PNG inlined (base64); with
    `directory`, the figure is also saved there as PNG and SVG, and `<name>_png` / `<name>_svg` point to
    the files."""
    heading = f"**{title}**\n\n" if title else ""
    metadata = {name: MetadataValue.md(heading + fg.figure_markdown(fig, alt=title or name, dpi=dpi))}
    if directory is not None:
        paths = ew.save_figure(fig, directory, name)
        metadata[f"{name}_png"] = MetadataValue.path(str(paths["png"]))
        metadata[f"{name}_svg"] = MetadataValue.path(str(paths["svg"]))
    return metadata


def table_preview_metadata(table: str, frame: pl.DataFrame, max_rows: int = 25) -> dict[str, MetadataValue]:
    """`<table>_preview`: a Markdown preview of the table for the Dagster UI."""
    return {f"{table}_preview": MetadataValue.md(report.table_preview(table, frame, max_rows))}


# --- where the export goes ------------------------------------------------------------------------


def export_date(context: AssetExecutionContext | AssetCheckExecutionContext) -> str:
    """The run tag `benchmap/export_date` (YYYY-MM-DD), else the run's creation date in UTC, else today."""
    tag = context.run.tags.get(EXPORT_DATE_TAG) if context.run is not None else None
    if tag:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", tag):
            raise ValueError(f"run tag {EXPORT_DATE_TAG} must be YYYY-MM-DD, got {tag!r}")
        return tag
    record = context.instance.get_run_record_by_id(context.run_id)
    created = record.create_timestamp if record is not None else None
    moment = created.astimezone(dt.UTC) if created is not None else dt.datetime.now(dt.UTC)
    return moment.date().isoformat()


def export_folder(context: AssetExecutionContext, warehouse: Warehouse) -> Path:
    return ew.make_export_directory(warehouse.path, export_date(context))


def _read_tables(warehouse: Warehouse, names: list[str]) -> tuple[dict[str, pl.DataFrame], list[str]]:
    """The tables of `names` the warehouse has, and the names it lacks."""
    tables, missing = {}, []
    for name in names:
        if warehouse.table_exists(name):
            tables[name] = warehouse.read_table(name)
        else:
            missing.append(name)
    return tables, missing


# computed over every landed benchmark only (not per index)
_ALL_ONLY_TABLES = ("coverage_sensitivity", "occupation_model_scores")


def _for_index(tables: dict[str, pl.DataFrame], index: str = ix.ALL_INDEX) -> dict[str, pl.DataFrame]:
    """The rows of one benchmark index of every per-index table (others unchanged): figures and the summary
    describe one index at a time."""
    out = {name: frame if name == MEMBERSHIP else ix.only_index(frame, index) for name, frame in tables.items()}
    if index != ix.ALL_INDEX:  # tables not computed per index describe `all`: left out, never misattributed
        out = {name: frame for name, frame in out.items() if name not in _ALL_ONLY_TABLES}
    wanted = ix.members(tables.get(MEMBERSHIP), index)
    if wanted is not None and "benchmarks" in out:  # "benchmarks included" lists the index's members
        out["benchmarks"] = out["benchmarks"].filter(pl.col("benchmark").is_in(wanted))
    return out


def _membership(warehouse: Warehouse) -> pl.DataFrame | None:
    return warehouse.read_table(MEMBERSHIP) if warehouse.table_exists(MEMBERSHIP) else None


def summary_name(index: str) -> str:
    """summary.md for index `all`, summary_<index>.md for the others."""
    return SUMMARY_NAME if index == ix.ALL_INDEX else f"summary_{index}.md"


def _published_headline(warehouse: Warehouse) -> str | None:
    """The published headline estimate as sentences (headline_estimates, issue 16), or None."""
    if not warehouse.table_exists("headline_estimates"):
        return None
    from models.estimates import published_sentences

    return " ".join(published_sentences(warehouse.read_table("headline_estimates"))) or None


def _occupation_titles(warehouse: Warehouse) -> pl.DataFrame | None:
    if warehouse.table_exists("onet_occupations"):
        return warehouse.query("select onet_soc_code, title from onet_occupations")
    return None


# --- assets ---------------------------------------------------------------------------------------


@asset(
    group_name=GROUP,
    deps=[AssetKey(t) for t in [*FIGURE_TABLES, "prompt_task_labels"]],
    description="The report's figures (PNG and SVG in exports/<date>/figures/), each shown in this asset's "
    "metadata: adjusted coverage vs wage bill and by importance quintile (exposed vs not, 95% CIs), covered "
    "occupations per major group, work hours by coverage level, labeler validation, model-score heatmap.",
)
def report_figures(context: AssetExecutionContext, warehouse: Warehouse) -> MaterializeResult:
    tables, missing = _read_tables(warehouse, FIGURE_TABLES)
    tables = _for_index(tables)  # the figures show index `all`
    titles = _occupation_titles(warehouse)
    if titles is not None:
        tables["occupations"] = titles
    directory = export_folder(context, warehouse) / FIGURES_DIR
    metadata: dict[str, Any] = {"figures_dir": MetadataValue.path(str(directory))}
    drawn = fg.render_figures(tables)
    titles_by_name = {spec.name: spec.title for spec in fg.FIGURES}
    for name, fig in drawn.items():
        metadata |= figure_metadata(name, fig, directory, title=titles_by_name[name])
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
    deps=[AssetKey(t) for t in [*MAP_TABLES, ESTIMATES_RELATION]],  # + the tiles' estimates (issue 25)
    description="exports/<date>/coverage_map.html: a self-contained page (no network) with every occupation "
    "as a tile in its SOC major group, coloured by its estimated probability of being covered "
    "(occupation_estimates: likely covered / unsure / likely not) for the chosen index and threshold; "
    "toggles for the threshold and each benchmark (a hand-picked set shows the labels as counted); hover "
    "for expected prompts, the labels as counted, tasks, benchmarks and example prompts.",
)
def coverage_map(context: AssetExecutionContext, warehouse: Warehouse) -> MaterializeResult:
    occupations = _all_occupations(warehouse, "onet_soc_code, title, n_tasks")
    labeler_rows = warehouse.query("select distinct labeler from task_coverage where labeler is not null")
    labeler = labeler_rows["labeler"][0] if labeler_rows.height else None
    folder = export_folder(context, warehouse)
    # aggregated in DuckDB: the labels and prompt texts are never loaded whole
    html, data = build_coverage_map_from_warehouse(
        warehouse.path,
        occupations,
        labeler=labeler,
        footer=f"benchmap export {folder.name}; labeler {labeler or 'n/a'}. Data: O*NET 29.2 tasks, "
        "benchmark "
        "prompts labeled with O*NET tasks. Self-contained page: no network access.",
        membership=_membership(warehouse),
        headline=_published_headline(warehouse),
    )
    path = ef.write_text(folder / COVERAGE_MAP_NAME, html)
    covered = sum(1 for o in data["occupations"] if o["k"])
    context.log.info(f"coverage map: {len(data['occupations'])} tiles, {len(data['benchmarks'])} benchmarks")
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(str(path)),
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
    deps=[AssetKey(t) for t in [*SUMMARY_TABLES, "onet_tasks", "prompt_task_labels"]],
    description="exports/<date>/summary.md: the headline findings as sentences with their numbers and 95% "
    "CIs, generated from the tables, plus the limitations that apply (benchmarks, labeler accuracy, task "
    "ratings).",
)
def report_summary(
    context: AssetExecutionContext, warehouse: Warehouse, labeler: LabelerResource
) -> MaterializeResult:
    tables, missing = _read_tables(warehouse, SUMMARY_TABLES)
    membership = tables.get(MEMBERSHIP)
    onet_tasks = (
        warehouse.query("select task_id, has_ratings from onet_tasks")
        if warehouse.table_exists("onet_tasks")
        else None
    )
    folder = export_folder(context, warehouse)
    model = _labeler_model(labeler, warehouse)
    # one summary per benchmark index: summary.md for `all`, summary_<index>.md for the others
    paths, texts = {}, {}
    for index in ix.index_names(membership):
        texts[index] = report.summary_markdown(
            _for_index(tables, index),
            onet_tasks=onet_tasks,
            labeler_model=model,
            export_date=folder.name,
            missing_tables=missing,
            benchmark_index=index,
            membership=membership,
        )
        paths[index] = ef.write_text(folder / summary_name(index), texts[index])
    for name in missing:
        context.log.warning(f"summary written without table {name}")
    return MaterializeResult(
        metadata={
            "summary": MetadataValue.md(texts[ix.ALL_INDEX]),
            "path": MetadataValue.path(str(paths[ix.ALL_INDEX])),
            "index_summaries": MetadataValue.json({k: str(v) for k, v in paths.items()}),
            "missing_tables": ", ".join(missing) or "none",
        }
    )


def _labeler_model(labeler: LabelerResource, warehouse: Warehouse) -> str:
    """The model behind the labels in use: from label_cache when it says, else the configured resource."""
    if warehouse.table_exists("label_cache") and warehouse.table_exists("prompt_task_labels"):
        used = warehouse.query("select distinct labeler from prompt_task_labels")["labeler"].to_list()
        if used:
            models = warehouse.query(
                "select distinct model from label_cache where labeler in (select unnest(?::varchar[])) "
                "order by model",
                [used],
            )["model"].to_list()
            if models:
                return ", ".join(str(m) for m in models)
    return labeler.model if labeler.kind != "offline" else "offline (no LLM)"


def _labeler_entries(warehouse: Warehouse) -> list[dict[str, Any]]:
    if not warehouse.table_exists("prompt_task_labels"):
        return []
    summary = warehouse.query(
        "select labeler, labeler_version, count(*) as n_labels, "
        "count(distinct (benchmark, prompt_id)) as n_prompts, count(distinct benchmark) as n_benchmarks "
        "from prompt_task_labels group by labeler, labeler_version order by labeler, labeler_version"
    )
    return ex.labeler_entries(summary)


@asset(
    group_name=GROUP,
    deps=[AssetKey(t) for t in ex.EXPORT_TABLES]
    + [AssetKey(t) for t in es.EXPORT_TABLES]
    + [AssetKey("prompt_task_labels"), report_figures, coverage_map, report_summary],
    description="exports/<date>/: every headline and analysis table as Parquet and CSV, one XLSX workbook (a "
    "sheet per table), data_dictionary.md (every column: meaning, unit, source) and manifest.json (sources "
    "and "
    "checksums, benchmarks and hashes, labeler and model, code version, run id, every file's SHA-256).",
)
def exports(
    context: AssetExecutionContext, warehouse: Warehouse, labeler: LabelerResource
) -> MaterializeResult:
    tables, missing = _read_tables(warehouse, list(ex.EXPORT_TABLES))
    tables |= _read_tables(warehouse, list(es.EXPORT_TABLES))[0]  # headline estimates, when present
    folder = export_folder(context, warehouse)
    label_cache_models: list[dict[str, Any]] = []
    if warehouse.table_exists("label_cache"):
        label_cache_models = warehouse.query(
            "select labeler, model, template_version, onet_version, count(*) as n_prompts from label_cache "
            "group by all order by all"
        ).to_dicts()
    result = ew.write_exports(
        tables,
        folder,
        run_id=context.run_id,
        benchmarks=tables.get("benchmarks"),
        labelers=_labeler_entries(warehouse),
        labeler_model=_labeler_model(labeler, warehouse),
        sources=source_checksums(),
        extra={
            "label_cache": label_cache_models,
            "configured_labeler": {"kind": labeler.kind, "model": labeler.model},
        },
    )
    for name in result.missing_tables:
        level = "error" if name in ex.REQUIRED_TABLES else "warning"
        getattr(context.log, level)(f"table {name} is not in the warehouse: not exported")
    metadata: dict[str, Any] = {
        "export_dir": MetadataValue.path(str(folder)),
        "workbook": MetadataValue.path(str(result.workbook)),
        "data_dictionary": MetadataValue.path(str(result.dictionary)),
        "manifest": MetadataValue.path(str(result.manifest_path)),
        "n_tables": len(result.tables),
        "rows": MetadataValue.json({f.table: f.rows for f in result.tables}),
        "missing_tables": ", ".join(result.missing_tables) or "none",
        "undocumented_columns": MetadataValue.json(result.undocumented),
        "code_version": result.manifest["code_version"],
    }
    for table in ex.HEADLINE_TABLES:
        if table in tables:
            metadata |= table_preview_metadata(table, ix.only_index(ex.prepare_table(table, tables[table])))
    return MaterializeResult(metadata=metadata)


# --- checks ---------------------------------------------------------------------------------------


def _latest_path(context: AssetCheckExecutionContext, asset_name: str, key: str) -> Path | None:
    event = context.instance.get_latest_materialization_event(AssetKey(asset_name))
    if event is None or event.asset_materialization is None:
        return None
    value = event.asset_materialization.metadata.get(key)
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


def _all_occupations(warehouse: Warehouse, columns: str) -> pl.DataFrame:
    """occupation_coverage rows of index `all` (every row when the table has no benchmark_index column)."""
    present = warehouse.query("select * from occupation_coverage limit 0").columns
    where = " where benchmark_index = 'all'" if "benchmark_index" in present else ""
    return warehouse.query(f"select {columns} from occupation_coverage{where}")


@asset_check(
    asset=coverage_map,
    name="coverage_map_self_contained",
    blocking=False,
    description="The map has one tile per occupation of occupation_coverage and references no "
    "external resource (no src/href to a URL, no <link>, no @import).",
)
def coverage_map_self_contained(
    context: AssetCheckExecutionContext, warehouse: Warehouse
) -> AssetCheckResult:
    path = _latest_path(context, "coverage_map", "path")
    if path is None or not path.is_file():
        return AssetCheckResult(passed=False, metadata={"problem": f"no coverage map file ({path})"})
    tiles, external = cmap.map_self_containment(read_text(path))
    expected = _all_occupations(warehouse, "count(*) as n")["n"][0]
    return AssetCheckResult(
        passed=not external and tiles == expected,
        metadata={"tiles": tiles, "occupations": int(expected), "external_references": external},
    )


ASSETS: list = [report_figures, coverage_map, report_summary, exports]
CHECKS: list = [exports_verified, coverage_map_self_contained]
