"""Coverage estimators on small hand-built frames whose answers are worked out by hand."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from models.coverage import (
    SOC_MAJOR_GROUPS,
    coverage_headline,
    coverage_sensitivity,
    label_counts,
    labels_at_depth,
    major_group_coverage,
    occupation_coverage,
    select_labeler,
    task_coverage,
)
from resources import warehouse as wh

OCC_A, OCC_B, OCC_C = "15-1211.00", "15-1212.00", "11-1011.00"


def _label(
    benchmark: str, prompt_id: str, occupation: str, task_id: int, labeler: str = "offline", rank: int = 1
) -> dict[str, object]:
    return {
        "benchmark": benchmark,
        "prompt_id": prompt_id,
        "prompt_hash": f"h-{benchmark}-{prompt_id}",
        "onet_soc_code": occupation,
        "task_id": task_id,
        "labeler": labeler,
        "labeler_version": "v1",
        "rank": rank,
        "score": 1.0,
        "rationale": None,
    }


@pytest.fixture
def world() -> dict[str, pl.DataFrame]:
    """Occupation A: tasks 1-3 (π .5/.3/.2, 1000 h); B: tasks 4-5 (π .6/.4, 500 h); C: task 6 (200 h).

    Task 1 has 6 prompts (bench1 p1-p5, bench2 p1), task 2 one (bench1 p1, labeled with 1 and 2),
    task 4 two (bench1 p6, bench2 q1); tasks 3, 5, 6 none.
    """
    tasks = pl.DataFrame(
        {
            "onet_soc_code": [OCC_A] * 3 + [OCC_B] * 2 + [OCC_C],
            "task_id": [1, 2, 3, 4, 5, 6],
            "task": [f"task {i}" for i in range(1, 7)],
        }
    )
    labels = [_label("bench1", f"p{i}", OCC_A, 1) for i in range(1, 6)]
    labels += [
        _label("bench1", "p1", OCC_A, 2, rank=2),
        _label("bench1", "p1", OCC_A, 1, labeler="offline"),
        _label("bench1", "p6", OCC_B, 4),
        _label("bench2", "p1", OCC_A, 1),
        _label("bench2", "q1", OCC_B, 4),
    ]
    task_hours = pl.DataFrame(
        {
            "onet_soc_code": [OCC_A] * 3 + [OCC_B] * 2 + [OCC_C],
            "task_id": [1, 2, 3, 4, 5, 6],
            "pi": [0.5, 0.3, 0.2, 0.6, 0.4, 1.0],
            "pi_is_fallback": [False] * 6,
            "occupation_annual_hours": [1000.0] * 3 + [500.0] * 2 + [200.0],
        }
    ).with_columns((pl.col("pi") * pl.col("occupation_annual_hours")).alias("task_annual_hours"))
    occupations = pl.DataFrame(
        {
            "onet_soc_code": [OCC_A, OCC_B, OCC_C],
            "title": ["Analysts", "Designers", "Chief Executives"],
            "soc_code": ["15-1211", "15-1212", "11-1011"],
            "major_group_code": ["15-0000", "15-0000", "11-0000"],
            "has_tasks": [True] * 3,
        }
    )
    wages = pl.DataFrame(
        {
            "onet_soc_code": [OCC_A, OCC_B, OCC_C],
            "employment": [100.0, 50.0, 10.0],
            "wage_bill": [1e7, 4e6, 2e6],
        }
    )
    return {
        "tasks": tasks,
        "labels": pl.DataFrame(labels),
        "counts": label_counts(pl.DataFrame(labels)),  # what the coverage functions take
        "task_hours": task_hours,
        "occupations": occupations,
        "wages": wages,
    }


def test_task_coverage_counts_distinct_prompts_per_task(world: dict[str, pl.DataFrame]) -> None:
    cov = task_coverage(world["counts"], world["tasks"])
    assert cov.height == 6  # every task, labeled or not
    by_task = {row["task_id"]: row for row in cov.iter_rows(named=True)}
    assert by_task[1]["n_prompts"] == 6  # bench2/p1 is a different prompt from bench1/p1; duplicates ignored
    assert by_task[1]["n_benchmarks"] == 2 and by_task[1]["benchmarks"] == "bench1,bench2"
    assert by_task[2]["n_prompts"] == 1 and by_task[4]["n_prompts"] == 2
    assert [by_task[i]["n_prompts"] for i in (3, 5, 6)] == [0, 0, 0]
    assert by_task[3]["benchmarks"] == ""
    cov = cov.sort("task_id")
    assert cov["covered_1"].to_list() == [True, True, False, True, False, False]
    assert cov["covered_5"].to_list() == [True, False, False, False, False, False]
    assert cov["labeler"].unique().to_list() == ["offline"]


def test_task_coverage_per_benchmark_and_filter(world: dict[str, pl.DataFrame]) -> None:
    per_bench = task_coverage(world["counts"], world["tasks"], by_benchmark=True)
    assert per_bench.height == 12  # 6 tasks x 2 benchmarks
    bench2 = per_bench.filter(pl.col("benchmark") == "bench2").sort("task_id")
    assert bench2["n_prompts"].to_list() == [1, 0, 0, 1, 0, 0]
    only_bench1 = task_coverage(world["counts"], world["tasks"], benchmark="bench1", thresholds=(1, 5, 6))
    assert only_bench1.sort("task_id")["n_prompts"].to_list() == [5, 1, 0, 1, 0, 0]
    assert only_bench1["covered_6"].sum() == 0


def test_occupation_coverage_hours_shares(world: dict[str, pl.DataFrame]) -> None:
    cov = task_coverage(world["counts"], world["tasks"])
    occ = occupation_coverage(cov, world["task_hours"], world["occupations"])
    rows = {row["onet_soc_code"]: row for row in occ.iter_rows(named=True)}
    a, b, c = rows[OCC_A], rows[OCC_B], rows[OCC_C]
    assert (a["n_tasks"], a["tasks_covered_1"], a["tasks_covered_5"]) == (3, 2, 1)
    assert a["task_share_covered_1"] == pytest.approx(2 / 3)
    assert a["hours_share_covered_1"] == pytest.approx(0.8)  # π .5 + .3
    assert a["hours_share_covered_5"] == pytest.approx(0.5)
    assert (a["covered_1"], a["covered_5"]) == (True, True)
    assert b["hours_share_covered_1"] == pytest.approx(0.6)
    assert (b["covered_1"], b["covered_5"]) == (True, False)
    assert (c["covered_1"], c["hours_share_covered_1"]) == (False, 0.0)
    equal = occupation_coverage(cov, world["task_hours"], world["occupations"], hours_weighting="equal")
    assert equal.filter(pl.col("onet_soc_code") == OCC_A)["hours_share_covered_1"][0] == pytest.approx(2 / 3)


def test_occupation_without_pi_falls_back_to_equal_split(world: dict[str, pl.DataFrame]) -> None:
    cov = task_coverage(world["counts"], world["tasks"])
    no_pi = world["task_hours"].with_columns(
        pl.when(pl.col("onet_soc_code") == OCC_A).then(None).otherwise(pl.col("pi")).alias("pi")
    )
    occ = occupation_coverage(cov, no_pi, world["occupations"]).filter(pl.col("onet_soc_code") == OCC_A)
    assert occ["hours_share_covered_1"][0] == pytest.approx(2 / 3)
    assert occ["weight_source"][0] == "equal_fallback"


def test_major_group_coverage_has_all_22_groups_and_labels(world: dict[str, pl.DataFrame]) -> None:
    cov = task_coverage(world["counts"], world["tasks"])
    occ = occupation_coverage(cov, world["task_hours"], world["occupations"])
    groups = major_group_coverage(occ, world["occupations"], world["wages"])
    assert groups.height == 22 and set(groups["major_group_code"]) == set(SOC_MAJOR_GROUPS)
    computer = groups.filter(pl.col("major_group_code") == "15-0000").row(0, named=True)
    assert computer["label_1"] == "Computer and Mathematical 2/2"
    assert computer["label_5"] == "Computer and Mathematical 1/2"
    assert computer["employment"] == 150.0 and computer["wage_bill"] == pytest.approx(1.4e7)
    assert computer["employment_covered_5"] == 100.0
    management = groups.filter(pl.col("major_group_code") == "11-0000").row(0, named=True)
    assert management["label_1"] == "Management 0/1"
    legal = groups.filter(pl.col("major_group_code") == "23-0000").row(0, named=True)
    assert (legal["n_occupations"], legal["occupations_covered_1"], legal["label_1"]) == (0, 0, "Legal 0/0")


def test_major_group_label_29_of_36() -> None:
    occupations = [f"15-{1000 + i:04d}.00" for i in range(36)]
    tasks = pl.DataFrame({"onet_soc_code": occupations, "task_id": list(range(36))})
    labels = pl.DataFrame([_label("b", f"p{i}", occupations[i], i) for i in range(29)])
    occ_table = pl.DataFrame(
        {
            "onet_soc_code": occupations,
            "title": occupations,
            "major_group_code": ["15-0000"] * 36,
            "major_group_title": ["Computer and Mathematical Occupations"] * 36,
        }
    )
    hours = pl.DataFrame(
        {
            "onet_soc_code": occupations,
            "task_id": list(range(36)),
            "pi": [1.0] * 36,
            "occupation_annual_hours": [10.0] * 36,
        }
    )
    wages = pl.DataFrame({"onet_soc_code": occupations, "employment": [1.0] * 36, "wage_bill": [1.0] * 36})
    occ = occupation_coverage(task_coverage(label_counts(labels), tasks), hours, occ_table)
    groups = major_group_coverage(occ, occ_table, wages)
    assert (
        groups.filter(pl.col("major_group_code") == "15-0000")["label_1"][0]
        == "Computer and Mathematical 29/36"
    )
    assert groups.height == 22


def test_coverage_headline_numbers(world: dict[str, pl.DataFrame]) -> None:
    headline = coverage_headline(world["counts"], world["tasks"], world["task_hours"], world["occupations"])
    assert set(headline["scope"]) == {"all", "bench1", "bench2"}

    def metric(scope: str, threshold: int, name: str) -> dict[str, object]:
        return headline.filter(
            (pl.col("scope") == scope) & (pl.col("threshold") == threshold) & (pl.col("metric") == name)
        ).row(0, named=True)

    tasks_1 = metric("all", 1, "tasks_covered")
    assert (tasks_1["numerator"], tasks_1["denominator"], tasks_1["value"]) == (3, 6, 0.5)
    assert metric("all", 5, "tasks_covered")["numerator"] == 1
    assert metric("all", 1, "occupations_covered")["value"] == pytest.approx(2 / 3)
    assert metric("all", 5, "occupations_covered")["value"] == pytest.approx(1 / 3)
    groups_5 = metric("all", 5, "major_groups_uncovered")
    assert (groups_5["value"], groups_5["denominator"]) == (21, 22)
    assert "Management Occupations" in groups_5["detail"]
    assert "Computer and Mathematical Occupations" not in groups_5["detail"]
    hours_1 = metric("all", 1, "hours_share_covered")
    assert (hours_1["numerator"], hours_1["denominator"]) == pytest.approx((1100.0, 1700.0))
    assert metric("all", 1, "hours_share_uncovered")["value"] == pytest.approx(600 / 1700)
    assert metric("all", 5, "hours_share_covered")["value"] == pytest.approx(500 / 1700)
    assert metric("bench2", 1, "tasks_covered")["numerator"] == 2
    assert metric("bench2", 5, "tasks_covered")["numerator"] == 0
    assert metric("bench2", 1, "hours_share_covered")["value"] == pytest.approx(800 / 1700)
    equal = coverage_headline(
        world["counts"],
        world["tasks"],
        world["task_hours"],
        world["occupations"],
        hours_weighting="equal",
        per_benchmark=False,
    )
    assert set(equal["scope"]) == {"all"}
    assert equal.filter((pl.col("threshold") == 1) & (pl.col("metric") == "hours_share_covered"))["value"][
        0
    ] == pytest.approx((1000 * 2 / 3 + 500 / 2) / 1700)


def test_labeler_selection() -> None:
    labels = pl.DataFrame(
        [_label("b", "p1", OCC_A, 1, labeler="offline"), _label("b", "p1", OCC_A, 2, labeler="openai")]
    )
    chosen, name = select_labeler(labels)
    assert name == "openai" and chosen.height == 1
    assert select_labeler(labels, "offline")[0]["task_id"].to_list() == [1]
    with pytest.raises(ValueError, match="no labels"):
        select_labeler(labels, "nonexistent")


def test_a_run_that_labeled_some_benchmarks_with_an_llm_counts_every_benchmark_by_its_own_labeler() -> None:
    """An audit (2026-12-07): `run_all --benchmarks jobbench` with the LLM after an offline run left the raw-label
    figures counting the LLM's benchmarks alone ("tasks covered: 1 of 18,796"). Each benchmark is now counted by
    its preferred labeler, and the name says the labels are mixed; within one benchmark two labelers never add up."""
    labels = pl.DataFrame([
        _label("llm_bench", "p1", OCC_A, 1, labeler="openai"),
        _label("old_bench", "p1", OCC_A, 2, labeler="offline"), _label("old_bench", "p2", OCC_B, 3, labeler="offline"),
        _label("both", "p1", OCC_A, 4, labeler="offline"), _label("both", "p1", OCC_A, 5, labeler="openai"),
    ])
    chosen, name = select_labeler(labels)
    assert name == "openai+offline"
    assert sorted(chosen.select("benchmark", "labeler", "task_id").rows()) == [
        ("both", "openai", 5), ("llm_bench", "openai", 1), ("old_bench", "offline", 2), ("old_bench", "offline", 3)]
    assert select_labeler(labels.filter(pl.col("benchmark") == "old_bench"))[1] == "offline"
    assert select_labeler(labels, "offline")[0]["task_id"].to_list() == [2, 3, 4]  # named: that labeler alone
    # the assets hand the chosen name back (task_coverage, coverage_headline): the same choice, not an error (a
    # re-probe found the analysis failing on "labeler 'openai+offline' has no labels")
    again, same = select_labeler(labels, name)
    assert same == name and again.sort("task_id").equals(chosen.sort("task_id"))
    with pytest.raises(ValueError, match="no labels"):
        select_labeler(labels, "nonexistent+other")
    # an index leaving out the LLM's benchmarks: its offline labels alone (a probe: every analysis failed, exit 1,
    # on "labelers ['openai'] have no labels", when an index excluded the benchmark the LLM labeled)
    offline_only, its_name = select_labeler(labels.filter(pl.col("benchmark") == "old_bench"), name)
    assert its_name == "offline" and offline_only["task_id"].sort().to_list() == [2, 3]
    counts = label_counts(labels)
    tasks = pl.DataFrame({"onet_soc_code": [OCC_A] * 5 + [OCC_B], "task_id": [1, 2, 4, 5, 6, 3]})
    coverage = task_coverage(counts, tasks, labeler=select_labeler(counts)[1])
    assert coverage.filter(pl.col("n_prompts") > 0)["task_id"].sort().to_list() == [1, 2, 3, 5]
    assert coverage["labeler"].unique().to_list() == ["openai+offline"]

    from models.report.limitations import label_quality_findings

    validation = pl.DataFrame({"benchmark": ["all"], "labeler": ["offline"], "labeler_version": ["v"],
                               "metric": ["ref_task_f1"], "value": [0.3], "ci_low": [0.2], "ci_high": [0.4],
                               "n": [100]})
    tables = {"labeler_validation": validation, "task_coverage": pl.DataFrame({"labeler": [name]})}
    (line,) = label_quality_findings(tables)
    assert "several labelers, one per benchmark (openai, offline" in line and "unmeasured size" in line


def test_coverage_sensitivity_dimensions() -> None:
    """A simulated world with both labelers: every sensitivity dimension is reported."""
    rng = np.random.default_rng(3)
    n_occ, per_occ = 60, 8
    occupations = [f"{list(SOC_MAJOR_GROUPS)[i % 22][:2]}-{1000 + i:04d}.00" for i in range(n_occ)]
    codes = np.repeat(occupations, per_occ)
    task_ids = np.arange(n_occ * per_occ)
    tasks = pl.DataFrame({"onet_soc_code": codes, "task_id": task_ids})
    exposed = rng.random(task_ids.size) < 0.5
    wage_bill = np.repeat(np.exp(rng.normal(np.log(5e9), 1.0, n_occ)), per_occ)
    p_label = 1 / (1 + np.exp(-(-0.5 + 1.0 * exposed)))
    rows = []
    for labeler in ("offline", "openai"):
        for task, occupation, p in zip(task_ids, codes, p_label, strict=True):
            for prompt in range(rng.poisson(6 * p)):
                rows.append(_label("bench", f"{task}-{prompt}", str(occupation), int(task), labeler=labeler))
    labels = pl.DataFrame(rows)
    task_hours = tasks.with_columns(
        pl.lit(1.0 / per_occ).alias("pi"), pl.lit(2000.0).alias("occupation_annual_hours")
    )
    occ_table = pl.DataFrame({"onet_soc_code": occupations, "title": occupations})
    exposure = tasks.with_columns(
        pl.Series("exposed", exposed), pl.Series("gpt4_exposed", exposed ^ (rng.random(task_ids.size) < 0.15))
    )
    wages = pl.DataFrame(
        {"onet_soc_code": occupations, "employment": [1.0] * n_occ, "wage_bill": wage_bill[::per_occ]}
    )
    sensitivity = coverage_sensitivity(
        label_counts(labels), tasks, task_hours, occ_table, exposure, wages, labeler="offline"
    )
    assert set(sensitivity["dimension"]) == {
        "threshold",
        "hours_weighting",
        "exposure_labels",
        "label_depth",
        "labeler",
    }
    # every simulated label has rank 1, so keeping only the top label changes nothing
    depth = sensitivity.filter(pl.col("dimension") == "label_depth").pivot(
        "variant", index="metric", values="value"
    )
    assert depth["top1"].to_list() == pytest.approx(depth["all"].to_list())
    assert set(sensitivity.filter(pl.col("dimension") == "labeler")["variant"]) == {"offline", "openai"}
    human = sensitivity.filter((pl.col("dimension") == "exposure_labels") & (pl.col("variant") == "human"))
    values = dict(zip(human["metric"], human["value"], strict=True))
    assert values["exposed_coef"] > 0  # simulated with a positive exposure effect
    assert values["exposed_ratio_ci_low"] <= values["exposed_ratio"] <= values["exposed_ratio_ci_high"]
    # equal and π weights coincide here because π is uniform within every occupation
    hours = sensitivity.filter(pl.col("dimension") == "hours_weighting").pivot(
        "variant", index="metric", values="value"
    )
    assert hours["pi"].to_list() == pytest.approx(hours["equal"].to_list())
    # labelers are compared on the benchmarks each of them labeled: one that labeled another benchmark alone
    # (a run that labeled it with the LLM) is left out of the comparison, and its benchmark too
    extra = pl.DataFrame([_label("llm_only", f"x{i}", occupations[0], int(task_ids[0]), labeler="openai")
                          for i in range(40)])
    both = coverage_sensitivity(label_counts(pl.concat([labels, extra])), tasks, task_hours, occ_table, exposure,
                                wages, labeler="offline")
    assert both.filter(pl.col("dimension") == "labeler").sort("variant", "metric")["value"].to_list() == \
        sensitivity.filter(pl.col("dimension") == "labeler").sort("variant", "metric")["value"].to_list()
    apart = coverage_sensitivity(label_counts(pl.concat([labels.filter(pl.col("labeler") == "offline"), extra])),
                                 tasks, task_hours, occ_table, exposure, wages, labeler="offline")
    assert apart.filter(pl.col("dimension") == "labeler").is_empty()  # no benchmark labeled by both


def test_no_labels_yet_gives_zero_coverage(world: dict[str, pl.DataFrame]) -> None:
    empty = label_counts(world["labels"].clear())
    cov = task_coverage(empty, world["tasks"])
    assert cov.height == 6 and cov["n_prompts"].sum() == 0 and not cov["covered_1"].any()
    headline = coverage_headline(empty, world["tasks"], world["task_hours"], world["occupations"])
    assert set(headline["scope"]) == {"all"}
    uncovered = headline.filter((pl.col("metric") == "major_groups_uncovered") & (pl.col("threshold") == 1))
    assert uncovered["value"][0] == 22


def test_label_depth_sensitivity_drops_lower_ranked_labels() -> None:
    """One prompt labeled with three tasks (ranks 1-3): top1 covers one task, top3 and all cover three."""
    tasks = pl.DataFrame({"onet_soc_code": ["15-1252.00"] * 4, "task_id": [1, 2, 3, 4]})
    labels = pl.DataFrame([_label("b", "p1", "15-1252.00", t, rank=t) for t in (1, 2, 3)])
    task_hours = tasks.with_columns(pl.lit(0.25).alias("pi"), pl.lit(1000.0).alias("occupation_annual_hours"))
    occupations = pl.DataFrame({"onet_soc_code": ["15-1252.00"], "title": ["Software Developers"]})
    exposure = tasks.with_columns(pl.lit(True).alias("exposed"), pl.lit(True).alias("gpt4_exposed"))
    wages = pl.DataFrame({"onet_soc_code": ["15-1252.00"], "employment": [1.0], "wage_bill": [1e9]})
    sensitivity = coverage_sensitivity(
        label_counts(labels), tasks, task_hours, occupations, exposure, wages, thresholds=(1,)
    )
    depth = sensitivity.filter(
        (pl.col("dimension") == "label_depth") & (pl.col("metric") == "tasks_covered_1")
    )
    shares = dict(zip(depth["variant"], depth["value"], strict=True))
    assert shares == pytest.approx({"top1": 0.25, "top3": 0.75, "top5": 0.75, "all": 0.75})


def _random_labels(seed: int, n_prompts: int = 400) -> pl.DataFrame:
    """Prompts in three benchmarks, each with 1-8 ranked labels over 30 tasks of 3 occupations, two labelers,
    and some (prompt, task) pairs repeated at a worse rank (a labeler may list a task twice)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_prompts):
        bench = f"b{rng.integers(3)}"
        labeler = "offline" if rng.random() < 0.8 else "openai"
        chosen = rng.choice(30, size=int(rng.integers(1, 9)), replace=False)
        for rank, task in enumerate(chosen, start=1):
            occupation = [OCC_A, OCC_B, OCC_C][int(task) % 3]
            rows.append(_label(bench, f"p{i}", occupation, int(task) + 1, labeler=labeler, rank=rank))
            if rng.random() < 0.05:
                rows.append(_label(bench, f"p{i}", occupation, int(task) + 1, labeler=labeler, rank=rank + 7))
    return pl.DataFrame(rows)


