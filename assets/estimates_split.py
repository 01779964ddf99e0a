"""The checks against the judge of the estimates step (issue 25, 29): the split check (split_check), and all three
judged checks (the split check, the p_covered check, the per-text calibration) run on the benchmarks with judged
texts and cached by what they depend on (judged_checks; models/estimates/judged.py). With the neighbour step on,
a split's judged texts are relabeled from its estimation part alone (models/labeling/stacking_split.py says
why), reading the judged texts as the labeling step reads them (resources.neighbour_step.judged_sample), the
stack fit and the selector's cross-validated labels."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from models import estimates as es
from models.estimates import coverage_check as cc
from models.estimates.judged import (
    SPLIT_FRACTIONS,
    split_check,  # noqa: F401 - the serial check, as tests and benches import it
    split_check_table,
    split_rows,
)
from models.figures import PREVIEW_DPI, computed_and_drawn, draw_outputs
from models.figures.estimates import occupation_probability_figure, unit_coverage_figure
from resources.dagster_resources import Warehouse
from resources.readers import load_stack_fit, read_judged_signals, read_labeler_oof, read_selector_oof
from resources.worker_pool import WorkerPool, shared_pool


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
    from assets.labels import prompt_records
    from models.labeling.base import stacked_on
    from models.labeling.stacking import StackFit
    from models.labeling.stacking_split import EstimationPartRelabeler
    from resources.neighbour_step import judged_sample

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
    with warehouse.held():  # one open of the file for every benchmark's reads, not two (~30 CPU-ms each)
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
    # each benchmark labeled with the stack of the fold that left it out (the full fit saw its held-out texts'
    # judge labels); an out-of-fold file without them (written before 2026-12-06) leaves the check in sample
    fold_fits = {str(b): StackFit.from_json(json.dumps(f))
                 for b, f in ((read_labeler_oof(labeler_version) or {}).get("fold_fits") or {}).items()}
    digest.update(json.dumps(sorted((b, f.version) for b, f in fold_fits.items())).encode())
    if not fold_fits:
        reason = ("relabeled from the estimation part's judged texts, but with the stack fitted on every judged text "
                  "(NOT an honest check: neighbour_oof.json has no fold fits; refit with "
                  "`python -m pipelines.fit_labeler --stack-only`)")
        if log is not None:
            log.warning(reason)
    else:
        reason = "relabeled from the estimation part's judged texts alone, with the stack fitted without the benchmark"
    relabel = EstimationPartRelabeler(
        fit, pl.concat(judged) if judged else pl.DataFrame(), list(zip(texts["benchmark"], texts["prompt_hash"],
                                                                        strict=True)),
        {r["prompt_hash"]: [(int(t), c, float(p)) for t, c, p in r["labels"]] for r in selector["prompts"]},
        {r["prompt_hash"]: bool(r["is_work"]) for r in selector["prompts"]},
        {(str(c), int(t)): k for k, (c, t) in enumerate(keys.select("onet_soc_code", "task_id").iter_rows())},
        signals, fold_fits=fold_fits)
    return relabel, reason, digest.hexdigest()


@dataclass
class JudgedChecks:
    """The checks against the judge (models/estimates/judged.py): the per-text calibration and its map, the
    p_covered check and its map, the split check; `cached`: read from the cache, not computed."""

    calibration: pl.DataFrame
    recalibration: es.Recalibration
    coverage: pl.DataFrame
    coverage_map: es.CoverageMap
    split: pl.DataFrame
    # table name -> its figure (draw_outputs) or the error; the p_covered check's, while a worker draws it, its
    # Future (never kept in the cache: the checks are kept before it is added)
    figures: dict[str, Any] = field(default_factory=dict)
    cached: bool = False
    seconds: float = 0.0
    gathered: float = 0.0  # seconds the step spent gathering them (its share of the parts, then waiting)


@dataclass
class JudgedParts:
    """The three judged checks as independent parts, one worker task each (issue 29: the checks were three tasks
    of ~7-9 CPU-s, so the step's process, which runs the parts no worker has started when it needs them, found
    one long check to run while the worker was still on another): the per-text calibration with its figure (one
    part: a worker takes it second, before the step needs it), the split check's two fractions, the p_covered
    check's fifth splits, its two simulated worlds and its populations of the estimator's own model. Each part
    starts its random stream where the serial check's stream is at that point (the splits and populations before
    it are drawn, not estimated; the model populations have a stream of their own), so the assembled checks
    equal the serial ones value for value
    (tests/test_judged_parts.py). The split check's half splits are the p_covered check's half splits when the
    two draw them from the same seed (the asset's settings): that part computes both checks' rows from each
    split, relabeled once."""

    problem: es.Problem
    pooled: list[es.Scope]
    config: Any
    relabel: Any
    held_out_labels: str

    def _settings(self) -> tuple[dict[str, Any], dict[str, Any]]:
        config = self.config
        split = {"repeats": config.split_repeats, "n_draws": min(config.n_draws, 50), "seed": config.seed,
                 "relabel": self.relabel}
        coverage = {"replications": config.coverage_repeats, "n_draws": min(config.n_draws, config.coverage_draws),
                    "seed": config.seed}
        return split, coverage

    def _shared_check(self) -> str | None:
        """The split check whose splits the p_covered check shares (both streams' first fraction), or None."""
        _, coverage = self._settings()
        first, first_cov = next(iter(SPLIT_FRACTIONS.items())), next(iter(cc.SPLITS.items()))
        shared = (first == first_cov and self.config.coverage_repeats <= self.config.split_repeats
                  and bool(self.problem.text_sampled.any()))
        return first[0] if shared else None

    # the order the parts are queued in (CPU-s on the mirror): a worker takes them from the front, the step's
    # process, when it needs them, runs from the back the ones no worker has started; so the longest come first,
    # the next longest last (the step's first), and the short ones meet in the middle, where whichever process
    # is free first takes the next (the two finish about together)
    ORDER = ("split split_half",  # ~6.5 (+ the p_covered check's half pairs; the first imports scikit-learn)
             "per-text calibration",  # ~7.2 and its figure
             "p_covered simulated_mirror_like",  # ~2.8
             "p_covered model",  # ~1.4 (4 populations)
             "p_covered split_half",  # only when not shared
             "p_covered split_fifth",  # ~0.8
             "p_covered simulated",  # ~1.6
             "split split_fifth")  # ~2.2

    def tasks(self) -> list[tuple[str, Any, tuple, dict[str, Any]]]:
        """(name, function, args, kwargs) of every part, in ORDER."""
        split, coverage = self._settings()
        config, problem = self.config, self.problem
        shared = self._shared_check()
        tasks: list[tuple[str, Any, tuple, dict[str, Any]]] = []
        for check in SPLIT_FRACTIONS:
            pairs = {"pairs_repeats": coverage["replications"], "pairs_draws": coverage["n_draws"]} \
                if check == shared else {}
            tasks.append((f"split {check}", split_rows, (problem, self.pooled, check), {**split, **pairs}))
        tasks.append(("per-text calibration", computed_and_drawn,
                      (es.text_probability_calibration, occupation_probability_figure, problem),
                      {"n_draws": config.calibration_draws, "seed": config.seed, "relabel": self.relabel,
                       "preview_dpi": PREVIEW_DPI}))
        tasks += [(f"p_covered {world}", cc.world_pairs, (problem, world),
                   {**coverage, "simulated": config.coverage_simulations})
                  for world in (cc.SIMULATED_WORLDS if config.coverage_simulations else ())]
        if problem.text_sampled.any():
            tasks += [(f"p_covered {check}", cc.split_pairs, (problem, check), {**coverage, "relabel": self.relabel})
                      for check in cc.SPLITS if check != shared]
            if config.coverage_model_populations:
                tasks.append(("p_covered model", cc.model_pairs, (problem,),
                              {"populations": config.coverage_model_populations, "n_draws": coverage["n_draws"],
                               "seed": coverage["seed"]}))
        rank = {name: i for i, name in enumerate(self.ORDER)}
        return sorted(tasks, key=lambda task: rank.get(task[0], len(rank)))  # stable: any other part last

    def assembled(self, results: list[Any]) -> JudgedChecks:
        """The checks from the parts' results, in `tasks`' order."""
        by_name = {name: result for (name, *_), result in zip(self.tasks(), results, strict=True)}
        shared = self._shared_check()
        split_frames, split_found = [], {}
        for check in SPLIT_FRACTIONS:
            rows, pairs = by_name[f"split {check}"]
            split_frames.append(rows)
            if check == shared:
                split_found[check] = pairs
        if self.problem.text_sampled.any():
            split_found = {check: split_found[check] if check == shared else by_name[f"p_covered {check}"]
                           for check in cc.SPLITS}
        worlds = {world: by_name[f"p_covered {world}"]
                  for world in (cc.SIMULATED_WORLDS if self.config.coverage_simulations else ())}
        coverage = cc.assembled_check(split_found, worlds, by_name.get("p_covered model"))
        (calibration, recalibration), figure = by_name["per-text calibration"]
        return JudgedChecks(calibration, recalibration, coverage.table, coverage.coverage_map,
                            split_check_table(split_frames, self.held_out_labels),
                            figures={"occupation_probability_calibration": figure})


@dataclass
class PendingJudgedChecks:
    """The judged checks as started by `start_judged_checks`: read from the cache, or running in the worker
    pool (resources/worker_pool.py) while the step computes the rest; `result()` gathers them (a part no worker
    has started runs in the step's process) and keeps them in the cache."""

    started: float
    cached: JudgedChecks | None = None
    pool: WorkerPool | None = None
    parts: list[Any] | None = None
    store: Any = None  # (warehouse, key) to keep the result under, or None
    key: str = ""
    ahead: bool = False  # started before the step (run_all: assets/estimates_ahead.py), taken by it
    plan: JudgedParts | None = None  # what the parts are and how their results make the checks

    def discard(self) -> None:
        """Nobody will read them: the parts no worker has started are dropped."""
        if self.pool is not None and self.parts:
            self.pool.discard(self.parts)

    def result(self) -> JudgedChecks:
        if self.cached is not None:
            self.cached.cached, self.cached.seconds = True, time.perf_counter() - self.started
            return self.cached
        assert self.pool is not None and self.parts is not None and self.plan is not None
        gathering = time.perf_counter()
        result = self.plan.assembled(self.pool.gather(self.parts))
        # the p_covered check's figure, drawn by a worker at once (queued before the drawings started ahead)
        coverage_figure = self.pool.submit(draw_outputs, unit_coverage_figure, (result.coverage,),
                                           preview_dpi=PREVIEW_DPI, name="figure unit_coverage_simulation_check")
        result.gathered = time.perf_counter() - gathering
        if self.store is not None:
            warehouse, key = self.store
            warehouse.keep_result("judged_checks", key, result)
        result.figures["unit_coverage_simulation_check"] = coverage_figure
        result.seconds = time.perf_counter() - self.started
        return result


# Judged checks started ahead of the step that reads them (assets/estimates_ahead.py: run_all starts them before
# its analysis run, while the main process runs the steps before the headline), by their key: the step whose own
# key is the same takes them; any other is dropped. At most one entry, dropped at the end of the run.
_AHEAD: dict[str, PendingJudgedChecks] = {}


def keep_ahead(pending: PendingJudgedChecks) -> None:
    drop_ahead()
    pending.ahead = True
    _AHEAD[pending.key] = pending


def take_ahead(key: str) -> PendingJudgedChecks | None:
    """The checks started ahead under this very key (taken: a second call finds none); any other are dropped."""
    pending = _AHEAD.pop(key, None)
    drop_ahead()
    return pending


def drop_ahead() -> None:
    """Drop the checks started ahead that no step took (their unstarted parts leave the worker's queue)."""
    while _AHEAD:
        _AHEAD.popitem()[1].discard()


def start_judged_checks(warehouse: Warehouse, inputs: dict, texts: pl.DataFrame, problem: es.Problem,
                        config: Any, code_versions: list[str], log: object = None,
                        pool: WorkerPool | None = None) -> PendingJudgedChecks:
    """The judged checks on the benchmarks with judged texts (a benchmark without any changes none of them), read
    from the cache when the key (that problem, the relabeling's inputs, the settings, the code version) matches;
    no cache without a code version. Else the checks' parts (JudgedParts: six of 1-8 CPU-s on the mirror) start
    in the worker pool (`pool`, default the process's: one worker per CPU but one), the longest first; they are
    pure functions of the restricted problem and the settings, so where they run does not change a value. Their
    figures are drawn by a worker (the calibration's in its part, the p_covered check's once it is assembled). The neighbour step's labels of a
    split's judged texts come from its estimation part alone (both splits), and in the per-text calibration a
    benchmark left out is labeled as a new one (the selector's cross-validated labels)."""
    started = time.perf_counter()
    judged_problem, judged_texts = es.judged_problem(problem, texts)
    relabel, held_out_labels, relabel_key = keyed_split_relabeler(
        warehouse, inputs["labeler_version"], judged_texts, judged_problem, log)
    key = es.checks_key(judged_problem, [relabel_key, held_out_labels, code_versions, config.model_dump()])
    if (ahead := take_ahead(key)) is not None:  # the same inputs, settings and code: the same values
        return ahead
    if code_versions:  # without a code version a code change could not tell an old result from a new one
        cached = warehouse.cached_result("judged_checks", key)
        if isinstance(cached, JudgedChecks):
            return PendingJudgedChecks(started, cached=cached, key=key)
    pool = pool or shared_pool()
    plan = JudgedParts(judged_problem, es.scopes_for(judged_problem, per_benchmark=False), config, relabel,
                       held_out_labels)
    parts = [pool.submit(fn, *args, name=f"judged check: {name}", **kwargs) for name, fn, args, kwargs in plan.tasks()]
    return PendingJudgedChecks(started, pool=pool, parts=parts, store=(warehouse, key) if code_versions else None,
                               key=key, plan=plan)


def judged_checks(warehouse: Warehouse, inputs: dict, texts: pl.DataFrame, problem: es.Problem,
                  config: Any, code_versions: list[str], log: object = None,
                  pool: WorkerPool | None = None) -> JudgedChecks:
    """`start_judged_checks` and its result at once."""
    return start_judged_checks(warehouse, inputs, texts, problem, config, code_versions, log, pool).result()
