"""The `openai` labeler against a hostile or broken OpenAI-compatible server (an audit's findings), through the
real labeler and label cache and the local OpenAI-wire stub (tests/openai_stub.py):

- a 429 whose Retry-After / retry-after-ms is negative, NaN, infinite or absurd is retried, never a failure;
- a server that sends its answer a byte at a time times out as a whole (`timeout_s` per request), and the
  prompt is recorded as a failure; so do the Batch API's calls (`batch_file_timeout_s` per file), naming the
  batch and file, and a batch whose result file timed out is collected again whole;
- a key sent as \\uXXXX escapes inside an answer's JSON is masked once decoded, before the reading is clipped
  (a cut key used to survive as a fragment) or a rejected value is quoted in the error;
- Batch-API result files holding the key as escapes: masked as decoded, so no outcome, step file, manifest,
  label_cache row or label-store segment holds it; LabelCache.write_batch masks by itself;
- a lone surrogate in an answer is replaced (U+FFFD), so the answer is stored or the prompt's failure recorded,
  and the batch's other answers are kept;
- an implausible usage (10**20, negative, NaN) counts 0 tokens, said in the log naming the prompt; the answers
  are stored.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from models.labeling import llm_batch as lb
from models.labeling.base import LabelOutcome, PromptRecord, TaskLabel
from models.labeling.cache import CacheKey, label_with_cache
from models.labeling.llm_config import LLMConfig
from models.labeling.llm_prompt import clip
from models.scrub import MASK
from resources import label_store
from resources.label_cache import LabelCache
from resources.llm_client import retry_after
from resources.llm_deadline import _BoundedBackend, bounded_http_client
from resources.llm_labeler import OpenAILabeler
from tests.openai_stub import Drip, OpenAIStub, Reply, Status, json_escaped, offered_tasks, step_of, valid
from tests.test_llm_labeler import AUDIT, FakeIndex

KEY = "HOSTILEKEYq7W2nR5tV8pL3xZ"  # not sk-shaped: only the known-secret masking can catch it


def make(stub: OpenAIStub, sleep: object = None, **cfg: object) -> OpenAILabeler:
    base: dict[str, object] = {"model": "gpt-test", "base_url": stub.base_url, "api_key": KEY, "max_retries": 2,
                               "timeout_s": 5.0, "backoff_base_s": 0.01, "max_concurrency": 2}
    base.update(cfg)
    return OpenAILabeler(FakeIndex(), LLMConfig(**base),  # type: ignore[arg-type]
                         sleep=sleep or (lambda s: None))  # type: ignore[arg-type]


def records(n: int) -> list[PromptRecord]:
    return [PromptRecord("bench", f"p{i}", f"h{i}", f"[P{i:02d}] {AUDIT}") for i in range(n)]


def leaks(text: str) -> bool:
    """Whether `text` holds the key, whole or cut (its first or last 8 characters)."""
    return KEY[:8] in text or KEY[-8:] in text


def stored_text(warehouse_path: Path) -> str:
    """Everything label_cache, label_failures and the label store's segments (decoded Parquet) hold, as text."""
    cache = LabelCache(warehouse_path)
    frames = [cache.read_frame(), cache.failures()]
    frames += [pl.read_parquet(seg.path) for seg in label_store.segments(warehouse_path)]
    return "\n".join(str(row) for frame in frames for row in frame.iter_rows())


@pytest.fixture
def stub():
    with OpenAIStub() as s:
        yield s


