"""Calibration figures of the per-text and per-unit estimates (issue 25): reliability of the per-text
occupation probabilities against the judge, and p_covered against a known truth."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from models.figures.style import SERIES_COLOURS, lacks_columns, new_figure, placeholder, styled

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# matplotlib is imported where a figure is drawn, not with this module: every Definitions build (every warm
# `run_all`, issue 29) imports the figures through the asset modules and would pay ~1.5 CPU-s for it.

EVALUATION_TITLES = {"within_benchmark": "held out within its benchmark (5 folds)",
                     "leave_one_benchmark_out": "leave one benchmark out"}


@styled
def occupation_probability_figure(calibration: pl.DataFrame) -> Figure:
    """Reliability diagram of the per-text occupation probabilities (one panel per evaluation): mean p vs the
    share the judge gives, per bin, with the diagonal; top-1, Brier and ECE of the model and of the raw labels
    in the panel title. Input: occupation_probability_calibration."""
    title = "Per-text occupation probabilities against the judge"
    needed = {"evaluation", "predictor", "bin", "mean_p", "observed", "n_pairs", "brier", "ece", "top1_accuracy"}
    if not needed <= set(calibration.columns):
        return placeholder(title, lacks_columns("occupation_probability_calibration", needed, calibration))
    evaluations = [e for e in EVALUATION_TITLES if e in set(calibration["evaluation"].to_list())]
    if not evaluations:
        return placeholder(title, "No judged texts to hold out.")
    fig = new_figure(5.0 * len(evaluations), 5.0)
    for i, evaluation in enumerate(evaluations):
        ax = fig.add_subplot(1, len(evaluations), i + 1)
        ax.plot([0, 1], [0, 1], color="#999999", linestyle="--", linewidth=1, label="perfect calibration")
        rows = calibration.filter(pl.col("evaluation") == evaluation)
        lines = []
        for colour, predictor, label in ((SERIES_COLOURS[2], "model", "share of draws (p)"),
                                         (SERIES_COLOURS[0], "model_recalibrated", "recalibrated (p_calibrated)"),
                                         (SERIES_COLOURS[1], "raw_labels", "labels as 0/1")):
            bins = rows.filter((pl.col("predictor") == predictor) & pl.col("bin").is_not_null()).sort("bin")
            summary = rows.filter((pl.col("predictor") == predictor) & pl.col("bin").is_null())
            if bins.height:
                ax.plot(bins["mean_p"].to_list(), bins["observed"].to_list(), "o-", color=colour, label=label,
                        markersize=4)
                for x, y, n in zip(bins["mean_p"].to_list(), bins["observed"].to_list(), bins["n_pairs"].to_list(),
                                   strict=True):
                    ax.annotate(f"{n}", (x, y), xytext=(3, -9), textcoords="offset points", fontsize=6,
                                color="#666666")
            if summary.height:
                s = summary.row(0, named=True)
                lines.append(f"{label}: top-1 {s['top1_accuracy']:.2f}, Brier {s['brier']:.3f}, ECE {s['ece']:.3f}")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("predicted p (bin mean; pairs with p >= 0.05)")
        ax.set_ylabel("share the judge gives")
        ax.set_title(EVALUATION_TITLES[evaluation] + "\n" + "\n".join(lines), fontsize=8)
        ax.grid(color="#eeeeee")
        ax.legend(frameon=False, loc="upper left", fontsize=7)
    fig.suptitle(title)
    return fig


@styled
def unit_coverage_figure(check: pl.DataFrame) -> Figure:
    """p_covered against a known truth: share of units truly covered per p_covered bin (tasks, occupations,
    major groups pooled over the replications), one panel per check (columns: the split checks on real data
    first, then the simulated worlds) and threshold (rows). Input: unit_coverage_simulation_check."""
    title = "Probability covered against a known truth"
    needed = {"check", "unit", "threshold", "mean_p", "share_covered", "n_units"}
    if not needed <= set(check.columns) or check.is_empty():
        return placeholder(title, lacks_columns("unit_coverage_simulation_check", needed, check)
                           if not needed <= set(check.columns) else "No check was run.")
    order = ["split_half", "split_fifth", "simulated_mirror_like", "simulated", "model"]
    names = sorted(check["check"].unique().to_list(), key=lambda c: (order.index(c) if c in order else len(order), c))
    thresholds = sorted(check["threshold"].unique().to_list())
    fig = new_figure(3.6 * len(names), 3.4 * len(thresholds))
    panels = [(name, threshold) for threshold in thresholds for name in names]
    for i, (name, threshold) in enumerate(panels):
        ax = fig.add_subplot(len(thresholds), len(names), i + 1)
        ax.plot([0, 1], [0, 1], color="#999999", linestyle="--", linewidth=1)
        for colour, unit in zip(SERIES_COLOURS, ("task", "occupation", "major_group"), strict=False):
            rows = check.filter((pl.col("check") == name) & (pl.col("threshold") == threshold)
                                & (pl.col("unit") == unit)).sort("mean_p")
            # filled: p_covered (the draws' share); open: p_covered_calibrated (the published map, cross-fitted)
            predictors = rows["predictor"] if "predictor" in rows.columns else pl.Series(["p_covered"] * rows.height)
            for predictor, filled in (("p_covered", True), ("p_covered_calibrated", False)):
                part = rows.filter(predictors == predictor)
                if not part.height:
                    continue
                sizes = [max(8.0, min(60.0, n / 4)) for n in part["n_units"].to_list()]
                ax.scatter(part["mean_p"].to_list(), part["share_covered"].to_list(), s=sizes, alpha=0.8,
                           color=colour if filled else "none", edgecolors=colour,
                           label=unit.replace("_", " ") + ("" if filled else " (calibrated)"))
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("p_covered (bin mean)")
        ax.set_ylabel("share truly covered")
        ax.set_title(f"{name}, >= {threshold} prompt{'s' if threshold != 1 else ''}", fontsize=9)
        ax.grid(color="#eeeeee")
        ax.legend(frameon=False, loc="upper left", fontsize=7)
    fig.suptitle(title)
    return fig
