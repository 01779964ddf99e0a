"""Releases: the tidy release file's schema and content, immutable release folders, `latest`, no new release when
no published figure changed, what changed, the headline history; the one-line answer and the counts it quotes.

Built on the synthetic world of tests/test_exports.py plus published estimates from the estimators' own
simulation (models/estimates), so the numbers are computed, not typed.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re

import numpy as np
import polars as pl
import pytest

from models import estimates as es
from models import report
from models.estimates.mc_error import mc_rounded
from models.exports import release as rel
from resources import export_writer as ew
from resources import release as rl
from tests.test_exports import build_world, export_tables

T0 = dt.datetime(2030, 1, 31, 9, 15, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def estimates() -> pl.DataFrame:
    sim = es.simulate(np.random.default_rng(12))
    scopes = es.scopes_for(sim.problem)
    return es.estimates_frame(sim.problem, scopes, es.run_estimators(sim.problem, scopes, n_draws=20))


@pytest.fixture(scope="module")
def tables(estimates) -> dict[str, pl.DataFrame]:
    world = build_world()
    out = export_tables(world)
    out["headline_estimates"] = estimates
    return out


def publish(tables, tmp_path, moment=T0):
    root = tmp_path / "exports"
    staging = rl.staging_folder(root, f"run-{moment:%H%M%S}")
    return rl.publish_export(tables, staging, root, created_at=moment, run_id="run", benchmarks=tables["benchmarks"],
                             labelers=[], labeler_model="offline", sources=[], version="test-version",
                             excluded=[("all", "webshop", report.counts.NO_WORK_REASON),
                                       ("econ", "cybench", "not in this index: the cap keeps 3")])


# --- the release file ---------------------------------------------------------------------------------------


def test_release_schema_is_stable(tables):
    frame = rel.release_frame(tables)
    # the published schema: a change here is a breaking change for every analyst's script
    assert list(frame.schema.items()) == [
        ("benchmark_index", pl.Utf8), ("unit_type", pl.Utf8), ("unit_id", pl.Utf8), ("quantity", pl.Utf8),
        ("threshold", pl.Int64), ("value", pl.Float64), ("ci_low", pl.Float64), ("ci_high", pl.Float64),
        ("basis", pl.Utf8)]
    assert frame.select(rel.RELEASE_KEY).is_duplicated().sum() == 0  # one row per figure
    assert set(frame["unit_type"]) == {"index", "benchmark", "major_group", "occupation", "task"}
    assert frame["value"].is_nan().sum() == 0
    # same tables in another row order: the same bytes
    shuffled = {k: v.sample(fraction=1.0, shuffle=True, seed=3) for k, v in tables.items()}
    assert rel.release_csv_bytes(rel.release_frame(shuffled)) == rel.release_csv_bytes(frame)


def test_release_holds_every_published_headline_figure(tables, estimates):
    frame = rel.release_frame(tables)
    published = estimates.filter(pl.col("published") & (pl.col("scope") == "all"))
    assert published.height == 8
    for r in published.iter_rows(named=True):
        hit = frame.filter((pl.col("unit_type") == "index") & (pl.col("quantity") == r["quantity"])
                           & (pl.col("threshold") == r["threshold"]) & (pl.col("basis") == r["estimator"]))
        assert hit.height == 1
        assert hit["value"][0] == pytest.approx(r["value"]) and hit["ci_high"][0] == pytest.approx(r["ci_high"])
    counted = frame.filter(pl.col("quantity") == "benchmarks_counted")
    assert counted["value"].to_list() == [3.0]  # the world's three benchmarks in index `all`
    occupations = frame.filter((pl.col("unit_type") == "occupation") & (pl.col("quantity") == "task_share_covered"))
    occ = tables["occupation_coverage"]
    assert occupations.height == 2 * occ.height  # thresholds 1 and 5
    first = occ.row(0, named=True)
    row = occupations.filter((pl.col("unit_id") == first["onet_soc_code"]) & (pl.col("threshold") == 5))
    assert row["value"][0] == pytest.approx(first["task_share_covered_5"])


def test_an_index_that_counts_no_benchmark_has_no_figures_but_its_count(tables, estimates):
    """An index whose rules leave out every benchmark published 0.0 for every headline figure, on basis `labeler`
    (one no other index uses), while its summary said it "gives no figure" (a probe, 2026-12-07)."""
    pooled = estimates.filter(pl.col("scope") == "all")
    empty = pooled.with_columns(pl.lit("nothing").alias("benchmark_index"), pl.lit(0).alias("n_texts"),
                                pl.lit(0.0).alias("value"), (pl.col("estimator") == "labeler").alias("published"))
    membership = tables["benchmark_index_membership"]
    nobody = membership.filter(pl.col("benchmark_index") == "all").with_columns(
        pl.lit("nothing").alias("benchmark_index"), pl.lit(False).alias("included"))
    with_empty = {**tables, "headline_estimates": pl.concat([estimates, empty], how="diagonal_relaxed"),
                  "benchmark_index_membership": pl.concat([membership, nobody], how="diagonal_relaxed")}
    # its per-unit rows too (a probe found 81,755 rows of 0.0 when only the headline's were left out)
    coverage = tables["occupation_coverage"]
    with_empty["occupation_coverage"] = pl.concat([coverage.with_columns(pl.lit(name).alias("benchmark_index"))
                                                   for name in ("all", "nothing")])
    frame = rel.release_frame(with_empty).filter(pl.col("benchmark_index") == "nothing")
    assert frame.select("unit_type", "quantity", "value").rows() == [("index", "benchmarks_counted", 0.0)]
    # the indexes that count benchmarks keep every figure
    assert rel.release_frame(with_empty).filter(pl.col("benchmark_index") != "nothing").equals(
        rel.release_frame(tables))


# --- publishing ---------------------------------------------------------------------------------------------


def test_releases_are_immutable_and_only_written_when_a_figure_changes(tables, tmp_path):
    first = publish(tables, tmp_path)
    root = tmp_path / "exports"
    assert first.new and first.previous is None
    assert re.fullmatch(r"2030-01-31T091500Z-[0-9a-f]{8}", first.folder.name)
    listing = sorted(p.relative_to(first.folder).as_posix() for p in first.folder.rglob("*") if p.is_file())
    assert {"release.csv", "release.parquet", "data_documentation.md", "manifest.json", "benchmap_tables.xlsx",
            "data_dictionary.md", "tables/headline_estimates.parquet"} <= set(listing)
    assert not [p for p in listing if p.startswith(".")]  # no lock or temporary file left in a release
    assert (root / "latest.txt").read_text().strip() == first.folder.name
    assert os.readlink(root / "latest") == first.folder.name
    assert ew.verify_export(first.folder) == []
    manifest = json.loads((first.folder / "manifest.json").read_text())
    assert manifest["release"]["published_sha256"] == rel.content_hash(pl.read_parquet(first.folder / "release.parquet"))
    assert manifest["release"]["inputs"]["code_version"] == "test-version"
    assert manifest["export_date"] == first.folder.name
    readme = pl.read_excel(first.folder / "benchmap_tables.xlsx", sheet_name="README")
    assert readme.row(0) == ("answer", report.headline_answer(
        tables["headline_estimates"], n_benchmarks=None, released="2030-01-31").sentence)
    before = {p: p.read_bytes() for p in first.folder.rglob("*") if p.is_file()}
    assert not os.access(first.folder / "release.csv", os.W_OK) or os.geteuid() == 0
    assert not (first.folder / "release.csv").stat().st_mode & 0o222  # write bits removed

    # same figures an hour later: no new release, the staging folder is gone
    second = publish(tables, tmp_path, T0 + dt.timedelta(hours=1))
    assert not second.new and second.folder == first.folder
    assert rl.list_releases(root) == [first.folder]
    assert not any((root / ".staging").iterdir())

    # one published figure moves: a new release; the old one is byte for byte what it was
    changed = dict(tables)
    changed["headline_estimates"] = tables["headline_estimates"].with_columns(
        pl.when(pl.col("published") & (pl.col("scope") == "all") & (pl.col("quantity") == "tasks_covered")
                & (pl.col("threshold") == 5)).then(pl.col("value") + 7).otherwise(pl.col("value")).alias("value"))
    third = publish(changed, tmp_path, T0 + dt.timedelta(hours=2))
    assert third.new and third.previous == first.folder and third.folder != first.folder
    assert {p: p.read_bytes() for p in first.folder.rglob("*") if p.is_file()} == before
    assert ew.verify_export(first.folder) == [] and ew.verify_export(third.folder) == []
    assert (root / "latest.txt").read_text().strip() == third.folder.name == os.readlink(root / "latest")
    assert third.changes.select("unit_type", "quantity", "threshold", "change").rows() == [
        ("index", "tasks_covered", 5, "changed")]
    documentation = (third.folder / "data_documentation.md").read_text()
    assert f"Against {first.folder.name}: 1 changed, 0 added, 0 removed figures." in documentation
    # counted but adding to no task is told apart from left out of the index (the audit read both as not counted)
    assert "| all | webshop | yes | no prompt labeled as work" in documentation
    assert "| econ | cybench | no | not in this index: the cap keeps 3 |" in documentation
    for column in rel.RELEASE_SCHEMA:
        assert f"| `{column}` |" in documentation

    # the headline history: one row per release and published pooled quantity
    history = pl.read_csv(root / "headline_history.csv")
    assert history["release"].unique().sort().to_list() == [first.folder.name, third.folder.name]
    assert history.height == 2 * 8
    moved = history.filter((pl.col("quantity") == "tasks_covered") & (pl.col("threshold") == 5)).sort("release")
    assert moved["value"][1] - moved["value"][0] == pytest.approx(7)
    assert set(history["benchmarks"].to_list()) == {3}


def test_a_table_no_figure_holds_writes_a_new_release_when_it_changes(tables, tmp_path):
    """A probe (2026-12-07): a gold label file added labeler_validation rows, no figure of release.csv moved, and
    the run said "still the newest: this run's figures are the same": the release kept the old table. A release
    now stands only when every exported table is the same too."""
    assert "labeler_validation" in tables and not tables["labeler_validation"].is_empty()
    first = publish(tables, tmp_path)
    assert publish(tables, tmp_path, T0 + dt.timedelta(hours=1)).folder == first.folder  # nothing changed
    changed = dict(tables)
    changed["labeler_validation"] = tables["labeler_validation"].head(tables["labeler_validation"].height - 1)
    second = publish(changed, tmp_path, T0 + dt.timedelta(hours=2))
    assert second.new and second.folder != first.folder and second.changes.is_empty()  # the figures are the same
    manifest = json.loads((second.folder / "manifest.json").read_text())
    assert manifest["release"]["tables_changed"] == ["labeler_validation"]
    assert set(manifest["release"]["tables_sha256"]) == set(tables)
    assert pl.read_csv(second.folder / "tables" / "labeler_validation.csv").height == changed["labeler_validation"].height
    documentation = (second.folder / "data_documentation.md").read_text()
    assert (f"No figure of this file differs from {first.folder.name}; these tables do: labeler_validation."
            in documentation)
    assert publish(changed, tmp_path, T0 + dt.timedelta(hours=3)).folder == second.folder
    # a table is hashed as exported: the same rows in another order (four of the warehouse's tables come in
    # another row order from a run of the same inputs, and a --force run wrote a new release of identical files)
    shuffled = {name: frame.sample(fraction=1.0, shuffle=True, seed=5) for name, frame in changed.items()}
    assert rl.table_hashes(shuffled) == rl.table_hashes(changed)
    assert publish(shuffled, tmp_path, T0 + dt.timedelta(hours=4)).folder == second.folder


def test_another_code_version_writes_a_release_with_the_same_figures(tables, tmp_path):
    """Code may change what no figure holds (the summary's wording, the checks' tables): a run of another code
    version writes a release even when every figure is the same, so a release's files are always what its
    manifest's code version makes; the same code and figures write none."""
    first = publish(tables, tmp_path)
    root = tmp_path / "exports"
    staging = rl.staging_folder(root, "run-next")
    second = rl.publish_export(tables, staging, root, created_at=T0 + dt.timedelta(hours=1), run_id="run",
                               benchmarks=tables["benchmarks"], labelers=[], labeler_model="offline", sources=[],
                               version="test-version-2")
    assert second.new and second.previous == first.folder and second.changes.height == 0
    manifest = json.loads((second.folder / "manifest.json").read_text())
    assert manifest["release"]["inputs"]["code_version"] == "test-version-2"
    assert rl.list_releases(root) == [first.folder, second.folder]
    again = publish(tables, tmp_path, T0 + dt.timedelta(hours=2))  # back to the first code version: a new one
    assert again.new and rl.list_releases(root)[-1] == again.folder
    same = publish(tables, tmp_path, T0 + dt.timedelta(hours=3))
    assert not same.new and same.folder == again.folder


