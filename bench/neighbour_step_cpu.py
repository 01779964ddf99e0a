"""neighbour_step_cpu: the neighbour step's CPU-s over every landed benchmark, in this process (issue 25 item 7).

    .venv/bin/python bench/neighbour_step_cpu.py [--code ROOT] [--state DIR] [--repeats N]   # one JSON object

The labels step runs the neighbour step (resources/neighbour_step.py) in its own process after each benchmark's
labels are written, while the label workers label the next ones; after the last benchmark it is the stage's
tail. This times it alone: over a finished cold state's warehouse (`<state>/warehouse/benchmap.duckdb`, default
`<BENCHMAP_BENCH_DIR>/cold`), each benchmark's label sets read from its label cache, with the text signals the
labeler gives in a cold run computed beforehand (outside the timing), and the step's decision cache bypassed (a
cold run has none), the warehouse kept open as a run keeps it. Reports the step's CPU-s (the least of `--repeats`), the slowest benchmarks and a digest
of every restacked label, so two codes' runs (`--code` a worktree of another commit) say whether the labels are
the same. One BLAS/polars thread, as the run's main process uses one core.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "POLARS_MAX_THREADS"):
    os.environ[_name] = "1"  # before numpy and polars are imported


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--state", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.code.resolve()))
    from assets import labels as al
    from bench import common
    from models.labeling import cache as lc
    from models.labeling.text_signals import compute_text_signals
    from models.sources import ONET_VERSION
    from resources import neighbour_cache
    from resources import warehouse as wh
    from resources.dagster_resources import LabelerResource, Warehouse

    state = args.state or common.state_root() / "cold"
    path = state / "warehouse" / "benchmap.duckdb"
    if not path.exists():
        print(f"neighbour_step_cpu: no warehouse at {path}: run bench/cold.py first", file=sys.stderr)
        return 2
    warehouse = Warehouse(path=str(path))
    index, _, _ = warehouse.load_task_index(None)
    impl = LabelerResource(kind="offline").build(index)
    cache = warehouse.label_cache()
    prompts = warehouse.read_table("benchmark_prompts")
    inputs = []
    for (benchmark,), group in prompts.group_by(["benchmark"], maintain_order=True):
        records = al.prompt_records(group)
        labels_by_hash, _ = lc.run_plan(lc.plan_labeling(records, impl, cache, ONET_VERSION), impl, cache)
        texts = {r.prompt_hash: r.prompt for r in records if r.prompt_hash in labels_by_hash}
        # what a label worker hands the step with each label set in a cold run
        for h, signal in compute_text_signals(index, impl.selector.fit, impl.config, texts).items():
            labels_by_hash[h].text_signals = signal
        inputs.append((str(benchmark), records, labels_by_hash))
    neighbour_cache.read_decisions = lambda *a, **k: {}  # type: ignore[assignment]  # a cold run's: none
    neighbour_cache.write_decisions = lambda *a, **k: None  # type: ignore[assignment]
    with wh.lingering(str(path)):  # as in a run: its connects are cursors of one open instance
        runs, per_benchmark, digest = _timed(max(1, args.repeats), inputs, warehouse, impl, index)
    slowest = sorted(per_benchmark.items(), key=lambda kv: -kv[1])[:5]
    common.emit({"bench": "neighbour_step_cpu", "measured_at": common.now_iso(), "machine": common.machine(),
                 "code": str(args.code), "code_version": common.code_version(args.code.resolve()),
                 "benchmarks": len(inputs), "texts": sum(len(i[2]) for i in inputs), "cpu_s": min(runs),
                 "cpu_s_runs": runs, "slowest": {b: round(s, 3) for b, s in slowest}, "labels_digest": digest})
    return 0


def _timed(repeats: int, inputs: list, warehouse: Any, impl: Any, index: Any
           ) -> tuple[list[float], dict[str, float], str]:
    """(CPU-s of each repeat, per benchmark CPU-s of the fastest, digest of the restacked labels)."""
    import hashlib
    import time

    from assets import labels as al

    runs: list[float] = []
    per_benchmark: dict[str, float] = {}
    digest = ""
    for _ in range(repeats):
        labels, seconds = [], {}
        for benchmark, records, labels_by_hash in inputs:
            started = time.process_time()
            restacked, version, _ = al.neighbour_step(warehouse, benchmark, records, labels_by_hash, impl, index)
            seconds[benchmark] = time.process_time() - started
            labels.append((benchmark, version, sorted(
                (h, getattr(s, "is_work", None), getattr(s, "p_work", None),
                 [(x.task_id, x.onet_soc_code, x.rank, x.score, x.p_exercised, x.rationale) for x in s])
                for h, s in restacked.items())))
        runs.append(round(sum(seconds.values()), 3))
        if not per_benchmark or sum(seconds.values()) < sum(per_benchmark.values()):
            per_benchmark = seconds
        digest = hashlib.sha256(repr(labels).encode()).hexdigest()[:16]
    return runs, per_benchmark, digest


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
