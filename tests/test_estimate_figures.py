"""A figure of the headline step that is not drawn is not a success (assets/estimate_figures.py): its asset's
metadata says why and the ERROR check estimate_figures_drawn fails, naming it (before, a warning in the log was all,
and the run exited 0 with the figure missing from the release)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import polars as pl
from dagster import AssetMaterialization, DagsterInstance, MetadataValue, build_asset_check_context

from assets import estimate_figures as ef
from assets.estimates import estimate_figures_drawn
from resources.dagster_resources import Warehouse


def _context() -> SimpleNamespace:
    return SimpleNamespace(log=logging.getLogger("test_estimate_figures"))


def _failing_draw(table: pl.DataFrame) -> None:
    raise ValueError(f"cannot draw {table.height} rows")


def test_a_figure_that_fails_says_so_in_its_metadata(tmp_path, caplog) -> None:
    warehouse = Warehouse(path=str(tmp_path / "benchmap.duckdb"))
    table = pl.DataFrame({"x": [1, 2]})
    # drawn before by the worker of its judged check, which returned the error as text
    metadata = ef.figure_later(_context(), warehouse, "unit_coverage_simulation_check", _failing_draw, table,
                               "title", drawn="ValueError: no bins")()
    assert metadata[ef.FIGURE_NOT_DRAWN].value == "RuntimeError: ValueError: no bins"
    # drawn by the pool: the error the drawing raised
    with caplog.at_level(logging.ERROR):
        metadata = ef.figure_later(_context(), warehouse, "labeler_reliability", _failing_draw, table, "title")()
    assert "cannot draw 2 rows" in metadata[ef.FIGURE_NOT_DRAWN].value
    assert "figure labeler_reliability not drawn" in caplog.text and "estimate_figures_drawn" in caplog.text


def _materialize(instance: DagsterInstance, asset: str, metadata: dict) -> None:
    instance.report_runless_asset_event(AssetMaterialization(asset_key=asset, metadata=metadata))


def test_the_check_fails_naming_the_figure_not_drawn() -> None:
    instance = DagsterInstance.ephemeral()
    drawn = {name: {name: MetadataValue.md("![figure](data:image/png;base64,AA==)"), "rows": 3}
             for name in ef.ESTIMATE_FIGURES}
    for asset, metadata in drawn.items():
        _materialize(instance, asset, metadata)
    result = estimate_figures_drawn(build_asset_check_context(instance=instance))
    assert result.passed and result.metadata["not_drawn"].value == {}

    _materialize(instance, "occupation_probability_calibration",
                 {ef.FIGURE_NOT_DRAWN: MetadataValue.text("ValueError: empty table"), "rows": 0})
    result = estimate_figures_drawn(build_asset_check_context(instance=instance))
    assert not result.passed
    assert result.metadata["not_drawn"].value == {"occupation_probability_calibration": "ValueError: empty table"}

    # a later run that draws it passes again
    _materialize(instance, "occupation_probability_calibration", drawn["occupation_probability_calibration"])
    assert estimate_figures_drawn(build_asset_check_context(instance=instance)).passed


def test_a_figure_never_materialized_or_without_its_metadata_is_not_drawn() -> None:
    assert ef.figures_not_drawn({}) == dict.fromkeys(ef.ESTIMATE_FIGURES, "never materialized")
    metadata = {name: {name: "md"} for name in ef.ESTIMATE_FIGURES} | {"labeler_reliability": {"rows": 1}}
    assert ef.figures_not_drawn(metadata) == {"labeler_reliability": "no figure labeler_reliability in its metadata"}


def test_a_long_worker_error_keeps_its_cause() -> None:
    """A worker's error carries the whole traceback; cut at 500 characters, a long one lost its last line, the
    cause (the metadata said only 'Traceback (most recent call last): File ...', sometimes)."""
    frames = "".join(f'  File "/somewhere/module_{i}.py", line {i}, in draw\n    step_{i}()\n' for i in range(40))
    text = f"WorkerError: figure x failed in worker process 1:\nTraceback (most recent call last):\n{frames}" \
           "ValueError: cannot draw 2 rows"
    brief = ef._brief(text)
    assert len(brief) <= 500
    assert brief.startswith("WorkerError: figure x failed") and brief.endswith("ValueError: cannot draw 2 rows")
    assert ef._brief("short") == "short"
