"""What-if: the marginal gain of a candidate benchmark's labels, computed without touching any table.

`whatif_gain` compares task and occupation coverage at a threshold before and after adding the candidate's
labels to the landed ones (one labeler on both sides; candidate prompts already landed count for nothing),
and, given the gap priorities, how the gap ranking changes. Labeling a candidate folder is
models/gaps/candidate.py's; reading the folder and the warehouse is pipelines/whatif.py's job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from models.coverage import (
    TASK_KEY,
    HoursWeighting,
    label_counts,
    major_group_of,
    occupation_coverage,
    select_labeler,
    task_coverage,
    task_hour_weights,
)
from models.gaps.expected import EXPECTED_THRESHOLDS
from models.gaps.priority import DEFAULT_THRESHOLD, occupation_titles, task_texts
from models.gaps.whatif_ranks import (
    GAPS_LISTED_BY_ESTIMATES,
    GAPS_LISTED_BY_LABELS,
    estimated_gap_sides,
    expected_gap_priority_mass,
    gap_metrics,
    gap_rank_changes,
)

WHATIF_TABLES = (
    "whatif_marginal_gain",
    "whatif_newly_covered_tasks",
    "whatif_newly_covered_occupations",
    "whatif_gap_rank_changes",
    "whatif_expected_occupation_gain",
)
LABEL_COLUMNS = ["benchmark", "prompt_id", "prompt_hash", "onet_soc_code", "task_id"]
GAIN_SCHEMA = {"metric": pl.Utf8, "before": pl.Float64, "after": pl.Float64, "gain": pl.Float64}
# a probe (2026-12-07): 30 cashier prompts gained 1.03e7 expected hours, 8.33e6 of them from one Retail
# Salespersons label, and no table said where; the per-task result was computed and dropped
EXPECTED_OCCUPATION_GAIN_SCHEMA = {
    "onet_soc_code": pl.Utf8,
    "occupation_title": pl.Utf8,
    "threshold": pl.Int64,
    "candidate_expected_prompts": pl.Float64,
    "expected_uncovered_hours_before": pl.Float64,
    "expected_uncovered_hours_after": pl.Float64,
    "expected_uncovered_hours_gain": pl.Float64,
}
NEWLY_COVERED_TASK_COLUMNS = [
    "onet_soc_code",
    "occupation_title",
    "major_group_code",
    "task_id",
    "task",
    "threshold",
    "n_prompts_before",
    "candidate_prompts",
    "n_prompts_after",
    "task_annual_hours",
]


@dataclass(frozen=True)
class WhatIfParams:
    """How a what-if compares.

    threshold: a task is covered with >= this many prompts. labeler: whose labels to compare (default: the
    candidate's, else coverage.select_labeler's choice). top_n: gap ranks compared before and after.
    hours_weighting: how task hours are weighted (coverage.task_hour_weights). n_candidate_prompts: prompts in
    the candidate folder, labeled or not; reported as the metric `candidate_prompts` when given.
    benchmark_index: the index whose per-unit estimates the expected gain (metrics expected_*) starts from.
    """

    threshold: int = DEFAULT_THRESHOLD
    labeler: str | None = None
    top_n: int = 100
    hours_weighting: HoursWeighting = "pi"
    n_candidate_prompts: int | None = None
    benchmark_index: str = "all"  # whose per-unit estimates the expected gain starts from


@dataclass
class WhatIfResult:
    """The marginal gain of a candidate benchmark (each frame is one whatif_* table)."""

    marginal_gain: pl.DataFrame  # metric, before, after, gain
    newly_covered_tasks: pl.DataFrame
    newly_covered_occupations: pl.DataFrame
    gap_rank_changes: pl.DataFrame
    # per occupation, where the expected gain lands (empty without per-unit estimates at the threshold)
    expected_occupation_gain: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(
        schema=EXPECTED_OCCUPATION_GAIN_SCHEMA))
    rejects: pl.DataFrame | None = None  # a candidate folder's rejected lines (models.benchmarks REJECTS_SCHEMA)

    def frames(self) -> tuple[pl.DataFrame, ...]:
        """The frames in WHATIF_TABLES order."""
        return (self.marginal_gain, self.newly_covered_tasks, self.newly_covered_occupations,
                self.gap_rank_changes, self.expected_occupation_gain)


def whatif_tables(result: WhatIfResult) -> dict[str, pl.DataFrame]:
    """The what-if's own tables by name."""
    return dict(zip(WHATIF_TABLES, result.frames(), strict=True))


