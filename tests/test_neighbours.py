"""The labeler step that learns from a benchmark's judged texts (models/labeling/neighbours.py, stacking.py,
stacking_cv.py): no judged text's own label reaches its prediction, the figures of both evaluations, the
cross-fitted labels the estimators use, and the split check with them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from models.labeling import stacking_cv as scv
from models.labeling.neighbours import BenchmarkSample, judged_from_task_rows, judged_texts, neighbour_votes
from models.labeling.stacking import StackFit, label_benchmark
from resources.readers import FIT_PATH, load_stack_fit

STACK_PATH = FIT_PATH.with_name("neighbour_fit.json")
STACK_OOF_PATH = FIT_PATH.with_name("neighbour_oof.json")

# --- a small synthetic world: 4 benchmarks x 8 texts, each text about one of two topics --------------------------

TOPICS = {
    "ledger": ("reconcile the ledger and post journal entries for the quarter", "13-2011.00", [101, 102]),
    "patient": ("triage the patient and record vital signs in the chart", "29-1141.00", [201, 202]),
}
TASK_CODE = {101: "13-2011.00", 102: "13-2011.00", 103: "13-2011.00", 201: "29-1141.00", 202: "29-1141.00",
             203: "29-1141.00"}


def _world() -> tuple[pl.DataFrame, dict, dict]:
    rows, selector, work = [], {}, {}
    for b in range(4):
        for i in range(8):
            topic = "ledger" if (i + b) % 2 else "patient"
            text, code, tasks = TOPICS[topic]
            h = f"b{b}t{i}"
            not_work = i == 7
            rows.append({"benchmark": f"bench{b}", "prompt_hash": h, "prompt": f"{text} case {i} batch {b}",
                         "is_work": not not_work, "occupations": [] if not_work else [code],
                         "task_ids": [] if not_work else tasks[: 1 + (i % 2)]})
            # the selector's (cross-validated) labels: one wrong task beside, every third text the wrong topic
            _, other_code, other_tasks = TOPICS["patient" if topic == "ledger" else "ledger"]
            selector[h] = [(tasks[0], code, 0.3), (tasks[0] + 2, code, 0.2)] if i % 3 else \
                [(other_tasks[0], other_code, 0.3)]
            work[h] = True
    reference = pl.DataFrame(rows).with_columns(pl.lit("a").alias("annotation"))
    texts = reference.select("benchmark", "prompt_hash", "prompt")
    return judged_texts(reference.drop("prompt"), texts), selector, work


def _flip(judged: pl.DataFrame, prompt_hash: str) -> pl.DataFrame:
    """The same judged texts with one text's judge labels replaced by very different ones."""
    return judged.with_columns(
        pl.when(pl.col("prompt_hash") == prompt_hash).then(pl.lit([[203]])).otherwise("task_ids").alias("task_ids"),
        pl.when(pl.col("prompt_hash") == prompt_hash).then(pl.lit([["29-1141.00"]])).otherwise("occupations")
        .alias("occupations"),
        pl.when(pl.col("prompt_hash") == prompt_hash).then(1.0).otherwise("is_work").alias("is_work"))


def test_a_judged_text_never_votes_for_itself() -> None:
    judged, _, _ = _world()
    bench = judged.filter(pl.col("benchmark") == "bench0")
    target = bench["prompt_hash"][2]
    texts, hashes = bench["prompt"].to_list(), bench["prompt_hash"].to_list()
    before = neighbour_votes(BenchmarkSample.of(bench), texts, hashes, k=5)
    after = neighbour_votes(BenchmarkSample.of(_flip(bench, target)), texts, hashes, k=5)
    row = hashes.index(target)
    task_before = dict(zip(before.task_ids.tolist(), before.task[row].tolist(), strict=True))
    task_after = dict(zip(after.task_ids.tolist(), after.task[row].tolist(), strict=True))
    assert task_after.get(203, 0.0) == 0.0  # its own new label is not among its votes
    assert {t: v for t, v in task_after.items() if v} == {t: v for t, v in task_before.items() if v}
    # ... while a text that has it as a neighbour sees the change (so the check above can fail)
    others = [i for i in range(len(hashes)) if i != row]
    assert any(after.task[i, list(after.task_ids).index(203)] > 0 for i in others)
    assert (before.n_neighbours == min(5, bench.height - 1)).all()


def test_cross_fitted_predictions_do_not_see_the_texts_own_label() -> None:
    judged, selector, work = _world()
    target = "b1t2"
    decided = {}
    for frame in (judged, _flip(judged, target)):
        examples = scv.examples(frame, selector, work, TASK_CODE, grid=((3, 1.0),))
        decisions, _ = scv.cross_validate(examples, "s-test", grid=((3, 1.0),), min_judged=0)
        decided[frame is judged] = decisions
    original, flipped = decided[True], decided[False]
    assert original[target] == flipped[target]
    # the flip reaches the other texts (its neighbours' votes, the other folds' models)
    assert any(original[h] != flipped[h] for h in original if h != target)


def test_label_benchmark_falls_back_without_other_judged_texts() -> None:
    judged, selector, work = _world()
    examples = scv.examples(judged, selector, work, TASK_CODE, grid=((3, 1.0),))
    fit = scv.fit_stack(examples, "s-test", grid=((3, 1.0),), min_judged=0)
    only = judged.filter(pl.col("prompt_hash") == "b0t0")
    sample = BenchmarkSample.of(only)
    decided = label_benchmark(fit, sample, ["x", "reconcile the ledger"], ["b0t0", "new"],
                              selector, {}, TASK_CODE)
    assert decided is not None and "b0t0" not in decided and "new" in decided  # only itself: no vote
    assert label_benchmark(fit, None, ["x"], ["new"], selector, {}, TASK_CODE) is None
    assert StackFit.from_json(fit.to_json()).version == fit.version
    # a benchmark with fewer than min_judged judged texts keeps the selector's labels (none decided)
    bench = judged.filter(pl.col("benchmark") == "bench0")
    texts, hashes = bench["prompt"].to_list(), bench["prompt_hash"].to_list()
    assert label_benchmark(fit, BenchmarkSample.of(bench), texts, hashes, selector, {}, TASK_CODE)
    strict = dataclasses.replace(fit, min_judged=bench.height + 1)
    assert label_benchmark(strict, BenchmarkSample.of(bench), texts, hashes, selector, {}, TASK_CODE) is None
    assert StackFit.from_json(strict.to_json()).min_judged == bench.height + 1 and strict.version != fit.version


