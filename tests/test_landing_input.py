"""Bad benchmark folders, built from the mirror's apex_agents as an audit of the landing zone built them, and
what each gets (each test's docstring says what it got before).
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from models import benchmarks as bm
from models.landing_lines import looks_utf16
from pipelines import run_all
from tests.test_benchmarks import Env, env  # noqa: F401 - env is a fixture

SOURCE = "apex_agents"
SURROGATE = "\\ud83d"  # as it stands in the file: a JSON / YAML escape of half a UTF-16 pair
MARK = "LONE-SURROGATE-HERE"


def source_lines(mirror: Path) -> list[dict]:
    data = (mirror / "benchmarks" / SOURCE / "prompts.jsonl").read_bytes()
    return [json.loads(line) for line in data.split(b"\n") if line.strip()]


def result_rows(mirror: Path) -> list[dict]:
    with open(mirror / "benchmarks" / SOURCE / "results.csv", encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def apex_copy(root: Path, mirror: Path, name: str, *, rename: bool = True) -> tuple[Path, list[bytes]]:
    """`<root>/<name>/` holding the mirror's apex_agents files, its lines naming `name` (`rename`) or, as a
    folder copied by hand, still `apex_agents`; returns the folder and its prompt lines (written by `write`)."""
    folder = root / name
    folder.mkdir(parents=True)
    lines = [json.dumps({**r, "benchmark": name} if rename else r, ensure_ascii=False).encode()
             for r in source_lines(mirror)]
    results = (mirror / "benchmarks" / SOURCE / "results.csv").read_text(encoding="utf-8")
    (folder / "results.csv").write_text(results.replace(f"\n{SOURCE},", f"\n{name},") if rename else results,
                                        encoding="utf-8")
    (folder / "benchmark.toml").write_bytes((mirror / "benchmarks" / SOURCE / "benchmark.toml").read_bytes())
    write(folder, lines)
    return folder, lines


def write(folder: Path, lines: list[bytes]) -> None:
    (folder / "prompts.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def with_surrogate(line: bytes, field: str) -> bytes:
    """The line with a lone surrogate in `field` (a new top-level field when the record has none)."""
    record = json.loads(line)
    if field == "extra":
        record["extra"] = {**(record.get("extra") or {}), "note": MARK}
    elif field in ("prompt_id", "prompt"):
        record[field] = f"{record[field]} {MARK}"
    else:
        record[field] = f"Investment Banking {MARK}"
    return json.dumps(record).replace(MARK, SURROGATE).encode()


# ------------------------------------------------------------------------------------------------ stored metadata
def test_a_metadata_file_that_cannot_be_read_keeps_the_stored_metadata_in_the_warehouse(
        env: Env, mirror: Path) -> None:  # noqa: F811
    """Documented since the metadata rejects came in, and true of the parser alone, but the asset handed it a
    registry row of three columns: a typo in benchmark.toml reset title, agentic and public_items to the
    defaults (the benchmark left the economic_agentic index) while the warning said "kept"."""
    folder, lines = apex_copy(env.landing, mirror, "apex_meta")
    env.instance.add_dynamic_partitions("benchmark", ["apex_meta"])
    assert env.run_partition("apex_meta").success
    columns = ["title", "version", "license", "agentic", "public_items", "saturated"]
    stored = env.table("benchmarks", "apex_meta").select(columns).row(0, named=True)
    assert stored["title"] != "apex_meta" and stored["agentic"] is True  # read from the mirror's benchmark.toml
    toml = (folder / "benchmark.toml").read_text(encoding="utf-8")
    (folder / "benchmark.toml").write_text(toml.replace("agentic = true", "agentic = tru"), encoding="utf-8")
    assert env.run_partition("apex_meta").success
    row = env.table("benchmarks", "apex_meta").row(0, named=True)
    assert {c: row[c] for c in columns} == stored
    assert row["n_rejects"] == 1 and "the stored metadata is kept" in row["metadata_warnings"]


# ------------------------------------------------------------------------------------------------ lone surrogates
@pytest.mark.parametrize("field", ["sector", "extra", "x_unknown", "prompt_id", "prompt"])
def test_a_lone_surrogate_in_any_field_is_one_reject_naming_it_and_the_other_lines_land(
        mirror: Path, field: str) -> None:
    """The parser crashed at building its frame (sector, extra, an unknown field, prompt_id) or rejected the line
    with a raw codec message (prompt)."""
    lines = [json.dumps({**r, "benchmark": "wb"}, ensure_ascii=False).encode() for r in source_lines(mirror)]
    lines[9] = with_surrogate(lines[9], field)
    paired = json.loads(lines[10])
    lines[10] = json.dumps({**paired, "sector": MARK}).replace(MARK, "\\ud83d\\ude00").encode()  # a whole pair
    prompts, rejects = bm.parse_prompts(b"\n".join(lines) + b"\n", "wb")
    assert prompts.height == len(lines) - 1
    assert [(r.line_number, r.reason) for r in rejects] == [
        (10, f"field '{field}' holds a lone surrogate \\ud83d, not valid Unicode")]
    assert prompts.filter(pl.col("line_number") == 11)["sector"].to_list() == ["\U0001f600"]  # the pair lands
    prompts.write_parquet(io.BytesIO())  # every value is UTF-8 text now


def test_a_lone_surrogate_lands_everything_else_in_the_warehouse(env: Env, mirror: Path) -> None:  # noqa: F811
    """The audit's two folders through the landing asset: line 10's sector, and benchmark.yaml's title."""
    folder, lines = apex_copy(env.landing, mirror, "f_surr")
    lines[9] = with_surrogate(lines[9], "sector")
    write(folder, lines)
    yaml_folder, _ = apex_copy(env.landing, mirror, "f_surr_yaml")
    (yaml_folder / "benchmark.toml").unlink()
    (yaml_folder / "benchmark.yaml").write_bytes(b'title: "APEX copy \\ud83d"\nagentic: true\n')
    env.instance.add_dynamic_partitions("benchmark", ["f_surr", "f_surr_yaml"])
    assert env.run_partition("f_surr").success and env.run_partition("f_surr_yaml").success

    bad_id = json.loads(lines[9])["prompt_id"]
    its_results = sum(r["prompt_id"] == bad_id for r in result_rows(mirror))
    assert its_results > 0  # so the counts below say something about results too
    row = env.table("benchmarks", "f_surr").row(0, named=True)
    assert (row["n_prompts"], row["n_results"], row["n_rejects"]) == (
        len(lines) - 1, len(result_rows(mirror)) - its_results, 1 + its_results)
    rejects = env.table("benchmark_rejects", "f_surr").filter(pl.col("file") == "f_surr/prompts.jsonl")
    assert rejects.select("line_number", "reason").rows() == [
        (10, "field 'sector' holds a lone surrogate \\ud83d, not valid Unicode")]

    row = env.table("benchmarks", "f_surr_yaml").row(0, named=True)
    assert (row["n_prompts"], row["title"], row["agentic"]) == (len(lines), "f_surr_yaml", True)
    reject = env.table("benchmark_rejects", "f_surr_yaml").row(0, named=True)
    assert (reject["file"], reject["line_number"], reject["reason"]) == (
        "f_surr_yaml/benchmark.yaml", 1, "'title' holds a lone surrogate \\ud83d, not valid Unicode: the key is ignored")
    # once stored, the metadata stays while the file holds one (as for a file that cannot be read at all)
    (yaml_folder / "benchmark.yaml").write_bytes(b'title: "APEX copy"\nagentic: true\n')
    assert env.run_partition("f_surr_yaml").success
    (yaml_folder / "benchmark.yaml").write_bytes(b'title: "APEX copy \\ud83d"\nagentic: false\n')
    assert env.run_partition("f_surr_yaml").success
    row = env.table("benchmarks", "f_surr_yaml").row(0, named=True)
    assert (row["title"], row["agentic"], row["n_rejects"]) == ("APEX copy", True, 1)


