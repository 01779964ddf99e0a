"""The neighbour stack's decisions for a batch of texts of one benchmark, with the feature rows built as arrays
(issue 25: the step on by default needs it cheap).

The same features as models/labeling/stacking_features.py builds per text (`candidates`, which the fit and the
cross-validation read), value for value: the candidates of every text are the non-zero cells of texts x codes
(texts x tasks) matrices, each feature one array operation over them, and the per-text models apply
`LinearModel.predict` to each text's own rows (a slice of the stacked rows), so every probability is the one the
per-text path computes (a matrix product of other shape could round differently). tests/test_neighbours.py
compares both paths on the mirrored benchmarks' judged texts.

What does not depend on the neighbours (the selector's labels, the retriever's ranking: `TextPieces`) is read
once per text and reused across calls (the split checks relabel the same judged texts in every split).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from models.labeling.neighbours import Votes
from models.labeling.selector import LinearModel
from models.labeling.stacking_features import (
    TASK_FEATURES,
    BenchmarkContext,
    retriever_margin,
    retriever_scores,
    retriever_tasks,
)

CHUNK_TEXTS = 256  # texts whose texts x codes matrices are held at once (memory: a few MiB)
_P_OCCUPATION = TASK_FEATURES.index("p_occupation")
_IS_FIRST = TASK_FEATURES.index("is_first_occupation")


@dataclass(frozen=True)
class TextPieces:
    """What the features read of a text's selector labels and retriever ranking (neither depends on the
    neighbours): occupation_candidates' and task_candidates' dictionaries, once per text."""

    selector_occupation: dict[str, float]  # code -> the selector's best p in it
    selector_first: str | None
    selector_task: dict[int, float]  # task -> the selector's p (the last label of a task wins, as in a dict)
    retriever_score: dict[str, float]  # retriever_scores
    retriever_first: str | None
    margin: float
    retriever_task: dict[int, float]  # retriever_tasks
    retriever_codes: tuple[str, ...]  # the codes of retriever_task's tasks that have one


def text_pieces(labels: Sequence[tuple[int, str, float]], ranking: Sequence[tuple], task_code: Mapping[int, str]
                ) -> TextPieces:
    selector_p: dict[str, float] = {}
    for t, label_code, p in labels:
        code = task_code.get(int(t), label_code)
        selector_p[code] = max(selector_p.get(code, 0.0), float(p))
    first = task_code.get(int(labels[0][0]), labels[0][1]) if labels else None
    extra = retriever_tasks(ranking)
    return TextPieces(selector_p, first, {int(t): float(p) for t, _, p in labels}, retriever_scores(ranking),
                      str(ranking[0][0]) if ranking else None, retriever_margin(ranking), extra,
                      tuple(task_code[t] for t in extra if t in task_code))


@dataclass(frozen=True)
class TextRows:
    """The candidates' feature rows of a batch of texts, stacked: text i's occupation rows are
    occupation_x[occupation_start[i]:occupation_start[i + 1]] (codes in occupation_codes), its task rows likewise."""

    occupation_start: np.ndarray
    occupation_codes: list[str]
    occupation_x: np.ndarray
    task_start: np.ndarray
    tasks: np.ndarray  # task ids
    task_codes: list[str]
    task_occupation: np.ndarray  # per task row: its occupation's row among its text's occupation rows
    task_x: np.ndarray


def work_rows(votes: Votes, selector_work: np.ndarray, c: BenchmarkContext) -> np.ndarray:
    """texts x WORK_FEATURES (stacking_features.work_features of each text)."""
    vote, similarity, selected = votes.work, votes.max_similarity, selector_work.astype(float)
    split = 4.0 * vote * (1.0 - vote)
    return np.column_stack([vote, selected, vote * similarity, similarity, selected * split, c.text_logit,
                            c.text_logit * split, c.work_above, c.work_below, c.work_share, c.quantile_gap])


def _rank_within(text: np.ndarray, votes: np.ndarray) -> np.ndarray:
    """Each candidate's position among its text's candidates by vote, highest first, ties in candidate order
    (argsort(-votes, kind="stable") per text)."""
    order = np.lexsort((np.arange(len(votes)), -votes, text))
    rank = np.empty(len(votes))
    starts = np.searchsorted(text[order], text[order], side="left")
    rank[order] = np.arange(len(votes)) - starts
    return rank


def text_rows(votes: Votes, rows: np.ndarray, pieces: Sequence[TextPieces], c: BenchmarkContext,
              task_code: Mapping[int, str]) -> TextRows:
    """The occupation and task candidates of the texts `rows` of `votes` (pieces[i] and context row rows[i])."""
    n = len(rows)
    sample_codes = [str(x) for x in votes.codes.tolist()]
    sample_tasks = [int(t) for t in votes.task_ids.tolist()]
    sample_task_codes = [task_code.get(t) for t in sample_tasks]
    universe = sorted(set(sample_codes) | {x for x in sample_task_codes if x is not None}
                      | {x for p in pieces for x in p.selector_occupation} | {x for p in pieces for x in p.retriever_codes})
    col = {x: i for i, x in enumerate(universe)}
    width = len(universe)
    occupation_vote = votes.occupation[rows]
    first_vote_rows = votes.first_occupation[rows]
    task_vote = votes.task[rows]
    similarity = votes.max_similarity[rows]
    top = occupation_vote.max(axis=1) if occupation_vote.shape[1] else np.zeros(n)

    vote = np.zeros((n, width))
    first_vote = np.zeros((n, width))
    if sample_codes:
        at = [col[x] for x in sample_codes]
        vote[:, at] = occupation_vote
        first_vote[:, at] = first_vote_rows
    task_sum = np.zeros((n, width))
    has_task = np.zeros((n, width), dtype=bool)
    for j, code in enumerate(sample_task_codes):  # in task order: the per-text sum's order
        if code is not None:
            v = task_vote[:, j]
            positive = v > 0
            task_sum[:, col[code]] += np.where(positive, v, 0.0)
            has_task[:, col[code]] |= positive
    selector_p = np.zeros((n, width))
    has_selector = np.zeros((n, width), dtype=bool)
    selector_first = np.zeros((n, width))
    retriever_score = np.zeros((n, width))
    retriever_first = np.zeros((n, width))
    extra = np.zeros((n, width), dtype=bool)
    margin = np.zeros(n)
    for i, p in enumerate(pieces):
        for x, value in p.selector_occupation.items():
            selector_p[i, col[x]] = value
            has_selector[i, col[x]] = True
        if p.selector_first is not None:
            selector_first[i, col[p.selector_first]] = 1.0
        for x, value in p.retriever_score.items():
            if x in col:
                retriever_score[i, col[x]] = value
        if p.retriever_first is not None and p.retriever_first in col:
            retriever_first[i, col[p.retriever_first]] = 1.0
        for x in p.retriever_codes:
            extra[i, col[x]] = True
        margin[i] = p.margin
    text, at = np.nonzero((vote > 0) | has_task | has_selector | extra)
    v = vote[text, at]
    t_top = top[text]
    t_similarity = similarity[text]
    s_p, s_first = selector_p[text, at], selector_first[text, at]
    r_score, r_first = retriever_score[text, at], retriever_first[text, at]
    r_trust, s_trust = c.retriever_trust[rows][text], c.selector_trust[rows][text]
    occupation_x = np.column_stack([
        v, first_vote[text, at], s_p, s_first, task_sum[text, at], v * t_similarity, t_similarity,
        np.log1p(_rank_within(text, v)), t_top, s_first * (1.0 - t_top), s_p * (1.0 - t_top), r_score, r_first,
        r_first * (1.0 - t_top), r_score * (1.0 - t_top), r_first * margin[text], r_first * r_trust,
        r_score * r_trust, s_first * s_trust, s_p * s_trust])
    occupation_start = np.searchsorted(text, np.arange(n + 1))
    occupation_codes = [universe[a] for a in at.tolist()]
    # the row of each (text, code) among its text's occupation rows, for the tasks' occupations
    occupation_row = np.full((n, width), -1, dtype=np.int64)
    occupation_row[text, at] = np.arange(len(text)) - occupation_start[text]

    task_universe = sorted(t for t in set(sample_tasks) | {t for p in pieces for t in p.selector_task}
                           | {t for p in pieces for t in p.retriever_task} if t in task_code)
    task_col = {t: i for i, t in enumerate(task_universe)}
    task_width = len(task_universe)
    t_vote = np.zeros((n, task_width))
    in_sample = [(j, task_col[t]) for j, t in enumerate(sample_tasks) if t in task_col]
    if in_sample:
        t_vote[:, [w for _, w in in_sample]] = np.where(task_vote[:, [j for j, _ in in_sample]] > 0,
                                                        task_vote[:, [j for j, _ in in_sample]], 0.0)
    t_selector = np.zeros((n, task_width))
    in_selector = np.zeros((n, task_width), dtype=bool)
    t_extra = np.zeros((n, task_width))
    in_extra = np.zeros((n, task_width), dtype=bool)
    for i, p in enumerate(pieces):
        for t, value in p.selector_task.items():
            if t in task_col:
                t_selector[i, task_col[t]] = value
                in_selector[i, task_col[t]] = True
        for t, value in p.retriever_task.items():
            if t in task_col:
                t_extra[i, task_col[t]] = value
                in_extra[i, task_col[t]] = True
    task_text, task_at = np.nonzero((t_vote > 0) | in_selector | in_extra)
    tasks = np.asarray(task_universe, dtype=np.int64)[task_at] if len(task_at) else np.zeros(0, dtype=np.int64)
    task_codes = [task_code[int(t)] for t in tasks.tolist()]
    sample_col = {x: j for j, x in enumerate(sample_codes)}
    # the neighbours' vote for each task's occupation (0 for an occupation no neighbour lists)
    code_vote = np.zeros(len(tasks))
    listed = np.array([x in sample_col for x in task_codes], dtype=bool)
    if listed.any():
        code_vote[listed] = occupation_vote[task_text[listed], [sample_col[x] for x, k in zip(task_codes, listed,
                                                                                           strict=True) if k]]
    tv = t_vote[task_text, task_at]
    ts = t_selector[task_text, task_at]
    zeros = np.zeros(len(tasks))
    task_x = np.column_stack([
        tv, code_vote, zeros, zeros, ts, in_selector[task_text, task_at].astype(float), tv * similarity[task_text],
        similarity[task_text], np.log1p(_rank_within(task_text, tv)), votes.work[rows][task_text],
        ts * (1.0 - top[task_text]), t_extra[task_text, task_at]])
    task_occupation = occupation_row[task_text, [col[x] for x in task_codes]] if len(tasks) else \
        np.zeros(0, dtype=np.int64)
    return TextRows(occupation_start, occupation_codes, occupation_x,
                    np.searchsorted(task_text, np.arange(n + 1)), tasks, task_codes, task_occupation, task_x)


@dataclass(frozen=True)
class TextScores:
    """One text's three models' probabilities (stacking.Scores' fields)."""

    p_work: float
    codes: list[str]
    p_occupation: np.ndarray
    tasks: list[int]
    task_codes: list[str]
    p_task: np.ndarray
    first: str | None


def score_rows(models: tuple[LinearModel, LinearModel, LinearModel], work_x: np.ndarray, r: TextRows, i: int
               ) -> TextScores:
    """stacking.score of text i of `r` (`work_x`: its 1 x WORK_FEATURES row): each model applied to the text's
    own rows, as the per-text path does."""
    work, occupation, task = models
    p_work = float(work.predict(work_x)[0])
    a, b = int(r.occupation_start[i]), int(r.occupation_start[i + 1])
    codes = r.occupation_codes[a:b]
    p_occ = occupation.predict(r.occupation_x[a:b]) if codes else np.zeros(0)
    s, e = int(r.task_start[i]), int(r.task_start[i + 1])
    tasks = r.tasks[s:e].tolist()
    first = -1
    if tasks:
        rows = np.unique(r.task_occupation[s:e])
        first = int(rows[int(np.argmax(p_occ[rows]))])
        x = r.task_x[s:e].copy()
        x[:, _P_OCCUPATION] = p_occ[r.task_occupation[s:e]]
        x[:, _IS_FIRST] = (r.task_occupation[s:e] == first).astype(float)
        p_task = task.predict(x)
    else:
        p_task = np.zeros(0)
    return TextScores(p_work, codes, p_occ, tasks, r.task_codes[s:e], p_task, codes[first] if first >= 0 else None)


def chunks(rows: np.ndarray, size: int = CHUNK_TEXTS) -> list[np.ndarray]:
    return [rows[start:start + size] for start in range(0, len(rows), size)]
