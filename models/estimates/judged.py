"""The judged part of a problem (issue 29): the checks that test the estimators against the judge
(`estimate_split_check`, `unit_coverage_simulation_check`, `occupation_probability_calibration`) read only the
benchmarks that have judge-sampled texts. A benchmark without one has no judged text to split or hold out, and
none of its texts enters another benchmark's draws (the calibration factors, the mixture weights and the donors
come from the sampled texts; the labeler's mass and occupations are per benchmark). So the checks run on the
problem restricted to those benchmarks, and their result is a function of that restricted problem (its
`Problem.fingerprint`), the relabeling's inputs, the settings and the code: a new benchmark without judged
texts leaves the key unchanged and the cached result is exact, not an approximation.

The three checks are independent of each other (each its own random stream from the seed) and of the headline's
draws: the step runs them in worker processes while it computes the rest (assets/estimates_split.py,
resources/worker_pool.py); `split_rows` here and coverage_check's `split_pairs`, `world_pairs` and `model_pairs` are
the module-level functions a worker calls (JudgedParts).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl

from models.cache_keys import result_key
from models.estimates.checks import (
    Relabel,
    check_against_truth,
    skip_splits,
    split_sample_problem,
    summarize_checks,
)
from models.estimates.coverage_check import coverage_pairs
from models.estimates.problem import ALL_INDEX, ALL_SCOPE, Problem, Scope


def judged_benchmarks(problem: Problem) -> np.ndarray:
    """Indices of the benchmarks with at least one judge-sampled text (ascending)."""
    return np.flatnonzero(np.bincount(problem.text_bench, weights=problem.text_sampled,
                                      minlength=problem.n_bench) > 0)


def restrict_to_benchmarks(problem: Problem, keep: np.ndarray) -> tuple[Problem, np.ndarray]:
    """The problem over the benchmarks `keep` (ascending indices) and every text of theirs, renumbered in the same
    order (so the draws, which follow row order, read the same rows in the same order); and the kept texts'
    indices in `problem`."""
    keep = np.asarray(keep, dtype=np.int64)
    bench_map = np.full(problem.n_bench, -1, dtype=np.int64)
    bench_map[keep] = np.arange(keep.size)
    texts = np.flatnonzero(bench_map[problem.text_bench] >= 0)
    text_map = np.full(problem.text_bench.shape[0], -1, dtype=np.int64)
    text_map[texts] = np.arange(texts.size)
    lab = text_map[problem.lab_text] >= 0
    jud = text_map[problem.jud_text] >= 0
    sub = Problem(
        benchmarks=[problem.benchmarks[b] for b in keep.tolist()], task_keys=problem.task_keys,
        text_bench=bench_map[problem.text_bench[texts]], text_mult=problem.text_mult[texts],
        text_sampled=problem.text_sampled[texts],
        lab_text=text_map[problem.lab_text[lab]], lab_task=problem.lab_task[lab], lab_p=problem.lab_p[lab],
        jud_text=text_map[problem.jud_text[jud]], jud_task=problem.jud_task[jud],
        jud_in_labels=problem.jud_in_labels[jud], task_occ=problem.task_occ, occ_group=problem.occ_group,
        n_groups=problem.n_groups, task_hours=problem.task_hours, total_hours=problem.total_hours,
    )
    return sub, texts


def judged_problem(problem: Problem, texts: pl.DataFrame) -> tuple[Problem, pl.DataFrame]:
    """(the problem over the benchmarks with judged texts, their rows of `texts`: the text_frame the problem was
    built from, in the problem's text order)."""
    sub, kept = restrict_to_benchmarks(problem, judged_benchmarks(problem))
    return sub, texts[kept.tolist()] if kept.size else texts.head(0)


def checks_key(problem: Problem, parts: Iterable[object]) -> str:
    """The cache key of the judged checks: the restricted problem's fingerprint and every other input (the
    relabeling's fingerprint, the settings, the code version) as text."""
    return result_key(parts, head=problem.fingerprint().encode())


SPLIT_FRACTIONS: dict[str, float] = {"split_half": 0.5, "split_fifth": 0.2}


def split_check(problem: Problem, scopes: list[Scope], repeats: int, n_draws: int, seed: int,
                relabel: Relabel | None = None, held_out_labels: str = "as published") -> pl.DataFrame:
    """Split each benchmark's judge sample at random: estimate from one part (half, or a fifth: the headline
    itself imputes ~93% of the texts, so the fifth tests how the estimators extrapolate), against the truth of
    the judge-labeled sub-population (the judge's labels of every sampled text). Per quantity: interval
    coverage over `repeats` splits, mean absolute and signed error. `relabel`: the neighbour step's labels
    recomputed per split from the estimation part alone (assets/estimates_split.py); `held_out_labels` says
    which labels the held-out texts had. One random stream from `seed` through the fractions in order
    (`split_rows` computes one fraction alone, for a worker process each)."""
    rng = np.random.default_rng(seed)
    frames = [_split_rows(problem, rng, check, fraction, scopes, repeats, n_draws, seed, relabel)[0]
              for check, fraction in SPLIT_FRACTIONS.items()]
    return split_check_table(frames, held_out_labels)


def split_check_table(frames: list[pl.DataFrame], held_out_labels: str) -> pl.DataFrame:
    """`split_check`'s table from its fractions' rows (in SPLIT_FRACTIONS' order)."""
    return pl.concat(frames).with_columns(pl.lit(held_out_labels).alias("held_out_labels"))


def _split_rows(problem: Problem, rng: np.random.Generator, check: str, fraction: float, scopes: list[Scope],
                repeats: int, n_draws: int, seed: int, relabel: Relabel | None, pairs_repeats: int = 0,
                pairs_draws: int = 0) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    pooled = [s for s in scopes if s.scope == ALL_SCOPE and s.benchmark_index == ALL_INDEX]
    checks, pairs = [], []
    for r in range(max(repeats, pairs_repeats)):
        split, truth = split_sample_problem(problem, rng, fraction=fraction, relabel=relabel)
        if r < repeats:
            checks.append(check_against_truth(split, truth, pooled, n_draws=n_draws, seed=seed + r))
        if r < pairs_repeats:
            pairs.append(coverage_pairs(split, truth, pairs_draws, seed + r, replication=r))
    rows = summarize_checks(pl.concat(checks)).with_columns(pl.lit(check).alias("check"))
    return rows, (pl.concat(pairs) if pairs else None)


def split_rows(problem: Problem, scopes: list[Scope], check: str, repeats: int, n_draws: int, seed: int,
               relabel: Relabel | None = None, pairs_repeats: int = 0, pairs_draws: int = 0
               ) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """One fraction's rows of `split_check` (the same arguments), computed alone: the random stream advanced past
    the fractions before it without building their splits (checks.skip_splits). With `pairs_repeats`, also the
    p_covered check's pairs of that many splits (coverage_check.coverage_pairs with `pairs_draws`): the same
    splits the p_covered check draws when its stream is this one (the same seed, the same fraction first), so
    each split is relabeled once for both checks."""
    rng = np.random.default_rng(seed)
    for name, fraction in SPLIT_FRACTIONS.items():
        if name == check:
            return _split_rows(problem, rng, check, fraction, scopes, repeats, n_draws, seed, relabel,
                               pairs_repeats, pairs_draws)
        skip_splits(problem, rng, fraction, repeats)
    raise KeyError(check)
