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

Per-unit p_covered: models/estimates/coverage_check.py (`unit_coverage_simulation_check`).

Monte Carlo error: the summary rows carry `ece_se` / `brier_se` / `top1_se`, the jackknife standard error over
groups of the draws (how much the figure would move with other draws; the per-text p is exact per draw, so
only the bootstrap of the sample's parameters is noise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from models.estimates.draws import ModelAssisted
from models.estimates.problem import Problem
from models.estimates.texts import text_occupation_probabilities

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
    "top1_accuracy_se": pl.Float64(),
    "brier_se": pl.Float64(),
    "ece_se": pl.Float64(),
    "n_draws": pl.Int64(),
}
JACKKNIFE_GROUPS = 4  # groups of draws for the Monte Carlo standard errors


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


class _WithoutBenchmarks(ModelAssisted):
    """ModelAssisted of a problem whose held-out texts are whole benchmarks' samples: the mixture's
    leave-one-text-out log likelihood of every other sampled text is the same as in the full problem (its
    shares are within its own benchmark, the labeler's mass and the text's own labels do not depend on the
    sample), so the full fit's columns of the remaining texts are reused instead of recomputed."""

    def __init__(self, problem: Problem, full: ModelAssisted) -> None:
        self._full = full
        super().__init__(problem, full.prior)

    def _choose_weights(self) -> np.ndarray:
        full = self._full
        keep = np.isin(full.loglik_texts, self.missed_text)
        self.grid = full.grid
        self.loglik_texts = full.loglik_texts[keep]
        self.text_loglik = full.text_loglik[:, keep]
        if self.missed_text.size == 0:
            return np.array([0.0, 0.5, 0.5, 0.0, 0.0])
        return self.grid[int(np.argmax(self.text_loglik.sum(axis=1)))]


def _held_out_predictions(problem: Problem, splits: Sequence[np.ndarray], n_draws: int, seed: int,
                          groups: int = 1, full: ModelAssisted | None = None) -> list[pl.DataFrame]:
    """t, o, p, labeled of the held-out texts of every split (each text held out once): from every draw, then
    (groups > 1) from all draws but group g, for each g (the jackknife of the Monte Carlo error). `full`: the
    whole problem's ModelAssisted when every split holds out whole benchmarks (_WithoutBenchmarks)."""
    frames: list[list[pl.DataFrame]] = [[] for _ in range(1 + (groups if groups > 1 else 0))]
    for i, held_out in enumerate(splits):
        if not held_out.any():
            continue
        texts = np.flatnonzero(held_out)  # only the held-out texts' probabilities are computed
        hidden = hide_texts(problem, held_out)
        assisted = _WithoutBenchmarks(hidden, full) if full is not None else ModelAssisted(hidden)
        draws = text_occupation_probabilities(hidden, n_draws, seed + i, texts, groups, assisted)
        frames[0].append(draws.long_frame().select("t", "o", "p", "labeled"))
        for g in range(len(frames) - 1):
            frames[g + 1].append(draws.long_frame(leave_out=g).select("t", "o", "p", "labeled"))
    empty = pl.DataFrame(schema={"t": pl.Int64, "o": pl.Int64, "p": pl.Float64, "labeled": pl.Boolean})
    return [pl.concat(f) if f else empty for f in frames]


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
    # three features: Newton steps converge in a few iterations (lbfgs took ~10x the time, to a looser optimum)
    model = LogisticRegression(C=100.0, max_iter=200, solver="newton-cholesky").fit(_features(p, labeled), y)
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
    judge = pl.DataFrame({"t": pr.jud_text.astype(np.int64),
                          "o": pr.task_occ[pr.jud_task].astype(np.int64)}).unique().sort("t", "o")
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
        .sort("t", "o")  # the sums below in a fixed order: two runs on the same inputs differed by 4e-14
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
    bins = binned.group_by("bin", maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("n_pairs"), pl.col("p").mean().alias("mean_p"),
        pl.col("y").mean().alias("observed")).sort("bin").with_columns(
        (pl.col("bin") / n_bins).alias("p_low"), ((pl.col("bin") + 1) / n_bins).alias("p_high"))
    total = int(bins["n_pairs"].sum()) if bins.height else 0
    ece = float(((bins["mean_p"] - bins["observed"]).abs() * bins["n_pairs"]).sum() / total) if total else float("nan")
    return {"top1_accuracy": top1, "brier": brier, "ece": ece, "n_texts": float(len(texts))}, bins


