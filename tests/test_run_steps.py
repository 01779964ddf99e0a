"""What run_all runs is what Dagster's records call stale or missing (pipelines/run_steps.py), with per-asset
code versions (pipelines/code_versions.py) and source data versions (resources/source_versions.py).

Small toy graphs on an ephemeral instance: a partitioned observable source -> a partitioned raw asset -> an
unpartitioned analysis asset, and a reference chain; each test changes one thing and asserts the one reason
a step must run (or that it is skipped). The run_all behaviour on the mirror is tested in test_integrity,
test_faults, test_llm_reliability and test_benchmarks.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    Definitions,
    DynamicPartitionsDefinition,
    MaterializeResult,
    asset,
    materialize,
)

from pipelines import code_versions as cv
from pipelines import run_steps
from resources import integrity
from resources import source_versions as sv

PARTS = DynamicPartitionsDefinition(name="benchmark")


def toy_defs(*, raw_version: str = "1", fail: bool = False) -> Definitions:
    from assets.sources import benchmark_landing_folders

    @asset(partitions_def=PARTS, deps=[sv.LANDING_FOLDERS_KEY], code_version=raw_version)
    def raw() -> MaterializeResult:
        if fail:
            raise RuntimeError("refused")
        return MaterializeResult(metadata={"table": "main.raw", "row_count": 3})

    @asset(deps=[raw], code_version="1")
    def summary() -> MaterializeResult:
        return MaterializeResult(metadata={"table": "main.summary", "row_count": 1})

    return Definitions(assets=[benchmark_landing_folders, raw, summary])


def run(defs: Definitions, instance: DagsterInstance, key: str, partition: str | None = None) -> bool:
    return materialize(list(defs.assets), selection=[key], instance=instance, partition_key=partition,
                       raise_on_error=False).success


def report(counts: dict[str, int], by_benchmark: dict[str, dict[str, int]] | None = None
           ) -> integrity.IntegrityReport:
    return integrity.IntegrityReport(Path("toy"), True, counts=counts, by_benchmark=by_benchmark or {})


RAW, SUMMARY = AssetKey("raw"), AssetKey("summary")
INTACT = report({"raw": 3, "summary": 1}, {"raw": {"a": 3}})


@pytest.fixture
def instance() -> DagsterInstance:
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("benchmark", ["a"])
    return instance


def why(defs: Definitions, instance: DagsterInstance, keys: list[AssetKey], partition: str | None = None,
        counts: integrity.IntegrityReport = INTACT) -> str | None:
    steps = run_steps.Steps(defs, instance, None, counts, force=False)
    return steps.why_run(keys, partition)[0]


def test_a_step_runs_until_materialized_then_only_when_its_source_changes(instance: DagsterInstance) -> None:
    defs = toy_defs()
    sv.report_source_versions(instance, landing={"a": "hash-1"})
    assert why(defs, instance, [RAW], "a") == "raw was never materialized in this warehouse"
    assert run(defs, instance, "raw", "a") and run(defs, instance, "summary")
    assert why(defs, instance, [RAW], "a") is None and why(defs, instance, [SUMMARY]) is None
    assert sv.report_source_versions(instance, landing={"a": "hash-1"}) == 0  # same version: nothing recorded
    assert sv.report_source_versions(instance, landing={"a": "hash-2"}) == 1  # the folder changed
    assert why(defs, instance, [RAW], "a") == \
        "raw has a new dependency data version (benchmark_landing_folders)"
    assert run(defs, instance, "raw", "a")
    assert why(defs, instance, [RAW], "a") is None
    # the partitioned -> unpartitioned edge: Dagster's stale status misses it, the storage ids do not
    assert why(defs, instance, [SUMMARY]) == "raw was materialized after summary"
    assert run(defs, instance, "summary")
    assert why(defs, instance, [SUMMARY]) is None


def test_a_new_code_version_a_failed_attempt_and_lost_rows_each_make_a_step_run(instance: DagsterInstance) -> None:
    defs = toy_defs()
    sv.report_source_versions(instance, landing={"a": "hash-1"})
    assert run(defs, instance, "raw", "a")
    assert why(toy_defs(raw_version="2"), instance, [RAW], "a") == "raw has a new code version"
    assert why(defs, instance, [RAW], "a", report({"raw": 3}, {"raw": {"a": 2}})) == \
        "its output table raw has 2 rows, 3 when it last succeeded"
    assert why(defs, instance, [RAW], "a", report({})) == "its output table raw is missing"
    assert not run(toy_defs(fail=True), instance, "raw", "a")  # an attempt that may have written part of it
    assert why(defs, instance, [RAW], "a") == "an attempt to materialize raw did not finish"
    assert run(defs, instance, "raw", "a")
    assert why(defs, instance, [RAW], "a") is None


def test_records_of_another_warehouse_file_are_not_trusted(instance: DagsterInstance, tmp_path: Path) -> None:
    """The instance lives apart from the warehouse: a deleted or rebuilt warehouse must not look up to date."""
    defs = toy_defs()
    warehouse = tmp_path / "benchmap.duckdb"
    sv.report_source_versions(instance, landing={"a": "hash-1"})
    first = run_steps.trusted_since(instance, str(warehouse))
    assert run_steps.trusted_since(instance, str(warehouse)) == first  # the same file: the same trust
    assert run(defs, instance, "raw", "a")
    steps = run_steps.Steps(defs, instance, str(warehouse), INTACT, force=False)
    assert steps.why_run([RAW], "a")[0] is None
    copy = tmp_path / "copy.duckdb"  # a copy of the file is the same warehouse (bench/ copies states)
    copy.write_bytes(warehouse.read_bytes())
    assert run_steps.trusted_since(instance, str(copy)) == first
    os.remove(warehouse)  # deleted (or moved aside by --rebuild): a new file, a new identity
    steps = run_steps.Steps(defs, instance, str(warehouse), INTACT, force=False)
    assert steps.records.since > first
    assert steps.why_run([RAW], "a")[0] == "raw was never materialized in this warehouse"
    assert run(defs, instance, "raw", "a")
    assert run_steps.Steps(defs, instance, str(warehouse), INTACT, force=False).why_run([RAW], "a")[0] is None


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_a_code_version_covers_its_module_and_what_it_imports_only(tmp_path: Path) -> None:
    write(tmp_path, {
        "pyproject.toml": "[project]\n",
        "models/__init__.py": "", "models/a.py": "A = 1\n", "models/b.py": "B = 1\n",
        "models/deep.py": "D = 1\n",
        "pipelines/__init__.py": "", "pipelines/x.py": "from models import a\nfrom models.deep import D\n",
        "assets/__init__.py": "",
        "assets/one.py": "import polars\nfrom pipelines.x import something\n",
        "assets/two.py": "def f():\n    from models import b  # a function-level import counts too\n",
    })

    def versions() -> dict[str, str]:
        return {name: cv.files_version(cv.module_closure(tmp_path / "assets" / name, tmp_path), "", tmp_path)
                for name in ("one.py", "two.py")}

    closure = {p.relative_to(tmp_path).as_posix() for p in cv.module_closure(tmp_path / "assets/one.py", tmp_path)}
    assert closure == {"assets/one.py", "pipelines/__init__.py", "pipelines/x.py", "models/__init__.py",
                       "models/a.py", "models/deep.py"}
    before = versions()
    cv._file_digest.cache_clear()
    write(tmp_path, {"models/deep.py": "D = 2\n"})  # used by one.py through pipelines/x.py only
    after = versions()
    assert after["one.py"] != before["one.py"] and after["two.py"] == before["two.py"]
    cv._file_digest.cache_clear()
    write(tmp_path, {"models/b.py": "B = 2\n"})
    assert versions()["two.py"] != after["two.py"]


def test_imported_names_are_kept_by_source_digest_and_parsed_again_when_edited(tmp_path: Path) -> None:
    """The parse cache behind the code versions: a second process reads the names instead of parsing, and an
    edited file (another digest) is parsed again, so a version never rests on stale names."""
    write(tmp_path, {"models/__init__.py": "", "models/a.py": "from models import b\n", "models/b.py": ""})
    store = tmp_path / ".cache" / "names.json"
    first = cv._NamesCache(store)
    assert first.names(tmp_path / "models/a.py", "models") == ["models", "models.b"] and first.new
    first.save()
    second = cv._NamesCache(store)
    assert second.names(tmp_path / "models/a.py", "models") == ["models", "models.b"] and not second.new
    cv._file_digest.cache_clear()
    write(tmp_path, {"models/a.py": "import models.c\n"})
    assert second.names(tmp_path / "models/a.py", "models") == ["models.c"] and second.new
    second.save()
    assert len(json.loads(store.read_text())) == 2  # the names this process used (stale entries of others go)
    cv._file_digest.cache_clear()


def test_the_settings_that_change_results_are_in_every_code_version(monkeypatch: Any) -> None:
    from resources.settings import settings

    base = cv.settings_fingerprint(None, settings())
    monkeypatch.setenv("BENCHMAP_LABELER", "openai")
    assert cv.settings_fingerprint(None, settings()) != base


def test_the_labelers_settings_leave_the_reference_and_benchmark_tables_current(tmp_path: Path,
                                                                              monkeypatch: Any) -> None:
    """Switching to the LLM labeler (or only the port of OPENAI_BASE_URL) re-ran the reference stage, said as
    "oews_wages has a new code version": every asset's code version held the labeler's settings."""
    from pipelines.definitions import build_definitions

    def versions() -> dict[str, tuple[str, str | None]]:
        graph = build_definitions(str(tmp_path / "w.duckdb")).resolve_asset_graph()
        return {k.to_user_string(): (graph.get(k).group_name, graph.get(k).code_version)
                for k in graph.get_all_asset_keys() if graph.get(k).is_materializable}

    offline = versions()
    monkeypatch.setenv("BENCHMAP_LABELER", "openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-code-versions-0001")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    llm = versions()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:10/v1")
    other_port = versions()
    changed = {k for k, (_, v) in offline.items() if llm[k][1] != v}
    assert changed == {k for k, (group, _) in offline.items() if group not in cv.BEFORE_LABELING_GROUPS}
    assert {"prompt_task_labels", "coverage_headline"} <= changed and "oews_wages" not in changed
    assert {k for k, (_, v) in llm.items() if other_port[k][1] != v} == changed  # the server's address: labels on
    monkeypatch.setenv("BENCHMAP_FOLLOW_LINKS", "1")  # a setting the landing reads still reaches the benchmarks
    assert versions()["benchmark_prompts"][1] != other_port["benchmark_prompts"][1]


def test_the_landing_sensor_records_the_folder_version_it_requests(tmp_path: Path, monkeypatch: Any) -> None:
    """A sensor-launched refresh reads the version the sensor recorded: the next run_all does not redo it."""
    from dagster import build_sensor_context

    from pipelines.landing_sensor import benchmark_landing_sensor

    folder = tmp_path / "raw" / "benchmarks" / "toy"
    folder.mkdir(parents=True)
    (folder / "prompts.jsonl").write_text('{"prompt_id": "1", "prompt": "Reconcile the ledger."}\n')
    (tmp_path / "mirror").mkdir()
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(tmp_path / "raw"))
    monkeypatch.setenv("BENCHMAP_MIRROR", str(tmp_path / "mirror"))
    instance = DagsterInstance.ephemeral()
    result = benchmark_landing_sensor(build_sensor_context(instance=instance))
    (request,) = result.run_requests
    observations = [e for e in result.asset_events if e.asset_key == sv.LANDING_FOLDERS_KEY]
    assert [(o.partition, o.tags["dagster/data_version"]) for o in observations] == \
        [("toy", request.tags["benchmap/content_hash"])]
    for event in result.asset_events:
        instance.report_runless_asset_event(event)
    # run_all reports the same version: nothing new recorded
    from resources.sources import discover_landing

    assert sv.report_source_versions(instance, landing=sv.landing_versions(discover_landing(), ["toy"])) == 0


def test_a_changed_folder_makes_only_its_own_partition_stale(instance: DagsterInstance) -> None:
    defs = toy_defs()
    instance.add_dynamic_partitions("benchmark", ["b"])
    sv.report_source_versions(instance, landing={"a": "a-1", "b": "b-1"})
    assert run(defs, instance, "raw", "b") and run(defs, instance, "raw", "a")
    both = report({"raw": 6}, {"raw": {"a": 3, "b": 3}})
    assert why(defs, instance, [RAW], "a", both) is None and why(defs, instance, [RAW], "b", both) is None
    sv.report_source_versions(instance, landing={"a": "a-1", "b": "b-2"})
    assert why(defs, instance, [RAW], "a", both) is None
    assert why(defs, instance, [RAW], "b", both) == \
        "raw has a new dependency data version (benchmark_landing_folders)"


@pytest.mark.parametrize("partitioned", [True, False])
def test_an_output_left_out_by_a_successful_run_does_not_make_its_step_stale(instance: DagsterInstance,
                                                                             partitioned: bool) -> None:
    """The what-if without a candidate folder and the judge sample while off emit some optional outputs and not
    others: their run succeeded, so the step is done (it used to rerun on every run_all). An output planned in a
    run that failed is unfinished work, and the step runs again."""
    from dagster import AssetOut, Output, multi_asset

    def defs_with(fail: bool) -> Definitions:
        @multi_asset(outs={"emitted": AssetOut(is_required=False), "optional": AssetOut(is_required=False)},
                     partitions_def=PARTS if partitioned else None,
                     deps=[sv.LANDING_FOLDERS_KEY] if partitioned else [])
        def chooser():  # noqa: ANN202 - a generator of outputs
            if fail:
                raise RuntimeError("refused")
            yield Output(None, "emitted", metadata={"table": "main.emitted", "row_count": 3})

        from assets.sources import benchmark_landing_folders

        return Definitions(assets=[benchmark_landing_folders, chooser])

    keys = [AssetKey("emitted"), AssetKey("optional")]
    part = "a" if partitioned else None
    counts = report({"emitted": 3}, {"emitted": {"a": 3}} if partitioned else {})
    sv.report_source_versions(instance, landing={"a": "hash-1"})
    defs = defs_with(fail=False)
    assert why(defs, instance, keys, part, counts) == "emitted was never materialized in this warehouse"
    assert materialize(list(defs.assets), selection=["emitted", "optional"], instance=instance,
                       partition_key=part).success
    assert why(defs, instance, keys, part, counts) is None  # `optional` was left out by choice
    failing = defs_with(fail=True)
    assert not materialize(list(failing.assets), selection=["emitted", "optional"], instance=instance,
                           partition_key=part, raise_on_error=False).success
    assert why(defs, instance, keys, part, counts) == "an attempt to materialize emitted did not finish"


def test_a_gold_label_file_makes_only_the_label_validation_stale(tmp_path: Path, monkeypatch: Any) -> None:
    """The annotators' CSVs were hashed into `reference_source_files`: a new file in data/raw/gold_labels/ re-ran
    the reference step and then every labeling partition (from the cache), though only the validation reads it.
    They are now a source of their own, and nothing before the validation depends on it."""
    from pipelines.definitions import build_definitions
    from resources.settings import settings

    raw = tmp_path / "raw"
    (raw / "gold_labels").mkdir(parents=True)
    (raw / "onet").mkdir()
    (raw / "onet" / "x.txt").write_text("a reference file")
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(raw))
    monkeypatch.setenv("BENCHMAP_MIRROR", str(tmp_path / "no-mirror"))
    config = settings()
    reference, gold = sv.reference_files_version(config), sv.gold_files_version(config)
    (raw / "gold_labels" / "annotator_1.csv").write_text("benchmark,prompt_id,task_id\n")
    assert sv.reference_files_version(config) == reference  # was a new version: the reference step ran
    assert sv.gold_files_version(config) != gold
    (raw / "onet" / "x.txt").write_text("a changed reference file")
    assert sv.reference_files_version(config) != reference and sv.gold_files_version(config) != gold

    graph = build_definitions(str(tmp_path / "w.duckdb")).resolve_asset_graph()

    def downstream(key: AssetKey) -> set[AssetKey]:
        seen, todo = set(), [key]
        while todo:
            for child in graph.get(todo.pop()).child_keys:
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
        return seen

    groups = {graph.get(k).group_name for k in downstream(sv.GOLD_FILES_KEY)}
    assert AssetKey("gold_task_labels") in downstream(sv.GOLD_FILES_KEY)
    assert not {"reference", "benchmarks", "labels"} & groups, groups
    assert AssetKey("prompt_task_labels") in downstream(sv.REFERENCE_FILES_KEY)  # the reference still feeds them
