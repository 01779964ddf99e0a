"""What the export assets (assets/exports.py) share: where a run's export goes (its staging folder and release
date), the tables it reads, and the Dagster metadata that shows a figure or table in the UI (reusable by any
asset: assets/estimate_figures.py draws the headline's figures into the same folder). Kept apart so
exports.py reads as its assets and checks.
"""

import datetime as dt
import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import polars as pl
from dagster import AssetCheckExecutionContext, AssetExecutionContext, MetadataValue

from models import exports as ex
from models import figures as fg
from models import indexes as ix
from models import report
from resources import export_writer as ew
from resources import release as rl
from resources.dagster_resources import Warehouse

if TYPE_CHECKING:  # matplotlib only where a figure is drawn: not in every Definitions build (issue 29)
    from matplotlib.figure import Figure

    from resources.export_stream import StreamedTable

R = TypeVar("R")
EXPORT_DATE_TAG = "benchmap/export_date"
SUMMARY_NAME = "summary.md"
FIGURES_DIR = "figures"
MEMBERSHIP = "benchmark_index_membership"
# Every table the export folder carries when the warehouse has it: the one registry (models/exports/tables.py
# EXPORTED); tests/test_table_registry.py holds it to the assets and the data dictionary
EXPORTED_TABLES = list(ex.EXPORT_TABLES)


# --- reusable metadata helpers --------------------------------------------------------------------


def figure_metadata(
    name: str, fig: "Figure", directory: str | Path | None = None, *, title: str | None = None, dpi: int = fg.PREVIEW_DPI
) -> dict[str, MetadataValue]:
    """Metadata showing `fig` in the Dagster UI: `<name>` = Markdown with the PNG inlined (base64); with
    `directory`, the figure is also saved there as PNG and SVG, and `<name>_png` / `<name>_svg` point to
    the files."""
    heading = f"**{title}**\n\n" if title else ""
    if directory is None:
        return {name: MetadataValue.md(heading + fg.figure_markdown(fig, alt=title or name, dpi=dpi))}
    files, preview = fg.figure_outputs(fig, preview_dpi=dpi)  # one layout for the files and the preview
    return rendered_figure_metadata(name, files, preview, directory, title=title)


def rendered_figure_metadata(name: str, files: dict[str, bytes], preview: bytes | None, directory: str | Path,
                             *, title: str | None = None) -> dict[str, MetadataValue]:
    """`figure_metadata` of a figure already rendered (`models.figures.figure_outputs`: files and preview):
    the files saved into `directory`."""
    heading = f"**{title}**\n\n" if title else ""
    paths = ew.save_figures({name: files}, directory)[name]
    return {
        name: MetadataValue.md(heading + fg.png_markdown(preview or b"", alt=title or name)),
        f"{name}_png": MetadataValue.text(in_release(paths["png"])),
        f"{name}_svg": MetadataValue.text(in_release(paths["svg"])),
    }


def in_release(path: Path) -> str:
    """Where a file written into this run's staging folder sits in the release, e.g. `figures/x.png` (an audit:
    the UI linked to exports/.staging/<run>/..., which the exports step renames into the release or drops)."""
    parts = path.parts
    if rl.STAGING_DIR in parts:
        return "/".join(parts[parts.index(rl.STAGING_DIR) + 2:])
    return str(path)


def table_preview_metadata(table: str, frame: pl.DataFrame, max_rows: int = 25) -> dict[str, MetadataValue]:
    """`<table>_preview`: a Markdown preview of the table for the Dagster UI."""
    return {f"{table}_preview": MetadataValue.md(report.table_preview(table, frame, max_rows))}


def headline_metadata(estimates: pl.DataFrame | None, index: str = ix.ALL_INDEX) -> dict[str, MetadataValue]:
    """The published headline of `index` as numeric metadata (`<quantity>_<threshold>`, `_ci_low`,
    `_ci_high`): the Dagster UI plots each over the asset's materializations. Six significant digits, so the UI
    shows 0.106707 where the table holds 0.10670737122482057."""
    if estimates is None or "published" not in estimates.columns:
        return {}
    return {f"headline_{k}": MetadataValue.float(float(f"{v:.6g}"))
            for k, v in report.answer_figures(estimates, index).items()}


# --- where the export goes ------------------------------------------------------------------------


def latest_metadata(context: AssetExecutionContext | AssetCheckExecutionContext, asset: str
                    ) -> dict[str, Any] | None:
    """The metadata of `asset`'s latest materialization (None: it has none)."""
    from dagster import AssetKey

    event = context.instance.get_latest_materialization_event(AssetKey(asset))
    materialization = event.asset_materialization if event is not None else None
    return dict(materialization.metadata) if materialization is not None else None


