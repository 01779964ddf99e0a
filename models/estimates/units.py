"""Per-unit estimates from the headline's own model-assisted draws (issue 25, items 3 and 7).

`UnitDraws` is handed every count matrix the headline's model-assisted estimator draws (`run_estimators(...,
unit_draws=...)`, the same seed and the same draws, no extra random numbers) and keeps, per benchmark index,
each task's prompt count per draw (float32, draws x indices x tasks: ~30 MB for two indices), and per benchmark
the label mass by occupation per draw. Everything after is array reductions:

- a task is covered at >= t in a draw when its index count is >= t; an occupation when its most-exercised task
  is (its `prompts` are that task's count, so covered <=> prompts >= t, the headline's rule); a major group when
  its most-exercised occupation is. `p_covered` = share of draws covered, so the sum of `p_covered` over the
  units of an index and threshold is the mean of the draws' covered count: the model-assisted row of
  `headline_estimates`, and the hours-weighted sum over tasks its hours share (checked by the asset check).
- uncovered hours of an occupation (major group) per draw: the annual hours on its tasks below the threshold;
  mean and 2.5-97.5 percentiles across draws (the gap finder's ranking).
- Monte Carlo standard errors (`*_mc_se`, models/estimates/mc_error.py): of `p_covered` the binomial one over the
  draws (independent given the data: each is an imputation on its own bootstrap replicate, nothing carried from
  one draw to the next), of `prompts_mean` sd / sqrt(draws), of `prompts_low` / `prompts_high` the exact
  bootstrap (Maritz-Jarrett) error of the order statistic, with weights shared by every unit.
- a benchmark's occupation (major group) share per draw: the unit's share of the benchmark's prompt x task
  labels in that draw (the index rules' assignment).

At >= 1 prompt the model-assisted draws extrapolate the judge's misses to every unread text; the published
headline there is the `bounds` row, so the per-unit sums at >= 1 match the model-assisted row (whose 97.5th
percentile the bounds' ceiling is at least), not the published species floor.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence

import numpy as np
import polars as pl

from models.estimates.bench_shares import (  # noqa: F401  (SHARE_MIN, SHARE_TABLES: re-exported)
    SHARE_MIN,
    SHARE_TABLES,
    group_codes,
    level_shares,
    occupation_codes,
    share_frames,
    share_parts,
)
from models.estimates.mc_error import draws_mc_se, share_mc_se
from models.estimates.problem import ALL_SCOPE, Problem, Scope

UNIT_LEVELS: tuple[str, ...] = ("task", "occupation", "major_group")
UNIT_TABLES: dict[str, str] = {
    "task": "task_estimates",
    "occupation": "occupation_estimates",
    "major_group": "major_group_estimates",
}


def _starts(owner: np.ndarray) -> np.ndarray:
    """First position of each run of a sorted owner array (tasks of an occupation are contiguous)."""
    return np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])


class UnitDraws:
    """Collects the model-assisted count matrices of the headline's draws (see the module docstring)."""

    def __init__(self, problem: Problem, scopes: Sequence[Scope], n_draws: int, with_texts: bool = False,
                 with_shares: bool = True) -> None:
        self.problem = problem
        self.with_texts = with_texts
        self.index_scopes = [s for s in scopes if s.scope == ALL_SCOPE]
        member = np.zeros((len(self.index_scopes), problem.n_bench), dtype=bool)
        for i, scope in enumerate(self.index_scopes):
            member[i, list(scope.members)] = True
        self.member = member
        self.index_counts = np.zeros((n_draws, len(self.index_scopes), problem.n_tasks), dtype=np.float32)
        self.occ_starts = _starts(problem.task_occ)  # task_occ is sorted: occupations are runs of tasks
        self.group_starts = _starts(problem.occ_group)
        # the benchmarks' label mass per occupation (benchmark_share_estimates; not collected without
        # `with_shares`: the headline reads the shares kept by benchmark, models/estimates/bench_shares.py)
        self.bench_occ = np.zeros((n_draws if with_shares else 0, problem.n_bench, problem.n_occ), dtype=np.float32)
        self.with_shares = with_shares
        self.n = 0
        self.text_estimates: object | None = None  # a TextOccupationDraws fed the same draws (per-text table)
        self.text_subset: np.ndarray | None = None  # its texts (None: every one; models/estimates/text_sums.py)

    def without_texts(self) -> UnitDraws:
        """A shallow copy without the per-text sums: all `unit_estimates` reads (~30 MB pickled at 1x against
        ~48: the headline step hands it to a worker process)."""
        slim = copy.copy(self)
        slim.text_estimates, slim.text_subset = None, None
        return slim

    def add(self, counts: np.ndarray, assisted: object | None = None) -> None:
        """One draw's (benchmarks x tasks) counts; `assisted`: the ModelAssisted that drew them (its last
        draw's bootstrap, calibration and mixture feed the per-text estimates)."""
        d = self.n
        for i in range(self.member.shape[0]):
            rows = np.flatnonzero(self.member[i])
            self.index_counts[d, i] = counts[rows].sum(axis=0) if rows.size else 0.0
        if self.with_shares:
            self.bench_occ[d] = np.add.reduceat(counts, self.occ_starts, axis=1)
        if self.text_estimates is not None and assisted is not None:
            self.text_estimates.add(assisted)  # type: ignore[attr-defined]
        self.n += 1

    def add_sparse(self, where: np.ndarray, values: np.ndarray, assisted: object | None = None) -> None:
        """add() of the count matrix whose nonzero flat positions (row-major, benchmarks x tasks) are `where`
        with `values` (a replayed DrawRecord draw): each index's per-task sums accumulate its member rows in row
        order, as the dense sum does (the same values). Without the benchmark shares only (`with_shares` False:
        their reduceat wants the dense matrix, `add`)."""
        assert not self.with_shares, "the benchmark shares need the dense matrix: add()"
        d = self.n
        where = where.astype(np.int64)
        k = self.problem.n_tasks
        rows, cols = where // k, where % k
        for i in range(self.member.shape[0]):
            mine = self.member[i][rows]
            self.index_counts[d, i] = np.bincount(cols[mine], weights=values[mine].astype(np.float64),
                                                  minlength=k)
        if self.text_estimates is not None and assisted is not None:
            self.text_estimates.add(assisted)  # type: ignore[attr-defined]
        self.n += 1

    # --- per-draw unit arrays ----------------------------------------------------------------------------------

    def task_prompts(self) -> np.ndarray:
        """(draws, indices, tasks) prompts per task."""
        return self.index_counts[: self.n]

    def occupation_prompts(self) -> np.ndarray:
        """(draws, indices, occupations) prompts on each occupation's most-exercised task."""
        return np.maximum.reduceat(self.task_prompts(), self.occ_starts, axis=2)

    def group_prompts(self) -> np.ndarray:
        return np.maximum.reduceat(self.occupation_prompts(), self.group_starts, axis=2)

    def uncovered_hours(self, threshold: int, level: str = "occupation") -> np.ndarray:
        """(draws, indices, units) annual hours on the unit's tasks that are below `threshold` in the draw."""
        pr = self.problem
        # in float64: float32 sums of billions of hours were off by up to ~700 h per occupation (2e-7), so
        # uncovered_hours_mean differed from the gap tables' sum of hours x (1 - p_covered) and a group no draw
        # covers sat 64 h outside its own zero-width interval (an audit of the release, 2026-12-07)
        below = (self.task_prompts() < threshold - 1e-9) * pr.task_hours.astype(np.float64)
        by_occ = np.add.reduceat(below, self.occ_starts, axis=2)
        return by_occ if level == "occupation" else np.add.reduceat(by_occ, self.group_starts, axis=2)

    def bench_shares(self, level: str = "occupation") -> np.ndarray:
        """(draws, benchmarks, units) the unit's share of the benchmark's prompt x task labels per draw (NaN in a
        draw where the benchmark has no label)."""
        return level_shares(self.bench_occ[: self.n], self.group_starts, level)


