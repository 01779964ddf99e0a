"""Which SOC major group a benchmark belongs to, for an index's cap per group (issue 25 item 5, issue 27 item 5).

A benchmark's group is read, in this order:

1. an `[[assign]]` entry of the index file (a manual assignment: it always wins, and says why);
2. `target_major_group` of its benchmark.toml (what the benchmark declares it targets);
3. its **estimated** work: its share of prompt x task labels per major group in the model-assisted imputation
   draws (the headline's estimator: `benchmark_major_group_estimates`, `share_mean`); the group with the
   largest share;
4. only when a benchmark has no estimate: its raw labels (the top-ranked labels of `task_label_counts`).

The raw labels name the judge's first occupation for about 41% of prompts (issue 25), so a group read from
them can be wrong (cybench -> office support, officebench -> legal); the estimates carry the judge sample.
"""

from __future__ import annotations

import polars as pl

from models.soc import major_group_of

# membership's `major_group_rule` values (a manual [[assign]] entry reads "assign entry (<file>:<line>)")
RULE_TARGET = "target_major_group (benchmark.toml)"
RULE_ESTIMATED = "largest share of its estimated work (model-assisted imputation draws)"
RULE_LABELS = "largest share of the raw top-ranked labels (no estimate for this benchmark)"
GROUP_SHARE_SCHEMA = {
    "benchmark": pl.Utf8,
    "major_group_code": pl.Utf8,
    "estimated_prompts": pl.Float64,
    "share": pl.Float64,
}


def estimated_group_shares(
    occupation_estimates: pl.DataFrame | None, text_prompts: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Per benchmark and SOC major group: the expected prompts exercising an occupation of the group
    (sum over texts of prompts x p, over the group's occupations) and its share of the benchmark's total.

    occupation_estimates: prompt_occupation_estimates (prompt_hash, benchmark, onet_soc_code, p).
    text_prompts: benchmark, prompt_hash, n_prompts (prompts sharing each text); every text counts once
    without it. A text exercising two occupations adds to both, so the shares are of the benchmark's
    occupation mass (they sum to 1 over its groups). Sorted by benchmark, share desc, group."""
    if occupation_estimates is None or occupation_estimates.is_empty():
        return pl.DataFrame(schema=GROUP_SHARE_SCHEMA)
    rows = occupation_estimates.select(
        pl.col("benchmark").cast(pl.Utf8), pl.col("prompt_hash").cast(pl.Utf8),
        pl.col("onet_soc_code").cast(pl.Utf8), pl.col("p").cast(pl.Float64),
    )
    if text_prompts is not None:
        weights = text_prompts.select(
            pl.col("benchmark").cast(pl.Utf8), pl.col("prompt_hash").cast(pl.Utf8),
            pl.col("n_prompts").cast(pl.Float64),
        )
        rows = rows.join(weights, on=["benchmark", "prompt_hash"], how="left")
        rows = rows.with_columns(pl.col("n_prompts").fill_null(1.0))
    else:
        rows = rows.with_columns(pl.lit(1.0).alias("n_prompts"))
    per_group = (
        rows.with_columns(major_group_of().alias("major_group_code"))
        .group_by("benchmark", "major_group_code")
        .agg((pl.col("p") * pl.col("n_prompts")).sum().alias("estimated_prompts"))
    )
    return (
        per_group.with_columns(
            (pl.col("estimated_prompts") / pl.col("estimated_prompts").sum().over("benchmark")).alias("share")
        )
        .filter(pl.col("share").is_finite())
        .sort(["benchmark", "share", "major_group_code"], descending=[False, True, False])
        .select(list(GROUP_SHARE_SCHEMA))
        .cast(GROUP_SHARE_SCHEMA)  # type: ignore[arg-type]
    )


def shares_from_benchmark_estimates(benchmark_groups: pl.DataFrame) -> pl.DataFrame:
    """GROUP_SHARE_SCHEMA from benchmark_major_group_estimates (benchmark, major_group_code, share_mean):
    expected prompts are not in that table (null)."""
    return benchmark_groups.select(
        pl.col("benchmark").cast(pl.Utf8), pl.col("major_group_code").cast(pl.Utf8),
        pl.lit(None, dtype=pl.Float64).alias("estimated_prompts"), pl.col("share_mean").cast(pl.Float64).alias("share"),
    ).filter(pl.col("share") > 0)


def group_properties(shares: pl.DataFrame) -> pl.DataFrame:
    """One row per benchmark with estimates: estimated_major_group (largest share; ties by code),
    estimated_major_group_share and major_group_shares (every group's share, a list of structs)."""
    if shares.is_empty():
        return pl.DataFrame(schema={
            "benchmark": pl.Utf8, "estimated_major_group": pl.Utf8, "estimated_major_group_share": pl.Float64,
            "major_group_shares": pl.List(pl.Struct({"major_group_code": pl.Utf8, "share": pl.Float64})),
        })
    ordered = shares.sort(["benchmark", "share", "major_group_code"], descending=[False, True, False])
    return ordered.group_by("benchmark", maintain_order=True).agg(
        pl.col("major_group_code").first().alias("estimated_major_group"),
        pl.col("share").first().alias("estimated_major_group_share"),
        pl.struct("major_group_code", "share").alias("major_group_shares"),
    )


def runner_up(record: dict, group: str | None) -> tuple[str, float] | None:
    """The group with the largest estimated share other than `group`, and that share (None without another):
    a cap that places a benchmark by a lead of a point or two decides on less than the estimate's error."""
    shares = [s for s in record.get("major_group_shares") or () if s["major_group_code"] != group]
    best = max(shares, key=lambda s: (float(s["share"]), s["major_group_code"]), default=None)
    return (best["major_group_code"], float(best["share"])) if best else None


def share_of(record: dict, group: str | None) -> float | None:
    """The share of `group` in a benchmark's estimated work (0 when it has estimates but none in the group;
    None without estimates or group)."""
    shares = record.get("major_group_shares")
    if group is None or shares is None:
        return None
    return next((float(s["share"]) for s in shares if s["major_group_code"] == group), 0.0)