# ------------------------------------------------------------------------------------------------ no prompt landed
def test_a_utf16_prompts_file_is_named_as_such_and_no_mirrored_file_looks_utf16(mirror: Path) -> None:
    lines = [json.dumps({**r, "benchmark": "wb"}, ensure_ascii=False) for r in source_lines(mirror)]
    text = "\n".join(lines) + "\n"
    for encoding, why in (("utf-16", "byte-order mark FF FE"), ("utf-16-le", "every other byte is NUL"),
                          ("utf-16-be", "every other byte is NUL")):
        prompts, rejects = bm.parse_prompts(text.encode(encoding), "wb")
        assert prompts.is_empty() and [r.line_number for r in rejects] == list(range(1, len(lines) + 1))
        assert {r.reason for r in rejects} == {
            f"the file looks UTF-16 ({why}), not UTF-8: save prompts.jsonl as UTF-8"}, encoding
        assert rejects[3].raw_excerpt == bm.excerpt(lines[3])  # readable: decoded as the UTF-16 it is
    for folder in sorted((mirror / "benchmarks").iterdir()):
        for name in ("prompts.jsonl", "results.csv"):
            if (folder / name).is_file():
                assert looks_utf16((folder / name).read_bytes()) is None, folder / name


UTF16_ENCODINGS = (("utf-16", "byte-order mark FF FE"), ("utf-16-be", "byte-order mark FE FF"),
                   ("utf-16-le", "every other byte is NUL"), ("utf-16-be", "every other byte is NUL"))