# --- the candidate's labels --------------------------------------------------------------------------------


def _label_keys(labels: pl.DataFrame) -> pl.DataFrame:
    cols = [c for c in LABEL_COLUMNS if c in labels.columns]
    out = labels.select(
        [pl.col(c).cast(pl.Int64) if c == "task_id" else pl.col(c).cast(pl.Utf8) for c in cols]
        + ([pl.col("labeler").cast(pl.Utf8)] if "labeler" in labels.columns else [])
    )
    if "prompt_hash" not in out.columns:
        out = out.with_columns(pl.lit(None, dtype=pl.Utf8).alias("prompt_hash"))
    return out


def dedupe_candidate(
    existing: pl.DataFrame,
    candidate: pl.DataFrame,
    existing_prompt_hashes: Sequence[str] | None = None,
    landed_keys: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Keep only candidate prompts that add new evidence.

    A candidate prompt does not count when its text is already in the warehouse (its prompt_hash appears in
    the existing labels or in `existing_prompt_hashes`), when its (benchmark, prompt_id) is already landed
    (in the existing labels, or in `landed_keys` when the existing labels are label counts), or when an
    earlier candidate prompt has the same text. Returns the kept label rows and counts.
    """
    candidate = _label_keys(candidate)
    known_hashes = (
        set(existing["prompt_hash"].drop_nulls().to_list()) if "prompt_hash" in existing.columns else set()
    )
    known_hashes |= set(existing_prompt_hashes or [])
    prompts = candidate.select("benchmark", "prompt_id", "prompt_hash").unique(maintain_order=True)
    if landed_keys is None and "prompt_id" not in existing.columns:
        raise ValueError("existing label counts carry no prompt ids: pass landed_keys")
    landed_ids = (existing if landed_keys is None else landed_keys).select(
        pl.col("benchmark").cast(pl.Utf8), pl.col("prompt_id").cast(pl.Utf8)
    ).unique()
    id_landed = prompts.join(landed_ids, on=["benchmark", "prompt_id"], how="semi")
    dropped_ids = (
        pl.concat([prompts.filter(pl.col("prompt_hash").is_in(list(known_hashes))), id_landed])
        .select("benchmark", "prompt_id")
        .unique()
    )
    remaining = prompts.join(dropped_ids, on=["benchmark", "prompt_id"], how="anti")
    with_hash = remaining.filter(pl.col("prompt_hash").is_not_null())
    first_of_text = with_hash.unique("prompt_hash", keep="first", maintain_order=True)
    kept_prompts = pl.concat([first_of_text, remaining.filter(pl.col("prompt_hash").is_null())])
    kept = candidate.join(
        kept_prompts.select("benchmark", "prompt_id"), on=["benchmark", "prompt_id"], how="semi"
    )
    counts = {
        "candidate_prompts_labeled": prompts.height,
        "duplicates_of_landed": dropped_ids.height,
        "duplicates_within_candidate": with_hash.height - first_of_text.height,
        "candidate_prompts_counted": kept_prompts.height,
    }
    return kept, counts


# --- the marginal gain -------------------------------------------------------------------------------------


def whatif_gain(
    existing_counts: pl.DataFrame,
    candidate_labels: pl.DataFrame,
    tasks: pl.DataFrame,
    task_hours: pl.DataFrame,
    occupations: pl.DataFrame,
    params: WhatIfParams = WhatIfParams(),
    *,
    priorities: pl.DataFrame | None = None,
    existing_prompt_hashes: Sequence[str] | None = None,
    landed_keys: pl.DataFrame | None = None,
    estimates: Mapping[str, pl.DataFrame] | None = None,
) -> WhatIfResult:
    """Marginal gain of adding `candidate_labels` to the landed labels at `params.threshold`. Pure: writes
    nothing.

    `existing_counts` are the landed labels as label counts (coverage.label_counts; the warehouse
    aggregates them, so memory does not grow with the label table); `landed_keys` (benchmark, prompt_id) and
    `existing_prompt_hashes` name the landed prompts, which counts do not carry. `candidate_labels` has
    prompt_task_labels' columns (benchmark, prompt_id, prompt_hash, onet_soc_code, task_id[, labeler]). The
    existing counts are restricted to one labeler (`params.labeler`, else the candidate's, else
    coverage.select_labeler's choice) so the comparison never mixes labelers. Candidate prompts already
    landed (same text or same benchmark/prompt_id) add nothing (dedupe_candidate).

    `priorities` (onet_soc_code, task_id, priority[, task_annual_hours]; score_tasks' output) enables the gap
    ranking comparison; without it gap_rank_changes is empty. With the estimates at the threshold the gaps are
    those coverage_gaps lists at that threshold (p_covered < LIKELY_COVERED, before and after the candidate; the
    published table is at 5), else the tasks below the threshold by the labels as counted (the rows' listed_by).

    `estimates` (task_estimates, and occupation_estimates / major_group_estimates when present, by name) adds
    the expected gain (models/gaps/expected.py): metrics expected_tasks_covered, expected_occupations_covered,
    expected_major_groups_covered, expected_hours_covered, expected_hours_share_covered and
    expected_uncovered_hours (and expected_gap_priority_mass with `priorities`), from the index's estimated
    coverage plus the counted candidate labels, each kept with its p_exercised, at thresholds 1 and 5
    (EXPECTED_THRESHOLDS, the estimates' own) only. The other metrics count the labels as they are.
    """
    if landed_keys is None:
        raise ValueError("existing label counts carry no prompt ids: pass landed_keys")
    threshold = params.threshold
    existing, labeler = _one_labeler(existing_counts, candidate_labels, params.labeler)
    candidate, counts = dedupe_candidate(existing, candidate_labels, existing_prompt_hashes, landed_keys)
    before, after, tasks_cmp = _task_coverage_before_after(existing, candidate, tasks, threshold)
    weighted = task_hour_weights(tasks_cmp, task_hours, params.hours_weighting)
    occ_cmp = _occupation_coverage_before_after(before, after, task_hours, occupations, params)
    metrics = _coverage_metrics(before, after, occ_cmp, weighted, threshold)
    by_occupation = pl.DataFrame(schema=EXPECTED_OCCUPATION_GAIN_SCHEMA)
    expected: list[tuple[str, float, float]] = []
    gap_cmp, listed_by = tasks_cmp, GAPS_LISTED_BY_LABELS
    if estimates is not None and "task_estimates" in estimates and threshold in EXPECTED_THRESHOLDS:
        # at another threshold there is no estimate to start from: the labels as counted only (it raised, after
        # the candidate was labeled, though --threshold takes any whole number >= 1)
        expected, per_task = _expected_metrics(weighted, candidate, candidate_labels, estimates, params)
        by_occupation = _expected_occupation_gain(per_task, occupations, threshold)
        gap_cmp, listed_by = estimated_gap_sides(tasks_cmp, per_task), GAPS_LISTED_BY_ESTIMATES
        if priorities is not None:
            expected.append(expected_gap_priority_mass(per_task, priorities))
    rank_changes = gap_rank_changes(gap_cmp, priorities, params.top_n, listed_by)
    if priorities is not None:
        metrics += gap_metrics(gap_cmp, priorities, rank_changes, params.top_n)
    metrics += expected
    return WhatIfResult(
        _gain_frame(metrics, counts, params, labeler),
        _newly_covered_tasks(weighted, tasks, occupations, threshold),
        _newly_covered_occupations(occ_cmp, threshold),
        rank_changes,
        by_occupation,
    )


def _expected_occupation_gain(per_task: pl.DataFrame, occupations: pl.DataFrame, threshold: int) -> pl.DataFrame:
    """Per occupation the candidate's labels reach, where the expected gain lands: its expected candidate prompts
    and its tasks' expected uncovered hours before and after, largest gain first."""
    hours = pl.col("task_annual_hours").fill_null(0.0)
    per_occupation = per_task.group_by("onet_soc_code").agg(
        pl.col("expected_candidate_prompts").sum().alias("candidate_expected_prompts"),
        (hours * (1 - pl.col("p_before"))).sum().alias("expected_uncovered_hours_before"),
        (hours * (1 - pl.col("p_after"))).sum().alias("expected_uncovered_hours_after"),
    ).filter(pl.col("candidate_expected_prompts") > 0)
    titles = occupation_titles(occupations)
    return (per_occupation.join(titles, on="onet_soc_code", how="left")
            .with_columns(pl.lit(threshold, pl.Int64).alias("threshold"),
                          (pl.col("expected_uncovered_hours_before") - pl.col("expected_uncovered_hours_after"))
                          .alias("expected_uncovered_hours_gain"))
            .select(list(EXPECTED_OCCUPATION_GAIN_SCHEMA)).cast(EXPECTED_OCCUPATION_GAIN_SCHEMA)
            .sort(["expected_uncovered_hours_gain", "candidate_expected_prompts", "onet_soc_code"],
                  descending=[True, True, False]))


def _expected_metrics(
    weighted: pl.DataFrame, kept: pl.DataFrame, candidate_labels: pl.DataFrame,
    estimates: Mapping[str, pl.DataFrame], params: WhatIfParams,
) -> tuple[list[tuple[str, float, float]], pl.DataFrame]:
    """The expected gain's (metric, before, after) over the counted candidate labels (their p_exercised
    joined back: dedupe_candidate keeps the keys only), and expected_whatif_gain's per-task frame."""
    from models.gaps.expected import expected_whatif_gain

    keys = ["benchmark", "prompt_id", "onet_soc_code", "task_id"]
    if "p_exercised" in candidate_labels.columns:
        p = _label_keys(candidate_labels).with_columns(
            candidate_labels["p_exercised"].cast(pl.Float64).alias("p_exercised")
        ).group_by(keys).agg(pl.col("p_exercised").max())
        kept = kept.join(p, on=keys, how="left")
    tasks = weighted.select(*TASK_KEY, pl.col("task_hours_used").alias("task_annual_hours"))
    gain, per_task = expected_whatif_gain(
        tasks, estimates["task_estimates"], kept.unique(keys), params.threshold, index=params.benchmark_index,
        occupation_estimates=estimates.get("occupation_estimates"),
        major_group_estimates=estimates.get("major_group_estimates"),
    )
    return [(r["metric"], r["before"], r["after"]) for r in gain.iter_rows(named=True)], per_task


def _one_labeler(
    existing: pl.DataFrame, candidate_labels: pl.DataFrame, labeler: str | None
) -> tuple[pl.DataFrame, str | None]:
    """The existing label counts of the one labeler compared, and its name: `labeler`, else the candidate's
    single labeler, else coverage.select_labeler's choice."""
    if labeler is None and "labeler" in candidate_labels.columns and candidate_labels.height:
        names = candidate_labels["labeler"].drop_nulls().unique().to_list()
        if len(names) > 1:
            raise ValueError(f"candidate labels mix labelers {sorted(names)}; label with one labeler")
        labeler = names[0] if names else None
    if existing.height and "labeler" in existing.columns:
        present = set(existing["labeler"].drop_nulls().to_list())
        if labeler is not None and labeler not in present:
            raise ValueError(
                f"the warehouse has no {labeler!r} labels to compare the candidate with; "
                f"present: {sorted(present)}"
            )
        existing, labeler = select_labeler(existing, labeler)
    return existing, labeler


def _task_coverage_before_after(
    existing: pl.DataFrame, candidate: pl.DataFrame, tasks: pl.DataFrame, threshold: int
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Task coverage without and with the (deduplicated) candidate labels, and one row per task comparing
    them: n_prompts_before/after, covered_before/after, candidate_prompts."""
    candidate_rows = label_counts(candidate).drop("labeler", "labeler_version")  # the existing side's shape
    existing = existing.drop("labeler", strict=False)
    before = task_coverage(existing, tasks, [threshold])
    after = task_coverage(
        pl.concat([existing.drop("labeler_version", strict=False), candidate_rows], how="diagonal_relaxed"),
        tasks,
        [threshold],
    )
    covered = f"covered_{threshold}"
    cand_counts = task_coverage(candidate_rows, tasks, [threshold]).select(
        *TASK_KEY, pl.col("n_prompts").alias("candidate_prompts")
    )
    def side(frame: pl.DataFrame, name: str) -> pl.DataFrame:
        return frame.select(
            *TASK_KEY,
            pl.col("n_prompts").alias(f"n_prompts_{name}"),
            pl.col(covered).alias(f"covered_{name}"),
        )

    tasks_cmp = side(before, "before").join(side(after, "after"), on=TASK_KEY).join(cand_counts, on=TASK_KEY)
    return before, after, tasks_cmp


def _newly_covered_tasks(
    weighted: pl.DataFrame, tasks: pl.DataFrame, occupations: pl.DataFrame, threshold: int
) -> pl.DataFrame:
    """The tasks the candidate brings to the threshold, with their text, occupation and work hours."""
    return (
        weighted.filter(pl.col("covered_after") & ~pl.col("covered_before"))
        .join(task_texts(tasks), on=TASK_KEY, how="left")
        .join(occupation_titles(occupations), on="onet_soc_code", how="left")
        .with_columns(
            major_group_of().alias("major_group_code"),
            pl.lit(threshold, dtype=pl.Int64).alias("threshold"),
            pl.col("task_hours_used").alias("task_annual_hours"),
        )
        .select(NEWLY_COVERED_TASK_COLUMNS)
        .sort(TASK_KEY)
    )


def _occupation_coverage_before_after(
    before: pl.DataFrame, after: pl.DataFrame, task_hours: pl.DataFrame, occupations: pl.DataFrame,
    params: WhatIfParams,
) -> pl.DataFrame:
    """One row per occupation: tasks covered, covered and hours share covered, before and after."""
    t = params.threshold
    occ_before = occupation_coverage(before, task_hours, occupations, [t], params.hours_weighting)
    occ_after = occupation_coverage(after, task_hours, occupations, [t], params.hours_weighting)

    def side(name: str) -> list[pl.Expr]:
        return [
            pl.col(f"tasks_covered_{t}").alias(f"tasks_covered_{name}"),
            pl.col(f"covered_{t}").alias(f"covered_{name}"),
            pl.col(f"hours_share_covered_{t}").alias(f"hours_share_covered_{name}"),
        ]

    return occ_before.select(
        "onet_soc_code", "title", "major_group_code", "n_tasks", "occupation_annual_hours", *side("before")
    ).join(occ_after.select("onet_soc_code", *side("after")), on="onet_soc_code")


def _newly_covered_occupations(occ_cmp: pl.DataFrame, threshold: int) -> pl.DataFrame:
    return (
        occ_cmp.filter(pl.col("covered_after") & ~pl.col("covered_before"))
        .rename({"title": "occupation_title"})
        .with_columns(pl.lit(threshold, dtype=pl.Int64).alias("threshold"))
        .sort("onet_soc_code")
    )


def _coverage_metrics(
    before: pl.DataFrame, after: pl.DataFrame, occ_cmp: pl.DataFrame, weighted: pl.DataFrame, threshold: int
) -> list[tuple[str, float, float]]:
    """(metric, before, after) for tasks, occupations, major groups and work hours covered."""
    covered = f"covered_{threshold}"
    hours_known = weighted.filter(pl.col("task_hours_used").is_not_null())
    total_hours = float(hours_known["task_hours_used"].sum())
    hours_before = float(hours_known.filter(pl.col("covered_before"))["task_hours_used"].sum())
    hours_after = float(hours_known.filter(pl.col("covered_after"))["task_hours_used"].sum())

    def groups_covered(col: str) -> float:
        return float(occ_cmp.filter(pl.col(col))["major_group_code"].n_unique())

    def share(hours: float) -> float:
        return hours / total_hours if total_hours else math.nan

    return [
        ("tasks_covered", float(before[covered].sum()), float(after[covered].sum())),
        ("occupations_covered", float(occ_cmp["covered_before"].sum()),
         float(occ_cmp["covered_after"].sum())),
        ("major_groups_covered", groups_covered("covered_before"), groups_covered("covered_after")),
        ("hours_covered", hours_before, hours_after),
        ("hours_share_covered", share(hours_before), share(hours_after)),
        ("tasks_with_any_prompt", float((before["n_prompts"] > 0).sum()),
         float((after["n_prompts"] > 0).sum())),
    ]


def _gain_frame(
    metrics: list[tuple[str, float, float]], counts: dict[str, int], params: WhatIfParams, labeler: str | None
) -> pl.DataFrame:
    """whatif_marginal_gain: the metrics with their gain, then the candidate's prompt counts (after only)."""
    rows: list[dict[str, Any]] = [
        {"metric": m, "before": b, "after": a, "gain": a - b} for m, b, a in metrics
    ]
    after_only = dict(counts)
    if params.n_candidate_prompts is not None:
        after_only["candidate_prompts"] = params.n_candidate_prompts
    rows += [{"metric": k, "before": None, "after": float(v), "gain": None} for k, v in after_only.items()]
    return pl.DataFrame(rows, schema=GAIN_SCHEMA).with_columns(
        pl.lit(params.threshold, dtype=pl.Int64).alias("threshold"),
        pl.lit(labeler, dtype=pl.Utf8).alias("labeler"),
    )
