"""partition_runs: the benchmark partitions' stages (ingest + label) of a cold run, code A against code B (issue 29).

    .venv/bin/python bench/partition_runs.py CODE_A CODE_B     # REPS=2: A, B, A, B; RUNS=B: B only
    # CODE_*: a code snapshot (bench/common.code_snapshot, or `git archive <commit> | tar -x -C DIR`)

One base state is built with CODE_A: the reference assets and the task index, plus one small benchmark
(`paperbench`), so that the runs compared start with a built task index and an empty label cache for the other
28 benchmarks. Each run is `run_all --skip-reference --skip-analysis --benchmarks <the 28 others>` over a copy of
the base: every one of the 28 partitions is new, every prompt is labeled. Reported per run: wall, CPU-s of the
process tree (user+sys: the number to compare on a shared machine), peak RSS, the Dagster step seconds of the
ingest and label stages, the number of Dagster runs, and the rows of the partition tables (the same rows
for A and B, else the output differs).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402

SEED_BENCHMARK = "paperbench"
TABLES = ("benchmarks", "benchmark_prompts", "benchmark_results", "benchmark_rejects", "prompt_task_labels",
          "prompt_work")


def _rows(warehouse: Path) -> dict[str, int]:
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        return {t: int(con.execute(f"select count(*) from {t}").fetchone()[0]) for t in TABLES}


def main() -> int:
    code_a, code_b = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    root = common.state_root() / "partition_runs"
    base = common.State(root / "base", code_a).create()
    os.environ.update({k: v for k, v in base.env().items() if k.startswith("BENCHMAP_")})
    names = sorted(p.name for p in (common.mirror_path() / "benchmarks").iterdir() if p.is_dir())
    others = ",".join(n for n in names if n != SEED_BENCHMARK)
    common.log(f"[partition_runs] base state with {SEED_BENCHMARK} in {base.root}")
    seeded = common.run_all(base, "--skip-analysis", "--benchmarks", SEED_BENCHMARK)
    if seeded.returncode != 0:
        raise RuntimeError(f"the base run failed (exit {seeded.returncode})")
    groups = common.asset_groups()
    out: dict[str, object] = {"bench": "partition_runs", "measured_at": common.now_iso(),
                              "machine": common.machine(), "code": {"A": str(code_a), "B": str(code_b)},
                              "args": ["--skip-reference", "--skip-analysis", "--benchmarks", f"<{len(names) - 1}>"],
                              "runs": {}}
    for rep in range(int(os.environ.get("REPS", "1"))):
        for name, code in (("A", code_a), ("B", code_b)):
            if name not in os.environ.get("RUNS", "AB"):  # RUNS=B: only B (A measured before)
                continue
            state = common.State(base.copy_to(root / f"{name}{rep}").root, code)
            since = time.time()
            measured = common.run_all(state, "--skip-reference", "--skip-analysis", "--benchmarks", others)
            steps = common.step_timings(state.home, since)
            stages = common.stage_seconds(steps, groups)
            run = {**measured.summary(), "stage_seconds": stages,
                   "ingest_plus_label_s": round(stages.get("ingest", 0) + stages.get("label", 0), 1),
                   "n_dagster_runs": len({s["run_id"] for s in steps}), "rows": _rows(state.warehouse)}
            out["runs"][f"{name}{rep}"] = run  # type: ignore[index]
            common.log(name, rep, json.dumps(run))
    common.emit(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
