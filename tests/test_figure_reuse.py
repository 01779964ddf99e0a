"""A figure drawn from unchanged tables is read back, not drawn again (assets/figure_reuse.py, issue 29 item 3);
a changed table draws it again; the outputs read back are the bytes drawn."""

from __future__ import annotations

import polars as pl

from assets.figure_reuse import figure_future
from models.figures import draw_outputs
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
