"""O*NET occupations x OEWS employment and wages: the `occupation_wages` table (rules in
`build_occupation_wages`)."""

from __future__ import annotations

import polars as pl

from models.reference.oews import HOURS_PER_YEAR

# the columns of table occupation_wages, in order
COLUMNS = (
    "onet_soc_code",
    "soc_code",
    "title",
    "major_group_code",
    "employment",
    "annual_mean_wage",
    "hourly_mean_wage",
    "wage_bill",
    "annual_hours",
    "wage_match",
    "n_onet_codes_sharing",
    "oews_code",
    "missing_reason",
)
# what each matching step returns (wage_bill and annual_hours are added at the end)
_MATCHED = tuple(c for c in COLUMNS if c not in ("wage_bill", "annual_hours"))


def build_occupation_wages(occupations: pl.DataFrame, oews: pl.DataFrame) -> pl.DataFrame:
    """Every O*NET occupation with tasks, with employment and wages from OEWS May 2024 (national).

    Matching, in order:
    1. `detailed` / `split_among_onet_codes`: the O*NET code's 6-digit SOC code has an OEWS detailed row. When
       n O*NET codes share that SOC code (e.g. 15-1299.01 .. .09), each gets employment / n (an equal split:
       OEWS has no finer counts) and the SOC code's mean wages. Totals are preserved.
    2. `broad_aggregate`: the SOC code has no OEWS detailed row (OEWS publishes e.g. 13-1020 "Buyers and
       Purchasing Agents" instead of 13-1021/22/23, or 29-2010 instead of 29-2011/12): the O*NET codes under
       the broad group (SOC code with last digit 0) share, equally, the broad group's employment *not already
       attached* under rule 1 (broad employment minus the detailed rows matched directly), with the mean wage
       of that residual (residual wage bill / residual employment; the broad mean if that is not positive).
    3. `missing`: neither exists (45-3031 Fishers and Related Fishing Workers: OEWS does not cover them), or
       OEWS suppresses the employment, or nothing is left of the broad group. `missing_reason` says which.
    OEWS employment no O*NET occupation with tasks maps to (e.g. most "All Other" codes) stays unattached;
    `occupation_wages_summary` reports how much.
    """
    occ = occupations.filter(pl.col("has_tasks")).select(
        "onet_soc_code", "soc_code", "title", "major_group_code"
    )
    detailed = _detailed_rows(oews)
    direct = _match_detailed(occ, detailed)
    taken = _attached_per_broad_group(detailed, direct)
    rest = _match_broad_residual(occ, detailed, _broad_rows(oews), taken)
    out = pl.concat([direct.select(list(_MATCHED)), rest.select(list(_MATCHED))], how="vertical_relaxed")
    out = out.with_columns(
        pl.when(pl.col("wage_match") == "missing")
        .then(None)
        .otherwise(pl.col("employment"))
        .alias("employment"),
        pl.col("n_onet_codes_sharing").cast(pl.Int64),
    ).with_columns(
        (pl.col("employment") * pl.col("annual_mean_wage")).alias("wage_bill"),
        (pl.col("employment") * HOURS_PER_YEAR).alias("annual_hours"),
    )
    return out.select(list(COLUMNS)).sort("onet_soc_code")


def _detailed_rows(oews: pl.DataFrame) -> pl.DataFrame:
    """OEWS detailed rows: soc_code, d_emp, d_annual, d_hourly."""
    return oews.filter(pl.col("group_level") == "detailed").select(
        pl.col("soc_code"),
        pl.col("employment").alias("d_emp"),
        pl.col("annual_mean_wage").alias("d_annual"),
        pl.col("hourly_mean_wage").alias("d_hourly"),
    )


