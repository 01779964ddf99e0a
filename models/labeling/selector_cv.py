"""Fitting the selector honestly: leave-one-benchmark-out cross-validation, thresholds chosen inside folds.

`training_prompts` turns reference rows plus the retriever's evidence into TrainingPrompt records;
`choose_thresholds` picks the work and task thresholds by an inner grouped cross-validation on the
training benchmarks only; `cross_validate` holds out one benchmark at a time (its prompts are never seen by
the fit that labels them) and scores the held-out predictions against the reference with
models.reference_labels. Pure: frames and arrays in, frames out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import polars as pl

from models.labeling.selector import (
    Selector,
    SelectorFit,
    context_sample,
    work_dense_features,
)
from models.labeling.selector_training import BenchmarkEvidence, TrainingPrompt, fit_selector
from models.reference_labels import per_prompt_metrics, summarise_metrics

WORK_THRESHOLDS = tuple(np.round(np.linspace(0.05, 0.95, 37), 3))
POOL_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
TASK_THRESHOLDS = tuple(np.round(np.linspace(0.05, 0.6, 23), 3))
INNER_FOLDS = 3


def training_prompts(reference: pl.DataFrame, texts: dict[tuple[str, str], str], index: Any, config: Any,
                     batch_size: int = 128) -> list[TrainingPrompt]:
    """One TrainingPrompt per reference prompt (its passes together). `texts`: (benchmark, prompt_hash) ->
    prompt text; reference prompts without a text raise KeyError naming the prompt."""
    groups = reference.group_by("benchmark", "prompt_hash", maintain_order=True).agg(
        "is_work", "occupations", "task_ids")
    missing = [(b, h) for b, h in groups.select("benchmark", "prompt_hash").iter_rows() if (b, h) not in texts]
    if missing:
        raise KeyError(f"{len(missing)} reference prompts have no landed text, e.g. {missing[0]}")
    out: list[TrainingPrompt] = []
    rows = list(groups.iter_rows(named=True))
    for start in range(0, len(rows), batch_size):
        chunk = rows[start: start + batch_size]
        batch_texts = [texts[(r["benchmark"], r["prompt_hash"])] for r in chunk]
        evidence, signals = index.evidence_with_signals(batch_texts, config)
        for k, r in enumerate(chunk):
            out.append(TrainingPrompt(
                benchmark=r["benchmark"], prompt_hash=r["prompt_hash"], text=batch_texts[k], combined=evidence.occupation[k].copy(),
                task_raw=signals["task_raw"][k].copy(), task_relative=evidence.task[k].copy(),
                signals={name: value[k: k + 1].copy() for name, value in signals.items() if name != "task_raw"},
                is_work=float(np.mean(r["is_work"])), occupation_lists=[list(o) for o in r["occupations"]],
                task_lists=[list(t) for t in r["task_ids"]]))
    return out


def benchmark_evidence(texts: dict[str, Sequence[tuple[str, str]]], index: Any, config: Any
                       ) -> dict[str, BenchmarkEvidence]:
    """benchmark -> the retriever's evidence on its context sample. `texts`: benchmark -> every landed
    (prompt_hash, prompt text) of it (the sample is drawn from these, without labels)."""
    out: dict[str, BenchmarkEvidence] = {}
    for benchmark, pairs in texts.items():
        sample = [pairs[i][1] for i in context_sample([h for h, _ in pairs])]
        evidence, signals = index.evidence_with_signals(sample, config)
        out[benchmark] = BenchmarkEvidence(sample, evidence.occupation, evidence.task,
                                           {k: v for k, v in signals.items() if k != "task_raw"})
    return out


def predict(selector: Selector, prompts: Sequence[TrainingPrompt], index: Any,
            evidence: dict[str, BenchmarkEvidence]) -> list[dict]:
    """Prediction rows (per_prompt_metrics layout) plus the probabilities thresholds are chosen on."""
    out = []
    contexts = {b: selector.context(e.texts, e.combined, e.task_relative, e.signals)
                for b, e in evidence.items() if any(p.benchmark == b for p in prompts)}
    for p in prompts:
        signals = {**p.signals, "task_raw": p.task_raw[None, :]}
        context = contexts[p.benchmark]
        sel = selector.select([p.text], p.combined[None, :], p.task_relative[None, :], signals, context)[0]
        ranking = [int(index.task_ids[j]) for j, _ in sel.ranking]
        text_logit = float(selector.fit.work.text_logit([p.text], work_dense_features(p.signals, [p.text]))[0])
        out.append({"benchmark": p.benchmark, "p_work": sel.p_work, "text_logit": text_logit,
                    "benchmark_logit": context.work_logit, "ranking": ranking,
                    "ranking_p": [q for _, q in sel.ranking],
                    "first_occupation": str(index.occupation_codes[sel.occupations[0][0]]) if sel.occupations
                    else None})
    return out


def decide(rows: Sequence[dict], work_threshold: float, task_threshold: float) -> list[dict]:
    """Apply thresholds: not work -> no tasks; work -> tasks with p >= threshold, at least the best one."""
    out = []
    for r in rows:
        is_work = r["p_work"] >= work_threshold
        kept = [t for t, q in zip(r["ranking"], r["ranking_p"], strict=True) if q >= task_threshold]
        out.append({"is_work": is_work, "tasks": (kept or r["ranking"][:1]) if is_work else [],
                    "ranking": r["ranking"], "first_occupation": r["first_occupation"]})
    return out


def _task_f1(kept: set[int], passes: Sequence[set[int]]) -> float:
    return float(np.mean([2 * len(kept & ref) / (len(kept) + len(ref)) if (kept or ref) else 1.0
                          for ref in passes]))


def _choose_work(rows: Sequence[dict], prompts: Sequence[TrainingPrompt]) -> tuple[float, float]:
    """(pool weight, work threshold) with the best work-decision accuracy (the judge's passes averaged)."""
    truth = np.array([p.is_work for p in prompts])
    text = np.array([r["text_logit"] for r in rows])
    pooled = np.array([r["benchmark_logit"] for r in rows])
    best = (-1.0, 1.0, 0.5)
    for weight in POOL_WEIGHTS:
        p = 1.0 / (1.0 + np.exp(-(weight * text + (1.0 - weight) * pooled)))
        for threshold in WORK_THRESHOLDS:
            decided = p >= threshold
            accuracy = float(np.mean(np.where(decided, truth, 1.0 - truth)))
            if accuracy > best[0] + 1e-12:
                best = (accuracy, weight, float(threshold))
    return best[1], best[2]


def _choose_task_threshold(rows: Sequence[dict], prompts: Sequence[TrainingPrompt]) -> float:
    """The task threshold with the best mean task F1 over the work prompts (the work decision is separate)."""
    scores = np.zeros(len(TASK_THRESHOLDS))
    n = 0
    for r, p in zip(rows, prompts, strict=True):
        passes = [set(t) for t in p.task_lists if t]
        if not passes:
            continue
        n += 1
        for k, threshold in enumerate(TASK_THRESHOLDS):
            kept = {t for t, q in zip(r["ranking"], r["ranking_p"], strict=True) if q >= threshold}
            scores[k] += _task_f1(kept or set(r["ranking"][:1]), passes)
    return float(TASK_THRESHOLDS[int(np.argmax(scores))]) if n else 0.2


def choose_thresholds(prompts: Sequence[TrainingPrompt], index: Any, evidence: dict[str, BenchmarkEvidence],
                      fitter: Callable[..., SelectorFit] = fit_selector, **fit_kwargs: Any
                      ) -> tuple[float, float, float]:
    """(pool weight, work threshold, task threshold) chosen on an inner cross-validation that holds out
    groups of whole benchmarks (so the thresholds, too, are chosen on benchmarks the fit has not seen): the
    work decision for accuracy, the task threshold for task F1 on work prompts."""
    benchmarks = sorted({p.benchmark for p in prompts})
    folds = [benchmarks[k::INNER_FOLDS] for k in range(INNER_FOLDS)]
    rows: list[dict] = []
    held: list[TrainingPrompt] = []
    for fold in folds:
        train = [p for p in prompts if p.benchmark not in fold]
        test = [p for p in prompts if p.benchmark in fold]
        if not train or not test:
            continue
        fit = fitter(train, index, evidence, work_threshold=0.5, task_threshold=0.2, **fit_kwargs)
        rows += predict(Selector(fit, index), test, index, evidence)
        held += test
    pool_weight, work_threshold = _choose_work(rows, held)
    return pool_weight, work_threshold, _choose_task_threshold(rows, held)


def fit_with_thresholds(prompts: Sequence[TrainingPrompt], index: Any, evidence: dict[str, BenchmarkEvidence],
                        **kwargs: Any) -> SelectorFit:
    """Thresholds by inner cross-validation, then the models refitted on all of `prompts`."""
    pool_weight, work_threshold, task_threshold = choose_thresholds(prompts, index, evidence, **kwargs)
    return fit_selector(prompts, index, evidence, work_threshold=work_threshold, task_threshold=task_threshold,
                        pool_weight=pool_weight, **kwargs)


def cross_validate(prompts: Sequence[TrainingPrompt], reference: pl.DataFrame, index: Any,
                   evidence: dict[str, BenchmarkEvidence], log: Callable[[str], None] | None = None,
                   held_out: Sequence[str] | None = None, **fit_kwargs: Any) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Leave one benchmark out: (per_prompt metrics of every held-out reference row, fold thresholds).
    The held-out label sets themselves are in `last_out_of_fold` (see out_of_fold_labels). `held_out`: run
    only these benchmarks' folds (each still trained on every other benchmark; the tests re-check a few)."""
    benchmarks = sorted({p.benchmark for p in prompts})
    if held_out is not None:
        benchmarks = [b for b in benchmarks if b in set(held_out)]
    per_prompt: list[pl.DataFrame] = []
    folds: list[dict] = []
    oof: list[dict] = []
    for benchmark in benchmarks:
        train = [p for p in prompts if p.benchmark != benchmark]
        test = [p for p in prompts if p.benchmark == benchmark]
        fit = fit_with_thresholds(train, index, evidence, **fit_kwargs)
        predicted = predict(Selector(fit, index), test, index, evidence)
        rows = decide(predicted, fit.work.threshold, fit.task_threshold)
        code_of = {int(t): str(index.occupation_codes[o]) for t, o in zip(index.task_ids, index.task_occupation,
                                                                         strict=True)}
        for p, r, raw in zip(test, rows, predicted, strict=True):
            p_of = dict(zip(raw["ranking"], raw["ranking_p"], strict=True))
            oof.append({"benchmark": p.benchmark, "prompt_hash": p.prompt_hash, "is_work": bool(r["is_work"]),
                        "labels": [[t, code_of[t], round(p_of[t], 6)] for t in r["tasks"]]})
        predictions = pl.DataFrame(
            [{"prompt_hash": p.prompt_hash, **r} for p, r in zip(test, rows, strict=True)],
            schema={"prompt_hash": pl.Utf8, "is_work": pl.Boolean, "tasks": pl.List(pl.Int64),
                    "ranking": pl.List(pl.Int64), "first_occupation": pl.Utf8})
        per_prompt.append(per_prompt_metrics(predictions,
                                             reference.filter(pl.col("benchmark") == benchmark)))
        folds.append({"held_out": benchmark, "work_threshold": fit.work.threshold,
                      "pool_weight": fit.work.pool_weight, "task_threshold": fit.task_threshold})
        if log:
            log(f"fold {benchmark}: work >= {fit.work.threshold:.3f} (pool weight {fit.work.pool_weight}), "
                f"task >= {fit.task_threshold:.3f}")
    last_out_of_fold.clear()
    last_out_of_fold.extend(oof)
    return pl.concat(per_prompt), pl.DataFrame(folds)


# The held-out label sets of the last cross_validate call: {benchmark, prompt_hash, is_work, labels:
# [[task_id, onet_soc_code, p_exercised], ...]} per reference prompt, each from the fold that never saw its
# benchmark. Written next to the fit (selector_oof.json) so the estimators can treat the judge-sampled texts
# as the labeler would label an unseen benchmark, not as texts it was fitted on.
last_out_of_fold: list[dict] = []


def cv_summary(per_prompt: pl.DataFrame, split: str | None = "dev", n_boot: int = 1000) -> pl.DataFrame:
    """summarise_metrics of the held-out rows (of one split, or all when split is None)."""
    rows = per_prompt if split is None else per_prompt.filter(pl.col("split") == split)
    return summarise_metrics(rows, n_boot=n_boot)
