"""The label cache: labels computed once per (prompt_hash, O*NET version, labeler, model, template version).

Labeling goes batch by batch. Each batch's labels (and failures) are written in one transaction before the
next batch starts, so a run killed halfway keeps every completed batch and the next run labels only the rest;
a run over prompts that are all cached makes zero labeler calls. Failures are never cached as labels: they go
to `label_failures`, and the prompt is retried on the next run (at most MAX_LABEL_RUNS runs). Outcome texts are
masked by the store's `text_scrubber` (secrets) before they are written, counted or returned.

Pure: the loop writes through a `LabelStore`; the DuckDB store (tables label_cache and label_failures, its
SQL and transactions) is `resources.label_cache.LabelCache`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import polars as pl

from models.labeling.base import Labeler, LabelOutcome, PromptRecord, TaskLabel
from models.labeling.label_sets import LabelSet, labels_from_json, labels_to_json  # noqa: F401 - re-exported
from models.labeling.limits import MAX_LABEL_RUNS

# Per-step usage of the two-step LLM labeler (resources/llm_labeler.py); null for labelers without steps.
USAGE_COLUMNS = ("cached_input_tokens", "step1_input_tokens", "step1_cached_input_tokens", "step1_output_tokens",
                 "step2_input_tokens", "step2_cached_input_tokens", "step2_output_tokens", "requests")

LABEL_COLUMNS: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8, "prompt_id": pl.Utf8, "prompt_hash": pl.Utf8, "onet_soc_code": pl.Utf8,
    "task_id": pl.Int64, "labeler": pl.Utf8, "labeler_version": pl.Utf8, "rank": pl.Int64,
    "score": pl.Float64, "rationale": pl.Utf8, "p_exercised": pl.Float64,
}
# prompt_work: the labeler's per-prompt work decision (a not-work prompt has no prompt_task_labels rows).
WORK_COLUMNS: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8, "prompt_id": pl.Utf8, "prompt_hash": pl.Utf8, "labeler": pl.Utf8,
    "labeler_version": pl.Utf8, "is_work": pl.Boolean, "p_work": pl.Float64,
}

# USD per million tokens (input, output), list prices; used only for the cost estimate in asset metadata.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
}

CACHE_LABEL_SCHEMA: dict[str, pl.DataType] = {
    "prompt_hash": pl.Utf8, "onet_version": pl.Utf8, "labeler": pl.Utf8, "model": pl.Utf8,
    "template_version": pl.Utf8, "labeler_version": pl.Utf8, "task_id": pl.Int64, "onet_soc_code": pl.Utf8,
    "rank": pl.Int64, "score": pl.Float64, "p_exercised": pl.Float64}

T = TypeVar("T")
# MAX_LABEL_RUNS (models/labeling/limits.py): a prompt that failed in that many labeling runs is not asked again by
# a plain run (its failure stays listed)


@dataclass(frozen=True)
class CacheKey:
    """Everything but the prompt hash that identifies a cached label set."""

    onet_version: str
    labeler: str
    model: str
    template_version: str

    @classmethod
    def for_labeler(cls, labeler: Labeler, onet_version: str) -> CacheKey:
        return cls(onet_version, labeler.name, labeler.model, labeler.template_version)


# --- pure planning helpers ----------------------------------------------------------------------------------

def batched(items: Sequence[T], size: int) -> Iterator[list[T]]:
    if size < 1:
        raise ValueError(f"batch size must be >= 1, got {size}")
    for start in range(0, len(items), size):
        yield list(items[start:start + size])


def unique_by_hash(prompts: Iterable[PromptRecord]) -> dict[str, list[PromptRecord]]:
    """prompt_hash -> the prompt records sharing it, in first-seen order (one labeler call per hash)."""
    groups: dict[str, list[PromptRecord]] = {}
    for prompt in prompts:
        groups.setdefault(prompt.prompt_hash, []).append(prompt)
    return groups


def plan_work(prompts: Sequence[PromptRecord], done_hashes: set[str]) -> list[PromptRecord]:
    """The prompts still to label: one per distinct hash not already cached, in input order."""
    return [group[0] for h, group in unique_by_hash(prompts).items() if h not in done_hashes]


def estimate_cost_usd(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """List-price estimate; 0 when no tokens were used, None for a model without a known price."""
    if input_tokens == 0 and output_tokens == 0:
        return 0.0
    price = PRICES_PER_MTOK.get(model)
    if price is None:
        base = next((m for m in sorted(PRICES_PER_MTOK, key=len, reverse=True) if model.startswith(m)), None)
        price = PRICES_PER_MTOK.get(base) if base else None
    if price is None:
        return None
    return round(input_tokens / 1e6 * price[0] + output_tokens / 1e6 * price[1], 6)


def _format_duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):  # NaN / inf
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class Progress:
    """Logs every `every` prompts (and at the end): done/total, percentage, rate and ETA."""

    def __init__(self, total: int, every: int, log: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, what: str = "prompts") -> None:
        self.total = total
        self.every = max(1, every)
        self.log = log or (lambda _msg: None)
        self.clock = clock
        self.what = what
        self.done = 0
        self.started = clock()
        self._next_report = self.every
        self.messages: list[str] = []

    @property
    def rate(self) -> float:
        elapsed = self.clock() - self.started
        return self.done / elapsed if elapsed > 0 else float("inf") if self.done else 0.0

    @property
    def eta_seconds(self) -> float:
        rate = self.rate
        remaining = self.total - self.done
        if remaining <= 0:
            return 0.0
        return remaining / rate if rate > 0 and rate != float("inf") else float("nan")

    def message(self) -> str:
        share = 100.0 * self.done / self.total if self.total else 100.0
        rate = self.rate
        rate_txt = f"{rate:.1f}" if rate != float("inf") else "inf"
        return (f"labeled {self.done}/{self.total} {self.what} ({share:.1f}%), {rate_txt} {self.what}/s, "
                f"ETA {_format_duration(self.eta_seconds)}")

    def update(self, n: int) -> None:
        self.done += n
        if self.done >= self._next_report or self.done >= self.total:
            msg = self.message()
            self.messages.append(msg)
            self.log(msg)
            while self._next_report <= self.done:
                self._next_report += self.every


# --- the store the loop writes through ---------------------------------------------------------------------

class LabelStore(Protocol):
    """Where label sets are cached: `resources.label_cache.LabelCache` (DuckDB), or any test double."""

    def read(self, key: CacheKey, hashes: Sequence[str] | None = None) -> dict[str, list[TaskLabel]]:
        """Cached labels by prompt hash for one key (all hashes when `hashes` is None)."""
        ...

    def write_batch(self, key: CacheKey, labeler_version: str, outcomes: Sequence[LabelOutcome],
                    prompts_by_hash: dict[str, list[PromptRecord]]) -> None:
        """Cache the successes and record the failures of one batch, atomically."""
        ...


# --- the labeling loop --------------------------------------------------------------------------------------

@dataclass
class LabelingStats:
    n_prompts: int = 0  # prompt records asked for
    n_unique: int = 0  # distinct prompt hashes among them
    n_cached: int = 0  # distinct hashes already in the cache before this run
    n_labeled: int = 0  # distinct hashes labeled (successfully) in this run
    n_failed: int = 0  # distinct hashes that failed in this run
    n_given_up: int = 0  # distinct hashes not asked again: they failed in MAX_LABEL_RUNS runs already
    n_other_context: int = 0  # distinct cached hashes labeled again: made with another benchmark context
    labeler_calls: int = 0  # prompts handed to the labeler in this run
    n_batches: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    # per-step usage of the two-step LLM labeler (0 for the offline labeler); summed over this run
    cached_input_tokens: int = 0
    step1_input_tokens: int = 0
    step1_cached_input_tokens: int = 0
    step1_output_tokens: int = 0
    step2_input_tokens: int = 0
    step2_cached_input_tokens: int = 0
    step2_output_tokens: int = 0
    requests: int = 0
    seconds: float = 0.0
    estimated_cost_usd: float | None = 0.0
    failures: list[dict] = field(default_factory=list)
    progress: list[str] = field(default_factory=list)

    def as_metadata(self) -> dict[str, int | float | str]:
        out: dict[str, int | float | str] = {
            k: v for k, v in self.__dict__.items() if k not in {"failures", "progress", "estimated_cost_usd"}}
        out["estimated_cost_usd"] = (self.estimated_cost_usd if self.estimated_cost_usd is not None
                                     else "unknown (no price for this model)")
        out["seconds"] = round(self.seconds, 3)
        return out


def label_with_cache(prompts: Sequence[PromptRecord], labeler: Labeler, cache: LabelStore, onet_version: str,
                     *, batch_size: int | None = None, progress_every: int = 500,
                     log_fn: Callable[[str], None] | None = None,
                     clock: Callable[[], float] = time.monotonic,
                     clean: Callable[[str | None], str | None] | None = None,
                     max_runs: int | None = MAX_LABEL_RUNS,
                     ) -> tuple[dict[str, list[TaskLabel]], LabelingStats]:
    """Label every prompt not yet cached, batch by batch, committing each batch; return all labels by hash.

    An exception raised by the labeler (a crash, not a per-prompt failure) propagates after the completed
    batches, and the outcomes it lists as `finished_outcomes`, are committed. Prompts that failed have no entry
    in the returned mapping. `batch_size` default: the labeler's `commit_batch_size`, else 256.

    `clean` masks secrets in the outcomes' texts (errors, rationales) before they are written or counted
    (default: the store's `text_scrubber()`). A prompt that already failed in `max_runs` runs (the store's
    `exhausted`) is not asked again (`n_given_up`); its failure row stays. Stores with `labeling_lock` hold it
    from reading the cache to the last commit.
    """
    # the store's exclusive right to label these prompts (resources/label_cache.py: a file lock per benchmark):
    # a second run labeling the same prompts waits here, then finds them cached
    with labeling_lock(cache, prompts, log_fn):
        plan = plan_labeling(prompts, labeler, cache, onet_version, max_runs=max_runs, clock=clock)
        # default: the labeler's own (the LLM's is its concurrency: a killed run pays again for what is uncommitted)
        batch_size = batch_size or getattr(labeler, "commit_batch_size", 256)
        return run_plan(plan, labeler, cache, batch_size=batch_size, progress_every=progress_every,
                        log_fn=log_fn, clock=clock, clean=clean)


def labeling_lock(cache: LabelStore, prompts: Sequence[PromptRecord],
                  log_fn: Callable[[str], None] | None = None) -> contextlib.AbstractContextManager:
    """The store's lock on the benchmarks of `prompts` (a no-op for a store without one)."""
    lock = getattr(cache, "labeling_lock", None)
    return lock(sorted({p.benchmark for p in prompts}), log_fn) if lock else contextlib.nullcontext()


