"""The report's findings: headline estimates, coverage, what predicts coverage, model scores, robustness.

Every number is read from a table passed in; a finding whose table is missing says so. Pure; no dagster.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from models.markdown import markdown_literal
from models.report.formatting import (
    MODEL_EXPOSURE_WAGE,
    MODEL_IMPORTANCE,
    MODEL_WORKBANK,
    WAGE_TERM,
    ZONE_NAMES,
    Tables,
    big,
    ci,
    finite,
    headline_values,
    num,
    pct,
    pct_for,
    plural,
    present_table,
    ratio,
    with_ci,
)

# --- findings -------------------------------------------------------------------------------------


def headline_estimate_findings(tables: Tables) -> list[str]:
    """The published headline (headline_estimates, issue 16): the best-supported estimate with its interval,
    and what counting every label as true gives instead; nothing when the table is missing."""
    from models.estimates import published_sentences

    estimates = present_table(tables, "headline_estimates")
    sentences = published_sentences(estimates) if estimates is not None else []
    if not sentences:
        return []
    return [
        "**Headline.** " + " ".join(sentences) + " The lines below count the labels as they are "
        "(headline_estimates; docs/estimates.md)."
    ]


def coverage_findings(tables: Tables, *, with_estimate: bool = True) -> list[str]:
    """The labels as counted (coverage_headline); with `with_estimate`, the published estimate first."""
    headline = present_table(tables, "coverage_headline")
    if headline is None:
        return ["Coverage headline not available: the coverage_headline table is missing or empty."]
    values = headline_values(headline)
    thresholds = sorted({t for t, _ in values})
    out = headline_estimate_findings(tables) if with_estimate else []

    def phrase(metric: str, noun: str) -> str | None:
        rows = [(t, values[(t, metric)]) for t in thresholds if (t, metric) in values]
        if not rows:
            return None
        total = rows[0][1]["denominator"]
        parts = [
            f"{num(r['numerator'])} ({pct(r['value'])}{with_ci(r)}) have at least {t} {plural(t, 'prompt')}"
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
                f"**Major groups.** At >= {t} {plural(t, 'prompt')}, every one of the "
                f"{num(row['denominator'])} SOC major groups has at least one covered occupation."
            )
        else:
            out.append(
                f"**Major groups.** At >= {t} {plural(t, 'prompt')}, {k} of the {num(row['denominator'])} "
                f"SOC major groups {'has' if k == 1 else 'have'} no covered occupation: {row['detail']}."
            )
    hours = [
        (t, values[(t, "hours_share_covered")]) for t in thresholds if (t, "hours_share_covered") in values
    ]
    if hours:
        parts = [
            f"{pct(r['value'])}{with_ci(r)} on tasks with at least {t} {plural(t, 'prompt')}"
            for t, r in hours
        ]
        lowest = hours[0][1]
        uncovered = 1 - lowest["value"] if finite(lowest["value"]) else None
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
            f"{plural(t, 'prompt')}) are {listed} (coverage_headline, per benchmark)."
        )
    return out


def _contrast_rows(tables: Tables, source: str = "coverage_regressions") -> pl.DataFrame | None:
    regressions = present_table(tables, source)
    if regressions is None or not {"contrast", "ratio"} <= set(regressions.columns):
        return None
    rows = regressions.filter(pl.col("contrast").is_not_null() & pl.col("ratio").is_not_null())
    return rows if rows.height else None


def _exposure_ratio(tables: Tables, source: str = "coverage_regressions") -> tuple[float, float, float, str] | None:
    contrasts = _contrast_rows(tables, source)
    if contrasts is not None:
        rows = contrasts.filter(pl.col("model") == MODEL_EXPOSURE_WAGE)
        if "exposure_source" in rows.columns:
            human = rows.filter(pl.col("exposure_source") == "human")
            rows = human if human.height else rows
        if rows.height:
            r = rows.row(0, named=True)
            return r["ratio"], r["ci_low"], r["ci_high"], source
    if source != "coverage_regressions":
        return None
    sensitivity = present_table(tables, "coverage_sensitivity")
    if sensitivity is not None and {"dimension", "variant", "metric", "value"} <= set(sensitivity.columns):
        rows = sensitivity.filter((pl.col("dimension") == "exposure_labels") & (pl.col("variant") == "human"))
        found = dict(rows.select("metric", "value").iter_rows())
        if finite(found.get("exposed_ratio")):
            return (
                found["exposed_ratio"],
                found.get("exposed_ratio_ci_low"),
                found.get("exposed_ratio_ci_high"),
                "coverage_sensitivity",
            )
    return None


def _excludes_one(low: Any, high: Any) -> str:
    if finite(low) and finite(high) and (low > 1 or high < 1):
        return ""
    return " -- an interval that includes 1, i.e. no clear difference"


def _exposure_finding(tables: Tables, source: str = "coverage_regressions") -> str:
    exposure = _exposure_ratio(tables, source)
    if exposure is None:
        return f"Exposure finding not available: no exposure contrast in {source}."
    r, low, high, source = exposure
    return (
        f"**Exposure.** At the median occupation wage bill, tasks exposed to LLMs (Eloundou et al. "
        f"E1/E2) are {ratio(r)} times as likely as non-exposed tasks to have >= 5 prompts "
        f"({ci(low, high, ratio)}{_excludes_one(low, high)}; {_method(source)}, {source})."
    )


def _method(source: str) -> str:
    if source == "coverage_regressions_mi":
        return "logit refitted on imputed label sets, Rubin's rules: the interval carries labeler error"
    return "logit with occupation-clustered SEs on the labels as counted"


def _wage_bill_findings(tables: Tables, regressions: pl.DataFrame | None,
                        source: str = "coverage_regressions") -> list[str]:
    out = []
    # the adjusted-probability grid is fitted on the labels as counted only
    probabilities = present_table(tables, "coverage_adjusted_probabilities") if source == "coverage_regressions" \
        else None
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
                f_lo, f_hi = (pct_for(r["prob"], r["ci_low"], r["ci_high"]) for r in (lo, hi))
                parts.append(
                    f"for {label} tasks from {f_lo(lo['prob'])} ({ci(lo['ci_low'], lo['ci_high'], f_lo)}) in an "
                    f"occupation with a ${lo['wage_bill'] / 1e9:.1f}B wage bill to {f_hi(hi['prob'])} "
                    f"({ci(hi['ci_low'], hi['ci_high'], f_hi)}) at ${hi['wage_bill'] / 1e9:.0f}B"
                )
        if parts:
            out.append(
                "**Wage bill.** The adjusted probability of >= 5 prompts moves "
                + "; ".join(parts)
                + " (coverage_adjusted_probabilities)."
            )
    if regressions is not None and {"term", "coef", "ci_low", "ci_high"} <= set(regressions.columns):
        wage = regressions.filter((pl.col("model") == MODEL_EXPOSURE_WAGE) & (pl.col("term") == WAGE_TERM))
        if wage.height and finite(wage["coef"][0]):
            r = wage.row(0, named=True)
            factor = math.log(2)
            out.append(
                f"Each doubling of an occupation's wage bill multiplies the odds that its tasks are "
                f"covered (>= 5 prompts) by {ratio(math.exp(r['coef'] * factor))} "
                f"({ci(math.exp(r['ci_low'] * factor), math.exp(r['ci_high'] * factor), ratio)}; "
                # which number of the tables it comes from: they hold the coefficient, not the ratio
                f"{source}: 2 to the power of model {MODEL_EXPOSURE_WAGE}'s {WAGE_TERM} coefficient, "
                f"{r['coef']:.4f})."
            )
    return out


def _importance_sample(regressions: pl.DataFrame | None) -> str:
    """"; 1,234 of 5,678 rated tasks in ..." for the importance model's sample, "" when not recorded."""
    sizes: dict[str, Any] = {}
    if regressions is not None and {"item", "value"} <= set(regressions.columns):
        sizes = dict(
            regressions.filter((pl.col("model") == MODEL_IMPORTANCE) & pl.col("item").is_not_null())
            .select("item", "value")
            .iter_rows()
        )
    if not {"n_tasks_kept", "n_tasks_rated", "n_occupations_kept", "n_occupations_dropped_no_variation"} <= set(
        sizes
    ):
        return ""
    return (
        f"; {num(sizes['n_tasks_kept'])} of the {num(sizes['n_tasks_rated'])} rated tasks that also have exposure "
        f"labels, in {num(sizes['n_occupations_kept'])} occupations; "
        f"{num(sizes['n_occupations_dropped_no_variation'])} occupations with no variation in coverage dropped"
    )


