"""Benchmark landing zone: parsing, the four benchmark tables, the refresh sensors, jobs and run_all.

Dagster tests build their own Definitions (the benchmark assets plus small stand-ins for the reference, labels
and analysis domains) over a temporary warehouse and landing zone, so they do not depend on other domains.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from dagster import (
    AssetIn,
    AssetKey,
    DagsterInstance,
    DagsterRunStatus,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    SensorResult,
    asset,
    build_schedule_context,
    build_sensor_context,
    materialize,
)

from assets import benchmarks as bench_assets
from assets import module_assets, module_checks
from assets.partitions import benchmark_partitions
from models import benchmarks as bm
from pipelines import run_all
from pipelines.analysis_automation import analysis_automation_sensor
from pipelines.jobs import JOBS
from pipelines.landing_sensor import benchmark_landing_sensor, plan_landing_refresh
from pipelines.schedules import SCHEDULES, reference_weekly_schedule
from pipelines.sensors import SENSORS
from resources import warehouse as wh
from resources.dagster_resources import Warehouse
from resources.io_manager import WarehouseIOManager
from resources.label_queries import labels_behind_prompts
from resources.landing import discover, folder_content_hash, ingest_folder, read_folder
from resources.sources import discover_landing, landing_roots

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"
TABLES = ("benchmarks", "benchmark_prompts", "benchmark_results", "benchmark_rejects")


# ----------------------------------------------------------------------------------------------- stand-ins
# a code version: made again without a change, its data version stays (as the real reference assets' do), so
# the labels that read it are not behind it (pipelines/reference_watch.py)
@asset(group_name="reference", code_version="1")
def reference_stub() -> pl.DataFrame:
    return pl.DataFrame({"x": [1]})


# named prompt_work: the analysis automation holds back while the release gate's tables are behind the prompts
@asset(name="prompt_work", group_name="labels", partitions_def=benchmark_partitions,
       metadata={"partition_expr": "benchmark"}, ins={"benchmark_prompts": AssetIn()}, deps=[reference_stub])
def labels_stub(benchmark_prompts: pl.DataFrame) -> pl.DataFrame:
    if LABELING_FAILS:
        raise RuntimeError(LABELING_FAILS[0])
    return benchmark_prompts.select("benchmark", "prompt_id", "prompt_hash")


LABELING_FAILS: list[str] = []  # while it holds a message, labels_stub fails with it (an HTTP 401 of the judge)


@asset(group_name="analysis", deps=[labels_stub, "benchmarks"])
def analysis_stub(warehouse: Warehouse) -> pl.DataFrame:
    return warehouse.query("select benchmark, count(*) as n from prompt_work group by 1")


@asset(group_name="analysis", deps=["benchmark_prompts"])
def failing_analysis_stub() -> pl.DataFrame:
    raise RuntimeError("analysis stand-in fails on purpose")


def build_defs(warehouse_path: Path, *extra) -> Definitions:
    warehouse = Warehouse(path=str(warehouse_path))
    return Definitions(
        assets=[*module_assets(bench_assets), reference_stub, labels_stub, analysis_stub, *extra],
        asset_checks=module_checks(bench_assets),
        jobs=JOBS, sensors=SENSORS, schedules=SCHEDULES,
        resources={"warehouse": warehouse, "io_manager": WarehouseIOManager(warehouse=warehouse)},
    )


@dataclass
class Env:
    landing: Path  # data/raw/benchmarks of the temporary landing zone
    mirror: Path  # $BENCHMAP_MIRROR/benchmarks
    warehouse: Path
    defs: Definitions
    instance: DagsterInstance

    def tick(self, cursor: str | None = None) -> SensorResult:
        context = build_sensor_context(instance=self.instance, cursor=cursor, definitions=self.defs)
        return benchmark_landing_sensor(context)

    def apply(self, result: SensorResult) -> list:
        """Do what the daemon does with a SensorResult: add partitions, then run each request."""
        for request in result.dynamic_partitions_requests or []:
            self.instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        job = self.defs.resolve_job_def("benchmark_refresh_job")
        # the job subset as the daemon makes it (get_subset: the checks with the assets when the request names none)
        return [(job.get_subset(asset_selection=set(r.asset_selection),
                                asset_check_selection=None if r.asset_check_keys is None else set(r.asset_check_keys))
                 if r.asset_selection is not None else job)
                .execute_in_process(instance=self.instance, partition_key=r.partition_key, tags=r.tags,
                                    raise_on_error=False)
                for r in result.run_requests]

    def run_partition(self, name: str):
        return self.defs.resolve_job_def("benchmark_refresh_job").execute_in_process(
            instance=self.instance, partition_key=name, raise_on_error=False)

    def table(self, name: str, benchmark: str | None = None) -> pl.DataFrame:
        if benchmark is None:
            return wh.read_table(self.warehouse, name)
        return wh.read_table(self.warehouse, name, where_column="benchmark", where_values=[benchmark])

    def snapshot(self, benchmark: str) -> dict[str, pl.DataFrame]:
        return {t: self.table(t, benchmark).sort(pl.all()) for t in TABLES}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    landing = tmp_path / "raw" / "benchmarks"
    mirror = tmp_path / "mirror" / "benchmarks"
    landing.mkdir(parents=True)
    mirror.mkdir(parents=True)
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(tmp_path / "raw"))
    monkeypatch.setenv("BENCHMAP_MIRROR", str(tmp_path / "mirror"))
    monkeypatch.setenv("BENCHMAP_OFFLINE", "1")
    monkeypatch.setenv("BENCHMAP_ANALYSIS_QUIET_S", "0")
    warehouse = tmp_path / "warehouse" / "benchmap.duckdb"
    monkeypatch.setenv("BENCHMAP_WAREHOUSE", str(warehouse))  # the automation asks the release gate of this file
    setup = Env(landing, mirror, warehouse, build_defs(warehouse), DagsterInstance.ephemeral())
    # the reference data is made (the landing sensor requests it first on an instance without it)
    assert materialize([reference_stub], instance=setup.instance, resources=setup.defs.resources).success
    return setup


def add_fixture(root: Path, name: str, as_name: str | None = None) -> Path:
    """A copy of a fixture folder; under `as_name`, its lines name `as_name` as their benchmark (a copy whose lines
    still name `name` lands no prompt, and its step fails)."""
    folder = Path(shutil.copytree(FIXTURES / name, root / (as_name or name)))
    if as_name:
        for file, old, new in (("prompts.jsonl", f'"benchmark": "{name}"', f'"benchmark": "{as_name}"'),
                               ("results.csv", f"\n{name},", f"\n{as_name},")):
            if (folder / file).is_file():
                (folder / file).write_text((folder / file).read_text(encoding="utf-8").replace(old, new),
                                           encoding="utf-8")
    return folder


def dagster_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


def requested(result: SensorResult) -> list[str]:
    return sorted(r.partition_key for r in result.run_requests)


# ----------------------------------------------------------------------------------------------- pure logic
def test_normalised_text_and_prompt_hash() -> None:
    composed, decomposed = "Caf\u00e9 menu", "Cafe\u0301 menu"
    assert composed != decomposed
    assert bm.prompt_hash(composed) == bm.prompt_hash(decomposed)  # NFC
    assert bm.normalise_prompt("  a\n\tb\u2028c   d ") == "a b c d"  # whitespace incl. U+2028 collapsed
    assert bm.prompt_hash("a  b") == bm.prompt_hash(" a b\n")
    assert bm.prompt_hash("a b") != bm.prompt_hash("a c")
    assert len(bm.prompt_hash("x")) == 64


def test_content_hash_covers_prompts_results_and_metadata(tmp_path: Path) -> None:
    folder = add_fixture(tmp_path, "tiny_bench")
    base = folder_content_hash(folder)
    assert folder_content_hash(folder) == base
    (folder / "SOURCES.md").write_text("notes are not content")
    assert folder_content_hash(folder) == base
    for name in ("results.csv", "benchmark.toml", "prompts.jsonl"):
        before = folder_content_hash(folder)
        with open(folder / name, "a") as handle:
            handle.write("\n")
        assert folder_content_hash(folder) != before, name


def test_discover_prefers_raw_and_records_landing_problems(tmp_path: Path) -> None:
    raw, mirror = tmp_path / "raw", tmp_path / "mirror"
    add_fixture(raw, "tiny_bench")
    add_fixture(mirror, "tiny_bench")
    add_fixture(mirror, "tiny_bench", "mirror_only")
    add_fixture(raw, "tiny_bench", "Bad-Name")
    # "all" names the pooled rows of every table (a benchmark of that name was mixed into the release's totals);
    # "$" let a trailing newline through, which broke the console's lines and the release's Markdown tables
    add_fixture(raw, "tiny_bench", "all")
    add_fixture(raw, "tiny_bench", "nl_bench\n")
    (raw / "no_prompts").mkdir()
    (raw / ".hidden").mkdir()
    (mirror / "INDEX.md").write_text("not a folder")
    landing = discover([("raw", raw), ("mirror", mirror)])
    assert sorted(landing.benchmarks) == ["mirror_only", "tiny_bench"]
    assert landing.benchmarks["tiny_bench"].origin == "raw"
    assert landing.benchmarks["mirror_only"].origin == "mirror"
    reasons = {p.path.name: p.reason for p in landing.problems}
    assert set(reasons) == {"Bad-Name", "all", "nl_bench\n", "no_prompts"}
    assert "not a safe benchmark identifier" in reasons["Bad-Name"]
    assert "not a safe benchmark identifier" in reasons["nl_bench\n"]
    assert "'all' is reserved" in reasons["all"]
    assert "no prompts.jsonl" in reasons["no_prompts"]
    rejects = bm.landing_rejects(landing.problems)
    assert rejects["benchmark"].unique().to_list() == [bm.LANDING_PARTITION]
    assert rejects.height == 4


def test_landing_from_listing_decides_from_the_listing_alone() -> None:
    # pure: no folder exists; a raw folder without prompts yields to the mirror's folder of the same name
    raw, mirror = Path("/nowhere/raw"), Path("/nowhere/mirror")
    landing = bm.landing_from_listing([
        ("raw", [(raw / "a_bench", True), (raw / "Bad", True), (raw / "b_bench", False)]),
        ("mirror", [(mirror / "a_bench", True), (mirror / "b_bench", True), (mirror / "c_bench", False)]),
    ])
    assert {n: (f.origin, f.path) for n, f in landing.benchmarks.items()} == {
        "a_bench": ("raw", raw / "a_bench"), "b_bench": ("mirror", mirror / "b_bench")}
    assert {p.path.name: p.origin for p in landing.problems} == {"Bad": "raw", "c_bench": "mirror"}


def test_discover_landing_looks_in_the_configured_raw_dir_then_the_mirror(tmp_path: Path, monkeypatch) -> None:
    raw, mirror = tmp_path / "raw", tmp_path / "mirror"
    add_fixture(raw / "benchmarks", "tiny_bench")
    add_fixture(mirror / "benchmarks", "tiny_bench", "mirror_only")
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(raw))
    monkeypatch.setenv("BENCHMAP_MIRROR", str(mirror))
    assert landing_roots() == [("raw", raw / "benchmarks"), ("mirror", mirror / "benchmarks")]
    landing = discover_landing()
    assert {name: f.origin for name, f in landing.benchmarks.items()} == {"tiny_bench": "raw", "mirror_only": "mirror"}


def test_rejects_markdown_escapes_reasons_and_says_how_many_are_left_out() -> None:
    assert bm.rejects_markdown(bm.rejects_frame([])) == "No rejects."
    rejects = bm.rejects_frame([bm.Reject("b", "b/prompts.jsonl", n, "bad | value", "x") for n in (1, 2, 3)])
    text = bm.rejects_markdown(rejects, limit=2)
    assert text.splitlines()[:3] == ["| file | line | reason |", "|---|---|---|", "| b/prompts.jsonl | 1 | bad \\| value |"]
    assert "1 more rows not shown (3 in all)" in text


def test_tiny_fixture_parses_completely(tmp_path: Path) -> None:
    ingested = ingest_folder(bm.BenchmarkFolder("tiny_bench", FIXTURES / "tiny_bench", "raw"))
    assert ingested.prompts.height == 6 and ingested.results.height == 5 and ingested.rejects.is_empty()
    row = ingested.registry.row(0, named=True)
    assert (row["title"], row["agentic"], row["saturated"], row["target_major_group"], row["public_items"]) == \
        ("Tiny Bench", False, False, "13-0000", 6)
    assert row["metadata_warnings"] is None
    t1 = ingested.prompts.filter(pl.col("prompt_id") == "t1").row(0, named=True)
    assert (t1["onet_task_id"], t1["onet_soc_code"], json.loads(t1["extra"])) == (8029, "13-2051.00", {"split": "test"})
    # the U+2028 inside t4 stays inside its record (split on b"\n" only)
    assert "\u2028" in ingested.prompts.filter(pl.col("prompt_id") == "t4")["prompt"][0]
    assert ingested.results.filter(pl.col("model") == "model-b, v2")["score"].to_list() == [1.0]


EXPECTED_BAD_PROMPTS = {
    2: "invalid JSON: Unterminated string starting at (column 61)",  # it read "starting at at column 61"
    3: "missing prompt_id",
    4: "duplicate prompt_id 'ok1' (first on line 1)",
    5: "empty prompt",
    6: "not valid UTF-8",
    9: "benchmark field 'other_bench' does not match the folder 'bad_bench'",
    10: "not a JSON object",
}
EXPECTED_BAD_RESULTS = {
    3: "unknown prompt_id 'ghost'",
    4: "outside [0, 1]",
    5: "outside [0, 1]",
    6: "is not a number",
    7: "not valid UTF-8",
    8: "duplicate result for prompt 'ok1' and model 'model-a'",
}


def _assert_bad_bench_rejects(rejects: pl.DataFrame) -> None:
    by_file = {f: dict(zip(g["line_number"].to_list(), g["reason"].to_list(), strict=True))
               for (f,), g in rejects.group_by("file")}
    prompts, results = by_file["bad_bench/prompts.jsonl"], by_file["bad_bench/results.csv"]
    assert sorted(prompts) == sorted(EXPECTED_BAD_PROMPTS)
    assert sorted(results) == sorted(EXPECTED_BAD_RESULTS)
    for line, fragment in EXPECTED_BAD_PROMPTS.items():
        assert fragment in prompts[line], (line, prompts[line])
    for line, fragment in EXPECTED_BAD_RESULTS.items():
        assert fragment in results[line], (line, results[line])
    assert set(by_file) == {"bad_bench/prompts.jsonl", "bad_bench/results.csv"}


def test_every_kind_of_bad_line_is_rejected_and_the_rest_ingests() -> None:
    ingested = ingest_folder(bm.BenchmarkFolder("bad_bench", FIXTURES / "bad_bench", "raw"))
    assert sorted(ingested.prompts["prompt_id"].to_list()) == ["ok1", "ok2", "sql'; drop table benchmarks; --"]
    assert ingested.prompts.filter(pl.col("prompt_id") == "ok1")["line_number"].to_list() == [1]
    assert sorted(ingested.results.select("prompt_id", "model", "score").rows()) == [
        ("ok1", "model-a", 0.5), ("ok2", "model-a", 1.0)]
    _assert_bad_bench_rejects(ingested.rejects)
    assert ingested.rejects.height == 13
    row = ingested.registry.row(0, named=True)
    assert (row["n_prompts"], row["n_results"], row["n_rejects"]) == (3, 2, 13)
    # metadata problems are warnings with defaults, not failures
    assert row["title"] == "Bad Bench" and row["agentic"] is None
    assert "agentic value 'sometimes' not understood" in row["metadata_warnings"]
    assert "unknown metadata key(s) ignored: flavour" in row["metadata_warnings"]


def test_results_file_with_a_bad_header_rejects_every_line(tmp_path: Path) -> None:
    """A bad header skips the file: every data line is a reject of its own, so the reject rate sees 300 lost rows
    (they counted as one reject, under the 5% check)."""
    path = tmp_path / "results.csv"
    path.write_text("prompt,who,value\nt1,a,0.5\nt1,b,0.7\n")
    results, rejects = bm.parse_results(path.read_bytes(), "tiny_bench", ["t1"])
    assert results.is_empty() and [r.line_number for r in rejects] == [1, 2, 3]
    assert "header lacks column(s) benchmark, prompt_id, model, score" in rejects[0].reason
    assert rejects[2].reason == "skipped: the header (line 1) lacks column(s) benchmark, prompt_id, model, score"


def test_an_empty_or_cut_results_file_is_never_silent() -> None:
    """An audit of bad input: a results.csv emptied (or cut to its header) gave no reject, and a last line cut
    mid-write (`0.875` -> `0.8`) landed with its wrong value."""
    for data, reason in ((b"", "no header and no result row: the file is empty"),
                         (b"benchmark,prompt_id,model,score\n", "a header and no result row")):
        results, rejects = bm.parse_results(data, "wb", ["a"])
        assert results.is_empty() and [(r.line_number, r.reason) for r in rejects] == [(1, reason)]
    results, rejects = bm.parse_results(b"benchmark,prompt_id,model,score\nwb,a,m1,0.875\nwb,b,m1,0.8", "wb",
                                        ["a", "b"])
    assert results.rows() == [("wb", "a", "m1", 0.875)]
    assert [(r.line_number, r.reason.split(":")[0]) for r in rejects] == [(3, "no final newline")]
    prompts, rejects = bm.parse_prompts(b"\n\n", "wb")
    assert prompts.is_empty() and [r.reason for r in rejects] == ["no prompt: the file is empty"]


def test_repeated_keys_and_columns_and_invisible_prompts_are_rejects() -> None:
    """What was resolved silently (an audit of bad input): a key repeated in one JSON line (last one won), a
    column repeated in the results header (last one won), a prompt of zero-width characters only (taken)."""
    prompts, rejects = bm.parse_prompts(
        b'{"prompt_id": "a", "prompt": "A", "prompt": "B"}\n{"prompt_id": "b", "prompt": "\\u200b\\u2060"}\n'
        b'{"prompt_id": "c", "prompt": "kept"}\n', "wb")
    assert prompts["prompt_id"].to_list() == ["c"]
    assert [(r.line_number, r.reason) for r in rejects] == [
        (1, "a JSON object repeats key(s) 'prompt'"), (2, "empty prompt (only invisible characters)")]
    results, rejects = bm.parse_results(b"benchmark,prompt_id,model,score,score\nwb,c,m,0.5,0.6\n", "wb", ["c"])
    assert results.is_empty() and [r.reason for r in rejects] == [
        "header repeats column(s) score: the whole file is skipped",
        "skipped: the header (line 1) repeats column(s) score"]


def test_old_mac_line_endings_quoted_line_breaks_and_a_cut_prompts_file() -> None:
    """Three inputs an audit of bad input left with unhelpful rejects: a file whose lines end in a bare carriage
    return (the whole file was one line: one reject, 'Extra data at column 43'), a results.csv whose quoted field
    holds a line break (two rejects, the result lost), a prompts.jsonl cut mid-write ('Unterminated string',
    nothing about the cut)."""
    prompts, rejects = bm.parse_prompts(b'{"prompt_id": "a", "prompt": "A memo"}\r{"prompt_id": "b", "prompt": '
                                        b'"A plan"}\r', "wb")
    assert prompts["prompt_id"].to_list() == ["a", "b"] and prompts["line_number"].to_list() == [1, 2]
    assert rejects == []
    results, rejects = bm.parse_results(b"benchmark,prompt_id,model,score\rwb,a,m,0.5\rwb,b,m,1\r", "wb", ["a", "b"])
    assert results["score"].to_list() == [0.5, 1.0] and rejects == []

    header = b"benchmark,prompt_id,model,score,notes\n"
    results, rejects = bm.parse_results(header + b'wb,a,m,0.5,"two\r\nlines, and a comma"\nwb,b,m,1,ok\n', "wb",
                                        ["a", "b"])
    assert results["prompt_id"].to_list() == ["a", "b"] and rejects == []
    # a record over several lines is named by its first, and its problems say so
    results, rejects = bm.parse_results(header + b'wb,a,m,1.5,"two\nlines"\nwb,b,m,1,ok\n', "wb", ["a", "b"])
    assert results["prompt_id"].to_list() == ["b"]
    assert [(r.line_number, r.reason) for r in rejects] == [(2, "score 1.5 is outside [0, 1] (a record over lines 2-3)")]
    # a stray quote swallows no more than MAX_QUOTED_LINES lines: the lines after it are read on their own
    stray = header + b'wb,a,m,0.5,"oops\n' + b"".join(b"wb,p%d,m,1,ok\n" % i for i in range(bm.MAX_QUOTED_LINES + 5))
    results, rejects = bm.parse_results(stray, "wb", ["a", *(f"p{i}" for i in range(bm.MAX_QUOTED_LINES + 5))])
    assert results.height == bm.MAX_QUOTED_LINES + 5
    assert [(r.line_number, r.reason) for r in rejects] == [
        (2, f"invalid CSV: a quoted field opened on this line is not closed within {bm.MAX_QUOTED_LINES} lines "
            "(a stray double quote?)")]
    # two stray quotes: the good rows between them are read (joined, they were one reject of 7 fields)
    # (two in the last column would make one valid record: CSV cannot tell them apart)
    results, rejects = bm.parse_results(header + b'wb,a,m,0.5,"oops\nwb,b,m,1,ok\nwb,c,m,0.25,ok\nwb,d",m,0.5,x\n',
                                        "wb", ["a", "b", "c", "d"])
    assert results["prompt_id"].to_list() == ["b", "c"]
    assert [(r.line_number, r.reason.split(" (no accepted")[0]) for r in rejects] == [
        (2, "invalid CSV: a quoted field opened on this line closes on line 5 into a record of 8 fields, not 5 "
            "(a stray double quote?)"), (5, "unknown prompt_id 'd\"'")]
    # cut inside a quoted field: not closed by the end of the file
    results, rejects = bm.parse_results(header + b'wb,a,m,0.5,"cut\nmid', "wb", ["a"])
    assert results.is_empty() and rejects[0].reason.endswith("not closed by the end of the file (a stray double "
                                                             "quote?)")
    # cut after the closing quote: the record over two lines is the file's last: not trusted
    results, rejects = bm.parse_results(header + b'wb,a,m,0.8,"two\nlines"', "wb", ["a"])
    assert results.is_empty() and [(r.line_number, r.reason.split(":")[0]) for r in rejects] == [
        (2, "no final newline")]

    prompts, rejects = bm.parse_prompts(b'{"prompt_id": "a", "prompt": "A memo"}\n{"prompt_id": "b", "prompt": "A pl',
                                        "wb")
    assert prompts["prompt_id"].to_list() == ["a"] and [r.line_number for r in rejects] == [2]
    assert "may have been cut mid-write" in rejects[0].reason
    prompts, rejects = bm.parse_prompts(b'{"prompt_id": "a", "prompt": "A memo"}', "wb")  # whole, just no newline
    assert prompts["prompt_id"].to_list() == ["a"] and rejects == []
    # CRLF lines cut between the carriage return and the line feed: the last line is whole (it was a reject)
    results, rejects = bm.parse_results(b"benchmark,prompt_id,model,score\r\nwb,a,m,0.5\r\nwb,b,m,0.75\r", "wb",
                                        ["a", "b"])
    assert results["score"].to_list() == [0.5, 0.75] and rejects == []


def test_an_unreadable_metadata_file_is_a_reject_and_keeps_the_stored_metadata() -> None:
    """A typo in benchmark.toml reset every field to its default (agentic, public_items: the benchmark left the
    economic_agentic index) with only a warning. Now: a reject naming the file and line, one warning, and the
    stored metadata kept; a new benchmark gets the defaults."""
    folder = bm.BenchmarkFolder("wb", Path("/tmp/wb"), "raw")
    prompts = b'{"prompt_id": "a", "prompt": "A"}\n{"prompt_id": "b", "prompt": "B"}\n'
    good = b'title = "WB"\nagentic = true\npublic_items = 500\n'
    stored = bm.ingest_benchmark(folder, {"prompts.jsonl": prompts, "benchmark.toml": good}).registry.row(0, named=True)
    broken = {"prompts.jsonl": prompts, "benchmark.toml": good.replace(b"true", b"tru")}
    again = bm.ingest_benchmark(folder, broken, previous=stored)
    row = again.registry.row(0, named=True)
    assert (row["title"], row["agentic"], row["public_items"], row["n_rejects"]) == ("WB", True, 500, 1)
    reject = again.rejects.row(0, named=True)
    assert (reject["file"], reject["line_number"], reject["raw_excerpt"]) == ("wb/benchmark.toml", 2, "agentic = tru")
    assert reject["reason"].startswith("benchmark.toml could not be read (TOMLDecodeError: Invalid value")
    assert "missing" not in row["metadata_warnings"]  # no false "title missing" etc. after it
    new = bm.ingest_benchmark(folder, broken).registry.row(0, named=True)
    assert (new["title"], new["agentic"], new["public_items"]) == ("wb", None, 2)


def test_metadata_defaults_yaml_and_unreadable_toml(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    meta, warnings = bm.parse_metadata(read_folder(folder), "plain", n_prompts=7)
    assert (meta["title"], meta["public_items"], meta["agentic"], meta["license"]) == ("plain", 7, None, None)
    assert len(warnings) == 2 and warnings[0].startswith("no benchmark.toml")
    (folder / "benchmark.yaml").write_text("title: YAML Bench\nlicence: MIT\nagentic: yes\npublic_items: '1,200'\n"
                                          "saturated: unknown\nmajor_group: '15'\n")
    meta, warnings = bm.parse_metadata(read_folder(folder), "plain", n_prompts=7)
    assert (meta["title"], meta["license"], meta["agentic"], meta["public_items"], meta["saturated"],
            meta["target_major_group"]) == ("YAML Bench", "MIT", True, 1200, None, "15-0000")
    assert warnings == ["version missing; default None", "source_url missing; default None"]
    (folder / "benchmark.toml").write_bytes(b"title = 'unterminated\n")
    meta, warnings = bm.parse_metadata(read_folder(folder), "plain", n_prompts=7)
    assert meta["title"] == "plain"
    assert any("benchmark.toml could not be read" in w for w in warnings)
    assert any("ignored benchmark.yaml" in w for w in warnings)


def _index_counts(mirror: Path) -> dict[str, int]:
    rows = re.findall(r"^\| ([a-z0-9_]+) \| (\d+) \|", (mirror / "benchmarks" / "INDEX.md").read_text(), re.M)
    return {name: int(n) for name, n in rows}


def test_every_mirrored_benchmark_ingests_with_index_counts(mirror: Path) -> None:
    """All 29 mirrored benchmarks (11,107 prompts per INDEX.md) ingest; the only real rejects are documented.

    Real rejects: jobbench/results.csv scores 14 tasks (249 rows) but only 3 of those task ids have a prompt in
    prompts.jsonl (its SOURCES.md says so): the 196 rows for the other 11 are rejected as 'unknown prompt_id' and
    the 53 for the 3 are kept. No mirrored prompt line is bad (no invalid JSON, duplicate id or empty prompt).
    gdpval and mle_bench have U+2028 inside prompts: splitting with str.splitlines() would wrongly break 3 + 1
    records into 9 + 3 unparseable pieces.
    """
    expected = _index_counts(mirror)
    assert len(expected) == 29 and sum(expected.values()) == 11107
    landing = discover([("mirror", mirror / "benchmarks")])
    assert sorted(landing.benchmarks) == sorted(expected) and landing.problems == []
    prompts = results = 0
    rejects = []
    for name, folder in landing.benchmarks.items():
        ingested = ingest_folder(folder)
        assert ingested.prompts.height == expected[name], name
        assert ingested.prompts["prompt_id"].n_unique() == ingested.prompts.height
        prompts += ingested.prompts.height
        results += ingested.results.height
        rejects.append(ingested.rejects)
    all_rejects = pl.concat(rejects)
    assert prompts == 11107
    assert results == 119 + 2400 + 1032 + (249 - 196) + 50
    assert all_rejects.height == 196
    assert all_rejects["file"].unique().to_list() == ["jobbench/results.csv"]
    assert all_rejects["reason"].str.starts_with("unknown prompt_id").all()


# ----------------------------------------------------------------------------------------------- sensor
def test_sensor_requests_exactly_new_or_changed_benchmarks(env: Env) -> None:
    folder = add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    assert requested(first) == ["tiny_bench"]
    assert [list(r.partition_keys) for r in first.dynamic_partitions_requests] == [["tiny_bench"]]
    assert first.run_requests[0].tags["benchmap/trigger"] == "new"
    assert all(r.success for r in env.apply(first))
    before = env.table("benchmark_prompts", "tiny_bench")
    assert before.height == 6
    registry = env.table("benchmarks", "tiny_bench").row(0, named=True)
    assert registry["content_hash"] == folder_content_hash(folder)

    # unchanged: nothing, with the cursor and also with a fresh cursor (hash read from the materialization)
    again = env.tick(first.cursor)
    assert again.run_requests == [] and not again.dynamic_partitions_requests
    assert env.tick(None).run_requests == []

    # edit two prompts: exactly this partition again, and exactly two prompt hashes change
    lines = (folder / "prompts.jsonl").read_text(encoding="utf-8").rstrip("\n").split("\n")  # not splitlines()
    for index in (1, 4):
        record = json.loads(lines[index])
        record["prompt"] += " Include a one-paragraph summary."
        lines[index] = json.dumps(record, ensure_ascii=False)
    (folder / "prompts.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    changed = env.tick(again.cursor)
    assert requested(changed) == ["tiny_bench"] and not changed.dynamic_partitions_requests
    assert changed.run_requests[0].tags["benchmap/trigger"] == "changed"
    assert all(r.success for r in env.apply(changed))
    after = env.table("benchmark_prompts", "tiny_bench")
    joined = before.join(after, on="prompt_id", suffix="_new")
    assert joined.height == 6
    assert sorted(joined.filter(pl.col("prompt_hash") != pl.col("prompt_hash_new"))["prompt_id"]) == ["t2", "t5"]
    updated = env.table("benchmarks", "tiny_bench").row(0, named=True)
    assert updated["first_seen"] == registry["first_seen"]
    assert updated["last_changed"] > registry["last_changed"]
    assert env.tick(changed.cursor).run_requests == []

    # whitespace-only edit: the content changes (refresh) but no prompt hash does (nothing to relabel)
    text = (folder / "prompts.jsonl").read_text(encoding="utf-8").replace("Draft a patient", "Draft  a \\n patient")
    (folder / "prompts.jsonl").write_text(text, encoding="utf-8")
    spaced = env.tick(changed.cursor)
    assert requested(spaced) == ["tiny_bench"]
    assert all(r.success for r in env.apply(spaced))
    final = env.table("benchmark_prompts", "tiny_bench")
    assert final.select("prompt_id", "prompt_hash").sort("prompt_id").equals(
        after.select("prompt_id", "prompt_hash").sort("prompt_id"))
    assert final.filter(pl.col("prompt_id") == "t2")["prompt"][0].startswith("Draft  a \n patient")


def test_landing_waits_for_a_running_analysis(env: Env) -> None:
    """A benchmark refreshed while an analysis run runs would be half in the release that run publishes (a real
    daemon, 2026-12-04: "33 of 33 landed" beside 34 benchmarks): the landing sensor looks again once it ended."""
    before = env.tick()  # nothing landed yet
    add_fixture(env.landing, "tiny_bench")
    analysis = env.defs.resolve_job_def("analysis_refresh_job")
    running = env.instance.create_run_for_job(analysis, status=DagsterRunStatus.STARTED, tags=analysis.tags)
    waiting = env.tick(before.cursor)
    assert waiting.run_requests == [] and waiting.cursor == before.cursor  # not seen: still new next time
    env.instance.report_run_canceled(running)
    assert requested(env.tick(waiting.cursor)) == ["tiny_bench"]


def test_second_new_benchmark_leaves_the_first_alone(env: Env) -> None:
    add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    env.apply(first)
    add_fixture(env.mirror, "tiny_bench", "tiny_two")  # a new benchmark arriving via the mirror
    second = env.tick(first.cursor)
    assert requested(second) == ["tiny_two"]
    assert [list(r.partition_keys) for r in second.dynamic_partitions_requests] == [["tiny_two"]]


def analysis_tick(env: Env, cursor: str | None = None):
    """One tick of the analysis automation, evaluated here as the code server does for the daemon."""
    return analysis_automation_sensor.evaluate_tick(
        build_sensor_context(instance=env.instance, cursor=cursor, definitions=env.defs))


def run_request(env: Env, request):
    """Execute an automation run request (a selection of the implicit asset job) as the daemon would."""
    job = env.defs.resolve_implicit_global_asset_job_def().get_subset(
        asset_selection=set(request.asset_selection), asset_check_selection=set(request.asset_check_keys))
    return job.execute_in_process(instance=env.instance, tags=request.tags, raise_on_error=False)


def test_analysis_automation_requests_one_refresh_after_benchmarks(env: Env) -> None:
    env.instance.add_dynamic_partitions("benchmark", ["tiny_bench", "other_bench", bm.LANDING_PARTITION])
    add_fixture(env.landing, "tiny_bench")
    first = analysis_tick(env)
    assert first.run_requests == []  # the first tick only starts the clock
    assert env.run_partition("tiny_bench").success  # other_bench and _landing stay missing: no wait for them
    result = analysis_tick(env, first.cursor)
    assert len(result.run_requests) == 1
    request = result.run_requests[0]
    assert set(request.asset_selection) == {AssetKey("analysis_stub")}
    assert {k.name for k in request.asset_check_keys} == {"benchmark_tables_consistent", "benchmark_reject_rate"}
    assert request.tags["benchmap/kind"] == "analysis"
    again = analysis_tick(env, result.cursor)
    assert again.run_requests == []  # requested already: not twice
    run = run_request(env, request)
    assert run.success
    checks = {e.check_name: e.passed for e in run.get_asset_check_evaluations()}
    assert checks == {"benchmark_tables_consistent": True, "benchmark_reject_rate": True}
    assert analysis_tick(env, again.cursor).run_requests == []  # analysis newer than the benchmark tables


def test_analysis_automation_waits_for_every_upstream_run(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the daemon showed (four analysis runs for one benchmark): a benchmark run still running (labeling)
    after its partition's tables were written. Dagster's own in-progress conditions no longer see it (the
    partition's latest planned materialization is done); the gate looks at the runs themselves, so the analysis
    waits for every benchmark run, then for the quiet period, and then runs once for all of them."""
    env.instance.add_dynamic_partitions("benchmark", ["tiny_bench", "tiny_two"])
    add_fixture(env.landing, "tiny_bench")
    add_fixture(env.landing, "tiny_bench", "tiny_two")
    cursor = analysis_tick(env).cursor
    job = env.defs.resolve_job_def("benchmark_refresh_job")
    running = env.instance.create_run_for_job(job, status=DagsterRunStatus.STARTED,
                                              tags={**job.tags, "dagster/partition": "tiny_two"})
    assert env.run_partition("tiny_bench").success and env.run_partition("tiny_two").success
    waiting = analysis_tick(env, cursor)
    assert waiting.run_requests == []
    env.instance.report_run_canceled(running)  # the last upstream run ends
    monkeypatch.setenv("BENCHMAP_ANALYSIS_QUIET_S", "3600")
    quiet = analysis_tick(env, waiting.cursor)
    assert quiet.run_requests == []  # upstream materialized less than the quiet period ago
    monkeypatch.setenv("BENCHMAP_ANALYSIS_QUIET_S", "0")
    settled = analysis_tick(env, quiet.cursor)
    assert len(settled.run_requests) == 1
    assert set(settled.run_requests[0].asset_selection) == {AssetKey("analysis_stub")}
    assert len(settled.run_requests[0].asset_check_keys) == 2
    assert analysis_tick(env, settled.cursor).run_requests == []


