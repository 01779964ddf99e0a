"""Agreement between two labelers on the prompts both labeled: task Jaccard and F1, top occupation, rank
correlation of occupations, work decisions (AGREEMENT_COLUMNS)."""

from __future__ import annotations

import math
from collections.abc import Callable

import polars as pl

from models.validation.metrics import N_BOOT, SEED, labeler_versions, metric_row, rank_occupations

AGREEMENT_COLUMNS: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8, "labeler_a": pl.Utf8, "labeler_version_a": pl.Utf8, "labeler_b": pl.Utf8,
    "labeler_version_b": pl.Utf8, "metric": pl.Utf8, "value": pl.Float64, "ci_low": pl.Float64,
    "ci_high": pl.Float64, "n": pl.Int64,
}


# --- agreement between two labelers -------------------------------------------------------------------------

def spearman_union(rank_a: dict[str, int], rank_b: dict[str, int]) -> float:
    """Spearman correlation over the union of two occupation rankings.

    An occupation one labeler did not rank gets that labeler's tied bottom rank (the mean of the ranks left
    over). Undefined (NaN) with fewer than two occupations or when one side is constant."""
    union = sorted(set(rank_a) | set(rank_b))
    if len(union) < 2:
        return math.nan

    def ranks(ranking: dict[str, int]) -> list[float]:
        placed = sorted(ranking.items(), key=lambda kv: kv[1])
        position = {code: float(i + 1) for i, (code, _) in enumerate(placed)}
        missing = [c for c in union if c not in position]
        bottom = (len(placed) + 1 + len(union)) / 2.0 if missing else 0.0
        return [position.get(c, bottom) for c in union]

    a, b = ranks(rank_a), ranks(rank_b)
    if len(set(a)) < 2 or len(set(b)) < 2:
        return math.nan
    from scipy import stats as scipy_stats  # here, not at module level: ~1.5 CPU-s of every Definitions build

    return float(scipy_stats.spearmanr(a, b).statistic)


def labeler_agreement(labels: pl.DataFrame, prompt_benchmarks: pl.DataFrame, *, n_boot: int = N_BOOT,
                      seed: int = SEED, rank_fn: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
                      labeled: pl.DataFrame | None = None) -> pl.DataFrame:
    """Agreement between every pair of labelers on the prompts both labeled, per benchmark.

    labels: prompt_hash, labeler, labeler_version, task_id, onet_soc_code, rank, score (label_cache exploded).
    prompt_benchmarks: benchmark, prompt_hash (a hash in two benchmarks counts in both).
    Metrics per prompt: task_jaccard (|A∩B|/|A∪B| of task-ID sets), occupation_top1_agreement (same top
    occupation), occupation_spearman (see spearman_union), task_f1 (2|A∩B|/(|A|+|B|)). Returns
    AGREEMENT_COLUMNS.

    `labeled` (prompt_hash, labeler, labeler_version): every prompt each labeler labeled, including those it
    judged not occupational work (no label rows). With it, a prompt counts as labeled by both even when one
    side has no task: its task_f1 is 0 (1 when both have none), and work_agreement (both work, or both not)
    is reported over all of them; the occupation metrics stay over prompts both gave tasks.
    """
    if labels.is_empty():
        return pl.DataFrame(schema=AGREEMENT_COLUMNS)
    pairs_of = prompt_benchmarks.select("benchmark", "prompt_hash").unique()
    who = labeler_versions(labels)
    tasks = {lv: _task_sets(labels, lv, labeled) for lv in who}
    occ_rank = {lv: _occupation_ranks(labels, lv, rank_fn) for lv in who}
    rows: list[dict] = []
    for i, a in enumerate(who):
        for b in who[i + 1:]:
            both = set(tasks[a]) & set(tasks[b])
            if not both:
                continue
            for (bench,), g in sorted(pairs_of.filter(pl.col("prompt_hash").is_in(list(both)))
                                      .group_by("benchmark"), key=lambda x: x[0]):
                metrics = _pair_metrics(sorted(g["prompt_hash"].to_list()), tasks, occ_rank, a, b,
                                        with_work=labeled is not None)
                for metric, values in metrics:
                    if not values:
                        continue
                    base = metric_row(bench, a[0], a[1], metric, values, n_boot, seed)
                    rows.append({"benchmark": bench, "labeler_a": a[0], "labeler_version_a": a[1],
                                 "labeler_b": b[0], "labeler_version_b": b[1], "metric": metric,
                                 "value": base["value"], "ci_low": base["ci_low"], "ci_high": base["ci_high"],
                                 "n": base["n"]})
    return pl.DataFrame(rows, schema=AGREEMENT_COLUMNS)


def _task_sets(labels: pl.DataFrame, who: tuple[str, str], labeled: pl.DataFrame | None) -> dict[str, set[int]]:
    """prompt_hash -> task ids of one (labeler, labeler_version); with `labeled`, also its prompts without a
    task (an empty set: judged not work)."""
    labeler, version = who
    mine = labels.filter((pl.col("labeler") == labeler) & (pl.col("labeler_version") == version))
    task_sets: dict[str, set[int]] = {}
    for h, t in mine.select("prompt_hash", "task_id").iter_rows():
        task_sets.setdefault(h, set()).add(int(t))
    if labeled is not None:
        for (h,) in labeled.filter((pl.col("labeler") == labeler) & (pl.col("labeler_version") == version)
                                   ).select("prompt_hash").iter_rows():
            task_sets.setdefault(h, set())  # labeled, no task: judged not work
    return task_sets


def _occupation_ranks(labels: pl.DataFrame, who: tuple[str, str],
                      rank_fn: Callable[[pl.DataFrame], pl.DataFrame] | None) -> dict[str, dict[str, int]]:
    """prompt_hash -> {soc_code: rank} of one (labeler, labeler_version)."""
    labeler, version = who
    mine = labels.filter((pl.col("labeler") == labeler) & (pl.col("labeler_version") == version))
    ranking: dict[str, dict[str, int]] = {}
    ranked = rank_fn(mine) if rank_fn else rank_occupations(mine, keys=["prompt_hash"])
    for h, soc, r in ranked.select(
            "prompt_hash", "soc_code", "occ_rank").iter_rows():
        ranking.setdefault(h, {})[soc] = int(r)
    return ranking


def _pair_metrics(hashes: list[str], tasks: dict[tuple[str, str], dict[str, set[int]]],
                  occ_rank: dict[tuple[str, str], dict[str, dict[str, int]]], a: tuple[str, str],
                  b: tuple[str, str], *, with_work: bool) -> list[tuple[str, list[float]]]:
    """The per-prompt values of each agreement metric of labelers a and b over `hashes`."""
    jac, top1, rho, f1, work = [], [], [], [], []
    for h in hashes:
        ta, tb = tasks[a][h], tasks[b][h]
        work.append(float(bool(ta) == bool(tb)))
        f1.append(2 * len(ta & tb) / (len(ta) + len(tb)) if ta or tb else 1.0)
        if not (ta and tb):
            continue  # one side judged it not work: no task set or occupation to compare
        jac.append(len(ta & tb) / len(ta | tb))
        ra, rb = occ_rank[a].get(h, {}), occ_rank[b].get(h, {})
        if not (ra and rb):
            continue
        top_a = min(ra, key=ra.get)
        top_b = min(rb, key=rb.get)
        top1.append(float(top_a == top_b))
        rho.append(spearman_union(ra, rb))
    return [("task_jaccard", jac), ("occupation_top1_agreement", top1), ("occupation_spearman", rho),
            ("task_f1", f1)] + ([("work_agreement", work)] if with_work else [])