def utf16(text: str, encoding: str, why: str) -> bytes:
    """`text` in UTF-16 as `why` says: with the byte-order mark it names (big-endian FE FF written by hand:
    Python's 'utf-16' writes the machine's order) or with none."""
    return ("\ufeff" + text if why == "byte-order mark FE FF" else text).encode(encoding)


@pytest.mark.parametrize(("encoding", "why"), UTF16_ENCODINGS)
def test_a_utf16_results_or_metadata_file_is_one_reject_naming_the_file_and_the_encoding(
        mirror: Path, encoding: str, why: str) -> None:
    """results.csv gave one reject per line ("not valid UTF-8 (byte 0xff at column 1)", then "skipped: the header
    (line 2) lacks column(s) ..." for each of the 120 lines, or "header lacks ..."); benchmark.toml/yaml gave a
    codec or TOML message ("UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff", "Expected '=' after a
    key", "unacceptable character #x0000") with an excerpt full of NUL bytes."""
    prompts, _ = bm.parse_prompts((mirror / "benchmarks" / SOURCE / "prompts.jsonl").read_bytes(), SOURCE)
    text = (mirror / "benchmarks" / SOURCE / "results.csv").read_text(encoding="utf-8")
    results, rejects = bm.parse_results(utf16(text, encoding, why), SOURCE, prompts["prompt_id"].to_list())
    n_lines = sum(1 for line in text.split("\n") if line.strip())
    assert results.is_empty() and [r.as_row() for r in rejects] == [{
        "benchmark": SOURCE, "file": f"{SOURCE}/results.csv", "line_number": 1,
        "reason": f"the file looks UTF-16 ({why}), not UTF-8: save results.csv as UTF-8 (none of its {n_lines} "
                  "lines is read)",
        "raw_excerpt": text.split("\n")[0].strip()}]
    toml = (mirror / "benchmarks" / SOURCE / "benchmark.toml").read_text(encoding="utf-8")
    for name, content in (("benchmark.toml", toml), ("benchmark.yaml", "title: APEX copy\nagentic: true\n")):
        _, warnings, refused = bm.parse_metadata_with_rejects({name: utf16(content, encoding, why)}, SOURCE, 5)
        reason = f"{name} could not be read: the file looks UTF-16 ({why}), not UTF-8: save {name} as UTF-8"
        assert refused == [(name, 1, reason, content.split("\n")[0])] and reason in warnings


