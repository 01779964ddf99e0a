"""Integrity before trust (issue 19): a damaged warehouse is detected before any run, the paid labels survive it
in the label store, and a rebuild labels nothing again.

Every test starts from a copy of the session's labels snapshot (the reference tables and the pickled task
index, `bench.common.labels_snapshot`) and a temporary landing zone of small benchmarks of real mirrored
prompts, run in this process through `pipelines.run_all.main` and Dagster's `materialize`.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402
from models.labeling.base import LabelOutcome, PromptRecord, TaskLabel  # noqa: E402
from pipelines import restore_labels  # noqa: E402
from resources import integrity, label_store  # noqa: E402
from resources import label_cache as lc  # noqa: E402
from resources import warehouse as wh  # noqa: E402

LANDING = ["benchmarks", "benchmark_prompts", "benchmark_results", "benchmark_rejects"]


def real_records(benchmark: str, n: int, *, tag: str) -> list[dict]:
    lines = (common.mirror_path() / "benchmarks" / benchmark / "prompts.jsonl").read_bytes().split(b"\n")
    out = []
    for line in lines:
        if line.strip():
            record = json.loads(line)
            out.append({"prompt_id": f"{tag}-{record['prompt_id']}", "prompt": f"{record['prompt']} {tag}"})
        if len(out) == n:
            break
    return out


@pytest.fixture
def state(snapshot: common.State, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> common.State:
    state = snapshot.copy_to(tmp_path / "state")
    for key, value in state.env(labeler="offline").items():
        if key.startswith("BENCHMAP_") or key == "DAGSTER_HOME":
            monkeypatch.setenv(key, value)
    return state


def run_all(state: common.State, instance: Any, *args: str) -> int:
    from pipelines import run_all as ra
    from pipelines.definitions import build_definitions

    return ra.main(list(args), defs=build_definitions(str(state.warehouse)), instance=instance)


def truncate_half(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


def labeler_calls(output: str) -> dict[str, int]:
    """benchmark -> prompts labeled, from run_all's stage lines."""
    return {m.group(1): int(m.group(2).replace(",", ""))
            for m in re.finditer(r"\] (\w+): ok in [\d.]+s: .*?\(([\d,]+) prompts? labeled", output)}


# ------------------------------------------------------------------------------------------------ the check
def test_check_names_the_file_the_unreadable_tables_and_the_recovery_command(state: common.State) -> None:
    sound = integrity.check_warehouse(state.warehouse, per_benchmark=True)
    assert sound.ok and sound.counts["onet_tasks"] == 18796 and sound.seconds < 10
    truncate_half(state.warehouse)
    damaged = integrity.check_warehouse(state.warehouse)
    assert not damaged.ok
    assert any("truncated" in p for p in damaged.problems) or damaged.unreadable
    message = damaged.message()
    assert str(state.warehouse) in message and "python -m pipelines.run_all --rebuild" in message
    with pytest.raises(integrity.WarehouseDamaged, match="is damaged"):
        integrity.check_for_run(state.warehouse)
    # a missing file is a fresh warehouse, not a damaged one
    assert integrity.check_warehouse(state.root / "nowhere.duckdb").ok


