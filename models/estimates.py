"""Headline estimates that stay right when the labeler is weak: labeler, judge sample, and both combined.

The headline quantities (tasks, occupations and SOC major groups covered at >= t prompts, and the share of US
work hours on covered tasks) are all functions of one object: the number of prompts that exercise each task,
per benchmark, `T[b, j]`. Three sources of information about `T`:

- the **labeler** labels every prompt; each label carries `p_exercised`, its calibrated probability that the
  judge would say the prompt exercises the task. Labels the labeler did not emit carry nothing: the judge's
  tasks it missed are invisible to it.
- the **judge sample**: a stratified random sample of distinct prompt texts per benchmark (the sampling unit
  is `prompt_hash` within a benchmark, drawn uniformly without replacement; N_b texts, n_b drawn), each labeled
  by the careful judge. A text stands for all `m_h` prompts of its benchmark that share it.
- the **design**: N_b, n_b and the multiplicities m_h, all known.

Estimators (every one produces per-task counts `T[b, j]` first and applies the threshold to them, so the
non-linear threshold counts are computed on a whole count vector, never averaged across tasks):

- `labels_as_truth`: today's numbers, T[b, j] = prompts labeled with j. No interval.
- `labeler`: the labels' own calibrated uncertainty. Each draw keeps every label with probability p_exercised
  (vectorised: per benchmark x task, Binomial(labels, their mean p), see GroupedLabels), recomputes the counts
  and the headline. Value = mean over draws,
  interval = 2.5/97.5 percentiles. It cannot see the judge's tasks the labeler never emits (its recall), so it
  is biased wherever recall is low; it is what a benchmark without a judge sample gets.
- `design`: the judge sample alone, Horvitz-Thompson expansion within each benchmark:
  T^[b, j] = (N_b / n_b) sum_{h in s_b} m_h y[h, j], then thresholded. Interval: stratified bootstrap (texts
  resampled with replacement within each benchmark). A task seen in the sample at all gets about N_b/n_b
  prompts, so at >= 1 it counts only tasks the sample happened to see (a lower bound when many tasks are rare)
  and at >= 5 it can count a task seen once; the bootstrap carries the sampling noise, not that plug-in bias.
- `model_assisted`: the labeler on every prompt, corrected by the judge sample, as multiple imputation of the
  judge's labels on the texts the judge did not read. Each draw (1) resamples the judge sample within each
  benchmark (bootstrap), (2) recalibrates p_exercised per benchmark on it: a_b = (sum_s m y_L + k a) /
  (sum_s m p_L + k) over the labeled pairs of sampled texts (shrunk to the pooled factor a with prior weight
  k), (3) keeps the judge's own labels on sampled texts, (4) on every other text draws each label with
  probability min(1, a_b p), and (5) adds the labels the labeler misses by hot deck: each unsampled text takes
  the judge's labels outside the labeler's set of a random sampled text of its benchmark (a donor). Counts of
  the completed data set are thresholded; value = mean over draws, interval = 2.5/97.5 percentiles. For linear
  totals its expectation is that of a ratio-calibrated difference estimator (labeler prediction on all texts +
  expanded judge residual); the imputation lets the threshold act on whole plausible count vectors. A
  benchmark without judge-sampled texts enters pooled scopes through its `labeler` draws (said in `basis`).

No dagster, no I/O: frames in, frames out; every draw is a numpy bincount over label rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

THRESHOLDS: tuple[int, ...] = (1, 5)
QUANTITIES: tuple[str, ...] = (
    "tasks_covered",
    "occupations_covered",
    "major_groups_covered",
    "hours_share_covered",
)
ESTIMATORS: tuple[str, ...] = ("labels_as_truth", "labeler", "design", "model_assisted")
# At >= 1 prompt the counts are species counts: how many distinct tasks 11k prompts exercise, from the ~7% the
# judge read. The judge sample's own tasks are a floor, the imputation extrapolates the rest and its answer moves
# with its model of where misses fall (1,000 to 3,600 tasks under reasonable variants). Published there: `bounds`.
BOUNDS = "bounds"
BOUNDED_THRESHOLDS: tuple[int, ...] = (1,)
ALL_INDEX = "all"
ALL_SCOPE = "all"
DEFAULT_DRAWS = 200
CALIBRATION_PRIOR = 10.0  # k: prior weight (in units of expected labels) shrinking a_b to the pooled factor
TASK_KEY = ["onet_soc_code", "task_id"]

HEADLINE_ESTIMATE_SCHEMA: dict[str, pl.DataType] = {
    "benchmark_index": pl.Utf8(),
    "scope": pl.Utf8(),
    "quantity": pl.Utf8(),
    "threshold": pl.Int64(),
    "estimator": pl.Utf8(),
    "value": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "denominator": pl.Float64(),
    "published": pl.Boolean(),
    "n_texts": pl.Int64(),
    "n_sampled": pl.Int64(),
    "n_draws": pl.Int64(),
    "basis": pl.Utf8(),
}


# --- inputs ---------------------------------------------------------------------------------------------------


def text_frame(prompts: pl.DataFrame, sampled: pl.DataFrame | None = None) -> pl.DataFrame:
    """Distinct prompt texts per benchmark: benchmark, prompt_hash, multiplicity (prompts sharing the text),
    sampled (in the judge sample). `prompts` has benchmark, prompt_hash (prompt_id optional);
    `sampled` has benchmark, prompt_hash."""
    texts = prompts.group_by("benchmark", "prompt_hash").agg(pl.len().cast(pl.Int64).alias("multiplicity"))
    if sampled is None or sampled.is_empty():
        return texts.with_columns(pl.lit(False).alias("sampled")).sort("benchmark", "prompt_hash")
    keys = sampled.select("benchmark", "prompt_hash").unique().with_columns(pl.lit(True).alias("sampled"))
    return (
        texts.join(keys, on=["benchmark", "prompt_hash"], how="left")
        .with_columns(pl.col("sampled").fill_null(False))
        .sort("benchmark", "prompt_hash")
    )


def labeler_pairs(labels: pl.DataFrame) -> pl.DataFrame:
    """(benchmark, prompt_hash, onet_soc_code, task_id) -> p_exercised, one row per text and task (the labels of
    prompts sharing a text are the same; the largest p is kept). Without a p_exercised column every label
    counts as certain (p = 1), which is how labels without calibration were read so far."""
    p = (
        pl.col("p_exercised").cast(pl.Float64).fill_null(1.0)
        if "p_exercised" in labels.columns
        else pl.lit(1.0, pl.Float64)
    )
    return (
        labels.select(
            pl.col("benchmark").cast(pl.Utf8),
            pl.col("prompt_hash").cast(pl.Utf8),
            pl.col("onet_soc_code").cast(pl.Utf8),
            pl.col("task_id").cast(pl.Int64),
            p.clip(0.0, 1.0).alias("p"),
        )
        .group_by("benchmark", "prompt_hash", *TASK_KEY)
        .agg(pl.col("p").max())
    )


def judge_pairs(judge: pl.DataFrame) -> pl.DataFrame:
    """The judge's (benchmark, prompt_hash, onet_soc_code, task_id) pairs; `judge` is long (one task a row) or
    has a `task_ids` list column plus an `onet_soc_code`-less layout (codes then come from the task table)."""
    if "task_ids" in judge.columns and "task_id" not in judge.columns:
        judge = judge.explode("task_ids").rename({"task_ids": "task_id"}).drop_nulls("task_id")
    cols = [pl.col("benchmark").cast(pl.Utf8), pl.col("prompt_hash").cast(pl.Utf8), pl.col("task_id").cast(pl.Int64)]
    if "onet_soc_code" in judge.columns:
        cols.insert(2, pl.col("onet_soc_code").cast(pl.Utf8))
    return judge.select(cols).unique()


@dataclass
class Problem:
    """Everything an estimator needs, as integer-indexed numpy arrays.

    Benchmarks b = 0..B-1, tasks k = 0..K-1 (every O*NET task), texts t = 0..N-1.
    """

    benchmarks: list[str]
    task_keys: pl.DataFrame  # onet_soc_code, task_id in index order
    text_bench: np.ndarray  # (N,) benchmark of each text
    text_mult: np.ndarray  # (N,) prompts sharing the text
    text_sampled: np.ndarray  # (N,) bool
    lab_text: np.ndarray  # (R,) labeler rows
    lab_task: np.ndarray
    lab_p: np.ndarray
    jud_text: np.ndarray  # (J,) judge rows (sampled texts only)
    jud_task: np.ndarray
    jud_in_labels: np.ndarray  # (J,) bool: the labeler emitted this pair too
    task_occ: np.ndarray  # (K,) occupation index
    occ_group: np.ndarray  # (O,) major group index
    n_groups: int
    task_hours: np.ndarray  # (K,) annual hours on the task (0 when unknown)
    total_hours: float

    @property
    def n_bench(self) -> int:
        return len(self.benchmarks)

    @property
    def n_tasks(self) -> int:
        return self.task_keys.height

    @property
    def n_occ(self) -> int:
        return int(self.occ_group.shape[0])

    def n_texts(self, b: int) -> int:
        return int((self.text_bench == b).sum())

    def n_sampled(self, b: int) -> int:
        return int(((self.text_bench == b) & self.text_sampled).sum())


def build_problem(
    texts: pl.DataFrame,
    labels: pl.DataFrame,
    judge: pl.DataFrame,
    tasks: pl.DataFrame,
    task_hours: pl.DataFrame | None = None,
) -> Problem:
    """Index the frames. texts: `text_frame`; labels: `labeler_pairs`; judge: `judge_pairs` (rows of texts not
    marked sampled are dropped); tasks: onet_soc_code, task_id (every task the headline counts); task_hours:
    onet_soc_code, task_id, task_hours_used (annual hours; null = occupation without hours data)."""
    task_keys = (
        tasks.select(pl.col("onet_soc_code").cast(pl.Utf8), pl.col("task_id").cast(pl.Int64))
        .unique()
        .sort(TASK_KEY)
        .with_row_index("k")
    )
    occupations = task_keys.select("onet_soc_code").unique().sort("onet_soc_code").with_row_index("o")
    groups = (
        occupations.select(pl.col("onet_soc_code").str.slice(0, 2).alias("g")).unique().sort("g").with_row_index("gi")
    )
    occ_group = (
        occupations.with_columns(pl.col("onet_soc_code").str.slice(0, 2).alias("g"))
        .join(groups, on="g")
        .sort("o")["gi"]
        .to_numpy()
        .astype(np.int64)
    )
    task_occ = task_keys.join(occupations, on="onet_soc_code").sort("k")["o"].to_numpy().astype(np.int64)
    benchmarks = sorted(texts["benchmark"].unique().to_list())
    bench_index = pl.DataFrame({"benchmark": benchmarks}, schema={"benchmark": pl.Utf8}).with_row_index("b")
    text_idx = (
        texts.select(
            pl.col("benchmark").cast(pl.Utf8),
            pl.col("prompt_hash").cast(pl.Utf8),
            pl.col("multiplicity").cast(pl.Int64),
            pl.col("sampled").cast(pl.Boolean),
        )
        .sort("benchmark", "prompt_hash")
        .with_row_index("t")
        .join(bench_index, on="benchmark")
        .sort("t")
    )
    keys = ["benchmark", "prompt_hash"]
    lab = labels.join(text_idx.select("t", *keys), on=keys).join(task_keys, on=TASK_KEY)
    jud = judge
    if "onet_soc_code" not in jud.columns:
        jud = jud.join(task_keys.select(TASK_KEY), on="task_id")
    jud = (
        jud.join(text_idx.filter(pl.col("sampled")).select("t", *keys), on=keys)
        .join(task_keys, on=TASK_KEY)
        .select("t", "k")
        .unique()
    )
    jud = jud.join(lab.select("t", "k").with_columns(pl.lit(True).alias("in_labels")), on=["t", "k"], how="left")
    hours = np.zeros(task_keys.height)
    total = 0.0
    if task_hours is not None and task_hours.height:
        joined = task_keys.join(
            task_hours.select(
                pl.col("onet_soc_code").cast(pl.Utf8),
                pl.col("task_id").cast(pl.Int64),
                pl.col("task_hours_used").cast(pl.Float64),
            ),
            on=TASK_KEY,
            how="left",
        ).sort("k")
        hours = joined["task_hours_used"].fill_null(0.0).to_numpy().astype(float)
        total = float(hours.sum())
    return Problem(
        benchmarks=benchmarks,
        task_keys=task_keys.drop("k"),
        text_bench=text_idx["b"].to_numpy().astype(np.int64),
        text_mult=text_idx["multiplicity"].to_numpy().astype(float),
        text_sampled=text_idx["sampled"].to_numpy().astype(bool),
        lab_text=lab["t"].to_numpy().astype(np.int64),
        lab_task=lab["k"].to_numpy().astype(np.int64),
        lab_p=lab["p"].to_numpy().astype(float),
        jud_text=jud["t"].to_numpy().astype(np.int64),
        jud_task=jud["k"].to_numpy().astype(np.int64),
        jud_in_labels=jud["in_labels"].fill_null(False).to_numpy().astype(bool),
        task_occ=task_occ,
        occ_group=occ_group,
        n_groups=groups.height,
        task_hours=hours,
        total_hours=total,
    )


# --- scopes and the headline of a count matrix ----------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    benchmark_index: str
    scope: str
    members: tuple[int, ...]  # benchmark indices


def scopes_for(
    problem: Problem, membership: pl.DataFrame | None = None, per_benchmark: bool = True
) -> list[Scope]:
    """'all' (index 'all'), each benchmark alone (index 'all'), and 'all' of every other benchmark index in
    `membership` (benchmark_index, benchmark, included)."""
    position = {name: i for i, name in enumerate(problem.benchmarks)}
    out = [Scope(ALL_INDEX, ALL_SCOPE, tuple(range(problem.n_bench)))]
    if per_benchmark:
        out += [Scope(ALL_INDEX, name, (i,)) for i, name in enumerate(problem.benchmarks)]
    if membership is not None and membership.height:
        frame = membership
        if "included" in frame.columns:
            frame = frame.filter(pl.col("included").fill_null(False))
        for index_name in sorted(set(membership["benchmark_index"].to_list())):
            if index_name == ALL_INDEX:
                continue
            names = frame.filter(pl.col("benchmark_index") == index_name)["benchmark"].to_list()
            members = tuple(sorted(position[n] for n in names if n in position))
            out.append(Scope(str(index_name), ALL_SCOPE, members))
    return out


class Aggregator:
    """Turns count matrices (benchmarks x tasks) into the headline of every scope, vectorised."""

    def __init__(self, problem: Problem, scopes: Sequence[Scope], thresholds: Sequence[int]) -> None:
        self.problem = problem
        self.scopes = list(scopes)
        self.thresholds = tuple(thresholds)
        member = np.zeros((len(self.scopes), problem.n_bench), dtype=np.float64)
        for i, scope in enumerate(self.scopes):
            member[i, list(scope.members)] = 1.0
        self.member = member
        sizes = member.sum(axis=1)
        self.single_rows = np.flatnonzero(sizes == 1)
        self.single_bench = member[self.single_rows].argmax(axis=1) if self.single_rows.size else np.array([], int)
        self.multi_rows = np.flatnonzero(sizes != 1)
        k = problem.n_tasks
        o = problem.n_occ
        self.denominators = {
            "tasks_covered": float(k),
            "occupations_covered": float(o),
            "major_groups_covered": float(problem.n_groups),
            "hours_share_covered": 1.0,
        }

    def headline(self, counts: np.ndarray) -> np.ndarray:
        """counts (B, K) -> (scopes, quantities, thresholds). Only tasks with a count anywhere are touched."""
        pr = self.problem
        active = np.flatnonzero(counts.any(axis=0))
        sub = counts[:, active]
        scoped = np.empty((len(self.scopes), active.size))
        scoped[self.single_rows] = sub[self.single_bench]
        for row in self.multi_rows:  # pooled scopes: a sum of member rows (no BLAS call for a 0/1 matrix)
            members = self.scopes[row].members
            scoped[row] = sub[list(members)].sum(axis=0) if members else 0.0
        n_scopes = len(self.scopes)
        out = np.zeros((n_scopes, len(QUANTITIES), len(self.thresholds)))
        if active.size == 0:
            return out
        # tasks are indexed in (occupation code, task id) order and occupations in code order, so the tasks of
        # an occupation and the occupations of a major group are contiguous runs: "any covered" is a reduceat
        occ_of = pr.task_occ[active]
        occ_starts = np.flatnonzero(np.r_[True, occ_of[1:] != occ_of[:-1]])
        group_of = pr.occ_group[occ_of[occ_starts]]
        group_starts = np.flatnonzero(np.r_[True, group_of[1:] != group_of[:-1]])
        hours_active = pr.task_hours[active]
        for ti, t in enumerate(self.thresholds):
            covered = scoped >= t - 1e-9
            out[:, 0, ti] = covered.sum(axis=1)
            occ = np.logical_or.reduceat(covered, occ_starts, axis=1)
            out[:, 1, ti] = occ.sum(axis=1)
            out[:, 2, ti] = np.logical_or.reduceat(occ, group_starts, axis=1).sum(axis=1)
            hours = covered @ hours_active
            out[:, 3, ti] = hours / pr.total_hours if pr.total_hours > 0 else np.nan
        return out


def _counts(problem: Problem, text: np.ndarray, task: np.ndarray, weight: np.ndarray) -> np.ndarray:
    k = problem.n_tasks
    flat = problem.text_bench[text] * k + task
    return np.bincount(flat, weights=weight, minlength=problem.n_bench * k).reshape(problem.n_bench, k)


# --- the estimators -------------------------------------------------------------------------------------------


def labels_as_truth_counts(problem: Problem) -> np.ndarray:
    return _counts(problem, problem.lab_text, problem.lab_task, problem.text_mult[problem.lab_text])


class GroupedLabels:
    """Label rows grouped by (benchmark, task) for fast draws: a group of n single-prompt texts with expected
    labels sum(p) draws Binomial(n, mean p) (same mean as the sum of its Bernoulli draws, variance a little
    larger: conservative), texts shared by several prompts are drawn row by row. A draw costs O(groups),
    not O(label rows), so 10x the prompts costs about the same."""

    def __init__(self, problem: Problem, rows: np.ndarray) -> None:
        self.problem = problem
        k = problem.n_tasks
        text, task, p = problem.lab_text[rows], problem.lab_task[rows], problem.lab_p[rows]
        mult = problem.text_mult[text]
        single = mult == 1
        flat = problem.text_bench[text[single]] * k + task[single]
        groups, inverse = np.unique(flat, return_inverse=True)
        self.g_flat = groups
        self.g_bench = groups // k
        self.g_n = np.bincount(inverse, minlength=groups.size).astype(np.int64)
        self.g_p = np.bincount(inverse, weights=p[single], minlength=groups.size) / np.maximum(self.g_n, 1)
        self.r_text, self.r_task, self.r_p = text[~single], task[~single], p[~single]
        self.r_mult = mult[~single]

    def draw(self, rng: np.random.Generator, factors: np.ndarray | None = None) -> np.ndarray:
        pr = self.problem
        g_p, r_p = self.g_p, self.r_p
        if factors is not None:
            g_p = np.minimum(1.0, g_p * factors[self.g_bench])
            r_p = np.minimum(1.0, r_p * factors[pr.text_bench[self.r_text]])
        flat = np.bincount(self.g_flat, weights=rng.binomial(self.g_n, g_p), minlength=pr.n_bench * pr.n_tasks)
        counts = flat.reshape(pr.n_bench, pr.n_tasks)
        if self.r_p.size:
            keep = rng.random(self.r_p.size) < r_p
            counts += _counts(pr, self.r_text, self.r_task, self.r_mult * keep)
        return counts


def labeler_draw(problem: Problem, rng: np.random.Generator, grouped: GroupedLabels | None = None) -> np.ndarray:
    """One draw of the label set from the calibrated p_exercised (each label kept with its probability)."""
    if grouped is None:
        grouped = GroupedLabels(problem, np.arange(problem.lab_p.shape[0]))
    return grouped.draw(rng)


def _bootstrap_text_weights(problem: Problem, rng: np.random.Generator | None) -> np.ndarray:
    """Times each text is drawn in a stratified bootstrap of the judge sample (1 for every sampled text
    without `rng`; 0 for unsampled texts)."""
    weights = problem.text_sampled.astype(np.float64)
    if rng is None:
        return weights
    sampled = np.flatnonzero(problem.text_sampled)
    benches = problem.text_bench[sampled]
    out = np.zeros_like(weights)
    for b in np.unique(benches):
        members = sampled[benches == b]
        out[members] = rng.multinomial(members.size, np.full(members.size, 1.0 / members.size))
    return out


def design_counts(problem: Problem, rng: np.random.Generator | None = None) -> np.ndarray:
    """Expansion estimator of T[b, j] from the judge sample (one stratified bootstrap replicate with `rng`)."""
    n_texts = np.bincount(problem.text_bench, minlength=problem.n_bench).astype(float)
    n_sampled = np.bincount(problem.text_bench, weights=problem.text_sampled, minlength=problem.n_bench)
    expansion = np.divide(n_texts, n_sampled, out=np.zeros(np.shape(n_texts), dtype=float), where=n_sampled > 0)
    boot = _bootstrap_text_weights(problem, rng)
    text = problem.jud_text
    weight = expansion[problem.text_bench[text]] * boot[text] * problem.text_mult[text]
    return _counts(problem, text, problem.jud_task, weight)


def calibration_factors(
    problem: Problem, boot: np.ndarray, prior: float = CALIBRATION_PRIOR, sampled_rows: np.ndarray | None = None
) -> np.ndarray:
    """a_b: judge-confirmed labels / expected labels on the (bootstrap-weighted) sampled texts' labeled pairs,
    shrunk to the pooled factor with `prior` expected labels of weight. `sampled_rows`: the label rows of
    sampled texts (computed when not given)."""
    if sampled_rows is None:
        sampled_rows = np.flatnonzero(problem.text_sampled[problem.lab_text])
    text = problem.lab_text[sampled_rows]
    w = boot[text] * problem.text_mult[text]
    bench = problem.text_bench[text]
    expected = np.bincount(bench, weights=w * problem.lab_p[sampled_rows], minlength=problem.n_bench)
    jw = boot[problem.jud_text] * problem.text_mult[problem.jud_text] * problem.jud_in_labels
    confirmed = np.bincount(problem.text_bench[problem.jud_text], weights=jw, minlength=problem.n_bench)
    pooled = confirmed.sum() / expected.sum() if expected.sum() > 0 else 1.0
    return (confirmed + prior * pooled) / (expected + prior)


UNIFORM_SHARE = 0.01  # share of the missed-label distribution uniform over every task (no task has zero chance)
MIX_STEP = 0.1  # grid step of the mixture weights (a simplex of three weights)


def _simplex_grid(parts: int, step: float = MIX_STEP) -> np.ndarray:
    """Every weight vector of `parts` non-negative weights on a grid of `step` that sums to 1."""
    n = int(round(1 / step))
    rows: list[tuple[int, ...]] = [()]
    for _ in range(parts - 1):
        rows = [r + (i,) for r in rows for i in range(n + 1 - sum(r))]
    return np.array([(*r, n - sum(r)) for r in rows], dtype=float) / n


class _Sparse:
    """A discrete distribution kept as its non-zero entries and their cumulative mass (the distributions here
    have a few hundred non-zero entries of 18,796): `sample` is one searchsorted, far cheaper than
    rng.choice(p=) over every task."""

    def __init__(self, dist: np.ndarray) -> None:
        self.support = np.flatnonzero(dist)
        self.cdf = np.cumsum(dist[self.support])
        self.total = float(self.cdf[-1]) if self.cdf.size else 0.0

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        pos = np.searchsorted(self.cdf, rng.random(size) * self.total, side="right")
        return self.support[np.minimum(pos, self.support.size - 1)]


def _loo_share(texts: np.ndarray, values: np.ndarray, n_values: int, total_loo: np.ndarray) -> np.ndarray:
    """Each row's value's share among the other texts' rows (leave its own text out)."""
    counts = np.bincount(values, minlength=n_values).astype(float)
    _, inverse = np.unique(texts.astype(np.int64) * n_values + values, return_inverse=True)
    own = np.bincount(inverse)[inverse]
    return np.divide(counts[values] - own, total_loo, out=np.zeros(values.size), where=total_loo > 0)


