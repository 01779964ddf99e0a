"""The run fork server (issue 29 item 3): a process that has imported Dagster, the code location and the runs'
libraries once, and forks one child per run, which executes it as `dagster api execute_run` would.

A fresh run process spends ~2 s importing before its run starts and the labeling step and the first statistics
step ~1.5 s more (bench/RESULTS.md, 2026-12-05); forked from here a run starts with all of it imported
(`bench/fork_probe.py`: the daemon's two runs after a new benchmark 15.8 s -> 11.2 s). Started and fed by
resources/run_launcher.py; protocol, one JSON object per line: the server writes `{"ready": ...}` once, then per
request line `{"run_id", "execute_run_args", "instance_ref"}` it answers `{"pid": ..., "start_time": ...}` (or
`{"error": ...}`); `start_time` is the child's (process_start_time, read before the child can be reaped), null
without /proc.

Fork safety: the server opens no database, socket or thread of its own before forking (the libraries' native
thread pools are idle at that moment and re-initialised in the child by their fork handlers), and each child
leaves the server's pipes at once. A child that dies without finishing its run (killed, crashed) is reported by a
fresh process (`--report-exit`), which marks the run failed, as Dagster's code server does for its run processes.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# what runs of the code location import before or during their steps (the slow ones first; bench/RESULTS.md)
DEFAULT_PRELOAD = ("dagster", "dagster._cli", "dagster._cli.api", "pipelines.definitions",
                   "resources.dagster_storage", "sklearn.feature_extraction.text", "scipy.stats",
                   "statsmodels.formula.api", "pandas")

_CHILDREN: dict[int, dict[str, str]] = {}  # pid -> the request that forked it (run id, instance ref)
PROC = Path("/proc")


def process_stat(pid: int, proc: Path = PROC) -> tuple[str, str] | None:
    """State (field 3) and start time (field 22: clock ticks after boot) of /proc/<pid>/stat; None when there is
    no such process. A pid and its start time name one process: a pid reused later has another start time."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2:].split()  # after the command name, which may hold spaces and parentheses
    return fields[0], fields[19]


def process_start_time(pid: int, proc: Path = PROC) -> str | None:
    """The start time of process `pid`; None without /proc (not Linux) or without the process."""
    stat = process_stat(pid, proc) if (proc / "self" / "stat").exists() else None
    return stat[1] if stat else None


def _preload() -> list[str]:
    """Import the modules; the names of those that failed (a run imports them itself then)."""
    from resources.settings import settings

    failed = []
    for module in settings().fork_preload or DEFAULT_PRELOAD:  # BENCHMAP_FORK_PRELOAD (tests) or the default
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - a module that cannot be preloaded is only not preloaded
            failed.append(module)
    return failed


def _reap(*_: Any) -> None:
    """SIGCHLD: collect every child that ended; one that did not exit cleanly gets its run checked."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        request = _CHILDREN.pop(pid, None)
        code = os.waitstatus_to_exitcode(status)
        if request is not None and code != 0:
            # a fresh process: this one must not open the instance (its children would inherit the connection)
            subprocess.Popen([sys.executable, "-m", "resources.run_fork_server", "--report-exit", request["run_id"],
                              str(code), request["instance_ref"], request["log_path"]],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)


def _run_child(request: dict[str, str]) -> None:
    """In the forked child: leave the server's pipes and signal handling, then execute the run."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the run waits for its own worker processes
    os.setsid()  # a signal to the server's group (the daemon stopping) does not stop a running run
    devnull = os.open(os.devnull, os.O_RDWR)
    log = request.get("log_path")  # stderr only: stdout carries every event again, already in the event log
    err = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if log else devnull
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.dup2(err, 2)
    sys.stdin, sys.stdout, sys.stderr = (os.fdopen(0, "r"), os.fdopen(1, "w", buffering=1),
                                         os.fdopen(2, "w", buffering=1))
    code = 1
    try:
        from dagster._cli import main as dagster_main

        sys.argv = ["dagster", "api", "execute_run", request["execute_run_args"]]
        dagster_main()
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    except BaseException:  # noqa: BLE001 - the run's own failure is in its event log; this is the last resort
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # no teardown: the OS frees what the run left (resources/gc_policy.py)


def serve() -> None:
    failed = _preload()
    signal.signal(signal.SIGCHLD, _reap)
    print(json.dumps({"ready": True, "pid": os.getpid(), "not_preloaded": failed}), flush=True)
    for line in sys.stdin:  # ends when the launcher's process goes: the server goes too, its runs do not
        # SIGCHLD held back until the child is registered: one that dies at once is still reported
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        try:
            try:
                request = json.loads(line)
                pid = os.fork()
            except (ValueError, OSError) as exc:
                print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
                continue
            if pid == 0:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
                _run_child(request)
            _CHILDREN[pid] = {"run_id": request["run_id"], "instance_ref": request["instance_ref"],
                              "log_path": request.get("log_path") or ""}
            start_time = process_start_time(pid)  # not reaped yet (SIGCHLD held back): the child's, even if it died
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        print(json.dumps({"pid": pid, "start_time": start_time}), flush=True)


def report_exit(run_id: str, exit_code: str, instance_ref: str, log_path: str = "") -> None:
    """Mark the run failed when its process ended before the run did (its status says whether it did)."""
    from dagster import DagsterInstance
    from dagster._serdes import deserialize_value

    time.sleep(0.5)  # the child's last events are written before it exits; settle nonetheless
    with DagsterInstance.from_ref(deserialize_value(instance_ref)) as instance:
        run = instance.get_run_by_id(run_id)
        if run is not None and not run.is_finished:
            where = f" Its stderr: {log_path}." if log_path else ""
            instance.report_run_failed(run, f"The run's process (forked by benchmap's run fork server) ended with "
                                            f"exit code {exit_code} before the run finished.{where}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--report-exit":
        report_exit(*sys.argv[2:6])
    else:
        serve()
