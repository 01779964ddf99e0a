"""The neighbour step inside the estimates' split check: the labels of a split recomputed from the judge labels
of its estimation part alone (models.estimates.checks.split_sample_problem's `relabel`).

With the step on, a judged text's published (cross-fitted) labels were voted by the other judged texts of its
benchmark. In a split check those include the held-out texts, whose judge labels are the truth: a held-out
text would be labeled from the truth of its held-out neighbours, which no unjudged text of the population
ever is. So in each split every judged text is relabeled as the pipeline labels a benchmark: neighbours are
the estimation part's judged texts only (an estimation text still never votes for itself), on top of the
selector's cross-validated labels (selector_oof.json). A text the stack cannot decide (no other judged text
in its estimation part) keeps the selector's labels; a text without cross-validated selector labels (a user's
own judge sample) is stacked on the neighbours alone, never on labels its own neighbours voted for.

The stack itself was fitted on every judged text, the held-out ones among them (their judge labels were its
targets), so each benchmark is labeled with the fit of the fold that left it out (`fold_fits`, written by
`python -m pipelines.fit_labeler` beside the cross-fitted labels), as its judged texts' published
cross-fitted labels are; the full fit only for a benchmark no fold left out (a judge sample of the user's own,
which it never saw). And a judged text is compared through a TF-IDF fitted without it, as an unread text is.
Pure: frames and dicts in, arrays out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from models.labeling.neighbour_tfidf import TokenizedTexts, similarity_leaving_members_out
from models.labeling.neighbours import BenchmarkSample
from models.labeling.stacking import StackFit, label_benchmark
from models.labeling.stacking_features import SelectorLabels, TextSignals


class EstimationPartRelabeler:
    """`relabel(kept, sampled)` for split_sample_problem: kept = the split's texts as indices of the problem
    (whose text t is `text_keys[t]`), sampled = which stay judged; returns (positions in kept, task index k,
    p) of every label of the kept texts."""

    def __init__(self, fit: StackFit, judged: pl.DataFrame, text_keys: Sequence[tuple[str, str]],
                 selector_labels: SelectorLabels, selector_work: Mapping[str, bool],
                 task_index: Mapping[tuple[str, int], int], signals: TextSignals | None = None,
                 tokenize: bool = True, fold_fits: Mapping[str, StackFit] | None = None) -> None:
        self.fit = fit
        self.fold_fits = dict(fold_fits or {})  # benchmark -> the stack fitted without its judge labels
        self.judged = {(r["benchmark"], r["prompt_hash"]): r for r in judged.iter_rows(named=True)}
        self.text_keys = list(text_keys)
        self.selector_labels = selector_labels
        self.selector_work = {h: (bool(w), None) for h, w in selector_work.items()}
        self.task_index = task_index
        self.signals = signals or {}  # the judged texts' out-of-sample TextSignals (neighbour_signals.json)
        self.task_code = {t: c for c, t in task_index}
        self.n_relabeled = 0  # texts the stack decided in the last call (the rest kept the selector's labels)
        # benchmark -> (prompt_hash -> row, its texts tokenized once); `tokenize` False: the vectorizer's path
        # in every split (the tests' oracle)
        self.tokenize = tokenize
        self.tokens: dict[str, tuple[dict[str, int], TokenizedTexts]] = {}

    def __call__(self, kept: np.ndarray, sampled: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        by_benchmark: dict[str, list[int]] = {}
        for position, t in enumerate(kept.tolist()):
            by_benchmark.setdefault(self.text_keys[t][0], []).append(position)
        rows: list[tuple[int, int, float]] = []
        self.n_relabeled = 0
        for benchmark, positions in by_benchmark.items():
            hashes = [self.text_keys[int(kept[i])][1] for i in positions]
            part = [self.judged[(benchmark, h)] for i, h in zip(positions, hashes, strict=True)
                    if sampled[i] and (benchmark, h) in self.judged]
            decided: dict = {}
            # a part below the fit's min_judged keeps the selector's labels (label_benchmark's own rule): no
            # TF-IDF for it (the fifth splits: ~6 judged texts per benchmark)
            if part and len(part) >= self.fit_for(benchmark).min_judged:
                texts = [(self.judged.get((benchmark, h)) or {}).get("prompt") or "" for h in hashes]
                decided = self._decided(benchmark, part, texts, hashes)
            self.n_relabeled += len(decided)
            for i, h in zip(positions, hashes, strict=True):
                labels = decided[h].labels if h in decided else self.selector_labels.get(h, ())
                for task, code, p in labels:
                    k = self.task_index.get((self.task_code.get(int(task), code), int(task)))
                    if k is not None:
                        rows.append((i, k, float(p)))
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
        out = np.array(rows, dtype=float)
        return out[:, 0].astype(np.int64), out[:, 1].astype(np.int64), out[:, 2]

    def fit_for(self, benchmark: str) -> StackFit:
        """The stack a benchmark's texts are labeled with: its fold's, which never saw its judge labels."""
        return self.fold_fits.get(benchmark, self.fit)

    def _decided(self, benchmark: str, part: list[dict], texts: list[str], hashes: list[str]) -> dict:
        """label_benchmark of the texts with the part as neighbours; the TF-IDF cosine from the benchmark's
        texts tokenized once (neighbour_tfidf: the vectorizer's values, without tokenizing them every split)."""
        fit = self.fit_for(benchmark)
        if not self.tokenize:
            return label_benchmark(fit, BenchmarkSample.of(pl.DataFrame(part)), texts, hashes,
                                   self.selector_labels, self.selector_work, self.task_code, self.signals) or {}
        if benchmark not in self.tokens:
            keys = sorted({h for b, h in self.text_keys if b == benchmark} | {h for b, h in self.judged if b == benchmark})
            text_of = {h: (self.judged.get((benchmark, h)) or {}).get("prompt") for h in keys}
            self.tokens[benchmark] = ({h: i for i, h in enumerate(keys)},
                                      TokenizedTexts.of([t if isinstance(t, str) and t.strip() else " "
                                                         for t in text_of.values()]))
        row, tokens = self.tokens[benchmark]
        # the part's own texts compared through a TF-IDF fitted without each of them, as query_similarity does
        similarity = similarity_leaving_members_out(tokens, [row[r["prompt_hash"]] for r in part],
                                                    [row[h] for h in hashes])
        if similarity is None:  # no term in the part: the vectorizer's own path (and its error)
            return label_benchmark(fit, BenchmarkSample.of(pl.DataFrame(part)), texts, hashes,
                                   self.selector_labels, self.selector_work, self.task_code, self.signals) or {}
        sample = BenchmarkSample.of(pl.DataFrame(part), vectorize=False)
        return label_benchmark(fit, sample, texts, hashes, self.selector_labels, self.selector_work,
                               self.task_code, self.signals, similarity=similarity) or {}