def test_truncated_warehouse_stops_every_run_and_rebuild_labels_nothing(
        state: common.State, capsys: pytest.CaptureFixture) -> None:
    from dagster import AssetSelection, DagsterInstance, materialize

    from pipelines.definitions import build_definitions

    instance = DagsterInstance.ephemeral()
    common.write_benchmark(state.landing, "ia", real_records("webshop", 30, tag="ia"))
    common.write_benchmark(state.landing, "ib", real_records("officebench", 30, tag="ib"))
    args = ["--skip-reference", "--skip-analysis", "--benchmarks", "ia,ib"]
    assert run_all(state, instance, *args) == 0
    first = capsys.readouterr().out
    assert labeler_calls(first) == {"ia": 30, "ib": 30}
    cache_before = lc.LabelCache(state.warehouse).read_frame().sort("prompt_hash")
    labels_before = wh.read_table(state.warehouse, "prompt_task_labels").sort("benchmark", "prompt_id", "rank")
    assert cache_before.height >= 60 and label_store.has_segments(state.warehouse)

    truncate_half(state.warehouse)
    runs_before = len(instance.get_runs())
    # run_all: one message naming the file and the command, exit 3, nothing run or skipped
    assert run_all(state, instance, *args) == 3
    out, err = capsys.readouterr()
    assert f"warehouse {state.warehouse} is damaged" in err and "--rebuild" in err
    assert "skipped" not in out and "Traceback" not in err
    assert len(instance.get_runs()) == runs_before
    # a run the UI or a sensor launches fails when its Warehouse resource is set up, with the same message
    defs = build_definitions(str(state.warehouse))
    instance.add_dynamic_partitions("benchmark", ["ia"])
    ui = materialize(list(defs.assets), selection=AssetSelection.assets(*LANDING).without_checks(),
                     partition_key="ia", resources=defs.resources, instance=instance, raise_on_error=False)
    assert not ui.success
    messages = []
    for event in ui.all_events:
        error = getattr(event.event_specific_data, "error", None)
        while error is not None:
            messages.append(error.message)
            error = error.cause
    assert any(e.event_type_value == "RESOURCE_INIT_FAILURE" for e in ui.all_events)
    assert any(f"warehouse {state.warehouse} is damaged" in m and "python -m pipelines.run_all --rebuild" in m
               for m in messages), messages
    assert not any(e.event_type_value == "STEP_START" for e in ui.all_events)  # nothing ran over it

    # the rebuild: damaged file moved aside, labels restored from the store, everything rebuilt, zero calls
    assert run_all(state, instance, "--rebuild", "--skip-analysis", "--benchmarks", "ia,ib") == 0
    rebuilt = capsys.readouterr().out
    assert f"restored {cache_before.height:,} label sets" in rebuilt
    assert labeler_calls(rebuilt) == {"ia": 0, "ib": 0}, rebuilt
    aside = list(state.warehouse.parent.glob("benchmap.duckdb.damaged-*"))
    assert len(aside) == 1 and aside[0].stat().st_size > 0  # kept, not deleted
    assert integrity.check_warehouse(state.warehouse).ok
    restored = lc.LabelCache(state.warehouse).read_frame().sort("prompt_hash")
    assert restored.equals(cache_before)  # every column, exactly as written
    labels = wh.read_table(state.warehouse, "prompt_task_labels").sort("benchmark", "prompt_id", "rank")
    assert labels.equals(labels_before)


def test_a_step_is_skipped_only_while_its_output_tables_are_intact(state: common.State,
                                                                   capsys: pytest.CaptureFixture) -> None:
    from dagster import AssetKey, AssetRecordsFilter, DagsterInstance

    instance = DagsterInstance.ephemeral()
    common.write_benchmark(state.landing, "ic", real_records("spider2", 25, tag="ic"))
    args = ["--skip-reference", "--skip-analysis", "--benchmarks", "ic"]
    assert run_all(state, instance, *args) == 0
    capsys.readouterr()
    latest = instance.fetch_materializations(  # the rows Dagster's record of the partition's last success holds
        AssetRecordsFilter(asset_key=AssetKey("benchmark_prompts"), asset_partitions=["ic"]), limit=1).records[0]
    assert latest.asset_materialization.metadata["row_count"].value == 25
    assert run_all(state, instance, *args) == 0
    assert "ic: unchanged since it last wrote its outputs, skipped" in capsys.readouterr().out
    with wh.connect(state.warehouse) as con:  # rows lost behind run_all's back
        con.execute("delete from benchmark_prompts where benchmark = 'ic' and prompt_id like '%1%'")
    left = wh.query(state.warehouse, "select count(*) as n from benchmark_prompts where benchmark = 'ic'")["n"][0]
    assert left < 25
    assert run_all(state, instance, *args) == 0
    out = capsys.readouterr().out
    assert f"its output table benchmark_prompts has {left} rows, 25 when it last succeeded: running it" in out
    assert "ic: ok in" in out
    assert wh.query(state.warehouse, "select count(*) as n from benchmark_prompts where benchmark = 'ic'"
                    )["n"][0] == 25
    assert run_all(state, instance, *args) == 0
    assert "skipped" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------ the store
def _outcome(h: str, *, ok: bool, attempts: int = 1) -> LabelOutcome:
    if ok:
        return LabelOutcome(h, [TaskLabel(100 + len(h), "15-1252.00", 1, 0.5, "r", 0.7)], input_tokens=5)
    return LabelOutcome(h, error=f"failed {h}", attempts=attempts)


