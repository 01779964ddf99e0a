"""The report's figures: pure functions from polars frames to matplotlib Figures (Agg canvas, no pyplot).

Each `*_figure` function takes the analysis table(s) it draws, with their warehouse column names, and returns
a `matplotlib.figure.Figure`; none touches global pyplot state, so they are safe in Dagster steps and
notebooks alike. An input with nothing to draw gives a figure saying so (and why, when the table has a
`note`) instead of an exception, so one empty table never blocks the rest of the report.

`figure_files` renders PNG and SVG bytes (byte-stable: fixed SVG hash salt, no dates; written to disk by
`resources.export_writer.save_figure`), `figure_outputs` those and a small preview PNG from one layout;
`png_markdown` / `figure_markdown` give the Markdown image (base64 PNG) the Dagster UI shows in asset metadata. `FIGURES` names every report figure with
the tables it needs; `render_figures` draws those whose tables are present.

Modules: `style` (names, colours, shared helpers), `probability` (1, 2), `coverage` (3, 4), `validation`
(5, 7), `scores` (6); this module holds the registry and the rendering to bytes, and re-exports every public
name.

No dagster and no files here.
"""

from __future__ import annotations

import base64
import contextlib
import io
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from models.figures.coverage import (
    LEVELS,
    hours_by_coverage_figure,
    hours_by_coverage_level,
    major_group_figure,
)
from models.figures.estimates import estimated_coverage_figure
from models.figures.probability import importance_quintile_figure, wage_bill_probability_figure
from models.figures.scores import model_score_heatmap_figure
from models.figures.style import (
    EXPOSED_COLOUR,
    LEVEL_COLOURS,
    MODEL_EXPOSURE_WAGE,
    MODEL_IMPORTANCE,
    NOT_EXPOSED_COLOUR,
    PREFERRED_EXPOSURE_SOURCE,
    RC_PARAMS,
    SERIES_COLOURS,
    VALIDATION_METRICS,
    VALIDATION_TITLES,
    new_figure,
    styled,
)
from models.figures.validation import labeler_validation_figure, reliability_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# matplotlib is imported where a figure is drawn, not with this module: every Definitions build (every warm
# `run_all`, issue 29) imports the figures through the asset modules and would pay ~1.5 CPU-s for it.

# --- registry, bytes, metadata -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FigureSpec:
    name: str
    title: str
    tables: tuple[str, ...]  # warehouse tables the figure draws, in argument order
    draw: Callable[..., Figure]
    optional_tables: tuple[str, ...] = ()  # passed as keyword arguments (named like the table) when present


FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec(
        "coverage_by_wage_bill",
        "Adjusted coverage probability vs occupation wage bill",
        ("coverage_adjusted_probabilities",),
        wage_bill_probability_figure,
    ),
    FigureSpec(
        "coverage_by_importance",
        "Adjusted coverage by task-importance quintile",
        ("coverage_adjusted_probabilities",),
        importance_quintile_figure,
    ),
    FigureSpec(
        "occupations_by_major_group",
        "Covered occupations per SOC major group (labels as counted)",
        ("major_group_coverage",),
        major_group_figure,
    ),
    FigureSpec(
        "hours_by_coverage",
        "Share of work hours by coverage level (labels as counted)",
        ("occupation_coverage",),
        hours_by_coverage_figure,
    ),
    FigureSpec(  # the estimates' twin of the two above, which draw the labels as counted
        "estimated_coverage_by_major_group",
        "Estimated coverage by SOC major group (>= 5 prompts)",
        ("major_group_estimates", "occupation_estimates", "headline_estimates"),
        estimated_coverage_figure,
    ),
    FigureSpec(
        "labeler_validation", "Labeler validation", ("labeler_validation",), labeler_validation_figure
    ),
    FigureSpec(
        "model_score_heatmap",
        "Per-occupation model scores",
        ("occupation_model_scores",),
        model_score_heatmap_figure,
        optional_tables=("occupations",),
    ),
)


PREVIEW_DPI = 80  # the smaller PNG a figure shows in the Dagster UI (figure_markdown, figure_outputs' preview)
# zlib level 1, not Pillow's 6: the report's flat-colour figures come out within a few per cent of the size
# (some smaller) at about two thirds of the PNG step's time (issue 29: a cold run under a minute)
PNG_SAVE = {"compress_level": 1}


def _draw(spec: FigureSpec, tables: Mapping[str, pl.DataFrame]) -> Figure:
    """`spec`'s figure from its tables, and its optional ones when present."""
    extra = {t: tables[t] for t in spec.optional_tables if t in tables}
    return spec.draw(*(tables[t] for t in spec.tables), **extra)


def render_figures(tables: Mapping[str, pl.DataFrame]) -> dict[str, Figure]:
    """Every figure of FIGURES whose tables are in `tables` (name -> Figure). `occupations` may be passed as
    a table (onet_soc_code, title) to label the heatmap rows."""
    return {spec.name: _draw(spec, tables) for spec in FIGURES if all(t in tables for t in spec.tables)}


def render_outputs(name: str, tables: Mapping[str, pl.DataFrame], dpi: int = 150, preview_dpi: int | None = None
                   ) -> tuple[dict[str, bytes], bytes | None]:
    """FIGURES' figure `name` drawn from `tables` (its tables, and its optional ones when present) as
    `figure_outputs`: its files and preview bytes. A module-level function of frames and plain values, so a
    worker process can draw one figure while another draws the next (assets/exports.py `report_figures`)."""
    spec = next(s for s in FIGURES if s.name == name)
    return figure_outputs(_draw(spec, tables), dpi=dpi, preview_dpi=preview_dpi)


