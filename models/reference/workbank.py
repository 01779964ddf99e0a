"""WORKBank (Shao et al. 2025): worker automation desire and expert capability ratings, and the
`workbank_tasks` table with its zones (threshold 3 on both 1-5 scales)."""

from __future__ import annotations

import polars as pl

from models.reference.readers import (
    ONET_CODE,
    cast_number,
    check_pattern,
    check_unique,
    parse_csv_records,
)

ZONE_THRESHOLD = 3.0
ZONES = ("green_light", "red_light", "rnd_opportunity", "low_priority")


def parse_workbank_tasks(data: bytes, source: str) -> pl.DataFrame:
    """`task_statement_with_metadata.csv` -> task_id, onet_soc_code, occupation_title, task."""
    df = parse_csv_records(
        data, source, ["O*NET-SOC Code", "Occupation (O*NET-SOC Title)", "Task ID", "Task"]
    )
    check_pattern(df, "O*NET-SOC Code", ONET_CODE, source, "an O*NET-SOC code")
    df = cast_number(df, "Task ID", pl.Int64(), source, rename="task_id", required=True, integral_float=True)
    check_unique(df, ["task_id"], source)
    return df.select(
        "task_id",
        pl.col("O*NET-SOC Code").alias("onet_soc_code"),
        pl.col("Occupation (O*NET-SOC Title)").alias("occupation_title"),
        pl.col("Task").alias("task"),
    )


def _parse_workbank_ratings(
    data: bytes, source: str, rating_column: str, rating: str, has: str, *, one_per_rater: bool = True,
    final_newline: bool = True,
) -> pl.DataFrame:
    """A WORKBank rating file -> task_id, occupation_title, task, `rating` (from `rating_column`, required,
    1-5) and `has` (the Human Agency Scale rating, 1-5). `one_per_rater`: a (Task ID, User ID) pair twice is
    an error (a copied line counted a rating twice and moved the zones: a probe, 2026-12-08)."""
    df = parse_csv_records(
        data,
        source,
        [
            "Task ID",
            "Occupation (O*NET-SOC Title)",
            "Task",
            rating_column,
            "Human Agency Scale Rating",
            *(["User ID"] if one_per_rater else []),
        ],
        require_final_newline=final_newline,
    )
    df = cast_number(df, "Task ID", pl.Int64(), source, rename="task_id", required=True, integral_float=True)
    df = cast_number(
        df,
        rating_column,
        pl.Int64(),
        source,
        rename=rating,
        required=True,
        min_value=1,
        max_value=5,
        integral_float=True,
    )
    df = cast_number(
        df,
        "Human Agency Scale Rating",
        pl.Int64(),
        source,
        rename=has,
        min_value=1,
        max_value=5,
        integral_float=True,
    )
    if one_per_rater:
        check_unique(df, ["task_id", "User ID"], source)
    return df.select(
        "task_id",
        pl.col("Occupation (O*NET-SOC Title)").alias("occupation_title"),
        pl.col("Task").alias("task"),
        rating,
        has,
    )


def parse_workbank_desires(data: bytes, source: str) -> pl.DataFrame:
    """`domain_worker_desires.csv` -> task_id, occupation_title, task, desire (1-5), worker_has (1-5)."""
    return _parse_workbank_ratings(data, source, "Automation Desire Rating", "desire", "worker_has")


def parse_workbank_capability(data: bytes, source: str) -> pl.DataFrame:
    """`expert_rated_technological_capability.csv` -> task_id, occupation_title, task, capability (1-5),
    expert_has (1-5)."""
    # as published: 38 of its rows repeat another whole (19 ratings given twice, kept as the source has them), and
    # its last line has no line end
    return _parse_workbank_ratings(data, source, "Automation Capacity Rating", "capability", "expert_has",
                                   one_per_rater=False, final_newline=False)


