"""The worker pool (resources/worker_pool.py, issue 29: the second core): a task gives the same result in a worker
process as in the calling one, a failure in a worker surfaces as an error naming the task, and the parallel
paths of the analysis (the judged checks, the figures, the workbook) equal their in-process results."""

from __future__ import annotations

import math
import os

import numpy as np
import polars as pl
import pytest

from models import estimates as es
from resources.worker_pool import WorkerError, WorkerPool, default_workers, usable_cpus


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(workers=1) as started:
        yield started


def test_a_task_runs_in_a_worker_process_and_returns_what_it_returns_here(pool):
    here = os.getpid()
    pid, root = pool.gather([pool.submit(os.getpid, name="pid"), pool.submit(math.sqrt, 2.0)], steal=False)
    assert pid != here and pid in pool.pids
    assert root == math.sqrt(2.0)
    frame = pl.DataFrame({"a": [3, 1, 2]})
    assert pool.gather([pool.submit(frame.sort, "a")], steal=False)[0].equals(frame.sort("a"))


def test_tasks_no_worker_started_run_in_the_caller():
    with WorkerPool(workers=0) as inline:
        assert inline.gather([inline.submit(os.getpid)]) == [os.getpid()]
        assert inline.pids == []
    assert 0 <= default_workers() == usable_cpus() - 1


def test_a_task_a_step_waits_for_is_queued_before_the_ones_started_ahead(pool):
    """A task submitted without `background` goes before the queued background ones (a figure started ahead), in
    submission order among its kind; the worker runs the queue in that order."""
    import time

    busy = pool.submit(time.sleep, 0.3, name="keeps the worker busy")
    time.sleep(0.1)  # the worker has taken it: the rest queue
    ahead = [pool.submit(time.perf_counter, name=f"ahead {i}", background=True) for i in range(2)]
    wanted = [pool.submit(time.perf_counter, name=f"wanted {i}") for i in range(2)]
    assert [t.name for t in pool._pending] == ["wanted 0", "wanted 1", "ahead 0", "ahead 1"]
    pool.gather([busy], steal=False)
    times = pool.gather([*wanted, *ahead], steal=False)
    assert times == sorted(times)  # run in the queue's order


def test_a_failing_task_names_itself_and_keeps_the_worker(pool):
    failing = pool.submit(math.sqrt, -1.0, name="square root of -1")
    with pytest.raises(WorkerError, match=r"square root of -1 failed in worker process \d+") as raised:
        pool.gather([failing], steal=False)
    assert isinstance(raised.value.__cause__, ValueError)
    assert "math domain error" in str(raised.value)  # the worker's traceback
    assert pool.gather([pool.submit(math.sqrt, 9.0)], steal=False) == [3.0]  # the worker goes on


def test_an_argument_that_cannot_be_sent_is_the_tasks_error(pool):
    with pytest.raises(WorkerError, match="lambda.*cannot be sent"):
        pool.gather([pool.submit(lambda: 1, name="a lambda")], steal=False)


def test_a_worker_that_dies_fails_its_task_and_the_rest_run_here():
    with WorkerPool(workers=1) as dying:
        crash = dying.submit(os._exit, 3, name="crash")
        with pytest.raises(WorkerError, match=r"crash: worker process \d+ ended while running it \(exit code 3"):
            dying.gather([crash], steal=False)
        assert dying.workers == 0
        assert dying.gather([dying.submit(os.getpid)], steal=False) == [os.getpid()]


@pytest.fixture(scope="module")
def sim() -> es.Simulation:
    return es.simulate(np.random.default_rng(11), texts_per_benchmark=(120, 160, 90), unsampled_benchmarks=1)


def _judged(sim: es.Simulation, pool: WorkerPool, steal: bool = True):
    from assets.estimates import EstimatesConfig
    from assets.estimates_split import start_judged_checks

    problem = sim.problem
    texts = pl.DataFrame({"benchmark": [problem.benchmarks[b] for b in problem.text_bench],
                          "prompt_hash": [f"h{t:05d}" for t in range(problem.text_bench.size)]})
    # three fifth splits: enough distinct units below p = 1 for a map (coverage_check.MIN_MAP_UNITS)
    config = EstimatesConfig(n_draws=6, calibration_draws=3, coverage_repeats=3, coverage_draws=4, coverage_simulations=2,
                             split_repeats=2)
    # not the neighbour stack and no code version: nothing read from or kept beside the warehouse
    pending = start_judged_checks(None, {"labeler_version": None}, texts, problem, config, [],  # type: ignore[arg-type]
                                  pool=pool)
    if not steal:
        pool.gather(pending.parts or [], steal=False)  # every part done by the worker
    return pending.result()


def test_the_judged_checks_in_a_worker_equal_those_computed_here(sim, pool):
    here = _judged(sim, WorkerPool(workers=0))
    there = _judged(sim, pool, steal=False)
    mixed = _judged(sim, pool)  # the worker takes the first, this process the others
    for result in (there, mixed):
        for name in ("calibration", "coverage", "split"):
            a, b = getattr(here, name), getattr(result, name)
            assert a.columns == b.columns and a.height == b.height > 0
            for column, dtype in a.schema.items():
                if dtype.is_numeric():  # a polars sum may differ in the last bit between two calls
                    assert np.allclose(a[column].to_numpy().astype(float), b[column].to_numpy().astype(float),
                                       rtol=1e-12, atol=1e-15, equal_nan=True), (name, column)
                else:
                    assert a[column].equals(b[column]), (name, column)
        assert np.allclose(here.recalibration.within, result.recalibration.within)
        assert here.coverage_map.curves and here.coverage_map.curves.keys() == result.coverage_map.curves.keys()
        for key, (knots, values, at_one) in here.coverage_map.curves.items():
            theirs = result.coverage_map.curves[key]
            assert np.array_equal(knots, theirs[0]) and np.allclose(values, theirs[1], rtol=1e-9), key
            assert (at_one is None) == (theirs[2] is None) and np.isclose(at_one or 0.0, theirs[2] or 0.0), key


def test_a_failing_judged_check_names_the_check(sim, pool):
    broken = es.Problem(**{**sim.problem.__dict__, "task_occ": sim.problem.task_occ[:1]})  # indexes out of range
    # every part reads task_occ: the first one gathered fails, named (the judged checks run as parts)
    with pytest.raises(WorkerError, match=r"judged check: [a-z_ ]+ failed in worker process"):
        _judged(es.Simulation(**{**sim.__dict__, "problem": broken}), pool, steal=False)
