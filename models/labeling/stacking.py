"""The labeler step that learns from a benchmark's judged texts: the calibrated selector's labels stacked
with the votes of the text's nearest judged texts of the same benchmark (models/labeling/neighbours.py).

Three small logistic models (models.labeling.selector.LinearModel), fitted on the judged texts with every
feature out of sample (the selector's labels from the fold that never saw the text's benchmark, the votes
from the other judged texts of its benchmark; `pipelines.fit_labeler`):

1. **work**: P(occupational work) from the neighbours' work vote, the selector's decision and the nearest
   neighbour's similarity.
2. **occupations**: over the occupations the neighbours list or the selector's labels name, P(the judge
   lists it) from the neighbours' (first-)occupation votes, the selector's best p in it and whether it is the
   selector's first, and the similarity. The most probable is the text's first occupation.
3. **tasks**: over the tasks the neighbours keep or the selector labels, P(the judge keeps it) from the
   neighbours' task vote, the vote for its occupation, the selector's p, the occupation model's P and the
   similarity. A work text keeps the tasks with p >= `task_threshold` (at most `max_tasks`, at least its best);
   rank 1 is the best task of the first occupation.

The feature rows are models/labeling/stacking_features.py. A benchmark without judged texts keeps the
selector's labels unchanged (the fallback). Hyperparameters
(k, power, thresholds) are chosen by cross-validation over whole benchmarks (models/labeling/stacking_cv.py),
so nothing here is tuned to one benchmark.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.labeling.neighbours import BenchmarkSample, Votes, neighbour_votes, query_similarity
from models.labeling.selector import LinearModel
from models.labeling.stacking_fast import chunks, score_rows, text_pieces, text_rows, work_rows
from models.labeling.stacking_features import (
    WORK_FEATURES,
    BenchmarkContext,
    Candidates,
    SelectorLabels,
    TextSignals,
    benchmark_context,
    candidates,
    evidence_of,
    first_with_task,
    with_occupation,
    work_features,
)

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Decision:
    """The stacked labeler's decision for one text."""

    is_work: bool
    p_work: float
    labels: list[tuple[int, str, float]]  # (task, code, p_exercised) of the label set, rank order
    first_occupation: str | None
    ranking: list[tuple[int, str, float]]  # every candidate task, best first


