"""Are the per-text and per-unit probabilities calibrated? (issue 25, item 4)

Per-text occupation probabilities (`occupation_probability_calibration`): the judge sample is split by text;
the held-out texts become unsampled (their judge labels hidden), the rest of the sample fits the draws
(recalibration, miss model) and the held-out texts get their probabilities as any unread text does. Two
splits: five folds within every benchmark (the rest of the benchmark's sample is available, as for an unread
text of a sampled benchmark), and leave one benchmark out (none of its sample is: as for a benchmark that
arrives without one). Against the judge: top-1 accuracy (the most probable occupation is one the judge gave;
texts the judge gave an occupation), Brier score over the pairs either side names (text x occupation: the
model's p >= 0.01, the labeler's occupations and the judge's), and the expected calibration error over pairs
with p >= 0.05 in ten bins of width 0.1. Baseline: the labeler's own labels as 0/1 (the labels as counted;
for the judged texts the estimates' labels, which are cross-validated).

Per-unit p_covered (`unit_coverage_simulation_check`) has no direct truth. Two checks with a known truth:
`split`: the judge-labeled texts are the population (truth: their judge labels), a part of each benchmark's
is the sample, the rest is imputed (models.estimates.checks.split_sample_problem); `simulated`: populations
drawn from a model of a labeler with misses and overconfidence (models.estimates.checks.simulate). In both the
units are binned by p_covered and the share truly covered per bin is compared with the bin's mean p.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from models.estimates.checks import Relabel, simulate, split_sample_problem
from models.estimates.problem import THRESHOLDS, Problem, scopes_for
from models.estimates.tables import run_estimators
from models.estimates.texts import text_occupation_probabilities
from models.estimates.units import UNIT_LEVELS, UnitDraws

ECE_MIN_P = 0.05
N_BINS = 10
CALIBRATION_SCHEMA: dict[str, pl.DataType] = {
    "evaluation": pl.Utf8(),
    "predictor": pl.Utf8(),
    "bin": pl.Int64(),
    "p_low": pl.Float64(),
    "p_high": pl.Float64(),
    "n_pairs": pl.Int64(),
    "mean_p": pl.Float64(),
    "observed": pl.Float64(),
    "n_texts": pl.Int64(),
    "top1_accuracy": pl.Float64(),
    "brier": pl.Float64(),
    "ece": pl.Float64(),
}


def hide_texts(problem: Problem, held_out: np.ndarray) -> Problem:
    """The problem with the `held_out` texts (bool over texts) unsampled: their judge labels removed."""
    keep = ~held_out[problem.jud_text]
    return Problem(**{**problem.__dict__, "text_sampled": problem.text_sampled & ~held_out,
                      "jud_text": problem.jud_text[keep], "jud_task": problem.jud_task[keep],
                      "jud_in_labels": problem.jud_in_labels[keep]})


def within_benchmark_folds(problem: Problem, n_folds: int, rng: np.random.Generator) -> np.ndarray:
    """Fold of every sampled text (-1 for the others): a random permutation within each benchmark, dealt out."""
    fold = np.full(problem.text_bench.shape[0], -1)
    for b in np.unique(problem.text_bench[problem.text_sampled]):
        members = rng.permutation(np.flatnonzero(problem.text_sampled & (problem.text_bench == b)))
        fold[members] = np.arange(members.size) % n_folds
    return fold


def _held_out_predictions(problem: Problem, splits: Sequence[np.ndarray], n_draws: int, seed: int) -> pl.DataFrame:
    """t, o, p, labeled of the held-out texts of every split (each text held out once)."""
    frames = []
    for i, held_out in enumerate(splits):
        if not held_out.any():
            continue
        draws = text_occupation_probabilities(hide_texts(problem, held_out), n_draws, seed + i)
        frame = draws.long_frame()
        frames.append(frame.filter(pl.col("t").is_in(np.flatnonzero(held_out).tolist()))
                      .select("t", "o", "p", "labeled"))
    if not frames:
        return pl.DataFrame(schema={"t": pl.Int64, "o": pl.Int64, "p": pl.Float64, "labeled": pl.Boolean})
    return pl.concat(frames)


# --- recalibration of the per-text probabilities ----------------------------------------------------------------


def _features(p: np.ndarray, labeled: np.ndarray) -> np.ndarray:
    """Log-odds of p, whether the text has a label in the occupation, and their product: the share of draws
    treats a text's labels of one occupation as independent, and on the judge sample the labeled pairs and the
    miss model's pairs are off in different ways."""
    x = np.log(np.clip(p, 1e-4, 1 - 1e-4) / (1 - np.clip(p, 1e-4, 1 - 1e-4)))
    lab = labeled.astype(float)
    return np.column_stack([x, lab, x * lab])


