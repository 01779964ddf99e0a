"""Statistical power of occupation scores: how many more prompts per task would shrink the CI of an
occupation's O*NET-weighted score (models/scores.py) below a target width."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from models.coverage import prompt_task_pairs, select_labeler
from models.scores import KeptModelRows, mean_prompt_scores
from models.stats import z_value

POWER_SCHEMA = {
    "onet_soc_code": pl.Utf8,
    "model": pl.Utf8,
    "min_prompts": pl.Int64,
    "n_tasks": pl.Int64,
    "n_prompt_task_pairs": pl.Int64,
    "mean_prompts_per_task": pl.Float64,
    "min_prompts_per_task": pl.Int64,
    "pooled_sd": pl.Float64,
    "tasks_variance_pooled": pl.Int64,
    "tasks_variance_smoothed": pl.Int64,
    "analytic_ci_width": pl.Float64,
    "target_width": pl.Float64,
    "meets_target": pl.Boolean,
    "extra_prompts_per_task": pl.Int64,
    "extra_prompts_total": pl.Int64,
    "projected_ci_width": pl.Float64,
}


def smoothed_bernoulli_variance(totals: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """p (1 - p) with p = (total + 0.5) / (n + 1): the variance a [0, 1] score with that smoothed mean can
    have at most, standing in for an observed variance of 0 (all scores equal)."""
    p = (np.asarray(totals, dtype=float) + 0.5) / (np.asarray(counts, dtype=float) + 1.0)
    return p * (1.0 - p)


def extra_prompts_needed(
    variances: np.ndarray, counts: np.ndarray, target_width: float, alpha: float = 0.05
) -> tuple[int | None, float, float]:
    """Smallest d >= 0 such that the CI of the equally weighted mean of task means, with d more prompts in
    every task, is at most `target_width` wide: 2 z / K * sqrt(sum_k var_k / (n_k + d)) <= target_width.

    Returns (d, current width, width with d). d is None when there is no task (K = 0).
    """
    variances = np.asarray(variances, dtype=float)
    counts = np.asarray(counts, dtype=float)
    k = variances.size
    if k == 0:
        return None, math.nan, math.nan
    scale = 2.0 * z_value(alpha) / k

    def width(extra: int) -> float:
        return float(scale * math.sqrt(float(np.sum(variances / (counts + extra)))))

    current = width(0)
    if current <= target_width:
        return 0, current, current
    # with every task at >= d prompts the sum is <= sum(var) / d, so this d is always enough
    high = max(1, math.ceil(scale**2 * float(variances.sum()) / target_width**2))
    low = 0
    while high - low > 1:
        middle = (low + high) // 2
        if width(middle) <= target_width:
            high = middle
        else:
            low = middle
    return high, current, width(high)


def score_power(
    results: pl.DataFrame,
    labels: pl.DataFrame,
    target_width: float = 0.10,
    min_prompts: Sequence[int] = (5, 1),
    *,
    labeler: str | None = None,
    alpha: float = 0.05,
    scores: pl.DataFrame | None = None,
    kept: KeptModelRows | None = None,
) -> pl.DataFrame:
    """Per occupation x model x min_prompts (the rows of occupation_model_scores): how many more prompts per
    task would bring the (1 - alpha) CI of the O*NET-weighted score below `target_width` (score scale [0, 1]).

    The weighted score is the equal-weight mean of the task means of the K tasks with >= min_prompts scored
    prompts (models/scores.py), so Var = sum_k s_k^2 / n_k / K^2 with s_k^2 each task's observed sample
    variance of prompt scores (ddof 1). Two repairs keep a handful of identical scores from looking certain:
    a task whose n_k >= 2 scores are all equal (s_k^2 = 0) takes the smoothed Bernoulli variance
    p(1 - p), p = (sum + 0.5) / (n_k + 1) (`tasks_variance_smoothed`); a task with a single prompt, whose
    variance is not observed, takes the pooled within-task variance of the occupation x model, or when no
    task has two prompts the variance of all its prompt scores, smoothed the same way when it is 0
    (`tasks_variance_pooled`). `scores` (occupation_model_scores) adds its bootstrap interval for comparison.
    `kept`: a model's rows are a function of its joined prompt x task x score rows and the parameters alone, so
    they can be kept under those and read back (assets/kept_rows.py).
    """
    if target_width <= 0:
        raise ValueError(f"target_width must be > 0, got {target_width}")
    labels, _ = select_labeler(labels, labeler)
    prompt_tasks = prompt_task_pairs(labels)
    prompt_scores = mean_prompt_scores(results)
    rows: list[dict[str, object]] = []
    # one model at a time: the prompt x task x model join is the largest frame; groups are independent
    for _, model_scores in prompt_scores.sort("model").group_by("model", maintain_order=True):
        rows += _power_rows(model_scores, prompt_tasks, target_width, min_prompts, alpha, kept)
    out = pl.DataFrame(rows, schema=POWER_SCHEMA)
    if scores is not None and scores.height:
        observed_ci = scores.select(
            pl.col("onet_soc_code").cast(pl.Utf8),
            pl.col("model").cast(pl.Utf8),
            pl.col("min_prompts").cast(pl.Int64),
            "weighted_mean",
            "weighted_ci_low",
            "weighted_ci_high",
            (pl.col("weighted_ci_high") - pl.col("weighted_ci_low")).alias("bootstrap_ci_width"),
        )
        out = out.join(observed_ci, on=["onet_soc_code", "model", "min_prompts"], how="left")
    return out.sort("onet_soc_code", "model", "min_prompts")


def _power_rows(
    prompt_scores: pl.DataFrame,
    prompt_tasks: pl.DataFrame,
    target_width: float,
    min_prompts: Sequence[int],
    alpha: float,
    kept: KeptModelRows | None = None,
) -> list[dict[str, object]]:
    """score_power's rows for the models in `prompt_scores` (one model per call)."""
    joined = prompt_scores.join(prompt_tasks, on=["benchmark", "prompt_id"], how="inner")
    if kept is not None and joined.height:
        return kept(str(joined["model"][0]), joined.sort(joined.columns), (target_width, tuple(min_prompts), alpha),
                    lambda: _joined_power_rows(joined, target_width, min_prompts, alpha))
    return _joined_power_rows(joined, target_width, min_prompts, alpha)