def test_a_release_is_never_overwritten(tables, tmp_path):
    first = publish(tables, tmp_path)
    staging = rl.staging_folder(tmp_path / "exports", "other")
    (staging / "x.txt").write_text("x")
    with pytest.raises(FileExistsError, match="never rewritten"):
        rl.promote(staging, tmp_path / "exports", first.folder.name)


# --- the one-line answer and the counts ----------------------------------------------------------------------


def test_answer_sentence_quotes_the_published_estimates(estimates):
    counts = report.benchmark_counts(
        pl.DataFrame({"benchmark": ["a", "b", "webshop", "x"], "n_prompts": [10, 20, 500, 5]}),
        pl.DataFrame({"benchmark_index": ["all"] * 4, "benchmark": ["a", "b", "webshop", "x"],
                      "included": [True, True, True, False], "reason": [None, None, None, "too small"]}),
        pl.DataFrame({"benchmark": ["a", "b", "x"], "n_labeled_prompts": [9, 20, 5]}),
    )
    n, notes = report.index_benchmarks(counts, "all")
    assert n == 3  # webshop is counted (it is a member) but named: it adds to no task
    assert notes == [("x", "not in this index: too small"), ("webshop", report.counts.NO_WORK_REASON)]
    answer = report.headline_answer(estimates, n_benchmarks=n, released="2030-01-31", excluded=notes)
    hours = estimates.filter(pl.col("published") & (pl.col("scope") == "all")
                             & (pl.col("quantity") == "hours_share_covered") & (pl.col("threshold") == 5)).row(0, named=True)
    shown, note = mc_rounded(hours, share=True)  # figures rounded to what the draws support, their MC error
    assert answer.sentence.startswith(
        f"AI benchmarks exercise about {100 * shown['value']:.1f}% ({100 * shown['ci_low']:.1f}%\u2013"
        f"{100 * shown['ci_high']:.1f}%{'; ' + note if note else ''}) of US work hours at >= 5 prompts: ")
    assert "model-assisted estimate" in answer.sentence and "3 benchmarks, released 2030-01-31" in answer.sentence
    assert 1 <= len(answer.supporting) <= 5
    assert answer.supporting[-1] == ("Not in this index: x (too small). Counted but adding to no task: webshop (no "
                                     "prompt labeled as work, so it adds to no task).")
    assert answer.figures["hours_share_covered_5"] == pytest.approx(hours["value"])
    assert report.headline_answer(None) is None
    # one of a kind in the singular (a re-probe read "1 benchmarks" and "would say 1 occupations")
    assert "1 benchmark, released" in report.headline_answer(estimates, n_benchmarks=1, released="2030-01-31").sentence
    one = estimates.with_columns(pl.when((pl.col("estimator") == "labels_as_truth")
                                         & (pl.col("quantity") == "occupations_covered"))
                                 .then(1.0).otherwise(pl.col("value")).alias("value"))
    assert any("would say 1 occupation at" in line for line in report.headline_answer(one).supporting)
    # an index no benchmark qualifies for measures nothing: it read "AI benchmarks exercise about 0.0% ... 0 of 923
    # occupations" and "would say 0 occupations instead of 0: the labels miss tasks" (a probe, 2026-12-07)
    empty = report.headline_answer(estimates, n_benchmarks=0, released="2030-01-31", excluded=notes)
    assert empty.sentence.startswith("Benchmark index `all` counts no benchmark (released 2030-01-31): ")
    assert "exercise" not in empty.sentence and empty.supporting == [answer.supporting[-1]]
    # the labels' count beside the estimate says "miss" only when it is below it
    above = estimates.with_columns(pl.when((pl.col("estimator") == "labels_as_truth")
                                           & (pl.col("quantity") == "occupations_covered"))
                                   .then(1e6).otherwise(pl.col("value")).alias("value"))
    assert not any("would say" in line for line in report.headline_answer(above).supporting)


