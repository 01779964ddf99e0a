"""held_out_weights: the mixture weights chosen without the leak through the neighbour step, measured (issue 25;
a variant not adopted: docs/estimates_calibration_log.md, "The weight choice's leak, measured").

    .venv/bin/python bench/held_out_weights.py --warehouse COPY.duckdb [--repeats 10] [--draws 30] [--seed 16]
                                              [--headline]

The mixture weights maximise the leave-one-text-out likelihood of the judged texts' misses. With the neighbour
step, a judged text's judge labels vote the labels of its unjudged neighbours, so the labeler's part (its
benchmark's label mass) already holds some of the held-out text's own misses. The variant computes each judged
text's labeler part from labels recomputed without its fold of judge labels (five folds dealt out in hash order
within each benchmark):
- in every split of the split check: the split's texts relabeled from its estimation part minus the fold
  (assets.estimates_split's EstimationPartRelabeler, as the check relabels them from the whole part);
- with `--headline`, on the warehouse itself: the neighbour step rerun without each fold over every text of
  every benchmark (reads the label cache, builds the offline labeler; ~60 CPU-s, most of it recomputing the
  texts' signals five times).

Both arms run the same splits (same seed). One JSON object on stdout: per arm the weights chosen in the first
five splits, the split checks' model_assisted and bounds rows (coverage, mean error, mean truth) and, with
`--headline`, the pooled model-assisted estimates at 100 draws. The variant lives here only: it patches
ModelAssisted._choose_weights and split_sample_problem for the run. Opens the warehouse for writing: use a copy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from bench import common  # noqa: E402

FOLDS = 5
# id(problem) -> (the problem, kept alive so that its id is not reused; fold of each text, -1 if none; (F, B, K)
# labeler shares without the fold): the variant's inputs, set where the problem is built (a split, or the
# warehouse's problem with --headline)
HELD: dict[int, tuple[Any, np.ndarray, np.ndarray]] = {}


def shares(fold_rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]], bench: np.ndarray, weight: np.ndarray,
           n_bench: int, n_tasks: int) -> np.ndarray:
    """(F, B, K) each fold's label mass per benchmark, normalised; fold_rows[f] = (text, task, p)."""
    out = np.zeros((len(fold_rows), n_bench, n_tasks))
    for f, (text, task, p) in enumerate(fold_rows):
        np.add.at(out[f], (bench[text], task), weight[text] * p)
    total = out.sum(axis=2, keepdims=True)
    return np.divide(out, total, out=np.zeros_like(out), where=total > 0)


