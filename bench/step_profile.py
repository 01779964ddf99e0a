"""step_profile: where a cold run's time goes, per Dagster step and, for the slowest stages, per function (issue 29).

    .venv/bin/python bench/step_profile.py                 # cold run with cProfile per step; one JSON object
    .venv/bin/python bench/step_profile.py --no-cprofile   # the same run without cProfile (step CPU-s only)
    .venv/bin/python bench/step_profile.py --top 25 --stages 3

Runs `pipelines.run_all` (every mirrored benchmark, offline labeler) over a fresh throw-away state
(bench/common.py) in a child process. The child wraps Dagster's step execution
(`core_dagster_event_sequence_for_step`: input loading, the asset's compute, output handling and checks of one
step) so that each step gets its own wall seconds, CPU seconds of the process (user+sys: DuckDB and BLAS
threads included, robust on a shared machine) and, unless `--no-cprofile`, its own cProfile, summed over the
partitions of a partitioned step. Time outside the steps (imports, Dagster's per-run set-up, run_all's own
bookkeeping) is reported as `outside_steps`.

Output: per stage (the grouping of bench/common.stage_of) wall, CPU-s and step count; per step the same; for the
`--stages` slowest stages by CPU-s the `--top` functions by own time and by cumulative time (pstats files are
left in `<state>/profile/` for `python -m pstats`). cProfile adds overhead to Python-heavy code (roughly 1.3-2x),
so compare the `--no-cprofile` CPU-s for targets and use the function lists for *where*, not *how much*.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402

OWN_CODE = ("/models/", "/assets/", "/pipelines/")


# ------------------------------------------------------------------------------------------------ the child
def time_steps(out_dir: Path, started: float, cpu_started: float, use_cprofile: bool
               ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Wrap Dagster's step execution in this process so that every step appends its record (wall, CPU-s of the
    process, start, the process's CPU-s by its end, peak RSS) to the returned list (and to out_dir/steps.jsonl
    as it goes); with `use_cprofile`, each step's own cProfile (step key -> Profile, summed over partitions)."""
    import cProfile

    from dagster._core.execution.plan import execute_plan

    original = execute_plan.core_dagster_event_sequence_for_step
    out_dir.mkdir(parents=True, exist_ok=True)
    profiles: dict[str, cProfile.Profile] = {}
    steps: list[dict[str, Any]] = []

    def timed(step_context: Any) -> Any:
        key = step_context.step.key
        partition = step_context.partition_key if step_context.has_partition_key else None
        profile = profiles.setdefault(key, cProfile.Profile()) if use_cprofile else None
        events = original(step_context)
        wall, cpu, start = 0.0, 0.0, time.perf_counter() - started
        while True:  # only the step's own work is timed: not Dagster's handling of the events it yields
            w0, c0 = time.perf_counter(), time.process_time()
            if profile is not None:
                profile.enable()
            try:
                event = next(events)
            except StopIteration:
                break
            finally:
                if profile is not None:
                    profile.disable()
                wall += time.perf_counter() - w0
                cpu += time.process_time() - c0
            yield event
        # the process's peak RSS so far (ru_maxrss, KiB on Linux): the step that raised it is the memory peak's
        steps.append({"step": key, "partition": partition, "wall_s": wall, "cpu_s": cpu, "start_s": start,
                      "main_cpu_s": time.process_time() - cpu_started,  # the process's CPU-s by the step's end
                      "end": time.time(), "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
        with open(out_dir / "steps.jsonl", "a") as progress:  # what a run killed before its end measured
            progress.write(json.dumps(steps[-1]) + "\n")

    execute_plan.core_dagster_event_sequence_for_step = timed
    return steps, profiles


def _child(out_dir: Path, use_cprofile: bool, run_all_args: list[str]) -> int:
    """Run pipelines.run_all in this process with every Dagster step timed (and profiled), after what run_all's
    command line does first (a cold run starts its label workers before Dagster is imported)."""
    from pipelines.label_workers import start_if_cold

    started, cpu_started = time.perf_counter(), time.process_time()
    start_if_cold(run_all_args)
    steps, profiles = time_steps(out_dir, started, cpu_started, use_cprofile)
    from pipelines import run_all

    w0, c0 = started, cpu_started
    try:
        code = run_all.main(run_all_args)
    finally:
        out_dir.mkdir(parents=True, exist_ok=True)
        for key, profile in profiles.items():
            profile.dump_stats(str(out_dir / f"{key}.pstats"))
        (out_dir / "steps.json").write_text(json.dumps({
            "steps": steps, "wall_s": time.perf_counter() - w0, "cpu_s": time.process_time() - c0}))
    return code


# ------------------------------------------------------------------------------------------------ the report
def _short(func: tuple[str, int, str]) -> str:
    path, line, name = func
    for marker in OWN_CODE:
        if marker in path:
            path = marker.strip("/") + "/" + path.split(marker, 1)[1]
            break
    else:
        if "site-packages/" in path:
            path = path.split("site-packages/", 1)[1]
    return f"{path}:{line}:{name}" if line else name


def top_functions(files: list[Path], top: int) -> dict[str, list[dict[str, Any]]]:
    """The `top` functions of the summed profiles by own time, by cumulative time, and the project's own
    functions by cumulative time (what to change)."""
    stats = pstats.Stats(str(files[0]))
    for extra in files[1:]:
        stats.add(str(extra))
    rows = []
    for func, (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": _short(func), "calls": ncalls, "own_s": round(tottime, 2),
                     "cum_s": round(cumtime, 2), "own_code": any(m in func[0] for m in OWN_CODE)})
    by_own = sorted(rows, key=lambda r: -r["own_s"])[:top]
    by_cum = sorted(rows, key=lambda r: -r["cum_s"])[:top]
    own_code = sorted((r for r in rows if r["own_code"]), key=lambda r: -r["cum_s"])[:top]
    return {"by_own_time": by_own, "by_cumulative_time": by_cum, "project_by_cumulative_time": own_code}


def summarize(steps: list[dict[str, Any]], groups: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    per_step: dict[str, dict[str, float]] = {}
    per_stage: dict[str, dict[str, float]] = {}
    for row in steps:
        stage = common.stage_of(row["step"], groups)
        for table, key in ((per_step, row["step"]), (per_stage, stage)):
            entry = table.setdefault(key, {"wall_s": 0.0, "cpu_s": 0.0, "n": 0})
            entry["wall_s"] += row["wall_s"]
            entry["cpu_s"] += row["cpu_s"]
            entry["n"] += 1
    def rounded(table: dict[str, dict[str, float]]) -> dict[str, Any]:
        ordered = sorted(table.items(), key=lambda kv: -kv[1]["cpu_s"])
        return {k: {"wall_s": round(v["wall_s"], 2), "cpu_s": round(v["cpu_s"], 2), "n": int(v["n"])}
                for k, v in ordered}
    return rounded(per_stage), rounded(per_step)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-cprofile", action="store_true", help="time steps only (no profiler overhead)")
    parser.add_argument("--top", type=int, default=20, help="functions listed per slow stage")
    parser.add_argument("--stages", type=int, default=3, help="how many of the slowest stages get functions")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # internal: the profiled run_all, output folder
    args, rest = parser.parse_known_args(argv)
    if args.child:
        return _child(Path(args.child), not args.no_cprofile, rest)

    name = "profile-noprof" if args.no_cprofile else "profile"
    root = common.state_root() / name
    if root.exists():
        shutil.rmtree(root)
    code = common.code_snapshot(common.state_root() / f"{name}-code")
    state = common.State(root, code).create()
    out_dir = root / "profile"
    machine = common.machine()
    common.log(f"[profile] fresh state in {root}; cProfile {'off' if args.no_cprofile else 'on'}")
    since = time.time()
    cmd = [common.PYTHON, str(code / "bench" / "step_profile.py"), "--child", str(out_dir)]
    if args.no_cprofile:
        cmd.insert(2, "--no-cprofile")
    measured = common.run_measured(cmd, state.env(), cwd=code)
    child = json.loads((out_dir / "steps.json").read_text())
    os.environ.update({k: v for k, v in state.env().items() if k.startswith("BENCHMAP_")})
    groups = common.asset_groups()
    per_stage, per_step = summarize(child["steps"], groups)
    event_log_stages = common.stage_seconds(common.step_timings(state.home, since), groups)
    in_steps_cpu = sum(v["cpu_s"] for v in per_stage.values())
    functions: dict[str, Any] = {}
    if not args.no_cprofile:
        for stage in list(per_stage)[: args.stages]:
            files = [out_dir / f"{step}.pstats" for step in per_step
                     if common.stage_of(step, groups) == stage and (out_dir / f"{step}.pstats").exists()]
            if files:
                functions[stage] = top_functions(files, args.top)
    result = {
        "bench": "step_profile",
        "measured_at": common.now_iso(),
        "machine": machine,
        "code_version": common.code_version(code),
        "cprofile": not args.no_cprofile,
        **measured.summary(),
        "success": measured.returncode == 0,
        "stages": per_stage,
        "outside_steps": {"wall_s": round(child["wall_s"] - sum(v["wall_s"] for v in per_stage.values()), 2),
                          "cpu_s": round(child["cpu_s"] - in_steps_cpu, 2)},
        "event_log_stage_seconds": event_log_stages,
        "steps": per_step,
        "functions": functions,
        "pstats_dir": str(out_dir),
    }
    (root / "result.json").write_text(json.dumps(result, indent=2))
    common.emit(result)
    return 0 if measured.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
