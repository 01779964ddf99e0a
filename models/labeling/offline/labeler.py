"""The offline labeler: `OfflineLabeler` labels prompts with O*NET tasks from a TaskIndex (with or
without the fitted selector). (`occupation_ranking_from_labels`, which ranks a prompt's occupations from its
labels, is in config.py: validation reads it without importing the labeler's scikit-learn.)"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from models.labeling.base import LabelOutcome, PromptRecord, TaskLabel
from models.labeling.offline.config import (
    INDEX_VERSION,
    LABELER_VERSION,
    METHOD,
    OfflineLabelerConfig,
    calibrated_version,
)
from models.labeling.offline.evidence import BatchEvidence
from models.labeling.offline.index import TaskIndex
from models.labeling.text_signals import retriever_ranking


@dataclass(frozen=True)
class PromptRanking:
    """The ranked candidates of one prompt (not its labels), best first. GDPval/TheAgentCompany occupation
    top-k are measured on the retriever's occupation ranking (it reads a prompt's role best: GDPval top-1
    0.59 against 0.46 for the selector's), JobBench hit@k on the selector's task ranking."""

    occupations: list[tuple[str, float]]  # the retriever's ranking (onet_soc_code, combined score)
    tasks: list[tuple[int, str, float]]  # (task_id, onet_soc_code, p_exercised), by the selector
    selected_occupations: list[tuple[str, float]]  # the selector's (onet_soc_code, p listed by the judge)


class OfflineLabeler:
    """Labels prompts with O*NET tasks from a `TaskIndex`; implements models.labeling.base.Labeler.

    With a `selector` (the fitted models/labeling/selector.py, `OfflineLabeler.calibrated`) a prompt gets the
    tasks it exercises with calibrated probabilities, or none when it is not occupational work. Without one
    it keeps the retriever's best tasks (up to `config.max_tasks`), the method before the selector existed.
    """

    name = "offline"
    model = METHOD

    def __init__(self, index: TaskIndex, config: OfflineLabelerConfig = OfflineLabelerConfig(),
                 selector: Any = None) -> None:
        from models.labeling.selector import Selector

        self.index = index
        self.config = config
        self.selector = Selector(selector, index) if selector is not None else None
        self.contexts: dict[str, Any] = {}  # benchmark -> BenchmarkContext (see prepare)
        self.context_digests_by_benchmark: dict[str, str] = {}  # benchmark -> digest of its context's sample
        # text -> (evidence, signals, row) of the context sample when prepare() saw one benchmark
        self.prepared: dict[str, tuple[BatchEvidence, dict[str, np.ndarray], int]] = {}
        if self.selector is not None:
            self.model = f"{METHOD}+selector"
            self.template_version = f"{INDEX_VERSION}-{self.selector.fit.version}"
        else:
            self.template_version = f"{INDEX_VERSION}-{config.version}"

    @classmethod
    def calibrated(cls, index: TaskIndex, fit: Any) -> OfflineLabeler:
        """The default labeler: the retriever plus the fitted selector `fit` (a SelectorFit; the versioned one
        in models/labeling/selector_fit.json is `resources.readers.load_selector_fit()`)."""
        return cls(index, OfflineLabelerConfig(), fit)

    @property
    def labeler_version(self) -> str:
        if self.selector is not None:
            return calibrated_version(self.selector.fit.version)
        return LABELER_VERSION

    def prepare(self, prompts: Sequence[PromptRecord]) -> None:
        """Pool the evidence of each benchmark among `prompts` (all of a benchmark's landed prompts: the
        context is drawn from them) into its BenchmarkContext. label() and rankings() use the context of a
        prompt's benchmark; a benchmark not prepared gets its context from the prompts it is labeled with.
        A cached label set made with another context (an edited prompt in the sample) is labeled again:
        its outcome carries the context's digest (`context_digests`, models/labeling/cache.py plan_labeling)."""
        if self.selector is None:
            return
        self.prepared = {}
        memo = _context_memo(self.index)
        samples = _context_samples(prompts)
        for benchmark, sample in samples.items():
            digest = _texts_digest(sample)
            self.context_digests_by_benchmark[benchmark] = digest
            key = (self.selector.fit.version, self.config, digest)
            if key in memo:  # e.g. label validation after the partitions' labeling, in one run_all process
                self.contexts[benchmark] = memo[key]
                continue
            evidence, signals = self.index.evidence_with_signals(sample, self.config)
            self.contexts[benchmark] = self.selector.context(sample, evidence.occupation, evidence.task, signals)
            _remember(memo, key, self.contexts[benchmark])
            if len(samples) == 1:  # a partition's prompts: label() reuses the sample's evidence
                self.prepared = {text: (evidence, signals, row) for row, text in enumerate(sample)}

    def context_digests(self, prompts: Sequence[PromptRecord]) -> dict[str, str]:
        """benchmark -> the digest of the texts its context is computed from (with the fit and config, which
        are in the cache key, the context is a function of them); empty without a selector (no context). Cheap:
        no text is scored."""
        if self.selector is None:
            return {}
        return {benchmark: _texts_digest(sample) for benchmark, sample in _context_samples(prompts).items()}

    def _evidence(self, texts: list[str]) -> tuple[BatchEvidence, dict[str, np.ndarray]]:
        """The batch's evidence, rows of texts prepare() scored taken from there (every row of the evidence
        depends on its own text only, so the rows are the ones a fresh computation gives)."""
        if not any(t in self.prepared for t in texts):
            return self.index.evidence_with_signals(texts, self.config)
        fresh = [t for t in dict.fromkeys(texts) if t not in self.prepared]
        rows = dict(self.prepared)
        if fresh:
            evidence, signals = self.index.evidence_with_signals(fresh, self.config)
            rows.update({t: (evidence, signals, r) for r, t in enumerate(fresh)})
        parts = [rows[t] for t in texts]
        queries = sp.vstack([e.task_queries[r] for e, _, r in parts], format="csr")
        queries.sort_indices()
        evidence = BatchEvidence(np.stack([e.occupation[r] for e, _, r in parts]),
                                 np.stack([e.task[r] for e, _, r in parts]),
                                 np.stack([e.role[r] for e, _, r in parts]),
                                 [e.roles[r] for e, _, r in parts], queries)
        signals = {k: np.stack([s[k][r] for _, s, r in parts]) for k in parts[0][1]}
        return evidence, signals

    def _context(self, benchmark: str, records: Sequence[PromptRecord]) -> Any:
        if benchmark not in self.contexts:
            self.prepare([r for r in records if r.benchmark == benchmark])
        return self.contexts[benchmark]

    def rankings(self, prompts: Sequence[PromptRecord]) -> list[PromptRanking]:
        """The ranked candidates of each prompt (needs a selector): what validation's top-k metrics read."""
        if self.selector is None:
            raise ValueError("rankings() needs the calibrated selector (OfflineLabeler.calibrated)")
        index = self.index
        out: list[PromptRanking] = []
        size = self.config.batch_size
        for start in range(0, len(prompts), size):
            batch = list(prompts[start: start + size])
            texts = [p.prompt if isinstance(p.prompt, str) and p.prompt.strip() else " " for p in batch]
            evidence, signals = index.evidence_with_signals(texts, self.config)
            selections = self._select_batch(batch, prompts, texts, evidence, signals)
            for row, sel in enumerate(selections):
                combined = evidence.occupation[row]
                order = np.argsort(-combined, kind="stable")[:40]
                out.append(PromptRanking(
                    [(str(index.occupation_codes[o]), float(combined[o])) for o in order if combined[o] > 0],
                    [(int(index.task_ids[j]), str(index.occupation_codes[index.task_occupation[j]]), p)
                     for j, p in sel.ranking],
                    [(str(index.occupation_codes[o]), p) for o, p in sel.occupations]))
        return out

    def label(self, prompts: list[PromptRecord]) -> list[LabelOutcome]:
        """One outcome per prompt, in order; an empty prompt or one with no O*NET vocabulary gets an error."""
        outcomes: list[LabelOutcome | None] = [None] * len(prompts)
        usable: list[int] = []
        for i, record in enumerate(prompts):
            if not isinstance(record.prompt, str) or not record.prompt.strip():
                outcomes[i] = LabelOutcome(prompt_hash=record.prompt_hash, error="empty prompt")
            else:
                usable.append(i)
        size = self.config.batch_size
        for start in range(0, len(usable), size):
            batch = usable[start: start + size]
            texts = [prompts[i].prompt for i in batch]
            try:
                evidence, signals = self._evidence(texts)
                selections = (self._select_batch([prompts[i] for i in batch], prompts, texts, evidence, signals)
                              if self.selector is not None else None)
            except Exception as exc:  # never fail a whole run for one batch: record it per prompt
                for i in batch:
                    outcomes[i] = LabelOutcome(prompt_hash=prompts[i].prompt_hash,
                                               error=f"scoring failed: {type(exc).__name__}: {exc}")
                continue
            for row, i in enumerate(batch):
                outcomes[i] = (self._selected_outcome(prompts[i], evidence, row, selections[row])
                               if selections is not None else self._outcome(prompts[i], evidence, row))
                if selections is not None:  # the context _select_batch used (prepared for the benchmark)
                    outcomes[i].context = self.context_digests_by_benchmark.get(prompts[i].benchmark)  # type: ignore[union-attr]
        return [o for o in outcomes if o is not None]

    def _outcome(self, record: PromptRecord, evidence: BatchEvidence, row: int) -> LabelOutcome:
        try:
            index, config = self.index, self.config
            scores = index.task_scores(evidence, row, config)
            picked = index.select_tasks(scores, config.max_tasks, config.relative_threshold,
                                   config.max_tasks_per_occupation)
            if not picked:
                return LabelOutcome(prompt_hash=record.prompt_hash,
                                    error="no O*NET vocabulary in the prompt: nothing to match")
            rationales = self._rationales(evidence, row, picked)
            labels = [
                TaskLabel(task_id=int(index.task_ids[j]),
                          onet_soc_code=str(index.occupation_codes[index.task_occupation[j]]),
                          rank=rank, score=round(float(scores[j]), 6), rationale=rationales[k])
                for k, (rank, j) in enumerate(zip(range(1, len(picked) + 1), picked, strict=True))
            ]
            return LabelOutcome(prompt_hash=record.prompt_hash, labels=labels)
        except Exception as exc:  # one bad prompt must not sink the batch
            return LabelOutcome(prompt_hash=record.prompt_hash, error=f"labeling failed: {type(exc).__name__}: {exc}")

    def _select_batch(self, records: list[PromptRecord], everything: Sequence[PromptRecord], texts: list[str],
                      evidence: BatchEvidence, signals: dict[str, np.ndarray]) -> list[Any]:
        """The selector's decisions for a batch, each prompt with its own benchmark's context."""
        assert self.selector is not None
        out: list[Any] = [None] * len(records)
        groups: dict[str, list[int]] = {}
        for row, record in enumerate(records):
            groups.setdefault(record.benchmark, []).append(row)
        for benchmark, rows in groups.items():
            picked = np.asarray(rows)
            part = {k: v[picked] for k, v in signals.items()}
            decisions = self.selector.select([texts[r] for r in rows], evidence.occupation[picked],
                                             evidence.task[picked], part, self._context(benchmark, everything))
            for r, decision in zip(rows, decisions, strict=True):
                out[r] = decision
        return out

    def _selected_outcome(self, record: PromptRecord, evidence: BatchEvidence, row: int, selection: Any
                          ) -> LabelOutcome:
        """The selector's decision as an outcome: no labels for a not-work prompt, else its kept tasks."""
        try:
            p_work = round(selection.p_work, 6)
            signals = (selection.text_logit, retriever_ranking(self.index, evidence.occupation[row], evidence.task[row]))
            if not selection.is_work:
                return LabelOutcome(prompt_hash=record.prompt_hash, is_work=False, p_work=p_work,
                                    text_signals=signals)
            picked = [j for j, _ in selection.tasks]
            rationales = self._rationales(evidence, row, picked)
            index = self.index
            labels = [
                TaskLabel(task_id=int(index.task_ids[j]),
                          onet_soc_code=str(index.occupation_codes[index.task_occupation[j]]),
                          rank=rank, score=round(p, 6), rationale=rationales[rank - 1], p_exercised=round(p, 6))
                for rank, (j, p) in enumerate(selection.tasks, start=1)
            ]
            return LabelOutcome(prompt_hash=record.prompt_hash, labels=labels, is_work=True, p_work=p_work,
                                text_signals=signals)
        except Exception as exc:  # one bad prompt must not sink the batch
            return LabelOutcome(prompt_hash=record.prompt_hash, error=f"labeling failed: {type(exc).__name__}: {exc}")

    def _rationales(self, evidence: BatchEvidence, row: int, picked: list[int]) -> list[str]:
        """'role "Staff Accountant" ~ title "Staff Accountant"; terms: audit, sample' per picked task."""
        index = self.index
        queries = evidence.task_queries
        start, end = queries.indptr[row], queries.indptr[row + 1]
        query_columns, query_values = queries.indices[start:end], queries.data[start:end]
        tasks = index.task_matrix
        titles: dict[int, tuple[str, str, float] | None] = {}
        out: list[str] = []
        for j in picked:
            occupation = int(index.task_occupation[j])
            parts: list[str] = []
            if evidence.role[row, occupation] >= 0.5:
                if occupation not in titles:
                    titles[occupation] = index.best_title(evidence.roles[row], occupation, self.config)
                match = titles[occupation]
                if match is not None:
                    parts.append(f'role "{match[0]}" ~ title "{match[1]}"')
            # the terms the task shares with the prompt, by the product of their weights (as the elementwise
            # product of the two sparse rows: the same float32 products, zeros dropped)
            lo, hi = tasks.indptr[j], tasks.indptr[j + 1]
            cols, in_task, in_query = np.intersect1d(tasks.indices[lo:hi], query_columns, assume_unique=True,
                                                     return_indices=True)
            data = tasks.data[lo:hi][in_task] * query_values[in_query]
            cols, data = cols[data != 0], data[data != 0]
            if cols.size:
                top = cols[np.lexsort((cols, -data))[:4]]
                parts.append("terms: " + ", ".join(str(index.task_features[c]) for c in top))
            if not parts:
                parts.append(f"occupation match: {index.occupation_titles[occupation]}")
            out.append("; ".join(parts))
        return out


