"""Scoring a batch of prompts against a TaskIndex: the occupation signals, their weighted sum and the
relative task similarities (one sparse product per signal), and the role-title scores."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import normalize

from models.labeling.offline.config import OfflineLabelerConfig
from models.labeling.offline.text import RolePhrase, head_noun, text_features

# models.labeling.offline.index.TaskIndex: not imported, not even for type checking (index imports this module
# to score its batches; one direction only)
TaskIndex = Any


def scaled_to_best(scores: np.ndarray) -> np.ndarray:
    """Divide each row by its maximum (rows with no positive score stay 0)."""
    best = scores.max(axis=1, keepdims=True)
    return np.where(best > 0, scores / np.where(best > 0, best, 1.0), 0.0).astype(np.float32)


def dense(matrix: Any) -> np.ndarray:
    return np.asarray(matrix.toarray() if sp.issparse(matrix) else matrix, dtype=np.float32)


@dataclass
class BatchEvidence:
    occupation: np.ndarray  # n x occupations, combined occupation score (scaled to a best of 1 per prompt)
    task: np.ndarray  # n x tasks, task similarity / the best similarity within the task's occupation
    role: np.ndarray  # n x occupations, role-title score in [0, 1]
    roles: list[list[RolePhrase]]
    task_queries: sp.csr_matrix  # n x task vocabulary (for rationales)


# -- what a batch needs of the index, derived once per index object (not pickled: TaskIndex.__getstate__)
QUERY_VECTORIZERS = ("occupation", "description", "task", "technology", "opening")


@dataclass
class Derived:
    """The index's document matrices transposed to CSR (scipy converts `matrix.T` on every product; the
    conversion is the same, so the products are bit-identical) and one vocabulary over the query
    vectorizers, so a batch's features are counted once rather than once per vectorizer."""

    transposed: dict[str, sp.csr_matrix]
    vocabulary: dict[str, int]  # every feature of any query vectorizer -> a shared id
    columns: dict[str, np.ndarray]  # vectorizer -> its column of each shared id (-1: not in its vocabulary)


def derived(index: TaskIndex) -> Derived:
    cached = index.__dict__.get("_derived")
    if cached is None:
        vocabularies = [getattr(index, f"{name}_vectorizer").vocabulary_ for name in QUERY_VECTORIZERS]
        vocabulary = {term: i for i, term in enumerate(dict.fromkeys(itertools.chain(*vocabularies)))}
        columns = {}
        for name, own in zip(QUERY_VECTORIZERS, vocabularies, strict=True):
            column = np.full(len(vocabulary), -1, dtype=np.int64)
            column[np.fromiter(map(vocabulary.__getitem__, own), dtype=np.int64, count=len(own))] = np.fromiter(
                own.values(), dtype=np.int64, count=len(own))
            columns[name] = column
        transposed = {name: getattr(index, f"{name}_matrix").T.tocsr()
                      for name in ("occupation", "description", "task", "opening", "technology", "title")}
        cached = index.__dict__["_derived"] = Derived(transposed, vocabulary, columns)
    return cached


class SharedCounts:
    """Term counts of a list of feature lists over the shared vocabulary, and each query vectorizer's
    TF-IDF matrix of them: equal to `vectorizer.transform(features)` (same counts in the same sorted
    column order, then the same sublinear tf, idf and l2 steps as sklearn's TfidfTransformer)."""

    def __init__(self, index: TaskIndex, features: Sequence[list[str]]) -> None:
        self.index = index
        self.shared = derived(index)
        lookup = self.shared.vocabulary.get
        ids = [[i for i in map(lookup, doc) if i is not None] for doc in features]
        rows = np.repeat(np.arange(len(ids), dtype=np.int64), [len(d) for d in ids])
        flat = np.fromiter((i for d in ids for i in d), dtype=np.int64, count=len(rows))
        keys, self.counts = np.unique(rows * len(self.shared.vocabulary) + flat, return_counts=True)
        self.rows, self.ids = np.divmod(keys, len(self.shared.vocabulary))
        self.n = len(ids)

    def matrix(self, name: str) -> sp.csr_matrix:
        vectorizer = getattr(self.index, f"{name}_vectorizer")
        columns = self.shared.columns[name][self.ids]
        keep = columns >= 0
        indptr = np.zeros(self.n + 1, dtype=np.int32)
        np.cumsum(np.bincount(self.rows[keep], minlength=self.n), out=indptr[1:])
        x = sp.csr_matrix((self.counts[keep].astype(vectorizer.dtype), columns[keep].astype(np.int32), indptr),
                          shape=(self.n, len(vectorizer.vocabulary_)))
        x.sort_indices()
        if getattr(vectorizer, "binary", False):
            x.data.fill(1)
        if isinstance(vectorizer, TfidfVectorizer):  # TfidfTransformer.transform's steps
            if vectorizer.sublinear_tf:
                np.log(x.data, x.data)
                x.data += 1.0
            x.data *= vectorizer.idf_[x.indices]
            if vectorizer.norm is not None:
                x = normalize(x, norm=vectorizer.norm, copy=False)
        return x

    def similarity(self, name: str, against: str | None = None) -> np.ndarray:
        """Dense cosine rows of the batch against `against`'s documents with `name`'s vectorizer."""
        return dense(self.matrix(name) @ self.shared.transposed[against or name])


