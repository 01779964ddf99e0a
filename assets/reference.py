"""Reference tables: O*NET 29.2, OEWS May 2024, task shares, exposure labels, WORKBank.

Thin wrappers: each asset resolves its source files (`resources.sources.resolve_source`: data/raw, then
$BENCHMAP_MIRROR, then the official URL), reads them into the pure parsers of `models.reference`
(`resources.readers.read_source`), calls its builders, records the
source version, sha256, row counts and match rates as metadata and returns a polars frame that the
`WarehouseIOManager` writes as table `<asset name>` in one transaction. A parser error (`InputError` naming
the file and line) fails the step before anything is written, so the table already in the warehouse stays
as it was.

Their Great Expectations checks, with the documented match-rate floors, are in `assets.reference_checks`.
"""

import polars as pl
from dagster import (
    AssetExecutionContext,
    AssetIn,
    MetadataValue,
    asset,
)

from assets import TABLE_KINDS
from models import reference as ref
from resources.readers import read_source
from resources.source_versions import REFERENCE_FILES_KEY
from resources.sources import ResolvedSource, resolve_source

GROUP = "reference"

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
    deps=[REFERENCE_FILES_KEY],  # its data version: the reference files' checksums (assets/sources.py)
    group_name=GROUP,
    kinds=TABLE_KINDS,
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
    df = read_source(source.path, ref.parse_oews_national)
    return _finish(context, df, [source], ref.oews_summary(df))


@asset(
    deps=[REFERENCE_FILES_KEY],  # its data version: the reference files' checksums (assets/sources.py)
    group_name=GROUP,
    kinds=TABLE_KINDS,
    description=(
        "The 18,796 task statements of O*NET 29.2 with task type, and importance (IM 1-5), relevance (RT "
        "0-100) and the modal frequency category (FT 1-7) where rated (FT only from the raw Task Ratings.txt: "
        "empty with the other sources). Each task takes its ratings from the "
        "best source that rates it, named in ratings_source: the raw O*NET Task Ratings.txt "
        "(onet_task_ratings_full), then task_ratings_im_rt_29x.csv (im_rt_29x: IM/RT of all 17,639 rated "
        "tasks; its freq_* columns are not used), then the partial WORKBank table of 2,131 tasks "
        "(workbank_partial). is_core is O*NET Task Type Core (relevance >= 67% and importance >= 3.0)."
    ),
)
def onet_tasks(context: AssetExecutionContext) -> pl.DataFrame:
    statements_source = resolve_source("onet/Task Statements.txt")
    statements = read_source(statements_source.path, ref.parse_task_statements)
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
        ratings = read_source(source.path, ref.parse_task_ratings)
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
    deps=[REFERENCE_FILES_KEY],  # its data version: the reference files' checksums (assets/sources.py)
    group_name=GROUP,
    kinds=TABLE_KINDS,
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
    occupations = read_source(source.path, ref.parse_occupation_data)
    df = ref.build_onet_occupations(occupations, onet_tasks, oews_wages)
    with_tasks = df.filter(pl.col("has_tasks"))
    summary = {
        "occupations": df.height,
        "with_tasks": with_tasks.height,
        "major_groups_with_tasks": with_tasks["major_group_code"].n_unique(),
        "major_groups_all": df["major_group_code"].n_unique(),
    }
    return _finish(context, df, [source], summary)


@asset(
    deps=[REFERENCE_FILES_KEY],  # its data version: the reference files' checksums (assets/sources.py)
    group_name=GROUP,
    kinds=TABLE_KINDS,
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
        read_source(occ_source.path, ref.parse_occupation_data),
        read_source(alt_source.path, ref.parse_alternate_titles),
        read_source(rep_source.path, ref.parse_reported_titles),
    )
    counts = {f"rows_{k}": v for k, v in df.group_by("title_source").len().iter_rows()}
    return _finish(context, df, [alt_source, occ_source, rep_source], counts)


@asset(
    deps=[REFERENCE_FILES_KEY],  # its data version: the reference files' checksums (assets/sources.py)
    group_name=GROUP,
    kinds=TABLE_KINDS,
    description=(
        "Software and technology examples per O*NET occupation (Technology Skills.txt): example, UNSPSC "
        "commodity code and title, hot_technology and in_demand flags. A strong occupation signal for the "
        "labeler."
    ),
)
def onet_technology_skills(context: AssetExecutionContext) -> pl.DataFrame:
    source = resolve_source("onet/Technology Skills.txt")
    df = read_source(source.path, ref.parse_technology_skills)
    summary = {
        "occupations": df["onet_soc_code"].n_unique(),
        "hot_technology": int(df["hot_technology"].sum()),
    }
    return _finish(context, df, [source], summary)


@asset(
    group_name=GROUP,
    kinds=TABLE_KINDS,
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
    deps=[REFERENCE_FILES_KEY],  # its data version: the reference files' checksums (assets/sources.py)
    group_name=GROUP,
    kinds=TABLE_KINDS,
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
    shares = read_source(source.path, ref.parse_task_shares)
    df = ref.build_task_hours(onet_tasks, shares, occupation_wages)
    return _finish(context, df, [source], ref.task_hours_summary(df, shares))


@asset(
    deps=[REFERENCE_FILES_KEY],  # its data version: the reference files' checksums (assets/sources.py)
    group_name=GROUP,
    kinds=TABLE_KINDS,
    ins={"onet_tasks": AssetIn()},
    description=(
        "Eloundou et al. (GPTs are GPTs) exposure labels for the O*NET 29.2 tasks they cover (joined on "
        "O*NET-SOC code and task id): human and GPT-4 rubric labels E0/E1/E2, exposed = human E1 or E2, "
        "gpt4_exposed = GPT-4 E1 or E2. Metadata: match rate to 29.2 tasks."
    ),
)
def task_exposure(context: AssetExecutionContext, onet_tasks: pl.DataFrame) -> pl.DataFrame:
    source = resolve_source("eloundou/full_labelset.tsv")
    labels = read_source(source.path, ref.parse_eloundou_labels)
    df = ref.build_task_exposure(labels, onet_tasks)
    return _finish(context, df, [source], ref.task_exposure_summary(df, labels, onet_tasks))


@asset(
    deps=[REFERENCE_FILES_KEY],  # its data version: the reference files' checksums (assets/sources.py)
    group_name=GROUP,
    kinds=TABLE_KINDS,
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
        read_source(meta_source.path, ref.parse_workbank_tasks),
        read_source(desire_source.path, ref.parse_workbank_desires),
        read_source(capability_source.path, ref.parse_workbank_capability),
        onet_tasks,
    )
    return _finish(context, df, [desire_source, capability_source, meta_source], ref.workbank_summary(df))
