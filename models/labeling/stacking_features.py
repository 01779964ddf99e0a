"""What the neighbour stack (models/labeling/stacking.py) reads of a text: its evidence (the selector's labels
and decision, the neighbours' votes, the text signals and where they stand among the benchmark's judged texts)
and the feature rows of its three models (work, occupation candidates, task candidates).

Split from stacking.py (issue 25): the features here, the fitted stack, its decisions and the pipeline step
there. Everything here is computed from the text or from its benchmark's *other* judged texts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from models.labeling.neighbours import (
    BenchmarkSample,
    Votes,
    first_occupation_trust,
    work_shares_by_logit,
)

# `*_x_split`: the selector's evidence times how split the neighbours are (1 - the top occupation's vote, or
# 4 v (1 - v) for the work vote), so the selector speaks where the neighbours disagree (mixed benchmarks).
# `text_logit`: the selector's prompt-level work logit before benchmark pooling; `work_above` / `work_below`: the
# work share of the benchmark's other judged texts reading more / less like work (neighbours.work_shares_by_logit)
WORK_FEATURES = ("work_vote", "selector_work", "vote_x_similarity", "max_similarity", "selector_work_x_split",
                 "text_logit", "text_logit_x_split", "work_above", "work_below", "work_share", "quantile_gap")
# `retriever_*`: the offline retriever's occupation ranking (models.labeling.offline, fitted on no judge label): it
# reads a role the text names ("You are a staff accountant"), where a benchmark's texts each name another one.
OCCUPATION_FEATURES = ("occupation_vote", "first_vote", "selector_p", "selector_first", "task_vote_sum",
                       "vote_x_similarity", "max_similarity", "log_vote_rank", "top_vote",
                       "selector_first_x_split", "selector_p_x_split", "retriever_score", "retriever_first",
                       "retriever_first_x_split", "retriever_score_x_split", "retriever_margin_x_first",
                       "retriever_first_x_trust", "retriever_score_x_trust", "selector_first_x_trust",
                       "selector_p_x_trust")
TASK_FEATURES = ("task_vote", "occupation_vote", "p_occupation", "is_first_occupation", "selector_p",
                 "selector_kept", "vote_x_similarity", "max_similarity", "log_vote_rank", "work_vote",
                 "selector_p_x_split", "retriever_task")

SelectorLabels = Mapping[str, Sequence[tuple[int, str, float]]]  # prompt_hash -> (task, code, p) best first


@dataclass(frozen=True)
class TextEvidence:
    """What the stack reads of one text: the selector's labels and decision, and the neighbours' votes."""

    selector_labels: Sequence[tuple[int, str, float]]
    selector_work: bool
    selector_p_work: float | None
    work_vote: float
    max_similarity: float
    codes: np.ndarray
    occupation_vote: np.ndarray
    first_vote: np.ndarray
    task_ids: np.ndarray
    task_vote: np.ndarray
    retriever: Sequence[tuple[str, float]] = ()  # the retriever's best occupations (code, score), best first
    # how often the retriever's / the selector's first occupation is one the judge lists, over the benchmark's
    # other judged texts (leave this text out): whether this benchmark's texts name their occupation
    retriever_trust: float = 0.0
    selector_trust: float = 0.0
    text_logit: float = 0.0
    work_above: float = 0.5
    work_below: float = 0.5
    work_share: float = 0.5
    quantile_gap: float = 0.0


def evidence_of(votes: Votes, row: int, labels: Sequence[tuple[int, str, float]], is_work: bool,
                p_work: float | None, context: BenchmarkContext | None = None) -> TextEvidence:
    c = context
    return TextEvidence(labels, is_work, p_work, float(votes.work[row]), float(votes.max_similarity[row]),
                        votes.codes, votes.occupation[row], votes.first_occupation[row], votes.task_ids,
                        votes.task[row], *((c.retriever[row], float(c.retriever_trust[row]),
                                            float(c.selector_trust[row]), float(c.text_logit[row]),
                                            float(c.work_above[row]), float(c.work_below[row]),
                                            float(c.work_share[row]), float(c.quantile_gap[row])) if c else ()))


# prompt_hash -> (the selector's text work logit, the retriever's best occupations): what the step reads of a
# text besides its labels (computed from the text alone; for a judged text of the reference, from the selector
# fold that never saw its benchmark)
TextSignals = Mapping[str, tuple[float, Sequence[tuple]]]


@dataclass(frozen=True)
class BenchmarkContext:
    """Per query text (rows): its signals and where they stand among the benchmark's judged texts."""

    retriever: list[tuple[tuple[str, float], ...]]
    retriever_trust: np.ndarray
    selector_trust: np.ndarray
    text_logit: np.ndarray
    work_above: np.ndarray
    work_below: np.ndarray
    work_share: np.ndarray
    quantile_gap: np.ndarray


