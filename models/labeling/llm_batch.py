"""Batch-API mode of the `openai` labeler: both protocol steps as two OpenAI batches (50% cheaper, ~24 h).

    lab = OpenAILabeler(index, LLMConfig(model="gpt-4o-mini", api_key=...))
    outcomes = lab.run_batch(prompts, "data/batches/gdpval")      # submits, waits, does step 2, returns

or by hand, across processes:

    path = lab.write_batch_file(prompts, "data/batches/gdpval/step1.jsonl")   # + .manifest.json
    batch_id = lab.submit_batch(path)
    step = lab.collect_batch(batch_id, prompts, f"{path}.manifest.json")      # None while running
    # step.outcomes is None and step.next_path is the step-2 file when some prompts are work:
    batch2 = lab.submit_batch(step.next_path)
    step = lab.collect_batch(batch2, prompts, step.next_manifest)             # step.outcomes: one per prompt

One JSONL line per distinct prompt_hash: {"custom_id": prompt_hash, "method": "POST", "url":
"/v1/chat/completions", "body": <the synchronous request, json_schema format>}. The step-2 body is step 1's
request + the validated step-1 answer + the task lists, like the synchronous path. Manifests keep what was
offered, the step-1 results (not-work answers and failures are final after step 1) and the step-1 usage, so
answers are validated exactly as the synchronous path does. Errors, non-200 responses, invalid answers and
missing results become failures (re-run them synchronously with `label()`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.labeling import llm_prompt as lp
from models.labeling.base import LabelOutcome, PromptRecord
from models.labeling.llm_usage import USAGE_FIELDS, LLMLabelOutcome, usage_of

if TYPE_CHECKING:
    from models.labeling.llm import OpenAILabeler

log = logging.getLogger(__name__)
RUNNING = ("validating", "in_progress", "finalizing", "cancelling")


@dataclass
class BatchStep:
    outcomes: list[LabelOutcome] | None  # one per prompt, in order, when the run is complete
    next_path: Path | None = None  # the step-2 JSONL to submit when step 1 found work prompts
    next_manifest: Path | None = None


def manifest_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".manifest.json")


def _line(custom_id: str, body: dict[str, Any]) -> str:
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body},
                      ensure_ascii=False) + "\n"


def write_step1(lab: OpenAILabeler, prompts: Sequence[PromptRecord], path: str | Path) -> Path:
    """Step-1 requests (one per distinct prompt_hash) and the manifest; calls nothing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    offered: dict[str, list[int] | str] = {}
    finals: dict[str, dict[str, Any]] = {}
    with path.open("w", encoding="utf-8") as fh:
        for rec in prompts:
            if rec.prompt_hash in offered or rec.prompt_hash in finals:
                continue
            occs = lab.offered(rec.prompt)
            if not occs:
                finals[rec.prompt_hash] = {"error": "no candidate occupation for this prompt", "attempts": 0}
                continue
            body = lab.request_body(lab.step1_messages(rec.prompt, occs), 1, [o.number for o in occs],
                                    fmt="json_schema")
            fh.write(_line(rec.prompt_hash, body))
            offered[rec.prompt_hash] = "all" if lab.config.occupation_list == "all" else [o.number for o in occs]
    manifest = {"step": 1, "model": lab.model, "template_version": lab.template_version, "offered": offered,
                "finals": finals}
    manifest_path(path).write_text(json.dumps(manifest), encoding="utf-8")
    return path


def submit(lab: OpenAILabeler, path: str | Path, metadata: Mapping[str, str] | None = None) -> str:
    """Upload the JSONL (purpose 'batch') and create the batch; returns the batch id."""
    with Path(path).open("rb") as fh:
        uploaded = lab.client.files.create(file=fh, purpose="batch")
    batch = lab.client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                      completion_window="24h",
                                      metadata=dict(metadata or {"labeler": lab.labeler_version}))
    return batch.id


