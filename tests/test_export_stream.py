"""Big export tables written from the warehouse in slices (resources/export_stream.py, issue 29 item 5): the
Parquet and CSV files are what the whole-frame path (`prepare_table` + `write_table_files`) writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from models import exports as ex
from resources import export_files as ef
from resources import export_stream as es
from resources import export_writer as ew
from resources import warehouse as wh

TABLE = "prompt_occupation_estimates"


def text_estimates(n: int = 2_000, seed: int = 3) -> pl.DataFrame:
    """Per-text rows with what can break an ORDER BY: repeated keys, exact duplicate rows, nulls in every
    column, NaN, negative zero, tiny and huge floats, non-ASCII text, upper and lower case."""
    rng = np.random.default_rng(seed)
    hashes = [f"{h:04x}" for h in rng.integers(0, 300, n)]
    hashes[:6] = ["Ab", "ab", "aB", "é", "z", "Z"]
    floats = rng.random(n) ** 9 * 10.0 ** rng.integers(-12, 12, n)
    floats[:5] = [0.1, 1e-7, 1e21, 2.5, 1 / 3]
    frame = pl.DataFrame({
        "prompt_hash": hashes,
        "benchmark": rng.choice(["mmlu", "gpqa", "swe_bench", "ümlaut"], n).tolist(),
        "onet_soc_code": rng.choice(["11-1011.00", "15-1252.00", "29-1141.00"], n).tolist(),
        "p": rng.choice([0.0, 0.25, 0.5, 1.0], n),
        "p_calibrated": floats,
        "judged": rng.random(n) < 0.3,
    })
    frame = pl.concat([frame, frame.head(50)])  # exact duplicates
    return frame.with_columns(
        pl.when(pl.int_range(pl.len()) % 17 == 0).then(None).otherwise(pl.col(c)).alias(c) for c in frame.columns
    ).with_columns(
        pl.when(pl.int_range(pl.len()) % 31 == 1).then(float("nan")).otherwise(pl.col("p_calibrated"))
        .alias("p_calibrated")
    ).sample(fraction=1.0, shuffle=True, seed=seed)  # rows arrive in no order


@pytest.fixture()
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "benchmap.duckdb"
    wh.replace_table(path, TABLE, text_estimates())
    return path


def test_streamed_files_equal_the_whole_frame_files(warehouse: Path, tmp_path: Path):
    whole, streamed = tmp_path / "whole", tmp_path / "streamed"
    whole.mkdir()
    streamed.mkdir()
    frame = wh.read_table(warehouse, TABLE)
    expected = ef.write_table_files(TABLE, ex.prepare_table(TABLE, frame), whole)
    handle = es.streamed_table(warehouse, TABLE)
    assert handle is not None and handle.height == frame.height and handle.schema == frame.schema
    got = ef.write_table_files(TABLE, handle, streamed)
    from_batches = es.StreamedTable(**{**handle.__dict__})
    from_batches.write(streamed / "small.parquet", streamed / "small.csv", batch_rows=97)  # many slices
    assert got.rows == expected.rows == frame.height and got.columns == expected.columns
    assert got.csv.read_bytes() == expected.csv.read_bytes()  # the same cell text, header once
    assert (streamed / "small.csv").read_bytes() == expected.csv.read_bytes()
    for parquet in (got.parquet, streamed / "small.parquet"):
        assert pl.read_parquet(parquet).equals(pl.read_parquet(expected.parquet))  # nulls and NaN equal too


def test_an_empty_table_writes_a_header_and_an_empty_parquet(tmp_path: Path):
    path = tmp_path / "benchmap.duckdb"
    wh.replace_table(path, TABLE, text_estimates().head(0))
    handle = es.streamed_table(path, TABLE)
    assert handle is not None and handle.height == 0
    whole, streamed = tmp_path / "whole", tmp_path / "streamed"
    whole.mkdir()
    streamed.mkdir()
    expected = ef.write_table_files(TABLE, ex.prepare_table(TABLE, wh.read_table(path, TABLE)), whole)
    got = ef.write_table_files(TABLE, handle, streamed)
    assert got.csv.read_bytes() == expected.csv.read_bytes()
    assert pl.read_parquet(got.parquet).equals(pl.read_parquet(expected.parquet))


def test_only_plain_file_only_tables_are_streamed(tmp_path: Path):
    # a streamed table has no workbook sheet (the workbook gets whole frames only) and a plain column order
    assert set(ex.STREAMED_TABLES) <= set(ex.FILE_ONLY_TABLES)
    assert es.streamed_table(tmp_path / "none.duckdb", TABLE) is None  # not in the warehouse: nothing to stream
    path = tmp_path / "benchmap.duckdb"
    wh.replace_table(path, "task_estimates", pl.DataFrame({"benchmark_index": ["all"], "p": [0.5]}))
    assert es.streamed_table(path, "task_estimates") is None  # not listed: read whole
    assert ex.plain_sort_columns("task_coverage", pl.Schema({"benchmark_index": pl.Utf8})) is None  # "all" first
    assert ex.plain_sort_columns("coverage_headline", pl.Schema({"scope": pl.Utf8})) is None  # pooled first
    assert ex.plain_sort_columns(TABLE, pl.Schema({"a": pl.Utf8, "b": pl.List(pl.Int64)})) is None  # nested


def test_export_folder_with_a_streamed_table_matches_the_whole_frame_export(warehouse: Path, tmp_path: Path):
    frame = wh.read_table(warehouse, TABLE)
    other = pl.DataFrame({"benchmark": ["b", "a"]})
    whole = ew.write_exports({TABLE: frame, "benchmarks": other}, tmp_path / "whole", version="test", expected=())
    handle = es.streamed_table(warehouse, TABLE)
    assert handle is not None
    streamed = ew.write_exports({TABLE: handle, "benchmarks": other}, tmp_path / "streamed", version="test",
                                expected=())
    assert [e["rows"] for e in streamed.manifest["tables"]] == [e["rows"] for e in whole.manifest["tables"]]
    assert [e["csv_sha256"] for e in streamed.manifest["tables"]] == [e["csv_sha256"] for e in whole.manifest["tables"]]
    assert streamed.dictionary.read_text() == whole.dictionary.read_text()
    assert ew.verify_export(streamed.directory) == []
    assert ew.read_export_table(streamed.directory, TABLE).equals(ew.read_export_table(whole.directory, TABLE))


def test_a_streamed_tables_content_hash_follows_its_rows_not_their_order(warehouse: Path):
    """A release stands only when every exported table is unchanged (resources/release.py table_hashes); the
    streamed table is hashed in DuckDB, without reading it into memory."""
    handle = es.streamed_table(warehouse, TABLE)
    assert handle is not None
    before = handle.content_sha256()
    frame = wh.read_table(warehouse, TABLE)
    wh.replace_table(warehouse, TABLE, frame.reverse())  # the same rows in another order
    assert handle.content_sha256() == before
    moved = frame.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(0.123).otherwise(pl.col("p")).alias("p"))
    wh.replace_table(warehouse, TABLE, moved)
    assert handle.content_sha256() != before
    wh.replace_table(warehouse, TABLE, pl.concat([frame, frame.head(1)]))  # one row twice
    assert handle.content_sha256() != before


def test_a_text_cell_a_spreadsheet_would_run_is_text_in_every_csv(tmp_path: Path):
    """A probe (2026-12-07): a results.csv model `=HYPERLINK("http://evil.example/m","click")`, `+cmd|A0`, `-2+3`
    and `@SUM(1+1)`, and index titles alike, were live formulas in the exported CSVs (the workbook was safe). Both
    CSV paths (whole frame, streamed) and release.csv give them a leading apostrophe; Parquet keeps the value."""
    from models.exports import csv_safe, csv_unsafe
    from models.validation.annotation import parse_gold_csv

    values = ['=HYPERLINK("http://evil.example/m","click")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(1+1)", "\tx",
              "a=b", "plain", None]
    frame = pl.DataFrame({"model": values, "p": [0.5] * len(values)})
    written = ef.write_table_files("occupation_model_scores", frame, tmp_path)
    cells = pl.read_csv(written.csv)["model"].to_list()
    assert cells[:5] == ["'" + v for v in values[:5]] and cells[5:7] == ["a=b", "plain"] and cells[7] is None
    assert pl.read_parquet(written.parquet)["model"].to_list() == values  # as it was
    assert [csv_unsafe(c) for c in cells[:7]] == values[:7] and csv_unsafe("'plain") == "'plain"
    # the streamed path
    path = tmp_path / "w.duckdb"
    wh.replace_table(path, TABLE, frame.rename({"model": "prompt_hash"}))
    handle = es.streamed_table(path, TABLE)
    assert handle is not None
    handle.write(tmp_path / "s.parquet", tmp_path / "s.csv")
    assert sorted(pl.read_csv(tmp_path / "s.csv")["prompt_hash"].drop_nulls().to_list()) == sorted(
        c for c in cells if c is not None)
    assert csv_safe(pl.DataFrame({"n": [1, -2]})).equals(pl.DataFrame({"n": [1, -2]}))  # numbers untouched
    # the annotators' file: an id exported with its apostrophe is read back as the id
    sample = pl.DataFrame({"benchmark": ["b"], "prompt_id": ["=1+1"], "task_ids": ["12"]})
    ef.write_csv(tmp_path / "gold.csv", sample)
    assert (tmp_path / "gold.csv").read_text().splitlines()[1].startswith("b,'=1+1,")
    assert parse_gold_csv((tmp_path / "gold.csv").read_bytes(), "gold.csv")["prompt_id"].to_list() == ["=1+1"]