# --- the tables ------------------------------------------------------------------------------------------------


def _judged_texts(problem: Problem, member: np.ndarray, unit_of_task: np.ndarray, n_units: int) -> np.ndarray:
    """(indices, units) judged texts of the index whose judge labels exercise the unit."""
    pr = problem
    out = np.zeros((member.shape[0], n_units))
    if pr.jud_text.size == 0:
        return out
    pairs = np.unique(np.stack([pr.jud_text.astype(np.int64), unit_of_task[pr.jud_task]]), axis=1)
    bench = pr.text_bench[pairs[0]]
    for i in range(member.shape[0]):
        rows = member[i][bench]
        out[i] = np.bincount(pairs[1][rows], minlength=n_units)
    return out


def unit_estimates(
    draws: UnitDraws, labels_counts: np.ndarray, thresholds: Sequence[int]
) -> dict[str, pl.DataFrame]:
    """The three per-unit tables (UNIT_TABLES) from the collected draws; `labels_counts`: (benchmarks, tasks)
    prompts per task with every published label counted (labels_as_truth_counts of the published labels)."""
    pr = draws.problem
    occ_codes = occupation_codes(pr)
    grp_codes = group_codes(pr)
    index_names = [s.benchmark_index for s in draws.index_scopes]
    counted_tasks = (draws.member.astype(np.float64) @ labels_counts)  # (indices, tasks)
    counted = {
        "task": counted_tasks,
        "occupation": np.maximum.reduceat(counted_tasks, draws.occ_starts, axis=1),
    }
    counted["major_group"] = np.maximum.reduceat(counted["occupation"], draws.group_starts, axis=1)
    prompts = {"task": draws.task_prompts(), "occupation": draws.occupation_prompts(),
               "major_group": draws.group_prompts()}
    unit_of_task = {"task": np.arange(pr.n_tasks), "occupation": pr.task_occ,
                    "major_group": pr.occ_group[pr.task_occ]}
    n_units = {"task": pr.n_tasks, "occupation": pr.n_occ, "major_group": pr.n_groups}
    keys = {
        "task": pr.task_keys.select("onet_soc_code", "task_id"),
        "occupation": pl.DataFrame({"onet_soc_code": occ_codes}),
        "major_group": pl.DataFrame({"major_group_code": grp_codes}),
    }
    hours = {"task": pr.task_hours, "occupation": np.add.reduceat(pr.task_hours, draws.occ_starts)}
    hours["major_group"] = np.add.reduceat(hours["occupation"], draws.group_starts)
    out: dict[str, pl.DataFrame] = {}
    for level in UNIT_LEVELS:
        values = prompts[level]  # (draws, indices, units)
        n_draws = values.shape[0]
        mean = values.mean(axis=0, dtype=np.float64)
        low, high = np.quantile(values, [0.025, 0.975], axis=0)
        mean_se, (low_se, high_se) = draws_mc_se(values)
        judged = _judged_texts(pr, draws.member, unit_of_task[level], n_units[level])
        frames = []
        for t in thresholds:
            covered = (values >= t - 1e-9).mean(axis=0, dtype=np.float64)
            extra: dict[str, np.ndarray] = {}
            if level != "task":
                lost = draws.uncovered_hours(t, level)
                lo_h, hi_h = np.quantile(lost, [0.025, 0.975], axis=0)
                extra = {"hours": np.broadcast_to(hours[level], mean.shape),
                         "uncovered_hours_mean": lost.mean(axis=0, dtype=np.float64),
                         "uncovered_hours_low": lo_h, "uncovered_hours_high": hi_h}
            else:
                extra = {"hours": np.broadcast_to(hours[level], mean.shape)}
            for i, name in enumerate(index_names):
                frame = keys[level].with_columns(
                    pl.lit(name).alias("benchmark_index"),
                    pl.lit(int(t), pl.Int64).alias("threshold"),
                    pl.Series("p_covered", covered[i], pl.Float64),
                    pl.Series("prompts_mean", mean[i], pl.Float64),
                    pl.Series("prompts_low", low[i], pl.Float64),
                    pl.Series("prompts_high", high[i], pl.Float64),
                    pl.Series("labels_count", counted[level][i], pl.Float64),
                    pl.Series("judged_texts", judged[i], pl.Float64).cast(pl.Int64),
                    *[pl.Series(c, np.asarray(v[i], dtype=np.float64), pl.Float64) for c, v in extra.items()],
                    pl.Series("p_covered_mc_se", share_mc_se(covered[i], n_draws), pl.Float64),
                    pl.Series("prompts_mean_mc_se", mean_se[i], pl.Float64),
                    pl.Series("prompts_low_mc_se", low_se[i], pl.Float64),
                    pl.Series("prompts_high_mc_se", high_se[i], pl.Float64),
                )
                frames.append(frame)
        table = pl.concat(frames)
        lead = ["benchmark_index", *keys[level].columns, "threshold"]
        out[UNIT_TABLES[level]] = table.select(*lead, *[c for c in table.columns if c not in lead])
    return out