def test_analysis_automation_waits_for_a_running_analysis(env: Env) -> None:
    env.instance.add_dynamic_partitions("benchmark", ["tiny_bench"])
    add_fixture(env.landing, "tiny_bench")
    cursor = analysis_tick(env).cursor
    analysis = env.defs.resolve_job_def("analysis_refresh_job")
    env.instance.create_run_for_job(analysis, status=DagsterRunStatus.STARTED, tags=analysis.tags)
    assert env.run_partition("tiny_bench").success
    assert analysis_tick(env, cursor).run_requests == []


def test_analysis_automation_waits_for_a_benchmark_run_launched_from_the_asset_graph(env: Env) -> None:
    """An audit on a real daemon: a run of the implicit asset job (the UI's Materialize on the asset graph,
    `dagster asset materialize`) has no benchmap/kind tag, so a benchmark refresh launched that way did not hold
    back the analysis; now a run without the tag counts by the assets it selects."""
    env.instance.add_dynamic_partitions("benchmark", ["tiny_bench"])
    add_fixture(env.landing, "tiny_bench")
    cursor = analysis_tick(env).cursor
    assert env.run_partition("tiny_bench").success
    selection = frozenset({AssetKey(t) for t in TABLES} | {AssetKey("prompt_work")})
    refresh = env.defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection=set(selection))
    ui_run = env.instance.create_run_for_job(  # e.g. its labeling still running
        refresh, status=DagsterRunStatus.STARTED, asset_selection=selection, tags={"dagster/partition": "tiny_bench"})
    assert analysis_tick(env, cursor).run_requests == []
    env.instance.report_run_canceled(ui_run)
    assert [set(r.asset_selection) for r in analysis_tick(env, cursor).run_requests] == [{AssetKey("analysis_stub")}]


