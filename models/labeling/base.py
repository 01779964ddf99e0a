"""The labeler interface: every labeler maps prompts to *all* the O*NET tasks they exercise."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

# what the neighbour step reads of a text besides its neighbours (models/labeling/text_signals.py): the
# selector's prompt-level work logit and the retriever's best occupations as (code, score, best task id)
TextSignal = tuple[float, list[tuple[str, float, int]]]


@dataclass(frozen=True)
class PromptRecord:
    benchmark: str
    prompt_id: str
    prompt_hash: str
    prompt: str


@dataclass(frozen=True)
class TaskLabel:
    task_id: int
    onet_soc_code: str
    rank: int  # 1 = the task the prompt exercises most clearly
    score: float  # labeler-specific strength, higher is stronger
    rationale: str | None = None
    p_exercised: float | None = None  # calibrated probability that the prompt exercises the task


@dataclass
class LabelOutcome:
    """What a labeler returns for one prompt: labels, or a failure recorded instead of labels."""

    prompt_hash: str
    labels: list[TaskLabel] = field(default_factory=list)
    error: str | None = None  # set when the prompt could not be labeled; labels is then empty
    attempts: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    # The work decision: a prompt that is not occupational work is an ok outcome with no labels.
    is_work: bool | None = None
    p_work: float | None = None
    # what the calibrated offline labeler saw of the text (TextSignal), for the
    # neighbour step of this run; never stored in the label cache
    text_signals: TextSignal | None = None
    # the digest of the benchmark context the labels were made with (the calibrated offline labeler's: its
    # labels depend on the benchmark's other texts); stored with them, so a cached label set made with another
    # context is labeled again (models/labeling/cache.py plan_labeling)
    context: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Labeler(Protocol):
    """One interface for the offline and the LLM labeler.

    `name` is 'offline' or 'openai'; `model` and `template_version` are part of the cache key
    (prompt_hash, onet_version, name, model, template_version).
    """

    name: str
    model: str
    template_version: str

    @property
    def labeler_version(self) -> str:  # e.g. "gpt-4o-mini+t3" or "tfidf-hybrid+v2"
        ...

    def prepare(self, prompts: Sequence[PromptRecord]) -> None:
        """Before labeling: see every prompt of the benchmarks to be labeled (cached ones too), e.g. to pool a
        benchmark-level context (the offline labeler's BenchmarkContext). A labeler that needs none does nothing."""
        ...

    def label(self, prompts: list[PromptRecord]) -> list[LabelOutcome]:
        """Label a batch; one outcome per prompt, in order. Never raises for one bad prompt."""
        ...


def stacked_on(labeler_version: str) -> str | None:
    """The labeler version a neighbour-stacked labeler_version (`<selector labeler version>+n<10 hex>`, as
    models/labeling/stacking.py makes it) was stacked on, or None for any other version."""
    head, _, tail = labeler_version.rpartition("+")
    return head if head and len(tail) == 11 and tail[0] == "n" and all(c in "0123456789abcdef" for c in tail[1:]) \
        else None
