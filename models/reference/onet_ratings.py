"""O*NET task ratings (importance IM, relevance RT, frequency FT) from up to three sources.

Sources, best first (RATINGS_SOURCES): the raw O*NET `Task Ratings.txt` (`onet_task_ratings_full`), the
derived one-row-per-task copy `task_ratings_im_rt_29x.csv` of all 17,639 rated 29.x tasks (`im_rt_29x`; its
`freq_*` columns are not O*NET values and are never read), then the partial WORKBank table of 2,131 tasks
(`workbank_partial`). Each task takes all its rating columns from the first source that rates it, named in
`ratings_source` (`combine_task_ratings`). `frequency_category` is the modal FT category of the raw file (the
category with the largest share of respondents; ties go to the lower category) or the partial file's single
FT category, and null for tasks rated from the 29.x copy (it has no FT categories).
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import polars as pl

from models.errors import InputError
from models.reference.readers import (
    ONET_CODE,
    cast_number,
    check_in_set,
    check_pattern,
    check_unique,
    fail_at,
    parse_csv_records,
    parse_tsv,
)

ONET_TASKS_RATED = 17_639  # every Core or Supplemental task of 29.2; the 1,157 Task Type n/a tasks are unrated
# task-ratings sources, best first (the names land in onet_tasks.ratings_source)
RATINGS_SOURCES = ("onet_task_ratings_full", "im_rt_29x", "workbank_partial")
RATINGS_SCHEMA = {
    "onet_soc_code": pl.Utf8,
    "task_id": pl.Int64,
    "importance": pl.Float64,
    "relevance": pl.Float64,
    "frequency_category": pl.Int64,
}


def _first_line(data: bytes) -> str:
    # decoded as the file opened in text mode (utf-8-sig, errors="replace", universal newlines) was, in
    # memory: only the header decides the layout, the layout's parser reports bad bytes with their line
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", errors="replace").readline()


def parse_task_ratings(data: bytes, source: str) -> pl.DataFrame:
    """Task ratings in any of three layouts -> onet_soc_code, task_id, importance (IM, 1-5), relevance (RT,
    0-100), frequency_category (FT, 1-7).

    - O*NET `Task Ratings.txt` (long: one row per task x scale x category): IM and RT data values; the modal
      FT category (largest share of respondents, ties to the lower category).
    - `task_ratings_im_rt_29x.csv` (O*NET-SOC Code, Title, Task ID, Task, freq_*, importance[_lower/_upper],
      relevance[_lower/_upper]; one row per rated task): importance and relevance only. Its `freq_*` columns
      are a third party's weighted sum of the FT percentages, not O*NET values, so they are not read and
      frequency_category stays null.
    - `task_ratings_partial_from_workbank.csv` (onetsoc_code, task_id, im, rt, ft_category_workbank).
    - WORKBank `task_statement_with_metadata.csv` (the partial file's upstream: Importance, Relevance and
      Frequency columns).
    """
    header = _first_line(data)
    if "Scale ID" in header and "\t" in header:
        return _parse_full_task_ratings(data, source)
    if "importance_lower" in header and "relevance" in header:
        return _parse_im_rt_ratings(data, source)
    if header.startswith("onetsoc_code"):
        df = parse_csv_records(
            data, source, ["onetsoc_code", "task_id", "im", "rt", "ft_category_workbank"]
        )
        names = {
            "code": "onetsoc_code",
            "task": "task_id",
            "im": "im",
            "rt": "rt",
            "ft": "ft_category_workbank",
        }
    elif "Importance" in header:
        df = parse_csv_records(
            data, source, ["O*NET-SOC Code", "Task ID", "Importance", "Relevance", "Frequency"]
        )
        names = {
            "code": "O*NET-SOC Code",
            "task": "Task ID",
            "im": "Importance",
            "rt": "Relevance",
            "ft": "Frequency",
        }
    else:
        raise InputError(f"unknown task-ratings layout; header {header.strip()[:200]!r}", path=source, line=1)
    check_pattern(df, names["code"], ONET_CODE, source, "an O*NET-SOC code")
    df = cast_number(
        df, names["task"], pl.Int64(), source, rename="task_id", required=True, integral_float=True
    )
    df = cast_number(df, names["im"], pl.Float64(), source, rename="importance", min_value=1, max_value=5)
    df = cast_number(df, names["rt"], pl.Float64(), source, rename="relevance", min_value=0, max_value=100)
    df = cast_number(
        df,
        names["ft"],
        pl.Int64(),
        source,
        rename="frequency_category",
        min_value=1,
        max_value=7,
        integral_float=True,
    )
    df = df.with_columns(pl.col(names["code"]).alias("onet_soc_code"))
    check_unique(df, ["onet_soc_code", "task_id"], source)
    return df.select(list(RATINGS_SCHEMA))


def _parse_im_rt_ratings(data: bytes, source: str) -> pl.DataFrame:
    """The one-row-per-task IM/RT table: importance (IM, 1-5) and relevance (RT, 0-100), both required."""
    df = parse_csv_records(data, source, ["O*NET-SOC Code", "Task ID", "importance", "relevance"])
    check_pattern(df, "O*NET-SOC Code", ONET_CODE, source, "an O*NET-SOC code")
    df = cast_number(df, "Task ID", pl.Int64(), source, rename="task_id", required=True)
    df = cast_number(df, "importance", pl.Float64(), source, required=True, min_value=1, max_value=5)
    df = cast_number(df, "relevance", pl.Float64(), source, required=True, min_value=0, max_value=100)
    df = df.with_columns(
        pl.col("O*NET-SOC Code").alias("onet_soc_code"), pl.lit(None, dtype=pl.Int64).alias("frequency_category")
    )
    check_unique(df, ["onet_soc_code", "task_id"], source)
    return df.select(list(RATINGS_SCHEMA)).cast(RATINGS_SCHEMA).sort(["onet_soc_code", "task_id"])


def _parse_full_task_ratings(data: bytes, source: str) -> pl.DataFrame:
    df = parse_tsv(data, source, ["O*NET-SOC Code", "Task ID", "Scale ID", "Category", "Data Value"])
    check_pattern(df, "O*NET-SOC Code", ONET_CODE, source, "an O*NET-SOC code")
    check_in_set(df, "Scale ID", ["IM", "RT", "FT"], source)
    df = cast_number(df, "Task ID", pl.Int64(), source, rename="task_id", required=True)
    df = cast_number(
        df, "Data Value", pl.Float64(), source, rename="value", required=True, min_value=0, max_value=100
    )
    df = df.rename({"O*NET-SOC Code": "onet_soc_code"})
    ft = df.filter(pl.col("Scale ID") == "FT")
    ft = cast_number(
        ft, "Category", pl.Int64(), source, rename="category", required=True, min_value=1, max_value=7
    )
    check_unique(ft, ["onet_soc_code", "task_id", "category"], source)
    single = df.filter(pl.col("Scale ID") != "FT")
    check_unique(single, ["onet_soc_code", "task_id", "Scale ID"], source)
    fail_at(
        single,
        (single["Scale ID"] == "IM") & ((single["value"] < 1) | (single["value"] > 5)),
        "IM data value outside 1-5",
        source,
        "value",
    )
    wide = single.pivot(on="Scale ID", index=["onet_soc_code", "task_id"], values="value")
    for scale in ("IM", "RT"):
        if scale not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(scale))
    modal = (
        ft.sort(["onet_soc_code", "task_id", "value", "category"], descending=[False, False, True, False])
        .group_by(["onet_soc_code", "task_id"], maintain_order=True)
        .agg(pl.col("category").first().alias("frequency_category"))
    )
    out = wide.join(modal, on=["onet_soc_code", "task_id"], how="full", coalesce=True).rename(
        {"IM": "importance", "RT": "relevance"}
    )
    return out.select(list(RATINGS_SCHEMA)).cast(RATINGS_SCHEMA).sort(["onet_soc_code", "task_id"])


def combine_task_ratings(layers: Sequence[tuple[str, pl.DataFrame]]) -> pl.DataFrame:
    """Ratings of several sources, best first -> one row per task with `ratings_source`.

    Each task takes every rating column from the first layer that rates it (importance or relevance not
    null); columns are never mixed across sources, so `ratings_source` says where all of a row's values
    come from.
    """
    frames = []
    taken = pl.DataFrame(schema={"onet_soc_code": pl.Utf8, "task_id": pl.Int64})
    for name, ratings in layers:
        rated = ratings.select(list(RATINGS_SCHEMA)).cast(RATINGS_SCHEMA).filter(
            pl.col("importance").is_not_null() | pl.col("relevance").is_not_null()
        )
        new = rated.join(taken, on=["onet_soc_code", "task_id"], how="anti")
        frames.append(new.with_columns(pl.lit(name, dtype=pl.Utf8).alias("ratings_source")))
        taken = pl.concat([taken, new.select("onet_soc_code", "task_id")])
    schema = {**RATINGS_SCHEMA, "ratings_source": pl.Utf8}
    if not frames:
        return pl.DataFrame(schema=schema)
    return pl.concat(frames).select(list(schema)).sort(["onet_soc_code", "task_id"])
