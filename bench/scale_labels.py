"""scale_labels: the stages before the analysis (ingest, label) at 1x, 10x and 50x the mirrored prompts, with
texts that are new to the labeler (issue 29, item 5).

    .venv/bin/python bench/scale_labels.py [--factors 1,10,50] [--out bench/scale-labels.json]

bench/scale.py replicates prompts with the same text, so its label stage reads the label cache. Here copy 0 of
every mirrored prompt keeps its text and copy k (k >= 1) gets a perturbed text (`perturbed`: two words dropped
and two adjacent words swapped at seeded positions, plus the copy number as a word), so every copy is a distinct
prompt the labeler has to score. The generator writes a temporary landing zone (`prompts.jsonl` per benchmark,
prompt ids `<id>~p<k>`); results files are not replicated (ingest of results is not measured).

Each factor runs in its own child process (peak RSS per factor), stage by stage, the way a partition run does
them but without Dagster and without the warehouse's label cache:
- `index`: unpickling the task index (built once in the parent: a fixed cost, reported as `index_build`);
- `ingest`: `resources.landing.read_prompts` (models.benchmarks.parse_prompts) of every benchmark's file;
- `label`: per benchmark, the calibrated offline labeler's `prepare` (the benchmark's context) and `label`
  in batches of 256 (the pipeline's batch size), then `models.labeling.cache.labels_frame`;
- `write`: the label frames inserted into a fresh DuckDB file (one table, one insert per benchmark).
CPU-s (user+sys of the child), wall seconds, the child's peak RSS after each stage, and CPU-s per 1,000
prompts per stage; `growth` gives the marginal CPU-s per 1,000 added prompts between factors (constant =
linear). Dagster's per-run overhead, the label cache's reads and writes and the label store are not in it.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402


def perturbed(text: str, seed: str, copy: int) -> str:
    """A variant of `text`: two words dropped and two adjacent words swapped at positions drawn from `seed`,
    and the copy number appended, so the text (and its hash) is new but reads like the original."""
    words = text.split(" ")
    rng = random.Random(f"{seed}~{copy}")
    for _ in range(2):
        if len(words) > 4:
            del words[rng.randrange(len(words))]
    if len(words) > 2:
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words) + f" ({copy})"


def perturbed_landing(mirror: Path, landing: Path, factor: int) -> dict[str, int]:
    """Every mirrored benchmark's prompts.jsonl, `factor` times: copy 0 as it is, copies 1.. perturbed."""
    counts = {"benchmarks": 0, "prompt_lines": 0}
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
                        record["prompt_id"] = f"{record['prompt_id']}~p{k}"
                        if isinstance(record.get("prompt"), str):
                            record["prompt"] = perturbed(record["prompt"], str(record["prompt_id"]), k)
                    out.write(json.dumps(record, ensure_ascii=False).encode() + b"\n")
                    counts["prompt_lines"] += 1
        counts["benchmarks"] += 1
    return counts


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)  # KiB on Linux


