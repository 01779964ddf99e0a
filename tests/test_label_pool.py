"""The offline labeler's worker processes (resources/label_pool.py, issue 29): a range run's labels computed in
two worker processes are the labels of the one-process loop, bit for bit, and a worker that dies mid-run fails
the step with an error naming it while every batch finished before is committed."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from dagster import Failure

from bench import common
from models.labeling.base import PromptRecord
from resources import label_pool
from resources.dagster_resources import LabelerResource, Warehouse
from resources.readers import read_mirror_prompts
from resources.settings import settings

# small benchmarks of the mirror (6 + 40 + 50 + 57 prompts), in batches of 16: several batches each
BENCHMARKS = ("jobbench", "cybench", "finance_agent_benchmark", "apex_agents")
BATCH = 16


class _Context:
    """What _label_benchmarks asks of a Dagster context: its log."""

    log = logging.getLogger("test_label_pool")


def _records(mirror: Path) -> dict[str, list[PromptRecord]]:
    from models.benchmarks import prompt_hash

    out = {}
    for name in BENCHMARKS:
        rows = read_mirror_prompts(mirror, name)
        out[name] = [PromptRecord(name, str(r["prompt_id"]), prompt_hash(r["prompt"]), r["prompt"]) for r in rows]
    return out


def _label(state: common.State, records: dict[str, list[PromptRecord]], workers: int,
           monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], Warehouse]:
    from assets.labels import _label_benchmarks

    monkeypatch.setenv("BENCHMAP_LABEL_WORKERS", str(workers))
    monkeypatch.setattr(label_pool, "MIN_PROMPTS_TO_START", 1)
    settings.cache_clear()
    warehouse = Warehouse(path=str(state.warehouse))
    built: dict[str, Any] = {}
    try:
        out = _label_benchmarks(_Context(), warehouse, LabelerResource(kind="offline", batch_size=BATCH),
                                records, built)
    finally:
        settings.cache_clear()
    return {b: (labels, stats.n_labeled, stats.n_batches) for b, (labels, stats) in out.items()}, warehouse


def _cached(warehouse: Warehouse) -> dict[str, str]:
    frame = warehouse.label_cache().read_frame()
    return dict(zip(frame["prompt_hash"].to_list(), frame["labels_json"].to_list(), strict=True))


@pytest.fixture
def records(mirror: Path) -> dict[str, list[PromptRecord]]:
    return _records(mirror)


def test_two_workers_label_exactly_what_one_process_labels(snapshot: common.State, tmp_path: Path,
                                                           records: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    one, one_wh = _label(snapshot.copy_to(tmp_path / "one"), records, 0, monkeypatch)
    two, two_wh = _label(snapshot.copy_to(tmp_path / "two"), records, 2, monkeypatch)
    assert set(one) == set(BENCHMARKS)
    for name in BENCHMARKS:
        labels_one, n_one, batches_one = one[name]
        labels_two, n_two, batches_two = two[name]
        assert n_one == n_two == len({r.prompt_hash for r in records[name]})
        assert batches_one == batches_two == -(-n_one // BATCH)
        assert labels_one.keys() == labels_two.keys()
        for h, labels in labels_one.items():  # every TaskLabel field, floats bit for bit, and the work decision
            assert list(labels) == list(labels_two[h]), (name, h)
            assert (labels.is_work, labels.p_work) == (labels_two[h].is_work, labels_two[h].p_work)
    assert _cached(one_wh) == _cached(two_wh)  # what the label cache keeps is the same too
    assert sum(1 for labels in one["cybench"][0].values() if labels) > 0  # not a comparison of empty sets


def test_the_workers_hand_their_benchmark_contexts_to_this_process(
        snapshot: common.State, tmp_path: Path, records: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """Label validation, later in the step's process, reuses the benchmark contexts the labeling computed
    (models/labeling/offline/labeler.py's memo on the index); with workers they are computed there, so the
    workers hand them back: the same contexts the step's process computes itself."""
    import dataclasses
    import pickle

    import numpy as np

    from assets.labels import _label_benchmarks
    from models.labeling.offline import OfflineLabeler
    from models.labeling.offline.labeler import _context_memo
    from resources.readers import load_selector_fit

    monkeypatch.setenv("BENCHMAP_LABEL_WORKERS", "2")
    monkeypatch.setattr(label_pool, "MIN_PROMPTS_TO_START", 1)
    settings.cache_clear()
    warehouse = Warehouse(path=str(snapshot.copy_to(tmp_path / "contexts").warehouse))
    built: dict[str, Any] = {}
    try:
        index, _, _ = warehouse.load_task_index()
        _context_memo(index).clear()  # what this process computed before (other tests) does not count
        _label_benchmarks(_Context(), warehouse, LabelerResource(kind="offline", batch_size=BATCH), records, built)
    finally:
        settings.cache_clear()
    memo = _context_memo(built["index"])
    from_workers = {key: pickle.dumps(context) for key, context in memo.items()}
    assert len(from_workers) == len(BENCHMARKS)  # one per benchmark, none computed in this process
    memo.clear()
    OfflineLabeler.calibrated(built["index"], load_selector_fit()).prepare(
        [r for name in BENCHMARKS for r in records[name]])
    assert memo.keys() == from_workers.keys()
    for key, context in memo.items():  # field by field (the pickles' bytes differ in layout, not in values)
        theirs = pickle.loads(from_workers[key])  # noqa: S301 - our own bytes
        for field in dataclasses.fields(context):
            value, other = getattr(context, field.name), getattr(theirs, field.name)
            if isinstance(value, np.ndarray):
                assert value.dtype == other.dtype and np.array_equal(value, other), field.name
            else:
                assert value == other, field.name


def test_a_worker_that_dies_fails_the_step_and_keeps_every_finished_batch(
        snapshot: common.State, tmp_path: Path, records: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    target = "finance_agent_benchmark"  # 50 prompts: 4 batches; its worker dies before the third
    original = label_pool._Worker.submit
    owner: dict[str, int] = {}

    def submit(self: Any, what: str, message: Any) -> Any:
        if message[0] == "label":
            owner[message[1]] = self.number
            if message[1] == target and what.startswith("batch 3 of"):
                original(self, "a crash", ("crash", 7))
        return original(self, what, message)

    monkeypatch.setattr(label_pool._Worker, "submit", submit)
    state = snapshot.copy_to(tmp_path / "crash")
    with pytest.raises(Failure) as failed:
        _label(state, records, 2, monkeypatch)
    text = str(failed.value.description)
    assert "labeling worker" in text and "exited with code 7" in text and target in text, text
    cached = set(_cached(Warehouse(path=str(state.warehouse))))
    order = list(dict.fromkeys(r.prompt_hash for r in records[target]))
    assert set(order[:2 * BATCH]) <= cached  # its two batches finished before the crash: committed
    assert not set(order[2 * BATCH:]) & cached  # the rest was never labeled
    later = BENCHMARKS[BENCHMARKS.index(target) + 1:]
    survivors = [b for b in later if owner[b] != owner[target]]
    assert survivors, owner  # a later benchmark on the other worker: finished, and written though a batch failed
    for name in survivors:
        assert {r.prompt_hash for r in records[name]} <= cached, name
    monkeypatch.setattr(label_pool._Worker, "submit", original)
    again, _ = _label(state, records, 2, monkeypatch)  # a rerun labels only what is missing
    missing = {r.prompt_hash for name in BENCHMARKS for r in records[name]} - cached
    assert sum(n for _, n, _ in again.values()) == len(missing) > 0


def test_worker_count_follows_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in (("0", 0), ("1", 0), ("2", 2), ("3", 3)):
        monkeypatch.setenv("BENCHMAP_LABEL_WORKERS", value)
        settings.cache_clear()
        assert label_pool.worker_count() == expected
    monkeypatch.delenv("BENCHMAP_LABEL_WORKERS")
    settings.cache_clear()
    import os

    assert label_pool.worker_count() == (2 if len(os.sched_getaffinity(0)) >= 2 else 0)
    settings.cache_clear()


def test_the_index_a_worker_builds_ahead_is_the_one_the_asset_builds(snapshot: common.State, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import pickle

    from resources import task_index
    from resources import warehouse as wh

    monkeypatch.setenv("BENCHMAP_LABEL_WORKERS", "2")
    settings.cache_clear()
    tables = {name: wh.read_table(str(snapshot.warehouse), name) for name in task_index.REFERENCE_TABLES}
    dwas = task_index.task_dwas_frame()
    digest = task_index.inputs_digest(tables, dwas)
    try:
        label_pool.prestart(tmp_path)
        assert label_pool.has_prebuilt()
        path, sha, seconds = label_pool.take_prebuilt(digest)  # the warehouse tables are what the files say
        assert path.parent == tmp_path and seconds > 0 and not label_pool.has_prebuilt()
        label_pool.prestart(tmp_path / "other")  # already running: no second pool, no second build
        assert not label_pool.has_prebuilt()
    finally:
        label_pool.shutdown()
        settings.cache_clear()
    ahead = pickle.loads(path.read_bytes())  # noqa: S301 - written by this test's worker
    here = task_index.build_index(tables, dwas)
    ahead.build_seconds = here.build_seconds = 0.0
    assert pickle.dumps(ahead, protocol=5) == pickle.dumps(here, protocol=5)  # the same index, byte for byte
    # inputs that differ: the worker's index is not taken, and its file is gone
    monkeypatch.setenv("BENCHMAP_LABEL_WORKERS", "2")
    settings.cache_clear()
    try:
        label_pool.prestart(tmp_path / "again")
        changed = {**tables, "onet_tasks": tables["onet_tasks"].head(100)}
        assert label_pool.take_prebuilt(task_index.inputs_digest(changed, dwas)) is None
        assert not list((tmp_path / "again").glob("*.pkl"))
    finally:
        label_pool.shutdown()
        settings.cache_clear()
