"""Audit I's defects of the `openai` labeler, through the real labeler and label cache against the local
OpenAI-wire stub (tests/openai_stub.py):

- a run-stopping error (HTTP 401) mid-batch keeps the answers already paid for, and the LLM commits in batches
  of its concurrency, so a re-run pays for none of them again;
- a non-conforming HTTP 200 (HTML, text/html, content as a JSON object) is the prompt's retryable failure in
  label_failures, the server's text masked, not a crash of the whole step;
- a refusal is recorded as "refused: ..." after one request, no correction turns;
- no exception chain of what the labeler raises holds the key.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from models.labeling.base import PromptRecord
from models.labeling.cache import label_with_cache
from models.labeling.llm_config import LLMConfig
from resources.dagster_resources import LabelerResource, build_labeler_resource
from resources.label_cache import LabelCache
from resources.llm_labeler import LabelerConfigError, OpenAILabeler
from resources.settings import Settings
from tests.openai_stub import OpenAIStub, Raw, Reply, Slow, Status, step_of, user_text, valid
from tests.test_llm_labeler import AUDIT, FakeIndex

KEY = "AUDITKEYzq8W3nT5vR2pL9xYq"  # not sk-shaped: only the known-secret masking can catch it


def make(stub: OpenAIStub, **cfg: object) -> OpenAILabeler:
    base: dict[str, object] = {"model": "gpt-test", "base_url": stub.base_url, "api_key": KEY, "max_retries": 2,
                               "timeout_s": 5.0, "backoff_base_s": 0.01, "max_concurrency": 4}
    base.update(cfg)
    return OpenAILabeler(FakeIndex(), LLMConfig(**base), sleep=lambda s: None)  # type: ignore[arg-type]


def records(n: int) -> list[PromptRecord]:
    return [PromptRecord("bench", f"p{i}", f"h{i}", f"[P{i:02d}] {AUDIT}") for i in range(n)]


def marker_of(request: dict) -> str:
    return re.search(r"\[P\d\d\]", user_text(request["body"])).group(0)  # type: ignore[union-attr]


def exception_chain(error: BaseException) -> list[BaseException]:
    """The error and every exception reachable from it through __context__ and __cause__."""
    chain, todo = [], [error]
    while todo:
        e = todo.pop()
        if e is None or any(e is seen for seen in chain):
            continue
        chain.append(e)
        todo += [e.__context__, e.__cause__]  # type: ignore[list-item]
    return chain


@pytest.fixture
def stub():
    with OpenAIStub(echo_key=True) as s:
        yield s


# ------------------------------------------------------------------------- D1: the batch in flight
def test_a_401_mid_batch_commits_the_answers_already_paid_for(stub: OpenAIStub, warehouse_path: Path) -> None:
    prompts = records(24)
    stub.on("[P12]", Slow(0.4, Status(401, "Incorrect API key provided")))  # the key revoked mid-run
    cache = LabelCache(warehouse_path)
    with pytest.raises(LabelerConfigError, match="HTTP 401"):
        label_with_cache(prompts, make(stub), cache, "29.2", batch_size=256)  # one batch: the old default
    answered = {marker_of(r) for r in stub.chat_requests() if step_of(r["body"]) == 2}
    assert len(answered) >= 8, "too few prompts finished before the 401 for the test to say anything"
    committed = set(cache.read_frame()["prompt_hash"].to_list())
    assert len(committed) == len(answered)  # before: 0, every paid answer discarded with the batch

    first_run = len(stub.chat_requests())
    _, stats = label_with_cache(prompts, make(stub), cache, "29.2", batch_size=256)
    asked_again = {marker_of(r) for r in stub.chat_requests()[first_run:]}
    assert stats.n_failed == 0 and len(asked_again) == 24 - len(answered)
    assert asked_again.isdisjoint(answered), "answers paid for in the first run were requested again"


def test_the_llm_commits_in_batches_of_its_concurrency_while_its_pool_works_one_batch_ahead(
        stub: OpenAIStub) -> None:
    assert LabelerResource(kind="openai").batch_size == 4  # was 256 (up to 512 paid requests lost on a kill)
    assert LabelerResource(kind="openai", max_concurrency=8).batch_size == 8
    assert LabelerResource(kind="openai", batch_size=32).batch_size == 32
    assert LabelerResource().batch_size == 256  # the offline labeler's matrix batches are unchanged
    assert build_labeler_resource(Settings(labeler="openai")).batch_size == 4
    labeler = make(stub)
    assert labeler.commit_batch_size == 4  # label_with_cache's default for it (the judge's, local_llm's)

    stub.on("[P00]", Slow(0.5, valid()))  # the first batch waits for one slow prompt
    prompts = records(8)
    batches = list(labeler.label_batches([prompts[:4], prompts[4:]]))
    assert [[o.prompt_hash for o in b] for b in batches] == [[p.prompt_hash for p in prompts[:4]],
                                                               [p.prompt_hash for p in prompts[4:]]]
    assert all(o.ok for b in batches for o in b)
    slow_done = next(r["time"] for r in stub.chat_requests() if marker_of(r) == "[P00]") + 0.5
    second = [r["time"] for r in stub.chat_requests() if marker_of(r) in {"[P04]", "[P05]", "[P06]", "[P07]"}]
    assert min(second) < slow_done  # the next batch started while the first was still waiting
    assert stub.max_in_flight <= 4


# ------------------------------------------------------------------- D2: a non-conforming HTTP 200
HTML = f"<html><body>502 Bad Gateway (upstream said key={KEY})</body></html>"


@pytest.mark.parametrize("bad, shows", [
    (Raw(HTML, "application/json"), "not JSON"),  # before: JSONDecodeError, the whole step failed
    (Raw(HTML, "text/html"), "not a chat completion"),  # before: AttributeError 'str' ... 'choices'
    (Reply(lambda body: {"reading": KEY, "work": "yes"}), "message content is a dict"),  # type: ignore[arg-type,return-value]
], ids=["html-as-json", "text-html", "content-object"])
def test_a_non_conforming_200_is_the_prompts_retryable_failure(stub: OpenAIStub, warehouse_path: Path,
                                                               bad: Raw | Reply, shows: str) -> None:
    stub.on("[P01]", bad, bad, bad)
    cache = LabelCache(warehouse_path)
    labels, stats = label_with_cache(records(3), make(stub), cache, "29.2")
    assert set(labels) == {"h0", "h2"} and stats.n_failed == 1
    failure = cache.failures().row(0, named=True)
    assert failure["prompt_hash"] == "h1" and failure["attempts"] == 3  # retried: a proxy's page may pass
    assert failure["error"].startswith("step 1 (occupations): invalid response from server: ")
    assert shows in failure["error"] and KEY not in failure["error"]
    if not isinstance(bad, Reply):
        assert "502 Bad Gateway" in failure["error"] and "[redacted]" in failure["error"]


def test_a_200_holding_an_error_object_records_what_the_server_said(stub: OpenAIStub, warehouse_path: Path) -> None:
    """It was recorded as "empty answer (no choices)" after every attempt: the server's reason was dropped."""
    error = Raw(json.dumps({"error": {"message": f"quota exceeded for key {KEY}", "type": "insufficient_quota"}}))
    stub.on("[P01]", error, error, error)
    cache = LabelCache(warehouse_path)
    _, stats = label_with_cache(records(2), make(stub), cache, "29.2")
    failure = cache.failures().row(0, named=True)
    assert stats.n_failed == 1 and failure["prompt_hash"] == "h1"
    assert "invalid response from server: no choices; the server said:" in failure["error"]
    assert "quota exceeded for key [redacted]" in failure["error"] and KEY not in failure["error"]