def test_the_summary_of_an_index_that_counts_no_benchmark_quotes_no_figure(tables):
    """Its opening said it "gives no figure", and its 'Coverage, as estimated' then printed "O*NET tasks: 0 (0-0) of
    18,796 ... US work hours: 0.0% (0.0%-0.0%)" (a probe, 2026-12-07)."""
    world = build_world()
    nobody = world["benchmark_index_membership"].with_columns(pl.lit(False).alias("included"))
    counts = report.benchmark_counts(world["benchmarks"], nobody, world["prompt_task_labels"].group_by(
        "benchmark").agg(pl.col("prompt_id").n_unique().alias("n_labeled_prompts")))
    summary = report.summary_markdown(dict(tables) | {"benchmark_counts": counts}, onet_tasks=world["onet_tasks"],
                                      export_date="2030-01-31")
    estimated = summary.split("## Coverage, as estimated")[1].split("## ")[0]
    assert "No figure: the index counts no benchmark" in estimated and "(0\u2013" not in summary
    assert "## Counts: what each one counts" in summary and "0 of the 3 landed benchmarks are counted" in summary
    assert "% of US work hours" not in summary.split("## Coverage, as estimated")[1]


def test_summary_opens_with_the_answer_and_titles_the_raw_labels(tables, estimates):
    world = build_world()
    counts = report.benchmark_counts(world["benchmarks"], world["benchmark_index_membership"],
                                     world["prompt_task_labels"].group_by("benchmark").agg(
                                         pl.col("prompt_id").n_unique().alias("n_labeled_prompts")))
    summary = report.summary_markdown(dict(tables) | {"benchmark_counts": counts}, onet_tasks=world["onet_tasks"],
                                      export_date="2030-01-31")
    lines = summary.splitlines()
    answer = report.headline_answer(estimates, n_benchmarks=3, released="2030-01-31")
    assert lines[2] == f"**{answer.sentence}**"
    supporting = [line for line in lines[3:10] if line.startswith("- ")]
    assert supporting and len(supporting) <= 5
    sections = [line for line in lines if line.startswith("## ")]
    assert sections.index("## Coverage, as estimated") < sections.index("## What the raw labels say")
    estimated = summary.split("## Coverage, as estimated")[1].split("## ")[0]
    tasks = estimates.filter(pl.col("published") & (pl.col("scope") == "all") & (pl.col("quantity") == "tasks_covered")
                             & (pl.col("threshold") == 5)).row(0, named=True)
    shown, note = mc_rounded(tasks, share=False)
    assert (f"O*NET tasks: {shown['value']:,.0f} ({shown['ci_low']:,.0f}\u2013{shown['ci_high']:,.0f}"
            f"{'; ' + note if note else ''})") in estimated
    raw = summary.split("## What the raw labels say")[1].split("\n## ")[0]
    assert "**Tasks.** Of the" in raw  # the labels-as-counted figures live only under their title
    assert "**Tasks.** Of the" not in summary.split("## What the raw labels say")[0]
    counts_section = summary.split("## Counts: what each one counts")[1].split("\n## ")[0]
    rated = int(world["onet_tasks"]["has_ratings"].sum())
    assert f"{rated:,} of them carry an O*NET importance rating" in counts_section
    assert "**Benchmarks.** 3 of the 3 landed benchmarks are counted in index `all`" in counts_section


