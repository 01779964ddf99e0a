"""Issue 26, the input/output cases (docs/reliability.md lists every case and the command that shows it):
damage inside the warehouse file, parser limits, links out of the landing zone, `whatif` arguments, a full disk.

Small fixtures only: a few-table warehouse written here, landing folders of a handful of lines, and the landing
assets materialized in this process (no labels, no reference data).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from models import benchmarks as bm  # noqa: E402
from resources import integrity  # noqa: E402
from resources import warehouse as wh  # noqa: E402

LANDING_KEYS = ["benchmarks", "benchmark_prompts", "benchmark_results", "benchmark_rejects"]


def _command(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=env)


def _env(tmp_path: Path, warehouse: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {**{k: v for k, v in os.environ.items() if not k.startswith("BENCHMAP_")},
            "BENCHMAP_WAREHOUSE": str(warehouse), "DAGSTER_HOME": str(home), "BENCHMAP_OFFLINE": "1",
            "BENCHMAP_RAW_DIR": str(tmp_path / "raw"), **extra}


# ------------------------------------------------------------------------------ 3. damage inside the file
def _small_warehouse(path: Path) -> None:
    texts = [f"prompt {i}: draft the quarterly report for region {i % 97}" for i in range(60_000)]
    wh.replace_table(path, "benchmark_prompts", pl.DataFrame({"benchmark": ["b"] * len(texts), "prompt": texts}))
    wh.replace_table(path, "onet_tasks", pl.DataFrame({"task_id": list(range(5_000))}))
    con = duckdb.connect(str(path))
    con.execute("checkpoint")
    con.close()


def _overwrite_inside(path: Path, table: str, n_bytes: int = 64) -> int:
    """Random bytes written into the middle of a data block of `table` (the file's length is unchanged)."""
    con = duckdb.connect(str(path), read_only=True)
    block_size = con.execute("select block_size from pragma_database_size()").fetchone()[0]
    blocks = sorted({r[0] for r in con.execute(
        "select block_id from pragma_storage_info(?) where persistent and block_id >= 0", [table]).fetchall()})
    con.close()
    block = blocks[len(blocks) // 2]
    offset = integrity.HEADER_BYTES + block * block_size + block_size // 2
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(os.urandom(n_bytes))
    return offset


def test_random_bytes_inside_a_table_are_found_and_stop_the_run_with_exit_3(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh" / "benchmap.duckdb"
    _small_warehouse(warehouse)
    assert integrity.check_warehouse(warehouse).ok
    assert integrity.check_for_run(warehouse, "run-a").ok  # a Dagster run's first step: the full check
    size = warehouse.stat().st_size
    _overwrite_inside(warehouse, "benchmark_prompts")
    assert warehouse.stat().st_size == size
    # the run's later step processes make the cheap check only; the next run's first step makes the full one
    assert integrity.check_for_run(warehouse, "run-a").ok
    with pytest.raises(integrity.WarehouseDamaged, match="cannot be read: benchmark_prompts"):
        integrity.check_for_run(warehouse, "run-b")
    # the length, catalog and row counts alone do not see it (the check before issue 26)
    assert integrity.check_warehouse(warehouse, checksums=False).ok
    damaged = integrity.check_warehouse(warehouse)
    assert set(damaged.unreadable) == {"benchmark_prompts"}, damaged.unreadable
    assert "onet_tasks" in damaged.counts  # the undamaged table still reads
    assert "checksum" in damaged.unreadable["benchmark_prompts"].lower()
    done = _command(["pipelines.run_all", "--skip-reference"],
                    _env(tmp_path, warehouse, BENCHMAP_MIRROR=str(tmp_path / "no_mirror")))
    assert done.returncode == 3, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert f"warehouse {warehouse} is damaged" in lines[0] and "cannot be read: benchmark_prompts" in lines[0]
    assert "python -m pipelines.run_all --rebuild" in lines[0]


# ------------------------------------------------------------------------------ 4. a bad record costs that record
def test_parser_limits_are_rejects_with_file_and_line_and_the_rest_loads(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from resources.landing import ingest_folder

    folder = tmp_path / "raw" / "benchmarks" / "limits"
    folder.mkdir(parents=True)
    lines = [
        b'{"prompt_id": "ok1", "prompt": "Prepare the payroll summary"}',
        b'{"prompt_id": "deep", "prompt": "x", "extra": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"prompt_id": "big", "prompt": "x", "onet_task_id": 99999999999999999999}',
        b'{"prompt_id": "huge", "prompt": "x", "extra": 1' + b"0" * 5_000 + b"}",
        b'{"prompt_id": "inf", "prompt": "x", "extra": 1e999}',
        b'{"prompt_id": "nan", "prompt": "x", "extra": NaN}',
        b'{"prompt_id": "long", "prompt": "' + b"y" * 300_000 + b'"}',
        b'{"prompt_id": "ok2", "prompt": "Schedule the site inspection", "extra": {"a": [1, 2.5, -3]}}',
    ]
    (folder / "prompts.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (folder / "benchmark.toml").write_text('title = "Limits"\npublic_items = 99999999999999999999\n')
    monkeypatch.setattr(bm, "MAX_LINE_BYTES", 250_000)  # the real limit is 32 MB; the rule is the same
    ingested = ingest_folder(bm.BenchmarkFolder("limits", folder, "raw"))
    assert ingested.prompts["prompt_id"].to_list() == ["ok1", "ok2"]
    rejects = {(r["file"], r["line_number"]): r["reason"] for r in ingested.rejects.iter_rows(named=True)}
    prompts = "limits/prompts.jsonl"
    assert "nested deeper than 64 levels" in rejects[(prompts, 2)]
    assert "out of range (integers must fit in 64 bits)" in rejects[(prompts, 3)]
    assert "out of range (integers must fit in 64 bits)" in rejects[(prompts, 4)]
    assert "out of range (larger than a 64-bit float)" in rejects[(prompts, 5)]
    assert "NaN is not a JSON number" in rejects[(prompts, 6)]
    assert "line is 300,035 bytes, over the 250,000-byte limit of one record" in rejects[(prompts, 7)]
    # metadata out of range: rejected with its key and line, the documented default (the prompt count) taken
    assert "public_items = 99999999999999999999 is out of range" in rejects[("limits/benchmark.toml", 2)]
    registry = ingested.registry.row(0, named=True)
    assert registry["public_items"] == 2 and registry["title"] == "Limits" and registry["n_rejects"] == 7
    assert "benchmark.toml line 2" in registry["metadata_warnings"]
    # the rows fit the warehouse's types: write them as the landing assets do
    warehouse = tmp_path / "wh.duckdb"
    wh.replace_table(warehouse, "benchmarks", ingested.registry)
    wh.replace_table(warehouse, "benchmark_rejects", ingested.rejects)
    assert wh.query(warehouse, "select public_items from benchmarks")["public_items"].to_list() == [2]


# ------------------------------------------------------------------------------ 5. landing is confined
def _materialize_landing(warehouse: Path, partitions: list[str]) -> list[bool]:
    from dagster import AssetSelection, DagsterInstance, materialize

    from pipelines.definitions import build_definitions

    defs = build_definitions(str(warehouse))
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("benchmark", partitions)
    return [materialize(list(defs.assets), selection=AssetSelection.assets(*LANDING_KEYS).without_checks(),
                        partition_key=p, resources=defs.resources, instance=instance, raise_on_error=False).success
            for p in partitions]


def test_links_out_of_the_landing_zone_are_refused_and_nothing_outside_is_stored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from resources.sources import discover_landing

    secret = "root:x:0:0:SECRET-LINE-FROM-OUTSIDE:/root:/bin/bash"
    outside = tmp_path / "outside"
    (outside / "bench").mkdir(parents=True)
    (outside / "passwd").write_text("\n".join(f"{secret}{i}" for i in range(25)) + "\n")
    (outside / "bench" / "prompts.jsonl").write_text(f'{{"prompt_id": "1", "prompt": "{secret}"}}\n')
    landing = tmp_path / "raw" / "benchmarks"
    for name in ("linked_file", "linked_results", "plain"):
        (landing / name).mkdir(parents=True)
    (landing / "linked_file" / "prompts.jsonl").symlink_to(outside / "passwd")
    (landing / "linked_folder").symlink_to(outside / "bench")
    for name in ("linked_results", "plain"):
        (landing / name / "prompts.jsonl").write_text('{"prompt_id": "1", "prompt": "Audit the ledger"}\n')
    (landing / "linked_results" / "results.csv").symlink_to(outside / "passwd")
    (landing / "plain" / "notes").symlink_to(landing / "plain" / "prompts.jsonl")  # inside: harmless
    warehouse = tmp_path / "wh" / "benchmap.duckdb"
    for key, value in {"BENCHMAP_RAW_DIR": str(tmp_path / "raw"), "BENCHMAP_WAREHOUSE": str(warehouse),
                       "BENCHMAP_OFFLINE": "1"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("BENCHMAP_MIRROR", raising=False)
    monkeypatch.delenv("BENCHMAP_FOLLOW_LINKS", raising=False)

    found = discover_landing()
    assert sorted(found.benchmarks) == ["linked_results", "plain"]
    problems = {p.path.name: p.reason for p in found.problems}
    assert set(problems) == {"linked_file", "linked_folder"}
    assert all("outside the landing zone" in r and "BENCHMAP_FOLLOW_LINKS=1" in r for r in problems.values())
    assert _materialize_landing(warehouse, ["linked_results", "plain", bm.LANDING_PARTITION]) == [True] * 3
    rejects = wh.read_table(warehouse, "benchmark_rejects")
    refused = rejects.filter(pl.col("benchmark") == "linked_results")
    assert refused["file"].to_list() == ["linked_results/results.csv"]
    assert "is a link to" in refused["reason"][0] and "refused" in refused["reason"][0]
    assert rejects.filter(pl.col("benchmark") == bm.LANDING_PARTITION).height == 2
    # nothing from outside the landing zone is in any table
    con = duckdb.connect(str(warehouse), read_only=True)
    for (table,) in con.execute("select table_name from information_schema.tables").fetchall():
        hits = con.execute(f'select count(*) from "{table}" t where cast(t as varchar) like ?',
                           ["%SECRET-LINE-FROM-OUTSIDE%"]).fetchone()[0]
        assert hits == 0, table
    con.close()
    # the documented setting follows the links
    monkeypatch.setenv("BENCHMAP_FOLLOW_LINKS", "1")
    assert sorted(discover_landing().benchmarks) == ["linked_file", "linked_folder", "linked_results", "plain"]


def test_a_reference_source_linked_out_of_data_raw_is_not_read(tmp_path: Path) -> None:
    from models.sources import SOURCES
    from resources.settings import Settings
    from resources.sources import resolve_source

    spec = next(iter(SOURCES.values()))
    target = tmp_path / "raw" / spec.source / spec.filename
    target.parent.mkdir(parents=True)
    (tmp_path / "elsewhere.txt").write_text("not a source\n")
    target.symlink_to(tmp_path / "elsewhere.txt")
    config = Settings(raw_dir=tmp_path / "raw", mirror=None, offline=True)
    with pytest.raises(Exception, match="outside the landing zone") as caught:
        resolve_source(spec, config=config)
    assert spec.key in str(caught.value)
    followed = resolve_source(spec, config=Settings(raw_dir=tmp_path / "raw", offline=True, follow_links=True))
    assert followed is not None and followed.origin == "raw"


# ------------------------------------------------------------------------------ 6. whatif validates first
def test_whatif_refuses_bad_arguments_in_one_line_before_any_work(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh" / "benchmap.duckdb"
    wh.replace_table(warehouse, "placeholder", pl.DataFrame({"x": [1]}))
    candidate = tmp_path / "cand"
    candidate.mkdir()
    (candidate / "prompts.jsonl").write_text('{"prompt_id": "1", "prompt": "Inspect the boiler"}\n')
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep me\n")
    cases = {
        ("--threshold", "-1"): "argument --threshold: must be >= 1, got -1",
        ("--threshold", "0"): "argument --threshold: must be >= 1, got 0",
        ("--threshold", "two"): "argument --threshold: must be a whole number >= 1, got 'two'",
        ("--top", "0"): "argument --top: must be >= 1, got 0",
        ("--out", str(a_file)): f"--out {a_file} is an existing file, not a folder",
        ("--out", str(a_file / "sub")): f"{a_file} is not a folder",
    }
    for extra, expected in cases.items():
        done = _command(["pipelines.whatif", str(candidate), "--warehouse", str(warehouse), *extra])
        assert done.returncode == 2, (extra, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("python -m pipelines.whatif: error: "), done.stderr
        assert expected in lines[0], lines[0]
        assert done.stdout == ""  # nothing computed or printed
    assert a_file.read_text() == "keep me\n"
    from pipelines.whatif import check_out_folder

    assert check_out_folder(tmp_path / "new" / "folder") is None  # created when written


def test_whatif_on_a_candidate_of_no_prompt_names_the_line_and_why_before_any_work(tmp_path: Path) -> None:
    """It said `no valid prompts (57 rejected lines)` (no line, no reason), and only after building the labeler
    from the warehouse (a warehouse without the reference tables failed on that instead)."""
    warehouse = tmp_path / "wh" / "benchmap.duckdb"
    wh.replace_table(warehouse, "placeholder", pl.DataFrame({"x": [1]}))
    candidate = tmp_path / "cand"
    candidate.mkdir()
    lines = [f'{{"prompt_id": "{i}", "prompt": "Inspect boiler {i}"}}' for i in range(3)]
    (candidate / "prompts.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-16")
    done = _command(["pipelines.whatif", str(candidate), "--warehouse", str(warehouse)])
    assert done.returncode == 1 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.strip().splitlines() == [
        f"python -m pipelines.whatif: error: {candidate / 'prompts.jsonl'}: no valid prompts (3 rejected lines; "
        "first line 1: the file looks UTF-16 (byte-order mark FF FE), not UTF-8: save prompts.jsonl as UTF-8) "
        "(--debug shows the traceback)"]


def _whatif_error(capsys: pytest.CaptureFixture[str], candidate: Path, warehouse: Path) -> tuple[int, str]:
    """Exit code and the one stderr line of `whatif <candidate> --warehouse <warehouse>` (nothing on stdout)."""
    from pipelines.cli import run_cli
    from pipelines.whatif import PROG, main

    try:
        code = run_cli(main, [str(candidate), "--warehouse", str(warehouse)], prog=PROG)
    except SystemExit as usage:  # a bad argument (argparse's exit)
        code = int(usage.code or 0)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1 and "Traceback" not in err, (out, err)
    return code, lines[0]


def test_whatif_warehouse_that_is_not_a_warehouse_names_that_file_and_what_to_do_for_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a file that is not a DuckDB database got `python -m pipelines.run_all --rebuild` (which rebuilds the
    default warehouse, not that file), a DuckDB file of other tables a LookupError traceback, a folder DuckDB's
    'Could not read from file', and a missing file `run make run first` (the default warehouse again)."""
    candidate = tmp_path / "cand"
    candidate.mkdir()
    (candidate / "prompts.jsonl").write_text('{"prompt_id": "1", "prompt": "Inspect the boiler"}\n')
    notes = tmp_path / "my notes.txt"
    notes.write_text("not a warehouse\n" * 2000)
    other = tmp_path / "other.duckdb"
    wh.replace_table(other, "something", pl.DataFrame({"x": [1]}))
    folder = tmp_path / "wh"
    folder.mkdir()
    (folder / "benchmap.duckdb").write_bytes(other.read_bytes())
    build = "python -m pipelines.run_all"

    code, line = _whatif_error(capsys, candidate, notes)
    assert code == 2 and line.startswith(f"python -m pipelines.whatif: error: --warehouse {notes}: not a DuckDB "
                                         "database, so not a benchmap warehouse"), line
    assert f"`BENCHMAP_WAREHOUSE='{notes}' {build} --rebuild` moves it aside and builds a warehouse there" in line
    assert f"`{build} --rebuild`" not in line and notes.read_text() == "not a warehouse\n" * 2000

    code, line = _whatif_error(capsys, candidate, other)
    assert code == 1 and f"{other}: not a benchmap warehouse (it has none of the tables the what-if reads: " \
        "onet_tasks, " in line, line
    assert f"`BENCHMAP_WAREHOUSE=<new file> {build}` builds one" in line

    code, line = _whatif_error(capsys, candidate, folder)
    assert code == 2 and line.endswith(f"--warehouse {folder} is a folder, not a warehouse file: pass the "
                                       f"warehouse's .duckdb file (e.g. {folder / 'benchmap.duckdb'})"), line

    code, line = _whatif_error(capsys, candidate, tmp_path / "new.duckdb")
    assert code == 2 and line.endswith(f"no warehouse at {tmp_path / 'new.duckdb'}: "
                                       f"`BENCHMAP_WAREHOUSE={tmp_path / 'new.duckdb'} {build}` builds one there, "
                                       "or pass another --warehouse"), line
    assert not (tmp_path / "new.duckdb").exists()


def test_whatif_over_a_warehouse_damaged_inside_names_the_rebuild_of_that_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The file opens (DuckDB's header is whole) but a block of onet_tasks fails its checksum when read: the
    recovery line is the rebuild of that file, not of the default warehouse."""
    from models import gaps
    from resources.whatif import INDEX_TABLES

    candidate = tmp_path / "cand"
    candidate.mkdir()
    (candidate / "prompts.jsonl").write_text('{"prompt_id": "1", "prompt": "Inspect the boiler"}\n')
    warehouse = tmp_path / "elsewhere" / "benchmap.duckdb"
    for name in (*gaps.REFERENCE_TABLES, *INDEX_TABLES):
        wh.replace_table(warehouse, name, pl.DataFrame({"x": [1]}))
    _small_warehouse(warehouse)  # a big onet_tasks, several blocks
    _overwrite_inside(warehouse, "onet_tasks")
    code, line = _whatif_error(capsys, candidate, warehouse)
    assert code == 1 and f"{warehouse}: the warehouse file looks damaged (" in line, line
    assert line.endswith(f"`BENCHMAP_WAREHOUSE={warehouse} python -m pipelines.run_all --rebuild` moves it aside, "
                         "restores its label cache from its label store and rebuilds it there "
                         "(--debug shows the traceback)"), line


# ------------------------------------------------------------------------------ 7. a full disk says so
@pytest.fixture
def tiny_disk(tmp_path: Path) -> Path:
    """A 3 MB tmpfs (needs root and mount; skipped where neither is available)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_full_disk_is_reported_with_the_folder_and_free_space(tiny_disk: Path) -> None:
    from pipelines.cli import describe

    warehouse = tiny_disk / "benchmap.duckdb"
    wh.replace_table(warehouse, "kept", pl.DataFrame({"a": [1, 2, 3]}))
    errors = []
    for n in (20_000, 300_000):  # one fails at commit (the WAL), one while writing blocks
        with pytest.raises(wh.DiskFull) as caught:
            wh.replace_table(warehouse, f"big{n}", pl.DataFrame({"a": [f"row {i} " * 20 for i in range(n)]}))
        errors.append(caught.value)
    for error in errors:
        text = describe(error)
        assert text.startswith("disk full: ") and f"MB free in {tiny_disk}" in text, text
        assert "no transaction is active" not in text
    assert wh.query(warehouse, "select sum(a) as s from kept")["s"].to_list() == [6]  # nothing lost


def test_whatif_names_each_rejected_line_of_a_candidate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its tables said `candidate_rejected_lines 3`, and nothing said which lines or why (a probe, 2026-12-07)."""
    from pipelines.whatif import _print_rejects

    candidate = tmp_path / "cand"
    candidate.mkdir()
    lines = ['{"prompt_id": "1", "prompt": "Inspect the boiler"}', '{"prompt_id": "2", "prompt": ', "not json",
             '{"prompt_id": "1", "prompt": "Inspect it again"}', '{"prompt_id": "3", "prompt": "Fix the pump"}']
    (candidate / "prompts.jsonl").write_text("\n".join(lines) + "\n")
    from resources.whatif import read_candidate_prompts

    _print_rejects(read_candidate_prompts(candidate)[1])  # the rejects run_whatif's result carries
    said = capsys.readouterr().err.strip().splitlines()
    where = f"warning: {candidate / 'prompts.jsonl'}:"
    assert [line.removeprefix(where).split(":")[0] for line in said] == ["2", "3", "4"], said
    assert all(line.startswith(where) and line.endswith("(line not counted)") for line in said)
    assert "duplicate" in said[2].lower()