# an audit: each imputed label set keeps its own occupations (110-126 of 181 on the mirror, 72 in every one), so
# Rubin's rules combine fits over different samples; said where the ratio is quoted
IMPUTED_FE_SAMPLE = (", refitted on imputed label sets; each keeps only the occupations whose coverage varies in it, "
                     "a set that changes from one to the next, so the ratio is over such occupations, not fixed ones")


def _contrast_findings(tables: Tables, regressions: pl.DataFrame | None,
                       source: str = "coverage_regressions") -> list[str]:
    out: list[str] = []
    contrasts = _contrast_rows(tables, source)
    if contrasts is None:
        return out
    importance_rows = contrasts.filter(pl.col("model") == MODEL_IMPORTANCE)
    sample = _importance_sample(regressions)
    for r in importance_rows.filter(pl.col("contrast").str.starts_with("importance quintile")).iter_rows(
        named=True
    ):
        out.append(
            f"**Importance.** Within occupations, {r['contrast']}: the most important tasks are "
            f"{ratio(r['ratio'])} times as likely to be covered as the least important "
            f"(Q5/Q1 at >= 5 prompts, {ci(r['ci_low'], r['ci_high'], ratio)}"
            f"{_excludes_one(r['ci_low'], r['ci_high'])}; logit with occupation fixed effects"
            f"{'' if source == 'coverage_regressions' else IMPUTED_FE_SAMPLE}{sample}; {source})."
        )
    for r in importance_rows.filter(pl.col("contrast").str.starts_with("exposed vs not")).iter_rows(named=True):
        out.append(
            f"Within occupations, holding importance as observed, exposed tasks are {ratio(r['ratio'])} "
            f"times as likely to have >= 5 prompts as non-exposed ones ({ci(r['ci_low'], r['ci_high'], ratio)}"
            f"{_excludes_one(r['ci_low'], r['ci_high'])}; {source})."
        )
    for r in contrasts.filter(pl.col("model") == MODEL_WORKBANK).iter_rows(named=True):
        out.append(
            f"**WORKBank ratings.** {r['contrast']}: the probability of >= 5 prompts changes by a factor of "
            f"{ratio(r['ratio'])} ({ci(r['ci_low'], r['ci_high'], ratio)}"
            f"{_excludes_one(r['ci_low'], r['ci_high'])}; {source})."
        )
    return out