@dataclass
class LabelingPlan:
    """What one call of the labeling loop will do: the cached labels read, the prompts still to label (one per
    distinct hash, input order) and the stats so far. Made by `plan_labeling` under the store's lock."""

    prompts: Sequence[PromptRecord]
    groups: dict[str, list[PromptRecord]]
    key: CacheKey
    labeler_version: str
    cached: dict[str, list[TaskLabel]]
    todo: list[PromptRecord]
    stats: LabelingStats
    started: float

    def batches(self, batch_size: int) -> list[list[PromptRecord]]:
        """The batches `run_plan` hands to the labeler, in order."""
        return list(batched(self.todo, batch_size))


def plan_labeling(prompts: Sequence[PromptRecord], labeler: Labeler, cache: LabelStore, onet_version: str, *,
                  max_runs: int | None = MAX_LABEL_RUNS, clock: Callable[[], float] = time.monotonic
                  ) -> LabelingPlan:
    """Read the cache for `prompts` and decide what is left to label (the caller holds `labeling_lock` from
    here to the last commit of `run_plan`)."""
    started = clock()
    key = CacheKey.for_labeler(labeler, onet_version)
    groups = unique_by_hash(prompts)
    labeler_version = labeler.labeler_version
    stats = LabelingStats(n_prompts=len(prompts), n_unique=len(groups))
    cached = cache.read(key, list(groups))
    stale = _other_context(cached, groups, labeler)
    for prompt_hash in stale:  # labeled again, and the new labels replace these (LabelCache.write_batch)
        del cached[prompt_hash]
    stats.n_cached, stats.n_other_context = len(cached), len(stale)
    exhausted_of = getattr(cache, "exhausted", None)
    # a stale label set is always labeled again: given up, its prompt would lose the labels it has
    given_up = (exhausted_of(key.labeler, labeler_version, [h for h in groups if h not in cached and h not in stale],
                             max_runs) if exhausted_of and max_runs else set())
    stats.n_given_up = len(given_up)
    todo = plan_work(prompts, set(cached) | given_up)
    return LabelingPlan(prompts, groups, key, labeler_version, cached, todo, stats, started)


