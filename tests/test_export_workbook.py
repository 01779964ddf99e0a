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
