"""scale: synthetic growth to 10x and 50x the mirrored prompt count; wall time and peak RSS per stage.

    .venv/bin/python bench/scale.py [--factors 1,10,50]

For each factor F, a copy of the `cold` state (bench/cold.py runs first when there is none) gets a landing zone
in `raw/benchmarks/` that shadows every mirrored benchmark with F copies of each of its prompt lines (copy 0
keeps its prompt_id, copy k gets `<id>~r<k>`: fresh ids, same text) and F copies of its results. Two
processes then run: `run_all --force --skip-reference --skip-analysis` (every benchmark partition: ingest,
labels) and `run_all --skip-reference` (the partitions are unchanged and skipped; analysis, gaps and exports
over F x 11,107 prompts), so each half of the pipeline has its own peak RSS.

Because a replicated prompt has the same text, its labels come from the label cache (one labeler call per
distinct text, as in production): the `label` stage measures the cache lookup, label-frame assembly and
partition writes over F times the rows, not the labeler's compute, which is linear per prompt by construction
(see labeler_throughput; the new_benchmark bench labels fresh texts). Per stage the report gives summed step
seconds and seconds per 1,000 prompts; `growth` compares each factor with the previous one: time ratios,
marginal seconds per 1,000 added prompts (constant = linear) and peak-RSS ratios of both processes;
`rss_growth_by_step` names the steps during which the process grew most.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402


def replicate_landing(mirror: Path, landing: Path, factor: int) -> dict[str, int]:
    """Shadow every mirrored benchmark with a `factor`-times replicated copy; returns the line counts."""
    counts = {"prompt_lines": 0, "result_lines": 0}
    for folder in sorted(p for p in (mirror / "benchmarks").iterdir() if (p / "prompts.jsonl").is_file()):
        target = landing / folder.name
        target.mkdir(parents=True, exist_ok=True)
        for meta in ("benchmark.toml", "benchmark.yaml", "benchmark.yml"):
            if (folder / meta).is_file():
                (target / meta).write_bytes((folder / meta).read_bytes())
        lines = [line for line in (folder / "prompts.jsonl").read_bytes().split(b"\n") if line.strip()]
        with open(target / "prompts.jsonl", "wb") as out:
            for k in range(factor):
                for line in lines:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        out.write(line + b"\n")  # a bad line stays bad (a reject), once per copy
                        continue
                    if k and isinstance(record, dict) and record.get("prompt_id") is not None:
                        record["prompt_id"] = f"{record['prompt_id']}~r{k}"
                    out.write(json.dumps(record, ensure_ascii=False).encode() + b"\n")
                    counts["prompt_lines"] += 1
        results = folder / "results.csv"
        if results.is_file():
            with open(results, newline="", encoding="utf-8") as handle:
                rows = [r for r in csv.reader(handle) if r]
            header, rows = rows[0], rows[1:]
            pid = header.index("prompt_id") if "prompt_id" in header else None
            with open(target / "results.csv", "w", newline="", encoding="utf-8") as handle:
                writer = csv.writer(handle)
                writer.writerow(header)
                for k in range(factor):
                    for row in rows:
                        if k and pid is not None and len(row) == len(header):
                            row = [*row[:pid], f"{row[pid]}~r{k}", *row[pid + 1:]]
                        writer.writerow(row)
                        counts["result_lines"] += 1
    return counts


def step_rss_growth(rows: list[dict], measured: common.Measured, top: int = 6) -> list[dict]:
    """The steps during which the process's RSS grew most (in-process execution: attribution by time)."""
    out = []
    for row in rows:
        inside = [rss for t, rss in measured.samples if row["start"] - 0.05 <= t <= row["end"] + 0.05]
        before = [rss for t, rss in measured.samples if t <= row["start"]]
        if inside:
            start_rss = before[-1] if before else inside[0]
            out.append({"step": row["step"], "partition": row["partition"], "seconds": round(row["seconds"], 1),
                        "rss_at_start_mib": common.mib(start_rss), "peak_rss_mib": common.mib(max(inside)),
                        "growth_mib": common.mib(max(inside) - start_rss)})
    return sorted(out, key=lambda r: -(r["growth_mib"] or 0))[:top]


