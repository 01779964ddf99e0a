"""Batch-API mode of the `openai` labeler, the pure part: both protocol steps as two OpenAI batches.

This module builds the request lines and manifests and reads the result lines, over texts and dicts; the
files, the uploads and the polling are resources/llm_batch.py (`OpenAILabeler.run_batch` and friends).

    batch = plan_step1(prompts, records)        # prompts: TwoStepPrompts; records: PromptRecords
    text = "".join(batch.lines())               # step-1 JSONL; batch.manifest goes next to it
    step = after_batch(prompts, records, manifest, parse_results(output_text), missing)
    # step.outcomes: one per record; or step.lines / step.manifest: the step-2 batch to submit

One JSONL line per distinct prompt_hash: {"custom_id": prompt_hash, "method": "POST", "url":
"/v1/chat/completions", "body": <the synchronous request, json_schema format>}. The step-2 body is step 1's
request + the validated step-1 answer + the task lists, like the synchronous path. Manifests keep what was
offered, the step-1 results (not-work answers and failures are final after step 1) and the step-1 usage, so
answers are validated exactly as the synchronous path does. Errors, non-200 responses, invalid answers and
missing results become failures (re-run them synchronously with `label()`).

Pure module: no network, no files, no dagster, no environment.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from models.labeling import llm_prompt as lp
from models.labeling.base import LabelOutcome, PromptRecord
from models.labeling.llm_prompt import Occupation
from models.labeling.llm_protocol import TwoStepPrompts
from models.labeling.llm_usage import USAGE_FIELDS, LLMLabelOutcome, usage_of
from models.scrub import scrub_strings

log = logging.getLogger(__name__)
RUNNING = ("validating", "in_progress", "finalizing", "cancelling")  # batch statuses that are not final
BATCH_FORMAT = "json_schema"  # the Batch API is OpenAI's: the strict schema format


@dataclass
class Step1Batch:
    """The step-1 batch: one request per distinct prompt_hash with its offered occupations, and the manifest."""

    prompts: TwoStepPrompts
    requests: list[tuple[str, str, list[Occupation]]]  # (prompt_hash, prompt, offered occupations)
    manifest: dict[str, Any]

    def lines(self) -> Iterator[str]:
        """The JSONL lines, one at a time (an 'all'-mode request carries the whole occupation list)."""
        for prompt_hash, prompt, offered in self.requests:
            messages = self.prompts.step1_messages(prompt, offered)
            body = self.prompts.request_body(messages, 1, [o.number for o in offered], BATCH_FORMAT)
            yield batch_line(prompt_hash, body)


@dataclass
class BatchResult:
    """What a finished batch gives: the outcomes (one per record, in order), or the step-2 batch to submit."""

    outcomes: list[LabelOutcome] | None
    lines: list[str] = field(default_factory=list)  # step-2 JSONL lines when `outcomes` is None
    manifest: dict[str, Any] | None = None  # the step-2 manifest when `outcomes` is None


def batch_line(custom_id: str, body: dict[str, Any]) -> str:
    """One Batch-API request line (with its newline)."""
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body},
                      ensure_ascii=False) + "\n"


def plan_step1(prompts: TwoStepPrompts, records: Sequence[PromptRecord]) -> Step1Batch:
    """Step-1 requests (one per distinct prompt_hash) and the manifest; a prompt without candidates is final."""
    offered: dict[str, list[int] | str] = {}
    finals: dict[str, dict[str, Any]] = {}
    requests: list[tuple[str, str, list[Occupation]]] = []
    for rec in records:
        if rec.prompt_hash in offered or rec.prompt_hash in finals:
            continue
        occs = prompts.offered(rec.prompt)
        if not occs:
            finals[rec.prompt_hash] = {"error": "no candidate occupation for this prompt", "attempts": 0}
            continue
        requests.append((rec.prompt_hash, rec.prompt, occs))
        offered[rec.prompt_hash] = "all" if prompts.config.occupation_list == "all" else [o.number for o in occs]
    manifest = {"step": 1, "model": prompts.config.model, "template_version": prompts.template_version,
                "offered": offered, "finals": finals}
    return Step1Batch(prompts, requests, manifest)


def parse_results(text: str, clean: lp.Clean | None = None) -> dict[str, dict[str, Any]]:
    """The result records of a batch's output (and error) file text by custom_id; bad lines are skipped.
    `clean` (secrets masked) is applied to every decoded string: the file's text may hold a key as \\uXXXX
    escapes, which masking the raw text cannot see."""
    out: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if clean is not None:
                row = scrub_strings(row, clean)
            out[str(row["custom_id"])] = row
        except (json.JSONDecodeError, KeyError, TypeError):
            log.warning("batch output line %d is not a result record; skipped", n)
    return out


def missing_reason(batch_id: str, status: str) -> str | None:
    """The error of a prompt without a result: None for a completed batch (then it is just missing)."""
    return None if status == "completed" else f"batch {batch_id} ended with status {status}"


def result_answer(row: dict[str, Any]) -> tuple[str | None, str | None, tuple[int, int, int]]:
    """(content, error, usage) of one batch result record."""
    response = row.get("response") or {}
    body = response.get("body") or {}
    problems: list[str] = []
    tokens = usage_of(body.get("usage") if isinstance(body, dict) else None, problems)
    if problems:  # counted as 0 tokens; the row's strings are masked (parse_results)
        log.warning("batch result %s: implausible usage (%s): counted as 0 tokens", row.get("custom_id"),
                    "; ".join(problems))
    if row.get("error"):
        err = row["error"]
        return None, f"batch error: {err.get('code', '')} {err.get('message', '')}".strip(), tokens
    if response.get("status_code") != 200:
        msg = (body.get("error") or {}).get("message", "") if isinstance(body, dict) else ""
        return None, f"HTTP {response.get('status_code')}: {msg}".strip(), tokens
    choice = (body.get("choices") or [None])[0]
    if not choice:
        return None, "empty answer (no choices)", tokens
    if choice.get("finish_reason") == "length":
        return None, "answer cut off at max_tokens", tokens
    return (choice.get("message") or {}).get("content"), None, tokens


def after_batch(prompts: TwoStepPrompts, records: Sequence[PromptRecord], manifest: Mapping[str, Any],
                results: dict[str, dict[str, Any]], missing: str | None, clean: lp.Clean | None = None
                ) -> BatchResult:
    """The next step after a finished batch of the step its manifest names (1 or 2); `clean` masks secrets in
    the answers' decoded strings (as the synchronous path does)."""
    if int(manifest.get("step", 1)) == 1:
        return after_step1(prompts, records, manifest, results, missing, clean)
    return BatchResult(after_step2(prompts, records, manifest, results, missing, clean))


