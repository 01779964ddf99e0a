"""daemon_path: the refresh after one new 300-prompt benchmark as the daemon runs it (issue 29 item 3).

    .venv/bin/python bench/daemon_path.py [--executors in_process,multiprocess] [--launched]   # one JSON object

bench/new_benchmark.py evaluates the sensors and executes both runs in one process, in process (as run_all
does). Dagster's default run launcher starts each run in a fresh process, and that process runs
the job with the code location's executor (pipelines/definitions.py; BENCHMAP_EXECUTOR). This bench does the
same per arm: a copy of the `cold` state (as new_benchmark: run bench/cold.py first when there is none), the same
`synthetic300` folder (bench/new_benchmark.py's 300 edited real prompts and results), its dynamic partition
added (the landing sensor's request), then two processes, each timed with its process tree:

1. `dagster job execute -j benchmark_refresh_job` with the partition's tag (ingest + labels of synthetic300);
2. `dagster job execute -j analysis_refresh_job` (every analysis, estimate, gap and export asset and the
   warehouse-wide checks: a superset of what the automation sensor requests after one benchmark).

`--launched` adds the arm of benchmap's own launcher (dagster.yaml, resources/run_launcher.py): a helper in the
daemon's place creates each run and launches it through the instance, which forks it from the warm fork server;
each run's wall is from its creation to its end.

Per arm: each run's wall, CPU-s and peak (the process arms), their sum and its share of the cold run, and where each run's wall went
(`split`): the Dagster run from its start to its last event (`run_s`), the process outside it (`process_s`:
interpreter, imports, code location, instance, teardown) and the three slowest steps. Not measured: the daemon's
own tick interval and launch latency (seconds, set by its sensor intervals, not by benchmap's code).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench.new_benchmark import N_PROMPTS, NAME, TARGET_SHARE  # noqa: E402

SLOWEST_STEPS = 3
# the daemon's two runs after a benchmark lands: (name, job, run tags)
RUNS = (("benchmark_run", "benchmark_refresh_job", {"dagster/partition": NAME}),
        ("analysis_run", "analysis_refresh_job", {}))


def cli_args(job: str, tags: dict[str, str]) -> list[str]:
    """`dagster job execute` arguments of one of RUNS (after the program name)."""
    return ["job", "execute", "-m", "pipelines.definitions", "-j", job, *(["--tags", json.dumps(tags)] if tags else [])]

ADD_PARTITION = ("from dagster import DagsterInstance\n"
                 "from assets.partitions import BENCHMARK_PARTITIONS_NAME\n"
                 "with DagsterInstance.get() as instance:\n"
                 "    instance.add_dynamic_partitions(BENCHMARK_PARTITIONS_NAME, [{name!r}])\n")


def land(state: common.State) -> None:
    """bench/new_benchmark.py's synthetic300 folder, and its partition as the landing sensor adds it."""
    records = common.edited_sample(N_PROMPTS, tag="syn")
    results = [(r["prompt_id"], model, round(((i * 37 + k * 11) % 100) / 100, 2))
               for i, r in enumerate(records) for k, model in enumerate(("model-a", "model-b"))]
    common.write_benchmark(state.landing, NAME, records, title="Synthetic 300 (edited real prompts)",
                           results=results)
    added = common.run_measured([common.PYTHON, "-c", ADD_PARTITION.format(name=NAME)], state.env(),
                                cwd=state.code, echo=False)
    if added.returncode != 0:
        raise RuntimeError(f"adding the partition failed: {added.stderr[-2000:]}")


def run_split(home: Path, job: str, wall_s: float) -> dict:
    """The newest run of `job` in the instance at `home`: its run time (first to last event), the process time
    outside it and its slowest steps."""
    from dagster import DagsterInstance, RunsFilter

    with common.dagster_home(home), DagsterInstance.get() as instance:
        run = instance.get_runs(limit=1, filters=RunsFilter(job_name=job))[0]
        events = instance.all_logs(run.run_id)
    run_s = events[-1].timestamp - events[0].timestamp if events else 0.0
    steps = sorted((r for r in common.step_timings(home) if r["run_id"] == run.run_id),
                   key=lambda r: -r["seconds"])
    return {"run_s": round(run_s, 2), "process_s": round(wall_s - run_s, 2),
            "steps_s": round(sum(r["seconds"] for r in steps), 2), "n_steps": len(steps),
            "slowest_steps": {r["step"]: round(r["seconds"], 2) for r in steps[:SLOWEST_STEPS]}}


