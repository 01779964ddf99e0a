"""How well do AI models score on each occupation's benchmark prompts?

A prompt counts in an occupation when any of its labeled tasks belongs to that occupation; a prompt labeled
with several tasks counts in each of them. Two summaries per occupation x model:

- plain mean: the mean score over the occupation's distinct prompts;
- O*NET-weighted mean: average the scores within each task first (tasks with >= min_prompts prompts),
  then the tasks equally -- so a task with 500 prompts does not drown out one with 5.

Both get percentile-bootstrap CIs from the same resamples of the occupation's prompts (so the difference
weighted - plain gets one too).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl
from threadpoolctl import threadpool_limits  # installed with scikit-learn

from models.coverage import prompt_task_pairs, select_labeler
from models.stats import bootstrap_resample_counts, percentile_interval

# kept rows (assets/kept_rows.py): (model, the model's joined inputs, the other parts of the key, compute) -> rows
KeptModelRows = Callable[[str, pl.DataFrame, tuple, Callable[[], pl.DataFrame]], pl.DataFrame]

PROMPT_KEY = ["benchmark", "prompt_id"]
MAX_BOOT_CELLS = 4_000_000  # replicates x prompts per bootstrap block; bounds memory for big occupations

SCORES_SCHEMA = {
    "onet_soc_code": pl.Utf8,
    "model": pl.Utf8,
    "min_prompts": pl.Int64,
    "n_prompts": pl.Int64,
    "n_benchmarks": pl.Int64,
    "n_tasks_labeled": pl.Int64,
    "n_tasks": pl.Int64,
    "plain_mean": pl.Float64,
    "plain_ci_low": pl.Float64,
    "plain_ci_high": pl.Float64,
    "weighted_mean": pl.Float64,
    "weighted_ci_low": pl.Float64,
    "weighted_ci_high": pl.Float64,
    "difference": pl.Float64,
    "difference_ci_low": pl.Float64,
    "difference_ci_high": pl.Float64,
    "n_boot": pl.Int64,
}


def _group_rng(seed: int, occupation: str, model: str) -> np.random.Generator:
    """A generator per occupation x model, so a group's CI does not depend on which other groups exist."""
    return np.random.default_rng([seed, zlib.crc32(occupation.encode()), zlib.crc32(model.encode())])


def _nanmean_rows(matrix: np.ndarray) -> np.ndarray:
    """Row means ignoring NaN; NaN (without a warning) for rows with no finite entry."""
    finite = np.isfinite(matrix)
    counts = finite.sum(axis=1)
    sums = np.where(finite, matrix, 0.0).sum(axis=1)
    return np.divide(sums, counts, out=np.full(matrix.shape[0], np.nan), where=counts > 0)


def weighted_task_mean(scores: np.ndarray, incidence: np.ndarray, eligible: np.ndarray) -> float:
    """Mean over eligible tasks of each task's mean prompt score.

    scores: (n_prompts,); incidence: (n_prompts, n_tasks) 0/1, prompt p is labeled with task t;
    eligible: (n_tasks,) bool. NaN when no task is eligible.
    """
    counts = incidence.sum(axis=0)
    sums = scores @ incidence
    task_means = np.divide(sums, counts, out=np.full(counts.shape, np.nan), where=counts > 0)
    chosen = task_means[eligible & (counts > 0)]
    return float(chosen.mean()) if chosen.size else float("nan")


