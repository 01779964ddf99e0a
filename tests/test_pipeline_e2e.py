"""End to end on the mirrored data: every asset materialized once (`full_pipeline`, as `make run` does), then
the analysis invariants policy reports rely on (issue 5) and the counts of every stage."""

from __future__ import annotations

import math

import polars as pl
import pytest

from models import indexes as ix
from resources import warehouse as wh

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tables(full_pipeline):
    def read(name: str) -> pl.DataFrame:
        # per-index tables: the rows of index `all` (every landed benchmark, tests/test_indexes.py for the rest)
        return ix.only_index(wh.read_table(full_pipeline.warehouse, name))

    return read


def test_every_stage_has_its_rows(tables):
    assert tables("onet_tasks").height == 18_796
    assert tables("onet_occupations").filter(pl.col("has_tasks")).height == 923
    assert tables("benchmarks").height == 29
    prompts = tables("benchmark_prompts")
    assert prompts.height == 11_107
    labels = tables("prompt_task_labels")
    # every landed prompt is labeled or recorded as a failure (the offline labeler fails only prompts with no
    # O*NET vocabulary at all, e.g. agentbench ltp-std-11), and every label is a real task
    # (labeled = has a work decision in prompt_work; a prompt judged not work has no task labels)
    work = tables("prompt_work")
    labeled = work.select("benchmark", "prompt_id").unique()
    failed = tables("label_failures").select("benchmark", "prompt_id").unique()
    assert labeled.join(failed, on=["benchmark", "prompt_id"]).is_empty()
    assert labeled.height + failed.height == prompts.height
    assert failed.height <= 5, failed
    known = tables("onet_tasks").select("onet_soc_code", "task_id")
    assert labels.join(known, on=["onet_soc_code", "task_id"], how="anti").is_empty()
    per_prompt = labels.group_by("benchmark", "prompt_id").len()
    assert per_prompt["len"].min() >= 1
    keys = ["benchmark", "prompt_id"]
    assert per_prompt.select(keys).join(work.filter(~pl.col("is_work")).select(keys), on=keys).is_empty()
    assert work.filter(pl.col("is_work")).select(keys).join(per_prompt.select(keys), on=keys, how="anti").is_empty()
    # not work: every webshop errand, and most of visualwebarena (the reference: 0 of their prompts are work)
    share = dict(work.group_by("benchmark").agg(pl.col("is_work").mean()).iter_rows())
    assert share["webshop"] <= 0.1 and share["visualwebarena"] <= 0.2 and share["gdpval"] >= 0.9, share
    assert labels["p_exercised"].is_between(0, 1).all()


def test_task_and_occupation_coverage_invariants(tables):
    tasks = tables("task_coverage")
    assert tasks.height == 18_796 and tasks.select("onet_soc_code", "task_id").is_unique().all()
    # covered_5 implies covered_1, and the flags agree with the prompt counts
    assert tasks.filter(pl.col("covered_5") & ~pl.col("covered_1")).is_empty()
    assert (tasks["covered_1"] == (tasks["n_prompts"] >= 1)).all()
    assert (tasks["covered_5"] == (tasks["n_prompts"] >= 5)).all()

    occupations = tables("occupation_coverage")
    assert occupations.height == 923
    for t in (1, 5):
        shares = occupations[f"hours_share_covered_{t}"].drop_nulls()
        assert shares.min() >= 0 and shares.max() <= 1 + 1e-9
        assert (occupations[f"tasks_covered_{t}"] <= occupations["n_tasks"]).all()
        # an occupation is covered exactly when one of its tasks is
        assert (occupations[f"covered_{t}"] == (occupations[f"tasks_covered_{t}"] > 0)).all()


def test_major_groups_and_headline(tables):
    groups = tables("major_group_coverage")
    assert groups.height == 22 and groups["major_group_code"].n_unique() == 22
    assert groups["n_occupations"].sum() == 923
    assert groups["label_1"].str.contains(r" \d+/\d+$").all()
    for t in (1, 5):
        assert (groups[f"occupations_covered_{t}"] <= groups["n_occupations"]).all()

    headline = tables("coverage_headline")
    pooled = headline.filter(pl.col("scope") == "all")
    tasks_row = pooled.filter((pl.col("metric") == "tasks_covered") & (pl.col("threshold") == 5)).row(
        0, named=True
    )
    assert tasks_row["denominator"] == 18_796
    assert tasks_row["numerator"] == tables("task_coverage")["covered_5"].sum()
    occ_row = pooled.filter((pl.col("metric") == "occupations_covered") & (pl.col("threshold") == 5)).row(
        0, named=True
    )
    assert occ_row["denominator"] == 923
    for t in (1, 5):
        covered = pooled.filter((pl.col("metric") == "hours_share_covered") & (pl.col("threshold") == t))[
            "value"
        ]
        uncovered = pooled.filter((pl.col("metric") == "hours_share_uncovered") & (pl.col("threshold") == t))[
            "value"
        ]
        # covered hours <= total hours, and the two shares partition the work hours
        assert 0 <= covered[0] <= 1 and math.isclose(covered[0] + uncovered[0], 1.0, abs_tol=1e-9)
    shares = headline.filter(pl.col("metric").str.contains("share"))["value"].drop_nulls()
    assert shares.min() >= 0 and shares.max() <= 1 + 1e-9
    # a benchmark alone never covers more tasks than all benchmarks together
    per_benchmark = headline.filter(
        (pl.col("scope") != "all") & (pl.col("metric") == "tasks_covered") & (pl.col("threshold") == 5)
    )
    assert per_benchmark["scope"].n_unique() == 29
    assert per_benchmark["numerator"].max() <= tasks_row["numerator"]


