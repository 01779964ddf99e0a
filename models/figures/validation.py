"""Figures 5 and 7: the labeler's validation metrics, and the reliability of its p_exercised against the judge."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from models.figures.style import (
    SERIES_COLOURS,
    VALIDATION_METRICS,
    VALIDATION_TITLES,
    lacks_columns,
    legend_outside,
    new_figure,
    placeholder,
    styled,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# matplotlib is imported where a figure is drawn, not with this module: every Definitions build (every warm
# `run_all`, issue 29) imports the figures through the asset modules and would pay ~1.5 CPU-s for it.

# --- 5. labeler validation ----------------------------------------------------------------------------------


@styled
def labeler_validation_figure(
    validation: pl.DataFrame, metrics: tuple[str, ...] = VALIDATION_METRICS
) -> Figure:
    """Accuracy of each labeler against human labels, per benchmark and metric, with 95% bootstrap CIs.
    Input: labeler_validation (benchmark, labeler, labeler_version, metric, value, ci_low, ci_high, n)."""
    title = "Labeler accuracy against human labels (95% bootstrap CIs)"
    needed = {"benchmark", "labeler", "metric", "value", "ci_low", "ci_high"}
    if not needed <= set(validation.columns):
        return placeholder(title, f"labeler_validation lacks {sorted(needed - set(validation.columns))}")
    rows = validation.filter(pl.col("metric").is_in(list(metrics)) & pl.col("value").is_not_null())
    if rows.is_empty():
        return placeholder(title, "No validation metrics (no human-labeled prompts were labeled).")
    present = [m for m in metrics if m in set(rows["metric"].to_list())]
    who = rows.select("labeler", *(["labeler_version"] if "labeler_version" in rows.columns else [])).unique()
    who = who.sort(who.columns)
    series = [" ".join(str(v) for v in r if v) for r in who.iter_rows()]
    fig = new_figure(3.2 * len(present) + 0.8, 0.45 * rows["benchmark"].n_unique() + 2.0)
    axes = fig.subplots(1, len(present), sharey=True, squeeze=False)[0]
    benchmarks = sorted(rows["benchmark"].unique().to_list(), key=lambda b: (b == "all", b), reverse=True)
    y_of = {b: i for i, b in enumerate(benchmarks)}
    offsets = np.linspace(-0.15, 0.15, len(series)) if len(series) > 1 else [0.0]
    for ax, metric in zip(axes, present, strict=True):
        for k, (key, name) in enumerate(zip(who.iter_rows(named=True), series, strict=True)):
            part = rows.filter(pl.col("metric") == metric)
            for column, value in key.items():
                part = part.filter(pl.col(column) == value)
            if part.is_empty():
                continue
            y = np.array([y_of[b] for b in part["benchmark"].to_list()], dtype=float) + offsets[k]
            value = part["value"].to_numpy()
            low = part["ci_low"].fill_null(part["value"]).to_numpy()
            high = part["ci_high"].fill_null(part["value"]).to_numpy()
            err = np.clip(np.vstack([value - low, high - value]), 0, None)
            ax.errorbar(
                value,
                y,
                xerr=err,
                fmt="o",
                capsize=3,
                color=SERIES_COLOURS[k % len(SERIES_COLOURS)],
                label=name if metric == present[0] else None,
            )
            if "n" in part.columns:
                for xv, yv, n in zip(value, y, part["n"].to_list(), strict=True):
                    ax.annotate(
                        f"n={n}",
                        (xv, yv),
                        xytext=(0, 5),
                        textcoords="offset points",
                        fontsize=6,
                        ha="center",
                        color="#666666",
                    )
        ax.set_xlim(0, 1.02)
        from matplotlib.ticker import PercentFormatter
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_title(VALIDATION_TITLES.get(metric, metric))
        ax.grid(axis="x", color="#eeeeee")
    axes[0].set_yticks(range(len(benchmarks)), benchmarks)
    axes[0].set_ylim(-0.6, len(benchmarks) - 0.4)
    fig.suptitle(title)
    fig.legend(frameon=False, loc="outside lower center", ncol=min(len(series), 4), fontsize=8)
    return fig



# --- 7. reliability of the labeler's p_exercised against the judge (issue 16) ------------------------------


@styled
def reliability_figure(reliability: pl.DataFrame) -> Figure:
    """Reliability diagram: mean predicted p_exercised vs the share the judge confirms, per probability bin,
    with Wilson 95% CIs and the diagonal; ECE and recall in the title. Input: labeler_reliability (pooled rows,
    benchmark 'all')."""
    title = "Labeler calibration against the judge"
    needed = {"benchmark", "mean_predicted", "observed", "ci_low", "ci_high", "n", "ece"}
    if not needed <= set(reliability.columns):
        return placeholder(title, lacks_columns("labeler_reliability", needed, reliability))
    rows = reliability.filter(pl.col("benchmark") == "all").sort("mean_predicted")
    if rows.is_empty():
        return placeholder(title, "No labels of judge-sampled prompts to compare.")
    fig = new_figure(4.8, 4.4)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], color="#999999", linestyle="--", linewidth=1, label="perfect calibration")
    x = rows["mean_predicted"].to_numpy()
    y = rows["observed"].to_numpy()
    err = np.clip(np.vstack([y - rows["ci_low"].to_numpy(), rows["ci_high"].to_numpy() - y]), 0, None)
    ax.errorbar(x, y, yerr=err, fmt="o", capsize=3, color=SERIES_COLOURS[0], label="labels, per p bin")
    for xv, yv, n in zip(x, y, rows["n"].to_list(), strict=True):
        ax.annotate(f"n={n}", (xv, yv), xytext=(4, -10), textcoords="offset points", fontsize=6, color="#666666")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("predicted: mean p_exercised of the bin")
    ax.set_ylabel("observed: share the judge also gives")
    recall = rows["recall"][0] if "recall" in rows.columns else None
    detail = f"ECE {rows['ece'][0]:.3f}" + (f"; recall of the judge's tasks {recall:.0%}" if recall is not None else "")
    ax.set_title(f"{title}\n{detail}")
    ax.grid(color="#eeeeee")
    legend_outside(fig, ax)
    return fig