# one list of outcomes per batch of the plan, in order: the labeler's own (prepare, then label per batch), or
# what a pool of worker processes computed for the same batches (resources/label_pool.py)
BatchOutcomes = Callable[[list[list[PromptRecord]]], Iterator[Sequence[LabelOutcome]]]


def _other_context(cached: dict[str, list[TaskLabel]], groups: dict[str, list[PromptRecord]], labeler: Labeler
                   ) -> set[str]:
    """Cached hashes whose labels were made with another benchmark context than their benchmark's today (the
    offline labeler's labels depend on its context: a refresh after an edited prompt must give the labels a
    run from scratch gives). A hash shared by several benchmarks is checked against its first record's, the one
    the labeler labels it with. Nothing for a labeler without contexts (the LLM's labels are never redone)."""
    digests_of = getattr(labeler, "context_digests", None)
    if digests_of is None or not cached:
        return set()
    digests = digests_of([r for records in groups.values() for r in records])
    if not digests:
        return set()
    return {h for h, labels in cached.items()
            if getattr(labels, "context", None) != digests.get(groups[h][0].benchmark)}


def run_plan(plan: LabelingPlan, labeler: Labeler, cache: LabelStore, *, batch_size: int = 256,
             progress_every: int = 500, log_fn: Callable[[str], None] | None = None,
             clock: Callable[[], float] = time.monotonic, clean: Callable[[str | None], str | None] | None = None,
             outcomes_of: BatchOutcomes | None = None) -> tuple[dict[str, list[TaskLabel]], LabelingStats]:
    """Label the plan's prompts batch by batch, committing each batch as it completes (see label_with_cache).
    `outcomes_of` gives the outcomes of the batches (default: `labeler.prepare` with every prompt of the plan,
    then `labeler.label` per batch); the outcomes are checked, cleaned and written here either way."""
    clean = clean or _store_scrubber(cache)
    cached, stats = _label_uncached(plan, labeler, cache, batch_size=batch_size, progress_every=progress_every,
                                    log_fn=log_fn, clock=clock, clean=clean, outcomes_of=outcomes_of)
    stats.seconds = clock() - plan.started
    stats.estimated_cost_usd = estimate_cost_usd(labeler.model, stats.input_tokens, stats.output_tokens)
    return cached, stats


