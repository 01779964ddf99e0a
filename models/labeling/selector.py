"""The offline labeler's calibrated selector: which of the retriever's candidates a prompt really exercises.

The TF-IDF retriever (models/labeling/offline/) ranks occupations and tasks well enough to shortlist, but
its top 20 tasks are not the tasks a prompt exercises (task F1 0.027 against the reference judge). The
selector mirrors the judge's protocol (data/reference/PROTOCOL.md) with three small logistic models fitted
on the judge's labels (`fit_selector` in models/labeling/selector_training.py, run by `python -m pipelines.fit_labeler`):

1. **work gate**: is the prompt occupational work at all? Word TF-IDF (vocabulary and IDF from the
   reference's training prompts) plus four retriever signals (best occupation-document similarity, best
   role-title match, whether a role was found, prompt length). A prompt judged not work gets no labels.
2. **occupations**: for the retriever's top `k_candidates` occupations, P(the judge lists it) from the
   retriever's signals, the occupation's rank, and a prior of how often the judge picks the occupation and
   its SOC major group (smoothed counts over the training prompts).
3. **tasks**: every task of the `k_occupations` most probable occupations, P(the judge keeps it) from the
   occupation probability, the task's similarity to the prompt (raw, relative to the occupation's best,
   rank within the occupation) and how often the judge keeps that task when it picks its occupation.

A work prompt keeps the tasks with p_exercised >= `task_threshold` (at least its best task); thresholds are
chosen inside the cross-validation folds. Everything here is pure numpy on the retriever's evidence; the
fitted coefficients live in a versioned JSON file (`selector_fit.json`, read by
`resources.readers.load_selector_fit`) whose version is part of the label cache key. Measured, cross-validated leaving one benchmark out: docs/offline_labeler.md.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sklearn.feature_extraction.text import TfidfVectorizer

# scikit-learn and scipy.sparse are imported where a model is fitted or texts vectorised, not with this module:
# every Definitions build (every warm `run_all`, issue 29) imports it through the asset modules (~2 CPU-s).

FORMAT_VERSION = 1

OCCUPATION_SIGNALS = ("role", "document", "lsa", "opening_titles", "opening_document", "description",
                      "role_clause", "technology")
OCCUPATION_FEATURES = (*OCCUPATION_SIGNALS, "combined", "log_rank", "occupation_prior", "group_prior",
                       "benchmark_occupation", "benchmark_log_rank")
TASK_FEATURES = ("log_p_occupation", "occupation_rank", "relative_similarity", "similarity",
                 "log_similarity_rank", "task_prior", "log_occupation_picks", "log_occupation_tasks",
                 "benchmark_task_similarity")
CONTEXT_SAMPLE = 300  # prompts per benchmark the context is computed from (the smallest prompt hashes)
K_BENCHMARK_CANDIDATES = 15  # occupations added to a prompt's candidates from its benchmark's context
WORK_DENSE_FEATURES = ("best_document", "best_role", "has_role", "log_length")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


@dataclass(frozen=True)
class LinearModel:
    """A standardised logistic regression: p = sigmoid(((x - mean) / scale) . coef + intercept)."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    def predict(self, x: np.ndarray) -> np.ndarray:
        return _sigmoid(((x - self.mean) / self.scale) @ self.coef + self.intercept)

    @classmethod
    def fit(cls, features: Sequence[str], x: np.ndarray, y: np.ndarray, c: float = 1.0,
            sample_weight: np.ndarray | None = None) -> LinearModel:
        mean = x.mean(axis=0)
        scale = x.std(axis=0)
        scale = np.where(scale > 1e-9, scale, 1.0)
        from sklearn.linear_model import LogisticRegression

        model = LogisticRegression(C=c, max_iter=3000).fit((x - mean) / scale, y, sample_weight=sample_weight)
        return cls(tuple(features), mean, scale, model.coef_[0].astype(np.float64), float(model.intercept_[0]))

    def to_dict(self) -> dict[str, Any]:
        return {"features": list(self.features), "mean": _round(self.mean), "scale": _round(self.scale),
                "coef": _round(self.coef), "intercept": round(self.intercept, 8)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LinearModel:
        return cls(tuple(data["features"]), np.asarray(data["mean"], float), np.asarray(data["scale"], float),
                   np.asarray(data["coef"], float), float(data["intercept"]))


def _round(values: np.ndarray) -> list[float]:
    return [round(float(v), 8) for v in values]


@dataclass(frozen=True)
class WorkModel:
    """Word TF-IDF + dense retriever signals -> P(occupational work); `threshold` on that probability."""

    vocabulary: dict[str, int]
    idf: np.ndarray
    word_coef: np.ndarray
    dense: LinearModel  # its coef / intercept are the dense part of the same logistic regression
    threshold: float
    pool_weight: float = 1.0  # weight of the prompt's own logit against its benchmark's mean logit

    @functools.cached_property
    def vectorizer(self) -> TfidfVectorizer:
        from sklearn.feature_extraction.text import TfidfVectorizer

        vec = TfidfVectorizer(**WORK_TFIDF, vocabulary=self.vocabulary)
        vec.fit(["x"])  # sets up the analyzer; the fitted idf is replaced below
        vec.idf_ = self.idf
        return vec

    def text_logit(self, texts: Sequence[str], dense: np.ndarray) -> np.ndarray:
        """The prompt-level logit (words + dense signals), before benchmark pooling."""
        words = self.vectorizer.transform(texts)
        z = words @ self.word_coef + ((dense - self.dense.mean) / self.dense.scale) @ self.dense.coef
        return np.asarray(z).ravel() + self.dense.intercept

    def pooled(self, text_logit: np.ndarray, benchmark_logit: float) -> np.ndarray:
        """P(work): the prompt's logit pooled with its benchmark's mean logit (non-work prompts come in whole
        benchmarks: a shopping or trivia benchmark is rarely occupational work anywhere)."""
        return _sigmoid(self.pool_weight * text_logit + (1.0 - self.pool_weight) * benchmark_logit)

    def to_dict(self) -> dict[str, Any]:
        terms = sorted(self.vocabulary, key=self.vocabulary.__getitem__)
        return {"terms": terms, "idf": _round(self.idf), "word_coef": _round(self.word_coef),
                "dense": self.dense.to_dict(), "threshold": round(self.threshold, 6),
                "pool_weight": round(self.pool_weight, 6)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkModel:
        return cls({t: i for i, t in enumerate(data["terms"])}, np.asarray(data["idf"], float),
                   np.asarray(data["word_coef"], float), LinearModel.from_dict(data["dense"]),
                   float(data["threshold"]), float(data.get("pool_weight", 1.0)))


# token_pattern keeps one-letter words: "i want ..." is how consumer errands start.
WORK_TFIDF: dict[str, Any] = {"sublinear_tf": True, "lowercase": True, "token_pattern": r"(?u)\b\w+\b",
                              "dtype": np.float64}


@dataclass(frozen=True)
class SelectorFit:
    """The fitted selector: three models, the judge's occupation/task pick counts, and the thresholds."""

    work: WorkModel
    occupation: LinearModel
    task: LinearModel
    occupation_picks: dict[str, float]  # onet_soc_code -> times the judge listed it (training prompts)
    group_picks: dict[str, float]  # SOC major group ('15') -> times
    task_picks: dict[int, float]  # task_id -> times the judge kept it
    task_threshold: float
    k_candidates: int = 40
    k_occupations: int = 4
    prior_smoothing: float = 0.1
    task_prior_smoothing: float = 2.0
    trained_on: dict[str, Any] = field(default_factory=dict)  # reference file hashes, counts
    cross_validation: dict[str, Any] = field(default_factory=dict)  # leave-one-benchmark-out metrics

    @functools.cached_property
    def version(self) -> str:
        """Content hash of everything that changes labels: part of the label cache key (computed once)."""
        body = json.dumps(self._model_dict(), sort_keys=True, separators=(",", ":"))
        return "s" + hashlib.sha256(body.encode()).hexdigest()[:10]

    def _model_dict(self) -> dict[str, Any]:
        return {"format": FORMAT_VERSION, "work": self.work.to_dict(), "occupation": self.occupation.to_dict(),
                "task": self.task.to_dict(), "occupation_picks": self.occupation_picks,
                "group_picks": self.group_picks, "task_picks": {str(k): v for k, v in self.task_picks.items()},
                "task_threshold": round(self.task_threshold, 6), "k_candidates": self.k_candidates,
                "k_occupations": self.k_occupations, "prior_smoothing": self.prior_smoothing,
                "task_prior_smoothing": self.task_prior_smoothing}

    def to_json(self) -> str:
        body = {"version": self.version, **self._model_dict(), "trained_on": self.trained_on,
                "cross_validation": self.cross_validation}
        return json.dumps(body, indent=1, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> SelectorFit:
        data = json.loads(text)
        if data.get("format") != FORMAT_VERSION:
            raise ValueError(f"selector fit format {data.get('format')!r}, expected {FORMAT_VERSION}: refit with "
                             "`python -m pipelines.fit_labeler`")
        fit = cls(WorkModel.from_dict(data["work"]), LinearModel.from_dict(data["occupation"]),
                  LinearModel.from_dict(data["task"]), dict(data["occupation_picks"]), dict(data["group_picks"]),
                  {int(k): float(v) for k, v in data["task_picks"].items()}, float(data["task_threshold"]),
                  int(data["k_candidates"]), int(data["k_occupations"]), float(data["prior_smoothing"]),
                  float(data["task_prior_smoothing"]), data.get("trained_on", {}), data.get("cross_validation", {}))
        if data.get("version") not in (None, fit.version):
            raise ValueError(f"selector fit {data.get('version')} does not match its contents ({fit.version}): "
                             "the file was edited by hand; refit with `python -m pipelines.fit_labeler`")
        return fit


# --- features --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class IndexShape:
    """What the selector needs of a TaskIndex: codes, task ids and the task -> occupation layout."""

    occupation_codes: np.ndarray
    task_ids: np.ndarray
    task_occupation: np.ndarray
    task_starts: np.ndarray

    @classmethod
    def of(cls, index: Any) -> IndexShape:
        return cls(index.occupation_codes, index.task_ids, index.task_occupation, index.task_starts)

    @functools.cached_property
    def task_ends(self) -> np.ndarray:  # read per prompt (task_features): computed once
        return np.append(self.task_starts[1:], len(self.task_ids))

    @functools.cached_property
    def task_counts(self) -> np.ndarray:
        return self.task_ends - self.task_starts


@dataclass
class Priors:
    """Log-prior arrays aligned with an index, from the judge's pick counts."""

    occupation: np.ndarray  # per occupation: log P(listed)
    group: np.ndarray  # per occupation: log P(its major group listed)
    task: np.ndarray  # per task: log P(kept | its occupation listed), smoothed toward the average rate
    occupation_picks: np.ndarray  # per task: log1p(times its occupation was listed)


def priors_from_counts(shape: IndexShape, occupation_picks: dict[str, float], group_picks: dict[str, float],
                       task_picks: dict[int, float], smoothing: float = 0.1, task_smoothing: float = 2.0
                       ) -> Priors:
    codes = [str(c) for c in shape.occupation_codes]
    occ = np.array([occupation_picks.get(c, 0.0) for c in codes])
    groups = sorted({c[:2] for c in codes})
    group_counts = np.array([group_picks.get(g, 0.0) for g in groups])
    group_log = np.log((group_counts + 1.0) / (group_counts.sum() + len(groups)))
    group_of = np.array([groups.index(c[:2]) for c in codes])
    tasks = np.array([task_picks.get(int(t), 0.0) for t in shape.task_ids])
    occ_of_task = occ[shape.task_occupation]
    base = tasks.sum() / max(float((occ * shape.task_counts).sum()), 1.0)
    rate = (tasks + task_smoothing * base) / (occ_of_task + task_smoothing)
    return Priors(occupation=np.log((occ + smoothing) / (occ.sum() + smoothing * len(codes))),
                  group=group_log[group_of], task=np.log(np.clip(rate, 1e-9, 1.0)),
                  occupation_picks=np.log1p(occ_of_task))


def pick_counts(occupation_lists: Sequence[Sequence[str]], task_lists: Sequence[Sequence[int]],
                weights: Sequence[float] | None = None
                ) -> tuple[dict[str, float], dict[str, float], dict[int, float]]:
    """(occupation, major group, task) pick counts of the judge's labels (one entry per prompt and pass,
    weighted so a prompt labeled twice counts once)."""
    occ: dict[str, float] = {}
    grp: dict[str, float] = {}
    task: dict[int, float] = {}
    weights = weights if weights is not None else [1.0] * len(occupation_lists)
    for occupations, tasks, w in zip(occupation_lists, task_lists, weights, strict=True):
        for code in dict.fromkeys(occupations):
            occ[code] = occ.get(code, 0.0) + w
            grp[code[:2]] = grp.get(code[:2], 0.0) + w
        for t in dict.fromkeys(tasks):
            task[int(t)] = task.get(int(t), 0.0) + w
    return occ, grp, task


@dataclass(frozen=True)
class BenchmarkContext:
    """Evidence pooled over a benchmark's prompts (one benchmark's prompts share occupations): the mean
    combined occupation score (scaled to a best of 1), the mean relative task similarity and the mean
    prompt-level work logit, over a fixed sample of its prompts (the CONTEXT_SAMPLE smallest prompt hashes,
    so a few edited prompts rarely move it). Unsupervised: it reads prompt texts, never labels."""

    occupation: np.ndarray
    task: np.ndarray
    work_logit: float
    n_prompts: int

    @functools.cached_property
    def occupation_order(self) -> np.ndarray:  # read for every prompt of the benchmark: computed once
        return np.argsort(-self.occupation, kind="stable")

    @functools.cached_property
    def occupation_rank(self) -> np.ndarray:
        rank = np.empty(len(self.occupation))
        rank[self.occupation_order] = np.arange(len(self.occupation))
        return rank

    @property
    def digest(self) -> str:
        body = np.round(self.occupation, 4).tobytes() + np.round(self.task, 4).tobytes()
        return hashlib.sha256(body + f"{self.work_logit:.4f}".encode()).hexdigest()[:10]


def context_sample(hashes: Sequence[str]) -> list[int]:
    """Positions of the prompts a benchmark's context is computed from: the distinct CONTEXT_SAMPLE smallest
    prompt hashes (a content-based random sample, the same whatever order the prompts landed in)."""
    first: dict[str, int] = {}
    for i, h in enumerate(hashes):
        first.setdefault(h, i)
    return [first[h] for h in sorted(first)[:CONTEXT_SAMPLE]]


def make_context(combined: np.ndarray, task_relative: np.ndarray, work_logit: np.ndarray) -> BenchmarkContext:
    """A BenchmarkContext from the retriever's evidence on the sampled prompts (rows)."""
    occupation = combined.mean(axis=0)
    best = float(occupation.max()) if occupation.size else 0.0
    return BenchmarkContext(occupation / best if best > 0 else occupation, task_relative.mean(axis=0),
                            float(np.mean(work_logit)), int(combined.shape[0]))


def occupation_candidates(combined: np.ndarray, k: int, context: BenchmarkContext | None = None,
                          order: np.ndarray | None = None) -> np.ndarray:
    """The k best occupations of one prompt by the retriever's combined score, plus its benchmark's
    K_BENCHMARK_CANDIDATES best occupations, ordered by the prompt's own score. `order`: the prompt's
    occupations by score, best first (stable), when already sorted."""
    own = (np.argsort(-combined, kind="stable") if order is None else order)[:k]
    if context is None:
        return own
    extra = context.occupation_order[:K_BENCHMARK_CANDIDATES]
    merged = np.unique(np.concatenate([own, extra]))
    return merged[np.argsort(-combined[merged], kind="stable")]


def occupation_features(signals: dict[str, np.ndarray], combined: np.ndarray, row: int, candidates: np.ndarray,
                        priors: Priors, context: BenchmarkContext, order: np.ndarray | None = None) -> np.ndarray:
    """candidates x OCCUPATION_FEATURES for prompt `row` of a batch (`order`: as occupation_candidates')."""
    rank = np.empty(combined.shape[1])
    rank[np.argsort(-combined[row], kind="stable") if order is None else order] = np.arange(combined.shape[1])
    columns = [signals[s][row, candidates] for s in OCCUPATION_SIGNALS]
    columns += [combined[row, candidates], np.log1p(rank[candidates]), priors.occupation[candidates],
                priors.group[candidates], context.occupation[candidates],
                np.log1p(context.occupation_rank[candidates])]
    return np.column_stack(columns)


def task_features(shape: IndexShape, task_raw: np.ndarray, task_relative: np.ndarray, occupations: np.ndarray,
                  p_occupation: np.ndarray, priors: Priors, context: BenchmarkContext
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(tasks x TASK_FEATURES, task rows) for one prompt: every task of the given occupations (best first)."""
    if len(occupations) == 0:
        return np.zeros((0, len(TASK_FEATURES))), np.zeros(0, dtype=np.int64)
    starts = shape.task_starts[occupations]
    lengths = shape.task_counts[occupations]
    offsets = np.cumsum(lengths) - lengths  # where each occupation's block starts in the rows
    block = np.repeat(np.arange(len(occupations)), lengths)
    js = np.repeat(starts - offsets, lengths) + np.arange(len(block))
    raw = task_raw[js]
    # each block's tasks by similarity, best first, ties in task order: a stable sort by block, then similarity
    similarity_rank = np.empty(len(js))
    similarity_rank[np.lexsort((-raw, block))] = np.arange(len(js)) - offsets[block]
    per_block = np.array([[math.log(max(float(p), 1e-6)), math.log(n)]
                          for p, n in zip(p_occupation, lengths.tolist(), strict=True)])[block]
    features = np.column_stack([
        per_block[:, 0], block.astype(float), task_relative[js], raw, np.log1p(similarity_rank), priors.task[js],
        priors.occupation_picks[js], per_block[:, 1], context.task[js]])
    return features, js


def work_dense_features(signals: dict[str, np.ndarray], texts: Sequence[str]) -> np.ndarray:
    """prompts x WORK_DENSE_FEATURES."""
    best_role = np.sqrt(np.clip(signals["role"].max(axis=1), 0.0, None))
    return np.column_stack([signals["document_raw"].max(axis=1), best_role, (best_role > 0.5).astype(float),
                            np.log1p(np.array([len(t) for t in texts], dtype=float))])


# --- prediction ------------------------------------------------------------------------------------------

@dataclass
class PromptSelection:
    """What the selector decides for one prompt."""

    is_work: bool
    p_work: float
    tasks: list[tuple[int, float]]  # (task row, p_exercised) of the label set, best first
    ranking: list[tuple[int, float]]  # every scored candidate task (row, p), best first
    occupations: list[tuple[int, float]]  # (occupation row, p) of the scored candidates, best first
    text_logit: float = 0.0  # the work model's prompt-level logit before benchmark pooling (the neighbour step's)


class Selector:
    """A SelectorFit bound to one TaskIndex (priors aligned with its rows)."""

    def __init__(self, fit: SelectorFit, index: Any) -> None:
        self.fit = fit
        self.shape = IndexShape.of(index)
        self.priors = priors_from_counts(self.shape, fit.occupation_picks, fit.group_picks, fit.task_picks,
                                         fit.prior_smoothing, fit.task_prior_smoothing)

    def context(self, texts: Sequence[str], combined: np.ndarray, task_relative: np.ndarray,
                signals: dict[str, np.ndarray]) -> BenchmarkContext:
        """The BenchmarkContext of a benchmark from the evidence of its sampled prompts (`context_sample`)."""
        return make_context(combined, task_relative,
                            self.fit.work.text_logit(texts, work_dense_features(signals, texts)))

    def select(self, texts: Sequence[str], combined: np.ndarray, task_relative: np.ndarray,
               signals: dict[str, np.ndarray], context: BenchmarkContext) -> list[PromptSelection]:
        """One selection per prompt of a batch of one benchmark (evidence from the retriever)."""
        fit = self.fit
        text_logit = fit.work.text_logit(texts, work_dense_features(signals, texts))
        p_work = fit.work.pooled(text_logit, context.work_logit)
        out: list[PromptSelection] = []
        orders = np.argsort(-combined, axis=1, kind="stable")  # the batch's rows at once, as row by row
        for row in range(len(texts)):
            candidates = occupation_candidates(combined[row], fit.k_candidates, context, orders[row])
            p_occ = fit.occupation.predict(
                occupation_features(signals, combined, row, candidates, self.priors, context, orders[row]))
            order = np.argsort(-p_occ, kind="stable")
            chosen = candidates[order[: fit.k_occupations]]
            features, rows = task_features(self.shape, signals["task_raw"][row], task_relative[row], chosen,
                                           p_occ[order[: fit.k_occupations]], self.priors, context)
            p_task = fit.task.predict(features) if len(rows) else np.zeros(0)
            task_order = np.argsort(-p_task, kind="stable")
            ranking = list(zip(rows[task_order].tolist(), p_task[task_order].tolist(), strict=True))
            is_work = bool(p_work[row] >= fit.work.threshold)
            kept = [r for r in ranking if r[1] >= fit.task_threshold] or ranking[:1]
            out.append(PromptSelection(is_work, float(p_work[row]), kept if is_work else [], ranking,
                                       list(zip(candidates[order].tolist(), p_occ[order].tolist(), strict=True)),
                                       float(text_logit[row])))
        return out