def arm(cold: common.State, executor: str) -> dict:
    state = cold.copy_to(common.state_root() / f"daemon_path_{executor}")
    vouched = cold.carry_vouch(state)
    land(state)
    env = state.env(BENCHMAP_EXECUTOR=executor)
    dagster = str(Path(common.PYTHON).with_name("dagster"))
    out: dict = {"executor": executor, "warehouse_vouched_at_start": vouched}
    for name, job, tags in RUNS:
        common.log(f"[daemon_path] {executor}: {name}")
        measured = common.run_measured([dagster, *cli_args(job, tags)], env, cwd=state.code, echo=False)
        out[name] = measured.summary()
        out[name]["succeeded"] = measured.returncode == 0 and "RUN_SUCCESS" in (measured.stdout + measured.stderr)
        if out[name]["succeeded"]:
            out[name]["split"] = run_split(state.home, job, measured.wall_s)
    out["total_wall_s"] = round(out["benchmark_run"]["wall_s"] + out["analysis_run"]["wall_s"], 1)
    return out


def launch_helper(root: Path, code: Path) -> dict:
    """The `launched` arm's helper, in the daemon's place: this state's instance launches each run through its run
    launcher (dagster.yaml: resources/run_launcher.py), whose fork server is warm, as after the daemon's first run;
    a run's wall is from its creation to its end (the forked process exits at once)."""
    import time

    state = common.State(root, code).enter()
    from dagster import DagsterInstance
    from dagster._core.definitions.reconstruct import ReconstructableRepository

    from pipelines.definitions import defs

    repository = ReconstructableRepository.for_module("pipelines.definitions", "defs", working_directory=str(code))
    out: dict = {}
    with DagsterInstance.get() as instance:
        launcher = instance.run_launcher
        started = time.perf_counter()
        launcher._server(sys.executable, str(code))  # noqa: SLF001 - warm, as the daemon's is by now
        out["server_start_s"] = round(time.perf_counter() - started, 2)
        for name, job, tags in RUNS:
            job_def = defs.resolve_job_def(job)
            origin = repository.get_reconstructable_job(job).get_python_origin()
            begun = time.perf_counter()
            run = instance.create_run_for_job(job_def=job_def, tags=tags, job_code_origin=origin)
            instance.launch_run(run.run_id, workspace=None)  # type: ignore[arg-type] - the fork server needs none
            while not (run := instance.get_run_by_id(run.run_id)).is_finished:  # type: ignore[union-attr]
                time.sleep(0.05)
            wall_s = time.perf_counter() - begun
            out[name] = {"wall_s": round(wall_s, 2), "succeeded": run.status.value == "SUCCESS",
                         "pid": run.tags.get("benchmap/run_pid")}
            if out[name]["succeeded"]:
                out[name]["split"] = run_split(state.home, job, wall_s)
    out["total_wall_s"] = round(out["benchmark_run"]["wall_s"] + out["analysis_run"]["wall_s"], 1)
    return out


def launched_arm(cold: common.State) -> dict:
    state = cold.copy_to(common.state_root() / "daemon_path_launched")
    vouched = cold.carry_vouch(state)
    land(state)
    done = subprocess.run([common.PYTHON, str(Path(__file__).resolve()), "--launch-helper", str(state.root),
                           str(state.code)], capture_output=True, text=True, cwd=state.code)
    if done.returncode != 0:
        raise RuntimeError(f"the launch helper failed: {done.stderr[-3000:]}")
    return {"executor": "in_process", "launcher": "ForkServerRunLauncher", "warehouse_vouched_at_start": vouched,
            **common.last_json_line(done.stdout)}


def main(argv: list[str]) -> int:
    if "--launch-helper" in argv:
        at = argv.index("--launch-helper")
        print(json.dumps(launch_helper(Path(argv[at + 1]), Path(argv[at + 2]))), flush=True)
        return 0
    executors = ["in_process", "multiprocess"]
    if "--executors" in argv:
        executors = argv[argv.index("--executors") + 1].split(",")
    cold, cold_result = common.cold_state()
    cold_s = float(cold_result["wall_s"])
    arms = [arm(cold, executor) for executor in executors]
    if "--launched" in argv:
        arms.append(launched_arm(cold))
    for result in arms:
        result["share_of_cold"] = round(result["total_wall_s"] / cold_s, 3)
    common.emit({"bench": "daemon_path", "measured_at": common.now_iso(), "machine": common.machine(),
                 "labeler": "offline", "code_version": common.code_version(cold.code), "cold_wall_s": cold_s,
                 "target": {"share_of_cold": TARGET_SHARE}, "arms": arms})
    return 0 if all(a["benchmark_run"]["succeeded"] and a["analysis_run"]["succeeded"] for a in arms) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
