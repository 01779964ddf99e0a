"""The instance's run launcher (dagster.yaml `run_launcher`): runs of the code location forked from a warm process
(resources/run_fork_server.py) instead of a fresh one, falling back to Dagster's default launcher.

Dagster's DefaultRunLauncher asks the code location's server to start each run, which spawns a fresh Python
process: ~2 s of imports before the run starts, ~1.5 s more inside its steps (scikit-learn, scipy.stats,
statsmodels). `ForkServerRunLauncher` keeps one fork server per code version and executable and hands it each run;
the run is the same `dagster api execute_run` Dagster's container launchers use. The fork server is started on the
first launch (its imports then delay that one run, not the next) and again when a project source file changed since
(a run never executes stale code). Anything that keeps it from launching a run there (no os.fork, the server not
starting or answering, BENCHMAP_RUN_LAUNCHER=default) launches the run as Dagster's default launcher does, with an
engine event saying why. `terminate` signals the run's process (SIGTERM: Dagster's interrupt handling marks the
run canceled). Measured: bench/fork_probe.py, bench/RESULTS.md (2026-12-05).

Run monitoring (dagster.yaml `run_monitoring`): the fork server reports a child that exits non-zero, but nobody
does once the server is gone (the daemon or `dagster dev` restarted: its runs go on) and the run's process is then
killed (SIGKILL, out of memory); such a run stayed STARTED for ever and the landing sensor never retried it.
`check_run_worker_health` lets Dagster's monitoring daemon fail it: a forked run is RUNNING while the process of
its tags lives (pid in PID_TAG; on Linux also its start time, START_TAG, so a reused pid or a zombie counts as
gone) and FAILED ("the run's process <pid> is gone ...") once it does not; without /proc only the pid's liveness
is checked. run_all's runs, executed in its own process, carry that process (IN_PROCESS_PID_TAG, set by
pipelines/step_runner.py) and are checked the same way; `terminate` never signals them (it would stop run_all). A
forked run found gone while the fork server that forked it still runs gets REPORT_GRACE_S for the server's own
report, which has the exit code. A run whose process is on another host (HOST_TAG) or that records none (Dagster's
default launcher's: it has no health check in this Dagster version; a re-execution's copied pid is cleared) is
reported RUNNING, not checked (never failed on a guess).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dagster import DefaultRunLauncher
from dagster._core.launcher import CheckRunHealthResult, LaunchRunContext, WorkerStatus
from dagster._core.storage.dagster_run import DagsterRun

from resources.run_fork_server import PROC, process_start_time, process_stat
from resources.settings import settings

PID_TAG = "benchmap/run_pid"
START_TAG = "benchmap/run_pid_start_time"  # field 22 of /proc/<pid>/stat at launch (Linux)
# the process of a run executed in process (run_all's runs: pipelines/step_runner.py), for the health check only:
# `terminate` never signals it (that would stop run_all, not the one run)
IN_PROCESS_PID_TAG = "benchmap/in_process_pid"
HOST_TAG = "benchmap/run_host"  # where the pid lives: another host's (a shared instance) is not checked
HOST = socket.gethostname()
REPORT_GRACE_S = 60.0  # a forked run gone while its fork server lives: the server's own report comes first
READY_TIMEOUT_S = 120.0
PROJECT_ROOT = Path(__file__).resolve().parents[1]
SOURCE_PACKAGES = ("assets", "models", "pipelines", "resources")


def source_stamp(root: Path = PROJECT_ROOT) -> str:
    """Path, size and mtime of every project .py file: changes when any source does (a stat each, ~2 ms)."""
    digest = hashlib.sha256()
    for package in SOURCE_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:16]


def in_process_tags() -> dict[str, str]:
    """The tags of a run executed in this process (run_all's: pipelines/step_runner.py), for the health check:
    Dagster's run monitoring fails such a run once its process was killed, so it does not stay STARTED and hold
    the landing sensor's analysis gate for ever. Read per run (one /proc read), so a forked process tags its own."""
    return {IN_PROCESS_PID_TAG: str(os.getpid()), START_TAG: process_start_time(os.getpid()) or "", HOST_TAG: HOST}


NOT_A_PID = "not a pid"


def run_worker_gone(run: DagsterRun, pid: int | str) -> str | None:
    """`worker_gone` for the process a run's tags record (`pid`, its start time in START_TAG); NOT_A_PID when the
    tag is no pid."""
    try:
        number = int(pid)
    except ValueError:
        return NOT_A_PID
    return worker_gone(number, run.tags.get(START_TAG) or None)


def fail_abandoned_in_process_runs(instance: Any) -> list[str]:
    """Mark failed the runs an earlier run_all executed in process on this host and never finished because that
    process is gone (SIGKILL, out of memory): without the daemon's run monitoring (`dagster dev`), nothing else
    does, and an audit found two such runs still STARTED after later runs succeeded. Returns their run ids."""
    from dagster import DagsterRunStatus, RunsFilter

    pending = [DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
    failed = []
    for record in instance.get_run_records(RunsFilter(statuses=pending)):
        run = record.dagster_run
        pid_text = run.tags.get(IN_PROCESS_PID_TAG)
        if not pid_text or run.tags.get(HOST_TAG, HOST) != HOST or pid_text == str(os.getpid()):
            continue
        gone = run_worker_gone(run, pid_text)
        if gone not in (None, NOT_A_PID):  # a tag that is no pid names no process to find gone
            instance.report_run_failed(run, message=f"the run's process {pid_text} is gone ({gone}) but the run did "
                                                    "not finish: the run_all that ran it in process was killed or "
                                                    "crashed (found by a later run_all)")
            failed.append(run.run_id)
    return failed


def worker_gone(pid: int, start_time: str | None, proc: Path = PROC) -> str | None:
    """Why process `pid` (started at `start_time`, when known) is no longer the run's; None while it is."""
    if not (proc / "self" / "stat").exists():  # no /proc (not Linux): whether the pid lives is all there is
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return "no such process"
        except PermissionError:  # a run's process is its launcher user's: the pid was reused by another user
            return "the pid now names another user's process"
        return None
    stat = process_stat(pid, proc)
    if stat is None:
        return "no such process"
    state, started = stat
    if state in ("Z", "X"):
        return "it exited (a zombie nobody reaped)"
    if start_time is not None and started != start_time:
        return f"the pid now names another process (started at tick {started}, the run's at {start_time})"
    return None


class _ForkServer:
    """One running server process and its pipes."""

    def __init__(self, executable: str, cwd: str | None, stamp: str) -> None:
        self.stamp = stamp
        self.lock = threading.Lock()  # one request and its answer at a time on the pipes
        self.process = subprocess.Popen([executable, "-m", "resources.run_fork_server"], cwd=cwd,  # this env
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                        start_new_session=True)
        ready = self._answer(READY_TIMEOUT_S)
        if not ready.get("ready"):
            self.close()
            raise RuntimeError(f"the run fork server did not start: {ready}")

    def _answer(self, timeout_s: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        box: list[str] = []
        reader = threading.Thread(target=lambda: box.append(self.process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout_s)
        if not box or not box[0]:
            raise RuntimeError("the run fork server did not answer")
        return json.loads(box[0])

    def alive(self) -> bool:
        return self.process.poll() is None

    def launch(self, request: Mapping[str, str]) -> tuple[int, str | None]:
        """The forked run's pid and its start time (None without /proc)."""
        assert self.process.stdin is not None
        with self.lock:
            self.process.stdin.write(json.dumps(dict(request)) + "\n")
            self.process.stdin.flush()
            answer = self._answer(30.0)
        if "pid" not in answer:
            raise RuntimeError(f"the run fork server refused the run: {answer.get('error', answer)}")
        start_time = answer.get("start_time")
        return int(answer["pid"]), None if start_time is None else str(start_time)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()  # the server ends when its input does; its runs go on
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        if self.process.poll() is None:
            self.process.kill()
        with contextlib.suppress(OSError):
            if self.process.stdout is not None:
                self.process.stdout.close()  # its answers pipe: not left open for as long as a reference lives


class ForkServerRunLauncher(DefaultRunLauncher):
    """DefaultRunLauncher whose runs are forked from a warm process when they can be (module docstring)."""

    def __init__(self, inst_data: Any = None) -> None:
        super().__init__(inst_data=inst_data)
        self._lock = threading.Lock()
        self._servers: dict[tuple[str, str | None], _ForkServer] = {}
        self._gone_since: dict[str, float] = {}  # run id -> when its health check first found its process gone
        # run id -> the server that forked it (and reports its exit); weak: a closed, replaced one gives no grace
        self._forked_by: dict[str, weakref.ref[_ForkServer]] = {}

    def _server(self, executable: str, cwd: str | None) -> _ForkServer:
        stamp = source_stamp()
        key = (executable, cwd)
        with self._lock:
            server = self._servers.get(key)
            if server is not None and (server.stamp != stamp or not server.alive()):
                server.close()  # stale code or gone: its runs go on, new ones get a fresh server
                server = None
            if server is None:
                server = self._servers[key] = _ForkServer(executable, cwd, stamp)
            return server

    def _stderr_path(self, run_id: str, create: bool = True) -> Path:
        """Where a forked run's stderr goes (what happens before its event log can take it): beside the
        instance's other logs."""
        folder = Path(self._instance.root_directory) / "logs" / "forked_runs"
        if create:
            folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{run_id}.stderr"

    def _drop(self, key: tuple[str, str | None]) -> None:
        with self._lock:
            server = self._servers.pop(key, None)
        if server is not None:
            server.close()

    def launch_run(self, context: LaunchRunContext) -> None:
        from dagster._core.origin import JobPythonOrigin
        from dagster._grpc.types import ExecuteRunArgs
        from dagster._serdes import serialize_value

        run = context.dagster_run
        origin = run.job_code_origin
        why = None
        if settings().run_launcher == "default":
            why = "BENCHMAP_RUN_LAUNCHER=default"
        elif not hasattr(os, "fork"):
            why = "this platform has no os.fork"
        elif not isinstance(origin, JobPythonOrigin):
            why = "the run has no Python origin to load its job from"
        if why is None:
            pointer = origin.repository_origin.code_pointer  # type: ignore[union-attr]
            key = (origin.executable_path, getattr(pointer, "working_directory", None))  # type: ignore[union-attr]
            try:
                server = self._server(*key)
                ref = self._instance.get_ref()
                args = ExecuteRunArgs(job_origin=origin, run_id=run.run_id, instance_ref=ref)  # type: ignore[arg-type]
                pid, start_time = server.launch({"run_id": run.run_id, "execute_run_args": serialize_value(args),
                                                 "instance_ref": serialize_value(ref),
                                                 "log_path": str(self._stderr_path(run.run_id))})
            except Exception as exc:  # noqa: BLE001 - the default launcher still can
                why = f"the run fork server failed: {type(exc).__name__}: {exc}"
                self._drop(key)  # the next run gets a fresh server
            else:
                # one write: monitoring never sees half of them; every key written, so none is a re-executed
                # parent's (Dagster copies a parent run's tags)
                tags = {PID_TAG: str(pid), START_TAG: start_time or "", HOST_TAG: HOST}
                self._instance.add_run_tags(run.run_id, tags)
                self._instance.report_engine_event(
                    f"Run launched in process {pid}, forked from benchmap's run fork server "
                    f"(resources/run_launcher.py).", run, cls=self.__class__)
                self._run_ids.add(run.run_id)
                self._forked_by[run.run_id] = weakref.ref(server)  # a replaced server's pipes are not kept open
                return
        if run.tags.get(PID_TAG):  # a re-executed forked run's pid, copied from its parent: not this run's process
            self._instance.add_run_tags(run.run_id, {PID_TAG: "", START_TAG: "", HOST_TAG: ""})
        self._instance.report_engine_event(
            f"Run launched by Dagster's default launcher: {why}.", run, cls=self.__class__)
        super().launch_run(context)

    def terminate(self, run_id: str) -> bool:
        run = self._instance.get_run_by_id(run_id) if self.has_instance else None
        if run is not None and run.tags.get(IN_PROCESS_PID_TAG) and not run.is_finished:
            # a run of run_all's process: signalling it would stop run_all, and Dagster's default would leave the
            # run CANCELING while it goes on
            pid = run.tags[IN_PROCESS_PID_TAG]
            gone = self._worker_gone(run, pid)
            self._instance.report_engine_event(
                f"Not terminated: the run executes inside run_all (process {pid}); stop run_all to stop it."
                if gone is None else f"Not terminated: the run executed inside run_all (process {pid}), which is "
                f"gone ({gone}); run monitoring marks the run failed.", run, cls=self.__class__)
            return False
        if run is None or not run.tags.get(PID_TAG):
            return super().terminate(run_id)
        # never signal a pid another process now has (nor a tag that is no pid)
        if run.is_finished or self._worker_gone(run, run.tags[PID_TAG]) is not None:
            return False
        self._instance.report_run_canceling(run)
        try:
            os.kill(int(run.tags[PID_TAG]), signal.SIGTERM)
        except ProcessLookupError:
            return False
        return True

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        """For Dagster's run monitoring: anything but RUNNING (or SUCCESS) gets the run marked failed."""
        tag = PID_TAG if run.tags.get(PID_TAG) else IN_PROCESS_PID_TAG if run.tags.get(IN_PROCESS_PID_TAG) else None
        if tag is None:
            # Launched by DefaultRunLauncher (the fallback): its worker is a code server's subprocess this
            # launcher cannot see. DefaultRunLauncher has no health check in Dagster 1.13.28 (RunLauncher's
            # supports_check_run_worker_health is False, check_run_worker_health raises), so this returns
            # RUNNING, unchecked; should a later version add one, it is used. Its start is still timed out.
            if super().supports_check_run_worker_health:
                return super().check_run_worker_health(run)
            return CheckRunHealthResult(WorkerStatus.RUNNING, "not checked: no process of the run is recorded "
                                                              "(Dagster's default launcher's, or launched before "
                                                              "benchmap recorded one)")
        if run.tags.get(HOST_TAG) and run.tags[HOST_TAG] != HOST:  # a pid names a process of its own host only
            return CheckRunHealthResult(WorkerStatus.RUNNING, f"not checked: the run's process is on host "
                                                              f"{run.tags[HOST_TAG]}, not {HOST}")
        try:
            pid = int(run.tags[tag])
        except ValueError:
            return CheckRunHealthResult(WorkerStatus.RUNNING, f"not checked: {tag} is not a pid")
        gone = self._worker_gone(run, pid)
        if gone is None:
            self._gone_since.pop(run.run_id, None)
            return CheckRunHealthResult(WorkerStatus.RUNNING, f"the run's process {pid} is running",
                                        run_worker_id=str(pid))
        if tag == PID_TAG and self._reporter_alive(run.run_id):
            # its fork server reports the exit, with the exit code, within seconds: wait for that first
            first = self._gone_since.setdefault(run.run_id, time.monotonic())
            if time.monotonic() - first < REPORT_GRACE_S:
                return CheckRunHealthResult(WorkerStatus.RUNNING, f"the run's process {pid} ended; its fork "
                                                                  "server reports how", run_worker_id=str(pid))
        self._gone_since.pop(run.run_id, None)
        self._forked_by.pop(run.run_id, None)
        if tag == IN_PROCESS_PID_TAG:
            why = "the process that ran it in process (run_all) was killed or crashed"
        else:
            why = "it was killed (SIGKILL, out of memory) or crashed, and no run fork server reported its exit"
            if self.has_instance:
                why += f". Its stderr: {self._stderr_path(run.run_id, create=False)}"
        return CheckRunHealthResult(
            WorkerStatus.FAILED, f"the run's process {pid} is gone ({gone}) but the run did not finish: {why}.",
            run_worker_id=str(pid))

    def _reporter_alive(self, run_id: str) -> bool:
        """Whether this launcher forked the run and the fork server that reaps it (not a newer one) still runs."""
        ref = self._forked_by.get(run_id)
        server = ref() if ref is not None else None
        if server is None:
            self._forked_by.pop(run_id, None)
        return server is not None and server.alive()

    @staticmethod
    def _worker_gone(run: DagsterRun, pid: int | str) -> str | None:
        return run_worker_gone(run, pid)

    def dispose(self) -> None:
        with self._lock:
            for server in self._servers.values():
                server.close()
            self._servers.clear()
