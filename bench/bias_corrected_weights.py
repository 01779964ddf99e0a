"""bias_corrected_weights: the mixture weights bias-corrected by a parametric bootstrap, measured (issue 25,
item 4; a variant not adopted: docs/estimates_calibration_log.md, "Bias-corrected mixture weights").

    .venv/bin/python bench/bias_corrected_weights.py --warehouse COPY.duckdb [--inner 8] [--populations 12]
                                                    [--repeats 10] [--draws 30] [--seed 16]

The `model` check's diagnosis: refitted on a sample drawn from the fitted model, the leave-one-text-out choice
moves weight from the seen and labeler parts to the spread parts (2026-12-06: generating (0.3, 0.4, 0.1, 0.1,
0.1), refitted (0.1-0.2, 0.3-0.4, 0.1, 0.2, 0.2)). The variant corrects that bias the textbook way: `inner`
populations drawn from the model at the chosen weights w (coverage_check.model_population), the weights refitted
on each (mean w_bar), and the weights used are the grid point nearest 2 w - w_bar (`--strength` s: nearest
w + s (w - w_bar)); every draw's bootstrap
re-choice is shifted by the same correction. Its own inner fits use the plain choice.

Arms (published choice, bias-corrected), each on the same seeds: the `model` check (truths from the arm's own
fitted model, `populations` of them), the relabeled split checks (`repeats` splits each way, as
held_out_weights.py runs them), the MIRROR_LIKE world (p_covered bins) and the headline at 100 draws. One JSON
object on stdout. The variant lives here only: it patches ModelAssisted for the run. Opens the warehouse for
writing: use a copy.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench import common  # noqa: E402
from bench.coverage_model_check import run  # noqa: E402
from bench.held_out_weights import headline_arm, split_arm  # noqa: E402

INNER_SEED = 31


def install_variant(inner: int, strength: float = 1.0) -> None:
    """Patch the weight choice (bias-corrected) and the bootstrap re-choice (shifted alike)."""
    from models.estimates import coverage_check as cc
    from models.estimates.draws import ModelAssisted

    choose, rechoose = ModelAssisted._choose_weights, ModelAssisted.weights_for
    state = {"inner": False}

    def nearest(grid: np.ndarray, target: np.ndarray) -> np.ndarray:
        return grid[int(np.argmin(((grid - target) ** 2).sum(axis=1)))]

    def corrected(self: Any) -> np.ndarray:
        chosen = choose(self)
        self.bc_shift = np.zeros_like(chosen)
        if state["inner"] or self.missed_text.size == 0:
            return chosen
        from models.estimates.problem import sorted_unique

        pr = self.problem  # what model_population reads, set after the choice in __init__
        self.weights, self.label_keys = chosen, sorted_unique(pr.lab_text.astype(np.int64) * pr.n_tasks + pr.lab_task)
        rng = np.random.default_rng(INNER_SEED)
        state["inner"] = True
        try:
            refits = [ModelAssisted(cc.model_population(self.problem, rng, self)[0]).weights for _ in range(inner)]
        finally:
            state["inner"] = False
        out = nearest(self.grid, chosen + strength * (chosen - np.mean(refits, axis=0)))
        self.bc_shift = out - chosen
        self.bc_refits = np.round(np.mean(refits, axis=0), 3)
        return out

    def shifted(self: Any, boot: np.ndarray) -> np.ndarray:
        chosen = rechoose(self, boot)
        shift = getattr(self, "bc_shift", None)
        return chosen if shift is None or not shift.any() else nearest(self.grid, chosen + shift)

    ModelAssisted._choose_weights = corrected  # type: ignore[method-assign]
    ModelAssisted.weights_for = shifted  # type: ignore[method-assign]


FIGURES = ("counts", "bins_off", "bins_checked", "bins_beyond_two_se", "max_abs_difference", "levels")


def model_arm(warehouse: str, populations: int, draws: int, seed: int) -> dict:
    """The `model` check (bench/coverage_model_check.py's run) with the arm's own fitted model."""
    out = run(warehouse, populations, draws, seed, world="model")
    return {"weights": out["weights"], "refit_weights": out["refit_weights"][:5], "cpu_s": out["cpu_seconds"],
            **{k: out[k] for k in (*FIGURES, "ece")}}


def world_arm(populations: int, draws: int, seed: int) -> dict:
    out = run(None, populations, draws, seed, world="simulated_mirror_like")
    return {k: out[k] for k in FIGURES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--inner", type=int, default=8)
    parser.add_argument("--populations", type=int, default=12)
    parser.add_argument("--world-populations", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--draws", type=int, default=30)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--strength", type=float, default=1.0, help="s in w + s (w - w_bar); 1: the full correction")
    parser.add_argument("--variant-only", action="store_true", help="skip the published arm")
    args = parser.parse_args()
    from resources.dagster_resources import Warehouse

    warehouse = Warehouse(path=args.warehouse)
    arms: dict[str, dict] = {}
    for arm in ("bias_corrected",) if args.variant_only else ("published", "bias_corrected"):
        if arm == "bias_corrected":
            install_variant(args.inner, args.strength)
        started = time.process_time()
        arms[arm] = {"model": model_arm(args.warehouse, args.populations, args.draws, args.seed),
                     "simulated_mirror_like": world_arm(args.world_populations, args.draws, 7),
                     **split_arm(warehouse, args.repeats, args.draws, args.seed),
                     "headline": headline_arm(warehouse, variant=False),
                     "cpu_s": 0.0}
        arms[arm]["cpu_s"] = round(time.process_time() - started, 1)
        print(f"{arm}: {arms[arm]['cpu_s']} CPU-s", file=sys.stderr)
    common.emit({"date": common.now_iso(), "code": common.code_version(), "inner": args.inner,
                 "strength": args.strength,
                 "populations": args.populations, "repeats": args.repeats, "draws": args.draws, "seed": args.seed,
                 "arms": arms})


if __name__ == "__main__":
    main()
