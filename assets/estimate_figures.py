"""The headline step's figures (assets/estimates.py): drawn by a worker while the step writes the tables before
theirs, or already drawn by the worker that ran their judged check (assets/estimates_split.py); saved into this
run's export folder (exports/<date>/figures/) and shown in the step's metadata. A figure never fails the step
(its tables are written), but one not drawn is not a success either: its asset's metadata says why
(`figure_not_drawn`) and the ERROR check `estimate_figures_drawn` fails, so run_all exits 6 and its next plain run
runs the step again until the figure is drawn."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import polars as pl
from dagster import AssetExecutionContext, MetadataValue

from assets.figure_reuse import figure_future
from models.figures import PREVIEW_DPI, draw_outputs
from resources.dagster_resources import Warehouse
from resources.worker_pool import shared_pool

FIGURE_NOT_DRAWN = "figure_not_drawn"  # metadata key: why the asset's figure was not drawn
# the headline step's figures, each shown on the asset of its table (named like it)
ESTIMATE_FIGURES = ("labeler_reliability", "occupation_probability_calibration", "unit_coverage_simulation_check")


def figure_later(context: AssetExecutionContext, warehouse: Warehouse, name: str, draw: Callable[..., Any],
                 table: pl.DataFrame, title: str, drawn: Any = None) -> Callable[[], dict]:
    """Start drawing a figure of `table` in the worker pool (resources/worker_pool.py) while the step goes on,
    unless `drawn` is it already (`draw_outputs`'s result, or the error that stopped it, as text, or the Future of
    a worker drawing it); the function
    returned gives its metadata, the files saved into this run's export folder."""
    pool = shared_pool()
    later = drawn if isinstance(drawn, Future) else None if drawn is not None else figure_future(
        # read back when drawn before from the same table
        warehouse, pool, name, [table], draw_outputs, draw, (table,), preview_dpi=PREVIEW_DPI, name=f"figure {name}")

    def metadata() -> dict:
        try:
            from assets.export_context import FIGURES_DIR, export_folder, rendered_figure_metadata

            outputs = drawn if later is None else pool.gather([later])[0]
            if isinstance(outputs, str):
                raise RuntimeError(outputs)
            files, preview = outputs
            return rendered_figure_metadata(name, files, preview, export_folder(context, warehouse) / FIGURES_DIR,
                                            title=title)
        except Exception as error:  # noqa: BLE001
            why = _brief(f"{type(error).__name__}: {error}")
            context.log.error(f"figure {name} not drawn: {why} (check estimate_figures_drawn fails; the next run "
                              "draws it again)")
            return {FIGURE_NOT_DRAWN: MetadataValue.text(why)}

    return metadata


def _brief(text: str, limit: int = 500) -> str:
    """At most `limit` characters of an error, keeping its first line and its last: a worker's error carries
    the whole traceback, whose last line is the cause (cut at 500 characters, a long traceback lost it)."""
    if len(text) <= limit:
        return text
    lines = [line for line in text.splitlines() if line.strip()]
    head, tail = lines[0], lines[-1].strip()
    return f"{head[:limit // 2]} ... {tail[-(limit // 2 - 5):]}"


def figures_not_drawn(metadata_by_asset: dict[str, dict[str, Any] | None]) -> dict[str, str]:
    """asset -> why its figure is missing from its latest materialization's metadata (`figure_later`'s)."""
    missing = {}
    for asset in ESTIMATE_FIGURES:
        metadata = metadata_by_asset.get(asset)
        if metadata is None:
            missing[asset] = "never materialized"
        elif FIGURE_NOT_DRAWN in metadata:
            missing[asset] = str(getattr(metadata[FIGURE_NOT_DRAWN], "value", metadata[FIGURE_NOT_DRAWN]))
        elif asset not in metadata:
            missing[asset] = f"no figure {asset} in its metadata"
    return missing
