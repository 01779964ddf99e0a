"""Reads that must not grow with the warehouse (issue 29 item 5, bench/scale.py): at 50x the mirror the label
cache holds ~555k label sets; a step that needs a handful of facts about it asks for those, not for every row."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest

from models.labeling.base import TaskLabel
from models.labeling.cache import labels_to_json
from models.sources import ONET_VERSION
from resources.dagster_resources import Warehouse
from resources.label_cache import LabelCache


def _cache(path: Path, rows_per_labeler: dict[tuple[str, str], int]) -> None:
    """label_cache (and benchmark_prompts) with `n` label sets per (labeler, labeler_version), each labeler on the
    same hashes h0..h(n-1) of benchmark b: task 1 + i % 3 under occupation 11-1011.00."""
    path.parent.mkdir(parents=True, exist_ok=True)
    LabelCache(path).ensure_tables()
    rows = []
    for (labeler, version), n in rows_per_labeler.items():
        for i in range(n):
            labels = [TaskLabel(task_id=1 + i % 3, onet_soc_code="11-1011.00", rank=1, score=1.0)]
            rows.append({"prompt_hash": f"h{i}", "onet_version": ONET_VERSION, "labeler": labeler, "model": "m",
                         "template_version": "t", "labels_json": labels_to_json(labels, True, 0.9),
                         "labeler_version": version})
    frame = pl.DataFrame(rows).with_columns(pl.lit("2026-12-03 00:00:00").str.to_datetime().alias("created_at"))
    n_prompts = max(rows_per_labeler.values())
    prompts = pl.DataFrame({"benchmark": ["b"] * n_prompts, "prompt_id": [f"p{i}" for i in range(n_prompts)],
                            "prompt_hash": [f"h{i}" for i in range(n_prompts)]})
    con = duckdb.connect(str(path))
    try:
        con.register("cache_rows", frame.to_arrow())
        con.execute("insert into label_cache by name select * from cache_rows")
        con.register("prompt_rows", prompts.to_arrow())
        con.execute("create table benchmark_prompts as select * from prompt_rows")
    finally:
        con.close()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many whole-cache reads (LabelCache.read_frame) and label sets parsed (cache_frame_to_labels' rows)."""
    from models.labeling import cache as lc

    seen = {"read_frame": 0, "label_sets_parsed": 0}
    read_frame, to_labels = LabelCache.read_frame, lc.cache_frame_to_labels

    def counted_read(self: LabelCache, *args: object, **kwargs: object) -> pl.DataFrame:
        seen["read_frame"] += 1
        return read_frame(self, *args, **kwargs)  # type: ignore[arg-type]

    def counted_parse(rows: pl.DataFrame) -> pl.DataFrame:
        seen["label_sets_parsed"] += rows.height
        return to_labels(rows)

    monkeypatch.setattr(LabelCache, "read_frame", counted_read)
    monkeypatch.setattr(lc, "cache_frame_to_labels", counted_parse)
    return seen


@pytest.mark.parametrize("cache_rows", [10, 2_000])
def test_labeler_agreement_with_one_labeler_reads_no_label_set(tmp_path: Path, reads: dict[str, int],
                                                               cache_rows: int) -> None:
    """One labeler: nothing to compare, whatever the cache's size; the asset reads the distinct cache keys only
    (at 50x it parsed all 554,585 label sets: +878 MiB, 17.7 CPU-s)."""
    from dagster import build_asset_context

    from assets.labeler_agreement import labeler_agreement

    path = tmp_path / "warehouse" / "benchmap.duckdb"
    _cache(path, {("offline", "offline-v1"): cache_rows})
    warehouse = Warehouse(path=str(path))
    assert warehouse.label_cache_labeler_keys(ONET_VERSION).to_dicts() == [
        {"labeler": "offline", "labeler_version": "offline-v1", "model": "m", "template_version": "t"}]
    table = labeler_agreement(build_asset_context(), warehouse)
    assert table.is_empty()
    assert reads == {"read_frame": 0, "label_sets_parsed": 0}


def test_labeler_agreement_with_two_labelers_still_compares_them(tmp_path: Path, reads: dict[str, int]) -> None:
    """Two labelers on the same 30 prompts with the same tasks: every agreement is 1 over n = 30, and the label
    sets of both are read (60)."""
    from dagster import build_asset_context

    from assets.labeler_agreement import labeler_agreement

    path = tmp_path / "warehouse" / "benchmap.duckdb"
    _cache(path, {("offline", "offline-v1"): 30, ("openai", "gpt+t"): 30})
    table = labeler_agreement(build_asset_context(), Warehouse(path=str(path)))
    f1 = table.filter(pl.col("metric") == "task_f1").to_dicts()
    assert len(f1) == 1 and f1[0]["value"] == 1.0 and f1[0]["n"] == 30 and f1[0]["benchmark"] == "b"
    assert reads == {"read_frame": 1, "label_sets_parsed": 60}


def test_labeler_keys_without_a_cache_table(tmp_path: Path) -> None:
    path = tmp_path / "benchmap.duckdb"
    duckdb.connect(str(path)).close()
    assert Warehouse(path=str(path)).label_cache_labeler_keys(ONET_VERSION).is_empty()


def test_label_validation_ranks_in_chunks_with_the_rankings_of_one_call(mirror: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """labeler_validation's rankings of the human-labeled and judged prompts (~15,000 at 50x the mirror, every
    candidate task each: +631 MiB) come a few batches at a time, and equal those of one call over all."""
    from assets import label_validation as lv
    from models.labeling.offline import OfflineLabeler, OfflineLabelerConfig
    from pipelines.fit_labeler import build_index
    from resources.landing import read_prompts
    from resources.readers import load_selector_fit

    frames = [read_prompts(mirror / "benchmarks" / name / "prompts.jsonl", name)[0].head(25)
              for name in ("webshop", "swe_lancer")]
    texts = pl.concat(frames).select("benchmark", "prompt_id", "prompt_hash", "prompt").sample(fraction=1.0, seed=3)
    labeler = OfflineLabeler(build_index(), OfflineLabelerConfig(batch_size=3), load_selector_fit())
    labeler.prepare(lv.prompt_records(texts))
    whole = labeler.rankings(lv.prompt_records(texts))
    calls: list[int] = []
    rankings = labeler.rankings

    def counted(records: list) -> list:
        calls.append(len(records))
        return rankings(records)

    monkeypatch.setattr(labeler, "rankings", counted)
    monkeypatch.setattr(lv, "RANKING_CHUNK_BATCHES", 4)  # 12 prompts a call
    chunked = list(lv._rankings_in_chunks(labeler, texts))
    assert calls == [12, 12, 12, 12, 2]
    assert [row for row, _ in chunked] == list(texts.iter_rows())
    assert [r for _, r in chunked] == whole
    assert sum(len(r.tasks) for r in whole) > 50 * lv.RANKED_TASKS_KEPT  # what the chunks spare holding at once
