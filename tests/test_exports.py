"""Exports: tables (Parquet, CSV, XLSX), data dictionary, manifest; figures; summary; coverage-map data; the
Dagster assets; the analyst notebook; and (slow) the whole pipeline on the mirror, then exports.

Most tests run on a small synthetic world: reference, benchmark and label frames built by hand, with every
analysis table computed from them by the real estimators, so the column names are the ones the warehouse holds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import stat
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from assets import module_assets, module_checks
from assets.export_context import EXPORT_DATE_TAG
from models import coverage as cov
from models import exports as ex
from models import figures as fg
from models import gaps, report
from models import indexes as ix
from models import regression as reg
from models import scores as sc
from models import validation as val
from models.benchmarks import BENCHMARKS_SCHEMA, PROMPTS_SCHEMA
from models.coverage_map import NO_COVERAGE_COLOUR, colour_for, occupation_shares
from models.data_dictionary import DATA_DICTIONARY, undocumented_columns
from models.scores_estimated import estimated_occupation_scores
from resources import export_writer as ew
from resources import warehouse as wh
from resources.coverage_map_queries import (
    build_coverage_map,
    build_coverage_map_from_warehouse,
    coverage_map_data,
    coverage_map_data_from_connection,
)
from resources.sources import source_checksums

PROJECT_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = PROJECT_ROOT / "notebooks" / "analyst.ipynb"

GROUPS = ["11", "13", "15", "29", "43", "47"]
BENCHMARKS = ["gdpval", "swe_lancer", "webarena"]
AI_MODELS = ["model-a", "model-b", "model-c"]
LABELER = "offline"
LABELER_VERSION = "tfidf-hybrid+v1"


# --- the synthetic world -----------------------------------------------------------------------------------


def regressions_table(models: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """coverage_regressions as assets/analysis.py stacks it: coefficients, contrasts and sample sizes."""
    return pl.concat(
        [
            models["coefficients"].with_columns(pl.lit("coefficients").alias("table")),
            models["contrasts"].with_columns(pl.lit("contrasts").alias("table")),
            models["samples"].with_columns(pl.lit("sample").alias("table")),
        ],
        how="diagonal_relaxed",
    )


def build_world(seed: int = 0) -> dict[str, pl.DataFrame]:
    """30 occupations in 6 SOC major groups with 8 tasks each; 3 benchmarks x 100 prompts, each labeled with 2
    tasks of a 'home' occupation (a quarter of GDPval's human-labeled prompts deliberately mislabeled); 3 AI
    models scored on two benchmarks; then every analysis table by the real estimators."""
    rng = np.random.default_rng(seed)
    occ_rows, task_rows, hour_rows, exposure_rows, wage_rows, workbank_rows = [], [], [], [], [], []
    task_id = 1000
    for g in GROUPS:
        for i in range(5):
            code = f"{g}-{1011 + 10 * i:04d}.00"
            title = f"Occupation {code[:7]}"
            occ_rows.append(
                {
                    "onet_soc_code": code,
                    "title": title,
                    "soc_code": code[:7],
                    "major_group_code": f"{g}-0000",
                    "major_group_title": cov.SOC_MAJOR_GROUPS[f"{g}-0000"],
                    "has_tasks": True,
                }
            )
            employment = float(rng.integers(10_000, 1_000_000))
            wage = float(rng.integers(30_000, 150_000))
            no_hours = g == "47" and i == 4  # one occupation without OEWS data
            wage_rows.append(
                {
                    "onet_soc_code": code,
                    "employment": None if no_hours else employment,
                    "annual_mean_wage": None if no_hours else wage,
                    "wage_bill": None if no_hours else employment * wage,
                }
            )
            pis = rng.dirichlet(np.ones(8))
            for k in range(8):
                task_id += 1
                importance = None if rng.random() < 0.2 else float(rng.integers(1, 6))
                task_rows.append(
                    {
                        "onet_soc_code": code,
                        "task_id": task_id,
                        "task": f"Task {task_id}: do part {k} of the work of {title}",
                        "importance": importance,
                        "has_ratings": importance is not None,
                        "is_core": k < 5,
                    }
                )
                hour_rows.append(
                    {
                        "onet_soc_code": code,
                        "task_id": task_id,
                        "pi": float(pis[k]),
                        "pi_is_fallback": False,
                        "occupation_annual_hours": None if no_hours else employment * 2000.0,
                        "task_annual_hours": None if no_hours else employment * 2000.0 * float(pis[k]),
                    }
                )
                human = str(rng.choice(["E0", "E1", "E2"]))
                exposure_rows.append(
                    {
                        "onet_soc_code": code,
                        "task_id": task_id,
                        "human_exposure": human,
                        "exposed": human != "E0",
                        "gpt4_exposed": bool(rng.random() < 0.5),
                    }
                )
                if rng.random() < 0.6:
                    workbank_rows.append(
                        {
                            "task_id": task_id,
                            "onet_soc_code": code,
                            "occupation_title": title,
                            "task": f"Task {task_id}",
                            "desire_mean": float(rng.uniform(1, 5)),
                            "capability_mean": float(rng.uniform(1, 5)),
                            "zone": str(
                                rng.choice(["green_light", "red_light", "rnd_opportunity", "low_priority"])
                            ),
                        }
                    )
    occupations = pl.DataFrame(occ_rows)
    tasks = pl.DataFrame(task_rows)
    task_hours = pl.DataFrame(
        hour_rows, schema_overrides={"occupation_annual_hours": pl.Float64, "task_annual_hours": pl.Float64}
    )
    exposure = pl.DataFrame(exposure_rows)
    wages = pl.DataFrame(
        wage_rows,
        schema_overrides={"employment": pl.Float64, "annual_mean_wage": pl.Float64, "wage_bill": pl.Float64},
    )
    workbank = pl.DataFrame(workbank_rows)

    exposed = {(c, t): e for c, t, e in exposure.select("onet_soc_code", "task_id", "exposed").iter_rows()}
    codes = occupations["onet_soc_code"].to_list()
    titles = dict(occupations.select("onet_soc_code", "title").iter_rows())
    by_occ = {c: tasks.filter(pl.col("onet_soc_code") == c)["task_id"].to_list() for c in codes}
    home_weights = np.array([4.0 if c[:2] in ("13", "15", "43") else 0.6 for c in codes])
    home_weights /= home_weights.sum()
    prompt_rows, label_rows = [], []
    for bench in BENCHMARKS:
        for p in range(100):
            home = codes[int(rng.choice(len(codes), p=home_weights))]
            text = (
                f"{bench} prompt {p}: help the {titles[home].lower()} with the </script> & <b>usual</b> work"
            )
            prompt_id = f"{bench}-{p:03d}"
            gold = bench == "gdpval" and p < 40
            digest = hashlib.sha256(text.encode()).hexdigest()
            prompt_rows.append(
                {
                    "benchmark": bench,
                    "prompt_id": prompt_id,
                    "prompt": text,
                    "prompt_hash": digest,
                    "occupation": titles[home] if gold else None,
                    "onet_soc_code": None,
                    "onet_task_id": None,
                    "onet_task": None,
                }
            )
            labeled = codes[(codes.index(home) + 7) % len(codes)] if gold and p % 4 == 0 else home
            weights = np.array([3.0 if exposed[(labeled, t)] else 1.0 for t in by_occ[labeled]])
            picked = rng.choice(by_occ[labeled], size=2, replace=False, p=weights / weights.sum())
            for rank, t in enumerate(picked, start=1):
                label_rows.append(
                    {
                        "benchmark": bench,
                        "prompt_id": prompt_id,
                        "prompt_hash": digest,
                        "onet_soc_code": labeled,
                        "task_id": int(t),
                        "labeler": LABELER,
                        "labeler_version": LABELER_VERSION,
                        "rank": rank,
                        "score": 1.0 / rank,
                        "rationale": None,
                    }
                )
    prompts = pl.DataFrame(
        prompt_rows,
        schema_overrides={c: PROMPTS_SCHEMA[c] for c in ("occupation", "onet_soc_code", "onet_task_id", "onet_task")},
    )
    labels = pl.DataFrame(label_rows, schema_overrides={"rationale": pl.Utf8})
    scored_prompts = prompts.filter(pl.col("benchmark") != "webarena").select("benchmark", "prompt_id")
    results = pl.DataFrame(
        [
            {"benchmark": b, "prompt_id": pid, "model": m, "score": float(rng.random() < 0.3 + 0.2 * j)}
            for b, pid in scored_prompts.iter_rows()
            for j, m in enumerate(AI_MODELS)
        ]
    )
    benchmarks = pl.DataFrame(
        [
            {
                "benchmark": b,
                "title": b.replace("_", " ").title(),
                "version": f"v{i + 1}",
                "source_url": f"https://example.org/{b}",
                "license": "MIT",
                "agentic": b != "gdpval",
                "public_items": 100,
                "saturated": False,
                "target_major_group": None,
                "n_prompts": 100,
                "n_results": 300 if b != "webarena" else 0,
                "n_rejects": 0,
                "content_hash": hashlib.sha256(b.encode()).hexdigest(),
                "first_seen": None,
                "last_changed": None,
                "metadata_warnings": None,
                "landing_origin": "mirror",
                "landing_path": f"/somewhere/{b}",
            }
            for i, b in enumerate(BENCHMARKS)
        ],
        schema=BENCHMARKS_SCHEMA,
    )

    task_cov = cov.task_coverage(cov.label_counts(labels), tasks)
    occ_cov = cov.occupation_coverage(task_cov, task_hours, occupations)
    # the task frame and the models as assets/analysis.py builds them
    task_frame = reg.build_task_frame(task_cov, tasks, exposure, wages, workbank).join(
        task_hours.select("onet_soc_code", "task_id", "pi", "pi_is_fallback", "task_annual_hours"),
        on=["onet_soc_code", "task_id"],
        how="left",
    )
    models = reg.run_coverage_models(task_frame)
    validation, _ = val.validate_labels(labels, prompts, occupations, tasks, n_boot=200)
    scored = gaps.score_tasks(
        gaps.gap_task_frame(
            cov.task_coverage(cov.label_counts(labels), tasks, [5]), tasks, task_hours, exposure, wages, workbank, occupations
        )
    )
    # a second labeler on the same prompts (for labeler_agreement only: coverage uses one labeler)
    other = labels.with_columns(
        pl.lit("openai").alias("labeler"),
        pl.lit("gpt-4o-mini+t3").alias("labeler_version"),
        pl.when(pl.col("rank") == 2)
        .then(pl.col("task_id") + 1)
        .otherwise(pl.col("task_id"))
        .alias("task_id"),
    )
    agreement = val.labeler_agreement(
        pl.concat([labels, other]), prompts.select("benchmark", "prompt_hash"), n_boot=200
    )
    return {
        "onet_occupations": occupations,
        "onet_tasks": tasks,
        "task_hours": task_hours,
        "task_exposure": exposure,
        "occupation_wages": wages,
        "workbank_tasks": workbank,
        "benchmark_prompts": prompts,
        "prompt_task_labels": labels,
        # every prompt labeled (its work decision): the labels are of the current prompts (assets/release_gate.py)
        "prompt_work": labels.select("benchmark", "prompt_id", "prompt_hash", "labeler", "labeler_version").unique()
        .with_columns(pl.lit(True).alias("is_work"), pl.lit(None, pl.Float64).alias("p_work")),
        "benchmark_results": results,
        "benchmarks": benchmarks,
        "task_coverage": task_cov,
        "occupation_coverage": occ_cov,
        "major_group_coverage": cov.major_group_coverage(occ_cov, occupations, wages),
        "coverage_headline": cov.coverage_headline(cov.label_counts(labels), tasks, task_hours, occupations),
        "coverage_regressions": regressions_table(models),
        "task_analysis_frame": task_frame,
        "coverage_adjusted_probabilities": models["adjusted_probabilities"].with_columns(
            pl.lit("human").alias("exposure_source")
        ),
        "workbank_coverage": models["workbank_zone_coverage"],
        "occupation_model_scores": sc.occupation_model_scores(results, labels, n_boot=200),
        # each labeled text exercises its labels' occupations with probability 0.8 (a stand-in for the estimates)
        "occupation_model_scores_estimated": estimated_occupation_scores(
            results, prompts, labels.select("benchmark", "prompt_hash", "onet_soc_code").unique()
            .with_columns(pl.lit(0.8).alias("p")), n_draws=20),
        "coverage_sensitivity": cov.coverage_sensitivity(
            cov.label_counts(labels), tasks, task_hours, occupations, exposure, wages, workbank
        ),
        "labeler_validation": validation,
        "labeler_agreement": agreement,
        "coverage_gaps": gaps.coverage_gaps(scored, 5),
        "occupation_gaps": gaps.with_expected_columns(gaps.occupation_gaps(scored, 5)),
        "major_group_gaps": gaps.major_group_gaps(scored, None, 5),
        "jobbench_shortlist": gaps.jobbench_shortlist(scored, 5),
        # the built-in `all` index (every benchmark); tests/test_indexes.py covers the shipped indexes
        "benchmark_index_membership": ix.evaluate_indexes({}, ix.measured_properties(benchmarks)).membership,
        **simulated_estimates(seed),
    }


def simulated_estimates(seed: int = 0) -> dict[str, pl.DataFrame]:
    """headline_estimates and the per-unit tables from the estimators' own simulation (models/estimates):
    published rows with intervals, computed rather than typed (the world's labels carry no p_exercised to run
    them on)."""
    from models import estimates as es

    sim = es.simulate(np.random.default_rng(12 + seed))
    scopes = es.scopes_for(sim.problem)
    draws = es.UnitDraws(sim.problem, scopes, 20)
    headline = es.estimates_frame(sim.problem, scopes, es.run_estimators(sim.problem, scopes, n_draws=20,
                                                                         unit_draws=draws))
    units = es.unit_estimates(draws, es.labels_as_truth_counts(sim.problem), es.THRESHOLDS)
    return {"headline_estimates": headline, "occupation_estimates": units["occupation_estimates"],
            "major_group_estimates": units["major_group_estimates"]}


@pytest.fixture(scope="module")
def world() -> dict[str, pl.DataFrame]:
    return build_world()


def export_tables(world: dict[str, pl.DataFrame], drop: tuple[str, ...] = ()) -> dict[str, pl.DataFrame]:
    return {t: world[t] for t in ex.REPORT_TABLES if t in world and t not in drop}


def write(world: dict[str, pl.DataFrame], directory: Path, **kwargs) -> ew.ExportResult:
    defaults = {
        "run_id": "run-1",
        "benchmarks": world["benchmarks"],
        "sources": [],
        "version": "test-version",
        "labelers": ex.labeler_entries(world["prompt_task_labels"]),
        "labeler_model": "offline",
    }
    return ew.write_exports(
        kwargs.pop("tables", None) or export_tables(world), directory, **(defaults | kwargs)
    )


def fill_warehouse(world: dict[str, pl.DataFrame], path: Path) -> None:
    for name, frame in world.items():
        wh.replace_table(path, name, frame)


# --- the data dictionary --------------------------------------------------------------------------------------


def test_world_has_every_export_table(world):
    assert [t for t in ex.REPORT_TABLES if t not in world] == []
    assert all(world[t].height > 0 for t in ex.REPORT_TABLES)


def test_every_exported_column_is_documented(world):
    prepared = {t: ex.prepare_table(t, world[t]) for t in ex.REPORT_TABLES}
    assert undocumented_columns({t: f.columns for t, f in prepared.items()}) == {}
    for table, frame in prepared.items():
        for column in frame.columns:
            meaning, unit, source = DATA_DICTIONARY[table][column]
            assert meaning and unit and source, (table, column)
    # an unknown column is reported, not passed
    assert undocumented_columns({"task_coverage": ["task_id", "mystery"]}) == {"task_coverage": ["mystery"]}


def test_dictionary_names_the_values_the_tables_hold(world):
    """The entries that list a column's values name every value the code writes (coverage_sensitivity once
    left out its label_depth rows; labeler_validation's labeler said 'offline' or 'openai' beside rows of four
    other names), and none describes an empty text, which the files hold as null (prepare_table)."""
    from assets.label_validation import CANDIDATE_STACK_LABELER, STACK_LABELERS
    from models.reference_labels import CEILING_LABELER

    def named(table: str, column: str, values: set[str]) -> list[str]:
        meaning = DATA_DICTIONARY[table][column][0]
        return sorted(v for v in values if not re.search(rf"(?<!\w){re.escape(v)}(?!\w)", meaning))

    dimensions = set(world["coverage_sensitivity"]["dimension"].unique().to_list())
    assert "label_depth" in dimensions
    assert named("coverage_sensitivity", "dimension", dimensions) == []
    labelers = {*STACK_LABELERS.values(), CANDIDATE_STACK_LABELER, CEILING_LABELER, "offline", "openai"}
    assert named("labeler_validation", "labeler", labelers) == []
    quoted_empty = [(t, c) for t, cols in DATA_DICTIONARY.items() for c, (meaning, _, _) in cols.items()
                    if "''" in meaning]
    assert quoted_empty == []


def test_timestamps_and_paths_are_not_exported(world):
    prepared = ex.prepare_table("benchmarks", world["benchmarks"])
    assert not {"first_seen", "last_changed", "landing_path", "landing_origin"} & set(prepared.columns)
    assert "content_hash" in prepared.columns


# --- row order, sheet names, nested cells ----------------------------------------------------------------------


def test_canonical_order_is_independent_of_input_order(world):
    headline = world["coverage_headline"]
    a = ex.canonical_order("coverage_headline", headline)
    b = ex.canonical_order("coverage_headline", headline.sample(fraction=1.0, shuffle=True, seed=3))
    assert a.equals(b)
    n_pooled = headline.filter(pl.col("scope") == "all").height
    assert a["scope"].head(n_pooled).to_list() == ["all"] * n_pooled  # pooled rows first
    rest = a["scope"].slice(n_pooled).to_list()
    assert rest == sorted(rest)


def test_sheet_names_are_short_unique_and_valid():
    names = ex.sheet_names(
        [
            "coverage_adjusted_probabilities",
            "coverage_adjusted_probabilities_by_benchmark",
            "a/b:c",
            "README",
            "readme_table",
        ],
        reserved=("README",),
    )
    assert names["coverage_adjusted_probabilities"] == "coverage_adjusted_probabilities"  # exactly 31
    assert all(len(n) <= 31 for n in names.values())
    assert len({n.lower() for n in names.values()} | {"readme"}) == len(names) + 1
    assert names["a/b:c"] == "a_b_c"
    assert names["README"] != "README"


def test_nested_cells_become_json_text():
    frame = pl.DataFrame({"k": [2, 1], "codes": [["15-1252", "13-2011"], []]})
    out = ex.prepare_table("whatever", frame)
    assert out.schema["codes"] == pl.Utf8
    assert out.to_dicts() == [{"k": 1, "codes": "[]"}, {"k": 2, "codes": '["15-1252", "13-2011"]'}]


# --- the export folder -------------------------------------------------------------------------------------------


def test_export_is_deterministic(world, tmp_path):
    first = write(world, tmp_path / "a")
    shuffled = {t: f.sample(fraction=1.0, shuffle=True, seed=7) for t, f in export_tables(world).items()}
    second = write(world, tmp_path / "b", tables=shuffled, run_id="run-2")
    again = write(world, tmp_path / "a", run_id="run-3")  # re-run into the same folder
    assert [f.table for f in first.tables] == [f.table for f in second.tables] == list(ex.REPORT_TABLES)
    for a, b, c in zip(first.tables, second.tables, again.tables, strict=True):
        assert pl.read_parquet(b.parquet).equals(
            pl.read_parquet(tmp_path / "a" / "tables" / f"{a.table}.parquet")
        )
        assert a.parquet.read_bytes() == b.parquet.read_bytes(), a.table
        assert a.csv.read_bytes() == b.csv.read_bytes(), a.table
        assert (
            (a.parquet_sha256, a.csv_sha256)
            == (b.parquet_sha256, b.csv_sha256)
            == (c.parquet_sha256, c.csv_sha256)
        )
    assert first.manifest["tables"] == again.manifest["tables"]


def test_export_folder_contents(world, tmp_path):
    result = write(world, tmp_path / "2030-01-31")
    folder = result.directory
    for name in ex.REPORT_TABLES:
        expected = ex.prepare_table(name, world[name])
        assert pl.read_parquet(folder / "tables" / f"{name}.parquet").equals(expected), name
        csv = pl.read_csv(folder / "tables" / f"{name}.csv", infer_schema_length=0)
        assert csv.columns == expected.columns and csv.height == expected.height == world[name].height

    # workbook: README, dictionary, one sheet per table but the per-task/per-text ones (files only, named in the
    # README with their row counts), names <= 31 characters, same rows and numbers
    from openpyxl import load_workbook

    book = load_workbook(result.workbook, read_only=True)
    sheets = {f.table: f.sheet for f in result.tables}
    with_sheet = [t for t in ex.REPORT_TABLES if t not in ex.FILE_ONLY_TABLES]
    assert book.sheetnames == ["README", "data_dictionary", *[sheets[t] for t in with_sheet]]
    assert "task_coverage" in ex.FILE_ONLY_TABLES and sheets["task_coverage"] is None
    assert all(sheets[t] is None for t in ex.FILE_ONLY_TABLES if t in sheets)
    assert all(len(s) <= 31 for s in book.sheetnames)
    book.close()
    readme = dict(pl.read_excel(result.workbook, sheet_name="README").iter_rows())
    assert readme["task_coverage (no sheet)"] == (
        f"{world['task_coverage'].height:,} rows (a row per task or per prompt text): "
        "tables/task_coverage.parquet and tables/task_coverage.csv")
    assert not any(k.endswith("(no sheet)") for k in readme if k.split(" ")[0] not in ex.FILE_ONLY_TABLES)
    headline = pl.read_excel(result.workbook, sheet_name=sheets["coverage_headline"])
    expected = ex.prepare_table("coverage_headline", world["coverage_headline"])
    assert headline.height == expected.height
    assert np.allclose(headline["numerator"].to_numpy(), expected["numerator"].to_numpy())
    assert headline["scope"].to_list() == expected["scope"].to_list()
    dictionary_sheet = pl.read_excel(result.workbook, sheet_name="data_dictionary")
    assert (
        dictionary_sheet.height == sum(world[t].width for t in ex.REPORT_TABLES) - 4
    )  # 4 benchmark cols dropped

    # data dictionary: every column of every table, none undocumented
    text = result.dictionary.read_text()
    assert "UNDOCUMENTED" not in text
    for name in ex.REPORT_TABLES:
        assert f"## {name}" in text
        for column in ex.prepare_table(name, world[name]).columns:
            meaning = DATA_DICTIONARY[name][column][0]
            assert f"| `{column}` |" in text and meaning.replace("|", "\\|") in text, (name, column)

    # manifest
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["run_id"] == "run-1" and manifest["code_version"] == "test-version"
    assert manifest["export_date"] == "2030-01-31"
    assert [b["content_hash"] for b in manifest["benchmarks"]] == world["benchmarks"][
        "content_hash"
    ].to_list()
    assert [b["version"] for b in manifest["benchmarks"]] == ["v1", "v2", "v3"]
    assert manifest["labeler"] == {
        "model": "offline",
        "labelers": [
            {
                "labeler": LABELER,
                "labeler_version": LABELER_VERSION,
                "n_labels": 600,
                "n_prompts": 300,
                "n_benchmarks": 3,
            }
        ],
    }
    assert manifest["missing_tables"] == [] and manifest["undocumented_columns"] == {}
    listed = {f["path"]: f["sha256"] for f in manifest["files"]}
    assert {
        "benchmap_tables.xlsx",
        "data_dictionary.md",
        "tables/task_coverage.parquet",
        "tables/task_coverage.csv",
    } <= set(listed)
    assert (
        listed["tables/task_coverage.csv"]
        == hashlib.sha256((folder / "tables" / "task_coverage.csv").read_bytes()).hexdigest()
    )
    by_table = {t["table"]: t for t in manifest["tables"]}
    assert by_table["task_coverage"]["rows"] == 240 and by_table["task_coverage"]["sheet"] is None
    assert by_table["occupation_coverage"]["sheet"] == "occupation_coverage"
    assert ew.verify_export(folder) == []
    assert stat.S_IMODE((folder / "tables" / "task_coverage.parquet").stat().st_mode) == 0o644

    # a file changed after export is caught
    (folder / "tables" / "workbank_coverage.csv").write_text("tampered\n")
    assert ew.verify_export(folder) == ["tables/workbank_coverage.csv changed after the manifest was written"]


def test_missing_tables_are_listed_not_skipped(world, tmp_path):
    result = write(
        world, tmp_path / "x", tables=export_tables(world, drop=("labeler_agreement", "coverage_gaps"))
    )
    assert result.missing_tables == ["labeler_agreement", "coverage_gaps"]
    assert result.missing_required == [] and ew.verify_export(result.directory) == []
    assert "`labeler_agreement`" in result.dictionary.read_text()
    result = write(world, tmp_path / "y", tables=export_tables(world, drop=("coverage_headline",)))
    assert result.missing_required == ["coverage_headline"]
    assert ew.verify_export(result.directory) == ["required tables not exported: ['coverage_headline']"]
    # a table exported earlier into the same folder but missing now does not linger
    write(world, tmp_path / "z")
    write(world, tmp_path / "z", tables=export_tables(world, drop=("coverage_gaps",)))
    assert not (tmp_path / "z" / "tables" / "coverage_gaps.parquet").exists()


def test_manifest_problems_from_plain_values():
    """The checks of verify_export on values alone: a missing file, a changed one, a Parquet row count that
    disagrees, undocumented columns, a missing required table; no manifest at all."""
    manifest = {
        "files": [{"path": "a.csv", "sha256": "1"}, {"path": "b.csv", "sha256": "2"}, {"path": "c.csv", "sha256": "3"}],
        "tables": [{"table": "t", "parquet": "tables/t.parquet", "rows": 5},
                   {"table": "u", "parquet": "tables/u.parquet", "rows": 2}],
        "undocumented_columns": {"t": ["mystery"]},
        "missing_tables": ["coverage_gaps", "coverage_headline"],
        "expected_tables": ["t", "u", "v", "coverage_gaps", "coverage_headline"],
    }
    problems = ex.manifest_problems(
        manifest, {"a.csv": "1", "b.csv": None, "c.csv": "x"}, {"tables/t.parquet": 4, "tables/u.parquet": None},
        on_disk=["a.csv", "c.csv", "d.csv"],
    )
    assert problems == [
        "1 file(s) in the folder are not in the manifest: d.csv",
        "b.csv is listed in the manifest but missing",
        "c.csv changed after the manifest was written",
        "t: parquet has 4 rows, manifest says 5",
        "t: undocumented columns ['mystery']",
        "required tables not exported: ['coverage_headline']",
        "expected tables neither exported nor listed as missing: ['v']",
    ]
    assert ex.manifest_problems(None, {}, {}, folder="x/2030-01-01") == ["no manifest.json in x/2030-01-01"]
    assert ew.verify_export(Path("/nonexistent/2030-01-01")) == ["no manifest.json in /nonexistent/2030-01-01"]


def test_source_checksums_hash_local_files_without_downloading(tmp_path, monkeypatch):
    raw = tmp_path / "raw"
    (raw / "onet").mkdir(parents=True)
    (raw / "onet" / "Occupation Data.txt").write_bytes(b"O*NET-SOC Code\tTitle\n")
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(raw))
    monkeypatch.setenv("BENCHMAP_MIRROR", str(tmp_path / "no_mirror"))
    monkeypatch.setenv("BENCHMAP_OFFLINE", "1")
    entries = {e["source_file"]: e for e in source_checksums()}
    found = entries["onet/Occupation Data.txt"]
    assert found["status"] == "present" and found["origin"] == "raw"
    assert found["sha256"] == hashlib.sha256(b"O*NET-SOC Code\tTitle\n").hexdigest()
    assert found["version"].startswith("O*NET")
    assert entries["onet/Task Statements.txt"]["status"] == "not present"
    assert not (raw / "onet" / "Task Statements.txt").exists()


def test_code_version_names_git_or_package():
    assert re.match(r"^(git|package|pyproject):\S+", ew.code_version())


def test_a_dirty_checkout_names_its_diff(tmp_path):
    """Two releases from different uncommitted code must not carry the same code version (two releases of
    2026-12-05 both said b37d713-dirty with different headlines): a dirty checkout's version ends in its diff's
    hash, and a clean one has none."""
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("commit", "-qm", "one")
    clean = ew.code_version(tmp_path)
    assert re.fullmatch(r"git:[0-9a-f]{7,}", clean), clean
    (tmp_path / "a.py").write_text("x = 2\n")
    first = ew.code_version(tmp_path)
    (tmp_path / "a.py").write_text("x = 3\n")
    second = ew.code_version(tmp_path)
    assert re.fullmatch(re.escape(clean) + r"-dirty\+[0-9a-f]{8}", first), first
    assert second != first and second.startswith(clean + "-dirty+")
    (tmp_path / "a.py").write_text("x = 2\n")
    assert ew.code_version(tmp_path) == first  # the same diff, the same version
    # an untracked module of the code (an audit: a new file in models/ left the version clean); not a test's
    git("checkout", "-q", "a.py")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_new.py").write_text("y = 1\n")
    assert ew.code_version(tmp_path) == clean
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "new.py").write_text("y = 1\n")
    untracked = ew.code_version(tmp_path)
    assert re.fullmatch(re.escape(clean) + r"-untracked\+[0-9a-f]{8}", untracked), untracked
    (tmp_path / "models" / "new.py").write_text("y = 2\n")
    assert ew.code_version(tmp_path) not in (untracked, clean)


def test_the_manifest_records_the_runtime_that_made_the_release():
    """An audit: nothing is pinned and the manifest named no library version, so an upgrade that moved a figure
    would publish a change under the same inputs and code version with nothing to explain it."""
    import importlib.metadata
    import platform

    versions = ew.runtime_versions()
    assert versions["python"] == platform.python_version()
    assert versions["packages"]["polars"] == importlib.metadata.version("polars")
    assert set(ew.RECORDED_PACKAGES) == set(versions["packages"])


# --- figures -------------------------------------------------------------------------------------------------------


def test_wage_bill_figure_draws_both_exposure_curves_with_bands(world):
    probs = world["coverage_adjusted_probabilities"]
    fig = fg.wage_bill_probability_figure(probs)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["LLM-exposed tasks (E1/E2)", "Not exposed (E0)"]
    exposed = probs.filter((pl.col("model") == "exposure_wage") & (pl.col("exposed") == 1)).sort("wage_bill")
    assert np.allclose(lines[0].get_xdata(), exposed["wage_bill"].to_numpy())
    assert np.allclose(lines[0].get_ydata(), exposed["prob"].to_numpy())
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2
    band = bands[0].get_paths()[0].vertices
    assert np.isclose(band[:, 1].max(), exposed["ci_high"].max()) and np.isclose(
        band[:, 1].min(), exposed["ci_low"].min()
    )


def test_importance_figure_has_error_bars_per_quintile_and_exposure(world):
    probs = world["coverage_adjusted_probabilities"]
    fig = fg.importance_quintile_figure(probs)
    containers = fig.axes[0].containers
    rows = probs.filter(pl.col("model") == "importance_fe")
    assert len(containers) == rows["exposed"].n_unique() == 2
    exposed = rows.filter(pl.col("exposed") == 1).sort("importance_quintile")
    x, y = containers[0].lines[0].get_data()
    assert np.allclose(y, exposed["prob"].to_numpy())
    assert np.allclose(np.round(x), exposed["importance_quintile"].to_numpy())


def test_figures_say_why_a_model_is_missing():
    not_estimated = reg.not_estimated(
        "importance_fe", "f", "Not estimated: only 1 occupation cluster(s)"
    ).probabilities
    fig = fg.importance_quintile_figure(not_estimated)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any("only 1 occupation cluster" in t for t in texts)
    assert fg.wage_bill_probability_figure(pl.DataFrame({"x": [1]})).axes[0].texts


def test_major_group_figure_bars_match_the_table(world):
    groups = world["major_group_coverage"]
    ax = fg.major_group_figure(groups).axes[0]
    assert len(ax.patches) == 22 * 3  # all occupations, covered at >= 1, covered at >= 5
    ordered = groups.sort("major_group_code", descending=True)
    widths = [p.get_width() for p in ax.patches]
    assert widths[:22] == ordered["n_occupations"].cast(pl.Float64).to_list()
    assert widths[22:44] == ordered["occupations_covered_1"].cast(pl.Float64).to_list()
    assert widths[44:] == ordered["occupations_covered_5"].cast(pl.Float64).to_list()


def test_hours_by_coverage_level_by_hand():
    occ = pl.DataFrame(
        {
            "onet_soc_code": ["15-1252.00", "15-1253.00", "43-4051.00", "43-9061.00"],
            "occupation_annual_hours": [1000.0, 3000.0, 4000.0, None],
            "hours_share_covered_1": [0.5, 0.1, 0.0, 1.0],
            "hours_share_covered_5": [0.2, 0.0, 0.0, 1.0],
        }
    )
    levels = fg.hours_by_coverage_level(occ)
    got = {(g, lv): h for g, lv, h in levels.select("major_group_code", "level", "hours").iter_rows()}
    assert got[("15-0000", "high")] == pytest.approx(200)
    assert got[("15-0000", "low")] == pytest.approx(300 + 300)
    assert got[("15-0000", "no_coverage")] == pytest.approx(500 + 2700)
    assert got[("all", "no_coverage")] == pytest.approx(3200 + 4000)
    shares = dict(levels.filter(pl.col("major_group_code") == "all").select("level", "share").iter_rows())
    assert shares == pytest.approx({"high": 200 / 8000, "low": 600 / 8000, "no_coverage": 7200 / 8000})
    assert levels.filter(pl.col("level") == "low")["level_label"][0] == "1-4 prompts"
    ax = fg.hours_by_coverage_figure(occ).axes[0]
    assert len(ax.patches) == 3 * 3  # all + 2 groups, 3 levels
    assert ax.patches[0].get_width() == pytest.approx(200 / 8000)


def test_labeler_validation_figure(world):
    validation = pl.concat(
        [
            world["labeler_validation"],
            world["labeler_validation"].with_columns(
                pl.lit("openai").alias("labeler"),
                pl.lit("gpt-4o-mini+t3").alias("labeler_version"),
                (pl.col("value") * 0.5).alias("value"),
                (pl.col("ci_low") * 0.5).alias("ci_low"),
            ),
        ]
    )
    fig = fg.labeler_validation_figure(validation)
    metrics = validation["metric"].unique().sort().to_list()
    assert len(fig.axes) == len(metrics) == 2
    first = fig.axes[0]
    assert len(first.containers) == 2  # one error-bar series per labeler
    xs = sorted(float(c.lines[0].get_xdata()[0]) for c in first.containers)
    top1 = validation.filter(pl.col("metric") == "occupation_top1")["value"].sort().to_list()
    assert xs == pytest.approx(top1)
    assert top1[1] == pytest.approx(0.75)  # a quarter of the gold prompts were mislabeled on purpose


def test_model_score_heatmap(world):
    scores = world["occupation_model_scores"]
    fig = fg.model_score_heatmap_figure(scores, world["onet_occupations"], min_prompts=5)
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 2
    plain, weighted = (np.ma.getdata(ax.images[0].get_array()) for ax in panels)
    chosen = scores.filter(pl.col("min_prompts") == 5)
    occs = sorted(chosen["onet_soc_code"].unique().to_list())
    assert plain.shape == (len(occs), len(AI_MODELS))
    row = chosen.filter((pl.col("onet_soc_code") == occs[0]) & (pl.col("model") == "model-b")).row(
        0, named=True
    )
    assert plain[0, 1] == pytest.approx(row["plain_mean"])
    if row["weighted_mean"] is None:
        assert np.ma.is_masked(panels[1].images[0].get_array()[0, 1])
    else:
        assert weighted[0, 1] == pytest.approx(row["weighted_mean"])
    labels = [t.get_text() for t in panels[0].get_yticklabels()]
    assert labels[0].startswith(occs[0]) and "Occupation" in labels[0]


def test_render_figures_and_saving(world, tmp_path):
    drawn = fg.render_figures({**world, "occupations": world["onet_occupations"]})
    assert list(drawn) == [spec.name for spec in fg.FIGURES]
    assert all(isinstance(f, Figure) for f in drawn.values())
    assert list(fg.render_figures({"major_group_coverage": world["major_group_coverage"]})) == [
        "occupations_by_major_group"
    ]
    fig = drawn["coverage_by_wage_bill"]
    first = ew.save_figure(fig, tmp_path / "one", "wage")
    # drawing the same tables again gives byte-identical files (fixed SVG hash salt, no dates)
    redrawn = fg.render_figures({"coverage_adjusted_probabilities": world["coverage_adjusted_probabilities"]})
    second = ew.save_figure(redrawn["coverage_by_wage_bill"], tmp_path / "two", "wage")
    assert first["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert first["svg"].read_text().lstrip().startswith("<?xml")
    assert "<dc:date>" not in first["svg"].read_text()
    assert first["svg"].read_bytes() == second["svg"].read_bytes()
    assert first["png"].read_bytes() == second["png"].read_bytes()
    # the files are exactly models.figures' bytes (rendered without touching the disk) of a fresh drawing (a
    # figure saved twice may differ: its layout is recomputed on each save)
    fresh = fg.render_figures({"coverage_adjusted_probabilities": world["coverage_adjusted_probabilities"]})
    rendered = fg.render_figure_files({"wage": fresh["coverage_by_wage_bill"]})
    assert rendered["wage"] == {"png": first["png"].read_bytes(), "svg": first["svg"].read_bytes()}
    assert ew.save_figures(rendered, tmp_path / "three") == {
        "wage": {"png": tmp_path / "three" / "wage.png", "svg": tmp_path / "three" / "wage.svg"}}
    assert (tmp_path / "three" / "wage.svg").read_bytes() == first["svg"].read_bytes()
    markdown = fg.figure_markdown(fig, alt="wage")
    assert markdown.startswith("![wage](data:image/png;base64,") and markdown.endswith(")")
    assert base64.b64decode(markdown[len("![wage](data:image/png;base64,") : -1])[:4] == b"\x89PNG"


# --- report summary -------------------------------------------------------------------------------------------------


def test_summary_numbers_come_from_the_tables(world):
    text = report.summary_markdown(
        world, onet_tasks=world["onet_tasks"], labeler_model="offline", export_date="2030-01-31"
    )
    head = {
        (r["threshold"], r["metric"]): r
        for r in world["coverage_headline"].filter(pl.col("scope") == "all").iter_rows(named=True)
    }
    for t in (1, 5):
        tasks = head[(t, "tasks_covered")]
        assert f"{int(tasks['numerator']):,} ({100 * tasks['value']:.1f}%) have at least {t} prompt" in text
        occs = head[(t, "occupations_covered")]
        assert f"{int(occs['numerator'])} ({100 * occs['value']:.1f}%) have at least {t} prompt" in text
        hours = head[(t, "hours_share_covered")]
        assert f"{100 * hours['value']:.1f}% on tasks with at least {t} prompt" in text
    hours_total = head[(1, "hours_share_covered")]["denominator"]
    assert f"Of the {hours_total / 1e9:.1f} billion annual US work hours in occupations with hours data" in text
    assert "Of the 240 O*NET tasks" in text and "Of the 30 occupations with task statements" in text
    uncovered = head[(5, "major_groups_uncovered")]
    k = int(uncovered["value"])
    assert f"{k} of the 22 SOC major groups {'has' if k == 1 else 'have'} no covered occupation" in text

    contrasts = world["coverage_regressions"].filter(pl.col("contrast").is_not_null())
    exposure = contrasts.filter(pl.col("model") == "exposure_wage").row(0, named=True)
    assert (
        f"{exposure['ratio']:.2f} times as likely as non-exposed tasks to have >= 5 prompts "
        f"(95% CI {exposure['ci_low']:.2f}\u2013{exposure['ci_high']:.2f}"
    ) in text
    importance = contrasts.filter(pl.col("model") == "importance_fe").row(0, named=True)
    assert f"{importance['ratio']:.2f} times as likely to be covered as the least important" in text

    zones = world["workbank_coverage"].filter(pl.col("threshold") == 5)
    green = zones.filter(pl.col("zone") == "green_light").row(0, named=True)
    assert (
        f"green-light {100 * green['share']:.1f}% (95% CI {100 * green['ci_low']:.1f}%\u2013"
        f"{100 * green['ci_high']:.1f}%, {green['n_covered']} of {green['n_tasks']})"
    ) in text

    rated = int(world["onet_tasks"]["has_ratings"].sum())
    assert f"available for {rated} of 240 tasks ({100 * rated / 240:.1f}%)" in text
    # one occupation without hours: named, in the singular
    (missing,) = world["occupation_coverage"].filter(pl.col("occupation_annual_hours").is_null()).iter_rows(named=True)
    assert (f"**Hours data.** 1 of 30 occupations ({missing['title']}, {missing['onet_soc_code']}) has no OEWS "
            "employment/hours match and is left out") in text
    assert "Work hours are OEWS employment x 2,080 (a full-time year)" in text  # what the hours are (an audit)
    top1 = world["labeler_validation"].filter(pl.col("metric") == "occupation_top1").row(0, named=True)
    assert f"top-1 occupation accuracy on gdpval {100 * top1['value']:.0f}% (95% CI" in text
    assert "gdpval v1 (100), swe_lancer v2 (100), webarena v3 (100)" in text
    assert "available for 2 of them (gdpval, swe_lancer)" in text
    assert "the **offline** labeler (model: offline)" in text
    assert not re.search(r"\bnan\b", text, re.I) and "n/a" not in text


def test_summary_quotes_the_estimated_model_scores_and_keeps_the_raw_comparison_with_the_raw_labels(world):
    text = report.summary_markdown(world, onet_tasks=world["onet_tasks"], export_date="2030-01-31")
    estimated_part, raw_part = text.split("## What the raw labels say")
    estimated = world["occupation_model_scores_estimated"].filter(
        (pl.col("expected_prompts") >= 5) & pl.col("estimated_mean").is_not_nan() & pl.col("ci_low").is_not_null())
    assert estimated.height > 0
    half_width = float(((estimated["ci_high"] - estimated["ci_low"]) / 2).median())
    share = float(estimated["fraction_missing_info"].median())
    assert (f"For the {estimated.height} occupation-model pairs with at least 5 prompts expected to exercise the "
            "occupation") in estimated_part
    assert f"spans a median \u00b1{half_width:.3f} around it" in estimated_part
    assert f"makes up a median {100 * share:.0f}% of its variance" in estimated_part
    assert "occupation_model_scores)" not in estimated_part  # the raw comparison is not quoted as an estimate

    scores = world["occupation_model_scores"].filter(
        (pl.col("min_prompts") == 5) & pl.col("difference").is_not_null())
    differs = scores.filter((pl.col("difference_ci_low") > 0) | (pl.col("difference_ci_high") < 0))
    pool = differs if differs.height else scores
    top = (pool.with_columns(pl.col("difference").abs().alias("abs"))
           .sort(["abs", "onet_soc_code", "model"], descending=[True, False, False]).row(0, named=True))
    # what "O*NET-weighted" means (an audit read "tasks weighted by the labels as counted" as weights from O*NET)
    assert ("The O*NET-weighted mean score (the mean of each O*NET task's mean score, over the tasks with >= 5 "
            "prompts, every task weighing the same whatever its number of prompts; tasks from the labels as counted)"
            ) in raw_part
    # where the differing pairs sit and how many chance gives (an audit: 15 of 123 were two occupations)
    spread = (f" (in {differs['onet_soc_code'].n_unique()} occupation{'' if differs['onet_soc_code'].n_unique() == 1 else 's'}; "
              f"with no adjustment for the {scores.height} comparisons, about {round(0.05 * scores.height)} would by "
              "chance alone)") if differs.height else ""
    assert (f"for {differs.height} of the {scores.height} occupation-model pairs that have one{spread}; "
            f"{'the largest of them' if differs.height else 'none does; the largest difference'} is "
            f"{top['difference']:+.3f}") in raw_part

    # another index's summary does not present the every-benchmark scores as its own, nor call them missing
    other = report.summary_markdown(world, onet_tasks=world["onet_tasks"], benchmark_index="economic_agentic")
    assert "Model scores are computed over every landed benchmark, not per index: see summary.md" in other
    assert "occupation_model_scores" not in other and "Model-score finding not available" not in other


def test_the_imputed_share_is_read_from_the_headline(world):
    """The summary's "the headline itself imputes about N% of the texts" comes from headline_estimates (it was
    a hard-coded 93% that by texts read 92%), and says "most" without the table."""
    from models.report.limitations import imputed_share

    row = world["headline_estimates"].filter((pl.col("benchmark_index") == "all") & (pl.col("scope") == "all")
                                            ).row(0, named=True)
    assert 0 < row["n_sampled"] < row["n_texts"]
    expected = f"about {100 * (1 - row['n_sampled'] / row['n_texts']):.0f}%"
    assert imputed_share(world) == expected
    # as the summary reads it: one index's rows, without the benchmark_index column
    one_index = {"headline_estimates": ix.only_index(world["headline_estimates"], "all")}
    assert "benchmark_index" not in one_index["headline_estimates"].columns and imputed_share(one_index) == expected
    assert imputed_share({}) == "most"


def test_summary_says_what_is_missing():
    text = report.summary_markdown({}, missing_tables=["coverage_headline"])
    for phrase in (
        "Coverage headline not available",
        "Exposure finding not available",
        "WORKBank finding not available",
        "Model-score finding not available",
        "Estimated model-score finding not available",
        "Gap finding not available: occupation_gaps is missing or empty",
        "Sensitivity analysis not available",
        "benchmarks table is missing",
        "Its accuracy was not measured",
    ):
        assert phrase in text
    assert "Tables not available for this summary: coverage_headline" in text


def test_summary_names_the_largest_gaps_as_estimated_with_their_intervals(world):
    """Where the next benchmark should go: how many occupations are not likely covered at >= 5 prompts, and the
    occupations, likely covered or not, ranked by expected uncovered hours with their interval across the draws
    (occupation_gaps), a likely covered one named as such; a gap list ranked by the labels' priority (no per-unit
    estimates) is not quoted as an estimate."""
    text = report.summary_markdown(world, onet_tasks=world["onet_tasks"], export_date="2030-01-31")
    from models.gaps.expected import RANKED_BY_PRIORITY

    assert world["occupation_gaps"]["ranked_by"].unique().to_list() == [RANKED_BY_PRIORITY]
    assert ("Gap finding not available: occupation_gaps has no row ranked by expected uncovered hours at >= 5 "
            "prompts") in text  # the world's gaps are priority-ranked
    hours = [9.1e9, 7.0e9, 4.0e9, 3.5e9, 3.0e9, 2.0e9]
    gaps = pl.DataFrame({
        "benchmark_index": "all", "threshold": 5, "rank": range(1, 7),
        "occupation_title": [f"Occupation {c}" for c in "ABCDEF"],
        "expected_uncovered_hours": hours,
        "expected_uncovered_hours_low": [h * 0.9 for h in hours],
        "expected_uncovered_hours_high": [h * 1.05 for h in hours],
        "p_covered": [0.1, 0.93, 0.5, 0.0, 0.2, 0.95],
        "ranked_by": "expected uncovered hours (per-unit estimates)",
    })
    text = report.summary_markdown({**world, "occupation_gaps": gaps}, onet_tasks=world["onet_tasks"])
    estimated_part = text.split("## What the raw labels say")[0]
    n_occupations = world["occupation_coverage"]["onet_soc_code"].n_unique()
    assert (f"**Where the next benchmark should go.** 4 of {n_occupations} occupations are not likely covered at "
            ">= 5 prompts (estimated probability below 0.9).") in estimated_part
    assert ("Occupation A 9.10 (8.19\u20139.55); Occupation B 7.00 (6.30\u20137.35; the occupation itself likely "
            "covered, p = 0.93); Occupation C 4.00 "
            "(3.60\u20134.20); Occupation D 3.50 (3.15\u20133.67); Occupation E 3.00 (2.70\u20133.15) "
            "(occupation_gaps;") in estimated_part
    assert "Occupation F" not in text  # five are quoted; the table ranks them all
    # an occupation none of whose tasks reaches 5 prompts in any draw has no spread to show
    every_draw = gaps.with_columns(pl.when(pl.col("rank") == 2).then(pl.col("expected_uncovered_hours"))
                                   .otherwise(pl.col(f"expected_uncovered_hours_{end}")).alias(
                                       f"expected_uncovered_hours_{end}") for end in ("low", "high"))
    text = report.summary_markdown({**world, "occupation_gaps": every_draw}, onet_tasks=world["onet_tasks"])
    assert ("Occupation A 9.10 (8.19\u20139.55); Occupation B 7.00 (in every draw; the occupation itself likely "
            "covered, p = 0.93); Occupation C 4.00") in text
    # a mean just outside a one-value range (a few draws differ far) is not "in every draw" (an audit: Personal
    # Care Aides 4.1451 billion hours against 4.1477-4.1477 would have read "4.15 (in every draw)")
    near = gaps.with_columns(pl.when(pl.col("rank") == 2).then(pl.col("expected_uncovered_hours") * 1.0004)
                             .otherwise(pl.col(f"expected_uncovered_hours_{end}")).alias(
                                 f"expected_uncovered_hours_{end}") for end in ("low", "high"))
    text = report.summary_markdown({**world, "occupation_gaps": near}, onet_tasks=world["onet_tasks"])
    assert ("Occupation B 7.00 (7.00 in 95% of the draws; a few differ; the occupation itself likely covered, "
            "p = 0.93)") in text

    # how far the bands held in the release's checks (models/coverage_map.py band_check), when they were run
    checks = pl.DataFrame(
        [("split_fifth", "occupation", 5, "p_covered", 0.9, 1.0, 120, 0.992),
         ("split_half", "occupation", 5, "p_covered", 0.9, 1.0, 160, 0.994),
         ("split_half", "occupation", 5, "p_covered", 0.0, 0.1, 103, 0.117)],
        schema=["check", "unit", "threshold", "predictor", "p_low", "p_high", "n_units", "share_covered"],
        orient="row")
    text = report.summary_markdown({**world, "occupation_gaps": gaps, "unit_coverage_simulation_check": checks},
                                   onet_tasks=world["onet_tasks"])
    assert ("(estimated probability below 0.9). In the release's checks against known truths, those shown likely "
            "covered (p >= 0.9) were covered in 99% and those shown likely not (0 < p < 0.1) in 12% of cases "
            "(unit_coverage_simulation_check); read the band between as unsure. The occupations, likely covered or not, "
            "with the most annual US work hours") in text
    text = report.summary_markdown({**world, "occupation_gaps": gaps, "unit_coverage_simulation_check": checks[2:]},
                                   onet_tasks=world["onet_tasks"])
    assert ("In the release's checks against known truths, those shown likely not (0 < p < 0.1) were covered in 12% "
            "of cases") in text


def test_summary_says_which_prompts_have_no_labels(world):
    """An audit (2026-12-07): a run whose LLM labeling failed for 13 of cybench's prompts exited 4 and published
    a release whose summary said nothing of them, though every figure counts them as exercising no task."""
    names = sorted(world["benchmarks"]["benchmark"].to_list())
    counts = pl.DataFrame({"benchmark_index": ["all", "all", "econ"], "benchmark": [names[0], names[1], names[0]],
                           "counted": [True, True, False], "n_labeled_prompts": [5, 5, 5], "reason": [None] * 3})
    text = report.summary_markdown({**world, "benchmark_counts": counts}, onet_tasks=world["onet_tasks"],
                                   unlabeled={names[0]: 13, names[1]: 1, "elsewhere": 4})
    assert (f"_Without labels: {names[0]} 13 prompts; {names[1]} 1 prompt (their labeling failed: label_failures; "
            "`python -m pipelines.run_all` asks again for one that has failed in fewer than 3 runs, "
            "`python -m pipelines.run_all --force` for every one). Every figure here counts them as prompts that "
            "exercise "
            "no task") in text
    assert "elsewhere" not in text  # not a benchmark the index counts
    assert "Without the judge's reading" not in text
    # sampled texts the LLM judge failed on (a probe: the release said nothing of them)
    text = report.summary_markdown({**world, "benchmark_counts": counts}, onet_tasks=world["onet_tasks"],
                                   unjudged={names[1]: 6, "elsewhere": 2})
    assert (f"_Without the judge's reading: {names[1]} 6 sampled texts (the LLM judge failed on them: "
            "label_failures;") in text and "Without labels" not in text and "elsewhere" not in text
    # the answer stays, and the line for a missing answer does not appear beside it (a first version did)
    assert text.count("**AI benchmarks exercise about") == 1 and "No published estimate" not in text
    econ = report.summary_markdown({**world, "benchmark_counts": counts}, onet_tasks=world["onet_tasks"],
                                   benchmark_index="econ", unlabeled={names[0]: 13})
    assert "Without labels" not in econ  # the index leaves that benchmark out
    plain = report.summary_markdown(world, onet_tasks=world["onet_tasks"], unlabeled={})
    assert "Without labels" not in plain and "No published estimate" not in plain


def test_markdown_table():
    frame = pl.DataFrame({"a": [1, 2, 3], "b": [0.5, None, 1234567.0], "c": ["x|y", "z", "w"]})
    assert report.markdown_table(frame, max_rows=2) == (
        "| a | b | c |\n|---|---|---|\n| 1 | 0.500 | x\\|y |\n| 2 |  | z |\n\n_1 more rows not shown (3 in all)._"
    )


# --- coverage map data (the browser test drives the page itself) -------------------------------------------------


def test_coverage_map_data_matches_occupation_coverage(world):
    data = coverage_map_data(
        world["occupation_coverage"],
        world["prompt_task_labels"],
        world["benchmark_prompts"],
        world["onet_tasks"],
    )
    assert len(data["occupations"]) == 30 and data["labeler"] == LABELER
    assert [b for b, _ in data["benchmarks"]] == BENCHMARKS and [n for _, n in data["benchmarks"]] == [
        100
    ] * 3
    occ = world["occupation_coverage"]
    for t in (1, 5):
        expected = dict(occ.select("onet_soc_code", f"task_share_covered_{t}").iter_rows())
        assert occupation_shares(data, t) == pytest.approx(expected)
    # a subset of benchmarks gives the estimator's coverage restricted to those benchmarks
    subset = ["gdpval", "webarena"]
    task_cov = cov.task_coverage(cov.label_counts(world["prompt_task_labels"]), world["onet_tasks"], benchmark=subset)
    occ_subset = cov.occupation_coverage(task_cov, world["task_hours"], world["onet_occupations"])
    expected = dict(occ_subset.select("onet_soc_code", "task_share_covered_5").iter_rows())
    assert occupation_shares(data, 5, subset) == pytest.approx(expected)
    # examples: one per occupation and benchmark, the best-ranked prompt, clipped
    first = next(o for o in data["occupations"] if o["e"])
    assert all(len(data["examples"][i][2]) <= 180 for i in first["e"])


def test_coverage_map_html_is_self_contained_and_escapes_prompts(world):
    html, data = build_coverage_map(
        world["occupation_coverage"],
        world["prompt_task_labels"],
        world["benchmark_prompts"],
        world["onet_tasks"],
    )
    assert html.count("</script>") == 2  # the prompts' own '</script>' is escaped inside the data
    assert "<b>usual</b>" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html) and "<link" not in html
    found = re.search(r'<script type="application/json" id="coverage-data">(.*?)</script>', html, re.S)
    assert json.loads(found.group(1)) == json.loads(json.dumps(data))
    assert "Content-Security-Policy" in html and "default-src 'none'" in html


def _hand_made_map_inputs() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    a, b = "11-1011.00", "15-1252.00"
    occupations = pl.DataFrame({"onet_soc_code": [a, b], "title": ["Chief Executives", "Developers"]})
    rows = [
        # (benchmark, prompt_id, onet_soc_code, task_id, labeler, rank)
        ("b1", "p1", a, 1, "offline", 2),
        ("b1", "p1", a, 2, "offline", 3),  # two tasks of one occupation: p1 counts once for (a, b1)
        ("b1", "p2", a, 1, "offline", 4),
        ("b1", "p2", a, 1, "offline", 1),  # duplicate with a better rank: p2's rank is 1, p2 is the example
        ("b2", "p9", a, 1, "offline", 1),
        ("b2", "p9", b, 5, "offline", 1),
        ("b2", "p8", b, 5, "offline", 2),
        ("b1", "p3", a, 3, "other", 1),  # another labeler: ignored
        ("b3", "p4", b, 5, "other", 1),
        ("b1", "p5", "99-9999.00", 9, "offline", 1),  # not an occupation of the map: ignored
    ]
    labels = pl.DataFrame(
        rows,
        schema=["benchmark", "prompt_id", "onet_soc_code", "task_id", "labeler", "rank"],
        orient="row",
    )
    prompts = pl.DataFrame(
        {
            "benchmark": ["b1", "b1", "b1", "b2", "b2", "b1"],
            "prompt_id": ["p1", "p2", "p3", "p9", "p8", "p5"],
            "prompt": ["first", "  second\n prompt ", "third", "x" * 300, "eighth", "fifth"],
        }
    )
    tasks = pl.DataFrame(
        {
            "onet_soc_code": [a, a, a, b, b],
            "task_id": [1, 2, 3, 5, 6],
            "task": ["Direct the firm.", "Approve budgets.", "Negotiate.", "Write code.", "Test code."],
        }
    )
    return occupations, labels, prompts, tasks


def test_coverage_map_sql_aggregates_by_hand(tmp_path):
    occupations, labels, prompts, tasks = _hand_made_map_inputs()
    data = coverage_map_data(occupations, labels, prompts, tasks)
    assert data["labeler"] == "offline"
    assert data["benchmarks"] == [["b1", 2], ["b2", 2]]  # b1: p1, p2 (not p3: other labeler; not p5)
    a, b = data["occupations"]
    assert (a["c"], a["n"], b["c"], b["n"]) == ("11-1011.00", 3, "15-1252.00", 2)  # n_tasks from `tasks`
    # per task: [task_id, statement, [benchmark index, prompts, ...]]; task 3 is labeled by `other` only
    assert a["k"] == [[1, "Direct the firm.", [0, 2, 1, 1]], [2, "Approve budgets.", [0, 1]]]
    assert b["k"] == [[5, "Write code.", [1, 2]]]
    assert a["b"] == [0, 2, 1, 1] and b["b"] == [1, 2]  # p1 counts once for (a, b1)
    # examples: best rank, then id; p9 is the example of (a, b2) and (b, b2) and is listed once, clipped
    assert data["examples"] == [[0, "p2", "second prompt"], [1, "p9", "x" * 179 + "\u2026"]]
    assert a["e"] == [0, 1] and b["e"] == [1]
    two = coverage_map_data(occupations, labels, prompts, tasks, examples_per_benchmark=2)
    assert [two["examples"][i][1] for i in two["occupations"][0]["e"]] == ["p2", "p1", "p9"]
    assert [two["examples"][i][1] for i in two["occupations"][1]["e"]] == ["p9", "p8"]
    # without ranks every label has rank 1: the example is the smallest prompt id
    unranked = coverage_map_data(occupations, labels.drop("rank"), prompts, tasks)
    assert unranked["examples"][0][1] == "p1" and unranked["occupations"][0]["k"] == a["k"]
    other = coverage_map_data(occupations, labels, prompts, tasks, labeler="other")
    assert other["benchmarks"] == [["b1", 1], ["b3", 1]] and other["labeler"] == "other"
    with pytest.raises(ValueError, match="has no labels"):
        coverage_map_data(occupations, labels, prompts, tasks, labeler="openai")
    # no prompts / tasks: no examples / statements
    bare = coverage_map_data(occupations.with_columns(n_tasks=pl.lit(3)), labels)
    assert bare["examples"] == [] and bare["occupations"][0]["k"][0][1] == ""

    # the same SQL against a warehouse file gives the same page
    path = tmp_path / "warehouse.duckdb"
    for name, frame in [
        ("prompt_task_labels", labels),
        ("benchmark_prompts", prompts),
        ("onet_tasks", tasks),
    ]:
        wh.replace_table(path, name, frame)
    html, from_warehouse = build_coverage_map_from_warehouse(path, occupations, footer="f")
    assert from_warehouse == data
    assert html == build_coverage_map(occupations, labels, prompts, tasks, footer="f")[0]
    with wh.connect(path, read_only=True) as con:
        assert coverage_map_data_from_connection(con, occupations) == data


def test_coverage_map_from_warehouse_matches_frames(world, tmp_path):
    path = tmp_path / "warehouse.duckdb"
    fill_warehouse(world, path)
    args = (world["occupation_coverage"], world["prompt_task_labels"], world["benchmark_prompts"])
    expected = build_coverage_map(*args, world["onet_tasks"], footer="footer")
    assert build_coverage_map_from_warehouse(path, world["occupation_coverage"], footer="footer") == expected


def test_colour_bins():
    assert colour_for(0.0) == NO_COVERAGE_COLOUR
    assert colour_for(0.01) == "#c7e9b4"
    assert colour_for(0.05) == "#7fcdbb"
    assert colour_for(1.0) == "#0c2c84"


# --- the Dagster assets -------------------------------------------------------------------------------------------


def test_export_assets_materialize(world, tmp_path, monkeypatch):
    from dagster import DagsterInstance, materialize

    from assets import exports as export_assets
    from resources.dagster_resources import LabelerResource, Warehouse

    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(tmp_path / "raw"))
    monkeypatch.setenv("BENCHMAP_MIRROR", str(tmp_path / "no_mirror"))
    monkeypatch.setenv("BENCHMAP_OFFLINE", "1")
    path = tmp_path / "warehouse" / "benchmap.duckdb"
    fill_warehouse(world, path)
    from tests.test_export_stream import text_estimates  # a big table: written from the warehouse in slices

    wh.replace_table(path, "prompt_occupation_estimates", text_estimates(300))
    result = materialize(
        [*module_assets(export_assets), *module_checks(export_assets)],
        resources={
            "warehouse": Warehouse(path=str(path)),
            "labeler": LabelerResource(kind="offline", model="offline"),
        },
        instance=DagsterInstance.ephemeral(),
        tags={EXPORT_DATE_TAG: "2031-02-03"},
    )
    assert result.success
    from resources import release as rl

    root = tmp_path / "warehouse" / "exports"
    folder = rl.latest_release(root)
    assert folder is not None and folder.name.startswith("2031-02-03T") and rl.list_releases(root) == [folder]
    assert (root / "latest.txt").read_text().strip() == folder.name
    assert not any((root / ".staging").iterdir())  # the run's staging folder became the release
    assert {"release.csv", "release.parquet", "data_documentation.md"} <= {p.name for p in folder.iterdir()}
    names = [spec.name for spec in fg.FIGURES]
    assert sorted(p.name for p in (folder / "figures").iterdir()) == sorted(
        [f"{n}.png" for n in names] + [f"{n}.svg" for n in names]
    )
    assert {
        "coverage_map.html",
        "summary.md",
        "manifest.json",
        "data_dictionary.md",
        "benchmap_tables.xlsx",
    } <= {p.name for p in folder.iterdir()}
    manifest = json.loads((folder / "manifest.json").read_text())
    listed = {f["path"] for f in manifest["files"]}
    assert {"coverage_map.html", "summary.md", "figures/coverage_by_wage_bill.svg"} <= listed
    assert manifest["missing_tables"] == []
    assert manifest["run_id"] == result.run_id
    streamed = ex.prepare_table("prompt_occupation_estimates", wh.read_table(path, "prompt_occupation_estimates"))
    assert (folder / ex.TABLES_DIR / "prompt_occupation_estimates.csv").read_text() == streamed.write_csv()
    assert ew.read_export_table(folder, "prompt_occupation_estimates").equals(streamed)
    import pyarrow.parquet as pq  # written by the slice writer (resources/export_stream.py), not from a whole frame

    written_by = pq.ParquetFile(folder / ex.TABLES_DIR / "prompt_occupation_estimates.parquet").metadata.created_by
    assert written_by.startswith("parquet-cpp-arrow")
    assert manifest["labeler"]["labelers"][0]["n_prompts"] == 300
    assert ew.verify_export(folder) == []

    metadata = {
        e.event_specific_data.materialization.asset_key.path[
            -1
        ]: e.event_specific_data.materialization.metadata
        for e in result.get_asset_materialization_events()
    }
    figure_md = metadata["report_figures"]["coverage_by_wage_bill"].value
    assert figure_md.startswith("**Adjusted coverage probability vs occupation wage bill**")
    assert "](data:image/png;base64," in figure_md
    assert metadata["report_figures"]["coverage_by_wage_bill_png"].value.endswith("coverage_by_wage_bill.png")
    assert metadata["report_figures"]["n_figures"].value == len(names)
    assert "| scope | threshold | metric |" in metadata["exports"]["coverage_headline_preview"].value
    assert metadata["coverage_map"]["n_tiles"].value == 30
    assert metadata["report_summary"]["summary"].value == (folder / "summary.md").read_text()
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"exports_verified": True, "coverage_map_self_contained": True}
    # the answer opens the summary and the map's header; the headline is numeric metadata the UI can plot
    summary = (folder / "summary.md").read_text()
    sentence = summary.splitlines()[2].strip("*")
    assert sentence.startswith("AI benchmarks exercise about ") and "released 2031-02-03" in sentence
    # an audit of the release as a policy reader quotes it: the bounds are not one 95% interval, release.csv does
    # not hold the gaps, and the per-unit sums at >= 1 are not the published figure
    assert "**At >= 1 prompt** (bounds: a floor and a ceiling from two estimators, not one 95% interval)" in summary
    assert "gaps (expected uncovered hours)" in summary and "are in their tables only" in summary
    documentation = (folder / "data_documentation.md").read_text()
    assert "the published figure there is the bounds" in documentation
    assert "for an occupation or major group, those on its most exercised task" in documentation
    assert f"<b>{sentence}" in (folder / "coverage_map.html").read_text().replace("&#x27;", "'").replace("&gt;", ">")
    published = world["headline_estimates"].filter(
        pl.col("published") & (pl.col("scope") == "all") & (pl.col("quantity") == "hours_share_covered")
        & (pl.col("threshold") == 5)).row(0, named=True)
    for asset in ("report_summary", "exports"):
        value = metadata[asset]["headline_hours_share_covered_5"]
        assert type(value).__name__ == "FloatMetadataValue" and value.value == float(f"{published['value']:.6g}")
    assert metadata["exports"]["new_release"].value is True
    # its workbook was started by the first report step, with the tables the exports step published
    assert metadata["exports"]["workbook_started_ahead"].value is True
    history = metadata["headline_history"]
    assert history["n_releases"].value == 1 and history["hours_share_covered_5"].value == pytest.approx(
        published["value"])
    assert pl.read_csv(root / "headline_history.csv").height == 8

    # the same warehouse again: no published figure changed, so no new release and the old one untouched
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    again = materialize(
        [*module_assets(export_assets)],
        resources={"warehouse": Warehouse(path=str(path)), "labeler": LabelerResource(kind="offline", model="offline")},
        instance=DagsterInstance.ephemeral(),
        tags={EXPORT_DATE_TAG: "2031-02-04"},
    )
    assert again.success and rl.list_releases(root) == [folder]
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    rerun = {e.event_specific_data.materialization.asset_key.path[-1]: e.event_specific_data.materialization.metadata
             for e in again.get_asset_materialization_events()}
    assert rerun["exports"]["new_release"].value is False and rerun["exports"]["release"].value == folder.name
    assert rerun["exports"]["workbook_started_ahead"].value is False  # no release: no workbook started

    # the workbook reads: filters, frozen header, shares as percents, README first
    from openpyxl import load_workbook

    book = load_workbook(folder / "benchmap_tables.xlsx")
    assert book.sheetnames[0] == "README"
    sheet = book["major_group_coverage"]
    assert sheet.freeze_panes == "A2" and sheet.tables and sheet.tables[next(iter(sheet.tables))].autoFilter
    header = [c.value for c in sheet[1]]
    share = header.index("occupation_share_covered_1") + 1
    assert sheet.cell(row=2, column=share).number_format == "0.0%"
    assert sheet.cell(row=2, column=header.index("n_occupations") + 1).number_format != "0.0%"
    assert sheet.column_dimensions["A"].width >= len("major_group_code")
    book.close()


# --- the analyst notebook: tests/test_notebook.py ---------------------------------------------------------------


# --- end to end on the mirror -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_end_to_end_exports(full_pipeline, monkeypatch):
    """Every asset of the Definitions materialized on the mirror (pipelines.run_all), then the export checked."""
    from dagster import DagsterInstance, materialize

    from assets import exports as export_assets

    full_pipeline.apply_env(monkeypatch)
    warehouse = full_pipeline.warehouse
    defs = full_pipeline.defs
    defined = {k.path[-1] for k in defs.resolve_asset_graph().materializable_asset_keys}
    assert [t for t in ex.REQUIRED_TABLES if t not in defined] == [], "analysis assets not all defined yet"

    from resources import answer_queries as aq
    from resources import release as rl

    folders = rl.list_releases(warehouse.parent / "exports")
    assert len(folders) == 1
    folder = folders[0]
    assert rl.latest_release(warehouse.parent / "exports") == folder
    assert ew.verify_export(folder) == []
    manifest = json.loads((folder / "manifest.json").read_text())
    assert [t for t in manifest["missing_tables"] if t in ex.REQUIRED_TABLES] == []
    assert manifest["undocumented_columns"] == {}
    assert len(manifest["benchmarks"]) == 29 and all(b["content_hash"] for b in manifest["benchmarks"])
    assert {s["source_file"] for s in manifest["sources"] if s["status"] == "present"} >= {
        "onet/Task Statements.txt",
        "onet/Occupation Data.txt",
        "indexes/all.toml",  # the index files the per-index figures were selected by (they were in no input)
        "indexes/economic_agentic.toml",
    }
    for entry in manifest["tables"]:
        if entry["table"] == "benchmark_counts":  # made at export time from benchmarks, membership and labels
            table = aq.benchmark_counts(warehouse)
        else:
            table = wh.read_table(warehouse, entry["table"])
        assert ew.read_export_table(folder, entry["table"]).equals(ex.prepare_table(entry["table"], table))
    # the release alone names what its codes are: every task and occupation of the estimates is in its lookups
    assert set(ex.REFERENCE_TABLES) == {"onet_tasks", "onet_occupations"}
    tasks, occupations = ew.read_export_table(folder, "onet_tasks"), ew.read_export_table(folder, "onet_occupations")
    assert (tasks.height, occupations.filter(pl.col("has_tasks")).height) == (18_796, 923)
    for table, lookup, keys in (("task_estimates", tasks, ["onet_soc_code", "task_id"]),
                                ("occupation_estimates", occupations, ["onet_soc_code"]),
                                ("coverage_gaps", tasks, ["onet_soc_code", "task_id"])):
        assert ew.read_export_table(folder, table).join(lookup, on=keys, how="anti").height == 0, table

    html = (folder / "coverage_map.html").read_text()
    data = json.loads(re.search(r'id="coverage-data">(.*?)</script>', html, re.S).group(1))
    assert len(data["occupations"]) == 923 and len({o["g"] for o in data["occupations"]}) == 22
    # the report's figures plus the estimates step's: reliability (issue 16), the per-text calibration and the
    # p_covered check (issue 25)
    assert {p.stem for p in (folder / "figures").glob("*.png")} == {s.name for s in fg.FIGURES} | {
        "labeler_reliability", "occupation_probability_calibration", "unit_coverage_simulation_check"}
    summary = (folder / "summary.md").read_text()
    assert "occupations with task statements" in summary and "923" in summary
    assert "Label depth" in summary  # generated from coverage_sensitivity
    assert "Not in these figures" not in summary  # every landing folder of the mirror is in the warehouse
    # label quality is stated next to the first coverage number, cross-validated, and the old caveat is gone
    assert "**Label quality.**" in summary and "**Leaving one benchmark out**" in summary
    assert "**Leaving one judged text out within its benchmark**" in summary  # the neighbour step's labels
    # the published labeler's rows, named (the table holds comparison labelers' rows under the same metric names)
    assert re.search(r"\(labeler_validation, labeler `offline` version `offline-[^`]+\+n[0-9a-f]+`, ref_cv_", summary)
    assert summary.index("**Label quality.**") < summary.index("**Tasks.**")
    assert "upper bound" not in summary.split("## Limitations")[0]

    # determinism: exporting again from the same warehouse gives the same figures, so no new release
    rerun = materialize(
        [export_assets.exports],
        resources=dict(defs.resources),
        instance=DagsterInstance.get(),
        tags={EXPORT_DATE_TAG: "2099-12-31"},
    )
    assert rerun.success
    assert rl.list_releases(warehouse.parent / "exports") == [folder] and ew.verify_export(folder) == []


def test_figures_and_workbook_drawn_in_a_worker_equal_those_drawn_here(world, tmp_path):
    """report_figures draws each figure with models.figures.render_outputs and write_exports writes the workbook
    with write_workbook_sheets, both in the worker pool (resources/worker_pool.py): the same bytes as here."""
    from resources.export_files import write_workbook, write_workbook_sheets
    from resources.worker_pool import WorkerPool

    tables = {**world, "occupations": world["onet_occupations"]}
    prepared = {t: ex.prepare_table(t, f) for t, f in export_tables(world).items()}
    dictionary = ex.dictionary_frame(prepared)
    readme = [("export", "test")]
    with WorkerPool(workers=1) as pool:
        names = [spec.name for spec in fg.FIGURES]
        there = pool.gather([pool.submit(fg.render_outputs, n, tables, preview_dpi=80) for n in names], steal=False)
        sheets = pool.gather([pool.submit(write_workbook_sheets, tmp_path / "there.xlsx", ex.sheet_tables(prepared),
                                          dictionary, ex.readme_frame(readme, prepared))], steal=False)[0]
    for name, (files, preview) in zip(names, there, strict=True):
        here = fg.figure_outputs(fg.render_figures(tables)[name], preview_dpi=80)
        assert files == here[0] and preview == here[1], name
    assert sheets == write_workbook(tmp_path / "here.xlsx", prepared, dictionary, readme)
    assert (tmp_path / "there.xlsx").read_bytes() == (tmp_path / "here.xlsx").read_bytes()


def test_estimated_coverage_figure_draws_the_estimates_by_hand():
    """The estimates' twin of the labels-as-counted figures: per major group the share of hours on covered
    tasks (1 - expected uncovered / hours, its interval from the uncovered ends), the expected occupations (sum
    of p) and those likely covered; the total is the published headline row, not a sum of the groups."""
    from models.figures.estimates import estimated_group_frame

    groups = pl.DataFrame({
        "major_group_code": ["15-0000", "43-0000", "15-0000"], "threshold": [5, 5, 1],
        "hours": [1000.0, 4000.0, 1000.0], "uncovered_hours_mean": [600.0, 3900.0, 100.0],
        "uncovered_hours_low": [500.0, 3800.0, 50.0], "uncovered_hours_high": [800.0, 4000.0, 200.0]})
    occupations = pl.DataFrame({
        "onet_soc_code": ["15-1252.00", "15-1253.00", "43-4051.00", "15-1252.00"], "threshold": [5, 5, 5, 1],
        "p_covered": [0.95, 0.3, 0.05, 1.0]})
    frame = estimated_group_frame(groups, occupations)
    rows = {r["major_group_code"]: r for r in frame.iter_rows(named=True)}
    assert rows["15-0000"]["share_mean"] == pytest.approx(0.4)
    assert (rows["15-0000"]["share_low"], rows["15-0000"]["share_high"]) == pytest.approx((0.2, 0.5))
    assert rows["15-0000"]["occupations_expected"] == pytest.approx(1.25)
    assert (rows["15-0000"]["occupations_likely"], rows["15-0000"]["n_occupations"]) == (1, 2)
    assert rows["43-0000"]["share_mean"] == pytest.approx(0.025) and rows["43-0000"]["occupations_likely"] == 0
    headline = pl.DataFrame({"scope": ["all", "all"], "quantity": ["hours_share_covered"] * 2, "threshold": [5, 1],
                             "published": [True, True], "value": [0.079, 0.107], "ci_low": [0.072, 0.095],
                             "ci_high": [0.088, 0.223]})
    fig = fg.estimated_coverage_figure(groups, occupations, headline)
    hours_ax, occ_ax = fig.axes[:2]
    assert hours_ax.get_yticklabels()[0].get_text() == "All occupations (headline)"
    points = hours_ax.lines[0].get_xdata()
    assert list(points) == pytest.approx([0.079, 0.4, 0.025])  # the headline first, then each group
    assert [p.get_width() for p in occ_ax.patches] == pytest.approx([1.25, 0.05, 1, 0])
    # a mean just outside its percentile ends (a few far draws) is drawn, without a whisker on that side
    outside = groups.with_columns(pl.when(pl.col("major_group_code") == "43-0000").then(3790.0)
                                  .otherwise(pl.col("uncovered_hours_mean")).alias("uncovered_hours_mean"))
    assert fg.estimated_coverage_figure(outside, occupations, headline).axes[0].lines[0].get_xdata()[2] == \
        pytest.approx(0.0525)  # above its upper end, 0.05
    # the labels-as-counted figures say what they are
    occ = pl.DataFrame({"onet_soc_code": ["15-1252.00"], "occupation_annual_hours": [1000.0],
                        "hours_share_covered_1": [0.5], "hours_share_covered_5": [0.2]})
    title = fg.hours_by_coverage_figure(occ).get_suptitle()
    assert "labels as counted" in title and "not for quoting" in title
    # and so do the raw-label logits' figures (the audit of 2026-12-07 found them without the note)
    probabilities = pl.DataFrame({"model": [fg.MODEL_EXPOSURE_WAGE] * 2, "wage_bill": [1e9, 1e10],
                                  "exposed": [True, True], "prob": [0.1, 0.2], "ci_low": [0.05, 0.1],
                                  "ci_high": [0.15, 0.3]})
    title = fg.wage_bill_probability_figure(probabilities).axes[0].get_title()
    assert "not for quoting" in title and "coverage_regressions_mi" in title


def test_workbank_sentence_counts_listed_and_rated_tasks_apart():
    """WORKBank lists more tasks than its workers rated: the unzoned ones have no desire rating, so the summary
    does not call all of them "rated" (on the mirror 2,131 listed, 844 rated)."""
    from models.report.findings import workbank_findings

    frame = pl.DataFrame({"zone": ["green_light", "none", "red_light"], "threshold": [5, 5, 5],
                          "n_tasks": [300, 1287, 544], "n_covered": [30, 42, 20], "share": [0.1, 42 / 1287, 20 / 544],
                          "ci_low": [0.07, 0.024, 0.02], "ci_high": [0.14, 0.044, 0.05]})
    (line,) = workbank_findings({"workbank_coverage": frame})
    assert line.startswith("**Worker desire zones.** Among the 2,131 tasks WORKBank lists (844 rated by workers and "
                           "placed in a zone; unzoned = listed but without a worker-desire rating), the share")
    assert "WORKBank-rated" not in line and "unzoned 3.3%" in line
    (every,) = workbank_findings({"workbank_coverage": frame.filter(pl.col("zone") != "none")})
    assert "(844 rated by workers and placed in a zone)" in every


def test_no_exported_text_cell_is_an_empty_string(world):
    """CSV and XLSX cells cannot tell "" from a missing value, so the exported tables hold none: an uncovered-
    groups list with no group says "none", a shortlist row without driving tasks has them null."""
    prepared = {t: ex.prepare_table(t, f) for t, f in export_tables(world).items()}
    empty = {t: [c for c in f.columns if f[c].dtype == pl.Utf8 and (f[c] == "").any()] for t, f in prepared.items()}
    assert {t: cs for t, cs in empty.items() if cs} == {}
    groups = world["coverage_headline"].filter(pl.col("metric") == "major_groups_uncovered")
    assert ((groups["value"] == 0) == (groups["detail"] == "none")).all()


def test_a_small_probability_is_not_printed_as_zero() -> None:
    """An audit: the wage-bill line printed an adjusted probability of 0.046% as "0.0%", which reads as never."""
    from models.report.findings import regression_findings
    from models.report.formatting import pct_for

    small = pct_for(0.00046, 0.0002, 0.00106)
    assert (small(0.00046), small(0.00106), small(float("nan"))) == ("0.046%", "0.11%", "n/a")
    assert pct_for(0.0, 0.2)(0.2) == "20.0%"  # none below 0.1% (zero is not): one decimal as elsewhere
    grid = pl.DataFrame({"model": ["exposure_wage"] * 4, "wage_bill": [5e8, 5e10] * 2, "exposed": [1, 1, 0, 0],
                         "prob": [0.02, 0.2, 0.00046, 0.004], "ci_low": [0.01, 0.1, 0.0002, 0.002],
                         "ci_high": [0.03, 0.3, 0.00106, 0.006], "margin": ["pointwise"] * 4})
    text = " ".join(regression_findings({"coverage_adjusted_probabilities": grid}))
    assert "for non-exposed tasks from 0.046% (95% CI 0.02%\u20130.11%)" in text, text


def test_figure_previews_are_palette_pngs_a_third_of_the_size(world) -> None:
    """An audit: the previews inlined into the Dagster event log were ~1.2 MB a report step (RGB PNGs); reduced
    to 256 colours they are about a third of that, at the same cost."""
    import io

    from PIL import Image

    from models import figures as fg

    fig = fg.hours_by_coverage_figure(world["occupation_coverage"])
    _, preview = fg.figure_outputs(fig, preview_dpi=fg.PREVIEW_DPI)
    with Image.open(io.BytesIO(preview)) as image:
        assert image.mode == "P"
        rgb = io.BytesIO()
        image.convert("RGB").save(rgb, format="PNG", **fg.PNG_SAVE)
    assert len(preview) < 0.6 * len(rgb.getvalue()), (len(preview), len(rgb.getvalue()))
