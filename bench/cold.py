"""cold: a fresh warehouse and Dagster instance, materialize everything with the offline labeler.

    .venv/bin/python bench/cold.py            # prints one JSON object; progress on stderr

Runs `python -m pipelines.run_all` (reference data, task index, every mirrored benchmark partition with its
labels, then analysis, gaps and exports) in a child process over a throw-away state folder
(bench/common.py), and reports wall time, the peak RSS of the child's process tree, the time per stage (from
the Dagster event log), the task index build time and how many prompts were labeled.
Target (issue 7): under 5 minutes and under 3 GiB, task index build included.

The state is left in `<BENCHMAP_BENCH_DIR>/cold` with `result.json`: `warm`, `new_benchmark` and `scale` start
from a copy of it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402

TARGET_S = 300.0
TARGET_RSS_MIB = 3 * 1024.0


def main() -> int:
    root = common.state_root() / "cold"
    if root.exists():
        shutil.rmtree(root)
    code = common.code_snapshot(common.state_root() / "code")  # warm, new_benchmark, scale reuse it
    state = common.State(root, code).create()
    machine = common.machine()
    common.log(f"[cold] fresh state in {root}; mirror {common.mirror_path()}")
    since = time.time()
    measured = common.run_all(state)
    steps = common.step_timings(state.home, since)
    os.environ.update({k: v for k, v in state.env().items() if k.startswith("BENCHMAP_")})
    groups = common.asset_groups()
    counts = common.warehouse_counts(state.warehouse)
    index_build = common.materialization_metadata(state.home, "task_search_index", "build_seconds", since)
    labeled = common.materialization_metadata(state.home, "prompt_task_labels", "labeler_calls", since)
    failed_steps = sorted({f"{r['step']}[{r['partition']}]" if r["partition"] else r["step"]
                           for r in steps if r["status"] != "success"})
    result = {
        "bench": "cold",
        "measured_at": common.now_iso(),
        "machine": machine,
        "labeler": "offline",
        "code_version": common.code_version(code),
        **measured.summary(),
        "success": measured.returncode == 0,
        "failed_steps": failed_steps,
        "stage_seconds": common.stage_seconds(steps, groups),
        "task_index_build_s": round(float(index_build[-1]), 1) if index_build else None,
        "prompts_labeled": int(sum(int(v) for v in labeled)),
        "n_partition_runs": len({r["run_id"] for r in steps if r["partition"]}),
        "warehouse_rows": counts,
        "warehouse_mib": common.mib(state.warehouse.stat().st_size) if state.warehouse.exists() else None,
        "target": {"wall_s": TARGET_S, "peak_rss_mib": TARGET_RSS_MIB},
        "meets_target": bool(measured.wall_s < TARGET_S and (measured.peak_rss_bytes / common.MIB) < TARGET_RSS_MIB
                             and measured.returncode == 0),
        "state_dir": str(root),
        "code_dir": str(code),
        "rss_timeline_mib": measured.timeline_mib(),
    }
    (root / "result.json").write_text(json.dumps(result, indent=2, default=str))
    common.emit(result)
    return 0 if measured.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