def _outcome(prompt_hash: str, state: Mapping[str, Any]) -> LLMLabelOutcome:
    out = LLMLabelOutcome(prompt_hash=prompt_hash, attempts=int(state.get("attempts", 1)),
                          error=state.get("error"), input_tokens=int(state.get("input_tokens", 0)),
                          output_tokens=int(state.get("output_tokens", 0)),
                          occupations=list(state.get("occupations") or []), reading=state.get("reading"))
    for name in USAGE_FIELDS:
        setattr(out, name, int(state.get(name, 0)))
    if state.get("is_work") is not None:
        out.is_work = bool(state["is_work"])
    return out


def _state(out: LLMLabelOutcome) -> dict[str, Any]:
    state = {"attempts": out.attempts, "error": out.error, "input_tokens": out.input_tokens,
             "output_tokens": out.output_tokens, "occupations": out.occupations, "reading": out.reading,
             "is_work": out.is_work}
    state.update({name: getattr(out, name) for name in USAGE_FIELDS})
    return state


def after_step1(prompts: TwoStepPrompts, records: Sequence[PromptRecord], manifest: Mapping[str, Any],
                results: dict[str, dict[str, Any]], missing: str | None, clean: lp.Clean | None = None
                ) -> BatchResult:
    """Step-1 results -> the outcomes (nothing is work, or everything failed) or the step-2 batch."""
    catalogue = prompts.catalogue
    finals: dict[str, dict[str, Any]] = dict(manifest.get("finals") or {})
    pending: dict[str, dict[str, Any]] = {}
    lines: list[str] = []
    texts = {p.prompt_hash: p.prompt for p in records}
    for h, offered_ids in (manifest.get("offered") or {}).items():
        row = results.get(h)
        out = LLMLabelOutcome(prompt_hash=h, attempts=1, requests=1)
        if row is None:
            out.attempts = 0
            out.error = missing or "no result for this prompt in the batch output"
            finals[h] = _state(out)
            continue
        content, error, tokens = result_answer(row)
        out.add_usage(1, *tokens)
        offered = (catalogue.occupations if offered_ids == "all"
                   else [catalogue.by_number[n] for n in offered_ids if n in catalogue.by_number])
        answer = None
        if error is None:
            try:
                answer = lp.parse_step1(content, offered, catalogue, clean=clean)
            except lp.AnswerError as e:
                error = str(e)
        if answer is None:
            out.error = f"step 1 (occupations): {error}"
            finals[h] = _state(out)
            continue
        out.reading = answer.reading
        if not answer.is_work:
            out.is_work = False
            finals[h] = _state(out)
            continue
        if h not in texts:
            out.error = "step 1 result for a prompt that was not passed to collect_batch"
            finals[h] = _state(out)
            continue
        out.occupations = [o.code for o in answer.occupations]
        step1 = prompts.step1_messages(texts[h], offered)
        body = prompts.request_body(prompts.step2_messages(step1, answer), 2,
                                    [t for o in answer.occupations for t, _ in o.tasks], BATCH_FORMAT)
        lines.append(batch_line(h, body))
        pending[h] = _state(out)
    if not pending:
        return BatchResult(_merge(records, finals, {}))
    return BatchResult(None, lines, {"step": 2, "model": manifest.get("model"),
                                     "template_version": manifest.get("template_version"),
                                     "finals": finals, "pending": pending})


