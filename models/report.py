"""The report summary (`summary.md`) and Markdown previews of tables, generated from the tables alone.

Every number in the summary is read from a table passed in -- none is typed here -- and every finding says
where it comes from. A finding whose table is missing or empty is replaced by a line saying so, so nothing is
dropped silently. Limitations list the benchmarks included, the labeler with its measured accuracy, and how
much of O*NET carries task ratings and of the economy hours data.

No dagster here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from models.figures import VALIDATION_METRICS, VALIDATION_TITLES

# Upstream names this module relies on (change here if an estimator renames them).
MODEL_EXPOSURE_WAGE = "exposure_wage"
MODEL_IMPORTANCE = "importance_fe"
MODEL_WORKBANK = "workbank"
WAGE_TERM = "np.log(wage_bill)"
ZONE_NAMES = {
    "green_light": "green-light",
    "red_light": "red-light",
    "rnd_opportunity": "R&D-opportunity",
    "low_priority": "low-priority",
    "none": "unzoned",
}

Tables = Mapping[str, pl.DataFrame]


# --- formatting -----------------------------------------------------------------------------------


def _finite(value: Any) -> bool:
    return value is not None and isinstance(value, int | float) and math.isfinite(float(value))


def pct(value: Any, digits: int = 1) -> str:
    return f"{100 * float(value):.{digits}f}%" if _finite(value) else "n/a"


def num(value: Any) -> str:
    if not _finite(value):
        return "n/a"
    return f"{int(round(float(value))):,}"


def big(value: Any) -> str:
    """3.2 billion, 410 million, 12,345."""
    if not _finite(value):
        return "n/a"
    value = float(value)
    for size, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if abs(value) >= size:
            return f"{value / size:.1f} {word}"
    return num(value)


def ratio(value: Any) -> str:
    return f"{float(value):.2f}" if _finite(value) else "n/a"


def ci(low: Any, high: Any, fmt: Callable[[Any], str] = pct) -> str:
    if not (_finite(low) and _finite(high)):
        return "95% CI not available"
    return f"95% CI {fmt(low)}\u2013{fmt(high)}"


def _plural(n: Any, word: str) -> str:
    return f"{word}" if _finite(n) and int(n) == 1 else f"{word}s"


def _cell(value: Any, digits: int) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 10 ** (-digits)):
            return f"{value:.{digits}g}"
        return f"{value:,.{digits}f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(
    frame: pl.DataFrame, columns: Sequence[str] | None = None, *, max_rows: int = 25, digits: int = 3
) -> str:
    """A GitHub-flavoured Markdown table of the first `max_rows` rows (a note says how many were left out)."""
    columns = [c for c in (columns or frame.columns) if c in frame.columns]
    if not columns:
        return "_(no columns)_"
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in frame.select(columns).head(max_rows).iter_rows():
        lines.append("| " + " | ".join(_cell(v, digits) for v in row) + " |")
    if frame.height > max_rows:
        lines.append(f"\n_{frame.height - max_rows} more rows not shown ({frame.height} in all)._")
    if frame.height == 0:
        lines.append("\n_(no rows)_")
    return "\n".join(lines)


PREVIEW_COLUMNS: dict[str, list[str]] = {
    "coverage_headline": ["scope", "threshold", "metric", "value", "numerator", "denominator", "detail"],
    "major_group_coverage": [
        "major_group_code",
        "major_group_title",
        "n_occupations",
        "occupations_covered_1",
        "occupations_covered_5",
        "occupation_share_covered_1",
        "occupation_share_covered_5",
    ],
    "workbank_coverage": ["zone", "threshold", "n_tasks", "n_covered", "share", "ci_low", "ci_high"],
    "labeler_validation": [
        "benchmark",
        "labeler",
        "labeler_version",
        "metric",
        "value",
        "ci_low",
        "ci_high",
        "n",
    ],
    "coverage_regressions": ["model", "term", "coef", "se", "p", "ci_low", "ci_high", "n", "n_clusters"],
    "coverage_sensitivity": ["dimension", "variant", "metric", "value", "labeler"],
}


def table_preview(table: str, frame: pl.DataFrame, max_rows: int = 25) -> str:
    """Markdown preview of a table for the Dagster UI (pooled rows first for the headline)."""
    if table == "coverage_headline" and "scope" in frame.columns:
        frame = frame.filter(pl.col("scope") == "all")
    columns = PREVIEW_COLUMNS.get(table)
    return markdown_table(frame, columns, max_rows=max_rows)


# --- reading the tables ---------------------------------------------------------------------------


def _table(tables: Tables, name: str) -> pl.DataFrame | None:
    frame = tables.get(name)
    return frame if frame is not None and frame.height else None


def _headline_values(headline: pl.DataFrame) -> dict[tuple[int, str], dict[str, Any]]:
    pooled = headline.filter(pl.col("scope") == "all") if "scope" in headline.columns else headline
    return {(int(r["threshold"]), r["metric"]): r for r in pooled.iter_rows(named=True)}


def _with_ci(row: Mapping[str, Any]) -> str:
    if _finite(row.get("ci_low")) and _finite(row.get("ci_high")):
        return f", {ci(row['ci_low'], row['ci_high'])}"
    return ""


def labeler_of(tables: Tables) -> str | None:
    for name in ("task_coverage", "coverage_headline", "occupation_coverage"):
        frame = tables.get(name)
        if frame is not None and "labeler" in frame.columns and frame.height:
            values = frame["labeler"].drop_nulls().unique().sort().to_list()
            if values:
                return values[0]
    return None


# --- findings -------------------------------------------------------------------------------------


def headline_estimate_findings(tables: Tables) -> list[str]:
    """The published headline (headline_estimates, issue 16): the best-supported estimate with its interval,
    and what counting every label as true gives instead; nothing when the table is missing."""
    from models.estimates import published_sentences

    estimates = _table(tables, "headline_estimates")
    sentences = published_sentences(estimates) if estimates is not None else []
    if not sentences:
        return []
    return [
        "**Headline.** " + " ".join(sentences) + " The lines below count the labels as they are "
        "(headline_estimates; docs/estimates.md)."
    ]


def coverage_findings(tables: Tables) -> list[str]:
    headline = _table(tables, "coverage_headline")
    if headline is None:
        return ["Coverage headline not available: the coverage_headline table is missing or empty."]
    values = _headline_values(headline)
    thresholds = sorted({t for t, _ in values})
    out = headline_estimate_findings(tables)

    def phrase(metric: str, noun: str) -> str | None:
        rows = [(t, values[(t, metric)]) for t in thresholds if (t, metric) in values]
        if not rows:
            return None
        total = rows[0][1]["denominator"]
        parts = [
            f"{num(r['numerator'])} ({pct(r['value'])}{_with_ci(r)}) have at least {t} {_plural(t, 'prompt')}"
            for t, r in rows
        ]
        return f"Of the {num(total)} {noun}, " + " and ".join(parts)

    tasks = phrase("tasks_covered", "O*NET tasks")
    if tasks:
        out.append(f"**Tasks.** {tasks} labeled with them (coverage_headline).")
    occupations = phrase("occupations_covered", "occupations with task statements")
    if occupations:
        out.append(f"**Occupations.** {occupations} on at least one of their tasks (coverage_headline).")
    for t in thresholds:
        row = values.get((t, "major_groups_uncovered"))
        if row is None:
            continue
        k = int(row["value"] or 0)
        if k == 0:
            out.append(
                f"**Major groups.** At >= {t} {_plural(t, 'prompt')}, every one of the "
                f"{num(row['denominator'])} SOC major groups has at least one covered occupation."
            )
        else:
            out.append(
                f"**Major groups.** At >= {t} {_plural(t, 'prompt')}, {k} of the {num(row['denominator'])} "
                f"SOC major groups have no covered occupation: {row['detail']}."
            )
    hours = [
        (t, values[(t, "hours_share_covered")]) for t in thresholds if (t, "hours_share_covered") in values
    ]
    if hours:
        parts = [
            f"{pct(r['value'])}{_with_ci(r)} on tasks with at least {t} {_plural(t, 'prompt')}"
            for t, r in hours
        ]
        lowest = hours[0][1]
        uncovered = 1 - lowest["value"] if _finite(lowest["value"]) else None
        out.append(
            f"**Work hours.** Of the {big(lowest['denominator'])} annual US work hours in occupations with "
            f"hours data, {' and '.join(parts)}; {pct(uncovered)} are spent on tasks without a single "
            f"labeled prompt{'s' if hours[0][0] > 1 else ''} (coverage_headline)."
        )
    per_bench = (
        headline.filter((pl.col("scope") != "all") & (pl.col("metric") == "tasks_covered"))
        if "scope" in headline.columns
        else headline.head(0)
    )
    if per_bench.height and thresholds:
        t = thresholds[0]
        top = per_bench.filter(pl.col("threshold") == t).sort(
            ["numerator", "scope"], descending=[True, False]
        )
        listed = ", ".join(
            f"{r['scope']} ({num(r['numerator'])} tasks, {pct(r['value'])})"
            for r in top.head(3).iter_rows(named=True)
        )
        out.append(
            f"**Benchmarks.** The benchmarks whose prompts cover the most tasks (>= {t} "
            f"{_plural(t, 'prompt')}) are {listed} (coverage_headline, per benchmark)."
        )
    return out


def _contrast_rows(tables: Tables) -> pl.DataFrame | None:
    regressions = _table(tables, "coverage_regressions")
    if regressions is None or not {"contrast", "ratio"} <= set(regressions.columns):
        return None
    rows = regressions.filter(pl.col("contrast").is_not_null() & pl.col("ratio").is_not_null())
    return rows if rows.height else None


def _exposure_ratio(tables: Tables) -> tuple[float, float, float, str] | None:
    contrasts = _contrast_rows(tables)
    if contrasts is not None:
        rows = contrasts.filter(pl.col("model") == MODEL_EXPOSURE_WAGE)
        if "exposure_source" in rows.columns:
            human = rows.filter(pl.col("exposure_source") == "human")
            rows = human if human.height else rows
        if rows.height:
            r = rows.row(0, named=True)
            return r["ratio"], r["ci_low"], r["ci_high"], "coverage_regressions"
    sensitivity = _table(tables, "coverage_sensitivity")
    if sensitivity is not None and {"dimension", "variant", "metric", "value"} <= set(sensitivity.columns):
        rows = sensitivity.filter((pl.col("dimension") == "exposure_labels") & (pl.col("variant") == "human"))
        found = dict(rows.select("metric", "value").iter_rows())
        if _finite(found.get("exposed_ratio")):
            return (
                found["exposed_ratio"],
                found.get("exposed_ratio_ci_low"),
                found.get("exposed_ratio_ci_high"),
                "coverage_sensitivity",
            )
    return None


def _excludes_one(low: Any, high: Any) -> str:
    if _finite(low) and _finite(high) and (low > 1 or high < 1):
        return ""
    return " -- an interval that includes 1, i.e. no clear difference"


def regression_findings(tables: Tables) -> list[str]:
    out = []
    exposure = _exposure_ratio(tables)
    if exposure is not None:
        r, low, high, source = exposure
        out.append(
            f"**Exposure.** At the median occupation wage bill, tasks exposed to LLMs (Eloundou et al. "
            f"E1/E2) are {ratio(r)} times as likely as non-exposed tasks to have >= 5 prompts "
            f"({ci(low, high, ratio)}{_excludes_one(low, high)}; logit with occupation-clustered SEs, "
            f"{source})."
        )
    else:
        out.append(
            "Exposure finding not available: no exposure contrast in coverage_regressions or "
            "coverage_sensitivity."
        )
    probabilities = _table(tables, "coverage_adjusted_probabilities")
    if probabilities is not None and {"model", "wage_bill", "exposed", "prob"} <= set(probabilities.columns):
        grid = probabilities.filter(
            (pl.col("model") == MODEL_EXPOSURE_WAGE)
            & pl.col("wage_bill").is_not_null()
            & pl.col("prob").is_not_null()
        )
        if "exposure_source" in grid.columns and grid["exposure_source"].n_unique() > 1:
            grid = grid.filter(pl.col("exposure_source") == "human")
        parts = []
        for value, label in ((1, "exposed"), (0, "non-exposed")):
            series = grid.filter(pl.col("exposed") == value).sort("wage_bill")
            if series.height >= 2:
                lo, hi = series.row(0, named=True), series.row(-1, named=True)
                parts.append(
                    f"for {label} tasks from {pct(lo['prob'])} ({ci(lo['ci_low'], lo['ci_high'])}) in an "
                    f"occupation with a ${lo['wage_bill'] / 1e9:.1f}B wage bill to {pct(hi['prob'])} "
                    f"({ci(hi['ci_low'], hi['ci_high'])}) at ${hi['wage_bill'] / 1e9:.0f}B"
                )
        if parts:
            out.append(
                "**Wage bill.** The adjusted probability of >= 5 prompts moves "
                + "; ".join(parts)
                + " (coverage_adjusted_probabilities)."
            )
    regressions = _table(tables, "coverage_regressions")
    if regressions is not None and {"term", "coef", "ci_low", "ci_high"} <= set(regressions.columns):
        wage = regressions.filter((pl.col("model") == MODEL_EXPOSURE_WAGE) & (pl.col("term") == WAGE_TERM))
        if wage.height and _finite(wage["coef"][0]):
            r = wage.row(0, named=True)
            factor = math.log(2)
            out.append(
                f"Each doubling of an occupation's wage bill multiplies the odds that its tasks are "
                f"covered by {ratio(math.exp(r['coef'] * factor))} "
                f"({ci(math.exp(r['ci_low'] * factor), math.exp(r['ci_high'] * factor), ratio)}; "
                "coverage_regressions)."
            )
    contrasts = _contrast_rows(tables)
    if contrasts is not None:
        importance_rows = contrasts.filter(pl.col("model") == MODEL_IMPORTANCE)
        sizes: dict[str, Any] = {}
        if regressions is not None and {"item", "value"} <= set(regressions.columns):
            sizes = dict(
                regressions.filter((pl.col("model") == MODEL_IMPORTANCE) & pl.col("item").is_not_null())
                .select("item", "value")
                .iter_rows()
            )
        sample = (
            f"; {num(sizes['n_tasks_kept'])} of {num(sizes['n_tasks_rated'])} rated tasks in "
            f"{num(sizes['n_occupations_kept'])} occupations, {num(sizes['n_occupations_dropped_no_variation'])} "
            "occupations with no variation in coverage dropped"
            if {"n_tasks_kept", "n_tasks_rated", "n_occupations_kept", "n_occupations_dropped_no_variation"}
            <= set(sizes)
            else ""
        )
        for r in importance_rows.filter(pl.col("contrast").str.starts_with("importance quintile")).iter_rows(
            named=True
        ):
            out.append(
                f"**Importance.** Within occupations, {r['contrast']}: the most important tasks are "
                f"{ratio(r['ratio'])} times as likely to be covered as the least important "
                f"(Q5/Q1 at >= 5 prompts, {ci(r['ci_low'], r['ci_high'], ratio)}"
                f"{_excludes_one(r['ci_low'], r['ci_high'])}; logit with occupation fixed effects and "
                f"occupation-clustered SEs{sample}; coverage_regressions)."
            )
        for r in importance_rows.filter(pl.col("contrast").str.starts_with("exposed vs not")).iter_rows(
            named=True
        ):
            out.append(
                f"Within occupations, holding importance as observed, exposed tasks are {ratio(r['ratio'])} "
                f"times as likely to have >= 5 prompts as non-exposed ones ({ci(r['ci_low'], r['ci_high'], ratio)}"
                f"{_excludes_one(r['ci_low'], r['ci_high'])}; coverage_regressions)."
            )
        for r in contrasts.filter(pl.col("model") == MODEL_WORKBANK).iter_rows(named=True):
            out.append(
                f"**WORKBank ratings.** {r['contrast']}: the coverage probability changes by a factor of "
                f"{ratio(r['ratio'])} ({ci(r['ci_low'], r['ci_high'], ratio)}"
                f"{_excludes_one(r['ci_low'], r['ci_high'])}; coverage_regressions)."
            )
    notes = []
    if regressions is not None and {"model", "note", "coef"} <= set(regressions.columns):
        for model, group in regressions.group_by("model", maintain_order=True):
            if group["coef"].null_count() == group.height:
                note = next((n for n in group["note"].to_list() if n), "no reason recorded")
                notes.append(f"Model {model[0]} was not estimated: {note}.")
    return out + notes


def workbank_findings(tables: Tables) -> list[str]:
    frame = _table(tables, "workbank_coverage")
    if frame is None or not {"zone", "threshold", "share"} <= set(frame.columns):
        return ["WORKBank finding not available: the workbank_coverage table is missing or empty."]
    t = int(frame["threshold"].max())
    rows = frame.filter(pl.col("threshold") == t).sort("zone")
    parts = [
        f"{ZONE_NAMES.get(r['zone'], r['zone'])} {pct(r['share'])} ({ci(r.get('ci_low'), r.get('ci_high'))}, "
        f"{num(r.get('n_covered'))} of {num(r.get('n_tasks'))})"
        for r in rows.iter_rows(named=True)
    ]
    return [
        f"**Worker desire zones.** Among WORKBank-rated tasks, the share with at least {t} "
        f"{_plural(t, 'prompt')} is: " + "; ".join(parts) + " (Wilson intervals; workbank_coverage)."
    ]


def score_findings(tables: Tables) -> list[str]:
    scores = _table(tables, "occupation_model_scores")
    if scores is None or not {"difference", "difference_ci_low", "difference_ci_high"} <= set(scores.columns):
        return [
            "Model-score finding not available: occupation_model_scores is missing or empty (model results "
            "exist only for some benchmarks)."
        ]
    if "min_prompts" in scores.columns:
        scores = scores.filter(pl.col("min_prompts") == scores["min_prompts"].max())
    weighted = scores.filter(pl.col("difference").is_not_null())
    n_pairs = scores.height
    if not weighted.height:
        return [
            f"**Model scores.** {num(n_pairs)} occupation-model pairs have scores, but none has a task with "
            "enough prompts for the O*NET-weighted mean (occupation_model_scores)."
        ]
    differs = weighted.filter((pl.col("difference_ci_low") > 0) | (pl.col("difference_ci_high") < 0))
    top = (
        weighted.with_columns(pl.col("difference").abs().alias("_abs"))
        .sort(["_abs", "onet_soc_code", "model"], descending=[True, False, False])
        .row(0, named=True)
    )
    titles = {}
    occupations = tables.get("occupation_coverage")
    if occupations is not None and {"onet_soc_code", "title"} <= set(occupations.columns):
        titles = dict(occupations.select("onet_soc_code", "title").iter_rows())
    name = titles.get(top["onet_soc_code"]) or top["onet_soc_code"]
    min_prompts = f" (tasks with >= {top['min_prompts']} prompts)" if "min_prompts" in top else ""
    return [
        f"**Model scores.** The O*NET-weighted mean score{min_prompts} differs from the plain mean score by "
        f"more than its 95% bootstrap interval for {num(differs.height)} of the {num(weighted.height)} "
        f"occupation-model pairs that have one; the largest difference is {top['difference']:+.3f} "
        f"({ci(top['difference_ci_low'], top['difference_ci_high'], lambda v: f'{v:+.3f}')}) for "
        f"{top['model']} on {name} (occupation_model_scores)."
    ]


def sensitivity_findings(tables: Tables) -> list[str]:
    frame = _table(tables, "coverage_sensitivity")
    if frame is None or not {"dimension", "variant", "metric", "value"} <= set(frame.columns):
        return ["Sensitivity analysis not available: the coverage_sensitivity table is missing or empty."]
    out = []
    weighting = frame.filter(pl.col("dimension") == "hours_weighting")
    if weighting.height:
        values = {(r["variant"], r["metric"]): r["value"] for r in weighting.iter_rows(named=True)}
        metrics = sorted({m for _, m in values})
        parts = [
            f"{pct(values.get(('equal', m)))} instead of {pct(values.get(('pi', m)))} "
            f"({m.removeprefix('hours_share_covered_')}+ prompts)"
            for m in metrics
            if ("equal", m) in values and ("pi", m) in values
        ]
        if parts:
            out.append(
                "**Sensitivity: hours weighting.** Splitting each occupation's hours equally over its tasks "
                "instead of by O*NET time shares gives a covered-hours share of "
                + "; ".join(parts)
                + " (coverage_sensitivity)."
            )
    exposure = frame.filter((pl.col("dimension") == "exposure_labels") & (pl.col("variant") == "gpt4"))
    found = dict(exposure.select("metric", "value").iter_rows()) if exposure.height else {}
    if _finite(found.get("exposed_ratio")):
        out.append(
            f"**Sensitivity: exposure labels.** With GPT-4's exposure ratings instead of the human ones, "
            f"exposed tasks are {ratio(found['exposed_ratio'])} times as likely to be covered "
            f"({ci(found.get('exposed_ratio_ci_low'), found.get('exposed_ratio_ci_high'), ratio)}; "
            "coverage_sensitivity)."
        )
    labelers = frame.filter(pl.col("dimension") == "labeler")
    if labelers.height:
        parts = [
            f"{r['variant']}: {pct(r['value'])} ({r['metric']})"
            for r in labelers.filter(pl.col("metric").str.starts_with("tasks_covered")).iter_rows(named=True)
        ]
        out.append(
            "**Sensitivity: labeler.** Task coverage by labeler: "
            + "; ".join(parts)
            + " (coverage_sensitivity)."
        )
    return out or ["The sensitivity table holds no hours-weighting, exposure or labeler variants."]


# --- limitations ----------------------------------------------------------------------------------


def benchmark_limitations(tables: Tables) -> list[str]:
    benchmarks = _table(tables, "benchmarks")
    if benchmarks is None:
        return ["The benchmarks table is missing: the benchmarks included cannot be listed."]
    rows = benchmarks.sort("benchmark")
    with_results = rows.filter(pl.col("n_results") > 0) if "n_results" in rows.columns else rows.head(0)
    listed = ", ".join(
        f"{r['benchmark']}"
        + (f" {r['version']}" if r.get("version") else "")
        + f" ({num(r.get('n_prompts'))})"
        for r in rows.iter_rows(named=True)
    )
    total = rows["n_prompts"].sum() if "n_prompts" in rows.columns else None
    return [
        f"**Benchmarks included.** {rows.height} benchmarks with {num(total)} prompts in all: {listed}. "
        f"Per-item model results are available for {with_results.height} of them "
        f"({', '.join(with_results['benchmark'].to_list()) or 'none'}), so model scores cover only their "
        "occupations."
    ]


def labeler_limitations(tables: Tables, labeler_model: str | None = None) -> list[str]:
    labeler = labeler_of(tables)
    validation = _table(tables, "labeler_validation")
    who = f"the **{labeler}** labeler" if labeler else "the labeler"
    model = f" (model: {labeler_model})" if labeler_model else ""
    out = [
        f"**Labeler.** Prompts were mapped to O*NET tasks by {who}{model}; coverage counts a prompt for "
        "every "
        "task it is labeled with, so labeling errors move every number above."
    ]
    out.extend(label_depth_limitation(tables))
    if validation is None:
        out.append("Its accuracy was not measured: the labeler_validation table is missing or empty.")
        return out
    rows = validation.filter(pl.col("metric").is_in(list(VALIDATION_METRICS)) & pl.col("value").is_not_null())
    if labeler and "labeler" in rows.columns:
        rows = rows.filter(pl.col("labeler") == labeler)
    if not rows.height:
        out.append(
            "Its accuracy against human labels could not be measured (no human-labeled prompt was labeled)."
        )
        return out
    order = {m: i for i, m in enumerate(VALIDATION_METRICS)}
    rows = rows.with_columns(pl.col("metric").replace_strict(order, default=99).alias("_order")).sort(
        "benchmark", "_order"
    )
    parts = [
        f"{VALIDATION_TITLES.get(r['metric'], r['metric']).lower()} on {r['benchmark']} {pct(r['value'], 0)} "
        f"({ci(r['ci_low'], r['ci_high'], lambda v: pct(v, 0))}, n = {num(r['n'])})"
        for r in rows.iter_rows(named=True)
    ]
    out.append(
        "Measured against the human labels shipped with the benchmarks: "
        + "; ".join(parts)
        + " (labeler_validation, bootstrap intervals)."
    )
    return out


def label_quality_findings(tables: Tables) -> list[str]:
    """How far the labels behind every count can be trusted: the labeler's task precision and recall (and
    work decision) against the task-level reference, with the judge's own reproducibility beside them
    (labeler_validation, ref_* metrics, pooled over benchmarks)."""
    validation = _table(tables, "labeler_validation")
    labeler = labeler_of(tables)
    if validation is None or "metric" not in validation.columns:
        return ["**Label quality.** Not measured: labeler_validation is missing, so the counts below carry an "
                "unknown labeling error."]
    pooled = validation.filter((pl.col("benchmark") == "all") & pl.col("metric").str.starts_with("ref_"))
    mine = pooled.filter(pl.col("labeler") == labeler) if labeler else pooled.head(0)
    if mine.is_empty():
        return ["**Label quality.** The labels were not measured against the task-level reference (no "
                "reference prompt is labeled by the current labeler)."]
    # several versions of one labeler (a cached earlier fit): the published one is in prompt_task_labels
    version = mine.sort("labeler_version", descending=True)["labeler_version"][0]
    row = {r["metric"]: r for r in mine.filter(pl.col("labeler_version") == version).iter_rows(named=True)}
    ceiling = {r["metric"]: r for r in pooled.filter(pl.col("labeler") == "reference_pass_agreement")
               .iter_rows(named=True)}

    # A labeler fitted on the reference is quoted out of sample (leave one benchmark out, ref_cv_*).
    cross_validated = "ref_cv_task_f1" in row
    prefix = "ref_cv_" if cross_validated else "ref_"

    def stat(metric: str) -> str:
        r = row.get(prefix + metric)
        return f"{pct(r['value'], 0)} ({ci(r['ci_low'], r['ci_high'], lambda v: pct(v, 0))})" if r else "n/a"

    n = row.get(prefix + "task_f1", {}).get("n")
    judge = ceiling.get("ref_task_f1")
    how = ("cross-validated leaving one benchmark out, on the development split"
           if cross_validated else "on the reference prompts")
    in_sample = row.get("ref_task_f1")
    return [
        f"**Label quality.** Measured against the task-level reference (an LLM judge's labels of a random "
        f"sample of prompts; {how}, {num(n)} prompt-passes), the labels' task precision is "
        f"{stat('task_precision')} and recall {stat('task_recall')} (task F1 {stat('task_f1')}; the judge's "
        f"two passes agree at {pct(judge['value'], 0) if judge else 'n/a'}); the work / not-work decision is "
        f"right for {stat('work_accuracy')} of prompts and the first occupation for "
        f"{stat('first_occupation_agreement')} of work prompts (labeler_validation"
        + (f"; on the reference it was fitted on, task F1 {pct(in_sample['value'], 0)}" if cross_validated
           and in_sample else "")
        + "). Counts from these labels alone carry these errors; the estimates that correct them with the "
        "judge's sample are below."
    ]


QUANTITY_WORDS = {"tasks_covered": "tasks", "occupations_covered": "occupations",
                  "hours_share_covered": "the hours share", "major_groups_covered": "major groups"}


def estimate_limitations(tables: Tables) -> list[str]:
    """How well the published estimates held up when checked on the judge sample itself (estimate_split_check:
    estimate from one half, compare with the other): the model-assisted interval at >= 5 prompts, the bounds at
    >= 1. And whether the labeler's labels of the judge-sampled texts are out of sample."""
    check = _table(tables, "estimate_split_check")
    out: list[str] = []
    if check is not None and {"estimator", "coverage", "quantity", "threshold"} <= set(check.columns):
        published = ((pl.col("estimator") == "model_assisted") & (pl.col("threshold") != 1)) | (
            (pl.col("estimator") == "bounds") & (pl.col("threshold") == 1))
        rows = check.filter(published & (pl.col("scope") == "all"))
        if "check" not in rows.columns:
            rows = rows.with_columns(pl.lit("split_half").alias("check"))
        described = {"split_half": "one random half", "split_fifth": "one random fifth"}
        pieces = []
        for name, part in rows.partition_by("check", as_dict=True, maintain_order=True).items():
            key = name[0] if isinstance(name, tuple) else name

            def amount(r: dict, key: str) -> str:
                return pct(r[key], 1) if "share" in r["quantity"] else num(r[key])

            parts = [
                f"{QUANTITY_WORDS.get(r['quantity'], r['quantity'])} at >= {r['threshold']}: "
                f"{pct(r['coverage'], 0)}"
                + (f" (mean error {amount(r, 'mean_error')} against {amount(r, 'mean_truth')})"
                   if r["estimator"] == "model_assisted" else " (bounds)")
                for r in part.sort("threshold", "quantity", descending=[True, False]).iter_rows(named=True)
            ]
            n = part["n_replications"][0] if "n_replications" in part.columns else None
            pieces.append(f"estimated from {described.get(str(key), str(key))} of each benchmark's judge sample "
                          f"({num(n)} splits): {'; '.join(parts)}")
        if pieces:
            out.append(
                "**How far the headline's intervals can be trusted.** Checked against the judge's own labels of "
                "the whole judge sample, the published 95% interval contained the judge's value, "
                + "; and, ".join(pieces) + ". Where that share is far below 95%, read the interval as too "
                "narrow and the error as the size of the miss (estimate_split_check). The headline itself "
                "imputes about 93% of the texts, more than either check, so its extrapolation (the ceiling of the "
                "bounds at >= 1 above all) rests on the imputation model more than the checks can show."
            )
    validation = _table(tables, "labeler_validation")
    if validation is not None and "metric" in validation.columns and \
            validation.filter(pl.col("metric").str.starts_with("ref_cv_")).height:
        out.append(
            "**Labeler fitted on the judge sample.** The calibrated offline labeler was fitted on the same "
            "reference texts that serve as the judge sample. The estimates therefore use its cross-validated "
            "labels of those texts (models/labeling/selector_oof.json: each from the fold that never saw the "
            "text's benchmark), so the correction sees the labeler as it is on new benchmarks; the published "
            "labels themselves stay in sample there. A judge sample drawn by the user (BENCHMAP_JUDGE_SAMPLE) "
            "has no such overlap."
        )
    return out