def test_a_judged_query_is_compared_through_a_tfidf_fitted_without_it() -> None:
    """An unread text is never in its benchmark's TF-IDF fit (its own terms drop out); a judged text was, so its
    cosines ran lower than an unread text's (median best 0.15 against 0.27 on the mirror) and the stack was
    trained and evaluated on features no unread text has (task F1 0.584 leaving one text out, 0.572 with the
    judged text out of the fit). Now a judged query's row is that of a vectorizer fitted on the others."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from models.labeling.neighbour_tfidf import NEIGHBOUR_TFIDF
    from models.labeling.neighbours import query_similarity

    judged, _, _ = _world()
    bench = judged.filter(pl.col("benchmark") == "bench0")
    texts, hashes = bench["prompt"].to_list(), bench["prompt_hash"].to_list()
    sample = BenchmarkSample.of(bench)
    unread = "reconcile the ledger for the auditors"
    similarity = query_similarity(sample, [*texts, unread], [*hashes, "new"])
    for row in range(len(texts)):
        others = [j for j in range(len(texts)) if j != row]
        vectorizer = TfidfVectorizer(**NEIGHBOUR_TFIDF)
        fitted = vectorizer.fit_transform([texts[j] for j in others])
        expected = np.asarray((vectorizer.transform([texts[row]]) @ fitted.T).todense())[0]
        assert similarity[row, row] == -1.0
        assert np.allclose(similarity[row, others], expected, atol=1e-12), row
    # an unread text: the vectorizer fitted on every judged text, as before
    everyone = TfidfVectorizer(**NEIGHBOUR_TFIDF)
    fitted = everyone.fit_transform(texts)
    assert np.allclose(similarity[-1], np.asarray((everyone.transform([unread]) @ fitted.T).todense())[0])
    # the split relabeling's path (terms counted once per benchmark) gives the same rows
    from models.labeling.neighbour_tfidf import TokenizedTexts, similarity_leaving_members_out

    tokens = TokenizedTexts.of([*texts, unread])
    assert np.allclose(similarity_leaving_members_out(tokens, list(range(len(texts))), list(range(len(texts) + 1))),
                       similarity, atol=1e-12)
    # the members' rows come from the fitted rows at once (cosines_left_out), not a vectorizer per member: the
    # same values; and a lone text has no neighbour
    import scipy.sparse as sp

    from models.labeling.neighbour_tfidf import cosines_left_out, part_similarity, part_vectors

    part = list(range(len(texts)))
    _, vectors, idf = part_vectors(tokens, part)
    at_once = cosines_left_out(vectors @ sp.diags(1.0 / idf))
    for row in part:
        others = [j for j in part if j != row]
        assert np.allclose(at_once[row, others], part_similarity(tokens, others, [row])[0], atol=1e-12)
    assert (np.diag(at_once) == -1.0).all() and (cosines_left_out(vectors[:1]) == -1.0).all()


def test_split_relabeling_labels_each_benchmark_with_its_fold_fit() -> None:
    """The stack fitted on every judged text saw the split's held-out texts' judge labels as its targets; the
    split check labels a benchmark with the fit of the fold that left it out (fitted without them), as its
    published cross-fitted labels are. Here a fold fit that decides nothing (min_judged above the part) for one
    benchmark leaves that benchmark on the selector's labels while the other keeps the full fit's."""
    from models.labeling.stacking_split import EstimationPartRelabeler

    judged, selector, work = _world()
    examples = scv.examples(judged, selector, work, TASK_CODE, grid=((3, 1.0),))
    fit = scv.fit_stack(examples, "s-test", grid=((3, 1.0),), min_judged=0)
    two = judged.filter(pl.col("benchmark").is_in(["bench0", "bench1"])).sort("prompt_hash")
    keys = list(zip(two["benchmark"], two["prompt_hash"], strict=True))
    task_index = {(c, t): k for k, (t, c) in enumerate(sorted(TASK_CODE.items()))}
    kept, sampled = np.arange(len(keys)), np.arange(len(keys)) % 2 == 0
    strict = dataclasses.replace(fit, min_judged=100)
    plain = EstimationPartRelabeler(fit, two, keys, selector, work, task_index)
    plain(kept, sampled)
    assert plain.n_relabeled == len(keys)
    folded = EstimationPartRelabeler(fit, two, keys, selector, work, task_index, fold_fits={"bench0": strict})
    assert folded.fit_for("bench0") is strict and folded.fit_for("bench1") is fit
    text, task, _ = folded(kept, sampled)
    assert folded.n_relabeled == sum(b == "bench1" for b, _ in keys)
    for position, (benchmark, h) in enumerate(keys):
        if benchmark == "bench0":  # the selector's labels, untouched
            assert sorted(int(k) for t, k in zip(text, task, strict=True) if t == position) == \
                sorted(task_index[(c, t)] for t, c, _ in selector[h])


def test_split_relabeling_uses_the_estimation_part_only() -> None:
    """The split check's relabeling (models/labeling/stacking_split.py): a held-out text's labels change when an
    estimation text's judge labels change, never when another held-out text's do; split_sample_problem takes the
    new labels and recomputes which judge pairs the labeler emitted."""
    from models import estimates as es
    from models.labeling.stacking_split import EstimationPartRelabeler

    judged, selector, work = _world()
    examples = scv.examples(judged, selector, work, TASK_CODE, grid=((3, 1.0),))
    fit = scv.fit_stack(examples, "s-test", grid=((3, 1.0),), min_judged=0)
    bench = judged.filter(pl.col("benchmark") == "bench0").sort("prompt_hash")
    keys = list(zip(bench["benchmark"], bench["prompt_hash"], strict=True))
    task_index = {(c, t): k for k, (t, c) in enumerate(sorted(TASK_CODE.items()))}
    kept = np.arange(len(keys))
    sampled = np.arange(len(keys)) % 2 == 0  # b0t0, b0t2, ... estimate; b0t1, b0t3, ... are held out
    target = 1  # b0t1: held out, a ledger text

    def labels_of(frame: pl.DataFrame) -> set[tuple[int, float]]:
        relabel = EstimationPartRelabeler(fit, frame, keys, selector, work, task_index)
        text, task, p = relabel(kept, sampled)
        assert relabel.n_relabeled == len(keys)
        return {(int(k), round(float(q), 9)) for t, k, q in zip(text, task, p, strict=True) if t == target}

    before = labels_of(bench)
    assert before
    for held_out in ("b0t3", "b0t5"):  # held-out texts: their judge labels are the truth, never a vote
        assert labels_of(_flip(bench, held_out)) == before
    assert any(labels_of(_flip(bench, h)) != before for h in ("b0t0", "b0t2", "b0t4"))  # so this can fail

    # in split_sample_problem: the relabeled pairs replace the labels, jud_in_labels follows them
    texts = es.text_frame(bench.select("benchmark", "prompt_hash"), bench.select("benchmark", "prompt_hash"))
    judge = judged.explode("task_ids").explode("task_ids").select(
        "benchmark", "prompt_hash", pl.col("task_ids").alias("task_id")).drop_nulls("task_id").filter(
        pl.col("benchmark") == "bench0")
    tasks = pl.DataFrame({"onet_soc_code": list(TASK_CODE.values()), "task_id": list(TASK_CODE)})
    problem = es.build_problem(texts, es.labeler_pairs(pl.DataFrame(schema={
        "benchmark": pl.Utf8, "prompt_hash": pl.Utf8, "onet_soc_code": pl.Utf8, "task_id": pl.Int64,
        "p_exercised": pl.Float64})), es.judge_pairs(judge.join(tasks, on="task_id")), tasks)
    relabel = EstimationPartRelabeler(fit, bench, keys, selector, work, task_index)
    split, truth = es.split_sample_problem(problem, np.random.default_rng(3), fraction=0.5, relabel=relabel)
    assert split.lab_text.size > 0 and not problem.jud_in_labels.any()
    emitted = set(zip(split.lab_text.tolist(), split.lab_task.tolist(), strict=True))
    assert split.jud_in_labels.tolist() == [(t, k) in emitted for t, k in
                                            zip(split.jud_text.tolist(), split.jud_task.tolist(), strict=True)]
    assert split.jud_in_labels.any()


def test_the_step_reuses_its_cached_decisions(tmp_path: Path) -> None:
    """stacked_label_sets recomputes only texts missing from the cache (a cached decision is taken as it is),
    and the cache file is read back only under the same fingerprint (fit, labeler version, judged texts)."""
    from models.labeling.base import PromptRecord, TaskLabel
    from models.labeling.cache import LabelSet
    from models.labeling.stacking import judged_fingerprint, stacked_label_sets
    from resources import neighbour_cache

    judged, selector, work = _world()
    examples = scv.examples(judged, selector, work, TASK_CODE, grid=((3, 1.0),))
    fit = scv.fit_stack(examples, "s-test", grid=((3, 1.0),), min_judged=0)
    bench = judged.filter(pl.col("benchmark") == "bench0")
    sample = BenchmarkSample.of(bench)
    prompts = [PromptRecord("bench0", f"p{i}", h, t) for i, (h, t) in
               enumerate([*zip(bench["prompt_hash"], bench["prompt"], strict=True), ("new", "post journal entries")])]
    labels = {p.prompt_hash: LabelSet([TaskLabel(t, c, r, q, None, q) for r, (t, c, q) in
                                       enumerate(selector.get(p.prompt_hash, [(101, "13-2011.00", 0.4)]), start=1)],
                                      is_work=True) for p in prompts}
    first, n, decisions = stacked_label_sets(fit, sample, prompts, labels, TASK_CODE)
    assert n == len(prompts) and set(decisions) == {p.prompt_hash for p in prompts}
    fingerprint = judged_fingerprint(fit.version, "lv", bench)
    path = neighbour_cache.cache_path(tmp_path / "benchmap.duckdb", "bench0")
    neighbour_cache.write_decisions(path, fingerprint, decisions)
    cached = neighbour_cache.read_decisions(path, fingerprint)
    cached["new"] = [False, 0.1, []]  # a cached decision is used as it is: proof nothing was recomputed
    again, n_again, decisions_again = stacked_label_sets(fit, sample, prompts, labels, TASK_CODE, cached)
    assert n_again == n and decisions_again == cached
    assert again["new"].is_work is False and list(again["new"]) == []
    assert [(lab.task_id, lab.p_exercised) for lab in again["b0t1"]] == [(lab.task_id, lab.p_exercised)
                                                                         for lab in first["b0t1"]]
    # another judge sample (one text's labels changed) or another labeler: another fingerprint, nothing read
    assert judged_fingerprint(fit.version, "lv", _flip(bench, "b0t3")) != fingerprint
    assert judged_fingerprint(fit.version, "lv2", bench) != fingerprint
    assert neighbour_cache.read_decisions(path, "other") == {}
    path.write_text("{not json")
    assert neighbour_cache.read_decisions(path, fingerprint) == {}


def test_work_rows_weighted_toward_mixed_benchmarks() -> None:
    """The work model's row weights: floor + 4 s (1 - s) of the benchmark's work share s, mean 1 (the
    regularisation stays the unweighted model's); no floor: unweighted. The floor survives the fit's JSON."""
    share = scv.WORK_FEATURES.index("work_share")
    x = np.zeros((4, len(scv.WORK_FEATURES)))
    x[:, share] = [0.0, 0.5, 1.0, 0.5]
    weights = scv.work_weights(x, 0.25)
    assert weights is not None and weights.mean() == pytest.approx(1.0)
    assert weights[1] == pytest.approx(5 * weights[0]) and weights[0] == pytest.approx(weights[2])
    assert scv.work_weights(x, None) is None
    judged, selector, work = _world()
    fit = scv.fit_stack(scv.examples(judged, selector, work, TASK_CODE, grid=((3, 1.0),)), "s-test",
                        grid=((3, 1.0),), min_judged=0)
    assert fit.work_weight_floor in scv.WORK_WEIGHT_FLOORS
    again = StackFit.from_json(fit.to_json())
    assert again.work_weight_floor == fit.work_weight_floor and again.version == fit.version


def test_judge_sample_rows_become_judged_texts() -> None:
    rows = pl.DataFrame({"benchmark": ["b", "b", "b"], "prompt_hash": ["h1", "h1", "h2"],
                         "task_id": [101, 201, None], "onet_soc_code": ["13-2011.00", "29-1141.00", None]},
                        schema={"benchmark": pl.Utf8, "prompt_hash": pl.Utf8, "task_id": pl.Int64,
                                "onet_soc_code": pl.Utf8})
    texts = pl.DataFrame({"benchmark": ["b", "b"], "prompt_hash": ["h1", "h2"], "prompt": ["one", "two"]})
    judged = judged_from_task_rows(rows, texts).sort("prompt_hash")
    assert judged["is_work"].to_list() == [1.0, 0.0]
    assert judged["task_ids"].to_list() == [[[101, 201]], [[]]]
    assert sorted(judged["occupations"][0][0]) == ["13-2011.00", "29-1141.00"]


# --- the committed fit and its cross-fitted labels ---------------------------------------------------------------


def test_the_committed_fit_beats_the_selector_and_stacks_the_committed_selector() -> None:
    from resources.readers import load_selector_fit

    fit = load_stack_fit()
    assert fit is not None, "models/labeling/neighbour_fit.json is missing: python -m pipelines.fit_labeler"
    assert fit.selector_version == load_selector_fit().version
    within = fit.cross_validation["within_benchmark"]
    after, before = within["neighbour_stack"]["all"], within["selector_only"]["all"]
    vote = within["neighbour_vote_only"]["all"]
    assert after["task_f1"]["value"] >= 0.55  # issue 25's target
    assert after["task_f1"]["value"] > vote["task_f1"]["value"] + 0.02  # the stack adds to the plain vote
    assert after["task_precision"]["value"] > vote["task_precision"]["value"] + 0.05
    # issue 25's three targets are met: first occupation 0.757, work decision 0.952 (two passes of 998 above 0.95,
    # with the work model's rows weighted toward mixed benchmarks and every judged text's TF-IDF fitted without
    # it, as an unread text's is: docs/offline_labeler.md)
    assert after["first_occupation_agreement"]["value"] >= 0.75
    assert after["first_occupation_agreement"]["value"] > vote["first_occupation_agreement"]["value"] + 0.03
    assert after["work_accuracy"]["value"] >= 0.95
    assert after["work_accuracy"]["value"] > vote["work_accuracy"]["value"]
    assert fit.min_judged == 10
    for metric in ("task_f1", "first_occupation_agreement", "work_accuracy"):
        assert after[metric]["value"] > before[metric]["value"] + 0.05
    new = fit.cross_validation["new_benchmark"]
    assert new["neighbour_stack"] == new["selector_only"]  # no judged texts: the selector's labels


def test_cross_fitted_labels_replace_the_published_ones_for_judged_texts() -> None:
    from models.estimates import with_out_of_fold_labels
    from resources.readers import load_selector_fit, read_labeler_oof

    fit = load_stack_fit()
    assert fit is not None
    version = f"offline-calibrated+v1+{load_selector_fit().version}+{fit.version}"
    oof = read_labeler_oof(version)
    assert oof is not None and oof["fit_version"] == fit.version
    assert read_labeler_oof("offline-calibrated+v1+" + load_selector_fit().version)["fit_version"] \
        == load_selector_fit().version  # the selector's labels: its own out-of-fold file
    judged = oof["prompts"][0]
    published = pl.DataFrame({"benchmark": [judged["benchmark"], "other"], "prompt_hash": [judged["prompt_hash"], "x"],
                              "onet_soc_code": ["11-1011.00", "11-1011.00"], "task_id": [1, 1],
                              "p_exercised": [0.9, 0.9]})
    sampled = published.select("benchmark", "prompt_hash").head(1)
    swapped, problem = with_out_of_fold_labels(published, version, sampled, oof)
    assert problem is None
    mine = swapped.filter(pl.col("prompt_hash") == judged["prompt_hash"])
    assert sorted(mine["task_id"].to_list()) == sorted(t for t, _, _ in judged["labels"])
    assert swapped.filter(pl.col("prompt_hash") == "x").height == 1
    # an audit (benchmarks renamed): a judged text under another benchmark name than the file's kept its
    # in-sample labels silently
    renamed = sampled.with_columns(pl.lit("b07").alias("benchmark"))
    kept, problem = with_out_of_fold_labels(published.with_columns(pl.lit("b07").alias("benchmark")), version,
                                            renamed, oof)
    assert problem is not None and problem.startswith("1 of 1 judged reference texts have no out-of-fold labels "
                                                      "(of b07)")
    assert kept["task_id"].to_list() == [1, 1]  # in sample, as said


class _Log:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warning(self, message: str) -> None:
        self.warnings.append(message)


def test_the_estimates_inputs_say_a_judged_text_kept_in_sample_in_the_log(full_pipeline,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The headline's inputs, read from the mirror's warehouse with a log: a judged text the out-of-fold file
    lacks is said in that log, and its labels are the published (in-sample) ones, as said; with the whole file,
    nothing is said. (A second read found the warning never reached a log: no caller passed one.)"""
    from assets import estimate_inputs
    from resources.dagster_resources import Warehouse
    from resources.readers import read_labeler_oof

    for key, value in full_pipeline.env.items():
        monkeypatch.setenv(key, value)
    warehouse = Warehouse(path=str(full_pipeline.warehouse))
    log = _Log()
    whole_inputs = estimate_inputs.read_inputs(warehouse, log)
    assert log.warnings == []
    whole = read_labeler_oof(whole_inputs["labeler_version"])
    assert whole is not None
    published = whole_inputs["published_labels"]

    def tasks(frame: pl.DataFrame, text: dict) -> list[int]:
        return sorted(frame.filter((pl.col("benchmark") == text["benchmark"])
                                   & (pl.col("prompt_hash") == text["prompt_hash"]))["task_id"].to_list())

    # a text whose cross-fitted labels differ from its published ones, so keeping the latter shows
    dropped = next(r for r in whole["prompts"] if sorted(t for t, _, _ in r["labels"]) != tasks(published, r))
    monkeypatch.setattr(estimate_inputs, "read_labeler_oof",
                        lambda v: {**whole, "prompts": [r for r in whole["prompts"] if r is not dropped]})
    inputs = estimate_inputs.read_inputs(warehouse, log)
    assert len(log.warnings) == 1
    assert log.warnings[0].startswith(f"1 of {len(whole['prompts'])} judged reference texts have no out-of-fold "
                                      f"labels (of {dropped['benchmark']})")
    assert tasks(inputs["labels"], dropped) == tasks(published, dropped)
    assert tasks(whole_inputs["labels"], dropped) == sorted(t for t, _, _ in dropped["labels"])


def test_the_headline_step_hands_its_log_to_the_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The headline step passes its Dagster log to read_inputs (else the warning above reaches no one): the
    step is invoked directly and stopped at its first read."""
    from dagster import build_asset_context

    from assets import estimates
    from resources.dagster_resources import Warehouse

    handed: dict[str, object] = {}

    class Stop(Exception):
        pass

    def stopped(warehouse: object, log: object = None, dev_pass: str = "a") -> dict:
        handed["log"] = log
        raise Stop

    monkeypatch.setattr(estimates, "read_inputs", stopped)
    context = build_asset_context()
    empty = pl.DataFrame()
    with pytest.raises(Stop):
        list(estimates.headline_estimates(context=context, config=estimates.EstimatesConfig(),
                                          warehouse=Warehouse(path=str(tmp_path / "w.duckdb")),
                                          task_label_counts=empty, onet_tasks=empty, task_hours=empty,
                                          onet_occupations=empty))
    assert handed["log"] is context.log


@pytest.mark.slow
def test_committed_cross_fitted_labels_are_the_cross_validation(mirror: Path) -> None:
    """neighbour_oof.json holds exactly the held-out decisions of the cross-validation whose figures are in the
    fit file (recomputed here from the reference, the selector's out-of-fold labels and the texts)."""
    from models.reference_labels import per_prompt_metrics
    from pipelines.fit_labeler import landed_texts
    from resources.readers import load_reference, read_selector_oof

    reference = load_reference()
    texts = pl.DataFrame([{"benchmark": b, "prompt_hash": h, "prompt": t}
                          for b, pairs in landed_texts(reference).items() for h, t in pairs])
    oof = json.loads(STACK_OOF_PATH.read_text())
    predictions = pl.DataFrame([{"prompt_hash": r["prompt_hash"], "is_work": r["is_work"],
                                 "tasks": [t for t, _, _ in r["labels"]], "ranking": [t for t, _, _ in r["labels"]],
                                 "first_occupation": r["labels"][0][1] if r["labels"] else None}
                                for r in oof["prompts"]])
    per_prompt = per_prompt_metrics(predictions, reference)
    fit = load_stack_fit()
    recorded = fit.cross_validation["within_benchmark"]["neighbour_stack"]["all"]
    assert per_prompt["task_f1"].mean() == pytest.approx(recorded["task_f1"]["value"], abs=1e-3)
    assert per_prompt["work_accuracy"].mean() == pytest.approx(recorded["work_accuracy"]["value"], abs=1e-3)
    judged = judged_texts(reference, texts)
    assert {r["prompt_hash"] for r in oof["prompts"]} == set(judged["prompt_hash"].to_list())
    assert read_selector_oof()["fit_version"] == fit.selector_version
    assert np.isclose(len(oof["prompts"]), judged.height)
    # each benchmark's fold fit (the split checks label the benchmark with it): one per judged benchmark, none
    # the full fit, each with the hyperparameters the fit file records for its fold
    folds = {f["held_out"]: f for f in fit.cross_validation["folds"]}
    assert set(oof["fold_fits"]) == set(judged["benchmark"].unique().to_list()) == set(folds)
    for benchmark, data in oof["fold_fits"].items():
        fold_fit = StackFit.from_json(json.dumps(data))
        assert fold_fit.version != fit.version and fold_fit.selector_version == fit.selector_version
        assert (fold_fit.k, fold_fit.power, fold_fit.max_tasks) == \
            (folds[benchmark]["k"], folds[benchmark]["power"], folds[benchmark]["max_tasks"])


# --- the headline's interval in the split check, with the new labeler ---------------------------------------------


def _judged_problem(labels: pl.DataFrame, judge_rows: pl.DataFrame, tasks: pl.DataFrame):
    from models import estimates as es

    texts = es.text_frame(judge_rows.select("benchmark", "prompt_hash").unique(), judge_rows)
    return es.build_problem(texts, es.labeler_pairs(labels), es.judge_pairs(judge_rows.drop_nulls("task_id")),
                            tasks)


def split_coverage(summary: pl.DataFrame, estimator: str, quantity: str, threshold: int) -> float:
    """The share of splits whose interval covered the judge-labeled truth (es.summarize_checks' `coverage`)."""
    return summary.filter((pl.col("estimator") == estimator) & (pl.col("quantity") == quantity)
                          & (pl.col("threshold") == threshold))["coverage"][0]


@pytest.fixture(scope="module")
def relabeled_split_check(mirror: Path) -> pl.DataFrame:
    """estimate_split_check's own procedure (assets.estimates.split_check with the relabeling the asset builds,
    models/labeling/stacking_split.py) on the judged texts with the new labeler's cross-fitted labels
    (neighbour_oof.json, what the estimators see): 4 half and 4 fifth splits."""
    from assets.estimates_split import split_check
    from models import estimates as es
    from models.labeling.stacking_split import EstimationPartRelabeler
    from pipelines.fit_labeler import landed_texts
    from resources.readers import (
        load_onet_reference_frames,
        load_reference,
        read_judged_signals,
        read_selector_oof,
    )
    from resources.sources import resolve_source

    statements = resolve_source("onet/Task Statements.txt")
    tasks = load_onet_reference_frames(statements.path.parent)["tasks"].select("onet_soc_code", "task_id")
    reference = load_reference()
    judge_rows = es.reference_sample_rows(reference)
    oof = json.loads(STACK_OOF_PATH.read_text())
    labels = pl.DataFrame([{"benchmark": r["benchmark"], "prompt_hash": r["prompt_hash"], "onet_soc_code": c,
                            "task_id": int(t), "p_exercised": float(p)} for r in oof["prompts"] for t, c, p in r["labels"]])
    problem = _judged_problem(labels, judge_rows, tasks)
    every = judge_rows.select("benchmark", "prompt_hash").unique()
    texts = es.text_frame(every, judge_rows)
    landed = pl.DataFrame([{"benchmark": b, "prompt_hash": h, "prompt": t}
                           for b, pairs in landed_texts(reference).items() for h, t in pairs])
    selector = read_selector_oof()
    relabel = EstimationPartRelabeler(
        load_stack_fit(), judged_texts(reference, landed), list(zip(texts["benchmark"], texts["prompt_hash"],
                                                                     strict=True)),
        {r["prompt_hash"]: [(int(t), c, float(p)) for t, c, p in r["labels"]] for r in selector["prompts"]},
        {r["prompt_hash"]: bool(r["is_work"]) for r in selector["prompts"]},
        {(str(c), int(t)): k for k, (c, t) in enumerate(problem.task_keys.iter_rows())},
        read_judged_signals(load_stack_fit().selector_version),
        fold_fits={b: StackFit.from_json(json.dumps(f)) for b, f in oof["fold_fits"].items()})
    summary = split_check(problem, es.scopes_for(problem, None, per_benchmark=False), 4, 30, 7, relabel)
    # the last call is a fifth split: no benchmark keeps min_judged judged texts, so the selector's labels stand
    assert relabel.fit.min_judged > 0 and relabel.n_relabeled == 0
    return summary


@pytest.mark.slow
def test_split_check_intervals_cover_the_truth_with_the_cross_fitted_labels(relabeled_split_check: pl.DataFrame
                                                                            ) -> None:
    """From half of each benchmark's judge sample, with the held-out half relabeled as unjudged texts are, the
    published model-assisted interval at >= 5 prompts and the bounds at >= 1 still cover the judge-labeled
    truth. Without the relabeling (held-out texts keeping labels that other held-out texts' judge labels voted
    for) this failed: coverage 0.33 for tasks at >= 5."""
    half = relabeled_split_check.filter(pl.col("check") == "split_half")
    for quantity in ("tasks_covered", "occupations_covered"):
        assert split_coverage(half, "model_assisted", quantity, 5) >= 0.6, quantity
        assert split_coverage(half, "bounds", quantity, 1) >= 0.9, quantity


@pytest.mark.slow
def test_fifth_split_check_covers_the_truth_with_the_neighbour_step(relabeled_split_check: pl.DataFrame) -> None:
    """From a fifth of each benchmark's judge sample (~6 judged texts) the step keeps the selector's labels
    (StackFit.min_judged = 10), so the estimators correct errors they can see. Before min_judged the step
    restacked from ~5 voting texts and the count at >= 5 ran high: tasks +14.4 of 75 and occupations +8.6 of 37,
    coverage 0.1 and 0.1 (run_all, 10 splits); with the 2026-12-03 features still 0.25 and 0.5 (4 splits).
    Measured with min_judged (4 splits): 0.75 (+7.7) and 1.0 (+3.2)."""
    fifth = relabeled_split_check.filter(pl.col("check") == "split_fifth")
    for quantity in ("tasks_covered", "occupations_covered"):
        assert split_coverage(fifth, "model_assisted", quantity, 5) >= 0.6, quantity


@pytest.mark.slow
def test_split_check_with_labels_refitted_on_the_estimation_half_only(mirror: Path) -> None:
    """The stricter split check: in each split the labels of every judged text are recomputed from the votes of
    the estimation half alone (the held-out half's judge labels reach no label: held-out texts are labeled
    like texts the judge never read, estimation texts leave themselves out), then the published intervals are
    checked against the judge-labeled truth of both halves."""
    from models import estimates as es
    from models.estimates.problem import task_counts
    from models.labeling.stacking import label_benchmark
    from pipelines.fit_labeler import landed_texts
    from resources.readers import (
        load_onet_reference_frames,
        load_reference,
        read_judged_signals,
        read_selector_oof,
    )
    from resources.sources import resolve_source

    statements = resolve_source("onet/Task Statements.txt")
    tasks = load_onet_reference_frames(statements.path.parent)["tasks"].select("onet_soc_code", "task_id")
    task_code = {int(t): str(c) for c, t in tasks.iter_rows()}
    reference = load_reference()
    texts = pl.DataFrame([{"benchmark": b, "prompt_hash": h, "prompt": t}
                          for b, pairs in landed_texts(reference).items() for h, t in pairs])
    judged = judged_texts(reference, texts).sort("benchmark", "prompt_hash")  # the join's order varies: fix the splits
    selector = read_selector_oof()
    selector_labels = {r["prompt_hash"]: [(int(t), c, float(p)) for t, c, p in r["labels"]]
                       for r in selector["prompts"]}
    selector_work = {r["prompt_hash"]: (bool(r["is_work"]), None) for r in selector["prompts"]}
    fit = load_stack_fit()
    # each benchmark labeled with the fold fit that never saw its judge labels, as the pipeline's split check is
    folds = {b: StackFit.from_json(json.dumps(f)) for b, f in json.loads(STACK_OOF_PATH.read_text())["fold_fits"].items()}
    judge_rows = es.reference_sample_rows(reference)
    every = judge_rows.select("benchmark", "prompt_hash").unique()
    rng = np.random.default_rng(11)
    checks = []
    for r in range(4):
        estimation = pl.concat([g.sample(fraction=0.5, seed=int(rng.integers(1 << 30)))
                                for _, g in judged.group_by("benchmark", maintain_order=True)])
        rows = []
        for (benchmark,), group in judged.group_by(["benchmark"], maintain_order=True):
            part = estimation.filter(pl.col("benchmark") == benchmark)
            decided = label_benchmark(folds.get(str(benchmark), fit), BenchmarkSample.of(part) if part.height else None,
                                      group["prompt"].to_list(), group["prompt_hash"].to_list(),
                                      selector_labels, selector_work, task_code,
                                      read_judged_signals(fit.selector_version)) or {}
            for h in group["prompt_hash"].to_list():
                labels = decided[h].labels if h in decided else selector_labels.get(h, [])
                rows += [{"benchmark": benchmark, "prompt_hash": h, "onet_soc_code": c, "task_id": t,
                          "p_exercised": p} for t, c, p in labels]
        labels = pl.DataFrame(rows)
        sampled = estimation.select("benchmark", "prompt_hash")
        part_rows = judge_rows.join(sampled, on=["benchmark", "prompt_hash"])
        part = es.build_problem(es.text_frame(every, sampled), es.labeler_pairs(labels),
                                es.judge_pairs(part_rows.drop_nulls("task_id")), tasks)
        whole = es.build_problem(es.text_frame(every, every), es.labeler_pairs(labels),
                                 es.judge_pairs(judge_rows.drop_nulls("task_id")), tasks)
        truth = task_counts(whole, whole.jud_text, whole.jud_task, np.ones(whole.jud_text.shape[0]))
        scopes = es.scopes_for(part, None, per_benchmark=False)
        checks.append(es.check_against_truth(part, truth, scopes, n_draws=30, seed=r))
    summary = es.summarize_checks(pl.concat(checks))

    for quantity in ("tasks_covered", "occupations_covered"):
        # Until 2026-12-06 the stack fitted on every judged text labeled the held-out half, whose judge labels it
        # had been fitted on, and the judged texts' TF-IDF held themselves: tasks at >= 5 covered in 2 or 3 of 4
        # splits. Labeled honestly (each benchmark by its fold's fit), 10 splits of this check cover tasks at >= 5
        # in 6 and occupations in 8, with mean errors -4.7 of 75 and -2.5 of 37 (the pipeline's own half split,
        # other splits: 9 and 9, -3.4 and -2.5). Four splits cannot resolve a coverage: what is asserted is
        # that the estimate is not biased by more than a tenth, and that the bounds at >= 1 hold the truth.
        rows = summary.filter((pl.col("estimator") == "model_assisted") & (pl.col("quantity") == quantity)
                              & (pl.col("threshold") == 5) & (pl.col("scope") == "all"))
        assert abs(rows["mean_error"][0]) <= 0.1 * rows["mean_truth"][0], (quantity, rows)
        assert split_coverage(summary, "bounds", quantity, 1) >= 0.9, quantity


def test_labeler_validation_rows_of_both_evaluations() -> None:
    from assets.label_validation import stack_cross_validated_rows
    from models.labeling.base import stacked_on

    fit = load_stack_fit()
    rows = stack_cross_validated_rows(fit, "offline-calibrated+v1+s0")
    assert set(rows["labeler"].to_list()) == {"offline", "offline_selector_only", "neighbour_vote_only"}
    for evaluation in ("within_benchmark", "new_benchmark"):
        for metric in ("task_f1", "task_precision", "task_recall", "first_occupation_agreement", "work_accuracy"):
            name = f"ref_cv_{evaluation}_{metric}"
            after = rows.filter((pl.col("metric") == name) & (pl.col("labeler") == "offline"))
            before = rows.filter((pl.col("metric") == name) & (pl.col("labeler") == "offline_selector_only"))
            assert after.height == before.height == 1, name
            recorded = fit.cross_validation[evaluation]["neighbour_stack"]["all"][metric]
            assert after["value"][0] == recorded["value"] and after["ci_low"][0] <= after["value"][0]
    after = rows.filter(pl.col("labeler") == "offline")["labeler_version"][0]
    assert stacked_on(after) == "offline-calibrated+v1+s0"
    assert stacked_on("offline-calibrated+v1+s0") is None


def test_the_label_quality_line_names_both_evaluations_of_the_step() -> None:
    """summary.md's label-quality line (models/report/limitations.py) quotes the step's labels under both
    evaluations, each named, from labeler_validation's rows; the selector's line stays as it was."""
    from assets.label_validation import stack_cross_validated_rows
    from models.report.limitations import label_quality_findings

    fit = load_stack_fit()
    rows = stack_cross_validated_rows(fit, "offline-calibrated+v1+s0")
    coverage = pl.DataFrame({"labeler": ["offline"]})
    line = label_quality_findings({"labeler_validation": rows, "task_coverage": coverage})[0]
    within = fit.cross_validation["within_benchmark"]["neighbour_stack"]["all"]
    new = fit.cross_validation["new_benchmark"]["neighbour_stack"]["all"]
    assert "Leaving one judged text out within its benchmark" in line and "Leaving one benchmark out" in line
    first, second = line.split("Leaving one benchmark out")
    assert f"first occupation {round(100 * within['first_occupation_agreement']['value'])}%" in first
    assert f"work decision {round(100 * within['work_accuracy']['value'])}%" in first
    assert f"task F1 {round(100 * new['task_f1']['value'])}%" in second
    # the selector alone (step off): leave one benchmark out, as before
    selector_rows = rows.filter((pl.col("labeler") == "offline_selector_only")
                                & pl.col("metric").str.contains("_new_benchmark_")).with_columns(
        pl.lit("offline").alias("labeler"), pl.col("metric").str.replace("_new_benchmark", ""))
    plain = label_quality_findings({"labeler_validation": selector_rows, "task_coverage": coverage})[0]
    assert "cross-validated leaving one benchmark out" in plain and "within its benchmark" not in plain
    assert stack_cross_validated_rows(None, "x").is_empty()
    # with the step off the stack's rows are a candidate's: the published labeler's rows stay the selector's
    off = stack_cross_validated_rows(fit, "offline-calibrated+v1+s0", published=False)
    assert set(off["labeler"].to_list()) == {"offline_neighbour_step", "offline_selector_only", "neighbour_vote_only"}
    assert off.filter(pl.col("labeler") == "offline_neighbour_step").height == rows.filter(
        pl.col("labeler") == "offline").height


def test_the_neighbour_step_is_on_unless_the_setting_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """On by default: the step is reached, and says why it cannot stack a labeler without the calibrated
    selector; BENCHMAP_NEIGHBOUR_STEP=0 passes the selector's labels and version through untouched; a value that
    is not a switch is an error naming the variable."""
    from types import SimpleNamespace

    from resources.neighbour_step import neighbour_step
    from resources.settings import SettingsError, settings

    impl = SimpleNamespace(labeler_version="offline-calibrated+sX", selector=None)
    labels = {"h1": ("sentinel",)}
    monkeypatch.delenv("BENCHMAP_NEIGHBOUR_STEP", raising=False)
    same, version, meta = neighbour_step(None, "b", [], labels, impl, None)  # type: ignore[arg-type]
    assert same is labels and version == impl.labeler_version
    assert "not the calibrated offline labeler" in meta["neighbour_step"]
    for off in ("0", "off", "False"):
        monkeypatch.setenv("BENCHMAP_NEIGHBOUR_STEP", off)
        same, version, meta = neighbour_step(None, "b", [], labels, impl, None)  # type: ignore[arg-type]
        assert same is labels and version == impl.labeler_version and meta["neighbour_step"].startswith("off")
    monkeypatch.setenv("BENCHMAP_NEIGHBOUR_STEP", "maybe")
    with pytest.raises(SettingsError, match="BENCHMAP_NEIGHBOUR_STEP"):
        settings()


def test_a_decision_does_not_depend_on_which_texts_the_cache_already_held() -> None:
    """A text's stacked decision is the same whether the benchmark's other texts (its judged texts among them)
    are decided in the same call or were read from the step's cache (a concurrent run, or an earlier run of a
    smaller benchmark, wrote them): the trust features read the judged texts' selector labels, which every
    call has (labels_by_hash), not only the texts it recomputes."""
    from models.labeling.base import PromptRecord, TaskLabel
    from models.labeling.cache import LabelSet
    from models.labeling.stacking import stacked_label_sets

    judged, selector, work = _world()
    examples = scv.examples(judged, selector, work, TASK_CODE, grid=((3, 1.0),))
    fit = scv.fit_stack(examples, "s-test", grid=((3, 1.0),), min_judged=0)
    bench = judged.filter(pl.col("benchmark") == "bench1")
    sample = BenchmarkSample.of(bench)
    prompts = [PromptRecord("bench1", f"p{i}", h, t) for i, (h, t) in
               enumerate([*zip(bench["prompt_hash"], bench["prompt"], strict=True),
                          ("new", "post journal entries for the quarter")])]
    labels = {p.prompt_hash: LabelSet([TaskLabel(t, c, r, q, None, q) for r, (t, c, q) in
                                       enumerate(selector.get(p.prompt_hash, [(101, "13-2011.00", 0.4)]), start=1)],
                                      is_work=True) for p in prompts}
    _, _, whole = stacked_label_sets(fit, sample, prompts, labels, TASK_CODE)
    # the judged texts' decisions from the cache, only the new text computed
    cached = {h: d for h, d in whole.items() if h != "new"}
    _, n, partial = stacked_label_sets(fit, sample, prompts, labels, TASK_CODE, cached)
    assert n == len(prompts)
    assert partial["new"] == whole["new"]


@pytest.mark.slow
def test_the_array_path_decides_as_the_per_text_path_on_the_mirror(mirror: Path) -> None:
    """label_benchmark's feature rows built as arrays (models/labeling/stacking_fast.py) give every text the very
    decision (is_work, p_work, labels, first occupation, ranking: floats compared exactly) of the per-text path
    (stacking_features.candidates, what the fit reads), on every mirrored benchmark's judged texts and a share of
    its other texts, with the whole judge sample as neighbours (the labeling step) and with a half of it (the
    split checks); texts with and without their signals, under the committed fit and with the work decision's
    neighbour setting equal to the stack's."""
    from pipelines.fit_labeler import landed_texts
    from resources.readers import (
        load_onet_reference_frames,
        load_reference,
        read_judged_signals,
        read_selector_oof,
    )
    from resources.sources import resolve_source

    statements = resolve_source("onet/Task Statements.txt")
    tasks = load_onet_reference_frames(statements.path.parent)["tasks"].select("onet_soc_code", "task_id")
    task_code = {int(t): str(c) for c, t in tasks.iter_rows()}
    reference = load_reference()
    landed = landed_texts(reference)
    texts = pl.DataFrame([{"benchmark": b, "prompt_hash": h, "prompt": t} for b, pairs in landed.items()
                          for h, t in pairs])
    judged = judged_texts(reference, texts).sort("benchmark", "prompt_hash")
    fit = load_stack_fit()
    assert fit is not None
    # one variant whose work decision has its own neighbour setting (the committed fit's, when it has one), one
    # with the stack's
    apart = fit if fit.work_key != (fit.k, fit.power) else dataclasses.replace(fit, work_neighbours=(fit.k + 2,
                                                                                                     fit.power))
    selector = read_selector_oof()
    selector_labels = {r["prompt_hash"]: [(int(t), c, float(p)) for t, c, p in r["labels"]]
                       for r in selector["prompts"]}
    selector_work = {r["prompt_hash"]: (bool(r["is_work"]), None) for r in selector["prompts"]}
    signals = read_judged_signals(fit.selector_version)
    rng = np.random.default_rng(5)
    decided = compared = 0
    for (benchmark,), group in judged.group_by(["benchmark"], maintain_order=True):
        hashes, prompts = group["prompt_hash"].to_list(), group["prompt"].to_list()
        judged_set = set(hashes)
        # other texts of the benchmark, given a judged text's selector labels and signals (real values)
        others = [(h, t) for h, t in landed[str(benchmark)] if h not in judged_set][:120]
        labels = dict(selector_labels)
        work = dict(selector_work)
        their_signals = dict(signals)
        for i, (h, _) in enumerate(others):
            source = hashes[i % len(hashes)]
            labels[h] = selector_labels.get(source, [])
            work[h] = (i % 3 != 0, None)
            if source in signals and i % 4:
                their_signals[h] = signals[source]
        query_hashes = hashes + [h for h, _ in others]
        query_texts = prompts + [t for _, t in others]
        half = group.filter(pl.Series(rng.random(group.height) < 0.5))
        for fitted in (apart, dataclasses.replace(fit, work_neighbours=None, min_judged=0)):
            for part in (group, half):
                if part.height == 0:
                    continue
                sample = BenchmarkSample.of(part)
                for with_signals in (their_signals, {}):
                    args = (fitted, sample, query_texts, query_hashes, labels, work, task_code, with_signals)
                    slow = label_benchmark(*args, per_text=True)
                    fast = label_benchmark(*args)
                    assert (slow is None) == (fast is None)
                    if slow is None:
                        continue
                    assert fast.keys() == slow.keys()
                    for h, d in slow.items():
                        assert fast[h] == d, (benchmark, h)
                    decided += len(slow)
                    compared += 1
    assert compared > 100 and decided > 10_000


@pytest.mark.slow
def test_the_split_relabeling_tokenizes_once_and_gets_the_vectorizers_values(mirror: Path) -> None:
    """The split checks' TF-IDF from texts tokenized once (models/labeling/neighbour_tfidf.py) equals, to the bit,
    the cosine of a TfidfVectorizer fitted on each part, on every mirrored benchmark's judged texts and random
    parts of them; and the relabeling with it gives the labels of the vectorizer's path in every split."""
    from models.labeling.neighbour_tfidf import TokenizedTexts, part_similarity
    from models.labeling.neighbours import query_similarity
    from models.labeling.stacking_split import EstimationPartRelabeler
    from pipelines.fit_labeler import landed_texts
    from resources.readers import load_reference, read_judged_signals, read_selector_oof

    reference = load_reference()
    texts = pl.DataFrame([{"benchmark": b, "prompt_hash": h, "prompt": t}
                          for b, pairs in landed_texts(reference).items() for h, t in pairs])
    judged = judged_texts(reference, texts).sort("benchmark", "prompt_hash")
    rng = np.random.default_rng(8)
    parts = 0
    for _, group in judged.group_by(["benchmark"], maintain_order=True):
        tokens = TokenizedTexts.of([t if t.strip() else " " for t in group["prompt"].to_list()])
        for fraction in (1.0, 0.5, 0.2):
            part = np.flatnonzero(rng.random(group.height) < fraction) if fraction < 1 else np.arange(group.height)
            if not len(part):
                continue
            rng.shuffle(part)  # the part's order is the vectorizer's corpus order
            ours = part_similarity(tokens, part.tolist(), list(range(group.height)))
            theirs = query_similarity(BenchmarkSample.of(group[part]), group["prompt"].to_list(), ["-"] * group.height)
            assert ours is not None and ours.tobytes() == theirs.tobytes()
            parts += 1
    assert parts > 60

    fit = load_stack_fit()
    selector = read_selector_oof()
    keys = list(zip(judged["benchmark"], judged["prompt_hash"], strict=True))
    task_index = {(c, int(t)): k for k, (c, t) in enumerate(sorted({(c, int(t)) for r in selector["prompts"]
                                                                      for t, c, _ in r["labels"]}))}
    made = {tokenize: EstimationPartRelabeler(
        dataclasses.replace(fit, min_judged=3), judged, keys,
        {r["prompt_hash"]: [(int(t), c, float(p)) for t, c, p in r["labels"]] for r in selector["prompts"]},
        {r["prompt_hash"]: bool(r["is_work"]) for r in selector["prompts"]}, task_index,
        read_judged_signals(fit.selector_version), tokenize=tokenize) for tokenize in (True, False)}
    kept = np.arange(len(keys))
    for fraction in (0.5, 0.5, 0.2):
        sampled = rng.random(len(keys)) < fraction
        ours, theirs = made[True](kept, sampled), made[False](kept, sampled)
        assert made[True].n_relabeled == made[False].n_relabeled > 0
        for a, b in zip(ours, theirs, strict=True):
            assert a.tobytes() == b.tobytes()


def test_judged_texts_keep_the_reference_order() -> None:
    """The judged texts come in the reference's order, the same in every call: their order sets a benchmark's
    TF-IDF and which of equally similar neighbours vote (a join's order varied from call to call, and the step's
    decisions between two runs of the same inputs)."""
    rows, texts = [], []
    for i in range(400):
        h = f"h{(i * 7919) % 400:03d}"
        rows.append({"benchmark": f"b{i % 3}", "prompt_hash": h, "is_work": bool(i % 2),
                     "occupations": ["13-2011.00"], "task_ids": [101]})
        texts.append({"benchmark": f"b{i % 3}", "prompt_hash": h, "prompt": f"text {i}"})
    reference = pl.DataFrame(rows)
    landed = pl.DataFrame(texts).sample(fraction=1.0, shuffle=True, seed=3)
    orders = {tuple(judged_texts(reference, landed)["prompt_hash"].to_list()) for _ in range(5)}
    assert orders == {tuple(reference["prompt_hash"].to_list())}


def test_a_new_benchmarks_figures_resample_benchmarks_and_show_each_one() -> None:
    """A rehearsal of the blind check (three benchmarks held out) scored the selector's labels 0.13 and 0.10 in
    task F1 against a published 0.17 (0.15-0.19): the interval resampled prompts, while which benchmarks arrive
    sets the score. The pooled new-benchmark rows now resample benchmarks, each benchmark's own figure is a
    row (once: for the published labeler), and the summary line says how far one benchmark may land."""
    from assets.label_validation import stack_cross_validated_rows
    from models import reference_labels as rl
    from models.report.limitations import label_quality_findings
    from resources.readers import load_reference, read_selector_oof

    fit = load_stack_fit()
    oof = read_selector_oof()
    version = f"offline-calibrated+v1+{oof['fit_version']}"
    rows = stack_cross_validated_rows(fit, version)
    per_prompt = rl.per_prompt_metrics(rl.predictions_from_out_of_fold(oof["prompts"]), load_reference())
    spread, problem = rl.with_benchmark_spread(rows, per_prompt, "ref_cv_new_benchmark_", ["offline"])
    assert problem is None
    new = pl.col("metric").str.starts_with("ref_cv_new_benchmark_")

    def pooled(frame: pl.DataFrame, labeler: str) -> dict:
        return frame.filter((pl.col("benchmark") == "all") & (pl.col("labeler") == labeler)
                            & (pl.col("metric") == "ref_cv_new_benchmark_task_f1")).row(0, named=True)

    for labeler in ("offline", "offline_selector_only"):  # the same figures: both get the interval over benchmarks
        before, after = pooled(rows, labeler), pooled(spread, labeler)
        assert after["value"] == before["value"]
        assert after["ci_high"] - after["ci_low"] > 3 * (before["ci_high"] - before["ci_low"])
        assert after["ci_low"] < 0.13 and after["ci_high"] > 0.2  # the rehearsal's scores are inside it
    each = spread.filter((pl.col("benchmark") != "all") & (pl.col("labeler") == "offline")
                         & (pl.col("metric") == "ref_cv_new_benchmark_task_f1"))
    assert each.height == 29 and each["value"].min() == 0.0 and each["value"].max() > 0.4
    assert spread.filter((pl.col("benchmark") != "all") & (pl.col("labeler") != "offline")).is_empty()
    # the within-benchmark rows keep their own intervals (over texts: the texts are the sample there)
    assert spread.filter(~new).equals(rows.filter(~new))
    # a file that does not reproduce one published figure (stale): nothing changes, and it is said
    stale, problem = rl.with_benchmark_spread(rows, per_prompt.with_columns(pl.col("task_f1") * 0.5),
                                              "ref_cv_new_benchmark_", ["offline"])
    assert stale.equals(rows) and problem is not None and "ref_cv_new_benchmark_task_f1" in problem
    line = label_quality_findings({"labeler_validation": spread,
                                   "task_coverage": pl.DataFrame({"labeler": ["offline"]})})[0]
    zero = int((each["value"] == 0).sum())
    assert f"one benchmark at a time, task F1 is 0% for {zero} of the 29 and its middle half runs" in line
    assert "100%" not in line.split("one benchmark at a time")[1].split(")")[0]  # not webshop's all-empty 1.0