def _unestimated_notes(regressions: pl.DataFrame | None) -> list[str]:
    notes = []
    if regressions is not None and {"model", "note", "coef"} <= set(regressions.columns):
        for model, group in regressions.group_by("model", maintain_order=True):
            if group["coef"].null_count() == group.height:
                note = next((n for n in group["note"].to_list() if n), "no reason recorded")
                notes.append(f"Model {model[0]} was not estimated: {note}.")
    return notes


def regression_findings(tables: Tables, source: str = "coverage_regressions") -> list[str]:
    """Exposure, wage bill, importance and WORKBank contrasts, then a note per model that was not estimated.
    `source`: coverage_regressions (the labels as counted) or coverage_regressions_mi (multiply imputed, in
    that table's shape via `mi_as_regressions`)."""
    regressions = present_table(tables, source)
    return (
        [_exposure_finding(tables, source)]
        + _wage_bill_findings(tables, regressions, source)
        + _contrast_findings(tables, regressions, source)
        + _unestimated_notes(regressions)
    )


def mi_as_regressions(mi: pl.DataFrame) -> pl.DataFrame:
    """coverage_regressions_mi in coverage_regressions' shape: log-ratio rows as contrasts (ratio, CI on the
    ratio scale), coefficient rows as terms (coef, CI on the logit scale)."""
    contrasts = mi.filter(pl.col("kind") == "log_ratio").select(
        "model", pl.lit(None, pl.Utf8).alias("term"), pl.col("term").alias("contrast"),
        pl.lit(None, pl.Float64).alias("coef"), pl.col("estimate").alias("ratio"), "ci_low", "ci_high")
    coefficients = mi.filter(pl.col("kind") != "log_ratio").select(
        "model", "term", pl.lit(None, pl.Utf8).alias("contrast"), pl.col("estimate").alias("coef"),
        pl.lit(None, pl.Float64).alias("ratio"), "ci_low", "ci_high")
    return pl.concat([coefficients, contrasts]).with_columns(pl.lit(None, pl.Utf8).alias("note"))