def _assert_ci_contains(
    frame: pl.DataFrame, estimate: str, low: str = "ci_low", high: str = "ci_high"
) -> int:
    rows = frame.filter(pl.col(estimate).is_not_null() & pl.col(low).is_not_null())
    bad = rows.filter((pl.col(low) > pl.col(estimate) + 1e-9) | (pl.col(high) < pl.col(estimate) - 1e-9))
    assert bad.is_empty(), f"{estimate}: {bad.height} CIs miss their estimate\n{bad.head()}"
    return rows.height


def test_regressions_are_estimated_with_clustered_errors(tables):
    regressions = tables("coverage_regressions")
    coefficients = regressions.filter(pl.col("table") == "coefficients")
    model1 = coefficients.filter(pl.col("model") == coefficients["model"].unique().sort()[0])
    exposure_wage = coefficients.filter(
        pl.col("formula").str.contains("wage_bill") & ~pl.col("formula").str.contains("C\\(")
    )
    assert exposure_wage.height >= 3, model1
    row = exposure_wage.row(0, named=True)
    assert row["cov_type"] == "cluster" and row["n_clusters"] > 800 and row["n"] > 15_000
    assert _assert_ci_contains(coefficients, "coef") > 0
    contrasts = regressions.filter(pl.col("table") == "contrasts")
    assert contrasts.height >= 2
    assert _assert_ci_contains(contrasts, "ratio") >= 1

    probabilities = tables("coverage_adjusted_probabilities")
    assert _assert_ci_contains(probabilities, "prob") > 20
    estimated = probabilities.filter(pl.col("prob").is_not_null())
    assert estimated["ci_low"].min() >= 0 and estimated["ci_high"].max() <= 1

    zones = tables("workbank_coverage")
    assert set(zones["zone"].to_list()) >= {"green_light", "red_light", "rnd_opportunity", "low_priority"}
    assert _assert_ci_contains(zones, "share") == zones.filter(pl.col("n_tasks") > 0).height


def test_model_scores_and_validation_cis(tables):
    scores = tables("occupation_model_scores")
    assert scores.height > 0 and scores["model"].n_unique() >= 10
    for estimate in ("plain", "weighted", "difference"):
        _assert_ci_contains(
            scores,
            f"{estimate}_mean" if estimate != "difference" else "difference",
            f"{estimate}_ci_low",
            f"{estimate}_ci_high",
        )
    in_range = scores.filter(pl.col("plain_mean").is_not_null())
    assert in_range["plain_mean"].min() >= 0 and in_range["plain_mean"].max() <= 1

    validation = tables("labeler_validation")
    assert _assert_ci_contains(validation, "value") > 0
    gdpval_top5 = validation.filter(
        (pl.col("benchmark") == "gdpval") & (pl.col("metric") == "occupation_top5")
    )
    assert gdpval_top5.height == 1 and gdpval_top5["n"][0] == 110


def test_sensitivity_covers_every_dimension(tables):
    sensitivity = tables("coverage_sensitivity")
    assert {"threshold", "hours_weighting", "exposure_labels"} <= set(sensitivity["dimension"].to_list())
    shares = sensitivity.filter(pl.col("metric").str.contains("share"))["value"].drop_nulls()
    assert shares.min() >= 0 and shares.max() <= 1 + 1e-9


def test_sensitivity_counts_the_published_labels_once(tables, full_pipeline):
    """The sensitivity's threshold rows are the labels-as-counted headline (index `all`) to the digit. With the
    neighbour step on, the label cache also holds the selector's labels the published ones were made from;
    read as another labeler's they were added to the published counts (tasks at >= 5: 348 against 255)."""
    labels = tables("prompt_task_labels")
    assert labels["labeler_version"].str.contains(r"\+n[0-9a-f]{10}$").all(), "the mirror run stacks its labels"
    sensitivity = tables("coverage_sensitivity").filter(pl.col("dimension") == "threshold")
    headline = tables("coverage_headline").filter(pl.col("scope") == "all")
    joined = sensitivity.with_columns(pl.col("variant").cast(pl.Int64).alias("threshold")).join(
        headline.select("threshold", "metric", pl.col("value").alias("headline")), on=["threshold", "metric"])
    assert joined.height == 8, joined
    assert sensitivity["labeler"].unique().to_list() == ["offline"]
    for row in joined.iter_rows(named=True):
        assert row["value"] == pytest.approx(row["headline"], rel=1e-12), row