def test_exposure_base_rates_by_hand():
    frame = pl.DataFrame({
        "exposed": [True, True, False, False, False, False],
        "gpt4_exposed": [True, True, True, True, False, False],
        "covered_5": [True, False, True, False, False, False],
    })
    rates = report.exposure_base_rates(frame)
    assert rates["human"] == {"share_exposed": pytest.approx(2 / 6), "covered_exposed": 0.5,
                              "covered_not": 0.25, "n": 6.0}
    assert rates["gpt4"]["share_exposed"] == pytest.approx(4 / 6)
    assert rates["gpt4"]["covered_exposed"] == 0.5 and rates["gpt4"]["covered_not"] == 0.0
    line = report.exposure_difference_finding({"task_analysis_frame": frame})[0]
    assert "GPT-4 rates 67% of tasks exposed against the humans' 33%" in line


def test_run_all_ends_with_the_answer_then_the_raw_labels(tables, tmp_path):
    from pipelines import run_report as rr
    from tests.test_exports import fill_warehouse

    world = build_world()
    path = tmp_path / "warehouse" / "benchmap.duckdb"
    fill_warehouse(world, path)
    lines = rr.headline_lines(str(path))
    expected = report.headline_answer(world["headline_estimates"], n_benchmarks=3)
    assert lines[0] == expected.sentence  # no release yet: the sentence names none
    assert lines[1:1 + len(expected.supporting)] == [f"  - {line}" for line in expected.supporting]
    raw = lines[1 + len(expected.supporting)]
    assert raw.startswith("what the raw labels say (all benchmarks") and raw.endswith("for comparison only:")
    # after a release, the sentence names its date
    publish(tables, tmp_path / "warehouse")
    assert rr.headline_lines(str(path))[0].endswith("3 benchmarks, released 2030-01-31).")