def draw_outputs(draw: Callable[..., Figure], tables: Sequence[pl.DataFrame], dpi: int = 150,
                 preview_dpi: int | None = None) -> tuple[dict[str, bytes], bytes | None]:
    """`figure_outputs` of draw(*tables) (any figure function of this package): for a worker process."""
    return figure_outputs(draw(*tables), dpi=dpi, preview_dpi=preview_dpi)


def computed_and_drawn(compute: Callable[..., Sequence[Any]], draw: Callable[..., Figure], /, *args: Any,
                       preview_dpi: int | None = None, **kwargs: Any) -> tuple[Any, Any]:
    """(compute(*args, **kwargs), `draw_outputs` of draw(its first item)): a check and its figure in one worker
    task, the figure drawn as soon as the check is done. The figure part is the error as text when drawing
    failed (a figure never fails its check)."""
    result = compute(*args, **kwargs)
    try:
        figure: Any = draw_outputs(draw, (result[0],), preview_dpi=preview_dpi)
    except Exception as error:  # noqa: BLE001 - said by the step that shows the figure
        figure = f"{type(error).__name__}: {error}"
    return result, figure


def figure_png_bytes(fig: Figure, dpi: int = 150) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None}, pil_kwargs=PNG_SAVE)
    return buffer.getvalue()


def png_markdown(png: bytes, alt: str = "figure") -> str:
    """Markdown image with the PNG bytes inlined as base64 (what Dagster's MetadataValue.md renders)."""
    return f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode('ascii')})"


def figure_markdown(fig: Figure, alt: str = "figure", dpi: int = PREVIEW_DPI) -> str:
    """`png_markdown` of the figure rendered at `dpi`."""
    return png_markdown(figure_png_bytes(fig, dpi=dpi), alt)


@contextlib.contextmanager
def _layout_kept(fig: Figure) -> Iterator[None]:
    """Within the block the figure keeps the layout its last draw computed: with no layout engine a save draws
    the figure once, instead of a layout pass (measuring every text) and then the drawing."""
    engine = fig.get_layout_engine()
    if engine is None:
        yield
        return
    fig.set_layout_engine(None)  # the axes keep their positions; the engine is put back below
    try:
        yield
    finally:
        fig.set_layout_engine(engine)


def figure_outputs(fig: Figure, dpi: int = 150, preview_dpi: int | None = None) -> tuple[dict[str, bytes], bytes | None]:
    """The figure's files {'png': bytes, 'svg': bytes} and, with `preview_dpi`, a smaller PNG for the Dagster
    UI, from one layout and two drawings: the PNG save lays the figure out, the SVG reuses that layout (in
    figure fractions; the text measured at the PNG's resolution moves margins by at most a few points against
    the SVG's own layout), and the preview is the PNG scaled down (`png_scaled`: a fifth of the cost of
    drawing it again). Byte-stable: the style's fixed SVG hash salt, no software or date metadata."""
    png, svg = io.BytesIO(), io.BytesIO()
    import matplotlib
    with matplotlib.rc_context(RC_PARAMS):
        fig.savefig(png, format="png", dpi=dpi, metadata={"Software": None}, pil_kwargs=PNG_SAVE)
        with _layout_kept(fig):
            fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    files = {"png": png.getvalue(), "svg": svg.getvalue()}
    return files, png_scaled(files["png"], preview_dpi / dpi) if preview_dpi is not None else None


def png_scaled(png: bytes, scale: float) -> bytes:
    """The PNG image resized by `scale` (Lanczos filter) and reduced to 256 colours, as PNG bytes: each preview
    is inlined into the Dagster event log on every run (an audit: ~1.2 MB a report step, two thirds of the
    instance's materialization events); the palette makes them 63% smaller at the same cost."""
    from PIL import Image  # matplotlib's own image library

    with Image.open(io.BytesIO(png)) as image:
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        out = io.BytesIO()
        image.convert("RGB").resize(size, Image.Resampling.LANCZOS).quantize(
            colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(out, format="PNG")
    return out.getvalue()


def figure_files(fig: Figure, dpi: int = 150) -> dict[str, bytes]:
    """The figure as the report's files: {'png': bytes, 'svg': bytes} (`figure_outputs`).
    `resources.export_writer.save_figure` writes them."""
    return figure_outputs(fig, dpi=dpi)[0]


def render_figure_files(figures: Mapping[str, Figure], dpi: int = 150) -> dict[str, dict[str, bytes]]:
    """`figure_files` of each figure: name -> {'png': bytes, 'svg': bytes}."""
    return {name: figure_files(fig, dpi=dpi) for name, fig in figures.items()}


__all__ = [
    "EXPOSED_COLOUR", "FIGURES", "LEVELS", "LEVEL_COLOURS", "MODEL_EXPOSURE_WAGE", "MODEL_IMPORTANCE",
    "NOT_EXPOSED_COLOUR", "PREFERRED_EXPOSURE_SOURCE", "PREVIEW_DPI", "SERIES_COLOURS", "VALIDATION_METRICS", "VALIDATION_TITLES",
    "FigureSpec", "draw_outputs", "estimated_coverage_figure", "figure_files", "figure_markdown", "figure_outputs", "figure_png_bytes", "hours_by_coverage_figure",
    "hours_by_coverage_level", "importance_quintile_figure", "labeler_validation_figure", "major_group_figure",
    "model_score_heatmap_figure", "new_figure", "png_markdown", "png_scaled", "reliability_figure", "render_figure_files", "render_figures", "render_outputs",
    "styled", "wage_bill_probability_figure",
]
