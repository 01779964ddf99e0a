"""Fitting and measuring the neighbour stack (models/labeling/stacking.py) honestly.

Every feature of a judged text is out of sample: the selector's labels are its leave-one-benchmark-out
labels (selector_oof.json), the neighbour votes come from the other judged texts of the same benchmark.
`cross_validate` then holds out one benchmark at a time: the stack's models and every hyperparameter
(k, power, thresholds, chosen by an inner cross-validation over whole training benchmarks) are fitted without
the held-out benchmark, which is predicted with its leave-one-text-out votes. So each held-out prediction is
"leave one judged text out within its benchmark" (the rest of its benchmark's sample is available, as it is
when the pipeline labels the benchmark's other texts) with nothing else learned from its benchmark. The
held-out decisions are also the cross-fitted labels the estimators use for the judged texts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from models.labeling.neighbours import BenchmarkSample, neighbour_votes, samples_by_benchmark
from models.labeling.selector import LinearModel
from models.labeling.stacking import (
    Decision,
    Scores,
    StackFit,
    decide,
    kept_positions,
    ranked,
    score,
)
from models.labeling.stacking_features import (
    OCCUPATION_FEATURES,
    TASK_FEATURES,
    WORK_FEATURES,
    Candidates,
    TextEvidence,
    TextSignals,
    benchmark_context,
    candidates,
    evidence_of,
    with_occupation,
)
from models.labeling.text_signals import retriever_ranking

NEIGHBOUR_GRID = ((6, 1.0), (10, 2.0))  # (k, power)
# the work model is a calibrated logistic: P(work) >= 1/2 is the accurate decision (a threshold chosen by the inner
# cross-validation moved between 0.3 and 0.8 from fold to fold and cost accuracy out of sample)
WORK_THRESHOLDS = (0.5,)
TASK_THRESHOLDS = tuple(np.round(np.linspace(0.1, 0.6, 11), 3))
MAX_TASKS = (3, 5)
INNER_FOLDS = 3
# StackFit.min_judged: between a fifth (~6) and a half (~14) of a benchmark's 28 judged texts; set from the
# estimates' split check (a fifth: coverage 0.25 / 0.5 for tasks / occupations at >= 5 with the step), not
# cross-validated. A user's judge sample (10%, at least 12 texts) keeps the step.
MIN_JUDGED = 10
C = 1.0
# The work model's training rows weighted toward mixed benchmarks (`work_weights`): floor + 4 s (1 - s), s = the
# work share of the text's benchmark's other judged texts. Unweighted, the pure benchmarks (where the votes, the
# selector and the text agree) set the coefficients; the errors are in the mixed ones (personal and work requests
# on the same sites). The floor (None: unweighted) is chosen by the inner cross-validation, for work accuracy.
WORK_WEIGHT_FLOORS = (None, 1.0, 0.25, 0.05)
_WORK_SHARE = WORK_FEATURES.index("work_share")


@dataclass(frozen=True)
class Example:
    """One judged text: its out-of-sample evidence per neighbour setting and the judge's passes."""

    benchmark: str
    prompt_hash: str
    evidence: dict[tuple[int, float], TextEvidence]
    candidates: dict[tuple[int, float], Candidates]
    is_work: float
    occupation_lists: list[list[str]]
    pool: int  # judged texts of its benchmark (itself included)
    task_lists: list[list[int]]


