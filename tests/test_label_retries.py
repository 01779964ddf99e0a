"""The label cache's reliability rules, fast (no Dagster): bounded retries of failed prompts, secrets masked
in what a labeler returns, the label store's batches adopted instead of relabeled, the per-benchmark labeling
lock. The same rules end to end: tests/test_llm_reliability.py."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from models.labeling import cache as lc
from models.labeling.base import LabelOutcome, PromptRecord, TaskLabel
from resources import label_store
from resources import warehouse as wh
from resources.label_cache import LabelCache
from tests.test_labels import FakeLabeler, records

KEY = "sk-test-leaky-proxy-0123456789"


def test_a_prompt_that_keeps_failing_is_given_up_after_max_label_runs(warehouse_path: Path) -> None:
    cache = LabelCache(warehouse_path)
    prompts = records(4)
    asked = []
    for run in range(1, lc.MAX_LABEL_RUNS + 2):
        labeler = FakeLabeler(fail={"p2"})
        _, stats = lc.label_with_cache(prompts, labeler, cache, "29.2", batch_size=2)
        asked.append(labeler.prompts_seen)
        failures = cache.failures()
        assert failures["runs"].to_list() == [min(run, lc.MAX_LABEL_RUNS)]
        assert stats.n_given_up == (1 if run > lc.MAX_LABEL_RUNS else 0)
    assert asked == [["p0", "p1", "p2", "p3"], *[["p2"]] * (lc.MAX_LABEL_RUNS - 1), []]
    assert cache.failures()["attempts"].to_list() == [3 * lc.MAX_LABEL_RUNS]  # the last error and all attempts
    assert cache.open_failures("b") == 1 and cache.open_failures("b", retry_below_runs=lc.MAX_LABEL_RUNS) == 0
    # a labeler that succeeds is not asked either: giving up is per prompt until its failure row goes
    # (a changed prompt has a new hash and is asked at once)
    assert cache.exhausted("fake", "fake-model+t1", ["hash2", "hash0"], lc.MAX_LABEL_RUNS) == {"hash2"}


class LeakyLabeler(FakeLabeler):
    """Errors and rationales that quote an API key, as a careless proxy's would."""

    def label(self, prompts: list[PromptRecord]) -> list[LabelOutcome]:
        out = []
        for p in prompts:
            if p.prompt_id == "p1":
                out.append(LabelOutcome(p.prompt_hash, error=f"HTTP 401: Incorrect API key provided: {KEY}"))
            else:
                out.append(LabelOutcome(p.prompt_hash, [TaskLabel(1, "15-1252.00", 1, 1.0, f"read with {KEY}")]))
        return out


