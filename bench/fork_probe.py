"""fork_probe: the daemon's two runs after one new benchmark, forked from a process that has already imported
Dagster, the code location and the runs' libraries, beside the fresh processes the daemon starts (issue 29 item 3).

    .venv/bin/python bench/fork_probe.py [--rounds 3]     # one JSON object on stdout

Not a launcher: it measures what a run launcher forking runs from a warm process (a fork server) would save, before
anyone builds one. Per round, alternating:
- `fresh`: bench/daemon_path.py's arm (in process): each run a fresh `dagster job execute` process;
- `forked`: the same cold state copied to one fixed folder, the same `synthetic300` folder landed, then a helper
  (`--serve`) imports PRELOAD (timed apart: a server would have done it once, before the benchmark landed) and
  forks one child per run, in which Dagster's CLI executes the job as in `fresh`; a child's wall is from the fork to
  its exit, its CPU-s its own and its reaped descendants'.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench.daemon_path import RUNS, cli_args, land, run_split  # noqa: E402
from bench.daemon_path import arm as fresh_arm  # noqa: E402
from bench.new_benchmark import TARGET_SHARE  # noqa: E402

# what the two runs import before or during their steps (the slow ones: bench/RESULTS.md, 2026-12-05)
PRELOAD = ("dagster", "dagster._cli", "pipelines.definitions", "resources.dagster_storage",
           "sklearn.feature_extraction.text", "scipy.stats", "statsmodels.formula.api", "pandas")


def serve(root: Path, code: Path) -> dict:
    """The helper: this state's environment and code, the imports, then each run in a forked child."""
    import importlib

    state = common.State(root, code).enter()
    started = time.perf_counter()
    for module in PRELOAD:
        importlib.import_module(module)
    out: dict = {"preload_s": round(time.perf_counter() - started, 2),
                 "native_threads_at_fork": len(os.listdir("/proc/self/task"))}
    from dagster._cli import main as dagster_main

    for name, job, tags in RUNS:
        begun = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: Dagster's CLI, as `dagster job execute` would run it
            log = os.open(str(root / f"fork_probe_{job}.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(log, 1)
            os.dup2(log, 2)
            sys.argv = ["dagster", *cli_args(job, tags)]
            code = 1
            try:
                dagster_main()
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else 1
            finally:
                os._exit(code)
        _, status, usage = os.wait4(pid, 0)
        wall_s = time.perf_counter() - begun
        text = (root / f"fork_probe_{job}.log").read_text(errors="replace")
        out[name] = {"wall_s": round(wall_s, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
                     "returncode": os.waitstatus_to_exitcode(status)}
        out[name]["succeeded"] = out[name]["returncode"] == 0 and "RUN_SUCCESS" in text
        if out[name]["succeeded"]:
            out[name]["split"] = run_split(state.home, job, wall_s)
    out["total_wall_s"] = round(out["benchmark_run"]["wall_s"] + out["analysis_run"]["wall_s"], 2)
    return out


def forked_arm(cold: common.State) -> dict:
    state = cold.copy_to(common.state_root() / "fork_probe")  # one folder: the helper's environment is the same
    vouched = cold.carry_vouch(state)
    land(state)
    done = subprocess.run([common.PYTHON, str(Path(__file__).resolve()), "--serve", str(state.root), str(state.code)],
                          capture_output=True, text=True, cwd=state.code)
    if done.returncode != 0:
        raise RuntimeError(f"the fork helper failed: {done.stderr[-2000:]}")
    return {"warehouse_vouched_at_start": vouched, **common.last_json_line(done.stdout)}


def main(argv: list[str]) -> int:
    if "--serve" in argv:
        at = argv.index("--serve")
        print(json.dumps(serve(Path(argv[at + 1]), Path(argv[at + 2]))), flush=True)
        return 0
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
    cold, cold_result = common.cold_state()
    cold_s = float(cold_result["wall_s"])
    series: list[dict] = []
    for number in range(rounds):
        common.log(f"[fork_probe] round {number + 1}: fresh, then forked")
        series.append({"round": number + 1, "fresh": fresh_arm(cold, "in_process"), "forked": forked_arm(cold)})
    medians = {arm: statistics.median(r[arm]["total_wall_s"] for r in series) for arm in ("fresh", "forked")}
    ok = all(r[a][run]["succeeded"] for r in series for a in ("fresh", "forked") for run in ("benchmark_run",
                                                                                            "analysis_run"))
    common.emit({"bench": "fork_probe", "measured_at": common.now_iso(), "machine": common.machine(),
                 "labeler": "offline", "code_version": common.code_version(cold.code), "cold_wall_s": cold_s,
                 "preload": list(PRELOAD), "target": {"share_of_cold": TARGET_SHARE},
                 "median_total_wall_s": medians,
                 "median_share_of_cold": {arm: round(value / cold_s, 3) for arm, value in medians.items()},
                 "all_succeeded": ok, "rounds": series})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