def examples(judged: pl.DataFrame, selector_labels: Mapping[str, Sequence[tuple[int, str, float]]],
             selector_work: Mapping[str, bool], task_code: Mapping[int, str],
             grid: Sequence[tuple[int, float]] = NEIGHBOUR_GRID,
             signals: TextSignals | None = None) -> list[Example]:
    """One Example per judged text (JUDGED_SCHEMA rows) of a benchmark with at least two judged texts;
    `signals`: the judged texts' out-of-sample stacking.TextSignals."""
    samples = samples_by_benchmark(judged)
    out: list[Example] = []
    for (benchmark,), group in judged.group_by(["benchmark"], maintain_order=True):
        sample = samples[str(benchmark)]
        if sample.size < 2:
            continue
        texts, hashes = group["prompt"].to_list(), group["prompt_hash"].to_list()
        votes = {(k, p): neighbour_votes(sample, texts, hashes, k, p) for k, p in grid}
        context = benchmark_context(sample, hashes, selector_labels, signals or {}, task_code)
        for row, r in enumerate(group.iter_rows(named=True)):
            h = r["prompt_hash"]
            evidence = {key: evidence_of(v, row, selector_labels.get(h, ()), bool(selector_work.get(h, True)), None,
                                         context)
                        for key, v in votes.items()}
            cands = {key: candidates(e, task_code) for key, e in evidence.items()}
            out.append(Example(str(benchmark), h, evidence, cands, float(r["is_work"]),
                               [list(o) for o in r["occupations"]], sample.size, [list(t) for t in r["task_ids"]]))
    return out


def _fit(features: tuple[str, ...], x: list[np.ndarray], share: list[np.ndarray],
         row_weight: np.ndarray | None = None) -> LinearModel:
    xs, ys, c, w = _weighted(x, share, row_weight)
    return LinearModel.fit(features, xs, ys, c, w)