def test_a_release_workbook_started_by_an_earlier_step_is_taken_only_while_its_tables_are_the_exports(
        tables, tmp_path):
    """A report step starts the release's workbook (rl.start_release_workbook, the exports step's arguments);
    publish_export takes it when the tables it was made from are the ones published, else writes its own: the
    workbook published always shows the tables published. Nothing is started when the figures are not new."""
    import openpyxl

    from models import exports as ex

    # a streamed table is compared by its shape (ew.StartedWorkbook.made_from): it must have no sheet
    assert set(ex.STREAMED_TABLES) <= set(ex.FILE_ONLY_TABLES)
    root = tmp_path / "exports"
    args = {"created_at": T0, "run_id": "run", "benchmarks": tables["benchmarks"], "labelers": [],
            "labeler_model": "offline", "sources": [], "version": "test-version"}

    staging = rl.staging_folder(root, "run-a")
    assert rl.start_release_workbook(tables, staging, root, **args) and ew.has_workbook_ahead(staging)
    published = rl.publish_export(tables, staging, root, **args)
    assert published.new and published.result.workbook_ahead and not ew.has_workbook_ahead(staging)
    assert ew.verify_export(published.folder) == []

    # the same figures again: no release to make, no workbook started
    assert not rl.start_release_workbook(tables, rl.staging_folder(root, "run-b"), root, **args)

    # a table changed after the workbook was started (its content differs): the export writes its own
    def scaled(factor: float) -> dict[str, pl.DataFrame]:
        return {**tables, "headline_estimates": tables["headline_estimates"].with_columns(pl.col("value") * factor)}

    staging = rl.staging_folder(root, "run-c")
    later = {**args, "created_at": T0 + dt.timedelta(hours=1)}
    assert rl.start_release_workbook(scaled(0.5), staging, root, **later)
    published = rl.publish_export(scaled(0.25), staging, root, **later)
    assert published.new and not published.result.workbook_ahead and ew.verify_export(published.folder) == []
    sheet = published.result.tables[[f.table for f in published.result.tables].index("headline_estimates")].sheet
    book = openpyxl.load_workbook(published.folder / published.result.workbook.name, read_only=True)
    rows = list(book[sheet].iter_rows(values_only=True))
    values = [r[rows[0].index("value")] for r in rows[1:]]
    expected = ew.read_export_table(published.folder, "headline_estimates")["value"].to_list()
    assert values == pytest.approx(expected, abs=1e-4)  # the sheet rounds to 4 digits (float_precision)
    assert values != pytest.approx(ew.read_export_table(published.previous, "headline_estimates")["value"].to_list(),
                                   abs=1e-4)