def _prompts_per_task(labels: pl.DataFrame, by_benchmark: bool) -> pl.DataFrame:
    """The prompt-level count coverage rests on: distinct (benchmark, prompt_id) per task [and benchmark]."""
    keys = (["benchmark"] if by_benchmark else []) + ["onet_soc_code", "task_id"]
    return (labels.select("benchmark", "prompt_id", "onet_soc_code", "task_id").unique()
            .group_by(keys).agg(pl.len().cast(pl.Int64).alias("n_prompts")))


def _labeled_n_prompts(coverage: pl.DataFrame, by_benchmark: bool) -> pl.DataFrame:
    keys = (["benchmark"] if by_benchmark else []) + ["onet_soc_code", "task_id"]
    return coverage.filter(pl.col("n_prompts") > 0).select(*keys, "n_prompts")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_label_counts_give_the_same_coverage_as_the_labels(world: dict[str, pl.DataFrame], seed: int) -> None:
    """The analysis assets read DuckDB-aggregated label counts instead of the label table: every coverage number
    (pooled, per benchmark, per labeler, per label depth, headline) must equal the prompt-level computation
    (counted here from the labels directly, since the coverage functions take label counts only)."""
    labels = _random_labels(seed)
    tasks = pl.DataFrame(
        {"onet_soc_code": [[OCC_A, OCC_B, OCC_C][t % 3] for t in range(30)], "task_id": list(range(1, 31))}
    )
    counts = label_counts(labels)
    # far fewer rows than labels, and every (labeler, benchmark, prompt, task) counted exactly once
    assert counts.height < labels.height
    distinct = labels.select("labeler", "benchmark", "prompt_id", "onet_soc_code", "task_id").unique().height
    assert counts["n_prompts"].sum() == distinct
    for labeler in ("offline", "openai"):
        chosen, _ = select_labeler(labels, labeler)
        for by_benchmark in (False, True):
            expected = _prompts_per_task(chosen, by_benchmark)
            got = task_coverage(counts, tasks, (1, 3, 5), labeler=labeler, by_benchmark=by_benchmark)
            keys = expected.columns[:-1]
            assert _labeled_n_prompts(got, by_benchmark).sort(keys).equals(expected.sort(keys))
            assert got["covered_3"].to_list() == (got["n_prompts"] >= 3).to_list()
        for depth in (1, 3, 5, None):
            chosen_counts, _ = select_labeler(counts, labeler)
            best = chosen.group_by("benchmark", "prompt_id", "onet_soc_code", "task_id").agg(pl.col("rank").min())
            kept = best if depth is None else best.filter(pl.col("rank") <= depth)
            got = task_coverage(labels_at_depth(chosen_counts, depth), tasks)
            assert _labeled_n_prompts(got, False).sort("task_id").equals(_prompts_per_task(kept, False).sort("task_id"))
    hours = pl.DataFrame({"onet_soc_code": tasks["onet_soc_code"], "task_id": tasks["task_id"]}).with_columns(
        pl.lit(1 / 10).alias("pi"), pl.lit(False).alias("pi_is_fallback"),
        pl.lit(1000.0).alias("occupation_annual_hours"), pl.lit(100.0).alias("task_annual_hours"),
    )
    # the order of the label rows does not matter
    shuffled = label_counts(labels.sample(fraction=1.0, shuffle=True, seed=seed))
    assert coverage_headline(counts, tasks, hours, world["occupations"]).equals(
        coverage_headline(shuffled, tasks, hours, world["occupations"])
    )


