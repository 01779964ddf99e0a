"""Per-occupation model scores: plain vs O*NET-weighted means and their bootstrap CIs."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from models.scores import occupation_model_scores

OCC, OTHER = "15-1211.00", "43-4051.00"


def _frames(
    assignments: list[tuple[str, str, int]],
    scores: dict[str, float],
    model: str = "m1",
    labeler: str = "offline",
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """labels from (prompt_id, occupation, task_id) triples and results from {prompt_id: score}."""
    labels = pl.DataFrame(
        [
            {
                "benchmark": "b",
                "prompt_id": p,
                "prompt_hash": p,
                "onet_soc_code": occ,
                "task_id": t,
                "labeler": labeler,
                "labeler_version": "v",
                "rank": 1,
                "score": 1.0,
                "rationale": None,
            }
            for p, occ, t in assignments
        ]
    )
    results = pl.DataFrame(
        {
            "benchmark": ["b"] * len(scores),
            "prompt_id": list(scores),
            "model": [model] * len(scores),
            "score": list(scores.values()),
        }
    )
    return results, labels


def _row(
    table: pl.DataFrame, occupation: str = OCC, min_prompts: int = 1, model: str = "m1"
) -> dict[str, object]:
    return table.filter(
        (pl.col("onet_soc_code") == occupation)
        & (pl.col("min_prompts") == min_prompts)
        & (pl.col("model") == model)
    ).row(0, named=True)


def test_weighted_equals_plain_when_tasks_have_equal_prompt_counts() -> None:
    rng = np.random.default_rng(0)
    assignments = [(f"p{t}-{k}", OCC, t) for t in range(4) for k in range(6)]  # 4 tasks x 6 prompts each
    results, labels = _frames(assignments, {p: float(rng.random()) for p, _, _ in assignments})
    table = occupation_model_scores(results, labels, min_prompts=(5, 1), n_boot=300)
    for min_prompts in (5, 1):
        row = _row(table, min_prompts=min_prompts)
        assert row["weighted_mean"] == pytest.approx(row["plain_mean"], abs=1e-12)
        assert row["difference"] == pytest.approx(0.0, abs=1e-12)
        assert (row["n_prompts"], row["n_tasks"], row["n_tasks_labeled"]) == (24, 4, 4)


def test_weighted_differs_from_plain_when_prompt_counts_differ() -> None:
    assignments = [(f"a{k}", OCC, 1) for k in range(10)] + [(f"b{k}", OCC, 2) for k in range(2)]
    scores = {p: (1.0 if p.startswith("a") else 0.0) for p, _, _ in assignments}
    results, labels = _frames(assignments, scores)
    table = occupation_model_scores(results, labels, min_prompts=(5, 1), n_boot=300)
    every_task = _row(table, min_prompts=1)
    assert every_task["plain_mean"] == pytest.approx(10 / 12)
    assert every_task["weighted_mean"] == pytest.approx(0.5)  # tasks equally: (1 + 0) / 2
    assert every_task["difference"] == pytest.approx(0.5 - 10 / 12)
    big_tasks_only = _row(table, min_prompts=5)  # task 2 has only 2 prompts and drops out
    assert big_tasks_only["weighted_mean"] == pytest.approx(1.0)
    assert (big_tasks_only["n_tasks"], big_tasks_only["n_tasks_labeled"]) == (1, 2)


def test_prompt_with_several_tasks_counts_in_each() -> None:
    assignments = [("shared", OCC, 1), ("shared", OCC, 2), ("shared", OTHER, 9), ("solo", OCC, 1)]
    results, labels = _frames(assignments, {"shared": 1.0, "solo": 0.0})
    table = occupation_model_scores(results, labels, min_prompts=(1,), n_boot=200)
    main = _row(table)
    assert main["n_prompts"] == 2  # the shared prompt counts once in the plain mean of its occupation
    assert main["plain_mean"] == pytest.approx(0.5)
    assert main["weighted_mean"] == pytest.approx((0.5 + 1.0) / 2)  # task 1: {shared, solo}; task 2: {shared}
    other = _row(table, occupation=OTHER)
    assert (other["n_prompts"], other["plain_mean"], other["weighted_mean"]) == (1, 1.0, 1.0)


def test_no_task_with_enough_prompts_gives_null_weighted_mean() -> None:
    results, labels = _frames([("p1", OCC, 1), ("p2", OCC, 2)], {"p1": 0.2, "p2": 0.4})
    row = _row(occupation_model_scores(results, labels, min_prompts=(5,), n_boot=100), min_prompts=5)
    assert row["weighted_mean"] is None and row["weighted_ci_low"] is None and row["n_tasks"] == 0
    assert row["plain_mean"] == pytest.approx(0.3)


def test_repeated_results_are_averaged_and_models_kept_apart() -> None:
    _, labels = _frames([("p1", OCC, 1), ("p2", OCC, 1)], {})
    results = pl.DataFrame(
        {
            "benchmark": ["b"] * 5,
            "prompt_id": ["p1", "p1", "p2", "p1", "p2"],
            "model": ["m1", "m1", "m1", "m2", "m2"],
            "score": [1.0, 0.0, 1.0, 0.0, 0.0],
        }
    )
    table = occupation_model_scores(results, labels, min_prompts=(1,), n_boot=100)
    assert _row(table, model="m1")["plain_mean"] == pytest.approx(0.75)  # p1 -> 0.5, p2 -> 1.0
    assert _row(table, model="m2")["plain_mean"] == 0.0


def test_bootstrap_cis_contain_estimates_and_shrink_with_n() -> None:
    rng = np.random.default_rng(7)
    assignments = []
    for occupation, n_prompts in ((OCC, 400), (OTHER, 40)):
        task_of_prompt = rng.integers(0, 8, n_prompts)
        assignments += [(f"{occupation}-{k}", occupation, int(t)) for k, t in enumerate(task_of_prompt)]
    results, labels = _frames(assignments, {p: float(rng.random() < 0.6) for p, _, _ in assignments})
    table = occupation_model_scores(results, labels, n_boot=500, seed=1)
    for prefix, estimate in (
        ("plain", "plain_mean"),
        ("weighted", "weighted_mean"),
        ("difference", "difference"),
    ):
        rows = table.drop_nulls(estimate)
        assert (
            (rows[f"{prefix}_ci_low"] <= rows[estimate]) & (rows[estimate] <= rows[f"{prefix}_ci_high"])
        ).all()
    big, small = _row(table, OCC), _row(table, OTHER)
    assert big["plain_ci_high"] - big["plain_ci_low"] < small["plain_ci_high"] - small["plain_ci_low"]
    # ~ 1.96 * 2 * sqrt(p (1 - p) / n) for the plain mean of 400 Bernoulli(0.6) scores
    assert big["plain_ci_high"] - big["plain_ci_low"] == pytest.approx(
        2 * 1.96 * np.sqrt(0.24 / 400), rel=0.2
    )
    again = occupation_model_scores(results, labels, n_boot=500, seed=1)
    assert again.equals(table)  # seeded: reproducible


def test_labeler_filter() -> None:
    results, offline = _frames([("p1", OCC, 1)], {"p1": 1.0})
    _, openai = _frames([("p1", OTHER, 2)], {}, labeler="openai")
    both = pl.concat([offline, openai])
    assert (
        occupation_model_scores(results, both, labeler="offline", n_boot=50)["onet_soc_code"].to_list()
        == [OCC] * 2
    )
    assert set(occupation_model_scores(results, both, n_boot=50)["onet_soc_code"]) == {OTHER}


def test_empty_inputs_give_an_empty_table() -> None:
    results, labels = _frames([("p1", OCC, 1)], {"p1": 1.0})
    table = occupation_model_scores(results.clear(), labels, n_boot=10)
    assert table.height == 0 and "weighted_mean" in table.columns


def test_a_models_rows_do_not_depend_on_the_other_models() -> None:
    """Scores are computed one model at a time (bounded memory): each model's rows, CIs included, equal a run
    on that model alone, and the table stays ordered by occupation, model, then min_prompts as given."""
    rng = np.random.default_rng(3)
    assignments = [(f"p{k}", (OCC, OTHER)[k % 2], int(rng.integers(0, 4))) for k in range(120)]
    frames = [
        _frames(assignments, {p: float(rng.random() < q) for p, _, _ in assignments}, model=model)
        for model, q in (("m2", 0.3), ("m1", 0.8), ("m3", 0.5))
    ]
    labels = frames[0][1]
    results = pl.concat([r for r, _ in frames])
    table = occupation_model_scores(results, labels, min_prompts=(5, 1), n_boot=200, seed=4)
    assert table.select("onet_soc_code", "model", "min_prompts").rows() == [
        (occ, model, m) for occ in sorted((OCC, OTHER)) for model in ("m1", "m2", "m3") for m in (5, 1)
    ]
    for model_results, _ in frames:
        model = model_results["model"][0]
        alone = occupation_model_scores(model_results, labels, min_prompts=(5, 1), n_boot=200, seed=4)
        assert table.filter(pl.col("model") == model).equals(alone)
    assert _row(table, model="m1")["plain_mean"] > _row(table, model="m2")["plain_mean"]


def test_kept_model_rows_are_read_back_only_for_the_same_inputs(tmp_path) -> None:
    """occupation_model_scores with its rows kept per model (assets/kept_rows.py, the asset's store): the table
    equals computing every model anew; a model whose results did not change is read back, one whose scores
    changed is recomputed (a stale kept row would show the old score)."""
    from assets.kept_rows import model_score_rows_store
    from resources.dagster_resources import Warehouse

    rng = np.random.default_rng(11)
    assignments = [(f"p{k}", OCC if k % 3 else OTHER, int(k % 5)) for k in range(90)]
    results_m1, labels = _frames(assignments, {p: float(rng.random() < 0.5) for p, _, _ in assignments})
    results_m2, _ = _frames(assignments, {p: float(rng.random() < 0.7) for p, _, _ in assignments}, model="m2")
    results = pl.concat([results_m1, results_m2])
    warehouse = Warehouse(path=str(tmp_path / "benchmap.duckdb"))
    computed: list[str] = []

    def store():
        rows = model_score_rows_store(warehouse)

        def counting(model, joined, parts, compute):
            return rows(model, joined, parts, lambda: computed.append(model) or compute())

        return counting

    fresh = occupation_model_scores(results, labels, n_boot=200)
    first = occupation_model_scores(results, labels, n_boot=200, kept=store())
    assert first.equals(fresh) and computed == ["m1", "m2"]
    computed.clear()
    again = occupation_model_scores(results, labels, n_boot=200, kept=store())
    assert again.equals(fresh) and computed == []  # read back
    changed = results.with_columns(
        pl.when((pl.col("model") == "m2") & (pl.col("prompt_id") == "p1")).then(1.0 - pl.col("score"))
        .otherwise(pl.col("score")).alias("score"))
    refreshed = occupation_model_scores(changed, labels, n_boot=200, kept=store())
    assert computed == ["m2"]  # m1's inputs are the same
    assert refreshed.equals(occupation_model_scores(changed, labels, n_boot=200))
    assert not refreshed.equals(fresh)
    computed.clear()
    occupation_model_scores(results, labels, n_boot=300, kept=store())
    assert computed == ["m1", "m2"]  # another number of replicates: nothing read back


def test_kept_power_rows_are_read_back_only_for_the_same_inputs(tmp_path) -> None:
    """occupation_score_power's rows kept per model (models.gaps.score_power `kept`, the asset's store): equal to
    computing anew (to the last bits, which polars' grouped sums move from run to run anyway); a model whose
    scores changed is recomputed, the other read back."""
    from polars.testing import assert_frame_equal

    from assets.kept_rows import model_score_rows_store
    from models.gaps import score_power
    from resources.dagster_resources import Warehouse

    rng = np.random.default_rng(5)
    assignments = [(f"p{k}", OCC if k % 4 else OTHER, int(k % 6)) for k in range(80)]
    results_m1, labels = _frames(assignments, {p: float(rng.random()) for p, _, _ in assignments})
    results_m2, _ = _frames(assignments, {p: float(rng.random()) for p, _, _ in assignments}, model="m2")
    results = pl.concat([results_m1, results_m2])
    warehouse = Warehouse(path=str(tmp_path / "benchmap.duckdb"))
    computed: list[str] = []

    def store():
        rows = model_score_rows_store(warehouse, "score_power")
        return lambda model, joined, parts, compute: rows(model, joined, parts,
                                                          lambda: computed.append(model) or compute())

    fresh = score_power(results, labels, min_prompts=(3, 1))

    def same(a: pl.DataFrame, b: pl.DataFrame) -> bool:
        try:
            assert_frame_equal(a, b, rel_tol=1e-12, abs_tol=0.0)
        except AssertionError:
            return False
        return True

    assert same(score_power(results, labels, min_prompts=(3, 1), kept=store()), fresh)
    assert computed == ["m1", "m2"]
    computed.clear()
    assert same(score_power(results, labels, min_prompts=(3, 1), kept=store()), fresh) and computed == []
    changed = results.with_columns(
        pl.when((pl.col("model") == "m1") & (pl.col("prompt_id").is_in(["p1", "p2", "p3"]))).then(0.0)
        .otherwise(pl.col("score")).alias("score"))
    refreshed = score_power(changed, labels, min_prompts=(3, 1), kept=store())
    assert computed == ["m1"]
    assert same(refreshed, score_power(changed, labels, min_prompts=(3, 1))) and not same(refreshed, fresh)


def test_prompts_that_all_scored_the_same_get_no_interval() -> None:
    """A single prompt, or several with one score: every bootstrap resample repeats the data, so the percentile
    interval would have zero width (certainty); it is null instead. Two different scores get one."""
    results, labels = _frames(
        [("p1", "11-1011.00", 1), ("p2", "11-1011.00", 1), ("p3", "15-1252.00", 2), ("p4", "43-4051.00", 3),
         ("p5", "43-4051.00", 3)],
        {"p1": 1.0, "p2": 1.0, "p3": 0.0, "p4": 0.0, "p5": 1.0},
    )
    frame = occupation_model_scores(results, labels, min_prompts=(1,), n_boot=200)
    for code in ("11-1011.00", "15-1252.00"):
        row = _row(frame, code, 1)
        assert row["plain_mean"] is not None and row["weighted_mean"] is not None
        for column in ("plain_ci_low", "plain_ci_high", "weighted_ci_low", "weighted_ci_high",
                       "difference_ci_low", "difference_ci_high"):
            assert row[column] is None, (code, column)
    varied = _row(frame, "43-4051.00", 1)
    assert varied["plain_ci_low"] < varied["plain_ci_high"]
