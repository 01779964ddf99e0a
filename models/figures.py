"""The report's figures: pure functions from polars frames to matplotlib Figures (Agg canvas, no pyplot).

Each `*_figure` function takes the analysis table(s) it draws, with their warehouse column names, and returns
a `matplotlib.figure.Figure`; none touches global pyplot state, so they are safe in Dagster steps and
notebooks alike. An input with nothing to draw gives a figure saying so (and why, when the table has a
`note`) instead of an exception, so one empty table never blocks the rest of the report.

`save_figure` writes PNG and SVG (byte-stable: fixed SVG hash salt, no dates); `figure_markdown` gives the
Markdown image (base64 PNG) the Dagster UI shows in asset metadata. `FIGURES` names every report figure with
the tables it needs; `render_figures` draws those whose tables are present.

No dagster here.
"""

from __future__ import annotations

import base64
import functools
import io
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, PercentFormatter

from models.soc import SOC_MAJOR_GROUPS, short_group_title

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

_RC = {
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
        with matplotlib.rc_context(_RC):
            return draw(*args, **kwargs)

    return wrapper


def new_figure(width: float, height: float) -> Figure:
    """A Figure with an Agg canvas attached (no pyplot, no global state)."""
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _placeholder(title: str, message: str, width: float = 7.0, height: float = 3.0) -> Figure:
    fig = new_figure(width, height)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True, transform=ax.transAxes, color="#555555")
    return fig


def _lacks(table: str, needed: set[str], frame: pl.DataFrame) -> str:
    return f"{table} lacks the columns {sorted(needed - set(frame.columns))}"


def _note(frame: pl.DataFrame) -> str:
    if "note" in frame.columns:
        notes = [n for n in frame["note"].drop_nulls().unique().sort().to_list() if n]
        if notes:
            return notes[0]
    return ""


def _model_rows(probabilities: pl.DataFrame, model: str, needed: set[str]) -> tuple[pl.DataFrame, str | None]:
    """The rows of one model (preferring one exposure source), or why there is nothing to draw."""
    if "model" not in probabilities.columns:
        return probabilities, _lacks("coverage_adjusted_probabilities", {"model"}, probabilities)
    rows = _prefer_exposure_source(probabilities.filter(pl.col("model") == model))
    if rows.is_empty():
        return rows, f"coverage_adjusted_probabilities has no rows for model {model!r}."
    if not needed <= set(rows.columns):
        note = _note(rows)
        return rows, (
            f"Model not estimated. {note}"
            if note
            else _lacks("coverage_adjusted_probabilities", needed, rows)
        )
    return rows, None


def _prefer_exposure_source(frame: pl.DataFrame) -> pl.DataFrame:
    if "exposure_source" in frame.columns and frame["exposure_source"].n_unique() > 1:
        preferred = frame.filter(pl.col("exposure_source") == PREFERRED_EXPOSURE_SOURCE)
        return (
            preferred
            if preferred.height
            else frame.filter(pl.col("exposure_source") == frame["exposure_source"].drop_nulls().sort()[0])
        )
    return frame


def _exposure_label(value: object) -> str:
    if value is None:
        return "All tasks"
    return "LLM-exposed tasks (E1/E2)" if int(value) == 1 else "Not exposed (E0)"


def _exposure_colour(value: object) -> str:
    if value is None:
        return "#555555"
    return EXPOSED_COLOUR if int(value) == 1 else NOT_EXPOSED_COLOUR


def _dollars(value: float, _pos: object = None) -> str:
    if value >= 1e12:
        return f"${value / 1e12:g}T"
    if value >= 1e9:
        return f"${value / 1e9:g}B"
    if value >= 1e6:
        return f"${value / 1e6:g}M"
    return f"${value:,.0f}"


# --- 1. adjusted probability vs wage bill -------------------------------------------------------------------


