"""A warehouse of one small benchmark without a judge sample (20 real tau_bench prompts on a copy of the labels
snapshot, tests/test_faults.py's `world`): every asset check of `run_all` passes, as on the mirror.

Two did not (both ERROR severity):
- `unit_estimates_sum_to_headline`: with no judged texts the published headline is the labeler's draws, but the
  per-unit tables summed the model-assisted draws, which for a benchmark without judged texts were a second
  draw of its labels from other random streams (9.59 tasks covered against the headline's 9.47). Now they are
  the labeler's draws (models/estimates/bench_draws.py) and the check compares such an index with its labeler
  row; the check still fails on a table that does not sum to the headline (below).
- `benchmark_index_files_valid`: the shipped economic_agentic.toml's assumptions name mirror benchmarks this
  warehouse did not land (osworld, ...), which made the file an error and left the index uncomputed. Now an
  entry for a benchmark of a landing folder, or one the vendored reference sampled (a machine without the
  mirror), applies to nothing; a name known nowhere still fails (below).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests import test_faults as faults  # noqa: E402
from tests.test_faults import World, real_records  # noqa: E402

world = faults.world  # the fixture, by name

CHECKS = ("unit_estimates_sum_to_headline", "benchmark_index_files_valid")


def run_checks(world: World) -> dict[str, tuple[bool, dict[str, Any]]]:
    """The two checks alone on the world's warehouse: name -> (passed, metadata)."""
    from dagster import AssetSelection, materialize

    from assets.estimates import unit_estimates_sum_to_headline
    from assets.indexes import benchmark_index_files_valid
    from pipelines.definitions import build_definitions

    defs = build_definitions(str(world.state.warehouse))
    result = materialize([*defs.assets, *defs.asset_checks], resources=defs.resources, instance=world.instance,
                         selection=AssetSelection.checks(unit_estimates_sum_to_headline, benchmark_index_files_valid))
    return {e.check_name: (e.passed, {k: v.value for k, v in e.metadata.items()})
            for e in result.get_asset_check_evaluations()}


