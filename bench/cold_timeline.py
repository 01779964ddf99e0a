"""cold_timeline: who works when in a cold run, the main process or its worker processes (issue 29: cold < 60 s).

    .venv/bin/python bench/cold_timeline.py                    # a cold run_all; one JSON object
    .venv/bin/python bench/cold_timeline.py --skip-analysis    # arguments after the options go to run_all

Runs `pipelines.run_all` over a fresh throw-away state (bench/common.py) in a child process that is run_all's
command line (the cold start of pipelines/label_workers.py included) with every Dagster step timed as in
bench/step_profile.py (wall, CPU-s of the main process), and samples the CPU seconds of the main process and of
its worker processes every 0.2 s. Reports: per printed stage line its time and the main/worker CPU-s by then;
per step its start, wall and CPU-s; the main process's CPU-s and the workers' in all. On a shared machine the
wall seconds are inflated by the load; the main process's CPU-s and its waits (a step's wall well above its
CPU-s: it waits on a worker) are what to compare.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402


def main(argv: list[str]) -> int:
    import psutil

    root = common.state_root() / "cold_timeline"
    code = common.code_snapshot(common.state_root() / "code_timeline")
    state = common.State(root, code)
    if root.exists():
        import shutil

        shutil.rmtree(root)
    state.create()
    steps_dir = root / "profile"
    started = time.time()
    # the run with every step timed: bench/step_profile.py's child, without the profiler
    child = subprocess.Popen([common.PYTHON, str(code / "bench" / "step_profile.py"), "--no-cprofile", "--child",
                              str(steps_dir), *argv], cwd=code, env=state.env(),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[tuple[float, str]] = []

    def pump() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.append((time.time() - started, line.rstrip()))
            common.log(line.rstrip())

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    main_process, cpu_of = psutil.Process(child.pid), {}
    samples: list[tuple[float, float, float]] = []
    while child.poll() is None:
        try:
            processes = [main_process, *main_process.children(recursive=True)]
        except psutil.Error:
            processes = [main_process]
        for process in processes:
            try:
                times = process.cpu_times()
                cpu_of[process.pid] = times.user + times.system
            except psutil.Error:
                continue
        samples.append((time.time() - started, cpu_of.get(child.pid, 0.0),
                        sum(v for k, v in cpu_of.items() if k != child.pid)))
        time.sleep(0.2)
    wall = time.time() - started
    reader.join(5)

    def at(t: float) -> tuple[float, float, float]:
        return max((s for s in samples if s[0] <= t), default=(0.0, 0.0, 0.0))

    stages = [{"t_s": round(t, 1), "main_cpu_s": round(at(t)[1], 1), "workers_cpu_s": round(at(t)[2], 1),
               "line": line[:120]}
              for t, line in lines if line.startswith(("- ", "benchmap run_all", "  (")) and "/" not in line[:6]]
    result: dict[str, Any] = {
        "bench": "cold_timeline", "measured_at": common.now_iso(), "machine": common.machine(),
        "code_version": common.code_version(code), "args": argv, "returncode": child.returncode,
        "wall_s": round(wall, 1), "main_cpu_s": round(samples[-1][1], 1) if samples else None,
        "workers_cpu_s": round(samples[-1][2], 1) if samples else None,
        "load_avg_1m_at_end": round(os.getloadavg()[0], 2), "stages": stages,
        "cores_busy_per_2s": _cores_busy(samples, 2.0),
        "steps": [{"step": step["step"], "partition": step["partition"], "start_s": round(step["start_s"], 2),
                   "wall_s": round(step["wall_s"], 3), "cpu_s": round(step["cpu_s"], 3),
                   "main_cpu_s": round(step["main_cpu_s"], 2)}
                  for step in json.loads((steps_dir / "steps.json").read_text())["steps"]]
        if (steps_dir / "steps.json").exists() else [],
    }
    common.emit(result)
    return 0 if child.returncode == 0 else 1


def _cores_busy(samples: list[tuple[float, float, float]], window_s: float) -> list[list[float]]:
    """[start of the window, CPU-s of the whole tree per wall second in it] per window: on two cores, below
    ~1.9 is idle capacity (a step one process waits on while the other has nothing to do)."""
    out: list[list[float]] = []
    t = 0.0
    while samples and t < samples[-1][0]:
        inside = [s for s in samples if t <= s[0] < t + window_s]
        before = max((s for s in samples if s[0] < t), default=(0.0, 0.0, 0.0))
        if inside:
            last = inside[-1]
            out.append([round(t, 1), round((last[1] + last[2] - before[1] - before[2]) / max(last[0] - before[0], 1e-9), 2)])
        t += window_s
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
