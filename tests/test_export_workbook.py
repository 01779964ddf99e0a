"""The export workbook written in memory (resources/export_files.py WORKBOOK_OPTIONS `in_memory`, issue 29): the
same file as xlsxwriter's default, which assembles the sheets in ~100 temporary files first."""

from __future__ import annotations

import zipfile
from pathlib import Path

from models import exports as ex
from resources import export_files as ef
from tests.test_exports import export_tables, world  # noqa: F401 - `world` is the fixture the test takes


def test_the_workbook_written_in_memory_holds_what_xlsxwriters_temporary_files_give(world, tmp_path, monkeypatch):  # noqa: F811
    prepared = {t: ex.prepare_table(t, f) for t, f in export_tables(world).items()}
    dictionary = ex.dictionary_frame(prepared)
    names = ef.write_workbook(tmp_path / "memory.xlsx", prepared, dictionary, [("export", "test")])
    monkeypatch.setitem(ef.WORKBOOK_OPTIONS, "in_memory", False)
    assert ef.write_workbook(tmp_path / "files.xlsx", prepared, dictionary, [("export", "test")]) == names

    def entries(path: Path) -> dict[str, bytes]:
        with zipfile.ZipFile(path) as archive:
            return {info.filename: archive.read(info) for info in archive.infolist()}

    memory, files = entries(tmp_path / "memory.xlsx"), entries(tmp_path / "files.xlsx")
    # the same entries with the same bytes (only the zip entries' dates differ), and more than the sheets
    assert list(memory) == list(files) and memory == files and len(memory) > len(names)


def test_the_readme_says_which_sheets_hold_text_cut_at_excels_cell_limit():
    """A probe (2026-12-07): a 40,015-character benchmark title held its first 32,767 characters on the sheet,
    and nothing said so (the README noted only sheets cut at the row limit)."""
    import polars as pl

    from models import exports as ex

    long = "Long title " + "x" * 40_000 + " END"
    tables = {"benchmarks": pl.DataFrame({"benchmark": ["a", "b"], "title": [long, "short"], "n": [1, 2]}),
              "benchmark_counts": pl.DataFrame({"benchmark": ["a"], "reason": ["short"]})}
    notes = dict(ex.readme_frame([], tables).iter_rows())
    assert notes["benchmarks (text cut)"] == ("1 cell of title holds its first 32,767 characters only "
                                              "(Excel's cell limit); the Parquet and CSV files hold all")
    assert "benchmark_counts (text cut)" not in notes
    assert ex.excel_safe(tables["benchmarks"])["title"].str.len_chars().max() == ex.EXCEL_MAX_CHARS
