"""The instance's run launcher (resources/run_launcher.py): runs forked from a warm fork server
(resources/run_fork_server.py), the server renewed when the sources change, a run whose process dies marked failed
(by the server or, with no server left, by Dagster's run monitoring), termination, and Dagster's default launcher
when told or when the server cannot be used."""

import json
import logging
import os
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path

import fork_jobs
import pytest
from dagster import DagsterRunStatus, DefaultRunLauncher, instance_for_test, reconstructable
from dagster._core.launcher import WorkerStatus
from dagster._core.test_utils import create_run_for_test
from dagster._daemon.monitoring.run_monitoring import execute_run_monitoring_iteration

from resources import run_launcher
from resources.run_fork_server import process_stat
from resources.run_launcher import PID_TAG, START_TAG, ForkServerRunLauncher, worker_gone

TESTS = Path(__file__).resolve().parent
LAUNCHER = {"run_launcher": {"module": "resources.run_launcher", "class": "ForkServerRunLauncher"}}
MONITORED = {**LAUNCHER, "run_monitoring": {"enabled": True, "max_resume_run_attempts": 0}}  # as dagster.yaml


@pytest.fixture
def server_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server imports the test code location and the marker, and finds them (and the project) on its path."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), str(TESTS.parent)]))
    monkeypatch.setenv("BENCHMAP_FORK_PRELOAD", "dagster,dagster._cli,dagster._cli.api,fork_marker,fork_jobs")
    monkeypatch.delenv("BENCHMAP_RUN_LAUNCHER", raising=False)


def _launch(instance, out: Path, sleep_s: float = 0.0) -> str:
    run = instance.create_run_for_job(
        job_def=fork_jobs.probe_job,
        run_config={"ops": {"probe": {"config": {"out": str(out), "sleep_s": sleep_s}}}},
        job_code_origin=reconstructable(fork_jobs.probe_job).get_python_origin(),
    )
    instance.launch_run(run.run_id, workspace=None)  # the fork server needs no workspace; the default one does
    return run.run_id


def _wait(instance, run_id: str, until, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        if until(run):
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} stayed {instance.get_run_by_id(run_id).status}")


def _engine_messages(instance, run_id: str) -> list[str]:
    return [e.message for e in instance.all_logs(run_id) if e.message]


def test_runs_are_forked_from_one_warm_server_and_succeed(server_env, tmp_path: Path) -> None:
    with instance_for_test(overrides=LAUNCHER) as instance:
        launcher = instance.run_launcher
        assert isinstance(launcher, ForkServerRunLauncher)
        seen = []
        for number in range(2):
            run_id = _launch(instance, tmp_path / f"probe{number}.json")
            run = _wait(instance, run_id, lambda r: r.is_finished)
            assert run.status == DagsterRunStatus.SUCCESS
            probe = json.loads((tmp_path / f"probe{number}.json").read_text())
            assert probe["marker_preloaded"] is True  # imported by the server before the run: forked, not fresh
            assert probe["pid"] == int(run.tags[PID_TAG]) != os.getpid()
            assert any("forked from benchmap's run fork server" in m for m in _engine_messages(instance, run_id))
            seen.append({key: server.process.pid for key, server in launcher._servers.items()})  # noqa: SLF001
        assert len(seen[0]) == 1 and seen[0] == seen[1]  # the same server launched both


