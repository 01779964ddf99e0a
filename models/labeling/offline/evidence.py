"""Scoring a batch of prompts against a TaskIndex: the occupation signals, their weighted sum and the
relative task similarities (one sparse product per signal), and the role-title scores."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

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


def batch_evidence(index: TaskIndex, prompts: Sequence[str], config: OfflineLabelerConfig
                   ) -> tuple[BatchEvidence, dict[str, np.ndarray]]:
    """The evidence of a batch of prompts and each occupation signal on its own (what
    TaskIndex.evidence_with_signals returns)."""
    features = [text_features(p) for p in prompts]
    occupation_query = index.occupation_vectorizer.transform(features)
    document = dense(occupation_query @ index.occupation_matrix.T)
    description = dense(index.description_vectorizer.transform(features) @ index.description_matrix.T)
    task_query = index.task_vectorizer.transform(features).tocsr()
    task = dense(task_query @ index.task_matrix.T)
    openings = [text_features(p[: config.opening_chars]) for p in prompts]
    opening = dense(index.opening_vectorizer.transform(openings) @ index.opening_matrix.T)
    opening_document = dense(index.occupation_vectorizer.transform(openings) @ index.occupation_matrix.T)

    # row by row: a batched matrix product may round differently with the batch size, and labels
    # must not depend on which prompts share a batch
    lsa = np.zeros_like(document)
    for i, row in enumerate(document):
        query = row @ index.lsa_projection
        query /= max(float(np.linalg.norm(query)), 1e-12)
        lsa[i] = np.clip(index.lsa_occupations @ query, 0.0, None)

    roles = [index.occupation_roles(p) for p in prompts]
    role = role_scores(index, roles, config)
    clauses = [text_features(" ".join(r.clause for r in rs)) for rs in roles]
    clause = dense(index.occupation_vectorizer.transform(clauses) @ index.occupation_matrix.T)
    technology = dense(index.technology_vectorizer.transform(features) @ index.technology_matrix.T)
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
    best_in_occupation = np.maximum.reduceat(task, index.task_starts, axis=1)[:, index.task_occupation]
    relative_task = np.where(best_in_occupation > 0, task / np.where(best_in_occupation > 0,
                                                                     best_in_occupation, 1.0), 0.0)
    signals["document_raw"] = document
    signals["task_raw"] = task
    evidence = BatchEvidence(scaled_to_best(occupation), relative_task.astype(np.float32), role, roles,
                             task_query)
    return evidence, signals


def role_title_scores(index: TaskIndex, phrases: Sequence[RolePhrase], config: OfflineLabelerConfig
                      ) -> np.ndarray:
    """phrases x titles: TF-IDF cosine with each job title, discounted on a head-noun mismatch and
    weighted by the title's source."""
    query = index.title_vectorizer.transform([text_features(r.role) for r in phrases])
    scores = dense(query @ index.title_matrix.T)
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