def _weighted(x: list[np.ndarray], share: list[np.ndarray], row_weight: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Rows with a fractional target (share of passes) as a positive and a negative row, weighted (times
    `row_weight`, one per row, when given)."""
    xs, ys = np.vstack(x), np.concatenate(share)
    extra = np.ones(len(ys)) if row_weight is None else np.asarray(row_weight, dtype=float)
    keep_pos, keep_neg = ys > 0, ys < 1
    return (np.vstack([xs[keep_pos], xs[keep_neg]]),
            np.concatenate([np.ones(keep_pos.sum()), np.zeros(keep_neg.sum())]), C,
            np.concatenate([ys[keep_pos] * extra[keep_pos], (1 - ys[keep_neg]) * extra[keep_neg]]))


def work_weights(work_x: np.ndarray, floor: float | None) -> np.ndarray | None:
    """Per training row (WORK_FEATURES rows): floor + 4 s (1 - s), s = its benchmark's work share over the other
    judged texts, scaled to mean 1 (the regularisation stays the unweighted model's); None for floor None."""
    if floor is None:
        return None
    share = work_x[:, _WORK_SHARE]
    weight = floor + 4.0 * share * (1.0 - share)
    return weight / weight.mean()


def fit_models(train: Sequence[Example], key: tuple[int, float], work_only: bool = False,
               work_floor: float | None = None) -> tuple[LinearModel, ...]:
    """The three logistic models on the training examples' candidates under neighbour setting `key` (only the
    work model when `work_only`; its rows weighted by `work_weights(.., work_floor)`)."""
    work_x = np.vstack([ex.candidates[key].work_x for ex in train])
    work = _fit(WORK_FEATURES, [work_x], [np.array([ex.is_work for ex in train])], work_weights(work_x, work_floor))
    if work_only:
        return (work,)
    ox, oy = [], []
    rows: list[tuple[Example, Candidates]] = []
    for ex in train:
        passes = [set(o) for o in ex.occupation_lists if o]
        c = ex.candidates[key]
        if not passes or not c.codes:
            continue
        ox.append(c.occupation_x)
        oy.append(np.array([np.mean([code in p for p in passes]) for code in c.codes]))
        rows.append((ex, c))
    occupation = _fit(OCCUPATION_FEATURES, ox, oy)
    tx, ty = [], []
    for ex, c in rows:
        passes_t = [set(t) for t in ex.task_lists if t]
        if not c.tasks or not passes_t:
            continue
        tx.append(with_occupation(c, occupation.predict(c.occupation_x)))
        ty.append(np.array([np.mean([t in p for p in passes_t]) for t in c.tasks]))
    task = _fit(TASK_FEATURES, tx, ty)
    return work, occupation, task


def _f1(kept: set[int], passes: Sequence[set[int]]) -> float:
    return float(np.mean([2 * len(kept & ref) / (len(kept) + len(ref)) if (kept or ref) else 1.0
                          for ref in passes]))


def choose(scored: Sequence[tuple[Example, Scores]]) -> tuple[float, str, float, int, float]:
    """(work threshold, work rule, task threshold, max tasks, mean task F1 over work texts) best on held-out
    scores; the work rule is the plain neighbour vote when it decides at least as accurately as the model."""
    work_threshold, work_rule, _ = work_choice(scored)
    totals = np.zeros((len(MAX_TASKS), len(TASK_THRESHOLDS)))
    n = 0
    for ex, s in scored:
        passes = [set(p) for p in ex.task_lists if p]
        if not passes or not s.tasks:
            n += bool(passes)
            continue
        n += 1
        order, lead = ranked(s)
        p_sorted = s.p_task[order]
        for a, m in enumerate(MAX_TASKS):
            for b, t in enumerate(TASK_THRESHOLDS):
                totals[a, b] += _f1({s.tasks[order[i]] for i in kept_positions(p_sorted, lead, float(t), m)},
                                    passes)
    a, b = np.unravel_index(int(np.argmax(totals)), totals.shape)
    return work_threshold, work_rule, float(TASK_THRESHOLDS[b]), MAX_TASKS[a], float(totals[a, b] / max(n, 1))


def work_choice(scored: Sequence[tuple[Example, Scores]]) -> tuple[float, str, float]:
    """(work threshold, work rule, accuracy) on held-out scores: the threshold of the work model's p most
    accurate; the rule is the plain neighbour vote when it decides at least as accurately as the model."""
    truth = np.array([ex.is_work for ex, _ in scored])
    p_work = np.array([s.p_work for _, s in scored])
    accuracy = [float(np.mean(np.where(p_work >= t, truth, 1 - truth))) for t in WORK_THRESHOLDS]
    work_threshold = float(WORK_THRESHOLDS[int(np.argmax(accuracy))])
    vote = np.array([s.work_vote for _, s in scored])
    vote_accuracy = float(np.mean(np.where(vote >= 0.5, truth, 1 - truth)))
    if vote_accuracy >= max(accuracy):
        return work_threshold, "vote", vote_accuracy
    return work_threshold, "model", max(accuracy)


def fit_stack(train: Sequence[Example], selector_version: str,
              grid: Sequence[tuple[int, float]] = NEIGHBOUR_GRID, min_judged: int = MIN_JUDGED) -> StackFit:
    """Hyperparameters by an inner cross-validation over groups of whole benchmarks, then the models
    refitted on every training example."""
    benchmarks = sorted({ex.benchmark for ex in train})
    folds = [set(benchmarks[i::INNER_FOLDS]) for i in range(INNER_FOLDS)]
    best: tuple[float, tuple[int, float], float, str, float, int] | None = None
    # the work decision's own setting: (accuracy, neighbour setting, rule, weight floor)
    best_work: tuple[float, tuple[int, float], str, float | None] | None = None
    inner = [([ex for ex in train if ex.benchmark not in fold], [ex for ex in train if ex.benchmark in fold])
             for fold in folds]
    inner = [(a, b) for a, b in inner if a and b]
    for key in grid:
        scored: list[tuple[Example, Scores]] = []
        for inner_train, inner_test in inner:
            models = fit_models(inner_train, key)
            scored += [(ex, score(models, ex.candidates[key])) for ex in inner_test]
        work_t, work_rule, task_t, max_tasks, f1 = choose(scored)
        if best is None or f1 > best[0] + 1e-12:
            best = (f1, key, work_t, work_rule, task_t, max_tasks)
        for floor in WORK_WEIGHT_FLOORS:
            _, rule, accuracy = work_choice(scored if floor is None else _work_rescored(inner, key, floor, scored))
            if best_work is None or accuracy > best_work[0] + 1e-12:
                best_work = (accuracy, key, rule, floor)
    assert best is not None and best_work is not None
    _, key, work_t, _, task_t, max_tasks = best
    _, work_key, work_rule, work_floor = best_work
    _, occupation, task = fit_models(train, key)
    work = fit_models(train, work_key, work_only=True, work_floor=work_floor)[0]
    return StackFit(key[0], key[1], work, occupation, task, work_t, task_t, max_tasks, selector_version, work_rule,
                    work_key if work_key != key else None, min_judged, work_weight_floor=work_floor)


def _work_rescored(inner: Sequence[tuple[list[Example], list[Example]]], key: tuple[int, float], floor: float,
                   scored: Sequence[tuple[Example, Scores]]) -> list[tuple[Example, Scores]]:
    """The inner folds' held-out scores (`scored`, in fold order) with p_work from work models fitted with the
    rows weighted by `work_weights(.., floor)`."""
    out: list[tuple[Example, Scores]] = []
    position = 0
    for inner_train, inner_test in inner:
        p = fit_models(inner_train, key, True, floor)[0].predict(
            np.vstack([ex.candidates[key].work_x for ex in inner_test]))
        for (ex, s), p_work in zip(scored[position: position + len(inner_test)], p, strict=True):
            out.append((ex, dataclasses.replace(s, p_work=float(p_work))))
        position += len(inner_test)
    return out


def predict(fit: StackFit, test: Sequence[Example]) -> list[Decision]:
    key = (fit.k, fit.power)
    models = (fit.work, fit.occupation, fit.task)
    selector = selector_decisions([ex for ex in test if ex.pool < fit.min_judged], key)
    return [selector[ex.prompt_hash] if ex.prompt_hash in selector else
            decide(score(models, ex.candidates[key], ex.candidates[fit.work_key].work_x), fit.work_threshold,
                   fit.task_threshold, fit.max_tasks, fit.work_rule) for ex in test]


def cross_validate(all_examples: Sequence[Example], selector_version: str,
                   log: Callable[[str], None] | None = None, grid: Sequence[tuple[int, float]] = NEIGHBOUR_GRID,
                   min_judged: int = MIN_JUDGED, fold_fits: dict[str, StackFit] | None = None
                   ) -> tuple[dict[str, Decision], list[dict]]:
    """Leave one benchmark out for the stack (votes leave one text out): (prompt_hash -> held-out Decision,
    per-fold hyperparameters). `fold_fits`, when given, receives each fold's fit by its held-out benchmark (the
    split checks label a benchmark's held-out texts with the fit that never saw its judge labels)."""
    decisions: dict[str, Decision] = {}
    folds: list[dict] = []
    for benchmark in sorted({ex.benchmark for ex in all_examples}):
        train = [ex for ex in all_examples if ex.benchmark != benchmark]
        test = [ex for ex in all_examples if ex.benchmark == benchmark]
        fit = fit_stack(train, selector_version, grid, min_judged)
        if fold_fits is not None:
            fold_fits[benchmark] = fit
        for ex, d in zip(test, predict(fit, test), strict=True):
            decisions[ex.prompt_hash] = d
        folds.append({"held_out": benchmark, "k": fit.k, "power": fit.power, "work_rule": fit.work_rule,
                      "work_neighbours": list(fit.work_key), "work_weight_floor": fit.work_weight_floor,
                      "work_threshold": fit.work_threshold,
                      "task_threshold": fit.task_threshold, "max_tasks": fit.max_tasks})
        if log:
            log(f"fold {benchmark}: k={fit.k} power={fit.power} work {fit.work_rule} >={fit.work_threshold} "
                f"task>={fit.task_threshold} max {fit.max_tasks}")
    return decisions, folds


def neighbour_vote_baseline(all_examples: Sequence[Example], key: tuple[int, float] = (8, 1.0), top: int = 3
                            ) -> dict[str, Decision]:
    """The plain vote of the issue (no model): not work when the neighbours mostly are not, the 3 most voted
    tasks, the most voted occupation first. Leave one text out (the votes are)."""
    out: dict[str, Decision] = {}
    for ex in all_examples:
        e = ex.evidence[key]
        order = np.argsort(-e.task_vote, kind="stable")
        tasks = [(int(e.task_ids[j]), "", float(e.task_vote[j])) for j in order[:top] if e.task_vote[j] > 0]
        first = str(e.codes[int(np.argmax(e.occupation_vote))]) if len(e.codes) and e.occupation_vote.max() > 0 \
            else None
        is_work = e.work_vote >= 0.5 and bool(tasks)
        out[ex.prompt_hash] = Decision(is_work, e.work_vote, tasks if is_work else [], first, tasks)
    return out


def selector_decisions(all_examples: Sequence[Example], key: tuple[int, float]) -> dict[str, Decision]:
    """Today's labels (the selector's cross-validated ones) as Decisions: the first occupation is the rank-1
    task's, as predictions_from_labels reads the published labels."""
    out: dict[str, Decision] = {}
    for ex in all_examples:
        labels = list(ex.evidence[key].selector_labels)
        work = ex.evidence[key].selector_work
        out[ex.prompt_hash] = Decision(work, float(work), labels if work else [], labels[0][1] if labels else None,
                                       labels)
    return out


def predictions_frame(decisions: Mapping[str, Decision]) -> pl.DataFrame:
    """models.reference_labels.per_prompt_metrics' prediction layout, read as predictions_from_labels reads the
    published labels."""
    return pl.DataFrame(
        [{"prompt_hash": h, "is_work": d.is_work, "tasks": [t for t, _, _ in d.labels],
          "ranking": [t for t, _, _ in d.ranking],
          # what the published labels say: the rank-1 label's occupation, none for a text judged not work
          "first_occupation": (d.labels[0][1] or d.first_occupation) if d.labels else None}
         for h, d in decisions.items()],
        schema={"prompt_hash": pl.Utf8, "is_work": pl.Boolean, "tasks": pl.List(pl.Int64),
                "ranking": pl.List(pl.Int64), "first_occupation": pl.Utf8})


def sample_of(judged: pl.DataFrame, benchmark: str) -> BenchmarkSample | None:
    group = judged.filter(pl.col("benchmark") == benchmark)
    return BenchmarkSample.of(group) if group.height else None


def judged_signals(prompts: Sequence[Any], index: Any, top: int = 10) -> dict[str, list]:
    """prompt_hash -> [text work logit, [[code, score, best task], ...]] of every reference text (stacking.TextSignals):
    the logit of the selector's work model fitted without the text's benchmark (leave one benchmark out, as
    its labels in selector_oof.json), and the retriever's `top` best occupations (fitted on no judge label)."""
    from models.labeling.selector import work_dense_features
    from models.labeling.selector_training import work_model

    # prompts: models.labeling.selector_training.TrainingPrompt; index: the TaskIndex
    out: dict[str, list] = {}
    for benchmark in sorted({p.benchmark for p in prompts}):
        held = [p for p in prompts if p.benchmark == benchmark]
        model = work_model([p for p in prompts if p.benchmark != benchmark], 0.5)
        logits = model.text_logit([p.text for p in held],
                                  np.vstack([work_dense_features(p.signals, [p.text]) for p in held]))
        for p, logit in zip(held, logits, strict=True):
            ranking = retriever_ranking(index, p.combined, p.task_relative, top)
            out[p.prompt_hash] = [round(float(logit), 6), [[c, round(v, 6), task] for c, v, task in ranking]]
    return out
