"""Simulated populations with a known truth (tests, bench, the p_covered check's `simulated` rows), and the
statistics of a judge sample that say how much a simulated world resembles the mirror's.

`simulate`'s default world is the stress case the estimators were first checked in: a benchmark's tasks come
from a pool spread over most major groups. A real benchmark's do not: on the mirror two judge labels of
different texts of one benchmark share a major group 65% of the time (the default world: 12%), and its
misses share one 43% of the time (11%). MIRROR_LIKE is a world whose judge sample has the mirror's
statistics (judge_sample_statistics; compared in bench/world-statistics-2026-12-05.json and
tests/test_simulation_worlds.py): pools within two major groups, misses scattered over those groups, a few
surprises anywhere, the labeler's label counts and probabilities. docs/estimates.md (and its log,
docs/estimates_calibration_log.md) reads the p_covered check in both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from models.estimates.checks import check_against_truth, summarize_checks
from models.estimates.problem import TASK_KEY, Problem, scopes_for

# simulate's settings of a world whose judge sample resembles the mirror's (judge_sample_statistics): 22 major
# groups of 40 occupations of 20 tasks; a benchmark's pool, 50 tasks of 6 occupations within 2 groups, steeply
# popular (Zipf 2: misses repeat a task as often as the mirror's); 45% of the misses scattered over those groups,
# 2.5% anywhere; fewer labels per text and higher p than the default.
MIRROR_LIKE: dict[str, object] = {
    "n_groups": 22, "n_occupations": 880, "tasks_per_occupation": 20, "pool_groups": 2, "pool_occupations": 6,
    "pool_size": 50, "scatter_share": 0.45, "surprise_share": 0.025, "zipf": 2.0, "emitted_mean": 0.9,
    "missed_mean": 1.35, "not_work_share": 0.15, "p_range": (0.25, 0.99), "overconfidence": 0.85,
}


@dataclass
class Simulation:
    problem: Problem
    truth_counts: np.ndarray  # (B, K) prompts whose true (judge) label set holds the task


def simulate(
    rng: np.random.Generator,
    *,
    texts_per_benchmark: Sequence[int] = (300, 500, 200, 800, 150, 400),
    sample_fraction: float = 0.06,
    sample_minimum: int = 12,
    n_occupations: int = 60,
    tasks_per_occupation: int = 10,
    pool_size: int = 80,
    emitted_mean: float = 2.0,
    missed_mean: float = 1.0,
    overconfidence: float = 0.7,
    not_work_share: float = 0.1,
    unsampled_benchmarks: int = 0,
    blind_spot_share: float = 0.0,
    pool_groups: int | None = None,
    pool_occupations: int | None = None,
    n_groups: int = 12,
    zipf: float = 1.1,
    scatter_share: float = 0.0,
    surprise_share: float = 0.0,
    p_range: tuple[float, float] = (0.05, 0.95),
) -> Simulation:
    """A population with a known truth and a labeler of known error.

    Each benchmark draws its prompts' tasks from its own pool of `pool_size` tasks (Zipf popularity of exponent
    `zipf`), as one benchmark's prompts share occupations. Per work text the labeler emits 1 +
    Poisson(emitted_mean) tasks with p ~ U(p_range); each is truly exercised with probability overconfidence x p
    (a labeler that is overconfident by that factor); the judge (truth) also holds Poisson(missed_mean) pool
    tasks the labeler missed. Some texts repeat (multiplicity 2-3). A stratified random sample of max(minimum,
    fraction N_b) texts per benchmark is judged; the last `unsampled_benchmarks` benchmarks get no sample. With
    `blind_spot_share` > 0 that share of the missed tasks comes from a second pool the labeler never emits
    (a blind spot: the stress case for the model-assisted estimator's picture of where misses fall).

    By default a pool is any `pool_size` tasks (12 major groups of 5 occupations of 10 tasks), so a benchmark's
    pool spans most groups. `pool_groups` (and `pool_occupations`): the pool is drawn from the tasks of that
    many major groups (and that many of their occupations), as a real benchmark's are (MIRROR_LIKE);
    `scatter_share` of the misses then fall anywhere in those groups instead, and `surprise_share` anywhere
    at all (a miss no part of the miss model expects)."""
    n_tasks = n_occupations * tasks_per_occupation
    task_keys = pl.DataFrame(
        {
            "onet_soc_code": [f"{10 + (o % n_groups) * 2:02d}-{1000 + o:04d}.00" for o in range(n_occupations)
                              for _ in range(tasks_per_occupation)],
            "task_id": np.arange(n_tasks, dtype=np.int64),
        }
    ).sort(TASK_KEY)
    task_occ_codes = task_keys["onet_soc_code"].to_list()
    occ_codes = sorted(set(task_occ_codes))
    occ_pos = {c: i for i, c in enumerate(occ_codes)}
    group_codes = sorted({c[:2] for c in occ_codes})
    task_occ = np.array([occ_pos[c] for c in task_occ_codes])
    occ_group = np.array([group_codes.index(c[:2]) for c in occ_codes])
    hours = rng.lognormal(10, 1.5, n_tasks)
    n_bench = len(texts_per_benchmark)
    popularity = 1.0 / np.arange(1, pool_size + 1) ** zipf
    popularity /= popularity.sum()
    text_bench, text_mult, text_sampled = [], [], []
    lab_text, lab_task, lab_p, jud_text, jud_task, jud_in = [], [], [], [], [], []
    truth = np.zeros((n_bench, n_tasks))
    first = 0
    for b, n_texts in enumerate(texts_per_benchmark):
        if pool_groups is None:
            pool = rng.choice(n_tasks, size=pool_size, replace=False)
            group_tasks = np.arange(n_tasks)
        else:
            groups = rng.choice(len(group_codes), size=pool_groups, replace=False)
            occs = np.flatnonzero(np.isin(occ_group, groups))
            if pool_occupations is not None:
                occs = rng.choice(occs, size=min(pool_occupations, occs.size), replace=False)
            members = np.flatnonzero(np.isin(task_occ, occs))
            if members.size < pool_size:
                raise ValueError(f"simulate: {members.size} tasks in the pool's occupations, fewer than "
                                 f"pool_size={pool_size}")
            pool = rng.choice(members, size=pool_size, replace=False)
            group_tasks = np.flatnonzero(np.isin(occ_group[task_occ], groups))
        blind_pool = rng.choice(np.setdiff1d(np.arange(n_tasks), pool), size=pool_size, replace=False)
        n_sample = 0 if b >= n_bench - unsampled_benchmarks else min(
            n_texts, max(sample_minimum, int(math.ceil(sample_fraction * n_texts)))
        )
        sampled = np.zeros(n_texts, dtype=bool)
        sampled[rng.choice(n_texts, size=n_sample, replace=False)] = True
        mult = np.where(rng.random(n_texts) > 0.05, 1.0, rng.integers(2, 4, n_texts).astype(float))
        work = rng.random(n_texts) >= not_work_share
        n_emit = np.minimum(1 + rng.poisson(emitted_mean, n_texts), pool_size)
        n_miss = np.minimum(rng.poisson(missed_mean, n_texts), pool_size - n_emit)
        # each text's pool in the order of successive draws without replacement by popularity (Gumbel top-k):
        # its first n_emit tasks are emitted, the next n_miss are the misses (drawn from the rest by popularity)
        order = np.argsort(-(np.log(popularity) + rng.gumbel(size=(n_texts, pool_size))), axis=1)
        rank = np.arange(pool_size)
        emitted = work[:, None] & (rank < n_emit[:, None])
        missed = work[:, None] & (rank >= n_emit[:, None]) & (rank < (n_emit + n_miss)[:, None])
        e_text, e_rank = np.nonzero(emitted)
        ps = rng.uniform(p_range[0], p_range[1], e_text.size)
        true_emitted = rng.random(e_text.size) < overconfidence * ps
        m_text, m_rank = np.nonzero(missed)
        m_task = pool[order[m_text, m_rank]]
        if blind_spot_share > 0 and m_text.size:
            blind = rng.random(m_text.size) < blind_spot_share
            m_task = np.where(blind, rng.choice(blind_pool, size=m_text.size, p=popularity), m_task)
            keep = np.unique(m_text * n_tasks + m_task, return_index=True)[1]  # a text's misses once each
            m_text, m_task = m_text[keep], m_task[keep]
        e_task = pool[order[e_text, e_rank]]
        if (scatter_share > 0 or surprise_share > 0) and m_text.size:
            where = rng.random(m_text.size)
            scattered = where < scatter_share
            surprising = (where >= scatter_share) & (where < scatter_share + surprise_share)
            m_task[scattered] = rng.choice(group_tasks, size=int(scattered.sum()))
            m_task[surprising] = rng.integers(0, n_tasks, size=int(surprising.sum()))
            m_keys = m_text.astype(np.int64) * n_tasks + m_task
            keep = np.unique(m_keys, return_index=True)[1]  # a text's misses once each, none of them its labels
            keep = np.sort(keep[~np.isin(m_keys[keep], e_text.astype(np.int64) * n_tasks + e_task)])
            m_text, m_task = m_text[keep], m_task[keep]
        # the judge's (true) labels of a text: its truly exercised emitted tasks, then its misses
        t_text = np.concatenate([e_text[true_emitted], m_text])
        t_task = np.concatenate([e_task[true_emitted], m_task])
        t_in = np.concatenate([np.ones(int(true_emitted.sum()), dtype=bool), np.zeros(m_text.size, dtype=bool)])
        t_order = np.argsort(t_text, kind="stable")
        t_text, t_task, t_in = t_text[t_order], t_task[t_order], t_in[t_order]
        np.add.at(truth[b], t_task, mult[t_text])
        judged = sampled[t_text]
        text_bench.append(np.full(n_texts, b))
        text_mult.append(mult)
        text_sampled.append(sampled)
        lab_text.append(first + e_text)
        lab_task.append(e_task)
        lab_p.append(ps)
        jud_text.append(first + t_text[judged])
        jud_task.append(t_task[judged])
        jud_in.append(t_in[judged])
        first += n_texts
    problem = Problem(
        benchmarks=[f"bench{b}" for b in range(n_bench)], task_keys=task_keys,
        text_bench=np.concatenate(text_bench), text_mult=np.concatenate(text_mult),
        text_sampled=np.concatenate(text_sampled), lab_text=np.concatenate(lab_text).astype(np.int64),
        lab_task=np.concatenate(lab_task).astype(np.int64), lab_p=np.concatenate(lab_p),
        jud_text=np.concatenate(jud_text).astype(np.int64), jud_task=np.concatenate(jud_task).astype(np.int64),
        jud_in_labels=np.concatenate(jud_in).astype(bool),
        task_occ=task_occ, occ_group=occ_group, n_groups=len(group_codes), task_hours=hours,
        total_hours=float(hours.sum()),
    )
    return Simulation(problem, truth)


def simulation_study(
    replications: int = 40, n_draws: int = 100, seed: int = 16, **settings: object
) -> pl.DataFrame:
    """Coverage and error of every estimator over `replications` simulated populations (`simulate`)."""
    rng = np.random.default_rng(seed)
    checks = []
    for r in range(replications):
        sim = simulate(rng, **settings)  # type: ignore[arg-type]
        scopes = scopes_for(sim.problem, per_benchmark=False)
        checks.append(
            check_against_truth(sim.problem, sim.truth_counts, scopes, n_draws=n_draws, seed=seed + r)
        )
    return summarize_checks(pl.concat(checks))


# --- how much a world resembles the mirror ----------------------------------------------------------------------


def _same_unit_pair_share(text: np.ndarray, bench: np.ndarray, unit: np.ndarray) -> float:
    """Of the pairs of rows of different texts within a benchmark, the share with the same unit."""
    def pairs(keys: np.ndarray) -> float:
        counts = np.unique(keys, return_counts=True)[1].astype(float)
        return float((counts * (counts - 1) / 2).sum())

    if text.size < 2:
        return math.nan
    bench, text, unit = bench.astype(np.int64), text.astype(np.int64), unit.astype(np.int64)
    n_text, n_unit = int(text.max()) + 1, int(unit.max()) + 1
    all_pairs = pairs(bench) - pairs(bench * n_text + text)
    same = pairs(bench * n_unit + unit) - pairs((bench * n_text + text) * n_unit + unit)
    return same / all_pairs if all_pairs > 0 else math.nan


def judge_sample_statistics(problem: Problem) -> pl.DataFrame:
    """statistic, value: what the judge sample of `problem` looks like, the same numbers for the mirror and a
    simulated world (benchmarks without judged texts change none of them). Pair shares: of two judge labels (misses: judge labels outside the labeler's set) of
    different texts of one benchmark, the share on the same task, occupation, major group. misses_in_new_group:
    the share of misses in a major group that neither another judged text of the benchmark nor any label of it
    has (a surprise to every part of the miss model but its uniform one). Per judged text: judge labels,
    misses, labels; labeler_recall: the share of judge labels the labeler gave; label_p: mean p of the judged
    texts' labels; without labels / without judge labels: shares of judged texts."""
    pr = problem
    judged = np.flatnonzero(pr.text_sampled)
    n_judged = max(judged.size, 1)
    occ = pr.task_occ[pr.jud_task]
    group = pr.occ_group[occ]
    bench = pr.text_bench[pr.jud_text]
    miss = ~pr.jud_in_labels
    rows: dict[str, float] = {}
    for name, mask in (("judge", np.ones(miss.size, dtype=bool)), ("miss", miss)):
        for level, unit in (("task", pr.jud_task), ("occupation", occ), ("major_group", group)):
            rows[f"{name}_pairs_same_{level}"] = _same_unit_pair_share(pr.jud_text[mask], bench[mask], unit[mask])
    # a miss's group among the other judged texts' judge labels of its benchmark, or any label of it
    key = bench.astype(np.int64) * pr.n_groups + group
    per_group = np.unique(key, return_counts=True)
    own = np.unique(pr.jud_text.astype(np.int64) * pr.n_groups * pr.n_bench + key, return_counts=True)
    others = (per_group[1][np.searchsorted(per_group[0], key)]
              - own[1][np.searchsorted(own[0], pr.jud_text.astype(np.int64) * pr.n_groups * pr.n_bench + key)])
    labeled = np.zeros(pr.n_bench * pr.n_groups, dtype=bool)
    labeled[pr.text_bench[pr.lab_text] * pr.n_groups + pr.occ_group[pr.task_occ[pr.lab_task]]] = True
    new_group = (others == 0) & ~labeled[key]
    rows["misses_in_new_group"] = float(new_group[miss].mean()) if miss.any() else math.nan
    on_judged = pr.text_sampled[pr.lab_text]
    rows["judge_labels_per_judged_text"] = pr.jud_text.size / n_judged
    rows["misses_per_judged_text"] = float(miss.sum()) / n_judged
    rows["labels_per_judged_text"] = float(on_judged.sum()) / n_judged
    rows["labeler_recall"] = float(pr.jud_in_labels.mean()) if pr.jud_in_labels.size else math.nan
    rows["label_p"] = float(pr.lab_p[on_judged].mean()) if on_judged.any() else math.nan
    rows["judged_without_labels"] = np.setdiff1d(judged, pr.lab_text).size / n_judged
    rows["judged_without_judge_labels"] = np.setdiff1d(judged, pr.jud_text).size / n_judged
    return pl.DataFrame({"statistic": list(rows), "value": [float(v) for v in rows.values()]})


def world_statistics(settings: Mapping[str, object], populations: int, seed: int) -> pl.DataFrame:
    """statistic, value: judge_sample_statistics averaged over `populations` populations of simulate(settings)."""
    rng = np.random.default_rng(seed)
    frames = [judge_sample_statistics(simulate(rng, **settings).problem)  # type: ignore[arg-type]
              for _ in range(populations)]
    return frames[0].with_columns(pl.Series("value", np.mean([f["value"].to_numpy() for f in frames], axis=0)))
