"""What the neighbour step (models/labeling/stacking.py) reads of a text besides its neighbours' votes: the
selector's prompt-level work logit and the retriever's best occupations (stacking_features.TextSignals).

The calibrated offline labeler computes both while it labels (OfflineLabeler.label puts them on each
LabelOutcome as `text_signals`), so the step reads them from there; `compute_text_signals` computes them
afresh for texts labeled earlier (their labels came from the label cache). Every evidence row depends on its
own text only, so both paths give the same numbers (tests/test_selector.py compares them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from models.labeling.base import TextSignal
from models.labeling.stacking_features import RETRIEVER_TOP


def compute_text_signals(index: Any, selector_fit: Any, config: Any, texts: Mapping[str, str],
                         top: int = RETRIEVER_TOP) -> dict[str, TextSignal]:
    """stacking.TextSignals of `texts` (prompt_hash -> text) from the TaskIndex's evidence and the selector fit's
    work model (its prompt-level logit before benchmark pooling), in batches of config.batch_size."""
    from models.labeling.selector import work_dense_features

    out: dict[str, TextSignal] = {}
    items = list(texts.items())
    for start in range(0, len(items), max(1, int(config.batch_size))):
        batch = items[start: start + int(config.batch_size)]
        words = [t if isinstance(t, str) and t.strip() else " " for _, t in batch]
        evidence, signals = index.evidence_with_signals(words, config)
        logits = selector_fit.work.text_logit(words, work_dense_features(signals, words))
        for row, (h, _) in enumerate(batch):
            out[h] = (float(logits[row]), retriever_ranking(index, evidence.occupation[row], evidence.task[row], top))
    return out


_TASKS_BY_OCCUPATION: dict[int, list[np.ndarray]] = {}  # id(index) -> task rows of each occupation


def _tasks_by_occupation(index: Any) -> list[np.ndarray]:
    key = id(index)
    if key not in _TASKS_BY_OCCUPATION:
        occupation_of = np.asarray(index.task_occupation)
        order = np.argsort(occupation_of, kind="stable")
        bounds = np.searchsorted(occupation_of[order], np.arange(len(index.occupation_codes) + 1))
        _TASKS_BY_OCCUPATION.clear()  # one index per process
        _TASKS_BY_OCCUPATION[key] = [order[bounds[i]:bounds[i + 1]] for i in range(len(index.occupation_codes))]
    return _TASKS_BY_OCCUPATION[key]


def retriever_ranking(index: Any, occupation: np.ndarray, task: np.ndarray, top: int = RETRIEVER_TOP
                      ) -> list[tuple[str, float, int]]:
    """The retriever's `top` best occupations of a text as (code, combined score, its best task by the task
    evidence; -1 without one) from one row of the index's evidence."""
    order = np.argsort(-occupation, kind="stable")[:top]
    out: list[tuple[str, float, int]] = []
    by_occupation = _tasks_by_occupation(index)
    for o in order:
        if occupation[o] <= 0:
            continue
        members = by_occupation[int(o)]
        best = int(index.task_ids[members[int(np.argmax(task[members]))]]) if len(members) else -1
        out.append((str(index.occupation_codes[o]), float(occupation[o]), best))
    return out