class _WeightedBlocks:
    """Discrete distributions over occupations, one per owner (a text, or a benchmark), as sorted CSR rows:
    owner, occupation, weight. `draw(owners)` picks one occupation per entry by its owner's weights."""

    def __init__(self, owner: np.ndarray, occ: np.ndarray, weight: np.ndarray, n_owners: int, n_occ: int) -> None:
        keys, inverse = np.unique(owner.astype(np.int64) * n_occ + occ, return_inverse=True)
        self.n_occ = n_occ
        self.keys = keys
        self.owner = keys // n_occ
        self.occ = keys % n_occ
        self.weight = np.bincount(inverse, weights=weight, minlength=keys.size)
        self.cum = np.cumsum(self.weight)
        self.first = np.searchsorted(self.owner, np.arange(n_owners))
        self.last = np.searchsorted(self.owner, np.arange(n_owners), side="right")
        self.total = np.bincount(self.owner, weights=self.weight, minlength=n_owners)

    def has(self, owners: np.ndarray) -> np.ndarray:
        return self.last[owners] > self.first[owners]

    def share(self, owners: np.ndarray, occ: np.ndarray) -> np.ndarray:
        """Each owner's weight share of `occ` (0 where the owner has none)."""
        keys = owners.astype(np.int64) * self.n_occ + occ
        pos = np.minimum(np.searchsorted(self.keys, keys), max(self.keys.size - 1, 0))
        hit = self.keys[pos] == keys if self.keys.size else np.zeros(keys.shape, dtype=bool)
        weight = np.where(hit, self.weight[pos] if self.keys.size else 0.0, 0.0)
        total = self.total[owners]
        return np.divide(weight, total, out=np.zeros(weight.shape), where=total > 0)

    def draw(self, rng: np.random.Generator, owners: np.ndarray) -> np.ndarray:
        """One occupation per owner (owners without a distribution: -1)."""
        first, last = self.first[owners], self.last[owners]
        has = last > first
        out = np.full(owners.size, -1, dtype=np.int64)
        if not has.any():
            return out
        lo = np.where(first > 0, self.cum[np.maximum(first - 1, 0)], 0.0)
        lo = np.where(first > 0, lo, 0.0)
        value = lo[has] + rng.random(int(has.sum())) * self.total[owners[has]]
        pos = np.clip(np.searchsorted(self.cum, value, side="right"), first[has], last[has] - 1)
        out[has] = self.occ[pos]
        return out


