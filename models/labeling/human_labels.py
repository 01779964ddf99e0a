"""Human labels in the mirrored benchmarks, and the measurements of the offline labeler against them.

* GDPval: `occupation` (an O*NET title) on 110 of 220 prompts -> 6-digit SOC codes.
* TheAgentCompany: `occupation` role category (SDE, PM, HR, Admin, DS, Finance, Other) -> SOC patterns of
  `models.labeling.offline.TAC_ROLE_TO_SOC`.
* JobBench: `onet_task` (the task statement a showcase task was built on) -> O*NET task IDs.

Each `*_gold` takes the JSON objects of the benchmark's prompts.jsonl (`parse_prompt_lines` of its bytes;
`resources.readers.read_mirror_prompts(mirror, benchmark)` reads the mirror's file). Used by
tests/test_offline_labeler.py and for the accuracy figures of docs/offline_labeler.md.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from models.labeling.base import LabelOutcome, PromptRecord
from models.labeling.offline import (
    TAC_ROLE_TO_SOC,
    occupation_ranking_from_labels,
    soc6,
    word_tokens,
)

# A title naming a SOC group rather than one O*NET occupation (the only GDPval title not in O*NET 29.2).
GROUP_TITLES: dict[str, tuple[str, ...]] = {
    "Buyers and Purchasing Agents": ("13-1021", "13-1022", "13-1023"),  # SOC 13-1020
}


@dataclass(frozen=True)
class GoldPrompt:
    record: PromptRecord
    gold: frozenset[str]  # 6-digit SOC codes (GDPval), SOC patterns (TAC) or task IDs as str (JobBench)
    label: str  # the human label as written


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def parse_prompt_lines(data: bytes) -> list[dict]:
    """The JSON objects of a prompts.jsonl file's bytes, one per non-blank line (lines as a text file splits
    them: never on U+2028, which prompts contain)."""
    with io.TextIOWrapper(io.BytesIO(data), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _record(row: dict) -> PromptRecord:
    return PromptRecord(row["benchmark"], str(row["prompt_id"]), prompt_hash(row["prompt"]), row["prompt"])


def gdpval_gold(prompts: Iterable[dict], occupations: pl.DataFrame) -> list[GoldPrompt]:
    """GDPval prompts with a human occupation label; gold = the 6-digit SOC codes of that title."""
    by_title: dict[str, set[str]] = {}
    for code, title in occupations.select("onet_soc_code", "title").iter_rows():
        by_title.setdefault(title, set()).add(soc6(code))
    out = []
    for row in prompts:
        title = row.get("occupation")
        if not title:
            continue
        codes = by_title.get(title) or set(GROUP_TITLES.get(title, ()))
        if not codes:
            raise ValueError(f"GDPval occupation title not in O*NET: {title!r}")
        out.append(GoldPrompt(_record(row), frozenset(codes), title))
    return out


def tac_role(category: str) -> str:
    """'Software Development Engineer (SDE)' -> 'SDE'; 'Finance' -> 'Finance'."""
    found = re.search(r"\(([^)]+)\)\s*$", category)
    return found.group(1).strip() if found else category.strip()


def tac_gold(prompts: Iterable[dict], role_to_soc: dict[str, list[str]] = TAC_ROLE_TO_SOC) -> list[GoldPrompt]:
    """TheAgentCompany prompts whose role category is mapped (not 'Other', not missing)."""
    out = []
    for row in prompts:
        if not row.get("occupation"):
            continue
        role = tac_role(row["occupation"])
        if role in role_to_soc:
            out.append(GoldPrompt(_record(row), frozenset(role_to_soc[role]), role))
    return out


def soc_matches(code: str, pattern: str) -> bool:
    """'15-1252' matches '15-1252'; a group pattern matches by prefix ('13-2000' -> '13-2', '13-1020' ->
    '13-102')."""
    code, pattern = soc6(code), soc6(pattern)
    prefix = pattern.rstrip("0") if pattern.endswith("0") else pattern
    return code.startswith(prefix.rstrip("-"))


def jobbench_gold(prompts: Iterable[dict], tasks: pl.DataFrame, min_overlap: float = 0.5) -> list[GoldPrompt]:
    """JobBench prompts; gold = the task IDs whose statement equals the labeled `onet_task`, else (the
    statement was reworded between O*NET releases) the task with the largest word overlap (Jaccard of
    `word_tokens`, at least `min_overlap`)."""
    ids_by_text: dict[str, set[str]] = {}
    token_sets: list[tuple[str, frozenset[str]]] = []
    for task_id, text in tasks.select("task_id", "task").iter_rows():
        ids_by_text.setdefault(text.strip().casefold(), set()).add(str(task_id))
        token_sets.append((str(task_id), frozenset(word_tokens(text))))
    out = []
    for row in prompts:
        text = (row.get("onet_task") or "").strip()
        if not text:
            continue
        gold = ids_by_text.get(text.casefold(), set())
        if not gold:
            wanted = frozenset(word_tokens(text))
            overlap, best = max(((len(wanted & toks) / max(len(wanted | toks), 1), tid)
                                 for tid, toks in token_sets), default=(0.0, ""))
            gold = {best} if overlap >= min_overlap else set()
        out.append(GoldPrompt(_record(row), frozenset(gold), text))
    return out


# ------------------------------------------------------------------------------------------------ metrics
def soc_ranking(outcome: LabelOutcome) -> list[str]:
    """6-digit SOC codes ranked from the outcome's labels (occupation_ranking_from_labels, level='soc')."""
    return occupation_ranking_from_labels(outcome.labels, level="soc") if outcome.ok else []


