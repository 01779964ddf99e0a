"""The HTTP side of the `openai` labeler: one OpenAI-compatible chat-completions endpoint and its retries.

`ChatClient` sends one request body and sorts what comes back: an answer that `parse` accepts (with its token
usage), or an error that is retried (HTTP 408/409/429/5xx, timeouts, connection errors, empty, cut-off or
rejected answers), fatal for this prompt (e.g. HTTP 400 context too long) or fatal for the run
(`LabelerConfigError`: authentication, permission, unknown model). `timeout_s` bounds a whole request, connect
to last byte (resources/llm_deadline.py). `run_step` is the loop around one protocol
step: up to `max_retries` retries with exponential backoff and jitter (honouring Retry-After), a correction
turn after a rejected answer, and in 'auto' format mode one free switch from json_schema to json_object when
the server refuses the schema.

In resources/ because it is the network (was models/labeling/llm_client.py): what the requests say is built
by the pure models/labeling/llm_protocol.py and llm_prompt.py. No dagster, no environment, no files. The key
comes from the config and never appears in a message, a log line or a repr.
"""

from __future__ import annotations

import json
import logging
import math
import random
import re
import threading
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import openai

from models.errors import LabelerConfigError
from models.labeling import llm_prompt as lp
from models.labeling.llm_config import LLMConfig
from models.labeling.llm_protocol import request_body
from models.labeling.llm_usage import LabelerStats, LLMLabelOutcome, usage_of
from resources.llm_deadline import bounded_http_client, deadline
from resources.untrusted import scrub_untrusted

log = logging.getLogger(__name__)
NO_KEY = "sk-no-key-needed"  # local servers ignore the key, the client insists on one
MISSING_KEY = ("OPENAI_API_KEY is not set: the OpenAI API needs a key (export it; it is never stored). "
               "For an OpenAI-compatible server that needs none, set OPENAI_BASE_URL to it.")
T = TypeVar("T")

_FORMAT_WORDS = re.compile(r"response_format|json_schema|schema|grammar", re.IGNORECASE)
_LOOPBACK = re.compile(r"https?://(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:|/|$)")


