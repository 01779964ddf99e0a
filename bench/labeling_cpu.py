"""labeling_cpu: the offline labeler's CPU-s over every landed text, in this process, one thread (issue 29).

    .venv/bin/python bench/labeling_cpu.py [--code ROOT] [--state DIR]     # one JSON object

Labels every distinct text of a finished cold state's warehouse (`<state>/warehouse/benchmap.duckdb`, default
`<BENCHMAP_BENCH_DIR>/cold`) with the selector, from that state's pickled task index, using the code at ROOT
(default: this checkout; a worktree of another commit gives its figure). Reports the labeling's CPU-s and a
digest of every label (task, occupation, rank, score, rationale, probability), so two codes' runs say whether
the labels are the same. One BLAS/polars thread, as a label worker has. The cold run's labeling stage adds the
neighbour step, the writes and two worker processes to this; on a host whose speed moves, alternate the codes.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "POLARS_MAX_THREADS"):
    os.environ[_name] = "1"  # before numpy and polars are imported, as resources/label_pool.py's workers


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--state", type=Path, default=None)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.code.resolve()))
    import hashlib
    import time

    import duckdb

    from bench import common
    from models.labeling.base import PromptRecord
    from models.labeling.offline import OfflineLabeler
    from resources.readers import load_selector_fit
    from resources.task_index import load_pickle

    state = args.state or common.state_root() / "cold"
    warehouse = state / "warehouse"
    pickles = sorted((warehouse / "task_index").glob("*.pkl"))
    if not pickles:
        print(f"labeling_cpu: no task index in {warehouse / 'task_index'}: run bench/cold.py first", file=sys.stderr)
        return 2
    labeler = OfflineLabeler(load_pickle(pickles[-1]), selector=load_selector_fit())
    with duckdb.connect(str(warehouse / "benchmap.duckdb"), read_only=True) as con:
        rows = con.sql("select benchmark, min(prompt_id), prompt_hash, any_value(prompt) from benchmark_prompts "
                       "group by benchmark, prompt_hash order by benchmark, prompt_hash").fetchall()
    records = [PromptRecord(b, p, h, t) for b, p, h, t in rows]
    started = time.process_time()
    outcomes = labeler.label(records)
    cpu_s = time.process_time() - started
    labels = [(o.prompt_hash, [(x.task_id, x.onet_soc_code, x.rank, x.score, x.rationale, x.p_exercised)
                               for x in o.labels]) for o in outcomes if o.ok]
    common.emit({"bench": "labeling_cpu", "measured_at": common.now_iso(), "machine": common.machine(),
                 "code": str(args.code), "code_version": common.code_version(args.code.resolve()),
                 "texts": len(records), "labeled": len(labels), "cpu_s": round(cpu_s, 2),
                 "labels_digest": hashlib.sha256(repr(labels).encode()).hexdigest()[:16]})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
