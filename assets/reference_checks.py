"""Great Expectations checks of the reference tables (`assets.reference`).

Checks run Great Expectations suites through `models.expectations`; all but the ratings-coverage check are
blocking: a failure stops the downstream assets of the same run. Match-rate floors (observed values on the
mirrored data in brackets):
- occupation_wages: >= 99% of the 923 occupations with tasks have wages [922/923 = 99.9%] and >= 95% of
  OEWS total employment is attached [98.66%];
- task_hours: >= 90% of 29.2 tasks have a 30.2 π [92.09%];
- task_exposure: >= 99% of 29.2 tasks have Eloundou labels [99.76%];
- workbank_tasks: >= 95% of WORKBank tasks are 29.2 tasks [100%];
- onet_tasks ratings coverage (not blocking): >= 17,600 tasks rated [17,639 = every Core or Supplemental
  task, from task_ratings_im_rt_29x.csv on the mirror; 2,131 with the partial file only, which fails].
"""

from collections.abc import Callable

import polars as pl
from dagster import AssetCheckResult, AssetCheckSeverity, AssetIn, MetadataValue, asset_check

from assets.reference import (
    occupation_wages,
    oews_wages,
    onet_job_titles,
    onet_occupations,
    onet_tasks,
    onet_technology_skills,
    task_exposure,
    task_hours,
    workbank_tasks,
)
from models import expectations as ex
from models import reference as ref
from resources import label_pool

# match-rate floors (see the module docstring)
FLOOR_OCCUPATIONS_WITH_WAGES = 0.99
FLOOR_EMPLOYMENT_SHARE = 0.95
FLOOR_PI_MATCH = 0.90
FLOOR_EXPOSURE_MATCH = 0.99
FLOOR_WORKBANK_MATCH = 0.95
FLOOR_RATED_TASKS = 17_600  # 17,639 on the mirror (every Core/Supplemental task of 29.2)
MIN_JOB_TITLES = 60_000  # 68,812 in 29.2
MIN_TECHNOLOGY_SKILLS = 30_000  # 32,627 in 29.2
WORKBANK_TASKS = 2_131



def check_result(outcome: ex.ValidationOutcome, *, severity: AssetCheckSeverity = AssetCheckSeverity.ERROR,
                 **metadata: object) -> AssetCheckResult:
    """A GX outcome as an AssetCheckResult: pass/fail, counts and the result table as Markdown; `severity` of a
    failure (ERROR makes run_all exit 6; WARN for a degraded mode the pipeline documents and goes on with)."""
    return AssetCheckResult(
        passed=outcome.success,
        severity=severity,
        description=outcome.describe_failures() or None,
        metadata={
            "expectations": outcome.n_expectations,
            "failed": outcome.n_failed,
            "results": MetadataValue.md(outcome.to_markdown()),
            **metadata,
        },
    )


def _validate(name: str, *parts: tuple[str, pl.DataFrame, Callable[[], list[ex.Spec]]]) -> ex.ValidationOutcome:
    """Run each (label, frame, expectations factory) and combine: in the label pool's checks worker when a cold
    run_all started one with Great Expectations imported (resources/label_pool.py), else in this process."""
    return ex.combine(label_pool.validate([(label, frame, build()) for label, frame, build in parts]), name=name)


def _metrics(**values: float) -> pl.DataFrame:
    return pl.DataFrame({k: [float(v)] for k, v in values.items()})


@asset_check(
    asset=oews_wages,
    blocking=True,
    description=(
        "GX: unique (soc_code, group_level); group_level in the five OEWS levels; employment >= 0; mean "
        "wages > 0; 1 total row and 22 major groups."
    ),
)
def oews_wages_expectations(oews_wages: pl.DataFrame) -> AssetCheckResult:
    outcome = _validate(
        "oews_wages",
        (
            "oews_wages",
            oews_wages,
            lambda: [
                *ex.unique_key(["soc_code", "group_level"]),
                *ex.not_null(["title", "employment"]),
                ex.in_set("group_level", ref.OEWS_GROUPS),
                ex.matches("soc_code", r"^\d{2}-\d{4}$"),
                ex.between("employment", 0, None),
                ex.positive("hourly_mean_wage"),
                ex.positive("annual_mean_wage"),
                ex.positive("wage_bill"),
            ],
        ),
        (
            "oews_major_groups",
            oews_wages.filter(pl.col("group_level") == "major"),
            lambda: [ex.row_count(ref.SOC_MAJOR_GROUPS)],
        ),
        ("oews_total", oews_wages.filter(pl.col("group_level") == "total"), lambda: [ex.row_count(1)]),
    )
    return check_result(outcome)


