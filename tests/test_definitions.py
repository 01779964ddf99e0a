"""The code location loads: Definitions build, every job resolves, and the asset, check, job, sensor and
schedule counts are the ones expected (a fast test: no asset is materialized, no data is read).

Updating the counts: when you add (or remove) an asset, a check, a job, a sensor or a schedule, change EXPECTED
below in the same commit. The current numbers are printed by

    .venv/bin/python -c "from tests.test_definitions import counts; print(counts())"

The per-group counts say where a change landed, so a count that moved in an unexpected group is visible.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

EXPECTED = {
    "assets": 66,  # + prompt_work, reference_task_labels (issue 13); + the four whatif_* tables (issue 17);
    # + whatif_expected_occupation_gain (2026-12-07: where a candidate's expected gain lands);
    # issue 25: + 8 per-unit/per-text estimate tables (estimates), + occupation_model_scores_estimated (analysis);
    # issue 27: + headline_history; issue 28: + headline_count_draws (estimates: the draws coverage_regressions_mi
    # refits on, now an asset of its own)
    "checks": 27,  # issue 25: + unit_estimates_sum_to_headline, benchmark_group_shares_match_the_headline,
    # estimate_figures_drawn, benchmarks_have_judged_texts; issue 26: + prompt_task_labels_complete
    "jobs": 3,
    "sensors": 2,
    "schedules": 1,
}
EXPECTED_GROUPS = {
    "reference": 10, "benchmarks": 4, "labels": 4, "label_validation": 5, "analysis": 13, "estimates": 14,
    "gaps": 11, "exports": 5,
}
EXPECTED_JOBS = {"benchmark_refresh_job", "analysis_refresh_job", "reference_refresh_job"}


def _defs(warehouse: Path | None = None) -> Any:
    from pipelines.definitions import build_definitions

    return build_definitions(str(warehouse) if warehouse else None)


def counts(defs: Any = None) -> dict[str, Any]:
    """The numbers EXPECTED and EXPECTED_GROUPS hold, from the Definitions as they are now."""
    defs = defs or _defs()
    graph = defs.resolve_asset_graph()
    keys = graph.materializable_asset_keys
    return {
        "assets": len(keys),
        "checks": len(graph.asset_check_keys),
        "jobs": len(list(defs.jobs or [])),
        "sensors": len(list(defs.sensors or [])),
        "schedules": len(list(defs.schedules or [])),
        "groups": dict(Counter(graph.get(k).group_name for k in keys)),
    }


@pytest.fixture(scope="module")
def defs(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _defs(tmp_path_factory.mktemp("defs") / "benchmap.duckdb")


def test_definitions_load_with_the_expected_counts(defs: Any) -> None:
    found = counts(defs)
    assert {k: found[k] for k in EXPECTED} == EXPECTED, (
        f"Definitions changed: {found}; update EXPECTED in tests/test_definitions.py if that was intended")
    assert found["groups"] == EXPECTED_GROUPS


def test_every_job_resolves_and_every_check_targets_a_defined_asset(defs: Any) -> None:
    assert {job.name for job in defs.jobs} == EXPECTED_JOBS
    for name in EXPECTED_JOBS:
        job = defs.resolve_job_def(name)  # resolves the job's asset selection against the graph
        assert job.name == name
    graph = defs.resolve_asset_graph()
    assets = set(graph.materializable_asset_keys)
    assert {check.asset_key for check in graph.asset_check_keys} <= assets
    # every asset is a warehouse table of the same name: a plain identifier
    assert all(len(key.path) == 1 and key.path[0].isidentifier() for key in assets)


def test_the_resources_point_at_the_given_warehouse(defs: Any, tmp_path: Path) -> None:
    resources = defs.resources
    assert {"warehouse", "io_manager", "labeler"} <= set(resources)
    assert resources["warehouse"].path == resources["io_manager"].warehouse.path
    assert resources["warehouse"].path.endswith("benchmap.duckdb")


def test_runs_the_daemon_and_the_ui_launch_run_their_steps_in_one_process_unless_told(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every job's executor, and the implicit asset job's (the automation sensor's and the UI's runs): in process
    by default (the steps share the run's imports and worker processes; a process per step made the analysis
    run after one new benchmark 61-79 s instead of 11-14 s), a process per step with BENCHMAP_EXECUTOR=multiprocess."""
    from resources.settings import Settings, SettingsError

    def executors() -> set[str]:
        built = _defs(tmp_path / "benchmap.duckdb")
        jobs = [built.resolve_job_def(name) for name in EXPECTED_JOBS]
        return {job.executor_def.name for job in [*jobs, built.resolve_implicit_global_asset_job_def()]}

    monkeypatch.delenv("BENCHMAP_EXECUTOR", raising=False)
    assert executors() == {"in_process"}
    monkeypatch.setenv("BENCHMAP_EXECUTOR", "multiprocess")
    assert executors() == {"multiprocess"}
    assert Settings.from_env({"BENCHMAP_EXECUTOR": "In-Process"}).executor == "in_process"
    with pytest.raises(SettingsError, match="BENCHMAP_EXECUTOR"):
        Settings.from_env({"BENCHMAP_EXECUTOR": "threads"})


