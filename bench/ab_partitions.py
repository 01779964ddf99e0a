"""ab_partitions: two code versions, back to back, over copies of one finished state (issue 29).

    .venv/bin/python bench/ab_partitions.py CODE_A CODE_B [run_all args...]
    # e.g. CODE_A = <bench dir>/code (the snapshot bench/cold.py took), CODE_B = a bench/common.code_snapshot of
    # the working tree; args: --force --skip-reference --skip-analysis --benchmarks a,b,c
    REPS=2 ... (alternate A, B, A, B)

Copies `<BENCHMAP_BENCH_DIR>/cold` (bench/cold.py's state) to `<bench dir>/ab/A<i>` and `B<i>`, runs
`python -m pipelines.run_all ARGS` with each code snapshot, and prints one JSON object: per run wall, CPU-s
(user+sys of the process tree: the number to compare on a shared machine), peak RSS and the summed Dagster step
seconds. Compare the states' outputs afterwards with bench/compare_outputs.py.
"""

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402

root = common.state_root()
base = common.State(root / "cold")
code_a, code_b, args = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
out = {}
for rep in range(int(os.environ.get("REPS", "1"))):
    for name, code in (("A", code_a), ("B", code_b)):
        st = base.copy_to(root / "ab" / f"{name}{rep}")
        st = common.State(st.root, code)
        since = time.time()
        m = common.run_all(st, *args)
        steps = common.step_timings(st.home, since)
        out[f"{name}{rep}"] = {**m.summary(), "step_s": round(sum(r["seconds"] for r in steps), 1),
                               "n_steps": len(steps)}
        print(name, rep, json.dumps(out[f"{name}{rep}"]), file=sys.stderr, flush=True)
print(json.dumps(out))