# ------------------------------------------------------------------------------------ the contexts' memo
# A benchmark's context is a pure function of the index, the selector fit, the config and its sampled texts (it
# reads texts, never labels), so one computed by a partition's labeling is the one label validation would
# compute for the same sample: kept on the index object (like evidence.derived; not pickled), per process.
CONTEXT_MEMO_SIZE = 1024


def _context_memo(index: TaskIndex) -> dict[tuple[Any, ...], Any]:
    return index.__dict__.setdefault("_contexts", {})


def _context_samples(prompts: Sequence[PromptRecord]) -> dict[str, list[str]]:
    """benchmark -> the texts its context is computed from (`context_sample` of its non-empty prompts)."""
    from models.labeling.selector import context_sample

    by_benchmark: dict[str, list[PromptRecord]] = {}
    for record in prompts:
        if isinstance(record.prompt, str) and record.prompt.strip():
            by_benchmark.setdefault(record.benchmark, []).append(record)
    return {benchmark: [records[i].prompt for i in context_sample([r.prompt_hash for r in records])]
            for benchmark, records in by_benchmark.items()}


def _texts_digest(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def computed_contexts(index: TaskIndex) -> dict[tuple[Any, ...], Any]:
    """The contexts this process computed over `index` (a label worker hands them to the pool's process)."""
    return dict(_context_memo(index))


def adopt_contexts(index: TaskIndex, contexts: dict[tuple[Any, ...], Any]) -> None:
    """Remember contexts computed over the same index in another process (the label workers), so label
    validation in this process reuses them as it does those of in-process labeling."""
    memo = _context_memo(index)
    for key, context in contexts.items():
        _remember(memo, key, context)


def _remember(memo: dict[tuple[Any, ...], Any], key: tuple[Any, ...], context: Any) -> None:
    if len(memo) >= CONTEXT_MEMO_SIZE:
        memo.pop(next(iter(memo)))  # the oldest first: a long-lived process keeps a bounded memo
    memo[key] = context
