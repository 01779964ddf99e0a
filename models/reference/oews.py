"""BLS OEWS May 2024 national estimates (`national_M2024_dl.xlsx`, the `oews_wages` table).

Markers: `*` (wage not available) and `**` (employment not released) become null; `#` (wage at or above the
top code, $115.00/hr or $239,200/yr) becomes the top-code value with `wage_top_coded` = true. Occupations
published with an annual wage only (teachers) get hourly = annual / 2,080, and those with an hourly wage only
(actors, dancers, musicians) annual = hourly x 2,080, flagged `*_wage_imputed`. `wage_bill` = employment x
annual mean wage; `annual_hours` = employment x 2,080 (a full-time year).
"""

from __future__ import annotations

import io

import polars as pl

from models.errors import InputError
from models.reference.readers import (
    LINE,
    SOC_CODE,
    cast_number,
    check_header,
    check_in_set,
    check_pattern,
    check_unique,
)

OEWS_GROUPS = ("total", "major", "minor", "broad", "detailed")
OEWS_SHEET = "national_M2024_dl"
HOURS_PER_YEAR = 2_080.0  # a full-time year: 40 h x 52 weeks (the BLS annual = hourly x 2,080 convention)
TOP_CODED_HOURLY = 115.0  # BLS '#': wage >= $115.00 per hour
TOP_CODED_ANNUAL = 239_200.0  # BLS '#': wage >= $239,200 per year


def parse_oews_national(data: bytes, source: str, sheet: str = OEWS_SHEET) -> pl.DataFrame:
    """BLS `national_M2024_dl.xlsx` -> the `oews_wages` table (one row per OCC_CODE x O_GROUP).

    Line numbers in errors are worksheet rows (row 1 is the header). See the module docstring for the
    `*` / `**` / `#` markers and the imputed hourly/annual wages.
    """
    try:
        # the workbook's bytes, in memory (resources/readers.py read the file)
        raw = pl.read_excel(io.BytesIO(data), sheet_name=sheet, engine="calamine", infer_schema_length=0)
    except Exception as exc:  # fastexcel raises its own error types for a corrupt or truncated workbook
        raise InputError(
            f"cannot read sheet {sheet!r} of the OEWS workbook ({type(exc).__name__}: {exc})", path=source
        ) from exc
    columns = ["OCC_CODE", "OCC_TITLE", "O_GROUP", "TOT_EMP", "H_MEAN", "A_MEAN"]
    check_header(raw.columns, columns, source)
    df = raw.with_columns(pl.Series(LINE, range(2, raw.height + 2), dtype=pl.Int64))
    if df.is_empty():
        raise InputError("the OEWS sheet has no data rows", path=source, line=2)
    check_pattern(df, "OCC_CODE", SOC_CODE, source, "a SOC code like 13-2011")
    check_in_set(df, "O_GROUP", OEWS_GROUPS, source)
    check_unique(df, ["OCC_CODE", "O_GROUP"], source)
    df = df.with_columns(
        (pl.col("H_MEAN") == "#").alias("_h_top"),
        (pl.col("A_MEAN") == "#").alias("_a_top"),
        pl.col("H_MEAN").replace("#", str(TOP_CODED_HOURLY)),
        pl.col("A_MEAN").replace("#", str(TOP_CODED_ANNUAL)),
    )
    df = cast_number(
        df,
        "TOT_EMP",
        pl.Float64(),
        source,
        rename="employment",
        na_values=("**", ""),
        min_value=0,
        integral_float=True,
    )
    df = cast_number(
        df, "H_MEAN", pl.Float64(), source, rename="hourly_published", na_values=("*", ""), min_value=0
    )
    df = cast_number(
        df, "A_MEAN", pl.Float64(), source, rename="annual_published", na_values=("*", ""), min_value=0
    )
    return df.select(
        pl.col("OCC_CODE").alias("soc_code"),
        pl.col("OCC_TITLE").str.strip_chars().alias("title"),
        pl.col("O_GROUP").alias("group_level"),
        "employment",
        pl.coalesce("hourly_published", pl.col("annual_published") / HOURS_PER_YEAR).alias(
            "hourly_mean_wage"
        ),
        pl.coalesce("annual_published", pl.col("hourly_published") * HOURS_PER_YEAR).alias(
            "annual_mean_wage"
        ),
        (
            pl.col("employment")
            * pl.coalesce("annual_published", pl.col("hourly_published") * HOURS_PER_YEAR)
        ).alias("wage_bill"),
        (pl.col("employment") * HOURS_PER_YEAR).alias("annual_hours"),
        (pl.col("_h_top") | pl.col("_a_top")).alias("wage_top_coded"),
        (pl.col("hourly_published").is_null() & pl.col("annual_published").is_not_null()).alias(
            "hourly_wage_imputed"
        ),
        (pl.col("annual_published").is_null() & pl.col("hourly_published").is_not_null()).alias(
            "annual_wage_imputed"
        ),
    )


def oews_summary(oews: pl.DataFrame) -> dict[str, int | float]:
    counts = dict(oews.group_by("group_level").len().iter_rows())
    total = oews.filter(pl.col("group_level") == "total")["employment"]
    return {
        "rows": oews.height,
        **{f"rows_{g}": int(counts.get(g, 0)) for g in OEWS_GROUPS},
        "total_employment": float(total[0]) if total.len() else 0.0,
        "detailed_employment": float(oews.filter(pl.col("group_level") == "detailed")["employment"].sum()),
        "employment_suppressed": int(oews["employment"].is_null().sum()),
        "wage_missing": int(oews["annual_mean_wage"].is_null().sum()),
        "wage_top_coded": int(oews["wage_top_coded"].sum()),
        "hourly_wage_imputed": int(oews["hourly_wage_imputed"].sum()),
        "annual_wage_imputed": int(oews["annual_wage_imputed"].sum()),
    }
