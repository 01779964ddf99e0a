"""Fitting the offline labeler's calibrated selector (models/labeling/selector.py) on the judge's labels.

`fit_selector` fits the work gate, the occupation model and the task model from reference prompts
(`TrainingPrompt`: a prompt's retriever evidence, text and the judge's passes) and the context samples of their
benchmarks (`BenchmarkEvidence`); thresholds are chosen by cross-validation (models/labeling/selector_cv.py).
Run by `python -m pipelines.fit_labeler`; the result is a `SelectorFit` written to `selector_fit.json`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from models.labeling.selector import (
    OCCUPATION_FEATURES,
    TASK_FEATURES,
    WORK_DENSE_FEATURES,
    WORK_TFIDF,
    BenchmarkContext,
    IndexShape,
    LinearModel,
    SelectorFit,
    WorkModel,
    make_context,
    occupation_candidates,
    occupation_features,
    pick_counts,
    priors_from_counts,
    task_features,
    work_dense_features,
)

if TYPE_CHECKING:
    from sklearn.feature_extraction.text import TfidfVectorizer


@dataclass
class TrainingPrompt:
    """One reference prompt with the retriever's evidence and its text: what fitting needs."""

    benchmark: str
    prompt_hash: str
    text: str
    combined: np.ndarray  # occupations
    task_raw: np.ndarray  # tasks
    task_relative: np.ndarray  # tasks
    signals: dict[str, np.ndarray]  # each 1 x occupations (row 0), plus document_raw
    is_work: float  # share of passes judging it work
    occupation_lists: list[list[str]]  # per pass
    task_lists: list[list[int]]  # per pass


def fit_work_model(prompts: Sequence[TrainingPrompt], c: float = 1.0) -> tuple[TfidfVectorizer, LinearModel,
                                                                                np.ndarray]:
    texts = [p.text for p in prompts]
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    vec = TfidfVectorizer(**WORK_TFIDF, min_df=2)
    words = vec.fit_transform(texts)
    dense = np.vstack([work_dense_features(p.signals, [p.text]) for p in prompts])
    mean, scale = dense.mean(axis=0), dense.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    x = sp.hstack([words, sp.csr_matrix((dense - mean) / scale)]).tocsr()
    y = np.array([p.is_work >= 0.5 for p in prompts], dtype=int)
    model = LogisticRegression(C=c, max_iter=3000, class_weight="balanced", solver="liblinear",
                               random_state=0).fit(x, y)
    coef = model.coef_[0]
    n_words = words.shape[1]
    dense_model = LinearModel(WORK_DENSE_FEATURES, mean, scale, coef[n_words:].astype(float),
                              float(model.intercept_[0]))
    return vec, dense_model, coef[:n_words].astype(float)


def work_model(prompts: Sequence[TrainingPrompt], threshold: float, pool_weight: float = 1.0,
               c: float = 1.0) -> WorkModel:
    vec, dense, word_coef = fit_work_model(prompts, c)
    return WorkModel(dict(vec.vocabulary_), vec.idf_.astype(float), word_coef, dense, threshold, pool_weight)


@dataclass(frozen=True)
class BenchmarkEvidence:
    """The retriever's evidence on a benchmark's context sample: what a BenchmarkContext is made of, kept
    so that each fit (whose work model differs) can pool its own work logit."""

    texts: list[str]
    combined: np.ndarray
    task_relative: np.ndarray
    signals: dict[str, np.ndarray]


def contexts_for(work: WorkModel, evidence: dict[str, BenchmarkEvidence]) -> dict[str, BenchmarkContext]:
    """Every benchmark's context under one work model."""
    return {b: make_context(e.combined, e.task_relative,
                            work.text_logit(e.texts, work_dense_features(e.signals, e.texts)))
            for b, e in evidence.items()}


def fit_selector(prompts: Sequence[TrainingPrompt], index: Any, benchmark_evidence: dict[str, BenchmarkEvidence],
                 *, work_threshold: float, task_threshold: float, pool_weight: float = 1.0,
                 k_candidates: int = 40, k_occupations: int = 4, c: float = 1.0) -> SelectorFit:
    """Fit the three models on reference prompts (thresholds given: choose them by cross-validation).
    `benchmark_evidence`: the context sample of each benchmark the prompts come from."""
    work = work_model(prompts, work_threshold, pool_weight, c)
    contexts = contexts_for(work, benchmark_evidence)
    shape = IndexShape.of(index)
    code_row = {str(c_): i for i, c_ in enumerate(shape.occupation_codes)}
    task_row = {int(t): j for j, t in enumerate(shape.task_ids)}
    occ_lists = [o for p in prompts for o in p.occupation_lists]
    task_lists = [t for p in prompts for t in p.task_lists]
    weights = [1.0 / len(p.occupation_lists) for p in prompts for _ in p.occupation_lists]
    occ_picks, group_picks, task_picks = pick_counts(occ_lists, task_lists, weights)
    priors = priors_from_counts(shape, occ_picks, group_picks, task_picks)

    occ_x, occ_y, occ_w = [], [], []
    work_prompts = [p for p in prompts if p.is_work > 0]
    for p in work_prompts:
        context = contexts[p.benchmark]
        candidates = occupation_candidates(p.combined, k_candidates, context)
        feats = occupation_features(p.signals, p.combined[None, :], 0, candidates, priors, context)
        for occupations in p.occupation_lists:
            if not occupations:
                continue
            gold = {code_row[o] for o in occupations if o in code_row}
            occ_x.append(feats)
            occ_y.append(np.isin(candidates, list(gold)).astype(int))
            occ_w.append(np.full(len(candidates), 1.0 / len(p.occupation_lists)))
    occupation = LinearModel.fit(OCCUPATION_FEATURES, np.vstack(occ_x), np.concatenate(occ_y), c,
                                 np.concatenate(occ_w))

    task_x, task_y, task_w = [], [], []
    for p in work_prompts:
        context = contexts[p.benchmark]
        candidates = occupation_candidates(p.combined, k_candidates, context)
        p_occ = occupation.predict(
            occupation_features(p.signals, p.combined[None, :], 0, candidates, priors, context))
        order = np.argsort(-p_occ, kind="stable")[:k_occupations]
        feats, rows = task_features(shape, p.task_raw, p.task_relative, candidates[order], p_occ[order], priors,
                                    context)
        for tasks in p.task_lists:
            if not tasks:
                continue
            gold = {task_row[t] for t in tasks if t in task_row}
            task_x.append(feats)
            task_y.append(np.isin(rows, list(gold)).astype(int))
            task_w.append(np.full(len(rows), 1.0 / len(p.task_lists)))
    task = LinearModel.fit(TASK_FEATURES, np.vstack(task_x), np.concatenate(task_y), c, np.concatenate(task_w))
    return SelectorFit(work, occupation, task, occ_picks, group_picks, task_picks, task_threshold,
                       k_candidates, k_occupations)