def test_a_workbook_started_ahead_is_taken_only_for_the_same_export(tables, tmp_path):
    """publish_export starts the workbook before the release lock (ew.start_workbook); write_exports takes it with
    the same arguments and drops it otherwise: the workbook published is the one of the export written."""
    import openpyxl

    from resources.worker_pool import shared_pool

    directory = tmp_path / "staging"
    args = {"run_id": "run", "labelers": [], "version": "test-version", "name": "2030-01-31T091500Z-aaaa0000"}
    started = ew.start_workbook(tables, directory, **args)
    result = ew.write_exports(tables, directory, benchmarks=tables["benchmarks"], sources=[], started=started, **args)
    assert started.future.done() and ew.verify_export(directory) == []
    assert shared_pool().gather([started.future])[0] == {f.table: f.sheet for f in result.tables if f.sheet}

    other = tmp_path / "other"
    stale = ew.start_workbook(tables, other, **{**args, "name": "2030-01-31T091500Z-bbbb0000"})
    result = ew.write_exports(tables, other, benchmarks=tables["benchmarks"], sources=[], started=stale, **args)
    assert ew.verify_export(other) == []
    readme = openpyxl.load_workbook(result.workbook, read_only=True)["README"]
    text = " ".join(str(c) for row in readme.iter_rows(values_only=True) for c in row if c is not None)
    assert args["name"] in text and "bbbb0000" not in text  # its own workbook, not the one started for another


def test_a_change_is_shown_with_the_digits_that_tell_its_values_apart():
    """An audit: 'What changed' printed values at 4 significant digits, so a row read '268.3 -> 268.3'."""
    key = {"benchmark_index": "all", "unit_type": "index", "unit_id": "all", "quantity": "occupations_covered",
           "threshold": 1, "basis": "bounds"}
    changes = pl.DataFrame([{**key, "change": "changed", "previous": 268.2744, "current": 268.3125},
                            {**key, "quantity": "tasks_covered", "change": "changed", "previous": 2293.0,
                             "current": 2291.125}])
    text = rel.data_documentation(pl.DataFrame(schema=rel.RELEASE_SCHEMA), release="r2", previous_release="r1",
                                  changes=changes)
    assert "| changed | 268.27 | 268.31 |" in text and "| changed | 2293 | 2291 |" in text
    assert rel._fmt_change(1.00001, 1.00002) == ("1.00001", "1.00002") and rel._fmt_change(0.5, None) == ("0.5", "")


def test_verify_export_sees_files_the_manifest_does_not_account_for(tables, tmp_path):
    """An audit: verify_export checked only the files the manifest lists, so a file slipped into a release, or a
    manifest whose file and table lists were emptied, passed as sound."""
    import shutil

    folder = publish(tables, tmp_path).folder
    assert ew.verify_export(folder) == []
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    (copy / "tables" / "extra.csv").write_text("a,b\n1,2\n")
    assert ew.verify_export(copy) == ["1 file(s) in the folder are not in the manifest: tables/extra.csv"]
    (copy / "tables" / "extra.csv").unlink()
    manifest = json.loads((copy / "manifest.json").read_text())
    assert manifest["environment"]["packages"]["polars"] and manifest["environment"]["python"]
    (copy / "manifest.json").write_text(json.dumps({**manifest, "files": [], "tables": []}))
    problems = ew.verify_export(copy)
    assert problems[0].startswith(f"{len(manifest['files'])} file(s) in the folder are not in the manifest")
    assert problems[1].startswith("expected tables neither exported nor listed as missing: ['")