def _store_scrubber(cache: LabelStore) -> Callable[[str | None], str | None] | None:
    make = getattr(cache, "text_scrubber", None)
    return make() if make else None


def clean_outcome(outcome: LabelOutcome, clean: Callable[[str | None], str | None]) -> LabelOutcome:
    """The outcome with its untrusted texts (error, rationales) passed through `clean` (secrets masked)."""
    error = clean(outcome.error) if outcome.error is not None else None
    labels = [lab if not lab.rationale else dataclasses.replace(lab, rationale=clean(lab.rationale))
              for lab in outcome.labels]
    if error == outcome.error and all(a is b for a, b in zip(labels, outcome.labels, strict=True)):
        return outcome
    out = dataclasses.replace(outcome, error=error, labels=labels)
    if hasattr(outcome, "reading"):
        out.reading = clean(outcome.reading)  # type: ignore[attr-defined]
    return out


def _own_outcomes(labeler: Labeler, prompts: Sequence[PromptRecord]) -> BatchOutcomes:
    def outcomes(batches: list[list[PromptRecord]]) -> Iterator[Sequence[LabelOutcome]]:
        if batches:
            labeler.prepare(prompts)  # benchmark-level context from every prompt, not only the uncached ones
        label_batches = getattr(labeler, "label_batches", None)  # the LLM's: works one batch ahead
        return label_batches(batches) if label_batches else (labeler.label(batch) for batch in batches)

    return outcomes


