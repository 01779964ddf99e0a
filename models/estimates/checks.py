"""The judge sample's design and draw, the labeler's reliability, Rubin's rules, and the checks with a known
truth: the split-sample check on the judge sample (simulated populations: models/estimates/simulation.py)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import polars as pl

from models.estimates.problem import (
    QUANTITIES,
    THRESHOLDS,
    Aggregator,
    Problem,
    Scope,
    task_counts,
)
from models.estimates.tables import estimates_frame, run_estimators

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
    rows_t, rows_k, rows_p = pr.lab_text[on_sample], pr.lab_task[on_sample], pr.lab_p[on_sample]
    judged = np.unique(pr.jud_text.astype(np.int64) * pr.n_tasks + pr.jud_task)
    observed = np.isin(rows_t.astype(np.int64) * pr.n_tasks + rows_k, judged)
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


# (kept: the split's texts as indices of the full problem, sampled: which of them stay judged) -> their labels
# (lab_text as positions in `kept`, lab_task, lab_p): labels recomputed from the sampled part's judge labels alone
Relabel = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


def split_selection(problem: Problem, rng: np.random.Generator, fraction: float = 0.5) -> np.ndarray:
    """Which of the sampled texts (bool over them, in text order) stay sampled in a split: a random `fraction` of
    each benchmark's (at least one). The only draws from `rng` a split makes, so calling it alone advances `rng`
    exactly as `split_sample_problem` does (skip_splits)."""
    bench = problem.text_bench[np.flatnonzero(problem.text_sampled)]
    new_sampled = np.zeros(bench.size, dtype=bool)
    for b in np.unique(bench):
        members = np.flatnonzero(bench == b)
        n = max(1, int(round(fraction * members.size)))
        new_sampled[rng.choice(members, size=min(n, members.size), replace=False)] = True
    return new_sampled


def skip_splits(problem: Problem, rng: np.random.Generator, fraction: float, n: int) -> None:
    """Advance `rng` past `n` splits of `fraction` without building them (a later part of a check that runs in
    another process starts where the earlier parts left the random stream)."""
    for _ in range(n):
        split_selection(problem, rng, fraction)


def split_sample_problem(problem: Problem, rng: np.random.Generator, fraction: float = 0.5,
                         relabel: Relabel | None = None) -> tuple[Problem, np.ndarray]:
    """The judge-labeled sub-population as a population with known truth: only sampled texts are kept, a
    random `fraction` of each benchmark's (at least one) stays 'sampled', the rest is held out. Returns the
    problem and the held-out truth counts (B, K) of the kept texts (judge labels of every kept text).

    `relabel`: for a labeler that learns from the judged texts of a benchmark (the neighbour step), the
    split's labels recomputed from the sampled part alone, so a held-out text is labeled as the pipeline
    labels a text the judge never read (without it, its labels were voted by other held-out texts' judge
    labels, and the check would not test the estimators on unjudged texts)."""
    keep = np.flatnonzero(problem.text_sampled)
    remap = np.full(problem.text_bench.shape[0], -1)
    remap[keep] = np.arange(keep.size)
    bench = problem.text_bench[keep]
    new_sampled = split_selection(problem, rng, fraction)
    lab_keep = remap[problem.lab_text] >= 0
    jud_t = remap[problem.jud_text]
    lab_text, lab_task, lab_p = remap[problem.lab_text][lab_keep], problem.lab_task[lab_keep], problem.lab_p[lab_keep]
    jud_in_labels = problem.jud_in_labels
    if relabel is not None:
        lab_text, lab_task, lab_p = relabel(keep, new_sampled)
        order = np.lexsort((lab_p, lab_task, lab_text))  # build_problem's order: the draws follow it
        lab_text, lab_task, lab_p = lab_text[order], lab_task[order], lab_p[order]
        n_tasks = problem.task_keys.height
        jud_in_labels = np.isin(jud_t * n_tasks + problem.jud_task, lab_text * n_tasks + lab_task)
    truth_problem = Problem(
        benchmarks=problem.benchmarks, task_keys=problem.task_keys, text_bench=bench,
        text_mult=np.ones(keep.size), text_sampled=np.ones(keep.size, dtype=bool),
        lab_text=lab_text, lab_task=lab_task,
        lab_p=lab_p, jud_text=jud_t, jud_task=problem.jud_task,
        jud_in_labels=jud_in_labels, task_occ=problem.task_occ, occ_group=problem.occ_group,
        n_groups=problem.n_groups, task_hours=problem.task_hours, total_hours=problem.total_hours,
    )
    truth = task_counts(truth_problem, jud_t, problem.jud_task, np.ones(jud_t.shape[0]))
    in_part = new_sampled[jud_t]
    split = Problem(
        **{**truth_problem.__dict__, "text_sampled": new_sampled, "jud_text": jud_t[in_part],
           "jud_task": problem.jud_task[in_part], "jud_in_labels": jud_in_labels[in_part]}
    )
    return split, truth


def check_against_truth(
    problem: Problem, truth_counts: np.ndarray, scopes: Sequence[Scope], *, n_draws: int, seed: int,
    thresholds: Sequence[int] = THRESHOLDS,
) -> pl.DataFrame:
    """Every estimator on `problem` next to the truth: scope, quantity, threshold, estimator, value, ci_low,
    ci_high, truth, covered (truth inside the interval), error (value - truth). The rows are those of
    `estimates_frame`, the published table's own function (its intervals, and the `bounds` rows of
    `with_bounds`), so the check tests exactly what is published."""
    agg = Aggregator(problem, scopes, thresholds)
    truth = agg.headline(truth_counts)
    result = run_estimators(problem, scopes, thresholds=thresholds, n_draws=n_draws, seed=seed)
    keys = ["benchmark_index", "scope", "quantity", "threshold"]
    truth_frame = pl.DataFrame(
        [
            (scope.benchmark_index, scope.scope, quantity, int(t), float(truth[si, qi, ti]))
            for si, scope in enumerate(scopes)
            for qi, quantity in enumerate(QUANTITIES)
            for ti, t in enumerate(thresholds)
        ],
        schema={"benchmark_index": pl.Utf8, "scope": pl.Utf8, "quantity": pl.Utf8, "threshold": pl.Int64,
                "truth": pl.Float64},
        orient="row",
    )
    inside = (pl.col("ci_low") - 1e-9 <= pl.col("truth")) & (pl.col("truth") <= pl.col("ci_high") + 1e-9)
    return (
        estimates_frame(problem, scopes, result, thresholds)
        .select(*keys, "estimator", "value", "ci_low", "ci_high")
        .join(truth_frame, on=keys, how="left")
        .with_columns(
            pl.when(pl.col("ci_low").is_null()).then(None).otherwise(inside).alias("covered"),
            (pl.col("value") - pl.col("truth")).alias("error"),
        )
    )


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