@asset_check(
    asset=onet_tasks,
    blocking=True,
    description=(
        "GX: unique non-null (onet_soc_code, task_id); 18,796 tasks in 923 occupations; importance in 1-5, "
        "relevance in 0-100, frequency_category in 1-7; task_type Core/Supplemental/null; is_core and "
        "has_ratings non-null."
    ),
)
def onet_tasks_expectations(onet_tasks: pl.DataFrame) -> AssetCheckResult:
    outcome = _validate(
        "onet_tasks",
        (
            "onet_tasks",
            onet_tasks,
            lambda: [
                *ex.unique_key(["onet_soc_code", "task_id"]),
                *ex.not_null(["task", "is_core", "has_ratings"]),
                ex.row_count(ref.ONET_TASKS),
                ex.distinct_count("onet_soc_code", ref.ONET_OCCUPATIONS_WITH_TASKS),
                ex.matches("onet_soc_code", r"^\d{2}-\d{4}\.\d{2}$"),
                ex.between("importance", 1, 5),
                ex.between("relevance", 0, 100),
                ex.between("frequency_category", 1, 7),
                ex.in_set("task_type", ["Core", "Supplemental"]),
            ],
        ),
    )
    return check_result(outcome)


@asset_check(
    asset=onet_tasks,
    blocking=False,
    description=(
        f"GX: at least {FLOOR_RATED_TASKS:,} tasks carry O*NET ratings (17,639 on the mirror: every Core or "
        "Supplemental task), and every rated task names its ratings_source. Not blocking: with only the "
        "partial table (2,131 tasks) it fails, and the importance model then runs on those tasks and says so."
    ),
)
def onet_tasks_ratings_coverage(onet_tasks: pl.DataFrame) -> AssetCheckResult:
    rated = onet_tasks.filter(pl.col("has_ratings"))
    counts = {
        f"tasks_rated_{name}": int((rated["ratings_source"] == name).sum()) for name in ref.RATINGS_SOURCES
    }
    outcome = _validate(
        "onet_tasks_ratings",
        (
            "ratings_count",
            _metrics(tasks_with_ratings=rated.height),
            lambda: [ex.metric_at_least("tasks_with_ratings", FLOOR_RATED_TASKS)],
        ),
        (
            "rated_tasks",
            rated,
            lambda: [*ex.not_null(["ratings_source", "importance"]), ex.in_set("ratings_source", ref.RATINGS_SOURCES)],
        ),
    )
    # the partial table is a documented fallback the importance model goes on with: a warning, not exit 6
    return check_result(outcome, severity=AssetCheckSeverity.WARN, tasks_with_ratings=rated.height, **counts)


@asset_check(
    asset=onet_occupations,
    blocking=True,
    description=(
        "GX: 1,016 unique O*NET-SOC codes; 923 with tasks in 22 SOC major groups; SOC codes well formed; "
        "every major group titled."
    ),
)
def onet_occupations_expectations(onet_occupations: pl.DataFrame) -> AssetCheckResult:
    with_tasks = onet_occupations.filter(pl.col("has_tasks"))
    outcome = _validate(
        "onet_occupations",
        (
            "onet_occupations",
            onet_occupations,
            lambda: [
                *ex.unique_key(["onet_soc_code"]),
                *ex.not_null(["title", "major_group_title", "has_tasks"]),
                ex.row_count(ref.ONET_OCCUPATIONS),
                ex.matches("soc_code", r"^\d{2}-\d{4}$"),
                ex.matches("major_group_code", r"^\d{2}-0000$"),
            ],
        ),
        (
            "onet_occupations_with_tasks",
            with_tasks,
            lambda: [
                ex.row_count(ref.ONET_OCCUPATIONS_WITH_TASKS),
                ex.distinct_count("major_group_code", ref.SOC_MAJOR_GROUPS),
            ],
        ),
    )
    return check_result(outcome)