def test_analysis_automation_waits_while_a_benchmarks_labels_are_behind_its_prompts(env: Env) -> None:
    """The last note's open end, seen on a real daemon: a labeling run that failed (HTTP 401) leaves the benchmark
    tables of the new content and the labels of the old; the automation then requested an analysis run that the
    release gate refused, and again after each of the landing sensor's retries (up to 4 failed runs). It now
    waits, without counting the change as handled, and requests the analysis once the labels are made."""
    env.instance.add_dynamic_partitions("benchmark", ["tiny_bench"])
    folder = add_fixture(env.landing, "tiny_bench")
    cursor = analysis_tick(env).cursor  # the first tick starts the clock
    landing = env.tick()
    assert all(r.success for r in env.apply(landing))
    tick = analysis_tick(env, cursor)
    assert len(tick.run_requests) == 1 and run_request(env, tick.run_requests[0]).success

    text = (folder / "prompts.jsonl").read_text(encoding="utf-8")
    (folder / "prompts.jsonl").write_text(text.replace("Draft a patient", "Draft a short patient"), encoding="utf-8")
    LABELING_FAILS.append("401 Unauthorized")
    try:
        changed = env.tick(landing.cursor)
        assert requested(changed) == ["tiny_bench"]
        assert [r.success for r in env.apply(changed)] == [False]  # the tables written, the labels not
        assert labels_behind_prompts(env.warehouse) == {"tiny_bench": (1, 1)}  # t2's old label, its new text
        held = analysis_tick(env, tick.cursor)
        assert held.run_requests == []  # before: one analysis run, refused by every step's gate
        assert analysis_tick(env, held.cursor).run_requests == []  # still held, not forgotten
    finally:
        LABELING_FAILS.clear()
    retry = env.tick(changed.cursor)
    assert [r.tags["benchmap/trigger"] for r in retry.run_requests] == ["retry"]
    assert all(r.success for r in env.apply(retry))
    assert labels_behind_prompts(env.warehouse) == {}
    made = analysis_tick(env, held.cursor)
    assert [set(r.asset_selection) for r in made.run_requests] == [{AssetKey("analysis_stub")}]