def test_the_store_replays_label_failures_exactly_as_the_warehouse_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "wh" / "benchmap.duckdb"
    cache = lc.LabelCache(path)
    key = lc.CacheKey("29.2", "openai", "m", "t1")
    records = {h: [PromptRecord("b", f"id-{h}", h, f"text {h}")] for h in ("h1", "h2", "h3", "h4")}
    records["h2"].append(PromptRecord("b2", "other-h2", "h2", "text h2"))  # one hash, two prompts
    batches = [
        [_outcome("h1", ok=True), _outcome("h2", ok=False, attempts=3)],
        [_outcome("h2", ok=False, attempts=2), _outcome("h3", ok=False)],
        [_outcome("h3", ok=True), _outcome("h4", ok=False, attempts=4)],
        [_outcome("h2", ok=False, attempts=1)],
    ]
    columns = ["prompt_hash", "benchmark", "prompt_id", "labeler", "labeler_version", "error", "attempts"]
    for batch in batches:
        cache.write_batch(key, "v1", batch, records)
        stored = label_store.read_store(path)
        assert not stored.damaged
        expected = cache.failures().select(columns).sort(columns)
        assert stored.failures.select(columns).sort(columns).equals(expected)
    # h2 failed 3 + 2 + 1 times for each of its two prompts; h3 was labeled after failing; h4 failed once
    final = cache.failures().sort("prompt_id")
    assert final.select("prompt_id", "attempts").rows() == [("id-h2", 6), ("id-h4", 4), ("other-h2", 6)]

    fresh = tmp_path / "fresh" / "benchmap.duckdb"
    for segment in label_store.segments(path):  # the store travels with a copied folder
        target = label_store.store_dir(fresh) / segment.path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(segment.path.read_bytes())
        checksum = segment.path.with_name(segment.path.name + label_store.CHECKSUM_SUFFIX)
        target.with_name(checksum.name).write_bytes(checksum.read_bytes())
    result = restore_labels.restore(fresh)
    assert (result.restored_labels, result.restored_failures) == (2, 3)
    restored = lc.LabelCache(fresh)
    assert restored.read_frame().sort("prompt_hash").equals(cache.read_frame().sort("prompt_hash"))
    assert restored.failures().select(columns).sort(columns).equals(cache.failures().select(columns).sort(columns))
    assert restored.read(key)["h1"] == cache.read(key)["h1"]  # labels_json round-trips whatever it holds
    again = restore_labels.restore(fresh)  # idempotent
    assert (again.restored_labels, again.restored_failures, again.already_present) == (0, 0, 2)


