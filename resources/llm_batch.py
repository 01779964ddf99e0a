"""Batch-API mode of the `openai` labeler, the side effects: the JSONL and manifest files, the uploads, polling.

    lab = OpenAILabeler(index, LLMConfig(model="gpt-4o-mini", api_key=...))
    outcomes = lab.run_batch(prompts, "data/batches/gdpval")      # submits, waits, does step 2, returns
    # interrupted (a download past batch_file_timeout_s, a wait past max_wait_s, a killed process)? the same
    # call again collects the batches the folder's manifests record: no new batch is made or paid for

or by hand, across processes:

    path = lab.write_batch_file(prompts, "data/batches/gdpval/step1.jsonl")   # + .manifest.json
    batch_id = lab.submit_batch(path)
    step = lab.collect_batch(batch_id, prompts, f"{path}.manifest.json")      # None while running
    # step.outcomes is None and step.next_path is the step-2 file when some prompts are work:
    batch2 = lab.submit_batch(step.next_path)
    step = lab.collect_batch(batch2, prompts, step.next_manifest)             # step.outcomes: one per prompt

The request lines, the manifests and the reading of the results are pure (models/labeling/llm_batch.py, where
the line and manifest formats are described); this module writes and reads them next to each other
(`<name>.jsonl` + `<name>.jsonl.manifest.json`) and talks to the Files and Batches endpoints. Beside the pure
part's fields a manifest holds `input_sha256` (of its JSONL), once submitted `batch_id`, and once run_batch
returned its outcomes `collected`: nothing else from the server, and never an id that holds a secret.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.labeling import llm_batch as lb
from models.labeling.base import LabelOutcome, PromptRecord
from models.scrub import scrub_strings
from resources.llm_deadline import deadline

log = logging.getLogger(__name__)
# resources.llm_labeler.OpenAILabeler: not imported, not even for type checking (the labeler imports this module
# for its Batch-API mode; one direction only)
OpenAILabeler = Any


class BatchServerError(RuntimeError):
    """A call to the Files or Batches endpoint failed (refused, or not done by its deadline); the message is
    what the server said, secrets masked."""


@contextmanager
def server_errors(lab: OpenAILabeler, what: str, *, file: bool = False, then: str = "") -> Iterator[None]:
    """Calls to the Files / Batches endpoints: an SDK error becomes a BatchServerError whose text is masked
    (`lab.chat.scrub`: a server can quote the key), raised without the SDK's exception chained to it.

    Each call has a total deadline, connect to last byte (resources/llm_deadline.py): `timeout_s`, or for a file
    uploaded or downloaded (`file`) `batch_file_timeout_s`. httpx's timeouts bound each wait only, so a server
    sending a byte at a time hung a download for ever. `then`: what to do next, added to a timeout's message."""
    import openai

    seconds, setting = ((lab.config.batch_file_timeout_s, "batch_file_timeout_s") if file
                        else (lab.config.timeout_s, "timeout_s"))
    try:
        with deadline(seconds):
            yield
    except openai.APITimeoutError:
        raise BatchServerError(f"{what}: not done within {seconds:g}s ({setting}, a total for the call){then}"
                               ) from None
    except openai.APIStatusError as e:
        raise BatchServerError(f"{what}: HTTP {e.status_code}: {lab.chat.said(e)}") from None
    except openai.OpenAIError as e:
        raise BatchServerError(f"{what}: {lab.chat.said(e)}") from None


@dataclass
class BatchStep:
    outcomes: list[LabelOutcome] | None  # one per prompt, in order, when the run is complete
    next_path: Path | None = None  # the step-2 JSONL to submit when step 1 found work prompts
    next_manifest: Path | None = None


def manifest_path(path: str | Path) -> Path:
    """The manifest next to a batch's JSONL file."""
    path = Path(path)
    return path.with_name(path.name + ".manifest.json")


