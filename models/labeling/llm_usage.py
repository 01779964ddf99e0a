"""Token accounting of the `openai` labeler: per-step usage on each outcome, request counters, cost.

Usage is counted per step (`LLMLabelOutcome.step1_*`, `step2_*`), including the cached input tokens the
server reports (`usage.prompt_tokens_details.cached_tokens`), summed over all attempts since rejected answers
are billed too. The synchronous path (resources/llm_client.py) and the Batch-API path
(models/labeling/llm_batch.py, its result lines) read usage through the same `usage_of`.

Pure module: no network, no dagster.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from models.labeling.base import LabelOutcome


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


@dataclass
class LabelerStats:
    """Counters over one labeler's life (all threads); updated under the labeler's lock."""

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
    bad_usage: int = 0  # answers whose reported usage was implausible (counted as 0 tokens; usage_of)
    seconds: float = 0.0  # summed wall time of label() calls

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)

    def add(self, **deltas: float) -> None:
        """Add to the named counters (the caller holds the lock)."""
        for name, delta in deltas.items():
            setattr(self, name, getattr(self, name) + delta)


# tokens one request can plausibly report (context windows hold ~1M): a larger count is a server's garbage
MAX_REQUEST_TOKENS = 100_000_000


def usage_of(usage: Any, problems: list[str] | None = None) -> tuple[int, int, int]:
    """(prompt tokens, cached prompt tokens, completion tokens) of an SDK usage object or a usage dict.

    A count that is no whole number in 0..MAX_REQUEST_TOKENS (negative, NaN, 10**20, text) counts 0 and is
    described in `problems`; cached tokens beyond the prompt's are cut to them. One bad usage must not lose the
    answer it came with: 10**20 overflowed the Int64 columns and failed the whole labeling step."""
    if usage is None:
        return 0, 0, 0

    def get(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    details = get(usage, "prompt_tokens_details")
    tin = _count("prompt_tokens", get(usage, "prompt_tokens"), problems)
    cached = _count("cached_tokens", get(details, "cached_tokens") if details is not None else None, problems)
    tout = _count("completion_tokens", get(usage, "completion_tokens"), problems)
    if cached > tin:
        if problems is not None:
            problems.append(f"cached_tokens={cached} > prompt_tokens={tin}")
        cached = tin
    return tin, cached, tout


def _count(name: str, value: Any, problems: list[str] | None) -> int:
    """A reported token count, or 0 (noted in `problems`) when it is no plausible count."""
    if value is None:
        return 0
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())  # NaN, inf: not whole
    if whole and not isinstance(value, bool) and 0 <= value <= MAX_REQUEST_TOKENS:
        return int(value)
    if problems is not None:  # str() of an int of over 4,300 digits raises
        shown = f"a {value.bit_length()}-bit integer" if isinstance(value, int) and value.bit_length() > 128 else value
        problems.append(f"{name}={str(shown)[:40]!r}")
    return 0


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