def run_moment(context: AssetExecutionContext | AssetCheckExecutionContext) -> dt.datetime:
    """When the run was created (UTC); the run tag `benchmap/export_date` (YYYY-MM-DD) replaces its date."""
    run = context.run
    record = context.instance.get_run_record_by_id(run.run_id)
    created = record.create_timestamp if record is not None else None
    moment = created.astimezone(dt.UTC) if created is not None else dt.datetime.now(dt.UTC)
    tag = run.tags.get(EXPORT_DATE_TAG)
    if tag:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", tag):
            raise ValueError(f"run tag {EXPORT_DATE_TAG} must be YYYY-MM-DD, got {tag!r}")
        day = dt.date.fromisoformat(tag)
        moment = moment.replace(year=day.year, month=day.month, day=day.day)
    return moment


def export_date(context: AssetExecutionContext | AssetCheckExecutionContext) -> str:
    """The run tag `benchmap/export_date` (YYYY-MM-DD), else the run's creation date in UTC."""
    return run_moment(context).date().isoformat()


def staging_key(context: AssetExecutionContext | AssetCheckExecutionContext) -> str:
    """The staging folder's name: the root run of a re-execution, so retried steps write beside the others."""
    run = context.run
    return str(run.root_run_id or run.run_id)


def export_folder(context: AssetExecutionContext, warehouse: Warehouse) -> Path:
    """This run's staging folder (exports/.staging/<run>/): published as a release by the `exports` asset."""
    return rl.staging_folder(warehouse.exports_root(), staging_key(context))


def exported_tables(warehouse: Warehouse) -> dict[str, "pl.DataFrame | StreamedTable"]:
    """Every exported table the warehouse has: read whole, but the big ones (models.exports.STREAMED_TABLES),
    which the export writer writes from the warehouse in slices (issue 29 item 5: 7.3M rows at 50x)."""
    streamed = {name: table for name in ex.STREAMED_TABLES if name in EXPORTED_TABLES
                if (table := warehouse.streamed_export_table(name)) is not None}
    tables, _ = warehouse.read_tables([name for name in EXPORTED_TABLES if name not in streamed])
    return {name: streamed.get(name, tables.get(name)) for name in EXPORTED_TABLES
            if name in streamed or name in tables}


# computed over every landed benchmark only (not per index), which another index's summary names and leaves out
# (the split check and the label quality are also every benchmark's: kept, and labelled as such)
_ALL_ONLY_TABLES = ("coverage_sensitivity", "occupation_model_scores", "occupation_model_scores_estimated",
                    "coverage_regressions_mi")  # the imputed label sets are pooled over every landed benchmark


def for_index(tables: dict[str, pl.DataFrame], index: str = ix.ALL_INDEX) -> dict[str, pl.DataFrame]:
    """The rows of one benchmark index of every per-index table (others unchanged): figures and the summary
    describe one index at a time."""
    out = {name: frame if name == MEMBERSHIP else ix.only_index(frame, index) for name, frame in tables.items()}
    if index != ix.ALL_INDEX:  # tables not computed per index describe `all`: left out, never misattributed
        out = {name: frame for name, frame in out.items() if name not in _ALL_ONLY_TABLES}
    wanted = ix.members(tables.get(MEMBERSHIP), index)
    if wanted is not None and "benchmarks" in out:  # "benchmarks included" lists the index's members
        out["benchmarks"] = out["benchmarks"].filter(pl.col("benchmark").is_in(wanted))
    return out


def read_membership(warehouse: Warehouse) -> pl.DataFrame | None:
    return warehouse.read_table(MEMBERSHIP) if warehouse.table_exists(MEMBERSHIP) else None


def summary_name(index: str) -> str:
    """summary.md for index `all`, summary_<index>.md for the others."""
    return SUMMARY_NAME if index == ix.ALL_INDEX else f"summary_{index}.md"


def published_headlines(warehouse: Warehouse, released: str | None = None,
                        membership: pl.DataFrame | None = None) -> dict[str, dict[str, str]]:
    """The map header per benchmark index and threshold (str): the published answer of that index at that
    threshold, then what the index leaves out and why (report.headlines_by_threshold); indexes without a
    published answer are absent."""
    return {index: {str(t): text for t, text in report.headlines_by_threshold(answer).items()}
            for index, answer in warehouse.answers(ix.index_names(membership), released).items()}


def occupation_titles_or_none(warehouse: Warehouse) -> pl.DataFrame | None:
    if warehouse.table_exists("onet_occupations"):
        return warehouse.occupation_titles()
    return None


def warehouse_held(compute: Callable[..., R]) -> Callable[..., R]:
    """Run an asset's body with the warehouse held open (`Warehouse.held`): its dozens of reads
    (table_exists + read_table per table, the answer's and the map's queries) reuse one DuckDB instance, about
    1 ms each, instead of opening the file each time (about 27 CPU-ms each: 4-5 CPU-s of the export steps).
    Other processes wait for the file meanwhile: a few seconds. Dagster passes resources by keyword."""

    @functools.wraps(compute)
    def held(context: AssetExecutionContext, **resources: Any) -> R:
        with resources["warehouse"].held():
            return compute(context, **resources)

    return held