@styled
def wage_bill_probability_figure(probabilities: pl.DataFrame) -> Figure:
    """Model 1: adjusted P(task has >= 5 prompts) against the occupation wage bill (log x), by exposure,
    with the 95% interval as a band. Input: coverage_adjusted_probabilities."""
    title = "Adjusted probability a task is covered (>= 5 prompts) by occupation wage bill"
    rows, problem = _model_rows(
        probabilities, MODEL_EXPOSURE_WAGE, {"wage_bill", "prob", "ci_low", "ci_high"}
    )
    if problem:
        return _placeholder(title, problem)
    drawable = rows.filter(
        pl.col("wage_bill").is_not_null() & pl.col("prob").is_not_null() & (pl.col("wage_bill") > 0)
    )
    if drawable.is_empty():
        return _placeholder(title, "Model not estimated. " + _note(rows))
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
        colour = _exposure_colour(value)
        ax.fill_between(
            x,
            series["ci_low"].to_numpy(),
            series["ci_high"].to_numpy(),
            color=colour,
            alpha=0.18,
            linewidth=0,
        )
        ax.plot(x, series["prob"].to_numpy(), color=colour, linewidth=2, label=_exposure_label(value))
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(_dollars))
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("Occupation wage bill (US$ per year, log scale)")
    ax.set_ylabel("Adjusted probability of >= 5 prompts")
    ax.set_title(title)
    legend = ax.legend(frameon=False, loc="upper right", title="bands: 95% CI (clustered SEs)", fontsize=8)
    legend.get_title().set_fontsize(7)
    ax.grid(axis="y", color="#eeeeee")
    return fig


# --- 2. adjusted probability by importance quintile ---------------------------------------------------------


@styled
def importance_quintile_figure(probabilities: pl.DataFrame) -> Figure:
    """Model 2: adjusted P(covered) per within-occupation importance quintile, by exposure, with 95% CI
    error bars (average predictive margins with occupation fixed effects).

    Input: coverage_adjusted_probabilities."""
    title = "Adjusted coverage probability by task-importance quintile"
    rows, problem = _model_rows(
        probabilities, MODEL_IMPORTANCE, {"importance_quintile", "prob", "ci_low", "ci_high"}
    )
    if problem:
        return _placeholder(title, problem)
    drawable = rows.filter(pl.col("importance_quintile").is_not_null() & pl.col("prob").is_not_null())
    if drawable.is_empty():
        return _placeholder(title, "Model not estimated. " + _note(rows))
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
            color=_exposure_colour(value),
            label=_exposure_label(value),
            markersize=6,
            linewidth=1.5,
        )
    ax.set_xticks([1, 2, 3, 4, 5], ["1\n(least)", "2", "3", "4", "5\n(most important)"])
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("Task-importance quintile within the occupation (O*NET importance, IM)")
    ax.set_ylabel("Adjusted probability of >= 5 prompts")
    ax.set_title(title)
    legend = ax.legend(
        frameon=False,
        title="occupation fixed effects; bars: 95% CI (delta method, occupation-clustered SEs)",
        fontsize=8,
        loc="upper left",
    )
    legend.get_title().set_fontsize(7)
    ax.grid(axis="y", color="#eeeeee")
    return fig


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
    title = "Occupations with at least one covered task, by SOC major group"
    frame = major_group_coverage
    if "benchmark" in frame.columns:
        frame = frame.filter(pl.col("benchmark").is_null())
    thresholds = _thresholds(frame, "occupations_covered_")
    if frame.is_empty() or not thresholds or "n_occupations" not in frame.columns:
        return _placeholder(title, "No major-group coverage to draw.")
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
    ax.set_title(title)
    ax.set_xlim(0, float(total.max()) * 1.12 + 1 if total.size else 1)
    ax.legend(frameon=False, loc="lower right", fontsize=8)
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
    title = "Share of US work hours by benchmark coverage of the tasks"
    levels = hours_by_coverage_level(occupation_coverage)
    if levels.is_empty() or levels["hours"].sum() <= 0:
        return _placeholder(title, "No occupations with hours data.")
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
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlim(0, 1)
    ax.set_xlabel("Share of annual work hours (O*NET task time shares x OEWS hours)")
    ax.set_title(title)
    fig.legend(frameon=False, loc="outside lower center", ncol=3, fontsize=8)
    return fig


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
        return _placeholder(title, f"labeler_validation lacks {sorted(needed - set(validation.columns))}")
    rows = validation.filter(pl.col("metric").is_in(list(metrics)) & pl.col("value").is_not_null())
    if rows.is_empty():
        return _placeholder(title, "No validation metrics (no human-labeled prompts were labeled).")
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
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_title(VALIDATION_TITLES.get(metric, metric))
        ax.grid(axis="x", color="#eeeeee")
    axes[0].set_yticks(range(len(benchmarks)), benchmarks)
    axes[0].set_ylim(-0.6, len(benchmarks) - 0.4)
    fig.suptitle(title)
    fig.legend(frameon=False, loc="outside lower center", ncol=min(len(series), 4), fontsize=8)
    return fig


