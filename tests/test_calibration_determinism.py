"""The calibration tables add their floats in a fixed order (an audit of two cold runs on the same inputs:
occupation_probability_calibration and unit_coverage_simulation_check differed by up to 4e-14, so five release
files had other checksums though no published number moved). Multi-threaded group-bys add in an order of their
own; on these inputs the code before gave 3 and 20 different results in 30 and 20 repetitions."""

from __future__ import annotations

import numpy as np
import polars as pl

from models.estimates.calibration import score
from models.estimates.coverage_check import bin_coverage


def test_the_probability_score_is_the_same_on_every_repetition() -> None:
    rng = np.random.default_rng(3)
    universe = pl.DataFrame({"t": rng.integers(0, 4000, 60000), "o": rng.integers(0, 900, 60000)})
    predictions = universe.unique().sort("t", "o")
    predictions = predictions.with_columns(pl.Series("p", rng.random(predictions.height)))
    truth = predictions.filter(pl.col("p") > 0.6).select("t", "o")
    results = set()
    for _ in range(30):
        summary, bins = score(predictions, truth, np.arange(4000), universe)
        results.add((summary["brier"], summary["ece"], tuple(bins["mean_p"]), tuple(bins["observed"])))
    assert len(results) == 1


def test_the_coverage_bins_are_the_same_on_every_repetition() -> None:
    rng = np.random.default_rng(4)
    m = 200000
    pairs = pl.DataFrame({"replication": rng.integers(0, 6, m), "unit": rng.choice(["task", "occupation"], m),
                          "threshold": rng.choice([1, 5], m), "unit_index": rng.integers(0, 20000, m),
                          "p_covered": rng.random(m), "covered": rng.random(m) < 0.5})
    results = set()
    for _ in range(10):
        table = bin_coverage(pairs, "split_fifth", 6).sort("unit", "threshold", "bin")
        results.add(tuple(table.select(pl.col(pl.Float64)).rows()))
    assert len(results) == 1