def test_the_answer_names_the_benchmarks_no_judge_corrected():
    """An audit (a blind benchmark arrives without judged texts): such a benchmark counts through the labeler
    alone, far too low (occubench's tasks at >= 5: 68 with its judged texts, 8 without), while the sentence said
    every benchmark's labels were 'corrected by a judge's reading'."""
    sim = es.simulate(np.random.default_rng(12), unsampled_benchmarks=2)
    scopes = es.scopes_for(sim.problem)
    frame = es.estimates_frame(sim.problem, scopes, es.run_estimators(sim.problem, scopes, n_draws=10))
    names = list(sim.problem.benchmarks)
    unjudged = sorted(names[-2:])
    assert [b for i, b in enumerate(names) if sim.problem.n_sampled(i) == 0] == names[-2:]
    answer = report.headline_answer(frame, n_benchmarks=len(names))
    assert f"sampled prompt texts of {len(names) - 2} of the {len(names)} benchmarks;" in answer.sentence
    line = next(s for s in answer.supporting if s.startswith("Not corrected: "))
    assert line.startswith(f"Not corrected: {', '.join(unjudged)} have no judged texts")
    # a benchmark outside the index is not the index's to name
    outside = [(unjudged[0], "not in this index: too small")]
    answer = report.headline_answer(frame, n_benchmarks=len(names) - 1, excluded=outside)
    assert f"Not corrected: {unjudged[1]} has no judged texts, so it counts" in " ".join(answer.supporting)
    assert "do not carry the labeler's error there" in " ".join(answer.supporting)
    # every benchmark judged: neither
    full = report.headline_answer(frame.with_columns(pl.col("n_sampled").fill_null(0).clip(1)))
    assert "of the" not in full.sentence and not any(s.startswith("Not corrected") for s in full.supporting)
    # the map's header carries it with the sentence
    header = report.headlines_by_threshold(report.headline_answer(frame, n_benchmarks=len(names)))
    assert "Not corrected: " in header[5]
    # a second read: another index's summary reads its own rows, which hold no per-benchmark rows (index `all`'s)
    indexed = frame.with_columns(pl.lit("all").alias("benchmark_index"))
    other = indexed.filter(pl.col("scope") == "all").with_columns(pl.lit("other").alias("benchmark_index"))
    both = pl.concat([indexed, other])
    text = report.summary_markdown({"headline_estimates": other}, benchmark_index="other", benchmark_rows=both)
    assert f"Not corrected: {', '.join(unjudged)} have no judged texts" in text
    assert "Not corrected" not in report.summary_markdown({"headline_estimates": other}, benchmark_index="other")


def test_the_limitation_names_the_cross_fitted_labels_the_estimates_read():
    """An audit: the line said the estimates read selector_oof.json (leave one benchmark out) while, with the
    neighbour stack's labels published, they read neighbour_oof.json (leave one text out within the benchmark)."""
    from models.report.limitations import estimate_limitations

    validation = pl.DataFrame({"metric": ["ref_cv_within_benchmark_task_f1"], "value": [0.58]})

    def line(version: str) -> str:
        estimates = pl.DataFrame({"labeler_version": [version]})
        tables = {"labeler_validation": validation, "headline_estimates": estimates}
        return next(s for s in estimate_limitations(tables) if s.startswith("**Labeler fitted on the judge sample"))

    stacked = line("offline-calibrated+v1+s6169916277+n599847aeeb")
    assert "neighbour_oof.json" in stacked and "a benchmark with a judge sample" in stacked
    selector = line("offline-calibrated+v1+s6169916277")
    assert "selector_oof.json" in selector and "new benchmarks" in selector


def test_the_label_quality_lines_say_what_is_in_sample_and_what_leaving_a_benchmark_out_misses():
    """An audit: GDPval's human-label figures were quoted with no word that its prompts tuned the retriever, and
    'every model and setting chosen without the evaluated text's benchmark' overstated the out-of-sample
    figures (settings were chosen on them; close relatives stay in the fit)."""
    from models.report.limitations import labeler_limitations, stepped_label_quality

    validation = pl.DataFrame({"benchmark": ["gdpval", "theagentcompany"], "labeler": ["offline"] * 2,
                               "labeler_version": ["v"] * 2, "metric": ["occupation_top1"] * 2,
                               "value": [0.59, 0.32], "ci_low": [0.5, 0.26], "ci_high": [0.68, 0.4], "n": [110, 167]})
    offline = pl.DataFrame({"labeler": ["offline"]})  # the published labeler (labeler_of reads task_coverage)
    lines = " ".join(labeler_limitations({"labeler_validation": validation, "task_coverage": offline}))
    assert "GDPval's figures are in sample" in lines
    assert "in sample" not in " ".join(labeler_limitations(
        {"labeler_validation": validation.filter(pl.col("benchmark") != "gdpval"), "task_coverage": offline}))
    # gold-task ranks come from the selector fitted on the reference texts, some of them gold prompts (audit Q)
    jobbench = pl.DataFrame({"benchmark": ["jobbench"], "labeler": ["offline"], "labeler_version": ["v"],
                             "metric": ["task_hit_at1"], "value": [0.33], "ci_low": [0.1], "ci_high": [0.7], "n": [6]})
    tasks = " ".join(labeler_limitations({"labeler_validation": jobbench, "task_coverage": offline}))
    assert "gold-task figures (jobbench)" in tasks and "measured in sample" in tasks
    assert "gold-task" not in lines  # occupation rows only
    llm = pl.DataFrame({"labeler": ["openai"]})  # an LLM labeler's rows: not tuned on GDPval
    assert "in sample" not in " ".join(labeler_limitations(
        {"labeler_validation": validation.with_columns(pl.lit("openai").alias("labeler")), "task_coverage": llm}))
    line = stepped_label_quality({}, {})
    assert "close relatives" in line and "chosen looking at these figures" in line
    assert "every model and setting chosen without" not in line


