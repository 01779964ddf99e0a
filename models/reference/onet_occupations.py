"""O*NET 29.2 `Occupation Data.txt` and the `onet_occupations` table (SOC code, major group, has_tasks)."""

from __future__ import annotations

import polars as pl

from models.reference.readers import (
    ONET_CODE,
    check_pattern,
    check_unique,
    parse_tsv,
)

# expected sizes of O*NET 29.2 (the asset checks hold the data to them)
ONET_OCCUPATIONS = 1_016
ONET_OCCUPATIONS_WITH_TASKS = 923
SOC_MAJOR_GROUPS = 22  # 11-0000 .. 53-0000; 55-0000 Military has no OEWS row and no O*NET tasks
MILITARY_MAJOR_GROUP = ("55-0000", "Military Specific Occupations")  # SOC 2018 title; not in OEWS


def parse_occupation_data(data: bytes, source: str) -> pl.DataFrame:
    """`Occupation Data.txt` -> onet_soc_code, title, description (one row per O*NET-SOC code)."""
    df = parse_tsv(data, source, ["O*NET-SOC Code", "Title", "Description"])
    df = df.rename({"O*NET-SOC Code": "onet_soc_code", "Title": "title", "Description": "description"})
    check_pattern(df, "onet_soc_code", ONET_CODE, source, "an O*NET-SOC code like 13-2011.00")
    check_unique(df, ["onet_soc_code"], source)
    return df.select("onet_soc_code", "title", "description")


def build_onet_occupations(
    occupations: pl.DataFrame, tasks: pl.DataFrame, oews: pl.DataFrame
) -> pl.DataFrame:
    """All O*NET-SOC codes with the 6-digit SOC code, SOC major group (titles from OEWS major rows; 55-0000
    Military, absent from OEWS, gets its SOC 2018 title) and has_tasks."""
    majors = oews.filter(pl.col("group_level") == "major").select(
        pl.col("soc_code").alias("major_group_code"), pl.col("title").alias("major_group_title")
    )
    majors = pl.concat(
        [
            majors,
            pl.DataFrame(
                {
                    "major_group_code": [MILITARY_MAJOR_GROUP[0]],
                    "major_group_title": [MILITARY_MAJOR_GROUP[1]],
                }
            ),
        ]
    ).unique("major_group_code", keep="first")
    with_tasks = tasks.select("onet_soc_code").unique().with_columns(pl.lit(True).alias("has_tasks"))
    return (
        occupations.with_columns(
            pl.col("onet_soc_code").str.slice(0, 7).alias("soc_code"),
            (pl.col("onet_soc_code").str.slice(0, 2) + "-0000").alias("major_group_code"),
        )
        .join(majors, on="major_group_code", how="left")
        .join(with_tasks, on="onet_soc_code", how="left")
        .with_columns(pl.col("has_tasks").fill_null(False))
        .select(
            "onet_soc_code",
            "title",
            "description",
            "soc_code",
            "major_group_code",
            "major_group_title",
            "has_tasks",
        )
        .sort("onet_soc_code")
    )
