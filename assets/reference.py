"""Reference tables (O*NET 29.2, OEWS May 2024, task shares, exposure labels, WORKBank) and their GX checks.

Thin wrappers: each asset resolves its source files (`pipelines.sources.resolve_source`: data/raw, then
$BENCHMAP_MIRROR, then the official URL), calls the pure parsers/builders in `models.reference`, records the
source version, sha256, row counts and match rates as metadata and returns a polars frame that the
`WarehouseIOManager` writes as table `<asset name>` in one transaction. A parser error (`InputError` naming
the file and line) fails the step before anything is written, so the table already in the warehouse stays
as it was.

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
from dagster import (
    AssetCheckResult,
    AssetExecutionContext,
    AssetIn,
    MetadataValue,
    asset,
    asset_check,
)

from models import expectations as ex
from models import reference as ref
from pipelines.sources import ResolvedSource, resolve_source

GROUP = "reference"
KINDS = {"polars", "duckdb"}

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

RATINGS_FULL = "onet/Task Ratings.txt"
RATINGS_29X = "onet_task_ratings/task_ratings_im_rt_29x.csv"
RATINGS_PARTIAL = "onet_task_ratings/task_ratings_partial_from_workbank.csv"
# best first; names as in onet_tasks.ratings_source
RATINGS_LAYERS = tuple(zip(ref.RATINGS_SOURCES, (RATINGS_FULL, RATINGS_29X, RATINGS_PARTIAL), strict=True))


def _source_metadata(*sources: ResolvedSource) -> dict[str, object]:
    """source_version / sha256 / origin of the main (first) file, and every file's details under `sources`."""
    main = sources[0].metadata()
    versions = list(dict.fromkeys(s.spec.version for s in sources))
    return {
        "source_version": "; ".join(versions),
        "source_file": main["source_file"],
        "sha256": main["sha256"],
        "source_origin": main["source_origin"],
        "sources": MetadataValue.json({s.spec.key: s.metadata() for s in sources}),
    }


def _numbers(summary: dict[str, int | float]) -> dict[str, object]:
    return {
        k: (MetadataValue.float(float(v)) if isinstance(v, float) else MetadataValue.int(int(v)))
        for k, v in summary.items()
    }


def _finish(
    context: AssetExecutionContext,
    df: pl.DataFrame,
    sources: list[ResolvedSource],
    summary: dict[str, int | float] | None = None,
    **extra: object,
) -> pl.DataFrame:
    metadata: dict[str, object] = {
        **(_source_metadata(*sources) if sources else {}),
        "rows": MetadataValue.int(df.height),
        **_numbers(summary or {}),
        "preview": MetadataValue.md(ref.markdown_preview(df)),
        **extra,
    }
    context.add_output_metadata(metadata)
    return df


# ---------------------------------------------------------------------------------------------------------
# Assets
# ---------------------------------------------------------------------------------------------------------


@asset(
    group_name=GROUP,
    kinds=KINDS,
    description=(
        "BLS OEWS May 2024 national cross-industry estimates, one row per OCC_CODE x O_GROUP (total, "
        "major, minor, broad, detailed): employment, mean hourly and annual wage, wage_bill (employment x "
        "annual mean wage) and annual_hours (employment x 2,080). '*'/'**' -> null; '#' (top-coded) -> "
        "$115/hr or $239,200/yr with wage_top_coded; hourly-only / annual-only occupations get the other "
        "wage via x/÷ 2,080 (flagged)."
    ),
)
def oews_wages(context: AssetExecutionContext) -> pl.DataFrame:
    source = resolve_source("oews/national_M2024_dl.xlsx")
    df = ref.parse_oews_national(source.path)
    return _finish(context, df, [source], ref.oews_summary(df))


