"""Gap finder end to end: the reference, benchmark and label assets materialized from the mirror into a
temporary warehouse, then the gap lists, the what-if (asset and command) and the power asset on it.

The hand-worked cases of the same functions are tests/test_gaps.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

E2E_BENCHMARKS = ["cybench", "financebench", "jobbench"]


def _materialize(
    selection: list[str],
    warehouse: str,
    instance: Any,
    *,
    partition_key: str | None = None,
    run_config: dict | None = None,
) -> Any:
    from dagster import AssetKey, materialize

    from pipelines.definitions import all_assets
    from resources.dagster_resources import LabelerResource, Warehouse
    from resources.io_manager import WarehouseIOManager

    resource = Warehouse(path=warehouse)
    assets = all_assets()
    result = materialize(
        assets,
        selection=[AssetKey(k) for k in selection],
        instance=instance,
        partition_key=partition_key,
        run_config=run_config,
        resources={
            "warehouse": resource,
            "io_manager": WarehouseIOManager(warehouse=resource),
            "labeler": LabelerResource(kind="offline", model="offline"),
        },
    )
    assert result.success
    return result


@pytest.fixture(scope="module")
def landed(mirror: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Reference tables, three mirrored benchmarks and their offline labels in a temporary warehouse."""
    from dagster import DagsterInstance

    tmp = tmp_path_factory.mktemp("gaps_e2e")
    (tmp / "raw").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BENCHMAP_RAW_DIR", str(tmp / "raw"))
        patch.setenv("BENCHMAP_OFFLINE", "1")
        patch.setenv("BENCHMAP_LABELER", "offline")
        patch.delenv("OPENAI_API_KEY", raising=False)
        warehouse = str(tmp / "warehouse" / "benchmap.duckdb")
        instance = DagsterInstance.ephemeral()
        instance.add_dynamic_partitions("benchmark", E2E_BENCHMARKS)
        reference = [
            "onet_tasks",
            "onet_occupations",
            "onet_job_titles",
            "onet_technology_skills",
            "oews_wages",
            "occupation_wages",
            "task_hours",
            "task_exposure",
            "workbank_tasks",
            "task_search_index",
        ]
        _materialize(reference, warehouse, instance)
        for name in E2E_BENCHMARKS:
            _materialize(
                [
                    "benchmarks",
                    "benchmark_prompts",
                    "benchmark_results",
                    "benchmark_rejects",
                    "prompt_task_labels",
                    "prompt_work",  # both, as the labeling step makes them: the analysis refuses labels behind
                ],
                warehouse,
                instance,
                partition_key=name,
            )
        yield {"warehouse": warehouse, "instance": instance, "tmp": tmp, "mirror": mirror}


def _labels_in(warehouse: str) -> pl.DataFrame:
    from resources import warehouse as wh

    return wh.read_table(warehouse, "prompt_task_labels")


def test_gap_finder_on_the_mirror(landed: dict[str, Any]) -> None:
    from resources import warehouse as wh

    warehouse = landed["warehouse"]
    result = _materialize(
        ["coverage_gaps", "occupation_gaps", "jobbench_shortlist", "major_group_gaps"],
        warehouse,
        landed["instance"],
    )
    assert all(check.passed for check in result.get_asset_check_evaluations())
    tasks = wh.read_table(warehouse, "onet_tasks")
    gaps_table = wh.read_table(warehouse, "coverage_gaps")
    # independent count: tasks with >= 5 distinct labeled prompts are exactly the ones left out
    labels = _labels_in(warehouse)
    counts = (
        labels.select("benchmark", "prompt_id", "onet_soc_code", "task_id")
        .unique()
        .group_by("onet_soc_code", "task_id")
        .len()
    )
    covered = counts.filter(pl.col("len") >= 5)
    assert covered.height > 0  # the mirrored benchmarks do cover something at 5
    assert gaps_table.height == tasks.height - covered.height
    assert gaps_table.join(covered, on=["onet_soc_code", "task_id"], how="semi").is_empty()
    assert gaps_table["rank"].to_list() == list(range(1, gaps_table.height + 1))
    # the shortlist is every occupation whose WORKBank-rated tasks average a desire above 3
    workbank = (
        wh.read_table(warehouse, "workbank_tasks")
        .join(tasks, on=["onet_soc_code", "task_id"], how="semi")
        .group_by("onet_soc_code", "task_id")
        .agg(pl.col("desire_mean").mean())
        .group_by("onet_soc_code")
        .agg(pl.col("desire_mean").mean())
    )
    expected = set(workbank.filter(pl.col("desire_mean") > 3)["onet_soc_code"])
    shortlist = wh.read_table(warehouse, "jobbench_shortlist")
    assert set(shortlist["onet_soc_code"]) == expected and len(expected) > 10
    assert shortlist["wage_bill"].drop_nulls().is_sorted(descending=True)
    groups = wh.read_table(warehouse, "major_group_gaps")
    assert groups["major_group_code"].n_unique() == 22
    # uncovered hours per group add up to the hours of the gap tasks
    assert groups.unique("major_group_code")["group_uncovered_hours"].sum() == pytest.approx(
        gaps_table["task_annual_hours"].sum(), rel=1e-9
    )


