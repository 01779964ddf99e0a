"""The neighbour step of the labels (issue 25): a benchmark's selector labels restacked with the votes of its
judged texts (models/labeling/stacking.py), and where those judged texts come from. The I/O around the pure
stack: the judged texts (the user's own judge sample in the warehouse, else the reference's), the stack fit and
the judged texts' out-of-sample signals (resources/readers.py), the step's decision cache
(resources/neighbour_cache.py). Called by the labels step (assets/labels.py) and by the split checks'
relabeling (assets/estimates_split.py)."""

from __future__ import annotations

import time
from typing import Any

import polars as pl

from models.labeling.base import PromptRecord
from resources.dagster_resources import Warehouse
from resources.readers import load_reference, load_stack_fit, reference_folder
from resources.settings import settings


def judged_sample(warehouse: Warehouse, benchmark: str, prompts: list[PromptRecord]) -> pl.DataFrame:
    """The judged texts of one benchmark (models.labeling.neighbours.JUDGED_SCHEMA): the user's own judge
    sample when judge_sample_labels holds one for it (as the estimates do), else the reference's texts of it
    whose text is still the landed one."""
    from models.labeling.neighbours import judged_from_task_rows, judged_texts

    texts = pl.DataFrame([{"benchmark": p.benchmark, "prompt_hash": p.prompt_hash, "prompt": p.prompt}
                          for p in prompts], schema={"benchmark": pl.Utf8, "prompt_hash": pl.Utf8, "prompt": pl.Utf8})
    if warehouse.table_exists("judge_sample_labels"):
        own = warehouse.judge_sample_labels_of(benchmark)
        if own.height:
            return judged_from_task_rows(own, texts)
    reference = load_reference(reference_folder()).filter(pl.col("benchmark") == benchmark)
    return judged_texts(reference, texts)


def neighbour_step(warehouse: Warehouse, benchmark: str, prompts: list[PromptRecord], labels_by_hash: dict,
                   impl: Any, index: Any) -> tuple[dict, str, dict[str, Any]]:
    """(label sets, labeler_version, metadata) after the neighbour step; unchanged when there is no stack fit
    for the labeler's selector (another labeler, or a stale fit: said in the metadata)."""
    from models.labeling.neighbours import BenchmarkSample
    from models.labeling.stacking import judged_fingerprint, stacked_label_sets, task_codes_of
    from models.labeling.text_signals import compute_text_signals
    from resources import neighbour_cache
    from resources.readers import read_judged_signals

    if not settings().neighbour_step:
        return labels_by_hash, impl.labeler_version, {"neighbour_step": "off (BENCHMAP_NEIGHBOUR_STEP=0)"}
    fit = load_stack_fit()
    selector = getattr(getattr(impl, "selector", None), "fit", None)
    if fit is None or selector is None or fit.selector_version != selector.version:
        reason = ("no neighbour_fit.json" if fit is None else "not the calibrated offline labeler"
                  if selector is None else f"neighbour_fit.json stacks selector {fit.selector_version}, "
                  f"not {selector.version}: refit with `python -m pipelines.fit_labeler --stack-only`")
        return labels_by_hash, impl.labeler_version, {"neighbour_step": f"not applied ({reason})"}
    started = time.perf_counter()
    judged = judged_sample(warehouse, benchmark, prompts)
    sample = BenchmarkSample.of(judged) if judged.height else None
    # decisions cached per benchmark under the fingerprint of the fit, labeler and judged texts: a warm run
    # recomputes none
    fingerprint = judged_fingerprint(fit.version, impl.labeler_version, judged)
    path = warehouse.neighbour_cache_path(benchmark)
    cached = neighbour_cache.read_decisions(path, fingerprint) if sample is not None else {}
    judged_signals = read_judged_signals(selector.version)

    def signals_of(texts: dict[str, str]) -> dict:
        # a reference text's signals come from the selector fold that never saw its benchmark; the rest from
        # the published selector fit: what the labeler saw when it labeled the text in this run, else computed
        # (a text whose labels came from the label cache)
        seen = {h: labels_by_hash[h].text_signals for h in texts
                if h not in judged_signals and getattr(labels_by_hash.get(h), "text_signals", None) is not None}
        fresh = {h: t for h, t in texts.items() if h not in judged_signals and h not in seen}
        computed = compute_text_signals(index, selector, impl.config, fresh)
        return {h: judged_signals[h] if h in judged_signals else seen[h] if h in seen else computed[h]
                for h in texts}

    restacked, n, decisions = stacked_label_sets(fit, sample, prompts, labels_by_hash, task_codes_of(index), cached,
                                                 signals_of)
    fresh = len(decisions.keys() - cached.keys())
    if fresh:
        neighbour_cache.write_decisions(path, fingerprint, decisions)
    return restacked, f"{impl.labeler_version}+{fit.version}", {
        "neighbour_step": f"{n} texts restacked with {judged.height} judged texts ({fresh} computed, "
        f"{len(decisions) - fresh} from the step's cache)" if n
        else f"{judged.height} judged texts, fewer than the {fit.min_judged} the step needs: the selector's labels "
        "(fallback)" if 0 < judged.height < fit.min_judged else "no judged texts: the selector's labels (fallback)",
        "neighbour_judged_texts": judged.height, "neighbour_texts_computed": fresh,
        "neighbour_seconds": round(time.perf_counter() - started, 3)}
