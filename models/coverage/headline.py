"""The coverage headline: per scope ('all' and each benchmark) and threshold, the shares of tasks,
occupations and US work hours covered and the major groups left uncovered (HEADLINE_SCHEMA)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

from models.coverage.counts import THRESHOLDS, HoursWeighting, select_labeler
from models.coverage.tables import major_groups, occupation_coverage, task_coverage, task_hour_weights
from models.soc import SOC_MAJOR_GROUPS, major_group_of


def _headline_rows(
    scope_name: str,
    task_cov: pl.DataFrame,
    occ_cov: pl.DataFrame,
    weighted: pl.DataFrame,
    groups: pl.DataFrame,
    thresholds: Sequence[int],
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    n_tasks = task_cov.height
    n_occupations = occ_cov.height
    hours_known = weighted.filter(pl.col("task_hours_used").is_not_null())
    total_hours = float(hours_known["task_hours_used"].sum())

    def row(
        threshold: int,
        metric: str,
        numerator: float,
        denominator: float,
        value: float | None = None,
        detail: str | None = None,
    ) -> dict[str, object]:
        if value is None:
            value = numerator / denominator if denominator else None
        return {
            "scope": scope_name,
            "threshold": threshold,
            "metric": metric,
            "value": value,
            "numerator": float(numerator),
            "denominator": float(denominator),
            "detail": detail,
        }

    occ_groups = occ_cov.with_columns(major_group_of().alias("major_group_code"))
    for t in thresholds:
        covered = pl.col(f"covered_{t}")
        rows.append(row(t, "tasks_covered", int(task_cov[f"covered_{t}"].sum()), n_tasks))
        rows.append(row(t, "occupations_covered", int(occ_cov[f"covered_{t}"].sum()), n_occupations))
        covered_groups = set(occ_groups.filter(covered)["major_group_code"].to_list())
        uncovered = groups.filter(~pl.col("major_group_code").is_in(sorted(covered_groups)))
        rows.append(
            row(
                t,
                "major_groups_uncovered",
                uncovered.height,
                groups.height,
                value=float(uncovered.height),
                # "none", not "": a CSV or XLSX cell cannot tell an empty string from a missing value
                detail="; ".join(uncovered["major_group_title"].to_list()) or "none",
            )
        )
        covered_hours = float(hours_known.filter(covered)["task_hours_used"].sum())
        rows.append(row(t, "hours_share_covered", covered_hours, total_hours))
        rows.append(row(t, "hours_share_uncovered", total_hours - covered_hours, total_hours))
    return rows


Rows = list[dict[str, object]]
# (scope, its task coverage, compute) -> the scope's rows: compute() or rows kept from an earlier run whose inputs
# were the same (assets/analysis.py keeps them by the task coverage's rows; issue 29 item 3)
ScopeRows = Callable[[str, pl.DataFrame, Callable[[], Rows]], Rows]

HEADLINE_SCHEMA = {
    "scope": pl.Utf8,
    "threshold": pl.Int64,
    "metric": pl.Utf8,
    "value": pl.Float64,
    "numerator": pl.Float64,
    "denominator": pl.Float64,
    "detail": pl.Utf8,
}


def coverage_headline(
    counts: pl.DataFrame,
    tasks: pl.DataFrame,
    task_hours: pl.DataFrame,
    occupations: pl.DataFrame,
    thresholds: Sequence[int] = THRESHOLDS,
    *,
    labeler: str | None = None,
    hours_weighting: HoursWeighting = "pi",
    per_benchmark: bool = True,
    benchmarks: Sequence[str] = (),
    scope_rows: ScopeRows | None = None,
) -> pl.DataFrame:
    """Headline numbers, tidy: scope ('all' or a benchmark), threshold, metric, value, numerator,
    denominator, detail, labeler, hours_weighting. `benchmarks`: every landed benchmark, so that one whose
    prompts have no label at all (none is occupational work) still gets its rows, with zero covered.
    `scope_rows`: how a scope's rows are had (ScopeRows; None: computed).

    Metrics per threshold t: tasks_covered (of all tasks), occupations_covered (of occupations with
    tasks), major_groups_uncovered (count of the 22 with no covered occupation; `detail` lists them),
    hours_share_covered / hours_share_uncovered (share of US work hours, over occupations with hours data,
    on tasks with >= t prompts / fewer).
    """
    counts, chosen_labeler = select_labeler(counts, labeler)
    groups = major_groups(occupations)
    scopes: list[tuple[str, pl.DataFrame]] = [("all", task_coverage(counts, tasks, thresholds))]
    if per_benchmark and counts.height:
        per_bench = task_coverage(counts, tasks, thresholds, by_benchmark=True)
        for (name,), frame in per_bench.group_by("benchmark", maintain_order=True):
            scopes.append((str(name), frame.drop("benchmark")))
    if per_benchmark:
        seen = {name for name, _ in scopes}
        for name in sorted(set(benchmarks) - seen):
            scopes.append((str(name), task_coverage(counts.head(0), tasks, thresholds)))
    rows: list[dict[str, object]] = []
    for scope_name, task_cov in scopes:
        def compute(scope_name: str = scope_name, task_cov: pl.DataFrame = task_cov) -> Rows:
            weighted = task_hour_weights(task_cov, task_hours, hours_weighting)
            occ_cov = occupation_coverage(task_cov, task_hours, occupations, thresholds, hours_weighting)
            return _headline_rows(scope_name, task_cov, occ_cov, weighted, groups, thresholds)

        rows += scope_rows(scope_name, task_cov, compute) if scope_rows is not None else compute()
    return pl.DataFrame(rows, schema=HEADLINE_SCHEMA).with_columns(
        pl.lit(chosen_labeler, dtype=pl.Utf8).alias("labeler"),
        pl.lit(hours_weighting).alias("hours_weighting"),
    )


def headline_invariant_problems(headline: pl.DataFrame, tasks: pl.DataFrame) -> list[str]:
    """What is wrong with a coverage_headline table, [] when nothing: shares in [0, 1], no numerator above its
    denominator, tasks out of every O*NET task in `tasks` (onet_tasks), occupations out of those with tasks, major
    groups out of the 22 SOC groups (every scope, threshold and index: a wrong denominator moves every share)."""
    problems = []
    shares = headline.filter(pl.col("metric").str.contains("share"))
    if shares.filter((pl.col("value") < 0) | (pl.col("value") > 1 + 1e-9)).height:
        problems.append("a share is outside [0, 1]")
    if headline.filter(pl.col("denominator").is_not_null()
                       & (pl.col("numerator") > pl.col("denominator") + 1e-6)).height:
        problems.append("a numerator exceeds its denominator")
    expected = {"tasks_covered": float(tasks.height),
                "occupations_covered": float(tasks["onet_soc_code"].n_unique()),
                "major_groups_uncovered": float(len(SOC_MAJOR_GROUPS))}
    for metric, denominator in expected.items():
        found = sorted(set(headline.filter(pl.col("metric") == metric)["denominator"].to_list()))
        if found and found != [denominator]:
            problems.append(f"{metric} out of {found}, not {denominator:,.0f}")
    if "published_value" in headline.columns:
        problems += _published_problems(headline)
    return problems


def _published_problems(headline: pl.DataFrame) -> list[str]:
    """The published figures (what reports quote; an audit: the check read only the labels as counted): each value
    and interval end in range (a share in [0, 1], uncovered major groups in [0, 22]), the low end not above the
    high, the value inside its interval unless that is one point (97.5% of draws agree and the mean of the rest
    moves it off), and the pooled headline published wherever anything is."""
    published = headline.filter(pl.col("published_value").is_not_null())
    if published.is_empty():  # no estimates yet: nothing is published
        return []
    problems = []
    limit = pl.when(pl.col("metric") == "major_groups_uncovered").then(float(len(SOC_MAJOR_GROUPS))).otherwise(1.0)
    for column in ("published_value", "published_ci_low", "published_ci_high"):
        if published.filter((pl.col(column) < -1e-9) | (pl.col(column) > limit + 1e-9)).height:
            problems.append(f"a {column} is outside [0, 1] (for major groups uncovered, [0, 22])")
    low, high, value = pl.col("published_ci_low"), pl.col("published_ci_high"), pl.col("published_value")
    if published.filter(low > high + 1e-9).height:
        problems.append("a published interval's low end is above its high end")
    outside = published.filter((high - low > 1e-9) & ((value < low - 1e-9) | (value > high + 1e-9)))
    if outside.height:
        first = outside.row(0, named=True)
        problems.append(f"{outside.height} published value(s) outside their interval (first: {first['scope']} "
                        f"{first['metric']} at >= {first['threshold']})")
    pooled = headline.filter(pl.col("scope") == "all")
    if pooled.filter(pl.col("published_value").is_null()).height:
        problems.append("a pooled headline row has no published value")
    return problems