def test_label_counts_keep_a_prompts_best_rank_and_refuse_unknown_depths() -> None:
    labels = pl.DataFrame(
        [_label("b", "p1", OCC_A, 1, rank=4), _label("b", "p1", OCC_A, 1, rank=2), _label("b", "p2", OCC_A, 1, rank=9)]
    )
    counts = label_counts(labels)
    # p1's task 1 counts once, in the top-3 bucket (its best rank 2); p2 only when every label counts
    assert counts.select("min_depth", "n_prompts").rows() == [(3, 1), (None, 1)]
    assert labels_at_depth(counts, 3)["n_prompts"].sum() == 1
    assert labels_at_depth(counts, None)["n_prompts"].sum() == 2
    with pytest.raises(ValueError, match="bucketed"):
        labels_at_depth(counts, 2)


def test_warehouse_label_counts_equal_the_in_memory_ones(tmp_path) -> None:
    """The asset runs the SQL on the warehouse file; unit tests run it on a frame: same numbers."""
    labels = _random_labels(7)
    path = tmp_path / "w.duckdb"
    wh.replace_table(path, "prompt_task_labels", labels)
    from resources.label_queries import label_counts_from_connection

    with wh.connect(path, read_only=True) as con:
        stored = label_counts_from_connection(con)
    assert stored.equals(label_counts(labels))
    # keys_in: only rows whose (benchmark, prompt_id) occur in another table, selected in DuckDB
    keys = labels.select("benchmark", "prompt_id").unique().sort("benchmark", "prompt_id").head(3)
    results = pl.concat([keys, keys, pl.DataFrame({"benchmark": ["b9"], "prompt_id": ["nope"]})])  # 2 models
    wh.replace_table(path, "benchmark_results", results)
    scored = wh.read_table(path, "prompt_task_labels", columns=["benchmark", "prompt_id", "task_id"],
                           keys_in="benchmark_results")
    expected = labels.join(keys, on=["benchmark", "prompt_id"], how="semi").select("benchmark", "prompt_id", "task_id")
    assert 3 <= expected.height < labels.height
    assert scored.sort(scored.columns).equals(expected.sort(expected.columns))


