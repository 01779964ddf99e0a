"""O*NET 29.2 `Task Statements.txt` and the `onet_tasks` table: statements joined to their ratings, with the
`is_core` proxy (Core = relevance >= 67% and importance >= 3.0, O*NET's own rule) where Task Type is n/a.

Also the task -> detailed work activity (DWA) titles of `Tasks to DWAs.txt` and `DWA Reference.txt`, which the
offline labeler's index adds to its task documents.
"""

from __future__ import annotations

import polars as pl

from models.reference.onet_ratings import RATINGS_SCHEMA, RATINGS_SOURCES
from models.reference.readers import (
    ONET_CODE,
    cast_number,
    check_in_set,
    check_pattern,
    check_unique,
    fail_at,
    parse_tsv,
)

# expected size of O*NET 29.2 (the asset checks hold the data to it)
ONET_TASKS = 18_796
CORE_MIN_RELEVANCE = 67.0
CORE_MIN_IMPORTANCE = 3.0


def parse_task_statements(data: bytes, source: str) -> pl.DataFrame:
    """`Task Statements.txt` -> onet_soc_code, task_id, task, task_type (null for n/a), incumbents_responding,
    task_date, domain_source."""
    columns = [
        "O*NET-SOC Code",
        "Task ID",
        "Task",
        "Task Type",
        "Incumbents Responding",
        "Date",
        "Domain Source",
    ]
    df = parse_tsv(data, source, columns)
    check_pattern(df, "O*NET-SOC Code", ONET_CODE, source, "an O*NET-SOC code like 13-2011.00")
    df = cast_number(df, "Task ID", pl.Int64(), source, rename="task_id", required=True, min_value=1)
    df = cast_number(
        df, "Incumbents Responding", pl.Int64(), source, rename="incumbents_responding", min_value=0
    )
    check_in_set(df, "Task Type", ["Core", "Supplemental", "n/a"], source)
    fail_at(
        df, df["Task"].str.strip_chars().str.len_chars() == 0, "column 'Task': empty task statement", source
    )
    check_unique(df, ["O*NET-SOC Code", "task_id"], source)
    return df.select(
        pl.col("O*NET-SOC Code").alias("onet_soc_code"),
        "task_id",
        pl.col("Task").alias("task"),
        pl.when(pl.col("Task Type") == "n/a").then(None).otherwise(pl.col("Task Type")).alias("task_type"),
        "incumbents_responding",
        pl.col("Date").alias("task_date"),
        pl.col("Domain Source").alias("domain_source"),
    )


def build_onet_tasks(
    statements: pl.DataFrame, ratings: pl.DataFrame | None, ratings_source: str | None = None
) -> pl.DataFrame:
    """Task statements with ratings where present, `has_ratings`, `ratings_source` and the `is_core` proxy.

    `ratings` may carry a per-task `ratings_source` column (combine_task_ratings); otherwise every rated task
    gets `ratings_source`. is_core: Task Type Core -> true, Supplemental -> false; Task Type n/a -> the Core
    rule (relevance >= 67 and importance >= 3.0) on the task's ratings when rated, false when unrated.
    """
    if ratings is None:
        ratings = pl.DataFrame(schema=RATINGS_SCHEMA)
    if "ratings_source" not in ratings.columns:
        ratings = ratings.with_columns(pl.lit(ratings_source, dtype=pl.Utf8).alias("ratings_source"))
    joined = statements.join(
        ratings.select(*RATINGS_SCHEMA, pl.col("ratings_source").cast(pl.Utf8).alias("_source")),
        on=["onet_soc_code", "task_id"],
        how="left",
    )
    rated = pl.col("importance").is_not_null() | pl.col("relevance").is_not_null()
    rule = (pl.col("relevance") >= CORE_MIN_RELEVANCE) & (pl.col("importance") >= CORE_MIN_IMPORTANCE)
    return joined.with_columns(
        rated.alias("has_ratings"),
        pl.when(rated).then(pl.col("_source")).otherwise(None).cast(pl.Utf8).alias("ratings_source"),
        pl.when(pl.col("task_type") == "Core")
        .then(True)
        .when(pl.col("task_type") == "Supplemental")
        .then(False)
        .otherwise(rule.fill_null(False))
        .alias("is_core"),
    ).select(
        "onet_soc_code",
        "task_id",
        "task",
        "task_type",
        "incumbents_responding",
        "task_date",
        "domain_source",
        "importance",
        "relevance",
        "frequency_category",
        "has_ratings",
        "ratings_source",
        "is_core",
    )