@asset(
    group_name=GROUP,
    kinds=KINDS,
    description=(
        "The 18,796 task statements of O*NET 29.2 with task type, and importance (IM 1-5), relevance (RT "
        "0-100) and the modal frequency category (FT 1-7) where rated. Each task takes its ratings from the "
        "best source that rates it, named in ratings_source: the raw O*NET Task Ratings.txt "
        "(onet_task_ratings_full), then task_ratings_im_rt_29x.csv (im_rt_29x: IM/RT of all 17,639 rated "
        "tasks; its freq_* columns are not used), then the partial WORKBank table of 2,131 tasks "
        "(workbank_partial). is_core is O*NET Task Type Core (relevance >= 67% and importance >= 3.0)."
    ),
)
def onet_tasks(context: AssetExecutionContext) -> pl.DataFrame:
    statements_source = resolve_source("onet/Task Statements.txt")
    statements = ref.parse_task_statements(statements_source.path)
    sources = [statements_source]
    typed = statements.filter(pl.col("task_type").is_not_null()).select("onet_soc_code", "task_id")
    layers: list[tuple[str, pl.DataFrame]] = []
    found: dict[str, ResolvedSource] = {}
    rows_in_file: dict[str, int] = {}
    for name, key in RATINGS_LAYERS:
        # a lower source is consulted only while some Core/Supplemental task is still unrated
        rated = ref.combine_task_ratings(layers)
        if layers and typed.join(rated, on=["onet_soc_code", "task_id"], how="anti").is_empty():
            break
        source = resolve_source(key, required=False)
        if source is None:
            continue
        ratings = ref.parse_task_ratings(source.path)
        layers.append((name, ratings))
        found[name] = source
        rows_in_file[name] = ratings.height
        sources.append(source)
    ratings = ref.combine_task_ratings(layers) if layers else None
    if ratings is None:
        context.log.warning("no task ratings found (full, 29.x IM/RT or partial): importance/relevance stay null")
    df = ref.build_onet_tasks(statements, ratings)
    summary = ref.onet_tasks_summary(df, ratings)
    per_source = {
        name: {
            "source_file": key,
            **(
                {
                    "origin": found[name].origin,
                    "path": str(found[name].path),
                    "sha256": found[name].sha256(),
                    "rows_in_file": rows_in_file[name],
                }
                if name in found
                else {"origin": "not used"}
            ),
            "tasks_rated_from_it": int(summary[f"tasks_rated_{name}"]),
        }
        for name, key in RATINGS_LAYERS
    }
    used = [name for name in ref.RATINGS_SOURCES if summary[f"tasks_rated_{name}"] > 0]
    return _finish(
        context,
        df,
        sources,
        summary,
        ratings_used=MetadataValue.text(", ".join(used) or "none"),
        ratings_file=MetadataValue.text(str(found[used[0]].path) if used else "none"),
        ratings_sources=MetadataValue.json(per_source),
    )


@asset(
    group_name=GROUP,
    kinds=KINDS,
    ins={"onet_tasks": AssetIn(), "oews_wages": AssetIn()},
    description=(
        "All 1,016 O*NET 29.2 occupations (O*NET-SOC codes) with title, description, 6-digit SOC code, SOC "
        "major group code and title (titles from the OEWS major rows; 55-0000 Military, which OEWS does "
        "not cover, gets its SOC 2018 title) and has_tasks (923 occupations have task statements)."
    ),
)
def onet_occupations(
    context: AssetExecutionContext, onet_tasks: pl.DataFrame, oews_wages: pl.DataFrame
) -> pl.DataFrame:
    source = resolve_source("onet/Occupation Data.txt")
    df = ref.build_onet_occupations(ref.parse_occupation_data(source.path), onet_tasks, oews_wages)
    with_tasks = df.filter(pl.col("has_tasks"))
    summary = {
        "occupations": df.height,
        "with_tasks": with_tasks.height,
        "major_groups_with_tasks": with_tasks["major_group_code"].n_unique(),
        "major_groups_all": df["major_group_code"].n_unique(),
    }
    return _finish(context, df, [source], summary)


