"""The estimates' Problem is built on integer indices (issue 29 item 5: 50x the mirror, headline_estimates' peak
memory): labeler_pairs does not group the four string key columns (build_problem keeps each (text, task)'s
largest p on its indices), and the (text x task) label keys are deduplicated by a sort. Each test compares the
cheap path with the plain one it replaced, bit for bit."""

from __future__ import annotations

import numpy as np
import polars as pl

import models.estimates as es
from models.estimates.draws import ModelAssisted
from models.estimates.problem import TASK_KEY, sorted_unique


def _frames(seed: int = 3) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Prompts of three benchmarks (some sharing a text), their labels (a text's labels repeated once per prompt
    with different p, some null), a judge sample and the task list."""
    rng = np.random.default_rng(seed)
    tasks = pl.DataFrame({"onet_soc_code": [f"{11 + i % 4}-{1000 + i // 4}.00" for i in range(40)],
                          "task_id": np.arange(40, dtype=np.int64) + 100})
    prompts = pl.DataFrame({"benchmark": [f"b{i % 3}" for i in range(300)],
                            "prompt_id": [str(i) for i in range(300)],
                            "prompt_hash": [f"h{rng.integers(0, 120):03d}" for _ in range(300)]})
    rows = []
    for bench, text in prompts.select("benchmark", "prompt_hash").iter_rows():
        for k in rng.choice(40, size=3, replace=False):
            p = None if rng.random() < 0.1 else float(rng.random() * 1.2)  # > 1 is clipped
            rows.append((bench, text, tasks["onet_soc_code"][int(k)], int(tasks["task_id"][int(k)]), p))
    labels = pl.DataFrame(rows, schema={"benchmark": pl.Utf8, "prompt_hash": pl.Utf8, "onet_soc_code": pl.Utf8,
                                        "task_id": pl.Int64, "p_exercised": pl.Float64}, orient="row")
    judged = prompts.unique(["benchmark", "prompt_hash"]).sort("benchmark", "prompt_hash").head(40)
    judge = judged.select("benchmark", "prompt_hash").join(tasks.head(5), how="cross")
    return prompts, labels, judge, tasks


def _grouped_pairs(labels: pl.DataFrame) -> pl.DataFrame:
    """The old labeler_pairs: one row per (benchmark, prompt_hash, task), its largest p (grouping the strings)."""
    return (labels.with_columns(pl.col("p_exercised").fill_null(1.0).clip(0.0, 1.0).alias("p"))
            .group_by("benchmark", "prompt_hash", *TASK_KEY).agg(pl.col("p").max()))


def test_build_problem_keeps_each_text_tasks_largest_p_without_grouping_strings() -> None:
    prompts, labels, judge, tasks = _frames()
    pairs = es.labeler_pairs(labels)
    # the regression this guards: a group_by over the string keys (50x: +0.8 GiB) before the integer indices
    assert pairs.height == labels.height
    assert pairs["p"].min() >= 0.0 and pairs["p"].max() == 1.0 and pairs["p"].null_count() == 0
    grouped = _grouped_pairs(labels)
    assert grouped.height < labels.height  # the fixture does repeat (text, task) pairs with different p
    texts = es.text_frame(prompts, judge)
    judge_pairs = es.judge_pairs(judge)
    new = es.build_problem(texts, pairs, judge_pairs, tasks)
    old = es.build_problem(texts, grouped, judge_pairs, tasks)
    shuffled = es.build_problem(texts, pairs.sample(fraction=1.0, shuffle=True, seed=1), judge_pairs, tasks)
    assert new.fingerprint() == old.fingerprint() == shuffled.fingerprint()
    assert new.lab_text.size == grouped.height
    # largest p kept: the pair of the first label row
    first = labels.row(0, named=True)
    t = texts.with_row_index("t").filter((pl.col("benchmark") == first["benchmark"])
                                         & (pl.col("prompt_hash") == first["prompt_hash"]))["t"][0]
    k = int(np.flatnonzero((new.task_keys["task_id"] == first["task_id"]).to_numpy())[0])
    expected = grouped.filter((pl.col("benchmark") == first["benchmark"]) & (pl.col("prompt_hash") == first["prompt_hash"])
                              & (pl.col("task_id") == first["task_id"]))["p"][0]
    assert new.lab_p[(new.lab_text == t) & (new.lab_task == k)].tolist() == [expected]


def test_text_frame_counts_prompts_per_text_in_key_order() -> None:
    prompts, _, judge, _ = _frames()
    texts = es.text_frame(prompts, judge)
    counts = prompts.group_by("benchmark", "prompt_hash").len().sort("benchmark", "prompt_hash")
    assert texts["multiplicity"].to_list() == counts["len"].to_list()
    assert texts.select("benchmark", "prompt_hash").equals(counts.select("benchmark", "prompt_hash"))
    assert texts["sampled"].sum() == judge.select("benchmark", "prompt_hash").unique().height
    assert not es.text_frame(prompts)["sampled"].any()


def test_sorted_unique_is_numpys_unique() -> None:
    rng = np.random.default_rng(0)
    for values in (rng.integers(-50, 10**10, 5000), rng.integers(0, 7, 1000), np.array([], dtype=np.int64),
                   np.array([4])):
        got = sorted_unique(values)
        assert got.dtype == values.dtype
        assert np.array_equal(got, np.unique(values))
    prompts, labels, judge, tasks = _frames()
    problem = es.build_problem(es.text_frame(prompts, judge), es.labeler_pairs(labels), es.judge_pairs(judge), tasks)
    assisted = ModelAssisted(problem)
    assert np.array_equal(assisted.label_keys, np.unique(problem.lab_text * problem.n_tasks + problem.lab_task))