def _broad_rows(oews: pl.DataFrame) -> pl.DataFrame:
    """One row per broad code: broad_code, b_emp, b_annual, b_hourly (the broad row; a detailed row where OEWS
    publishes the code only as detailed)."""
    return (
        oews.filter(pl.col("group_level").is_in(["broad", "detailed"]))
        .sort(pl.col("group_level") == "detailed")  # prefer the broad row when both exist
        .unique("soc_code", keep="first")
        .select(
            pl.col("soc_code").alias("broad_code"),
            pl.col("employment").alias("b_emp"),
            pl.col("annual_mean_wage").alias("b_annual"),
            pl.col("hourly_mean_wage").alias("b_hourly"),
        )
    )


def _match_detailed(occ: pl.DataFrame, detailed: pl.DataFrame) -> pl.DataFrame:
    """Rule 1: occupations whose SOC code has an OEWS detailed row, its employment split equally among them."""
    direct = occ.join(detailed, on="soc_code", how="inner")
    direct = direct.with_columns(pl.len().over("soc_code").alias("n_onet_codes_sharing"))
    return direct.with_columns(
        (pl.col("d_emp") / pl.col("n_onet_codes_sharing")).alias("employment"),
        pl.col("d_annual").alias("annual_mean_wage"),
        pl.col("d_hourly").alias("hourly_mean_wage"),
        pl.col("soc_code").alias("oews_code"),
        pl.when(pl.col("d_emp").is_null())
        .then(pl.lit("missing"))
        .when(pl.col("n_onet_codes_sharing") == 1)
        .then(pl.lit("detailed"))
        .otherwise(pl.lit("split_among_onet_codes"))
        .alias("wage_match"),
        pl.when(pl.col("d_emp").is_null())
        .then(pl.format("OEWS does not release employment for SOC {}", pl.col("soc_code")))
        .otherwise(None)
        .alias("missing_reason"),
    )


def _attached_per_broad_group(detailed: pl.DataFrame, direct: pl.DataFrame) -> pl.DataFrame:
    """Employment and wage bills already attached by rule 1, per broad group: broad_code, taken_emp,
    taken_annual_bill, taken_hourly_bill, taken_wage_gap (some attached row lacks a wage)."""
    attached_soc = direct.filter(pl.col("d_emp").is_not_null()).select("soc_code").unique()
    return (
        detailed.join(attached_soc, on="soc_code", how="semi")
        .with_columns((pl.col("soc_code").str.slice(0, 6) + "0").alias("broad_code"))
        .group_by("broad_code")
        .agg(
            pl.col("d_emp").sum().alias("taken_emp"),
            (pl.col("d_emp") * pl.col("d_annual")).sum().alias("taken_annual_bill"),
            (pl.col("d_emp") * pl.col("d_hourly")).sum().alias("taken_hourly_bill"),
            (pl.col("d_annual").is_null() | pl.col("d_hourly").is_null()).any().alias("taken_wage_gap"),
        )
    )