def install_variant() -> None:
    """Patch the weight choice (labeler part from HELD where the problem has it) and the split (HELD filled)."""
    from models.estimates import checks, judged
    from models.estimates.draws import ModelAssisted

    choose = ModelAssisted._choose_weights

    def held_out_choice(self: Any) -> np.ndarray:
        held = HELD.get(id(self.problem))
        if held is None:
            return choose(self)
        _, text_fold, fold_shares = held
        published, missed_text = self.q_labeler, self.missed_text

        class HeldOut:  # what _choose_weights reads as q_labeler[bench, tasks], row by row of the misses
            def __getitem__(self, key: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
                bench, tasks = key
                fold = text_fold[missed_text]
                out = published[bench, tasks].copy()
                has = fold >= 0
                out[has] = fold_shares[fold[has], bench[has], tasks[has]]
                return out

        self.q_labeler = HeldOut()
        try:
            return choose(self)
        finally:
            self.q_labeler = published

    def split_with_held_out(problem: Any, rng: np.random.Generator, fraction: float = 0.5,
                            relabel: Any = None) -> tuple[Any, np.ndarray]:
        split, truth = split_problem(problem, rng, fraction, relabel)
        if relabel is not None:
            keep = np.flatnonzero(problem.text_sampled)
            bench = split.text_bench
            start = np.searchsorted(bench, bench)  # texts are in benchmark order
            fold = np.where(split.text_sampled, (np.arange(bench.size) - start) % FOLDS, -1)
            rows = [relabel(keep, split.text_sampled & (fold != f)) for f in range(FOLDS)]
            HELD[id(split)] = (split, fold, shares(rows, bench, split.text_mult, split.n_bench, split.n_tasks))
        return split, truth

    split_problem = checks.split_sample_problem
    ModelAssisted._choose_weights = held_out_choice  # type: ignore[method-assign]
    judged.split_sample_problem = split_with_held_out  # type: ignore[assignment]


def split_arm(warehouse: Any, repeats: int, draws: int, seed: int) -> dict:
    from assets.estimates import warehouse_judged_split
    from models import estimates as es
    from models.estimates import judged
    from models.estimates.draws import ModelAssisted

    sub, relabel, held = warehouse_judged_split(warehouse)
    rng = np.random.default_rng(seed)
    weights = [ModelAssisted(judged.split_sample_problem(sub, rng, 0.5, relabel)[0]).weights.round(2).tolist()
               for _ in range(5)]
    check = judged.split_check(sub, es.scopes_for(sub, None), repeats, draws, seed, relabel, held)
    rows = (check.filter(pl.col("estimator").is_in(["model_assisted", "bounds"]))
            .select("check", "quantity", "threshold", "estimator", "coverage", "mean_error", "mean_truth")
            .sort("check", "quantity", "threshold", "estimator"))
    return {"split_half_weights": weights, "split_checks": rows.to_dicts()}


def headline_arm(warehouse: Any, variant: bool) -> dict:
    from assets import estimates as ea
    from models import estimates as es
    from models.estimates.draws import ModelAssisted

    inputs = ea.read_inputs(warehouse)
    problem = ea._problem(inputs, inputs["judge_rows"], inputs["labels"])
    if variant:
        HELD[id(problem)] = (problem, *headline_held_out(warehouse, inputs, problem))
    scopes = es.scopes_for(problem, inputs["membership"])
    result = es.run_estimators(problem, scopes, thresholds=(1, 5), n_draws=100, seed=16,
                               estimators=("model_assisted",))
    frame = es.estimates_frame(problem, scopes, result, (1, 5)).filter(
        (pl.col("benchmark_index") == "all") & (pl.col("scope") == "all"))
    return {"weights": ModelAssisted(problem).weights.round(2).tolist(),
            "estimates": frame.select("quantity", "threshold", "value", "ci_low", "ci_high").to_dicts()}


def headline_held_out(warehouse: Any, inputs: dict, problem: Any) -> tuple[np.ndarray, np.ndarray]:
    """The neighbour step rerun without each fold over every text (its cache bypassed): (text fold, shares)."""
    from assets import labels as al
    from models import estimates as es
    from models.labeling import cache as lc
    from models.sources import ONET_VERSION
    from resources import neighbour_cache
    from resources.dagster_resources import LabelerResource

    prompts = warehouse.read_table("benchmark_prompts")
    index, _, _ = warehouse.load_task_index(None)
    impl = LabelerResource(kind="offline").build(index)
    cache = warehouse.label_cache()
    texts = es.text_frame(inputs["prompts"], inputs["judge_rows"])
    keys = texts.select("benchmark", "prompt_hash").unique().sort("benchmark", "prompt_hash").with_row_index("t")
    text_of = {(b, h): t for t, b, h in keys.iter_rows()}
    task_of = {(c, t): k for k, (c, t) in enumerate(problem.task_keys.iter_rows())}
    text_fold = np.full(problem.text_bench.size, -1)
    rows: list[list[tuple[int, int, float]]] = [[] for _ in range(FOLDS)]
    judged_sample, read, write = al.judged_sample, neighbour_cache.read_decisions, neighbour_cache.write_decisions
    neighbour_cache.read_decisions, neighbour_cache.write_decisions = (lambda *a, **k: {}), (lambda *a, **k: None)
    try:
        for (benchmark,), group in prompts.group_by(["benchmark"], maintain_order=True):
            records = al.prompt_records(group)
            labels_by_hash, _ = lc.run_plan(lc.plan_labeling(records, impl, cache, ONET_VERSION), impl, cache)
            judged = judged_sample(warehouse, benchmark, records)
            fold_of = {h: i % FOLDS for i, h in enumerate(sorted(judged["prompt_hash"].to_list()))}
            for h, f in fold_of.items():
                if (benchmark, h) in text_of:
                    text_fold[text_of[(benchmark, h)]] = f
            for f in range(FOLDS):
                kept = judged.filter(pl.col("prompt_hash").replace_strict(fold_of, default=-1) != f)
                al.judged_sample = lambda *_, kept=kept: kept
                restacked, _, _ = al.neighbour_step(warehouse, benchmark, records, labels_by_hash, impl, index)
                for h, labels in restacked.items():
                    t = text_of.get((benchmark, h))
                    for lab in labels if t is not None else ():
                        k = task_of.get((str(lab.onet_soc_code), int(lab.task_id)))
                        p = lab.p_exercised if lab.p_exercised is not None else lab.score
                        if k is not None:
                            rows[f].append((t, k, float(p)))
    finally:
        al.judged_sample, neighbour_cache.read_decisions, neighbour_cache.write_decisions = judged_sample, read, write
    # one row per (text, task) with its largest p, as build_problem keeps them
    folds = []
    for fold_rows in rows:
        frame = pl.DataFrame(fold_rows, schema={"t": pl.Int64, "k": pl.Int64, "p": pl.Float64}, orient="row")
        frame = frame.group_by("t", "k").agg(pl.col("p").max())
        folds.append((frame["t"].to_numpy(), frame["k"].to_numpy(), frame["p"].to_numpy()))
    return text_fold, shares(folds, problem.text_bench, problem.text_mult, problem.n_bench, problem.n_tasks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--draws", type=int, default=30)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--headline", action="store_true")
    args = parser.parse_args()
    from resources.dagster_resources import Warehouse

    warehouse = Warehouse(path=args.warehouse)
    arms: dict[str, dict] = {"published": split_arm(warehouse, args.repeats, args.draws, args.seed)}
    if args.headline:
        arms["published"] |= {"headline": headline_arm(warehouse, variant=False)}
    install_variant()
    arms["held_out"] = split_arm(warehouse, args.repeats, args.draws, args.seed)
    if args.headline:
        arms["held_out"] |= {"headline": headline_arm(warehouse, variant=True)}
    common.emit({"date": common.now_iso(), "code": common.code_version(), "repeats": args.repeats,
                 "draws": args.draws, "seed": args.seed, "arms": arms})


if __name__ == "__main__":
    main()