def timed_unit_estimates(draws: UnitDraws, labels_counts: np.ndarray, thresholds: Sequence[int]
                         ) -> tuple[dict[str, pl.DataFrame], float]:
    """`unit_estimates` and the CPU-s it took where it ran (a worker process: the step reports them)."""
    started = time.process_time()
    return unit_estimates(draws, labels_counts, thresholds), time.process_time() - started


HOURS_COLUMNS: tuple[str, ...] = ("hours", "uncovered_hours_mean", "uncovered_hours_low", "uncovered_hours_high")


def with_unknown_hours(units: dict[str, pl.DataFrame], task_hours: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The task and occupation tables with their hours null for an occupation without hours data (`task_hours`,
    the warehouse table: no `occupation_annual_hours`, e.g. an occupation OEWS does not survey): the draws count
    its tasks at 0 hours, which would read as "no one works there". A major group keeps the sum of its known
    occupations."""
    known = task_hours.group_by("onet_soc_code").agg(
        pl.col("occupation_annual_hours").is_not_null().any().alias("_known"))
    out = dict(units)
    for level in ("task", "occupation"):
        name = UNIT_TABLES[level]
        table = units[name]
        columns = [c for c in HOURS_COLUMNS if c in table.columns]
        out[name] = (table.join(known, on="onet_soc_code", how="left", maintain_order="left")
                     .with_columns(pl.when(pl.col("_known").fill_null(False)).then(pl.col(c)).alias(c) for c in columns)
                     .drop("_known"))
    return out


def benchmark_share_estimates(draws: UnitDraws) -> dict[str, pl.DataFrame]:
    """Each benchmark's estimated occupation and major-group shares of its prompt x task labels: benchmark,
    the unit's code, share_mean, share_low, share_high (2.5-97.5 across draws), rank (1 = largest mean share;
    null for a zero share, so a benchmark whose draws hold no label at all has no rank 1). Draws in which a
    benchmark has no label are left out of its shares, so its mean shares sum to 1.
    Occupations sparse (mean share >= SHARE_MIN); all 22 major groups. Per benchmark
    (models/estimates/bench_shares.py: kept by benchmark with its draws)."""
    if not draws.with_shares:
        raise ValueError("benchmark_share_estimates: these draws did not collect the benchmarks' label mass")
    return share_frames(draws.problem, share_parts(draws.bench_occ[: draws.n], draws.group_starts))


def unit_sum_check(units: dict[str, pl.DataFrame], headline: pl.DataFrame, total_hours: float,
                   tolerance: float = 1e-6) -> pl.DataFrame:
    """Per index and threshold: the sums of p_covered (tasks, occupations, major groups) and the hours-weighted
    task sum beside the rows of `headline_estimates` (scope 'all') of the draws the per-unit tables hold: the
    model-assisted row, or for an index none of whose benchmarks has judged texts (no model-assisted row) the
    labeler row, whose draws its model-assisted draws are (models/estimates/bench_draws.py). `ok` when the
    difference is within `tolerance` (relative to the count; absolute for the hours share); a unit sum without
    a headline row to compare with is not ok."""
    quantity_of = {"task_estimates": "tasks_covered", "occupation_estimates": "occupations_covered",
                   "major_group_estimates": "major_groups_covered"}
    sums = []
    for table, quantity in quantity_of.items():
        sums.append(units[table].group_by("benchmark_index", "threshold").agg(
            pl.col("p_covered").sum().alias("unit_sum")).with_columns(pl.lit(quantity).alias("quantity")))
    share = (pl.col("p_covered") * pl.col("hours")).sum() / total_hours if total_hours > 0 else pl.lit(None)
    sums.append(units["task_estimates"].group_by("benchmark_index", "threshold").agg(share.alias("unit_sum"))
                .with_columns(pl.lit("hours_share_covered").alias("quantity")))
    keys = ["benchmark_index", "quantity", "threshold"]
    expected = headline.filter(pl.col("estimator").is_in(["model_assisted", "labeler"])
                               & (pl.col("scope") == ALL_SCOPE)).sort(
        pl.col("estimator") != "model_assisted").unique(keys, keep="first", maintain_order=True).select(
        *keys, "estimator", pl.col("value").alias("headline_mean"))
    joined = pl.concat(sums).join(expected, on=keys, how="left")
    return joined.with_columns(
        (pl.col("unit_sum") - pl.col("headline_mean")).abs().alias("difference"),
    ).with_columns(
        (pl.col("difference") <= tolerance * pl.max_horizontal(pl.lit(1.0), pl.col("headline_mean").abs()))
        .fill_null(False).alias("ok")
    ).sort("benchmark_index", "quantity", "threshold")
