"""Shared look of the report figures: names of upstream models, colours, the rc context (`styled`),
the Agg figure factory and the small helpers every figure uses (placeholders, exposure labels, dollars)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# matplotlib is imported where a figure is drawn, not with this module: every Definitions build (every warm
# `run_all`, issue 29) imports the figures through the asset modules and would pay ~1.5 CPU-s for it.

# Names the estimators use for their models and columns; if an upstream name changes, change it here only.
MODEL_EXPOSURE_WAGE = "exposure_wage"
MODEL_IMPORTANCE = "importance_fe"
PREFERRED_EXPOSURE_SOURCE = "human"  # when coverage_adjusted_probabilities carries several exposure sources
VALIDATION_METRICS: tuple[str, ...] = (
    "occupation_top1",
    "occupation_top5",
    "task_hit_at1",
    "task_hit_at5",
    "task_f1",
)
VALIDATION_TITLES = {
    "occupation_top1": "Top-1 occupation accuracy",
    "occupation_top5": "Top-5 occupation accuracy",
    "task_hit_at1": "Gold task ranked first",
    "task_hit_at5": "Gold task in top 5",
    "task_hit_at10": "Gold task in top 10",
    "task_f1": "Task-set F1",
    "task_precision": "Task-set precision",
    "task_recall": "Task-set recall",
}

EXPOSED_COLOUR = "#c0392b"
NOT_EXPOSED_COLOUR = "#2c7fb8"
LEVEL_COLOURS = {"no_coverage": "#d9d9d9", "low": "#9ecae1", "high": "#08519c"}
SERIES_COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02"]

RC_PARAMS = {
    "svg.hashsalt": "benchmap",  # stable element ids, so re-exports give identical SVG
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def styled(draw: Callable[..., Figure]) -> Callable[..., Figure]:
    """Run a drawing function under the report style (rc settings apply while axes are created)."""

    @functools.wraps(draw)
    def wrapper(*args: object, **kwargs: object) -> Figure:
        import matplotlib
        with matplotlib.rc_context(RC_PARAMS):
            return draw(*args, **kwargs)

    return wrapper


def new_figure(width: float, height: float) -> Figure:
    """A Figure with an Agg canvas attached (no pyplot, no global state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def legend_outside(fig: Figure, ax: object, *, title: str | None = None, ncol: int | None = None) -> object:
    """The axes' legend below the plot area, outside the data (constrained layout makes room): a legend inside
    the axes hid curves and labels. Returns the legend (None when the axes have no labelled artist)."""
    handles, labels = ax.get_legend_handles_labels()  # type: ignore[attr-defined]
    if not handles:
        return None
    legend = fig.legend(handles, labels, loc="outside lower center", frameon=False, fontsize=8,
                        ncol=ncol or min(len(handles), 3), title=title)
    if title:
        legend.get_title().set_fontsize(7)
    return legend


def placeholder(title: str, message: str, width: float = 7.0, height: float = 3.0) -> Figure:
    fig = new_figure(width, height)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True, transform=ax.transAxes, color="#555555")
    return fig


def lacks_columns(table: str, needed: set[str], frame: pl.DataFrame) -> str:
    return f"{table} lacks the columns {sorted(needed - set(frame.columns))}"


def table_note(frame: pl.DataFrame) -> str:
    if "note" in frame.columns:
        notes = [n for n in frame["note"].drop_nulls().unique().sort().to_list() if n]
        if notes:
            return notes[0]
    return ""


def model_rows(probabilities: pl.DataFrame, model: str, needed: set[str]) -> tuple[pl.DataFrame, str | None]:
    """The rows of one model (preferring one exposure source), or why there is nothing to draw."""
    if "model" not in probabilities.columns:
        return probabilities, lacks_columns("coverage_adjusted_probabilities", {"model"}, probabilities)
    rows = prefer_exposure_source(probabilities.filter(pl.col("model") == model))
    if rows.is_empty():
        return rows, f"coverage_adjusted_probabilities has no rows for model {model!r}."
    if not needed <= set(rows.columns):
        note = table_note(rows)
        return rows, (
            f"Model not estimated. {note}"
            if note
            else lacks_columns("coverage_adjusted_probabilities", needed, rows)
        )
    return rows, None


def prefer_exposure_source(frame: pl.DataFrame) -> pl.DataFrame:
    if "exposure_source" in frame.columns and frame["exposure_source"].n_unique() > 1:
        preferred = frame.filter(pl.col("exposure_source") == PREFERRED_EXPOSURE_SOURCE)
        return (
            preferred
            if preferred.height
            else frame.filter(pl.col("exposure_source") == frame["exposure_source"].drop_nulls().sort()[0])
        )
    return frame


def exposure_label(value: object) -> str:
    if value is None:
        return "All tasks"
    return "LLM-exposed tasks (E1/E2)" if int(value) == 1 else "Not exposed (E0)"


def exposure_colour(value: object) -> str:
    if value is None:
        return "#555555"
    return EXPOSED_COLOUR if int(value) == 1 else NOT_EXPOSED_COLOUR


def dollars(value: float, _pos: object = None) -> str:
    if value >= 1e12:
        return f"${value / 1e12:g}T"
    if value >= 1e9:
        return f"${value / 1e9:g}B"
    if value >= 1e6:
        return f"${value / 1e6:g}M"
    return f"${value:,.0f}"