class ModelAssisted:
    """Multiple imputation of the judge's labels on unsampled texts (see the module docstring).

    Missed labels (the judge's tasks outside the labeler's set) of an unsampled text: their number is that of
    a random donor (a sampled text of the same benchmark, bootstrap-weighted); each one's task is drawn from a
    mixture of four parts: u uniform over every task; and, with weights (alpha, beta, gamma) chosen on the
    sample, (alpha) the benchmark's sampled missed tasks, (beta) the labeler's label mass in the benchmark
    (sum of m p per task), (gamma) a task of one of *this text's* labeled occupations (picked by its labels'
    p, the task uniform within it; a text without labels uses its benchmark's occupations). The weights
    maximise the leave-one-text-out likelihood of the sample's missed tasks, so the data decide how often a
    miss is a task seen before in the benchmark and how often a new task of the occupation the labeler saw.
    The occupation part matters for the threshold counts: the judge's misses are mostly tasks no other
    sampled text has, and only a part that spreads over whole occupations reproduces that diversity (the
    first version, with alpha and beta alone, undercounted tasks at >= 1 by a third and overcounted them at
    >= 5 by a quarter in the split-sample check).
    """

    def __init__(self, problem: Problem, prior: float = CALIBRATION_PRIOR) -> None:
        self.problem = problem
        self.prior = prior
        pr = problem
        self.has_sample = np.bincount(pr.text_bench, weights=pr.text_sampled, minlength=pr.n_bench) > 0
        # labeled pairs of texts that are not in the sample (imputed); judge pairs of sampled texts (kept)
        self.unsampled_rows = ~pr.text_sampled[pr.lab_text]
        self.unsampled_labels = GroupedLabels(pr, np.flatnonzero(self.unsampled_rows))
        self.sampled_rows = np.flatnonzero(~self.unsampled_rows)
        self.judge_known = _counts(pr, pr.jud_text, pr.jud_task, pr.text_mult[pr.jud_text])
        missed = ~pr.jud_in_labels
        self.missed_text = pr.jud_text[missed]
        self.missed_task = pr.jud_task[missed]
        self.missed_per_text = np.bincount(self.missed_text, minlength=pr.text_bench.shape[0]).astype(np.int64)
        lab_mass = _counts(pr, pr.lab_text, pr.lab_task, pr.text_mult[pr.lab_text] * pr.lab_p)
        totals = lab_mass.sum(axis=1, keepdims=True)
        self.q_labeler = np.divide(lab_mass, totals, out=np.zeros(np.shape(lab_mass), dtype=float), where=totals > 0)
        self.lab_sparse = [_Sparse(row) for row in self.q_labeler]
        # the occupations of each text's labels, and of each benchmark's (for texts without labels)
        n_occ = pr.n_occ
        label_occ = pr.task_occ[pr.lab_task]
        p = np.maximum(pr.lab_p, 1e-6)
        self.text_occ = _WeightedBlocks(pr.lab_text, label_occ, p, pr.text_bench.shape[0], n_occ)
        self.bench_occ = _WeightedBlocks(pr.text_bench[pr.lab_text], label_occ, p * pr.text_mult[pr.lab_text],
                                         pr.n_bench, n_occ)
        self.occ_size = np.bincount(pr.task_occ, minlength=n_occ)
        self.occ_start = np.concatenate([[0], np.cumsum(self.occ_size)[:-1]])
        self.tasks_by_occ = np.argsort(pr.task_occ, kind="stable")
        task_group = pr.occ_group[pr.task_occ]
        self.group_size = np.bincount(task_group, minlength=pr.n_groups)
        self.group_start = np.concatenate([[0], np.cumsum(self.group_size)[:-1]])
        self.tasks_by_group = np.argsort(task_group, kind="stable")
        self.donors: dict[int, np.ndarray] = {}
        self.recipients: dict[int, np.ndarray] = {}
        for b in np.flatnonzero(self.has_sample):
            in_b = pr.text_bench == b
            self.donors[int(b)] = np.flatnonzero(in_b & pr.text_sampled)
            self.recipients[int(b)] = np.flatnonzero(in_b & ~pr.text_sampled)
        self.weights = self._choose_weights()
        self.label_keys = np.unique(pr.lab_text.astype(np.int64) * pr.n_tasks + pr.lab_task)
        self.missed_rows = {b: np.flatnonzero(pr.text_bench[self.missed_text] == b) for b in self.donors}

    @property
    def alpha(self) -> float:
        return float(self.weights[0])

    def _labeled(self, texts: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        keys = texts.astype(np.int64) * self.problem.n_tasks + tasks
        pos = np.searchsorted(self.label_keys, keys)
        pos = np.minimum(pos, max(self.label_keys.size - 1, 0))
        return self.label_keys[pos] == keys if self.label_keys.size else np.zeros(keys.shape, dtype=bool)

    def _occupation_share(self, texts: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        """The occupation part's probability of each task for its text: its occupation's share of the text's
        labels (else of its benchmark's), spread uniformly over the occupation's tasks."""
        pr = self.problem
        occ = pr.task_occ[tasks]
        own = self.text_occ.has(texts)
        share = np.where(own, self.text_occ.share(texts, occ), self.bench_occ.share(pr.text_bench[texts], occ))
        none = ~own & ~self.bench_occ.has(pr.text_bench[texts])
        return np.where(none, 1.0 / pr.n_tasks, share / self.occ_size[occ])

    def _choose_weights(self) -> np.ndarray:
        """Weights of the four parts (the benchmark's missed tasks, the labeler's mass, the text's labeled
        occupations, the benchmark's missed occupations) maximising the leave-one-text-out log likelihood of
        the sample's missed tasks, q = u / K + (1 - u) sum_i w_i part_i(task); a part with no mass for a text
        gives its weight to the others."""
        pr = self.problem
        grid = _simplex_grid(5)
        if self.missed_text.size == 0:
            return np.array([0.0, 0.5, 0.5, 0.0, 0.0])
        k = pr.n_tasks
        loglik = np.zeros(grid.shape[0])
        for b in self.donors:
            rows = pr.text_bench[self.missed_text] == b
            if not rows.any():
                continue
            texts, tasks = self.missed_text[rows], self.missed_task[rows]
            occ = pr.task_occ[tasks]
            group = pr.occ_group[occ]
            own_total = np.bincount(texts, minlength=texts.max() + 1)[texts]
            total_loo = tasks.size - own_total
            parts = np.stack([
                _loo_share(texts, tasks, k, total_loo),
                self.q_labeler[b][tasks],
                self._occupation_share(texts, tasks),
                _loo_share(texts, occ, pr.n_occ, total_loo) / self.occ_size[occ],
                _loo_share(texts, group, pr.n_groups, total_loo) / self.group_size[group],
            ])  # (5, n)
            present = np.stack([total_loo > 0, np.full(tasks.size, self.q_labeler[b].sum() > 0),
                                np.ones(tasks.size, dtype=bool), total_loo > 0, total_loo > 0]).astype(float)
            w = grid[:, :, None] * present[None]  # (G, 5, n)
            norm = w.sum(axis=1)
            mix = np.divide((w * parts[None]).sum(axis=1), norm, out=np.full(norm.shape, 1.0 / k), where=norm > 0)
            loglik += np.log(UNIFORM_SHARE / k + (1 - UNIFORM_SHARE) * mix).sum(axis=1)
        return grid[int(np.argmax(loglik))]

    def _draw_tasks(self, rng: np.random.Generator, b: int, owner: np.ndarray, empirical: _Sparse,
                    missed_occ: _Sparse, missed_group: _Sparse) -> np.ndarray:
        """One task per missed label of `owner` texts of benchmark b, from the mixture (a part without mass in
        this benchmark gives its weight to the others)."""
        pr = self.problem
        weights = self.weights.copy()
        lab = self.lab_sparse[b]
        if empirical.total <= 0:
            weights[[0, 3, 4]] = 0.0
        if lab.total <= 0:
            weights[1] = 0.0
        weights = weights / weights.sum() if weights.sum() > 0 else np.array([0.0, 0.0, 1.0, 0.0, 0.0])
        part = rng.choice(6, size=owner.size, p=np.concatenate([[UNIFORM_SHARE], (1 - UNIFORM_SHARE) * weights]))
        tasks = rng.integers(0, pr.n_tasks, size=owner.size)  # part 0: uniform
        for code, dist in ((1, empirical), (2, lab)):
            chosen = part == code
            if chosen.any():
                tasks[chosen] = dist.sample(rng, int(chosen.sum()))
        occ = np.full(owner.size, -1, dtype=np.int64)
        chosen = part == 3
        if chosen.any():
            texts = owner[chosen]
            picked = self.text_occ.draw(rng, texts)
            fallback = picked < 0
            if fallback.any():
                picked[fallback] = self.bench_occ.draw(rng, pr.text_bench[texts[fallback]])
            occ[chosen] = picked
        chosen = part == 4
        if chosen.any():
            occ[chosen] = missed_occ.sample(rng, int(chosen.sum()))
        chosen = part == 5  # a task uniform within a major group of the benchmark's missed labels
        if chosen.any():
            group = missed_group.sample(rng, int(chosen.sum()))
            offset = (rng.random(group.size) * self.group_size[group]).astype(np.int64)
            tasks[chosen] = self.tasks_by_group[self.group_start[group] + offset]
        spread = occ >= 0  # a task uniform within the drawn occupation
        if spread.any():
            o = occ[spread]
            offset = (rng.random(o.size) * self.occ_size[o]).astype(np.int64)
            tasks[spread] = self.tasks_by_occ[self.occ_start[o] + offset]
        return tasks

    def draw(self, rng: np.random.Generator, bootstrap: bool = True) -> np.ndarray:
        pr = self.problem
        boot = _bootstrap_text_weights(pr, rng if bootstrap else None)
        factors = calibration_factors(pr, boot, self.prior, self.sampled_rows)
        counts = self.unsampled_labels.draw(rng, np.where(self.has_sample, factors, 1.0))
        counts[self.has_sample] += self.judge_known[self.has_sample]
        k = pr.n_tasks
        for b, donors in self.donors.items():
            recipients = self.recipients[b]
            if recipients.size == 0:
                continue
            probs = boot[donors] / boot[donors].sum()
            choice = rng.choice(donors.size, size=recipients.size, p=probs)
            n_missed = self.missed_per_text[donors][choice]
            if int(n_missed.sum()) == 0:
                continue
            rows = self.missed_rows[b]
            boot_rows = boot[self.missed_text[rows]]
            seen = _Sparse(np.bincount(self.missed_task[rows], weights=boot_rows, minlength=k))
            occ_mass = np.bincount(pr.task_occ[self.missed_task[rows]], weights=boot_rows, minlength=pr.n_occ)
            missed_occ = _Sparse(occ_mass)
            missed_group = _Sparse(np.bincount(pr.occ_group, weights=occ_mass, minlength=pr.n_groups))
            owner = np.repeat(recipients, n_missed)
            weights = pr.text_mult[owner]
            tasks = self._draw_tasks(rng, b, owner, seen, missed_occ, missed_group)
            # a missed label is by definition outside the recipient's own label set: redraw those that are not
            for _ in range(4):
                clash = self._labeled(owner, tasks)
                if not clash.any():
                    break
                tasks[clash] = self._draw_tasks(rng, b, owner[clash], seen, missed_occ, missed_group)
            else:
                weights = weights * ~self._labeled(owner, tasks)
            counts[b] += np.bincount(tasks, weights=weights, minlength=k)
        return counts


# --- putting it together ---------------------------------------------------------------------------------------


@dataclass
class EstimateDraws:
    """Point values and draws of every estimator: arrays (scopes, quantities, thresholds) and
    (draws, scopes, quantities, thresholds)."""

    point: dict[str, np.ndarray]
    draws: dict[str, np.ndarray]
    count_draws: dict[str, list[np.ndarray]]  # pooled ('all') per-task count vectors per draw, for the MI models


def run_estimators(
    problem: Problem,
    scopes: Sequence[Scope],
    *,
    thresholds: Sequence[int] = THRESHOLDS,
    n_draws: int = DEFAULT_DRAWS,
    seed: int = 16,
    keep_counts: int = 0,
    estimators: Sequence[str] = ESTIMATORS,
) -> EstimateDraws:
    """Every estimator's point value and `n_draws` draws for every scope. `keep_counts` keeps that many
    pooled per-task count vectors of the labeler and model-assisted draws (for refitting regressions)."""
    agg = Aggregator(problem, scopes, thresholds)
    rng = np.random.default_rng(seed)
    point: dict[str, np.ndarray] = {}
    draws: dict[str, np.ndarray] = {}
    kept: dict[str, list[np.ndarray]] = {"labeler": [], "model_assisted": []}
    if "labels_as_truth" in estimators:
        point["labels_as_truth"] = agg.headline(labels_as_truth_counts(problem))
    assisted = ModelAssisted(problem)
    every_label = GroupedLabels(problem, np.arange(problem.lab_p.shape[0]))
    # benchmarks without judge-sampled texts enter the model-assisted draws through their labeler draws
    fill = ~assisted.has_sample
    for name in ("labeler", "design", "model_assisted"):
        if name not in estimators:
            continue
        stack = np.empty((n_draws, len(agg.scopes), len(QUANTITIES), len(agg.thresholds)))
        for d in range(n_draws):
            if name == "labeler":
                counts = labeler_draw(problem, rng, every_label)
            elif name == "design":
                counts = design_counts(problem, rng)
            else:
                counts = assisted.draw(rng)
                if fill.any():
                    counts[fill] = labeler_draw(problem, rng, every_label)[fill]
            stack[d] = agg.headline(counts)
            if name in kept and d < keep_counts:
                kept[name].append(counts.sum(axis=0))
        draws[name] = stack
        point[name] = design_counts_point(problem, agg) if name == "design" else stack.mean(axis=0)
    return EstimateDraws(point, draws, kept)


def design_counts_point(problem: Problem, agg: Aggregator) -> np.ndarray:
    return agg.headline(design_counts(problem))


def interval(estimator: str, point: float, draws: np.ndarray) -> tuple[float, float]:
    """95% interval from the draws. Draw-based estimators (labeler, model_assisted) report the mean of their
    draws, so the 2.5/97.5 percentiles are used as they are. The design estimator reports the plug-in of the
    whole sample, and a bootstrap replicate holds only ~63% distinct texts, so its distinct-task counts run
    low: its percentile interval is recentred on the plug-in (point + q - median of the replicates), keeping
    the bootstrap's spread without its loss of distinct texts (the plug-in's own bias from unseen tasks stays,
    see the module docstring)."""
    low, high = (float(v) for v in np.quantile(draws, [0.025, 0.975]))
    if estimator == "design":
        shift = point - float(np.median(draws))
        low, high = max(0.0, low + shift), high + shift
    return low, high


def _basis(estimator: str, scope: Scope, problem: Problem, n_draws: int) -> str:
    sampled = [problem.n_sampled(b) for b in scope.members]
    n_with = sum(1 for s in sampled if s > 0)
    n_members = len(scope.members)
    if estimator == "labels_as_truth":
        return "every label counted as certain (the published labels as they are); no interval"
    if estimator == "labeler":
        return (
            f"labeler alone: {n_draws} draws keeping each label with its p_exercised; percentile interval; "
            "blind to the judge's tasks the labeler never emits"
        )
    if estimator == "design":
        missing = "" if n_with == n_members else f"; {n_members - n_with} member benchmark(s) without a sample count 0"
        return (
            f"judge sample alone: {sum(sampled)} sampled texts weighted N_b/n_b within benchmark; "
            f"stratified bootstrap ({n_draws} replicates){missing}"
        )
    fill = "" if n_with == n_members else (
        f"; {n_members - n_with} of {n_members} benchmarks have no judge sample and enter through the labeler's "
        "calibrated draws"
    )
    return (
        f"labeler on every prompt, recalibrated and completed by the judge's labels of {sum(sampled)} sampled "
        f"texts ({n_draws} imputations with a stratified bootstrap of the sample){fill}"
    )


def published_estimator(scope: Scope, problem: Problem, threshold: int = 5) -> str:
    """model_assisted where a member benchmark has judge-sampled texts (`bounds` at the species-count
    thresholds, BOUNDED_THRESHOLDS), labeler otherwise."""
    if not any(problem.n_sampled(b) > 0 for b in scope.members):
        return "labeler"
    return BOUNDS if threshold in BOUNDED_THRESHOLDS else "model_assisted"


def bounds_interval(floor: float, design_high: float | None, assisted_high: float | None
                    ) -> tuple[float, float, float]:
    """(value, ci_low, ci_high) of `bounds`: `floor` (value and ci_low), the higher of the model-assisted and
    design 97.5th percentiles the ceiling."""
    highs = [h for h in (design_high, assisted_high) if h is not None]
    return floor, floor, max([floor, *highs])


BOUNDS_BASIS = (
    "species count: at least what the judge sample itself saw (every one of those is exercised) or, if higher, "
    "the lower 95% bound at >= 5 prompts (value and ci_low); at most the model-assisted extrapolation's 97.5th "
    "percentile (ci_high); the data cannot place it between"
)


def estimates_frame(
    problem: Problem, scopes: Sequence[Scope], result: EstimateDraws, thresholds: Sequence[int] = THRESHOLDS
) -> pl.DataFrame:
    """The `headline_estimates` table (HEADLINE_ESTIMATE_SCHEMA)."""
    agg_denominators = Aggregator(problem, scopes[:1], thresholds).denominators
    rows: list[dict[str, object]] = []
    for si, scope in enumerate(scopes):
        n_texts = sum(problem.n_texts(b) for b in scope.members)
        n_sampled = sum(problem.n_sampled(b) for b in scope.members)
        for estimator, point in result.point.items():
            if estimator in ("design", "model_assisted") and n_sampled == 0:
                continue
            stack = result.draws.get(estimator)
            n_draws = 0 if stack is None else stack.shape[0]
            for qi, quantity in enumerate(QUANTITIES):
                for ti, t in enumerate(thresholds):
                    low = high = None
                    if stack is not None:
                        values = stack[:, si, qi, ti]
                        values = values[np.isfinite(values)]
                        if values.size:
                            low, high = interval(estimator, float(point[si, qi, ti]), values)
                            high = min(high, agg_denominators[quantity])
                    value = float(point[si, qi, ti])
                    rows.append(
                        {
                            "benchmark_index": scope.benchmark_index,
                            "scope": scope.scope,
                            "quantity": quantity,
                            "threshold": int(t),
                            "estimator": estimator,
                            "value": value if math.isfinite(value) else None,
                            "ci_low": low,
                            "ci_high": high,
                            "denominator": agg_denominators[quantity],
                            "published": estimator == published_estimator(scope, problem, int(t)),
                            "n_texts": n_texts,
                            "n_sampled": n_sampled,
                            "n_draws": n_draws,
                            "basis": _basis(estimator, scope, problem, n_draws),
                        }
                    )
    return with_bounds(pl.DataFrame(rows, schema=HEADLINE_ESTIMATE_SCHEMA))


def with_bounds(frame: pl.DataFrame) -> pl.DataFrame:
    """Add the `bounds` rows (BOUNDED_THRESHOLDS, scopes with a judge sample) built from the design and
    model-assisted rows of the same scope and quantity: covered at >= 1 holds everything covered at >= 5, so
    the floor is the larger of the sample's own count and the model-assisted lower bound at the next threshold."""
    keys = ["benchmark_index", "scope", "quantity"]
    design = frame.filter((pl.col("estimator") == "design") & pl.col("threshold").is_in(BOUNDED_THRESHOLDS))
    if design.is_empty():
        return frame
    assisted = frame.filter(pl.col("estimator") == "model_assisted")
    higher = assisted.filter(~pl.col("threshold").is_in(BOUNDED_THRESHOLDS)).group_by(keys).agg(
        pl.col("ci_low").max().alias("_next_low"))
    joined = (
        design.join(assisted.select(*keys, "threshold", pl.col("ci_high").alias("_ma")), on=[*keys, "threshold"],
                    how="left")
        .join(higher, on=keys, how="left")
        .with_columns(pl.max_horizontal("value", pl.col("_next_low").fill_null(0.0)).alias("_floor"))
    )
    bounds = [bounds_interval(f, h, m) for f, h, m in zip(joined["_floor"], joined["ci_high"], joined["_ma"],
                                                            strict=True)]
    rows = joined.with_columns(
        pl.lit(BOUNDS).alias("estimator"),
        pl.Series("value", [b[0] for b in bounds], pl.Float64),
        pl.Series("ci_low", [b[1] for b in bounds], pl.Float64),
        pl.Series("ci_high", [b[2] for b in bounds], pl.Float64),
        pl.lit(True).alias("published"),
        pl.lit(BOUNDS_BASIS).alias("basis"),
    ).select(frame.columns)
    return pl.concat([frame, rows])


def headline_estimates(
    texts: pl.DataFrame,
    labels: pl.DataFrame,
    judge: pl.DataFrame,
    tasks: pl.DataFrame,
    task_hours: pl.DataFrame | None = None,
    membership: pl.DataFrame | None = None,
    *,
    thresholds: Sequence[int] = THRESHOLDS,
    n_draws: int = DEFAULT_DRAWS,
    seed: int = 16,
    per_benchmark: bool = True,
) -> pl.DataFrame:
    """One call from frames to the `headline_estimates` table (see the module docstring)."""
    problem = build_problem(texts, labels, judge, tasks, task_hours)
    scopes = scopes_for(problem, membership, per_benchmark)
    result = run_estimators(problem, scopes, thresholds=thresholds, n_draws=n_draws, seed=seed)
    return estimates_frame(problem, scopes, result, thresholds)


# --- the judge sample: design, stratified draws, reliability -------------------------------------------------


def sample_design(texts: pl.DataFrame) -> pl.DataFrame:
    """Per benchmark: distinct_texts (N_b), prompts, n_sampled (n_b), sampling_fraction, weight (N_b/n_b)."""
    return (
        texts.group_by("benchmark")
        .agg(
            pl.len().cast(pl.Int64).alias("distinct_texts"),
            pl.col("multiplicity").sum().cast(pl.Int64).alias("prompts"),
            pl.col("sampled").sum().cast(pl.Int64).alias("n_sampled"),
        )
        .with_columns(
            (pl.col("n_sampled") / pl.col("distinct_texts")).alias("sampling_fraction"),
            pl.when(pl.col("n_sampled") > 0)
            .then(pl.col("distinct_texts") / pl.col("n_sampled"))
            .alias("weight"),
        )
        .sort("benchmark")
    )


def draw_judge_sample(
    texts: pl.DataFrame, fraction: float, minimum: int, seed: int = 16, exclude: pl.DataFrame | None = None
) -> pl.DataFrame:
    """A stratified simple random sample of distinct texts: per benchmark max(minimum, ceil(fraction N_b))
    texts (all of them when fewer), drawn without replacement. Deterministic for a seed: each text's rank is a
    hash of (seed, benchmark, prompt_hash), so adding prompts to one benchmark leaves the other draws alone and
    a text keeps its rank. Returns benchmark, prompt_hash, draw_rank."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"judge sample fraction must be in [0, 1], got {fraction}")
    frame = texts.select("benchmark", "prompt_hash").unique()
    if exclude is not None and exclude.height:
        frame = frame.join(exclude.select("benchmark", "prompt_hash"), on=["benchmark", "prompt_hash"], how="anti")
    keyed = frame.with_columns(
        (pl.lit(str(seed)) + pl.lit("|") + pl.col("benchmark") + pl.lit("|") + pl.col("prompt_hash"))
        .hash(seed=0)
        .alias("_key")
    )
    ranked = keyed.with_columns(pl.col("_key").rank("ordinal").over("benchmark").alias("draw_rank"))
    sizes = ranked.group_by("benchmark").agg(pl.len().alias("_n"))
    return (
        ranked.join(sizes, on="benchmark")
        .filter(
            pl.col("draw_rank")
            <= pl.max_horizontal(pl.lit(minimum), (pl.col("_n") * fraction).ceil().cast(pl.Int64))
        )
        .select("benchmark", "prompt_hash", pl.col("draw_rank").cast(pl.Int64))
        .sort("benchmark", "draw_rank")
    )


RELIABILITY_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8(),
    "bin": pl.Int64(),
    "p_low": pl.Float64(),
    "p_high": pl.Float64(),
    "n": pl.Int64(),
    "mean_predicted": pl.Float64(),
    "observed": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "ece": pl.Float64(),
    "recall": pl.Float64(),
    "n_judge_pairs": pl.Int64(),
}


def reliability_table(problem: Problem, n_bins: int = 10) -> pl.DataFrame:
    """Predicted vs observed: the labeler's labels on judge-sampled texts, binned by p_exercised; observed =
    share the judge also gives. Per bin a Wilson 95% interval; per scope ('all' and each benchmark with a
    sample) the expected calibration error (sum of n_bin / n x |predicted - observed|) and the labeler's recall
    of the judge's pairs (share of them it emitted at all: calibration says nothing about the missed ones)."""
    from models.stats import wilson_ci

    pr = problem
    on_sample = pr.text_sampled[pr.lab_text]
    judged = set(zip(pr.jud_text.tolist(), pr.jud_task.tolist(), strict=True))
    rows_t, rows_k, rows_p = pr.lab_text[on_sample], pr.lab_task[on_sample], pr.lab_p[on_sample]
    observed = np.array([(t, k) in judged for t, k in zip(rows_t.tolist(), rows_k.tolist(), strict=True)], dtype=bool)
    bench = pr.text_bench[rows_t]
    out: list[dict[str, object]] = []
    scopes: list[tuple[str, np.ndarray, np.ndarray]] = [
        ("all", np.ones(rows_t.shape[0], dtype=bool), np.ones(pr.jud_text.shape[0], dtype=bool))
    ]
    for b, name in enumerate(pr.benchmarks):
        if pr.n_sampled(b):
            scopes.append((name, bench == b, pr.text_bench[pr.jud_text] == b))
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    for name, mask, jmask in scopes:
        p, y = rows_p[mask], observed[mask]
        bins = np.clip(np.digitize(p, edges[1:-1], right=True), 0, n_bins - 1)
        n_total = p.shape[0]
        recall = float(pr.jud_in_labels[jmask].mean()) if jmask.any() else None
        ece = 0.0
        scoped: list[dict[str, object]] = []
        for i in range(n_bins):
            in_bin = bins == i
            n = int(in_bin.sum())
            if n == 0:
                continue
            pred, obs = float(p[in_bin].mean()), float(y[in_bin].mean())
            ece += n / n_total * abs(pred - obs)
            interval = wilson_ci(int(y[in_bin].sum()), n)
            low, high = interval.ci_low, interval.ci_high
            scoped.append(
                {
                    "benchmark": name, "bin": i, "p_low": float(edges[i]), "p_high": float(edges[i + 1]), "n": n,
                    "mean_predicted": pred, "observed": obs, "ci_low": low, "ci_high": high,
                }
            )
        for row in scoped:
            row["ece"] = ece
            row["recall"] = recall
            row["n_judge_pairs"] = int(jmask.sum())
        out += scoped
    return pl.DataFrame(out, schema=RELIABILITY_SCHEMA)


# --- regressions with labeler error (Rubin's rules) -----------------------------------------------------------


def rubin_combine(estimates: np.ndarray, variances: np.ndarray) -> dict[str, float]:
    """Rubin's rules over M completed-data fits of one coefficient: mean, total variance
    T = W + (1 + 1/M) B, Barnard-Rubin-free large-sample df (Rubin 1987), 95% t interval."""
    from scipy import stats

    estimates = np.asarray(estimates, dtype=float)
    variances = np.asarray(variances, dtype=float)
    ok = np.isfinite(estimates) & np.isfinite(variances)
    estimates, variances = estimates[ok], variances[ok]
    m = estimates.shape[0]
    if m == 0:
        return {"coef": math.nan, "se": math.nan, "ci_low": math.nan, "ci_high": math.nan, "m": 0,
                "within_var": math.nan, "between_var": math.nan, "df": math.nan, "fraction_missing_info": math.nan}
    qbar = float(estimates.mean())
    w = float(variances.mean())
    b = float(estimates.var(ddof=1)) if m > 1 else 0.0
    total = w + (1 + 1 / m) * b
    if b > 0 and m > 1:
        r = (1 + 1 / m) * b / w if w > 0 else math.inf
        df = (m - 1) * (1 + 1 / r) ** 2 if math.isfinite(r) else float(m - 1)
    else:
        df = math.inf
    q = float(stats.t.ppf(0.975, df)) if math.isfinite(df) else 1.959963984540054
    se = math.sqrt(total)
    return {
        "coef": qbar, "se": se, "ci_low": qbar - q * se, "ci_high": qbar + q * se, "m": m,
        "within_var": w, "between_var": b, "df": df,
        "fraction_missing_info": ((1 + 1 / m) * b / total) if total > 0 else 0.0,
    }


# --- split-sample check ----------------------------------------------------------------------------------------


def split_sample_problem(problem: Problem, rng: np.random.Generator, fraction: float = 0.5) -> tuple[Problem, np.ndarray]:
    """The judge-labeled sub-population as a population with known truth: only sampled texts are kept, a
    random `fraction` of each benchmark's (at least one) stays 'sampled', the rest is held out. Returns the
    problem and the held-out truth counts (B, K) of the kept texts (judge labels of every kept text)."""
    keep = np.flatnonzero(problem.text_sampled)
    remap = np.full(problem.text_bench.shape[0], -1)
    remap[keep] = np.arange(keep.size)
    bench = problem.text_bench[keep]
    new_sampled = np.zeros(keep.size, dtype=bool)
    for b in np.unique(bench):
        members = np.flatnonzero(bench == b)
        n = max(1, int(round(fraction * members.size)))
        new_sampled[rng.choice(members, size=min(n, members.size), replace=False)] = True
    lab_keep = remap[problem.lab_text] >= 0
    jud_t = remap[problem.jud_text]
    truth_problem = Problem(
        benchmarks=problem.benchmarks, task_keys=problem.task_keys, text_bench=bench,
        text_mult=np.ones(keep.size), text_sampled=np.ones(keep.size, dtype=bool),
        lab_text=remap[problem.lab_text][lab_keep], lab_task=problem.lab_task[lab_keep],
        lab_p=problem.lab_p[lab_keep], jud_text=jud_t, jud_task=problem.jud_task,
        jud_in_labels=problem.jud_in_labels, task_occ=problem.task_occ, occ_group=problem.occ_group,
        n_groups=problem.n_groups, task_hours=problem.task_hours, total_hours=problem.total_hours,
    )
    truth = _counts(truth_problem, jud_t, problem.jud_task, np.ones(jud_t.shape[0]))
    in_part = new_sampled[jud_t]
    split = Problem(
        **{**truth_problem.__dict__, "text_sampled": new_sampled, "jud_text": jud_t[in_part],
           "jud_task": problem.jud_task[in_part], "jud_in_labels": problem.jud_in_labels[in_part]}
    )
    return split, truth


def check_against_truth(
    problem: Problem, truth_counts: np.ndarray, scopes: Sequence[Scope], *, n_draws: int, seed: int,
    thresholds: Sequence[int] = THRESHOLDS,
) -> pl.DataFrame:
    """Every estimator on `problem` next to the truth: scope, quantity, threshold, estimator, value, ci_low,
    ci_high, truth, covered (truth inside the interval), error (value - truth)."""
    agg = Aggregator(problem, scopes, thresholds)
    truth = agg.headline(truth_counts)
    result = run_estimators(problem, scopes, thresholds=thresholds, n_draws=n_draws, seed=seed)
    rows = []
    for name, point in result.point.items():
        stack = result.draws.get(name)
        for si, scope in enumerate(scopes):
            for qi, quantity in enumerate(QUANTITIES):
                for ti, t in enumerate(thresholds):
                    low = high = None
                    if stack is not None:
                        low, high = interval(name, float(point[si, qi, ti]), stack[:, si, qi, ti])
                    value, true = float(point[si, qi, ti]), float(truth[si, qi, ti])
                    rows.append({
                        "benchmark_index": scope.benchmark_index, "scope": scope.scope, "quantity": quantity,
                        "threshold": int(t), "estimator": name, "value": value, "ci_low": low, "ci_high": high,
                        "truth": true,
                        "covered": None if low is None else bool(low - 1e-9 <= true <= high + 1e-9),
                        "error": value - true,
                    })
    checks = pl.DataFrame(rows)
    at = checks.filter(pl.col("threshold").is_in(BOUNDED_THRESHOLDS))
    design = at.filter(pl.col("estimator") == "design")
    if design.is_empty() or "model_assisted" not in result.point:
        return checks
    keys = ["benchmark_index", "scope", "quantity", "threshold"]
    joined = design.join(at.filter(pl.col("estimator") == "model_assisted").select(*keys, pl.col("ci_high").alias("_ma")),
                         on=keys)
    bounds = [bounds_interval(v, h, m) for v, h, m in zip(joined["value"], joined["ci_high"], joined["_ma"],
                                                            strict=True)]  # floor: the sample's own count
    low = pl.Series([b[1] for b in bounds], dtype=pl.Float64)
    high = pl.Series([b[2] for b in bounds], dtype=pl.Float64)
    extra = joined.with_columns(
        pl.lit(BOUNDS).alias("estimator"), low.alias("ci_low"), high.alias("ci_high"),
        ((low - 1e-9 <= pl.col("truth")) & (pl.col("truth") <= high + 1e-9)).alias("covered"),
    ).select(checks.columns)
    return pl.concat([checks, extra])


def summarize_checks(checks: pl.DataFrame) -> pl.DataFrame:
    """Coverage rate of the intervals, mean absolute and mean signed error per estimator x quantity x threshold."""
    return (
        checks.group_by("scope", "quantity", "threshold", "estimator")
        .agg(
            pl.len().alias("n_replications"),
            pl.col("covered").cast(pl.Float64).mean().alias("coverage"),
            pl.col("error").abs().mean().alias("mean_abs_error"),
            pl.col("error").mean().alias("mean_error"),
            pl.col("truth").mean().alias("mean_truth"),
        )
        .sort("scope", "quantity", "threshold", "estimator")
    )


def as_mapping(frame: pl.DataFrame) -> Mapping[str, object]:  # pragma: no cover - convenience for notebooks
    return {c: frame[c].to_list() for c in frame.columns}


# --- simulation (tests, bench, the note's coverage numbers) ---------------------------------------------------


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
) -> Simulation:
    """A population with a known truth and a labeler of known error.

    Each benchmark draws its prompts' tasks from its own pool of `pool_size` tasks (Zipf popularity), as one
    benchmark's prompts share occupations. Per work text the labeler emits 1 + Poisson(emitted_mean) tasks with
    p ~ U(0.05, 0.95); each is truly exercised with probability overconfidence x p (a labeler that is
    overconfident by that factor); the judge (truth) also holds Poisson(missed_mean) pool tasks the labeler
    missed. Some texts repeat (multiplicity 2-3). A stratified random sample of max(minimum, fraction N_b)
    texts per benchmark is judged; the last `unsampled_benchmarks` benchmarks get no sample. With
    `blind_spot_share` > 0 that share of the missed tasks comes from a second pool the labeler never emits
    (a blind spot: the stress case for the model-assisted estimator's picture of where misses fall).
    """
    n_tasks = n_occupations * tasks_per_occupation
    task_keys = pl.DataFrame(
        {
            "onet_soc_code": [f"{10 + (o % 12) * 2:02d}-{1000 + o:04d}.00" for o in range(n_occupations)
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
    text_bench, text_mult, text_sampled = [], [], []
    lab_text, lab_task, lab_p, jud_text, jud_task, jud_in = [], [], [], [], [], []
    truth_rows: list[tuple[int, int, float]] = []
    t = 0
    n_bench = len(texts_per_benchmark)
    for b, n_texts in enumerate(texts_per_benchmark):
        pool = rng.choice(n_tasks, size=pool_size, replace=False)
        blind_pool = rng.choice(np.setdiff1d(np.arange(n_tasks), pool), size=pool_size, replace=False)
        popularity = 1.0 / np.arange(1, pool_size + 1) ** 1.1
        popularity /= popularity.sum()
        n_sample = 0 if b >= n_bench - unsampled_benchmarks else min(
            n_texts, max(sample_minimum, int(math.ceil(sample_fraction * n_texts)))
        )
        sampled = np.zeros(n_texts, dtype=bool)
        sampled[rng.choice(n_texts, size=n_sample, replace=False)] = True
        for i in range(n_texts):
            mult = 1.0 if rng.random() > 0.05 else float(rng.integers(2, 4))
            text_bench.append(b)
            text_mult.append(mult)
            text_sampled.append(bool(sampled[i]))
            if rng.random() < not_work_share:
                t += 1
                continue
            n_emit = 1 + rng.poisson(emitted_mean)
            emitted = rng.choice(pool, size=min(n_emit, pool_size), replace=False, p=popularity)
            ps = rng.uniform(0.05, 0.95, emitted.size)
            true_emitted = rng.random(emitted.size) < overconfidence * ps
            rest = ~np.isin(pool, emitted)
            n_miss = min(int(rng.poisson(missed_mean)), int(rest.sum()))
            rest_p = popularity[rest] / popularity[rest].sum()
            missed = rng.choice(pool[rest], size=n_miss, replace=False, p=rest_p) if n_miss else np.array([], int)
            if blind_spot_share > 0 and missed.size:
                blind = rng.random(missed.size) < blind_spot_share
                missed = np.unique(np.where(blind, rng.choice(blind_pool, size=missed.size, p=popularity), missed))
            lab_text += [t] * emitted.size
            lab_task += emitted.tolist()
            lab_p += ps.tolist()
            true_tasks = list(emitted[true_emitted]) + list(missed)
            truth_rows += [(b, int(k), mult) for k in true_tasks]
            if sampled[i]:
                jud_text += [t] * len(true_tasks)
                jud_task += [int(k) for k in true_tasks]
                jud_in += [True] * int(true_emitted.sum()) + [False] * len(missed)
            t += 1
    truth = np.zeros((n_bench, n_tasks))
    for b, k, mult in truth_rows:
        truth[b, k] += mult
    problem = Problem(
        benchmarks=[f"bench{b}" for b in range(n_bench)], task_keys=task_keys,
        text_bench=np.array(text_bench), text_mult=np.array(text_mult), text_sampled=np.array(text_sampled),
        lab_text=np.array(lab_text, dtype=np.int64), lab_task=np.array(lab_task, dtype=np.int64),
        lab_p=np.array(lab_p), jud_text=np.array(jud_text, dtype=np.int64),
        jud_task=np.array(jud_task, dtype=np.int64), jud_in_labels=np.array(jud_in, dtype=bool),
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


# Tables of this module the export folder carries when the warehouse has them (assets/exports.py).
EXPORT_TABLES: tuple[str, ...] = (
    "headline_estimates",
    "estimate_design",
    "labeler_reliability",
    "estimate_split_check",
    "coverage_regressions_mi",
)


# --- the published estimate beside today's headline (coverage_headline, summary.md, coverage map) --------------

PUBLISHED_COLUMNS: dict[str, pl.DataType] = {
    "published_estimator": pl.Utf8(),
    "published_value": pl.Float64(),
    "published_ci_low": pl.Float64(),
    "published_ci_high": pl.Float64(),
}
_METRIC_OF: dict[str, tuple[str, bool]] = {  # coverage_headline metric -> (quantity, complement)
    "tasks_covered": ("tasks_covered", False),
    "occupations_covered": ("occupations_covered", False),
    "major_groups_uncovered": ("major_groups_covered", True),
    "hours_share_covered": ("hours_share_covered", False),
    "hours_share_uncovered": ("hours_share_covered", True),
}


def with_published(headline: pl.DataFrame, estimates: pl.DataFrame | None) -> pl.DataFrame:
    """coverage_headline plus the published estimate of each row in the row's own unit (a share of tasks /
    occupations / hours; a count of uncovered major groups): published_estimator, published_value,
    published_ci_low, published_ci_high (null where headline_estimates has no such row)."""
    empty = headline.with_columns([pl.lit(None, t).alias(c) for c, t in PUBLISHED_COLUMNS.items()])
    if estimates is None or estimates.is_empty() or headline.is_empty():
        return empty
    published = estimates.filter(pl.col("published"))
    keys = ["scope", "threshold"] + (
        ["benchmark_index"] if "benchmark_index" in headline.columns and "benchmark_index" in published.columns else []
    )
    if "benchmark_index" not in keys:
        published = published.filter(pl.col("benchmark_index") == ALL_INDEX)
    mapping = pl.DataFrame(
        {"metric": list(_METRIC_OF), "quantity": [q for q, _ in _METRIC_OF.values()],
         "_complement": [c for _, c in _METRIC_OF.values()]}
    )
    joined = (
        headline.with_row_index("_row")
        .join(mapping, on="metric", how="left")
        .join(
            published.select(*keys, "quantity", pl.col("estimator").alias("published_estimator"),
                             pl.col("value").alias("_v"), pl.col("ci_low").alias("_lo"), pl.col("ci_high").alias("_hi"),
                             pl.col("denominator").alias("_den")),
            on=[*keys, "quantity"],
            how="left",
        )
    )
    counts = pl.col("quantity").is_in(["tasks_covered", "occupations_covered"])
    groups = pl.col("quantity") == "major_groups_covered"

    def scaled(column: str) -> pl.Expr:
        share = pl.col(column) / pl.col("denominator")
        return (
            pl.when(counts).then(share)
            .when(groups).then(pl.col("denominator") - pl.col(column))  # groups uncovered, a count
            .when(pl.col("_complement")).then(1.0 - pl.col(column))
            .otherwise(pl.col(column))
        )

    swap = pl.col("_complement").fill_null(False)
    out = joined.with_columns(
        scaled("_v").alias("published_value"),
        pl.when(swap).then(scaled("_hi")).otherwise(scaled("_lo")).alias("published_ci_low"),
        pl.when(swap).then(scaled("_lo")).otherwise(scaled("_hi")).alias("published_ci_high"),
    )
    return out.sort("_row").select(*headline.columns, *PUBLISHED_COLUMNS).cast(PUBLISHED_COLUMNS)  # type: ignore[arg-type]


def published_sentences(estimates: pl.DataFrame, benchmark_index: str = ALL_INDEX) -> list[str]:
    """Plain sentences of the published pooled headline of one index, with intervals, and what counting every
    label as true gives instead (for summary.md and the coverage map). Empty when nothing is published."""
    rows = estimates.filter(pl.col("scope") == ALL_SCOPE)
    if "benchmark_index" in rows.columns:  # a per-index summary may pass the index's rows without the column
        rows = rows.filter(pl.col("benchmark_index") == benchmark_index)
    published = rows.filter(pl.col("published"))
    if published.is_empty():
        return []

    def fmt(quantity: str, value: float | None) -> str:
        if value is None or not math.isfinite(value):
            return "n/a"
        return f"{100 * value:.1f}%" if quantity == "hours_share_covered" else f"{value:,.0f}"

    def part(frame: pl.DataFrame, quantity: str, threshold: int, with_ci: bool) -> str | None:
        hit = frame.filter((pl.col("quantity") == quantity) & (pl.col("threshold") == threshold))
        if hit.is_empty():
            return None
        r = hit.row(0, named=True)
        if r["estimator"] == BOUNDS:
            span = f"at least {fmt(quantity, r['ci_low'])}, up to about {fmt(quantity, r['ci_high'])}"
            if quantity == "hours_share_covered":
                return f"{span} of US work hours"
            noun = {"tasks_covered": "tasks", "occupations_covered": "occupations",
                    "major_groups_covered": "SOC major groups"}[quantity]
            return f"{span} of {r['denominator']:,.0f} {noun}"
        ci = f" (95% CI {fmt(quantity, r['ci_low'])}\u2013{fmt(quantity, r['ci_high'])})" if with_ci and r[
            "ci_low"] is not None else ""
        if quantity == "hours_share_covered":
            return f"{fmt(quantity, r['value'])} of US work hours{ci}"
        noun = {"tasks_covered": "tasks", "occupations_covered": "occupations",
                "major_groups_covered": "SOC major groups"}[quantity]
        return f"{fmt(quantity, r['value'])}{ci} of {r['denominator']:,.0f} {noun}"

    estimator = "model_assisted" if (published["estimator"] == "model_assisted").any() else published["estimator"][0]
    n_sampled = int(published["n_sampled"][0])
    what = (
        f"model-assisted: the labeler's labels on every prompt, corrected by the judge's labels of a stratified "
        f"random sample of {n_sampled:,} prompt texts"
        if estimator == "model_assisted"
        else "the labeler alone, with its calibrated uncertainty (no judge-sampled prompts)"
    )
    out = []
    thresholds = sorted(set(published["threshold"].to_list()), reverse=True)
    pieces = []
    for t in thresholds:
        parts = [p for q in QUANTITIES if (p := part(published, q, t, True))]
        pieces.append(f"at >= {t} prompt{'s' if t != 1 else ''}: " + ", ".join(parts))
    out.append(f"Best-supported estimate ({what}) " + "; ".join(pieces) + ".")
    if (published["estimator"] == BOUNDS).any():
        out.append("At >= 1 prompt the count of distinct tasks exercised by any prompt cannot be pinned down "
                   "from a sample of a few hundred texts: the floor is what the judge itself saw, the ceiling "
                   "the imputation's extrapolation to every unread prompt.")
    truth = rows.filter(pl.col("estimator") == "labels_as_truth")
    if truth.height:
        pieces = []
        for t in thresholds:
            parts = [p for q in ("tasks_covered", "occupations_covered", "hours_share_covered")
                     if (p := part(truth, q, t, False))]
            pieces.append(f"at >= {t}: " + ", ".join(parts))
        out.append("Counting every label as true instead gives " + "; ".join(pieces) + ".")
    return out
