"""A figure drawn from unchanged tables is read back, not drawn again (assets/figure_reuse.py, issue 29 item 3);
a changed table draws it again; the outputs read back are the bytes drawn."""

from __future__ import annotations

import polars as pl

from assets.figure_reuse import figure_future
from models.figures import PREVIEW_DPI, draw_outputs, render_outputs
from models.figures.estimates import unit_coverage_figure
from resources.dagster_resources import Warehouse
from resources.worker_pool import WorkerPool


def _coverage_table(shift: float = 0.0) -> pl.DataFrame:
    return pl.DataFrame({
        "check": ["split"] * 3, "unit": ["task", "occupation", "major_group"], "threshold": [5, 5, 5],
        "mean_p": [0.2 + shift, 0.6, 0.9], "share_covered": [0.25, 0.55, 0.95], "n_units": [40, 30, 12],
    })


def test_a_figure_of_the_same_table_is_read_back_and_a_changed_one_drawn(tmp_path):
    warehouse = Warehouse(path=str(tmp_path / "benchmap.duckdb"))
    table = _coverage_table()
    with WorkerPool(workers=0) as pool:  # drawn in this process when gathered
        first = figure_future(warehouse, pool, "unit_coverage_simulation_check", [table], draw_outputs,
                              unit_coverage_figure, (table,), preview_dpi=40, name="figure unit_coverage")
        (files, preview), = pool.gather([first])
        assert files["png"].startswith(b"\x89PNG") and preview
        again = figure_future(warehouse, pool, "unit_coverage_simulation_check", [table.clone()], draw_outputs,
                              unit_coverage_figure, (table,), preview_dpi=40)
        assert again.done() and not pool._tasks  # read back: nothing submitted
        assert again.result() == (files, preview)
        changed = _coverage_table(0.1)
        redrawn = figure_future(warehouse, pool, "unit_coverage_simulation_check", [changed], draw_outputs,
                                unit_coverage_figure, (changed,), preview_dpi=40)
        assert pool._tasks  # submitted: the table changed
        (new_files, _), = pool.gather([redrawn])
        assert new_files["png"] != files["png"]


def _scores(shift: float = 0.0) -> pl.DataFrame:
    """occupation_model_scores as the heatmap reads it."""
    codes = ["15-1252.00", "43-4051.00", "29-1141.00"]
    return pl.DataFrame({
        "onet_soc_code": codes * 2, "model": ["model-a"] * 3 + ["model-b"] * 3, "min_prompts": [5] * 6,
        "n_prompts": [12, 9, 7, 12, 9, 7], "plain_mean": [0.5 + shift, 0.4, 0.7, 0.6, 0.3, 0.8],
        "weighted_mean": [0.45, 0.42, 0.66, 0.61, 0.35, 0.79 - shift],
    })


def test_a_figure_drawn_ahead_is_taken_only_for_the_same_tables(tmp_path):
    """heatmap_ahead (occupation_model_scores' step) starts report_figures' heatmap; report_figures takes that
    drawing when the tables it reads back are the same, and draws its own when they are not (a drawing of other
    tables is never published)."""
    from assets.figure_reuse import draw_ahead, report_figure_future, report_figure_inputs

    warehouse = Warehouse(path=str(tmp_path / "benchmap.duckdb"))
    titles = pl.DataFrame({"onet_soc_code": ["15-1252.00"], "title": ["Software Developers"]})
    with WorkerPool(workers=0) as pool:  # a task runs in this process when gathered
        assert draw_ahead(warehouse, "model_score_heatmap", {"occupation_model_scores": _scores(),
                                                             "occupations": titles}, pool)
        ahead = next(iter(pool._tasks))
        inputs = report_figure_inputs("model_score_heatmap", {"occupation_model_scores": _scores().clone(),
                                                              "occupations": titles.clone()})
        assert inputs is not None and list(inputs) == ["occupation_model_scores", "occupations"]
        taken = report_figure_future(warehouse, pool, "model_score_heatmap", inputs)
        assert taken is ahead and len(pool._tasks) == 1  # the same tables: the drawing started ahead
        (files, _), = pool.gather([taken])

        assert draw_ahead(warehouse, "model_score_heatmap", {"occupation_model_scores": _scores(0.2),
                                                             "occupations": titles}, pool)
        stale = next(iter(pool._tasks))
        changed = report_figure_inputs("model_score_heatmap", {"occupation_model_scores": _scores(0.1),
                                                               "occupations": titles})
        assert changed is not None
        own = report_figure_future(warehouse, pool, "model_score_heatmap", changed)
        assert own is not stale and stale.cancelled()  # other tables than the ones drawn ahead: drawn anew
        (own_files, _), = pool.gather([own])
        (scratch, _), = pool.gather([pool.submit(render_outputs, "model_score_heatmap", changed,
                                                 preview_dpi=PREVIEW_DPI)])
        assert own_files == scratch and own_files["png"] != files["png"]
        # already drawn and kept: nothing is started ahead again
        assert not draw_ahead(warehouse, "model_score_heatmap", {"occupation_model_scores": _scores(0.1),
                                                                 "occupations": titles}, pool)


def test_a_tables_own_figures_are_started_by_its_step_and_taken_only_for_the_same_rows(tmp_path, monkeypatch):
    """table_figures_ahead (occupation_coverage, major_group_coverage, coverage_models) starts the figures of one
    table from the step's frame; report_figures, reading the table back from the warehouse, takes that drawing;
    when the table it reads differs from the frame the drawing was started from, it draws its own."""
    from assets import figure_reuse
    from assets.figure_reuse import report_figure_future, report_figure_inputs, table_figures_ahead
    from models.coverage import occupation_coverage, task_coverage
    from resources import warehouse as wh
    from tests.test_coverage import world as world_fixture

    world = world_fixture.__wrapped__()
    frame = occupation_coverage(task_coverage(world["counts"], world["tasks"]), world["task_hours"],
                                world["occupations"])
    warehouse = Warehouse(path=str(tmp_path / "benchmap.duckdb"))
    with WorkerPool(workers=0) as pool:  # a task runs in this process when gathered
        monkeypatch.setattr(figure_reuse, "shared_pool", lambda: pool)
        assert table_figures_ahead(warehouse, "occupation_coverage", frame) == ["hours_by_coverage"]
        assert table_figures_ahead(warehouse, "task_coverage", frame) == []  # no figure of that table alone
        ahead = next(iter(pool._tasks))
        wh.replace_table(warehouse.path, "occupation_coverage", frame)
        inputs = report_figure_inputs("hours_by_coverage", {"occupation_coverage": warehouse.read_table(
            "occupation_coverage")})
        taken = report_figure_future(warehouse, pool, "hours_by_coverage", inputs)
        assert taken is ahead  # the table as read back: the drawing started ahead
        (files, _), = pool.gather([taken])

        other = frame.with_columns(pl.col("hours_share_covered_1") * 0.5)
        assert table_figures_ahead(warehouse, "occupation_coverage", other) == ["hours_by_coverage"]
        stale = next(iter(pool._tasks))
        own = report_figure_future(warehouse, pool, "hours_by_coverage", inputs)  # the table read back: `frame`
        assert own is not stale and stale.cancelled()
        assert pool.gather([own])[0][0] == files  # frame's drawing (kept), not the other frame's
