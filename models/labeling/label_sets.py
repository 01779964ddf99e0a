"""A prompt's label set as the label cache stores it: the labels, the work decision and (for a labeler whose labels
depend on its benchmark's context) the context's digest, to and from the cache's JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from models.labeling.base import TaskLabel, TextSignal


class LabelSet(list):
    """A prompt's labels (a list of TaskLabel) with the labeler's work decision beside them: is_work False
    means "not occupational work" (and no labels); None means the labeler makes no such decision."""

    def __init__(self, labels: Sequence[TaskLabel] = (), is_work: bool | None = None,
                 p_work: float | None = None, text_signals: TextSignal | None = None,
                 context: str | None = None) -> None:
        super().__init__(labels)
        self.is_work = is_work
        self.p_work = p_work
        self.context = context  # LabelOutcome.context: the benchmark context the labels were made with
        # LabelOutcome.text_signals of a prompt labeled in this run (the neighbour step reads it); None for
        # labels read from the cache
        self.text_signals = text_signals


def labels_to_json(labels: Sequence[TaskLabel], is_work: bool | None = None, p_work: float | None = None,
                   context: str | None = None) -> str:
    """`{"work": [is_work, p_work], "labels": [[task_id, soc, rank, score, rationale, p_exercised], ...]}`
    (+ `"context"`: the benchmark context's digest, for a labeler that has one); the work decision and the
    context default to the LabelSet's own."""
    if is_work is None and isinstance(labels, LabelSet):
        is_work, p_work = labels.is_work, labels.p_work
    if context is None and isinstance(labels, LabelSet):
        context = labels.context
    rows = [[lab.task_id, lab.onet_soc_code, lab.rank, lab.score, lab.rationale, lab.p_exercised]
            for lab in labels]
    data: dict[str, Any] = {"work": [is_work, p_work], "labels": rows}
    if context is not None:
        data["context"] = context
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def labels_from_json(text: str) -> LabelSet:
    """Inverse of labels_to_json; also reads the earlier layout (a bare list of 5-element rows)."""
    data = json.loads(text)
    is_work, p_work, context = (None, None, None)
    if isinstance(data, dict):
        is_work, p_work = data.get("work") or (None, None)
        context = data.get("context")
        data = data.get("labels") or []
    labels = [TaskLabel(task_id=int(row[0]), onet_soc_code=str(row[1]), rank=int(row[2]), score=float(row[3]),
                        rationale=row[4], p_exercised=float(row[5]) if len(row) > 5 and row[5] is not None
                        else None)
              for row in data]
    return LabelSet(labels, is_work, None if p_work is None else float(p_work), context=context)