def test_a_world_without_a_judge_sample_passes_its_checks_and_they_can_fail(
        world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from models import estimates as es
    from pipelines import run_all
    from pipelines.definitions import build_definitions
    from resources import warehouse as wh

    world.add("small", real_records("tau_bench", 20))
    defs = build_definitions(str(world.state.warehouse))
    assert run_all.main(["--skip-reference", "--benchmarks", "small"], defs=defs, instance=world.instance) == 0
    out = capsys.readouterr().out
    assert "labeler estimate" in out, out[-3000:]
    # the one check not passed: the benchmark has no judged texts (WARN; the summary names it too)
    assert [line.strip() for line in out.splitlines() if "check not passed" in line] == [
        "check not passed: headline_estimates:benchmarks_have_judged_texts (WARN)"], out[-3000:]

    checks = run_checks(world)
    assert {name: passed for name, (passed, _) in checks.items()} == dict.fromkeys(CHECKS, True), checks
    # what the sum check compared: each index and threshold, the labeler rows (no model-assisted row here)
    units = {name: world.table(name) for name in es.UNIT_TABLES.values()}
    tasks = units["task_estimates"]
    hours = float(tasks.filter((pl.col("benchmark_index") == "all") & (pl.col("threshold") == 1))["hours"].sum())
    compared = es.unit_sum_check(units, world.table("headline_estimates"), hours)
    indexes = set(world.table("benchmark_index_membership")["benchmark_index"])
    assert indexes == {"all", "economic_agentic"}  # the shipped index computes (no member qualifies here)
    assert compared.height == len(indexes) * 2 * 4 and set(compared["estimator"]) == {"labeler"}
    assert compared["ok"].all() and compared.filter(pl.col("quantity") == "tasks_covered")["unit_sum"].max() > 1

    # a per-unit table that does not sum to the headline fails the check: a task no draw covered claims p = 0.5
    target = tasks.with_row_index("row").filter((pl.col("benchmark_index") == "all") & (pl.col("threshold") == 5)
                                                & (pl.col("p_covered") == 0))["row"][0]
    moved = tasks.with_columns(pl.when(pl.int_range(pl.len()) == target).then(0.5).otherwise(pl.col("p_covered"))
                               .alias("p_covered"))
    wh.replace_table(world.state.warehouse, "task_estimates", moved)
    passed, metadata = run_checks(world)["unit_estimates_sum_to_headline"]
    assert not passed and metadata["largest_difference"] == pytest.approx(0.5), metadata
    wh.replace_table(world.state.warehouse, "task_estimates", tasks)
    assert run_checks(world)["unit_estimates_sum_to_headline"][0]

    # an index file naming a benchmark in no landing folder (a typo) fails the files check
    index_dir = tmp_path / "indexes"
    shutil.copytree(ROOT / "data" / "indexes", index_dir)
    with open(index_dir / "economic_agentic.toml", "a") as handle:
        handle.write('\n[[exclude]]\nbenchmark = "osworldd"\nreason = "a typo"\n')
    monkeypatch.setenv("BENCHMAP_INDEX_DIR", str(index_dir))
    passed, metadata = run_checks(world)["benchmark_index_files_valid"]
    assert not passed and "'osworldd', which is not landed here" in metadata["errors"]["economic_agentic"], metadata

    # on a machine without the mirror (no landing folder of osworld, ...), the shipped file's entries name
    # benchmarks the vendored reference sampled: not typos; the typo still is one
    monkeypatch.setenv("BENCHMAP_MIRROR", str(tmp_path / "no_mirror"))
    passed, metadata = run_checks(world)["benchmark_index_files_valid"]
    assert not passed and list(metadata["errors"]) == ["economic_agentic"], metadata
    assert "'osworldd', which is not landed here" in metadata["errors"]["economic_agentic"]
    assert "'osworld'," not in metadata["errors"]["economic_agentic"]
    monkeypatch.setenv("BENCHMAP_INDEX_DIR", str(ROOT / "data" / "indexes"))
    passed, metadata = run_checks(world)["benchmark_index_files_valid"]
    assert passed and "economic_agentic" in metadata["indexes"], metadata


def test_a_sample_the_judge_lost_is_not_hidden_by_a_later_run_of_another_benchmark(
        world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """A probe (2026-12-07): with an LLM judge sample configured, the judge labeled none of benchmark `lost`'s
    sample (its step failed, exit 1), and a later `run_all --benchmarks kept` released `lost` estimated without
    it, with exit 0. Now the later run counts the lost sample (exit 4) and names the benchmark."""
    import assets.judge_sample as js
    from models.labeling.base import LabelOutcome, TaskLabel
    from pipelines import run_all
    from pipelines.definitions import build_definitions

    world.add("lost", real_records("tau_bench", 12))
    world.add("kept", real_records("cybench", 12))
    task_id, soc = world.query("select task_id, onet_soc_code from onet_tasks order by task_id limit 1").row(0)

    class Judge:  # an OpenAI-kind judge that is down for one benchmark
        name, model, template_version, labeler_version = "openai", "judge-model", "t1", "judge-model+t1"

        def prepare(self, prompts) -> None:  # noqa: ANN001 - the Labeler protocol
            pass

        def label(self, batch):  # noqa: ANN001
            return [LabelOutcome(r.prompt_hash, error="HTTP 503: down") if r.benchmark == "lost" else
                    LabelOutcome(r.prompt_hash, [TaskLabel(task_id=task_id, onet_soc_code=soc, rank=1, score=1.0)])
                    for r in batch]

    class JudgeResource:
        kind, model = "openai", "judge-model"

        def build(self, index) -> Judge:  # noqa: ANN001
            return Judge()

    monkeypatch.setattr(js, "judge_sample_setting", lambda value=None: (0.25, 4))  # 4 of 12 texts each
    monkeypatch.setattr(js, "labeler_resource_for_judge", lambda: JudgeResource())
    defs = build_definitions(str(world.state.warehouse))
    assert run_all.main(["--skip-reference", "--benchmarks", "lost"], defs=defs, instance=world.instance) == 1
    capsys.readouterr()
    code = run_all.main(["--skip-reference", "--benchmarks", "kept"], defs=defs, instance=world.instance)
    out, err = capsys.readouterr()
    assert code == 4, out[-3000:] + err[-3000:]  # was 0
    # the judge's 4 answers for `kept` are counted apart from the labeler's 12 (they were not counted at all)
    assert ("12 labeled, 0 failed, the judge labeled 4 sampled texts (see label_failures; 4 sampled texts without "
            "the judge's reading, exit 4)") in out, out[-3000:]
    assert "without the judge's reading: lost 4 sampled texts (not run by this command;" in err, err[-3000:]
    assert "--benchmarks lost` asks the judge again" in err
    assert world.query("select count(*) from judge_sample_design where benchmark = 'kept'").item() == 1
    # and the release says so under its answer
    summary = (world.state.warehouse.parent / "exports" / "latest" / "summary.md").read_text()
    assert "_Without the judge's reading: lost 4 sampled texts" in summary


def test_new_model_scores_alone_make_a_new_release(world: World, capsys: pytest.CaptureFixture) -> None:
    """A probe (2026-12-07): a changed results.csv (a score, or a new model) reached occupation_model_scores in the
    warehouse, but no figure of release.csv moved, so the release stood with the old scores and said "this run's
    figures are the same". A release now stands only when every exported table is the same."""
    import json

    from pipelines import run_all
    from pipelines.definitions import build_definitions

    records = real_records("financebench", 12)
    results = [(r["prompt_id"], "model-a", 0.5) for r in records]
    world.add("scored", records, results=results)
    defs = build_definitions(str(world.state.warehouse))
    argv = ["--skip-reference", "--benchmarks", "scored"]
    assert run_all.main(argv, defs=defs, instance=world.instance) == 0
    first = world.state.warehouse.parent / "exports" / "latest"
    before = first.resolve()
    world.add("scored", records, results=[*results, *[(r["prompt_id"], "model-b", 0.25) for r in records]])
    capsys.readouterr()
    assert run_all.main(argv, defs=defs, instance=world.instance) == 0
    out = capsys.readouterr().out
    after = first.resolve()
    assert after != before, out[-2000:]  # was "(still the newest: this run's figures are the same ...)"
    release = json.loads((after / "manifest.json").read_text())["release"]
    assert {"benchmarks", "occupation_model_scores"} <= set(release["tables_changed"]), release["tables_changed"]
    scores = pl.read_csv(after / "tables" / "occupation_model_scores.csv")
    assert "model-b" in scores["model"].to_list()


def test_a_damaged_reference_file_stops_the_run_before_its_benchmarks(
        world: World, mirror: Path, capsys: pytest.CaptureFixture) -> None:
    """A probe (2026-12-08) put a Latin-1 byte into O*NET's task statements in data/raw. run_all printed
    "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position ...", the cause of the step's error,
    where the error itself names the file and line; and after a reference failure it ran the benchmarks and the
    analysis on what the reference step left (a cut file: 37 tables rebuilt, the first error blaming a vendored
    file that was whole). Now the error is the step's own, and nothing downstream of the reference runs."""
    from pipelines import run_all
    from pipelines.definitions import build_definitions

    world.add("small", real_records("tau_bench", 20))
    statements = (mirror / "onet" / "Task Statements.txt").read_bytes().split(b"\n")
    statements[499] = statements[499].replace(b"e", b"\xe9", 1)  # line 500, as Latin-1 would write an e-acute
    (world.state.raw / "onet").mkdir(parents=True, exist_ok=True)
    (world.state.raw / "onet" / "Task Statements.txt").write_bytes(b"\n".join(statements))
    defs = build_definitions(str(world.state.warehouse))
    assert run_all.main(["--benchmarks", "small"], defs=defs, instance=world.instance) == 1
    out = capsys.readouterr().out
    assert "Task Statements.txt, line 500: not valid UTF-8 text" in out, out[-3000:]
    assert "UnicodeDecodeError" not in out
    assert "benchmarks, analysis/exports: not run: the reference data failed" in out
    landed = world.query("select count(*) as n from information_schema.tables where table_name = 'benchmarks'")
    assert landed["n"][0] == 0  # not landed either: its step did not run