def workbank_findings(tables: Tables) -> list[str]:
    frame = present_table(tables, "workbank_coverage")
    if frame is None or not {"zone", "threshold", "share"} <= set(frame.columns):
        return ["WORKBank finding not available: the workbank_coverage table is missing or empty."]
    t = int(frame["threshold"].max())
    rows = frame.filter(pl.col("threshold") == t).sort("zone")
    parts = [
        f"{ZONE_NAMES.get(r['zone'], r['zone'])} {pct(r['share'])} ({ci(r.get('ci_low'), r.get('ci_high'))}, "
        f"{num(r.get('n_covered'))} of {num(r.get('n_tasks'))})"
        for r in rows.iter_rows(named=True)
    ]
    # WORKBank lists more tasks than its workers and experts rated: the unzoned ones have no desire rating, so
    # the sentence counts them apart rather than calling every listed task "rated"
    listed = int(rows["n_tasks"].sum())
    zoned = int(rows.filter(pl.col("zone") != "none")["n_tasks"].sum())
    unzoned = ("; unzoned = listed but without a worker-desire rating" if zoned < listed else "")
    return [
        f"**Worker desire zones.** Among the {num(listed)} tasks WORKBank lists ({num(zoned)} rated by workers and "
        f"placed in a zone{unzoned}), the share with at least {t} {plural(t, 'prompt')} is: " + "; ".join(parts)
        + " (Wilson intervals; workbank_coverage)."
    ]


def score_findings(tables: Tables) -> list[str]:
    """The O*NET-weighted against the plain mean score per occupation and model, with the labels as counted
    (occupation_model_scores: bootstrap intervals without the labeler's error); the largest difference quoted is
    one of those outside their interval when any is."""
    scores = present_table(tables, "occupation_model_scores")
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
        (differs if differs.height else weighted).with_columns(pl.col("difference").abs().alias("_abs"))
        .sort(["_abs", "onet_soc_code", "model"], descending=[True, False, False])
        .row(0, named=True)
    )
    titles = {}
    occupations = tables.get("occupation_coverage")
    if occupations is not None and {"onet_soc_code", "title"} <= set(occupations.columns):
        titles = dict(occupations.select("onet_soc_code", "title").iter_rows())
    name = titles.get(top["onet_soc_code"]) or top["onet_soc_code"]
    min_prompts = f" with >= {top['min_prompts']} prompts" if "min_prompts" in top else ""
    largest = "the largest of them" if differs.height else "none does; the largest difference"
    # where the differing pairs sit, and how many would differ by chance (an audit: the 15 of 123 were two
    # occupations of one benchmark's prompts, and the sentence read as broad evidence)
    spread = ""
    if differs.height:
        occupations = differs["onet_soc_code"].n_unique()
        spread = (f" (in {num(occupations)} {'occupation' if occupations == 1 else 'occupations'}; with no "
                  f"adjustment for the {num(weighted.height)} comparisons, about {num(round(0.05 * weighted.height))} "
                  "would by chance alone)")
    return [
        f"**Model scores.** The O*NET-weighted mean score (the mean of each O*NET task's mean score, over the "
        f"tasks{min_prompts}, every task weighing the same whatever its number of prompts; tasks from the labels "
        "as counted) differs "
        f"from the plain mean score by more than its 95% bootstrap interval for {num(differs.height)} of "
        f"the {num(weighted.height)} occupation-model pairs that have one{spread}; {largest} is "
        f"{top['difference']:+.3f} ({ci(top['difference_ci_low'], top['difference_ci_high'], lambda v: f'{v:+.3f}')})"
        f" for {markdown_literal(top['model'])} on {name} (occupation_model_scores)."  # results.csv's name
    ]


def sensitivity_findings(tables: Tables) -> list[str]:
    frame = present_table(tables, "coverage_sensitivity")
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
    if finite(found.get("exposed_ratio")):
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
            "**Sensitivity: labeler.** Task coverage by labeler, on the benchmarks every labeler labeled: "
            + "; ".join(parts)
            + " (coverage_sensitivity)."
        )
    return out or ["The sensitivity table holds no hours-weighting, exposure or labeler variants."]

