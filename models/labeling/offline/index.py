"""The offline labeler's TaskIndex: O*NET tasks, occupations and job titles as TF-IDF matrices, and the
queries the labeler makes of it (evidence, task scores, the greedy task selection, best titles).

Built once by `TaskIndex.build` (the steps are in build.py; the scoring of a batch in evidence.py) and
pickled by resources/task_index.py: the class lives here, so a pickle names
models.labeling.offline.index.TaskIndex.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from models.labeling.offline.build import index_fields
from models.labeling.offline.config import OfflineLabelerConfig
from models.labeling.offline.evidence import BatchEvidence, batch_evidence, role_title_scores
from models.labeling.offline.text import RolePhrase, extract_role_phrases, head_noun


@dataclass
class TaskIndex:
    """O*NET tasks, occupations and job titles as TF-IDF matrices; build once with `TaskIndex.build`."""

    occupation_codes: np.ndarray  # occupations with task statements, sorted
    occupation_titles: list[str]
    task_ids: np.ndarray  # int64
    task_occupation: np.ndarray  # index into occupation_codes, per task (tasks grouped by occupation)
    task_starts: np.ndarray  # first task row of each occupation (for np.maximum.reduceat)
    task_texts: list[str]
    occupation_vectorizer: TfidfVectorizer
    occupation_matrix: sp.csr_matrix  # occupation documents
    lsa_projection: np.ndarray  # occupations x k: cosine row -> LSA query embedding
    lsa_occupations: np.ndarray  # occupations x k, unit rows
    description_vectorizer: TfidfVectorizer
    description_matrix: sp.csr_matrix
    task_vectorizer: TfidfVectorizer
    task_matrix: sp.csr_matrix
    task_features: np.ndarray  # task vocabulary, for rationales
    title_vectorizer: TfidfVectorizer
    title_matrix: sp.csr_matrix  # one row per job title, rows grouped by occupation
    title_strings: list[str]
    title_head_ids: np.ndarray  # head noun id per title
    title_weights: np.ndarray  # source weight per title
    title_starts: np.ndarray  # first title row of each occupation (for np.maximum.reduceat)
    head_ids: dict[str, int]  # head noun -> id; a role phrase must end in one of these
    opening_vectorizer: TfidfVectorizer
    opening_matrix: sp.csr_matrix  # one document of all job titles per occupation
    technology_vectorizer: CountVectorizer  # binary words of technology examples
    technology_matrix: sp.csr_matrix  # occupations x words, idf over occupations where listed, else 0
    build_seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    def __getstate__(self) -> dict[str, Any]:
        """The fields only: what is cached on the object (evidence.derived(), the labeler's benchmark contexts:
        names starting with '_') is rebuilt after loading."""
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    # -- build
    @classmethod
    def build(cls, tasks: pl.DataFrame, occupations: pl.DataFrame, job_titles: pl.DataFrame,
              technology_skills: pl.DataFrame, task_dwas: pl.DataFrame | None = None, *,
              lsa_components: int = 100) -> TaskIndex:
        """Build from the reference frames (warehouse tables onet_tasks, onet_occupations, onet_job_titles,
        onet_technology_skills; optional task_dwas with onet_soc_code, task_id, dwa_title).

        Only occupations with task statements are labeled. Without task_dwas the task and occupation
        documents lack DWA titles (slightly weaker; see docs/offline_labeler.md).
        """
        return cls(**index_fields(tasks, occupations, job_titles, technology_skills, task_dwas,
                                  lsa_components=lsa_components))

    # -- public queries
    def task_info(self) -> dict[int, tuple[str, str]]:
        """task_id -> (task statement, occupation title); the LLM labeler shows these to the model."""
        return {int(t): (s, self.occupation_titles[o])
                for t, s, o in zip(self.task_ids, self.task_texts, self.task_occupation, strict=True)}

    def shortlist(self, prompt: str, k: int, config: OfflineLabelerConfig | None = None
                  ) -> list[tuple[int, str, float]]:
        """The k best candidate tasks (task_id, onet_soc_code, score), best first, at most
        `config.shortlist_per_occupation` from one occupation so the list spans several occupations."""
        config = config or OfflineLabelerConfig()
        if not prompt or not prompt.strip() or k < 1:
            return []
        scores = self.task_scores(self.evidence([prompt], config), 0, config)
        picked = self.select_tasks(scores, k, 0.0, config.shortlist_per_occupation)
        return [(int(self.task_ids[j]), str(self.occupation_codes[self.task_occupation[j]]), float(scores[j]))
                for j in picked]

    def rank_occupations(self, prompt: str, k: int, config: OfflineLabelerConfig | None = None
                         ) -> list[tuple[str, float]]:
        """The k best occupations (onet_soc_code, combined score scaled to a best of 1), best first."""
        config = config or OfflineLabelerConfig()
        if not prompt or not prompt.strip() or k < 1:
            return []
        scores = self.evidence([prompt], config).occupation[0]
        order = np.argsort(-scores, kind="stable")[:k]
        return [(str(self.occupation_codes[j]), float(scores[j])) for j in order if scores[j] > 0]

    # -- scoring
    def evidence(self, prompts: Sequence[str], config: OfflineLabelerConfig) -> BatchEvidence:
        """Occupation and task scores for a batch of prompts (one sparse product per signal)."""
        return batch_evidence(self, prompts, config)[0]

    def evidence_with_signals(self, prompts: Sequence[str], config: OfflineLabelerConfig
                              ) -> tuple[BatchEvidence, dict[str, np.ndarray]]:
        """`evidence` plus each occupation signal on its own (n x occupations, as summed into the
        combined score: role squared, document signals scaled to a best of 1, technology scaled by the
        absence of a role) and the raw task similarities (n x tasks): the selector's features."""
        return batch_evidence(self, prompts, config)

    def task_scores(self, evidence: BatchEvidence, row: int, config: OfflineLabelerConfig) -> np.ndarray:
        """Task scores of one prompt of the batch: occupation score x (1 - w + w x relative task similarity)."""
        return evidence.occupation[row][self.task_occupation] * (
            1.0 - config.task_weight + config.task_weight * evidence.task[row])

    def occupation_roles(self, prompt: str) -> list[RolePhrase]:
        """The prompt's role phrases whose head noun is the head of some O*NET job title."""
        return [r for r in extract_role_phrases(prompt) if head_noun(r.role) in self.head_ids]

    @staticmethod
    def _cap_per_group(order: np.ndarray, groups: np.ndarray, per_group: int, limit: int) -> list[int]:
        counts: dict[int, int] = {}
        picked: list[int] = []
        for j in order:
            g = int(groups[j])
            if counts.get(g, 0) >= per_group:
                continue
            counts[g] = counts.get(g, 0) + 1
            picked.append(int(j))
            if len(picked) >= limit:
                break
        return picked

    def select_tasks(self, scores: np.ndarray, limit: int, relative_threshold: float, per_occupation: int
                     ) -> list[int]:
        """Greedy pick of task rows by score: >= relative_threshold x top, per-occupation cap, limit."""
        top = float(scores.max()) if scores.size else 0.0
        if top <= 0:
            return []
        pool = min(scores.size, max(limit * 20, 200))
        candidates = np.argpartition(-scores, pool - 1)[:pool] if pool < scores.size else np.arange(scores.size)
        # stable order: score descending, then task row (task_id order) for ties
        candidates = candidates[np.lexsort((candidates, -scores[candidates]))]
        candidates = candidates[scores[candidates] >= relative_threshold * top]
        return self._cap_per_group(candidates, self.task_occupation, per_occupation, limit)

    def best_title(self, phrases: Sequence[RolePhrase], occupation: int, config: OfflineLabelerConfig
                   ) -> tuple[str, str, float] | None:
        """(role phrase, job title, score) of the best role-title match within one occupation."""
        if not phrases:
            return None
        lo = int(self.title_starts[occupation])
        hi = int(self.title_starts[occupation + 1]) if occupation + 1 < len(self.title_starts) else len(
            self.title_strings)
        scores = role_title_scores(self, phrases, config)[:, lo:hi]
        r, t = np.unravel_index(int(np.argmax(scores)), scores.shape)
        return phrases[r].role, self.title_strings[lo + t], float(scores[r, t])