def test_the_code_location_is_built_when_loaded_not_when_imported() -> None:
    from dagster import Definitions

    from pipelines import definitions

    assert isinstance(definitions.code_location(), Definitions)  # @definitions: what `dagster dev` calls
    assert definitions.all_assets() and definitions.all_asset_checks()


def test_llm_settings_mirror_llm_config() -> None:
    """LabelerResource.llm is LLMConfig as Dagster config: the same fields (but the key) with the same defaults."""
    import dataclasses

    from models.labeling.llm_config import LLMConfig
    from resources.dagster_resources import LabelerResource, LLMSettings

    config_defaults = {f.name: f.default for f in dataclasses.fields(LLMConfig) if f.name != "api_key"}
    assert {name: f.default for name, f in LLMSettings.model_fields.items()} == config_defaults
    resource = LabelerResource(kind="openai", model="gpt-test", timeout_s=5.0, api_key="sk-never-shown")
    assert resource.llm.model == resource.model == "gpt-test" and resource.llm.timeout_s == 5.0
    config = resource.llm_config()
    assert (config.model, config.timeout_s, config.api_key) == ("gpt-test", 5.0, "sk-never-shown")
    assert "sk-never-shown" not in repr(config)


def test_settings_are_read_once_typed_and_never_show_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from resources.settings import DEFAULT_WAREHOUSE, Settings, SettingsError, settings

    empty = Settings.from_env({})
    assert empty.warehouse == DEFAULT_WAREHOUSE and empty.labeler == "offline" and empty.max_concurrent == 2
    assert empty.judge == "" and empty.judge_model == "gpt-4o-mini" and empty.analysis_quiet_s == 30.0
    keyed = Settings.from_env({"OPENAI_API_KEY": "sk-secret", "BENCHMAP_LLM_MODEL": "m", "BENCHMAP_MAX_CONCURRENT": "0",
                               "BENCHMAP_VALIDATION_FLOORS": '{"gdpval:occupation_top5": 0.6}'})
    assert keyed.labeler == keyed.judge == "openai" and keyed.judge_model == "m" and keyed.max_concurrent == 1
    assert dict(keyed.validation_floors or {}) == {"gdpval:occupation_top5": 0.6}
    assert "sk-secret" not in repr(keyed) and "sk-secret" not in str(keyed.fingerprint_fields())
    # paths are not results: another checkout or a moved folder of the same code is not new code
    moved = Settings.from_env({"BENCHMAP_INDEX_DIR": "/elsewhere/indexes", "BENCHMAP_RAW_DIR": "/elsewhere/raw"})
    assert moved.fingerprint_fields() == empty.fingerprint_fields()
    with pytest.raises(SettingsError, match="BENCHMAP_MAX_CONCURRENT"):
        Settings.from_env({"BENCHMAP_MAX_CONCURRENT": "two"})
    monkeypatch.setenv("BENCHMAP_ANALYSIS_QUIET_S", "7")
    first = settings()
    assert first.analysis_quiet_s == 7.0 and settings() is first  # kept while nothing changes
    monkeypatch.setenv("BENCHMAP_ANALYSIS_QUIET_S", "8")
    assert settings().analysis_quiet_s == 8.0  # rebuilt when a variable it reads changes


def test_every_asset_has_a_code_version_of_its_own_code(defs: Any) -> None:
    """The UI marks an asset stale when its code changed: every asset's version is derived from its own module
    and what that imports (pipelines/code_versions.py), the task index's is the offline labeler's own."""
    from dagster import AssetKey

    from pipelines import code_versions
    from resources.settings import PROJECT_ROOT
    from resources.task_index import offline_code_fingerprint

    graph = defs.resolve_asset_graph()
    versions = {k: graph.get(k).code_version for k in graph.materializable_asset_keys}
    assert None not in versions.values()
    assert versions.pop(AssetKey("task_search_index")) == offline_code_fingerprint()
    # assets of one module share a version; modules that import different code have different ones
    assert versions[AssetKey("onet_tasks")] == versions[AssetKey("oews_wages")]
    assert versions[AssetKey("onet_tasks")] != versions[AssetKey("task_estimates")]
    assert len(set(versions.values())) >= 5
    # "not the whole tree": the reference assets' closure holds no estimator, the estimates' holds one
    reference = code_versions.module_closure(PROJECT_ROOT / "assets" / "reference.py")
    estimates = code_versions.module_closure(PROJECT_ROOT / "assets" / "estimates.py")
    assert PROJECT_ROOT / "models" / "reference" / "__init__.py" in reference
    assert not any(p.is_relative_to(PROJECT_ROOT / "models" / "estimates") for p in reference)
    assert any(p.is_relative_to(PROJECT_ROOT / "models" / "estimates") for p in estimates)


