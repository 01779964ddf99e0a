"""Benchmark coverage of O*NET tasks, occupations, SOC major groups and US work hours.

A task is *covered at threshold t* when at least t distinct benchmark prompts, i.e. distinct
(benchmark, prompt_id) pairs, are labeled with it. Labels are many-to-many: a prompt labeled with several
tasks counts once for each of them.

Every function takes and returns polars frames. Frames carrying a `benchmark` column (the per-benchmark
variant of `task_coverage`) are aggregated per benchmark all the way up.

The coverage functions take *label counts*, one input shape: `label_counts(labels)` turns prompt-level labels
(prompt_task_labels rows) into prompts per labeler x benchmark x task x label-depth bucket; the warehouse
aggregates the same in DuckDB (resources/label_queries.py). The counts are all coverage needs and their size
does not grow with the number of prompts per benchmark, so the analysis assets read them instead of the
label table (at 50x the mirrored prompts the table has 11M rows). Only `labeler_same_prompt_sensitivity`
takes prompt-level labels (it needs the prompts every labeler labeled) and counts them itself.

The package, by concern (every public name is importable from models.coverage):
  counts.py       label counts, label depths, the labeler choice
  tables.py       task, occupation and major-group coverage
  headline.py     coverage_headline
  sensitivity.py  coverage_sensitivity and labeler_same_prompt_sensitivity
"""

from models.coverage.counts import (
    LABEL_COUNT_SCHEMA,
    LABEL_DEPTHS,
    LABELER_PREFERENCE,
    LIKELY_COVERED,
    LIKELY_NOT,
    TASK_KEY,
    THRESHOLDS,
    HoursWeighting,
    benchmark_task_counts,
    label_counts,
    labels_at_depth,
    prompt_task_pairs,
    select_labeler,
)
from models.coverage.headline import (
    HEADLINE_SCHEMA,
    Rows,
    ScopeRows,
    coverage_headline,
    headline_invariant_problems,
)
from models.coverage.sensitivity import (
    SENSITIVITY_SCHEMA,
    coverage_sensitivity,
    labeler_same_prompt_sensitivity,
)
from models.coverage.tables import (
    major_group_coverage,
    major_groups,
    occupation_coverage,
    task_coverage,
    task_hour_weights,
)
from models.soc import SOC_MAJOR_GROUPS, major_group_of

__all__ = [
    "Rows",
    "ScopeRows",
    "HEADLINE_SCHEMA",
    "HoursWeighting",
    "LABELER_PREFERENCE",
    "LABEL_COUNT_SCHEMA",
    "LABEL_DEPTHS",
    "LIKELY_COVERED",
    "LIKELY_NOT",
    "SENSITIVITY_SCHEMA",
    "SOC_MAJOR_GROUPS",
    "TASK_KEY",
    "THRESHOLDS",
    "benchmark_task_counts",
    "coverage_headline",
    "coverage_sensitivity",
    "headline_invariant_problems",
    "label_counts",
    "labeler_same_prompt_sensitivity",
    "labels_at_depth",
    "major_group_coverage",
    "major_group_of",
    "major_groups",
    "occupation_coverage",
    "prompt_task_pairs",
    "select_labeler",
    "task_coverage",
    "task_hour_weights",
]
