"""The estimates' inputs: constants, the Problem (integer-indexed arrays of texts, labels, judge labels and
tasks), scopes, and the headline quantities of a per-benchmark x task count matrix."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
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
# with its model of where misses fall (1,000 to 3,600 tasks under reasonable variants). Published there: `bounds`,
# from the species estimate of the judge sample (`richness`, a lower bound) up to the imputation's ceiling.
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
    "value_mc_se": pl.Float64(),
    "ci_low_mc_se": pl.Float64(),
    "ci_high_mc_se": pl.Float64(),
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
    # lazy: prompt_id (unused) is never copied and the grouping's keys are freed as it goes (50x: 555k prompts)
    texts = prompts.lazy().group_by("benchmark", "prompt_hash").agg(pl.len().cast(pl.Int64).alias("multiplicity"))
    if sampled is None or sampled.is_empty():
        return texts.with_columns(pl.lit(False).alias("sampled")).sort("benchmark", "prompt_hash").collect()
    keys = sampled.lazy().select("benchmark", "prompt_hash").unique().with_columns(pl.lit(True).alias("sampled"))
    return (
        texts.join(keys, on=["benchmark", "prompt_hash"], how="left")
        .with_columns(pl.col("sampled").fill_null(False))
        .sort("benchmark", "prompt_hash")
        .collect()
    )


def labeler_pairs(labels: pl.DataFrame) -> pl.DataFrame:
    """(benchmark, prompt_hash, onet_soc_code, task_id, p) label rows, p = p_exercised clipped to [0, 1]. Without a
    p_exercised column every label counts as certain (p = 1), which is how labels without calibration were read
    so far. Rows repeating a text and task (prompts sharing a text have the same labels) are left in:
    build_problem keeps the largest p of each (text, task) on its integer indices, where the grouping costs a
    fraction of grouping these four string columns (50x the mirror: 2.2M rows, +0.8 GiB)."""
    p = (
        pl.col("p_exercised").cast(pl.Float64).fill_null(1.0)
        if "p_exercised" in labels.columns
        else pl.lit(1.0, pl.Float64)
    )
    return labels.select(
        pl.col("benchmark").cast(pl.Utf8),
        pl.col("prompt_hash").cast(pl.Utf8),
        pl.col("onet_soc_code").cast(pl.Utf8),
        pl.col("task_id").cast(pl.Int64),
        p.clip(0.0, 1.0).alias("p"),
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

    def fingerprint(self) -> str:
        """A hash of every input the draws read (two problems with the same fingerprint draw the same counts)."""
        digest = hashlib.blake2b(digest_size=16)
        digest.update("\x1f".join(self.benchmarks).encode())
        digest.update(self.task_keys.hash_rows().to_numpy().tobytes())
        for array in (self.text_bench, self.text_mult, self.text_sampled, self.lab_text, self.lab_task, self.lab_p,
                      self.jud_text, self.jud_task, self.jud_in_labels, self.task_occ, self.occ_group,
                      self.task_hours):
            digest.update(np.ascontiguousarray(array).tobytes())
            digest.update(str(array.shape).encode())
        digest.update(f"{self.n_groups}:{self.total_hours!r}".encode())
        return digest.hexdigest()


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
    # sorted: the draws follow row order, and a warehouse query's order is not fixed (reruns must agree)
    # one row per (text, task) with its largest p, grouped on the integer indices (labeler_pairs leaves repeats);
    # lazy: the joins' string columns are dropped as they go (50x the mirror: +0.27 GiB, eager +0.58)
    lab = (
        labels.lazy()
        .select(*keys, *TASK_KEY, "p")
        .join(text_idx.lazy().select("t", *keys), on=keys)
        .join(task_keys.lazy(), on=TASK_KEY)
        .select("t", "k", "p")
        .group_by("t", "k")
        .agg(pl.col("p").max())
        .sort("t", "k", "p")
        .collect()
    )
    jud = judge
    if "onet_soc_code" not in jud.columns:
        jud = jud.join(task_keys.select(TASK_KEY), on="task_id")
    jud = (
        jud.join(text_idx.filter(pl.col("sampled")).select("t", *keys), on=keys)
        .join(task_keys, on=TASK_KEY)
        .select("t", "k")
        .unique()
        .sort("t", "k")
    )
    jud = jud.join(lab.select("t", "k").with_columns(pl.lit(True).alias("in_labels")), on=["t", "k"],
                   how="left").sort("t", "k")
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


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique(values) of a 1-d array, by a sort: numpy 2.4's np.unique without return_inverse goes through a
    hash table, which on (text x task) keys is ~25x slower and larger (50x the mirror's 2.2M label keys: 3.5
    CPU-s against 0.14, once per ModelAssisted, 35 of them in the calibration check)."""
    ordered = np.sort(values)
    if ordered.size == 0:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


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
        if not self.scopes:  # draws kept for a later replay (DrawRecord), no headline asked for
            return np.zeros((0, len(QUANTITIES), len(self.thresholds)))
        active = np.flatnonzero(counts.any(axis=0))
        return self._headline(active, counts[:, active])

    def headline_sparse(self, where: np.ndarray, values: np.ndarray) -> np.ndarray:
        """headline() of the count matrix whose nonzero flat positions (row-major, benchmarks x tasks) are
        `where` with `values` (a DrawRecord's entries): the same active tasks and the same (B, active) sub-matrix,
        built from the ~3k entries instead of zeroing and scanning the ~0.5M-cell matrix (a replayed draw)."""
        if not self.scopes:
            return np.zeros((0, len(QUANTITIES), len(self.thresholds)))
        nonzero = values != 0
        where, values = where[nonzero].astype(np.int64), values[nonzero]
        k = self.problem.n_tasks
        rows, cols = where // k, where % k
        mask = np.zeros(k, dtype=bool)
        mask[cols] = True
        active = np.flatnonzero(mask)
        sub = np.zeros((self.problem.n_bench, active.size))
        sub[rows, np.searchsorted(active, cols)] = values
        return self._headline(active, sub)

    def _headline(self, active: np.ndarray, sub: np.ndarray) -> np.ndarray:
        """The headline of the tasks `active` (sorted: those with a count anywhere) and their counts `sub`."""
        pr = self.problem
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
        # "an occupation (group) has a task at >= t" is "its largest count is >= t": one reduceat per level for
        # every threshold (fmax skips a NaN as the comparison does)
        occ_most = np.fmax.reduceat(scoped, occ_starts, axis=1)
        group_most = np.fmax.reduceat(occ_most, group_starts, axis=1)
        for ti, t in enumerate(self.thresholds):
            covered = scoped >= t - 1e-9
            out[:, 0, ti] = covered.sum(axis=1)
            out[:, 1, ti] = (occ_most >= t - 1e-9).sum(axis=1)
            out[:, 2, ti] = (group_most >= t - 1e-9).sum(axis=1)
            hours = covered @ hours_active
            out[:, 3, ti] = hours / pr.total_hours if pr.total_hours > 0 else np.nan
        return out


def task_counts(problem: Problem, text: np.ndarray, task: np.ndarray, weight: np.ndarray) -> np.ndarray:
    k = problem.n_tasks
    flat = problem.text_bench[text] * k + task
    return np.bincount(flat, weights=weight, minlength=problem.n_bench * k).reshape(problem.n_bench, k)
