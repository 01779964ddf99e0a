"""The report's limitations: which benchmarks, the labeler and its measured accuracy, the estimates' bounds,
the label depth, the O*NET and hours data (a benchmark index's members: counts.index_findings). Pure; no
dagster."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from models.coverage.counts import MIXED_LABELERS
from models.figures import VALIDATION_METRICS, VALIDATION_TITLES
from models.markdown import markdown_literal
from models.reference.oews import HOURS_PER_YEAR
from models.report.answer import ALL_INDEX
from models.report.formatting import (
    MODEL_IMPORTANCE,
    Tables,
    ci,
    count_error,
    labeler_of,
    num,
    pct,
    points,
    present_table,
)

# --- limitations ----------------------------------------------------------------------------------


# what "US work hours" are (an audit: no release document said, and a reader took them for hours worked)
HOURS_MEANING = (
    f"Work hours are OEWS employment x {HOURS_PER_YEAR:,.0f} (a full-time year), spread over an occupation's tasks "
    "by the MIT task shares (task_hours): OEWS counts a part-time job as a job, so occupations with many part-time "
    "workers (food service, retail) weigh more than the hours actually worked in them."
)

def benchmark_limitations(tables: Tables) -> list[str]:
    benchmarks = present_table(tables, "benchmarks")
    if benchmarks is None:
        return ["The benchmarks table is missing: the benchmarks included cannot be listed."]
    rows = benchmarks.sort("benchmark")
    with_results = rows.filter(pl.col("n_results") > 0) if "n_results" in rows.columns else rows.head(0)
    listed = ", ".join(
        f"{r['benchmark']}"
        + (f" {markdown_literal(r['version'])}" if r.get("version") else "")  # a landing folder's benchmark.toml
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


def labeler_limitations(tables: Tables, labeler_model: str | None = None, index: str = ALL_INDEX) -> list[str]:
    labeler = labeler_of(tables)
    validation = present_table(tables, "labeler_validation")
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
    # the offline labeler's retriever was tuned on GDPval's human labels (an LLM labeler's rows are not)
    tuned = " GDPval's figures are in sample: its prompts chose the retriever's weights and label settings " \
        "(docs/offline_labeler.md)." if labeler == "offline" and rows.filter(pl.col("benchmark") == "gdpval").height \
        else ""
    # the gold-task ranks come from the selector fitted on the judge's reference texts, which include gold prompts
    task_gold = sorted(set(rows.filter(pl.col("metric").str.starts_with("task_"))["benchmark"].to_list()))
    if labeler == "offline" and task_gold:
        tuned += (f" The gold-task figures ({', '.join(task_gold)}) rank tasks with the selector fitted on the "
                  "judge's reference texts: a gold prompt that is also a reference text is measured in sample "
                  "(docs/offline_labeler.md).")
    out.append(
        "Measured against the human labels shipped with the benchmarks"
        # labeler_validation is not per index: a benchmark named may be outside this one (a probe, 2026-12-07)
        + ("" if index == ALL_INDEX else f" (of every landed benchmark, counted by index `{index}` or not)")
        + ": " + "; ".join(parts)
        + " (labeler_validation; Wilson score intervals for the shares of hits, a bootstrap over prompts for F1)."
        + tuned
    )
    return out


def label_quality_findings(tables: Tables) -> list[str]:
    """How far the labels behind every count can be trusted: the labeler's task precision and recall (and
    work decision) against the task-level reference, with the judge's own reproducibility beside them
    (labeler_validation, ref_* metrics, pooled over benchmarks)."""
    validation = present_table(tables, "labeler_validation")
    labeler = labeler_of(tables)
    if validation is None or "metric" not in validation.columns:
        return ["**Label quality.** Not measured: labeler_validation is missing, so the counts below carry an "
                "unknown labeling error."]
    pooled = validation.filter((pl.col("benchmark") == "all") & pl.col("metric").str.starts_with("ref_"))
    mine = pooled.filter(pl.col("labeler") == labeler) if labeler else pooled.head(0)
    if labeler and MIXED_LABELERS in labeler:  # select_labeler's choice per benchmark: several labelers
        return [f"**Label quality.** The labels counted come from several labelers, one per benchmark "
                f"({', '.join(labeler.split(MIXED_LABELERS))}: the labeler column of prompt_task_labels says which). "
                "labeler_validation holds each one's quality against the task-level reference where it labeled "
                "reference prompts; no figure there describes the mix, so the counts below carry a labeling error "
                "of unmeasured size. Label every benchmark with one labeler to measure it."]
    if mine.is_empty():
        return ["**Label quality.** The labels were not measured against the task-level reference (no "
                "reference prompt is labeled by the current labeler)."]
    # several versions of one labeler (a cached earlier fit): the published one is in prompt_task_labels
    version = mine.sort("labeler_version", descending=True)["labeler_version"][0]
    row = {r["metric"]: r for r in mine.filter(pl.col("labeler_version") == version).iter_rows(named=True)}
    ceiling = {r["metric"]: r for r in pooled.filter(pl.col("labeler") == "reference_pass_agreement")
               .iter_rows(named=True)}

    # A labeler fitted on the reference is quoted out of sample (leave one benchmark out, ref_cv_*); the labeler
    # step that learns from a benchmark's judged texts (issue 25) under both of its evaluations, named.
    if "ref_cv_within_benchmark_task_f1" in row:
        per_benchmark = validation.filter(
            (pl.col("benchmark") != "all") & (pl.col("labeler") == labeler)
            & (pl.col("labeler_version") == version) & (pl.col("metric") == "ref_cv_new_benchmark_task_f1"))
        return [stepped_label_quality(row, ceiling, per_benchmark["value"].to_list())]
    cross_validated = "ref_cv_task_f1" in row
    prefix = "ref_cv_" if cross_validated else "ref_"

    def stat(metric: str) -> str:
        return _stat(row, prefix + metric)

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
        "judge's sample are above."
    ]


def _stat(row: dict, metric: str) -> str:
    r = row.get(metric)
    return f"{pct(r['value'], 0)} ({ci(r['ci_low'], r['ci_high'], lambda v: pct(v, 0))})" if r else "n/a"


def stepped_label_quality(row: dict, ceiling: dict, new_benchmark_f1: Sequence[float] = ()) -> str:
    """The label-quality line of the labeler step (labels restacked with the votes of the benchmark's judged
    texts): both evaluations by name, since they answer different questions (a text of a benchmark with a
    judge sample, and a benchmark that arrives without one). `new_benchmark_f1`: each benchmark's task F1
    left out (labeler_validation's per-benchmark ref_cv_new_benchmark_task_f1 rows): how far one new
    benchmark may land from the mean."""
    def figures(evaluation: str) -> str:
        p = f"ref_cv_{evaluation}_"
        f1, precision, recall = (row.get(p + m) or {} for m in ("task_f1", "task_precision", "task_recall"))
        # the three are means over different passes: F1 over all (a text both call not work scores 1),
        # precision where the labels name a task, recall where the judge does; so F1 can exceed both
        above = (f1.get("value") or 0) > max(precision.get("value") or 0, recall.get("value") or 0)
        why = "; F1 sits above both: a text both call not work scores 1 in it and counts in neither" if above else ""
        return (f"task F1 {_stat(row, p + 'task_f1')} over {num(f1.get('n'))} prompt-passes (precision "
                f"{_stat(row, p + 'task_precision')} over the {num(precision.get('n'))} where the labels name a task, "
                f"recall {_stat(row, p + 'task_recall')} over the {num(recall.get('n'))} where the judge does{why}), "
                f"work decision {_stat(row, p + 'work_accuracy')}, first occupation "
                f"{_stat(row, p + 'first_occupation_agreement')} of work prompts")

    cited = row.get("ref_cv_within_benchmark_task_f1", {})  # the published labeler's rows, named (an audit: the
    n = cited.get("n")  # table holds the comparison labelers' rows under the same metric names)
    judge = ceiling.get("ref_task_f1")
    return (
        f"**Label quality.** Measured against the task-level reference (an LLM judge's labels of a random "
        f"sample of prompts, {num(n)} prompt-passes: a judged text once per judge pass, the development "
        f"split's texts twice; the judge's two passes agree at task F1 "
        f"{pct(judge['value'], 0) if judge else 'n/a'}). The labels learn from the judged texts of their own "
        f"benchmark, so they are measured two ways. **Leaving one judged text out within its benchmark** (what "
        f"the labels of a benchmark with a judge sample are): {figures('within_benchmark')}; on new texts of such "
        "a benchmark, held out of the whole fit in a rehearsal of a blind check, the labels scored a few points "
        "lower (docs/offline_labeler.md). **Leaving one "
        f"benchmark out** (a benchmark that arrives without judged texts): {figures('new_benchmark')} "
        + _one_benchmark_spread(new_benchmark_f1)
        + f"(labeler_validation, labeler `{cited.get('labeler')}` version `{cited.get('labeler_version')}`, "
        "ref_cv_within_benchmark_* and ref_cv_new_benchmark_*; every model fitted without "
        "the evaluated text, and without its benchmark for the second; a few settings, such as the work-decision "
        "rule, were chosen looking at these figures: docs/offline_labeler.md). The second figure still has the "
        "benchmark's close relatives in the fit (a benchmark's successor, another of the same domain), "
        "and the labeler leans on which occupations the judge picked across the mirrored benchmarks: a benchmark "
        "of a domain none of them covers may score well below that figure. Counts from these labels alone carry "
        "these errors; the estimates that correct them with the judge's sample are above."
    )


def _one_benchmark_spread(f1: Sequence[float]) -> str:
    """"(its interval resamples benchmarks; one benchmark at a time, task F1 is 0% for 5 of the 29 and its middle
    half runs 2%-27%: ...) ": a new benchmark is one draw from them, and its own figure spreads far wider than the
    interval of the mean. Quartiles, not the extremes: the best is a benchmark whose texts are all not work (F1
    counts 1 when both label sets are empty)."""
    if len(f1) < 4:
        return ""
    values = np.asarray(f1, dtype=float)
    q1, q3 = np.quantile(values, [0.25, 0.75])
    zero = int((values == 0).sum())
    return (f"(its interval resamples benchmarks; one benchmark at a time, task F1 is 0% for {zero} of the "
            f"{len(values)} and its middle half runs {pct(q1, 0)}-{pct(q3, 0)}: a single new benchmark may land far "
            "from the mean) ")


def imputed_share(tables: Tables) -> str:
    """"about 92%": the share of the headline's texts (its pooled scope) the judge did not read, from
    headline_estimates' n_texts and n_sampled; "most" when the table does not say. The summary's tables hold one
    index's rows without the benchmark_index column; a table with it is read for index `all`."""
    headline = present_table(tables, "headline_estimates")
    if headline is None or not {"scope", "n_texts", "n_sampled"} <= set(headline.columns):
        return "most"
    if "benchmark_index" in headline.columns:
        headline = headline.filter(pl.col("benchmark_index") == "all")
    rows = headline.filter((pl.col("scope") == "all") & (pl.col("n_texts") > 0))
    if rows.is_empty():
        return "most"
    row = rows.row(0, named=True)
    return f"about {pct(1.0 - row['n_sampled'] / row['n_texts'], 0)}"