# --- 6. per-occupation model-score heatmap ------------------------------------------------------------------


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@styled
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
        return _placeholder(title, f"occupation_model_scores lacks {sorted(needed - set(scores.columns))}")
    frame = scores
    if "min_prompts" in frame.columns and frame.height:
        available = sorted(frame["min_prompts"].drop_nulls().unique().to_list())
        chosen = min_prompts if min_prompts in available else (max(available) if available else None)
        if chosen is not None:
            frame = frame.filter(pl.col("min_prompts") == chosen)
        min_prompts = chosen
    frame = frame.filter(pl.col("plain_mean").is_not_null())
    if frame.is_empty():
        return _placeholder(title, "No model results joined to labeled prompts.")
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
    titles: dict[str, str] = {}
    if occupations is not None and {"onet_soc_code", "title"} <= set(occupations.columns):
        titles = dict(occupations.select("onet_soc_code", "title").unique("onet_soc_code").iter_rows())
    elif "title" in frame.columns:
        titles = dict(frame.select("onet_soc_code", "title").unique("onet_soc_code").iter_rows())
    labels = [_short(f"{code} {titles.get(code) or ''}".strip(), 48) for code in occ_order]
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
    width = 2 * (0.32 * len(top_models) + 1.0) + 3.6
    fig = new_figure(max(width, 8.0), 0.24 * len(occ_order) + 2.8)
    axes = fig.subplots(1, 2, sharey=True)
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
    fig.suptitle(title)
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
        return _placeholder(title, _lacks("labeler_reliability", needed, reliability))
    rows = reliability.filter(pl.col("benchmark") == "all").sort("mean_predicted")
    if rows.is_empty():
        return _placeholder(title, "No labels of judge-sampled prompts to compare.")
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
    ax.legend(frameon=False, loc="upper left", fontsize=8)
    return fig


# --- registry, saving, metadata -----------------------------------------------------------------------------


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
        "Covered occupations per SOC major group",
        ("major_group_coverage",),
        major_group_figure,
    ),
    FigureSpec(
        "hours_by_coverage",
        "Share of work hours by coverage level",
        ("occupation_coverage",),
        hours_by_coverage_figure,
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


def render_figures(tables: Mapping[str, pl.DataFrame]) -> dict[str, Figure]:
    """Every figure of FIGURES whose tables are in `tables` (name -> Figure). `occupations` may be passed as
    a table (onet_soc_code, title) to label the heatmap rows."""
    figures: dict[str, Figure] = {}
    for spec in FIGURES:
        if not all(t in tables for t in spec.tables):
            continue
        extra = {t: tables[t] for t in spec.optional_tables if t in tables}
        figures[spec.name] = spec.draw(*(tables[t] for t in spec.tables), **extra)
    return figures


def figure_png_bytes(fig: Figure, dpi: int = 150) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def figure_markdown(fig: Figure, alt: str = "figure", dpi: int = 80) -> str:
    """Markdown image with the PNG inlined as base64 (what Dagster's MetadataValue.md renders)."""
    encoded = base64.b64encode(figure_png_bytes(fig, dpi=dpi)).decode("ascii")
    return f"![{alt}](data:image/png;base64,{encoded})"


def save_figure(fig: Figure, directory: str | Path, name: str, dpi: int = 150) -> dict[str, Path]:
    """Write `<name>.png` and `<name>.svg` into `directory`; returns {'png': path, 'svg': path}."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"png": directory / f"{name}.png", "svg": directory / f"{name}.svg"}
    with matplotlib.rc_context(_RC):
        fig.savefig(paths["png"], format="png", dpi=dpi, metadata={"Software": None})
        fig.savefig(paths["svg"], format="svg", metadata={"Date": None, "Creator": None})
    return paths
