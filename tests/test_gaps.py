"""Gap finder: ranking, shortlist, major-group blocks, what-if and power.

Small hand-built frames whose answers are worked out by hand; the end-to-end tests on the mirror are in
tests/test_gaps_mirror.py.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from models.coverage import label_counts
from models.gaps import (
    PriorityWeights,
    WhatIfParams,
    coverage_gaps,
    dedupe_candidate,
    extra_prompts_needed,
    gap_task_frame,
    jobbench_shortlist,
    log_minmax,
    major_group_gaps,
    occupation_gaps,
    score_power,
    score_tasks,
    whatif_gain,
)

OCC_A, OCC_B, OCC_C = "15-1211.00", "43-4051.00", "47-2061.00"


def _task_frame(**overrides: list) -> pl.DataFrame:
    """Six tasks, two per occupation, all uncovered unless n_prompts says otherwise."""
    base: dict[str, list] = {
        "onet_soc_code": [OCC_A, OCC_A, OCC_B, OCC_B, OCC_C, OCC_C],
        "task_id": [1, 2, 3, 4, 5, 6],
        "task": [f"task {i}" for i in range(1, 7)],
        "occupation_title": ["Analysts"] * 2 + ["Clerks"] * 2 + ["Laborers"] * 2,
        "n_prompts": [0] * 6,
        "task_annual_hours": [100.0, 300.0, 1000.0, 200.0, 50.0, 5000.0],
        "weight_share": [0.25, 0.75, 0.8, 0.2, 0.01, 0.99],
        "occupation_annual_hours": [400.0, 400.0, 1200.0, 1200.0, 5050.0, 5050.0],
        "wage_bill": [2e9, 2e9, 1e9, 1e9, 5e8, 5e8],
        "employment": [1e4, 1e4, 2e4, 2e4, 3e4, 3e4],
        "human_exposure": ["E1", "E2", "E1", "E0", "E0", None],
        "exposed": [True, True, True, False, False, None],
        "desire_mean": [4.0, None, 3.5, 2.0, None, 1.5],
        "capability_mean": [2.0, None, 4.0, 2.0, None, 1.0],
        "importance": [3.0, 4.5, 4.0, 4.8, None, 3.5],  # O*NET IM; task 5 unrated
        "zone": [None] * 6,
    }
    base.update(overrides)
    return pl.DataFrame(
        base,
        schema_overrides={
            "zone": pl.Utf8,
            "desire_mean": pl.Float64,
            "capability_mean": pl.Float64,
            "importance": pl.Float64,
            "exposed": pl.Boolean,
            "human_exposure": pl.Utf8,
        },
    )


def _rank_of(gaps: pl.DataFrame, task_id: int) -> int | None:
    row = gaps.filter(pl.col("task_id") == task_id)
    return None if row.is_empty() else int(row["rank"][0])


def test_log_minmax_is_log_scaled_and_handles_missing() -> None:
    out = log_minmax(pl.Series("x", [10.0, 100.0, 1000.0, None, 0.0])).to_list()
    assert out == pytest.approx([0.0, 0.5, 1.0, 0.0, 0.0])
    assert log_minmax(pl.Series("x", [7.0, 7.0])).to_list() == [1.0, 1.0]


def test_priority_is_the_documented_formula() -> None:
    weights = PriorityWeights()
    scored = score_tasks(_task_frame(), weights)
    row = scored.filter(pl.col("task_id") == 1).row(0, named=True)
    # hours 100 on ln scale between 50 and 5000; wage bill 2e9 is the max
    c_hours = (math.log(100) - math.log(50)) / (math.log(5000) - math.log(50))
    assert row["c_hours"] == pytest.approx(c_hours)
    assert row["c_wage_bill"] == pytest.approx(1.0)
    assert row["c_exposure"] == 1.0 and row["digital_factor"] == 1.0  # E1
    assert row["c_desire"] == pytest.approx(0.75) and row["c_capability"] == pytest.approx(0.25)
    # importance 3.0 vs 4.5 in its occupation: mid-rank percentile (1 - 0.5) / 2
    assert row["c_importance"] == pytest.approx(0.25)
    assert row["priority"] == pytest.approx((c_hours + 1.0 + 1.0 + 0.75 + 0.25 + 0.25) / 6)
    assert row["imputed"] == ""
    # task 2: E2 -> beta 0.5; WORKBank unrated -> neutral 0.5 and flagged
    two = scored.filter(pl.col("task_id") == 2).row(0, named=True)
    assert two["c_exposure"] == 0.5 and two["c_desire"] == 0.5 and two["imputed"] == "desire,capability"
    # task 4: E0 -> gated by digital_factor_not_exposed; task 6: exposure unknown -> digital_factor_unknown
    four = scored.filter(pl.col("task_id") == 4).row(0, named=True)
    assert four["digital_factor"] == weights.digital_factor_not_exposed and four["c_exposure"] == 0.0
    six = scored.filter(pl.col("task_id") == 6).row(0, named=True)
    assert six["digital_factor"] == weights.digital_factor_unknown
    assert six["imputed"] == "exposure,digital"
    assert scored["priority"].is_between(0.0, 1.0).all()


def test_weights_change_the_formula_and_bad_weights_are_refused() -> None:
    only_hours = score_tasks(
        _task_frame(), PriorityWeights(wage_bill=0, exposure=0, desire=0, capability=0, importance=0)
    )
    expected = (only_hours["c_hours"] * only_hours["digital_factor"]).to_list()
    assert only_hours["priority"].to_list() == pytest.approx(expected)
    with pytest.raises(ValueError, match="not all 0"):
        PriorityWeights(hours=0, wage_bill=0, exposure=0, desire=0, capability=0, importance=0)
    with pytest.raises(ValueError, match="digital_factor_unknown"):
        PriorityWeights(digital_factor_unknown=1.5)


def test_ranking_orders_by_priority_and_excludes_covered() -> None:
    gaps = coverage_gaps(score_tasks(_task_frame()), threshold=5)
    assert gaps["rank"].to_list() == list(range(1, 7))
    assert gaps["priority"].is_sorted(descending=True)
    # components are their own columns, so an analyst can re-sort by any of them
    for column in ("c_hours", "c_wage_bill", "c_exposure", "c_desire", "c_capability", "digital_factor"):
        assert column in gaps.columns
    # covering a task (>= threshold prompts) removes it; below threshold it stays, with prompts_needed
    covered = coverage_gaps(score_tasks(_task_frame(n_prompts=[5, 3, 0, 0, 0, 0])), threshold=5)
    assert _rank_of(covered, 1) is None and covered.height == 5
    assert covered.filter(pl.col("task_id") == 2)["prompts_needed"].to_list() == [2]
    # the others keep their relative order (priority does not depend on coverage)
    before = gaps.filter(pl.col("task_id") != 1)["task_id"].to_list()
    assert covered["task_id"].to_list() == before
    # threshold 1: a task with 3 prompts is covered too
    assert set(
        coverage_gaps(score_tasks(_task_frame(n_prompts=[5, 3, 0, 0, 0, 0])), threshold=1)["task_id"]
    ) == {3, 4, 5, 6}


@pytest.mark.parametrize(
    ("column", "task_id", "value"),
    [
        ("task_annual_hours", 2, 4000.0),  # more work hours
        ("wage_bill", 5, 1.9e9),  # a richer occupation (5 and 6 share it)
        ("human_exposure", 2, "E1"),  # more exposed (E2 -> E1)
        ("desire_mean", 2, 5.0),  # workers want it more
        ("capability_mean", 2, 5.0),  # experts rate AI more capable
        ("importance", 1, 5.0),  # the most important task of its occupation instead of the least
    ],
)
def test_raising_each_component_raises_the_rank(column: str, task_id: int, value: object) -> None:
    frame = _task_frame()
    before = coverage_gaps(score_tasks(frame))
    values = frame[column].to_list()
    owner = frame.filter(pl.col("task_id") == task_id)["onet_soc_code"][0]
    changed_ids = [task_id]
    if column == "wage_bill":  # an occupation-level value: raise it for the whole occupation
        changed_ids = frame.filter(pl.col("onet_soc_code") == owner)["task_id"].to_list()
    values = [value if tid in changed_ids else v for tid, v in zip(frame["task_id"], values, strict=True)]
    after = coverage_gaps(
        score_tasks(frame.with_columns(pl.Series(column, values, dtype=frame[column].dtype)))
    )
    assert _rank_of(after, task_id) < _rank_of(before, task_id)
    p_before = before.filter(pl.col("task_id") == task_id)["priority"][0]
    p_after = after.filter(pl.col("task_id") == task_id)["priority"][0]
    assert p_after > p_before


def test_importance_ranks_tasks_within_occupations_not_occupations() -> None:
    scored = score_tasks(_task_frame())
    c_importance = dict(zip(scored["task_id"], scored["c_importance"], strict=True))
    # A: 3.0 < 4.5; B: 4.0 < 4.8; C: task 5 unrated (neutral 0.5, flagged), task 6 the only rated one
    assert c_importance == pytest.approx({1: 0.25, 2: 0.75, 3: 0.25, 4: 0.75, 5: 0.5, 6: 0.5})
    assert scored.filter(pl.col("task_id") == 5)["imputed"][0] == "desire,capability,importance"
    # between two otherwise identical tasks of one occupation, the more important one ranks first
    twins = _task_frame(task_annual_hours=[200.0, 200.0, 1000.0, 200.0, 50.0, 5000.0], desire_mean=[None] * 6,
                        capability_mean=[None] * 6, human_exposure=["E1", "E1", "E1", "E0", "E0", None])
    ranked = coverage_gaps(score_tasks(twins))
    assert _rank_of(ranked, 2) < _rank_of(ranked, 1)
    assert "importance" in ranked.columns and "c_importance" in ranked.columns
    # no importance column at all: every task neutral and flagged
    unrated = score_tasks(_task_frame().drop("importance"))
    assert set(unrated["c_importance"]) == {0.5} and unrated["imputed"].str.contains("importance").all()
    # occupation ranks leave importance out (its within-occupation percentile averages ~0.5 everywhere)
    with_importance = occupation_gaps(scored)
    without = occupation_gaps(score_tasks(_task_frame(), PriorityWeights(importance=0)))
    assert with_importance["priority"].to_list() == pytest.approx(without["priority"].to_list())
    assert "c_importance" not in with_importance.columns


def test_digital_gate_raises_the_rank() -> None:
    frame = _task_frame()
    before = coverage_gaps(score_tasks(frame))
    # task 4 stays E0 for the exposure score but is flagged digital: only the gate moves
    after = coverage_gaps(
        score_tasks(
            frame.with_columns(
                pl.when(pl.col("task_id") == 4).then(True).otherwise(pl.col("exposed")).alias("exposed")
            )
        )
    )
    assert _rank_of(after, 4) < _rank_of(before, 4)
    assert after.filter(pl.col("task_id") == 4)["c_exposure"][0] == 0.0


def test_occupation_gaps_use_uncovered_hours_and_skip_covered_occupations() -> None:
    scored = score_tasks(_task_frame(n_prompts=[5, 0, 0, 0, 0, 0]))
    occ = occupation_gaps(scored, threshold=5)
    assert set(occ["onet_soc_code"]) == {OCC_B, OCC_C}  # A has a task at the threshold
    b = occ.filter(pl.col("onet_soc_code") == OCC_B).row(0, named=True)
    assert b["uncovered_hours"] == pytest.approx(1200.0) and b["n_tasks"] == 2 and b["tasks_covered"] == 0
    assert b["c_exposure"] == pytest.approx(0.8 * 1.0 + 0.2 * 0.0)  # pi-weighted
    assert b["desire_mean"] == pytest.approx(2.75) and b["n_desire_rated"] == 2
    assert b["digital_factor"] == pytest.approx(0.8 * 1.0 + 0.2 * 0.25)
    assert occ["rank"].to_list() == [1, 2] and occ["priority"].is_sorted(descending=True)


def test_jobbench_shortlist_keeps_occupations_wanting_automation() -> None:
    # A: desire mean 4.0 (one rated task); B: mean (3.5 + 2.0) / 2 = 2.75; C: 1.5
    frame = _task_frame(desire_mean=[4.0, 3.2, 3.5, 3.4, None, 1.5])
    short = jobbench_shortlist(score_tasks(frame), threshold=5)
    assert short["onet_soc_code"].to_list() == [OCC_A, OCC_B]  # ranked by wage bill: 2e9 then 1e9
    a = short.row(0, named=True)
    assert a["desire_mean"] == pytest.approx(3.6) and a["n_driving_tasks"] == 2
    assert a["driving_task_ids"] == "1,2"  # most desired first
    assert a["driving_tasks"].startswith("4.0 | task 1")
    assert a["occupation_covered"] is False and a["tasks_covered"] == 0
    # covering task 1 moves it out of the drivers and into the current coverage
    covered = jobbench_shortlist(score_tasks(frame.with_columns(pl.Series("n_prompts", [5, 0, 0, 0, 0, 0]))))
    a = covered.row(0, named=True)
    assert a["driving_task_ids"] == "2" and a["tasks_covered"] == 1
    assert a["hours_share_covered"] == pytest.approx(0.25) and a["occupation_covered"] is True
    # strictly above 3: an occupation at exactly 3.0 is not in
    assert jobbench_shortlist(score_tasks(_task_frame(desire_mean=[3.0, 3.0, 1, 1, 1, 1]))).is_empty()


def test_major_group_gaps_lists_the_largest_uncovered_blocks() -> None:
    frame = _task_frame(
        onet_soc_code=[OCC_A, OCC_A, OCC_B, OCC_B, "43-9061.00", "43-9061.00"], n_prompts=[0, 0, 5, 0, 0, 0]
    )
    out = major_group_gaps(score_tasks(frame), threshold=5, top_k=3)
    assert out["major_group_code"].n_unique() == 22  # every SOC major group, even with nothing uncovered
    office = out.filter(pl.col("major_group_code") == "43-0000")
    assert office["onet_soc_code"].to_list() == ["43-9061.00", OCC_B]
    assert office["block_uncovered_hours"].to_list() == pytest.approx([5050.0, 200.0])
    assert office["group_uncovered_share"][0] == pytest.approx(5250.0 / 6250.0)
    assert office["largest_uncovered_task"][0] == "task 6"
    assert office["block_share_of_group_uncovered"].sum() == pytest.approx(1.0)
    empty = out.filter(pl.col("major_group_code") == "11-0000")
    assert empty.height == 1 and empty["block_rank"][0] is None and empty["group_hours"][0] == 0.0
    assert (
        major_group_gaps(score_tasks(frame), threshold=5, top_k=1)
        .filter(pl.col("major_group_code") == "43-0000")
        .height
        == 1
    )


def test_task_and_group_gaps_read_the_estimates_when_they_exist() -> None:
    """With task_estimates (issue 25), coverage_gaps holds the tasks not likely covered (p_covered < 0.9, the
    map's cut) and major_group_gaps counts each task as 1 - p_covered uncovered, so no list calls a task
    open that the estimates say is covered, nor leaves out one the labels happen to count 5 times."""
    from models.gaps import with_task_p_covered

    frame = _task_frame(n_prompts=[0, 0, 5, 0, 0, 0])
    estimates = pl.DataFrame({  # sparse: task 4 has no row (p 0); another index and threshold are ignored
        "benchmark_index": ["all"] * 5 + ["other", "all"], "onet_soc_code": [OCC_A, OCC_A, OCC_B, OCC_C, OCC_C, OCC_A, OCC_A],
        "task_id": [1, 2, 3, 5, 6, 1, 1], "threshold": [5] * 6 + [1],
        "p_covered": [0.95, 0.2, 0.5, 1.0, 0.3, 0.0, 0.0], "labels_count": [0.0] * 7,
    })
    listed = with_task_p_covered(score_tasks(frame), estimates, "all", 5)
    assert dict(zip(listed["task_id"], listed["p_covered"], strict=True)) == {
        1: 0.95, 2: 0.2, 3: 0.5, 4: 0.0, 5: 1.0, 6: 0.3}
    tasks = coverage_gaps(listed, threshold=5)
    assert sorted(tasks["task_id"]) == [2, 3, 4, 6]  # 1 and 5 likely covered; 3 listed though labeled 5 times
    three = tasks.filter(pl.col("task_id") == 3).row(0, named=True)
    assert three["prompts_needed"] == 0 and three["p_covered"] == 0.5 and three["n_prompts"] == 5
    # without estimates the labels decide, and p_covered is null
    plain = coverage_gaps(score_tasks(frame), threshold=5)
    assert sorted(plain["task_id"]) == [1, 2, 4, 5, 6] and plain["p_covered"].null_count() == plain.height

    groups = major_group_gaps(listed, threshold=5, top_k=3)
    assert set(groups["uncovered_by"]) == {"estimates: 1 - p_covered per task"}
    office = groups.filter(pl.col("major_group_code") == "43-0000").row(0, named=True)
    assert office["block_uncovered_hours"] == pytest.approx(1000 * 0.5 + 200 * 1.0)
    # the largest uncovered task: the most expected uncovered hours (500 of task 3 against 200 of task 4)
    assert office["block_uncovered_tasks"] == pytest.approx(1.5) and office["largest_uncovered_task"] == "task 3"
    analysts = groups.filter(pl.col("major_group_code") == "15-0000").row(0, named=True)
    assert analysts["group_uncovered_hours"] == pytest.approx(100 * 0.05 + 300 * 0.8)
    laborers = groups.filter(pl.col("major_group_code") == "47-0000").row(0, named=True)
    assert laborers["block_uncovered_hours"] == pytest.approx(5000 * 0.7)  # task 5 covered for sure: 0 hours
    # the label path is the count it always was
    counted = major_group_gaps(score_tasks(frame), threshold=5, top_k=3)
    assert set(counted["uncovered_by"]) == {"labels as counted: tasks below the threshold"}
    assert counted.filter(pl.col("major_group_code") == "43-0000")["block_uncovered_hours"].to_list() == [200.0]


def test_major_group_gaps_are_bit_identical_whatever_the_row_order() -> None:
    """Float sums in a fixed order: the exported CSV (and the manifest's hash of it) is the same on every run,
    whatever order the tasks arrive in (before, 3 of 10 shuffles changed the last bits of group_hours)."""
    rng = np.random.default_rng(1)
    n = 40_000
    codes = [f"{g}-{i:04d}.00" for g in ("11", "13", "15", "17", "19", "21", "23", "25", "27", "29") for i in range(80)]
    scored = pl.DataFrame({
        "onet_soc_code": rng.choice(codes, n), "task_id": np.arange(n), "task": [f"t{i}" for i in range(n)],
        "occupation_title": "x", "task_annual_hours": rng.random(n) * 1e5, "n_prompts": rng.integers(0, 3, n)})
    first = major_group_gaps(scored)
    for seed in range(10):
        again = major_group_gaps(scored.sample(fraction=1.0, shuffle=True, seed=seed))
        assert again.equals(first), seed  # bit for bit, not approximately
    group_hours = first.unique("major_group_code")["group_hours"].sum()  # repeated on each block row
    assert group_hours == pytest.approx(scored["task_annual_hours"].sum())


# --- what-if on hand-built labels -----------------------------------------------------------------------


def _labels(rows: list[tuple[str, str, str, int]], labeler: str = "offline") -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "benchmark": b,
                "prompt_id": p,
                "prompt_hash": f"h:{text_key}",
                "onet_soc_code": occ,
                "task_id": t,
                "labeler": labeler,
            }
            for b, p, occ, t, text_key in [(*r, f"{r[0]}/{r[1]}") for r in rows]
        ]
    )


@pytest.fixture
def small_world() -> dict[str, pl.DataFrame]:
    frame = _task_frame()
    tasks = frame.select("onet_soc_code", "task_id", "task")
    task_hours = frame.select(
        "onet_soc_code",
        "task_id",
        pl.col("weight_share").alias("pi"),
        "occupation_annual_hours",
        "task_annual_hours",
    )
    occupations = pl.DataFrame(
        {"onet_soc_code": [OCC_A, OCC_B, OCC_C], "title": ["Analysts", "Clerks", "Laborers"]}
    )
    existing = _labels([("bench", f"p{i}", OCC_A, 1) for i in range(5)] + [("bench", "q", OCC_B, 3)])
    return {
        "frame": frame,
        "tasks": tasks,
        "task_hours": task_hours,
        "occupations": occupations,
        "existing": existing,
    }


def _landed(existing: pl.DataFrame) -> dict:
    """What whatif_gain is told about the landed prompts: their label counts go positionally; these name
    the prompts (keys and text hashes), which counts do not carry."""
    return {
        "landed_keys": existing.select("benchmark", "prompt_id").unique(),
        "existing_prompt_hashes": existing["prompt_hash"].to_list(),
    }


def test_whatif_copy_of_landed_prompts_adds_nothing(small_world: dict[str, pl.DataFrame]) -> None:
    w = small_world
    # same texts (same hashes) under another benchmark name and other ids
    copy = w["existing"].with_columns(
        pl.lit("copy").alias("benchmark"), ("c" + pl.col("prompt_id")).alias("prompt_id")
    )
    result = whatif_gain(label_counts(w["existing"]), copy, w["tasks"], w["task_hours"], w["occupations"],
                         WhatIfParams(threshold=1), **_landed(w["existing"]))
    gain = dict(zip(result.marginal_gain["metric"], result.marginal_gain["gain"], strict=True))
    assert gain["tasks_covered"] == 0 and gain["occupations_covered"] == 0 and gain["hours_covered"] == 0
    counted = result.marginal_gain.filter(pl.col("metric") == "candidate_prompts_counted")["after"][0]
    assert counted == 0
    assert result.newly_covered_tasks.is_empty() and result.newly_covered_occupations.is_empty()


def test_whatif_reports_newly_covered_tasks_hours_and_ranks(small_world: dict[str, pl.DataFrame]) -> None:
    w = small_world
    priorities = score_tasks(w["frame"])
    # 2 new prompts on task 3 (1 landed -> 3), 3 on task 5 (0 -> 3); one duplicate text within the candidate
    cand = _labels(
        [
            ("cand", "a", OCC_B, 3),
            ("cand", "b", OCC_B, 3),
            ("cand", "c", OCC_C, 5),
            ("cand", "d", OCC_C, 5),
            ("cand", "e", OCC_C, 5),
        ]
    )
    cand = pl.concat(
        [cand, cand.filter(pl.col("prompt_id") == "e").with_columns(pl.lit("f").alias("prompt_id"))]
    )
    result = whatif_gain(
        label_counts(w["existing"]),
        cand,
        w["tasks"],
        w["task_hours"],
        w["occupations"],
        WhatIfParams(threshold=3, n_candidate_prompts=7),
        priorities=priorities,
        **_landed(w["existing"]),
    )
    newly = result.newly_covered_tasks
    assert newly.select("onet_soc_code", "task_id").rows() == [(OCC_B, 3), (OCC_C, 5)]
    assert newly["n_prompts_before"].to_list() == [1, 0] and newly["n_prompts_after"].to_list() == [3, 3]
    assert newly["task_annual_hours"].to_list() == pytest.approx([960.0, 50.5])  # pi share x occupation hours
    assert set(result.newly_covered_occupations["onet_soc_code"]) == {OCC_B, OCC_C}
    gain = {r["metric"]: r for r in result.marginal_gain.iter_rows(named=True)}
    assert gain["tasks_covered"]["before"] == 1 and gain["tasks_covered"]["gain"] == 2
    assert gain["occupations_covered"]["gain"] == 2
    assert gain["hours_covered"]["gain"] == pytest.approx(960.0 + 50.5)
    assert gain["duplicates_within_candidate"]["after"] == 1 and gain["candidate_prompts"]["after"] == 7
    changes = result.gap_rank_changes
    closed = changes.filter(pl.col("closed"))
    assert set(closed["task_id"]) == {3, 5} and closed["rank_after"].null_count() == 2
    # a still-open task moves up by the number of closed tasks ranked above it
    before_gaps = coverage_gaps(
        priorities.with_columns(
            pl.when(pl.col("task_id") == 1)
            .then(5)
            .when(pl.col("task_id") == 3)
            .then(1)
            .otherwise(0)
            .alias("n_prompts")
        ),
        threshold=3,
    )
    for row in changes.filter(~pl.col("closed")).iter_rows(named=True):
        above = before_gaps.filter(
            (pl.col("rank") < row["rank_before"]) & pl.col("task_id").is_in([3, 5])
        ).height
        assert row["rank_change"] == above
    assert gain["gap_priority_mass"]["gain"] == pytest.approx(-closed["priority"].sum())


def test_whatif_drops_landed_ids_without_the_landed_texts(small_world: dict[str, pl.DataFrame]) -> None:
    """The landed keys alone drop a candidate prompt reusing a landed (benchmark, prompt_id): every what-if
    table comes out as when the landed texts are given too (whatif_gain takes label counts only; before,
    this compared the label-counts path with a prompt-level-labels path that gave the texts)."""
    w = small_world
    priorities = score_tasks(w["frame"])
    landed = w["existing"].select("benchmark", "prompt_id").unique()
    cand = _labels([("cand", "a", OCC_B, 3), ("cand", "b", OCC_C, 5), ("cand", "c", OCC_C, 5)])
    # one candidate prompt reuses a landed (benchmark, prompt_id): dropped on both paths
    first = landed.row(0, named=True)
    cand = pl.concat([cand, _labels([(first["benchmark"], first["prompt_id"], OCC_C, 5)])], how="diagonal_relaxed")
    args = (cand, w["tasks"], w["task_hours"], w["occupations"])
    from_labels = whatif_gain(label_counts(w["existing"]), *args, WhatIfParams(threshold=1), priorities=priorities,
                              **_landed(w["existing"]))
    from_counts = whatif_gain(label_counts(w["existing"]), *args, WhatIfParams(threshold=1), priorities=priorities,
                              landed_keys=landed)
    for name in ("marginal_gain", "newly_covered_tasks", "newly_covered_occupations", "gap_rank_changes"):
        assert getattr(from_counts, name).equals(getattr(from_labels, name)), name
    gain = {r["metric"]: r["after"] for r in from_counts.marginal_gain.iter_rows(named=True)}
    assert gain["duplicates_of_landed"] == 1
    with pytest.raises(ValueError, match="landed_keys"):
        whatif_gain(label_counts(w["existing"]), *args, WhatIfParams(threshold=1))


def test_whatif_refuses_to_mix_labelers(small_world: dict[str, pl.DataFrame]) -> None:
    w = small_world
    cand = _labels([("cand", "a", OCC_B, 3)], labeler="openai")
    with pytest.raises(ValueError, match="no 'openai' labels"):
        whatif_gain(label_counts(w["existing"]), cand, w["tasks"], w["task_hours"], w["occupations"],
                    WhatIfParams(threshold=1), **_landed(w["existing"]))


def test_dedupe_candidate_by_text_and_by_id() -> None:
    existing = _labels([("bench", "p1", OCC_A, 1)])
    cand = pl.DataFrame(
        {
            "benchmark": ["bench", "new", "new", "new"],
            "prompt_id": ["p1", "x", "y", "z"],
            "prompt_hash": ["other", "h:bench/p1", "fresh", "fresh"],
            "onet_soc_code": [OCC_A] * 4,
            "task_id": [1, 1, 1, 2],
        }
    )
    kept, counts = dedupe_candidate(existing, cand)
    assert kept["prompt_id"].to_list() == ["y"]
    assert counts == {
        "candidate_prompts_labeled": 4,
        "duplicates_of_landed": 2,
        "duplicates_within_candidate": 1,
        "candidate_prompts_counted": 1,
    }


# --- power -----------------------------------------------------------------------------------------


def test_extra_prompts_needed_matches_brute_force() -> None:
    variances = np.array([0.25, 0.1, 0.04])
    counts = np.array([5.0, 10.0, 2.0])
    extra, current, projected = extra_prompts_needed(variances, counts, target_width=0.10)
    z = 1.959963984540054

    def width(d: int) -> float:
        return 2 * z / 3 * math.sqrt(float(np.sum(variances / (counts + d))))

    assert current == pytest.approx(width(0))
    assert projected <= 0.10 < width(extra - 1)
    assert extra == next(d for d in range(10_000) if width(d) <= 0.10)
    assert extra_prompts_needed(np.array([0.0]), np.array([3.0]), 0.1)[0] == 0
    assert extra_prompts_needed(np.array([]), np.array([]), 0.1)[0] is None


def test_score_power_from_observed_task_variance() -> None:
    # occupation A, model m: task 1 has 4 prompts scored 0,1,0,1 (var 1/3), task 2 a single prompt (pooled)
    labels = _labels(
        [
            ("b", "p1", OCC_A, 1),
            ("b", "p2", OCC_A, 1),
            ("b", "p3", OCC_A, 1),
            ("b", "p4", OCC_A, 1),
            ("b", "p5", OCC_A, 2),
        ]
    )
    results = pl.DataFrame(
        {
            "benchmark": ["b"] * 5,
            "prompt_id": ["p1", "p2", "p3", "p4", "p5"],
            "model": ["m"] * 5,
            "score": [0.0, 1.0, 0.0, 1.0, 1.0],
        }
    )
    power = score_power(results, labels, target_width=0.10, min_prompts=(4, 1))
    by_min = {r["min_prompts"]: r for r in power.iter_rows(named=True)}
    z = 1.959963984540054
    four = by_min[4]
    assert four["n_tasks"] == 1 and four["tasks_variance_pooled"] == 0
    assert four["analytic_ci_width"] == pytest.approx(2 * z * math.sqrt((1 / 3) / 4))
    assert four["extra_prompts_per_task"] == math.ceil((2 * z) ** 2 * (1 / 3) / 0.01) - 4
    one = by_min[1]
    assert (
        one["n_tasks"] == 2
        and one["tasks_variance_pooled"] == 1
        and one["pooled_sd"] == pytest.approx(math.sqrt(1 / 3))
    )
    assert one["analytic_ci_width"] == pytest.approx(2 * z / 2 * math.sqrt((1 / 3) / 4 + (1 / 3) / 1))
    assert one["projected_ci_width"] <= 0.10 and one["meets_target"] is False
    assert one["extra_prompts_total"] == 2 * one["extra_prompts_per_task"]
    wide = score_power(results, labels, target_width=2.0, min_prompts=(1,))
    assert wide["extra_prompts_per_task"].to_list() == [0] and wide["meets_target"].to_list() == [True]


def test_gap_task_frame_joins_reference_tables() -> None:
    tasks = pl.DataFrame(
        {
            "onet_soc_code": [OCC_A, OCC_A, OCC_B],
            "task_id": [1, 2, 3],
            "task": ["t1", "t2", "t3"],
            "is_core": [True, False, True],
        }
    )
    task_cov = pl.DataFrame(
        {
            "onet_soc_code": [OCC_A, OCC_A, OCC_B],
            "task_id": [1, 2, 3],
            "n_prompts": [2, 0, 7],
            "covered_1": [True, False, True],
            "covered_5": [False, False, True],
        }
    )
    task_hours = pl.DataFrame(
        {
            "onet_soc_code": [OCC_A, OCC_A, OCC_B],
            "task_id": [1, 2, 3],
            "pi": [0.6, 0.2, None],
            "occupation_annual_hours": [1000.0, 1000.0, 10.0],
        }
    )
    exposure = pl.DataFrame(
        {
            "onet_soc_code": [OCC_A],
            "task_id": [1],
            "human_exposure": ["E2"],
            "exposed": [True],
            "gpt4_exposure": ["E1"],
            "gpt4_exposed": [True],
        }
    )
    wages = pl.DataFrame({"onet_soc_code": [OCC_A, OCC_B], "wage_bill": [1e9, 2e9], "employment": [1.0, 2.0]})
    workbank = pl.DataFrame(
        {
            "onet_soc_code": [OCC_A, OCC_A],
            "task_id": [2, 2],
            "desire_mean": [4.0, 2.0],
            "capability_mean": [3.0, 3.0],
            "zone": ["green_light", None],
        }
    )
    occupations = pl.DataFrame({"onet_soc_code": [OCC_A, OCC_B], "title": ["Analysts", "Clerks"]})
    frame = gap_task_frame(task_cov, tasks, task_hours, exposure, wages, workbank, occupations)
    assert frame.height == 3
    assert frame["task_annual_hours"].to_list() == pytest.approx([750.0, 250.0, 10.0])  # pi renormalised
    assert frame["desire_mean"].to_list()[1] == pytest.approx(3.0)  # two WORKBank rows averaged
    assert frame["occupation_title"].to_list() == ["Analysts", "Analysts", "Clerks"]
    assert frame["human_exposure"].to_list() == ["E2", None, None]
    gaps = coverage_gaps(score_tasks(frame), threshold=5)
    assert set(gaps["task_id"]) == {1, 2}


def test_score_power_does_not_trust_identical_scores() -> None:
    # task 1: three prompts all scored 0 (observed variance 0); task 2: one prompt scored 0
    labels = _labels(
        [("b", "p1", OCC_A, 1), ("b", "p2", OCC_A, 1), ("b", "p3", OCC_A, 1), ("b", "p4", OCC_A, 2)]
    )
    results = pl.DataFrame(
        {
            "benchmark": ["b"] * 4,
            "prompt_id": ["p1", "p2", "p3", "p4"],
            "model": ["m"] * 4,
            "score": [0.0, 0.0, 0.0, 0.0],
        }
    )
    power = {
        r["min_prompts"]: r for r in score_power(results, labels, min_prompts=(3, 1)).iter_rows(named=True)
    }
    smoothed = 0.125 * 0.875  # p = (0 + 0.5) / (3 + 1)
    z = 1.959963984540054
    assert power[3]["tasks_variance_smoothed"] == 1 and power[3]["meets_target"] is False
    assert power[3]["analytic_ci_width"] == pytest.approx(2 * z * math.sqrt(smoothed / 3))
    assert (
        power[1]["pooled_sd"] == pytest.approx(math.sqrt(smoothed)) and power[1]["tasks_variance_pooled"] == 1
    )
    # no task with two prompts and every score equal: the group's smoothed variance, p = 0.5 / 3
    single = score_power(results.filter(pl.col("prompt_id").is_in(["p1", "p4"])), labels, min_prompts=(1,))
    assert single["pooled_sd"][0] == pytest.approx(math.sqrt((0.5 / 3) * (2.5 / 3)))
