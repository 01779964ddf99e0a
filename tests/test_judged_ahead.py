"""The judged checks started ahead of the headline (assets/estimates_ahead.py, issue 29): the step takes them only
when its own key (the judged problem, the relabeling's inputs, the settings, the code version) is the same, and
then they are the values it would have computed; checks of other inputs are dropped, and none outlives the run."""

from __future__ import annotations

import time

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from assets.estimates import EstimatesConfig
from assets.estimates_ahead import headline_code_versions, judged_checks_ahead
from assets.estimates_split import JudgedChecks, keep_ahead, start_judged_checks, take_ahead
from models import estimates as es
from resources.dagster_resources import Warehouse
from resources.worker_pool import WorkerPool

CONFIG = EstimatesConfig(n_draws=6, calibration_draws=3, coverage_repeats=1, coverage_draws=4, coverage_simulations=2,
                         split_repeats=1)
INPUTS = {"labeler_version": None}  # not the neighbour stack: no relabeling, nothing read from the warehouse


@pytest.fixture(scope="module")
def sim() -> es.Simulation:
    return es.simulate(np.random.default_rng(11), texts_per_benchmark=(120, 160, 90, 140), n_occupations=30,
                       unsampled_benchmarks=2)


@pytest.fixture
def warehouse(tmp_path) -> Warehouse:
    return Warehouse(path=str(tmp_path / "benchmap.duckdb"))  # only its folder is used (the cache file)


def _texts(problem: es.Problem) -> pl.DataFrame:
    return pl.DataFrame({"benchmark": [problem.benchmarks[b] for b in problem.text_bench],
                         "prompt_hash": [f"h{t:05d}" for t in range(problem.text_bench.size)]})


def _same(a: JudgedChecks, b: JudgedChecks) -> bool:
    """The same tables up to the last bits (polars' parallel sums are not bit-reproducible)."""
    for name in ("calibration", "coverage", "split"):
        assert_frame_equal(getattr(a, name), getattr(b, name), rtol=1e-12, atol=1e-12)
    return True


def _relabeled(problem: es.Problem) -> es.Problem:
    """The same texts with other judge labels (as when the judge sample changed between the start and the step)."""
    return es.Problem(**{**problem.__dict__, "jud_task": (problem.jud_task + 1) % problem.n_tasks})


def test_the_step_takes_the_checks_started_ahead_under_its_key_and_they_are_its_values(sim, warehouse):
    with WorkerPool(workers=1) as pool:
        # started ahead before the last (unjudged) benchmark arrived: the same judged problem, the same key
        fewer, _ = es.restrict_to_benchmarks(sim.problem, np.arange(sim.problem.n_bench - 1))
        ahead = start_judged_checks(warehouse, INPUTS, _texts(fewer), fewer, CONFIG, ["v1"], pool=pool)
        keep_ahead(ahead)
        taken = start_judged_checks(warehouse, INPUTS, _texts(sim.problem), sim.problem, CONFIG, ["v1"], pool=pool)
        assert taken is ahead and taken.ahead
        result = taken.result()
        assert not result.cached
        # the calibration's figure was drawn by its part, the p_covered check's is being drawn by the worker once
        # the parts are assembled: the files the step saves and its preview
        assert set(result.figures) == {"occupation_probability_calibration", "unit_coverage_simulation_check"}
        for files, preview in (result.figures["occupation_probability_calibration"],
                               pool.gather([result.figures["unit_coverage_simulation_check"]])[0]):
            assert files and all(isinstance(b, bytes) and b for b in files.values()) and preview
        # taken once: the next step computes (here: reads back from the cache the first one kept)
        again = start_judged_checks(warehouse, INPUTS, _texts(sim.problem), sim.problem, CONFIG, ["v1"], pool=pool)
        assert again is not ahead and not again.ahead and again.cached is not None
    inline = start_judged_checks(warehouse, INPUTS, _texts(sim.problem), sim.problem, CONFIG, [],
                                 pool=WorkerPool(workers=0)).result()  # no code version: computed, here
    assert _same(result, inline)