def _results(text: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out[str(row["custom_id"])] = row
        except (json.JSONDecodeError, KeyError, TypeError):
            log.warning("batch output line %d is not a result record; skipped", n)
    return out


def _answer(row: dict[str, Any]) -> tuple[str | None, str | None, tuple[int, int, int]]:
    """(content, error, usage) of one batch result record."""
    response = row.get("response") or {}
    body = response.get("body") or {}
    tokens = usage_of(body.get("usage") if isinstance(body, dict) else None)
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


def collect(lab: OpenAILabeler, batch_id: str, prompts: Sequence[PromptRecord], manifest_file: str | Path
            ) -> BatchStep | None:
    """None while the batch runs; then the next step (step 1) or the outcomes (step 2 / nothing left)."""
    batch = lab.client.batches.retrieve(batch_id)
    if batch.status in RUNNING:
        return None
    manifest_file = Path(manifest_file)
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    texts = [lab.client.files.content(fid).text for fid in (batch.output_file_id, batch.error_file_id) if fid]
    results = _results("\n".join(texts))
    missing = None if batch.status == "completed" else f"batch {batch_id} ended with status {batch.status}"
    if int(manifest.get("step", 1)) == 1:
        return _after_step1(lab, prompts, manifest, manifest_file, results, missing)
    return BatchStep(_after_step2(lab, prompts, manifest, results, missing))


def _after_step1(lab: OpenAILabeler, prompts: Sequence[PromptRecord], manifest: dict[str, Any],
                 manifest_file: Path, results: dict[str, dict[str, Any]], missing: str | None) -> BatchStep:
    finals: dict[str, dict[str, Any]] = dict(manifest.get("finals") or {})
    pending: dict[str, dict[str, Any]] = {}
    lines: list[str] = []
    texts = {p.prompt_hash: p.prompt for p in prompts}
    for h, offered_ids in (manifest.get("offered") or {}).items():
        row = results.get(h)
        out = LLMLabelOutcome(prompt_hash=h, attempts=1, requests=1)
        if row is None:
            out.attempts = 0
            out.error = missing or "no result for this prompt in the batch output"
            finals[h] = _state(out)
            continue
        content, error, tokens = _answer(row)
        out.add_usage(1, *tokens)
        offered = (lab.catalogue.occupations if offered_ids == "all"
                   else [lab.catalogue.by_number[n] for n in offered_ids if n in lab.catalogue.by_number])
        answer = None
        if error is None:
            try:
                answer = lp.parse_step1(content, offered, lab.catalogue)
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
        step1 = lab.step1_messages(texts[h], offered)
        body = lab.request_body(lab.step2_messages(step1, answer), 2,
                                [t for o in answer.occupations for t, _ in o.tasks], fmt="json_schema")
        lines.append(_line(h, body))
        pending[h] = _state(out)
    if not pending:
        return BatchStep(_merge(prompts, finals, {}))
    base = manifest_file.name.removesuffix(".manifest.json").removesuffix(".jsonl")
    next_path = manifest_file.with_name(base + ".step2.jsonl")
    next_path.write_text("".join(lines), encoding="utf-8")
    next_manifest = manifest_path(next_path)
    next_manifest.write_text(json.dumps({"step": 2, "model": manifest.get("model"),
                                         "template_version": manifest.get("template_version"),
                                         "finals": finals, "pending": pending}), encoding="utf-8")
    return BatchStep(None, next_path, next_manifest)


def _after_step2(lab: OpenAILabeler, prompts: Sequence[PromptRecord], manifest: dict[str, Any],
                 results: dict[str, dict[str, Any]], missing: str | None) -> list[LabelOutcome]:
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
        content, error, tokens = _answer(row)
        out.add_usage(2, *tokens)
        chosen = [lab.catalogue.by_code[c] for c in out.occupations if c in lab.catalogue.by_code]
        if error is None:
            try:
                out.labels = lp.parse_step2(content, chosen, lab.config.max_labels, lab.catalogue.task_occupation,
                                            rationale=out.reading)
                out.is_work = True
            except lp.AnswerError as e:
                error = str(e)
        if error is not None:
            out.error = f"step 2 (tasks): {error}"
            out.labels = []
        done[h] = out
    return _merge(prompts, finals, done)


def _merge(prompts: Sequence[PromptRecord], finals: Mapping[str, Mapping[str, Any]],
           done: Mapping[str, LabelOutcome]) -> list[LabelOutcome]:
    outcomes: list[LabelOutcome] = []
    for rec in prompts:
        got = done.get(rec.prompt_hash)
        if got is None and rec.prompt_hash in finals:
            got = _outcome(rec.prompt_hash, finals[rec.prompt_hash])
        if got is None:
            got = _outcome(rec.prompt_hash, {"attempts": 0, "error": "no result for this prompt in the batch"})
        outcomes.append(replace(got, labels=list(got.labels)))  # a duplicate hash gets its own copy
    return outcomes


def run(lab: OpenAILabeler, prompts: Sequence[PromptRecord], folder: str | Path, *, poll_s: float = 60.0,
        max_wait_s: float = 26 * 3600.0) -> list[LabelOutcome]:
    """Both steps: submit step 1, wait, submit step 2 for the work prompts, wait; outcomes in order."""
    path = write_step1(lab, prompts, Path(folder) / "step1.jsonl")
    step_manifest = manifest_path(path)
    batch_id = submit(lab, path)
    deadline = time.monotonic() + max_wait_s
    while True:
        step = collect(lab, batch_id, prompts, step_manifest)
        if step is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"batch {batch_id} still running after {max_wait_s:g}s")
            lab.chat.sleep(poll_s)
            continue
        if step.outcomes is not None:
            return step.outcomes
        assert step.next_path is not None and step.next_manifest is not None
        batch_id = submit(lab, step.next_path)
        step_manifest = step.next_manifest
