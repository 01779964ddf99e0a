"""new_benchmark_steps: CPU-s per Dagster step of the refresh after one new 300-prompt benchmark (issue 29 item 3).

    .venv/bin/python bench/new_benchmark_steps.py COLD_STATE CODE OUT_DIR [--run-all] [--cprofile]

Copies COLD_STATE (a state bench/cold.py or bench/step_profile.py left: dagster_home, warehouse, raw) to
OUT_DIR/state, then, with the code in CODE (PYTHONPATH), runs `pipelines.run_all` under bench/step_profile.py's
per-step timer (no cProfile) as a warm-up (what the code change makes stale is recomputed, e.g. the kept
per-benchmark draws are written; nothing for the code that built the state), lands `synthetic300`
(bench/new_benchmark.py's 300 edited real prompts) and measures the refresh the way bench/new_benchmark.py does:
its child (CODE/bench/new_benchmark.py --child) evaluates the sensors and executes the benchmark run and the
analysis run they request, each step timed. `--run-all`: the refresh is a second `run_all` instead (run_all
starts the judged checks ahead of its analysis run, the sensor's run does not). `--cprofile`: each step of the
sensors' refresh is also profiled (OUT_DIR/new/<step>.pstats; its CPU-s are then inflated: use them for where).

Prints one JSON object: per step and per stage CPU-s of the refresh, its phases' CPU-s (the child process and its
process tree), the child's process-tree CPU-s and wall, and the warm-up's total. Run it for two codes back to back
on the same COLD_STATE for an A/B (the machine is shared: compare CPU-s). CODE must hold this bench/ folder (the
child's step timer): for an older commit, copy bench/ over its snapshot.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench.new_benchmark import N_PROMPTS, NAME  # noqa: E402
from bench.step_profile import summarize  # noqa: E402


def _run(state: common.State, cmd: list[str], code: Path, out: Path) -> dict:
    measured = common.run_measured(cmd, state.env(), cwd=code)
    child = json.loads((out / "steps.json").read_text())
    return {"measured": measured.summary(), "returncode": measured.returncode, "child": child,
            "stdout": measured.stdout}


def main(argv: list[str]) -> int:
    run_all, cprofile = "--run-all" in argv, "--cprofile" in argv
    argv = [a for a in argv if a not in ("--run-all", "--cprofile")]
    source, code, out_dir = Path(argv[0]), Path(argv[1]).resolve(), Path(argv[2])
    root = out_dir / "state"
    if root.exists():
        shutil.rmtree(root)
    for part in ("dagster_home", "warehouse", "raw"):
        shutil.copytree(source / part, root / part, symlinks=True)
    state = common.State(root, code)
    common.write_dagster_yaml(state.home, pool_limit=4)
    profile = [common.PYTHON, str(code / "bench" / "step_profile.py"), "--no-cprofile", "--child"]
    warm = _run(state, [*profile, str(out_dir / "warmup")], code, out_dir / "warmup")
    records = common.edited_sample(N_PROMPTS, tag="syn")
    results = [(r["prompt_id"], model, round(((i * 37 + k * 11) % 100) / 100, 2))
               for i, r in enumerate(records) for k, model in enumerate(("model-a", "model-b"))]
    common.write_benchmark(state.landing, NAME, records, title="Synthetic 300 (edited real prompts)",
                           results=results)
    new_dir = out_dir / "new"
    sensor = [common.PYTHON, str(code / "bench" / "new_benchmark.py"), "--child", "--steps", str(new_dir),
              *(["--cprofile"] if cprofile else [])]
    new = _run(state, [*profile, str(new_dir)] if run_all else sensor, code, new_dir)
    report = {} if run_all else common.last_json_line(new["stdout"])
    os.environ.update({k: v for k, v in state.env().items() if k.startswith("BENCHMAP_")})
    groups = common.asset_groups()
    per_stage, per_step = summarize(new["child"]["steps"], groups)
    in_steps = sum(v["cpu_s"] for v in per_stage.values())
    common.emit({
        "bench": "new_benchmark_steps",
        "refresh": "run_all" if run_all else "sensors (bench/new_benchmark.py's child)",
        "measured_at": common.now_iso(),
        "machine": common.machine(),
        "code": str(code),
        "code_version": common.code_version(code),
        "warmup": {**warm["measured"], "returncode": warm["returncode"], "steps": len(warm["child"]["steps"])},
        "new_benchmark": {**new["measured"], "returncode": new["returncode"]},
        "phases_s": {k: v for k, v in report.items() if k.endswith("_s") and not isinstance(v, dict)},
        "phases_cpu_s": new["child"].get("phases_cpu_s"),  # phase -> [the child process, its process tree]
        "prompts_labeled": report.get("prompts_labeled"),
        "runs_ok": [report.get("benchmark_runs_ok"), report.get("analysis_runs_ok")] if report else None,
        "stages": per_stage,
        "outside_steps_cpu_s": round(new["child"]["cpu_s"] - in_steps, 2),
        "steps": per_step,
    })
    return 0 if new["returncode"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
