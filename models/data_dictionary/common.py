"""The dictionary's building blocks: sources, units, the columns that mean the same in every table (COMMON),
and `entries` / `per_threshold`, which the per-table modules build their entries with."""

from __future__ import annotations

from collections.abc import Iterable

Entry = tuple[str, str, str]  # (meaning, unit, source)

DOCUMENTED_THRESHOLDS: tuple[int, ...] = (1, 5)

# --- sources -----------------------------------------------------------------------------------------------
ONET = "O*NET 29.2 database (Occupation Data, Task Statements; CC BY 4.0)"
ONET_RATINGS = "O*NET 29.2 Task Ratings (IM importance scale), where available"
OEWS = "BLS Occupational Employment and Wage Statistics, May 2024 (national)"
MIT = "MIT Work Analytics Lab task labour-input shares (O*NET 30.2)"
ELOUNDOU = "Eloundou et al. (2023), 'GPTs are GPTs' task exposure labels"
WORKBANK = "SALT-NLP WORKBank (Shao et al. 2025) worker and expert ratings"
BENCH = "benchmark prompt collections (benchmark_prompts, benchmark_results; see the benchmarks table)"
LABELS = "prompt_task_labels (labeler named in the labeler column)"
COVERAGE = "computed: models/coverage/ from prompt_task_labels and onet_tasks"
HOURS = "computed: models/coverage/ from task_hours (MIT task shares x OEWS hours)"
REGRESSION = "computed: models/regression.py (logit, occupation-clustered SEs)"
SCORES = "computed: models/scores.py from benchmark_results and prompt_task_labels"
VALIDATION = "computed: models/validation/ against human labels shipped with the benchmarks"
GAPS = "computed: models/gaps/ (priority formula in docs/gap_finder.md)"
SENSITIVITY = "computed: models/coverage/ headline re-run under alternative choices"
CODE = "pipeline configuration"

SHARE = "share (0-1)"
PROB = "probability (0-1)"
SHARE_DIFFERENCE = "difference of shares (-1 to 1)"
COUNT = "count"
TEXT = "text"
CODE_UNIT = "code"
BOOL = "boolean"
USD = "US dollars per year"
HOURS_UNIT = "hours per year"
PEOPLE = "persons employed"

# --- columns that mean the same wherever they appear ------------------------------------------------------
COMMON: dict[str, Entry] = {
    "onet_soc_code": ("O*NET-SOC occupation code (e.g. 13-2011.00)", CODE_UNIT, ONET),
    "soc_code": ("6-digit SOC 2018 occupation code (e.g. 13-2011)", CODE_UNIT, ONET),
    "task_id": ("O*NET task identifier", CODE_UNIT, ONET),
    "task": ("O*NET task statement", TEXT, ONET),
    "title": ("O*NET occupation title", TEXT, ONET),
    "occupation_title": ("O*NET occupation title", TEXT, ONET),
    "major_group_code": ("SOC 2018 major group code (e.g. 15-0000)", CODE_UNIT, ONET),
    "major_group_title": ("SOC 2018 major group title", TEXT, ONET),
    "benchmark": ("benchmark name (folder name of the prompt collection)", TEXT, BENCH),
    "labeler": (
        "labeler whose prompt-to-task labels the row is computed from ('offline' or 'openai')",
        TEXT,
        LABELS,
    ),
    "labeler_version": (
        "labeler version (model and prompt template, or offline method version)",
        TEXT,
        LABELS,
    ),
    "hours_weighting": (
        "how an occupation's hours are split over its tasks: 'pi' (MIT time shares) or 'equal'",
        TEXT,
        CODE,
    ),
    "threshold": ("minimum number of distinct benchmark prompts for a task to count as covered", COUNT, CODE),
    "n_tasks": ("number of O*NET tasks in the row's scope", COUNT, ONET),
    "employment": ("employment", PEOPLE, OEWS),
    "wage_bill": ("annual wage bill: employment x annual mean wage", USD, OEWS),
    "occupation_annual_hours": (
        "annual hours worked in the occupation: employment x annual hours per worker",
        HOURS_UNIT,
        OEWS,
    ),
    "ci_low": ("lower bound of the 95% confidence interval", "same unit as the estimate", CODE),
    "ci_high": ("upper bound of the 95% confidence interval", "same unit as the estimate", CODE),
    "n": ("number of observations behind the estimate", COUNT, CODE),
    "note": ("free-text caveat about how the row was estimated", TEXT, CODE),
    "model": ("statistical model the row belongs to", TEXT, REGRESSION),
    "desire_mean": ("mean worker desire for AI automation of the task (1-5)", "rating (1-5)", WORKBANK),
    "capability_mean": ("mean expert rating of AI capability for the task (1-5)", "rating (1-5)", WORKBANK),
    "zone": (
        "WORKBank zone: green_light, red_light, rnd_opportunity, low_priority (none = unzoned)",
        TEXT,
        WORKBANK,
    ),
    "exposed": ("task is exposed to LLMs (human rating E1 or E2)", BOOL, ELOUNDOU),
    "human_exposure": (
        "human exposure rating: E0 (none), E1 (direct), E2 (with LLM-powered tools)",
        TEXT,
        ELOUNDOU,
    ),
    "rank": ("rank in the ordering the table is sorted by (1 = first)", "rank", CODE),
}


def entries(columns: Iterable[str], source: str | None = None, **overrides: Entry) -> dict[str, Entry]:
    """Entries for `columns`, taken from `overrides` or else COMMON (with `source` replacing COMMON's)."""
    out: dict[str, Entry] = {}
    for column in columns:
        if column in overrides:
            out[column] = overrides[column]
        elif column in COMMON:
            meaning, unit, common_source = COMMON[column]
            out[column] = (meaning, unit, common_source if source is None else source)
        else:
            raise KeyError(f"no description for column {column!r}")
    for column, entry in overrides.items():
        out.setdefault(column, entry)
    return out


def per_threshold(template: dict[str, Entry]) -> dict[str, Entry]:
    """Expand {'covered_{t}': (meaning with {t}, unit, source)} over DOCUMENTED_THRESHOLDS."""
    out: dict[str, Entry] = {}
    for t in DOCUMENTED_THRESHOLDS:
        for name, (meaning, unit, source) in template.items():
            text = meaning.format(t=t)
            out[name.format(t=t)] = (text.replace("1 labeled prompts", "1 labeled prompt") if t == 1 else text,
                                     unit, source)
    return out


