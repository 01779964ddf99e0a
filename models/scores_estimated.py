"""Per-occupation model scores from the estimated occupations of each text, with the labeler's error
(issue 25 item 5).

`models/scores.py` counts a prompt in an occupation when a raw label names one of its tasks. Here a prompt
counts with the estimated probability that its text exercises the occupation (`prompt_occupation_estimates`;
the asset passes its `p_calibrated`, the calibrated probability of a single text,
from the headline's imputation draws; a judged text has p = 1 or 0). Multiple imputation:

- each of `n_draws` draws includes every prompt in the occupation with its probability p (independently:
  the table keeps each text's share of draws, not the draws) and takes the mean score of the included
  prompts (Q_d), with its sampling variance U_d clustered by benchmark (prompts of one benchmark are not
  independent pieces of the occupation's work; with a single benchmark the prompts are the clusters, and
  `cluster_unit` says so);
- Rubin's rules combine them over every draw that includes a prompt: the estimate is the mean of Q_d, the
  total variance W + (1 + 1/M) B (W: mean sampling variance, B: between-draw variance, the labeler's error), a
  t interval; `fraction_missing_info` is the share of the variance that comes from not knowing which prompts
  exercise the occupation. A draw whose prompts form a single cluster (often one prompt) has no clustered
  variance of its own; it takes the others' per-cluster variance (mean of U_d x clusters_d). Dropping such draws
  instead made the estimate a mean over draws with two or more prompts: for a pair of one certain prompt and one
  at p = 0.13 it gave their plain mean and no labeler error at all.

The point estimate is close to the p-weighted mean score. Pure: frames in, a frame out.
"""

from __future__ import annotations

import zlib

import numpy as np
import polars as pl

from models.estimates.checks import rubin_combine
from models.scores import PROMPT_KEY, KeptModelRows, mean_prompt_scores

N_DRAWS = 50
MIN_EXPECTED_PROMPTS = 1.0  # an occupation x model needs at least this many expected scored prompts

ESTIMATED_SCORES_SCHEMA = {
    "onet_soc_code": pl.Utf8,
    "model": pl.Utf8,
    "n_prompts": pl.Int64,
    "expected_prompts": pl.Float64,
    "n_benchmarks": pl.Int64,
    "cluster_unit": pl.Utf8,
    "n_clusters": pl.Int64,
    "estimated_mean": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "se": pl.Float64,
    "within_var": pl.Float64,
    "between_var": pl.Float64,
    "fraction_missing_info": pl.Float64,
    "n_draws": pl.Int64,
    "estimated_mean_mc_se": pl.Float64,
}