QUANTITY_WORDS = {"tasks_covered": "tasks", "occupations_covered": "occupations",
                  "hours_share_covered": "the hours share", "major_groups_covered": "major groups"}


def _judged_texts(tables: Tables) -> int | None:
    """The judged texts of the index whose tables these are (headline_estimates' n_sampled of its pooled row): for
    index `all`, the split check's population."""
    estimates = present_table(tables, "headline_estimates")
    if estimates is None or not {"n_sampled", "scope"} <= set(estimates.columns):
        return None
    if "benchmark_index" in estimates.columns:  # the summary's tables are one index's, without the column
        estimates = estimates.filter(pl.col("benchmark_index") == ALL_INDEX)
    pooled = estimates.filter(pl.col("scope") == "all")
    return int(pooled["n_sampled"].max()) if pooled.height else None


def estimate_limitations(tables: Tables, index: str = ALL_INDEX) -> list[str]:
    """How well the published estimates held up when checked on the judge sample itself (estimate_split_check:
    estimate from one half, compare with the other): the model-assisted interval at >= 5 prompts, the bounds at
    >= 1. And whether the labeler's labels of the judge-sampled texts are out of sample. The check runs on the
    judge sample of index `all`; another index's summary says so."""
    check = present_table(tables, "estimate_split_check")
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

            def error(r: dict) -> str:  # an error in a share is a difference of shares: points
                return points(r["mean_error"], 1) if "share" in r["quantity"] else count_error(r["mean_error"])

            parts = [
                f"{QUANTITY_WORDS.get(r['quantity'], r['quantity'])} at >= {r['threshold']}: "
                f"{pct(r['coverage'], 0)}"
                + (f" (mean error {error(r)} against {amount(r, 'mean_truth')})"
                   if r["estimator"] == "model_assisted" else
                   f" (bounds; their lower value off by {error(r)} against {amount(r, 'mean_truth')})")
                for r in part.sort("threshold", "quantity", descending=[True, False]).iter_rows(named=True)
            ]
            n = part["n_replications"][0] if "n_replications" in part.columns else None
            pieces.append(f"estimated from {described.get(str(key), str(key))} of each benchmark's judge sample "
                          f"({num(n)} splits): {'; '.join(parts)}")
        if pieces:
            out.append(
                "**How far the headline's intervals can be trusted.** "
                + ("" if index == ALL_INDEX else
                   f"The check runs on the judge sample of every landed benchmark (index `{ALL_INDEX}`), not per "
                   "index: its figures describe the estimator, and this index's headline is read through them. ")
                + "In this check the judged texts themselves are the population: the estimator, given part of "
                "each benchmark's judge sample, is compared with the judge's own count over the whole sample"
                + (f" ({num(judged)} texts)" if index == ALL_INDEX and (judged := _judged_texts(tables)) else "")
                + ", not with the headline, so the truths quoted are far smaller than the headline's figures. "
                "The published 95% interval contained that count, "
                + "; and, ".join(pieces) + ". Where that share is far below 95%, read the interval as too "
                "narrow and the error as the size of the miss (estimate_split_check). The headline itself "
                f"imputes {imputed_share(tables)} of the texts, more than either check, so its extrapolation (the "
                "ceiling of the bounds at >= 1 above all) rests on the imputation model more than the checks can "
                "show. "
                + (FIFTH_SPLIT_LABELS if _stacked(tables) else "")
                + "The interval and these checks hold the labeler's fit fixed: in a rehearsal with about a "
                "quarter of the judged texts held out, refitting the labeler on the rest moved the headline about as "
                "far again as the smaller sample did, and the two together beyond its interval (docs/estimates.md, "
                "'Known limits')."
            )
    if check is not None and {"estimator", "coverage", "quantity", "threshold", "mean_error"} <= set(check.columns):
        out.extend(direction_of_the_miss(check, index, _stacked(tables)))
    validation = present_table(tables, "labeler_validation")
    if validation is not None and "metric" in validation.columns and \
            validation.filter(pl.col("metric").str.starts_with("ref_cv_")).height:
        # which cross-fitted labels the estimates read (resources/readers.read_labeler_oof): the neighbour stack's
        # when the published labels carry its version (a last "+n<fit>" part), else the selector's
        stacked = _stacked(tables)
        swapped = (
            "models/labeling/neighbour_oof.json: each from a fit that left the text out, its benchmark's other "
            "judged texts kept), so the correction sees the labeler as it is on a benchmark with a judge sample"
            if stacked else
            "models/labeling/selector_oof.json: each from the fold that never saw the text's benchmark), so the "
            "correction sees the labeler as it is on new benchmarks")
        out.append(
            "**Labeler fitted on the judge sample.** The calibrated offline labeler was fitted on the same "
            "reference texts that serve as the judge sample. The estimates therefore use its cross-validated "
            f"labels of those texts ({swapped}; the published labels themselves stay in sample there. A judge "
            "sample drawn by the user (BENCHMAP_JUDGE_SAMPLE) overlaps only where it draws a reference text."
        )
    return out


