"""The species-count estimate at >= 1 prompt: how many distinct tasks (and occupations) the judge would find
in every prompt text, from the texts it read.

Chao & Lin (2012, "Nonparametric lower bounds for species richness and shared species richness under sampling
without replacement", Biometrics 68) for incidence data: n texts drawn without replacement from N, Q_k the
number of tasks the judge gave exactly k of the sampled texts, q = n / N:

    S = S_obs + Q1^2 / ((n / (n - 1)) 2 Q2 + (q / (1 - q)) Q1)

The second term of the denominator is the finite-population part: when the whole population is read (q -> 1)
nothing is unseen. It is a lower bound in expectation when tasks differ in how common they are, which they
do: on the mirror's judge sample, estimated from half (a fifth) of it, it comes out 4% (24%) below the whole
sample's task count (30 splits), and its lower 95% limit was below it in 97-100% of splits. The interval is
Chao's (1987) log-normal one around the unseen part, the variance by the delta method with
var(Q_k) = Q_k (1 - Q_k / S) and cov(Q1, Q2) = -Q1 Q2 / S. Hours on covered tasks: the seen tasks' hours plus
the unseen count times the median hours of the tasks seen once (the unseen resemble the rarest seen, as in
Good-Turing; the median, not the mean, keeps it a lower bound, see `_hours_share`). The 22 major groups get
no estimate.

A pooled scope uses the pooled incidence and q = n / N over its member benchmarks that have a sample. The
sampling fractions differ by benchmark (27 texts of 57 to 1,092); the tasks still unseen sit mostly in the
big, thinly sampled benchmarks, whose fraction is below the pooled one, so the pooled q makes the estimate
smaller: still a lower bound. Benchmarks without a judge sample add nothing here (the labeler covers them).

Nested scopes: a scope inside another covers no more than it, but their estimates come from different samples,
and a small one's can come out higher (on the mirror, occubench alone 281 occupations against 268 for every
benchmark, from its 28 judged texts; the 11 benchmarks of `economic_agentic` 1,090 tasks against 1,075). So a
scope's value and lower limit are capped at those of every scope that holds all its sampled benchmarks
(`capped_by_supersets`): lowering a lower bound keeps it one, and the published floors then never say a part
covers more than the whole. The pooled scope has no superset, so the headline's floor is its own estimate.

Occupations within a scope: every covered occupation has a covered task, but the two estimates come from
different frequency counts, and on few texts the occupations' can come out higher (da_code on the mirror: 92
occupations against 56 tasks, its occupations seen twice too few). So the occupations' value and limits are
capped at the tasks' (`capped_by_tasks`), after the scopes' caps; the note says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from models.estimates.problem import QUANTITIES, Problem, Scope

RICHNESS = "richness"
Z_95 = 1.959963984540054


def unseen_count(q1: float, q2: float, n: int, fraction: float, observed: float) -> tuple[float, float]:
    """(f0, var f0): the Chao-Lin estimate of the species no sampled unit has, and its delta-method variance,
    from the singletons q1, doubletons q2, n sampled units, the sampling fraction n / N and the observed
    species count."""
    if q1 <= 0 or n <= 1 or fraction >= 1.0:
        return 0.0, 0.0
    a = 2.0 * n / (n - 1)
    c = fraction / (1.0 - fraction)
    denominator = a * q2 + c * q1
    if denominator <= 0:
        return 0.0, 0.0
    f0 = q1 * q1 / denominator
    return f0, _variance(q1, q2, a, c, denominator, observed + f0)


def _variance(q1: float, q2: float, a: float, c: float, denominator: float, total: float) -> float:
    d1 = q1 * (2 * a * q2 + c * q1) / denominator**2
    d2 = -a * q1 * q1 / denominator**2
    var = d1 * d1 * q1 * (1 - q1 / total) + d2 * d2 * q2 * (1 - q2 / total) - 2 * d1 * d2 * q1 * q2 / total
    return max(var, 0.0)


def log_normal_interval(observed: float, f0: float, var: float) -> tuple[float, float]:
    """Chao's 95% interval of S = observed + f0: observed + f0 / K to observed + f0 K."""
    if f0 <= 0:
        return observed, observed
    k = math.exp(Z_95 * math.sqrt(math.log(1 + var / f0**2)))
    return observed + f0 / k, observed + f0 * k