@pytest.mark.parametrize("change", ["judge labels", "settings"])  # (the code version is one more key part)
def test_checks_of_other_inputs_are_not_taken_and_leave_the_queue(sim, warehouse, change):
    problem, config = sim.problem, CONFIG
    with WorkerPool(workers=1) as pool:
        blocker = pool.submit(time.sleep, 1.0, name="a busy worker")  # the checks wait in the queue
        ahead = start_judged_checks(warehouse, INPUTS, _texts(problem), problem, config, ["v1"], pool=pool)
        keep_ahead(ahead)
        if change == "judge labels":
            problem = _relabeled(problem)
        else:
            config = config.model_copy(update={"seed": config.seed + 1})
        own = start_judged_checks(warehouse, INPUTS, _texts(problem), problem, config, ["v1"], pool=pool)
        assert own is not ahead and not own.ahead and own.key != ahead.key
        assert all(part.cancelled() for part in ahead.parts or [])  # dropped before any worker started them
        assert take_ahead(ahead.key) is None
        pool.gather([blocker])
        result = own.result()
    inline = start_judged_checks(warehouse, INPUTS, _texts(problem), problem, config, [],
                                 pool=WorkerPool(workers=0)).result()
    assert _same(result, inline)


def test_no_checks_outlive_the_run_that_started_them(sim, warehouse):
    with WorkerPool(workers=1) as pool:
        blocker = pool.submit(time.sleep, 1.0, name="a busy worker")
        pending = start_judged_checks(warehouse, INPUTS, _texts(sim.problem), sim.problem, CONFIG, ["v1"], pool=pool)
        with pytest.raises(RuntimeError, match="a step failed"), judged_checks_ahead(None, []) as started:
            assert not started  # no warehouse, no headline: nothing started
            keep_ahead(pending)
            raise RuntimeError("a step failed")  # the run ends before the headline took them
        assert take_ahead(pending.key) is None
        assert all(part.cancelled() for part in pending.parts or [])
        pool.gather([blocker])


def test_the_code_versions_are_the_headline_steps():
    from pipelines.definitions import defs

    assets = list(defs.assets or [])
    headline = next(a for a in assets if "headline_estimates" in {k.path[-1] for k in getattr(a, "keys", [])})
    versions = headline_code_versions(assets)
    assert versions and versions == sorted(str(v) for v in headline.code_versions_by_key.values() if v)
    assert headline_code_versions([a for a in assets if a is not headline]) is None


def test_run_all_starts_the_checks_ahead_and_the_headline_takes_them(full_pipeline):
    """End to end: the cold run_all on the mirror started the judged checks before its analysis run, the headline
    took them (its key was theirs), and none were left over after the run."""
    from dagster import AssetKey, DagsterInstance

    from assets import estimates_split

    with DagsterInstance.from_config(str(full_pipeline.dagster_home)) as instance:
        event = instance.get_latest_materialization_event(AssetKey("estimate_split_check"))
    metadata = event.asset_materialization.metadata
    assert metadata["judged_checks_started_ahead"].value is True
    assert metadata["judged_checks_cached"].value is False  # a cold run: computed (in the worker, ahead)
    assert not estimates_split._AHEAD


def test_the_analysis_worker_starts_ahead_with_what_the_judged_checks_run(monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture) -> None:
    """run_all warms the worker when the analysis is about to run: its imports are done before the checks come.
    Only a head start: a worker that cannot start is said, not raised (the steps start theirs)."""
    from assets import estimates_ahead

    pool = WorkerPool(1)
    try:
        monkeypatch.setattr(estimates_ahead, "shared_pool", lambda: pool)
        estimates_ahead.warm_judged_checks_worker()
        modules = estimates_ahead.JUDGED_CHECK_MODULES
        check = f"all(m in __import__('sys').modules for m in {list(modules)!r})"
        assert pool.gather([pool.submit(eval, check, name="imported?")], steal=False) == [True]
    finally:
        pool.close()

    def no_worker() -> WorkerPool:
        raise OSError("cannot start a process")

    monkeypatch.setattr(estimates_ahead, "shared_pool", no_worker)
    estimates_ahead.warm_judged_checks_worker()
    assert "the analysis worker did not start ahead (OSError: cannot start a process)" in capsys.readouterr().err