def zone_expr(desire: str = "desire_mean", capability: str = "capability_mean") -> pl.Expr:
    """WORKBank zone from mean worker desire and mean expert capability (threshold 3 on both 1-5 scales)."""
    d, c = pl.col(desire), pl.col(capability)
    return (
        pl.when(d.is_null() | c.is_null())
        .then(None)
        .when((d >= ZONE_THRESHOLD) & (c >= ZONE_THRESHOLD))
        .then(pl.lit("green_light"))
        .when((d < ZONE_THRESHOLD) & (c >= ZONE_THRESHOLD))
        .then(pl.lit("red_light"))
        .when((d >= ZONE_THRESHOLD) & (c < ZONE_THRESHOLD))
        .then(pl.lit("rnd_opportunity"))
        .otherwise(pl.lit("low_priority"))
    )


def build_workbank_tasks(
    meta: pl.DataFrame, desires: pl.DataFrame, capability: pl.DataFrame, tasks: pl.DataFrame
) -> pl.DataFrame:
    """One row per WORKBank task (metadata file, plus any rated task missing from it) with rating statistics,
    the zone (null unless both worker desire and expert capability exist) and `in_onet_29_2`."""
    worker = desires.group_by("task_id").agg(
        pl.col("desire").mean().alias("desire_mean"),
        pl.col("desire").median().alias("desire_median"),
        pl.col("desire").count().alias("desire_n"),
        pl.col("worker_has").mean().alias("worker_has_mean"),
        pl.col("worker_has").median().alias("worker_has_median"),
        pl.col("worker_has").count().alias("worker_has_n"),
        pl.col("occupation_title").first().alias("_w_title"),
        pl.col("task").first().alias("_w_task"),
    )
    expert = capability.group_by("task_id").agg(
        pl.col("capability").mean().alias("capability_mean"),
        pl.col("capability").median().alias("capability_median"),
        pl.col("capability").count().alias("capability_n"),
        pl.col("expert_has").mean().alias("expert_has_mean"),
        pl.col("expert_has").median().alias("expert_has_median"),
        pl.col("expert_has").count().alias("expert_has_n"),
        pl.col("occupation_title").first().alias("_e_title"),
        pl.col("task").first().alias("_e_task"),
    )
    out = (
        meta.join(worker, on="task_id", how="full", coalesce=True)
        .join(expert, on="task_id", how="full", coalesce=True)
        .with_columns(
            pl.coalesce("occupation_title", "_w_title", "_e_title").alias("occupation_title"),
            pl.coalesce("task", "_w_task", "_e_task").alias("task"),
            *[
                pl.col(c).fill_null(0).cast(pl.Int64)
                for c in ("desire_n", "worker_has_n", "capability_n", "expert_has_n")
            ],
        )
    )
    keys = tasks.select("onet_soc_code", "task_id").with_columns(pl.lit(True).alias("in_onet_29_2"))
    return (
        out.with_columns(zone_expr().alias("zone"))
        .join(keys, on=["onet_soc_code", "task_id"], how="left")
        .with_columns(pl.col("in_onet_29_2").fill_null(False))
        .select(
            "task_id",
            "onet_soc_code",
            "occupation_title",
            "task",
            "desire_mean",
            "desire_median",
            "desire_n",
            "capability_mean",
            "capability_median",
            "capability_n",
            "worker_has_mean",
            "worker_has_median",
            "worker_has_n",
            "expert_has_mean",
            "expert_has_median",
            "expert_has_n",
            "zone",
            "in_onet_29_2",
        )
        .sort("task_id")
    )


def workbank_summary(workbank: pl.DataFrame) -> dict[str, int | float]:
    zones = dict(workbank.group_by("zone").len().iter_rows())
    return {
        "tasks": workbank.height,
        "tasks_worker_rated": int((workbank["desire_n"] > 0).sum()),
        "tasks_expert_rated": int((workbank["capability_n"] > 0).sum()),
        "tasks_with_zone": int(workbank["zone"].is_not_null().sum()),
        "worker_ratings": int(workbank["desire_n"].sum()),
        "expert_ratings": int(workbank["capability_n"].sum()),
        **{f"zone_{z}": int(zones.get(z, 0)) for z in ZONES},
        "in_onet_29_2": int(workbank["in_onet_29_2"].sum()),
        "match_rate_onet_29_2": float(workbank["in_onet_29_2"].mean()) if workbank.height else 0.0,
        "without_onet_code": int(workbank["onet_soc_code"].is_null().sum()),
    }