# ----------------------------------------------------------------------------------------------- errors
class RetryableError(Exception):
    """Worth another attempt; carries what the correction turn and the token accounting need."""

    def __init__(self, reason: str, retry_after: float | None = None, feedback: tuple[str, str] | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.feedback = feedback  # (previous answer, why it was rejected) for the correction turn
        self.tokens = (0, 0, 0)  # (input, cached, output): a rejected answer still costs
        self.format_switch = False  # 'auto' fell back to json_object: resend at once, not an attempt

    def with_usage(self, tokens: tuple[int, int, int]) -> RetryableError:
        self.tokens = tokens
        return self


class FatalError(Exception):
    """Not worth retrying for this prompt (e.g. HTTP 400 context too long, a refusal): recorded as its failure."""

    def __init__(self, reason: str, tokens: tuple[int, int, int] = (0, 0, 0)) -> None:
        super().__init__(reason)
        self.tokens = tokens  # (input, cached, output): a refusal is billed


class StepFailed(Exception):
    """A protocol step gave no valid answer within its attempts; the message is the prompt's error."""


RETRY_AFTER_CEILING_S = 24 * 3600.0  # a longer wait is no rate limit but a broken header; backoff caps it lower


def retry_after(response: Any) -> float | None:
    """The server's Retry-After (retry-after-ms, seconds or an HTTP date) in seconds, if it sent a usable one:
    a negative wait is 0, one beyond RETRY_AFTER_CEILING_S is capped, NaN/inf/garbage is ignored (a bad header
    must not turn a retryable 429 into the prompt's failure: time.sleep raises on both)."""
    headers = getattr(response, "headers", None) or {}
    seconds = _header_seconds(headers.get("retry-after-ms"), scale=1000.0)
    if seconds is None:
        seconds = _header_seconds(headers.get("retry-after"), scale=1.0, dates=True)
    return None if seconds is None else min(max(0.0, seconds), RETRY_AFTER_CEILING_S)


def _header_seconds(value: str | None, *, scale: float, dates: bool = False) -> float | None:
    """A Retry-After header's value in seconds (a number / `scale`, or an HTTP date); None when unusable."""
    if not value:
        return None
    try:
        seconds = float(value) / scale
    except ValueError:
        if not dates:
            return None
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return seconds if math.isfinite(seconds) else None


def is_loopback(url: str | None) -> bool:
    return bool(url) and bool(_LOOPBACK.match(url or ""))


def error_message(e: openai.APIStatusError, limit: int | None = 300) -> str:
    """The server's error message (at most `limit` chars): from the JSON body, else the response text."""
    body = e.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        msg = inner.get("message") if isinstance(inner, dict) else inner
        if msg:
            return str(msg)[:limit]
    try:
        return e.response.text[:limit]
    except Exception:
        return str(e)[:limit]


def backoff(config: LLMConfig, attempt: int, retry_after: float | None = None) -> float:
    """Delay before retry `attempt` (1-based): Retry-After when given, else exponential + jitter."""
    if retry_after is not None and math.isfinite(retry_after):  # NaN would pass min() and reach sleep()
        return max(0.0, min(retry_after, config.retry_after_max_s))
    base = min(config.backoff_max_s, config.backoff_base_s * 2 ** (attempt - 1))
    return base * random.uniform(0.5, 1.0) + random.uniform(0, config.backoff_base_s * 0.5)


def read_answer(resp: Any, parse: Callable[[str | None], T],
                clean: Callable[[str | None], str | None] = lambda text: text,
                bad_usage: Callable[[list[str]], None] | None = None) -> tuple[T, tuple[int, int, int]]:
    """The parsed answer of one response and its usage; an empty, cut-off or rejected answer is retryable
    (with the answer and the reason for the correction turn, and its tokens, which are billed), a refusal is
    this prompt's failure (asking again gets the same refusal). `clean` masks secrets in the answer before
    anything reads it (the answer's `reading` becomes the stored rationale); `bad_usage` hears of an
    implausible usage, counted as 0 tokens (usage_of)."""
    if not hasattr(resp, "choices"):  # e.g. a text/html 200 from a proxy: the SDK hands back the body as a str
        raise RetryableError(invalid_response(f"not a chat completion: {resp!r}", clean))
    problems: list[str] = []
    tokens = usage_of(getattr(resp, "usage", None), problems)
    if problems and bad_usage is not None:
        bad_usage(problems)
    if not resp.choices:
        said = getattr(resp, "error", None)  # a 200 whose body is an error object (a quota, a proxy): its words
        raise RetryableError(invalid_response(f"no choices; the server said: {said!r}", clean) if said
                             else "empty answer (no choices)").with_usage(tokens)
    choice = resp.choices[0]
    message = getattr(choice, "message", None)
    raw = getattr(message, "content", None)
    if raw is not None and not isinstance(raw, str):  # e.g. a server that sends the JSON answer as an object
        raise RetryableError(invalid_response(f"message content is a {type(raw).__name__}, not text: {raw!r}",
                                              clean)).with_usage(tokens)
    content = clean(raw)
    refused = refusal_of(message, content)
    if refused:
        raise FatalError(f"refused: {lp.clip(clean(refused) or '', 200)}", tokens)
    try:
        if getattr(choice, "finish_reason", None) == "length":
            raise lp.AnswerError("answer cut off at max_tokens")
        return parse(content), tokens
    except lp.AnswerError as e:
        raise RetryableError(str(e), feedback=(content or "", str(e))).with_usage(tokens) from None


_REFUSAL_OPENING = re.compile(r"(i['’]?m sorry|i am sorry|sorry\b|i can(?:not|['’]t)|i['’]?m (?:not able|unable)"
                              r"|i am (?:not able|unable)|i won['’]?t|as an ai)\b", re.IGNORECASE)


def refusal_of(message: Any, content: str | None) -> str | None:
    """The model's refusal: the `refusal` field (OpenAI's structured outputs), or a plain-text answer without a
    JSON object that opens like a refusal ("I'm sorry, but I can't ..."); None for anything else."""
    refusal = getattr(message, "refusal", None)
    if isinstance(refusal, str) and refusal.strip():
        return refusal.strip()
    text = (content or "").strip()
    # "I can't be certain, but: {...}" is an answer a correction turn can save, not a refusal
    if text and "{" not in text and _REFUSAL_OPENING.match(text):
        return text
    return None


def invalid_response(what: str, clean: Callable[[str | None], str | None]) -> str:
    """'invalid response from server: ...', the server's text masked before it is cut (no half key survives)."""
    return f"invalid response from server: {(clean(what) or '')[:200]}"


# ----------------------------------------------------------------------------------------------- client
class ChatClient:
    """One endpoint: the SDK client (made on first use), the response format in use, one request at a time.

    `stats` is the labeler's; every counter update holds `lock`, since the labeler's threads share it."""

    def __init__(self, config: LLMConfig, stats: LabelerStats, sleep: Callable[[float], None] = time.sleep
                 ) -> None:
        self.config = config
        self.stats = stats
        self.sleep = sleep
        self.lock = threading.Lock()
        self.format = "json_schema" if config.response_format == "auto" else config.response_format
        self._client: openai.OpenAI | None = None

    @property
    def client(self) -> openai.OpenAI:
        if self._client is None:
            if not self.config.api_key and not self.config.base_url:
                raise LabelerConfigError(MISSING_KEY)  # else every prompt retried a request bound to be refused
            # each chat request's sockets stop at its deadline (send); loopback traffic never goes through a proxy
            http_client = bounded_http_client(trust_env=not is_loopback(self.config.base_url))
            self._client = openai.OpenAI(api_key=self.config.api_key or NO_KEY, base_url=self.config.base_url,
                                         timeout=self.config.timeout_s, max_retries=0, http_client=http_client)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def scrub(self, text: str | None) -> str | None:
        """Server text with every secret masked (the configured key and the environment's): the one place
        where what the server says enters this process (resources/untrusted.py)."""
        return scrub_untrusted(text, [self.config.api_key])

    def said(self, e: Exception) -> str:
        """What a server's error says, masked before it is cut to 300 characters (no half key survives): a status
        error's message, else the SDK exception's text (which may quote the server)."""
        text = error_message(e, limit=None) if isinstance(e, openai.APIStatusError) else f"{type(e).__name__}: {e}"
        return (self.scrub(text) or "")[:300]

    def count(self, **deltas: float) -> None:
        with self.lock:
            self.stats.add(**deltas)

    def body(self, messages: list[dict[str, str]], schema_name: str, schema: dict[str, Any],
             fmt: str | None = None) -> dict[str, Any]:
        """The chat-completions body: `schema` goes into the response format in use (or `fmt`)."""
        return request_body(self.config, messages, schema_name, schema, fmt or self.format)

    def send(self, body: dict[str, Any], step: int, parse: Callable[[str | None], T], prompt_hash: str = ""
             ) -> tuple[T, tuple[int, int, int]]:
        """One request: (parsed answer, usage), or RetryableError / FatalError / LabelerConfigError.

        The error is raised after the `except` block, not in it: an exception raised while the SDK's is being
        handled keeps it as `__context__` (even `from None`), and the SDK's text may quote the key unmasked."""
        client = self.client  # LabelerConfigError when no request can succeed (no key for the OpenAI API)
        self.count(requests=1, **{f"step{1 if step == 1 else 2}_requests": 1})
        failure: Exception | None = None
        try:
            with deadline(self.config.timeout_s):  # the whole request, not each wait (resources/llm_deadline.py)
                resp = client.chat.completions.create(**body)
        except openai.APITimeoutError:
            failure = RetryableError(f"timeout after {self.config.timeout_s:g}s")
        except openai.APIConnectionError as e:
            failure = RetryableError(f"connection error: {type(e).__name__}")
        except openai.APIStatusError as e:
            failure = self._status_error(e, body)
        except openai.OpenAIError as e:  # anything else the SDK raises: its text may quote the server
            failure = FatalError(self.said(e))
        except json.JSONDecodeError as e:  # a 200 whose body is no JSON (a proxy's HTML page, a URL without /v1)
            failure = RetryableError(invalid_response(f"not JSON ({e.msg} at char {e.pos}): {e.doc!r}", self.scrub))
        if failure is not None:
            raise failure
        return read_answer(resp, parse, self.scrub, lambda problems: self.bad_usage(problems, step, prompt_hash))

    def bad_usage(self, problems: list[str], step: int, prompt_hash: str) -> None:
        """An implausible usage was counted as 0 tokens: said in the log (naming the prompt) and counted."""
        self.count(bad_usage=1)
        log.warning("prompt %s, step %d: the LLM server reported an implausible usage (%s): counted as 0 tokens",
                    prompt_hash or "?", step, self.scrub("; ".join(problems)))

    def _status_error(self, e: openai.APIStatusError, body: dict[str, Any]) -> Exception:
        status = e.status_code
        message = self.said(e)
        if status in (401, 403):
            return LabelerConfigError(f"HTTP {status} from the LLM server (check the API key): {message}")
        if status == 404:
            return LabelerConfigError(f"HTTP 404 from the LLM server (model or URL?): {message}")
        if status in (400, 422, 500) and _FORMAT_WORDS.search(message) and self._switch_format(body):
            err = RetryableError("response_format json_schema rejected; switched to json_object", retry_after=0.0)
            err.format_switch = True
            return err
        if status == 408 or status == 409 or status == 429 or status >= 500:
            return RetryableError(f"HTTP {status}: {message}", retry_after=retry_after(e.response))
        return FatalError(f"HTTP {status}: {message}")

    def _switch_format(self, body: dict[str, Any]) -> bool:
        """'auto': json_schema was refused by this server; use json_object from now on (once)."""
        if self.config.response_format != "auto":
            return False
        if body.get("response_format", {}).get("type") != "json_schema":
            return False
        with self.lock:
            if self.format == "json_schema":
                self.format = "json_object"
                self.stats.format_fallbacks += 1
                log.info("LLM server refused response_format json_schema; using json_object from now on")
        return True


# ----------------------------------------------------------------------------------------------- one step
def run_step(chat: ChatClient, out: LLMLabelOutcome, step: int, messages: list[dict[str, str]],
             schema: tuple[str, dict[str, Any]], parse: Callable[[str | None], T], what: str) -> tuple[T, bool]:
    """(parsed answer, valid on the first attempt) of one protocol step; raises StepFailed after the last
    attempt. `schema` is (name, JSON schema) of the answer; `what` names the allowed values in a correction."""
    feedback: tuple[str, str] | None = None
    attempts = 0
    format_switches = 0
    last = ""
    while attempts <= chat.config.max_retries:
        body = chat.body(messages, *schema)  # rebuilt: the format may have switched since the last attempt
        if feedback is not None:
            body["messages"] = [*messages, {"role": "assistant", "content": lp.clip(feedback[0], 1500)},
                                {"role": "user", "content": lp.CORRECTION.format(reason=feedback[1], what=what)}]
        out.attempts += 1
        out.requests += 1
        try:
            answer, tokens = chat.send(body, step, parse, out.prompt_hash)
        except RetryableError as e:
            out.add_usage(step, *e.tokens)
            last = e.reason
            if e.format_switch and format_switches == 0:
                format_switches += 1  # the format probe does not count as an attempt
                out.attempts -= 1
                continue
            feedback = e.feedback or feedback
            attempts += 1
            if attempts > chat.config.max_retries:
                break
            chat.count(retries=1)
            chat.sleep(backoff(chat.config, attempts, e.retry_after))
            continue
        except FatalError as e:
            out.add_usage(step, *e.tokens)
            last = e.args[0]
            attempts += 1
            break
        out.add_usage(step, *tokens)
        return answer, attempts == 0
    raise StepFailed(f"step {step} ({'occupations' if step == 1 else 'tasks'}): {last} "
                     f"(after {attempts} attempt{'s' if attempts != 1 else ''})")


__all__ = ["MISSING_KEY", "NO_KEY", "ChatClient", "FatalError", "LabelerConfigError", "RetryableError", "StepFailed", "backoff",
           "error_message", "invalid_response", "is_loopback", "read_answer", "refusal_of", "retry_after", "run_step"]