def write_batch(path: Path, lines: Iterator[str] | Sequence[str], manifest: Mapping[str, object]) -> Path:
    """The JSONL file (line by line) and its manifest, with the file's `input_sha256`; returns the JSONL path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line)
            digest.update(line.encode("utf-8"))
    write_manifest(manifest_path(path), {**manifest, "input_sha256": digest.hexdigest()})
    return path


def write_manifest(path: Path, manifest: Mapping[str, object]) -> None:
    """Written whole or not at all (a temporary file renamed): a manifest is the only record of a paid batch."""
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(manifest), encoding="utf-8")
    part.replace(path)


def read_manifest(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def lines_sha256(lines: Iterator[str]) -> str:
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8"))
    return digest.hexdigest()


def step2_path(step1: Path) -> Path:
    """The step-2 JSONL that collecting the batch of `step1` writes."""
    return step1.with_name(step1.name.removesuffix(".jsonl") + ".step2.jsonl")


def write_step1(lab: OpenAILabeler, prompts: Sequence[PromptRecord], path: str | Path) -> Path:
    """Step-1 requests (one per distinct prompt_hash) and the manifest; calls nothing."""
    batch = lb.plan_step1(lab.prompts, prompts)
    return write_batch(Path(path), batch.lines(), batch.manifest)


def submit(lab: OpenAILabeler, path: str | Path, metadata: Mapping[str, str] | None = None) -> str:
    """Upload the JSONL (purpose 'batch') and create the batch; returns the batch id."""
    with Path(path).open("rb") as fh, server_errors(lab, f"uploading the batch file {path}", file=True):
        uploaded = lab.client.files.create(file=fh, purpose="batch")
    with server_errors(lab, "creating the batch"):
        batch = lab.client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                          completion_window="24h",
                                          metadata=dict(metadata or {"labeler": lab.labeler_version}))
    record_batch_id(lab, manifest_path(path), batch.id)
    return batch.id


def record_batch_id(lab: OpenAILabeler, manifest_file: Path, batch_id: str) -> None:
    """The batch id into the manifest next to the submitted file, so that running again collects this batch
    instead of paying for a new one. An id that holds a secret (a server echoing the key) is not stored."""
    manifest = read_manifest(manifest_file)
    if manifest is None:
        return
    if lab.chat.scrub(batch_id) != batch_id:
        log.warning("batch id %s holds a secret: not recorded in %s (running again makes a new batch)",
                    lab.chat.scrub(batch_id), manifest_file)
        return
    write_manifest(manifest_file, {**manifest, "batch_id": batch_id})


def collect(lab: OpenAILabeler, batch_id: str, prompts: Sequence[PromptRecord], manifest_file: str | Path
            ) -> BatchStep | None:
    """None while the batch runs; then the next step (step 1) or the outcomes (step 2 / nothing left)."""
    with server_errors(lab, f"polling batch {batch_id}"):
        batch = lab.client.batches.retrieve(batch_id)
    if batch.status in lb.RUNNING:
        return None
    manifest_file = Path(manifest_file)
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    # nothing is written before every file is read: the batch (kept by the server) is collected again as it is
    again = (f"; nothing was written: batch {batch_id} is kept by the server and recorded in {manifest_file}: run "
             "the same run_batch again to collect it (no new batch), or collect_batch it with that manifest"
             if manifest.get("batch_id") == batch_id else
             f"; nothing was written: collect batch {batch_id} again with its manifest {manifest_file}")
    texts = []
    for kind, fid in (("output", batch.output_file_id), ("error", batch.error_file_id)):
        if fid:
            with server_errors(lab, f"downloading the {kind} file {fid} of batch {batch_id}", file=True, then=again):
                texts.append(lab.client.files.content(fid).text)
    # server text: masked as decoded, every string of every record (the raw text may hold \uXXXX escapes)
    clean = lab.chat.scrub
    result = lb.after_batch(lab.prompts, prompts, manifest, lb.parse_results("\n".join(texts), clean),
                            lb.missing_reason(batch_id, batch.status), clean)
    if result.outcomes is not None:
        return BatchStep(result.outcomes)
    assert result.manifest is not None
    # the manifest's readings and errors come from masked answers; masked again as a store's own guard
    next_path = write_batch(step2_path(manifest_file.with_name(manifest_file.name.removesuffix(".manifest.json"))),
                            result.lines, scrub_strings(result.manifest, clean))
    return BatchStep(None, next_path, manifest_path(next_path))


def run(lab: OpenAILabeler, prompts: Sequence[PromptRecord], folder: str | Path, *, poll_s: float = 60.0,
        max_wait_s: float = 26 * 3600.0) -> list[LabelOutcome]:
    """Both steps: submit step 1, wait, submit step 2 for the work prompts, wait; outcomes in order. Run again
    with the same prompts and folder, it resumes from the batches the folder's manifests record."""
    batch_id, step_manifest = resume_or_submit(lab, prompts, Path(folder) / "step1.jsonl")
    deadline = time.monotonic() + max_wait_s
    while True:
        step = collect(lab, batch_id, prompts, step_manifest)
        if step is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"batch {batch_id} still running after {max_wait_s:g}s")
            lab.chat.sleep(poll_s)
            continue
        if step.outcomes is not None:
            manifest = read_manifest(step_manifest)
            if manifest is not None:  # the folder may start another run's batch now (see resume_or_submit)
                write_manifest(step_manifest, {**manifest, "collected": True})
            return step.outcomes
        assert step.next_path is not None and step.next_manifest is not None
        batch_id = submit(lab, step.next_path)
        step_manifest = step.next_manifest


def resume_or_submit(lab: OpenAILabeler, prompts: Sequence[PromptRecord], path: Path) -> tuple[str, Path]:
    """(batch id, manifest) to collect next: the latest batch the folder records for these same prompts and
    settings (step 2's once submitted), else step 1 written and submitted now."""
    planned = lb.plan_step1(lab.prompts, prompts)
    stored = read_manifest(manifest_path(path))
    step2 = read_manifest(manifest_path(step2_path(path)))  # written when step 1's batch was collected
    if stored is not None and stored.get("batch_id") and stored.get("input_sha256") != lines_sha256(planned.lines()):
        if not (step2 or stored).get("collected"):
            raise ValueError(f"{path.parent}: batch {stored['batch_id']} (recorded in {manifest_path(path)}) was "
                             "made for other prompts or settings and not collected; collect it with collect_batch, "
                             "or pass another folder (or delete this one) to start a new batch")
        stored = None  # that run finished: this folder starts a new one
    if stored is None or not stored.get("batch_id"):  # nothing submitted yet: a new run
        for stale in (step2_path(path), manifest_path(step2_path(path))):
            stale.unlink(missing_ok=True)
        write_batch(path, planned.lines(), planned.manifest)
        return submit(lab, path), manifest_path(path)
    if step2 is None:
        return str(stored["batch_id"]), manifest_path(path)
    if step2.get("batch_id"):
        return str(step2["batch_id"]), manifest_path(step2_path(path))
    return submit(lab, step2_path(path)), manifest_path(step2_path(path))