def test_a_utf16_results_or_metadata_file_lands_the_prompts_and_keeps_what_is_stored(
        env: Env, mirror: Path) -> None:  # noqa: F811
    """Through the landing asset: a new benchmark whose results.csv is UTF-16 lands its prompts with one reject;
    a benchmark.toml saved as UTF-16 later keeps the stored metadata; a UTF-16 results.csv replacing stored
    results fails the step naming the encoding (it said only "yielded no valid result (120 rejects)")."""
    folder, lines = apex_copy(env.landing, mirror, "f_utf16_results")
    results = (folder / "results.csv").read_text(encoding="utf-8")
    (folder / "results.csv").write_text(results, encoding="utf-16")
    env.instance.add_dynamic_partitions("benchmark", ["f_utf16_results"])
    assert env.run_partition("f_utf16_results").success
    row = env.table("benchmarks", "f_utf16_results").row(0, named=True)
    assert (row["n_prompts"], row["n_results"], row["n_rejects"]) == (len(lines), 0, 1)
    assert row["agentic"] is True and row["title"] != "f_utf16_results"  # read from benchmark.toml
    reject = env.table("benchmark_rejects", "f_utf16_results").row(0, named=True)
    assert (reject["file"], reject["line_number"]) == ("f_utf16_results/results.csv", 1)
    assert reject["reason"].startswith("the file looks UTF-16 (byte-order mark FF FE), not UTF-8: save results.csv")

    columns = ["title", "version", "license", "agentic", "public_items", "saturated"]
    stored = {c: row[c] for c in columns}
    toml = (folder / "benchmark.toml").read_text(encoding="utf-8")
    (folder / "benchmark.toml").write_text(toml, encoding="utf-16")
    assert env.run_partition("f_utf16_results").success
    row = env.table("benchmarks", "f_utf16_results").row(0, named=True)
    assert {c: row[c] for c in columns} == stored and "the stored metadata is kept" in row["metadata_warnings"]
    assert sorted(env.table("benchmark_rejects", "f_utf16_results")["file"]) == [
        "f_utf16_results/benchmark.toml", "f_utf16_results/results.csv"]

    (folder / "results.csv").write_text(results, encoding="utf-8")  # results stored, then saved as UTF-16
    assert env.run_partition("f_utf16_results").success
    n_results = env.table("benchmarks", "f_utf16_results")["n_results"].item()
    assert n_results > 0
    (folder / "results.csv").write_text(results, encoding="utf-16")
    run = env.run_partition("f_utf16_results")
    assert not run.success
    failure = next(e for e in run.all_events if e.is_step_failure).step_failure_data.error.message
    assert "yielded no valid result (1 rejects; first f_utf16_results/results.csv:1: the file looks UTF-16" in failure
    assert env.table("benchmarks", "f_utf16_results")["n_results"].item() == n_results


def test_a_benchmark_that_lands_no_prompt_fails_its_step_naming_the_file_and_why(
        env: Env, mirror: Path, capsys: pytest.CaptureFixture) -> None:  # noqa: F811
    """An empty file, the file saved as UTF-16, and the mirror's folder copied under a new name (every line still
    names apex_agents): each was an "ok" step of 0 prompts, and the run said "all steps succeeded" (exit 0)."""
    n = len(source_lines(mirror))
    empty, _ = apex_copy(env.landing, mirror, "f_emptyfile")
    (empty / "prompts.jsonl").write_bytes(b"")
    utf16, lines = apex_copy(env.landing, mirror, "f_utf16")
    (utf16 / "prompts.jsonl").write_text(b"\n".join(lines).decode() + "\n", encoding="utf-16")
    copied, _ = apex_copy(env.landing, mirror, "apex_copy", rename=False)
    apex_copy(env.landing, mirror, "apex_ok")  # lands, and is kept

    assert run_all.main([], defs=env.defs, instance=env.instance) == 1
    out = capsys.readouterr()
    expected = {
        "f_emptyfile": f"{empty / 'prompts.jsonl'} yielded no valid prompts: the file is empty (no line to land); "
                       "nothing was written",
        "f_utf16": f"{utf16 / 'prompts.jsonl'} yielded no valid prompts: 0 of {n} lines landed; first reject line "
                   "1: the file looks UTF-16 (byte-order mark FF FE), not UTF-8: save prompts.jsonl as UTF-8; "
                   "nothing was written",
        "apex_copy": f"{copied / 'prompts.jsonl'} yielded no valid prompts: 0 of {n} lines landed; first reject "
                     "line 1: benchmark field 'apex_agents' does not match the folder 'apex_copy'; nothing was "
                     "written",
    }
    for name, message in expected.items():
        assert f"FAILED {_label(out.out, name)}: benchmark_landing: {message}\n" in out.err, (name, out.err)
    assert re.search(rf"\] apex_ok: ok in [0-9.]+s: {n} prompts", out.out)
    assert "all steps succeeded" not in out.out and "3 step(s) FAILED" in out.out
    assert sorted(env.table("benchmarks")["benchmark"]) == ["apex_ok"]  # nothing of the three was written
    assert env.table("benchmark_prompts").height == n


