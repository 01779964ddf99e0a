"""The offline labeler's constants and settings: versions, the TheAgentCompany role map, title-source
weights and `OfflineLabelerConfig` (the scoring weights and the label-selection rule)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from models.labeling.base import TaskLabel

INDEX_VERSION = "v1"  # bump when the index or the scoring changes: it is part of the label cache key
METHOD = "tfidf-hybrid"
LABELER_VERSION = f"offline-{METHOD}+{INDEX_VERSION}"


def calibrated_version(selector_fit_version: str) -> str:
    """The calibrated offline labeler's version (its label-cache key) with the selector fit of this version."""
    return f"offline-calibrated+{INDEX_VERSION}+{selector_fit_version}"


# TheAgentCompany role categories -> SOC codes or groups ('15-1200' = minor group 15-12, '13-2000' = 13-2).
# A prompt of the category counts as matched when its top occupation falls under one of the patterns.
# SDE: programmers, software developers, QA testers, web developers and designers, network/system and
#   database administrators, computer occupations n.e.c. (systems engineers/architects, web administrators).
# PM: project management specialists, IT project managers (15-1299.09), computer and information systems
#   managers, general and operations managers.
# HR: HR, compensation/benefits and training managers; HR, labor relations, compensation and training
#   specialists; HR assistants.
# Admin: administrative services and facilities managers, office supervisors, executive and other
#   secretaries/administrative assistants, general office clerks, receptionists.
# DS: data scientists (incl. business intelligence analysts), statisticians, operations research analysts,
#   database architects (incl. data warehousing specialists).
# Finance: financial managers, financial specialists (13-2: accountants, auditors, budget, credit, financial
#   and investment analysts, tax), financial clerks (43-3: bookkeeping, billing, payroll).
# 'Other' is not mapped and not scored.
TAC_ROLE_TO_SOC: dict[str, list[str]] = {
    "SDE": ["15-1251", "15-1252", "15-1253", "15-1254", "15-1255", "15-1244", "15-1242", "15-1299"],
    "PM": ["13-1082", "15-1299", "11-3021", "11-1021"],
    "HR": ["11-3121", "11-3111", "11-3131", "13-1071", "13-1075", "13-1141", "13-1151", "43-4161"],
    "Admin": ["11-3012", "11-3013", "43-1011", "43-6011", "43-6014", "43-9061", "43-4171"],
    "DS": ["15-2051", "15-2041", "15-2031", "15-1243"],
    "Finance": ["11-3031", "13-2000", "43-3000"],
}

# Official and incumbent-reported titles are the canonical names of an occupation; alternate titles are
# looser and short titles are abbreviations ("CTO"), so they count a little less.
TITLE_SOURCE_WEIGHTS: dict[str, float] = {"title": 1.0, "reported": 1.0, "alternate": 0.9, "short": 0.8}


def soc6(code: str) -> str:
    """The 6-digit SOC code of an O*NET-SOC code: '13-1021.00' -> '13-1021'."""
    return str(code)[:7]


def occupation_ranking_from_labels(labels: Iterable[TaskLabel], level: str = "onet") -> list[str]:
    """Rank the occupations of one prompt from its task labels, best first.

    An occupation ranks by its best label's score, then by the sum of its labels' scores, then by its best
    rank. The offline labeler gives an occupation's best task exactly the occupation's evidence score, so
    the best score is the occupation ranking; a plain sum would favour occupations for the number of their
    tasks kept, which the per-occupation cap makes arbitrary. level='soc' ranks 6-digit SOC codes (O*NET
    codes sharing a SOC code pool their tasks)."""
    if level not in {"onet", "soc"}:
        raise ValueError("level must be 'onet' or 'soc'")
    best: dict[str, float] = {}
    totals: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    for label in labels:
        code = soc6(label.onet_soc_code) if level == "soc" else label.onet_soc_code
        best[code] = max(best.get(code, float("-inf")), float(label.score))
        totals[code] = totals.get(code, 0.0) + float(label.score)
        best_rank[code] = min(best_rank.get(code, label.rank), label.rank)
    return sorted(totals, key=lambda c: (-round(best[c], 9), -totals[c], best_rank[c], c))


@dataclass(frozen=True)
class OfflineLabelerConfig:
    """Scoring weights and the label-selection rule; defaults calibrated in docs/offline_labeler.md."""

    max_tasks: int = 20  # cap on tasks kept per prompt
    relative_threshold: float = 0.3  # keep tasks scoring >= this x the prompt's top task score
    max_tasks_per_occupation: int = 5  # so a prompt's labels can name several candidate occupations
    task_weight: float = 0.3  # task score = occupation score x (1 - w + w x relative task similarity)
    # occupation evidence weights (role enters squared; document signals are scaled to a best of 1)
    role_weight: float = 1.0
    document_weight: float = 0.25
    lsa_weight: float = 0.5
    opening_titles_weight: float = 0.5
    opening_document_weight: float = 0.5
    description_weight: float = 0.25
    role_clause_weight: float = 0.25
    technology_weight: float = 0.5  # scaled by (1 - the prompt's best role score)
    title_head_mismatch: float = 0.3  # a title whose head noun differs from the role's counts this much
    opening_chars: int = 250  # the prompt's opening: about the first sentence, where the role is
    shortlist_per_occupation: int = 8  # shortlist(): at most this many candidates from one occupation
    batch_size: int = 256  # prompts per matrix product

    def __post_init__(self) -> None:
        if self.max_tasks < 1 or self.max_tasks_per_occupation < 1 or self.shortlist_per_occupation < 1:
            raise ValueError("max_tasks, max_tasks_per_occupation and shortlist_per_occupation must be >= 1")
        if not 0.0 <= self.relative_threshold <= 1.0 or not 0.0 <= self.task_weight <= 1.0:
            raise ValueError("relative_threshold and task_weight must be in [0, 1]")
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")

    @property
    def version(self) -> str:
        """Short fingerprint of the settings that change labels (part of template_version)."""
        return (f"k{self.max_tasks}r{self.relative_threshold:g}o{self.max_tasks_per_occupation}"
                f"w{self.task_weight:g}")