def run_factor(factor: int) -> dict:
    cold, _ = common.cold_state()
    state = cold.copy_to(common.state_root() / f"scale_{factor}x")
    t0 = time.perf_counter()
    lines = replicate_landing(common.mirror_path(), state.landing, factor)
    landing_s = time.perf_counter() - t0
    common.log(f"[scale {factor}x] landing zone: {lines['prompt_lines']} prompt lines in {landing_s:.1f}s")
    os.environ.update({k: v for k, v in state.env().items() if k.startswith("BENCHMAP_")})
    groups = common.asset_groups()
    # process 1: every benchmark partition (ingest + labels); process 2: analysis, gaps, exports (the partitions
    # are then unchanged and skipped), so each process's peak RSS belongs to one half of the pipeline
    since = time.time()
    partitions = common.run_all(state, "--force", "--skip-reference", "--skip-analysis")
    part_steps = common.step_timings(state.home, since)
    since_analysis = time.time()
    analysis = common.run_all(state, "--skip-reference")
    analysis_steps = common.step_timings(state.home, since_analysis)
    steps = part_steps + analysis_steps
    counts = common.warehouse_counts(state.warehouse)
    labeled = common.materialization_metadata(state.home, "prompt_task_labels", "labeler_calls", since)
    stage_s = common.stage_seconds(steps, groups)
    prompts = counts.get("benchmark_prompts", 0)
    biggest = max(((r["partition"], r["seconds"]) for r in part_steps if r["step"] == "prompt_task_labels"),
                  key=lambda x: x[1], default=(None, 0.0))
    out = {
        "factor": factor,
        "code_version": common.code_version(state.code),
        "prompts": prompts,
        "label_rows": counts.get("prompt_task_labels", 0),
        "landing_prompt_lines": lines["prompt_lines"],
        "wall_s": round(partitions.wall_s + analysis.wall_s, 1),
        "cpu_s": round(partitions.cpu_s + analysis.cpu_s, 1),
        "success": partitions.returncode == 0 and analysis.returncode == 0,
        "failed_steps": sorted({r["step"] for r in steps if r["status"] != "success"}),
        "partitions_process": partitions.summary(),
        "analysis_process": analysis.summary(),
        "peak_rss_mib": max(common.mib(partitions.peak_rss_bytes), common.mib(analysis.peak_rss_bytes)),
        "stage_seconds": stage_s,
        "stage_s_per_1k_prompts": {k: round(v / max(prompts, 1) * 1000, 3) for k, v in stage_s.items()},
        "slowest_label_step": {"partition": biggest[0], "seconds": round(biggest[1], 1)},
        "rss_growth_by_step": step_rss_growth(part_steps, partitions, 3) + step_rss_growth(analysis_steps, analysis),
        "prompts_labeled": int(sum(int(v) for v in labeled)),
        "warehouse_mib": common.mib(state.warehouse.stat().st_size),
    }
    if os.environ.get("BENCHMAP_BENCH_KEEP") != "1" and factor > 1:
        import shutil

        shutil.rmtree(state.root, ignore_errors=True)  # 50x leaves GBs of landing files and warehouse
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--factors", default="1,10,50")
    args = ap.parse_args(argv)
    factors = [int(f) for f in args.factors.split(",") if f.strip()]
    machine = common.machine()
    runs = [run_factor(f) for f in factors]
    growth = {}
    for prev, run in zip(runs, runs[1:], strict=False):
        extra_k = (run["prompts"] - prev["prompts"]) / 1000
        growth[f"{run['factor']}x_vs_{prev['factor']}x"] = {
            "prompt_ratio": round(run["prompts"] / max(prev["prompts"], 1), 2),
            "wall_ratio": round(run["wall_s"] / prev["wall_s"], 2),
            "stage_time_ratio": {k: round(v / prev["stage_seconds"][k], 2)
                                 for k, v in run["stage_seconds"].items() if prev["stage_seconds"].get(k)},
            # marginal seconds per 1,000 added prompts: flat across the steps = linear
            "marginal_s_per_1k_prompts": {k: round((v - prev["stage_seconds"].get(k, 0.0)) / extra_k, 3)
                                          for k, v in run["stage_seconds"].items()} if extra_k else {},
            "partitions_peak_rss_ratio": round(run["partitions_process"]["peak_rss_mib"]
                                               / prev["partitions_process"]["peak_rss_mib"], 2),
            "analysis_peak_rss_ratio": round(run["analysis_process"]["peak_rss_mib"]
                                             / prev["analysis_process"]["peak_rss_mib"], 2),
        }
    common.emit({"bench": "scale", "measured_at": common.now_iso(), "machine": machine, "labeler": "offline",
                 "runs": runs, "growth": growth})
    return 0 if all(r["success"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