def _draw_statistics(score: np.ndarray, p: np.ndarray, cluster: np.ndarray, n_draws: int,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Q_d, U_d, G_d) per draw: the mean score of the included prompts, its clustered sampling variance
    (G/(G-1) sum over clusters of the summed residuals squared / included^2) and the clusters present; Q_d NaN
    for a draw with no prompt, U_d NaN also for a single cluster (see `_with_pooled_variance`)."""
    included = (rng.random((n_draws, score.size)) < p).astype(float)
    k = included.sum(axis=1)
    q = np.divide(included @ score, k, out=np.full(n_draws, np.nan), where=k > 0)
    residual = included * (score[None, :] - np.nan_to_num(q)[:, None])
    n_clusters = int(cluster.max()) + 1
    per_cluster = np.zeros((n_draws, n_clusters))
    present = np.zeros((n_draws, n_clusters))
    if n_clusters == cluster.size and np.bincount(cluster).max() == 1:
        # one prompt per cluster (a single benchmark: the prompts are the clusters): the sums are the prompts' own
        # values; a loop over the clusters with a mask over every prompt was O(prompts^2), and the one-hot
        # (draws x clusters x prompts) array 22 GB for a 7,500-prompt benchmark at 50x the mirror
        per_cluster[:, cluster] = residual
        present[:, cluster] = included
    else:  # few clusters (the benchmarks): one masked sum each, no (draws x clusters x prompts) array
        for c in range(n_clusters):
            member = cluster == c
            per_cluster[:, c] = residual[:, member].sum(axis=1)
            present[:, c] = included[:, member].sum(axis=1)
    g = (present > 0).sum(axis=1)
    u = np.divide(g / np.maximum(g - 1, 1) * (per_cluster**2).sum(axis=1), k**2,
                  out=np.full(n_draws, np.nan), where=(k > 0) & (g > 1))
    return q, u, g


def _with_pooled_variance(q: np.ndarray, u: np.ndarray, g: np.ndarray) -> np.ndarray:
    """U_d for every draw with a prompt: a draw of a single cluster, whose own clustered variance is not
    estimable, gets the per-cluster variance of the draws that have one (mean of U_d x G_d), over its one
    cluster; all NaN when no draw has two clusters (then there is no estimate)."""
    own = np.isfinite(u)
    if not own.any():
        return u
    per_cluster = float(np.mean(u[own] * g[own]))
    return np.where(np.isfinite(q) & ~own, per_cluster / np.maximum(g, 1), u)


def estimated_occupation_scores(
    results: pl.DataFrame,
    prompts: pl.DataFrame,
    occupation_p: pl.DataFrame,
    *,
    n_draws: int = N_DRAWS,
    seed: int = 0,
    min_expected_prompts: float = MIN_EXPECTED_PROMPTS,
    kept: KeptModelRows | None = None,
) -> pl.DataFrame:
    """One row per occupation x model with at least `min_expected_prompts` expected scored prompts
    (ESTIMATED_SCORES_SCHEMA).

    results: benchmark_results (benchmark, prompt_id, model, score; several runs averaged). prompts:
    benchmark_prompts (benchmark, prompt_id, prompt_hash). occupation_p: prompt_occupation_estimates
    (prompt_hash, benchmark, onet_soc_code, p). n_prompts: scored prompts with p > 0; expected_prompts:
    their sum of p. `kept`: a model's rows are a function of its joined score x p rows and the parameters alone
    (each group has its own seeded generator), so they can be kept under those and read back
    (assets/kept_rows.py)."""
    scored = mean_prompt_scores(results).join(
        prompts.select(pl.col("benchmark").cast(pl.Utf8), pl.col("prompt_id").cast(pl.Utf8),
                       pl.col("prompt_hash").cast(pl.Utf8)).unique(PROMPT_KEY),
        on=PROMPT_KEY, how="inner",
    )
    rows = scored.join(
        occupation_p.select(pl.col("benchmark").cast(pl.Utf8), pl.col("prompt_hash").cast(pl.Utf8),
                            pl.col("onet_soc_code").cast(pl.Utf8), pl.col("p").cast(pl.Float64)),
        on=["benchmark", "prompt_hash"], how="inner",
    ).filter(pl.col("p") > 0).sort("onet_soc_code", "model", "benchmark", "prompt_id")
    if kept is None:
        return _estimated_rows(rows, n_draws, seed, min_expected_prompts)
    parts = []
    for (model,), model_rows in rows.sort("model", maintain_order=True).group_by("model", maintain_order=True):
        parts.append(kept(str(model), model_rows, (n_draws, seed, min_expected_prompts),
                          lambda model_rows=model_rows: _estimated_rows(model_rows, n_draws, seed,
                                                                        min_expected_prompts)))
    if not parts:
        return pl.DataFrame(schema=ESTIMATED_SCORES_SCHEMA)
    # each (occupation, model) once: the one order of computing every model at once
    return pl.concat(parts).sort("onet_soc_code", "model")


SE_FLOOR = 1e-9  # a standard error below this is float rounding of equal scores (the mirror has one at 3e-17)


def _estimated_rows(rows: pl.DataFrame, n_draws: int, seed: int, min_expected_prompts: float) -> pl.DataFrame:
    """The rows of the occupation x model groups of `rows` (sorted by occupation, model, benchmark, prompt)."""
    out: list[dict[str, object]] = []
    for (code, model), group in rows.group_by(["onet_soc_code", "model"], maintain_order=True):
        p = np.clip(group["p"].to_numpy(), 0.0, 1.0)
        if p.sum() < min_expected_prompts:
            continue
        benchmarks = group["benchmark"].to_numpy()
        n_benchmarks = len(set(benchmarks.tolist()))
        # prompts of one benchmark are clustered; a single benchmark leaves only the prompts as clusters
        cluster = (np.unique(benchmarks, return_inverse=True)[1] if n_benchmarks > 1
                   else np.arange(group.height))
        rng = np.random.default_rng([seed, zlib.crc32(str(code).encode()), zlib.crc32(str(model).encode())])
        q, u, g = _draw_statistics(group["score"].to_numpy(), p, cluster, n_draws, rng)
        combined = rubin_combine(q, _with_pooled_variance(q, u, g))
        if int(combined["m"]) == 0:  # no draw had two clusters (a single prompt): no estimate, so no row
            continue
        spread = combined["se"] > SE_FLOOR
        out.append({
            "onet_soc_code": code, "model": model, "n_prompts": group.height, "expected_prompts": float(p.sum()),
            "n_benchmarks": n_benchmarks, "cluster_unit": "benchmark" if n_benchmarks > 1 else "prompt",
            "n_clusters": int(cluster.max()) + 1, "estimated_mean": combined["coef"],
            # se ~ 0 (up to float rounding of equal means): every draw saw the same, equal scores; no spread to
            # estimate, so no interval rather than a point
            "ci_low": max(0.0, combined["ci_low"]) if np.isfinite(combined["ci_low"]) and spread else None,
            "ci_high": min(1.0, combined["ci_high"]) if np.isfinite(combined["ci_high"]) and spread else None,
            "se": combined["se"], "within_var": combined["within_var"], "between_var": combined["between_var"],
            # without spread it is 0/0 of rounding (it read 1.0 on a variance of 3e-33): none
            "fraction_missing_info": combined["fraction_missing_info"] if spread else None,
            "n_draws": int(combined["m"]),
            # the mean of M independent draws: another seed moves it by about sqrt(B / M)
            "estimated_mean_mc_se": float(np.sqrt(combined["between_var"] / combined["m"])),
        })
    return pl.DataFrame(out, schema=ESTIMATED_SCORES_SCHEMA)
