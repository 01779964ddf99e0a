"""A figure drawn from unchanged tables is not drawn again (issue 29 item 3): the figures are byte-stable given
their tables and code (models.figures.figure_outputs), so their outputs (files and preview) are kept beside the
warehouse under that key (resources/estimate_cache.py figure_key) and a refresh whose tables did not change, e.g.
the judged checks' figures after a benchmark without judged texts lands, reads them back.

A report figure whose tables are all computed early in the analysis run (the model-score heatmap: one table, an
early step) is started in a worker by an early step (`draw_ahead`; occupation_score_power, which reads the table
back) while the run goes on, instead of by `report_figures` at the run's end: report_figures takes the started drawing when its own key is the same (the
same tables, as read back, and figure code: the same bytes), else draws as before. The figures of one table
each (hours by coverage, occupations by major group, the two of the adjusted probabilities) are started by the
step that makes their table, from the frame it returns (`table_figures_ahead`: a table reads back as the frame
written, so the keys agree; were they to differ, report_figures would draw its own)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import polars as pl

from assets import ahead
from resources.dagster_resources import Warehouse
from resources.worker_pool import WorkerPool, shared_pool

KEPT = "figure_"  # + the figure's name: one kept result per figure (and its drawing started ahead, assets/ahead.py)


def figure_future(warehouse: Warehouse, pool: WorkerPool, figure: str, frames: Sequence[pl.DataFrame],
                  fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    """The future of fn(*args, **kwargs) (the figure `figure`'s (files, preview) drawn from `frames`; `kwargs`
    go to pool.submit, its `name=` too): the outputs kept under the frames' key when there are, else the drawing
    started ahead under that very key (`draw_ahead`), else submitted to `pool` and kept once drawn."""
    key = warehouse.figure_key(figure, list(frames))
    kept = warehouse.cached_result(KEPT + figure, key) if key is not None else None
    started = ahead.claim(KEPT + figure, key)  # one started from other tables is dropped
    if started is not None:
        return started
    if isinstance(kept, tuple) and len(kept) == 2:
        done: Future = Future()
        done.set_result(kept)
        return done
    return _submit(warehouse, pool, figure, key, fn, *args, **kwargs)


def _submit(warehouse: Warehouse, pool: WorkerPool, figure: str, key: str | None, fn: Callable[..., Any],
            *args: Any, **kwargs: Any) -> Future:
    future = pool.submit(fn, *args, **kwargs)  # `background=` among kwargs: a drawing started ahead
    if key is not None:
        def keep(drawn: Future) -> None:
            if not drawn.cancelled() and drawn.exception() is None:
                warehouse.keep_result(KEPT + figure, key, drawn.result())

        future.add_done_callback(keep)
    return future


def report_figure_inputs(figure: str, tables: Mapping[str, pl.DataFrame]) -> dict[str, pl.DataFrame] | None:
    """The tables report_figures draws FIGURES' `figure` from (its tables, then its optional ones present), None
    when one of its tables is missing."""
    from models import figures as fg

    spec = next(s for s in fg.FIGURES if s.name == figure)
    if not all(t in tables for t in spec.tables):
        return None
    return {t: tables[t] for t in (*spec.tables, *spec.optional_tables) if t in tables}


def report_figure_future(warehouse: Warehouse, pool: WorkerPool, figure: str,
                         inputs: dict[str, pl.DataFrame]) -> Future:
    """figure_future of report_figures' figure `figure` drawn from `inputs` (report_figure_inputs)."""
    from models import figures as fg

    return figure_future(warehouse, pool, figure, list(inputs.values()), fg.render_outputs, figure, inputs,
                         preview_dpi=fg.PREVIEW_DPI, name=f"figure {figure}")


def draw_ahead(warehouse: Warehouse, figure: str, tables: Mapping[str, pl.DataFrame],
               pool: WorkerPool | None = None) -> bool:
    """Start drawing report_figures' figure `figure` from `tables` (as report_figures will read them from the
    warehouse) in a worker now; report_figures takes it when its key is the same. Nothing when it is kept
    already or a table is missing; True when a drawing was started."""
    inputs = report_figure_inputs(figure, tables)
    if inputs is None:
        return False
    key = warehouse.figure_key(figure, list(inputs.values()))
    if key is None or isinstance(warehouse.cached_result(KEPT + figure, key), tuple):
        return False
    from models import figures as fg

    pool = pool or shared_pool()
    future = _submit(warehouse, pool, figure, key, fg.render_outputs, figure, inputs,
                     preview_dpi=fg.PREVIEW_DPI, name=f"figure {figure} (ahead)", background=True)
    ahead.register(KEPT + figure, key, future, pool)
    return True


def heatmap_ahead(warehouse: Warehouse, scores: pl.DataFrame) -> bool:
    """The report's model-score heatmap started from occupation_model_scores (`scores`, as read back from the
    warehouse) and the occupation titles, the tables report_figures reads (draw_ahead)."""
    from assets.export_context import for_index, occupation_titles_or_none

    tables = for_index({"occupation_model_scores": scores})
    titles = occupation_titles_or_none(warehouse)
    if titles is not None:
        tables["occupations"] = titles
    return draw_ahead(warehouse, "model_score_heatmap", tables)


def table_figures_ahead(warehouse: Warehouse, table: str, frame: pl.DataFrame) -> list[str]:
    """Start every report figure drawn from `table` alone (no optional table) from `frame`, the step's own output
    as report_figures will read it back (draw_ahead); the figures started."""
    from assets.export_context import for_index
    from models import figures as fg

    names = [s.name for s in fg.FIGURES if s.tables == (table,) and not s.optional_tables]
    if not names:
        return []
    tables = for_index({table: frame})
    return [name for name in names if draw_ahead(warehouse, name, tables)]