def text_probability_calibration(problem: Problem, *, n_folds: int = 5, n_draws: int = 40, seed: int = 25,
                                 leave_benchmark_out: bool = True, jackknife_groups: int = JACKKNIFE_GROUPS
                                 ) -> tuple[pl.DataFrame, Recalibration]:
    """The `occupation_probability_calibration` table (CALIBRATION_SCHEMA): per evaluation and predictor (model:
    the share of draws; model_recalibrated: that, through a logistic map fitted on the other benchmarks'
    held-out predictions; raw_labels) a summary row (bin null, with the Monte Carlo standard errors: the
    jackknife over `jackknife_groups` groups of the draws) and its reliability bins; and the Recalibration
    fitted on every held-out prediction (p_calibrated of prompt_occupation_estimates)."""
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
    metrics = ("top1_accuracy", "brier", "ece")
    for evaluation, splits in evaluations.items():
        full = ModelAssisted(problem) if evaluation == "leave_one_benchmark_out" else None
        every, *jackknife = _held_out_predictions(problem, splits, n_draws, seed, jackknife_groups, full)
        scored: list[dict[str, tuple[dict[str, float], pl.DataFrame]]] = []
        for k, predictions in enumerate([every, *jackknife]):
            recalibrated, fitted = cross_fitted_recalibration(predictions, truth, problem.text_bench)
            if k == 0:
                maps[evaluation] = fitted
            universe = pl.concat([f.select(pl.col("t").cast(pl.Int64), pl.col("o").cast(pl.Int64))
                                  for f in (predictions, raw, truth)])
            scored.append({name: score(frame, truth, texts, universe) for name, frame in
                           (("model", predictions), ("model_recalibrated", recalibrated), ("raw_labels", raw))})
        for predictor, (summary, bins) in scored[0].items():
            se = {m: _jackknife_se([s[predictor][0][m] for s in scored[1:]]) for m in metrics}
            head = {"evaluation": evaluation, "predictor": predictor}
            rows.append(pl.DataFrame([{**head, "bin": None, "p_low": ECE_MIN_P, "p_high": 1.0,
                                       "n_pairs": int(bins["n_pairs"].sum()) if bins.height else 0,
                                       "mean_p": None, "observed": None, "n_texts": int(summary["n_texts"]),
                                       **{m: summary[m] for m in metrics},
                                       **{f"{m}_se": se[m] for m in metrics}, "n_draws": n_draws}],
                                     schema=CALIBRATION_SCHEMA))
            rows.append(bins.with_columns(pl.lit(evaluation).alias("evaluation"), pl.lit(predictor).alias("predictor"),
                                          pl.lit(int(summary["n_texts"])).alias("n_texts"),
                                          pl.lit(n_draws, pl.Int64).alias("n_draws"))
                        .with_columns([pl.lit(None, t).alias(c) for c, t in CALIBRATION_SCHEMA.items()
                                       if c.startswith(metrics)])
                        .select(list(CALIBRATION_SCHEMA)).cast(CALIBRATION_SCHEMA))  # type: ignore[arg-type]
    recalibration = Recalibration(maps.get("within_benchmark"), maps.get("leave_one_benchmark_out"))
    return pl.concat(rows), recalibration


def _jackknife_se(values: Sequence[float]) -> float | None:
    """Delete-a-group jackknife standard error of a figure from its leave-one-group-out values."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size < 2:
        return None
    return float(np.sqrt((v.size - 1) / v.size * ((v - v.mean()) ** 2).sum()))


def occupation_probability_calibration(problem: Problem, **settings: object) -> pl.DataFrame:
    """The calibration table alone (text_probability_calibration)."""
    return text_probability_calibration(problem, **settings)[0]  # type: ignore[arg-type]