@asset_check(
    asset=onet_job_titles,
    blocking=True,
    description=(
        "GX: unique non-null (onet_soc_code, job_title, title_source); title_source in "
        "title/alternate/short/reported; one 'title' row per occupation (1,016); at least "
        f"{MIN_JOB_TITLES:,} rows."
    ),
)
def onet_job_titles_expectations(onet_job_titles: pl.DataFrame) -> AssetCheckResult:
    outcome = _validate(
        "onet_job_titles",
        (
            "onet_job_titles",
            onet_job_titles,
            lambda: [
                *ex.unique_key(["onet_soc_code", "job_title", "title_source"]),
                ex.in_set("title_source", ["title", "alternate", "short", "reported"]),
                ex.row_count_between(MIN_JOB_TITLES, None),
            ],
        ),
        (
            "onet_job_titles_title_rows",
            onet_job_titles.filter(pl.col("title_source") == "title"),
            lambda: [ex.row_count(ref.ONET_OCCUPATIONS), *ex.unique_key(["onet_soc_code"])],
        ),
    )
    return check_result(outcome)


@asset_check(
    asset=onet_technology_skills,
    blocking=True,
    description=(
        "GX: unique non-null (onet_soc_code, example, commodity_code); flags non-null; at least "
        f"{MIN_TECHNOLOGY_SKILLS:,} rows."
    ),
)
def onet_technology_skills_expectations(onet_technology_skills: pl.DataFrame) -> AssetCheckResult:
    outcome = _validate(
        "onet_technology_skills",
        (
            "onet_technology_skills",
            onet_technology_skills,
            lambda: [
                *ex.unique_key(["onet_soc_code", "example", "commodity_code"]),
                *ex.not_null(["commodity_title", "hot_technology", "in_demand"]),
                ex.row_count_between(MIN_TECHNOLOGY_SKILLS, None),
            ],
        ),
    )
    return check_result(outcome)


@asset_check(
    asset=occupation_wages,
    blocking=True,
    additional_ins={"oews_wages": AssetIn()},
    description=(
        "GX: 923 unique occupations; employment, wages and wage bill > 0 where matched; every unmatched "
        f"occupation has a reason; >= {FLOOR_OCCUPATIONS_WITH_WAGES:.0%} of occupations have wages and >= "
        f"{FLOOR_EMPLOYMENT_SHARE:.0%} of OEWS total employment is attached."
    ),
)
def occupation_wages_expectations(
    occupation_wages: pl.DataFrame, oews_wages: pl.DataFrame
) -> AssetCheckResult:
    summary = ref.occupation_wages_summary(occupation_wages, oews_wages)
    flagged = occupation_wages.with_columns(pl.col("employment").is_not_null().alias("has_wages"))
    missing = occupation_wages.filter(pl.col("wage_match") == "missing")
    outcome = _validate(
        "occupation_wages",
        (
            "occupation_wages",
            flagged,
            lambda: [
                *ex.unique_key(["onet_soc_code"]),
                ex.row_count(ref.ONET_OCCUPATIONS_WITH_TASKS),
                ex.in_set("wage_match", ["detailed", "split_among_onet_codes", "broad_aggregate", "missing"]),
                ex.positive("employment"),
                ex.positive("annual_mean_wage"),
                ex.positive("hourly_mean_wage"),
                ex.positive("wage_bill"),
                ex.between("n_onet_codes_sharing", 1, None),
                ex.share_at_least("has_wages", FLOOR_OCCUPATIONS_WITH_WAGES),
            ],
        ),
        ("occupation_wages_missing", missing, lambda: ex.not_null(["missing_reason"])),
        (
            "occupation_wages_metrics",
            _metrics(employment_share_attached=summary["employment_share_attached"]),
            lambda: [ex.metric_at_least("employment_share_attached", FLOOR_EMPLOYMENT_SHARE)],
        ),
    )
    return check_result(outcome, employment_share_attached=float(summary["employment_share_attached"]))