def child(landing: Path, index_path: Path, out_db: Path) -> dict[str, Any]:
    """The stages over one landing zone, in this process (see the module docstring)."""
    import duckdb

    from models.benchmarks import PROMPTS_FILE
    from models.labeling.base import PromptRecord
    from models.labeling.cache import labels_frame
    from models.labeling.offline import OfflineLabeler
    from resources.landing import read_prompts
    from resources.readers import load_selector_fit

    stages: dict[str, dict[str, float]] = {}

    def stage(name: str, c0: float, w0: float) -> None:
        stages[name] = {"cpu_s": round(_cpu() - c0, 2), "wall_s": round(time.perf_counter() - w0, 2),
                        "peak_rss_mib_after": _peak_mib()}

    c0, w0 = _cpu(), time.perf_counter()
    with open(index_path, "rb") as handle:
        index = pickle.load(handle)  # noqa: S301 - written by the parent
    labeler = OfflineLabeler.calibrated(index, load_selector_fit())
    stage("index", c0, w0)

    c0, w0 = _cpu(), time.perf_counter()
    benchmarks: dict[str, list[PromptRecord]] = {}
    for folder in sorted(p for p in landing.iterdir() if (p / PROMPTS_FILE).is_file()):
        frame, _ = read_prompts(folder / PROMPTS_FILE, folder.name)
        benchmarks[folder.name] = [PromptRecord(*row) for row in
                                   frame.select("benchmark", "prompt_id", "prompt_hash", "prompt").iter_rows()]
    n_prompts = sum(len(v) for v in benchmarks.values())
    stage("ingest", c0, w0)

    c0, w0 = _cpu(), time.perf_counter()
    frames = {}
    n_labels = 0
    for name, records in benchmarks.items():
        labeler.prepare(records)
        distinct = list({r.prompt_hash: r for r in records}.values())  # the cache labels a text once
        by_hash = {}
        for start in range(0, len(distinct), 256):
            for outcome in labeler.label(distinct[start: start + 256]):
                if outcome.ok:
                    by_hash[outcome.prompt_hash] = outcome.labels
        frames[name] = labels_frame(records, by_hash, labeler.name, labeler.labeler_version)
        n_labels += frames[name].height
        labeler.contexts.clear()
    stage("label", c0, w0)

    c0, w0 = _cpu(), time.perf_counter()
    con = duckdb.connect(str(out_db))
    try:
        for i, frame in enumerate(frames.values()):
            con.register("frame", frame.to_arrow())
            con.execute("create table labels as select * from frame" if i == 0 else
                        "insert into labels select * from frame")
            con.unregister("frame")
    finally:
        con.close()
    stage("write", c0, w0)
    return {"prompts": n_prompts, "label_rows": n_labels, "stages": stages, "peak_rss_mib": _peak_mib()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--factors", default="1,10,50")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(*map(Path, args.child))))
        return 0

    from models.labeling import offline
    from resources.readers import load_onet_reference_frames

    mirror = common.mirror_path()
    work = Path(tempfile.mkdtemp(prefix="scale-labels-", dir=common.state_root() if common.state_root().exists()
                                 else None))
    c0, w0 = time.process_time(), time.perf_counter()
    index = offline.TaskIndex.build(**load_onet_reference_frames(mirror / "onet"))
    build = {"cpu_s": round(time.process_time() - c0, 2), "wall_s": round(time.perf_counter() - w0, 2)}
    index_path = work / "index.pkl"
    with open(index_path, "wb") as handle:
        pickle.dump(index, handle, protocol=pickle.HIGHEST_PROTOCOL)
    del index
    result: dict[str, Any] = {"bench": "scale_labels", "measured_at": common.now_iso(), "machine": common.machine(),
                              "code_version": common.code_version(), "index_build": build, "factors": []}
    for factor in [int(f) for f in args.factors.split(",")]:
        landing = work / f"landing_{factor}x"
        t0 = time.perf_counter()
        lines = perturbed_landing(mirror, landing, factor)
        common.log(f"[scale_labels {factor}x] {lines['prompt_lines']} prompt lines in {time.perf_counter() - t0:.1f}s")
        run = subprocess.run([sys.executable, __file__, "--child", str(landing), str(index_path),
                              str(work / f"labels_{factor}x.duckdb")], capture_output=True, text=True,
                             cwd=ROOT, env=dict(os.environ), check=False)
        if run.returncode:
            raise SystemExit(f"child for {factor}x failed:\n{run.stderr[-3000:]}")
        measured = json.loads(run.stdout.strip().splitlines()[-1])
        per_1k = {k: round(1000 * v["cpu_s"] / max(measured["prompts"], 1), 3) for k, v in measured["stages"].items()}
        result["factors"].append({"factor": factor, **lines, **measured, "cpu_s_per_1000_prompts": per_1k})
        common.log(f"[scale_labels {factor}x] {json.dumps(result['factors'][-1]['stages'])}")
        for path in landing.rglob("*"):
            if path.is_file():
                path.unlink()
    rows = result["factors"]
    result["growth"] = [
        {"from": a["factor"], "to": b["factor"],
         "marginal_cpu_s_per_1000_added_prompts": {
             k: round(1000 * (b["stages"][k]["cpu_s"] - a["stages"][k]["cpu_s"]) / max(b["prompts"] - a["prompts"], 1),
                      3) for k in b["stages"]},
         "peak_rss_ratio": round(b["peak_rss_mib"] / a["peak_rss_mib"], 2)}
        for a, b in zip(rows, rows[1:], strict=False)]
    common.emit(result)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
