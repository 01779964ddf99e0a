"""warm: materialize everything again with nothing changed.

    .venv/bin/python bench/warm.py            # prints one JSON object; progress on stderr

Starts from a copy of the `cold` state (running bench/cold.py first when there is none), runs
`python -m pipelines.run_all` again over the same landing zone and reports wall time, peak RSS, time per stage
and the number of prompts labeled (the `labeler_calls` metadata of every prompt_task_labels materialization,
cross-checked against the label_cache row count). The copy moved every path, so the first rerun takes the full
path (`full_path`: Dagster's records decide each step, pipelines/run_steps.py, and every one is skipped) and
records the fingerprint of the complete run; the second, the measured warm run, answers from it before Dagster
is imported (pipelines/up_to_date.py). `path` says which one each took. `forced` reports a third rerun with
`--force`, where every asset is re-materialized and the labels come from the label cache.
Target (issue 29 item 4): 0 prompts labeled and under 5% of the cold wall time.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402

TARGET_SHARE = 0.05
FAST_PATH_LINE = "nothing changed since"  # the fast path's first line (pipelines/up_to_date.py)


def _path(run: common.Measured) -> str:
    return "fast" if FAST_PATH_LINE in run.stdout else "full"


def main() -> int:
    cold, cold_result = common.cold_state()
    state = cold.copy_to(common.state_root() / "warm")
    before = common.warehouse_counts(state.warehouse)
    machine = common.machine()
    common.log(f"[warm] re-running everything over a copy of the cold state in {state.root}")
    since = time.time()
    full = common.run_all(state)  # the copy moved every path: the full path, every step skipped
    full_steps = common.step_timings(state.home, since)
    common.log("[warm] once more: nothing changed since that complete run")
    measured = common.run_all(state)
    steps = common.step_timings(state.home, since)
    os.environ.update({k: v for k, v in state.env().items() if k.startswith("BENCHMAP_")})
    groups = common.asset_groups()
    after = common.warehouse_counts(state.warehouse)
    labeled = common.materialization_metadata(state.home, "prompt_task_labels", "labeler_calls", since)
    cached = common.materialization_metadata(state.home, "prompt_task_labels", "n_cached", since)
    share = measured.wall_s / float(cold_result["wall_s"])
    prompts_labeled = int(sum(int(v) for v in labeled))

    # the same again with --force: every step re-materialized although nothing changed (labels from the cache)
    common.log("[warm] once more with --force (no step skipped)")
    since_forced = time.time()
    forced = common.run_all(state, "--force")
    forced_steps = common.step_timings(state.home, since_forced)
    forced_labeled = common.materialization_metadata(state.home, "prompt_task_labels", "labeler_calls",
                                                     since_forced)
    forced_cached = common.materialization_metadata(state.home, "prompt_task_labels", "n_cached", since_forced)
    result = {
        "bench": "warm",
        "measured_at": common.now_iso(),
        "machine": machine,
        "labeler": "offline",
        "code_version": common.code_version(state.code),
        **measured.summary(),
        "success": measured.returncode == 0,
        "path": _path(measured),
        "stage_seconds": common.stage_seconds(steps, groups),
        "prompts_labeled": prompts_labeled,
        "prompts_served_from_cache": int(sum(int(v) for v in cached)),
        "label_cache_rows_added": after.get("label_cache", 0) - before.get("label_cache", 0),
        "cold_wall_s": cold_result["wall_s"],
        "share_of_cold": round(share, 3),
        "target": {"prompts_labeled": 0, "share_of_cold": TARGET_SHARE},
        "meets_target": bool(prompts_labeled == 0 and share < TARGET_SHARE and measured.returncode == 0),
        "full_path": {
            **full.summary(),
            "path": _path(full),
            "stage_seconds": common.stage_seconds(full_steps, groups),
            "share_of_cold": round(full.wall_s / float(cold_result["wall_s"]), 3),
        },
        "forced": {
            **forced.summary(),
            "stage_seconds": common.stage_seconds(forced_steps, groups),
            "prompts_labeled": int(sum(int(v) for v in forced_labeled)),
            "prompts_served_from_cache": int(sum(int(v) for v in forced_cached)),
            "share_of_cold": round(forced.wall_s / float(cold_result["wall_s"]), 3),
        },
    }
    common.emit(result)
    return 0 if measured.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