def label_depth_limitation(tables: Tables) -> list[str]:
    """How much coverage rests on lower-ranked labels (coverage_sensitivity, dimension label_depth)."""
    sensitivity = _table(tables, "coverage_sensitivity")
    if sensitivity is None or "dimension" not in sensitivity.columns:
        return []
    depth = sensitivity.filter(pl.col("dimension") == "label_depth")
    values = {(r["variant"], r["metric"]): r["value"] for r in depth.iter_rows(named=True)}
    top1, every = values.get(("top1", "tasks_covered_1")), values.get(("all", "tasks_covered_1"))
    top1_5, every_5 = values.get(("top1", "tasks_covered_5")), values.get(("all", "tasks_covered_5"))
    if top1 is None or every is None:
        return []
    return [
        f"**Label depth.** Counting only each prompt's top-ranked task, {pct(top1, 1)} of tasks have at least one "
        f"prompt, against {pct(every, 1)} with every label the labeler kept"
        + (f" ({pct(top1_5, 1)} against {pct(every_5, 1)} at five prompts)" if top1_5 is not None and every_5
           is not None else "")
        + " (coverage_sensitivity, label_depth)."
    ]


def data_limitations(tables: Tables, onet_tasks: pl.DataFrame | None = None) -> list[str]:
    out = []
    if onet_tasks is not None and "has_ratings" in onet_tasks.columns and onet_tasks.height:
        rated = int(onet_tasks["has_ratings"].sum())
        out.append(
            f"**Task ratings.** O*NET importance ratings are available for {num(rated)} of "
            f"{num(onet_tasks.height)} tasks ({pct(rated / onet_tasks.height)}); the importance model uses "
            "only rated tasks (onet_tasks)."
        )
    else:
        regressions = _table(tables, "coverage_regressions")
        if regressions is not None and {"item", "value", "model"} <= set(regressions.columns):
            items = dict(
                regressions.filter(pl.col("model") == MODEL_IMPORTANCE)
                .select("item", "value")
                .drop_nulls()
                .iter_rows()
            )
            if "n_tasks_without_importance" in items and "n_tasks_input" in items:
                rated = items["n_tasks_input"] - items["n_tasks_without_importance"]
                out.append(
                    f"**Task ratings.** O*NET importance ratings are available for {num(rated)} of "
                    f"{num(items['n_tasks_input'])} tasks ({pct(rated / items['n_tasks_input'])}); the "
                    "importance model uses only those (coverage_regressions)."
                )
        if not out:
            out.append(
                "**Task ratings.** Coverage of O*NET task ratings is not known here (onet_tasks not given)."
            )
    occupations = _table(tables, "occupation_coverage")
    if occupations is not None and "occupation_annual_hours" in occupations.columns:
        missing = int(occupations["occupation_annual_hours"].is_null().sum())
        out.append(
            f"**Hours data.** {num(missing)} of {num(occupations.height)} occupations have no OEWS "
            "employment/hours match and are left out of the work-hours shares (occupation_coverage)."
        )
    out.append(
        "**What coverage means.** A task is covered when benchmark prompts are labeled with it; this says "
        "nothing about how well models perform the task, and a prompt labeled with several tasks counts "
        "for each."
    )
    return out