def fit_recalibration(p: np.ndarray, labeled: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """(intercept, coefficients) of a logistic recalibration of p (Platt scaling with the labeled flag); None
    without both outcomes."""
    from sklearn.linear_model import LogisticRegression

    if p.size < 20 or y.min() == y.max():
        return None
    model = LogisticRegression(C=100.0, max_iter=1000).fit(_features(p, labeled), y)
    return np.concatenate([model.intercept_, model.coef_[0]])


def apply_recalibration(coef: np.ndarray | None, p: np.ndarray, labeled: np.ndarray) -> np.ndarray:
    if coef is None:
        return p
    return 1.0 / (1.0 + np.exp(-(coef[0] + _features(p, labeled) @ coef[1:])))


@dataclass
class Recalibration:
    """The maps from p to p_calibrated, fitted on the judge sample's held-out predictions: `within` for texts
    of benchmarks with a judge sample, `without` (leave one benchmark out) for the others."""

    within: np.ndarray | None
    without: np.ndarray | None

    def __call__(self, long: pl.DataFrame) -> pl.Series:
        p = long["p"].to_numpy()
        labeled = long["labeled"].to_numpy()
        sampled = long["sampled_benchmark"].to_numpy()
        out = np.where(sampled, apply_recalibration(self.within, p, labeled),
                       apply_recalibration(self.without, p, labeled))
        return pl.Series("p_calibrated", out, pl.Float64)


def _with_outcome(predictions: pl.DataFrame, truth: pl.DataFrame) -> pl.DataFrame:
    return predictions.join(truth.select("t", "o").with_columns(pl.lit(1.0).alias("y")), on=["t", "o"],
                            how="left").with_columns(pl.col("y").fill_null(0.0))


def cross_fitted_recalibration(predictions: pl.DataFrame, truth: pl.DataFrame, text_bench: np.ndarray
                               ) -> tuple[pl.DataFrame, np.ndarray | None]:
    """Each benchmark's held-out predictions recalibrated by a map fitted on the other benchmarks' (so no text
    is corrected by a fit that saw it); and the map fitted on all of them (for the published table)."""
    rows = _with_outcome(predictions, truth).with_columns(
        pl.Series("b", text_bench[predictions["t"].to_numpy()]))
    p, labeled, y, bench = (rows[c].to_numpy() for c in ("p", "labeled", "y", "b"))
    out = p.copy()
    for b in np.unique(bench):
        mine = bench == b
        out[mine] = apply_recalibration(fit_recalibration(p[~mine], labeled[~mine], y[~mine]), p[mine], labeled[mine])
    recalibrated = rows.select("t", "o", "labeled").with_columns(pl.Series("p", out))
    return recalibrated, fit_recalibration(p, labeled, y)


def _truth_and_labels(problem: Problem, texts: np.ndarray) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(judge occupations, labeler occupations with their largest p) of `texts`."""
    pr = problem
    judge = pl.DataFrame({"t": pr.jud_text.astype(np.int64), "o": pr.task_occ[pr.jud_task].astype(np.int64)}).unique()
    labels = pl.DataFrame({"t": pr.lab_text.astype(np.int64), "o": pr.task_occ[pr.lab_task].astype(np.int64),
                           "label_p": pr.lab_p}).group_by("t", "o").agg(pl.col("label_p").max())
    keep = pl.col("t").is_in(texts.tolist())
    return judge.filter(keep), labels.filter(keep)


def score(predictions: pl.DataFrame, truth: pl.DataFrame, texts: np.ndarray, universe: pl.DataFrame,
          n_bins: int = N_BINS, min_p: float = ECE_MIN_P) -> tuple[dict[str, float], pl.DataFrame]:
    """Top-1 accuracy, Brier and ECE of (t, o, p) against the judge's (t, o) (top-1 by `rank_p` when given: the
    raw labels' first occupation is their most confident label's); `texts`: the texts scored (a text
    without predictions predicts nothing); `universe`: the (t, o) pairs the Brier score averages over (the same
    for every predictor compared; pairs outside it are p = 0 and not exercised for all of them). Returns the
    summary and the reliability bins."""
    pairs = (
        universe.select("t", "o").unique()
        .join(predictions.select("t", "o", "p"), on=["t", "o"], how="left")
        .join(truth.select("t", "o").with_columns(pl.lit(1.0).alias("y")), on=["t", "o"], how="left")
        .with_columns(pl.col("p").fill_null(0.0), pl.col("y").fill_null(0.0))
    )
    work_texts = truth["t"].unique()
    rank = "rank_p" if "rank_p" in predictions.columns else "p"  # 0/1 labels rank by the label's own p
    top = predictions.sort([rank, "o"], descending=[True, False], maintain_order=True).group_by(
        "t", maintain_order=True).first()
    hits = top.join(truth.with_columns(pl.lit(True).alias("hit")), on=["t", "o"], how="left")
    n_work = work_texts.len()
    top1 = float(hits.filter(pl.col("t").is_in(work_texts.implode()) & pl.col("hit").fill_null(False)).height
                 / n_work) if n_work else float("nan")
    brier = float(((pairs["p"] - pairs["y"]) ** 2).mean()) if pairs.height else float("nan")
    binned = pairs.filter(pl.col("p") >= min_p).with_columns(
        (pl.col("p") * n_bins).floor().clip(0, n_bins - 1).cast(pl.Int64).alias("bin"))
    bins = binned.group_by("bin").agg(pl.len().cast(pl.Int64).alias("n_pairs"), pl.col("p").mean().alias("mean_p"),
                                      pl.col("y").mean().alias("observed")).sort("bin").with_columns(
        (pl.col("bin") / n_bins).alias("p_low"), ((pl.col("bin") + 1) / n_bins).alias("p_high"))
    total = int(bins["n_pairs"].sum()) if bins.height else 0
    ece = float(((bins["mean_p"] - bins["observed"]).abs() * bins["n_pairs"]).sum() / total) if total else float("nan")
    return {"top1_accuracy": top1, "brier": brier, "ece": ece, "n_texts": float(len(texts))}, bins


def text_probability_calibration(problem: Problem, *, n_folds: int = 5, n_draws: int = 40, seed: int = 25,
                                 leave_benchmark_out: bool = True) -> tuple[pl.DataFrame, Recalibration]:
    """The `occupation_probability_calibration` table (CALIBRATION_SCHEMA): per evaluation and predictor (model:
    the share of draws; model_recalibrated: that, through a logistic map fitted on the other benchmarks'
    held-out predictions; raw_labels) a summary row (bin null) and its reliability bins; and the
    Recalibration fitted on every held-out prediction (p_calibrated of prompt_occupation_estimates)."""
    rng = np.random.default_rng(seed)
    sampled = problem.text_sampled
    fold = within_benchmark_folds(problem, n_folds, rng)
    evaluations = {"within_benchmark": [fold == f for f in range(n_folds)]}
    if leave_benchmark_out:
        evaluations["leave_one_benchmark_out"] = [
            sampled & (problem.text_bench == b) for b in np.unique(problem.text_bench[sampled])]
    texts = np.flatnonzero(sampled)
    truth, labels = _truth_and_labels(problem, texts)
    raw = labels.select("t", "o", pl.lit(1.0).alias("p"), pl.col("label_p").alias("rank_p"))
    rows: list[pl.DataFrame] = []
    maps: dict[str, np.ndarray | None] = {}
    for evaluation, splits in evaluations.items():
        predictions = _held_out_predictions(problem, splits, n_draws, seed)
        recalibrated, maps[evaluation] = cross_fitted_recalibration(predictions, truth, problem.text_bench)
        universe = pl.concat([f.select(pl.col("t").cast(pl.Int64), pl.col("o").cast(pl.Int64))
                              for f in (predictions, raw, truth)])
        for predictor, frame in (("model", predictions), ("model_recalibrated", recalibrated), ("raw_labels", raw)):
            summary, bins = score(frame, truth, texts, universe)
            head = {"evaluation": evaluation, "predictor": predictor}
            rows.append(pl.DataFrame([{**head, "bin": None, "p_low": ECE_MIN_P, "p_high": 1.0,
                                       "n_pairs": int(bins["n_pairs"].sum()) if bins.height else 0,
                                       "mean_p": None, "observed": None, "n_texts": int(summary["n_texts"]),
                                       "top1_accuracy": summary["top1_accuracy"], "brier": summary["brier"],
                                       "ece": summary["ece"]}], schema=CALIBRATION_SCHEMA))
            rows.append(bins.with_columns(pl.lit(evaluation).alias("evaluation"), pl.lit(predictor).alias("predictor"),
                                          pl.lit(int(summary["n_texts"])).alias("n_texts"))
                        .with_columns([pl.lit(None, t).alias(c) for c, t in CALIBRATION_SCHEMA.items()
                                       if c in ("top1_accuracy", "brier", "ece")])
                        .select(list(CALIBRATION_SCHEMA)).cast(CALIBRATION_SCHEMA))  # type: ignore[arg-type]
    recalibration = Recalibration(maps.get("within_benchmark"), maps.get("leave_one_benchmark_out"))
    return pl.concat(rows), recalibration


def occupation_probability_calibration(problem: Problem, **settings: object) -> pl.DataFrame:
    """The calibration table alone (text_probability_calibration)."""
    return text_probability_calibration(problem, **settings)[0]  # type: ignore[arg-type]


# --- p_covered against a known truth --------------------------------------------------------------------------

COVERAGE_CHECK_SCHEMA: dict[str, pl.DataType] = {
    "check": pl.Utf8(),
    "unit": pl.Utf8(),
    "threshold": pl.Int64(),
    "bin": pl.Int64(),
    "p_low": pl.Float64(),
    "p_high": pl.Float64(),
    "n_units": pl.Int64(),
    "mean_p": pl.Float64(),
    "share_covered": pl.Float64(),
    "difference": pl.Float64(),
    "replications": pl.Int64(),
}


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
                   thresholds: Sequence[int] = THRESHOLDS) -> pl.DataFrame:
    """unit, threshold, p_covered, covered (truth) of every unit of the pooled scope."""
    p = _p_covered(problem, n_draws, seed, thresholds)
    frames = []
    for t in thresholds:
        truth = _unit_truth(problem, truth_counts, t)
        for level in UNIT_LEVELS:
            frames.append(pl.DataFrame({"unit": level, "threshold": int(t), "p_covered": p[(level, t)],
                                        "covered": truth[level]}))
    return pl.concat(frames)


def bin_coverage(pairs: pl.DataFrame, check: str, replications: int, n_bins: int = N_BINS) -> pl.DataFrame:
    """Share covered per p_covered bin (ten of width 0.1; p = 1 in the last) per unit level and threshold; units
    whose p_covered is exactly 0 in a population where they are also absent are many and trivially right, so
    they are left out (bin 0 holds 0 < p < 0.1)."""
    return (
        pairs.filter(pl.col("p_covered") > 0)
        .with_columns((pl.col("p_covered") * n_bins).floor().clip(0, n_bins - 1).cast(pl.Int64).alias("bin"))
        .group_by("unit", "threshold", "bin")
        .agg(pl.len().cast(pl.Int64).alias("n_units"), pl.col("p_covered").mean().alias("mean_p"),
             pl.col("covered").cast(pl.Float64).mean().alias("share_covered"))
        .with_columns(
            pl.lit(check).alias("check"), (pl.col("bin") / n_bins).alias("p_low"),
            ((pl.col("bin") + 1) / n_bins).alias("p_high"),
            (pl.col("share_covered") - pl.col("mean_p")).alias("difference"),
            pl.lit(replications, pl.Int64).alias("replications"),
        )
        .select(list(COVERAGE_CHECK_SCHEMA))
        .sort("unit", "threshold", "bin")
    )


SPLITS: dict[str, float] = {"split_half": 0.5, "split_fifth": 0.2}


def unit_coverage_simulation_check(problem: Problem | None, *, replications: int = 8, n_draws: int = 40,
                                   seed: int = 25, splits: dict[str, float] | None = None,
                                   simulated: int = 8, relabel: Relabel | None = None) -> pl.DataFrame:
    """The `unit_coverage_simulation_check` table (COVERAGE_CHECK_SCHEMA): `split_half` / `split_fifth` (the
    judge sample as the population, half / a fifth of each benchmark's sampled, the rest imputed: the fifth is
    closer to the headline, which imputes ~93% of the texts; needs `problem`) and `simulated`
    (models.estimates.checks.simulate populations). `relabel`: as split_sample_problem's (the neighbour step's
    labels recomputed from the estimation part)."""
    rng = np.random.default_rng(seed)
    frames = []
    if problem is not None and problem.text_sampled.any():
        for check, fraction in (SPLITS if splits is None else splits).items():
            pairs = []
            for r in range(replications):
                split, truth = split_sample_problem(problem, rng, fraction=fraction, relabel=relabel)
                pairs.append(coverage_pairs(split, truth, n_draws, seed + r))
            frames.append(bin_coverage(pl.concat(pairs), check, replications))
    if simulated:
        pairs = []
        for r in range(simulated):
            sim = simulate(rng)
            pairs.append(coverage_pairs(sim.problem, sim.truth_counts, n_draws, seed + 100 + r))
        frames.append(bin_coverage(pl.concat(pairs), "simulated", simulated))
    return pl.concat(frames) if frames else pl.DataFrame(schema=COVERAGE_CHECK_SCHEMA)