def test_an_unreadable_warehouse_holds_no_analysis_back(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The release gate's answer is read only to spare a run it would refuse; a warehouse it cannot read (locked
    by another writer, damaged) is the run's to report, so the analysis is requested as before."""
    env.instance.add_dynamic_partitions("benchmark", ["tiny_bench"])
    add_fixture(env.landing, "tiny_bench")
    cursor = analysis_tick(env).cursor
    assert env.run_partition("tiny_bench").success
    damaged = env.warehouse.with_name("damaged.duckdb")
    damaged.write_bytes(b"not a DuckDB file" * 100)
    monkeypatch.setenv("BENCHMAP_WAREHOUSE", str(damaged))
    assert len(analysis_tick(env, cursor).run_requests) == 1


@asset(group_name="analysis", deps=[reference_stub])
def reference_reader_stub() -> pl.DataFrame:
    return pl.DataFrame({"x": [1]})


def test_analysis_automation_requests_what_reads_the_change_and_not_what_a_run_is_making(env: Env) -> None:
    """Per target, as Dagster's any_deps_updated().since_last_handled() & ~in_progress(): a benchmark run
    refreshes the analysis that reads its tables, not the one that reads only the reference; a target that a
    queued or running run (of any job) is to make waits for it; a target materialized since is handled."""
    env.defs = build_defs(env.warehouse, reference_reader_stub)
    env.instance.add_dynamic_partitions("benchmark", ["tiny_bench"])
    add_fixture(env.landing, "tiny_bench")
    cursor = analysis_tick(env).cursor
    assert env.run_partition("tiny_bench").success
    tick = analysis_tick(env, cursor)
    assert [set(r.asset_selection) for r in tick.run_requests] == [{AssetKey("analysis_stub")}]

    implicit = env.defs.resolve_implicit_global_asset_job_def()
    reference = implicit.get_subset(asset_selection={AssetKey("reference_stub")})
    reader = implicit.get_subset(asset_selection={AssetKey("reference_reader_stub")})
    assert reference.execute_in_process(instance=env.instance).success  # labels_stub reads it, not analysis_stub
    making = env.instance.create_run_for_job(  # a UI materialization: no benchmap/kind tag to gate on
        reader, status=DagsterRunStatus.STARTED, asset_selection=frozenset({AssetKey("reference_reader_stub")}))
    tick = analysis_tick(env, tick.cursor)
    assert tick.run_requests == []  # the reader is being made
    env.instance.report_run_canceled(making)
    assert reader.execute_in_process(instance=env.instance).success
    tick = analysis_tick(env, tick.cursor)
    assert tick.run_requests == []  # materialized after the reference: handled
    assert reference.execute_in_process(instance=env.instance).success
    tick = analysis_tick(env, tick.cursor)
    assert [set(r.asset_selection) for r in tick.run_requests] == [{AssetKey("reference_reader_stub")}]
    assert analysis_tick(env, tick.cursor).run_requests == []  # requested: not twice
    assert reference.execute_in_process(instance=env.instance).success
    whole = env.instance.create_run_for_job(implicit, status=DagsterRunStatus.STARTED)  # no selection: anything
    assert analysis_tick(env, tick.cursor).run_requests == []
    env.instance.report_run_canceled(whole)
    assert [set(r.asset_selection) for r in analysis_tick(env, tick.cursor).run_requests] == \
        [{AssetKey("reference_reader_stub")}]


