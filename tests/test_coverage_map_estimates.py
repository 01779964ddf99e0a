"""The coverage map reads the per-occupation estimates (issue 25 item 5): occupation_estimates rows become the
page's per-index, per-threshold entries in tile order, the class cut-offs are the documented ones, and the
warehouse builder picks the table up when it exists (the browser test checks the page itself)."""

from __future__ import annotations

import json

import polars as pl
import pytest

from models.coverage_map import (
    ESTIMATE_CLASSES,
    band_check,
    colour_for_p,
    estimate_class,
    estimate_classes,
    map_estimates,
)
from resources import warehouse as wh
from resources.coverage_map_queries import build_coverage_map, build_coverage_map_from_warehouse
from tests.test_exports import _hand_made_map_inputs


def _estimates() -> pl.DataFrame:
    return pl.DataFrame({
        "benchmark_index": ["all", "all", "all", "econ"],
        "onet_soc_code": ["15-1252.00", "11-1011.00", "15-1252.00", "11-1011.00"],
        "threshold": [1, 1, 5, 1],
        "p_covered": [0.95, 0.1, 0.0999, 0.5],
        "prompts_mean": [7.25, 1.0, 0.5, 2.0],
        "prompts_low": [3.0, 0.0, 0.0, 0.0],
        "prompts_high": [12.0, 3.0, 2.0, 5.0],
        "labels_count": [2, 3, 2, 1],
        "judged_texts": [4, 0, 4, 1],
        "p_covered_mc_se": [0.0155, 0.0213, 0.0213, 0.0354],
        "other_column": ["x", "y", "z", "w"],
    })


def test_classes_have_the_documented_cut_offs():
    assert [estimate_class(p) for p in (1.0, 0.9, 0.8999, 0.1, 0.0999, 0.0)] == [0, 0, 1, 1, 2, 2]
    assert [label.split(" (")[0] for _, _, label in ESTIMATE_CLASSES] == ["likely covered", "unsure", "likely not"]
    assert colour_for_p(0.95) == ESTIMATE_CLASSES[0][1] != colour_for_p(0.5) != colour_for_p(0.01)


def test_map_estimates_in_tile_order_and_sparse_rows_are_p_zero(tmp_path):
    occupations, labels, prompts, tasks = _hand_made_map_inputs()
    html, data = build_coverage_map(occupations, labels, prompts, tasks, occupation_estimates=_estimates())
    codes = [o["c"] for o in data["occupations"]]
    assert codes == ["11-1011.00", "15-1252.00"]
    est = data["estimates"]
    # p_covered, prompts mean / low / high, labels as counted, judged texts, p_covered's Monte Carlo error
    assert est["all"]["1"] == [[0.1, 1.0, 0.0, 3.0, 3.0, 0.0, 0.0213], [0.95, 7.25, 3.0, 12.0, 2.0, 4.0, 0.0155]]
    assert est["all"]["5"] == [None, [0.0999, 0.5, 0.0, 2.0, 2.0, 4.0, 0.0213]]  # 11-1011 has no row at >= 5
    assert est["econ"]["5"] == [None, None] and est["econ"]["1"][0][0] == 0.5
    assert estimate_classes(data, "all", 1) == {"11-1011.00": 1, "15-1252.00": 0}
    assert estimate_classes(data, "all", 5) == {"11-1011.00": 2, "15-1252.00": 2}
    assert estimate_classes(data, "nope", 1) == {}
    assert '"classes":' in html and "likely covered" in html
    assert "coloured by the estimated probability that it has a task exercised" in html
    assert "coloured by the share of its tasks covered" in build_coverage_map(occupations, labels, prompts, tasks)[0]
    # without estimates the page has none and colours by the labels
    assert build_coverage_map(occupations, labels, prompts, tasks)[1]["estimates"] == {}
    assert map_estimates(None, codes) == {}

    # the warehouse builder reads occupation_estimates when the table exists
    path = tmp_path / "warehouse.duckdb"
    for name, frame in [("prompt_task_labels", labels), ("benchmark_prompts", prompts), ("onet_tasks", tasks)]:
        wh.replace_table(path, name, frame)
    assert build_coverage_map_from_warehouse(path, occupations)[1]["estimates"] == {}
    wh.replace_table(path, "occupation_estimates", _estimates())
    _, from_warehouse = build_coverage_map_from_warehouse(path, occupations)
    assert from_warehouse["estimates"] == est
    assert from_warehouse["estimates"]["all"]["1"][1][0] == pytest.approx(0.95)
    assert from_warehouse["band_check"] == {}  # no simulation check in this warehouse: the legend quotes none
    wh.replace_table(path, "unit_coverage_simulation_check", _simulation_check())
    assert build_coverage_map_from_warehouse(path, occupations)[1]["band_check"] == band_check(_simulation_check())


def _simulation_check() -> pl.DataFrame:
    """unit_coverage_simulation_check rows: the outer bins of two checks, and rows the band check must skip."""
    rows = [  # check, unit, threshold, predictor, p_low, p_high, n_units, share_covered
        ("split_fifth", "occupation", 1, "p_covered", 0.9, 1.0, 639, 0.864),
        ("split_half", "occupation", 1, "p_covered", 0.9, 1.0, 749, 1.0),
        ("split_fifth", "occupation", 1, "p_covered", 0.0, 0.1, 1504, 0.061),
        ("split_half", "occupation", 1, "p_covered", 0.0, 0.1, 1642, 0.03),
        ("split_half", "occupation", 5, "p_covered", 0.9, 1.0, 160, 0.994),
        ("split_fifth", "occupation", 5, "p_covered", 0.0, 0.1, 21, 0.5),  # too few units to say anything
        ("split_fifth", "occupation", 1, "p_covered", 0.5, 0.6, 300, 0.2),  # the middle band: not quoted
        ("split_fifth", "occupation", 1, "p_covered_calibrated", 0.9, 1.0, 531, 0.5),  # not what tiles show
        ("split_fifth", "task", 1, "p_covered", 0.9, 1.0, 5000, 0.5),  # another unit
    ]
    names = ["check", "unit", "threshold", "predictor", "p_low", "p_high", "n_units", "share_covered"]
    return pl.DataFrame(rows, schema=names, orient="row")


def test_band_check_quotes_the_outer_bins_of_the_occupations_p_covered():
    assert band_check(_simulation_check()) == {
        "1": {"covered": [0.864, 1.0, ["split_fifth", "split_half"]], "not": [0.03, 0.061, ["split_fifth", "split_half"]]},
        "5": {"covered": [0.994, 0.994, ["split_half"]]},
    }
    assert band_check(None) == {} and band_check(_simulation_check().clear()) == {}
    # in threshold order whatever the rows' order: the map's JSON keys follow it (a probe: two releases of the
    # same inputs had coverage_map.html differ, {"5": ..., "1": ...} against {"1": ..., "5": ...})
    for seed in range(6):
        shuffled = band_check(_simulation_check().sample(fraction=1.0, shuffle=True, seed=seed))
        assert list(shuffled) == ["1", "5"] and json.dumps(shuffled) == json.dumps(band_check(_simulation_check()))