# the fifth split runs on other labels than the headline's when the published labels are the neighbour step's
FIFTH_SPLIT_LABELS = (
    "From a fifth of a benchmark's judge sample (about 5 texts) the neighbour step does not run (it needs more: "
    "its minimum was chosen on this very check), so that check's labels are those of a benchmark without judged texts "
    "(the selector's), not the headline's; the half split runs on the headline's kind of labels. ")


def _stacked(tables: Tables) -> bool:
    """Whether the published labels are the neighbour step's (their labeler_version ends in "+n<fit>")."""
    return _published_version(tables).rsplit("+", 1)[-1].startswith("n")


def _published_version(tables: Tables) -> str:
    """The published labels' labeler_version (headline_estimates'), '' when unknown."""
    estimates = present_table(tables, "headline_estimates")
    if estimates is None or "labeler_version" not in estimates.columns:
        return ""
    versions = estimates["labeler_version"].drop_nulls().unique().sort().to_list()
    return str(versions[0]) if versions else ""


def label_depth_limitation(tables: Tables) -> list[str]:
    """How much coverage rests on lower-ranked labels (coverage_sensitivity, dimension label_depth)."""
    sensitivity = present_table(tables, "coverage_sensitivity")
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
        from models.report.counts import task_counts  # the one source of the task counts

        with_exposure = task_counts(tables, onet_tasks).rated_with_exposure
        uses = (f"the importance model uses the {num(with_exposure)} of them that also have exposure labels"
                if with_exposure is not None else "the importance model uses only rated tasks")
        out.append(
            f"**Task ratings.** O*NET importance ratings are available for {num(rated)} of "
            f"{num(onet_tasks.height)} tasks ({pct(rated / onet_tasks.height)}); {uses} (onet_tasks, "
            "coverage_regressions)."
        )
    else:
        regressions = present_table(tables, "coverage_regressions")
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
    occupations = present_table(tables, "occupation_coverage")
    if occupations is not None and "occupation_annual_hours" in occupations.columns:
        without = occupations.filter(pl.col("occupation_annual_hours").is_null())
        named = ""
        if 0 < without.height <= 3 and {"title", "onet_soc_code"} <= set(occupations.columns):
            named = " (" + "; ".join(f"{r['title']}, {r['onet_soc_code']}" for r in without.sort(
                "onet_soc_code").iter_rows(named=True)) + ")"
        one = without.height == 1
        out.append(
            f"**Hours data.** {num(without.height)} of {num(occupations.height)} occupations{named} "
            f"{'has' if one else 'have'} no OEWS employment/hours match and {'is' if one else 'are'} left out of "
            f"the work-hours shares (occupation_coverage). {HOURS_MEANING}"
        )
    out.append(
        "**What coverage means.** A task is covered when benchmark prompts are labeled with it; this says "
        "nothing about how well models perform the task, and a prompt labeled with several tasks counts "
        "for each."
    )
    return out