def test_folders_that_did_not_land_make_the_run_exit_7_until_fixed(
        env: Env, mirror: Path, capsys: pytest.CaptureFixture) -> None:  # noqa: F811
    """A folder with a bad name or without prompts.jsonl holds a benchmark missing from every figure; the run
    warned in its header, then said "all steps succeeded" and exited 0 (a probe: a script gating on the exit
    code never knew)."""
    apex_copy(env.landing, mirror, "apex_ok")
    apex_copy(env.landing, mirror, "Apex-Copy")  # not a safe identifier
    (env.landing / "apex_no_prompts").mkdir()
    (env.landing / "apex_no_prompts" / "prompts.json").write_text("{}")  # misnamed file
    assert run_all.main([], defs=env.defs, instance=env.instance) == run_all.up_to_date.EXIT_LANDING_PROBLEMS == 7
    out = capsys.readouterr()
    assert "warning: landing folder" in out.out and "'Apex-Copy' is not a safe benchmark identifier" in out.out
    assert "error: 2 landing folders did not land" in out.err and "(exit 7)" in out.err
    assert sorted(env.table("benchmarks")["benchmark"]) == ["apex_ok"]
    shutil.rmtree(env.landing / "Apex-Copy")
    shutil.rmtree(env.landing / "apex_no_prompts")
    assert run_all.main([], defs=env.defs, instance=env.instance) == 0
    assert "did not land" not in capsys.readouterr().err


def test_a_results_file_that_is_a_folder_is_a_reject_naming_it(tmp_path: Path, mirror: Path) -> None:
    """It was skipped without a word: 0 results, no reject, no warning (a probe, 2026-12-07)."""
    from resources.landing import ingest_folder

    folder, lines = apex_copy(tmp_path, mirror, "apex_dir")
    (folder / "results.csv").unlink()
    (folder / "results.csv").mkdir()
    ingested = ingest_folder(bm.BenchmarkFolder("apex_dir", folder, "raw"))
    assert ingested.prompts.height == len(lines) and ingested.results.is_empty()
    assert ingested.rejects.select("file", "reason").rows() == [
        ("apex_dir/results.csv", "results.csv is a directory, not a file: not read")]


def _label(out: str, name: str) -> str:
    """`[i/n] name`, as run_all's partition line for `name` reads."""
    return re.search(rf"(\[\d+/\d+\] {name}):", out).group(1)


# ------------------------------------------------------------------------------------------------ run_all's lines
def test_the_partition_line_names_the_first_reject(env: Env, mirror: Path,  # noqa: F811
                                                   capsys: pytest.CaptureFixture) -> None:
    folder, lines = apex_copy(env.landing, mirror, "f_badjson")
    bad_id = json.loads(lines[19])["prompt_id"]
    lines[19] = lines[19][:-40] + b'"oops'  # the audit's cut line 20
    write(folder, lines)
    apex_copy(env.landing, mirror, "f_clean")
    assert run_all.main([], defs=env.defs, instance=env.instance) == 0
    out = capsys.readouterr().out
    its_results = sum(r["prompt_id"] == bad_id for r in result_rows(mirror))
    rejects = 1 + its_results
    line = next(s for s in out.splitlines() if "] f_badjson: ok in" in s)
    assert re.search(rf": {len(lines) - 1} prompts, {len(result_rows(mirror)) - its_results} results, "
                     rf"{rejects} rejects \(first f_badjson/prompts\.jsonl:20: invalid JSON: Expecting ',' "
                     rf"delimiter \(column \d+\); all {rejects} in benchmark_rejects\)$", line), line
    clean = next(s for s in out.splitlines() if "] f_clean: ok in" in s)
    assert clean.endswith(f": {len(lines)} prompts, {len(result_rows(mirror))} results, 0 rejects")


def test_a_skip_analysis_run_says_it_wrote_no_release(env: Env, mirror: Path,  # noqa: F811
                                                     capsys: pytest.CaptureFixture) -> None:
    apex_copy(env.landing, mirror, "apex_ok")
    assert run_all.main(["--skip-analysis"], defs=env.defs, instance=env.instance) == 0
    assert "release: none written by this run (--skip-analysis); there is none yet" in capsys.readouterr().out
    older = env.warehouse.parent / "exports" / "2026-12-01T000000Z-0123abcd"  # an earlier run's release
    older.mkdir(parents=True)
    (older / "manifest.json").write_text("{}")
    assert run_all.main(["--skip-analysis", "--force"], defs=env.defs, instance=env.instance) == 0
    out = capsys.readouterr().out
    assert f"release: none written by this run (--skip-analysis); the newest is {older}\n" in out
    assert "(newest;" not in out