# ----------------------------------------------------------------------------------- Retry-After headers
@pytest.mark.parametrize(("headers", "seconds"), [
    ({"retry-after-ms": "-1000"}, 0.0),  # before: -1.0, and time.sleep(-1.0) raised
    ({"retry-after-ms": "nan"}, None),  # before: nan ("Invalid value NaN")
    ({"retry-after-ms": "inf", "retry-after": "2"}, 2.0),  # an unusable ms header: the seconds one counts
    ({"retry-after-ms": "1500"}, 1.5),
    ({"retry-after": "-5"}, 0.0),
    ({"retry-after": "NaN"}, None),
    ({"retry-after": "1e300"}, 24 * 3600.0),  # a wait beyond a day is a broken header: capped
    ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # a date in the past
    ({"retry-after": "soon"}, None),
    ({}, None),
])
def test_retry_after_headers_are_validated(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after(SimpleNamespace(headers=headers)) == seconds


def test_a_429_with_a_broken_retry_after_is_retried(stub: OpenAIStub) -> None:
    """The real time.sleep (it raises on a negative or NaN wait, as it did in the audit's run)."""
    stub.on("[P00]", Status(429, "slow down", {"retry-after-ms": "-1000"}), valid())
    stub.on("[P01]", Status(429, "slow down", {"retry-after-ms": "nan"}), valid())
    stub.on("[P02]", Status(429, "slow down", {"retry-after": "1e300"}), valid())
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(min(seconds, 0.05))  # validates like every real wait; never waits the capped hour

    outcomes = make(stub, sleep, retry_after_max_s=3600.0).label(records(3))
    assert all(o.ok and o.attempts == 3 for o in outcomes), [o.error for o in outcomes]
    assert len(waits) == 3 and 0.0 in waits and 3600.0 in waits and all(0.0 <= w <= 3600.0 for w in waits)


# ----------------------------------------------------------------------------------- a server that drips
def test_a_server_sending_a_byte_at_a_time_times_out_as_a_whole(stub: OpenAIStub, warehouse_path: Path) -> None:
    """Before: timeout_s bounded each read only, so a 200 promising 1,000,000 bytes at 5 bytes a second never
    timed out and label() waited for ever (the audit's took a byte a second)."""
    stub.on("[P00]", Drip(every=0.2), Drip(every=0.2))  # both attempts of step 1
    cache = LabelCache(warehouse_path)
    result: dict[str, object] = {}
    labeling = threading.Thread(target=lambda: result.update(run=label_with_cache(
        records(2), make(stub, timeout_s=1.0, max_retries=1), cache, "29.2")), daemon=True)
    started = time.monotonic()
    labeling.start()
    labeling.join(30)
    assert not labeling.is_alive(), "still waiting for the dripping server after 30 s"
    assert time.monotonic() - started < 15  # two attempts of 1 s each, and the other prompt
    labels, stats = result["run"]  # type: ignore[misc]
    assert set(labels) == {"h1"} and stats.n_failed == 1 and stats.n_labeled == 1
    failure = cache.failures().row(0, named=True)
    assert (failure["prompt_hash"], failure["prompt_id"], failure["attempts"]) == ("h0", "p0", 2)
    assert failure["error"] == "step 1 (occupations): timeout after 1s (after 2 attempts)"


BATCH_CALLS = {"upload": "POST /files$", "poll": "GET /batches/[^/]+$", "download": "GET /files/[^/]+/content$"}


@pytest.mark.parametrize("call", BATCH_CALLS)
def test_a_batch_call_sent_a_byte_at_a_time_fails_at_its_deadline_and_loses_nothing(
        stub: OpenAIStub, tmp_path: Path, call: str) -> None:
    """Before: the Batch API's calls ran outside any deadline (httpx's timeouts bound each wait only), so a result
    file, a poll or an upload's answer sent a byte at a time hung run_batch for ever."""
    from resources.llm_batch import BatchServerError

    lab = make(stub, timeout_s=1.0, batch_file_timeout_s=1.0)  # each wait (0.2 s) is shorter than either
    prompts = records(3)
    stub.drips[BATCH_CALLS[call]] = Drip(every=0.2)
    result: dict[str, object] = {}

    def run() -> None:
        try:
            result["outcomes"] = lab.run_batch(prompts, tmp_path / "batch", poll_s=0)
        except BatchServerError as e:
            result["error"] = e

    batching = threading.Thread(target=run, daemon=True)
    batching.start()
    batching.join(30)
    assert not batching.is_alive(), f"the {call} still going after 30 s"
    path, manifest = tmp_path / "batch" / "step1.jsonl", tmp_path / "batch" / "step1.jsonl.manifest.json"
    batch_id = next(iter(stub.batches), None)
    expected = {
        "upload": f"uploading the batch file {path}: not done within 1s (batch_file_timeout_s, a total for the call)",
        "poll": f"polling batch {batch_id}: not done within 1s (timeout_s, a total for the call)",
        "download": f"downloading the output file {stub.batches[batch_id]['output_file_id'] if batch_id else ''} "
                    f"of batch {batch_id}: not done within 1s (batch_file_timeout_s, a total for the call); "
                    f"nothing was written: batch {batch_id} is kept by the server and recorded in {manifest}: run "
                    "the same run_batch again to collect it (no new batch), or collect_batch it with that manifest",
    }
    assert str(result.get("error")) == expected[call]
    assert path.is_file() and manifest.is_file() and sorted(p.name for p in path.parent.iterdir()) == [
        "step1.jsonl", "step1.jsonl.manifest.json"]
    if call == "download":  # the server keeps the batch: collected again once the file comes, nothing is lost
        stub.drips.clear()
        step = lab.collect_batch(batch_id, prompts, manifest)
        assert step is not None and step.next_path is not None and step.next_manifest is not None
        done = lab.collect_batch(lab.submit_batch(step.next_path), prompts, step.next_manifest)
        assert done is not None and done.outcomes is not None
        assert [o.prompt_hash for o in done.outcomes] == ["h0", "h1", "h2"] and all(o.ok for o in done.outcomes)


def batches_created(stub: OpenAIStub) -> int:
    return sum(r["method"] == "POST" and r["path"].endswith("/batches") for r in stub.requests)


@pytest.mark.parametrize("step", [1, 2])
def test_rerunning_run_batch_after_a_download_timeout_collects_the_stored_batch(
        stub: OpenAIStub, tmp_path: Path, step: int) -> None:
    """Before: the download timed out (the error said to collect the batch by hand), and running the same
    run_batch again wrote step 1 afresh and created (and paid for) a new batch. Now the manifest records the
    batch id and the rerun collects that batch: step `step`'s download times out, the rerun creates no batch
    but the step-2 one still due."""
    from resources.llm_batch import BatchServerError

    def answer_then_drip(body: dict) -> Reply:  # the step-`step` batch is made; its result file then drips
        if step_of(body) == step:
            stub.drips[BATCH_CALLS["download"]] = Drip(every=0.2)
        return valid(2)

    stub.default = answer_then_drip
    lab = make(stub, batch_file_timeout_s=1.0)
    prompts, folder = records(3), tmp_path / "batch"
    with pytest.raises(BatchServerError) as timed_out:
        lab.run_batch(prompts, folder, poll_s=0)
    batch_id = list(stub.batches)[-1]
    manifest = folder / ("step1.jsonl.manifest.json" if step == 1 else "step1.step2.jsonl.manifest.json")
    assert str(timed_out.value).endswith(
        f"nothing was written: batch {batch_id} is kept by the server and recorded in {manifest}: run the same "
        "run_batch again to collect it (no new batch), or collect_batch it with that manifest")
    assert json.loads(manifest.read_text())["batch_id"] == batch_id
    assert batches_created(stub) == step

    stub.default, stub.drips = (lambda body: valid(2)), {}
    outcomes = lab.run_batch(prompts, folder, poll_s=0)
    assert [o.prompt_hash for o in outcomes] == ["h0", "h1", "h2"] and all(o.ok and o.labels for o in outcomes)
    assert batches_created(stub) == 2  # step 1 and step 2, once each
    assert lab.run_batch(prompts, folder, poll_s=0) == outcomes and batches_created(stub) == 2  # done: collected


def test_run_batch_in_a_folder_holding_another_runs_batch_refuses(stub: OpenAIStub, tmp_path: Path) -> None:
    """The folder's recorded batch was made for other prompts: resuming it would label the wrong prompts, and a
    new batch would overwrite the only record of a paid one. One error naming it; nothing is created."""
    lab = make(stub)
    folder = tmp_path / "batch"
    stub.pending_polls = 1
    with pytest.raises(TimeoutError):  # left running: its id is recorded
        lab.run_batch(records(2), folder, poll_s=0, max_wait_s=0)
    [batch_id] = stub.batches
    before = (folder / "step1.jsonl.manifest.json").read_text()
    with pytest.raises(ValueError) as refused:
        lab.run_batch(records(3), folder, poll_s=0)
    assert str(refused.value) == (
        f"{folder}: batch {batch_id} (recorded in {folder / 'step1.jsonl.manifest.json'}) was made for other "
        "prompts or settings and not collected; collect it with collect_batch, or pass another folder (or delete "
        "this one) to start a new batch")
    assert batches_created(stub) == 1 and (folder / "step1.jsonl.manifest.json").read_text() == before
    assert lab.run_batch(records(2), folder, poll_s=0)[0].ok and batches_created(stub) == 2  # resumed, then step 2
    # that run collected, the folder takes other prompts: a new run (steps 1 and 2), as before
    assert [o.prompt_hash for o in lab.run_batch(records(3), folder, poll_s=0)] == ["h0", "h1", "h2"]
    assert batches_created(stub) == 4
    assert json.loads((folder / "step1.step2.jsonl.manifest.json").read_text())["collected"] is True


def test_a_batch_id_holding_the_key_is_not_stored(tmp_path: Path) -> None:
    """A server that echoes the key in the batch id: the manifest would hold it. The id is not recorded (the
    run still completes; a rerun starts a new batch)."""
    with OpenAIStub() as echoing:
        echoing.batch_id_prefix = f"batch_{KEY}_"
        lab = make(echoing)
        outcomes = lab.run_batch(records(2), tmp_path / "batch", poll_s=0)
        assert any(KEY in b for b in echoing.batches)
    assert all(o.ok for o in outcomes)
    written = [p.read_text(encoding="utf-8") for p in (tmp_path / "batch").iterdir()]
    assert len(written) == 4 and not any(leaks(text) for text in written)


def test_proxied_connections_are_bounded_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """An environment proxy gets its own httpx2 transport and pool: the deadline must reach it as well."""
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    client = bounded_http_client(trust_env=True)
    pools = [client._transport._pool, *(t._pool for t in client._mounts.values() if t is not None)]  # type: ignore[attr-defined]
    client.close()
    assert len(pools) == 2 and all(isinstance(p._network_backend, _BoundedBackend) for p in pools)


# ------------------------------------------------------------------------------ a key sent as \uXXXX escapes
@pytest.mark.parametrize("cut", [1, 5, 20])
def test_an_escaped_key_cut_by_the_reading_clip_is_masked(stub: OpenAIStub, warehouse_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, cut: int) -> None:
    """The reading (each label's rationale) is clipped at 300 characters; the key's escapes end `cut` characters
    beyond. Before: masked only as raw text (escapes: no match), decoded, then clipped: the key minus its last
    `cut` characters was stored, which the store's masking no longer recognised."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    reading = "a" * (300 - len(KEY) + cut) + json_escaped(KEY)

    def content(body: dict) -> str:
        if step_of(body) == 1:
            return '{"reading": "' + reading + '", "work": "yes", "occupations": [1]}'
        return json.dumps({"tasks": offered_tasks(body)[:1]})

    stub.on("[P00]", Reply(content), Reply(content))
    cache = LabelCache(warehouse_path)
    labels, stats = label_with_cache(records(1), make(stub), cache, "29.2")
    assert stats.n_labeled == 1
    [label] = labels["h0"]
    assert label.rationale == clip("a" * (300 - len(KEY) + cut) + MASK, 300)  # masked, then clipped
    assert not leaks(label.rationale)
    assert not leaks(cache.read_frame()["labels_json"][0])


def test_a_rejected_value_holding_an_escaped_key_is_masked_in_the_error(stub: OpenAIStub, warehouse_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The configured key only (not in the environment, so the store's second masking does not know it): the
    error quotes the rejected value, decoded. Before: the whole key reached label_failures."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    bad = Reply('{"tasks": ["' + "a" * 250 + json_escaped(KEY) + '"]}')
    stub.on("[P00]", valid(), bad, bad, bad)
    cache = LabelCache(warehouse_path)
    _, stats = label_with_cache(records(1), make(stub), cache, "29.2")
    error = cache.failures()["error"][0]
    assert stats.n_failed == 1 and "is not an integer" in error and "[redacted]" in error and not leaks(error)


# ------------------------------------------------------------------------- Batch API: result files with escapes
def test_batch_results_holding_the_key_as_escapes_store_it_nowhere(tmp_path: Path, warehouse_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit's: the result files hold the key as \\uXXXX escapes; collect() masked the raw file text (no
    match), then decoded it: the key reached every label's rationale, the step-2 file and its manifest, and
    label_cache through LabelCache.write_batch."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    prompts = records(2)
    with OpenAIStub(echo_key=True, escape_echo=True) as echoing:
        echoing.on("[P01]", Status(400, "bad request"))  # an error result, quoting the key as well
        lab = make(echoing)
        ok, failed = lab.run_batch(prompts, tmp_path / "batch", poll_s=0)
        results = [echoing.files[b[f]].decode() for b in echoing.batches.values()
                   for f in ("output_file_id", "error_file_id") if b[f]]
    assert any(json_escaped(KEY) in text for text in results)  # the server did send it, escaped
    assert not any(KEY in text for text in results)
    assert ok.ok and ok.labels and all(x.rationale.endswith("[served with key [redacted]]") for x in ok.labels)
    assert failed.error.startswith("step 1 (occupations): HTTP 400: bad request (Incorrect API key provided: "
                                   "[redacted]")
    written = [p.read_text(encoding="utf-8") for p in (tmp_path / "batch").iterdir()]
    assert len(written) == 4 and not any(KEY in text or leaks(text) for text in written)

    cache = LabelCache(warehouse_path)
    cache.write_batch(CacheKey.for_labeler(lab, "29.2"), lab.labeler_version, [ok, failed],
                      {r.prompt_hash: [r] for r in prompts})
    text = stored_text(warehouse_path)
    assert "[served with key [redacted]]" in text and not leaks(text)


def test_label_cache_write_batch_masks_by_itself(warehouse_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: only label_with_cache masked; an outcome written by hand (Batch-API outcomes) stored the key."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    labeled = LabelOutcome("h0", [TaskLabel(1001, "13-2011.00", 1, 1.0, rationale=f"echo {KEY}")], is_work=True)
    failed = LabelOutcome("h1", error=f"HTTP 500: upstream said {KEY[:-3]}")
    LabelCache(warehouse_path).write_batch(CacheKey("29.2", "openai", "gpt-test", "t"), "gpt-test+t",
                                           [labeled, failed], {r.prompt_hash: [r] for r in records(2)})
    text = stored_text(warehouse_path)
    assert "echo [redacted]" in text and "upstream said [redacted]" in text and not leaks(text)


# -------------------------------------------------------------------------------------- lone surrogates
def test_a_lone_surrogate_in_an_answer_loses_nothing(stub: OpenAIStub, warehouse_path: Path) -> None:
    """Before: UnicodeEncodeError when the batch was stored: the whole step failed, no failure row, every
    answer of the batch lost (and paid again by the next run)."""
    def reading(text: str) -> Reply:
        def content(body: dict) -> str:
            if step_of(body) == 1:
                return '{"reading": "' + text + '", "work": "yes", "occupations": [1]}'
            return json.dumps({"tasks": offered_tasks(body)[:1]})
        return Reply(content)

    stub.on("[P00]", reading("odd \\ud800 text"), valid())  # escaped in the answer's JSON
    stub.on("[P01]", Reply(lambda body: '{"reading": "odd \ud800 text", "work": "yes", "occupations": [1]}'),
            valid())  # a raw lone surrogate in the answer text: the SDK decodes it from the HTTP body
    stub.on("[P02]", *[Reply('{"reading": "r", "work": "\\udfff", "occupations": [1]}')] * 3)  # a rejected value
    cache = LabelCache(warehouse_path)
    labels, stats = label_with_cache(records(4), make(stub), cache, "29.2")
    assert set(labels) == {"h0", "h1", "h3"} and stats.n_failed == 1
    assert labels["h0"][0].rationale == labels["h1"][0].rationale == "odd \ufffd text"
    failure = cache.failures().row(0, named=True)
    assert failure["prompt_hash"] == "h2" and failure["error"].startswith("step 1 (occupations): work must be")
    assert "odd \ufffd text" in stored_text(warehouse_path)


# ------------------------------------------------------------------------------------- implausible usage
def test_an_implausible_usage_counts_zero_tokens_and_the_answers_are_kept(
        stub: OpenAIStub, warehouse_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Before: usage.prompt_tokens = 10**20 overflowed the Int64 columns when the batch was stored: the whole step
    failed, every paid answer of the batch was lost, no failure row was written and a rerun paid again."""
    caplog.set_level(logging.WARNING)
    stub.on("[P00]", Reply(valid().content, usage=(10**20, 5)), valid())
    stub.on("[P01]", Reply(valid().content, usage=(-7, float("nan"))), valid())  # type: ignore[arg-type]
    cache = LabelCache(warehouse_path)
    lab = make(stub)
    labels, stats = label_with_cache(records(3), lab, cache, "29.2")
    assert set(labels) == {"h0", "h1", "h2"} and stats.n_failed == 0
    rows = {r["prompt_hash"]: r for r in cache.read_frame().iter_rows(named=True)}
    assert (rows["h0"]["step1_input_tokens"], rows["h0"]["step1_output_tokens"]) == (0, 5)
    assert (rows["h1"]["step1_input_tokens"], rows["h1"]["step1_output_tokens"]) == (0, 0)
    assert rows["h0"]["step2_input_tokens"] > 0 and rows["h2"]["step1_input_tokens"] > 0  # the rest is counted
    assert lab.stats.bad_usage == 2
    warned = [r.getMessage() for r in caplog.records if "implausible usage" in r.getMessage()]
    assert any("prompt h0, step 1" in w and "100000000000000000000" in w for w in warned), warned
    assert any("prompt h1, step 1" in w and "-7" in w and "nan" in w for w in warned), warned


def test_a_batch_results_implausible_usage_counts_zero_tokens() -> None:
    body = {"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10**20, "completion_tokens": 7,
                      "prompt_tokens_details": {"cached_tokens": 9}}}
    row = {"custom_id": "h1", "response": {"status_code": 200, "body": body}}
    assert lb.result_answer(row)[2] == (0, 0, 7)  # cached tokens are a part of the prompt's (0 here)
