"""The `openai` labeler: an LLM judge following the reference protocol (data/reference/PROTOCOL.md).

Two chat-completions requests per prompt (see models/labeling/llm_prompt.py for what the model is shown):

1. **Occupations**: is the prompt occupational work, and which 1-3 occupations of the candidate list (every
   O*NET occupation grouped by SOC major group, or the offline ranking's top-k) would do it? "Not work" ends
   here: an OK outcome with `is_work=False` and no labels, one request.
2. **Tasks**: the same conversation continues with the full task lists of the chosen occupations; the model
   keeps every task the prompt requires.

Any OpenAI-compatible server works (OpenAI, vLLM, Ollama, llama.cpp); see docs/llm_labeler.md. Every answer
is validated here whatever the server promised: malformed JSON, empty answers, IDs that were not offered,
HTTP 429/5xx, timeouts and connection errors are retried with exponential backoff and jitter (honouring
Retry-After) up to `max_retries` per step, with a correction turn after a rejected answer, then recorded as
a failure for that prompt (`LabelOutcome.error`), never as labels. The benchmark prompt travels only in a
delimited user message; it cannot change the schema, and whatever it says, only offered IDs are accepted.

Token usage is counted per step (`LLMLabelOutcome.step1_*`, `step2_*`), including the cached input tokens
the server reports (`usage.prompt_tokens_details.cached_tokens`), summed over all attempts since rejected
answers are billed too. Batch-API mode: models/labeling/llm_batch.py.

Pure module: no dagster. The API key is passed in (from `dagster.EnvVar("OPENAI_API_KEY")` by the resource);
it is never logged, never part of `repr`, never written anywhere.
"""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import openai

from models.labeling import llm_prompt as lp
from models.labeling.base import LabelOutcome, PromptRecord
from models.labeling.llm_prompt import (  # noqa: F401  (re-exported: the labeler's public names)
    AnswerError,
    Occupation,
    OccupationCatalogue,
    Step1Answer,
    delimit_prompt,
    estimate_tokens,
    parse_step1,
    parse_step2,
    step1_schema,
    step2_schema,
    truncate_prompt,
)

log = logging.getLogger(__name__)

TEMPLATE_VERSION = "t2"  # bump when a template or a schema changes (part of the cache key)
RESPONSE_FORMATS = ("json_schema", "json_object", "auto")
NO_KEY = "sk-no-key-needed"  # local servers ignore the key, the client insists on one
T = TypeVar("T")


# ----------------------------------------------------------------------------------------------- config
@dataclass(frozen=True)
class LLMConfig:
    """Everything that shapes the requests. `api_key` is excluded from repr and never logged."""

    model: str = "gpt-4o-mini"
    base_url: str | None = None  # None = api.openai.com; e.g. http://127.0.0.1:8000/v1 for llama.cpp
    api_key: str | None = field(default=None, repr=False)
    occupation_list: str = "all"  # 'all': the 923 titles by major group (cached prefix) | 'ranked': top-k
    occupation_k: int = 40  # 'ranked': the offline ranking's top-k occupations
    max_labels: int = 10  # at most this many tasks per prompt (step-2 schema maxItems)
    max_concurrency: int = 4
    timeout_s: float = 60.0  # per request
    max_retries: int = 4  # retries after the first attempt, per step
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 120.0  # cap on a server's Retry-After
    response_format: str = "auto"  # 'json_schema' (OpenAI, vLLM) | 'json_object' (llama.cpp) | 'auto'
    temperature: float = 0.0
    seed: int | None = 0
    max_output_tokens: int = 400
    max_reading_chars: int = 160  # grammar-enforced in json_object mode; stored readings are clipped at 300
    max_prompt_chars: int = 6000  # the prompt is cut (head + tail) to this, as the reference judge saw it
    head_fraction: float = 0.7  # truncation keeps this share of the kept characters from the head

    def __post_init__(self) -> None:
        if self.response_format not in RESPONSE_FORMATS:
            raise ValueError(
                f"response_format must be one of {RESPONSE_FORMATS}, got {self.response_format!r}"
            )
        if self.occupation_list not in lp.OCCUPATION_LIST_MODES:
            raise ValueError(f"occupation_list must be one of {lp.OCCUPATION_LIST_MODES}, "
                             f"got {self.occupation_list!r}")
        if self.occupation_k < 1 or self.max_labels < 1 or self.max_concurrency < 1 or self.max_retries < 0:
            raise ValueError("occupation_k, max_labels and max_concurrency must be >= 1, max_retries >= 0")


