"""Is the per-unit p_covered calibrated? (issue 25, item 4) And its recalibration, p_covered_calibrated.

p_covered has no direct truth. Three kinds of check with a known one; in each the units of the pooled scope are
binned by p_covered and the share truly covered per bin is compared with the bin's mean p:

- `model`: the truth drawn from the estimator's own fitted model (`model_population`: every text keeps each
  label with its calibrated probability and takes a donor's number of misses from the fitted mixture), a new
  judge sample of the same size per benchmark drawn from it, and the estimate redone: the issue's simulation
  check. It asks whether the draws are a consistent posterior predictive *of their own model*; each population
  costs an estimate of the whole problem (~0.35 CPU-s at 30 draws on the mirror), so the asset runs 4.
- `split_half` / `split_fifth`: the judged texts are the population (truth: their judge labels), half / a fifth
  of each benchmark's is the sample, the rest is imputed (checks.split_sample_problem). This is reality.
- `simulated`: populations from simulation.simulate (a labeler with misses and overconfidence, a model the
  estimator does not assume), in its default world (a benchmark's pool spread over most major groups: the
  stress case) and, as `simulated_mirror_like`, in simulation.MIRROR_LIKE (pools within two major groups,
  scattered misses and surprises: a judge sample with the mirror's statistics).

Diagnosis (docs/estimates_calibration_log.md): the outer bins are right in every check, so the binning is.
The `model` check is off largely because the weights are fitted on a likelihood the draws do not use: the draws redraw a miss that is
one of the recipient's labels, the fit does not divide by the mass outside them. Dividing by it put the
`model` check's bins beyond 0.05 + 2 se from 11 to 0, but cost the split checks' hours at >= 1 their interval
coverage: not adopted. The split checks run high in the middle band at >= 1 prompt, where reality's misses fall
on fewer units than the miss model spreads them over, and so does `simulated_mirror_like` (its tasks at >= 5 are
at the target's edge: three bins of ten 0.054-0.058 off, none beyond 2 se, over 120 populations). In the default world the tasks' middle band at >= 1 runs low instead (the
labeler-mass part follows a task's popularity too noisily), so no fixed form of the miss model is right in both.
The draws' share `p_covered` keeps summing to the headline's means (the asset check); beside it
`p_covered_calibrated` maps it through a logistic map (CoverageMap) per unit level and threshold fitted on the
split_fifth check (the split closest to the headline's ~93% imputed texts). The check's `p_covered_calibrated`
rows are cross-fitted: each unit's calibrated p comes from a map fitted on the other folds' units. In the
simulated worlds the map fitted on the mirror's split_fifth is applied as it is published: a transfer test to a
population where, as in the headline, the judge reads 6-8% of the texts (split_fifth: 20%). It does not
transfer: in both worlds it is less well calibrated than p_covered for tasks and occupations (MIRROR_LIKE tasks
at >= 1: a calibrated 0.34 is covered 0.61 of the time; docs/estimates_calibration_log.md), so a unit in the
middle band has no tested chance at the headline's scale.

Monte Carlo error: `difference_se` is the standard error of a bin's difference across the replications
(a ratio estimator over replications), so a reader sees how much of a difference is noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from models.estimates.checks import Relabel, skip_splits, split_sample_problem
from models.estimates.draws import ModelAssisted
from models.estimates.problem import THRESHOLDS, Problem, scopes_for, sorted_unique, task_counts
from models.estimates.simulation import MIRROR_LIKE, simulate
from models.estimates.tables import run_estimators
from models.estimates.units import UNIT_LEVELS, UnitDraws

N_BINS = 10
RAW, CALIBRATED = "p_covered", "p_covered_calibrated"
MAP_CHECK = "split_fifth"  # the check the published map is fitted on
UNIT_FOLDS = 5  # cross-fitting folds of units for the check's calibrated rows
# a map needs this many distinct units below p = 1 (the check's bins need 40 units): the 22 major groups gave
# maps from 8-9 groups, one of them "below p = 1 never covered at >= 5" (a group in 199 of 200 draws -> 0.00003)
MIN_MAP_UNITS = 40
COVERAGE_CHECK_SCHEMA: dict[str, pl.DataType] = {
    "check": pl.Utf8(),
    "unit": pl.Utf8(),
    "threshold": pl.Int64(),
    "predictor": pl.Utf8(),
    "bin": pl.Int64(),
    "p_low": pl.Float64(),
    "p_high": pl.Float64(),
    "n_units": pl.Int64(),
    "mean_p": pl.Float64(),
    "share_covered": pl.Float64(),
    "difference": pl.Float64(),
    "difference_se": pl.Float64(),
    "difference_se_units": pl.Float64(),
    "replications": pl.Int64(),
}
PAIR_SCHEMA: dict[str, pl.DataType] = {
    "replication": pl.Int64(), "unit": pl.Utf8(), "threshold": pl.Int64(), "unit_index": pl.Int64(),
    "p_covered": pl.Float64(), "covered": pl.Boolean(),
}
PAIR_KEYS = ["replication", "unit", "unit_index"]  # one unit of one replication (its thresholds apart)


def _unit_truth(problem: Problem, truth_counts: np.ndarray, threshold: int) -> dict[str, np.ndarray]:
    """Covered (bool) per task, occupation and major group of the pooled truth counts."""
    total = truth_counts.sum(axis=0)
    occ_starts = np.flatnonzero(np.r_[True, problem.task_occ[1:] != problem.task_occ[:-1]])
    group_starts = np.flatnonzero(np.r_[True, problem.occ_group[1:] != problem.occ_group[:-1]])
    task = total >= threshold - 1e-9
    occ = np.logical_or.reduceat(task, occ_starts)
    return {"task": task, "occupation": occ, "major_group": np.logical_or.reduceat(occ, group_starts)}


def _p_covered(problem: Problem, n_draws: int, seed: int, thresholds: Sequence[int]) -> dict[tuple[str, int], np.ndarray]:
    scopes = scopes_for(problem, per_benchmark=False)
    draws = UnitDraws(problem, scopes, n_draws)
    run_estimators(problem, scopes, thresholds=thresholds, n_draws=n_draws, seed=seed,
                   estimators=("model_assisted",), unit_draws=draws)
    prompts = {"task": draws.task_prompts(), "occupation": draws.occupation_prompts(),
               "major_group": draws.group_prompts()}
    return {(level, t): (prompts[level][:, 0] >= t - 1e-9).mean(axis=0) for level in UNIT_LEVELS for t in thresholds}


def coverage_pairs(problem: Problem, truth_counts: np.ndarray, n_draws: int, seed: int,
                   thresholds: Sequence[int] = THRESHOLDS, replication: int = 0) -> pl.DataFrame:
    """PAIR_SCHEMA: p_covered and the truth (covered) of every unit of the pooled scope."""
    p = _p_covered(problem, n_draws, seed, thresholds)
    frames = []
    for t in thresholds:
        truth = _unit_truth(problem, truth_counts, t)
        for level in UNIT_LEVELS:
            frames.append(pl.DataFrame({"replication": replication, "unit": level, "threshold": int(t),
                                        "unit_index": np.arange(truth[level].size), "p_covered": p[(level, t)],
                                        "covered": truth[level]}, schema=PAIR_SCHEMA))
    return pl.concat(frames)


# --- a population from the estimator's own model ---------------------------------------------------------------


def model_population(problem: Problem, rng: np.random.Generator, assisted: ModelAssisted | None = None,
                     keep_judged: bool = False) -> tuple[Problem, np.ndarray]:
    """A population drawn from the estimator's fitted model (the sample's point parameters: calibration factors,
    mixture weights, donors) and a new judge sample of it. Unread texts of sampled benchmarks keep each label
    with min(1, a_b p) and take a random donor's number of misses, their tasks from the mixture (redrawn when
    the text already has the task, as the draws do); texts of a benchmark without a sample keep each label with
    p. The judged texts are drawn the same way (so the whole truth is the model's), unless `keep_judged`: then
    they keep their judge labels. The new sample: as many texts per benchmark as the old one, at random.
    Returns the problem with the new sample and the truth counts (B, K)."""
    pr = problem
    a = assisted if assisted is not None else ModelAssisted(pr)
    boot, factors, mixture = a.parameters(rng, bootstrap=False)
    drawn = ~pr.text_sampled if keep_judged else np.ones(pr.text_bench.size, dtype=bool)
    rows = np.flatnonzero(drawn[pr.lab_text])
    factor = np.where(a.has_sample, factors, 1.0)[pr.text_bench[pr.lab_text[rows]]]
    kept = rows[rng.random(rows.size) < np.minimum(1.0, factor * pr.lab_p[rows])]
    texts, tasks = [pr.lab_text[kept]], [pr.lab_task[kept]]
    if keep_judged:
        texts.append(pr.jud_text)
        tasks.append(pr.jud_task)
    recipients = np.flatnonzero(drawn & a.has_sample[pr.text_bench])
    if recipients.size and a.missed_task.size:
        donor = a.donors[a.donor_blocks.reweighted(boot[a.donors]).draw(rng, pr.text_bench[recipients])]
        owner = np.repeat(recipients, a.missed_per_text[donor])
        row_boot = boot[a.missed_text]
        blocks = (a.seen.reweighted(row_boot), a.seen_occ.reweighted(row_boot), a.seen_group.reweighted(row_boot))
        cdf = a._part_cdf(mixture, blocks[0])
        missed = a._draw_tasks(rng, owner, cdf, blocks)
        clash = np.flatnonzero(a._labeled(owner, missed))
        for _ in range(4):
            if clash.size == 0:
                break
            missed[clash] = a._draw_tasks(rng, owner[clash], cdf, blocks)
            clash = clash[a._labeled(owner[clash], missed[clash])]
        ok = np.ones(owner.size, dtype=bool)
        ok[clash] = False
        texts.append(owner[ok])
        tasks.append(missed[ok])
    keys = np.unique(np.concatenate(texts).astype(np.int64) * pr.n_tasks + np.concatenate(tasks))
    text, task = keys // pr.n_tasks, keys % pr.n_tasks
    truth = task_counts(pr, text, task, pr.text_mult[text])
    sampled = np.zeros(pr.text_bench.size, dtype=bool)
    order = rng.permutation(pr.text_bench.size)
    order = order[np.argsort(pr.text_bench[order], kind="stable")]  # a random order within each benchmark
    size = np.bincount(pr.text_bench, weights=pr.text_sampled, minlength=pr.n_bench).astype(np.int64)
    start = np.r_[0, np.cumsum(np.bincount(pr.text_bench, minlength=pr.n_bench))[:-1]]
    rank = np.arange(order.size) - start[pr.text_bench[order]]
    sampled[order[rank < size[pr.text_bench[order]]]] = True
    judged = sampled[text]
    label_keys = sorted_unique(pr.lab_text.astype(np.int64) * pr.n_tasks + pr.lab_task)
    in_labels = np.isin(keys[judged], label_keys)
    new = Problem(**{**pr.__dict__, "text_sampled": sampled, "jud_text": text[judged], "jud_task": task[judged],
                     "jud_in_labels": in_labels})
    return new, truth


# --- binning, Monte Carlo error, the recalibration map ---------------------------------------------------------


def bin_coverage(pairs: pl.DataFrame, check: str, replications: int, column: str = RAW,
                 n_bins: int = N_BINS) -> pl.DataFrame:
    """Share covered per bin (ten of width 0.1; p = 1 in the last) of `column` per unit level and threshold.
    Units whose raw p_covered is exactly 0 are many and trivially right, so they are left out (bin 0 holds
    0 < p < 0.1). difference_se: the difference's standard error across the replications (each replication's
    sum of covered - p around the pooled difference x its units; needs two replications). difference_se_units:
    the same with the units as the clusters (each unit's sum over the replications): a unit sits in the same
    bin in many replications, so a thin bin of few distinct units says as much about those units as about the
    map, which difference_se (units fixed) does not count; read a calibrated bin against the larger of the
    two (on the mirror the middle bins' unit se is 0.04-0.10, two to four times difference_se)."""
    keys = ["unit", "threshold", "bin"]
    # every float sum in a fixed order (sorted rows, order-keeping group-bys): a multi-threaded group-by adds in
    # an order of its own, and the published table differed between two runs on the same inputs (by 4e-14)
    binned = pairs.filter(pl.col(RAW) > 0).with_columns(
        (pl.col(column) * n_bins).floor().clip(0, n_bins - 1).cast(pl.Int64).alias("bin"),
        pl.col(column).alias("_p")).sort(*keys, "replication", "unit_index")
    per_rep = binned.group_by(*keys, "replication", maintain_order=True).agg(
        pl.len().alias("_n"), pl.col("_p").sum().alias("_sp"), pl.col("covered").cast(pl.Float64).sum().alias("_sc"))
    pooled = per_rep.group_by(keys, maintain_order=True).agg(
        pl.col("_n").sum().alias("n_units"), pl.col("_sp").sum().alias("_sp"), pl.col("_sc").sum().alias("_sc"),
        pl.len().alias("_r"))
    pooled = pooled.with_columns(((pl.col("_sc") - pl.col("_sp")) / pl.col("n_units")).alias("difference"))
    spread = (per_rep.join(pooled.select(*keys, "difference", "n_units"), on=keys).sort(*keys, "replication")
              .group_by(keys, maintain_order=True).agg(
                  ((pl.col("_sc") - pl.col("_sp") - pl.col("difference") * pl.col("_n")) ** 2).sum().alias("_ss")))
    per_unit = binned.sort(*keys, "unit_index", "replication").group_by(*keys, "unit_index", maintain_order=True).agg(
        pl.len().alias("_n"), (pl.col("covered").cast(pl.Float64) - pl.col("_p")).sum().alias("_s"))
    unit_spread = (per_unit.join(pooled.select(*keys, "difference"), on=keys).sort(*keys, "unit_index")
                   .group_by(keys, maintain_order=True).agg(
                       ((pl.col("_s") - pl.col("difference") * pl.col("_n")) ** 2).sum().alias("_ss_u"),
                       pl.len().alias("_g")))
    return (
        pooled.join(spread, on=keys).join(unit_spread, on=keys)
        .with_columns(
            pl.lit(check).alias("check"), pl.lit(column).alias("predictor"),
            (pl.col("bin") / n_bins).alias("p_low"), ((pl.col("bin") + 1) / n_bins).alias("p_high"),
            (pl.col("_sp") / pl.col("n_units")).alias("mean_p"),
            (pl.col("_sc") / pl.col("n_units")).alias("share_covered"),
            pl.when(replications > 1).then(
                (pl.col("_ss") * replications / (replications - 1)).sqrt() / pl.col("n_units")).alias("difference_se"),
            pl.when(pl.col("_g") > 1).then(
                (pl.col("_ss_u") * pl.col("_g") / (pl.col("_g") - 1)).sqrt() / pl.col("n_units")
            ).alias("difference_se_units"),
            pl.lit(replications, pl.Int64).alias("replications"),
            pl.col("n_units").cast(pl.Int64),
        )
        .select(list(COVERAGE_CHECK_SCHEMA))
        .cast(COVERAGE_CHECK_SCHEMA)  # type: ignore[arg-type]
        .sort("unit", "threshold", "bin")
    )


def _map_features(p: np.ndarray) -> np.ndarray:
    """Log-odds of p, its square, and p = 1: the split checks' share covered is flat through the middle band
    and jumps at p = 1 (every draw covers: mostly units a judged text exercises, at >= 1 prompt), which one slope
    on the log-odds cannot follow."""
    q = np.clip(p, 1e-3, 1 - 1e-3)
    x = np.log(q / (1 - q))
    return np.column_stack([x, x**2, (p >= 1.0).astype(float)])


@dataclass
class CoverageMap:
    """Maps p_covered -> share truly covered, per (unit level, threshold): a logistic regression on
    _map_features, read as a curve through the p_covered values it was fitted on (`curves`: those values below 1,
    the map's values there, and its value at p = 1), made non-decreasing (the isotonic projection of the fitted
    values, weighted by their units) and read between those values linearly. Why a curve and not the formula: the
    map is fitted on the check's draws (30: p_covered in steps of 1/30) and applied to the headline's (200), whose
    values below 1/30 and between 29/30 and 1 the fit never saw; there the formula's square bent the map the wrong
    way (2026-12-06 warehouse: an occupation at >= 5 covered in 199 of 200 draws mapped to 0.36, one at 29/30 to
    0.996; a major group in 1 of 200 to 0.60). Below the smallest fitted value it runs linearly to 0 at p = 0
    (p_covered = 0 stays 0: the check leaves those units out); from the largest below 1 up to just below 1 it
    stays at that value (an imputed unit, not the p = 1 class); a level and threshold without a map keeps
    p_covered.

    Tried instead: an isotonic map on the outcomes (its steps made cross-fitted bins worse, max |difference|
    0.23 against 0.18 on the mirror); a logistic on a cubic spline of the log-odds (4 quantile knots) and on that
    plus the unit's prompts_mean / labels_count / judged_texts (2026-12-03, 40 held-out fifth splits: the spline
    no better on the fifth, max 0.08-0.09 against 0.06-0.16 over six 6-split fits, and worse carried to
    split_half, max 0.14-0.28 against 0.11-0.17, 0.21 against 0.09 in the asset's own check; the features worse
    on the fifth); a map learnt by parametric bootstrap on populations of the problem's own fitted model
    (2026-12-05, bench/bootstrap_coverage_map.py: better than p_covered in the simulated worlds and the `model`
    check, little change on the real splits, where this map is right). The remaining misses are within two
    unit-clustered standard errors (bin_coverage's difference_se_units): docs/estimates_calibration_log.md."""

    curves: dict[tuple[str, int], tuple[np.ndarray, np.ndarray, float | None]] = field(default_factory=dict)
    source: str = MAP_CHECK

    def apply(self, level: str, threshold: int, p: np.ndarray) -> np.ndarray:
        p = np.asarray(p, dtype=np.float64)
        curve = self.curves.get((level, int(threshold)))
        if curve is None or p.size == 0:
            return p
        knots, values, at_one = curve
        below = np.interp(p, np.r_[0.0, knots], np.r_[0.0, values])  # constant past the last knot
        mapped = np.where(p >= 1.0, values[-1] if at_one is None else at_one, below)
        return np.where(p > 0, mapped, 0.0)


def fit_coverage_map(pairs: pl.DataFrame, source: str = MAP_CHECK) -> CoverageMap:
    """The map of covered on p_covered (units with p_covered > 0) per level and threshold."""
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    out = CoverageMap(source=source)
    rows = pairs.filter(pl.col(RAW) > 0)
    for (level, threshold), group in rows.group_by("unit", "threshold"):
        covered = group["covered"].to_numpy().astype(float)
        spread = group.filter(pl.col(RAW) < 1.0)["unit_index"].n_unique()
        if spread < MIN_MAP_UNITS or covered.min() == covered.max():
            continue
        p = group[RAW].to_numpy()
        model = LogisticRegression(C=100.0, max_iter=200, solver="newton-cholesky").fit(_map_features(p), covered)
        knots, units = np.unique(p, return_counts=True)
        fitted = model.predict_proba(_map_features(knots))[:, 1]
        values = IsotonicRegression(increasing=True).fit_transform(knots, fitted, sample_weight=units)
        one = knots >= 1.0  # some knots lie below 1: MIN_MAP_UNITS units do
        at_one = float(values[one][0]) if one.any() else None
        out.curves[(str(level), int(threshold))] = (knots[~one], values[~one], at_one)
    return out


def cross_fitted(pairs: pl.DataFrame, folds: int = UNIT_FOLDS) -> pl.DataFrame:
    """`pairs` with p_covered_calibrated: each unit's from a map fitted on the units of the other folds (folds by
    unit index, so a unit is never corrected by a map that saw it in any replication)."""
    fold = pl.col("unit_index") % folds
    parts = []
    for f in range(folds):
        mine = pairs.filter(fold == f)
        fitted = fit_coverage_map(pairs.filter(fold != f))
        values = np.empty(mine.height)
        for (level, threshold), index in mine.with_row_index("_i").group_by("unit", "threshold"):
            values[index["_i"].to_numpy()] = fitted.apply(str(level), int(threshold), index[RAW].to_numpy())
        parts.append(mine.with_columns(pl.Series(CALIBRATED, values)))
    return not_rising(pl.concat(parts), PAIR_KEYS)


def with_calibrated_p_covered(units: dict[str, pl.DataFrame], coverage_map: CoverageMap,
                              tables: dict[str, str]) -> dict[str, pl.DataFrame]:
    """The per-unit tables (`tables`: level -> table name) with p_covered_calibrated after p_covered."""
    out = dict(units)
    for level, name in tables.items():
        table = units[name]
        values = np.empty(table.height)
        for (threshold,), index in table.with_row_index("_i").group_by("threshold"):
            values[index["_i"].to_numpy()] = coverage_map.apply(level, int(threshold), index[RAW].to_numpy())
        columns = table.columns
        at = columns.index(RAW) + 1
        out[name] = not_rising(table.with_columns(pl.Series(CALIBRATED, values, pl.Float64)),
                               columns[:columns.index("threshold")]).select(*columns[:at], CALIBRATED, *columns[at:])
    return out


def not_rising(frame: pl.DataFrame, unit_keys: list[str]) -> pl.DataFrame:
    """p_covered_calibrated made non-increasing in the threshold within each unit: a unit with 5 prompts has 1, so
    its chance at >= 1 is at least its chance at >= 5, but the maps are fitted per threshold and can cross (an
    audit: 164 occupations and 272 tasks more likely covered at >= 5 than at >= 1, up to 0.92 against 0.70;
    most at p_covered = 1 at both, which the map at >= 1 reads 0.96 and the one at >= 5 0.99). The lower
    threshold's value is raised: the evidence at >= 5 is the more specific (units certain at >= 5 are a few of
    those certain at >= 1), and lowering the value at >= 5 would undo its own map's calibration."""
    return frame.with_columns(pl.col(CALIBRATED).cum_max(reverse=True).over(unit_keys, order_by="threshold"))


# --- the check -------------------------------------------------------------------------------------------------

SPLITS: dict[str, float] = {"split_half": 0.5, "split_fifth": 0.2}
# the simulated worlds of the check: its name -> simulate's settings
SIMULATED_WORLDS: dict[str, dict[str, object]] = {"simulated": {}, "simulated_mirror_like": MIRROR_LIKE}


@dataclass
class CoverageCheck:
    table: pl.DataFrame  # COVERAGE_CHECK_SCHEMA
    coverage_map: CoverageMap
    pairs: dict[str, pl.DataFrame]  # per check: PAIR_SCHEMA (+ p_covered_calibrated wherever a map was fitted)


def unit_coverage_check(problem: Problem | None, *, replications: int = 6, n_draws: int = 40, seed: int = 25,
                        splits: dict[str, float] | None = None, simulated: int = 8,
                        model_replications: int = 0, relabel: Relabel | None = None,
                        worlds: dict[str, dict[str, object]] | None = None) -> CoverageCheck:
    """The `unit_coverage_simulation_check` table, the map for p_covered_calibrated (fitted on every
    split_fifth pair) and the pairs. The splits need `problem`; `model_replications` populations of
    `model_population` (each the full problem's cost; `model_pairs`, on a stream of their own); `simulated`
    populations of each of `worlds` (SIMULATED_WORLDS by default). One random stream from `seed` for the splits,
    then the worlds' populations (`split_pairs` and `world_pairs` compute a part of it alone, for a worker process
    each; `assembled_check` puts the parts together as this function does)."""
    rng = np.random.default_rng(seed)
    split_found: dict[str, pl.DataFrame] = {}
    model_found = None
    if _has_splits(problem):
        assert problem is not None
        for check, fraction in (SPLITS if splits is None else splits).items():
            split_found[check] = _split_pairs(problem, rng, fraction, replications, n_draws, seed, relabel)
        if model_replications:
            model_found = model_pairs(problem, populations=model_replications, n_draws=n_draws, seed=seed)
    world_found = {check: _world_pairs(rng, settings, simulated, n_draws, seed)
                   for check, settings in ((SIMULATED_WORLDS if worlds is None else worlds).items() if simulated else ())}
    return assembled_check(split_found, world_found, model_found)


MODEL_STREAM = 2  # the model populations' random stream: (seed, MODEL_STREAM), apart from the splits' and worlds'


def model_pairs(problem: Problem, *, populations: int, n_draws: int, seed: int) -> pl.DataFrame:
    """The `model` check's pairs: `populations` truths drawn from the model fitted on `problem`
    (`model_population`), each re-estimated from its new judge sample with `n_draws` draws."""
    rng = np.random.default_rng([seed, MODEL_STREAM])
    assisted = ModelAssisted(problem)
    found = []
    for r in range(populations):
        population, truth = model_population(problem, rng, assisted)
        found.append(coverage_pairs(population, truth, n_draws, seed + 200 + r, replication=r))
    return pl.concat(found)


def _has_splits(problem: Problem | None) -> bool:
    return problem is not None and bool(problem.text_sampled.any())


def _split_pairs(problem: Problem, rng: np.random.Generator, fraction: float, replications: int, n_draws: int,
                 seed: int, relabel: Relabel | None) -> pl.DataFrame:
    found = []
    for r in range(replications):
        split, truth = split_sample_problem(problem, rng, fraction=fraction, relabel=relabel)
        found.append(coverage_pairs(split, truth, n_draws, seed + r, replication=r))
    return pl.concat(found)


def _world_pairs(rng: np.random.Generator, settings: dict[str, object], simulated: int, n_draws: int,
                 seed: int) -> pl.DataFrame:
    found = []
    for r in range(simulated):
        sim = simulate(rng, **settings)  # type: ignore[arg-type]
        found.append(coverage_pairs(sim.problem, sim.truth_counts, n_draws, seed + 100 + r, replication=r))
    return pl.concat(found)


def split_pairs(problem: Problem, check: str, *, replications: int, n_draws: int, seed: int,
                splits: dict[str, float] | None = None, relabel: Relabel | None = None) -> pl.DataFrame:
    """The pairs of one split check of `unit_coverage_check` (the same arguments), computed alone: the random
    stream advanced past the split checks before it without building them (checks.skip_splits)."""
    rng = np.random.default_rng(seed)
    for name, fraction in (SPLITS if splits is None else splits).items():
        if name == check:
            return _split_pairs(problem, rng, fraction, replications, n_draws, seed, relabel)
        skip_splits(problem, rng, fraction, replications)
    raise KeyError(check)


def world_pairs(problem: Problem | None, check: str, *, replications: int, n_draws: int, seed: int, simulated: int,
                splits: dict[str, float] | None = None,
                worlds: dict[str, dict[str, object]] | None = None) -> pl.DataFrame:
    """The (unmapped) pairs of one simulated world of `unit_coverage_check` without model populations (the same
    arguments), computed alone: the stream advanced past every split and the worlds before it (their
    populations are drawn, ~0.01-0.05 CPU-s each, not estimated)."""
    rng = np.random.default_rng(seed)
    if _has_splits(problem):
        assert problem is not None
        for fraction in (SPLITS if splits is None else splits).values():
            skip_splits(problem, rng, fraction, replications)
    for name, settings in (SIMULATED_WORLDS if worlds is None else worlds).items():
        if name == check:
            return _world_pairs(rng, settings, simulated, n_draws, seed)
        for _ in range(simulated):
            simulate(rng, **settings)  # type: ignore[arg-type]
    raise KeyError(check)


def assembled_check(split_found: dict[str, pl.DataFrame], world_found: dict[str, pl.DataFrame],
                    model_found: pl.DataFrame | None = None) -> CoverageCheck:
    """`unit_coverage_check`'s result from its parts' pairs (split checks, worlds, in their orders): the map fitted
    on MAP_CHECK's pairs (or the first split check's), its own check cross-fitted, the other split checks and the
    worlds through it (the model populations' pairs as they are), every check binned."""
    pairs: dict[str, pl.DataFrame] = dict(split_found)
    coverage_map = CoverageMap()
    source = MAP_CHECK if MAP_CHECK in pairs else next(iter(pairs), None)
    if source is not None:
        coverage_map = fit_coverage_map(pairs[source], source)
        for check, found in pairs.items():  # the map's own check cross-fitted, the others through the map
            if check == source:
                pairs[check] = cross_fitted(found)
            else:
                pairs[check] = _mapped_pairs(found, coverage_map)
    if model_found is not None:
        pairs["model"] = model_found
    for check, found in world_found.items():
        # the published map carried into the world (a transfer test: fitted on the mirror, never on the world)
        pairs[check] = _mapped_pairs(found, coverage_map) if coverage_map.curves else found
    frames: list[pl.DataFrame] = []
    for check, found in pairs.items():
        n_rep = int(found["replication"].n_unique())
        frames.append(bin_coverage(found, check, n_rep))
        if CALIBRATED in found.columns:
            frames.append(bin_coverage(found, check, n_rep, CALIBRATED))
    table = pl.concat(frames) if frames else pl.DataFrame(schema=COVERAGE_CHECK_SCHEMA)
    return CoverageCheck(table, coverage_map, pairs)


def _mapped_pairs(pairs: pl.DataFrame, coverage_map: CoverageMap) -> pl.DataFrame:
    values = np.empty(pairs.height)
    for (level, threshold), index in pairs.with_row_index("_i").group_by("unit", "threshold"):
        values[index["_i"].to_numpy()] = coverage_map.apply(str(level), int(threshold), index[RAW].to_numpy())
    return not_rising(pairs.with_columns(pl.Series(CALIBRATED, values)), PAIR_KEYS)


def unit_coverage_simulation_check(problem: Problem | None, **settings: object) -> pl.DataFrame:
    """The check's table alone (unit_coverage_check)."""
    return unit_coverage_check(problem, **settings).table  # type: ignore[arg-type]
