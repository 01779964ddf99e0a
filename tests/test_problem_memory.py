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


def _per_text_draws() -> tuple[object, pl.DataFrame]:
    """A simulated problem's per-text draws (one benchmark without judged texts) and its text keys."""
    sim = es.simulate(np.random.default_rng(5), unsampled_benchmarks=1)
    problem = sim.problem
    scopes = es.scopes_for(problem)
    draws = es.UnitDraws(problem, scopes, 20, with_texts=True)
    es.run_estimators(problem, scopes, n_draws=20, seed=2, unit_draws=draws)
    texts = pl.DataFrame({"benchmark": [problem.benchmarks[b] for b in problem.text_bench],
                          "prompt_hash": [f"h{t:05d}" for t in range(problem.text_bench.size)]})
    return draws.text_estimates, texts


def test_per_text_table_in_slices_is_the_whole_table() -> None:
    """prompt_occupation_estimates is held as integer-keyed rows and gets its strings a slice at a time (50x the
    mirror: 7.3M rows, ~1 GiB of strings whole, the step's peak); the slices are the whole table's rows in order."""
    text_estimates, texts = _per_text_draws()
    whole = text_estimates.table(texts)
    sliced = text_estimates.table_slices(texts, slice_rows=97)
    assert sliced.height == whole.height > 5 * 97
    parts = list(sliced.slices())
    assert [p.height for p in parts[:-1]] == [97] * (len(parts) - 1) and 0 < parts[-1].height <= 97
    assert all(p.schema == whole.schema for p in parts)
    collected = pl.concat(parts)
    keys = ["benchmark", "prompt_hash", "onet_soc_code"]
    assert collected.sort(keys).equals(whole.sort(keys))
    assert collected.select(keys[:2]).equals(whole.select(keys[:2]))  # texts in key order (ties of p aside)
    assert sliced.head(5).equals(collected.head(5))
    # a text's rows stay together, largest p first, across slice borders
    order = collected.with_row_index("i").group_by(*keys[:2]).agg(pl.col("i").min().alias("lo"),
                                                                   pl.col("i").max().alias("hi"), pl.len())
    assert (order["hi"] - order["lo"] + 1 == order["len"]).all()
    assert (collected.group_by(*keys[:2], maintain_order=True).agg(pl.col("p").diff().max())["p"]
            .fill_null(0.0) <= 0.0).all()


def test_a_sliced_table_is_written_as_the_whole_frame(tmp_path) -> None:
    from models.sliced_frame import SlicedFrame
    from resources import warehouse as wh

    text_estimates, texts = _per_text_draws()
    sliced = text_estimates.table_slices(texts, slice_rows=50)
    path = tmp_path / "w.duckdb"
    wh.replace_table(path, "whole", sliced.collect())
    wh.replace_table(path, "sliced", pl.DataFrame({"old": [1]}))  # replaced, as replace_table does
    wh.replace_table_in_slices(path, "sliced", sliced.slices())
    whole, written = wh.read_table(path, "whole"), wh.read_table(path, "sliced")
    assert written.schema == whole.schema and written.height == sliced.height
    assert written.sort(written.columns).equals(whole.sort(whole.columns))
    empty = SlicedFrame({"a": pl.Utf8(), "b": pl.Float64()}, 0,
                        lambda offset, n: pl.DataFrame(schema={"a": pl.Utf8, "b": pl.Float64}))
    wh.replace_table_in_slices(path, "empty", empty.slices())
    assert wh.read_table(path, "empty").schema == {"a": pl.Utf8, "b": pl.Float64}


def _eager_for_problem(pooled, problem: es.Problem) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The old PooledParameters.for_problem: every draw's dense bootstrap weights held at once."""
    from models.estimates.problem import CALIBRATION_PRIOR

    starts = np.searchsorted(problem.text_bench, np.arange(problem.n_bench))
    position = {name: b for b, name in enumerate(problem.benchmarks)}
    text_map = np.full(int(sum(pooled.n_texts)), -1, dtype=np.int64)
    judged_at, offset = [], 0
    for j, (name, size) in enumerate(zip(pooled.benchmarks, pooled.n_texts, strict=True)):
        if name in position:
            text_map[offset:offset + size] = starts[position[name]] + np.arange(size)
            judged_at.append((j, position[name]))
        offset += size
    mapped = text_map[pooled.sampled]
    present = mapped >= 0
    out = []
    for boot_s, factors_j, p, mixture in zip(pooled.boots, pooled.factors, pooled.pooled, pooled.mixtures, strict=True):
        boot = np.zeros(problem.text_bench.shape[0])
        boot[mapped[present]] = boot_s[present]
        factors = np.full(problem.n_bench, (0.0 + CALIBRATION_PRIOR * p) / (0.0 + CALIBRATION_PRIOR))
        for j, b in judged_at:
            factors[b] = factors_j[j]
        out.append((boot, factors, mixture))
    return out


def test_draw_parameters_are_built_per_draw_bit_for_bit() -> None:
    """A DrawRecord's model-assisted parameters hold the judged texts' bootstrap weights only and build a draw's
    dense (boot, factors, mixture) when asked (50x the mirror: 200 x 0.5M texts of floats, ~0.8 GiB per record
    held whole, two records in headline_estimates)."""
    from models.estimates.bench_draws import draw_record, pooled_parameters
    from models.estimates.judged import judged_benchmarks, restrict_to_benchmarks

    sim = es.simulate(np.random.default_rng(3), texts_per_benchmark=(120, 200, 90, 150, 80), unsampled_benchmarks=2)
    problem = sim.problem
    judged, _ = restrict_to_benchmarks(problem, judged_benchmarks(problem))
    pooled = pooled_parameters(judged, 7, 12, "t")
    for target in (problem, restrict_to_benchmarks(problem, np.array([0, 2, 4]))[0]):
        lazy, eager = pooled.for_problem(target), _eager_for_problem(pooled, target)
        assert len(lazy) == len(eager) == 12
        for d in (0, 5, 11, -1):
            for got, want in zip(lazy[d], eager[d], strict=True):
                assert got.dtype == want.dtype and np.array_equal(got, want)
        held = sum(a.nbytes for a in (lazy.positions, lazy.present)) + sum(b.nbytes for b in pooled.boots)
        assert held < sum(e[0].nbytes for e in eager) / 2
    record, _ = draw_record(problem, 7, 12, ("model_assisted",))
    assert record.covers(("model_assisted",), 7, 12, (problem.n_bench, problem.n_tasks))
    replayed = es.run_estimators(problem, es.scopes_for(problem), n_draws=12, seed=7, estimators=("model_assisted",),
                                 replay=record)
    assert np.isfinite(replayed.draws["model_assisted"]).all()