@asset(
    group_name=GROUP,
    kinds=KINDS,
    description=(
        "Job titles per O*NET occupation for the labeler: the occupation title ('title'), Alternate "
        "Titles.txt ('alternate' and its 'short' titles) and Sample of Reported Titles.txt ('reported'); "
        "exact duplicates within a source dropped."
    ),
)
def onet_job_titles(context: AssetExecutionContext) -> pl.DataFrame:
    occ_source = resolve_source("onet/Occupation Data.txt")
    alt_source = resolve_source("onet/Alternate Titles.txt")
    rep_source = resolve_source("onet/Sample of Reported Titles.txt")
    df = ref.build_onet_job_titles(
        ref.parse_occupation_data(occ_source.path),
        ref.parse_alternate_titles(alt_source.path),
        ref.parse_reported_titles(rep_source.path),
    )
    counts = {f"rows_{k}": v for k, v in df.group_by("title_source").len().iter_rows()}
    return _finish(context, df, [alt_source, occ_source, rep_source], counts)


@asset(
    group_name=GROUP,
    kinds=KINDS,
    description=(
        "Software and technology examples per O*NET occupation (Technology Skills.txt): example, UNSPSC "
        "commodity code and title, hot_technology and in_demand flags. A strong occupation signal for the "
        "labeler."
    ),
)
def onet_technology_skills(context: AssetExecutionContext) -> pl.DataFrame:
    source = resolve_source("onet/Technology Skills.txt")
    df = ref.parse_technology_skills(source.path)
    summary = {
        "occupations": df["onet_soc_code"].n_unique(),
        "hot_technology": int(df["hot_technology"].sum()),
    }
    return _finish(context, df, [source], summary)


@asset(
    group_name=GROUP,
    kinds=KINDS,
    ins={"onet_occupations": AssetIn(), "oews_wages": AssetIn()},
    description=(
        "Every O*NET occupation with tasks joined to OEWS May 2024 employment and wages. wage_match says "
        "how: 'detailed' (own SOC row), 'split_among_onet_codes' (n O*NET codes share a SOC code: "
        "employment / n each), 'broad_aggregate' (SOC only published as a broad/aggregate group: the "
        "group's employment not matched directly, split equally), 'missing' (with missing_reason). "
        "Metadata: share of OEWS total employment attached."
    ),
)
def occupation_wages(
    context: AssetExecutionContext, onet_occupations: pl.DataFrame, oews_wages: pl.DataFrame
) -> pl.DataFrame:
    df = ref.build_occupation_wages(onet_occupations, oews_wages)
    summary = ref.occupation_wages_summary(df, oews_wages)
    missing = df.filter(pl.col("wage_match") == "missing").select("onet_soc_code", "title", "missing_reason")
    return _finish(
        context,
        df,
        [],
        summary,
        source_version=MetadataValue.text("O*NET 29.2 x BLS OEWS May 2024"),
        missing_occupations=MetadataValue.md(
            missing.to_pandas().to_markdown(index=False) if missing.height else "none"
        ),
        split_rule=MetadataValue.text(
            "equal split of a SOC code's (or a broad group's residual) employment among the O*NET codes "
            "with tasks that share it; wages are the SOC code's (the residual's) mean"
        ),
    )


@asset(
    group_name=GROUP,
    kinds=KINDS,
    ins={"onet_tasks": AssetIn(), "occupation_wages": AssetIn()},
    description=(
        "Per O*NET 29.2 task: pi, its share of the occupation's labour (MIT WAL task shares built from "
        "O*NET 30.2 frequency ratings), and task_annual_hours = pi x occupation annual hours (OEWS "
        "employment x 2,080). Tasks without a 30.2 pi get the equal split 1/n (pi_is_fallback); matched pi "
        "are renormalised to fill the rest, so pi sums to 1 per occupation. Metadata: match rate."
    ),
)
def task_hours(
    context: AssetExecutionContext, onet_tasks: pl.DataFrame, occupation_wages: pl.DataFrame
) -> pl.DataFrame:
    source = resolve_source("task_hours/onet_task_labor_input_30_2.parquet")
    shares = ref.parse_task_shares(source.path)
    df = ref.build_task_hours(onet_tasks, shares, occupation_wages)
    return _finish(context, df, [source], ref.task_hours_summary(df, shares))