def benchmark_context(sample: BenchmarkSample, hashes: Sequence[str], selector_labels: SelectorLabels,
                      signals: TextSignals, task_code: Mapping[int, str]) -> BenchmarkContext:
    # only the query texts' and the judged texts' rankings are read (signals may hold every judged text's)
    wanted = [h for h in dict.fromkeys([*hashes, *(str(x) for x in sample.hashes.tolist())]) if h in signals]
    retriever = {h: tuple((str(x[0]), float(x[1]), int(x[2]) if len(x) > 2 else -1) for x in signals[h][1])
                 for h in wanted}
    trust = judged_trust(sample, hashes, selector_labels, retriever, task_code)
    logit = np.array([float(signals[h][0]) if h in signals else 0.0 for h in hashes])
    judged_logit = {str(h): float(signals[h][0]) for h in sample.hashes.tolist() if h in signals}
    shares = work_shares_by_logit(sample, hashes, logit, judged_logit)
    return BenchmarkContext([retriever.get(h, ()) for h in hashes], trust[0], trust[1], logit, *shares)


def work_features(e: TextEvidence) -> np.ndarray:
    # the selector's decision, not its p_work: its cross-validated labels (what the stack is fitted on)
    # record the decision only
    split = 4.0 * e.work_vote * (1.0 - e.work_vote)
    return np.array([e.work_vote, float(e.selector_work), e.work_vote * e.max_similarity, e.max_similarity,
                     float(e.selector_work) * split, e.text_logit, e.text_logit * split, e.work_above,
                     e.work_below, e.work_share, e.quantile_gap])


def occupation_candidates(e: TextEvidence, task_code: Mapping[int, str]) -> tuple[list[str], np.ndarray]:
    """(codes, candidates x OCCUPATION_FEATURES): every occupation the neighbours list, or that a neighbour's
    task or a selector label belongs to."""
    selector_p: dict[str, float] = {}
    for t, label_code, p in e.selector_labels:
        code = task_code.get(int(t), label_code)  # the task's own occupation, as task_candidates reads it
        selector_p[code] = max(selector_p.get(code, 0.0), float(p))
    first = task_code.get(int(e.selector_labels[0][0]), e.selector_labels[0][1]) if e.selector_labels else None
    vote = dict(zip(e.codes.tolist(), e.occupation_vote.tolist(), strict=True))
    first_vote = dict(zip(e.codes.tolist(), e.first_vote.tolist(), strict=True))
    task_sum: dict[str, float] = {}
    for t, v in zip(e.task_ids.tolist(), e.task_vote.tolist(), strict=True):
        if v > 0:
            code = task_code.get(int(t))
            if code is not None:
                task_sum[code] = task_sum.get(code, 0.0) + v
    extra = {task_code[t] for t in retriever_tasks(e.retriever) if t in task_code}
    codes = sorted({c for c, v in vote.items() if v > 0} | set(task_sum) | set(selector_p) | extra)
    if not codes:
        return [], np.zeros((0, len(OCCUPATION_FEATURES)))
    votes = np.array([vote.get(c, 0.0) for c in codes])
    rank = np.empty(len(codes))
    rank[np.argsort(-votes, kind="stable")] = np.arange(len(codes))
    top = float(e.occupation_vote.max()) if len(e.occupation_vote) else 0.0
    sel_p = np.array([selector_p.get(c, 0.0) for c in codes])
    sel_first = np.array([float(c == first) for c in codes])
    retriever = retriever_scores(e.retriever)
    ret_score = np.array([retriever.get(c, 0.0) for c in codes])
    ret_first = np.array([float(bool(e.retriever) and c == e.retriever[0][0]) for c in codes])
    margin = retriever_margin(e.retriever)
    x = np.column_stack([votes, [first_vote.get(c, 0.0) for c in codes], sel_p, sel_first,
                         [task_sum.get(c, 0.0) for c in codes], votes * e.max_similarity,
                         np.full(len(codes), e.max_similarity), np.log1p(rank), np.full(len(codes), top),
                         sel_first * (1.0 - top), sel_p * (1.0 - top), ret_score, ret_first,
                         ret_first * (1.0 - top), ret_score * (1.0 - top), ret_first * margin,
                         ret_first * e.retriever_trust, ret_score * e.retriever_trust,
                         sel_first * e.selector_trust, sel_p * e.selector_trust])
    return codes, x


RETRIEVER_TOP = 10  # the retriever's occupations the stack reads
# the retriever's best occupations whose best task (by the retriever's task evidence) becomes a candidate: a text
# whose occupation neither its neighbours nor the selector name can still get it
RETRIEVER_CANDIDATES = 3


def retriever_tasks(ranking: Sequence[tuple]) -> dict[int, float]:
    """task -> the retriever's relative score of its occupation, for the best task of each of the retriever's
    RETRIEVER_CANDIDATES best occupations (ranking entries (code, score, best task); no task: -1)."""
    scores = retriever_scores(ranking)
    return {int(x[2]): scores.get(str(x[0]), 0.0) for x in ranking[:RETRIEVER_CANDIDATES]
            if len(x) > 2 and int(x[2]) >= 0}