# ------------------------------------------------------------------------------------------- outcomes
@dataclass
class LLMLabelOutcome(LabelOutcome):
    """A LabelOutcome with the two steps' usage (input_tokens/output_tokens are the sums of both)."""

    cached_input_tokens: int = 0
    step1_input_tokens: int = 0
    step1_cached_input_tokens: int = 0
    step1_output_tokens: int = 0
    step2_input_tokens: int = 0
    step2_cached_input_tokens: int = 0
    step2_output_tokens: int = 0
    requests: int = 0  # HTTP requests sent for this prompt (format probes included)
    occupations: list[str] = field(default_factory=list)  # step 1's choice (O*NET-SOC codes), best first
    reading: str | None = None

    def add_usage(self, step: int, tin: int, tcached: int, tout: int) -> None:
        self.input_tokens += tin
        self.output_tokens += tout
        self.cached_input_tokens += tcached
        if step == 1:
            self.step1_input_tokens += tin
            self.step1_cached_input_tokens += tcached
            self.step1_output_tokens += tout
        else:
            self.step2_input_tokens += tin
            self.step2_cached_input_tokens += tcached
            self.step2_output_tokens += tout


USAGE_FIELDS = ("cached_input_tokens", "step1_input_tokens", "step1_cached_input_tokens", "step1_output_tokens",
                "step2_input_tokens", "step2_cached_input_tokens", "step2_output_tokens", "requests")


def estimate_cost(outcomes: Iterable[LabelOutcome], input_price_per_1m: float, output_price_per_1m: float,
                  cached_input_price_per_1m: float | None = None) -> dict[str, float]:
    """Token totals and cost in the prices' currency (e.g. gpt-4o-mini: 0.15 in, 0.075 cached, 0.60 out
    USD per 1M). Cached input tokens are priced at `cached_input_price_per_1m` (default: the input price)."""
    tin = tout = tcached = n = 0
    for o in outcomes:
        tin += o.input_tokens
        tout += o.output_tokens
        tcached += int(getattr(o, "cached_input_tokens", 0) or 0)
        n += 1
    cached_price = input_price_per_1m if cached_input_price_per_1m is None else cached_input_price_per_1m
    cost = ((tin - tcached) / 1e6 * input_price_per_1m + tcached / 1e6 * cached_price
            + tout / 1e6 * output_price_per_1m)
    return {"prompts": n, "input_tokens": tin, "cached_input_tokens": tcached, "output_tokens": tout,
            "cost": cost, "cost_per_prompt": cost / n if n else 0.0}


# ----------------------------------------------------------------------------------------------- errors
class LabelerConfigError(RuntimeError):
    """Authentication, permission or unknown model: affects every prompt, so labeling stops."""


@dataclass
class LabelerStats:
    requests: int = 0  # HTTP requests sent (all attempts, both steps)
    step1_requests: int = 0
    step2_requests: int = 0
    prompts: int = 0
    ok: int = 0
    not_work: int = 0
    failed: int = 0
    valid_first_try: int = 0  # prompts whose every step was valid on its first attempt
    retries: int = 0
    format_fallbacks: int = 0
    seconds: float = 0.0  # summed wall time of label() calls

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None, feedback: tuple[str, str] | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.feedback = feedback  # (previous answer, why it was rejected) for the correction turn
        self.tokens = (0, 0, 0)  # (input, cached, output): a rejected answer still costs
        self.format_switch = False  # 'auto' fell back to json_object: resend at once, not an attempt

    def with_usage(self, tokens: tuple[int, int, int]) -> _Retryable:
        self.tokens = tokens
        return self


class _Fatal(Exception):
    """Not worth retrying for this prompt (e.g. HTTP 400 context too long): recorded as its failure."""


class _StepFailed(Exception):
    pass


def _retry_after(response: Any) -> float | None:
    headers = getattr(response, "headers", None) or {}
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


_FORMAT_WORDS = re.compile(r"response_format|json_schema|schema|grammar", re.IGNORECASE)


def _is_loopback(url: str | None) -> bool:
    return bool(url) and bool(re.match(r"https?://(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:|/|$)", url))


def _error_message(e: openai.APIStatusError) -> str:
    body = e.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        msg = inner.get("message") if isinstance(inner, dict) else inner
        if msg:
            return str(msg)[:300]
    try:
        return e.response.text[:300]
    except Exception:
        return str(e)[:300]


