"""Benchmark coverage of O*NET tasks, occupations, SOC major groups and US work hours.

A task is *covered at threshold t* when at least t distinct benchmark prompts, i.e. distinct
(benchmark, prompt_id) pairs, are labeled with it. Labels are many-to-many: a prompt labeled with several
tasks counts once for each of them.

Every function takes and returns polars frames. Frames carrying a `benchmark` column (the per-benchmark
variant of `task_coverage`) are aggregated per benchmark all the way up.

The coverage functions accept either prompt-level labels (prompt_task_labels rows) or *label counts*
(`label_counts`: prompts per labeler x benchmark x task x label-depth bucket; the warehouse aggregates them in
DuckDB, pipelines/label_queries.py). The counts
are all coverage needs and their size does not grow with the number of prompts per benchmark, so the analysis
assets read them instead of the label table (at 50x the mirrored prompts the table has 11M rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

from models.soc import SOC_MAJOR_GROUPS, major_group_of

THRESHOLDS: tuple[int, ...] = (1, 5)
TASK_KEY = ["onet_soc_code", "task_id"]
HoursWeighting = Literal["pi", "equal"]

# Label depths the sensitivity table compares (None = every label the labeler kept).
LABEL_DEPTHS: tuple[int | None, ...] = (1, 3, 5, None)

LABEL_COUNT_SCHEMA: dict[str, pl.DataType] = {
    "labeler": pl.Utf8(),
    "labeler_version": pl.Utf8(),
    "benchmark": pl.Utf8(),
    "onet_soc_code": pl.Utf8(),
    "task_id": pl.Int64(),
    # the smallest label depth of LABEL_DEPTHS that keeps these labels (rank <= min_depth); null: kept only
    # when every label counts (rank beyond the deepest cut, or no rank)
    "min_depth": pl.Int64(),
    "n_prompts": pl.Int64(),
}


def label_counts(labels: pl.DataFrame) -> pl.DataFrame:
    """Prompt-level labels -> label counts (LABEL_COUNT_SCHEMA): prompts per labeler x benchmark x task x
    label-depth bucket. A prompt counts once per task and labeler (its best rank decides the bucket), so
    summing n_prompts over benchmarks and buckets gives distinct (benchmark, prompt_id) per task, as
    `task_coverage` defines it. The warehouse computes the same in DuckDB (pipelines/label_queries.py
    `label_counts_sql`; a test holds the two equal). Missing labeler / labeler_version / rank columns count as
    null."""
    frame = labels.select(
        *(pl.col(c).cast(pl.Utf8) if c in labels.columns else pl.lit(None, pl.Utf8).alias(c)
          for c in ("labeler", "labeler_version")),
        pl.col("benchmark").cast(pl.Utf8),
        pl.col("prompt_id").cast(pl.Utf8),
        pl.col("onet_soc_code").cast(pl.Utf8),
        pl.col("task_id").cast(pl.Int64),
        pl.col("rank").cast(pl.Int64) if "rank" in labels.columns else pl.lit(None, pl.Int64).alias("rank"),
    )
    best_rank = pl.col("best_rank")
    bucket: pl.Expr = pl.lit(None, pl.Int64)
    for depth in sorted((d for d in LABEL_DEPTHS if d is not None), reverse=True):  # the smallest depth wins
        bucket = pl.when(best_rank <= depth).then(pl.lit(depth, pl.Int64)).otherwise(bucket)
    keys = ["labeler", "labeler_version", "benchmark", "onet_soc_code", "task_id", "min_depth"]
    return (
        frame.group_by("labeler", "benchmark", "prompt_id", "onet_soc_code", "task_id")
        .agg(pl.col("labeler_version").min(), pl.col("rank").min().alias("best_rank"))
        .with_columns(bucket.alias("min_depth"))
        .group_by(keys)
        .agg(pl.len().cast(pl.Int64).alias("n_prompts"))
        .sort(keys, nulls_last=True)
        .select(list(LABEL_COUNT_SCHEMA))
        .cast(LABEL_COUNT_SCHEMA)  # type: ignore[arg-type]
    )


def is_label_counts(labels: pl.DataFrame) -> bool:
    return "n_prompts" in labels.columns and "prompt_id" not in labels.columns


def labels_at_depth(labels: pl.DataFrame, depth: int | None) -> pl.DataFrame:
    """Only each prompt's top-`depth` labels by rank (None: all). Works on labels and on label counts; counts
    know only the depths of LABEL_DEPTHS."""
    if depth is None:
        return labels
    if is_label_counts(labels):
        if depth not in LABEL_DEPTHS:
            raise ValueError(f"label counts are bucketed at depths {LABEL_DEPTHS}; got {depth}")
        return labels.filter(pl.col("min_depth") <= depth)
    return labels.filter(pl.col("rank") <= depth)


# When a labels frame holds several labelers and none is named, the LLM labeler wins over the offline one.
LABELER_PREFERENCE: tuple[str, ...] = ("openai", "offline")


def select_labeler(labels: pl.DataFrame, labeler: str | None = None) -> tuple[pl.DataFrame, str | None]:
    """Keep one labeler's labels so no computation mixes two labelers' judgements.

    With `labeler=None`: the only labeler present, else the first of LABELER_PREFERENCE present, else the
    alphabetically first. Naming a labeler absent from a non-empty frame is an error (it would silently
    report zero coverage).
    """
    if "labeler" not in labels.columns or labels.is_empty():
        return labels, labeler
    present = sorted(labels["labeler"].drop_nulls().unique().to_list())
    if labeler is None:
        preferred = [name for name in LABELER_PREFERENCE if name in present]
        labeler = preferred[0] if preferred else (present[0] if present else None)
    elif labeler not in present:
        raise ValueError(f"labeler {labeler!r} has no labels; present: {present}")
    return labels.filter(pl.col("labeler") == labeler), labeler


def _task_keys(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(pl.col("onet_soc_code").cast(pl.Utf8), pl.col("task_id").cast(pl.Int64))


def _scope_cols(frame: pl.DataFrame) -> list[str]:
    """The columns a coverage frame is scoped by: the benchmark index (models/indexes.py) and the benchmark,
    when present; aggregation keeps them apart."""
    return [c for c in ("benchmark_index", "benchmark") if c in frame.columns]


def prompt_task_pairs(labels: pl.DataFrame) -> pl.DataFrame:
    """The distinct (benchmark, prompt_id, onet_soc_code, task_id) rows of `labels`, with canonical dtypes."""
    return labels.select(
        pl.col("benchmark").cast(pl.Utf8),
        pl.col("prompt_id").cast(pl.Utf8),
        pl.col("onet_soc_code").cast(pl.Utf8),
        pl.col("task_id").cast(pl.Int64),
    ).unique()


def benchmark_task_counts(labels: pl.DataFrame) -> pl.DataFrame:
    """Distinct prompts per (benchmark, onet_soc_code, task_id), from labels or label counts (one labeler)."""
    if is_label_counts(labels):
        frame = labels.select(
            pl.col("benchmark").cast(pl.Utf8),
            pl.col("onet_soc_code").cast(pl.Utf8),
            pl.col("task_id").cast(pl.Int64),
            pl.col("n_prompts").cast(pl.Int64),
        )
        return frame.group_by("benchmark", *TASK_KEY).agg(pl.col("n_prompts").sum()).filter(
            pl.col("n_prompts") > 0
        )
    return (
        prompt_task_pairs(labels)
        .group_by("benchmark", *TASK_KEY)
        .agg(pl.col("prompt_id").n_unique().cast(pl.Int64).alias("n_prompts"))
    )


def task_coverage(
    labels: pl.DataFrame,
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
    labeler. `benchmark` restricts the labels to one or several benchmarks first.
    """
    labels, chosen_labeler = select_labeler(labels, labeler)
    if benchmark is not None:
        wanted = [benchmark] if isinstance(benchmark, str) else list(benchmark)
        labels = labels.filter(pl.col("benchmark").is_in(wanted))
    task_keys = _task_keys(tasks).unique().sort(TASK_KEY)
    # distinct prompts per benchmark x task; prompt keys include the benchmark, so totals add up over benchmarks
    per_benchmark = benchmark_task_counts(labels)
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