def reciprocal_rank_ranking(outcome: LabelOutcome) -> list[str]:
    """The validation stage's ranking (models.validation.rank_occupations): SOC codes by the sum of 1/rank
    of their tasks, ties by best rank then code."""
    total: dict[str, float] = {}
    best: dict[str, int] = {}
    for label in outcome.labels:
        code = soc6(label.onet_soc_code)
        total[code] = total.get(code, 0.0) + 1.0 / label.rank
        best[code] = min(best.get(code, label.rank), label.rank)
    return sorted(total, key=lambda c: (-total[c], best[c], c))


def topk_accuracy(rankings: Sequence[Sequence[str]], gold: Sequence[Iterable[str]], k: int,
                  match: Callable[[str, str], bool] = lambda code, g: code == g) -> float:
    hits = [any(match(code, g) for code in ranking[:k] for g in golds) for ranking, golds in zip(
        rankings, gold, strict=True)]
    return float(np.mean(hits)) if hits else float("nan")


@dataclass(frozen=True)
class OccupationAccuracy:
    n: int
    top1: float
    top5: float
    top1_reciprocal_rank: float  # with the validation stage's 1/rank ranking
    top5_reciprocal_rank: float
    mean_labels: float
    mean_occupations: float
    gold_share: float  # mean share of a prompt's labels whose occupation is the gold one


def occupation_accuracy(outcomes: Sequence[LabelOutcome], gold: Sequence[GoldPrompt],
                        match: Callable[[str, str], bool] | None = None) -> OccupationAccuracy:
    match = match or (lambda code, g: code == g)
    golds = [g.gold for g in gold]
    by_sum = [soc_ranking(o) for o in outcomes]
    by_rr = [reciprocal_rank_ranking(o) for o in outcomes]
    shares = [np.mean([any(match(soc6(lab.onet_soc_code), g) for g in gp.gold) for lab in o.labels])
              for o, gp in zip(outcomes, gold, strict=True) if o.labels]
    return OccupationAccuracy(
        n=len(gold),
        top1=topk_accuracy(by_sum, golds, 1, match), top5=topk_accuracy(by_sum, golds, 5, match),
        top1_reciprocal_rank=topk_accuracy(by_rr, golds, 1, match),
        top5_reciprocal_rank=topk_accuracy(by_rr, golds, 5, match),
        mean_labels=float(np.mean([len(o.labels) for o in outcomes])),
        mean_occupations=float(np.mean([len(r) for r in by_sum])),
        gold_share=float(np.mean(shares)) if shares else float("nan"),
    )


def jobbench_task_recall(outcomes: Sequence[LabelOutcome], gold: Sequence[GoldPrompt]) -> tuple[float, list]:
    """Share of JobBench prompts whose gold task is among the labels, and the gold task's rank per prompt
    (None when not labeled)."""
    ranks: list[int | None] = []
    for outcome, gp in zip(outcomes, gold, strict=True):
        found = [lab.rank for lab in outcome.labels if str(lab.task_id) in gp.gold]
        ranks.append(min(found) if found else None)
    return float(np.mean([r is not None for r in ranks])) if ranks else float("nan"), ranks