def test_kept_scope_rows_are_read_back_and_the_headline_is_the_same(world: dict[str, pl.DataFrame]) -> None:
    """coverage_headline's scope_rows (issue 29 item 3): rows kept by the scope's task coverage are read back; a
    changed benchmark and the pooled scope are computed again; the table equals computing every scope."""
    from resources.estimate_cache import frames_key

    store: dict[str, tuple[str, object]] = {}
    computed: list[str] = []

    def kept(scope: str, task_cov: pl.DataFrame, compute):  # as assets/analysis.py counted_headline
        key = frames_key(["test", scope], [task_cov])
        if scope in store and store[scope][0] == key:
            return store[scope][1]
        computed.append(scope)
        store[scope] = (key, compute())
        return store[scope][1]

    args = (world["tasks"], world["task_hours"], world["occupations"])
    first = coverage_headline(world["counts"], *args, scope_rows=kept)
    assert sorted(computed) == ["all", "bench1", "bench2"]
    assert first.equals(coverage_headline(world["counts"], *args))
    computed.clear()
    more = label_counts(pl.concat([world["labels"], pl.DataFrame([_label("bench2", "q2", OCC_C, 6)])]))
    refreshed = coverage_headline(more, *args, scope_rows=kept)
    assert sorted(computed) == ["all", "bench2"]  # bench1's rows read back
    scratch = coverage_headline(more, *args)
    assert refreshed.equals(scratch)
    assert not refreshed.equals(first)