def _bootstrap_replicates(
    scores: np.ndarray,
    incidence: np.ndarray,
    eligible_sets: list[np.ndarray],
    n_boot: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Plain-mean replicates and weighted-mean replicates (one array per eligible set) from shared resamples.

    A resample is a count vector c over prompts; then plain = c.s / n, task sums = c @ (M * s) and task
    counts = c @ M. Tasks that lose all their prompts in a resample are skipped in that replicate; the
    eligible set itself stays the one of the original sample.
    """
    n_prompts = scores.size
    block = max(1, MAX_BOOT_CELLS // max(n_prompts, 1))
    scored_incidence = incidence * scores[:, None]
    plain_parts: list[np.ndarray] = []
    weighted_parts: list[list[np.ndarray]] = [[] for _ in eligible_sets]
    for start in range(0, n_boot, block):
        counts = bootstrap_resample_counts(n_prompts, min(block, n_boot - start), rng).astype(float)
        plain_parts.append(counts @ scores / n_prompts)
        task_counts = counts @ incidence
        task_means = np.divide(
            counts @ scored_incidence,
            task_counts,
            out=np.full(task_counts.shape, np.nan),
            where=task_counts > 0,
        )
        for parts, eligible in zip(weighted_parts, eligible_sets, strict=True):
            parts.append(
                _nanmean_rows(task_means[:, eligible]) if eligible.any() else np.full(len(counts), np.nan)
            )
    return np.concatenate(plain_parts), [np.concatenate(parts) for parts in weighted_parts]


def mean_prompt_scores(results: pl.DataFrame) -> pl.DataFrame:
    """benchmark, prompt_id, model, score: the mean non-null score of each prompt x model (several runs of
    one prompt and model are averaged)."""
    return (
        results.select(
            pl.col("benchmark").cast(pl.Utf8),
            pl.col("prompt_id").cast(pl.Utf8),
            pl.col("model").cast(pl.Utf8),
            pl.col("score").cast(pl.Float64),
        )
        .drop_nulls("score")
        .group_by([*PROMPT_KEY, "model"])
        .agg(pl.col("score").mean())
    )


def occupation_model_scores(
    results: pl.DataFrame,
    labels: pl.DataFrame,
    min_prompts: Sequence[int] = (5, 1),
    n_boot: int = 1000,
    seed: int = 0,
    *,
    labeler: str | None = None,
    alpha: float = 0.05,
    kept: KeptModelRows | None = None,
) -> pl.DataFrame:
    """One row per occupation x model x min_prompts (see SCORES_SCHEMA).

    n_prompts: distinct (benchmark, prompt_id) scored for the model and labeled with a task of the
    occupation; n_tasks_labeled: the occupation's tasks with >= 1 such prompt; n_tasks: those with
    >= min_prompts (the ones the weighted mean averages; weighted_* is null when there are none).
    Repeated results for one prompt and model (several runs) are averaged first. `kept`: a model's rows are a
    function of its joined prompt x task x score frame and the parameters alone (each group has its own seeded
    generator), so they can be kept under those and read back (a new benchmark's results change its models'
    rows only).
    """
    labels, _ = select_labeler(labels, labeler)
    prompt_tasks = prompt_task_pairs(labels)
    prompt_scores = mean_prompt_scores(results)
    # One model at a time: the prompt x task x model join is the largest frame here, and every occupation x
    # model group (and its seeded generator) is independent of the others, so the rows come out the same.
    frames = [
        _model_score_rows(model_scores, prompt_tasks, min_prompts, n_boot, seed, alpha, kept)
        for _, model_scores in prompt_scores.sort("model").group_by("model", maintain_order=True)
    ]
    if not frames:
        return pl.DataFrame(schema=SCORES_SCHEMA)
    # stable sort: occupation, then model, then min_prompts in the order given
    return pl.concat(frames).sort("onet_soc_code", "model", maintain_order=True)


def _model_score_rows(
    prompt_scores: pl.DataFrame,
    prompt_tasks: pl.DataFrame,
    min_prompts: Sequence[int],
    n_boot: int,
    seed: int,
    alpha: float,
    kept: KeptModelRows | None = None,
) -> pl.DataFrame:
    """occupation_model_scores' rows for the models in `prompt_scores` (one model per call)."""
    group_cols = ["onet_soc_code", "model"]
    # one sort, then integer codes per occupation x model: prompt_code indexes the group's prompts (sorted
    # by benchmark, prompt_id, so seeded resamples hit the same prompts whatever order the joins produced)
    # and task_code its tasks. The loop below then only slices numpy arrays.
    joined = (
        prompt_scores.join(prompt_tasks, on=PROMPT_KEY, how="inner")
        .with_columns(pl.concat_str(PROMPT_KEY, separator="\x1f").alias("prompt_key"))
        .sort([*group_cols, "prompt_key", "task_id"])
        .with_columns(
            (pl.col("prompt_key").rank("dense").over(group_cols) - 1).cast(pl.Int64).alias("prompt_code"),
            (pl.col("task_id").rank("dense").over(group_cols) - 1).cast(pl.Int64).alias("task_code"),
            pl.col("benchmark").n_unique().over(group_cols).alias("n_benchmarks"),
        )
    )
    if kept is not None and joined.height:
        return kept(str(joined["model"][0]), joined, (tuple(min_prompts), n_boot, seed, alpha),
                    lambda: _joined_rows(joined, min_prompts, n_boot, seed, alpha))
    return _joined_rows(joined, min_prompts, n_boot, seed, alpha)


def _joined_rows(joined: pl.DataFrame, min_prompts: Sequence[int], n_boot: int, seed: int,
                 alpha: float) -> pl.DataFrame:
    """The rows of the occupation x model groups of `joined` (sorted by group, with their prompt and task
    codes)."""
    group_cols = ["onet_soc_code", "model"]
    group_starts = (
        joined.with_row_index("row").group_by(group_cols, maintain_order=True).agg(pl.col("row").first())
    )["row"].to_numpy()
    bounds = np.append(group_starts, joined.height)
    occupation_col, model_col = joined["onet_soc_code"].to_list(), joined["model"].to_list()
    prompt_codes, task_codes = joined["prompt_code"].to_numpy(), joined["task_code"].to_numpy()
    score_values, n_benchmarks = joined["score"].to_numpy(), joined["n_benchmarks"].to_numpy()
    rows: list[dict[str, object]] = []
    # thousands of tiny matrix products: BLAS threads only add contention (30x slower on a busy 2-core box)
    with threadpool_limits(limits=1, user_api="blas"):
        for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
            rows += _group_rows(
                str(occupation_col[start]),
                str(model_col[start]),
                prompt_codes[start:stop],
                task_codes[start:stop],
                score_values[start:stop],
                int(n_benchmarks[start]),
                min_prompts,
                n_boot,
                seed,
                alpha,
            )
    return pl.DataFrame(rows, schema=SCORES_SCHEMA)


def _group_rows(
    occupation: str,
    model: str,
    prompt_code: np.ndarray,
    task_code: np.ndarray,
    score_values: np.ndarray,
    n_benchmarks: int,
    min_prompts: Sequence[int],
    n_boot: int,
    seed: int,
    alpha: float,
) -> list[dict[str, object]]:
    """The rows of one occupation x model (one per min_prompts) from its prompt/task codes and scores."""
    rows: list[dict[str, object]] = []
    n_prompts, n_tasks = int(prompt_code.max()) + 1, int(task_code.max()) + 1
    incidence = np.zeros((n_prompts, n_tasks))
    incidence[prompt_code, task_code] = 1.0
    scores = np.empty(n_prompts)
    scores[prompt_code] = score_values  # a prompt's score repeats on each of its task rows
    prompts_per_task = incidence.sum(axis=0)
    eligible_sets = [prompts_per_task >= m for m in min_prompts]
    plain = float(scores.mean())
    plain_reps, weighted_reps = _bootstrap_replicates(
        scores, incidence, eligible_sets, n_boot, _group_rng(seed, occupation, model)
    )
    # every prompt scored the same (a single prompt among them): each resample repeats the data, so a zero-width
    # interval would claim certainty; the spread is not estimable, so no interval
    spread = bool(np.ptp(scores) > 0)
    plain_low, plain_high = percentile_interval(plain_reps, alpha) if spread else (None, None)
    for m, eligible, reps in zip(min_prompts, eligible_sets, weighted_reps, strict=True):
        weighted = weighted_task_mean(scores, incidence, eligible)
        has_weighted = bool(np.isfinite(weighted))
        with_interval = has_weighted and spread
        weighted_low, weighted_high = percentile_interval(reps, alpha) if with_interval else (None, None)
        diff_low, diff_high = percentile_interval(reps - plain_reps, alpha) if with_interval else (None, None)
        rows.append(
            {
                "onet_soc_code": occupation,
                "model": model,
                "min_prompts": int(m),
                "n_prompts": n_prompts,
                "n_benchmarks": n_benchmarks,
                "n_tasks_labeled": n_tasks,
                "n_tasks": int(eligible.sum()),
                "plain_mean": plain,
                "plain_ci_low": plain_low,
                "plain_ci_high": plain_high,
                "weighted_mean": weighted if has_weighted else None,
                "weighted_ci_low": weighted_low,
                "weighted_ci_high": weighted_high,
                "difference": weighted - plain if has_weighted else None,
                "difference_ci_low": diff_low,
                "difference_ci_high": diff_high,
                "n_boot": n_boot,
            }
        )
    return rows
