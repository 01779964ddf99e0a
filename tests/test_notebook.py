"""The analyst notebook, executed (nbclient) on a release built from the synthetic world with two benchmark indexes:
its headline is the release's, and no frame it holds mixes indexes."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path

import nbformat
import numpy as np
import polars as pl
import pytest
from nbclient import NotebookClient

from models import estimates as es
from models import report
from resources import release as rl
from tests.test_exports import build_world, export_tables

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "analyst.ipynb"
OTHER = "economic_agentic"
PER_INDEX = ("task_coverage", "occupation_coverage", "major_group_coverage", "coverage_headline")


def two_indexes(frame: pl.DataFrame, shift: float) -> pl.DataFrame:
    """`frame` as index `all` and, with every float moved by `shift`, as a second index: a notebook that does not
    keep one index doubles its rows."""
    base = frame.with_columns(pl.lit("all").alias("benchmark_index"))
    floats = [c for c, t in frame.schema.items() if t == pl.Float64]
    other = frame.with_columns([(pl.col(c) * (1 - shift)).alias(c) for c in floats]
                               + [pl.lit(OTHER).alias("benchmark_index")])
    return pl.concat([base, other])


@pytest.fixture(scope="module")
def release_root(tmp_path_factory) -> tuple[Path, pl.DataFrame, pl.DataFrame]:
    root = tmp_path_factory.mktemp("exports")
    world = build_world()
    tables = export_tables(world)
    for name in PER_INDEX:
        tables[name] = two_indexes(tables[name], 0.3)
    sim = es.simulate(np.random.default_rng(12), unsampled_benchmarks=1)  # a member without judged texts
    scopes = es.scopes_for(sim.problem)
    estimates = es.estimates_frame(sim.problem, scopes, es.run_estimators(sim.problem, scopes, n_draws=20))
    tables["headline_estimates"] = two_indexes(estimates.drop("benchmark_index"), 0.3)
    membership = tables["benchmark_index_membership"]
    tables["benchmark_index_membership"] = pl.concat([
        membership, membership.with_columns(pl.lit(OTHER).alias("benchmark_index"),
                                            (pl.col("benchmark") != "webarena").alias("included"))])
    labeled = world["prompt_task_labels"].group_by("benchmark").agg(pl.col("prompt_id").n_unique()
                                                                     .alias("n_labeled_prompts"))
    counts = report.benchmark_counts(tables["benchmarks"], tables["benchmark_index_membership"], labeled)
    tables["benchmark_counts"] = counts
    moment = dt.datetime(2030, 1, 31, 9, 0, tzinfo=dt.UTC)
    staging = rl.staging_folder(root, "run")
    summary = report.summary_markdown({k: v.filter(pl.col("benchmark_index") == "all")
                                       if "benchmark_index" in v.columns else v for k, v in tables.items()},
                                      export_date="2030-01-31")
    (staging / "summary.md").write_text(summary)
    # the other index's summary, as the exports write it (its rows, index all's per-benchmark rows beside them):
    # the notebook asserts its sentence opens it
    other = report.summary_markdown({k: v.filter(pl.col("benchmark_index") == OTHER)
                                     if "benchmark_index" in v.columns else v for k, v in tables.items()},
                                    export_date="2030-01-31", benchmark_index=OTHER,
                                    benchmark_rows=tables["headline_estimates"])
    assert "Not corrected: " in other
    (staging / f"summary_{OTHER}.md").write_text(other)
    published = rl.publish_export(tables, staging, root, created_at=moment, run_id="run",
                                  benchmarks=tables["benchmarks"], labelers=[], labeler_model="offline", sources=[],
                                  version="test")
    assert published.new
    return root, estimates, counts


def run_notebook(root: Path, monkeypatch, index: str, threshold: int = 5) -> list[str]:
    monkeypatch.setenv("BENCHMAP_EXPORTS", str(root))
    # the python3 kernelspec runs `python`: make that this interpreter (the venv), whatever PATH says
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    first = notebook.cells[1]
    assert first.source.startswith("# --- choose here") and 'INDEX = "all"' in first.source
    first.source = first.source.replace('INDEX = "all"', f'INDEX = "{index}"').replace(
        "THRESHOLD = 5 ", f"THRESHOLD = {threshold} ")
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2  # the coverage-by-group figure and the hours curve
    return "".join(o.get("text", "") for o in outputs if o.output_type == "stream").splitlines()


@pytest.mark.parametrize("index", ["all", OTHER])
def test_notebook_reproduces_the_release_headline_for_one_index(release_root, monkeypatch, index):
    root, estimates, counts = release_root
    text = run_notebook(root, monkeypatch, index)
    release = rl.latest_release(root)
    assert text[0] == f"release: {release.name}"
    # the headline the notebook prints is the release's: the answer over the release's own tables
    tables = {name: pl.read_parquet(release / "tables" / f"{name}.parquet")
              for name in ("headline_estimates", "benchmark_counts")}
    n, left_out = report.index_benchmarks(tables["benchmark_counts"], index)
    expected = report.headline_answer(tables["headline_estimates"], benchmark_index=index, n_benchmarks=n,
                                      released="2030-01-31", excluded=left_out)
    headline = next(line for line in text if line.startswith("HEADLINE: "))
    assert headline == f"HEADLINE: {expected.sentence}"
    assert (f"benchmark index `{index}`, {2 if index == OTHER else 3} benchmarks, released 2030-01-31"
            in headline)
    # a second read: for another index the notebook dropped the unjudged member its summary names
    assert "Not corrected: " in "\n".join(text) and "of 5 of the 6 benchmarks" in headline
    assert "summary.md opens with the same sentence" in text
    summary = release / ("summary.md" if index == "all" else f"summary_{index}.md")
    assert headline.removeprefix("HEADLINE: ") == summary.read_text().splitlines()[2].strip("*")
    # the hours curve ends at the labels-as-counted share of this index, not of two indexes added up
    curve_end = float(next(line for line in text if line.startswith("curve ends at ")).split()[-1])
    headline_rows = pl.read_parquet(release / "tables" / "coverage_headline.parquet").filter(
        (pl.col("benchmark_index") == index) & (pl.col("scope") == "all") & (pl.col("metric") == "hours_share_covered")
        & (pl.col("threshold") == 5))
    assert curve_end == pytest.approx(headline_rows["value"][0], abs=1e-4)
    frames = json.loads(next(line for line in text if line.startswith("FRAMES ")).removeprefix("FRAMES "))
    assert {"release", "estimates", "occupations", "groups", "tasks"} <= set(frames)
    assert all(found in ([], [index]) for found in frames.values()), frames  # [] : an empty frame
    assert all(frames[name] == [index] for name in ("release", "estimates", "occupations", "groups", "tasks"))


def test_the_hours_curve_draws_the_published_figure_of_its_own_threshold(release_root, monkeypatch):
    """With THRESHOLD = 1 the dashed line is the published figure at >= 1 prompt (bounds), not the headline's
    figure at >= 5 under a ">= 1" axis."""
    root, _, _ = release_root
    text = run_notebook(root, monkeypatch, "all", threshold=1)
    rows = pl.read_parquet(rl.latest_release(root) / "release.parquet").filter(
        (pl.col("benchmark_index") == "all") & (pl.col("unit_type") == "index")
        & (pl.col("quantity") == "hours_share_covered") & (pl.col("basis") != "labels_as_counted"))
    at = {t: r for t, r in zip(rows["threshold"].to_list(), rows.iter_rows(named=True), strict=True)}
    line = next(line for line in text if line.startswith("published at >= 1: "))
    assert line == f"published at >= 1: {at[1]['value']:.4f} ({at[1]['basis']})"
    # the line names the row it drew: >= 1's bounds, not >= 5's estimate (their values may coincide: the bounds'
    # value is never below the estimate at >= 5)
    assert at[1]["basis"] == "bounds" != at[5]["basis"]


def test_the_notebook_reads_a_release_folder_named_directly(release_root, monkeypatch):
    """BENCHMAP_EXPORTS naming a release folder (exports/latest) failed with FileNotFoundError: the notebook read
    latest.txt inside it (a probe, 2026-12-07)."""
    root, _, _ = release_root
    text = run_notebook(root / "latest", monkeypatch, "all")
    assert text[0] == f"release: {rl.latest_release(root).name}"
