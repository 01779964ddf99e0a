"""Gap finder: what to benchmark next. Pure: frames in, frames out (no warehouse, no files, no CLI).

Turns the coverage map into ranked to-do lists:

* `coverage_gaps`: tasks not covered at the threshold (not likely covered by the per-unit estimates when they
  are given), ranked by a documented priority (priority.py, docs/gap_finder.md);
* `occupation_gaps`: occupations with no task at the threshold, ranked the same way; from the per-unit
  estimates, every occupation, ranked by expected uncovered hours (expected.py);
* `jobbench_shortlist`: occupations whose workers want automation (mean WORKBank desire > 3), by wage bill
  (shortlists.py);
* `major_group_gaps`: per SOC major group, the largest uncovered blocks of work hours (expected ones with the
  estimates; shortlists.py);
* `whatif_gain`: the marginal gain of a candidate benchmark's labels, computed without touching any table
  (whatif.py; candidate.py labels a candidate's prompts);
* `score_power`: how many more prompts per task would shrink an occupation score's CI below a target width
  (power.py);
* `expected_occupation_gaps` / `expected_whatif_gain`: the same lists and gains from the per-unit estimates
  (task_estimates, occupation_estimates): expected uncovered work hours with an interval, the expected gain
  (expected.py).

The what-if over a candidate folder and the warehouse, and its command, are pipelines/whatif.py.
"""

from models.coverage import LIKELY_COVERED, LIKELY_NOT
from models.gaps.candidate import candidate_name, for_candidate, label_candidate
from models.gaps.expected import (
    EXPECTED_COLUMNS,
    EXPECTED_GAP_COLUMNS,
    expected_occupation_gaps,
    expected_uncovered_hours,
    expected_whatif_gain,
    occupation_gaps_from_estimates,
    task_probabilities,
    with_expected_columns,
    with_task_p_covered,
)
from models.gaps.power import POWER_SCHEMA, extra_prompts_needed, score_power, smoothed_bernoulli_variance
from models.gaps.priority import (
    COMPONENTS,
    DEFAULT_THRESHOLD,
    EXPOSURE_SCORE,
    OCCUPATION_COMPONENTS,
    OCCUPATION_GAP_COLUMNS,
    PRIORITY_COMPONENTS,
    REFERENCE_TABLES,
    TASK_GAP_COLUMNS,
    PriorityWeights,
    coverage_gaps,
    gap_task_frame,
    importance_percentile,
    log_minmax,
    occupation_gaps,
    occupation_priorities,
    rank_by_priority,
    score_reference_tasks,
    score_tasks,
)
from models.gaps.shortlists import (
    MAJOR_GROUP_GAP_COLUMNS,
    SHORTLIST_COLUMNS,
    jobbench_shortlist,
    major_group_gaps,
)
from models.gaps.whatif import (
    WHATIF_TABLES,
    WhatIfParams,
    WhatIfResult,
    dedupe_candidate,
    whatif_gain,
    whatif_tables,
)
from models.gaps.whatif_ranks import RANK_CHANGE_SCHEMA

__all__ = [
    "COMPONENTS",
    "DEFAULT_THRESHOLD",
    "EXPECTED_COLUMNS",
    "EXPECTED_GAP_COLUMNS",
    "EXPOSURE_SCORE",
    "LIKELY_COVERED",
    "LIKELY_NOT",
    "MAJOR_GROUP_GAP_COLUMNS",
    "OCCUPATION_COMPONENTS",
    "OCCUPATION_GAP_COLUMNS",
    "POWER_SCHEMA",
    "PRIORITY_COMPONENTS",
    "RANK_CHANGE_SCHEMA",
    "REFERENCE_TABLES",
    "SHORTLIST_COLUMNS",
    "TASK_GAP_COLUMNS",
    "WHATIF_TABLES",
    "PriorityWeights",
    "WhatIfParams",
    "WhatIfResult",
    "candidate_name",
    "coverage_gaps",
    "dedupe_candidate",
    "expected_occupation_gaps",
    "expected_uncovered_hours",
    "expected_whatif_gain",
    "extra_prompts_needed",
    "for_candidate",
    "gap_task_frame",
    "importance_percentile",
    "jobbench_shortlist",
    "label_candidate",
    "log_minmax",
    "major_group_gaps",
    "occupation_gaps",
    "occupation_gaps_from_estimates",
    "with_task_p_covered",
    "occupation_priorities",
    "rank_by_priority",
    "score_power",
    "score_reference_tasks",
    "score_tasks",
    "smoothed_bernoulli_variance",
    "task_probabilities",
    "with_expected_columns",
    "whatif_gain",
    "whatif_tables",
]
