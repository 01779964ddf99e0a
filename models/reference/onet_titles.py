"""O*NET 29.2 `Alternate Titles.txt` and `Sample of Reported Titles.txt`, and the `onet_job_titles` table
(occupation, alternate, short and reported titles, one row per occupation x title x source)."""

from __future__ import annotations

import polars as pl

from models.reference.readers import (
    NA,
    ONET_CODE,
    check_pattern,
    parse_tsv,
)


def parse_alternate_titles(data: bytes, source: str) -> pl.DataFrame:
    """`Alternate Titles.txt` -> onet_soc_code, alternate_title, short_title (null for n/a)."""
    df = parse_tsv(data, source, ["O*NET-SOC Code", "Alternate Title", "Short Title"])
    check_pattern(df, "O*NET-SOC Code", ONET_CODE, source, "an O*NET-SOC code")
    return df.select(
        pl.col("O*NET-SOC Code").alias("onet_soc_code"),
        pl.col("Alternate Title").alias("alternate_title"),
        pl.when(pl.col("Short Title").is_in(list(NA)))
        .then(None)
        .otherwise(pl.col("Short Title"))
        .alias("short_title"),
    )


def parse_reported_titles(data: bytes, source: str) -> pl.DataFrame:
    """`Sample of Reported Titles.txt` -> onet_soc_code, reported_title."""
    df = parse_tsv(data, source, ["O*NET-SOC Code", "Reported Job Title"])
    check_pattern(df, "O*NET-SOC Code", ONET_CODE, source, "an O*NET-SOC code")
    return df.select(
        pl.col("O*NET-SOC Code").alias("onet_soc_code"), pl.col("Reported Job Title").alias("reported_title")
    )


def build_onet_job_titles(
    occupations: pl.DataFrame, alternate: pl.DataFrame, reported: pl.DataFrame
) -> pl.DataFrame:
    """One row per (onet_soc_code, job_title, title_source); exact duplicates within a source dropped."""
    parts = [
        occupations.select(
            "onet_soc_code", pl.col("title").alias("job_title"), pl.lit("title").alias("title_source")
        ),
        alternate.select(
            "onet_soc_code",
            pl.col("alternate_title").alias("job_title"),
            pl.lit("alternate").alias("title_source"),
        ),
        alternate.filter(pl.col("short_title").is_not_null()).select(
            "onet_soc_code", pl.col("short_title").alias("job_title"), pl.lit("short").alias("title_source")
        ),
        reported.select(
            "onet_soc_code",
            pl.col("reported_title").alias("job_title"),
            pl.lit("reported").alias("title_source"),
        ),
    ]
    return (
        pl.concat(parts)
        .with_columns(pl.col("job_title").str.strip_chars())
        .filter(pl.col("job_title").str.len_chars() > 0)
        .unique(maintain_order=True)
    )
