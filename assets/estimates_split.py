"""The checks against the judge of the estimates step (issue 25, 29): the split check (split_check), and all three
judged checks (the split check, the p_covered check, the per-text calibration) run on the benchmarks with judged
texts and cached by what they depend on (judged_checks; models/estimates/judged.py). With the neighbour step on,
a split's judged texts are relabeled from its estimation part alone (models/labeling/stacking_split.py says
why), reading the judged texts as the labeling step reads them (assets.labels.judged_sample), the stack fit and
the selector's cross-validated labels."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from models import estimates as es
from resources.dagster_resources import Warehouse
from resources.readers import load_stack_fit, read_judged_signals, read_selector_oof


def split_relabeler(warehouse: Warehouse, labeler_version: str | None, texts: pl.DataFrame, problem: es.Problem,
                    log: Any = None) -> tuple[Any, str]:
    """(relabel for es.split_sample_problem or None, what the split check does: said in its table). None when
    the published labels are not the neighbour stack's (the labels of a held-out text then owe nothing to the
    judge labels of other texts)."""
    relabel, held_out_labels, _ = keyed_split_relabeler(warehouse, labeler_version, texts, problem, log)
    return relabel, held_out_labels


def keyed_split_relabeler(warehouse: Warehouse, labeler_version: str | None, texts: pl.DataFrame,
                          problem: es.Problem, log: Any = None) -> tuple[Any, str, str]:
    """split_relabeler and a fingerprint of everything the relabeling reads besides `problem` (the stack fit's
    and the selector's versions, the selector's cross-validated labels, the judged texts' records): part of the
    judged checks' cache key (models/estimates/judged.py)."""
    from assets.labels import judged_sample, prompt_records
    from models.labeling.stacking import stacked_on
    from models.labeling.stacking_split import EstimationPartRelabeler

    if labeler_version is None or stacked_on(labeler_version) is None:
        reason = "labels kept (they do not learn from judged texts)"
        return None, reason, reason
    fit = load_stack_fit()
    selector = read_selector_oof()
    if fit is None or not labeler_version.endswith(f"+{fit.version}") or selector is None \
            or selector.get("fit_version") != fit.selector_version:
        reason = (f"labels kept: NOT an honest check (the labels' stack {labeler_version} has no matching "
                  "neighbour_fit.json and selector_oof.json: refit with `python -m pipelines.fit_labeler`)")
        if log is not None:
            log.warning(reason)
        return None, reason, reason
    sampled = texts.filter(pl.col("sampled")).select("benchmark", "prompt_hash")
    prompts = warehouse.prompts_of_texts(list(sampled.iter_rows()))
    judged = [judged_sample(warehouse, str(b), prompt_records(group))
              for (b,), group in prompts.group_by(["benchmark"], maintain_order=True)]
    keys = problem.task_keys
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{labeler_version}\x1f{fit.version}\x1f{fit.selector_version}".encode())
    digest.update(json.dumps(selector, sort_keys=True, default=str).encode())
    # every column of every judged record (the relabeling reads the prompt too), in a fixed order
    digest.update("\n".join(sorted(json.dumps(r, sort_keys=True, default=str)
                                    for frame in judged for r in frame.iter_rows(named=True))).encode())
    signals = read_judged_signals(fit.selector_version)
    digest.update(json.dumps(signals, sort_keys=True, default=str).encode())  # the judged texts' own signals
    relabel = EstimationPartRelabeler(
        fit, pl.concat(judged) if judged else pl.DataFrame(), list(zip(texts["benchmark"], texts["prompt_hash"],
                                                                        strict=True)),
        {r["prompt_hash"]: [(int(t), c, float(p)) for t, c, p in r["labels"]] for r in selector["prompts"]},
        {r["prompt_hash"]: bool(r["is_work"]) for r in selector["prompts"]},
        {(str(c), int(t)): k for k, (c, t) in enumerate(keys.select("onet_soc_code", "task_id").iter_rows())},
        signals)
    return relabel, "relabeled from the estimation part's judged texts alone", digest.hexdigest()


SPLIT_FRACTIONS: dict[str, float] = {"split_half": 0.5, "split_fifth": 0.2}


def split_check(problem: es.Problem, scopes: list[es.Scope], repeats: int, n_draws: int, seed: int,
                relabel: es.Relabel | None = None, held_out_labels: str = "as published") -> pl.DataFrame:
    """Split each benchmark's judge sample at random: estimate from one part (half, or a fifth: the headline
    itself imputes ~93% of the texts, so the fifth tests how the estimators extrapolate), against the truth of
    the judge-labeled sub-population (the judge's labels of every sampled text). Per quantity: interval
    coverage over `repeats` splits, mean absolute and signed error. `relabel`: the neighbour step's labels
    recomputed per split from the estimation part alone (assets/estimates_split.py); `held_out_labels` says
    which labels the held-out texts had."""
    rng = np.random.default_rng(seed)
    pooled = [s for s in scopes if s.scope == es.ALL_SCOPE and s.benchmark_index == es.ALL_INDEX]
    frames = []
    for check, fraction in SPLIT_FRACTIONS.items():
        checks = []
        for r in range(repeats):
            split, truth = es.split_sample_problem(problem, rng, fraction=fraction, relabel=relabel)
            checks.append(es.check_against_truth(split, truth, pooled, n_draws=n_draws, seed=seed + r))
        frames.append(es.summarize_checks(pl.concat(checks)).with_columns(pl.lit(check).alias("check")))
    return pl.concat(frames).with_columns(pl.lit(held_out_labels).alias("held_out_labels"))


@dataclass
class JudgedChecks:
    """The checks against the judge (models/estimates/judged.py): the per-text calibration and its map, the
    p_covered check and its map, the split check; `cached`: read from the cache, not computed."""

    calibration: pl.DataFrame
    recalibration: es.Recalibration
    coverage: pl.DataFrame
    coverage_map: es.CoverageMap
    split: pl.DataFrame
    cached: bool = False
    seconds: float = 0.0


def judged_checks(warehouse: Warehouse, inputs: dict, texts: pl.DataFrame, problem: es.Problem,
                  config: Any, code_versions: list[str], log: object = None) -> JudgedChecks:
    """The judged checks on the benchmarks with judged texts (a benchmark without any changes none of them), read
    from the cache when the key (that problem, the relabeling's inputs, the settings, the code version) matches;
    no cache without a code version. The neighbour step's labels of a split's judged texts come from its
    estimation part alone (both splits)."""
    started = time.perf_counter()
    judged_problem, judged_texts = es.judged_problem(problem, texts)
    relabel, held_out_labels, relabel_key = keyed_split_relabeler(
        warehouse, inputs["labeler_version"], judged_texts, judged_problem, log)
    key = es.checks_key(judged_problem, [relabel_key, held_out_labels, code_versions, config.model_dump()])
    if code_versions:  # without a code version a code change could not tell an old result from a new one
        cached = warehouse.cached_result("judged_checks", key)
        if isinstance(cached, JudgedChecks):
            cached.cached, cached.seconds = True, time.perf_counter() - started
            return cached
    calibration, recalibration = es.text_probability_calibration(
        judged_problem, n_draws=config.calibration_draws, seed=config.seed)
    coverage = es.unit_coverage_check(judged_problem, replications=config.coverage_repeats,
                                      n_draws=min(config.n_draws, config.coverage_draws), seed=config.seed, simulated=4,
                                      relabel=relabel)
    pooled = es.scopes_for(judged_problem, per_benchmark=False)
    split = split_check(judged_problem, pooled, config.split_repeats, min(config.n_draws, 50), config.seed, relabel,
                        held_out_labels)
    result = JudgedChecks(calibration, recalibration, coverage.table, coverage.coverage_map, split)
    if code_versions:
        warehouse.keep_result("judged_checks", key, result)
    result.seconds = time.perf_counter() - started
    return result


def headline_draws(warehouse: Warehouse, problem: es.Problem, seed: int, n_draws: int,
                   estimators: tuple[str, ...] = ("labeler", "design", "model_assisted"), purpose: str = "headline",
                   log: Any = None) -> es.DrawRecord:
    """The headline's draws (run_estimators replays them), each benchmark from its own random streams, its rows
    kept beside the warehouse by what they depend on (models/estimates/bench_draws.py): a benchmark without
    judged texts that lands draws its own rows only."""
    started = time.process_time()
    record, report = es.draw_record(problem, seed, n_draws, estimators, purpose=purpose,
                                    code_version=warehouse.draws_code_version(), read=warehouse.cached_result,
                                    write=warehouse.keep_result)
    if log is not None:
        log.info(f"{purpose} draws {time.process_time() - started:.1f} CPU-s: {len(report.drawn)} benchmark(s) drawn "
                 f"({', '.join(report.drawn[:5])}{', ...' if len(report.drawn) > 5 else ''}), {len(report.kept)} "
                 f"read back; pooled parameters {'read back' if report.pooled_cached else 'drawn'}")
    return record