# ----------------------------------------------------------------------------------- D3: refusals
@pytest.mark.parametrize("refusal", [
    Reply(None, refusal=f"I can't assist with that request ({KEY})."),  # OpenAI: content null, refusal set
    Reply(f"I'm sorry, but I can't help with that ({KEY})."),  # plain text from a server without the field
], ids=["refusal-field", "plain-text"])
def test_a_refusal_is_recorded_as_refused_without_correction_turns(stub: OpenAIStub, warehouse_path: Path,
                                                                   refusal: Reply) -> None:
    stub.on("[P00]", refusal, refusal, refusal)
    cache = LabelCache(warehouse_path)
    _, stats = label_with_cache(records(1), make(stub), cache, "29.2")
    assert stats.n_failed == 1 and len(stub.chat_requests()) == 1  # before: 3 (5 with the default retries)
    error = cache.failures()["error"][0]
    assert error.startswith("step 1 (occupations): refused: I") and "(after 1 attempt)" in error
    assert "[redacted]" in error and KEY not in error


# ---------------------------------------------------------------------- residual: exception chains
def test_no_exception_chain_of_a_config_error_holds_the_key(stub: OpenAIStub, warehouse_path: Path) -> None:
    stub.script(Status(401, "Incorrect API key provided"))
    with pytest.raises(LabelerConfigError) as direct:
        make(stub, max_concurrency=1).label(records(1))
    stub.script(Status(403, "Forbidden"))
    with pytest.raises(LabelerConfigError) as through_cache:
        label_with_cache(records(2), make(stub, max_concurrency=1), LabelCache(warehouse_path), "29.2")
    for raised in (direct.value, through_cache.value):
        assert "[redacted]" in str(raised)  # the server did echo the key
        for e in exception_chain(raised):  # before: __context__ was the SDK's AuthenticationError, key and all
            assert KEY not in repr(e) and KEY not in str(e) and all(KEY not in repr(a) for a in e.args)