def test_a_source_change_gets_a_fresh_server(server_env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with instance_for_test(overrides=LAUNCHER) as instance:
        launcher = instance.run_launcher
        _wait(instance, _launch(instance, tmp_path / "a.json"), lambda r: r.is_finished)
        (first,) = launcher._servers.values()  # noqa: SLF001
        monkeypatch.setattr(run_launcher, "source_stamp", lambda root=None: "edited")
        run = _wait(instance, _launch(instance, tmp_path / "b.json"), lambda r: r.is_finished)
        assert run.status == DagsterRunStatus.SUCCESS
        (second,) = launcher._servers.values()  # noqa: SLF001
        assert second.process.pid != first.process.pid and first.process.poll() is not None


def test_a_run_whose_process_dies_is_marked_failed(server_env, tmp_path: Path) -> None:
    out = tmp_path / "slow.json"
    with instance_for_test(overrides=LAUNCHER) as instance:
        run_id = _launch(instance, out, sleep_s=60)
        _wait(instance, run_id, lambda r: out.exists())
        os.kill(int(instance.get_run_by_id(run_id).tags[PID_TAG]), signal.SIGKILL)
        run = _wait(instance, run_id, lambda r: r.is_finished, timeout_s=30)
        assert run.status == DagsterRunStatus.FAILURE
        message = next(m for m in _engine_messages(instance, run_id) if "ended with exit code -9" in m)
        assert f"before the run finished. Its stderr: {instance.root_directory}/logs/forked_runs/{run_id}.stderr" \
            in message


def test_terminate_cancels_a_forked_run(server_env, tmp_path: Path) -> None:
    out = tmp_path / "slow.json"
    with instance_for_test(overrides=LAUNCHER) as instance:
        run_id = _launch(instance, out, sleep_s=60)
        _wait(instance, run_id, lambda r: out.exists())
        assert instance.run_launcher.terminate(run_id) is True
        run = _wait(instance, run_id, lambda r: r.is_finished, timeout_s=30)
        assert run.status == DagsterRunStatus.CANCELED


@pytest.mark.parametrize("how", ["told", "server_fails"])
def test_the_default_launcher_launches_when_told_or_when_the_server_cannot(
        how: str, server_env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    launched = []
    monkeypatch.setattr(DefaultRunLauncher, "launch_run", lambda self, context: launched.append(context.dagster_run))
    if how == "told":
        monkeypatch.setenv("BENCHMAP_RUN_LAUNCHER", "default")
    else:
        monkeypatch.setenv("BENCHMAP_FORK_PRELOAD", "dagster")
        monkeypatch.setattr(run_launcher._ForkServer, "launch",  # noqa: SLF001
                            lambda self, request: (_ for _ in ()).throw(RuntimeError("no answer")))
    with instance_for_test(overrides=LAUNCHER) as instance:
        run_id = _launch(instance, tmp_path / "x.json")
        assert [run.run_id for run in launched] == [run_id]
        assert PID_TAG not in instance.get_run_by_id(run_id).tags
        why = "BENCHMAP_RUN_LAUNCHER=default" if how == "told" else "the run fork server failed: RuntimeError: no answer"
        assert any(f"Run launched by Dagster's default launcher: {why}" in m
                   for m in _engine_messages(instance, run_id))
        if how == "server_fails":
            assert instance.run_launcher._servers == {}  # noqa: SLF001 - dropped: the next run gets a fresh one


class _DaemonContext:
    """What the monitoring daemon's iteration uses of its workspace context: the instance (a workspace only to
    resume runs, which max_resume_run_attempts 0 never does)."""

    def __init__(self, instance) -> None:
        self.instance = instance

    def create_request_context(self) -> None:
        return None


def _monitor(instance) -> None:
    """One pass of Dagster's run monitoring daemon over the instance's runs."""
    errors = [e for e in execute_run_monitoring_iteration(_DaemonContext(instance), logging.getLogger("monitor"))
              if e is not None]
    assert not errors, errors


def _monitor_until_finished(instance, run_id: str, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _monitor(instance)
        run = instance.get_run_by_id(run_id)
        if run.is_finished:
            return run
        time.sleep(0.1)
    raise AssertionError(f"run monitoring left run {run_id} {instance.get_run_by_id(run_id).status}")


def test_run_monitoring_fails_a_run_killed_with_no_server_to_report_it(server_env, tmp_path: Path) -> None:
    """A live run stays started, with or without its server; killed once the server is gone (the daemon
    restarted), it is marked failed by run monitoring instead of staying started for ever."""
    out = tmp_path / "slow.json"
    with instance_for_test(overrides=MONITORED) as instance:
        launcher = instance.run_launcher
        run_id = _launch(instance, out, sleep_s=60)
        run = _wait(instance, run_id, lambda r: out.exists() and r.status == DagsterRunStatus.STARTED)
        pid = int(run.tags[PID_TAG])
        try:
            stat = process_stat(pid)
            assert stat is not None and run.tags[START_TAG] == stat[1]  # recorded at launch, from /proc
            health = launcher.check_run_worker_health(run)
            assert health.status == WorkerStatus.RUNNING and health.msg == f"the run's process {pid} is running"
            _monitor(instance)
            assert instance.get_run_by_id(run_id).status == DagsterRunStatus.STARTED
            (server,) = launcher._servers.values()  # noqa: SLF001
            launcher.dispose()  # as when the daemon restarts: the server ends, its run goes on, unwatched
            assert server.process.poll() is not None
            _monitor(instance)
            assert instance.get_run_by_id(run_id).status == DagsterRunStatus.STARTED
        finally:
            os.kill(pid, signal.SIGKILL)
        run = _monitor_until_finished(instance, run_id)
        assert run.status == DagsterRunStatus.FAILURE
        messages = _engine_messages(instance, run_id)
        assert any(f"the run's process {pid} is gone" in m and "no run fork server reported its exit" in m
                   and f"Its stderr: {instance.root_directory}/logs/forked_runs/{run_id}.stderr" in m
                   for m in messages), messages
        assert not any("ended with exit code" in m for m in messages)  # failed by monitoring, not by the server


def test_run_monitoring_leaves_a_run_of_the_default_launcher_started(tmp_path: Path) -> None:
    """No pid to check (Dagster's default launcher launched it; it has no health check of its own): not failed."""
    with instance_for_test(overrides=MONITORED) as instance:
        run = create_run_for_test(instance, job_name="probe_job", status=DagsterRunStatus.STARTED)
        health = instance.run_launcher.check_run_worker_health(run)
        assert health.status == WorkerStatus.RUNNING and health.msg.startswith("not checked")
        _monitor(instance)
        assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.STARTED


def test_a_reused_pid_a_zombie_and_a_missing_pid_are_gone(tmp_path: Path) -> None:
    me = os.getpid()
    mine = process_stat(me)
    assert mine is not None and mine[0] in "RS"
    assert worker_gone(me, mine[1]) is None
    assert worker_gone(me, None) is None  # start time not recorded: liveness only
    other = str(int(mine[1]) + 1)  # a live pid whose start time is not the run's: the pid was reused
    assert worker_gone(me, other) == f"the pid now names another process (started at tick {mine[1]}, the run's " \
                                      f"at {other})"
    with instance_for_test(overrides=LAUNCHER) as instance:
        run = create_run_for_test(instance, job_name="probe_job", status=DagsterRunStatus.STARTED,
                                  tags={PID_TAG: str(me), START_TAG: other})
        health = instance.run_launcher.check_run_worker_health(run)
        assert health.status == WorkerStatus.FAILED
        assert health.msg.startswith(f"the run's process {me} is gone (the pid now names another process")

    child = subprocess.Popen([sys.executable, "-c", ""])  # not waited for: a zombie once it exits
    try:
        deadline = time.monotonic() + 30
        while (stat := process_stat(child.pid)) is not None and stat[0] != "Z" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert stat is not None and stat[0] == "Z"
        assert worker_gone(child.pid, stat[1]) == "it exited (a zombie nobody reaped)"
    finally:
        child.wait()
    assert worker_gone(child.pid, None) == "no such process"  # reaped (its pid is not reused this soon)
    # without /proc (not Linux): whether the pid lives
    assert worker_gone(me, "anything", proc=tmp_path) is None
    assert worker_gone(child.pid, None, proc=tmp_path) == "no such process"


def test_run_monitoring_fails_a_run_alls_run_whose_process_was_killed(tmp_path: Path) -> None:
    """A second read: run_all's runs execute in process, with no pid a health check could read; one SIGKILLed
    stayed STARTED for ever (and held the landing sensor's analysis gate). They carry run_all's process now."""
    assert run_launcher.in_process_tags()[run_launcher.IN_PROCESS_PID_TAG] == str(os.getpid())
    assert run_launcher.in_process_tags()[START_TAG] == process_stat(os.getpid())[1]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stat = process_stat(child.pid)
        assert stat is not None
        tags = {run_launcher.IN_PROCESS_PID_TAG: str(child.pid), START_TAG: stat[1]}
        with instance_for_test(overrides=MONITORED) as instance:
            run = create_run_for_test(instance, job_name="analysis", status=DagsterRunStatus.STARTED, tags=tags)
            _monitor(instance)
            assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.STARTED  # alive: left alone
            assert instance.run_launcher.terminate(run.run_id) is False  # never signals run_all itself
            assert child.poll() is None and instance.get_run_by_id(run.run_id).status == DagsterRunStatus.STARTED
            assert any("Not terminated: the run executes inside run_all" in m
                       for m in _engine_messages(instance, run.run_id))
            child.kill()
            child.wait()
            run = _monitor_until_finished(instance, run.run_id)
            assert run.status == DagsterRunStatus.FAILURE
            assert any(f"the run's process {child.pid} is gone" in m and "run_all" in m
                       for m in _engine_messages(instance, run.run_id))
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_forked_run_gone_while_its_server_lives_waits_for_the_servers_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second read: monitoring polling between the kill and the fork server's report (0.5-2 s) failed the run
    itself, saying no server reported it, and the exit code was lost. Now it waits REPORT_GRACE_S for the server,
    then fails the run (a report that never comes does not leave it started)."""
    with instance_for_test(overrides=LAUNCHER) as instance:
        launcher = instance.run_launcher
        run = create_run_for_test(instance, job_name="probe_job", status=DagsterRunStatus.STARTED,
                                  tags={PID_TAG: "999999999", START_TAG: "1"})

        class LiveServer:
            def alive(self) -> bool:
                return True

        server = LiveServer()
        launcher._forked_by[run.run_id] = weakref.ref(server)  # noqa: SLF001 - the server that forked it lives
        now = [1000.0]
        monkeypatch.setattr(run_launcher.time, "monotonic", lambda: now[0])
        health = launcher.check_run_worker_health(run)
        assert health.status == WorkerStatus.RUNNING and "its fork server reports how" in health.msg
        now[0] += run_launcher.REPORT_GRACE_S + 1
        health = launcher.check_run_worker_health(run)
        assert health.status == WorkerStatus.FAILED and "no run fork server reported its exit" in health.msg


def test_terminate_never_signals_a_pid_another_process_now_has(tmp_path: Path) -> None:
    me = process_stat(os.getpid())
    assert me is not None
    with instance_for_test(overrides=LAUNCHER) as instance:
        run = create_run_for_test(instance, job_name="probe_job", status=DagsterRunStatus.STARTED,
                                  tags={PID_TAG: str(os.getpid()), START_TAG: str(int(me[1]) + 1)})
        assert instance.run_launcher.terminate(run.run_id) is False  # this test process is not the run's


def test_a_re_executed_run_on_the_default_launcher_does_not_inherit_its_parents_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A review: Dagster copies a parent run's tags to its re-execution; launched by the default launcher (the
    fallback), the copy named the parent's dead pid and monitoring failed the live run within a poll."""
    monkeypatch.setenv("BENCHMAP_RUN_LAUNCHER", "default")
    monkeypatch.setattr(DefaultRunLauncher, "launch_run", lambda self, context: None)
    with instance_for_test(overrides=MONITORED) as instance:
        run = instance.create_run_for_job(
            job_def=fork_jobs.probe_job, run_config={"ops": {"probe": {"config": {"out": str(tmp_path / "o")}}}},
            job_code_origin=reconstructable(fork_jobs.probe_job).get_python_origin(),
            tags={PID_TAG: "999999999", START_TAG: "1", run_launcher.HOST_TAG: run_launcher.HOST})
        instance.launch_run(run.run_id, workspace=None)
        run = instance.get_run_by_id(run.run_id)
        assert run.tags[PID_TAG] == "" and run.tags[START_TAG] == ""
        health = instance.run_launcher.check_run_worker_health(run)
        assert health.status == WorkerStatus.RUNNING and health.msg.startswith("not checked")


def test_a_process_of_another_host_is_not_checked(tmp_path: Path) -> None:
    with instance_for_test(overrides=LAUNCHER) as instance:
        run = create_run_for_test(instance, job_name="probe_job", status=DagsterRunStatus.STARTED,
                                  tags={run_launcher.IN_PROCESS_PID_TAG: "999999999",
                                        run_launcher.HOST_TAG: "elsewhere"})
        health = instance.run_launcher.check_run_worker_health(run)
        assert health.status == WorkerStatus.RUNNING and "on host elsewhere" in health.msg
        # on this host the same pid is gone, and terminating it says so
        local = create_run_for_test(instance, job_name="probe_job", status=DagsterRunStatus.STARTED,
                                    tags={run_launcher.IN_PROCESS_PID_TAG: "999999999"})
        assert instance.run_launcher.check_run_worker_health(local).status == WorkerStatus.FAILED
        assert instance.run_launcher.terminate(local.run_id) is False
        assert any("which is gone (no such process); run monitoring marks the run failed" in m
                   for m in _engine_messages(instance, local.run_id))


def test_run_all_fails_the_runs_a_killed_run_all_left_started(capsys: pytest.CaptureFixture[str]) -> None:
    """An audit (2026-12-07): a SIGKILLed run_all's runs stayed STARTED in Dagster after later runs succeeded, since
    only the daemon's run monitoring fails them and `make run` starts no daemon. run_all now fails them when it
    starts; a live process's run, another host's and its own are left alone."""
    from pipelines.run_report import fail_abandoned_runs

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        alive = {run_launcher.IN_PROCESS_PID_TAG: str(child.pid), START_TAG: process_stat(child.pid)[1]}
        with instance_for_test() as instance:
            def started(tags: dict[str, str]) -> str:
                return create_run_for_test(instance, job_name="analysis", status=DagsterRunStatus.STARTED,
                                           tags=tags).run_id

            killed = started({run_launcher.IN_PROCESS_PID_TAG: "999999999"})
            living, elsewhere = started(alive), started({run_launcher.IN_PROCESS_PID_TAG: "999999999",
                                                         run_launcher.HOST_TAG: "elsewhere"})
            mine, forked = started(run_launcher.in_process_tags()), started({PID_TAG: "999999999"})
            assert fail_abandoned_runs(instance) == [killed]
            status = {r: instance.get_run_by_id(r).status for r in (killed, living, elsewhere, mine, forked)}
            assert status[killed] == DagsterRunStatus.FAILURE
            assert {status[r] for r in (living, elsewhere, mine, forked)} == {DagsterRunStatus.STARTED}
            assert any("the run's process 999999999 is gone (no such process)" in m and "later run_all" in m
                       for m in _engine_messages(instance, killed))
            assert fail_abandoned_runs(instance) == []  # once
    finally:
        child.kill()
        child.wait()
    assert f"marked 1 run of an earlier run_all failed: the process that ran it is gone and the run did not finish " \
           f"({killed[:8]})" in capsys.readouterr().out
