"""piled_spread: imputed misses on new tasks piled up within their benchmark, in the simulated worlds (issue 25;
a variant not adopted: docs/estimates_calibration_log.md, "Piling the new-task misses at the headline's scale").

    .venv/bin/python bench/piled_spread.py [--world simulated_mirror_like] [--populations 40] [--draws 30]
                                           [--seed 11] [--thetas off,20,60,200,600,2000,6000] [--share 1.0]

The miss model draws each imputed miss's task independently, so the misses that land on tasks the benchmark's
sample never missed and its labels never name (the uniform and spread parts) scatter over ever new tasks. Here
those misses of one draw pile up as a Chinese restaurant process within their benchmark: in a random order each
copies the task of a uniformly chosen earlier one with probability i / (theta + i), else keeps its own draw.
A small theta piles hard; theta -> infinity is the published model. `--share`: only that share of the new-task
misses (at random) pile, the rest scatter as published (one-off misses beside recurring ones the sample
missed). The variant lives here only: it wraps ModelAssisted._draw_tasks for the run. One JSON object on
stdout: per theta the p_covered check's bins (>= 40 units) off by > 0.05 and beyond 0.05 + 2 se, and the pooled
covered counts (estimated = sum of p_covered, true), per unit level and threshold (bench/coverage_model_check.py's
pair_figures).
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

THETA: list[float | None] = [None]  # the run's concentration; None: the published model
SHARE = [1.0]  # the share of the new-task misses that pile (the rest scatter, as published)


def pile(rng: np.random.Generator, bench: np.ndarray, tasks: np.ndarray, theta: float) -> np.ndarray:
    """A Chinese restaurant process per benchmark over `tasks` (their own draws as the base measure), resolved
    by pointer jumping: each row's table is the root of its chain of copies."""
    n = tasks.size
    order = np.lexsort((rng.random(n), bench))
    b = bench[order]
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, n]))
    i = np.arange(n) - first  # position within the benchmark
    parent = np.arange(n)
    copy = rng.random(n) < i / (theta + i)
    parent[copy] = (first + (rng.random(n) * np.maximum(i, 1)).astype(np.int64))[copy]
    while not np.array_equal(parent[parent], parent):
        parent = parent[parent]
    out = tasks.copy()
    out[order] = tasks[order][parent]
    return out


def install() -> None:
    from models.estimates.draws import ModelAssisted

    draw_tasks = ModelAssisted._draw_tasks
    rng = np.random.default_rng(2025)

    def piled(self: ModelAssisted, streams: Any, owner: np.ndarray, cdf: np.ndarray, blocks: Any) -> np.ndarray:
        tasks = draw_tasks(self, streams, owner, cdf, blocks)
        if THETA[0] is None or tasks.size == 0:
            return tasks
        pr = self.problem
        bench = pr.text_bench[owner]
        # a new task: no sampled miss and no label mass of the benchmark (only the uniform and spread parts)
        new = (blocks[0].share(bench, tasks) <= 0) & (self.q_labeler[bench, tasks] <= 0)
        new &= rng.random(tasks.size) < SHARE[0]
        tasks[new] = pile(rng, bench[new], tasks[new], THETA[0])
        return tasks

    ModelAssisted._draw_tasks = piled


def run(world: str, populations: int, draws: int, seed: int, thetas: list[str], share: float = 1.0) -> dict:
    from bench.coverage_model_check import pair_figures
    from models.estimates import coverage_check as cc

    install()
    SHARE[0] = share
    out = []
    for theta in thetas:
        THETA[0] = None if theta == "off" else float(theta)
        cpu = time.process_time()
        pairs = cc.unit_coverage_check(None, simulated=populations, n_draws=draws, seed=seed,
                                       worlds={world: cc.SIMULATED_WORLDS[world]}).pairs[world]
        figures = pair_figures(pairs, world, populations)
        out.append({"theta": theta, "levels": figures["levels"], "bins_off": figures["bins_off"],
                    "bins_checked": figures["bins_checked"], "cpu_seconds": round(time.process_time() - cpu, 2)})
        common.log(f"[piled_spread] theta {theta}: {out[-1]['cpu_seconds']} CPU-s")
    return {"date": common.now_iso(), "code": common.code_version(), "world": world, "populations": populations,
            "draws": draws, "seed": seed, "share": share, "runs": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--world", default="simulated_mirror_like", choices=("simulated", "simulated_mirror_like"))
    parser.add_argument("--populations", type=int, default=40)
    parser.add_argument("--draws", type=int, default=30)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--thetas", default="off,20,60,200,600,2000,6000")
    parser.add_argument("--share", type=float, default=1.0, help="share of the new-task misses that pile")
    args = parser.parse_args()
    common.emit(run(args.world, args.populations, args.draws, args.seed, args.thetas.split(","), args.share))


if __name__ == "__main__":
    main()