def _rendered_text(markdown: str) -> tuple[str, set[str]]:
    """What a Markdown renderer shows of `markdown` (CommonMark, as the UI's renderer reads it): its text, and
    the kinds of inline element that are not plain text or code."""
    from markdown_it import MarkdownIt

    shown, kinds = [], set()
    for block in MarkdownIt("commonmark").parse(markdown):
        for token in block.children or ():
            if token.type in ("text", "code_inline"):
                shown.append(token.content)
            elif token.type == "softbreak":
                shown.append(" ")
            else:
                kinds.add(token.type)
        if block.type == "paragraph_close":
            shown.append(" ")
    return " ".join("".join(shown).split()), kinds


def test_every_description_shows_in_the_ui_as_written(defs: Any) -> None:
    """The UI renders descriptions as Markdown, ours are plain text: each asset's reads, rendered, as its source
    says (before the escaping, "O*NET ... O*NET" rendered "ONET ... ONET" with italics between, and
    "data/indexes/<name>.toml" as "data/indexes/.toml"). Checks' descriptions are not escaped: they are held
    to it as written."""
    from dagster import AssetsDefinition, load_assets_from_package_module

    import assets as assets_package

    source = {}
    for item in load_assets_from_package_module(assets_package, include_specs=True):
        specs = item.specs if isinstance(item, AssetsDefinition) else [item]
        source.update({spec.key: spec.description for spec in specs if spec.description})
    graph = defs.resolve_asset_graph()
    texts = [(key.to_user_string(), graph.get(key).description, written) for key, written in source.items()]
    texts += [(key.name, graph.get_check_spec(key).description, graph.get_check_spec(key).description)
              for key in graph.asset_check_keys if graph.get_check_spec(key).description]
    assert len(texts) > 90 and any("O*NET" in written for _, _, written in texts)
    wrong = []
    for name, held, written in texts:
        shown, kinds = _rendered_text(held)
        if kinds or shown != " ".join(written.replace("`", "").split()):
            wrong.append((name, sorted(kinds), shown[:80]))
    assert not wrong


def test_every_asset_shows_its_kinds(defs: Any) -> None:
    """The UI's asset graph marks each asset with what it is made with (the warehouse tables with polars and
    DuckDB, the labels with their labelers, the release's files with their formats); before, 28 of the 68 assets,
    whole groups (benchmarks, gaps, label validation, exports), showed none."""
    specs = list(defs.resolve_all_asset_specs())
    assert len(specs) > 60
    assert [spec.key.to_user_string() for spec in specs if not spec.kinds] == []
    kinds = {spec.key.to_user_string(): spec.kinds for spec in specs}
    assert kinds["benchmark_prompts"] == kinds["coverage_headline"] == {"polars", "duckdb"}
    assert "openai" in kinds["prompt_task_labels"] and {"parquet", "csv", "excel"} <= kinds["exports"]


def test_a_setting_that_is_not_understood_is_one_line_naming_the_variable() -> None:
    """BENCHMAP_JUDGE=OpenAI (anything but exactly 'openai') switched the judge off silently and cleared every
    benchmark's judge sample; BENCHMAP_JUDGE_SAMPLE=10% failed as "could not convert string to float"; and any
    bad setting ended run_all in a traceback (a probe, 2026-12-07)."""
    import os
    import subprocess
    import sys

    from assets.judge_sample import judge_sample_setting
    from resources.settings import Settings, SettingsError

    key = {"OPENAI_API_KEY": "sk-test-0123456789abcdef"}
    assert Settings.from_env({**key, "BENCHMAP_JUDGE": "OpenAI"}).judge == "openai"
    assert Settings.from_env({**key, "BENCHMAP_JUDGE": "off"}).judge == ""
    assert Settings.from_env(key).judge == "openai" and Settings.from_env({}).judge == ""
    with pytest.raises(SettingsError, match="BENCHMAP_JUDGE='opnai': expected openai"):
        Settings.from_env({"BENCHMAP_JUDGE": "opnai"})
    with pytest.raises(ValueError, match="BENCHMAP_JUDGE_SAMPLE='10%'"):
        judge_sample_setting("10%")
    done = subprocess.run([sys.executable, "-m", "pipelines.run_all"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "BENCHMAP_JUDGE": "opnai"}, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "python -m pipelines.run_all: error: BENCHMAP_JUDGE='opnai': expected openai (the LLM judge through the "
        "openai client) or off (--debug shows the traceback)"]