def index_findings(benchmark_index: str, membership: pl.DataFrame | None) -> list[str]:
    """Which benchmark index the numbers are for, its members, and why each other landed benchmark is out
    (benchmark_index_membership)."""
    if membership is None or membership.is_empty() or "benchmark_index" not in membership.columns:
        return [f"**Index.** The numbers are for the index `{benchmark_index}`; its membership table "
                "(benchmark_index_membership) is missing, so every landed benchmark counts."]
    rows = membership.filter(pl.col("benchmark_index") == benchmark_index).sort("benchmark")
    if rows.is_empty():
        return [f"**Index.** The index `{benchmark_index}` has no rows in benchmark_index_membership."]
    first = rows.row(0, named=True)
    included = rows.filter(pl.col("included"))["benchmark"].to_list()
    out = [
        f"**Index.** Every number below is for the benchmark index **{first['title']}** (`{benchmark_index}`, "
        f"version {first['version']}, {first['index_file']}): {len(included)} of the {rows.height} landed "
        f"benchmarks count. Members: {', '.join(included) or 'none'} (benchmark_index_membership)."
    ]
    excluded = [
        f"{r['benchmark']} ({r['reason'] or 'no reason recorded'}; {r['decided_by']})"
        for r in rows.filter(~pl.col("included")).iter_rows(named=True)
    ]
    if excluded:
        out.append("**Left out of the index.** " + "; ".join(excluded) + ".")
    unknown = rows.filter(pl.col("included") & pl.col("unknown_passed").is_not_null())
    if unknown.height:
        out.append(
            f"**Unknown values let through.** {unknown.height} members passed a rule on an unknown value, "
            f"as the index allows (e.g. {unknown['unknown_passed'][0]}); benchmark_index_membership lists them."
        )
    return out