@asset(
    group_name=GROUP,
    kinds=KINDS,
    ins={"onet_tasks": AssetIn()},
    description=(
        "Eloundou et al. (GPTs are GPTs) exposure labels for the O*NET 29.2 tasks they cover (joined on "
        "O*NET-SOC code and task id): human and GPT-4 rubric labels E0/E1/E2, exposed = human E1 or E2, "
        "gpt4_exposed = GPT-4 E1 or E2. Metadata: match rate to 29.2 tasks."
    ),
)
def task_exposure(context: AssetExecutionContext, onet_tasks: pl.DataFrame) -> pl.DataFrame:
    source = resolve_source("eloundou/full_labelset.tsv")
    labels = ref.parse_eloundou_labels(source.path)
    df = ref.build_task_exposure(labels, onet_tasks)
    return _finish(context, df, [source], ref.task_exposure_summary(df, labels, onet_tasks))


@asset(
    group_name=GROUP,
    kinds=KINDS,
    ins={"onet_tasks": AssetIn()},
    description=(
        "WORKBank (Shao et al. 2025) per task: mean / median / count of worker automation desire (1-5), "
        "expert capability (1-5), worker and expert Human Agency Scale, and the zone from mean desire and "
        "mean capability (green_light: both >= 3; red_light: desire < 3, capability >= 3; rnd_opportunity: "
        "desire >= 3, capability < 3; low_priority: both < 3; null when either is unrated). in_onet_29_2 "
        "flags 29.2 tasks."
    ),
)
def workbank_tasks(context: AssetExecutionContext, onet_tasks: pl.DataFrame) -> pl.DataFrame:
    meta_source = resolve_source("workbank/task_statement_with_metadata.csv")
    desire_source = resolve_source("workbank/domain_worker_desires.csv")
    capability_source = resolve_source("workbank/expert_rated_technological_capability.csv")
    df = ref.build_workbank_tasks(
        ref.parse_workbank_tasks(meta_source.path),
        ref.parse_workbank_desires(desire_source.path),
        ref.parse_workbank_capability(capability_source.path),
        onet_tasks,
    )
    return _finish(context, df, [desire_source, capability_source, meta_source], ref.workbank_summary(df))


ASSETS = [
    oews_wages,
    onet_tasks,
    onet_occupations,
    onet_job_titles,
    onet_technology_skills,
    occupation_wages,
    task_hours,
    task_exposure,
    workbank_tasks,
]


# ---------------------------------------------------------------------------------------------------------
# Great Expectations checks
# ---------------------------------------------------------------------------------------------------------


def check_result(outcome: ex.ValidationOutcome, **metadata: object) -> AssetCheckResult:
    """A GX outcome as an AssetCheckResult: pass/fail, counts and the result table as Markdown."""
    return AssetCheckResult(
        passed=outcome.success,
        description=outcome.describe_failures() or None,
        metadata={
            "expectations": outcome.n_expectations,
            "failed": outcome.n_failed,
            "results": MetadataValue.md(outcome.to_markdown()),
            **metadata,
        },
    )


def _validate(name: str, *parts: tuple[str, pl.DataFrame, Callable[[], list]]) -> ex.ValidationOutcome:
    """Run each (label, frame, expectations factory) and combine; factories build fresh GX expectations."""
    return ex.combine(
        [ex.run_expectations(frame, build(), name=label) for label, frame, build in parts], name=name
    )


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
    return check_result(outcome, tasks_with_ratings=rated.height, **counts)


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
                        "expert_has_mean",
                    )
                ],
                ex.in_set("zone", ref.ZONES),
                ex.in_set("in_onet_29_2", [True], mostly=FLOOR_WORKBANK_MATCH),
            ],
        ),
        ("workbank_tasks_rated", both, lambda: ex.not_null(["zone"])),
    )
    return check_result(outcome, tasks_with_zone=both.height)


CHECKS = [
    oews_wages_expectations,
    onet_tasks_expectations,
    onet_tasks_ratings_coverage,
    onet_occupations_expectations,
    onet_job_titles_expectations,
    onet_technology_skills_expectations,
    occupation_wages_expectations,
    task_hours_expectations,
    task_exposure_expectations,
    workbank_tasks_expectations,
]
