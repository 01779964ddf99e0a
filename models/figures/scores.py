"""Figure 6: the per-occupation model-score heatmap (plain vs O*NET-weighted mean)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from models.figures.style import (
    new_figure,
    placeholder,
    styled,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# matplotlib is imported where a figure is drawn, not with this module: every Definitions build (every warm
# `run_all`, issue 29) imports the figures through the asset modules and would pay ~1.5 CPU-s for it.

# --- 6. per-occupation model-score heatmap ------------------------------------------------------------------


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@styled
def _heatmap_axes(frame: pl.DataFrame, max_occupations: int, max_models: int) -> tuple[list[str], list[str]]:
    """(occupations, models) of the heatmap: the occupations with the most scored prompts and the models
    scored on the most of them, each sorted."""
    size = "n_prompts" if "n_prompts" in frame.columns else "plain_mean"
    top_occ = (
        frame.group_by("onet_soc_code")
        .agg(pl.col(size).max().alias("_size"), pl.len().alias("_models"))
        .sort(["_size", "_models", "onet_soc_code"], descending=[True, True, False])
        .head(max_occupations)["onet_soc_code"]
        .to_list()
    )
    top_models = (
        frame.filter(pl.col("onet_soc_code").is_in(top_occ))
        .group_by("model")
        .agg(pl.len().alias("_n"))
        .sort(["_n", "model"], descending=[True, False])
        .head(max_models)["model"]
        .to_list()
    )
    top_models = sorted(top_models)
    occ_order = sorted(top_occ)
    return occ_order, top_models


def _heatmap_matrices(frame: pl.DataFrame, occ_order: list[str], top_models: list[str]) -> list[np.ma.MaskedArray]:
    """The plain and the weighted mean per (occupation, model), masked where there is no score."""
    cells = {
        (o, m): (p, w)
        for o, m, p, w in frame.select("onet_soc_code", "model", "plain_mean", "weighted_mean").iter_rows()
    }
    matrices = []
    for index in (0, 1):
        matrix = np.full((len(occ_order), len(top_models)), np.nan)
        for i, occ in enumerate(occ_order):
            for j, model in enumerate(top_models):
                value = cells.get((occ, model), (None, None))[index]
                if value is not None and not (isinstance(value, float) and math.isnan(value)):
                    matrix[i, j] = value
        matrices.append(np.ma.masked_invalid(matrix))
    return matrices


def model_score_heatmap_figure(
    scores: pl.DataFrame,
    occupations: pl.DataFrame | None = None,
    *,
    min_prompts: int | None = None,
    max_occupations: int = 30,
    max_models: int = 16,
) -> Figure:
    """Occupations x AI models: plain mean score next to the O*NET-weighted mean score.

    Input: occupation_model_scores (onet_soc_code, model, min_prompts, n_prompts, plain_mean, weighted_mean);
    `occupations` (onet_soc_code, title) labels the rows. Shows the occupations with the most scored prompts
    and the models scored on the most occupations; empty cells have no score (no weighted mean when no task
    has `min_prompts` prompts).
    """
    title = "Benchmark scores per occupation and model: plain vs O*NET-weighted mean"
    needed = {"onet_soc_code", "model", "plain_mean", "weighted_mean"}
    if not needed <= set(scores.columns):
        return placeholder(title, f"occupation_model_scores lacks {sorted(needed - set(scores.columns))}")
    frame = scores
    if "min_prompts" in frame.columns and frame.height:
        available = sorted(frame["min_prompts"].drop_nulls().unique().to_list())
        chosen = min_prompts if min_prompts in available else (max(available) if available else None)
        if chosen is not None:
            frame = frame.filter(pl.col("min_prompts") == chosen)
        min_prompts = chosen
    frame = frame.filter(pl.col("plain_mean").is_not_null())
    if frame.is_empty():
        return placeholder(title, "No model results joined to labeled prompts.")
    occ_order, top_models = _heatmap_axes(frame, max_occupations, max_models)
    titles: dict[str, str] = {}
    if occupations is not None and {"onet_soc_code", "title"} <= set(occupations.columns):
        titles = dict(occupations.select("onet_soc_code", "title").unique("onet_soc_code").iter_rows())
    elif "title" in frame.columns:
        titles = dict(frame.select("onet_soc_code", "title").unique("onet_soc_code").iter_rows())
    labels = [_short(f"{code} {titles.get(code) or ''}".strip(), 48) for code in occ_order]
    matrices = _heatmap_matrices(frame, occ_order, top_models)
    width = 2 * (0.32 * len(top_models) + 1.0) + 3.6
    fig = new_figure(max(width, 8.0), 0.24 * len(occ_order) + 2.8)
    axes = fig.subplots(1, 2, sharey=True)
    import matplotlib
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#f0f0f0")
    image = None
    weighted_title = "O*NET-weighted mean" + (
        f"\n(tasks with >= {min_prompts} prompts)" if min_prompts else ""
    )
    for ax, matrix, panel in zip(axes, matrices, ("Plain mean\nover prompts", weighted_title), strict=True):
        image = ax.imshow(matrix, cmap=cmap, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        ax.set_xticks(
            range(len(top_models)), [_short(m, 28) for m in top_models], rotation=60, ha="right", fontsize=7
        )
        ax.set_title(panel)
        ax.spines[:].set_visible(False)
    axes[0].set_yticks(range(len(occ_order)), labels, fontsize=7)
    fig.colorbar(image, ax=list(axes), shrink=0.6, label="Mean score (0-1)")
    # the weights are the raw labels' (occupation_model_scores); the estimated twin carries the labeler's error
    fig.suptitle(title + "\nTasks weighted by the labels as counted, not for quoting; the estimated scores with "
                 "the labeler's error: occupation_model_scores_estimated, summary.md", fontsize=9)
    return fig