@asset_check(
    asset=task_hours,
    blocking=True,
    description=(
        "GX: 18,796 unique (onet_soc_code, task_id); pi in [0, 1] and summing to 1 per occupation within "
        f"1e-6; hours >= 0; >= {FLOOR_PI_MATCH:.0%} of tasks matched to a 30.2 pi."
    ),
)
def task_hours_expectations(task_hours: pl.DataFrame) -> AssetCheckResult:
    sums = ref.pi_sums(task_hours)
    matched = float((~task_hours["pi_is_fallback"]).mean())
    outcome = _validate(
        "task_hours",
        (
            "task_hours",
            task_hours,
            lambda: [
                *ex.unique_key(["onet_soc_code", "task_id"]),
                *ex.not_null(["pi", "pi_is_fallback"]),
                ex.row_count(ref.ONET_TASKS),
                ex.between("pi", 0, 1),
                ex.between("task_annual_hours", 0, None),
                ex.in_set("pi_is_fallback", [False], mostly=FLOOR_PI_MATCH),
            ],
        ),
        (
            "task_hours_pi_sums",
            sums,
            lambda: [ex.between("pi_sum", 1 - 1e-6, 1 + 1e-6), ex.row_count(ref.ONET_OCCUPATIONS_WITH_TASKS)],
        ),
    )
    return check_result(outcome, pi_match_rate=matched)


@asset_check(
    asset=task_exposure,
    blocking=True,
    description=(
        f"GX: unique (onet_soc_code, task_id); labels in E0/E1/E2; >= {FLOOR_EXPOSURE_MATCH:.0%} of the "
        "18,796 29.2 tasks labelled."
    ),
)
def task_exposure_expectations(task_exposure: pl.DataFrame) -> AssetCheckResult:
    rate = task_exposure.height / ref.ONET_TASKS
    outcome = _validate(
        "task_exposure",
        (
            "task_exposure",
            task_exposure,
            lambda: [
                *ex.unique_key(["onet_soc_code", "task_id"]),
                *ex.not_null(["exposed", "gpt4_exposed"]),
                ex.in_set("human_exposure", ref.EXPOSURE_LABELS),
                ex.in_set("gpt4_exposure", ref.EXPOSURE_LABELS),
                *ex.not_null(["human_exposure", "gpt4_exposure"]),
            ],
        ),
        (
            "task_exposure_metrics",
            _metrics(match_rate_of_onet_tasks=rate),
            lambda: [ex.metric_at_least("match_rate_of_onet_tasks", FLOOR_EXPOSURE_MATCH)],
        ),
    )
    return check_result(outcome, match_rate_of_onet_tasks=rate)


@asset_check(
    asset=workbank_tasks,
    blocking=True,
    description=(
        "GX: unique task_id; desire, capability and HAS means/medians in 1-5; zone in the four WORKBank "
        "zones and set wherever both desire and capability exist; 2,131 tasks; >= "
        f"{FLOOR_WORKBANK_MATCH:.0%} in O*NET 29.2."
    ),
)
def workbank_tasks_expectations(workbank_tasks: pl.DataFrame) -> AssetCheckResult:
    both = workbank_tasks.filter((pl.col("desire_n") > 0) & (pl.col("capability_n") > 0))
    outcome = _validate(
        "workbank_tasks",
        (
            "workbank_tasks",
            workbank_tasks,
            lambda: [
                *ex.unique_key(["task_id"]),
                ex.row_count(WORKBANK_TASKS),
                *[
                    ex.between(c, 1, 5)
                    for c in (
                        "desire_mean",
                        "desire_median",
                        "capability_mean",
                        "capability_median",
                        "worker_has_mean",
                        "worker_has_median",
                        "expert_has_mean",
                        "expert_has_median",
                    )
                ],
                ex.in_set("zone", ref.ZONES),
                ex.in_set("in_onet_29_2", [True], mostly=FLOOR_WORKBANK_MATCH),
            ],
        ),
        ("workbank_tasks_rated", both, lambda: ex.not_null(["zone"])),
    )
    return check_result(outcome, tasks_with_zone=both.height)