def _label_uncached(plan: LabelingPlan, labeler: Labeler, cache: LabelStore, *, batch_size: int,
                    progress_every: int, log_fn: Callable[[str], None] | None, clock: Callable[[], float],
                    clean: Callable[[str | None], str | None] | None, outcomes_of: BatchOutcomes | None
                    ) -> tuple[dict[str, list[TaskLabel]], LabelingStats]:
    cached, stats, groups, todo = plan.cached, plan.stats, plan.groups, plan.todo
    labeler_version = plan.labeler_version
    batches = plan.batches(batch_size)
    results = (outcomes_of or _own_outcomes(labeler, plan.prompts))(batches)
    progress = Progress(len(todo), progress_every, log_fn, clock)
    if log_fn:
        again = (f" ({stats.n_other_context} of them cached with another benchmark context)"
                 if stats.n_other_context else "")
        log_fn(f"{labeler.name} ({labeler_version}): {stats.n_unique} distinct prompts, "
               f"{stats.n_cached} cached, {len(todo)} to label in batches of {batch_size}{again}")
    try:
        for batch in batches:
            try:
                outcomes = list(next(results))
            except Exception as stop:  # a run-stopping error (the LLM's key refused): commit what is paid for first
                _commit_finished(plan, cache, getattr(stop, "finished_outcomes", None) or [], clean)
                raise
            stats.labeler_calls += len(batch)
            if len(outcomes) != len(batch):
                raise RuntimeError(f"labeler {labeler.name} returned {len(outcomes)} outcomes "
                                   f"for {len(batch)} prompts")
            for prompt, outcome in zip(batch, outcomes, strict=True):
                if outcome.prompt_hash != prompt.prompt_hash:
                    raise RuntimeError(f"labeler {labeler.name} returned outcomes out of order "
                                       f"({outcome.prompt_hash} for {prompt.prompt_hash})")
            if clean is not None:  # a server's or an exception's text: masked before it is stored or shown
                outcomes = [clean_outcome(o, clean) for o in outcomes]
            cache.write_batch(plan.key, labeler_version, outcomes, groups)
            stats.n_batches += 1
            for prompt, outcome in zip(batch, outcomes, strict=True):
                stats.input_tokens += int(outcome.input_tokens)
                stats.output_tokens += int(outcome.output_tokens)
                for column in USAGE_COLUMNS:
                    setattr(stats, column, getattr(stats, column) + int(getattr(outcome, column, 0) or 0))
                if outcome.ok:
                    cached[prompt.prompt_hash] = LabelSet(outcome.labels, outcome.is_work, outcome.p_work,
                                                          outcome.text_signals, outcome.context)
                    stats.n_labeled += 1
                else:
                    stats.n_failed += 1
                    for record in groups[prompt.prompt_hash]:
                        stats.failures.append({"benchmark": record.benchmark, "prompt_id": record.prompt_id,
                                               "prompt_hash": record.prompt_hash, "error": outcome.error,
                                               "attempts": outcome.attempts})
            progress.update(len(batch))
    finally:  # a labeler working a batch ahead (the LLM's pool) stops with the loop, whatever raised here
        close = getattr(results, "close", None)
        if close is not None:
            close()
    stats.progress = progress.messages
    return cached, stats


def _commit_finished(plan: LabelingPlan, cache: LabelStore, finished: Sequence[LabelOutcome],
                     clean: Callable[[str | None], str | None] | None) -> None:
    """Write the outcomes a labeler finished before it raised (its error's `finished_outcomes`)."""
    finished = [o if clean is None else clean_outcome(o, clean) for o in finished if o.prompt_hash in plan.groups]
    if finished:
        cache.write_batch(plan.key, plan.labeler_version, finished, plan.groups)


