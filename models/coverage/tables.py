"""Coverage tables: tasks (distinct prompts per task, covered at each threshold), occupations (task and
US-work-hour shares covered), SOC major groups."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from models.coverage.counts import TASK_KEY, THRESHOLDS, HoursWeighting, benchmark_task_counts, select_labeler
from models.soc import SOC_MAJOR_GROUPS, major_group_of


def _task_keys(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(pl.col("onet_soc_code").cast(pl.Utf8), pl.col("task_id").cast(pl.Int64))


def _scope_cols(frame: pl.DataFrame) -> list[str]:
    """The columns a coverage frame is scoped by: the benchmark index (models/indexes/) and the benchmark,
    when present; aggregation keeps them apart."""
    return [c for c in ("benchmark_index", "benchmark") if c in frame.columns]


def task_coverage(
    counts: pl.DataFrame,
    tasks: pl.DataFrame,
    thresholds: Sequence[int] = THRESHOLDS,
    *,
    benchmark: str | Sequence[str] | None = None,
    by_benchmark: bool = False,
    labeler: str | None = None,
) -> pl.DataFrame:
    """One row per task of `tasks` (labeled or not), or per task x benchmark with `by_benchmark=True`.

    Columns: [benchmark,] onet_soc_code, task_id, n_prompts (distinct (benchmark, prompt_id)),
    n_benchmarks, benchmarks (sorted comma list, '' when unlabeled), covered_{t} for each threshold,
    labeler. `benchmark` restricts the counts to one or several benchmarks first.
    """
    counts, chosen_labeler = select_labeler(counts, labeler)
    if benchmark is not None:
        wanted = [benchmark] if isinstance(benchmark, str) else list(benchmark)
        counts = counts.filter(pl.col("benchmark").is_in(wanted))
    task_keys = _task_keys(tasks).unique().sort(TASK_KEY)
    # distinct prompts per benchmark x task; prompt keys include the benchmark, so totals add up over benchmarks
    per_benchmark = benchmark_task_counts(counts)
    group_cols = (["benchmark"] if by_benchmark else []) + TASK_KEY
    counts = per_benchmark.group_by(group_cols).agg(
        pl.col("n_prompts").sum().alias("n_prompts"),
        pl.col("benchmark").n_unique().alias("n_benchmarks"),
        pl.col("benchmark").unique().sort().str.join(",").alias("benchmarks"),
    )
    if by_benchmark:
        benchmark_names = pl.DataFrame(
            {"benchmark": sorted(per_benchmark["benchmark"].unique().to_list())}, schema={"benchmark": pl.Utf8}
        )
        base = benchmark_names.join(task_keys, how="cross")
    else:
        base = task_keys
    out = base.join(counts, on=group_cols, how="left").with_columns(
        pl.col("n_prompts").fill_null(0).cast(pl.Int64),
        pl.col("n_benchmarks").fill_null(0).cast(pl.Int64),
        pl.col("benchmarks").fill_null(""),
    )
    out = out.with_columns([(pl.col("n_prompts") >= t).alias(f"covered_{t}") for t in thresholds])
    return out.with_columns(pl.lit(chosen_labeler, dtype=pl.Utf8).alias("labeler")).sort(group_cols)


def task_hour_weights(
    task_cov: pl.DataFrame, task_hours: pl.DataFrame, hours_weighting: HoursWeighting = "pi"
) -> pl.DataFrame:
    """`task_cov` plus each task's share of its occupation's hours and its annual hours.

    weight_share: π (O*NET time share) normalised within the occupation, or 1/n_tasks with
    `hours_weighting='equal'`. An occupation whose tasks have no π at all falls back to the equal split
    (flagged in weight_source) so it still counts. task_hours_used = weight_share x occupation_annual_hours
    (null when the occupation has no wage/hours data).
    """
    if hours_weighting not in ("pi", "equal"):
        raise ValueError(f"hours_weighting must be 'pi' or 'equal', got {hours_weighting!r}")
    occupation_cols = _scope_cols(task_cov) + ["onet_soc_code"]
    hours = task_hours.select(
        pl.col("onet_soc_code").cast(pl.Utf8),
        pl.col("task_id").cast(pl.Int64),
        pl.col("pi").cast(pl.Float64),
        pl.col("occupation_annual_hours").cast(pl.Float64),
    )
    # occupation hours are constant within an occupation; take them per occupation so tasks lacking a
    # task_hours row still get their occupation's total
    occupation_hours = hours.group_by("onet_soc_code").agg(pl.col("occupation_annual_hours").max())
    frame = task_cov.join(hours.select(*TASK_KEY, "pi"), on=TASK_KEY, how="left").join(
        occupation_hours, on="onet_soc_code", how="left"
    )
    raw_pi = pl.col("pi").fill_null(0.0).clip(lower_bound=0.0)
    pi_total = raw_pi.sum().over(occupation_cols)
    n_tasks = pl.len().over(occupation_cols)
    if hours_weighting == "equal":
        weight = 1.0 / n_tasks
        source = pl.lit("equal")
    else:
        weight = pl.when(pi_total > 0).then(raw_pi / pi_total).otherwise(1.0 / n_tasks)
        source = pl.when(pi_total > 0).then(pl.lit("pi")).otherwise(pl.lit("equal_fallback"))
    return frame.with_columns(weight.alias("weight_share"), source.alias("weight_source")).with_columns(
        (pl.col("weight_share") * pl.col("occupation_annual_hours")).alias("task_hours_used")
    )


def _covered_thresholds(frame: pl.DataFrame, thresholds: Sequence[int] | None) -> list[int]:
    found = sorted(
        int(c.removeprefix("covered_"))
        for c in frame.columns
        if c.startswith("covered_") and c.removeprefix("covered_").isdigit()
    )
    if thresholds is None:
        return found
    missing = [t for t in thresholds if t not in found]
    if missing:
        raise ValueError(f"coverage frame lacks covered_{missing[0]}; it has thresholds {found}")
    return list(thresholds)


def occupation_coverage(
    task_cov: pl.DataFrame,
    task_hours: pl.DataFrame,
    occupations: pl.DataFrame,
    thresholds: Sequence[int] | None = THRESHOLDS,
    hours_weighting: HoursWeighting = "pi",
) -> pl.DataFrame:
    """One row per occupation with tasks (per benchmark too if `task_cov` has that column).

    Columns: onet_soc_code, title, major_group_code, n_tasks, occupation_annual_hours, weight_source and per
    threshold t: tasks_covered_{t}, task_share_covered_{t}, covered_{t} (>= 1 covered task),
    hours_share_covered_{t} (share of the occupation's hours -- π weights -- spent on covered tasks).
    """
    thresholds = _covered_thresholds(task_cov, thresholds)
    weighted = task_hour_weights(task_cov, task_hours, hours_weighting)
    group_cols = _scope_cols(task_cov) + ["onet_soc_code"]
    aggregations: list[pl.Expr] = [
        pl.len().cast(pl.Int64).alias("n_tasks"),
        pl.col("occupation_annual_hours").first(),
        pl.col("weight_source").first(),
    ]
    for t in thresholds:
        covered = pl.col(f"covered_{t}")
        aggregations += [
            covered.sum().cast(pl.Int64).alias(f"tasks_covered_{t}"),
            (pl.col("weight_share") * covered.cast(pl.Float64)).sum().alias(f"hours_share_covered_{t}"),
        ]
    out = weighted.group_by(group_cols).agg(aggregations)
    for t in thresholds:
        out = out.with_columns(
            (pl.col(f"tasks_covered_{t}") / pl.col("n_tasks")).alias(f"task_share_covered_{t}"),
            (pl.col(f"tasks_covered_{t}") >= 1).alias(f"covered_{t}"),
        )
    titles = occupations.select(pl.col("onet_soc_code").cast(pl.Utf8), "title").unique("onet_soc_code")
    out = out.join(titles, on="onet_soc_code", how="left").with_columns(
        major_group_of().alias("major_group_code"), pl.lit(hours_weighting).alias("hours_weighting")
    )
    if "labeler" in task_cov.columns:
        out = out.with_columns(
            pl.lit(task_cov["labeler"].first() if task_cov.height else None, dtype=pl.Utf8).alias("labeler")
        )
    leading = group_cols + ["title", "major_group_code", "n_tasks"]
    return out.select(leading + [c for c in out.columns if c not in leading]).sort(group_cols)


def major_groups(occupations: pl.DataFrame | None = None) -> pl.DataFrame:
    """The 22 SOC major groups: major_group_code, major_group_title (titles from `occupations` if present)."""
    groups = pl.DataFrame(
        {"major_group_code": list(SOC_MAJOR_GROUPS), "major_group_title": list(SOC_MAJOR_GROUPS.values())}
    )
    if occupations is not None and {"major_group_code", "major_group_title"} <= set(occupations.columns):
        known = (
            occupations.select("major_group_code", pl.col("major_group_title").alias("table_title"))
            .drop_nulls()
            .unique("major_group_code")
        )
        groups = groups.join(known, on="major_group_code", how="left").select(
            "major_group_code", pl.coalesce("table_title", "major_group_title").alias("major_group_title")
        )
    return groups


def major_group_coverage(
    occ_cov: pl.DataFrame,
    occupations: pl.DataFrame,
    occupation_wages: pl.DataFrame,
    thresholds: Sequence[int] | None = THRESHOLDS,
) -> pl.DataFrame:
    """Exactly the 22 SOC major groups (per benchmark too if `occ_cov` has that column), even uncovered.

    Columns: major_group_code, major_group_title, n_occupations (with tasks), employment, wage_bill (all
    O*NET codes of the group) and per threshold t: occupations_covered_{t}, occupation_share_covered_{t},
    employment_covered_{t}, wage_bill_covered_{t}, label_{t} like 'Computer and Mathematical 29/36'.
    """
    thresholds = _covered_thresholds(occ_cov, thresholds)
    scope = _scope_cols(occ_cov)
    groups = major_groups(occupations)
    if scope:
        groups = occ_cov.select(scope).unique().join(groups, how="cross")
    wages = occupation_wages.select(
        pl.col("onet_soc_code").cast(pl.Utf8),
        pl.col("employment").cast(pl.Float64),
        pl.col("wage_bill").cast(pl.Float64),
    )
    group_wages = (
        wages.with_columns(major_group_of().alias("major_group_code"))
        .group_by("major_group_code")
        .agg(pl.col("employment").sum(), pl.col("wage_bill").sum())
    )
    occ = (
        occ_cov.with_columns(major_group_of().alias("major_group_code"))
        .drop("employment", "wage_bill", strict=False)
        .join(wages, on="onet_soc_code", how="left")
    )
    aggregations: list[pl.Expr] = [pl.len().cast(pl.Int64).alias("n_occupations")]
    for t in thresholds:
        covered = pl.col(f"covered_{t}")
        aggregations += [
            covered.sum().cast(pl.Int64).alias(f"occupations_covered_{t}"),
            pl.col("employment").filter(covered).sum().alias(f"employment_covered_{t}"),
            pl.col("wage_bill").filter(covered).sum().alias(f"wage_bill_covered_{t}"),
        ]
    counts = occ.group_by(scope + ["major_group_code"]).agg(aggregations)
    out = groups.join(counts, on=scope + ["major_group_code"], how="left").join(
        group_wages, on="major_group_code", how="left"
    )
    fill_zero = ["n_occupations"] + [
        f"{p}_{t}"
        for t in thresholds
        for p in ("occupations_covered", "employment_covered", "wage_bill_covered")
    ]
    out = out.with_columns([pl.col(c).fill_null(0) for c in fill_zero])
    for t in thresholds:
        out = out.with_columns(
            pl.when(pl.col("n_occupations") > 0)
            .then(pl.col(f"occupations_covered_{t}") / pl.col("n_occupations"))
            .alias(f"occupation_share_covered_{t}"),
            pl.format(
                "{} {}/{}",
                pl.col("major_group_title").str.strip_suffix(" Occupations").str.strip_chars(),
                pl.col(f"occupations_covered_{t}"),
                pl.col("n_occupations"),
            ).alias(f"label_{t}"),
        )
    if "labeler" in occ_cov.columns:
        out = out.with_columns(
            pl.lit(occ_cov["labeler"].first() if occ_cov.height else None, dtype=pl.Utf8).alias("labeler")
        )
    return out.sort(scope + ["major_group_code"])
