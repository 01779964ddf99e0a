"""Gaps and what-if gains from the per-unit estimates (issue 25 item 5): expected uncovered hours with an
interval, the ranking, and the expected gain of a candidate, on small frames whose answers are worked out
by hand or by enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from models.gaps import expected as ge


def _tasks() -> pl.DataFrame:
    return pl.DataFrame({
        "onet_soc_code": ["11-1011.00"] * 3 + ["15-1252.00"] * 2 + ["43-4051.00"],
        "task_id": [1, 2, 3, 4, 5, 6],
        "task_annual_hours": [100.0, 50.0, None, 400.0, 600.0, 80.0],
    })


def _task_estimates() -> pl.DataFrame:
    # sparse: task 3 and 6 have no row (p = 0); 43-4051 has no task estimate at all
    rows = [("all", "11-1011.00", 1, 1, 0.5, 0), ("all", "11-1011.00", 2, 1, 1.0, 3),
            ("all", "15-1252.00", 4, 1, 0.2, 1), ("all", "15-1252.00", 5, 1, 0.0, 0),
            ("all", "11-1011.00", 1, 5, 0.1, 0), ("all", "11-1011.00", 2, 5, 0.6, 3),
            ("all", "15-1252.00", 4, 5, 0.05, 1), ("other", "15-1252.00", 5, 1, 0.9, 9)]
    return pl.DataFrame(rows, schema=["benchmark_index", "onet_soc_code", "task_id", "threshold", "p_covered",
                                      "labels_count"], orient="row")


def test_expected_uncovered_hours_and_interval():
    task_p = ge.task_probabilities(_task_estimates(), "all", 1)
    occ = ge.expected_uncovered_hours(_tasks(), task_p, 1, n_sim=4000, seed=1)
    rows = {r["onet_soc_code"]: r for r in occ.iter_rows(named=True)}
    # 11-1011: 100 x 0.5 + 50 x 0 + 0 (no hours); the interval is the two outcomes of the one unsure task
    manager = rows["11-1011.00"]
    assert manager["expected_uncovered_hours"] == pytest.approx(50.0)
    assert (manager["expected_uncovered_hours_low"], manager["expected_uncovered_hours_high"]) == (0.0, 100.0)
    assert manager["p_covered"] == pytest.approx(1.0)  # task 2 is certain
    assert manager["expected_tasks_covered"] == pytest.approx(1.5) and manager["labels_tasks_covered"] == 1
    # 15-1252: 400 x 0.8 + 600; interval {600, 1000}: P(1000) = 0.8 so the 2.5% quantile is 600
    dev = rows["15-1252.00"]
    assert dev["expected_uncovered_hours"] == pytest.approx(920.0)
    assert (dev["expected_uncovered_hours_low"], dev["expected_uncovered_hours_high"]) == (600.0, 1000.0)
    assert dev["p_covered"] == pytest.approx(0.2) and dev["expected_uncovered_share"] == pytest.approx(0.92)
    # no estimate at all: every hour uncovered, no spread
    clerk = rows["43-4051.00"]
    assert clerk["expected_uncovered_hours"] == clerk["expected_uncovered_hours_low"] == 80.0
    assert clerk["p_covered"] == 0.0
    # the occupation's own estimate is used when given (it carries the draws' correlation)
    own = pl.DataFrame({"onet_soc_code": ["11-1011.00"], "p_covered": [0.97]})
    assert ge.expected_uncovered_hours(_tasks(), task_p, 1, own, n_sim=10).filter(
        pl.col("onet_soc_code") == "11-1011.00")["p_covered"].item() == pytest.approx(0.97)


def test_an_occupation_without_hours_data_has_unknown_hours_and_ranks_last():
    """Every task's hours null (no OEWS hours): its hours columns are null, not the 0 the sum would give, and
    the gap list puts it after every occupation whose uncovered hours are known, even 0."""
    tasks = pl.concat([_tasks(), pl.DataFrame({"onet_soc_code": ["45-3031.00"] * 2, "task_id": [7, 8],
                                               "task_annual_hours": [None, None]},
                                              schema_overrides={"task_annual_hours": pl.Float64})])
    task_p = ge.task_probabilities(_task_estimates(), "all", 1)
    occ = ge.expected_uncovered_hours(tasks, task_p, 1, n_sim=10)
    fishing = occ.filter(pl.col("onet_soc_code") == "45-3031.00").row(0, named=True)
    for column in ("occupation_annual_hours", "expected_uncovered_hours", "expected_uncovered_hours_low",
                   "expected_uncovered_hours_high", "expected_uncovered_share"):
        assert fishing[column] is None, column
    manager = occ.filter(pl.col("onet_soc_code") == "11-1011.00").row(0, named=True)
    assert manager["occupation_annual_hours"] == 150.0  # a null task among known ones still counts 0
    gaps = ge.expected_occupation_gaps(occ.with_columns(
        pl.when(pl.col("onet_soc_code") == "43-4051.00").then(0.0).otherwise(pl.col("expected_uncovered_hours"))
        .alias("expected_uncovered_hours")))
    assert gaps["onet_soc_code"].to_list()[-2:] == ["43-4051.00", "45-3031.00"]


def test_simulated_interval_matches_the_exact_distribution():
    """Many small independent tasks: the simulated 2.5/97.5% points sit where the exact distribution of the
    sum puts them (a binomial here: 40 tasks of 10 hours, each uncovered with probability 0.3)."""
    from scipy import stats

    owner = np.zeros(40, dtype=int)
    sims = ge.simulated_uncovered_hours(owner, np.full(40, 10.0), np.full(40, 0.7), 1, n_sim=20_000, seed=3)
    low, high = np.quantile(sims[:, 0], [0.025, 0.975])
    assert (low, high) == (10.0 * stats.binom.ppf(0.025, 40, 0.3), 10.0 * stats.binom.ppf(0.975, 40, 0.3))
    assert sims.mean() == pytest.approx(120.0, rel=0.01)


def test_gaps_rank_by_expected_uncovered_hours_and_leave_out_likely_covered():
    task_p = ge.task_probabilities(_task_estimates(), "all", 1)
    occ = ge.expected_uncovered_hours(_tasks(), task_p, 1, n_sim=200)
    titles = pl.DataFrame({"onet_soc_code": ["15-1252.00", "43-4051.00"], "title": ["Developers", "Clerks"]})
    gaps = ge.expected_occupation_gaps(occ, titles)
    assert gaps.columns == ge.EXPECTED_GAP_COLUMNS
    assert gaps["onet_soc_code"].to_list() == ["15-1252.00", "43-4051.00"]  # 11-1011 is likely covered
    assert gaps["rank"].to_list() == [1, 2] and gaps["occupation_title"].to_list() == ["Developers", "Clerks"]


def test_count_tail_and_candidate_pmf_by_enumeration():
    tail = ge.count_tail(np.array([0.8]), np.array([0.4]), 5)
    assert tail[0].tolist() == pytest.approx([1.0, 0.8, 0.7, 0.6, 0.5, 0.4])
    q = [0.3, 0.9, 0.5, 0.6, 0.2, 0.7]
    pmf = ge.candidate_count_pmf(np.zeros(6, dtype=int), np.array(q), 1, 5)
    exact = np.zeros(6)
    for outcome in itertools.product([0, 1], repeat=6):
        exact[min(sum(outcome), 5)] += np.prod([qi if o else 1 - qi for qi, o in zip(q, outcome, strict=True)])
    assert pmf[0] == pytest.approx(exact)


def test_expected_whatif_gain_by_hand():
    # the candidate labels task 4 twice (p 0.5 each) and task 6 once (p 1.0); task 1 with an unknown p (1)
    candidate = pl.DataFrame({"onet_soc_code": ["15-1252.00", "15-1252.00", "43-4051.00", "11-1011.00"],
                              "task_id": [4, 4, 6, 1], "p_exercised": [0.5, 0.5, 1.0, None]})
    gain, per_task = ge.expected_whatif_gain(_tasks(), _task_estimates(), candidate, 1)
    p = dict(zip(per_task["task_id"].to_list(), per_task["p_after"].to_list(), strict=True))
    assert p[4] == pytest.approx(1 - 0.8 * 0.25) and p[6] == 1.0 and p[1] == 1.0 and p[5] == 0.0
    metrics = {r["metric"]: r for r in gain.iter_rows(named=True)}
    assert metrics["expected_tasks_covered"]["before"] == pytest.approx(1.7)
    assert metrics["expected_tasks_covered"]["gain"] == pytest.approx(0.5 + 0.6 + 1.0)
    # hours: task 1 (100 x 0.5), task 4 (400 x 0.6), task 6 (80 x 1)
    assert metrics["expected_hours_covered"]["gain"] == pytest.approx(50 + 240 + 80)
    assert metrics["expected_uncovered_hours"]["gain"] == pytest.approx(-(50 + 240 + 80))
    # occupations (independence without occupation estimates): 15-1252 0.2 -> 0.8, 43-4051 0 -> 1
    assert metrics["expected_occupations_covered"]["gain"] == pytest.approx(0.6 + 1.0)
    # at >= 5 the landed tail is interpolated: task 4 has P(N>=j) = 0.2, 0.1625, 0.125, 0.0875, 0.05 (j=1..5)
    gain5, per_task5 = ge.expected_whatif_gain(_tasks(), _task_estimates(), candidate, 5)
    c = {0: 0.25, 1: 0.5, 2: 0.25}
    expected4 = sum(c[k] * [1.0, 0.2, 0.1625, 0.125, 0.0875, 0.05][5 - k] for k in c)
    assert per_task5.filter(pl.col("task_id") == 4)["p_after"].item() == pytest.approx(expected4)
    assert per_task5.filter(pl.col("task_id") == 4)["p_before"].item() == pytest.approx(0.05)
    with pytest.raises(ValueError, match="thresholds 1 and 5"):
        ge.expected_whatif_gain(_tasks(), _task_estimates(), candidate, 3)


def test_occupation_gaps_from_estimates_rank_by_expected_uncovered_hours():
    """The gap finder's occupation list with estimates: every occupation, ranked by expected uncovered hours (not
    by priority), the labels-as-counted columns beside; one likely covered stays in with the hours its other tasks
    leave open; without estimates the priority list says so."""
    from models.gaps import OCCUPATION_GAP_COLUMNS, occupation_gaps, score_tasks
    from tests.test_gaps import OCC_A, OCC_B, OCC_C, _task_frame

    scored = score_tasks(_task_frame(n_prompts=[5, 0, 0, 0, 0, 0]))
    # labels: A covered (task 1 has 5 prompts); estimates: A likely covered, B unsure (task 3 at 0.5), C's big
    # task (5,000 h) unsure at 0.6 -> C expected 50 + 2,000 uncovered, B 500 + 200
    estimates = pl.DataFrame(
        [("all", OCC_A, 1, 5, 0.95, 5), ("all", OCC_B, 3, 5, 0.5, 0), ("all", OCC_C, 6, 5, 0.6, 0)],
        schema=["benchmark_index", "onet_soc_code", "task_id", "threshold", "p_covered", "labels_count"],
        orient="row",
    )
    occupations = pl.DataFrame([("all", OCC_A, 5, 0.95), ("all", OCC_B, 5, 0.5), ("all", OCC_C, 5, 0.6)],
                               schema=["benchmark_index", "onet_soc_code", "threshold", "p_covered"], orient="row")
    gaps = ge.occupation_gaps_from_estimates(scored, 5, estimates, "all", occupations, n_sim=500)
    assert gaps.columns == [*OCCUPATION_GAP_COLUMNS, *ge.EXPECTED_COLUMNS]
    assert gaps["onet_soc_code"].to_list() == [OCC_C, OCC_B, OCC_A] and gaps["rank"].to_list() == [1, 2, 3]
    c, b, a = (gaps.row(i, named=True) for i in range(3))
    # A is likely covered (its task 1 at 0.95), yet its task 2 (300 h, no estimate: p 0) is open
    assert a["p_covered"] == 0.95 and a["expected_uncovered_hours"] == pytest.approx(0.05 * 100 + 300)
    assert c["expected_uncovered_hours"] == pytest.approx(50 + 0.4 * 5000)
    assert (c["expected_uncovered_hours_low"], c["expected_uncovered_hours_high"]) == (50.0, 5050.0)
    assert b["expected_uncovered_hours"] == pytest.approx(0.5 * 1000 + 200) and b["p_covered"] == 0.5
    assert b["uncovered_hours"] == pytest.approx(1200.0)  # the labels as counted, beside
    assert set(gaps["ranked_by"]) == {ge.RANKED_BY_ESTIMATES}
    # the priority ranking would put B first: the estimate reorders
    by_priority = occupation_gaps(scored, 5)
    assert by_priority["onet_soc_code"].to_list()[0] == OCC_B
    plain = ge.with_expected_columns(by_priority)
    assert plain["expected_uncovered_hours"].null_count() == plain.height
    assert set(plain["ranked_by"]) == {ge.RANKED_BY_PRIORITY}


def _whatif_inputs() -> tuple[pl.DataFrame, ...]:
    """existing labels, candidate labels, tasks, task_hours, occupations, and the estimates (by name) of a
    small what-if."""
    from tests.test_gaps import OCC_A, OCC_B, OCC_C, _labels, _task_frame

    frame = _task_frame()
    tasks = frame.select("onet_soc_code", "task_id", "task")
    task_hours = frame.select("onet_soc_code", "task_id", pl.col("weight_share").alias("pi"),
                              "occupation_annual_hours", "task_annual_hours")
    occupations = pl.DataFrame({"onet_soc_code": [OCC_A, OCC_B, OCC_C], "title": ["A", "B", "C"]})
    existing = _labels([("bench", f"p{i}", OCC_A, 1) for i in range(5)] + [("bench", "q", OCC_B, 3)])
    estimates = {"task_estimates": pl.DataFrame(
        [("all", OCC_A, 1, 1, 1.0, 5), ("all", OCC_B, 3, 1, 0.5, 1)],
        schema=["benchmark_index", "onet_soc_code", "task_id", "threshold", "p_covered", "labels_count"],
        orient="row",
    ).vstack(pl.DataFrame(
        [("all", OCC_A, 1, 5, 0.9, 5)],
        schema=["benchmark_index", "onet_soc_code", "task_id", "threshold", "p_covered", "labels_count"],
        orient="row",
    ))}
    candidate = _labels([("cand", "a", OCC_B, 3), ("cand", "b", OCC_C, 6)]).with_columns(
        pl.Series("p_exercised", [0.5, 0.25])
    )
    return existing, candidate, tasks, task_hours, occupations, estimates


def test_whatif_gain_reports_the_expected_gain_beside_the_counted_one():
    """whatif_gain with the per-unit estimates: the expected_* metrics start from the index's estimated
    coverage and add the counted candidate labels with their p_exercised (a copy of a landed text adds
    nothing to either)."""
    from models.coverage import label_counts
    from models.gaps import WHATIF_TABLES, WhatIfParams, whatif_gain, whatif_tables
    from tests.test_gaps import _landed

    existing, candidate, tasks, task_hours, occupations, estimates = _whatif_inputs()
    result = whatif_gain(label_counts(existing), candidate, tasks, task_hours, occupations,
                         WhatIfParams(threshold=1), estimates=estimates, **_landed(existing))
    gain = {r["metric"]: r for r in result.marginal_gain.iter_rows(named=True)}
    assert gain["tasks_covered"]["gain"] == 1.0  # counted: task 6 (0 -> 1); task 3 already has a label
    expected = gain["expected_tasks_covered"]
    assert expected["before"] == pytest.approx(1.5)
    assert expected["gain"] == pytest.approx((1 - 0.5 * 0.5) - 0.5 + 0.25)
    # the headline's task hours: pi share x occupation hours (task 3: 0.8 x 1,200; task 6: 0.99 x 5,050)
    assert gain["expected_hours_covered"]["gain"] == pytest.approx(0.25 * 960.0 + 0.25 * 4999.5)
    # where it lands, per occupation the candidate reaches (a probe: the gain came mostly from one label on an
    # occupation the candidate was not written for, and no table said so); the rows add up to the gain
    by_occupation = result.expected_occupation_gain
    assert by_occupation["expected_uncovered_hours_gain"].sum() == pytest.approx(
        gain["expected_uncovered_hours"]["before"] - gain["expected_uncovered_hours"]["after"])
    assert by_occupation["expected_uncovered_hours_gain"].to_list() == sorted(
        by_occupation["expected_uncovered_hours_gain"].to_list(), reverse=True)
    assert (by_occupation["candidate_expected_prompts"] > 0).all() and set(by_occupation["threshold"]) == {1}
    assert by_occupation["occupation_title"].null_count() == 0
    assert list(whatif_tables(result)) == list(WHATIF_TABLES) and WHATIF_TABLES[-1] == "whatif_expected_occupation_gain"
    # a copy of landed prompts: nothing counted, nothing expected
    copy = existing.with_columns(pl.lit("copy").alias("benchmark"), ("c" + pl.col("prompt_id")).alias("prompt_id"),
                                 pl.lit(0.9).alias("p_exercised"))
    nothing = whatif_gain(label_counts(existing), copy, tasks, task_hours, occupations, WhatIfParams(threshold=1),
                          estimates=estimates, **_landed(existing))
    metrics = dict(zip(nothing.marginal_gain["metric"], nothing.marginal_gain["gain"], strict=True))
    assert metrics["expected_tasks_covered"] == 0.0 and metrics["expected_hours_covered"] == 0.0
    assert nothing.expected_occupation_gain.is_empty()


@pytest.mark.parametrize("threshold", [2, 3, 10])
def test_whatif_gain_at_a_threshold_without_estimates_counts_the_labels_as_they_are(threshold: int):
    """`whatif --threshold 3` takes any whole number >= 1, but with the warehouse's estimates (at 1 and 5 only)
    the what-if raised "the expected what-if needs estimates at thresholds 1 and 5" after labeling the
    candidate: a traceback and exit 1, where a bad argument is one line and exit 2."""
    from models.coverage import label_counts
    from models.gaps import WhatIfParams, whatif_gain
    from tests.test_gaps import _landed

    existing, candidate, tasks, task_hours, occupations, estimates = _whatif_inputs()
    result = whatif_gain(label_counts(existing), candidate, tasks, task_hours, occupations,
                         WhatIfParams(threshold=threshold), estimates=estimates, **_landed(existing))
    without = whatif_gain(label_counts(existing), candidate, tasks, task_hours, occupations,
                          WhatIfParams(threshold=threshold), **_landed(existing))
    assert result.marginal_gain.equals(without.marginal_gain)  # the counted metrics, as without estimates
    assert result.expected_occupation_gain.is_empty()  # no estimate at this threshold
    assert not any(m.startswith("expected_") for m in result.marginal_gain["metric"])
    assert set(result.marginal_gain["threshold"]) == {threshold}


def test_the_draws_interval_replaces_the_simulated_one():
    from models.gaps import score_tasks
    from tests.test_gaps import OCC_A, OCC_B, OCC_C, _task_frame

    scored = score_tasks(_task_frame())
    tasks = pl.DataFrame([("all", OCC_C, 6, 5, 0.6, 0)], orient="row", schema=[
        "benchmark_index", "onet_soc_code", "task_id", "threshold", "p_covered", "labels_count"])
    occupations = pl.DataFrame(
        [("all", OCC_A, 5, 0.0, 400.0, 400.0), ("all", OCC_C, 5, 0.6, 60.0, 5050.0)], orient="row",
        schema=["benchmark_index", "onet_soc_code", "threshold", "p_covered", "uncovered_hours_low",
                "uncovered_hours_high"])
    gaps = ge.occupation_gaps_from_estimates(scored, 5, tasks, "all", occupations, n_sim=50)
    c = gaps.filter(pl.col("onet_soc_code") == OCC_C).row(0, named=True)
    assert (c["expected_uncovered_hours_low"], c["expected_uncovered_hours_high"]) == (60.0, 5050.0)
    b = gaps.filter(pl.col("onet_soc_code") == OCC_B).row(0, named=True)  # no row: the simulation's
    assert b["expected_uncovered_hours_low"] == b["expected_uncovered_hours_high"] == pytest.approx(1200.0)


def test_occupations_tied_on_hours_rank_by_code():
    """Two occupations with one OEWS hours figure differ only by float summation; the documented tie-break (the
    code) decides, not the last bits (53-7062.04 was ranked before 53-7062.00 on the mirror)."""
    from models.gaps import score_tasks
    from tests.test_gaps import OCC_A, OCC_B, OCC_C, _task_frame

    scored = score_tasks(_task_frame(task_annual_hours=[100.0, 300.0, 1200.0, 0.0, 1200.0 + 1e-7, 0.0],
                                     occupation_annual_hours=[400.0, 400.0, 1200.0, 1200.0, 1200.0, 1200.0]))
    none = pl.DataFrame(schema={"benchmark_index": pl.Utf8, "onet_soc_code": pl.Utf8, "task_id": pl.Int64,
                                "threshold": pl.Int64, "p_covered": pl.Float64, "labels_count": pl.Int64})
    occupations = pl.DataFrame([("all", code, 5, 0.0) for code in (OCC_A, OCC_B, OCC_C)],
                               schema=["benchmark_index", "onet_soc_code", "threshold", "p_covered"], orient="row")
    gaps = ge.occupation_gaps_from_estimates(scored, 5, none, "all", occupations, n_sim=50)
    assert gaps["onet_soc_code"].to_list() == [OCC_B, OCC_C, OCC_A]


def test_whatif_gap_list_is_the_published_one_when_estimates_exist():
    """With the per-unit estimates the what-if's gap list is coverage_gaps's (the tasks not likely covered, by
    the same priority), not the tasks below the threshold by the labels as counted: a probe found only 31 of
    the what-if's top 100 at their published rank, and 3 of them likely covered. A gap closes when the
    candidate makes it likely covered; the expected priority mass moves with any rise in p_covered."""
    from models.coverage import label_counts
    from models.gaps import WhatIfParams, coverage_gaps, score_tasks, whatif_gain
    from models.gaps.whatif_ranks import GAPS_LISTED_BY_ESTIMATES, GAPS_LISTED_BY_LABELS
    from tests.test_gaps import OCC_A, OCC_B, _landed, _task_frame

    existing, _, tasks, task_hours, occupations, estimates = _whatif_inputs()
    # task 1 has 5 labels (counted covered at 1) but the estimates doubt it at 1; task 3 has 1 label, p 0.5
    task_estimates = estimates["task_estimates"].with_columns(
        pl.when((pl.col("task_id") == 1) & (pl.col("threshold") == 1)).then(0.6).otherwise(pl.col("p_covered"))
        .alias("p_covered"))
    estimates = {"task_estimates": task_estimates}
    scored = score_tasks(_task_frame(n_prompts=[5, 0, 1, 0, 0, 0]))
    published = coverage_gaps(ge.with_task_p_covered(scored, task_estimates, "all", 1), threshold=1)
    assert (OCC_A, 1) in published.select("onet_soc_code", "task_id").rows()  # listed though counted covered
    candidate = pl.DataFrame({"benchmark": ["cand"], "prompt_id": ["a"], "prompt_hash": ["h-cand-a"],
                              "onet_soc_code": [OCC_B], "task_id": [3], "p_exercised": [1.0]})
    result = whatif_gain(label_counts(existing), candidate, tasks, task_hours, occupations,
                         WhatIfParams(threshold=1), priorities=scored, estimates=estimates, **_landed(existing))
    changes = result.gap_rank_changes
    assert set(changes["listed_by"]) == {GAPS_LISTED_BY_ESTIMATES}
    ranks_before = {(c, t): r for c, t, r in changes.select("onet_soc_code", "task_id", "rank_before").rows()}
    assert ranks_before == {(c, t): r for c, t, r in published.select("onet_soc_code", "task_id", "rank").rows()}
    assert changes.filter(pl.col("closed")).select("onet_soc_code", "task_id").rows() == [(OCC_B, 3)]
    gain = {r["metric"]: r for r in result.marginal_gain.iter_rows(named=True)}
    assert gain["top_100_gaps_closed"]["after"] == 1.0
    priority = {(c, t): p for c, t, p in scored.select("onet_soc_code", "task_id", "priority").rows()}
    assert gain["gap_priority_mass"]["gain"] == pytest.approx(-priority[(OCC_B, 3)])
    # p 0.5 -> 1.0 on task 3: half its priority leaves the expected mass
    assert gain["expected_gap_priority_mass"]["gain"] == pytest.approx(-0.5 * priority[(OCC_B, 3)])
    # without estimates the list is the labels' (task 1 counted covered, so not a gap)
    plain = whatif_gain(label_counts(existing), candidate, tasks, task_hours, occupations,
                        WhatIfParams(threshold=1), priorities=scored, **_landed(existing))
    assert set(plain.gap_rank_changes["listed_by"]) == {GAPS_LISTED_BY_LABELS}
    assert (OCC_A, 1) not in plain.gap_rank_changes.select("onet_soc_code", "task_id").rows()
    assert "expected_gap_priority_mass" not in plain.marginal_gain["metric"].to_list()