def _headline_rows(
    scope_name: str,
    task_cov: pl.DataFrame,
    occ_cov: pl.DataFrame,
    weighted: pl.DataFrame,
    groups: pl.DataFrame,
    thresholds: Sequence[int],
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    n_tasks = task_cov.height
    n_occupations = occ_cov.height
    hours_known = weighted.filter(pl.col("task_hours_used").is_not_null())
    total_hours = float(hours_known["task_hours_used"].sum())

    def row(
        threshold: int,
        metric: str,
        numerator: float,
        denominator: float,
        value: float | None = None,
        detail: str | None = None,
    ) -> dict[str, object]:
        if value is None:
            value = numerator / denominator if denominator else None
        return {
            "scope": scope_name,
            "threshold": threshold,
            "metric": metric,
            "value": value,
            "numerator": float(numerator),
            "denominator": float(denominator),
            "detail": detail,
        }

    occ_groups = occ_cov.with_columns(major_group_of().alias("major_group_code"))
    for t in thresholds:
        covered = pl.col(f"covered_{t}")
        rows.append(row(t, "tasks_covered", int(task_cov[f"covered_{t}"].sum()), n_tasks))
        rows.append(row(t, "occupations_covered", int(occ_cov[f"covered_{t}"].sum()), n_occupations))
        covered_groups = set(occ_groups.filter(covered)["major_group_code"].to_list())
        uncovered = groups.filter(~pl.col("major_group_code").is_in(sorted(covered_groups)))
        rows.append(
            row(
                t,
                "major_groups_uncovered",
                uncovered.height,
                groups.height,
                value=float(uncovered.height),
                detail="; ".join(uncovered["major_group_title"].to_list()),
            )
        )
        covered_hours = float(hours_known.filter(covered)["task_hours_used"].sum())
        rows.append(row(t, "hours_share_covered", covered_hours, total_hours))
        rows.append(row(t, "hours_share_uncovered", total_hours - covered_hours, total_hours))
    return rows


HEADLINE_SCHEMA = {
    "scope": pl.Utf8,
    "threshold": pl.Int64,
    "metric": pl.Utf8,
    "value": pl.Float64,
    "numerator": pl.Float64,
    "denominator": pl.Float64,
    "detail": pl.Utf8,
}


def coverage_headline(
    labels: pl.DataFrame,
    tasks: pl.DataFrame,
    task_hours: pl.DataFrame,
    occupations: pl.DataFrame,
    thresholds: Sequence[int] = THRESHOLDS,
    *,
    labeler: str | None = None,
    hours_weighting: HoursWeighting = "pi",
    per_benchmark: bool = True,
    benchmarks: Sequence[str] = (),
) -> pl.DataFrame:
    """Headline numbers, tidy: scope ('all' or a benchmark), threshold, metric, value, numerator,
    denominator, detail, labeler, hours_weighting. `benchmarks`: every landed benchmark, so that one whose
    prompts have no label at all (none is occupational work) still gets its rows, with zero covered.

    Metrics per threshold t: tasks_covered (of all tasks), occupations_covered (of occupations with
    tasks), major_groups_uncovered (count of the 22 with no covered occupation; `detail` lists them),
    hours_share_covered / hours_share_uncovered (share of US work hours, over occupations with hours data,
    on tasks with >= t prompts / fewer).
    """
    labels, chosen_labeler = select_labeler(labels, labeler)
    groups = major_groups(occupations)
    scopes: list[tuple[str, pl.DataFrame]] = [("all", task_coverage(labels, tasks, thresholds))]
    if per_benchmark and labels.height:
        per_bench = task_coverage(labels, tasks, thresholds, by_benchmark=True)
        for (name,), frame in per_bench.group_by("benchmark", maintain_order=True):
            scopes.append((str(name), frame.drop("benchmark")))
    if per_benchmark:
        seen = {name for name, _ in scopes}
        for name in sorted(set(benchmarks) - seen):
            scopes.append((str(name), task_coverage(labels.head(0), tasks, thresholds)))
    rows: list[dict[str, object]] = []
    for scope_name, task_cov in scopes:
        weighted = task_hour_weights(task_cov, task_hours, hours_weighting)
        occ_cov = occupation_coverage(task_cov, task_hours, occupations, thresholds, hours_weighting)
        rows += _headline_rows(scope_name, task_cov, occ_cov, weighted, groups, thresholds)
    return pl.DataFrame(rows, schema=HEADLINE_SCHEMA).with_columns(
        pl.lit(chosen_labeler, dtype=pl.Utf8).alias("labeler"),
        pl.lit(hours_weighting).alias("hours_weighting"),
    )


SENSITIVITY_SCHEMA = {
    "dimension": pl.Utf8,
    "variant": pl.Utf8,
    "metric": pl.Utf8,
    "value": pl.Float64,
    "labeler": pl.Utf8,
}
_EMPTY_WORKBANK = pl.DataFrame(
    schema={
        "onet_soc_code": pl.Utf8,
        "task_id": pl.Int64,
        "desire_mean": pl.Float64,
        "capability_mean": pl.Float64,
        "zone": pl.Utf8,
    }
)


def _sensitivity_row(dimension: str, variant: str, metric: str, value: float | None, who: str | None
                     ) -> dict[str, object]:
    finite = value is not None and value == value  # NaN -> null
    return {"dimension": dimension, "variant": variant, "metric": metric,
            "value": float(value) if finite else None, "labeler": who}


# the headline metrics the depth, labeler and same-prompt comparisons report per threshold
_SHARE_METRICS = ["tasks_covered", "occupations_covered", "hours_share_covered"]


def coverage_sensitivity(
    labels: pl.DataFrame,
    tasks: pl.DataFrame,
    task_hours: pl.DataFrame,
    occupations: pl.DataFrame,
    task_exposure: pl.DataFrame,
    occupation_wages: pl.DataFrame,
    workbank_tasks: pl.DataFrame | None = None,
    *,
    thresholds: Sequence[int] = THRESHOLDS,
    labeler: str | None = None,
) -> pl.DataFrame:
    """How the headline numbers move under the analysis choices. Tidy: dimension, variant, metric, value,
    labeler.

    - threshold: variant '1' / '5' -> tasks_covered, occupations_covered (shares), major_groups_uncovered
      (count), hours_share_covered;
    - hours_weighting: 'pi' / 'equal' (equal split of an occupation's hours over its tasks) ->
      hours_share_covered_{t};
    - exposure_labels: 'human' / 'gpt4' -> model 1's exposed coefficient, its se, and the
      exposed/non-exposed probability ratio with CI;
    - label_depth: only each prompt's top 1 / 3 / 5 labels by rank, or all -> tasks/occupations/hours shares
      per t (how much coverage rests on lower-ranked labels);
    - labeler: each labeler, when the labels hold more than one -> tasks/occupations/hours shares per t.
    """
    chosen_labels, chosen_labeler = select_labeler(labels, labeler)
    rows = _weighting_rows(chosen_labels, chosen_labeler, tasks, task_hours, occupations, thresholds)
    task_cov = task_coverage(chosen_labels, tasks, thresholds).drop("labeler")
    rows += _exposure_rows(task_cov, chosen_labeler, tasks, task_exposure, occupation_wages, workbank_tasks,
                           thresholds)
    # label depth: a labeler keeps several tasks per prompt (the offline one up to 20, in rank order); how much
    # of the coverage rests on the lower-ranked labels?
    if "rank" in chosen_labels.columns or "min_depth" in chosen_labels.columns:
        for depth in LABEL_DEPTHS:
            kept = labels_at_depth(chosen_labels, depth)
            headline = coverage_headline(kept, tasks, task_hours, occupations, thresholds, per_benchmark=False)
            for record in headline.filter(pl.col("metric").is_in(_SHARE_METRICS)).iter_rows(named=True):
                rows.append(_sensitivity_row("label_depth", "all" if depth is None else f"top{depth}",
                                             f"{record['metric']}_{record['threshold']}", record["value"],
                                             chosen_labeler))
    present = sorted(labels["labeler"].drop_nulls().unique().to_list()) if "labeler" in labels.columns else []
    if len(present) > 1:
        for name in present:
            headline = coverage_headline(
                labels, tasks, task_hours, occupations, thresholds, labeler=name, per_benchmark=False
            )
            for record in headline.filter(pl.col("metric").is_in(_SHARE_METRICS)).iter_rows(named=True):
                rows.append(_sensitivity_row("labeler", name, f"{record['metric']}_{record['threshold']}",
                                             record["value"], name))
    return pl.DataFrame(rows, schema=SENSITIVITY_SCHEMA)


def _weighting_rows(labels: pl.DataFrame, who: str | None, tasks: pl.DataFrame, task_hours: pl.DataFrame,
                    occupations: pl.DataFrame, thresholds: Sequence[int]) -> list[dict[str, object]]:
    """The threshold rows (the 'pi' headline) and the hours_weighting rows ('pi' / 'equal')."""
    by_weighting = {
        weighting: coverage_headline(labels, tasks, task_hours, occupations, thresholds,
                                     hours_weighting=weighting, per_benchmark=False)
        for weighting in ("pi", "equal")
    }
    rows = [_sensitivity_row("threshold", str(record["threshold"]), record["metric"], record["value"], who)
            for record in by_weighting["pi"].iter_rows(named=True)
            if record["metric"] != "hours_share_uncovered"]
    for weighting, headline in by_weighting.items():
        for record in headline.filter(pl.col("metric") == "hours_share_covered").iter_rows(named=True):
            rows.append(_sensitivity_row("hours_weighting", weighting, f"hours_share_covered_{record['threshold']}",
                                         record["value"], who))
    return rows


def _exposure_rows(task_cov: pl.DataFrame, who: str | None, tasks: pl.DataFrame, task_exposure: pl.DataFrame,
                   occupation_wages: pl.DataFrame, workbank_tasks: pl.DataFrame | None,
                   thresholds: Sequence[int]) -> list[dict[str, object]]:
    """Model 1 (exposure + wage) fitted on the human and on the GPT-4 exposure labels: the exposed coefficient,
    its se, and the exposed/non-exposed probability ratio with CI."""
    from models.regression import build_task_frame, exposure_wage_model  # statsmodels: loaded only when used

    task_frame = build_task_frame(task_cov, tasks, task_exposure, occupation_wages,
                                  workbank_tasks if workbank_tasks is not None else _EMPTY_WORKBANK)
    outcome_threshold = 5 if 5 in thresholds else max(thresholds)
    rows: list[dict[str, object]] = []
    for variant, exposure_col in (("human", "exposed"), ("gpt4", "gpt4_exposed")):
        if exposure_col not in task_frame.columns:
            continue
        tables = exposure_wage_model(task_frame, outcome=f"covered_{outcome_threshold}", exposure_col=exposure_col)
        exposed_rows = tables.coefficients.filter(pl.col("term") == "exposed")
        coef = exposed_rows["coef"][0] if exposed_rows.height else None
        se = exposed_rows["se"][0] if exposed_rows.height else None
        rows.append(_sensitivity_row("exposure_labels", variant, "exposed_coef", coef, who))
        rows.append(_sensitivity_row("exposure_labels", variant, "exposed_se", se, who))
        contrast = tables.contrasts.row(0, named=True)
        for metric in ("ratio", "ci_low", "ci_high"):
            rows.append(_sensitivity_row("exposure_labels", variant,
                                         f"exposed_ratio{'' if metric == 'ratio' else '_' + metric}",
                                         contrast[metric], who))
    return rows


def labeler_same_prompt_sensitivity(
    labels: pl.DataFrame,
    tasks: pl.DataFrame,
    task_hours: pl.DataFrame,
    occupations: pl.DataFrame,
    thresholds: Sequence[int] = THRESHOLDS,
    *,
    labeled: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The labeler comparison on the same prompts (SENSITIVITY_SCHEMA rows, dimension 'labeler_same_prompts').

    `labels`: prompt-level labels of two or more labelers (benchmark, prompt_id, labeler, onet_soc_code,
    task_id, rank). `labeled` (benchmark, prompt_id, labeler): every prompt each labeler labeled, also those
    it judged not occupational work (no label row); default: the prompts with a label row. Only the prompts
    every labeler labeled are kept; per labeler: tasks_covered_{t}, occupations_covered_{t},
    hours_share_covered_{t} on them, and n_prompts (how many prompts the comparison rests on)."""
    present = sorted(labels["labeler"].drop_nulls().unique().to_list()) if labels.height else []
    if len(present) < 2:
        return pl.DataFrame(schema=SENSITIVITY_SCHEMA)
    keys = ["benchmark", "prompt_id"]
    who = labeled if labeled is not None else labels.select(*keys, "labeler")
    common = (who.filter(pl.col("labeler").is_in(present)).unique(subset=[*keys, "labeler"])
              .group_by(keys).agg(pl.len().alias("n")).filter(pl.col("n") == len(present)).select(keys))
    same = labels.join(common, on=keys, how="semi")
    rows: list[dict[str, object]] = []
    for name in present:
        mine = same.filter(pl.col("labeler") == name)
        headline = coverage_headline(mine, tasks, task_hours, occupations, thresholds, per_benchmark=False)
        for record in headline.filter(
            pl.col("metric").is_in(["tasks_covered", "occupations_covered", "hours_share_covered"])
        ).iter_rows(named=True):
            value = record["value"]
            rows.append({"dimension": "labeler_same_prompts", "variant": name,
                         "metric": f"{record['metric']}_{record['threshold']}",
                         "value": float(value) if value is not None and value == value else None, "labeler": name})
        rows.append({"dimension": "labeler_same_prompts", "variant": name, "metric": "n_prompts",
                     "value": float(common.height), "labeler": name})
    return pl.DataFrame(rows, schema=SENSITIVITY_SCHEMA)
