"""Gaps and what-if gains from the per-unit estimates (issue 25 item 5), not from the raw labels.

The per-unit estimate tables (`task_estimates`, `occupation_estimates`, `major_group_estimates`: per benchmark
index, unit and threshold, `p_covered` = the share of the headline's imputation draws in which the unit has
at least `threshold` prompts) say how likely each task is to be exercised. Here:

- **expected uncovered work hours** of an occupation = sum over its tasks of hours x P(not covered); its
  2.5-97.5% interval is the one of the headline's own draws (occupation_estimates uncovered_hours_low/high)
  when the table has it, else from simulated draws of each task's coverage (Bernoulli(p_covered), tasks
  independent: the positive correlation between tasks exercised by the same texts is then not carried and
  the interval is if anything too narrow);
- `occupation_gaps_from_estimates`: every occupation, ranked by expected uncovered hours, likely covered or not:
  an occupation with one task at the threshold (p_covered >= LIKELY_COVERED) can still hold more hours on
  uncovered tasks than any uncovered occupation (Retail Salespersons on the mirror), and a cut on p_covered
  would drop it from the list for a quantity its ranking does not read;
- `expected_whatif_gain`: a candidate's labels (each kept with its p_exercised, as the headline's draws treat
  a benchmark without a judge sample) added to the landed count distribution. The tables give P(N >= 1) and
  P(N >= 5) of each task's landed count N; P(N >= 2..4) are interpolated linearly between them (the
  interval's missing piece, said in the basis).

The gaps read `p_covered` (the draws' share), not `p_covered_calibrated`: expected uncovered hours are a sum
over units, and only the draws' share sums to the headline's hours figure; the split checks find its middle
band too high (docs/estimates.md), so a gap's expected hours are if anything too low for mid-p occupations.

Pure: frames in, frames out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from models.coverage import LIKELY_COVERED, TASK_KEY
from models.soc import major_group_of

N_SIM = 1000
EXPECTED_GAP_COLUMNS = [
    "rank",
    "onet_soc_code",
    "occupation_title",
    "major_group_code",
    "threshold",
    "n_tasks",
    "p_covered",
    "expected_tasks_covered",
    "labels_tasks_covered",
    "occupation_annual_hours",
    "expected_uncovered_hours",
    "expected_uncovered_hours_low",
    "expected_uncovered_hours_high",
    "expected_uncovered_share",
]

# ranked on the hours rounded to a whole hour: occupations sharing one OEWS hours figure differ only by float
# summation (1e-16 relative), and the tie-break by code must decide between them
_RANK_HOURS = pl.col("expected_uncovered_hours").round(0)


def task_probabilities(task_estimates: pl.DataFrame, index: str, threshold: int) -> pl.DataFrame:
    """onet_soc_code, task_id, p_covered, labels_count of one index and threshold (task_estimates rows)."""
    rows = task_estimates.filter(
        (pl.col("benchmark_index") == index) & (pl.col("threshold") == threshold)
    )
    return rows.select(
        pl.col("onet_soc_code").cast(pl.Utf8),
        pl.col("task_id").cast(pl.Int64),
        pl.col("p_covered").cast(pl.Float64).clip(0.0, 1.0),
        pl.col("labels_count").cast(pl.Float64).fill_null(0.0),
    ).unique(TASK_KEY, keep="first")


def with_task_p_covered(scored: pl.DataFrame, task_estimates: pl.DataFrame, index: str, threshold: int
                        ) -> pl.DataFrame:
    """`scored` (score_tasks' frame) with each task's p_covered at `threshold` in `index` (0 where the sparse
    table has no row: no draw reached the threshold): what coverage_gaps and major_group_gaps list by."""
    task_p = task_probabilities(task_estimates, index, threshold).select(*TASK_KEY, "p_covered")
    keys = scored.select(pl.col("onet_soc_code").cast(pl.Utf8), pl.col("task_id").cast(pl.Int64))
    p = keys.join(task_p, on=TASK_KEY, how="left", maintain_order="left")["p_covered"].fill_null(0.0)
    return scored.with_columns(p.alias("p_covered"))


def _with_probabilities(tasks: pl.DataFrame, task_p: pl.DataFrame) -> pl.DataFrame:
    """Every task of `tasks` (onet_soc_code, task_id, task_annual_hours) with p_covered (0 when the sparse
    estimates hold no row: no draw reached the threshold), labels_count and hours_known (its hours are data,
    not the 0 a null counts as)."""
    return (
        tasks.select(
            pl.col("onet_soc_code").cast(pl.Utf8), pl.col("task_id").cast(pl.Int64),
            pl.col("task_annual_hours").cast(pl.Float64).fill_null(0.0),
            pl.col("task_annual_hours").is_not_null().alias("hours_known"),
        )
        .unique(TASK_KEY, keep="first")
        .join(task_p, on=TASK_KEY, how="left")
        .with_columns(pl.col("p_covered").fill_null(0.0), pl.col("labels_count").fill_null(0.0))
        .sort(TASK_KEY)
    )


def simulated_uncovered_hours(
    owner: np.ndarray, hours: np.ndarray, p: np.ndarray, n_owners: int, n_sim: int = N_SIM, seed: int = 0
) -> np.ndarray:
    """(n_sim, n_owners) uncovered hours per owner (an occupation) per simulated draw: each task covered with
    its probability p, independently. Tasks with p = 0 or 1 are the same in every draw (added once)."""
    rng = np.random.default_rng(seed)
    fixed = np.bincount(owner, weights=hours * (p <= 0.0), minlength=n_owners)
    unsure = np.flatnonzero((p > 0.0) & (p < 1.0))
    out = np.tile(fixed, (n_sim, 1))
    for d in range(n_sim):
        uncovered = rng.random(unsure.size) >= p[unsure]
        out[d] += np.bincount(owner[unsure], weights=hours[unsure] * uncovered, minlength=n_owners)
    return out


def expected_uncovered_hours(
    tasks: pl.DataFrame,
    task_p: pl.DataFrame,
    threshold: int,
    occupation_p: pl.DataFrame | None = None,
    *,
    n_sim: int = N_SIM,
    seed: int = 0,
) -> pl.DataFrame:
    """One row per occupation of `tasks` (onet_soc_code, task_id, task_annual_hours): n_tasks,
    expected_tasks_covered (sum of p), labels_tasks_covered (tasks with labels_count >= threshold),
    occupation_annual_hours (sum of its task hours), expected_uncovered_hours (sum of hours x (1 - p)) with a
    2.5-97.5% interval over `n_sim` simulated draws, expected_uncovered_share, and p_covered: the occupation's
    own estimate from `occupation_p` (onet_soc_code, p_covered) when given, else 1 - prod(1 - p) over its
    tasks (independence). An occupation without hours data (every task_annual_hours null) has its hours
    columns null."""
    frame = _with_probabilities(tasks, task_p)
    codes, owner = np.unique(frame["onet_soc_code"].to_numpy(), return_inverse=True)
    hours = frame["task_annual_hours"].to_numpy()
    p = frame["p_covered"].to_numpy()
    sims = simulated_uncovered_hours(owner, hours, p, codes.size, n_sim, seed)
    low, high = np.quantile(sims, [0.025, 0.975], axis=0)
    per_occ = frame.group_by("onet_soc_code").agg(
        pl.len().cast(pl.Int64).alias("n_tasks"),
        pl.col("p_covered").sum().alias("expected_tasks_covered"),
        (pl.col("labels_count") >= threshold).sum().cast(pl.Int64).alias("labels_tasks_covered"),
        pl.col("task_annual_hours").sum().alias("occupation_annual_hours"),
        (pl.col("task_annual_hours") * (1.0 - pl.col("p_covered"))).sum().alias("expected_uncovered_hours"),
        (1.0 - (1.0 - pl.col("p_covered")).product()).alias("p_independent"),
        pl.col("hours_known").any().alias("hours_known"),
    )
    intervals = pl.DataFrame({
        "onet_soc_code": codes.astype(str), "expected_uncovered_hours_low": low,
        "expected_uncovered_hours_high": high,
    })
    out = per_occ.join(intervals, on="onet_soc_code", how="left")
    if occupation_p is not None:
        own = occupation_p.select(pl.col("onet_soc_code").cast(pl.Utf8), pl.col("p_covered").cast(pl.Float64))
        out = out.join(own, on="onet_soc_code", how="left").with_columns(pl.col("p_covered").fill_null(0.0))
    else:
        out = out.with_columns(pl.col("p_independent").alias("p_covered"))
    hours = ["occupation_annual_hours", "expected_uncovered_hours", "expected_uncovered_hours_low",
             "expected_uncovered_hours_high"]
    out = out.with_columns(pl.when(pl.col("hours_known")).then(pl.col(c)).alias(c) for c in hours)
    return out.drop("p_independent", "hours_known").with_columns(
        (pl.col("expected_uncovered_hours") / pl.col("occupation_annual_hours")).fill_nan(None)
        .alias("expected_uncovered_share"),
        pl.lit(threshold, dtype=pl.Int64).alias("threshold"),
        major_group_of().alias("major_group_code"),
    ).sort("onet_soc_code")


def expected_occupation_gaps(
    per_occupation: pl.DataFrame, titles: pl.DataFrame | None = None, likely: float = LIKELY_COVERED
) -> pl.DataFrame:
    """The occupations not likely covered (p_covered < `likely`), ranked by expected uncovered hours (desc,
    rounded to the whole hour; ties by code): EXPECTED_GAP_COLUMNS. `titles`: onet_soc_code, title."""
    gaps = per_occupation.filter(pl.col("p_covered") < likely)
    if titles is not None:
        gaps = gaps.join(
            titles.select(pl.col("onet_soc_code").cast(pl.Utf8), pl.col("title").alias("occupation_title")),
            on="onet_soc_code", how="left",
        )
    else:
        gaps = gaps.with_columns(pl.lit(None, dtype=pl.Utf8).alias("occupation_title"))
    ranked = gaps.sort([_RANK_HOURS, "onet_soc_code"], descending=[True, False], nulls_last=True)
    return ranked.with_row_index("rank", offset=1).with_columns(pl.col("rank").cast(pl.Int64)).select(
        EXPECTED_GAP_COLUMNS
    )


# --- the what-if ------------------------------------------------------------------------------------------


def count_tail(p_ge_1: np.ndarray, p_ge_5: np.ndarray, upto: int) -> np.ndarray:
    """(tasks, upto + 1) P(N >= j) for j = 0..upto from P(N >= 1) and P(N >= 5): 1 at j = 0, linear in j
    between 1 and 5 (the tables hold no other threshold), P(N >= 5) beyond (a floor)."""
    j = np.arange(upto + 1, dtype=float)
    weight = np.clip((j - 1.0) / 4.0, 0.0, 1.0)
    tail = p_ge_1[:, None] * (1.0 - weight) + np.minimum(p_ge_5, p_ge_1)[:, None] * weight
    tail[:, 0] = 1.0
    return tail


def candidate_count_pmf(task_index: np.ndarray, p: np.ndarray, n_tasks: int, upto: int) -> np.ndarray:
    """(n_tasks, upto + 1) distribution of each task's candidate count C (Poisson-binomial of its labels'
    p_exercised), the last column holding P(C >= upto)."""
    pmf = np.zeros((n_tasks, upto + 1))
    pmf[:, 0] = 1.0
    for t, q in zip(task_index, p, strict=True):
        row = pmf[t]
        shifted = np.concatenate([[0.0], row[:-1]])
        shifted[-1] += row[-1]  # C >= upto stays there
        pmf[t] = row * (1.0 - q) + shifted * q
    return pmf


def covered_after(tail: np.ndarray, pmf: np.ndarray, threshold: int) -> np.ndarray:
    """P(N + C >= threshold) per task: sum over c < threshold of P(C = c) P(N >= threshold - c), plus
    P(C >= threshold)."""
    out = pmf[:, threshold].copy()
    for c in range(threshold):
        out += pmf[:, c] * tail[:, threshold - c]
    return np.clip(out, 0.0, 1.0)


def _ratio_update(before: np.ndarray, not_before: np.ndarray, not_after: np.ndarray) -> np.ndarray:
    """P(a unit covered after) = 1 - P(not before) x prod over its parts of P(part not after) / P(part not
    before) (exact when parts are independent; keeps the unit's own estimate when nothing changes)."""
    ratio = np.divide(not_after, not_before, out=np.ones_like(not_after), where=not_before > 0)
    return 1.0 - (1.0 - before) * ratio


EXPECTED_THRESHOLDS = (1, 5)  # the per-unit estimates' thresholds: the expected what-if exists at these only


def expected_whatif_gain(
    tasks: pl.DataFrame,
    task_estimates: pl.DataFrame,
    candidate_labels: pl.DataFrame,
    threshold: int,
    *,
    index: str = "all",
    occupation_estimates: pl.DataFrame | None = None,
    major_group_estimates: pl.DataFrame | None = None,
    thresholds: Sequence[int] = (1, 5),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(metrics, per task) of adding `candidate_labels` (prompt_task_labels rows of the prompts that count:
    onet_soc_code, task_id, p_exercised; null p counts as 1) to index `index` at `threshold`.

    metrics: metric (expected_tasks_covered, expected_occupations_covered, expected_major_groups_covered,
    expected_hours_covered, expected_hours_share_covered, expected_uncovered_hours), before, after, gain.
    per task: onet_soc_code, task_id, task_annual_hours, p_before, p_after, expected_candidate_prompts."""
    if threshold not in EXPECTED_THRESHOLDS or not set(EXPECTED_THRESHOLDS) <= set(thresholds):
        raise ValueError(f"the expected what-if needs estimates at thresholds 1 and 5 (threshold {threshold})")
    frame = _with_probabilities(tasks, task_probabilities(task_estimates, index, 1)).rename({"p_covered": "p1"})
    p5 = task_probabilities(task_estimates, index, 5).select(*TASK_KEY, pl.col("p_covered").alias("p5"))
    frame = frame.join(p5, on=TASK_KEY, how="left").with_columns(pl.col("p5").fill_null(0.0))
    keys = frame.select(TASK_KEY).with_row_index("k")
    labels = candidate_labels.select(
        pl.col("onet_soc_code").cast(pl.Utf8), pl.col("task_id").cast(pl.Int64),
        (pl.col("p_exercised").cast(pl.Float64) if "p_exercised" in candidate_labels.columns else pl.lit(1.0))
        .fill_null(1.0).clip(0.0, 1.0).alias("p"),
    ).join(keys, on=TASK_KEY, how="inner")
    tail = count_tail(frame["p1"].to_numpy(), frame["p5"].to_numpy(), threshold)
    pmf = candidate_count_pmf(labels["k"].to_numpy(), labels["p"].to_numpy(), frame.height, threshold)
    before = tail[:, threshold]
    after = np.maximum(covered_after(tail, pmf, threshold), before)  # adding prompts never uncovers (rounding)
    expected_candidate = np.bincount(labels["k"].to_numpy(), weights=labels["p"].to_numpy(), minlength=frame.height)
    per_task = frame.select(*TASK_KEY, "task_annual_hours").with_columns(
        pl.Series("p_before", before), pl.Series("p_after", after),
        pl.Series("expected_candidate_prompts", expected_candidate),
    )
    hours = per_task["task_annual_hours"].to_numpy()
    total_hours = float(hours.sum())
    metrics = [
        ("expected_tasks_covered", float(before.sum()), float(after.sum())),
        ("expected_hours_covered", float(hours @ before), float(hours @ after)),
        ("expected_hours_share_covered", float(hours @ before) / total_hours if total_hours else float("nan"),
         float(hours @ after) / total_hours if total_hours else float("nan")),
        ("expected_uncovered_hours", float(hours @ (1 - before)), float(hours @ (1 - after))),
    ]
    occ = _occupations_after(per_task, occupation_estimates, index, threshold)
    metrics.insert(1, ("expected_occupations_covered", float(occ["p_before"].sum()), float(occ["p_after"].sum())))
    groups = _groups_after(occ, major_group_estimates, index, threshold)
    metrics.insert(2, ("expected_major_groups_covered", float(groups["p_before"].sum()),
                       float(groups["p_after"].sum())))
    gain = pl.DataFrame(
        [{"metric": m, "before": b, "after": a, "gain": a - b} for m, b, a in metrics],
        schema={"metric": pl.Utf8, "before": pl.Float64, "after": pl.Float64, "gain": pl.Float64},
    )
    return gain, per_task


def _occupations_after(per_task: pl.DataFrame, occupation_estimates: pl.DataFrame | None, index: str,
                       threshold: int) -> pl.DataFrame:
    """onet_soc_code, p_before (the occupation's own estimate, else independence over its tasks), p_after."""
    occ = per_task.group_by("onet_soc_code").agg(
        (1.0 - pl.col("p_before")).product().alias("not_before"),
        (1.0 - pl.col("p_after")).product().alias("not_after"),
    )
    if occupation_estimates is not None:
        own = occupation_estimates.filter(
            (pl.col("benchmark_index") == index) & (pl.col("threshold") == threshold)
        ).select(pl.col("onet_soc_code").cast(pl.Utf8), pl.col("p_covered").cast(pl.Float64).alias("p_before"))
        occ = occ.join(own, on="onet_soc_code", how="left").with_columns(pl.col("p_before").fill_null(0.0))
    else:
        occ = occ.with_columns((1.0 - pl.col("not_before")).alias("p_before"))
    after = _ratio_update(occ["p_before"].to_numpy(), occ["not_before"].to_numpy(), occ["not_after"].to_numpy())
    return occ.with_columns(pl.Series("p_after", after)).sort("onet_soc_code")


def _groups_after(occ: pl.DataFrame, group_estimates: pl.DataFrame | None, index: str,
                  threshold: int) -> pl.DataFrame:
    groups = occ.with_columns(major_group_of().alias("major_group_code")).group_by("major_group_code").agg(
        (1.0 - pl.col("p_before")).product().alias("not_before"),
        (1.0 - pl.col("p_after")).product().alias("not_after"),
    )
    if group_estimates is not None:
        code = "major_group_code" if "major_group_code" in group_estimates.columns else group_estimates.columns[1]
        own = group_estimates.filter(
            (pl.col("benchmark_index") == index) & (pl.col("threshold") == threshold)
        ).select(pl.col(code).cast(pl.Utf8).alias("major_group_code"),
                 pl.col("p_covered").cast(pl.Float64).alias("p_before"))
        groups = groups.join(own, on="major_group_code", how="left").with_columns(pl.col("p_before").fill_null(0.0))
    else:
        groups = groups.with_columns((1.0 - pl.col("not_before")).alias("p_before"))
    after = _ratio_update(groups["p_before"].to_numpy(), groups["not_before"].to_numpy(),
                          groups["not_after"].to_numpy())
    return groups.with_columns(pl.Series("p_after", after))


# --- the occupation gap list ------------------------------------------------------------------------------

EXPECTED_COLUMNS = [
    "p_covered",
    "expected_tasks_covered",
    "expected_uncovered_hours",
    "expected_uncovered_hours_low",
    "expected_uncovered_hours_high",
    "expected_uncovered_share",
    "ranked_by",
]
RANKED_BY_ESTIMATES = "expected uncovered hours (per-unit estimates)"
RANKED_BY_PRIORITY = "priority (labels as counted: no per-unit estimates)"


def occupation_gaps_from_estimates(
    scored: pl.DataFrame,
    threshold: int,
    task_estimates: pl.DataFrame,
    index: str,
    occupation_estimates: pl.DataFrame | None = None,
    weights: object = None,
    *,
    n_sim: int = N_SIM,
    seed: int = 0,
) -> pl.DataFrame:
    """occupation_gaps from the estimates: every occupation of `index` at `threshold`, ranked by expected
    uncovered hours (rounded to the hour; ties by code; without hours data last), p_covered beside; the
    labels-as-counted columns and the priority of `occupation_priorities` beside them (OCCUPATION_GAP_COLUMNS +
    EXPECTED_COLUMNS).
    `scored`: score_tasks' frame (its task_annual_hours are the headline's)."""
    from models.gaps.priority import OCCUPATION_GAP_COLUMNS, occupation_priorities

    occ = occupation_priorities(scored, threshold, weights)  # type: ignore[arg-type]
    occ_p = None
    if occupation_estimates is not None:
        occ_p = occupation_estimates.filter(
            (pl.col("benchmark_index") == index) & (pl.col("threshold") == threshold)
        )
    expected = expected_uncovered_hours(
        scored.select(*TASK_KEY, "task_annual_hours"), task_probabilities(task_estimates, index, threshold),
        threshold, occ_p.select("onet_soc_code", "p_covered") if occ_p is not None else None,
        n_sim=n_sim, seed=seed,
    ).select("onet_soc_code", *EXPECTED_COLUMNS[:-1])
    if occ_p is not None and {"uncovered_hours_low", "uncovered_hours_high"} <= set(occ_p.columns):
        # the headline's own draws carry the correlation between tasks: their interval replaces the simulation
        draws = occ_p.select(
            pl.col("onet_soc_code").cast(pl.Utf8),
            pl.col("uncovered_hours_low").cast(pl.Float64).alias("draws_low"),
            pl.col("uncovered_hours_high").cast(pl.Float64).alias("draws_high"),
        )
        expected = expected.join(draws, on="onet_soc_code", how="left").with_columns(
            pl.coalesce("draws_low", "expected_uncovered_hours_low").alias("expected_uncovered_hours_low"),
            pl.coalesce("draws_high", "expected_uncovered_hours_high").alias("expected_uncovered_hours_high"),
        ).drop("draws_low", "draws_high")
    gaps = occ.join(expected, on="onet_soc_code", how="left")
    ranked = gaps.sort([_RANK_HOURS, "onet_soc_code"], descending=[True, False], nulls_last=True)
    return (
        ranked.with_row_index("rank", offset=1)
        .with_columns(pl.col("rank").cast(pl.Int64), pl.lit(RANKED_BY_ESTIMATES).alias("ranked_by"))
        .select([*OCCUPATION_GAP_COLUMNS, *EXPECTED_COLUMNS])
    )


def with_expected_columns(gaps: pl.DataFrame) -> pl.DataFrame:
    """The priority-ranked occupation_gaps (no estimates) with EXPECTED_COLUMNS null, saying so."""
    return gaps.with_columns(
        *[pl.lit(None, dtype=pl.Float64).alias(c) for c in EXPECTED_COLUMNS[:-1]],
        pl.lit(RANKED_BY_PRIORITY).alias("ranked_by"),
    )