def _incidence(units: np.ndarray, species: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(species seen, how many distinct units have each)."""
    if units.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    pairs = np.unique(np.stack([species.astype(np.int64), units.astype(np.int64)]), axis=1)
    return np.unique(pairs[0], return_counts=True)


def richness_estimates(problem: Problem, scopes: Sequence[Scope]) -> np.ndarray:
    """(scopes, quantities, 3): value, ci_low, ci_high of the species estimate at >= 1 prompt for every scope:
    tasks, occupations and the hours share; NaN where no member benchmark has a judge sample, and for the major
    groups (22 species are too few for the estimator: on the judge sample its lower limit was above the truth
    in a quarter of the splits)."""
    return richness_with_caps(problem, scopes)[0]


def richness_with_caps(problem: Problem, scopes: Sequence[Scope]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`richness_estimates`, per (scope, quantity) the scope whose value capped this one's (-1: not capped), and
    the estimates before the cap: a reader of a capped figure must be told it is the larger scope's, and what
    its own was."""
    uncapped, members = _uncapped_richness(problem, scopes)
    capped = capped_by_supersets(uncapped, members)
    caps = capping_scopes(uncapped, capped, members)
    by_tasks = capped_by_tasks(capped)
    caps[by_tasks[:, OCCUPATIONS, 0] < capped[:, OCCUPATIONS, 0], OCCUPATIONS] = BY_TASKS
    return by_tasks, caps, uncapped


def _uncapped_richness(problem: Problem, scopes: Sequence[Scope]) -> tuple[np.ndarray, list[frozenset[int]]]:
    pr = problem
    out = np.full((len(scopes), len(QUANTITIES), 3), np.nan)
    sampled_bench = pr.text_bench[pr.text_sampled]
    has_sample = np.bincount(sampled_bench, minlength=pr.n_bench) > 0
    texts_per_bench = np.bincount(pr.text_bench, minlength=pr.n_bench)
    jud_bench = pr.text_bench[pr.jud_text]
    occ = pr.task_occ[pr.jud_task]
    limits = (float(pr.n_tasks), float(pr.n_occ))
    for si, scope in enumerate(scopes):
        members = [b for b in scope.members if has_sample[b]]
        if not members:
            continue
        n = int(np.isin(sampled_bench, members).sum())
        fraction = n / float(texts_per_bench[members].sum())
        rows = np.isin(jud_bench, members)
        texts = pr.jud_text[rows]
        tasks, task_incidence = _incidence(texts, pr.jud_task[rows])
        task_f0 = task_var = 0.0
        for qi, incidence in enumerate((task_incidence, _incidence(texts, occ[rows])[1])):
            observed = float(incidence.size)
            q1, q2 = float((incidence == 1).sum()), float((incidence == 2).sum())
            f0, var = unseen_count(q1, q2, n, fraction, observed)
            low, high = log_normal_interval(observed, f0, var)
            out[si, qi] = np.minimum([observed + f0, low, high], limits[qi])
            if qi == 0:
                task_f0, task_var = f0, var
        out[si, 3] = _hours_share(pr, tasks, task_incidence, task_f0, task_var)
    return out, [frozenset(b for b in scope.members if has_sample[b]) for scope in scopes]


def capped_by_supersets(values: np.ndarray, members: Sequence[frozenset[int]]) -> np.ndarray:
    """`values` (scopes, quantities, [value, low, high]) with each scope's value and lower limit at most those of
    every other scope whose `members` (sampled benchmarks) include all of its own; NaN cells stay NaN and ignore
    NaN neighbours. The upper limits are left as estimated."""
    out = values.copy()
    for inner, own in enumerate(members):
        for outer, other in enumerate(members):
            if inner != outer and own and own <= other:
                mine = out[inner, :, :2]
                out[inner, :, :2] = np.where(np.isnan(mine), mine, np.fmin(mine, values[outer, :, :2]))
    return out


TASKS, OCCUPATIONS = QUANTITIES.index("tasks_covered"), QUANTITIES.index("occupations_covered")
BY_TASKS = -2  # capping_scopes' code for an occupations' estimate capped at the same scope's tasks'


def capped_by_tasks(values: np.ndarray) -> np.ndarray:
    """`values` (scopes, quantities, [value, low, high]) with each scope's occupations at most its tasks (value
    and both limits: a covered occupation has a covered task, so the occupations' truth is below the tasks' and
    each of its bounds stays one); NaN cells stay NaN."""
    out = values.copy()
    occupations = out[:, OCCUPATIONS]
    out[:, OCCUPATIONS] = np.where(np.isnan(occupations), occupations, np.fmin(occupations, values[:, TASKS]))
    return out


def capping_scopes(uncapped: np.ndarray, capped: np.ndarray, members: Sequence[frozenset[int]]) -> np.ndarray:
    """(scopes, quantities): the scope whose value is the cap a scope's value took (the smallest among those
    holding all its sampled benchmarks), -1 where the value kept its own."""
    out = np.full(uncapped.shape[:2], -1, dtype=np.int64)
    lowered = capped[:, :, 0] < uncapped[:, :, 0]
    for inner, quantity in zip(*np.nonzero(lowered), strict=True):
        outers = [o for o, other in enumerate(members) if o != inner and members[inner] <= other]
        out[inner, quantity] = min(outers, key=lambda o: uncapped[o, quantity, 0])
    return out


def _hours_share(pr: Problem, species: np.ndarray, counts: np.ndarray, f0: float, f0_var: float) -> np.ndarray:
    """Share of hours on the seen tasks plus the unseen count times the median hours of the tasks seen once (a
    lower bound like the count: the hours of single tasks are heavy-tailed, and with the mean the estimate's
    lower limit was above the truth in 17% of the half splits, with the median in none of the ones the floor
    decides). The interval is log-normal around the unseen hours U = f0 h, var U = h^2 var f0 + f0^2 var(h)/Q1."""
    if pr.total_hours <= 0:
        return np.full(3, np.nan)
    seen_hours = float(pr.task_hours[species].sum())
    singleton_hours = pr.task_hours[species[counts == 1]]
    if singleton_hours.size == 0 or f0 <= 0:
        return np.full(3, min(seen_hours / pr.total_hours, 1.0))
    typical = float(np.median(singleton_hours))
    spread = float(singleton_hours.var(ddof=1)) / singleton_hours.size if singleton_hours.size > 1 else typical**2
    unseen = f0 * typical
    low, high = log_normal_interval(seen_hours, unseen, typical**2 * f0_var + f0**2 * spread)
    return np.minimum(np.array([seen_hours + unseen, low, high]) / pr.total_hours, 1.0)
