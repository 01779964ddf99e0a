"""How the coverage headline moves under the analysis choices (threshold, hours weighting, exposure labels,
label depth, labeler) and the labeler comparison on the same prompts (SENSITIVITY_SCHEMA)."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from models.coverage.counts import LABEL_DEPTHS, THRESHOLDS, label_counts, labels_at_depth, select_labeler
from models.coverage.headline import coverage_headline
from models.coverage.tables import task_coverage

SENSITIVITY_SCHEMA = {
    "dimension": pl.Utf8,
    "variant": pl.Utf8,
    "metric": pl.Utf8,
    "value": pl.Float64,
    "labeler": pl.Utf8,
}
_EMPTY_WORKBANK = pl.DataFrame(
    schema={
        "onet_soc_code": pl.Utf8,
        "task_id": pl.Int64,
        "desire_mean": pl.Float64,
        "capability_mean": pl.Float64,
        "zone": pl.Utf8,
    }
)


def _sensitivity_row(dimension: str, variant: str, metric: str, value: float | None, who: str | None
                     ) -> dict[str, object]:
    finite = value is not None and value == value  # NaN -> null
    return {"dimension": dimension, "variant": variant, "metric": metric,
            "value": float(value) if finite else None, "labeler": who}


# the headline metrics the depth, labeler and same-prompt comparisons report per threshold
_SHARE_METRICS = ["tasks_covered", "occupations_covered", "hours_share_covered"]


def coverage_sensitivity(
    counts: pl.DataFrame,
    tasks: pl.DataFrame,
    task_hours: pl.DataFrame,
    occupations: pl.DataFrame,
    task_exposure: pl.DataFrame,
    occupation_wages: pl.DataFrame,
    workbank_tasks: pl.DataFrame | None = None,
    *,
    thresholds: Sequence[int] = THRESHOLDS,
    labeler: str | None = None,
) -> pl.DataFrame:
    """How the headline numbers move under the analysis choices. Tidy: dimension, variant, metric, value,
    labeler.

    - threshold: variant '1' / '5' -> tasks_covered, occupations_covered (shares), major_groups_uncovered
      (count), hours_share_covered;
    - hours_weighting: 'pi' / 'equal' (equal split of an occupation's hours over its tasks) ->
      hours_share_covered_{t};
    - exposure_labels: 'human' / 'gpt4' -> model 1's exposed coefficient, its se, and the
      exposed/non-exposed probability ratio with CI;
    - label_depth: only each prompt's top 1 / 3 / 5 counts by rank, or all -> tasks/occupations/hours shares
      per t (how much coverage rests on lower-ranked counts);
    - labeler: each labeler, when the counts hold more than one -> tasks/occupations/hours shares per t.
    """
    chosen_labels, chosen_labeler = select_labeler(counts, labeler)
    rows = _weighting_rows(chosen_labels, chosen_labeler, tasks, task_hours, occupations, thresholds)
    task_cov = task_coverage(chosen_labels, tasks, thresholds).drop("labeler")
    rows += _exposure_rows(task_cov, chosen_labeler, tasks, task_exposure, occupation_wages, workbank_tasks,
                           thresholds)
    # label depth: a labeler keeps several tasks per prompt (the offline one up to 20, in rank order); how much
    # of the coverage rests on the lower-ranked counts?
    for depth in LABEL_DEPTHS:
        kept = labels_at_depth(chosen_labels, depth)
        headline = coverage_headline(kept, tasks, task_hours, occupations, thresholds, per_benchmark=False)
        for record in headline.filter(pl.col("metric").is_in(_SHARE_METRICS)).iter_rows(named=True):
            rows.append(_sensitivity_row("label_depth", "all" if depth is None else f"top{depth}",
                                         f"{record['metric']}_{record['threshold']}", record["value"],
                                         chosen_labeler))
    present = sorted(counts["labeler"].drop_nulls().unique().to_list()) if "labeler" in counts.columns else []
    # labelers compared on the benchmarks each of them labeled: a run that labeled one benchmark with the LLM
    # and the rest offline set 28 benchmarks' coverage beside one benchmark's (a probe, 2026-12-07)
    shared = set.intersection(*(set(counts.filter(pl.col("labeler") == n)["benchmark"].unique().to_list())
                                for n in present)) if len(present) > 1 and "benchmark" in counts.columns else set()
    if len(present) > 1 and shared:
        common = counts.filter(pl.col("benchmark").is_in(sorted(shared)))
        for name in present:
            headline = coverage_headline(
                common, tasks, task_hours, occupations, thresholds, labeler=name, per_benchmark=False
            )
            for record in headline.filter(pl.col("metric").is_in(_SHARE_METRICS)).iter_rows(named=True):
                rows.append(_sensitivity_row("labeler", name, f"{record['metric']}_{record['threshold']}",
                                             record["value"], name))
    return pl.DataFrame(rows, schema=SENSITIVITY_SCHEMA)


def _weighting_rows(counts: pl.DataFrame, who: str | None, tasks: pl.DataFrame, task_hours: pl.DataFrame,
                    occupations: pl.DataFrame, thresholds: Sequence[int]) -> list[dict[str, object]]:
    """The threshold rows (the 'pi' headline) and the hours_weighting rows ('pi' / 'equal')."""
    by_weighting = {
        weighting: coverage_headline(counts, tasks, task_hours, occupations, thresholds,
                                     hours_weighting=weighting, per_benchmark=False)
        for weighting in ("pi", "equal")
    }
    rows = [_sensitivity_row("threshold", str(record["threshold"]), record["metric"], record["value"], who)
            for record in by_weighting["pi"].iter_rows(named=True)
            if record["metric"] != "hours_share_uncovered"]
    for weighting, headline in by_weighting.items():
        for record in headline.filter(pl.col("metric") == "hours_share_covered").iter_rows(named=True):
            rows.append(_sensitivity_row("hours_weighting", weighting, f"hours_share_covered_{record['threshold']}",
                                         record["value"], who))
    return rows


def _exposure_rows(task_cov: pl.DataFrame, who: str | None, tasks: pl.DataFrame, task_exposure: pl.DataFrame,
                   occupation_wages: pl.DataFrame, workbank_tasks: pl.DataFrame | None,
                   thresholds: Sequence[int]) -> list[dict[str, object]]:
    """Model 1 (exposure + wage) fitted on the human and on the GPT-4 exposure labels: the exposed coefficient,
    its se, and the exposed/non-exposed probability ratio with CI."""
    from models.regression import build_task_frame, exposure_wage_model  # statsmodels: loaded only when used

    task_frame = build_task_frame(task_cov, tasks, task_exposure, occupation_wages,
                                  workbank_tasks if workbank_tasks is not None else _EMPTY_WORKBANK)
    outcome_threshold = 5 if 5 in thresholds else max(thresholds)
    rows: list[dict[str, object]] = []
    for variant, exposure_col in (("human", "exposed"), ("gpt4", "gpt4_exposed")):
        if exposure_col not in task_frame.columns:
            continue
        tables = exposure_wage_model(task_frame, outcome=f"covered_{outcome_threshold}", exposure_col=exposure_col)
        exposed_rows = tables.coefficients.filter(pl.col("term") == "exposed")
        coef = exposed_rows["coef"][0] if exposed_rows.height else None
        se = exposed_rows["se"][0] if exposed_rows.height else None
        rows.append(_sensitivity_row("exposure_labels", variant, "exposed_coef", coef, who))
        rows.append(_sensitivity_row("exposure_labels", variant, "exposed_se", se, who))
        contrast = tables.contrasts.row(0, named=True)
        for metric in ("ratio", "ci_low", "ci_high"):
            rows.append(_sensitivity_row("exposure_labels", variant,
                                         f"exposed_ratio{'' if metric == 'ratio' else '_' + metric}",
                                         contrast[metric], who))
    return rows


def labeler_same_prompt_sensitivity(
    labels: pl.DataFrame,
    tasks: pl.DataFrame,
    task_hours: pl.DataFrame,
    occupations: pl.DataFrame,
    thresholds: Sequence[int] = THRESHOLDS,
    *,
    labeled: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The labeler comparison on the same prompts (SENSITIVITY_SCHEMA rows, dimension 'labeler_same_prompts').

    `labels`: prompt-level labels of two or more labelers (benchmark, prompt_id, labeler, onet_soc_code,
    task_id, rank). `labeled` (benchmark, prompt_id, labeler): every prompt each labeler labeled, also those
    it judged not occupational work (no label row); default: the prompts with a label row. Only the prompts
    every labeler labeled are kept; per labeler: tasks_covered_{t}, occupations_covered_{t},
    hours_share_covered_{t} on them, and n_prompts (how many prompts the comparison rests on)."""
    present = sorted(labels["labeler"].drop_nulls().unique().to_list()) if labels.height else []
    if len(present) < 2:
        return pl.DataFrame(schema=SENSITIVITY_SCHEMA)
    keys = ["benchmark", "prompt_id"]
    who = labeled if labeled is not None else labels.select(*keys, "labeler")
    common = (who.filter(pl.col("labeler").is_in(present)).unique(subset=[*keys, "labeler"])
              .group_by(keys).agg(pl.len().alias("n")).filter(pl.col("n") == len(present)).select(keys))
    same = labels.join(common, on=keys, how="semi")
    rows: list[dict[str, object]] = []
    for name in present:
        mine = same.filter(pl.col("labeler") == name)
        headline = coverage_headline(label_counts(mine), tasks, task_hours, occupations, thresholds,
                                     per_benchmark=False)
        for record in headline.filter(
            pl.col("metric").is_in(["tasks_covered", "occupations_covered", "hours_share_covered"])
        ).iter_rows(named=True):
            value = record["value"]
            rows.append({"dimension": "labeler_same_prompts", "variant": name,
                         "metric": f"{record['metric']}_{record['threshold']}",
                         "value": float(value) if value is not None and value == value else None, "labeler": name})
        rows.append({"dimension": "labeler_same_prompts", "variant": name, "metric": "n_prompts",
                     "value": float(common.height), "labeler": name})
    return pl.DataFrame(rows, schema=SENSITIVITY_SCHEMA)
