"""The `openai` labeler: an LLM judge following the reference protocol (data/reference/PROTOCOL.md).

Two chat-completions requests per prompt (see models/labeling/llm_prompt.py for what the model is shown):

1. **Occupations**: is the prompt occupational work, and which 1-3 occupations of the candidate list (every
   O*NET occupation grouped by SOC major group, or the offline ranking's top-k) would do it? "Not work" ends
   here: an OK outcome with `is_work=False` and no labels, one request.
2. **Tasks**: the same conversation continues with the full task lists of the chosen occupations; the model
   keeps every task the prompt requires.

Any OpenAI-compatible server works (OpenAI, vLLM, Ollama, llama.cpp); see docs/llm_labeler.md. Every answer
is validated whatever the server promised: malformed JSON, empty answers, IDs that were not offered,
HTTP 429/5xx, timeouts and connection errors are retried with exponential backoff and jitter (honouring
Retry-After) up to `max_retries` per step, with a correction turn after a rejected answer, then recorded as
a failure for that prompt (`LabelOutcome.error`), never as labels. The benchmark prompt travels only in a
delimited user message; it cannot change the schema, and whatever it says, only offered IDs are accepted.

In resources/ because it talks to the network (was models/labeling/llm.py); the pure parts stay in models/:

| module | what |
|---|---|
| models/labeling/llm_config.py | `LLMConfig`: everything that shapes the requests |
| models/labeling/llm_prompt.py | the texts, schemas and answer parsers of both steps |
| models/labeling/llm_protocol.py | `TwoStepPrompts` (the messages and bodies of each step) |
| models/labeling/llm_usage.py | token accounting: `LLMLabelOutcome` per-step usage, `LabelerStats`, `estimate_cost` |
| models/labeling/llm_batch.py | Batch-API request lines, manifests and result parsing |
| resources/llm_client.py | `ChatClient` (HTTP, error classes, format fallback) and `run_step` (retries, correction turns) |
| resources/llm_batch.py | Batch-API mode: the files, uploads and polling |
| this module | `OpenAILabeler` and `label_one` (step 1, then step 2) |

No dagster, no environment. The API key is passed in (from `dagster.EnvVar("OPENAI_API_KEY")` by the
resource); it is never logged, never part of `repr`, never written anywhere.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import openai

from models.labeling import llm_prompt as lp
from models.labeling.base import LabelOutcome, PromptRecord
from models.labeling.llm_config import LLMConfig
from models.labeling.llm_prompt import Occupation, OccupationCatalogue
from models.labeling.llm_protocol import TwoStepPrompts
from models.labeling.llm_usage import LabelerStats, LLMLabelOutcome
from resources import llm_batch
from resources.llm_client import ChatClient, LabelerConfigError, StepFailed, backoff, run_step


class OpenAILabeler:
    """LLM labeler following the two-step protocol; `OpenAILabeler(index, LLMConfig(...))`.

    `index` is the offline TaskIndex: its occupations and task statements make the catalogue (or pass
    `catalogue=`), and in 'ranked' mode `index.rank_occupations(prompt, k)` gives the candidates. `prompts`
    builds what the model is shown, `chat` sends it; both share `stats`. (~95 lines, over the ~80 aim: the
    one-line delegations to `prompts` / `chat` / llm_batch are the labeler's public API, used by llm_batch,
    tests and callers.)
    """

    name = "openai"

    def __init__(self, index: Any, config: LLMConfig | None = None, *,
                 catalogue: OccupationCatalogue | None = None, sleep: Callable[[float], None] = time.sleep
                 ) -> None:
        self.index = index
        self.config = config or LLMConfig()
        self.model = self.config.model
        self.catalogue = catalogue or OccupationCatalogue.from_index(index)
        self.prompts = TwoStepPrompts(index, self.catalogue, self.config)
        self.template_version = self.prompts.template_version
        self.stats = LabelerStats()
        self.chat = ChatClient(self.config, self.stats, sleep)

    @property
    def labeler_version(self) -> str:
        return f"{self.model}+{self.template_version}"

    @property
    def commit_batch_size(self) -> int:
        """Prompts per committed batch (label_with_cache's default): the pool's size, since answers are stored
        only with their batch (see label_batches)."""
        return max(1, self.config.max_concurrency)

    @property
    def response_format(self) -> str:
        """The format in use: the configured one, or what 'auto' settled on."""
        return self.chat.format

    def __repr__(self) -> str:
        return (f"OpenAILabeler(model={self.model!r}, base_url={self.config.base_url!r}, "
                f"format={self.chat.format!r})")

    @property
    def client(self) -> openai.OpenAI:
        return self.chat.client

    def close(self) -> None:
        self.chat.close()

    # -- what the model is shown (TwoStepPrompts) and how it is sent (ChatClient)
    def offered(self, prompt: str) -> list[Occupation]:
        """The step-1 candidate occupations for this prompt."""
        return self.prompts.offered(prompt)

    def step1_messages(self, prompt: str, offered: Sequence[Occupation]) -> list[dict[str, str]]:
        return self.prompts.step1_messages(prompt, offered)

    step2_messages = staticmethod(TwoStepPrompts.step2_messages)

    def request_body(self, messages: list[dict[str, str]], step: int, ids: Sequence[int],
                     fmt: str | None = None) -> dict[str, Any]:
        """The chat-completions body of one step; `ids`: the occupation numbers / task IDs offered."""
        return self.prompts.request_body(messages, step, ids, fmt or self.chat.format)

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        """Delay before retry `attempt` (1-based): Retry-After when given, else exponential + jitter."""
        return backoff(self.config, attempt, retry_after)

    # -- labeling
    def prepare(self, prompts: Sequence[PromptRecord]) -> None:
        """The Labeler protocol's first step: each prompt is labeled alone, so there is no benchmark context."""

    def label_one(self, record: PromptRecord) -> LLMLabelOutcome:
        return label_one(self.prompts, self.chat, record)

    def label(self, prompts: list[PromptRecord]) -> list[LabelOutcome]:
        """One outcome per prompt, in order; a thread pool of `max_concurrency` requests (see label_batches)."""
        return [outcome for batch in self.label_batches([prompts]) for outcome in batch]

    def label_batches(self, batches: Sequence[Sequence[PromptRecord]]) -> Iterator[list[LabelOutcome]]:
        """Each batch's outcomes (one per prompt, in order) as soon as the batch is done, batch by batch.

        A pool of `max_concurrency` threads works one batch ahead, so batches as small as the pool (the caller
        commits each: a killed run loses at most two batches of paid answers) keep every thread busy. A
        run-stopping error (LabelerConfigError: every prompt would get it) stops new prompts, waits for those
        in flight and is raised with `finished_outcomes`, every finished outcome not yet yielded: they are
        paid for, and the caller commits them (models/labeling/cache.py)."""
        start = time.perf_counter()
        stop = threading.Event()

        def label_unless_stopped(record: PromptRecord) -> LLMLabelOutcome | None:
            if stop.is_set():
                return None  # not sent: a run-stopping error came first
            try:
                return self.label_one(record)
            except BaseException:
                stop.set()
                raise

        pool = ThreadPoolExecutor(max_workers=max(1, self.config.max_concurrency), thread_name_prefix="llm-labeler")
        queued = iter(batches)
        ahead: deque[list[Future[LLMLabelOutcome | None]]] = deque()  # submitted batches, oldest first

        def submit_next() -> None:
            batch = next(queued, None)
            if batch is not None and not stop.is_set():
                ahead.append([pool.submit(label_unless_stopped, record) for record in batch])

        try:
            submit_next()
            submit_next()
            while ahead:
                wait(ahead[0])
                outcomes = [f.result() if f.exception() is None else None for f in ahead[0]]
                if any(o is None for o in outcomes):
                    raise _stopped(ahead)
                ahead.popleft()
                submit_next()
                yield [o for o in outcomes if o is not None]
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            self.chat.count(seconds=time.perf_counter() - start)

    # -- Batch API mode (resources/llm_batch.py; the pure part: models/labeling/llm_batch.py)
    def write_batch_file(self, prompts: Sequence[PromptRecord], path: str | Path) -> Path:
        """Step 1 of a Batch-API run: the JSONL of step-1 requests and its manifest (see llm_batch)."""
        return llm_batch.write_step1(self, prompts, path)

    def submit_batch(self, path: str | Path, metadata: dict[str, str] | None = None) -> str:
        return llm_batch.submit(self, path, metadata)

    def collect_batch(self, batch_id: str, prompts: Sequence[PromptRecord], manifest_path: str | Path
                      ) -> llm_batch.BatchStep | None:
        """None while the batch runs; then a `BatchStep` (outcomes, or the step-2 file to submit next)."""
        return llm_batch.collect(self, batch_id, prompts, manifest_path)

    def run_batch(self, prompts: Sequence[PromptRecord], folder: str | Path, *, poll_s: float = 60.0,
                  max_wait_s: float = 26 * 3600.0) -> list[LabelOutcome]:
        """Both steps through the Batch API, waiting for each; one outcome per prompt, in order."""
        return llm_batch.run(self, prompts, folder, poll_s=poll_s, max_wait_s=max_wait_s)


def _stopped(ahead: deque[list[Future[LLMLabelOutcome | None]]]) -> BaseException:
    """The run-stopping error of the submitted batches (once every one is done), with the outcomes they
    finished before it as `finished_outcomes`."""
    futures = [f for batch in ahead for f in batch]
    wait(futures)
    errors = [f.exception() for f in futures if f.exception() is not None]
    error = errors[0] if errors else RuntimeError("labeling stopped")
    error.finished_outcomes = [o for f in futures if f.exception() is None and (o := f.result()) is not None]  # type: ignore[union-attr]
    return error


def label_one(prompts: TwoStepPrompts, chat: ChatClient, record: PromptRecord) -> LLMLabelOutcome:
    """One prompt through both steps: labels, a not-work answer, or a failure recorded as `error`. Only a
    run-stopping LabelerConfigError is raised: anything else going wrong with this prompt is its failure (a
    crash naming no prompt would also throw away the batch's paid answers and never reach label_failures)."""
    out = LLMLabelOutcome(prompt_hash=record.prompt_hash, attempts=0)
    try:
        return _label_steps(prompts, chat, record, out)
    except LabelerConfigError:
        raise
    except Exception as e:
        out.error = f"labeling failed: {chat.said(e)}"
        out.labels = []
        return _finish(chat, out)


def _label_steps(prompts: TwoStepPrompts, chat: ChatClient, record: PromptRecord, out: LLMLabelOutcome
                 ) -> LLMLabelOutcome:
    try:
        offered = prompts.offered(record.prompt)
    except Exception as e:  # a ranking error is this prompt's failure, not the batch's
        out.error = f"occupation ranking failed: {type(e).__name__}: {e}"
        return _finish(chat, out)
    if not offered:
        out.error = "no candidate occupation for this prompt (empty prompt or no O*NET vocabulary)"
        return _finish(chat, out)
    catalogue = prompts.catalogue
    messages = prompts.step1_messages(record.prompt, offered)
    numbers = [o.number for o in offered]
    try:
        first, first_ok = run_step(chat, out, 1, messages, prompts.schema(1, numbers),
                                   lambda c: lp.parse_step1(c, offered, catalogue, clean=chat.scrub),
                                   "occupation numbers from the list")
        out.reading = first.reading
        if not first.is_work:
            out.is_work = False
            return _finish(chat, out, valid_first_try=first_ok)
        out.occupations = [o.code for o in first.occupations]
        task_ids = [t for o in first.occupations for t, _ in o.tasks]
        labels, second_ok = run_step(
            chat, out, 2, prompts.step2_messages(messages, first), prompts.schema(2, task_ids),
            lambda c: lp.parse_step2(c, first.occupations, prompts.config.max_labels, catalogue.task_occupation,
                                     rationale=first.reading, clean=chat.scrub),
            "task_id values from the task lists")
    except StepFailed as e:
        out.error = str(e)
        out.labels = []
        return _finish(chat, out)
    out.labels = labels
    out.is_work = True
    return _finish(chat, out, valid_first_try=first_ok and second_ok)


def _finish(chat: ChatClient, out: LLMLabelOutcome, *, valid_first_try: bool = False) -> LLMLabelOutcome:
    """Count the finished prompt in the labeler's stats."""
    counts = {"ok": 1, "not_work": int(out.is_work is False)} if out.ok else {"failed": 1}
    chat.count(prompts=1, valid_first_try=int(valid_first_try), **counts)
    return out


__all__ = ["LabelerConfigError", "OpenAILabeler", "label_one"]