def labels_frame(prompts: Sequence[PromptRecord], labels_by_hash: dict[str, list[TaskLabel]], labeler: str,
                 labeler_version: str) -> pl.DataFrame:
    """prompt_task_labels rows: one per (prompt record, label); prompts without labels contribute none."""
    rows: dict[str, list] = {c: [] for c in LABEL_COLUMNS}
    for prompt in prompts:
        for lab in labels_by_hash.get(prompt.prompt_hash, []):
            rows["benchmark"].append(prompt.benchmark)
            rows["prompt_id"].append(prompt.prompt_id)
            rows["prompt_hash"].append(prompt.prompt_hash)
            rows["onet_soc_code"].append(lab.onet_soc_code)
            rows["task_id"].append(int(lab.task_id))
            rows["labeler"].append(labeler)
            rows["labeler_version"].append(labeler_version)
            rows["rank"].append(int(lab.rank))
            rows["score"].append(float(lab.score))
            rows["rationale"].append(lab.rationale)
            rows["p_exercised"].append(None if lab.p_exercised is None else float(lab.p_exercised))
    return pl.DataFrame(rows, schema=LABEL_COLUMNS)


def work_frame(prompts: Sequence[PromptRecord], labels_by_hash: dict[str, list[TaskLabel]], labeler: str,
               labeler_version: str) -> pl.DataFrame:
    """prompt_work rows: one per labeled prompt record. A labeler that makes no work decision (is_work None)
    counts a prompt with labels as work and one without as not work."""
    rows: dict[str, list] = {c: [] for c in WORK_COLUMNS}
    for prompt in prompts:
        if prompt.prompt_hash not in labels_by_hash:
            continue  # failed: neither labels nor a decision
        labels = labels_by_hash[prompt.prompt_hash]
        is_work = getattr(labels, "is_work", None)
        p_work = getattr(labels, "p_work", None)
        rows["benchmark"].append(prompt.benchmark)
        rows["prompt_id"].append(prompt.prompt_id)
        rows["prompt_hash"].append(prompt.prompt_hash)
        rows["labeler"].append(labeler)
        rows["labeler_version"].append(labeler_version)
        rows["is_work"].append(bool(labels) if is_work is None else bool(is_work))
        rows["p_work"].append(None if p_work is None else float(p_work))
    return pl.DataFrame(rows, schema=WORK_COLUMNS)


def cache_frame_to_labels(cache_rows: pl.DataFrame) -> pl.DataFrame:
    """Explode label_cache rows into one row per label: prompt_hash, labeler, labeler_version, task_id, ..."""
    out: dict[str, list] = {c: [] for c in CACHE_LABEL_SCHEMA}
    for row in cache_rows.iter_rows(named=True):
        version = row.get("labeler_version") or f"{row['model']}+{row['template_version']}"
        for lab in labels_from_json(row["labels_json"]):
            out["prompt_hash"].append(row["prompt_hash"])
            out["onet_version"].append(row["onet_version"])
            out["labeler"].append(row["labeler"])
            out["model"].append(row["model"])
            out["template_version"].append(row["template_version"])
            out["labeler_version"].append(version)
            out["task_id"].append(lab.task_id)
            out["onet_soc_code"].append(lab.onet_soc_code)
            out["rank"].append(lab.rank)
            out["score"].append(lab.score)
            out["p_exercised"].append(lab.p_exercised)
    return pl.DataFrame(out, schema=CACHE_LABEL_SCHEMA)


def disambiguate_versions(cache_labels: pl.DataFrame) -> pl.DataFrame:
    """Make labeler_version identify one cache key: when one (labeler, labeler_version) was stored under
    several (model, template_version) keys (e.g. a labeler whose version string omits a config fingerprint),
    append '@<template_version>' so two configurations are never merged into one labeler."""
    if cache_labels.is_empty():
        return cache_labels
    keys = cache_labels.select("labeler", "labeler_version", "model", "template_version").unique()
    ambiguous = keys.group_by("labeler", "labeler_version").len().filter(pl.col("len") > 1).drop("len")
    if ambiguous.is_empty():
        return cache_labels
    flagged = ambiguous.with_columns(pl.lit(True).alias("_ambiguous"))
    return (cache_labels.join(flagged, on=["labeler", "labeler_version"], how="left")
            .with_columns(pl.when(pl.col("_ambiguous"))
                          .then(pl.concat_str("labeler_version", pl.lit("@"), "template_version"))
                          .otherwise(pl.col("labeler_version")).alias("labeler_version"))
            .drop("_ambiguous"))
