"""The `offline` labeler: a TF-IDF hybrid that maps a prompt to the O*NET tasks it exercises, no network.

How a prompt is scored (calibration and measured accuracy: docs/offline_labeler.md):

1. Occupation evidence, one score per O*NET occupation that has task statements (923 in O*NET 29.2):
   * role: prompts often open with the worker's role ("You are a Senior Staff Accountant at ...").
     The role phrase is cut out by regular expressions and matched against every O*NET job title
     (occupation titles, alternate, short and reported titles) with word uni+bigram TF-IDF; a title whose
     head noun ("accountant" in "Staff Accountant") differs from the role's head counts for less. The best
     title per occupation gives the role score; it enters squared so near-exact title matches dominate.
   * occupation document: the whole prompt vs. one document per occupation (title, description, job
     titles, task statements, DWA titles, technology examples and commodity titles), cosine TF-IDF.
   * latent semantic (LSA) similarity over the same occupation documents (computed from the 923x923 Gram
     matrix, so it is exact and deterministic, and costs one small matrix product per prompt).
   * technology mentions: the technology examples of O*NET Technology Skills ('GitLab', 'Docker',
     'Python'), each word weighted by how few occupations list it, summed per occupation. It counts only as
     far as no role was found (prompts that name a role are decided by it; terse agent tasks that name
     tools are not).
   * the prompt's opening (its first ~250 characters: the role and the setting) vs. the occupation's job
     titles and vs. the occupation document; the whole prompt vs. the occupation description; the clause
     around the role phrase vs. the occupation document.
   Each document signal is divided by its best value for the prompt (scale-free) and the signals are summed
   with the weights of `OfflineLabelerConfig`.
2. Task evidence: the prompt vs. each task statement (with its DWA titles), cosine TF-IDF.
3. A task scores `occupation score x (1 - w + w x task similarity / best task similarity within its
   occupation)`, w = `task_weight`: the best task of an occupation scores exactly the occupation's score, so
   occupations rank the same from the labels as from the evidence. A prompt keeps the best tasks while they
   score at least `relative_threshold` times the top task, at most `max_tasks` in all and
   `max_tasks_per_occupation` from one occupation (so the labels name several candidate occupations).

Everything is vectorised over a batch of prompts (sparse matrix products); the index is built once from the
reference frames (resources.readers.load_onet_reference_frames reads them from the O*NET files) and
pickles.

The package, by concern (every public name is importable from models.labeling.offline):
  config.py    versions, TAC_ROLE_TO_SOC, title-source weights, OfflineLabelerConfig, occupation_ranking_from_labels
  text.py      word tokens and features, role phrases and head nouns
  build.py     TaskIndex.build's steps (the TF-IDF matrices, technology weights, LSA)
  index.py     TaskIndex: its fields and queries (shortlist, task scores, the greedy selection)
  evidence.py  a batch's occupation signals, task similarities and role-title scores
  labeler.py   OfflineLabeler
resources/task_index.py fingerprints the source of all of these modules: a pickled index is only reused by
the code that built it.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from models.labeling.offline.config import (
        INDEX_VERSION,
        LABELER_VERSION,
        METHOD,
        TAC_ROLE_TO_SOC,
        TITLE_SOURCE_WEIGHTS,
        OfflineLabelerConfig,
        calibrated_version,
        occupation_ranking_from_labels,
        soc6,
    )
    from models.labeling.offline.evidence import BatchEvidence
    from models.labeling.offline.index import TaskIndex
    from models.labeling.offline.labeler import OfflineLabeler, PromptRanking
    from models.labeling.offline.text import (
        RolePhrase,
        extract_role_phrases,
        head_noun,
        text_features,
        word_tokens,
    )

# Each name is imported from its module when first used (PEP 562), not with the package: `config` and `text` need
# no scikit-learn, so a step that only needs the labeler's version (assets/label_validation.py, its cache key)
# does not import scikit-learn and scipy.sparse (~0.3 s) through `evidence`.
_MODULE_OF = {
    **dict.fromkeys(("INDEX_VERSION", "LABELER_VERSION", "METHOD", "TAC_ROLE_TO_SOC", "TITLE_SOURCE_WEIGHTS",
                     "OfflineLabelerConfig", "calibrated_version", "occupation_ranking_from_labels", "soc6"),
                    "config"),
    "BatchEvidence": "evidence",
    "TaskIndex": "index",
    **dict.fromkeys(("OfflineLabeler", "PromptRanking"), "labeler"),
    **dict.fromkeys(("RolePhrase", "extract_role_phrases", "head_noun", "text_features", "word_tokens"), "text"),
}

__all__ = [
    "INDEX_VERSION",
    "LABELER_VERSION",
    "METHOD",
    "TAC_ROLE_TO_SOC",
    "TITLE_SOURCE_WEIGHTS",
    "BatchEvidence",
    "OfflineLabeler",
    "OfflineLabelerConfig",
    "PromptRanking",
    "RolePhrase",
    "TaskIndex",
    "calibrated_version",
    "extract_role_phrases",
    "head_noun",
    "occupation_ranking_from_labels",
    "soc6",
    "text_features",
    "word_tokens",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