@asset(group_name="analysis", deps=[analysis_stub])
def report_stub() -> pl.DataFrame:
    return pl.DataFrame({"x": [1]})


def test_analysis_automation_refreshes_what_a_run_made_from_older_targets(env: Env) -> None:
    """Seen on a real daemon: a benchmark landed while an analysis run was running. The targets that run made
    after the benchmark (here report_stub) are newer than the benchmark's tables but were computed from targets
    made before it (analysis_stub): the next tick must request them with analysis_stub, not analysis_stub alone."""
    env.defs = build_defs(env.warehouse, report_stub)
    env.instance.add_dynamic_partitions("benchmark", ["tiny_bench", "tiny_two"])
    add_fixture(env.landing, "tiny_bench")
    add_fixture(env.landing, "tiny_bench", "tiny_two")
    cursor = analysis_tick(env).cursor
    assert env.run_partition("tiny_bench").success
    tick = analysis_tick(env, cursor)
    assert [set(r.asset_selection) for r in tick.run_requests] == [{AssetKey("analysis_stub"), AssetKey("report_stub")}]
    implicit = env.defs.resolve_implicit_global_asset_job_def()
    # the analysis run: analysis_stub, then the second benchmark lands and is refreshed, then report_stub
    assert implicit.get_subset(asset_selection={AssetKey("analysis_stub")}).execute_in_process(
        instance=env.instance).success
    assert env.run_partition("tiny_two").success
    assert implicit.get_subset(asset_selection={AssetKey("report_stub")}).execute_in_process(
        instance=env.instance).success
    tick = analysis_tick(env, tick.cursor)
    assert [set(r.asset_selection) for r in tick.run_requests] == [{AssetKey("analysis_stub"), AssetKey("report_stub")}]
    assert analysis_tick(env, tick.cursor).run_requests == []  # requested: not twice


