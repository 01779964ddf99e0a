"""new_benchmark_steps: CPU-s per Dagster step of the refresh after one new 300-prompt benchmark (issue 29 item 3).

    .venv/bin/python bench/new_benchmark_steps.py COLD_STATE CODE OUT_DIR

Copies COLD_STATE (a state bench/cold.py or bench/step_profile.py left: dagster_home, warehouse, raw) to
OUT_DIR/state, then, with the code in CODE (PYTHONPATH), runs `pipelines.run_all` twice under
bench/step_profile.py's per-step timer (no cProfile): first as it is (a warm-up: what the code change makes stale
is recomputed, e.g. the kept per-benchmark draws are written; nothing for the code that built the state), then
after landing `synthetic300` (bench/new_benchmark.py's 300 edited real prompts). Prints one JSON object: per
step and per stage CPU-s of the second run, its process CPU-s, and the warm-up's total. Run it for two codes back
to back on the same COLD_STATE for an A/B (the machine is shared: compare CPU-s).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench.new_benchmark import N_PROMPTS, NAME  # noqa: E402
from bench.step_profile import summarize  # noqa: E402


def _run(state: common.State, code: Path, out: Path) -> dict:
    cmd = [common.PYTHON, str(code / "bench" / "step_profile.py"), "--no-cprofile", "--child", str(out)]
    measured = common.run_measured(cmd, state.env(), cwd=code)
    child = json.loads((out / "steps.json").read_text())
    return {"measured": measured.summary(), "returncode": measured.returncode, "child": child}


def main(argv: list[str]) -> int:
    source, code, out_dir = Path(argv[0]), Path(argv[1]).resolve(), Path(argv[2])
    root = out_dir / "state"
    if root.exists():
        shutil.rmtree(root)
    for part in ("dagster_home", "warehouse", "raw"):
        shutil.copytree(source / part, root / part, symlinks=True)
    state = common.State(root, code)
    common.write_dagster_yaml(state.home, pool_limit=4)
    warm = _run(state, code, out_dir / "warmup")
    records = common.edited_sample(N_PROMPTS, tag="syn")
    results = [(r["prompt_id"], model, round(((i * 37 + k * 11) % 100) / 100, 2))
               for i, r in enumerate(records) for k, model in enumerate(("model-a", "model-b"))]
    common.write_benchmark(state.landing, NAME, records, title="Synthetic 300 (edited real prompts)",
                           results=results)
    new = _run(state, code, out_dir / "new")
    import os
    os.environ.update({k: v for k, v in state.env().items() if k.startswith("BENCHMAP_")})
    groups = common.asset_groups()
    per_stage, per_step = summarize(new["child"]["steps"], groups)
    in_steps = sum(v["cpu_s"] for v in per_stage.values())
    common.emit({
        "bench": "new_benchmark_steps",
        "measured_at": common.now_iso(),
        "machine": common.machine(),
        "code": str(code),
        "code_version": common.code_version(code),
        "warmup": {**warm["measured"], "returncode": warm["returncode"], "steps": len(warm["child"]["steps"])},
        "new_benchmark": {**new["measured"], "returncode": new["returncode"]},
        "stages": per_stage,
        "outside_steps_cpu_s": round(new["child"]["cpu_s"] - in_steps, 2),
        "steps": per_step,
    })
    return 0 if new["returncode"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