def summary_markdown(
    tables: Tables,
    *,
    onet_tasks: pl.DataFrame | None = None,
    labeler_model: str | None = None,
    export_date: str | None = None,
    missing_tables: Sequence[str] = (),
    benchmark_index: str | None = None,
    membership: pl.DataFrame | None = None,
) -> str:
    """`summary.md`: headline findings with their numbers and CIs, then the limitations that apply. With
    `benchmark_index`, `tables` hold that index's rows and the summary opens with the index and its members."""
    title = "# Which parts of the US economy do AI benchmarks measure?"
    lines = [title, ""]
    if export_date:
        lines += [
            f"_Export of {export_date}. Every number below is read from the exported tables named in "
            "brackets._",
            "",
        ]
    sections: list[tuple[str, list[str]]] = [
        *([("Benchmark index", index_findings(benchmark_index, membership))] if benchmark_index else []),
        ("Coverage", label_quality_findings(tables) + coverage_findings(tables)),
        ("What predicts coverage", regression_findings(tables) + workbank_findings(tables)),
        ("Model scores", score_findings(tables)),
        ("Robustness", sensitivity_findings(tables)),
        (
            "Limitations",
            benchmark_limitations(tables)
            + labeler_limitations(tables, labeler_model)
            + estimate_limitations(tables)
            + data_limitations(tables, onet_tasks),
        ),
    ]
    for heading, items in sections:
        lines += [f"## {heading}", ""] + [f"- {item}" for item in items] + [""]
    if missing_tables:
        lines += [f"_Tables not available for this summary: {', '.join(missing_tables)}._", ""]
    return "\n".join(lines)
