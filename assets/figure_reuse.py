"""A figure drawn from unchanged tables is not drawn again (issue 29 item 3): the figures are byte-stable given
their tables and code (models.figures.figure_outputs), so their outputs (files and preview) are kept beside the
warehouse under that key (resources/estimate_cache.py figure_key) and a refresh whose tables did not change, e.g.
the judged checks' figures after a benchmark without judged texts lands, reads them back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import polars as pl

from resources.dagster_resources import Warehouse
from resources.worker_pool import WorkerPool

KEPT = "figure_"  # + the figure's name: one kept result per figure


def figure_future(warehouse: Warehouse, pool: WorkerPool, figure: str, frames: Sequence[pl.DataFrame],
                  fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    """The future of fn(*args, **kwargs) (the figure `figure`'s (files, preview) drawn from `frames`; `kwargs`
    go to pool.submit, its `name=` too): the outputs kept under the frames' key when there are, else submitted to
    `pool` and kept once drawn."""
    key = warehouse.figure_key(figure, list(frames))
    kept = warehouse.cached_result(KEPT + figure, key) if key is not None else None
    if isinstance(kept, tuple) and len(kept) == 2:
        done: Future = Future()
        done.set_result(kept)
        return done
    future = pool.submit(fn, *args, **kwargs)
    if key is not None:
        def keep(drawn: Future) -> None:
            if not drawn.cancelled() and drawn.exception() is None:
                warehouse.keep_result(KEPT + figure, key, drawn.result())

        future.add_done_callback(keep)
    return future