def onet_tasks_summary(tasks: pl.DataFrame, ratings: pl.DataFrame | None = None) -> dict[str, int | float]:
    rated = tasks.filter(pl.col("has_ratings"))
    typed = rated.filter(
        pl.col("task_type").is_not_null()
        & pl.col("importance").is_not_null()
        & pl.col("relevance").is_not_null()
    )
    rule = (typed["relevance"] >= CORE_MIN_RELEVANCE) & (typed["importance"] >= CORE_MIN_IMPORTANCE)
    summary: dict[str, int | float] = {
        "tasks": tasks.height,
        "occupations": tasks["onet_soc_code"].n_unique(),
        "tasks_core": int((tasks["task_type"] == "Core").sum()),
        "tasks_supplemental": int((tasks["task_type"] == "Supplemental").sum()),
        "tasks_type_na": int(tasks["task_type"].is_null().sum()),
        "tasks_with_ratings": rated.height,
        "rated_share": rated.height / tasks.height if tasks.height else 0.0,
        "occupations_with_ratings": rated["onet_soc_code"].n_unique(),
        "typed_tasks_unrated": int((tasks["task_type"].is_not_null() & ~tasks["has_ratings"]).sum()),
        **{
            f"tasks_rated_{name}": int((rated["ratings_source"] == name).sum())
            for name in RATINGS_SOURCES
        },
        "is_core_true": int(tasks["is_core"].sum()),
        # how well the documented Core rule reproduces O*NET's Task Type on the rated tasks
        "core_rule_agreement": float(((typed["task_type"] == "Core") == rule).mean())
        if typed.height
        else 0.0,
    }
    if ratings is not None:
        summary["ratings_rows_not_in_statements"] = ratings.join(
            tasks, on=["onet_soc_code", "task_id"], how="anti"
        ).height
    return summary


def parse_tasks_to_dwas(data: bytes, source: str) -> pl.DataFrame:
    """`Tasks to DWAs.txt` -> onet_soc_code, task_id, dwa_id (one row per task x detailed work activity)."""
    df = parse_tsv(data, source, ["O*NET-SOC Code", "Task ID", "DWA ID"])
    check_pattern(df, "O*NET-SOC Code", ONET_CODE, source, "an O*NET-SOC code")
    df = cast_number(df, "Task ID", pl.Int64(), source, rename="task_id", required=True)
    return df.select(pl.col("O*NET-SOC Code").alias("onet_soc_code"), "task_id", pl.col("DWA ID").alias("dwa_id"))


def parse_dwa_reference(data: bytes, source: str) -> pl.DataFrame:
    """`DWA Reference.txt` -> dwa_id, dwa_title (one row per detailed work activity)."""
    df = parse_tsv(data, source, ["DWA ID", "DWA Title"])
    # a repeated DWA ID would silently double the titles of its tasks in build_task_dwas
    check_unique(df, ["DWA ID"], source)
    return df.select(pl.col("DWA ID").alias("dwa_id"), pl.col("DWA Title").alias("dwa_title"))


def build_task_dwas(tasks_to_dwas: pl.DataFrame, dwa_reference: pl.DataFrame) -> pl.DataFrame:
    """onet_soc_code, task_id, dwa_title: each task's DWA titles, in the order of `Tasks to DWAs.txt` (DWA IDs
    absent from the reference are dropped)."""
    return tasks_to_dwas.join(dwa_reference, on="dwa_id", how="inner").select(
        "onet_soc_code", "task_id", "dwa_title"
    )