def test_a_damaged_segment_is_named_and_the_rest_restored(tmp_path: Path) -> None:
    path = tmp_path / "wh" / "benchmap.duckdb"
    cache = lc.LabelCache(path)
    key = lc.CacheKey("29.2", "offline", "offline", "t")
    for h in ("a1", "a2", "a3"):
        cache.write_batch(key, "v", [_outcome(h, ok=True)], {h: [PromptRecord("b", h, h, h)]})
    segments = [s for s in label_store.segments(path) if s.kind == label_store.CACHE_KIND]
    assert len(segments) == 3 and all(s.seq < t.seq for s, t in zip(segments, segments[1:], strict=False))
    data = bytearray(segments[1].path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    segments[1].path.write_bytes(bytes(data))
    path.unlink()  # the warehouse is gone entirely
    result = restore_labels.restore(path)
    assert result.restored_labels == 2
    assert len(result.damaged_segments) == 1 and segments[1].path.name in result.damaged_segments[0]
    assert "damaged" in result.damaged_segments[0]
    assert sorted(lc.LabelCache(path).read(key)) == ["a1", "a3"]


def test_a_label_store_that_cannot_be_written_stops_the_batch(tmp_path: Path) -> None:
    path = tmp_path / "wh" / "benchmap.duckdb"
    path.parent.mkdir(parents=True)
    label_store.store_dir(path).write_text("not a folder")  # the store's place is taken by a file
    cache = lc.LabelCache(path)
    key = lc.CacheKey("29.2", "offline", "offline", "t")
    with pytest.raises(label_store.LabelStoreError, match="cannot be written"):
        cache.write_batch(key, "v", [_outcome("z1", ok=True)], {"z1": [PromptRecord("b", "z1", "z1", "z1")]})
    assert cache.read(key) == {}  # never in the warehouse only


def test_backfill_copies_a_warehouse_labeled_before_the_store_existed(tmp_path: Path) -> None:
    path = tmp_path / "wh" / "benchmap.duckdb"
    cache = lc.LabelCache(path)
    key = lc.CacheKey("29.2", "offline", "offline", "t")
    cache.write_batch(key, "v", [_outcome("q1", ok=True), _outcome("q2", ok=False)],
                      {h: [PromptRecord("b", h, h, h)] for h in ("q1", "q2")})
    for segment in label_store.segments(path):  # as if labeled by an older version
        segment.path.unlink()
    assert restore_labels.backfill(path) == 1
    assert restore_labels.backfill(path) == 0  # once
    stored = label_store.read_store(path)
    assert [pl.read_parquet(p).height for p in stored.cache_files] == [1]
    assert stored.failures["prompt_hash"].to_list() == ["q2"]


# ------------------------------------------------------------------------------------------------ removed
def test_a_benchmark_removed_from_the_landing_zone_leaves_the_tables_but_not_its_labels(
        state: common.State, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from dagster import DagsterInstance

    monkeypatch.delenv("BENCHMAP_MIRROR")  # the landing zone is the two benchmarks below
    instance = DagsterInstance.ephemeral()
    common.write_benchmark(state.landing, "ra", real_records("webshop", 12, tag="ra"))
    common.write_benchmark(state.landing, "rb", real_records("officebench", 15, tag="rb"),
                           results=[("rb-1", "m", 0.5)])
    args = ["--skip-reference", "--skip-analysis"]
    assert run_all(state, instance, *args) == 0
    assert labeler_calls(capsys.readouterr().out) == {"ra": 12, "rb": 15}
    cached = lc.LabelCache(state.warehouse).read_frame().height
    tables = ["benchmarks", "benchmark_prompts", "prompt_task_labels"]

    def rows(benchmark: str) -> dict[str, int]:
        return {t: int(wh.query(state.warehouse, f"select count(*) as n from {t} where benchmark = ?",
                                [benchmark])["n"][0]) for t in tables}

    kept = rows("ra")
    assert rows("rb")["benchmark_prompts"] == 15
    shutil.rmtree(state.landing / "rb")
    assert run_all(state, instance, *args) == 0  # a plain run
    out = capsys.readouterr().out
    assert "removed benchmark rb (its landing folder is gone)" in out
    assert rows("rb") == dict.fromkeys(tables, 0) and rows("ra") == kept
    assert "rb" not in instance.get_dynamic_partitions("benchmark")
    assert lc.LabelCache(state.warehouse).read_frame().height == cached  # its labels stay
    # put back: labeled from the cache, nothing computed again
    common.write_benchmark(state.landing, "rb", real_records("officebench", 15, tag="rb"))
    assert run_all(state, instance, *args) == 0
    assert labeler_calls(capsys.readouterr().out) == {"rb": 0}


def test_a_segment_with_a_column_this_version_lacks_restores_the_columns_it_has(tmp_path: Path) -> None:
    """A segment with one more column (a newer benchmap sharing the store) failed every restore and every later
    run with DuckDB's "Binder Error: Table label_cache does not have a column ...", naming no file (a probe)."""
    import hashlib

    path = tmp_path / "wh" / "benchmap.duckdb"
    cache = lc.LabelCache(path)
    key = lc.CacheKey("29.2", "offline", "offline", "t")
    for h in ("n1", "n2"):
        cache.write_batch(key, "v", [_outcome(h, ok=True)], {h: [PromptRecord("b", h, h, h)]})
    newer = [s for s in label_store.segments(path) if s.kind == label_store.CACHE_KIND][1].path
    pl.read_parquet(newer).with_columns(pl.lit(7).alias("step3_input_tokens")).write_parquet(newer)
    newer.with_name(newer.name + label_store.CHECKSUM_SUFFIX).write_text(
        f"{hashlib.sha256(newer.read_bytes()).hexdigest()}  {newer.name}\n")
    path.unlink()
    result = restore_labels.restore(path)
    assert result.restored_labels == 2 and not result.damaged_segments
    assert sorted(lc.LabelCache(path).read(key)) == ["n1", "n2"]


def test_a_damaged_segment_is_written_again_from_a_sound_warehouse(tmp_path: Path) -> None:
    """restore_labels skipped a damaged segment with a warning and never repaired it, so a rebuild after that
    asked for its labels again (a probe, 2026-12-07: 8 paid judge requests)."""
    path = tmp_path / "wh" / "benchmap.duckdb"
    cache = lc.LabelCache(path)
    key = lc.CacheKey("29.2", "offline", "offline", "t")
    for h in ("r1", "r2", "r3"):
        cache.write_batch(key, "v", [_outcome(h, ok=True)], {h: [PromptRecord("b", h, h, h)]})
    segments = [s for s in label_store.segments(path) if s.kind == label_store.CACHE_KIND]
    segments[1].path.write_bytes(segments[1].path.read_bytes()[:200])  # truncated: r2's segment
    first = restore_labels.restore(path)  # the warehouse is sound: it holds r2
    assert len(first.damaged_segments) == 1 and first.rewritten == 1
    assert any("wrote 1 label sets" in line for line in first.lines())
    path.unlink()  # now the warehouse is lost too: the store alone must hold all three
    second = restore_labels.restore(path)
    assert second.restored_labels == 3 and sorted(lc.LabelCache(path).read(key)) == ["r1", "r2", "r3"]
