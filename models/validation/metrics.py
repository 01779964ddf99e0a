"""Label validation's metrics: occupation rankings from task labels, per-prompt hits and set scores, and their
bootstrap summaries (one tidy row per benchmark x labeler x metric: METRIC_COLUMNS)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from models.labeling.base import TaskLabel
from models.stats import bootstrap_ci, wilson_ci
from models.validation.soc import soc6, soc_matches

N_BOOT = 1000
SEED = 0
OCCUPATION_KS: tuple[int, ...] = (1, 5)
TASK_KS: tuple[int, ...] = (1, 5, 10)

METRIC_COLUMNS: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8, "labeler": pl.Utf8, "labeler_version": pl.Utf8, "metric": pl.Utf8,
    "value": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "n": pl.Int64,
}


# --- occupation ranking -------------------------------------------------------------------------------------

def rank_occupations(labels: pl.DataFrame, keys: Sequence[str] = ("benchmark", "prompt_id"),
                     method: str = "score_sum") -> pl.DataFrame:
    """Rank the 6-digit SOC occupations of each prompt from its task labels.

    method 'score_sum' (default; the rule of models.labeling.offline.occupation_ranking_from_labels): an
    occupation scores the sum of its tasks' scores. 'reciprocal_rank': the sum of 1/rank (scale-free, for
    labelers whose scores are not comparable). Ties go to the better best-task rank, then the code.
    Returns keys..., soc_code, occ_score, occ_rank (1 = best).
    """
    keys = list(keys)
    if method not in {"score_sum", "reciprocal_rank"}:
        raise ValueError("method must be 'score_sum' or 'reciprocal_rank'")
    if labels.is_empty():
        return pl.DataFrame(schema={**{k: labels.schema.get(k, pl.Utf8) for k in keys}, "soc_code": pl.Utf8,
                                    "occ_score": pl.Float64, "occ_rank": pl.Int64})
    weight = (pl.col("score").cast(pl.Float64) if method == "score_sum"
              else 1.0 / pl.col("rank").cast(pl.Float64))
    return (
        labels.with_columns(pl.col("onet_soc_code").str.slice(0, 7).alias("soc_code"))
        .group_by([*keys, "soc_code"])
        .agg(weight.sum().alias("occ_score"), pl.col("rank").min().alias("_best"))
        .sort([*keys, "occ_score", "_best", "soc_code"],
              descending=[False] * len(keys) + [True, False, False])
        .with_columns(pl.int_range(1, pl.len() + 1).over(keys).cast(pl.Int64).alias("occ_rank"))
        .drop("_best")
    )


def per_prompt_ranker(rank_labels: Callable[[list[TaskLabel]], list[str]],
                      keys: Sequence[str] = ("benchmark", "prompt_id")) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """Adapt a one-prompt ranking function (TaskLabels -> SOC codes, best first; e.g. the offline module's
    `occupation_ranking_from_labels(labels, level='soc')`) to the frame interface of rank_occupations."""
    keys = list(keys)

    def rank(labels: pl.DataFrame) -> pl.DataFrame:
        # One pass over the rows (prompts in order of first appearance, each prompt's labels in row order):
        # iterating a polars group_by materializes a frame per prompt, which dominated at 10^4 prompts.
        by_prompt: dict[tuple, list[TaskLabel]] = {}
        for *key, t, s, r, sc in labels.select(*keys, "task_id", "onet_soc_code", "rank", "score").iter_rows():
            by_prompt.setdefault(tuple(key), []).append(TaskLabel(int(t), s, int(r), float(sc)))
        rows: list[dict] = []
        for key, tl in by_prompt.items():
            for i, code in enumerate(rank_labels(tl)):
                rows.append({**dict(zip(keys, key, strict=True)), "soc_code": soc6(code),
                             "occ_score": None, "occ_rank": i + 1})
        schema = {**{k: pl.Utf8 for k in keys}, "soc_code": pl.Utf8, "occ_score": pl.Float64,
                  "occ_rank": pl.Int64}
        return pl.DataFrame(rows, schema=schema)

    return rank


# --- metric rows --------------------------------------------------------------------------------------------

def _nan_to_none(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def metric_row(benchmark: str, labeler: str, labeler_version: str, metric: str, values: Sequence[float],
               n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    """One tidy metric row: mean of per-prompt values (NaN dropped) with its 95% interval. A share of 0/1 hits gets
    Wilson's score interval: a percentile bootstrap over a handful of prompts is too narrow, and over prompts
    that all hit (or all miss) it collapses onto the value ("100% (100%-100%)" from 6 prompts). Other values
    keep the percentile bootstrap over prompts."""
    array = np.asarray(values, dtype=float)
    hits = array[np.isfinite(array)]
    if hits.size and np.isin(hits, (0.0, 1.0)).all():
        interval = wilson_ci(int(hits.sum()), int(hits.size))
    else:
        interval = bootstrap_ci(array, np.mean, n_boot=n_boot, seed=seed)
    return {"benchmark": benchmark, "labeler": labeler, "labeler_version": labeler_version, "metric": metric,
            "value": _nan_to_none(interval.estimate), "ci_low": _nan_to_none(interval.ci_low),
            "ci_high": _nan_to_none(interval.ci_high), "n": int(interval.n)}


def labeler_versions(labels: pl.DataFrame) -> list[tuple[str, str]]:
    if labels.is_empty():
        return []
    return [tuple(r) for r in labels.select("labeler", "labeler_version").unique().sort(
        "labeler", "labeler_version").iter_rows()]


def occupation_hits(gold: pl.DataFrame, labels: pl.DataFrame, ks: Sequence[int] = OCCUPATION_KS,
                    rank_fn: Callable[[pl.DataFrame], pl.DataFrame] | None = None) -> pl.DataFrame:
    """Per gold prompt and labeler: hit_top{k} (any of the top-k ranked occupations matches a gold pattern).

    gold: benchmark, prompt_id, gold_soc (list of SOC patterns). labels: prompt_task_labels rows.
    A gold prompt the labeler left unlabeled (e.g. a failure) counts as a miss.
    Returns benchmark, prompt_id, labeler, labeler_version, hit_top{k}... .
    """
    rank_fn = rank_fn or rank_occupations
    rows: list[dict] = []
    gold_by_bench = {b: g for (b,), g in gold.group_by("benchmark")} if not gold.is_empty() else {}
    for labeler, version in labeler_versions(labels):
        mine = labels.filter((pl.col("labeler") == labeler) & (pl.col("labeler_version") == version))
        ranked = rank_fn(mine)
        ranking: dict[tuple[str, str], list[str]] = {}
        for b, p, soc in ranked.sort("benchmark", "prompt_id", "occ_rank").select(
                "benchmark", "prompt_id", "soc_code").iter_rows():
            ranking.setdefault((b, p), []).append(soc)
        for bench, g in gold_by_bench.items():
            if mine.filter(pl.col("benchmark") == bench).is_empty():
                continue  # this labeler did not label this benchmark at all: no metric, not a zero
            for prompt_id, patterns in g.select("prompt_id", "gold_soc").iter_rows():
                predicted = ranking.get((bench, prompt_id), [])
                row = {"benchmark": bench, "prompt_id": prompt_id, "labeler": labeler,
                       "labeler_version": version}
                for k in ks:
                    row[f"hit_top{k}"] = float(any(soc_matches(c, patterns) for c in predicted[:k]))
                rows.append(row)
    schema = {"benchmark": pl.Utf8, "prompt_id": pl.Utf8, "labeler": pl.Utf8, "labeler_version": pl.Utf8,
              **{f"hit_top{k}": pl.Float64 for k in ks}}
    return pl.DataFrame(rows, schema=schema)


def task_hits(gold_tasks: pl.DataFrame, labels: pl.DataFrame, ks: Sequence[int] = TASK_KS) -> pl.DataFrame:
    """Per gold prompt and labeler: task_hit_at{k} (a gold task among the top-k labeled tasks).

    gold_tasks: benchmark, prompt_id, task_id (one row per acceptable task). Returns benchmark, prompt_id,
    labeler, labeler_version, task_hit_at{k}... .
    """
    rows: list[dict] = []
    gold: dict[tuple[str, str], set[int]] = {}
    for b, p, t in gold_tasks.select("benchmark", "prompt_id", "task_id").iter_rows():
        gold.setdefault((b, p), set())
        if t is not None:
            gold[(b, p)].add(int(t))
    for labeler, version in labeler_versions(labels):
        mine = labels.filter((pl.col("labeler") == labeler) & (pl.col("labeler_version") == version))
        predicted: dict[tuple[str, str], list[int]] = {}
        for b, p, t in mine.sort("benchmark", "prompt_id", "rank").select(
                "benchmark", "prompt_id", "task_id").iter_rows():
            predicted.setdefault((b, p), []).append(int(t))
        benches = set(mine["benchmark"].unique().to_list())
        for (b, p), tasks in gold.items():
            if b not in benches or not tasks:
                continue
            row = {"benchmark": b, "prompt_id": p, "labeler": labeler, "labeler_version": version}
            for k in ks:
                row[f"task_hit_at{k}"] = float(bool(tasks & set(predicted.get((b, p), [])[:k])))
            rows.append(row)
    schema = {"benchmark": pl.Utf8, "prompt_id": pl.Utf8, "labeler": pl.Utf8, "labeler_version": pl.Utf8,
              **{f"task_hit_at{k}": pl.Float64 for k in ks}}
    return pl.DataFrame(rows, schema=schema)


def set_scores(gold_tasks: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Per gold prompt and labeler: task-set precision, recall and F1 of all labeled tasks vs the gold set.

    A prompt annotated with no task (task_id null: "no O*NET task fits") has undefined recall; its precision
    and F1 are 0 when the labeler labeled anything, undefined otherwise. Undefined values are NaN (dropped
    from means). An unlabeled gold prompt has precision undefined, recall 0, F1 0.
    """
    gold: dict[tuple[str, str], set[int]] = {}
    for b, p, t in gold_tasks.select("benchmark", "prompt_id", "task_id").iter_rows():
        gold.setdefault((b, p), set())
        if t is not None:
            gold[(b, p)].add(int(t))
    rows: list[dict] = []
    for labeler, version in labeler_versions(labels):
        mine = labels.filter((pl.col("labeler") == labeler) & (pl.col("labeler_version") == version))
        predicted: dict[tuple[str, str], set[int]] = {}
        for b, p, t in mine.select("benchmark", "prompt_id", "task_id").iter_rows():
            predicted.setdefault((b, p), set()).add(int(t))
        benches = set(mine["benchmark"].unique().to_list())
        for (b, p), g in gold.items():
            if b not in benches:
                continue
            pred = predicted.get((b, p), set())
            hit = len(pred & g)
            precision = hit / len(pred) if pred else math.nan
            recall = hit / len(g) if g else math.nan
            if pred and g:
                f1 = 2 * hit / (len(pred) + len(g))
            elif pred or g:
                f1 = 0.0
            else:
                f1 = math.nan
            rows.append({"benchmark": b, "prompt_id": p, "labeler": labeler, "labeler_version": version,
                         "task_precision": precision, "task_recall": recall, "task_f1": f1})
    return pl.DataFrame(rows, schema={"benchmark": pl.Utf8, "prompt_id": pl.Utf8, "labeler": pl.Utf8,
                                      "labeler_version": pl.Utf8, "task_precision": pl.Float64,
                                      "task_recall": pl.Float64, "task_f1": pl.Float64})


def summarise(per_prompt: pl.DataFrame, metrics: Sequence[str], *, pooled_label: str | None = None,
              n_boot: int = N_BOOT, seed: int = SEED) -> list[dict]:
    """Tidy metric rows per (benchmark, labeler, labeler_version) from per-prompt columns; optionally a
    pooled row over all benchmarks labeled `pooled_label` (when more than one benchmark is present)."""
    rows: list[dict] = []
    if per_prompt.is_empty():
        return rows
    groups = per_prompt.group_by("benchmark", "labeler", "labeler_version", maintain_order=True)
    for (bench, labeler, version), g in sorted(groups, key=lambda x: x[0]):
        for metric in metrics:
            rows.append(metric_row(bench, labeler, version, metric, g[metric].to_list(), n_boot, seed))
    if pooled_label and per_prompt["benchmark"].n_unique() > 1:
        for (labeler, version), g in sorted(per_prompt.group_by("labeler", "labeler_version"),
                                            key=lambda x: x[0]):
            for metric in metrics:
                rows.append(metric_row(pooled_label, labeler, version, metric, g[metric].to_list(),
                                       n_boot, seed))
    return rows