RACING: list = []  # what racing_stub does while it runs (a benchmark run that lands meanwhile)


@asset(group_name="analysis", deps=[labels_stub])
def racing_stub() -> pl.DataFrame:
    for during in list(RACING):
        during()
    return pl.DataFrame({"x": [1]})


def test_analysis_automation_refreshes_a_target_whose_run_started_before_the_change(env: Env) -> None:
    """The narrower race the real daemon showed: a target reading a benchmark's labels whose run started before a
    benchmark run wrote them and materialized it after. Its materialization is newer than the labels, but its run
    read them as they were when it started: the next tick requests it again."""
    env.defs = build_defs(env.warehouse, racing_stub)
    env.instance.add_dynamic_partitions("benchmark", ["tiny_bench", "tiny_two"])
    add_fixture(env.landing, "tiny_bench")
    add_fixture(env.landing, "tiny_bench", "tiny_two")
    cursor = analysis_tick(env).cursor
    assert env.run_partition("tiny_bench").success
    tick = analysis_tick(env, cursor)
    assert AssetKey("racing_stub") in {k for r in tick.run_requests for k in r.asset_selection}
    racing = env.defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection={AssetKey("racing_stub")})
    RACING.append(lambda: RACING.append(env.run_partition("tiny_two").success))
    try:
        assert racing.execute_in_process(instance=env.instance).success
        assert RACING[1:] == [True]  # the benchmark run inside it succeeded
    finally:
        RACING.clear()
    tick = analysis_tick(env, tick.cursor)
    assert AssetKey("racing_stub") in {k for r in tick.run_requests for k in r.asset_selection}
    assert racing.execute_in_process(instance=env.instance).success  # a run that starts after it: handled
    assert AssetKey("racing_stub") not in {k for r in analysis_tick(env, tick.cursor).run_requests
                                           for k in r.asset_selection}