def judged_trust(sample: BenchmarkSample, hashes: Sequence[str], selector_labels: SelectorLabels,
                 retriever: Mapping[str, Sequence[tuple[str, float]]], task_code: Mapping[int, str]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(retriever trust, selector trust) of each query text (neighbours.first_occupation_trust) from the
    retriever's and the selector's first occupation of the sample's judged texts."""
    judged = [str(h) for h in sample.hashes.tolist()]
    retriever_first = {h: str(retriever[h][0][0]) for h in judged if retriever.get(h)}
    selector_first = {h: task_code.get(int(selector_labels[h][0][0]), str(selector_labels[h][0][1]))
                      for h in judged if selector_labels.get(h)}
    return (first_occupation_trust(sample, hashes, retriever_first),
            first_occupation_trust(sample, hashes, selector_first))


def retriever_scores(ranking: Sequence[tuple[str, float]]) -> dict[str, float]:
    """code -> the retriever's score scaled to its best (1.0), for its RETRIEVER_TOP best occupations."""
    top = [(str(x[0]), float(x[1])) for x in ranking[:RETRIEVER_TOP] if x[1] > 0]
    best = top[0][1] if top else 1.0
    return {c: s / best for c, s in top}


def retriever_margin(ranking: Sequence[tuple[str, float]]) -> float:
    """How far the retriever's best occupation leads its second (1 - second / best; 1 with a single one)."""
    if not ranking or ranking[0][1] <= 0:
        return 0.0
    return 1.0 - (float(ranking[1][1]) / float(ranking[0][1]) if len(ranking) > 1 else 0.0)


def task_candidates(e: TextEvidence, task_code: Mapping[int, str]) -> tuple[list[int], np.ndarray]:
    """(task ids, candidates x TASK_FEATURES): every task a neighbour keeps or the selector labels. The
    columns p_occupation and is_first_occupation are left at 0: `score` fills them from the occupation model."""
    selector_p = {int(t): float(p) for t, _, p in e.selector_labels}
    vote = {int(t): float(v) for t, v in zip(e.task_ids.tolist(), e.task_vote.tolist(), strict=True) if v > 0}
    extra = retriever_tasks(e.retriever)
    tasks = sorted(t for t in set(vote) | set(selector_p) | set(extra) if t in task_code)
    if not tasks:
        return [], np.zeros((0, len(TASK_FEATURES)))
    occupation_vote = dict(zip(e.codes.tolist(), e.occupation_vote.tolist(), strict=True))
    votes = np.array([vote.get(t, 0.0) for t in tasks])
    rank = np.empty(len(tasks))
    rank[np.argsort(-votes, kind="stable")] = np.arange(len(tasks))
    codes = [task_code[t] for t in tasks]
    zeros = np.zeros(len(tasks))
    top = float(e.occupation_vote.max()) if len(e.occupation_vote) else 0.0
    sel_p = np.array([selector_p.get(t, 0.0) for t in tasks])
    x = np.column_stack([votes, [occupation_vote.get(c, 0.0) for c in codes], zeros, zeros, sel_p,
                         [float(t in selector_p) for t in tasks], votes * e.max_similarity,
                         np.full(len(tasks), e.max_similarity), np.log1p(rank), np.full(len(tasks), e.work_vote),
                         sel_p * (1.0 - top), [extra.get(t, 0.0) for t in tasks]])
    return tasks, x


@dataclass(frozen=True)
class Candidates:
    """A text's feature rows, computed once (they do not depend on the fitted models)."""

    work_x: np.ndarray  # WORK_FEATURES
    codes: list[str]
    occupation_x: np.ndarray  # codes x OCCUPATION_FEATURES
    tasks: list[int]
    task_codes: list[str]
    task_occupation: np.ndarray  # per task: its occupation's row in `codes`
    task_x: np.ndarray  # tasks x TASK_FEATURES (p_occupation, is_first_occupation filled by `score`)


def candidates(e: TextEvidence, task_code: Mapping[int, str]) -> Candidates:
    codes, ox = occupation_candidates(e, task_code)
    tasks, tx = task_candidates(e, task_code)
    task_codes = [task_code[t] for t in tasks]
    row = {c: i for i, c in enumerate(codes)}
    return Candidates(work_features(e), codes, ox, tasks, task_codes,
                      np.array([row[c] for c in task_codes], dtype=np.int64), tx)


_P_OCCUPATION = TASK_FEATURES.index("p_occupation")
_IS_FIRST = TASK_FEATURES.index("is_first_occupation")


def with_occupation(c: Candidates, p_occupation: np.ndarray) -> np.ndarray:
    """The task rows with the occupation model's P(listed) of each task's occupation and the first flag."""
    x = c.task_x.copy()
    if len(c.tasks):
        x[:, _P_OCCUPATION] = p_occupation[c.task_occupation]
        x[:, _IS_FIRST] = (c.task_occupation == first_with_task(c, p_occupation)).astype(float)
    return x


def first_with_task(c: Candidates, p_occupation: np.ndarray) -> int:
    """Row in c.codes of the most probable occupation that has a task candidate (-1 without one): the first
    occupation, which the rank-1 label then names."""
    if not len(c.tasks):
        return -1
    rows = np.unique(c.task_occupation)
    return int(rows[int(np.argmax(p_occupation[rows]))])