def _joined_power_rows(joined: pl.DataFrame, target_width: float, min_prompts: Sequence[int],
                       alpha: float) -> list[dict[str, object]]:
    """The rows of the occupation x model groups of `joined` (a model's prompt scores joined to their tasks)."""
    per_task = (
        joined
        .group_by("onet_soc_code", "model", "task_id")
        .agg(
            pl.len().cast(pl.Int64).alias("n"),
            pl.col("score").var(ddof=1).alias("var"),
            pl.col("score").sum().alias("total"),
            pl.col("score").alias("scores"),
        )
        .sort("onet_soc_code", "model", "task_id")
    )
    rows: list[dict[str, object]] = []
    for (occupation, model), group in per_task.group_by(["onet_soc_code", "model"], maintain_order=True):
        counts_all, var_all, observed, smoothed, pooled = _task_variances(group)
        for m in min_prompts:
            eligible = counts_all >= m
            variances = np.where(observed, var_all, pooled)[eligible]
            counts = counts_all[eligible]
            extra, current, projected = extra_prompts_needed(variances, counts, target_width, alpha)
            rows.append(
                {
                    "onet_soc_code": occupation,
                    "model": model,
                    "min_prompts": int(m),
                    "n_tasks": int(eligible.sum()),
                    "n_prompt_task_pairs": int(counts.sum()),
                    "mean_prompts_per_task": float(counts.mean()) if counts.size else None,
                    "min_prompts_per_task": int(counts.min()) if counts.size else None,
                    "pooled_sd": math.sqrt(pooled),
                    "tasks_variance_pooled": int((~observed[eligible]).sum()),
                    "tasks_variance_smoothed": int(smoothed[eligible].sum()),
                    "analytic_ci_width": None if math.isnan(current) else current,
                    "target_width": target_width,
                    "meets_target": None if extra is None else extra == 0,
                    "extra_prompts_per_task": extra,
                    "extra_prompts_total": None if extra is None else extra * int(eligible.sum()),
                    "projected_ci_width": None if math.isnan(projected) else projected,
                }
            )
    return rows


def _task_variances(group: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """One occupation x model's per-task prompt counts and score variances (score_power's two repairs):
    (counts, variances with 0 replaced by the smoothed Bernoulli variance, observed mask, smoothed mask,
    pooled within-task variance standing in for the tasks whose variance is not observed)."""
    counts = group["n"].to_numpy().astype(float)
    variances = group["var"].fill_null(math.nan).to_numpy().astype(float)
    observed = np.isfinite(variances) & (counts >= 2)
    smoothed = observed & (variances <= 0.0)
    variances = np.where(smoothed, smoothed_bernoulli_variance(group["total"].to_numpy(), counts), variances)
    if observed.any():
        pooled = float(np.sum((counts[observed] - 1) * variances[observed]) / np.sum(counts[observed] - 1))
    else:  # no task has two prompts: the variance of all the group's scores, smoothed when 0
        every = np.concatenate([np.asarray(s, dtype=float) for s in group["scores"].to_list()])
        pooled = float(np.var(every, ddof=1)) if every.size >= 2 else 0.0
        if not pooled > 0.0:
            pooled = float(smoothed_bernoulli_variance(np.array([every.sum()]), np.array([every.size]))[0])
    return counts, variances, observed, smoothed, pooled