# ----------------------------------------------------------------------------------------------- bad input
def test_bad_input_goes_to_rejects_and_the_warehouse_keeps_everything_else(env: Env) -> None:
    add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    env.apply(first)
    kept = env.snapshot("tiny_bench")
    add_fixture(env.landing, "bad_bench")
    add_fixture(env.landing, "tiny_bench", "Unsafe Name")  # not a safe identifier
    second = env.tick(first.cursor)
    assert requested(second) == sorted([bm.LANDING_PARTITION, "bad_bench"])
    landing_request = next(r for r in second.run_requests if r.partition_key == bm.LANDING_PARTITION)
    assert sorted(k.to_user_string() for k in landing_request.asset_selection) == sorted(TABLES)
    # and no check: the job runs none on these tables (a probe: the daemon's subset ran the warehouse-wide two)
    assert landing_request.asset_check_keys == []
    runs = env.apply(second)
    assert all(r.success for r in runs)
    landing_run = runs[second.run_requests.index(landing_request)]
    assert landing_run.get_asset_check_evaluations() == []

    _assert_bad_bench_rejects(env.table("benchmark_rejects", "bad_bench"))
    assert sorted(env.table("benchmark_prompts", "bad_bench")["prompt_id"]) == \
        ["ok1", "ok2", "sql'; drop table benchmarks; --"]  # an id full of SQL is only ever a bound value
    assert env.table("benchmark_results", "bad_bench").height == 2
    landing_rejects = env.table("benchmark_rejects", bm.LANDING_PARTITION)
    assert landing_rejects.height == 1 and "Unsafe Name" in landing_rejects["raw_excerpt"][0]
    assert "not a safe benchmark identifier" in landing_rejects["reason"][0]
    assert env.table("benchmarks")["benchmark"].sort().to_list() == ["bad_bench", "tiny_bench"]
    for table, frame in env.snapshot("tiny_bench").items():
        assert frame.equals(kept[table]), table

    # fixing the landing zone clears the `_landing` rejects on the next tick
    shutil.rmtree(env.landing / "Unsafe Name")
    third = env.tick(second.cursor)
    assert requested(third) == [bm.LANDING_PARTITION]
    env.apply(third)
    assert env.table("benchmark_rejects", bm.LANDING_PARTITION).is_empty()


def test_an_emptied_results_file_never_erases_the_stored_results(env: Env) -> None:
    """results.csv cut to nothing (a crash mid-rewrite) failed no step and replaced the stored scores with none."""
    folder = add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    env.apply(first)
    kept = env.snapshot("tiny_bench")
    assert kept["benchmark_results"].height > 0
    (folder / "results.csv").write_bytes(b"")
    runs = env.apply(env.tick(first.cursor))
    assert len(runs) == 1 and not runs[0].success
    failure = next(e for e in runs[0].all_events if e.is_step_failure).step_failure_data.error.message
    assert f"holds {kept['benchmark_results'].height} results for 'tiny_bench': refusing to replace them" in failure
    for table, frame in env.snapshot("tiny_bench").items():
        assert frame.equals(kept[table]), table


def test_deleted_folder_warns_and_keeps_the_warehouse(env: Env) -> None:
    folder = add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    env.apply(first)
    kept = env.snapshot("tiny_bench")
    shutil.rmtree(folder)
    result = env.tick(first.cursor)
    assert result.run_requests == []
    assert json.loads(result.cursor)["missing"] == ["tiny_bench"]
    assert "; 1 partition without a folder (tiny_bench: " in result.skip_reason.skip_message
    run = env.run_partition("tiny_bench")
    assert not run.success
    failure = next(e for e in run.all_events if e.is_step_failure)
    assert "has a partition but no landing folder" in str(failure.event_specific_data.error.message) + \
        str(failure.event_specific_data.user_failure_data.description)
    for table, frame in env.snapshot("tiny_bench").items():
        assert frame.equals(kept[table]), table


def test_a_file_with_no_valid_prompt_does_not_wipe_a_benchmark(env: Env) -> None:
    folder = add_fixture(env.landing, "tiny_bench")
    env.apply(env.tick())
    kept = env.snapshot("tiny_bench")
    (folder / "prompts.jsonl").write_bytes(b"\x00\x01garbage\n{not json\n")
    run = env.run_partition("tiny_bench")
    assert not run.success
    for table, frame in env.snapshot("tiny_bench").items():
        assert frame.equals(kept[table]), table


def test_plan_is_pure_and_keeps_missing_hashes() -> None:
    landing = bm.Landing()
    plan = plan_landing_refresh(landing, {"v": 1, "hashes": {"gone": "abc"}, "missing": []}, ["gone"],
                                lambda name: None)
    assert plan.refresh == [] and plan.newly_missing == ["gone"]
    assert plan.state["hashes"] == {"gone": "abc"}
    again = plan_landing_refresh(landing, plan.state, ["gone"], lambda name: None)
    assert again.newly_missing == []  # warned once


# ----------------------------------------------------------------------------------------------- jobs, run_all
def test_jobs_sensors_and_schedule_are_wired_and_on(env: Env) -> None:
    repo = env.defs.get_repository_def()
    assert repo.get_job("benchmark_refresh_job").asset_layer.selected_asset_keys == {
        *(AssetKey(t) for t in TABLES), AssetKey("prompt_work")}
    assert repo.get_job("reference_refresh_job").asset_layer.selected_asset_keys == {AssetKey("reference_stub")}
    assert repo.get_job("benchmark_refresh_job").partitions_def == benchmark_partitions
    assert {s.name: s.default_status for s in SENSORS} == {
        "benchmark_landing_sensor": DefaultSensorStatus.RUNNING,
        "analysis_automation_sensor": DefaultSensorStatus.RUNNING}
    assert reference_weekly_schedule.default_status == DefaultScheduleStatus.RUNNING
    requests = list(reference_weekly_schedule.evaluate_tick(build_schedule_context(instance=env.instance))
                    .run_requests or [])
    assert len(requests) == 1
    plan = run_all.plan_from_definitions(env.defs)
    assert plan.reference == [AssetKey("reference_stub")]
    assert set(plan.partitioned) == {*(AssetKey(t) for t in TABLES), AssetKey("prompt_work")}
    assert set(plan.landing_only) == {AssetKey(t) for t in TABLES}
    assert plan.downstream == [AssetKey("analysis_stub")]


def test_run_all_materializes_every_mirrored_benchmark(env: Env, mirror: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture) -> None:
    """All 29 mirrored benchmarks through Dagster (in-memory instance: ~0.4 s per partition)."""
    monkeypatch.setenv("BENCHMAP_MIRROR", str(mirror))
    assert run_all.main([], defs=env.defs, instance=env.instance) == 0
    out = capsys.readouterr().out
    assert "29 benchmarks, 11107 prompts, 3654 results, 196 rejects; all steps succeeded" in out
    assert "6 prompts, 53 results, 196 rejects" in out  # jobbench, and where its rejects start:
    assert ("196 rejects (first jobbench/results.csv:2: unknown prompt_id 'court_clerks__task1' (no accepted prompt "
            "of prompts.jsonl has it); all 196 in benchmark_rejects)") in out
    assert "check not passed: benchmark_rejects:benchmark_reject_rate (WARN)" in out  # jobbench: 77% rejected
    counts = wh.query(env.warehouse, "select (select count(*) from benchmarks) as b, "
                      "(select count(*) from benchmark_prompts) as p, (select count(*) from prompt_work) as l, "
                      "(select sum(n) from analysis_stub) as a").row(0)
    assert counts == (29, 11107, 11107, 11107)
    assert len(env.instance.get_dynamic_partitions("benchmark")) == 29
    assert env.tick(None).run_requests == []  # a sensor starting after run_all finds nothing to do