def test_headline_invariants_check_every_denominator(world: dict[str, pl.DataFrame]) -> None:
    """coverage_headline_invariants' rules: a well-formed table passes; a share above 1, or a task, occupation or
    major-group denominator other than every O*NET task, every occupation with tasks, or the 22 groups, fails."""
    from models.coverage import headline_invariant_problems

    headline = coverage_headline(world["counts"], world["tasks"], world["task_hours"], world["occupations"])
    assert headline_invariant_problems(headline, world["tasks"]) == []
    wrong_tasks = headline.with_columns(
        pl.when(pl.col("metric") == "tasks_covered").then(pl.col("denominator") - 1)
        .otherwise(pl.col("denominator")).alias("denominator"))
    assert headline_invariant_problems(wrong_tasks, world["tasks"]) == ["tasks_covered out of [5.0], not 6"]
    groups = headline.with_columns(pl.when(pl.col("metric") == "major_groups_uncovered").then(23.0)
                                   .otherwise(pl.col("denominator")).alias("denominator"))
    assert headline_invariant_problems(groups, world["tasks"]) == ["major_groups_uncovered out of [23.0], not 22"]
    # tasks of another O*NET release (one task and one occupation fewer): both denominators are off
    assert headline_invariant_problems(headline, world["tasks"].head(5)) == [
        "tasks_covered out of [6.0], not 5", "occupations_covered out of [3.0], not 2"]
    above = headline.with_columns(pl.when(pl.col("metric") == "hours_share_covered").then(1.5)
                                  .otherwise(pl.col("value")).alias("value"))
    assert "a share is outside [0, 1]" in headline_invariant_problems(above, world["tasks"])

    # the published figures too (an audit: the check read only the labels as counted)
    published = headline.with_columns(pl.col("value").alias("published_value"),
                                      (pl.col("value") * 0.9).alias("published_ci_low"),
                                      pl.col("value").alias("published_ci_high"))
    assert headline_invariant_problems(published, world["tasks"]) == []
    pooled_hours = (pl.col("scope") == "all") & (pl.col("metric") == "hours_share_covered")

    def altered(column: str, value: float | None) -> pl.DataFrame:
        return published.with_columns(pl.when(pooled_hours).then(value).otherwise(pl.col(column)).alias(column))

    assert headline_invariant_problems(altered("published_value", 1.2), world["tasks"]) == [
        "a published_value is outside [0, 1] (for major groups uncovered, [0, 22])",
        f"{headline.filter(pooled_hours).height} published value(s) outside their interval (first: all "
        "hours_share_covered at >= 1)"]
    assert headline_invariant_problems(altered("published_ci_low", 1.0), world["tasks"])[0] == \
        "a published interval's low end is above its high end"
    assert headline_invariant_problems(altered("published_value", None), world["tasks"]) == [
        "a pooled headline row has no published value"]
    # a one-point interval (97.5% of draws agree) may sit beside a mean the other draws moved
    point = published.with_columns(pl.when(pooled_hours).then(pl.col("value") + 0.001).otherwise(
        pl.col("published_value")).alias("published_value"), pl.when(pooled_hours).then(pl.col("value")).otherwise(
        pl.col("published_ci_high")).alias("published_ci_high"), pl.when(pooled_hours).then(pl.col("value")).otherwise(
        pl.col("published_ci_low")).alias("published_ci_low"))
    assert headline_invariant_problems(point, world["tasks"]) == []


