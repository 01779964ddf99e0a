"""scale: the whole pipeline at 1x, 10x and 50x the mirrored prompts; CPU-s, wall and peak RSS per stage (issue 29,
item 5).

    .venv/bin/python bench/scale.py --factors 1,10 [--texts new|same] [--out bench/scale-10x.json]
    .venv/bin/python bench/scale.py --merge bench/scale-1x.json bench/scale-10x.json --out bench/scale.json

For each factor F a fresh state (bench/common.py: its own Dagster home, warehouse and landing zone, one snapshot
of the code) gets a landing zone in `raw/benchmarks/` that shadows every mirrored benchmark with F copies of its
prompts and results. Copy 0 is the mirrored prompt as it is; copy k >= 1 gets the id `<id>~r<k>` and, with
`--texts new` (the default), a perturbed text (bench/scale_labels.perturbed: two words dropped, two swapped, the
copy number appended), so every copy is a new text: the labeler scores it, the label cache grows, and the
estimates (which work per distinct text of a benchmark) draw over F times the texts. With `--texts same` the
copies keep the text (one labeler call per distinct text; the estimates see the same texts with F times the
multiplicity): the pipeline's cost per *prompt* without the per-text work.

Then one process runs `python -m pipelines.run_all` (reference, task index, every partition, analysis, gaps,
exports: a cold run) under bench/step_profile.py's child, which times every Dagster step in CPU seconds of the
process (user+sys, DuckDB's and BLAS's threads included: comparable on a loaded machine where wall seconds are
not) and records the process's peak RSS after each step. Reported per factor: per stage (bench/common.stage_of,
with the `estimates` group apart from the rest of the analysis) CPU-s, wall-s and CPU-s per 1,000 prompts; the
process tree's peak RSS (sampled) and the step during which the process's own peak grew most; the 15 costliest
steps. `growth` compares consecutive factors: the marginal CPU-s per 1,000 added prompts per stage (constant =
linear past the fixed cost) and the ratio of peak RSS.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from bench.scale_labels import perturbed  # noqa: E402

TARGET_RSS_MIB = 4 * 1024.0


def scaled_landing(mirror: Path, landing: Path, factor: int, *, new_texts: bool,
                   hash_map: list[tuple[str, str]] | None = None) -> dict[str, int]:
    """Shadow every mirrored benchmark with `factor` copies of its prompts and results (see the module
    docstring); returns the line counts. `hash_map`, when given, receives (new text's hash, its original's)."""
    from models.benchmarks import prompt_hash

    counts = {"benchmarks": 0, "prompt_lines": 0, "result_lines": 0}
    for folder in sorted(p for p in (mirror / "benchmarks").iterdir() if (p / "prompts.jsonl").is_file()):
        target = landing / folder.name
        target.mkdir(parents=True, exist_ok=True)
        for meta in ("benchmark.toml", "benchmark.yaml", "benchmark.yml"):
            if (folder / meta).is_file():
                (target / meta).write_bytes((folder / meta).read_bytes())
        lines = [line for line in (folder / "prompts.jsonl").read_bytes().split(b"\n") if line.strip()]
        with open(target / "prompts.jsonl", "wb") as out:
            for k in range(factor):
                if k == 0:  # copy 0: the mirrored file's lines, byte for byte
                    out.write(b"\n".join(lines) + b"\n")
                    counts["prompt_lines"] += len(lines)
                    continue
                for line in lines:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        out.write(line + b"\n")  # a bad line stays bad (a reject), once per copy
                        counts["prompt_lines"] += 1
                        continue
                    if isinstance(record, dict) and record.get("prompt_id") is not None:
                        record["prompt_id"] = f"{record['prompt_id']}~r{k}"
                        if new_texts and isinstance(record.get("prompt"), str):
                            original = record["prompt"]
                            record["prompt"] = perturbed(original, str(record["prompt_id"]), k)
                            if hash_map is not None:
                                hash_map.append((prompt_hash(record["prompt"]), prompt_hash(original)))
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
        counts["benchmarks"] += 1
    return counts


def seed_label_cache(warehouse: Path, hash_map: list[tuple[str, str]]) -> int:
    """Copy each original text's cached label sets to its perturbed copies' hashes (label_cache rows). Until
    2026-12-05 the labeler was then not run again for them, and the `seeded` mode measured everything but the
    labeler's own compute. Since f6b3ca0 a cached offline label made under another benchmark context (the
    sampled texts its labels depend on) is labeled again, and at F copies every benchmark has another context:
    the seeded rows are not used, and the mode measures the labeler too (bench/scale50-2026-12-07.json)."""
    import duckdb
    import polars as pl

    mapping = pl.DataFrame(hash_map, schema={"new_hash": pl.Utf8, "orig_hash": pl.Utf8}, orient="row").unique()
    con = duckdb.connect(str(warehouse))
    try:
        con.register("hash_map", mapping.to_arrow())
        before = con.execute("select count(*) from label_cache").fetchone()[0]
        con.execute("create temp table seeded as select * from label_cache limit 0")
        con.execute("insert into seeded select c.* replace (m.new_hash as prompt_hash) from label_cache c "
                    "join hash_map m on c.prompt_hash = m.orig_hash")
        con.execute("insert into label_cache select s.* from seeded s where not exists (select 1 from label_cache t "
                    "where t.prompt_hash = s.prompt_hash and t.labeler = s.labeler and t.model = s.model and "
                    "t.template_version = s.template_version and t.onet_version = s.onet_version)")
        after = con.execute("select count(*) from label_cache").fetchone()[0]
    finally:
        con.close()
    return int(after - before)


def stage_name(step: str, groups: dict[str, str]) -> str:
    """bench/common.stage_of, with the estimates (group `estimates`) apart from the rest of the analysis."""
    stage = common.stage_of(step, groups)
    if stage != "analysis":
        return stage
    owners = [a for a in groups if step == a or step.startswith(a + "_")]
    owner = max(owners, key=len) if owners else step
    return "estimates" if groups.get(owner) == "estimates" else "analysis"


def summarize(steps: list[dict[str, Any]], groups: dict[str, str], prompts: int) -> dict[str, Any]:
    per_stage: dict[str, dict[str, float]] = {}
    per_step: dict[str, dict[str, float]] = {}
    for row in steps:
        for table, key in ((per_stage, stage_name(row["step"], groups)), (per_step, row["step"])):
            entry = table.setdefault(key, {"cpu_s": 0.0, "wall_s": 0.0, "n": 0})
            entry["cpu_s"] += row["cpu_s"]
            entry["wall_s"] += row["wall_s"]
            entry["n"] += 1
    k = max(prompts, 1) / 1000

    def rounded(table: dict[str, dict[str, float]], top: int | None = None) -> dict[str, Any]:
        ordered = sorted(table.items(), key=lambda kv: -kv[1]["cpu_s"])[:top]
        return {name: {"cpu_s": round(v["cpu_s"], 1), "wall_s": round(v["wall_s"], 1), "n": int(v["n"]),
                       "cpu_s_per_1000_prompts": round(v["cpu_s"] / k, 3)} for name, v in ordered}

    # the step during which the process's own peak RSS (ru_maxrss) grew most, and the one that set the peak
    jumps, before = [], 0.0
    for row in steps:
        jumps.append((row["maxrss_mib"] - before, row))
        before = max(before, row["maxrss_mib"])
    jumps.sort(key=lambda j: -j[0])
    peak_growth = [{"step": r["step"], "partition": r["partition"], "maxrss_after_mib": round(r["maxrss_mib"], 1),
                    "grew_mib": round(g, 1)} for g, r in jumps[:5]]
    return {"stages": rounded(per_stage), "steps_by_cpu": rounded(per_step, 15), "peak_rss_growth_by_step": peak_growth}


def run_factor(factor: int, *, texts: str, keep: bool, base: Path | None = None) -> dict[str, Any]:
    """One factor: a cold run (texts `new` or `same`), or with `seeded` a run over a copy of the state `base`
    (a finished cold 1x run: reference, task index and the mirror's labels in place) whose label cache holds
    the perturbed copies' labels (`--force --skip-reference`)."""
    root = common.state_root()
    code = root / "code"
    if not code.exists():
        common.code_snapshot(code)
    state = common.State(root / f"scale_{texts}_{factor}x", code)
    if state.root.exists():
        shutil.rmtree(state.root)
    if texts == "seeded":
        if base is None:
            raise SystemExit("--texts seeded needs --base (the state folder of a finished 1x run)")
        state = common.State(base, code).copy_to(state.root)
        shutil.rmtree(state.root / "profile", ignore_errors=True)
    else:
        state.create()
    t0 = time.perf_counter()
    hash_map: list[tuple[str, str]] = []
    lines = scaled_landing(common.mirror_path(), state.landing, factor, new_texts=texts != "same",
                           hash_map=hash_map if texts == "seeded" else None)
    if texts == "seeded":
        lines["label_cache_rows_seeded"] = seed_label_cache(state.warehouse, hash_map)
    landing_s = time.perf_counter() - t0
    common.log(f"[scale {factor}x] landing zone: {lines} in {landing_s:.1f}s")
    out_dir = state.root / "profile"
    machine = common.machine()
    since = time.time()
    run_all_args = ["--force", "--skip-reference"] if texts == "seeded" else []
    measured = common.run_measured(
        [common.PYTHON, str(code / "bench" / "step_profile.py"), "--no-cprofile", "--child", str(out_dir),
         *run_all_args], state.env(), cwd=code)
    if (out_dir / "steps.json").exists():
        child = json.loads((out_dir / "steps.json").read_text())
    else:  # killed: the steps it finished
        done = (out_dir / "steps.jsonl").read_text().splitlines() if (out_dir / "steps.jsonl").exists() else []
        child = {"steps": [json.loads(line) for line in done]}
    import os

    os.environ.update({k: v for k, v in state.env().items() if k.startswith("BENCHMAP_")})
    groups = common.asset_groups()
    counts = common.warehouse_counts(state.warehouse)
    prompts = counts.get("benchmark_prompts", 0)
    labeled = common.materialization_metadata(state.home, "prompt_task_labels", "labeler_calls", since)
    failed = sorted({f"{r['step']}[{r['partition']}]" if r["partition"] else r["step"]
                     for r in common.step_timings(state.home, since) if r["status"] != "success"})
    summary = summarize(child["steps"], groups, prompts)
    in_steps = sum(v["cpu_s"] for v in summary["stages"].values())
    out = {
        "factor": factor,
        "texts": texts,
        "run_all_args": run_all_args,
        "code_version": common.code_version(code),
        "measured_at": common.now_iso(),
        "machine": machine,
        "landing": {**lines, "build_s": round(landing_s, 1)},
        "prompts": prompts,
        "warehouse_rows": counts,
        "prompts_labeled": int(sum(int(v) for v in labeled)),
        **measured.summary(),
        "success": measured.returncode == 0 and not failed,
        "failed_steps": failed,
        "meets_rss_target": bool(measured.peak_rss_bytes / common.MIB < TARGET_RSS_MIB),
        "cpu_s_per_1000_prompts": round(measured.cpu_s / max(prompts, 1) * 1000, 3),
        **summary,
        # time outside the steps (imports, Dagster's per-run set-up, run_all's bookkeeping); None when killed
        "outside_steps_cpu_s": round(child["cpu_s"] - in_steps, 1) if "cpu_s" in child else None,
        "warehouse_mib": common.mib(state.warehouse.stat().st_size) if state.warehouse.exists() else None,
        "rss_timeline_mib": measured.timeline_mib(40),
    }
    if measured.returncode != 0:
        out["stderr_tail"] = measured.stderr[-3000:]
    if not keep and factor > 1:
        shutil.rmtree(state.root, ignore_errors=True)  # 50x leaves GBs of landing files and warehouse
    return out


def growth(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for a, b in zip(runs, runs[1:], strict=False):
        added_k = (b["prompts"] - a["prompts"]) / 1000
        out.append({
            "from": f"{a['factor']}x {a['texts']}", "to": f"{b['factor']}x {b['texts']}",
            "to_complete": b["success"],  # a killed run's stages are those it finished (lower bounds)
            "prompt_ratio": round(b["prompts"] / max(a["prompts"], 1), 2),
            "cpu_ratio": round(b["cpu_s"] / max(a["cpu_s"], 1e-9), 2),
            # flat across the factors = linear past the fixed cost
            "marginal_cpu_s_per_1000_added_prompts": {
                k: round((v["cpu_s"] - a["stages"].get(k, {}).get("cpu_s", 0.0)) / added_k, 3)
                for k, v in b["stages"].items()} if added_k else {},
            "marginal_total_cpu_s_per_1000_added_prompts": round((b["cpu_s"] - a["cpu_s"]) / added_k, 3)
            if added_k else None,
            "peak_rss_ratio": round(b["peak_rss_mib"] / a["peak_rss_mib"], 2),
        })
    return out


def series(runs: list[dict[str, Any]], texts: str) -> list[dict[str, Any]]:
    """The runs of one mode by factor; a cold mode without its own 1x run takes the other's (at 1x both landings
    are the mirror's files)."""
    own = [r for r in runs if r["texts"] == texts]
    if own and not any(r["factor"] == 1 for r in own):  # seeded: the cold 1x (its label stage includes the labeler)
        own = [r for r in runs if r["factor"] == 1 and r["texts"] != "seeded"][:1] + own
    return sorted(own, key=lambda r: r["factor"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--factors", default="1,10,50")
    ap.add_argument("--texts", choices=("new", "same", "seeded"), default="new")
    ap.add_argument("--base", type=Path, help="with --texts seeded: the state folder of a finished 1x run")
    ap.add_argument("--keep", action="store_true", help="keep the state folders of factors > 1")
    ap.add_argument("--merge", nargs="+", type=Path, help="combine the JSON of earlier runs (no run)")
    ap.add_argument("--out", type=Path, help="also write the JSON here")
    args = ap.parse_args(argv)
    if args.merge:
        runs = [r for path in args.merge for r in json.loads(path.read_text())["runs"]]
    else:
        runs = []
        for factor in [int(f) for f in args.factors.split(",") if f.strip()]:
            runs.append(run_factor(factor, texts=args.texts, keep=args.keep, base=args.base))
            if args.out:  # written after each factor: a long series leaves what it measured
                args.out.write_text(json.dumps({"bench": "scale", "runs": runs}, indent=1) + "\n")
    runs.sort(key=lambda r: (r["texts"], r["factor"]))
    result = {"bench": "scale", "measured_at": common.now_iso(), "labeler": "offline", "runs": runs,
              "growth": {texts: growth(series(runs, texts)) for texts in ("new", "same", "seeded")}}
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    common.emit(result)
    return 0 if all(r["success"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
