"""The report summary (`summary.md`) and Markdown previews of tables, generated from the tables alone.

Every number in the summary is read from a table passed in -- none is typed here -- and every finding says
where it comes from. A finding whose table is missing or empty is replaced by a line saying so, so nothing is
dropped silently. Limitations list the benchmarks included, the labeler with its measured accuracy, and how
much of O*NET carries task ratings and of the economy hours data.

Modules: `formatting` (number formats, previews), `findings`, `limitations`; this module assembles them into
`summary_markdown` and re-exports their public names (`models.report.X` as before). No dagster here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from models.labeling.limits import MAX_LABEL_RUNS
from models.markdown import markdown_table
from models.report.answer import (
    ALL_INDEX,
    ANSWER_THRESHOLD,
    Answer,
    answer_figures,
    headline_answer,
    headlines_by_threshold,
)
from models.report.counts import benchmark_counts, count_lines, index_benchmarks, index_findings, task_counts
from models.report.estimated import (
    estimated_coverage_findings,
    estimated_score_findings,
    exposure_base_rates,
    exposure_difference_finding,
    gap_findings,
)
from models.report.findings import (
    coverage_findings,
    headline_estimate_findings,
    mi_as_regressions,
    regression_findings,
    score_findings,
    sensitivity_findings,
    workbank_findings,
)
from models.report.formatting import (
    MODEL_EXPOSURE_WAGE,
    MODEL_IMPORTANCE,
    MODEL_WORKBANK,
    PREVIEW_COLUMNS,
    WAGE_TERM,
    ZONE_NAMES,
    Tables,
    big,
    ci,
    labeler_of,
    num,
    pct,
    per_benchmark,
    present_table,
    ratio,
    table_preview,
)
from models.report.limitations import (
    QUANTITY_WORDS,
    benchmark_limitations,
    data_limitations,
    estimate_limitations,
    label_depth_limitation,
    label_quality_findings,
    labeler_limitations,
)


def _members(counts: pl.DataFrame | None, index: str) -> set[str] | None:
    return set(counts.filter((pl.col("benchmark_index") == index) & pl.col("counted"))["benchmark"]) \
        if counts is not None and {"benchmark_index", "counted"} <= set(counts.columns) else None


def _without_labels(unlabeled: Mapping[str, int] | None, counts: pl.DataFrame | None, index: str,
                    unjudged: Mapping[str, int] | None = None) -> list[str]:
    """The lines naming the prompts of the index's benchmarks that a failed labeling left without labels, and
    the sampled texts the LLM judge failed on (the estimates' sample is short of them)."""
    members = _members(counts, index)
    again = (f"`python -m pipelines.run_all` asks again for one that has failed in fewer than {MAX_LABEL_RUNS} runs, "
             "`python -m pipelines.run_all --force` for every one")
    lines = []
    listed = per_benchmark(unlabeled, "prompt", members)
    if listed:
        lines += [f"_Without labels: {listed} (their labeling failed: label_failures; {again}). Every figure here "
                  "counts them as prompts that exercise no task, so a figure may be low where they would add to "
                  "it._", ""]
    listed = per_benchmark(unjudged, "sampled text", members)
    if listed:  # a probe: the release said nothing of them
        lines += [f"_Without the judge's reading: {listed} (the LLM judge failed on them: label_failures; {again}). "
                  "The estimates use the sampled texts the judge read; if it fails on one kind of text, the sample "
                  "holds too few of that kind. A benchmark whose sample the judge read none of is estimated from "
                  "the vendored reference labels where they hold it, else through the labeler alone._", ""]
    return lines


def summary_markdown(
    tables: Tables,
    *,
    onet_tasks: pl.DataFrame | None = None,
    labeler_model: str | None = None,
    export_date: str | None = None,
    missing_tables: Sequence[str] = (),
    benchmark_index: str | None = None,
    membership: pl.DataFrame | None = None,
    benchmark_rows: pl.DataFrame | None = None,
    unlabeled: Mapping[str, int] | None = None,
    unjudged: Mapping[str, int] | None = None,
    not_landed: Sequence[str] = (),
) -> str:
    """`summary.md`: the one-line answer (`answer.headline_answer`) and at most five supporting lines; then the
    counts as estimated, what predicts coverage with labeler error (the multiply-imputed fits), model scores,
    robustness; then, titled as such, what the raw labels say; the counts and what they count; limitations.
    With `benchmark_index`, `tables` hold that index's rows and the summary names the index and its members;
    `benchmark_rows`: headline_estimates with index `all`'s per-benchmark rows (which members have judged
    texts: `answer.headline_answer`), when `tables` hold another index's rows only. `unlabeled`: prompts per
    benchmark without labels (a labeling that failed for them), said under the answer; `unjudged`: sampled texts
    per benchmark the LLM judge failed on; `not_landed`: landing folders with no rows in the warehouse (never
    refreshed, or their first refresh failed), said under the answer."""
    index = benchmark_index or ALL_INDEX
    lines = ["# Which parts of the US economy do AI benchmarks measure?", ""]
    n_benchmarks, excluded = (None, [])
    counts = present_table(tables, "benchmark_counts")
    if counts is not None:
        n_benchmarks, excluded = index_benchmarks(counts, index)
    answer = headline_answer(tables.get("headline_estimates"), benchmark_index=index, n_benchmarks=n_benchmarks,
                             released=(export_date or "")[:10] or None, excluded=excluded,
                             benchmark_rows=benchmark_rows)
    if answer is not None:
        lines += [f"**{answer.sentence}**", ""] + [f"- {item}" for item in answer.supporting] + [""]
    else:
        lines += ["_No published estimate: headline_estimates is missing, so this summary has no one-line answer; "
                  "the raw labels' figures are below._", ""]
    lines += _without_labels(unlabeled, counts, index, unjudged)
    if not_landed:  # a probe (2026-12-07): the UI's release of 1 partition of 29 said "1 of the 1 landed"
        shown = ", ".join(not_landed[:10]) + (f" and {len(not_landed) - 10} more" if len(not_landed) > 10 else "")
        lines += [f"_Not in these figures: {len(not_landed)} landing folder{'s' if len(not_landed) != 1 else ''} "
                  f"with no rows in the warehouse ({shown}): never refreshed, or their first refresh failed. The "
                  "landing sensor requests them, `python -m pipelines.run_all` runs them; every figure here counts "
                  "the benchmarks in the warehouse only._", ""]
    if export_date:
        lines += [
            f"_Release of {export_date}. Every number below is read from the exported tables named in brackets. "
            "The coverage figures (estimated and as counted, per index, benchmark, task, occupation and major "
            "group) and the regressions that carry labeler error are also in release.csv, one row each; the "
            "label quality, model scores, gaps (expected uncovered hours), sensitivity figures, the raw labels' "
            "regressions and the checks are in their tables only._",
            "",
        ]
    estimated = dict(tables)
    mi = present_table(tables, "coverage_regressions_mi")
    if mi is not None and {"kind", "term", "estimate"} <= set(mi.columns):
        estimated["coverage_regressions_mi"] = mi_as_regressions(mi)
    is_all_index = index == ALL_INDEX

    # tables computed over every landed benchmark, not per index (assets/export_context.py): named, never quoted
    def all_only(what: str) -> list[str]:
        return [f"{what} computed over every landed benchmark, not per index: see summary.md (index `{ALL_INDEX}`)."]

    with_labeler_error = (
        regression_findings(estimated, "coverage_regressions_mi") if "coverage_regressions_mi" in estimated
        else ["Not available: coverage_regressions_mi (the fits on imputed label sets) is missing; the fits on "
              "the labels as counted are in 'What the raw labels say'."])
    sections: list[tuple[str, list[str]]] = [
        *([("Benchmark index", index_findings(benchmark_index, membership))] if benchmark_index else []),
        ("Coverage, as estimated", estimated_coverage_findings(tables, index)),
        ("What predicts coverage (with labeler error)", with_labeler_error if is_all_index else all_only(
            "The fits on imputed label sets (coverage_regressions_mi) are") + [
            "This index's fits on the labels as counted are in 'What the raw labels say'."]),
        ("Model scores", estimated_score_findings(tables) if is_all_index else all_only("Model scores are")),
        ("Where the next benchmark should go", gap_findings(tables, ANSWER_THRESHOLD)),
        ("What the raw labels say",
         ["_Counting every label as true, with no correction for the labels' misses and no labeler error in the "
          "intervals: for comparison with the estimates above, not for quoting._"]
         + label_quality_findings(tables) + coverage_findings(tables, with_estimate=False)
         + regression_findings(tables) + workbank_findings(tables) + (score_findings(tables) if is_all_index else [])),
        ("Robustness of the raw labels' figures",
         (sensitivity_findings(tables) if is_all_index else all_only("The sensitivity analysis (coverage_sensitivity) "
                                                                     "is"))
         + exposure_difference_finding(tables)),
        ("Counts: what each one counts", count_lines(tables, onet_tasks, index)),
        (
            "Limitations",
            benchmark_limitations(tables)
            + labeler_limitations(tables, labeler_model, index)
            + estimate_limitations(tables, index)
            + data_limitations(tables, onet_tasks),
        ),
    ]
    if n_benchmarks == 0:  # it measures nothing: its figures would all read 0 (a probe, 2026-12-07)
        nothing = ["No figure: the index counts no benchmark (benchmark_index_membership says which rule or entry "
                   "left each out)."]
        sections = [(heading, items if heading in ("Benchmark index", "Counts: what each one counts") else nothing)
                    for heading, items in sections if heading != "Limitations"]
    for heading, items in sections:
        lines += [f"## {heading}", ""] + [item if item.startswith("_") else f"- {item}" for item in items] + [""]
    if missing_tables:
        lines += [f"_Tables not available for this summary: {', '.join(missing_tables)}._", ""]
    return "\n".join(lines)


__all__ = [
    "ANSWER_THRESHOLD", "Answer", "answer_figures", "benchmark_counts", "count_lines", "estimated_coverage_findings",
    "estimated_score_findings", "gap_findings",
    "exposure_base_rates", "exposure_difference_finding", "headline_answer", "headlines_by_threshold",
    "index_benchmarks",
    "mi_as_regressions", "task_counts",
    "MODEL_EXPOSURE_WAGE", "MODEL_IMPORTANCE", "MODEL_WORKBANK", "PREVIEW_COLUMNS", "QUANTITY_WORDS", "WAGE_TERM",
    "ZONE_NAMES", "Tables", "benchmark_limitations", "big", "ci", "coverage_findings", "data_limitations",
    "estimate_limitations", "headline_estimate_findings", "index_findings", "label_depth_limitation",
    "label_quality_findings", "labeler_limitations", "labeler_of", "markdown_table", "num", "pct", "ratio",
    "regression_findings", "score_findings", "sensitivity_findings", "summary_markdown", "table_preview",
    "workbank_findings",
]
