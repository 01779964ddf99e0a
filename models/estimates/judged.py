"""The judged part of a problem (issue 29): the checks that test the estimators against the judge
(`estimate_split_check`, `unit_coverage_simulation_check`, `occupation_probability_calibration`) read only the
benchmarks that have judge-sampled texts. A benchmark without one has no judged text to split or hold out, and
none of its texts enters another benchmark's draws (the calibration factors, the mixture weights and the donors
come from the sampled texts; the labeler's mass and occupations are per benchmark). So the checks run on the
problem restricted to those benchmarks, and their result is a function of that restricted problem (its
`Problem.fingerprint`), the relabeling's inputs, the settings and the code: a new benchmark without judged
texts leaves the key unchanged and the cached result is exact, not an approximation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np
import polars as pl

from models.estimates.problem import Problem


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
    digest = hashlib.blake2b(digest_size=16)
    digest.update(problem.fingerprint().encode())
    for part in parts:
        digest.update(b"\x1e" + repr(part).encode())
    return digest.hexdigest()