def batch_evidence(index: TaskIndex, prompts: Sequence[str], config: OfflineLabelerConfig
                   ) -> tuple[BatchEvidence, dict[str, np.ndarray]]:
    """The evidence of a batch of prompts and each occupation signal on its own (what
    TaskIndex.evidence_with_signals returns)."""
    shared = derived(index)
    counts = SharedCounts(index, [text_features(p) for p in prompts])
    document = counts.similarity("occupation")
    description = counts.similarity("description")
    task_query = counts.matrix("task")
    task = dense(task_query @ shared.transposed["task"])
    openings = SharedCounts(index, [text_features(p[: config.opening_chars]) for p in prompts])
    opening = openings.similarity("opening")
    opening_document = openings.similarity("occupation")

    # row by row: a batched matrix product may round differently with the batch size, and labels
    # must not depend on which prompts share a batch
    lsa = np.zeros_like(document)
    for i, row in enumerate(document):
        query = row @ index.lsa_projection
        query /= max(float(np.linalg.norm(query)), 1e-12)
        lsa[i] = np.clip(index.lsa_occupations @ query, 0.0, None)

    roles = [index.occupation_roles(p) for p in prompts]
    role = role_scores(index, roles, config)
    clauses = SharedCounts(index, [text_features(" ".join(r.clause for r in rs)) for rs in roles])
    clause = clauses.similarity("occupation")
    technology = counts.similarity("technology")
    without_role = 1.0 - role.max(axis=1, keepdims=True)

    signals = {
        "role": role ** 2,
        "document": scaled_to_best(document),
        "lsa": scaled_to_best(lsa),
        "opening_titles": scaled_to_best(opening),
        "opening_document": scaled_to_best(opening_document),
        "description": scaled_to_best(description),
        "role_clause": scaled_to_best(clause),
        "technology": without_role * scaled_to_best(technology),
    }
    occupation = (config.role_weight * signals["role"]
                  + config.document_weight * signals["document"]
                  + config.lsa_weight * signals["lsa"]
                  + config.opening_titles_weight * signals["opening_titles"]
                  + config.opening_document_weight * signals["opening_document"]
                  + config.description_weight * signals["description"]
                  + config.role_clause_weight * signals["role_clause"]
                  + config.technology_weight * signals["technology"])
    best = np.maximum.reduceat(task, index.task_starts, axis=1)  # prompts x occupations
    # each task over its occupation's best, 0 where that best is not positive: spread to the tasks only once
    relative_task = np.divide(task, np.where(best > 0, best, 1.0)[:, index.task_occupation],
                              out=np.zeros_like(task), where=(best > 0)[:, index.task_occupation])
    signals["document_raw"] = document
    signals["task_raw"] = task
    evidence = BatchEvidence(scaled_to_best(occupation), relative_task.astype(np.float32, copy=False), role, roles,
                             task_query)
    return evidence, signals


def role_title_scores(index: TaskIndex, phrases: Sequence[RolePhrase], config: OfflineLabelerConfig
                      ) -> np.ndarray:
    """phrases x titles: TF-IDF cosine with each job title, discounted on a head-noun mismatch and
    weighted by the title's source."""
    query = index.title_vectorizer.transform([text_features(r.role) for r in phrases])
    scores = dense(query @ derived(index).transposed["title"])
    role_heads = np.array([index.head_ids.get(head_noun(r.role), -2) for r in phrases])
    same_head = index.title_head_ids[None, :] == role_heads[:, None]
    return scores * np.where(same_head, 1.0, config.title_head_mismatch).astype(np.float32) * index.title_weights


def role_scores(index: TaskIndex, roles: list[list[RolePhrase]], config: OfflineLabelerConfig) -> np.ndarray:
    """prompts x occupations: each prompt's best role-title score per occupation, clipped to [0, 1]."""
    out = np.zeros((len(roles), len(index.occupation_codes)), dtype=np.float32)
    flat = [(i, r) for i, rs in enumerate(roles) for r in rs]
    for start in range(0, len(flat), 64):  # 64 phrases x ~60k titles per dense block
        chunk = flat[start: start + 64]
        per_occupation = np.maximum.reduceat(
            role_title_scores(index, [r for _, r in chunk], config), index.title_starts, axis=1)
        for (i, _), row in zip(chunk, per_occupation, strict=True):
            np.maximum(out[i], row, out=out[i])
    return np.clip(out, 0.0, 1.0)