def usage_of(usage: Any) -> tuple[int, int, int]:
    """(prompt tokens, cached prompt tokens, completion tokens) of an SDK usage object or a usage dict."""
    if usage is None:
        return 0, 0, 0

    def get(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    details = get(usage, "prompt_tokens_details")
    cached = get(details, "cached_tokens") if details is not None else None
    return int(get(usage, "prompt_tokens") or 0), int(cached or 0), int(get(usage, "completion_tokens") or 0)


# ----------------------------------------------------------------------------------------------- labeler
class OpenAILabeler:
    """LLM labeler following the two-step protocol; `OpenAILabeler(index, LLMConfig(...))`.

    `index` is the offline TaskIndex: its occupations and task statements make the catalogue (or pass
    `catalogue=`), and in 'ranked' mode `index.rank_occupations(prompt, k)` gives the candidates.
    """

    name = "openai"

    def __init__(self, index: Any, config: LLMConfig | None = None, *,
                 catalogue: OccupationCatalogue | None = None, sleep: Callable[[float], None] = time.sleep
                 ) -> None:
        self.index = index
        self.config = config or LLMConfig()
        self.model = self.config.model
        self.catalogue = catalogue or OccupationCatalogue.from_index(index)
        cfg = self.config
        mode = "all" if cfg.occupation_list == "all" else f"r{cfg.occupation_k}"
        # the template and the settings that change what the model is shown (part of the cache key)
        self.template_version = f"{TEMPLATE_VERSION}-{mode}-m{cfg.max_labels}-c{cfg.max_prompt_chars}"
        self._sleep = sleep
        self._lock = threading.Lock()
        self._format = "json_schema" if cfg.response_format == "auto" else cfg.response_format
        self.stats = LabelerStats()
        self._client: openai.OpenAI | None = None
        self._all_system: str | None = None

    @property
    def labeler_version(self) -> str:
        return f"{self.model}+{self.template_version}"

    @property
    def response_format(self) -> str:
        """The format in use: the configured one, or what 'auto' settled on."""
        return self._format

    def __repr__(self) -> str:
        return f"OpenAILabeler(model={self.model!r}, base_url={self.config.base_url!r}, format={self._format!r})"

    @property
    def client(self) -> openai.OpenAI:
        if self._client is None:
            kwargs: dict[str, Any] = {}
            if _is_loopback(self.config.base_url):  # never send loopback traffic through a proxy
                kwargs["http_client"] = openai.DefaultHttpxClient(trust_env=False)
            self._client = openai.OpenAI(api_key=self.config.api_key or NO_KEY, base_url=self.config.base_url,
                                         timeout=self.config.timeout_s, max_retries=0, **kwargs)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- what the model is shown
    def offered(self, prompt: str) -> list[Occupation]:
        """The step-1 candidate occupations for this prompt."""
        if self.config.occupation_list == "all":
            return self.catalogue.occupations
        out: list[Occupation] = []
        for code, _score in self.index.rank_occupations(prompt, self.config.occupation_k):
            occ = self.catalogue.by_code.get(str(code))
            if occ is not None and occ not in out:
                out.append(occ)
        return out

    def system_message(self, offered: Sequence[Occupation]) -> str:
        if self.config.occupation_list == "all":
            if self._all_system is None:
                self._all_system = lp.system_message(
                    self.config.max_labels, lp.occupation_lines(self.catalogue.occupations, grouped=True), True)
            return self._all_system
        return lp.system_message(self.config.max_labels, lp.occupation_lines(offered, grouped=False), False)

    def step1_messages(self, prompt: str, offered: Sequence[Occupation]) -> list[dict[str, str]]:
        text = truncate_prompt(prompt, self.config.max_prompt_chars, self.config.head_fraction)
        return [{"role": "system", "content": self.system_message(offered)},
                {"role": "user", "content": delimit_prompt(text)}]

    @staticmethod
    def step2_messages(step1: list[dict[str, str]], answer: Step1Answer) -> list[dict[str, str]]:
        """Step 1's request unchanged (a cacheable prefix), its validated answer, then the task lists."""
        said = json.dumps({"reading": answer.reading or "", "work": "yes",
                           "occupations": [o.number for o in answer.occupations]})
        return [*step1, {"role": "assistant", "content": said},
                {"role": "user", "content": lp.step2_message(answer.occupations)}]

    def request_body(self, messages: list[dict[str, str]], step: int, ids: Sequence[int],
                     fmt: str | None = None) -> dict[str, Any]:
        """The chat-completions body of one step; `ids`: the occupation numbers / task IDs offered."""
        cfg = self.config
        if step == 1:
            name, schema = lp.STEP1_SCHEMA_NAME, step1_schema(ids)
        else:
            name, schema = lp.STEP2_SCHEMA_NAME, step2_schema(ids, cfg.max_labels)
        body: dict[str, Any] = {
            "model": cfg.model, "messages": messages, "temperature": cfg.temperature,
            "max_tokens": cfg.max_output_tokens,
            "response_format": lp.response_format_param(fmt or self._format, name, schema, cfg.max_reading_chars),
        }
        if cfg.seed is not None:
            body["seed"] = cfg.seed
        return body

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        """Delay before retry `attempt` (1-based): Retry-After when given, else exponential + jitter."""
        if retry_after is not None:
            return min(retry_after, self.config.retry_after_max_s)
        base = min(self.config.backoff_max_s, self.config.backoff_base_s * 2 ** (attempt - 1))
        return base * random.uniform(0.5, 1.0) + random.uniform(0, self.config.backoff_base_s * 0.5)

    # -- one request
    def _call(self, body: dict[str, Any], step: int, parse: Callable[[str | None], T]
              ) -> tuple[T, tuple[int, int, int]]:
        with self._lock:
            self.stats.requests += 1
            if step == 1:
                self.stats.step1_requests += 1
            else:
                self.stats.step2_requests += 1
        try:
            resp = self.client.chat.completions.create(**body)
        except openai.APITimeoutError:
            raise _Retryable(f"timeout after {self.config.timeout_s:g}s") from None
        except openai.APIConnectionError as e:
            raise _Retryable(f"connection error: {type(e).__name__}") from None
        except openai.APIStatusError as e:
            status = e.status_code
            message = _error_message(e)
            if status in (401, 403):
                raise LabelerConfigError(f"HTTP {status} from the LLM server (check the API key): {message}"
                                         ) from None
            if status == 404:
                raise LabelerConfigError(f"HTTP 404 from the LLM server (model or URL?): {message}") from None
            if status in (400, 422, 500) and _FORMAT_WORDS.search(message) and self._switch_format(body):
                err = _Retryable("response_format json_schema rejected; switched to json_object", retry_after=0.0)
                err.format_switch = True
                raise err from None
            if status == 408 or status == 409 or status == 429 or status >= 500:
                raise _Retryable(f"HTTP {status}: {message}", retry_after=_retry_after(e.response)) from None
            raise _Fatal(f"HTTP {status}: {message}") from None
        tokens = usage_of(getattr(resp, "usage", None))
        if not resp.choices:
            raise _Retryable("empty answer (no choices)").with_usage(tokens)
        choice = resp.choices[0]
        content = choice.message.content if choice.message else None
        try:
            if choice.finish_reason == "length":
                raise AnswerError("answer cut off at max_tokens")
            return parse(content), tokens
        except AnswerError as e:
            raise _Retryable(str(e), feedback=(content or "", str(e))).with_usage(tokens) from None

    def _switch_format(self, body: dict[str, Any]) -> bool:
        """'auto': json_schema was refused by this server; use json_object from now on (once)."""
        if self.config.response_format != "auto":
            return False
        if body.get("response_format", {}).get("type") != "json_schema":
            return False
        with self._lock:
            if self._format == "json_schema":
                self._format = "json_object"
                self.stats.format_fallbacks += 1
                log.info("LLM server refused response_format json_schema; using json_object from now on")
        return True

    # -- one step: attempts, correction turns, backoff
    def _step(self, out: LLMLabelOutcome, step: int, messages: list[dict[str, str]], ids: Sequence[int],
              parse: Callable[[str | None], T], what: str) -> tuple[T, bool]:
        """(parsed answer, valid on the first attempt); raises _StepFailed after the last attempt."""
        feedback: tuple[str, str] | None = None
        attempts = 0
        format_switches = 0
        last = ""
        while attempts <= self.config.max_retries:
            body = self.request_body(messages, step, ids)
            if feedback is not None:
                body["messages"] = [*messages, {"role": "assistant", "content": lp.clip(feedback[0], 1500)},
                                    {"role": "user", "content": lp.CORRECTION.format(reason=feedback[1],
                                                                                     what=what)}]
            out.attempts += 1
            out.requests += 1
            try:
                answer, tokens = self._call(body, step, parse)
            except _Retryable as e:
                out.add_usage(step, *e.tokens)
                last = e.reason
                if e.format_switch and format_switches == 0:
                    format_switches += 1  # the format probe does not count as an attempt
                    out.attempts -= 1
                    continue
                feedback = e.feedback or feedback
                attempts += 1
                if attempts > self.config.max_retries:
                    break
                with self._lock:
                    self.stats.retries += 1
                self._sleep(self.backoff(attempts, e.retry_after))
                continue
            except _Fatal as e:
                last = e.args[0]
                attempts += 1
                break
            out.add_usage(step, *tokens)
            return answer, attempts == 0
        raise _StepFailed(f"step {step} ({'occupations' if step == 1 else 'tasks'}): {last} "
                          f"(after {attempts} attempt{'s' if attempts != 1 else ''})")

    # -- one prompt
    def label_one(self, record: PromptRecord) -> LLMLabelOutcome:
        out = LLMLabelOutcome(prompt_hash=record.prompt_hash, attempts=0)
        try:
            offered = self.offered(record.prompt)
        except Exception as e:  # a ranking error is this prompt's failure, not the batch's
            out.error = f"occupation ranking failed: {type(e).__name__}: {e}"
            return self._finish(out)
        if not offered:
            out.error = "no candidate occupation for this prompt (empty prompt or no O*NET vocabulary)"
            return self._finish(out)
        messages = self.step1_messages(record.prompt, offered)
        try:
            first, first_ok = self._step(
                out, 1, messages, [o.number for o in offered],
                lambda c: parse_step1(c, offered, self.catalogue), "occupation numbers from the list")
            out.reading = first.reading
            if not first.is_work:
                self._set_work(out, False)
                if first_ok:
                    with self._lock:
                        self.stats.valid_first_try += 1
                return self._finish(out)
            out.occupations = [o.code for o in first.occupations]
            task_ids = [t for o in first.occupations for t, _ in o.tasks]
            labels, second_ok = self._step(
                out, 2, self.step2_messages(messages, first), task_ids,
                lambda c: parse_step2(c, first.occupations, self.config.max_labels,
                                      self.catalogue.task_occupation, rationale=first.reading),
                "task_id values from the task lists")
        except _StepFailed as e:
            out.error = str(e)
            out.labels = []
            return self._finish(out)
        out.labels = labels
        self._set_work(out, True)
        if first_ok and second_ok:
            with self._lock:
                self.stats.valid_first_try += 1
        return self._finish(out)

    @staticmethod
    def _set_work(out: LabelOutcome, is_work: bool) -> None:
        out.is_work = is_work

    def _finish(self, outcome: LLMLabelOutcome) -> LLMLabelOutcome:
        with self._lock:
            self.stats.prompts += 1
            if not outcome.ok:
                self.stats.failed += 1
            else:
                self.stats.ok += 1
                if outcome.is_work is False:
                    self.stats.not_work += 1
        return outcome

    def label(self, prompts: list[PromptRecord]) -> list[LabelOutcome]:
        """One outcome per prompt, in order; a thread pool of `max_concurrency` requests."""
        start = time.perf_counter()
        try:
            if self.config.max_concurrency == 1 or len(prompts) <= 1:
                return [self.label_one(p) for p in prompts]
            with ThreadPoolExecutor(max_workers=self.config.max_concurrency,
                                    thread_name_prefix="llm-labeler") as pool:
                return list(pool.map(self.label_one, prompts))
        finally:
            with self._lock:
                self.stats.seconds += time.perf_counter() - start

    # -- Batch API mode (models/labeling/llm_batch.py)
    def write_batch_file(self, prompts: Sequence[PromptRecord], path: str | Path) -> Path:
        """Step 1 of a Batch-API run: the JSONL of step-1 requests and its manifest (see llm_batch)."""
        from models.labeling import llm_batch

        return llm_batch.write_step1(self, prompts, path)

    def submit_batch(self, path: str | Path, metadata: dict[str, str] | None = None) -> str:
        from models.labeling import llm_batch

        return llm_batch.submit(self, path, metadata)

    def collect_batch(self, batch_id: str, prompts: Sequence[PromptRecord], manifest_path: str | Path
                      ) -> Any:
        """None while the batch runs; then a `BatchStep` (outcomes, or the step-2 file to submit next)."""
        from models.labeling import llm_batch

        return llm_batch.collect(self, batch_id, prompts, manifest_path)

    def run_batch(self, prompts: Sequence[PromptRecord], folder: str | Path, *, poll_s: float = 60.0,
                  max_wait_s: float = 26 * 3600.0) -> list[LabelOutcome]:
        """Both steps through the Batch API, waiting for each; one outcome per prompt, in order."""
        from models.labeling import llm_batch

        return llm_batch.run(self, prompts, folder, poll_s=poll_s, max_wait_s=max_wait_s)