def test_plain_text_is_a_refusal_only_without_a_json_object() -> None:
    """A second read: an answer such as "I can't be certain, but: {...}" became a refusal (no correction turn, a
    failure run after run), though the correction turn could save it."""
    from types import SimpleNamespace

    from resources.llm_client import refusal_of

    no_field = SimpleNamespace(refusal=None)
    assert refusal_of(no_field, "I'm sorry, but I can't help with that.") == "I'm sorry, but I can't help with that."
    assert refusal_of(no_field, 'I can\'t be certain, but here it is: {"occupations": []}') is None
    assert refusal_of(SimpleNamespace(refusal="Not allowed."), '{"occupations": []}') == "Not allowed."


def test_the_labelers_batches_stop_when_the_loop_raises(warehouse_path: Path) -> None:
    """A second read: when writing a batch failed, the labeler's generator (the LLM pool working a batch ahead)
    was left open, its threads running paid requests whose answers nobody would store."""
    from models.labeling.base import LabelOutcome

    closed: list[bool] = []

    class AheadLabeler:
        name, model, template_version, labeler_version = "openai", "m", "t", "m+t"

        def prepare(self, prompts: list) -> None:
            pass

        def label_batches(self, batches: list) -> object:
            self.running = self._batches(batches)  # held, as a pool's threads hold theirs: only close() ends it
            return self.running

        def _batches(self, batches: list) -> object:
            try:
                for batch in batches:
                    yield [LabelOutcome(p.prompt_hash) for p in batch]
            finally:
                closed.append(True)

    class FailingStore(LabelCache):
        def write_batch(self, *args: object, **kwargs: object) -> None:
            raise OSError("disk full")

    prompts = [PromptRecord("b", f"p{i}", f"h{i}", f"text {i}") for i in range(6)]
    labeler = AheadLabeler()
    with pytest.raises(OSError, match="disk full"):
        label_with_cache(prompts, labeler, FailingStore(warehouse_path), "29.2", batch_size=2)
    assert closed == [True]


def test_without_a_key_the_openai_api_is_not_asked_and_the_run_says_which_variable(
        stub: OpenAIStub, warehouse_path: Path) -> None:
    """BENCHMAP_LABELER=openai with no OPENAI_API_KEY and no OPENAI_BASE_URL: the official API would refuse every
    request, so labeling stops before the first, naming the variable. Before, each prompt was sent, retried and
    recorded as a failure ("connection error" offline, HTTP 401 online) without the word OPENAI_API_KEY."""
    cache = LabelCache(warehouse_path)
    labeler = OpenAILabeler(FakeIndex(), LLMConfig(model="gpt-test", max_retries=2, timeout_s=5.0,  # type: ignore[arg-type]
                                                   backoff_base_s=0.01), sleep=lambda s: None)
    with pytest.raises(LabelerConfigError, match="OPENAI_API_KEY is not set") as raised:
        label_with_cache(records(3), labeler, cache, "29.2")
    assert "OPENAI_BASE_URL" in str(raised.value)
    assert cache.read_frame().is_empty() and labeler.stats.requests == labeler.stats.failed == 0
    # a local OpenAI-compatible server needs no key: the same config with its URL labels
    outcomes, stats = label_with_cache(records(2), make(stub, api_key=None), cache, "29.2")
    assert stats.n_failed == 0 and len(stub.chat_requests()) >= 2