def direction_of_the_miss(check: pl.DataFrame, index: str = ALL_INDEX, stacked: bool = False) -> list[str]:
    """Where the check that imputes most (estimated from a fifth) ran high or low at >= 5 prompts with its
    interval missing the truth in more than a fifth of the splits: the headline, which imputes still more,
    may err the same way there, and the reader is told which way. `stacked`: the published labels are the
    neighbour step's, which that check does not run (the reader is told its labels differ)."""
    if "check" not in check.columns:
        return []
    rows = check.filter((pl.col("check") == "split_fifth") & (pl.col("estimator") == "model_assisted")
                        & (pl.col("threshold") != 1) & (pl.col("scope") == "all") & (pl.col("coverage") < 0.8))
    words = []
    for r in rows.sort("quantity").iter_rows(named=True):
        error = r["mean_error"] or 0.0
        if error == 0:
            continue
        share = "share" in r["quantity"]
        size = points(abs(error), 1) if share else count_error(abs(error))
        truth = r.get("mean_truth")
        against = f" against {pct(truth, 1) if share else num(truth)}" if truth is not None else ""
        words.append(f"{QUANTITY_WORDS.get(r['quantity'], r['quantity'])} at >= {r['threshold']} as possibly "
                     f"{'too high' if error > 0 else 'too low'} (in the check by {size}{against} on average)")
    if not words:
        return []
    return ["**Which way the headline may err.** Estimated from a fifth of the judge sample"
            + ("" if index == ALL_INDEX else f" (every landed benchmark's: index `{ALL_INDEX}`)")
            + ", the published "
            "interval missed the held-out truth in more than a fifth of the splits, and its mean error had the "
            "sign given here; the headline imputes more of the texts than that check"
            + (" (whose labels, though, are a new benchmark's, not the headline's neighbour-step labels)"
               if stacked else "")
            + ", so read its " + "; ".join(words) + "; see estimate_split_check and docs/estimates.md."]