def test_run_all_exits_non_zero_when_an_error_check_fails(env: Env, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture) -> None:
    """A non-blocking check of severity ERROR that does not pass leaves its step a success; the run is none: it
    exits EXIT_CHECK_FAILED and names the check (it printed "all steps succeeded" and exited 0, and a complete
    run was then recorded as up to date). A failed WARN check is printed and leaves the code alone (the mirror's
    jobbench, above)."""
    from dagster import AssetCheckResult, AssetCheckSeverity, asset_check

    @asset_check(asset=analysis_stub, blocking=False)
    def analysis_counts_every_prompt():  # noqa: ANN202 - dagster resolves annotations, and this one is local
        return AssetCheckResult(passed=False, description="3 prompts missing on purpose")

    @asset_check(asset=analysis_stub, blocking=False)
    def analysis_looks_odd():  # noqa: ANN202
        return AssetCheckResult(passed=False, severity=AssetCheckSeverity.WARN)

    dagster_home(tmp_path, monkeypatch)
    add_fixture(env.landing, "tiny_bench")
    warehouse = Warehouse(path=str(env.warehouse))
    defs = Definitions(
        assets=[*module_assets(bench_assets), reference_stub, labels_stub, analysis_stub],
        asset_checks=[*module_checks(bench_assets), analysis_counts_every_prompt, analysis_looks_odd],
        jobs=JOBS, sensors=SENSORS, schedules=SCHEDULES,
        resources={"warehouse": warehouse, "io_manager": WarehouseIOManager(warehouse=warehouse)},
    )
    assert run_all.main([], defs=defs) == run_all.EXIT_CHECK_FAILED == 6
    captured = capsys.readouterr()
    assert "all steps succeeded, 1 check(s) of severity ERROR FAILED" in captured.out
    assert "check not passed: analysis_stub:analysis_looks_odd (WARN)" in captured.out
    assert ("CHECK FAILED analysis/exports (+ warehouse-wide benchmark checks): "
            "analysis_stub:analysis_counts_every_prompt (ERROR) (exit 6)") in captured.err
    assert "analysis_looks_odd" not in captured.err
    # the next plain run does not skip the step as unchanged and say "all steps succeeded": it runs it again
    assert run_all.main([], defs=defs) == run_all.EXIT_CHECK_FAILED
    again = capsys.readouterr()
    assert ("inputs unchanged, but a check of severity ERROR did not pass in its last run "
            "(analysis_stub:analysis_counts_every_prompt): running it") in again.out
    assert "CHECK FAILED" in again.err


def test_a_failed_warehouse_wide_check_is_not_forgotten_either(env: Env, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture) -> None:
    """The warehouse-wide checks (on the partitioned benchmark and label assets) run with the analysis step;
    one that failed was not looked at when that step was unchanged, so the second run exited 0."""
    from dagster import AssetCheckResult, asset_check

    @asset_check(asset="benchmarks", blocking=False)
    def registry_matches_the_landing_zone():  # noqa: ANN202 - dagster resolves annotations
        return AssetCheckResult(passed=False)

    dagster_home(tmp_path, monkeypatch)
    add_fixture(env.landing, "tiny_bench")
    warehouse = Warehouse(path=str(env.warehouse))
    defs = Definitions(
        assets=[*module_assets(bench_assets), reference_stub, labels_stub, analysis_stub],
        asset_checks=[*module_checks(bench_assets), registry_matches_the_landing_zone],
        jobs=JOBS, sensors=SENSORS, schedules=SCHEDULES,
        resources={"warehouse": warehouse, "io_manager": WarehouseIOManager(warehouse=warehouse)},
    )
    assert run_all.main([], defs=defs) == run_all.EXIT_CHECK_FAILED
    capsys.readouterr()
    assert run_all.main([], defs=defs) == run_all.EXIT_CHECK_FAILED
    again = capsys.readouterr()
    assert "(benchmarks:registry_matches_the_landing_zone): running it" in again.out


def test_prompts_without_labels_are_reported_without_rerunning_an_unchanged_analysis(
        env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """The completeness check failing on prompts given up (or another benchmark's) re-ran the whole analysis on
    every plain run (16 s in a probe) to fail the same way, and exited 6: prompts without labels are exit 4's
    cause. Now an unchanged step whose one failed ERROR check is that one is skipped and the check reported."""
    from dagster import AssetCheckResult, asset_check

    from assets.labels import COMPLETE_CHECK

    without_labels = {"n": 3}

    @asset_check(asset="benchmarks", name=COMPLETE_CHECK, blocking=False)
    def complete():  # noqa: ANN202 - dagster resolves annotations
        return AssetCheckResult(passed=not without_labels["n"],
                                metadata={"prompts_without_labels": without_labels["n"]})

    dagster_home(tmp_path, monkeypatch)
    add_fixture(env.landing, "tiny_bench")
    warehouse = Warehouse(path=str(env.warehouse))
    defs = Definitions(
        assets=[*module_assets(bench_assets), reference_stub, labels_stub, analysis_stub],
        asset_checks=[*module_checks(bench_assets), complete],
        jobs=JOBS, sensors=SENSORS, schedules=SCHEDULES,
        resources={"warehouse": warehouse, "io_manager": WarehouseIOManager(warehouse=warehouse)},
    )
    assert run_all.main([], defs=defs) == run_all.EXIT_LABEL_FAILURES
    assert f"benchmarks:{COMPLETE_CHECK} (ERROR) (exit 4)" in capsys.readouterr().err
    with DagsterInstance.get() as instance:
        runs = len(instance.get_runs())
    assert run_all.main([], defs=defs) == run_all.EXIT_LABEL_FAILURES
    again = capsys.readouterr()
    assert (f"analysis/exports (+ warehouse-wide benchmark checks): unchanged since it last wrote its outputs, "
            f"skipped; its check {COMPLETE_CHECK} still fails on the same prompts without labels") in again.out
    assert "1 check(s) of severity ERROR FAILED" in again.out and f"{COMPLETE_CHECK} (ERROR) (exit 4)" in again.err
    with DagsterInstance.get() as instance:
        assert len(instance.get_runs()) == runs  # nothing ran
    without_labels["n"] = 0  # e.g. `--force` labeled them: the step runs and the check passes
    assert run_all.main(["--force"], defs=defs) == 0
    assert "CHECK FAILED" not in capsys.readouterr().err


def test_run_all_exits_non_zero_on_failure(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture) -> None:
    dagster_home(tmp_path, monkeypatch)
    add_fixture(env.landing, "tiny_bench")
    defs = build_defs(env.warehouse, failing_analysis_stub)
    assert run_all.main([], defs=defs) == 1  # the instance at DAGSTER_HOME
    captured = capsys.readouterr()
    assert "1 step(s) FAILED" in captured.out and "analysis stand-in fails on purpose" in captured.err
    assert wh.query(env.warehouse, "select count(*) as n from benchmark_prompts")["n"][0] == 6
    with DagsterInstance.get() as instance:
        assert instance.get_dynamic_partitions("benchmark") == ["tiny_bench"]
        assert len(instance.get_runs()) == 3  # reference, tiny_bench, analysis


def test_benchmarks_named_twice_run_once(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`--benchmarks x,x` labeled x twice in one command: its failed prompts were asked twice and counted as two
    runs towards giving up, and the run's totals summed it twice."""
    add_fixture(tmp_path, "tiny_bench")
    add_fixture(tmp_path, "tiny_bench", "other_bench")
    landing = discover([("raw", tmp_path)])
    assert run_all._benchmark_names(landing, "tiny_bench, other_bench,tiny_bench") == ["tiny_bench", "other_bench"]
    assert run_all._benchmark_names(landing, None) == ["other_bench", "tiny_bench"]
    assert run_all._benchmark_names(landing, "tiny_bench,nope") is None
    assert "unknown benchmark(s): nope" in capsys.readouterr().err


def test_a_rebuilt_warehouse_that_releases_runs_every_benchmark(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture) -> None:
    """`run_all --rebuild --benchmarks a,b` over a lost warehouse published the two benchmarks' headline as the
    latest release ("about 0.0% ... 2 benchmarks" beside 30 folders: a probe, 2026-12-07)."""
    from types import SimpleNamespace

    add_fixture(tmp_path, "tiny_bench")
    add_fixture(tmp_path, "tiny_bench", "other_bench")
    landing = discover([("raw", tmp_path)])
    asked = SimpleNamespace(benchmarks="tiny_bench", skip_analysis=False)
    assert run_all._every_benchmark_if_rebuilt(asked, ["tiny_bench"], landing, True) == ["other_bench", "tiny_bench"]
    assert asked.benchmarks is None and "every benchmark runs, not only tiny_bench" in capsys.readouterr().out
    for restored, skip in ((False, False), (True, True)):  # a sound warehouse, or a run that releases nothing
        args = SimpleNamespace(benchmarks="tiny_bench", skip_analysis=skip)
        assert run_all._every_benchmark_if_rebuilt(args, ["tiny_bench"], landing, restored) == ["tiny_bench"]
        assert args.benchmarks == "tiny_bench"