def test_the_store_masks_secrets_in_what_a_labeler_returns(warehouse_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    cache = LabelCache(warehouse_path)
    labels, stats = lc.label_with_cache(records(3), LeakyLabeler(), cache, "29.2")
    assert stats.failures[0]["error"] == "HTTP 401: Incorrect API key provided: [redacted]"  # metadata, logs
    assert labels["hash0"][0].rationale == "read with [redacted]"  # prompt_task_labels.rationale
    stored = wh.query(warehouse_path, "select labels_json from label_cache union all select error from "
                      "label_failures")["labels_json"].to_list()
    assert len(stored) == 3 and not any(KEY in text or KEY[8:] in text for text in stored)
    segments = label_store.read_store(warehouse_path)
    assert KEY not in segments.cache_frame().write_csv() and KEY not in segments.failures.write_csv()


def test_labels_in_the_store_but_not_the_warehouse_are_adopted_not_relabeled(
        warehouse_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = LabelCache(warehouse_path)
    prompts = records(6)
    lc.label_with_cache(prompts[:2], FakeLabeler(), cache, "29.2", batch_size=2)

    @contextlib.contextmanager
    def killed(_con: object) -> Iterator[None]:  # the process dies between the store's write and the commit
        raise KeyboardInterrupt("SIGKILL")
        yield

    with monkeypatch.context() as patch:
        patch.setattr(wh, "transaction", killed)
        with pytest.raises(KeyboardInterrupt):
            lc.label_with_cache(prompts[:4], FakeLabeler(), cache, "29.2", batch_size=2)
    assert wh.query(warehouse_path, "select count(*) as n from label_cache")["n"][0] == 2
    assert label_store.read_store(warehouse_path).cache_frame().height == 4  # p2, p3: in the store only
    labeler = FakeLabeler()
    labels, stats = lc.label_with_cache(prompts, labeler, cache, "29.2", batch_size=2)
    assert labeler.prompts_seen == ["p4", "p5"] and stats.n_cached == 4 and len(labels) == 6
    assert wh.query(warehouse_path, "select count(*) as n from label_cache")["n"][0] == 6


def test_a_second_labeler_of_the_same_benchmark_waits_and_finds_the_labels_cached(warehouse_path: Path) -> None:
    cache = LabelCache(warehouse_path)
    cache.ensure_tables()
    prompts = records(4)

    class Slow(FakeLabeler):
        def label(self, batch: list[PromptRecord]) -> list[LabelOutcome]:
            time.sleep(0.5)
            return super().label(batch)

    first, second = Slow(), Slow()
    messages: list[str] = []
    threads = [threading.Thread(target=lc.label_with_cache, args=(prompts, first, LabelCache(warehouse_path), "29.2"),
                                kwargs={"log_fn": messages.append})]
    threads[0].start()
    time.sleep(0.2)  # the first holds the lock and is labeling
    threads.append(threading.Thread(target=lc.label_with_cache, args=(prompts, second, LabelCache(warehouse_path),
                                                                        "29.2"), kwargs={"log_fn": messages.append}))
    threads[1].start()
    for thread in threads:
        thread.join(timeout=30)
    assert first.prompts_seen == ["p0", "p1", "p2", "p3"] and second.prompts_seen == []
    assert any("labeling of 'b' is in progress" in m and "waiting for it" in m for m in messages)
    # another benchmark's prompts have their own lock: labeled while `b`'s lock is held elsewhere
    with cache.labeling_lock(["b"]):
        other = Slow()
        lc.label_with_cache([PromptRecord("c", "p0", "c-hash0", "prompt c0")], other, cache, "29.2")
    assert other.prompts_seen == ["p0"]


class ContextLabeler(FakeLabeler):
    """A labeler whose labels depend on its benchmark's context (as the offline one's): `contexts` gives each
    benchmark's digest, and each outcome carries it."""

    def __init__(self, contexts: dict[str, str], fail: set[str] | None = None) -> None:
        super().__init__(fail=fail or set())
        self.contexts = contexts

    def context_digests(self, prompts: list[PromptRecord]) -> dict[str, str]:
        return {p.benchmark: self.contexts[p.benchmark] for p in prompts}

    def label(self, prompts: list[PromptRecord]) -> list[LabelOutcome]:
        out = super().label(prompts)
        for prompt, outcome in zip(prompts, out, strict=True):
            outcome.context = self.contexts[prompt.benchmark]
        return out


def test_a_stale_label_set_is_labeled_again_even_after_failed_runs(warehouse_path: Path) -> None:
    """A cached label set of another context is labeled again; it was dropped from the cached ones before the
    failure limit was looked at, so a text that had also failed MAX_LABEL_RUNS runs lost the labels it had."""
    cache = LabelCache(warehouse_path)
    prompts = records(3)
    lc.label_with_cache(prompts, ContextLabeler({"b": "old"}), cache, "29.2")
    with wh.connect(warehouse_path) as con:  # hash1 failed in every allowed run too (e.g. a row adopted later)
        con.execute("insert into label_failures (prompt_hash, benchmark, prompt_id, labeler, labeler_version, error,"
                    " attempts, failed_at, runs) values ('hash1', 'b', 'p1', 'fake', 'fake-model+t1', 'x', 3, "
                    "now(), ?)", [lc.MAX_LABEL_RUNS])
    labeler = ContextLabeler({"b": "new"})
    labels, stats = lc.label_with_cache(prompts, labeler, cache, "29.2")
    assert labeler.prompts_seen == ["p0", "p1", "p2"] and stats.n_other_context == 3 and stats.n_given_up == 0
    assert set(labels) == {"hash0", "hash1", "hash2"} and {s.context for s in labels.values()} == {"new"}
    assert {s.context for s in cache.read(lc.CacheKey("29.2", "fake", "fake-model", "t1")).values()} == {"new"}
    again = ContextLabeler({"b": "new"})
    lc.label_with_cache(prompts, again, cache, "29.2")
    assert again.prompts_seen == []  # settled


def test_a_store_segment_with_a_column_this_version_lacks_is_adopted(warehouse_path: Path) -> None:
    """A segment with one more column (a newer benchmap sharing the store) failed every later labeling step with
    DuckDB's Binder Error (a probe, 2026-12-07)."""
    import hashlib

    import polars as pl

    cache = LabelCache(warehouse_path)
    prompts = records(2)
    lc.label_with_cache(prompts, FakeLabeler(), cache, "29.2", batch_size=2)
    [segment] = [s for s in label_store.segments(warehouse_path) if s.kind == label_store.CACHE_KIND]
    pl.read_parquet(segment.path).with_columns(pl.lit(7).alias("step3_input_tokens")).write_parquet(segment.path)
    segment.path.with_name(segment.path.name + label_store.CHECKSUM_SUFFIX).write_text(
        f"{hashlib.sha256(segment.path.read_bytes()).hexdigest()}  {segment.path.name}\n")
    with wh.connect(warehouse_path) as con:  # the warehouse lost them; the store holds them
        con.execute("delete from label_cache")
    labeler = FakeLabeler()
    labels, stats = lc.label_with_cache(prompts, labeler, cache, "29.2", batch_size=2)
    assert labeler.prompts_seen == [] and stats.n_cached == 2 and len(labels) == 2
