"""O*NET 29.2 `Technology Skills.txt` (the `onet_technology_skills` table)."""

from __future__ import annotations

import polars as pl

from models.reference.readers import (
    ONET_CODE,
    cast_flag,
    cast_number,
    check_pattern,
    check_unique,
    parse_tsv,
)


def parse_technology_skills(data: bytes, source: str) -> pl.DataFrame:
    """`Technology Skills.txt` -> onet_soc_code, example, commodity_code, commodity_title, hot_technology,
    in_demand."""
    df = parse_tsv(
        data,
        source,
        ["O*NET-SOC Code", "Example", "Commodity Code", "Commodity Title", "Hot Technology", "In Demand"],
    )
    check_pattern(df, "O*NET-SOC Code", ONET_CODE, source, "an O*NET-SOC code")
    df = cast_number(df, "Commodity Code", pl.Int64(), source, rename="commodity_code", required=True)
    df = cast_flag(df, "Hot Technology", source, true=["Y"], false=["N"], rename="hot_technology")
    df = cast_flag(df, "In Demand", source, true=["Y"], false=["N"], rename="in_demand")
    df = df.rename(
        {"O*NET-SOC Code": "onet_soc_code", "Example": "example", "Commodity Title": "commodity_title"}
    )
    check_unique(df, ["onet_soc_code", "example", "commodity_code"], source)
    return df.select(
        "onet_soc_code", "example", "commodity_code", "commodity_title", "hot_technology", "in_demand"
    )
