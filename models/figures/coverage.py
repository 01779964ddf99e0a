"""Figures 3 and 4: covered occupations per major group, and the share of work hours by coverage level."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from models.figures.style import (
    LEVEL_COLOURS,
    legend_outside,
    new_figure,
    placeholder,
    styled,
)
from models.soc import SOC_MAJOR_GROUPS, short_group_title

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# matplotlib is imported where a figure is drawn, not with this module: every Definitions build (every warm
# `run_all`, issue 29) imports the figures through the asset modules and would pay ~1.5 CPU-s for it.

# what a reader of a pasted figure must see: these count the raw labels, which the headline corrects
AS_COUNTED_NOTE = ("Not corrected for the labeler's errors, so not for quoting;\nthe estimates: "
                   "figure estimated_coverage_by_major_group, summary.md")

# --- 3. covered occupations per major group ----------------------------------------------------------------


def _thresholds(frame: pl.DataFrame, prefix: str) -> list[int]:
    return sorted(
        int(c.removeprefix(prefix))
        for c in frame.columns
        if c.startswith(prefix) and c.removeprefix(prefix).isdigit()
    )


@styled
def major_group_figure(major_group_coverage: pl.DataFrame) -> Figure:
    """Occupations with a covered task per SOC major group (bars: all occupations, covered at each threshold).
    Input: major_group_coverage (pooled rows; a `benchmark` column, if any, keeps only pooled rows)."""
    title = "Occupations with at least one covered task, by SOC major group,\nlabels as counted"
    frame = major_group_coverage
    if "benchmark" in frame.columns:
        frame = frame.filter(pl.col("benchmark").is_null())
    thresholds = _thresholds(frame, "occupations_covered_")
    if frame.is_empty() or not thresholds or "n_occupations" not in frame.columns:
        return placeholder(title, "No major-group coverage to draw.")
    frame = frame.sort("major_group_code", descending=True)
    titles = [
        short_group_title(t or SOC_MAJOR_GROUPS.get(c, c))
        for c, t in frame.select("major_group_code", "major_group_title").iter_rows()
    ]
    y = np.arange(frame.height)
    fig = new_figure(8.0, 0.3 * frame.height + 1.6)
    ax = fig.add_subplot()
    total = frame["n_occupations"].to_numpy()
    ax.barh(y, total, color="#eeeeee", edgecolor="#bbbbbb", linewidth=0.5, label="All occupations with tasks")
    shades = ["#6baed6", "#08519c", "#08306b"]
    for i, t in enumerate(thresholds):
        covered = frame[f"occupations_covered_{t}"].to_numpy()
        height = 0.7 - 0.25 * i
        ax.barh(
            y,
            covered,
            height=height,
            color=shades[min(i, len(shades) - 1)],
            label=f"Covered (a task with >= {t} prompt{'s' if t > 1 else ''})",
        )
    low_t = thresholds[0]
    for yi, (n, k) in enumerate(zip(total, frame[f"occupations_covered_{low_t}"].to_numpy(), strict=True)):
        ax.text(n + 0.5, yi, f"{k}/{n}", va="center", fontsize=7, color="#333333")
    ax.set_yticks(y, titles)
    ax.set_xlabel("Occupations (O*NET-SOC codes with task statements)")
    fig.suptitle(title + "\n" + AS_COUNTED_NOTE, fontsize=9)
    ax.set_xlim(0, float(total.max()) * 1.12 + 1 if total.size else 1)
    legend_outside(fig, ax)
    return fig


# --- 4. share of work hours by coverage level ---------------------------------------------------------------

LEVELS = ("high", "low", "no_coverage")


def hours_by_coverage_level(occupation_coverage: pl.DataFrame) -> pl.DataFrame:
    """Work hours per SOC major group (and 'all') by coverage level of the tasks they are spent on.

    Levels with thresholds lo < hi (the smallest and largest in the table): high = tasks with >= hi prompts,
    low = >= lo but < hi, no_coverage = < lo. Occupations without hours data are left out.
    Columns: major_group_code ('all' for the total), level, level_label, hours, share.
    """
    thresholds = _thresholds(occupation_coverage, "hours_share_covered_")
    schema = {
        "major_group_code": pl.Utf8,
        "level": pl.Utf8,
        "level_label": pl.Utf8,
        "hours": pl.Float64,
        "share": pl.Float64,
    }
    if not thresholds or "occupation_annual_hours" not in occupation_coverage.columns:
        return pl.DataFrame(schema=schema)
    lo, hi = thresholds[0], thresholds[-1]
    frame = occupation_coverage
    if "benchmark" in frame.columns:
        frame = frame.filter(pl.col("benchmark").is_null())
    frame = frame.filter(pl.col("occupation_annual_hours").is_not_null()).with_columns(
        (pl.col("onet_soc_code").str.slice(0, 2) + "-0000").alias("major_group_code"),
        (pl.col("occupation_annual_hours") * pl.col(f"hours_share_covered_{hi}")).alias("high"),
        (
            pl.col("occupation_annual_hours")
            * (pl.col(f"hours_share_covered_{lo}") - pl.col(f"hours_share_covered_{hi}")).clip(lower_bound=0)
        ).alias("low"),
        (
            pl.col("occupation_annual_hours") * (1 - pl.col(f"hours_share_covered_{lo}")).clip(lower_bound=0)
        ).alias("no_coverage"),
    )
    by_group = frame.group_by("major_group_code").agg([pl.col(level).sum() for level in LEVELS])
    total = frame.select([pl.col(level).sum() for level in LEVELS]).with_columns(
        pl.lit("all").alias("major_group_code")
    )
    wide = pl.concat([total.select(by_group.columns), by_group])
    labels = {
        "high": f">= {hi} prompts",
        "low": f"{lo}-{hi - 1} prompts" if hi - 1 > lo else f"{lo} prompt",
        "no_coverage": f"fewer than {lo} prompt{'s' if lo > 1 else ''}" if lo > 1 else "no prompts",
    }
    if lo == hi:
        labels["low"] = "(single threshold)"
    long = wide.unpivot(index="major_group_code", on=list(LEVELS), variable_name="level", value_name="hours")
    long = long.with_columns(
        (pl.col("hours") / pl.col("hours").sum().over("major_group_code")).alias("share"),
        pl.col("level").replace_strict(labels, return_dtype=pl.Utf8).alias("level_label"),
        pl.col("level")
        .replace_strict({lv: i for i, lv in enumerate(LEVELS)}, return_dtype=pl.Int64)
        .alias("_order"),
    )
    return long.sort("major_group_code", "_order").select(list(schema))


@styled
def hours_by_coverage_figure(occupation_coverage: pl.DataFrame) -> Figure:
    """Share of US work hours by the coverage level of the tasks they are spent on: all occupations and per
    SOC major group (100% stacked bars). Input: occupation_coverage."""
    title = "Share of US work hours by benchmark coverage of the tasks,\nlabels as counted"
    levels = hours_by_coverage_level(occupation_coverage)
    if levels.is_empty() or levels["hours"].sum() <= 0:
        return placeholder(title, "No occupations with hours data.")
    groups = ["all"] + sorted(c for c in levels["major_group_code"].unique().to_list() if c != "all")
    names = ["All occupations"] + [short_group_title(SOC_MAJOR_GROUPS.get(c, c)) for c in groups[1:]]
    fig = new_figure(8.0, 0.3 * len(groups) + 1.8)
    ax = fig.add_subplot()
    y = np.arange(len(groups))[::-1].astype(float)
    y[0] += 0.6  # set the total apart
    left = np.zeros(len(groups))
    for level in LEVELS:
        part = levels.filter(pl.col("level") == level)
        shares = dict(part.select("major_group_code", "share").iter_rows())
        widths = np.array([shares.get(g) or 0.0 for g in groups])
        label = part["level_label"][0] if part.height else level
        ax.barh(
            y,
            widths,
            left=left,
            color=LEVEL_COLOURS[level],
            label=f"Tasks with {label}",
            edgecolor="white",
            linewidth=0.5,
        )
        for yi, (x0, w) in enumerate(zip(left, widths, strict=True)):
            if w >= 0.06:
                ax.text(
                    x0 + w / 2,
                    y[yi],
                    f"{w:.0%}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if level == "high" else "#222222",
                )
        left += widths
        if level == "low":  # after the covered levels: say how much is covered when the bars are too thin
            for yi, covered in enumerate(left):
                if covered < 0.12:
                    ax.text(
                        covered + 0.008,
                        y[yi],
                        f"{covered:.1%} covered",
                        ha="left",
                        va="center",
                        fontsize=7,
                        color="#08306b",
                    )
    ax.set_yticks(y, names)
    ax.get_yticklabels()[0].set_fontweight("bold")
    from matplotlib.ticker import PercentFormatter
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlim(0, 1)
    ax.set_xlabel("Share of annual work hours (O*NET task time shares x OEWS hours)")
    fig.suptitle(title + "\n" + AS_COUNTED_NOTE, fontsize=9)
    fig.legend(frameon=False, loc="outside lower center", ncol=3, fontsize=8)
    return fig