def after_step2(prompts: TwoStepPrompts, records: Sequence[PromptRecord], manifest: Mapping[str, Any],
                results: dict[str, dict[str, Any]], missing: str | None, clean: lp.Clean | None = None
                ) -> list[LabelOutcome]:
    """Step-2 results -> one outcome per record, in order (step-1 finals included)."""
    catalogue = prompts.catalogue
    finals: dict[str, dict[str, Any]] = dict(manifest.get("finals") or {})
    done: dict[str, LabelOutcome] = {}
    for h, state in (manifest.get("pending") or {}).items():
        out = _outcome(h, state)
        row = results.get(h)
        if row is None:
            out.error = f"step 2 (tasks): {missing or 'no result for this prompt in the batch output'}"
            done[h] = out
            continue
        out.attempts += 1
        out.requests += 1
        content, error, tokens = result_answer(row)
        out.add_usage(2, *tokens)
        chosen = [catalogue.by_code[c] for c in out.occupations if c in catalogue.by_code]
        if error is None:
            try:
                out.labels = lp.parse_step2(content, chosen, prompts.config.max_labels, catalogue.task_occupation,
                                            rationale=out.reading, clean=clean)
                out.is_work = True
            except lp.AnswerError as e:
                error = str(e)
        if error is not None:
            out.error = f"step 2 (tasks): {error}"
            out.labels = []
        done[h] = out
    return _merge(records, finals, done)


def _merge(records: Sequence[PromptRecord], finals: Mapping[str, Mapping[str, Any]],
           done: Mapping[str, LabelOutcome]) -> list[LabelOutcome]:
    outcomes: list[LabelOutcome] = []
    for rec in records:
        got = done.get(rec.prompt_hash)
        if got is None and rec.prompt_hash in finals:
            got = _outcome(rec.prompt_hash, finals[rec.prompt_hash])
        if got is None:
            got = _outcome(rec.prompt_hash, {"attempts": 0, "error": "no result for this prompt in the batch"})
        outcomes.append(replace(got, labels=list(got.labels)))  # a duplicate hash gets its own copy
    return outcomes


__all__ = ["BATCH_FORMAT", "RUNNING", "BatchResult", "Step1Batch", "after_batch", "after_step1", "after_step2",
           "batch_line", "missing_reason", "parse_results", "plan_step1", "result_answer"]