def test_the_label_quality_line_says_why_task_f1_sits_above_precision_and_recall():
    """An audit: "task F1 58% (precision 57%, recall 51%)" reads as an error, a harmonic mean above both. The three
    are means over different prompt-passes (F1 over all, a text both call not work scoring 1), so the line gives
    each its count and says why, where it happens."""
    from models.report.limitations import stepped_label_quality

    def stat(value: float, n: int) -> dict:
        return {"value": value, "ci_low": value - 0.03, "ci_high": value + 0.03, "n": n}

    row = {"ref_cv_within_benchmark_task_f1": stat(0.583, 998), "ref_cv_within_benchmark_task_precision":
           stat(0.573, 806), "ref_cv_within_benchmark_task_recall": stat(0.514, 822),
           "ref_cv_new_benchmark_task_f1": stat(0.166, 998), "ref_cv_new_benchmark_task_precision": stat(0.112, 928),
           "ref_cv_new_benchmark_task_recall": stat(0.221, 822)}
    line = stepped_label_quality(row, {})
    within, new = line.split("**Leaving one benchmark out**")
    assert ("task F1 58% (95% CI 55%\u201361%) over 998 prompt-passes (precision 57% (95% CI 54%\u201360%) over "
            "the 806 where the labels name a task, recall 51% (95% CI 48%\u201354%) over the 822 where the judge does; "
            "F1 sits above both: a text both call not work scores 1 in it and counts in neither)") in within
    assert "over the 822 where the judge does)" in new and "sits above both" not in new


def test_text_from_landing_folders_and_index_files_is_shown_as_written_in_the_markdown():
    """A probe (2026-12-07): a benchmark.toml version `+1 <b>v</b>`, an index file's title and reasons with
    `<script>` and `<img onerror=...>`, and a results.csv model name stayed HTML once summary.md and
    data_documentation.md were rendered. They are escaped where they are written."""
    from markdown_it import MarkdownIt

    from models.markdown import markdown_literal
    from models.report.counts import index_findings
    from models.report.limitations import benchmark_limitations

    evil = "<img src=x onerror=alert(1)> *bold* | [link](javascript:alert(2))"
    render = MarkdownIt("commonmark").enable("table").render
    benchmarks = pl.DataFrame({"benchmark": ["zz"], "version": [evil], "n_prompts": [3], "n_results": [0]})
    membership = pl.DataFrame({"benchmark_index": ["ix"] * 2, "benchmark": ["a", "b"], "included": [True, False],
                               "title": [evil] * 2, "version": ["1 <b>v</b>"] * 2, "index_file": ["ix.toml"] * 2,
                               "reason": [None, evil], "decided_by": ["rule", "exclude"], "unknown_passed": [None, None]})
    documentation = rel.data_documentation(rel.release_frame({}), release="r", previous_release=None,
                                           changes=pl.DataFrame(), excluded=[("ix", "b", f"not in this index: {evil}")])
    texts = [*benchmark_limitations({"benchmarks": benchmarks}), *index_findings("ix", membership), documentation]
    for text in texts:
        html = render(text)
        assert "<img" not in html and "<b>" not in html and "<em>bold" not in html and "href" not in html, html
    assert "&lt;img src=x onerror=alert(1)&gt;" in render(texts[0])  # shown, as text
    assert markdown_literal("a\nb|c") == "a b\\|c"


def test_a_release_a_killed_run_left_unpointed_is_set_aside_and_a_deleted_latest_link_repaired(tables, tmp_path):
    """Two probes (2026-12-07): (1) a run killed after renaming its release into place, before pointing `latest`
    at it, left a complete-looking folder that the next run never adopted or removed: headline_history listed it
    beside the next run's copy of the same figures. (2) `latest` deleted by hand stayed gone while the release
    stood, and the run said "also .../latest"."""
    root = tmp_path / "exports"
    first = publish(tables, tmp_path)
    changed = dict(tables)
    changed["labeler_validation"] = tables["labeler_validation"].head(tables["labeler_validation"].height - 1)
    killed = publish(changed, tmp_path, T0 + dt.timedelta(hours=1))
    assert killed.new
    rl.update_latest(root, first.folder.name)  # as if the run died between the rename and update_latest
    again = publish(changed, tmp_path, T0 + dt.timedelta(hours=2))
    assert again.set_aside == (killed.folder.name,) and again.new and again.previous == first.folder
    assert rl.list_releases(root) == [first.folder, again.folder]
    assert (root / rl.UNRELEASED_DIR / killed.folder.name / "manifest.json").is_file()  # moved, not deleted
    assert set(pl.read_csv(root / "headline_history.csv")["release"]) == {first.folder.name, again.folder.name}
    assert rl.set_aside_unreleased(root) == ()  # nothing newer than the latest

    (root / "latest").unlink()
    stood = publish(changed, tmp_path, T0 + dt.timedelta(hours=3))
    assert not stood.new and stood.folder == again.folder
    assert os.readlink(root / "latest") == again.folder.name == (root / "latest.txt").read_text().strip()