def test_the_estimates_read_each_benchmarks_labels_by_its_own_labeler(tmp_path) -> None:
    """The same audit: with three benchmarks labeled by the LLM, the estimates read the LLM's labels alone and
    treated the other benchmarks' texts as having no label. They now read each benchmark's preferred labeler,
    and only the offline labeler's benchmarks get cross-fitted twins for their reference texts."""
    import duckdb

    from assets.estimate_inputs import published_labels
    from resources.dagster_resources import Warehouse

    path = tmp_path / "benchmap.duckdb"
    rows = [("llm_bench", "h1", OCC_A, 1, 1.0, "openai", "gpt"), ("old_bench", "h2", OCC_A, 2, 0.7, "offline", "v1"),
            ("old_bench", "h3", OCC_B, 3, 0.4, "offline", "v1"), ("both", "h4", OCC_A, 4, 0.9, "offline", "v1"),
            ("both", "h4", OCC_A, 5, 1.0, "openai", "gpt")]
    with duckdb.connect(str(path)) as con:
        con.execute("create table prompt_task_labels (benchmark varchar, prompt_hash varchar, onet_soc_code "
                    "varchar, task_id bigint, p_exercised double, labeler varchar, labeler_version varchar)")
        con.executemany("insert into prompt_task_labels values (?, ?, ?, ?, ?, ?, ?)", rows)
    labels, name, version, not_offline = published_labels(Warehouse(path=str(path)), has_p=True)
    assert name == "openai+offline" and version == "v1" and not_offline == {"llm_bench", "both"}
    assert sorted(labels.select("benchmark", "task_id", "p_exercised").rows()) == [
        ("both", 5, 1.0), ("llm_bench", 1, 1.0), ("old_bench", 2, 0.7), ("old_bench", 3, 0.4)]
    with duckdb.connect(str(path)) as con:
        con.execute("delete from prompt_task_labels where labeler = 'openai'")
    labels, name, version, not_offline = published_labels(Warehouse(path=str(path)), has_p=True)
    assert (name, version, not_offline, labels.height) == ("offline", "v1", set(), 3)