def _candidate_folder(tmp: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    folder = tmp / name
    folder.mkdir()
    (folder / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def test_whatif_on_a_copy_of_a_landed_benchmark_adds_nothing(landed: dict[str, Any]) -> None:
    from models import gaps as gaps_module
    from resources import warehouse as wh
    from resources import whatif

    warehouse, tmp = landed["warehouse"], landed["tmp"]
    source = landed["mirror"] / "benchmarks" / "cybench" / "prompts.jsonl"
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    copy = [{**r, "benchmark": "cybench_copy", "prompt_id": f"copy-{r['prompt_id']}"} for r in rows]
    folder = _candidate_folder(tmp, "cybench_copy", copy)
    # a copy of a landed text keeps its published labels (with the neighbour step on, the labeler alone would
    # not restack it): the copy's labels are the landed ones, prompt for prompt, and none is labeled again
    prompts, _ = whatif.read_candidate_prompts(folder)
    tables = {
        n: wh.read_table(warehouse, n) for n in (*gaps_module.REFERENCE_TABLES, *whatif.INDEX_TABLES)
    }
    labeler = whatif.build_offline_labeler(tables, warehouse)
    asked: list[str] = []
    real_label = labeler.label
    labeler.label = lambda batch: asked.extend(p.prompt_hash for p in batch) or real_label(batch)
    landed_sets = whatif.landed_label_sets(warehouse, prompts["prompt_hash"].to_list(), labeler)
    candidate_labels, failed = gaps_module.label_candidate(prompts, labeler, landed_sets)
    landed_labels = _labels_in(warehouse).filter(pl.col("benchmark") == "cybench")
    key = ["prompt_hash", "onet_soc_code", "task_id", "rank"]
    assert failed == 0 and candidate_labels.height == landed_labels.height > 0 and asked == []
    assert len(landed_sets) == prompts["prompt_hash"].n_unique()
    assert candidate_labels.select(key).sort(key).equals(landed_labels.select(key).sort(key))
    # a text the warehouse has not landed is labeled by the labeler
    edited = prompts.head(3).with_columns((pl.col("prompt") + " Also audit the ledger.").alias("prompt"),
                                          pl.lit("fresh").alias("prompt_hash"))
    assert whatif.landed_label_sets(warehouse, ["fresh"], labeler) == {}
    gaps_module.label_candidate(edited, labeler, landed_sets)
    assert asked == ["fresh"]

    before = whatif.table_fingerprints(warehouse)
    # one multi-asset: the run summary and its four tables materialize together
    selection = ["candidate_benchmark_whatif", *gaps_module.WHATIF_TABLES]
    _materialize(selection, warehouse, landed["instance"])  # no folder configured: a no-op
    assert "candidate_benchmark_whatif" not in whatif.table_fingerprints(warehouse, (), ())
    _materialize(
        selection,
        warehouse,
        landed["instance"],
        run_config={
            "ops": {
                "candidate_benchmark_whatif": {"config": {"candidate_folder": str(folder), "threshold": 1}}
            }
        },
    )
    assert whatif.table_fingerprints(warehouse) == before  # published tables unchanged
    gain = wh.read_table(warehouse, "whatif_marginal_gain")
    by_metric = {r["metric"]: r for r in gain.iter_rows(named=True)}
    for metric in ("tasks_covered", "occupations_covered", "hours_covered", "major_groups_covered"):
        assert by_metric[metric]["gain"] == 0, metric
    assert by_metric["tasks_covered"]["before"] > 0
    assert by_metric["candidate_prompts"]["after"] == len(rows)
    assert by_metric["duplicates_of_landed"]["after"] == len(rows)
    assert by_metric["candidate_prompts_counted"]["after"] == 0
    assert wh.read_table(warehouse, "whatif_newly_covered_tasks").is_empty()
    summary = wh.read_table(warehouse, "candidate_benchmark_whatif").row(0, named=True)
    assert summary["candidate"] == "cybench_copy" and summary["published_tables_unchanged"] is True

    # at a threshold the per-unit estimates do not have, the expected gain is not estimated, and the asset's
    # metadata says so (it read 0.0 expected hours, which a reader takes for "no expected gain")
    result = _materialize(selection, warehouse, landed["instance"], run_config={
        "ops": {"candidate_benchmark_whatif": {"config": {"candidate_folder": str(folder), "threshold": 3}}}})
    summary = wh.read_table(warehouse, "candidate_benchmark_whatif").row(0, named=True)
    assert summary["threshold"] == 3 and summary["expected_hours_newly_covered"] is None
    [event] = [e for e in result.get_asset_materialization_events()
               if e.asset_key.path == ["candidate_benchmark_whatif"]]
    shown = event.materialization.metadata["expected_hours_newly_covered"]
    assert "not estimated" in str(shown.value)
    logged = [record.user_message for record in landed["instance"].all_logs(result.run_id)]
    assert any("what-if at threshold 3: no expected gain" in message for message in logged)


# Proofreaders and Copy Markers: no landed benchmark covers them at the threshold, and their task statements are
# distinctive enough that the synthetic prompts' labels concentrate on them.
TARGET_OCCUPATION = "43-9081.00"


def test_whatif_on_a_synthetic_benchmark_aimed_at_one_uncovered_occupation(
    landed: dict[str, Any], capsys: pytest.CaptureFixture
) -> None:
    from models import gaps as gaps_module
    from models.coverage import task_hour_weights
    from pipelines import whatif as whatif_command
    from resources import warehouse as wh
    from resources import whatif

    warehouse, tmp = landed["warehouse"], landed["tmp"]
    threshold = 3
    tasks = wh.read_table(warehouse, "onet_tasks")
    occupations = wh.read_table(warehouse, "onet_occupations")
    existing = _labels_in(warehouse)
    landed_on_target = (
        existing.filter(pl.col("onet_soc_code") == TARGET_OCCUPATION)
        .select("benchmark", "prompt_id", "task_id")
        .unique()
        .group_by("task_id")
        .len()
    )
    assert (landed_on_target["len"] < threshold).all()  # the occupation is not covered at the threshold
    title = occupations.filter(pl.col("onet_soc_code") == TARGET_OCCUPATION)["title"][0]
    target_tasks = tasks.filter(pl.col("onet_soc_code") == TARGET_OCCUPATION).sort("task_id")
    # workplace framing, as real benchmark prompts have it: the calibrated labeler's work gate reads a benchmark
    # of bare one-line task statements as not occupational work (short texts look like consumer errands)
    templates = [
        "You are one of our {title} at a regional publishing company. Your manager has sent you the following "
        "assignment for this week, with the files attached: {task} Deliver the finished work to the production "
        "editor by Friday and note any issues you find.",
        "Role: {title}. Client engagement for a law firm that is preparing a filing. The assignment: {task} "
        "Document what you changed and why, and return the marked-up files to the client.",
        "As one of the {title} at a book publisher, your assignment today is: {task} Send the finished pages "
        "back to the production editor with your notes.",
    ]
    rows = [
        {
            "benchmark": "pharmacy_bench",
            "prompt_id": f"t{tid}-{i}",
            "prompt": template.format(title=title.lower(), task=task[0].lower() + task[1:]),
        }
        for tid, task in target_tasks.select("task_id", "task").iter_rows()
        for i, template in enumerate(templates)
    ]
    folder = _candidate_folder(tmp, "pharmacy_bench", rows)
    snapshot = whatif.table_fingerprints(warehouse, exclude_prefixes=(), exclude=())

    out = tmp / "whatif_csv"
    assert (
        whatif_command.main(
            [
                str(folder),
                "--threshold",
                str(threshold),
                "--warehouse",
                warehouse,
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "whatif_newly_covered_tasks" in capsys.readouterr().out
    # the command wrote nothing at all to the warehouse
    assert whatif.table_fingerprints(warehouse, exclude_prefixes=(), exclude=()) == snapshot
    newly = pl.read_csv(out / "whatif_newly_covered_tasks.csv")
    gain = {r["metric"]: r for r in pl.read_csv(out / "whatif_marginal_gain.csv").iter_rows(named=True)}

    # what the candidate's labels actually hit, counted independently of the what-if code
    prompts, _ = whatif.read_candidate_prompts(folder)
    tables = {
        n: wh.read_table(warehouse, n) for n in (*gaps_module.REFERENCE_TABLES, *whatif.INDEX_TABLES)
    }
    candidate_labels, _ = gaps_module.label_candidate(
        prompts, whatif.build_offline_labeler(tables, warehouse)
    )
    hits = (
        candidate_labels.select("prompt_id", "onet_soc_code", "task_id")
        .unique()
        .group_by("onet_soc_code", "task_id")
        .len()
    )
    landed_counts = (
        existing.select("benchmark", "prompt_id", "onet_soc_code", "task_id")
        .unique()
        .group_by("onet_soc_code", "task_id")
        .len(name="landed")
    )
    expected = (
        hits.join(landed_counts, on=["onet_soc_code", "task_id"], how="left")
        .with_columns(pl.col("landed").fill_null(0))
        .filter((pl.col("landed") < threshold) & (pl.col("landed") + pl.col("len") >= threshold))
    )
    newly_keys = set(newly.select("onet_soc_code", "task_id").iter_rows())
    assert newly_keys == set(expected.select("onet_soc_code", "task_id").iter_rows())
    # the what-if reports exactly the target occupation's newly covered tasks: those its prompts reach at the
    # threshold, and most of its tasks. The offline labeler keeps up to 20 tasks a prompt, so some labels spill
    # onto neighbouring occupations' tasks; those are reported too (and equal the independent count above),
    # but the target occupation gains the most.
    target_newly = {key for key in newly_keys if key[0] == TARGET_OCCUPATION}
    expected_target = set(expected.filter(pl.col("onet_soc_code") == TARGET_OCCUPATION)
                          .select("onet_soc_code", "task_id").iter_rows())
    assert target_newly == expected_target and len(target_newly) >= target_tasks.height // 2
    spill = pl.DataFrame([key for key in newly_keys if key[0] != TARGET_OCCUPATION],
                         schema=["onet_soc_code", "task_id"], orient="row")
    if spill.height:
        assert spill.group_by("onet_soc_code").len()["len"].max() < len(target_newly)
    occupations_gain = pl.read_csv(out / "whatif_newly_covered_occupations.csv")
    assert TARGET_OCCUPATION in occupations_gain["onet_soc_code"].to_list()
    assert gain["occupations_covered"]["gain"] == occupations_gain.height
    assert gain["tasks_covered"]["gain"] == len(newly_keys)
    hours = task_hour_weights(
        tasks.select("onet_soc_code", "task_id"), wh.read_table(warehouse, "task_hours")
    )
    expected_hours = hours.join(expected, on=["onet_soc_code", "task_id"], how="semi")[
        "task_hours_used"
    ].sum()
    assert gain["hours_covered"]["gain"] == pytest.approx(expected_hours) and expected_hours > 0
    assert gain["candidate_prompts_counted"]["after"] == len(rows)
    closed = pl.read_csv(out / "whatif_gap_rank_changes.csv").filter(pl.col("closed"))
    assert set(closed.select("onet_soc_code", "task_id").iter_rows()) == newly_keys


def test_occupation_score_power_on_the_mirror(landed: dict[str, Any]) -> None:
    from models.scores import occupation_model_scores
    from resources import warehouse as wh

    warehouse = landed["warehouse"]
    _materialize(["occupation_score_power"], warehouse, landed["instance"])
    power = wh.read_table(warehouse, "occupation_score_power")
    results = wh.read_table(warehouse, "benchmark_results")
    scores = occupation_model_scores(results, _labels_in(warehouse), n_boot=50)
    assert power.height == scores.height > 0  # one row per occupation x model x min_prompts
    joined = power.join(
        scores.select("onet_soc_code", "model", "min_prompts", pl.col("n_tasks").alias("k")),
        on=["onet_soc_code", "model", "min_prompts"],
    )
    assert joined.height == power.height and (joined["n_tasks"] == joined["k"]).all()
    rated = power.filter(pl.col("n_tasks") > 0)
    assert rated.height > 0
    assert (rated["projected_ci_width"] <= 0.10 + 1e-12).all()
    assert (rated["meets_target"] == (rated["extra_prompts_per_task"] == 0)).all()
    assert (rated.filter(~pl.col("meets_target"))["analytic_ci_width"] > 0.10).all()
    assert (rated["extra_prompts_total"] == rated["extra_prompts_per_task"] * rated["n_tasks"]).all()
