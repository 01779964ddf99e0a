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
        if ax.get_legend_handles_labels()[0]:  # a panel without bins (a small problem) has nothing to name
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
        if ax.get_legend_handles_labels()[0]:  # a panel without bins (a small problem) has nothing to name
            ax.legend(frameon=False, loc="upper left", fontsize=7)
    fig.suptitle(title)
    return fig


ESTIMATED_THRESHOLD = 5  # the published headline's threshold (>= 1 is published as bounds, not a mean per group)


def estimated_group_frame(major_group_estimates: pl.DataFrame, occupation_estimates: pl.DataFrame,
                          threshold: int = ESTIMATED_THRESHOLD) -> pl.DataFrame:
    """Per SOC major group at `threshold`: the estimated share of its work hours on covered tasks (1 - expected
    uncovered hours / hours, the interval from the draws' uncovered-hours ends), the expected occupations covered
    (sum of p_covered) and the occupations likely covered (p >= 0.9), of its occupations with estimates. Inputs
    hold one benchmark index. Columns: major_group_code, hours, share_mean, share_low, share_high,
    occupations_expected, occupations_likely, n_occupations."""
    from models.coverage import LIKELY_COVERED
    from models.soc import major_group_of

    groups = major_group_estimates.filter((pl.col("threshold") == threshold) & (pl.col("hours") > 0)).select(
        "major_group_code", "hours",
        # clipped: float rounding leaves -1e-16 where every draw leaves the group uncovered
        (1 - pl.col("uncovered_hours_mean") / pl.col("hours")).clip(0.0, 1.0).alias("share_mean"),
        (1 - pl.col("uncovered_hours_high") / pl.col("hours")).clip(0.0, 1.0).alias("share_low"),
        (1 - pl.col("uncovered_hours_low") / pl.col("hours")).clip(0.0, 1.0).alias("share_high"))
    occupations = (occupation_estimates.filter(pl.col("threshold") == threshold)
                   .with_columns(major_group_of().alias("major_group_code"))
                   .group_by("major_group_code")
                   .agg(pl.col("p_covered").sum().alias("occupations_expected"),
                        (pl.col("p_covered") >= LIKELY_COVERED).sum().alias("occupations_likely"),
                        pl.len().alias("n_occupations")))
    return groups.join(occupations, on="major_group_code", how="left").sort("major_group_code")


@styled
def estimated_coverage_figure(major_group_estimates: pl.DataFrame, occupation_estimates: pl.DataFrame,
                              headline_estimates: pl.DataFrame) -> Figure:
    """The estimates behind the headline per SOC major group, at >= 5 prompts: the share of work hours on
    covered tasks with its 95% interval (left; "All occupations" is the published headline) and the expected
    occupations covered beside those likely covered (right). The twin of hours_by_coverage and
    occupations_by_major_group, which draw the labels as counted. Inputs hold one benchmark index."""
    from matplotlib.ticker import PercentFormatter

    from models.soc import SOC_MAJOR_GROUPS, short_group_title

    t = ESTIMATED_THRESHOLD
    title = f"Estimated coverage by SOC major group, at >= {t} prompts (labels corrected by the judge sample)"
    needed_groups = {"major_group_code", "threshold", "hours", "uncovered_hours_mean", "uncovered_hours_low",
                     "uncovered_hours_high"}
    if not needed_groups <= set(major_group_estimates.columns):
        return placeholder(title, lacks_columns("major_group_estimates", needed_groups, major_group_estimates))
    frame = estimated_group_frame(major_group_estimates, occupation_estimates, t)
    headline = headline_estimates.filter(
        (pl.col("scope") == "all") & (pl.col("quantity") == "hours_share_covered") & (pl.col("threshold") == t)
        & pl.col("published"))
    if frame.is_empty() or headline.is_empty():
        return placeholder(title, "No published estimate at this threshold.")
    total = headline.row(0, named=True)
    names = ["All occupations (headline)"] + [short_group_title(SOC_MAJOR_GROUPS.get(c, c))
                                              for c in frame["major_group_code"].to_list()]
    mean = [total["value"], *frame["share_mean"].to_list()]
    low = [total["ci_low"], *frame["share_low"].to_list()]
    high = [total["ci_high"], *frame["share_high"].to_list()]
    y = list(range(len(names)))[::-1]
    y[0] += 0.6  # set the total apart, as hours_by_coverage does
    fig = new_figure(10.0, 0.3 * len(names) + 1.9)
    hours_ax, occ_ax = fig.subplots(1, 2, sharey=True, width_ratios=[3, 2])
    # the ends are percentiles and the point a mean: a few far draws can put it just outside them (no whisker)
    errors = [[max(0.0, m - lo) for m, lo in zip(mean, low, strict=True)],
              [max(0.0, hi - m) for m, hi in zip(mean, high, strict=True)]]
    hours_ax.errorbar(mean, y, xerr=errors, fmt="D", color="#08519c", ecolor="#6baed6", markersize=4, capsize=2)
    for yi, m in zip(y, mean, strict=True):
        hours_ax.annotate(f"{m:.1%}", (m, yi), xytext=(6, 3), textcoords="offset points", fontsize=7)
    hours_ax.set_yticks(y, names)
    hours_ax.get_yticklabels()[0].set_fontweight("bold")
    hours_ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    hours_ax.set_xlim(0, max(0.05, max(high) * 1.15))
    hours_ax.set_xlabel(f"Share of work hours on tasks with >= {t} prompts\n(mean, 95% interval)")
    hours_ax.grid(axis="x", color="#eeeeee")
    groups_y = y[1:]
    n_occ = frame["n_occupations"].fill_null(0).to_list()
    expected = frame["occupations_expected"].fill_null(0).to_list()
    occ_ax.barh(groups_y, expected, color="#9ecae1", label="expected covered (sum of p)")
    occ_ax.barh(groups_y, frame["occupations_likely"].fill_null(0).to_list(), height=0.4, color="#08519c",
                label="likely covered (p >= 0.9)")
    for yi, e, n in zip(groups_y, expected, n_occ, strict=True):
        occ_ax.annotate(f"{e:.0f} of {n}", (e, yi), xytext=(4, -3), textcoords="offset points", fontsize=7,
                        color="#333333")
    occ_ax.set_xlabel(f"Occupations with a task at >= {t} prompts\n(of those with estimates)")
    occ_ax.set_xlim(0, max(1.0, max(expected) * 1.3))
    occ_ax.legend(frameon=False, loc="lower right", fontsize=7)
    occ_ax.grid(axis="x", color="#eeeeee")
    fig.suptitle(title)
    return fig
