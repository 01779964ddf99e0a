"""The retirement of a benchmark whose landing folder was removed: the sensor's advice and run_all's removal.

Uses the stand-in Definitions and landing zone of tests/test_benchmarks.py (its `env` fixture).
"""

from __future__ import annotations

import json
import shutil

import pytest
from dagster import SensorResult, build_sensor_context

from models import benchmarks as bm
from pipelines import run_all
from pipelines.sensors import benchmark_landing_sensor
from resources import warehouse as wh
from tests.test_benchmarks import Env, add_fixture, env  # noqa: F401 - env is a fixture


def logged_tick(setup: Env, cursor: str | None, caplog: pytest.LogCaptureFixture) -> SensorResult:
    """A tick whose log lines reach caplog (the sensor's logger is Dagster's own, outside logging's tree)."""
    context = build_sensor_context(instance=setup.instance, cursor=cursor, definitions=setup.defs)
    context.log.addHandler(caplog.handler)
    return benchmark_landing_sensor(context)


def test_run_all_retires_a_benchmark_whose_partition_was_deleted_by_hand(
        env: Env, capsys: pytest.CaptureFixture) -> None:  # noqa: F811
    """The sensor's old advice for a removed folder, "delete the partition", disabled run_all's removal (it only
    looked at registered partitions): the rows stayed in every table and the release, and the run exited 0."""
    add_fixture(env.landing, "tiny_bench")
    gone = add_fixture(env.mirror, "tiny_bench", "tiny_two")
    assert run_all.main([], defs=env.defs, instance=env.instance) == 0
    shutil.rmtree(gone)
    result = env.tick()
    assert json.loads(result.cursor)["missing"] == ["tiny_two"]
    env.instance.delete_dynamic_partition("benchmark", "tiny_two")
    capsys.readouterr()

    assert run_all.main([], defs=env.defs, instance=env.instance) == 0
    out = capsys.readouterr().out
    assert "removed benchmark tiny_two (its landing folder is gone)" in out
    for table in ("benchmarks", "benchmark_prompts", "benchmark_results", "labels_stub"):
        assert env.table(table, "tiny_two").height == 0, table
        assert env.table(table, "tiny_bench").height > 0, table
    assert wh.query(env.warehouse, "select benchmark from analysis_stub")["benchmark"].to_list() == ["tiny_bench"]
    assert env.instance.get_dynamic_partitions("benchmark") == ["tiny_bench"]
    assert bm.LANDING_PARTITION not in env.table("benchmarks")["benchmark"].to_list()


def test_the_sensor_says_how_to_retire_a_removed_benchmark(
        env: Env, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    folder = add_fixture(env.landing, "tiny_bench")
    first = env.tick()
    env.apply(first)
    shutil.rmtree(folder)
    logged_tick(env, first.cursor, caplog)
    assert "python -m pipelines.run_all" in caplog.text
    assert "delete the partition" not in caplog.text
