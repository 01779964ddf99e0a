"""calibration_memory: the per-text calibration check (models/estimates/calibration.py) alone over a kept bench
state's warehouse, its CPU-s and the process's peak RSS above what the inputs took (issue 29 item 5: the
leave-one-benchmark-out calibration set headline_estimates' peak at 50x the mirror).

    .venv/bin/python bench/calibration_memory.py /work/scale-bench/v2/scale_seeded_10x/warehouse/benchmap.duckdb \
        [--table out.parquet] [--out result.json]

Reads the inputs as headline_estimates does (read-only), builds the judged problem, then runs
text_probability_calibration with the asset's settings (calibration_draws 20, seed 16). `--table` writes the
calibration table (compare before/after a change bit for bit).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class _PeakSampler(threading.Thread):
    """The largest current RSS seen every 20 ms (ru_maxrss cannot be reset between phases)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0.0
        self.running = True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, _rss_mib())
            time.sleep(0.02)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("warehouse", type=Path)
    ap.add_argument("--table", type=Path, help="write the calibration table here (parquet)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    import polars as pl

    import models.estimates as es
    from assets.estimates import _problem, read_inputs
    from bench import common
    from resources.dagster_resources import Warehouse

    c0 = _cpu_s()
    inputs = read_inputs(Warehouse(path=str(args.warehouse)))
    judge_rows: pl.DataFrame = inputs["judge_rows"]  # type: ignore[assignment]
    texts = es.text_frame(inputs["prompts"], judge_rows)  # type: ignore[arg-type]
    problem = _problem(inputs, judge_rows, inputs["labels"])  # type: ignore[arg-type]
    judged, _ = es.judged_problem(problem, texts)
    del inputs
    inputs_cpu, inputs_rss = _cpu_s() - c0, _rss_mib()
    sampler = _PeakSampler()
    sampler.start()
    c0 = _cpu_s()
    table, _recalibration = es.text_probability_calibration(judged, n_draws=20, seed=16)
    cpu = _cpu_s() - c0
    sampler.running = False
    sampler.join()
    if args.table:
        table.write_parquet(args.table)
    out = {"bench": "calibration_memory", "warehouse": str(args.warehouse), "measured_at": common.now_iso(),
           "code_version": common.code_version(), "load_avg_1m": os.getloadavg()[0],
           "n_texts": int(problem.text_bench.size), "n_judged_problem_texts": int(judged.text_bench.size),
           "n_label_rows": int(judged.lab_text.size), "n_benchmarks": judged.n_bench,
           "inputs_cpu_s": round(inputs_cpu, 2), "rss_after_inputs_mib": round(inputs_rss, 1),
           "calibration_cpu_s": round(cpu, 2), "calibration_peak_rss_mib": round(sampler.peak, 1),
           "calibration_adds_mib": round(sampler.peak - inputs_rss, 1),
           "maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