def _match_broad_residual(
    occ: pl.DataFrame, detailed: pl.DataFrame, broad_rows: pl.DataFrame, taken: pl.DataFrame
) -> pl.DataFrame:
    """Rules 2 and 3: occupations without a detailed row share their broad group's residual employment at the
    residual's mean wage (the broad mean when that is not usable), or are `missing` with a reason."""
    rest = (
        occ.join(detailed.select("soc_code"), on="soc_code", how="anti")
        .with_columns((pl.col("soc_code").str.slice(0, 6) + "0").alias("broad_code"))
        .join(broad_rows, on="broad_code", how="left")
        .join(taken, on="broad_code", how="left")
        .with_columns(
            pl.col("taken_emp").fill_null(0.0),
            pl.col("taken_annual_bill").fill_null(0.0),
            pl.col("taken_hourly_bill").fill_null(0.0),
            pl.col("taken_wage_gap").fill_null(False),
        )
        .with_columns(
            (pl.col("b_emp") - pl.col("taken_emp")).alias("residual_emp"),
            pl.len().over("broad_code").alias("n_onet_codes_sharing"),
        )
    )
    residual_annual = (pl.col("b_emp") * pl.col("b_annual") - pl.col("taken_annual_bill")) / pl.col(
        "residual_emp"
    )
    residual_hourly = (pl.col("b_emp") * pl.col("b_hourly") - pl.col("taken_hourly_bill")) / pl.col(
        "residual_emp"
    )
    usable = ~pl.col("taken_wage_gap") & (pl.col("taken_emp") > 0)
    ok = pl.col("b_emp").is_not_null() & (pl.col("residual_emp") > 0)
    return rest.with_columns(
        pl.when(ok)
        .then(pl.col("residual_emp") / pl.col("n_onet_codes_sharing"))
        .otherwise(None)
        .alias("employment"),
        pl.when(ok & usable & (residual_annual > 0))
        .then(residual_annual)
        .when(ok)
        .then(pl.col("b_annual"))
        .otherwise(None)
        .alias("annual_mean_wage"),
        pl.when(ok & usable & (residual_hourly > 0))
        .then(residual_hourly)
        .when(ok)
        .then(pl.col("b_hourly"))
        .otherwise(None)
        .alias("hourly_mean_wage"),
        pl.when(pl.col("b_emp").is_not_null()).then(pl.col("broad_code")).otherwise(None).alias("oews_code"),
        pl.when(ok).then(pl.lit("broad_aggregate")).otherwise(pl.lit("missing")).alias("wage_match"),
        _broad_missing_reason(ok, broad_rows["broad_code"]).alias("missing_reason"),
    )


def _broad_missing_reason(ok: pl.Expr, broad_codes: pl.Series) -> pl.Expr:
    """Why rule 2 left an occupation without wages (null when it did not)."""
    return (
        pl.when(ok)
        .then(None)
        .when(pl.col("b_emp").is_null() & pl.col("broad_code").is_in(broad_codes.implode()))
        .then(pl.format("OEWS does not release employment for broad group {}", pl.col("broad_code")))
        .when(pl.col("b_emp").is_null())
        .then(
            pl.format(
                "neither SOC {} nor its broad group {} has an OEWS May 2024 national row "
                "(outside OEWS coverage)",
                pl.col("soc_code"),
                pl.col("broad_code"),
            )
        )
        .otherwise(
            pl.format(
                "all of broad group {}'s OEWS employment is already attached to detailed matches",
                pl.col("broad_code"),
            )
        )
    )


def occupation_wages_summary(wages: pl.DataFrame, oews: pl.DataFrame) -> dict[str, int | float]:
    total = oews.filter(pl.col("group_level") == "total")["employment"]
    total_employment = (
        float(total[0])
        if total.len() and total[0] is not None
        else float(oews.filter(pl.col("group_level") == "detailed")["employment"].sum())
    )
    attached = float(wages["employment"].sum())
    counts = dict(wages.group_by("wage_match").len().iter_rows())
    used = set(wages["oews_code"].drop_nulls().to_list())
    detailed = oews.filter(pl.col("group_level") == "detailed")
    # detailed OEWS rows reached neither directly nor through their broad group
    unreached = detailed.filter(
        ~pl.col("soc_code").is_in(list(used)) & ~(pl.col("soc_code").str.slice(0, 6) + "0").is_in(list(used))
    )
    return {
        "occupations": wages.height,
        "with_wages": int(wages["employment"].is_not_null().sum()),
        "missing": int(counts.get("missing", 0)),
        "match_detailed": int(counts.get("detailed", 0)),
        "match_split_among_onet_codes": int(counts.get("split_among_onet_codes", 0)),
        "match_broad_aggregate": int(counts.get("broad_aggregate", 0)),
        "attached_employment": attached,
        "oews_total_employment": total_employment,
        "employment_share_attached": attached / total_employment if total_employment else 0.0,
        "attached_wage_bill": float(wages["wage_bill"].sum()),
        "oews_detailed_rows_unattached": unreached.height,
        "oews_detailed_employment_unattached": float(unreached["employment"].sum()),
    }
