"""Task shares π (MIT WAL, O*NET 30.2) and the `task_hours` table (rules in `build_task_hours`)."""

from __future__ import annotations

import io
from pathlib import Path  # only to take the suffix of the source name

import polars as pl

from models.errors import InputError
from models.reference.readers import (
    LINE,
    ONET_CODE,
    cast_number,
    check_header,
    check_pattern,
    check_unique,
    fail_at,
    parse_csv_records,
)


def parse_task_shares(data: bytes, source: str) -> pl.DataFrame:
    """MIT WAL `onet_task_labor_input_30_2.parquet` (or .csv: told by `source`'s suffix) -> onet_soc_code,
    task_id, pi."""
    try:
        if Path(source).suffix == ".csv":
            raw = parse_csv_records(data, source, ["onetsoc_code", "task_id", "pi"])
            raw = cast_number(raw, "task_id", pl.Int64(), source, required=True)
            raw = cast_number(raw, "pi", pl.Float64(), source, required=True)
        else:
            raw = pl.read_parquet(io.BytesIO(data))  # the file's bytes, in memory
            raw = raw.with_columns(pl.Series(LINE, range(1, raw.height + 1), dtype=pl.Int64))
    except InputError:
        raise
    except Exception as exc:  # a truncated or corrupt parquet file
        raise InputError(
            f"cannot read the task-share table ({type(exc).__name__}: {exc})", path=source
        ) from exc
    check_header(raw.columns, ["onetsoc_code", "task_id", "pi"], source)
    df = raw.rename({"onetsoc_code": "onet_soc_code"}).with_columns(
        pl.col("task_id").cast(pl.Int64, strict=False), pl.col("pi").cast(pl.Float64, strict=False)
    )
    check_pattern(df, "onet_soc_code", ONET_CODE, source, "an O*NET-SOC code")
    fail_at(df, df["task_id"].is_null(), "column 'task_id': missing or not an integer (row number)", source)
    fail_at(
        df,
        df["pi"].is_null() | df["pi"].is_nan() | (df["pi"] < 0) | (df["pi"] > 1),
        "column 'pi': missing or outside [0, 1] (row number)",
        source,
        "pi",
    )
    check_unique(df, ["onet_soc_code", "task_id"], source)
    return df.select("onet_soc_code", "task_id", "pi")


def build_task_hours(tasks: pl.DataFrame, shares: pl.DataFrame, wages: pl.DataFrame) -> pl.DataFrame:
    """Per 29.2 task: its share π of the occupation's labour and its US annual hours (π x occupation hours).

    π comes from O*NET 30.2 (MIT WAL), joined on (onet_soc_code, task_id). Within each occupation with n tasks
    of which k have a 30.2 π:
    - each of the n - k tasks without π gets the equal-split fallback 1/n (`pi_is_fallback` = true);
    - the k matched π are renormalised to fill the rest: π_i / Σ_matched π x k/n.
    So π sums to 1 over the occupation's 29.2 tasks (30.2 tasks absent from 29.2 drop out and the others
    grow in proportion), and an occupation without any 30.2 π is an equal split. `pi_raw` keeps the 30.2
    value. Hours: occupation_annual_hours = OEWS employment x 2,080 (`occupation_wages`), null where wages
    are missing.
    """
    joined = tasks.select("onet_soc_code", "task_id").join(
        shares.select("onet_soc_code", "task_id", pl.col("pi").alias("pi_raw")),
        on=["onet_soc_code", "task_id"],
        how="left",
    )
    per_occ = pl.len().over("onet_soc_code")
    matched = pl.col("pi_raw").is_not_null()
    k = matched.sum().over("onet_soc_code")
    matched_sum = pl.col("pi_raw").sum().over("onet_soc_code")
    pi = (
        pl.when(matched & (matched_sum > 0))
        .then(pl.col("pi_raw") / matched_sum * k / per_occ)
        .when(matched)  # every matched π is 0: spread the matched tasks' part equally among them
        .then(1.0 / per_occ)
        .otherwise(1.0 / per_occ)
    )
    hours = wages.select("onet_soc_code", pl.col("annual_hours").alias("occupation_annual_hours"))
    return (
        joined.with_columns(pi.alias("pi"), (~matched).alias("pi_is_fallback"))
        .join(hours, on="onet_soc_code", how="left")
        .with_columns((pl.col("pi") * pl.col("occupation_annual_hours")).alias("task_annual_hours"))
        .select(
            "onet_soc_code",
            "task_id",
            "pi",
            "pi_is_fallback",
            "pi_raw",
            "occupation_annual_hours",
            "task_annual_hours",
        )
        .sort(["onet_soc_code", "task_id"])
    )


def task_hours_summary(task_hours: pl.DataFrame, shares: pl.DataFrame) -> dict[str, int | float]:
    per_occ = task_hours.group_by("onet_soc_code").agg(
        pl.col("pi").sum().alias("pi_sum"), (~pl.col("pi_is_fallback")).sum().alias("k"), pl.len().alias("n")
    )
    sums = per_occ["pi_sum"]
    return {
        "tasks": task_hours.height,
        "tasks_with_pi": int((~task_hours["pi_is_fallback"]).sum()),
        "pi_match_rate": float((~task_hours["pi_is_fallback"]).mean()) if task_hours.height else 0.0,
        "occupations": per_occ.height,
        "occupations_all_fallback": int((per_occ["k"] == 0).sum()),
        "occupations_partial_fallback": int(((per_occ["k"] > 0) & (per_occ["k"] < per_occ["n"])).sum()),
        "pi_rows_not_in_tasks": shares.join(task_hours, on=["onet_soc_code", "task_id"], how="anti").height,
        "pi_sum_max_abs_error": float((sums - 1.0).abs().max()) if sums.len() else 0.0,
        "tasks_with_hours": int(task_hours["task_annual_hours"].is_not_null().sum()),
        "total_task_annual_hours": float(task_hours["task_annual_hours"].sum()),
    }


def pi_sums(task_hours: pl.DataFrame) -> pl.DataFrame:
    """Σπ per occupation (the check expects 1 within 1e-6)."""
    return task_hours.group_by("onet_soc_code").agg(pl.col("pi").sum().alias("pi_sum")).sort("onet_soc_code")
