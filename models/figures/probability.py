"""Figures 1 and 2: adjusted coverage probability against the wage bill and by importance quintile."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from models.figures.style import (
    MODEL_EXPOSURE_WAGE,
    MODEL_IMPORTANCE,
    dollars,
    exposure_colour,
    exposure_label,
    legend_outside,
    model_rows,
    new_figure,
    placeholder,
    styled,
    table_note,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# matplotlib is imported where a figure is drawn, not with this module: every Definitions build (every warm
# `run_all`, issue 29) imports the figures through the asset modules and would pay ~1.5 CPU-s for it.

# what a reader of a pasted figure must see: these logits are fitted on the raw labels; the fits that carry the
# labeler's error are coverage_regressions_mi (the summary quotes those)
RAW_FIT_NOTE = ("Labels as counted, not corrected for the labeler's errors, so not for quoting;\nthe fits with "
                "the labeler's error: coverage_regressions_mi, summary.md")

# --- 1. adjusted probability vs wage bill -------------------------------------------------------------------


@styled
def wage_bill_probability_figure(probabilities: pl.DataFrame) -> Figure:
    """Model 1: adjusted P(task has >= 5 prompts) against the occupation wage bill (log x), by exposure,
    with the 95% interval as a band. Input: coverage_adjusted_probabilities."""
    title = "Adjusted probability a task is covered (>= 5 prompts) by occupation wage bill"
    rows, problem = model_rows(
        probabilities, MODEL_EXPOSURE_WAGE, {"wage_bill", "prob", "ci_low", "ci_high"}
    )
    if problem:
        return placeholder(title, problem)
    drawable = rows.filter(
        pl.col("wage_bill").is_not_null() & pl.col("prob").is_not_null() & (pl.col("wage_bill") > 0)
    )
    if drawable.is_empty():
        return placeholder(title, "Model not estimated. " + table_note(rows))
    fig = new_figure(7.0, 4.2)
    ax = fig.add_subplot()
    exposure_values = (
        drawable["exposed"].unique().sort(descending=True).to_list()
        if "exposed" in drawable.columns
        else [None]
    )
    for value in exposure_values:
        series = (
            drawable.filter(pl.col("exposed") == value)
            if value is not None and "exposed" in drawable.columns
            else drawable
        ).sort("wage_bill")
        x = series["wage_bill"].to_numpy()
        colour = exposure_colour(value)
        ax.fill_between(
            x,
            series["ci_low"].to_numpy(),
            series["ci_high"].to_numpy(),
            color=colour,
            alpha=0.18,
            linewidth=0,
        )
        ax.plot(x, series["prob"].to_numpy(), color=colour, linewidth=2, label=exposure_label(value))
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter, PercentFormatter
    ax.xaxis.set_major_formatter(FuncFormatter(dollars))
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("Occupation wage bill (US$ per year, log scale)")
    ax.set_ylabel("Adjusted probability of >= 5 prompts")
    ax.set_title(title + "\n" + RAW_FIT_NOTE, fontsize=9)
    legend_outside(fig, ax, title="bands: 95% CI (clustered SEs)")
    ax.grid(axis="y", color="#eeeeee")
    return fig


# --- 2. adjusted probability by importance quintile ---------------------------------------------------------


@styled
def importance_quintile_figure(probabilities: pl.DataFrame) -> Figure:
    """Model 2: adjusted P(covered) per within-occupation importance quintile, by exposure, with 95% CI
    error bars (average predictive margins with occupation fixed effects).

    Input: coverage_adjusted_probabilities."""
    title = "Adjusted coverage probability by task-importance quintile"
    rows, problem = model_rows(
        probabilities, MODEL_IMPORTANCE, {"importance_quintile", "prob", "ci_low", "ci_high"}
    )
    if problem:
        return placeholder(title, problem)
    drawable = rows.filter(pl.col("importance_quintile").is_not_null() & pl.col("prob").is_not_null())
    if drawable.is_empty():
        return placeholder(title, "Model not estimated. " + table_note(rows))
    fig = new_figure(6.5, 4.0)
    ax = fig.add_subplot()
    has_exposure = "exposed" in drawable.columns and drawable["exposed"].null_count() < drawable.height
    exposure_values = drawable["exposed"].unique().sort(descending=True).to_list() if has_exposure else [None]
    offsets = np.linspace(-0.12, 0.12, len(exposure_values)) if len(exposure_values) > 1 else [0.0]
    for offset, value in zip(offsets, exposure_values, strict=True):
        series = (drawable.filter(pl.col("exposed") == value) if value is not None else drawable).sort(
            "importance_quintile"
        )
        x = series["importance_quintile"].to_numpy().astype(float) + offset
        prob = series["prob"].to_numpy()
        err = np.vstack([prob - series["ci_low"].to_numpy(), series["ci_high"].to_numpy() - prob])
        ax.errorbar(
            x,
            prob,
            yerr=np.clip(err, 0, None),
            fmt="o",
            capsize=4,
            color=exposure_colour(value),
            label=exposure_label(value),
            markersize=6,
            linewidth=1.5,
        )
    ax.set_xticks([1, 2, 3, 4, 5], ["1\n(least)", "2", "3", "4", "5\n(most important)"])
    from matplotlib.ticker import PercentFormatter
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("Task-importance quintile within the occupation (O*NET importance, IM)")
    ax.set_ylabel("Adjusted probability of >= 5 prompts")
    ax.set_title(title + "\n" + RAW_FIT_NOTE, fontsize=9)
    legend_outside(fig, ax, title="occupation fixed effects; bars: 95% CI (delta method, occupation-clustered SEs)")
    ax.grid(axis="y", color="#eeeeee")
    return fig


