"""A killed or crashed analysis run of the automation is re-executed by Dagster's run retries (dagster.yaml
`run_retries`, the sensor's `dagster/max_retries` tag); a run whose step failed, and every other run, is not.
Seen on a real daemon (2026-12-07): the automation counts its targets as handled once requested, so an analysis
run SIGKILLed 13 s in left the release before the edit standing until the next change."""

from pathlib import Path

import pytest
import yaml
from dagster import DagsterRunStatus, instance_for_test
from dagster._core.events import RunFailureReason
from dagster._core.execution.retries import auto_reexecution_should_retry_run
from dagster._core.storage.tags import PARENT_RUN_ID_TAG, ROOT_RUN_ID_TAG
from dagster._core.test_utils import create_run_for_test

from pipelines.analysis_automation import ANALYSIS_RUN_RETRIES
from pipelines.landing_sensor import refresh_request
from pipelines.sensors import SENSORS

PROJECT = Path(__file__).resolve().parents[1]


@pytest.fixture
def instance():
    """An instance with the project's own run_retries settings (read from dagster.yaml, not restated here)."""
    settings = yaml.safe_load((PROJECT / "dagster.yaml").read_text(encoding="utf-8"))
    with instance_for_test(overrides={"run_retries": settings["run_retries"]}) as instance:
        yield instance


def _failed(instance, tags: dict, job_name: str = "analysis_refresh_job", **retry_of: str):
    return create_run_for_test(instance, job_name=job_name, status=DagsterRunStatus.FAILURE, tags=tags, **retry_of)


def test_the_automations_analysis_run_is_retried_when_its_process_died_not_when_a_step_failed(instance) -> None:
    [sensor] = [s for s in SENSORS if s.name == "analysis_automation_sensor"]  # the code location's sensors
    tags = dict(sensor.run_tags)
    assert tags["benchmap/kind"] == "analysis"
    run = _failed(instance, tags)
    # the fork server or run monitoring fails a killed run with no failure reason (resources/run_fork_server.py)
    assert auto_reexecution_should_retry_run(instance, run, None)
    assert auto_reexecution_should_retry_run(instance, run, RunFailureReason.UNEXPECTED_TERMINATION)
    # a step that failed (the release gate, bad data) fails again: no retry
    assert not auto_reexecution_should_retry_run(instance, run, RunFailureReason.STEP_FAILURE)

    # bounded: after ANALYSIS_RUN_RETRIES retries of the same run the last one is not retried
    parent = run
    for _ in range(ANALYSIS_RUN_RETRIES):
        parent = _failed(instance, {**tags, ROOT_RUN_ID_TAG: run.run_id, PARENT_RUN_ID_TAG: parent.run_id},
                         root_run_id=run.run_id, parent_run_id=parent.run_id)
    assert not auto_reexecution_should_retry_run(instance, parent, None)


def test_other_runs_are_not_retried_by_dagster(instance) -> None:
    """The landing sensor retries its refreshes itself (MAX_REFRESH_RETRIES); a run launched by hand is the
    user's to relaunch."""
    refresh = refresh_request("apex_agents", "0" * 64, "changed", "run-key")
    assert not auto_reexecution_should_retry_run(instance, _failed(instance, dict(refresh.tags),
                                                                   "benchmark_refresh_job"), None)
    assert not auto_reexecution_should_retry_run(instance, _failed(instance, {"benchmap/kind": "analysis"}), None)
    assert not auto_reexecution_should_retry_run(instance, _failed(instance, {}), None)