@dataclass(frozen=True)
class StackFit:
    """The fitted stack: neighbour settings, three models, the thresholds, the selector fit it stacks on."""

    k: int
    power: float
    work: LinearModel
    occupation: LinearModel
    task: LinearModel
    work_threshold: float
    task_threshold: float
    max_tasks: int
    selector_version: str
    work_rule: str = "model"  # "model" (p_work >= work_threshold) or "vote" (the neighbours' vote >= 1/2)
    # the neighbour setting of the work decision, chosen apart (for accuracy); None: (k, power)
    work_neighbours: tuple[int, float] | None = None
    # a benchmark with fewer judged texts keeps the selector's labels: from a few judged texts the votes are too
    # coarse for the estimators to correct (the split check from a fifth of the judge sample, ~6 texts)
    min_judged: int = 0
    trained_on: dict[str, Any] = field(default_factory=dict)
    cross_validation: dict[str, Any] = field(default_factory=dict)
    # how the work model's training rows were weighted toward mixed benchmarks (stacking_cv.work_weights; None:
    # unweighted): a record of the fit (prediction reads only the coefficients)
    work_weight_floor: float | None = None

    @property
    def version(self) -> str:
        body = json.dumps(self._model_dict(), sort_keys=True, separators=(",", ":"))
        return "n" + hashlib.sha256(body.encode()).hexdigest()[:10]

    def _model_dict(self) -> dict[str, Any]:
        return {"format": FORMAT_VERSION, "k": self.k, "power": self.power, "work": self.work.to_dict(),
                "occupation": self.occupation.to_dict(), "task": self.task.to_dict(),
                "work_threshold": round(self.work_threshold, 6), "task_threshold": round(self.task_threshold, 6),
                "max_tasks": self.max_tasks, "selector_version": self.selector_version, "work_rule": self.work_rule,
                **({"work_neighbours": list(self.work_neighbours)} if self.work_neighbours else {}),
                **({"min_judged": self.min_judged} if self.min_judged else {}),
                **({"work_weight_floor": self.work_weight_floor} if self.work_weight_floor is not None else {})}

    @property
    def work_key(self) -> tuple[int, float]:
        return self.work_neighbours or (self.k, self.power)

    def to_json(self) -> str:
        body = {"version": self.version, **self._model_dict(), "trained_on": self.trained_on,
                "cross_validation": self.cross_validation}
        return json.dumps(body, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> StackFit:
        data = json.loads(text)
        if data.get("format") != FORMAT_VERSION:
            raise ValueError(f"neighbour stack format {data.get('format')!r}, expected {FORMAT_VERSION}: refit "
                             "with `python -m pipelines.fit_labeler`")
        fit = cls(int(data["k"]), float(data["power"]), LinearModel.from_dict(data["work"]),
                  LinearModel.from_dict(data["occupation"]), LinearModel.from_dict(data["task"]),
                  float(data["work_threshold"]), float(data["task_threshold"]), int(data["max_tasks"]),
                  str(data["selector_version"]), str(data.get("work_rule", "model")),
                  (int(data["work_neighbours"][0]), float(data["work_neighbours"][1]))
                  if data.get("work_neighbours") else None, int(data.get("min_judged", 0)), data.get("trained_on", {}),
                  data.get("cross_validation", {}),
                  float(data["work_weight_floor"]) if data.get("work_weight_floor") is not None else None)
        if data.get("version") not in (None, fit.version):
            raise ValueError(f"neighbour stack {data.get('version')} does not match its contents ({fit.version}): "
                             "the file was edited by hand; refit with `python -m pipelines.fit_labeler`")
        return fit


@dataclass(frozen=True)
class Scores:
    """The three models' probabilities for one text (before thresholds)."""

    p_work: float
    codes: list[str]
    p_occupation: np.ndarray
    tasks: list[int]
    task_codes: list[str]
    p_task: np.ndarray
    first: str | None  # the first occupation (`first_with_task`)
    work_vote: float  # the neighbours' work vote (the decision when the fit's work_rule is "vote")


def score(models: tuple[LinearModel, LinearModel, LinearModel], c: Candidates,
          work_x: np.ndarray | None = None) -> Scores:
    """`work_x`: the work features under the fit's own work neighbour setting (default c.work_x)."""
    work, occupation, task = models
    work_x = c.work_x if work_x is None else work_x
    p_work = float(work.predict(work_x[None, :])[0])
    p_occ = occupation.predict(c.occupation_x) if c.codes else np.zeros(0)
    p_task = task.predict(with_occupation(c, p_occ)) if c.tasks else np.zeros(0)
    first = first_with_task(c, p_occ)
    return Scores(p_work, c.codes, p_occ, c.tasks, c.task_codes, p_task, c.codes[first] if first >= 0 else None,
                  float(work_x[WORK_FEATURES.index("work_vote")]))


def ranked(s: Scores) -> tuple[np.ndarray, int | None]:
    """(candidate order by p, best first; position in that order of the first occupation's best task)."""
    order = np.argsort(-s.p_task, kind="stable")
    if s.first is None:
        return order, None
    lead = next((i for i, j in enumerate(order) if s.task_codes[j] == s.first), None)
    return order, lead


def kept_positions(p_sorted: np.ndarray, lead: int | None, task_threshold: float, max_tasks: int) -> list[int]:
    """Positions (in the ranked order) of the label set: p >= task_threshold, at most max_tasks, at least
    the best; the first occupation's best task leads (downstream reads the first occupation from rank 1)."""
    kept = [i for i in range(min(len(p_sorted), max_tasks)) if p_sorted[i] >= task_threshold] or [0]
    if lead is not None:
        kept = ([lead] + [i for i in kept if i != lead])[:max_tasks]
    return kept


def decide(s: Scores, work_threshold: float, task_threshold: float, max_tasks: int, work_rule: str = "model"
           ) -> Decision:
    """Thresholds on Scores: not work -> no labels; else `kept_positions` of the ranked candidates. The work
    decision is the work model's p >= work_threshold, or (work_rule "vote") the neighbours' vote >= 1/2."""
    first = s.first
    order, lead = ranked(s)
    ranking = [(s.tasks[j], s.task_codes[j], float(s.p_task[j])) for j in order]
    p_work = s.work_vote if work_rule == "vote" else s.p_work
    if not (p_work >= (0.5 if work_rule == "vote" else work_threshold) and ranking):
        return Decision(False, p_work, [], first, ranking)
    return Decision(True, p_work, [ranking[i] for i in kept_positions(s.p_task[order], lead, task_threshold,
                                                                       max_tasks)], first, ranking)


def label_benchmark(fit: StackFit, sample: BenchmarkSample | None, texts: Sequence[str], hashes: Sequence[str],
                    selector_labels: SelectorLabels, selector_work: Mapping[str, tuple[bool, float | None]],
                    task_code: Mapping[int, str], signals: TextSignals | None = None, per_text: bool = False,
                    similarity: np.ndarray | None = None) -> dict[str, Decision] | None:
    """prompt_hash -> Decision for texts of one benchmark; None when the benchmark has no judged text other
    than the texts themselves (the caller keeps the selector's labels: the fallback). A judged text's own
    judge labels never reach its decision (neighbour_votes leaves it out). `per_text`: the feature rows built text by text
    (stacking_features.candidates, what the fit reads): the tests' oracle for the array path. `similarity`: the
    texts' neighbours.query_similarity when the caller has it (neighbour_tfidf.part_similarity, own text at -1)."""
    if sample is None or sample.size == 0 or sample.size < fit.min_judged:
        return None
    if similarity is None:  # one TF-IDF transform for both neighbour settings
        similarity = query_similarity(sample, texts, hashes)
    votes = neighbour_votes(sample, texts, hashes, fit.k, fit.power, similarity)
    work_votes = votes if fit.work_key == (fit.k, fit.power) else neighbour_votes(sample, texts, hashes,
                                                                                  *fit.work_key, similarity)
    context = benchmark_context(sample, hashes, selector_labels, signals or {}, task_code)
    work_of = [selector_work.get(h, (bool(selector_labels.get(h)), None)) for h in hashes]
    if per_text:
        return _decided_per_text(fit, votes, work_votes, context, hashes, selector_labels, work_of, task_code)
    models = (fit.work, fit.occupation, fit.task)
    work_x = work_rows(work_votes, np.array([w for w, _ in work_of], dtype=bool), context)
    deciding = np.flatnonzero(votes.n_neighbours > 0)  # a text whose only judged text is itself: the selector's
    out: dict[str, Decision] = {}
    for rows in chunks(deciding):
        mine = [text_pieces(selector_labels.get(hashes[i], ()), context.retriever[i], task_code) for i in rows]
        stacked = text_rows(votes, rows, mine, context, task_code)
        for j, row in enumerate(rows.tolist()):
            s = score_rows(models, work_x[row:row + 1], stacked, j)
            out[hashes[row]] = decide(Scores(s.p_work, s.codes, s.p_occupation, s.tasks, s.task_codes, s.p_task,
                                             s.first, float(work_x[row, _WORK_VOTE])),
                                      fit.work_threshold, fit.task_threshold, fit.max_tasks, fit.work_rule)
    return out


_WORK_VOTE = WORK_FEATURES.index("work_vote")


def _decided_per_text(fit: StackFit, votes: Votes, work_votes: Votes, context: BenchmarkContext,
                      hashes: Sequence[str], selector_labels: SelectorLabels,
                      work_of: Sequence[tuple[bool, float | None]], task_code: Mapping[int, str]
                      ) -> dict[str, Decision]:
    models = (fit.work, fit.occupation, fit.task)
    out: dict[str, Decision] = {}
    for row, h in enumerate(hashes):
        if votes.n_neighbours[row] == 0:
            continue
        is_work, p_work = work_of[row]
        e = evidence_of(votes, row, selector_labels.get(h, ()), is_work, p_work, context)
        work_x = work_features(evidence_of(work_votes, row, selector_labels.get(h, ()), is_work, p_work, context))
        out[h] = decide(score(models, candidates(e, task_code), work_x), fit.work_threshold, fit.task_threshold,
                        fit.max_tasks, fit.work_rule)
    return out


def task_codes_of(index: Any) -> dict[int, str]:
    """task_id -> O*NET-SOC code of a TaskIndex (or anything with task_ids, task_occupation, occupation_codes)."""
    codes = [str(c) for c in np.asarray(index.occupation_codes).tolist()]
    # whole-array tolist: the per-element int()/str() of numpy scalars took ~20 ms per benchmark's step
    return dict(zip(np.asarray(index.task_ids).astype(np.int64).tolist(),
                    [codes[o] for o in np.asarray(index.task_occupation).tolist()], strict=True))


# A decided text as the step's cache keeps it: (is_work, p_work, labels (task, code, p) in rank order); None for a
# text the stack left to the selector (its benchmark's only judged text).
CachedDecision = tuple[bool, float, list[tuple[int, str, float]]] | None


# bumped when the step decides differently from the same fit and judged texts (2: the trust features read every
# judged text's selector labels, not only those of the texts recomputed): older cache files are read as stale
DECISION_RULES = 2


def judged_fingerprint(fit_version: str, labeler_version: str, judged: Any) -> str:
    """What a benchmark's stacked decisions depend on besides the text and its selector labels (which the
    labeler version and the text fix): the stack fit and the judged texts (JUDGED_SCHEMA rows), as a hash."""
    rows = sorted(json.dumps([r["prompt_hash"], r["is_work"], r["occupations"], r["task_ids"]], default=str)
                  for r in judged.iter_rows(named=True))
    body = json.dumps([DECISION_RULES, fit_version, labeler_version, rows], separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def stacked_label_sets(fit: StackFit, sample: BenchmarkSample | None, prompts: Sequence[Any],
                       labels_by_hash: Mapping[str, Sequence[Any]], task_code: Mapping[int, str],
                       cached: Mapping[str, CachedDecision] | None = None,
                       signals_of: Callable[[Mapping[str, str]], TextSignals] | None = None
                       ) -> tuple[dict[str, list[Any]], int, dict[str, CachedDecision]]:
    """The labeler step: the selector's label sets of one benchmark's prompts (`labels_by_hash`: prompt_hash
    -> models.labeling.cache.LabelSet, as label_with_cache returns them) restacked with the neighbours' votes.
    Returns (prompt_hash -> LabelSet, how many prompts the stack decided, every text's CachedDecision);
    `cached` decisions (same judged_fingerprint) are reused, not recomputed. `signals_of(prompt_hash -> text)`
    gives the TextSignals of the texts to decide and of the judged texts. Without judged texts the selector's
    sets are returned unchanged (the fallback)."""
    from models.labeling.base import TaskLabel
    from models.labeling.cache import LabelSet

    out: dict[str, list[Any]] = dict(labels_by_hash)
    if sample is None or sample.size == 0:
        return out, 0, {}
    cached = cached or {}
    texts: dict[str, str] = {}
    for p in prompts:
        if p.prompt_hash in labels_by_hash and isinstance(p.prompt, str):
            texts.setdefault(p.prompt_hash, p.prompt)
    hashes = [h for h in texts if h not in cached]
    # the selector's labels of the texts to decide AND of the judged texts, whether or not these were decided
    # (cached) before: the trust features read the judged texts' first occupations, so a decision must not
    # depend on which texts a concurrent or earlier run already wrote to the cache
    judged_hashes = {str(h) for h in sample.hashes.tolist()}
    selector = {h: [(int(lab.task_id), str(lab.onet_soc_code),
                     float(lab.p_exercised if lab.p_exercised is not None else lab.score))
                    for lab in sorted(labels_by_hash[h], key=lambda lab: lab.rank)]
                for h in texts if h in judged_hashes or h not in cached}
    work = {h: (bool(getattr(labels_by_hash[h], "is_work", None) is not False), None) for h in hashes}
    signals: TextSignals = {}
    if hashes and signals_of is not None:
        wanted = set(hashes) | judged_hashes
        # in the prompts' order (a set's order changes from process to process with the hash seed)
        signals = signals_of({h: t for h, t in texts.items() if h in wanted})
    decisions = (label_benchmark(fit, sample, [texts[h] for h in hashes], hashes, selector, work, task_code,
                                 signals) if hashes else None) or {}
    every: dict[str, CachedDecision] = {h: c for h, c in cached.items() if h in texts}
    for h in hashes:
        d = decisions.get(h)
        every[h] = None if d is None else (d.is_work, d.p_work, [(int(t), str(c), float(p)) for t, c, p in d.labels])
    n = 0
    for h, decided in every.items():
        if decided is None:
            continue
        n += 1
        is_work, p_work, kept = decided
        rationale = {lab.task_id: lab.rationale for lab in labels_by_hash[h]}
        labels = [TaskLabel(task_id=t, onet_soc_code=code, rank=rank, score=round(p, 6), p_exercised=round(p, 6),
                            rationale=rationale.get(t) or "kept by the benchmark's nearest judged texts")
                  for rank, (t, code, p) in enumerate(kept, start=1)]
        out[h] = LabelSet(labels, is_work=is_work, p_work=round(p_work, 6))
    return out, n, every
