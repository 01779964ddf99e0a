"""Label a mirrored benchmark through a local llama.cpp server: `python -m pipelines.local_llm`.

    pip install ".[local-llm]"   # llama-cpp-python[server] (builds from source) + Gemma 3 270M GGUF
    python -m pipelines.local_llm --benchmark gdpval --limit 20

The command starts `python -m llama_cpp.server` on 127.0.0.1 (a free port; resources.local_server),
labels the benchmark's prompts with the two-step `openai` labeler through it, using the same label cache,
retries, rejection of invalid task IDs and failure records as the pipeline (resources.label_cache), prints one
JSON summary, and stops the server. The mirror, warehouse and model file default to the settings
(BENCHMAP_MIRROR or ../shared/data, BENCHMAP_WAREHOUSE, BENCHMAP_GGUF).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from resources.local_server import (
    DEFAULT_N_CTX,
    LocalLLMServer,
    LocalServerError,
    build_index,
    load_prompts,
    onet_version,
)
from resources.settings import settings


def label_benchmark(
    benchmark: str,
    *,
    limit: int | None = 20,
    warehouse: str | Path | None = None,
    mirror: str | Path | None = None,
    occupation_list: str = "all",
    occupation_k: int = 40,
    max_concurrency: int = 1,
    timeout_s: float = 180.0,
    max_retries: int = 2,
    response_format: str = "auto",
    server: LocalLLMServer | None = None,
    index: Any = None,
) -> dict[str, Any]:
    """Label `limit` prompts of a mirrored benchmark through a local server; returns the JSON summary."""
    from models.labeling.cache import label_with_cache
    from models.labeling.llm_config import LLMConfig
    from resources.label_cache import LabelCache
    from resources.llm_labeler import OpenAILabeler

    mirror = Path(mirror or settings().mirror_or_shared)
    warehouse = Path(warehouse or settings().warehouse)
    prompts = load_prompts(benchmark, mirror, limit)
    t_index = time.perf_counter()
    index = index if index is not None else build_index(mirror / "onet")
    index_seconds = time.perf_counter() - t_index
    own = server is None
    server = server or LocalLLMServer(settings().gguf)
    try:
        if own:
            server.start()
        cfg = LLMConfig(
            model=server.model_alias,
            base_url=server.base_url,
            occupation_list=occupation_list,
            occupation_k=occupation_k,
            max_concurrency=max_concurrency,
            timeout_s=timeout_s,
            max_retries=max_retries,
            response_format=response_format,
            backoff_base_s=0.5,
        )
        labeler = OpenAILabeler(index, cfg)
        cache = LabelCache(warehouse)
        labels, stats = label_with_cache(
            prompts,
            labeler,
            cache,
            onet_version(mirror / "onet"),
            progress_every=5,
            log_fn=lambda m: print(m, file=sys.stderr, flush=True),
        )
        labeler.close()
    finally:
        if own:
            server.stop()
    return _summary(benchmark, prompts, labels, stats, labeler, server, warehouse, index_seconds)


def _summary(benchmark: str, prompts: list[Any], labels: Any, stats: Any, labeler: Any, server: LocalLLMServer,
             warehouse: Path, index_seconds: float) -> dict[str, Any]:
    """The command's JSON summary: counts, the two steps' requests and tokens, timings, the first failures."""
    calls = labeler.stats
    return {
        "benchmark": benchmark,
        "prompts": len(prompts),
        "labeled": len(labels),
        "failed": stats.n_failed,
        "cached_before": stats.n_cached,
        "labeler_calls": stats.labeler_calls,
        "http_requests": calls.requests,
        "valid_first_try": calls.valid_first_try,
        "not_work": calls.not_work,
        "step1_requests": calls.step1_requests,
        "step2_requests": calls.step2_requests,
        "step1_input_tokens": stats.step1_input_tokens,
        "step1_output_tokens": stats.step1_output_tokens,
        "step2_input_tokens": stats.step2_input_tokens,
        "step2_output_tokens": stats.step2_output_tokens,
        "cached_input_tokens": stats.cached_input_tokens,
        "retries": calls.retries,
        "response_format": labeler.response_format,
        "seconds": round(stats.seconds, 2),
        "seconds_per_prompt": round(stats.seconds / stats.labeler_calls, 2) if stats.labeler_calls else None,
        "input_tokens": stats.input_tokens,
        "output_tokens": stats.output_tokens,
        "index_seconds": round(index_seconds, 2),
        "server_startup_seconds": server.startup_seconds,
        "warehouse": str(warehouse),
        "model": server.model_alias,
        "failures": [{"prompt_id": f["prompt_id"], "error": f["error"]} for f in stats.failures][:10],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--benchmark", required=True, help="a folder under $BENCHMAP_MIRROR/benchmarks")
    ap.add_argument("--limit", type=int, default=20, help="label the first N prompts (0 = all)")
    ap.add_argument("--warehouse", default=None, help="DuckDB file holding label_cache/label_failures")
    ap.add_argument("--mirror", default=None)
    ap.add_argument("--model", default=None,
                    help="a GGUF file (default: BENCHMAP_GGUF, else the gemma3-270m package's)")
    ap.add_argument("--occupation-list", default="all", choices=["all", "ranked"],
                    help="step 1 candidates: all 923 occupations by major group, or the offline top-k")
    ap.add_argument("--occupation-k", type=int, default=40)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=180.0)
    ap.add_argument("--n-ctx", type=int, default=DEFAULT_N_CTX)
    ap.add_argument("--response-format", default="auto", choices=["auto", "json_schema", "json_object"])
    args = ap.parse_args(argv)
    server = LocalLLMServer(args.model or settings().gguf, n_ctx=args.n_ctx)
    with server:
        summary = label_benchmark(
            args.benchmark,
            limit=args.limit or None,
            warehouse=args.warehouse,
            mirror=args.mirror,
            occupation_list=args.occupation_list,
            occupation_k=args.occupation_k,
            max_concurrency=args.concurrency,
            timeout_s=args.timeout,
            response_format=args.response_format,
            server=server,
        )
    summary["server_stopped"] = not server.is_running()
    print(json.dumps(summary, indent=2))
    return 0 if summary["failed"] == 0 else 1


if __name__ == "__main__":  # a known error (bad input, no model, a server that did not start) is one line
    from pipelines.cli import run_cli

    raise SystemExit(run_cli(main, prog="python -m pipelines.local_llm",
                             extra_errors=(LocalServerError,)))
