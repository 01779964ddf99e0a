"""Label validation (group "label_validation"): how well labelers do against humans and against each other.

- `reference_task_labels`, `labeler_validation` (+ floor check); in the same group `labeler_agreement`
  (assets/labeler_agreement.py), `gold_annotation_sample` and `gold_task_labels` (assets/gold_labels.py). All
  unpartitioned, so a per-benchmark refresh job does not recompute them; they are downstream of the benchmark
  tables and land in the analysis refresh job.

The prompts and labels they read come through resources/label_queries.py (only the human-labeled or sampled
prompts, never the whole label table).
"""

import hashlib
from collections.abc import Iterator
from typing import Any

import polars as pl
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetExecutionContext,
    AssetIn,
    Config,
    MetadataValue,
    asset,
    asset_check,
)

from assets import TABLE_KINDS
from assets.gold_labels import PROMPT_COLUMNS, VALIDATION_GROUP, VALIDATION_PROMPT_COLUMNS, read_prompts
from assets.kept_rows import kept_result
from assets.labels import load_task_index, markdown_table, prompt_records
from assets.release_gate import refuse_labels_behind, refuse_missing_tables
from models import reference_labels as rl
from models import validation as val
from models.cache_keys import result_key
from models.labeling import cache as lc
from models.labeling.base import PromptRecord, stacked_on
from models.labeling.stacking_cv import NEIGHBOUR_GRID
from models.sources import ONET_VERSION
from resources.dagster_resources import Warehouse
from resources.label_cache import other_labelers_labels
from resources.readers import (
    load_reference,
    load_selector_fit,
    load_stack_fit,
    read_selector_oof,
    reference_folder,
)
from resources.settings import settings
from resources.source_versions import REFERENCE_FILES_KEY

# --- validation against human labels (the gold labels: assets/gold_labels.py) ----------------------------


def _validation_inputs(
    warehouse: Warehouse, gold_task_labels: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The human-labeled prompts (VALIDATION_PROMPT_COLUMNS) and their labels, filtered in DuckDB
    (resources.label_queries.validation_inputs)."""
    prompt_schema = {c: PROMPT_COLUMNS[c] for c in VALIDATION_PROMPT_COLUMNS}
    return warehouse.validation_inputs(gold_task_labels, prompt_schema, lc.LABEL_COLUMNS)


def tac_role_mapping() -> tuple[dict | None, str]:
    """(TAC role -> SOC mapping, where it came from): the offline labeler's `TAC_ROLE_TO_SOC` when it has one,
    else None (validation then uses models.validation.FALLBACK_TAC_ROLE_TO_SOC)."""
    try:
        from models.labeling import offline
    except ImportError:
        return None, "models.validation.FALLBACK_TAC_ROLE_TO_SOC"
    mapping = getattr(offline, "TAC_ROLE_TO_SOC", None)
    if mapping:
        return dict(mapping), "models.labeling.offline.TAC_ROLE_TO_SOC"
    return None, "models.validation.FALLBACK_TAC_ROLE_TO_SOC"


def occupation_ranker(keys: tuple[str, ...] = ("benchmark", "prompt_id")) -> tuple[Any, str]:
    """(ranker, where it came from): the offline module's occupation ranking (6-digit SOC level) per prompt
    (`keys` name a prompt), or None when it has none (validation then ranks by the sum of task scores)."""
    try:
        from models.labeling.offline import occupation_ranking_from_labels
    except ImportError:
        return None, "models.validation.rank_occupations (score sum)"

    def rank(labels: list) -> list[str]:
        return occupation_ranking_from_labels(labels, level="soc")

    return val.per_prompt_ranker(rank, keys), "models.labeling.offline.occupation_ranking_from_labels (soc)"


def _all_labeler_labels(warehouse: Warehouse, labels: pl.DataFrame, prompts: pl.DataFrame) -> pl.DataFrame:
    """prompt_task_labels plus, for labelers/versions not in it, their cached labels of current prompts
    (older configurations of the current version string are not re-validated)."""
    # (not the selector's labels the published neighbour-stacked ones were made from: resources/label_cache.py)
    extra = other_labelers_labels(warehouse.label_cache(), labels, prompts, ONET_VERSION)
    if extra.is_empty():
        return labels
    return pl.concat([labels.select(list(lc.LABEL_COLUMNS)), extra], how="vertical_relaxed")


@asset(
    group_name=VALIDATION_GROUP,
    kinds=TABLE_KINDS,
    ins={"onet_tasks": AssetIn()},
    deps=["benchmark_prompts", REFERENCE_FILES_KEY],  # REFERENCE_FILES_KEY: it reads files of data/raw
    description="The task-level reference (an LLM judge's labels of a random sample of prompts, two passes "
    "on the development split; data/reference/, or data/raw/reference_labels/ when present), checked "
    "against onet_tasks and the landed prompts: one row per (prompt, pass) of a landed benchmark.",
)
def reference_task_labels(
    context: AssetExecutionContext, warehouse: Warehouse, onet_tasks: pl.DataFrame
) -> pl.DataFrame:
    folder = reference_folder()
    reference = load_reference(folder)  # InputError with file and line on a broken or duplicated row
    prompts = read_prompts(warehouse, ("benchmark", "prompt_id", "prompt_hash"))
    landed = reference.filter(pl.col("benchmark").is_in(prompts["benchmark"].unique().implode()))
    rl.check_reference(landed, onet_tasks)  # an unknown task ID: fail, nothing is stored
    # a judged prompt its benchmark no longer has (a new version with fewer items) or whose text changed is left
    # out, not a failure: the vendored reference cannot be edited, and failing here held back every release
    present = landed.join(prompts, on=["benchmark", "prompt_id"], how="semi")
    current = present.join(prompts, on=["benchmark", "prompt_id", "prompt_hash"], how="semi")
    removed = landed.join(prompts, on=["benchmark", "prompt_id"], how="anti")
    if not removed.is_empty():
        first = removed.row(0, named=True)
        context.log.warning(
            f"{removed.height} reference rows label a prompt its benchmark no longer has (first "
            f"{first['source_file']}, line {first['line_number']}: {first['benchmark']}/{first['prompt_id']}): "
            "left out")
    if current.height < present.height:
        context.log.warning(f"{present.height - current.height} reference rows label a prompt whose text has "
                            "changed since it was judged: left out")
    context.add_output_metadata({
        "folder": str(folder), "rows": current.height, "prompts": current["sample_id"].n_unique(),
        "benchmarks_not_landed": ", ".join(sorted(set(reference["benchmark"]) - set(landed["benchmark"])))
        or "none",
        "changed_prompts_left_out": present.height - current.height,
        "removed_prompts_left_out": removed.height,
        "per_split": MetadataValue.json(dict(current.group_by("split").len().sort("split").iter_rows())),
    })
    return current


def _contextprompt_records(warehouse: Warehouse, benchmarks: list[str]) -> list[PromptRecord]:
    """The prompts each benchmark's labeling context is drawn from (models.labeling.selector.context_sample):
    hashes of every prompt first, texts of the sampled ones only."""
    from models.labeling.selector import context_sample

    hashes = warehouse.prompt_hashes(benchmarks)
    keys = []
    for _, group in hashes.group_by(["benchmark"], maintain_order=True):
        keys.append(group[context_sample(group["prompt_hash"].to_list())])
    if not keys:
        return []
    return prompt_records(warehouse.prompt_texts(pl.concat(keys)))


def _offline_rankings(warehouse: Warehouse, keys: pl.DataFrame, log: Any
                      ) -> tuple[str, pl.DataFrame, dict, dict]:
    """The calibrated offline labeler's ranked candidates for the given prompts: (labeler_version, ranking
    rows in LABEL_COLUMNS (rank = candidate rank, score = p_exercised), (benchmark, prompt_id) -> O*NET-SOC codes
    by the retriever's occupation ranking, (benchmark, prompt_hash) -> the selector's first occupation)."""
    from models.labeling.offline.config import calibrated_version

    fit = load_selector_fit()
    version = calibrated_version(fit.version)
    texts = warehouse.prompt_texts(keys)
    context = _contextprompt_records(warehouse, texts["benchmark"].unique().to_list())
    # kept by what they depend on (issue 29 item 3: a benchmark without human labels that lands changes none of
    # it; preparing the labeler's contexts is most of this step). The key needs the labeler's version only: the
    # index and the labeler (scikit-learn's import, the pickled index: ~0.5-0.7 s of a daemon's analysis run) are
    # loaded when the rankings are computed
    digest = hashlib.blake2b(digest_size=16)
    for part in [version, "first-by-benchmark", ONET_VERSION, warehouse.source_digest("models.labeling"),
                 texts.sort(texts.columns).hash_rows().to_numpy().tobytes().hex(),
                 *(f"{r.benchmark}/{r.prompt_id}/{r.prompt_hash}" for r in context)]:
        digest.update(part.encode() + b"\x1f")
    key = digest.hexdigest()
    cached = warehouse.cached_result("offline_rankings", key)
    if cached is not None:
        return cached
    from models.labeling.offline import OfflineLabeler

    index, _, _ = load_task_index(warehouse, log)
    labeler = OfflineLabeler.calibrated(index, fit)  # its labeler_version is `version` (calibrated_version)
    labeler.prepare(context)
    rows: dict[str, list] = {c: [] for c in lc.LABEL_COLUMNS}
    occupations: dict[tuple[str, str], list[str]] = {}
    first: dict[tuple[str, str], str | None] = {}  # (benchmark, prompt_hash): a text's ranking is its benchmark's
    for (benchmark, prompt_id, prompt_hash, _), ranking in _rankings_in_chunks(labeler, texts):
        for rank, (task_id, code, p) in enumerate(ranking.tasks[:RANKED_TASKS_KEPT], start=1):
            for column, value in zip(lc.LABEL_COLUMNS, (benchmark, prompt_id, prompt_hash, code, task_id,
                                                        labeler.name, labeler.labeler_version, rank, p, None, p),
                                     strict=True):
                rows[column].append(value)
        occupations[(benchmark, prompt_id)] = [c for c, _ in ranking.occupations]
        first[(benchmark, prompt_hash)] = ranking.selected_occupations[0][0] if ranking.selected_occupations else None
    result = labeler.labeler_version, pl.DataFrame(rows, schema=lc.LABEL_COLUMNS), occupations, first
    warehouse.keep_result("offline_rankings", key, result)
    return result


RANKED_TASKS_KEPT = 50  # of a prompt's ranking (every scored candidate task, ~hundreds) validation reads these
RANKING_CHUNK_BATCHES = 8  # prompts ranked at once: this many of the labeler's batches


def _rankings_in_chunks(labeler: Any, texts: pl.DataFrame) -> Iterator[tuple[tuple, Any]]:
    """(row of `texts`, its PromptRanking), ranked a few of the labeler's batches at a time: the caller keeps the
    first RANKED_TASKS_KEPT tasks of each, so the full rankings (every candidate task: ~600 MiB for the ~15,000
    human-labeled or judged prompts at 50x the mirror) are never all held. Chunks are whole batches of the
    labeler's, each prompt ranked with its benchmark's prepared context: the rankings equal one call's."""
    chunk = labeler.config.batch_size * RANKING_CHUNK_BATCHES
    for start in range(0, texts.height, chunk):
        part = texts.slice(start, chunk)
        yield from zip(part.iter_rows(), labeler.rankings(prompt_records(part)), strict=True)


def _ranking_ranker(version: str, occupations: dict[tuple[str, str], list[str]], fallback: Any) -> Any:
    """rank_fn for validate_labels: the retriever's occupation ranking for the calibrated offline labeler,
    the label-based ranking (`fallback`) for every other labeler."""

    def rank(labels: pl.DataFrame) -> pl.DataFrame:
        if labels.is_empty() or labels["labeler_version"][0] != version:
            return fallback(labels)
        keys = labels.select("benchmark", "prompt_id").unique(maintain_order=True)
        rows = [{"benchmark": b, "prompt_id": p, "soc_code": code, "occ_score": None, "occ_rank": i + 1}
                for b, p in keys.iter_rows()
                for i, code in enumerate(dict.fromkeys(val.soc6(c) for c in occupations.get((b, p), [])))]
        return pl.DataFrame(rows, schema={"benchmark": pl.Utf8, "prompt_id": pl.Utf8, "soc_code": pl.Utf8,
                                          "occ_score": pl.Float64, "occ_rank": pl.Int64})

    return rank


def _reference_predictions(warehouse: Warehouse, reference: pl.DataFrame, labels: pl.DataFrame,
                           offline_version: str | None, ranking_labels: pl.DataFrame,
                           first_occupation: dict[tuple[str, str], str | None]) -> pl.DataFrame:
    """Every labeler's predictions for the reference prompts: label sets from prompt_task_labels and
    prompt_work (other labelers' from the label cache); for the calibrated offline labeler the ranking and
    first occupation come from its ranked candidates, not from its (short) label set."""
    hashes = reference["prompt_hash"].unique().implode()
    mine = labels.filter(pl.col("prompt_hash").is_in(hashes))
    work = warehouse.work_of_hashes(reference["prompt_hash"].unique().to_list(), lc.WORK_COLUMNS)
    predictions = rl.predictions_from_labels(mine, work)
    if offline_version is None or ranking_labels.is_empty():
        return predictions
    # one ranking per benchmark a text landed in (its benchmark's context), in a fixed order
    ranked = (ranking_labels.sort("benchmark", "prompt_hash", "prompt_id", "rank")
              .group_by("benchmark", "prompt_id", "prompt_hash", maintain_order=True)
              .agg(pl.col("task_id").alias("ranking")))
    ranked = ranked.with_columns(pl.Series(
        "best_code", [first_occupation.get((b, h)) for b, h in ranked.select("benchmark", "prompt_hash").iter_rows()],
        dtype=pl.Utf8)).unique(subset=["benchmark", "prompt_hash"], keep="first", maintain_order=True)
    text = ["benchmark", "prompt_hash"]
    if stacked_on(offline_version) is not None:
        # the neighbour stack's labels: the ranking is the selector's, the first occupation its own rank-1 label's
        offline = predictions.filter(pl.col("labeler_version") == offline_version).drop("ranking")
        offline = offline.join(ranked.select(*text, "ranking"), on=text, how="left")
    else:
        offline = predictions.filter(pl.col("labeler_version") == offline_version).drop("ranking",
                                                                                        "first_occupation")
        offline = offline.join(ranked.select(*text, "ranking", pl.col("best_code").alias("first_occupation")),
                               on=text, how="left")
    return pl.concat([predictions.filter(pl.col("labeler_version") != offline_version),
                      offline.select(list(rl.PREDICTION_SCHEMA))])


def _cross_validated_rows(offline_version: str | None) -> pl.DataFrame:
    """The calibrated labeler's leave-one-benchmark-out figures on the development split, as recorded in its
    fit file (metric ref_cv_*): its ref_* rows are in-sample, since it was fitted on the whole reference."""
    schema = {"benchmark": pl.Utf8, "labeler": pl.Utf8, "labeler_version": pl.Utf8, "metric": pl.Utf8,
              "value": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "n": pl.Int64}
    if offline_version is None:
        return pl.DataFrame(schema=schema)
    recorded = load_selector_fit().cross_validation.get("cv_dev", {})
    return pl.DataFrame([
        {"benchmark": "all", "labeler": "offline", "labeler_version": offline_version,
         "metric": f"{rl.METRIC_PREFIX}cv_{metric}", "value": v["value"], "ci_low": v["ci_low"],
         "ci_high": v["ci_high"], "n": v["n"]} for metric, v in recorded.items()], schema=schema)


# The neighbour stack's cross-validation (neighbour_fit.json), published under these labeler names: the
# labels after the step (the published labeler), before it (the selector alone) and the plain neighbour vote.
STACK_LABELERS = {"neighbour_stack": "offline", "selector_only": "offline_selector_only",
                  "neighbour_vote_only": "neighbour_vote_only"}
STACK_EVALUATIONS = ("within_benchmark", "new_benchmark")


# while the step is off (BENCHMAP_NEIGHBOUR_STEP=0) its figures describe a candidate, not the published labels
CANDIDATE_STACK_LABELER = "offline_neighbour_step"


def stack_cross_validated_rows(stack: Any, selector_version: str | None, *, published: bool = True) -> pl.DataFrame:
    """The two out-of-sample evaluations of the labeler step (pipelines.fit_labeler's figures, over every
    judged text of both splits, 95% bootstrap over texts), metric `ref_cv_<evaluation>_<metric>`:
    within_benchmark = leave one judged text out within its benchmark (the stack's models and hyperparameters
    also never saw the benchmark); new_benchmark = leave one benchmark out (a benchmark that arrives without
    judged texts: the selector's labels, so before = after). Labelers: STACK_LABELERS; the stack's own rows
    are CANDIDATE_STACK_LABELER's when the step is not `published` (off)."""
    schema = {"benchmark": pl.Utf8, "labeler": pl.Utf8, "labeler_version": pl.Utf8, "metric": pl.Utf8,
              "value": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "n": pl.Int64}
    if stack is None:
        return pl.DataFrame(schema=schema)
    versions = {"neighbour_stack": f"{selector_version}+{stack.version}", "selector_only": selector_version,
                "neighbour_vote_only": f"k={NEIGHBOUR_GRID[0][0]} nearest judged texts, top 3 tasks"}
    rows = []
    for evaluation in STACK_EVALUATIONS:
        for name, figures in stack.cross_validation.get(evaluation, {}).items():
            for metric, v in figures.get("all", {}).items():
                labeler = STACK_LABELERS[name] if published or name != "neighbour_stack" else CANDIDATE_STACK_LABELER
                rows.append({"benchmark": "all", "labeler": labeler, "labeler_version": versions[name],
                             "metric": f"{rl.METRIC_PREFIX}cv_{evaluation}_{metric}", "value": v["value"],
                             "ci_low": v["ci_low"], "ci_high": v["ci_high"], "n": v["n"]})
    return pl.DataFrame(rows, schema=schema)


@asset(
    group_name=VALIDATION_GROUP,
    kinds=TABLE_KINDS,
    ins={"onet_tasks": AssetIn(), "onet_occupations": AssetIn(), "gold_task_labels": AssetIn(),
         "reference_task_labels": AssetIn()},
    deps=["prompt_task_labels", "prompt_work", "benchmark_prompts"],
    description="Labelers vs human labels and vs the task-level reference, one tidy table (benchmark, labeler, "
    "labeler_version, metric, value, ci_low, ci_high, n; 95% bootstrap over prompts, but over benchmarks for the "
    "pooled `ref_cv_new_benchmark_*` rows): GDPval and "
    "TheAgentCompany occupation top-1/top-5 and JobBench task hit@k from the ranking; gold-set task "
    "precision/recall/F1; `ref_*` task F1/precision/recall, hit@1/5, first occupation and work decision against "
    "the reference, with the judge's two passes against each other as the ceiling row; `ref_cv_*` (no evaluation "
    "in the name): the same for the selector fitted without the benchmark, leave one benchmark out; "
    "`ref_cv_within_benchmark_*` "
    "and `ref_cv_new_benchmark_*`: the labeler step with the benchmark's judged texts (labeler offline) against "
    "the selector alone (offline_selector_only) and the plain neighbour vote, out of sample; "
    "`ref_cv_new_benchmark_*` also per benchmark.",
)
def labeler_validation(
    context: AssetExecutionContext,
    warehouse: Warehouse,
    onet_tasks: pl.DataFrame,
    onet_occupations: pl.DataFrame,
    gold_task_labels: pl.DataFrame,
    reference_task_labels: pl.DataFrame,
) -> pl.DataFrame:
    with warehouse.held():  # one open of the file for its ~70 reads (~27 CPU-ms each otherwise)
        # no labels yet: a failure naming them, not an empty validation reported as a success
        refuse_missing_tables(warehouse, "labeler_validation", ["prompt_task_labels"])
        refuse_labels_behind(warehouse, "labeler_validation")  # labels joined to prompts by prompt_id
        return _labeler_validation(context, warehouse, onet_tasks, onet_occupations, gold_task_labels,
                                   reference_task_labels)


def _labeler_validation(context: AssetExecutionContext, warehouse: Warehouse, onet_tasks: pl.DataFrame,
                        onet_occupations: pl.DataFrame, gold_task_labels: pl.DataFrame,
                        reference_task_labels: pl.DataFrame) -> pl.DataFrame:
    # Only prompts with a human label can be validated: load just them (no texts) and their labels, filtered
    # in DuckDB (the label table grows with every benchmark, the human-labeled prompts do not).
    prompts, labels = _validation_inputs(warehouse, gold_task_labels)
    reference_labels = pl.DataFrame(schema=lc.LABEL_COLUMNS)
    if warehouse.table_exists("prompt_task_labels") and not reference_task_labels.is_empty():
        reference_labels = warehouse.labels_of_hashes(
            reference_task_labels["prompt_hash"].unique().to_list()).select(list(lc.LABEL_COLUMNS))
    labels = _all_labeler_labels(warehouse, labels, prompts)
    offline_version = None
    ranking_labels = pl.DataFrame(schema=lc.LABEL_COLUMNS)
    occupations: dict[tuple[str, str], list[str]] = {}
    first_occupation: dict[tuple[str, str], str | None] = {}
    current = set(labels.filter(pl.col("labeler") == "offline")["labeler_version"].unique().to_list())
    keys = pl.concat([prompts.select("benchmark", "prompt_id"),
                      reference_task_labels.select("benchmark", "prompt_id")]).unique()
    if any(v.startswith("offline-calibrated") for v in current) and not keys.is_empty():
        offline_version, ranking_labels, occupations, first_occupation = _offline_rankings(
            warehouse, keys, context.log)
    selector_version = offline_version
    stacked = sorted(v for v in current if selector_version and stacked_on(v) == selector_version)
    if stacked:  # the published labels are the neighbour stack's on this selector: they read its ranking
        offline_version = stacked[0]
        ranking_labels = ranking_labels.with_columns(pl.lit(offline_version).alias("labeler_version"))
    # human-label metrics read the ranking: the calibrated labeler's label set is short by design
    human_labels = labels
    if offline_version is not None:
        human = ranking_labels.join(prompts.select("benchmark", "prompt_id"), on=["benchmark", "prompt_id"],
                                    how="semi")
        human_labels = pl.concat([labels.filter(pl.col("labeler_version") != offline_version), human],
                                 how="vertical_relaxed")
    mapping, mapping_source = tac_role_mapping()
    ranker, ranker_source = occupation_ranker()
    if offline_version is not None:
        ranker = _ranking_ranker(offline_version, occupations, ranker)
        ranker_source += "; the calibrated offline labeler: its retriever's occupation ranking"
    # the metrics are a function of these frames, the ranking and the code: kept by them (assets/kept_rows.py)
    ranking_key = result_key(sorted(occupations.items()))
    table, notes = kept_result(
        warehouse, "labeler_validation_human",
        [str(offline_version), ranking_key, repr(sorted((mapping or {}).items())), mapping_source, ranker_source],
        [human_labels, prompts, onet_occupations, onet_tasks, gold_task_labels, labels],
        lambda: val.validate_labels(human_labels, prompts, onet_occupations, onet_tasks, gold_task_labels,
                                    tac_role_to_soc=mapping, rank_fn=ranker, set_labels=labels))
    if not reference_task_labels.is_empty():
        all_reference_labels = _all_labeler_labels(warehouse, reference_labels, reference_task_labels)
        predictions = _reference_predictions(warehouse, reference_task_labels, all_reference_labels,
                                             offline_version, ranking_labels, first_occupation)
        reference_table = kept_result(warehouse, "labeler_validation_reference", [],
                                      [predictions, reference_task_labels],
                                      lambda: rl.labeler_reference_metrics(predictions, reference_task_labels))
        table = pl.concat([table, reference_table.select(table.columns).cast(table.schema),
                           _cross_validated_rows(selector_version).select(table.columns).cast(table.schema)])
    if selector_version is not None:
        stack_rows = stack_cross_validated_rows(load_stack_fit(), selector_version,
                                                published=settings().neighbour_step)
        out_of_fold = read_selector_oof()
        if out_of_fold is not None and selector_version.endswith(f"+{out_of_fold.get('fit_version')}") \
                and not reference_task_labels.is_empty():
            # a benchmark without judged texts: the benchmarks are the sample (its interval resamples them), and
            # each benchmark's own figure is shown (the selector's cross-validated labels, what it gets)
            per_prompt = rl.per_prompt_metrics(rl.predictions_from_out_of_fold(out_of_fold["prompts"]),
                                               reference_task_labels)
            shown = STACK_LABELERS["neighbour_stack"] if settings().neighbour_step else STACK_LABELERS["selector_only"]
            stack_rows, problem = rl.with_benchmark_spread(stack_rows, per_prompt,
                                                           f"{rl.METRIC_PREFIX}cv_new_benchmark_", [shown])
            if problem:
                context.log.warning(problem)
        table = pl.concat([table, stack_rows.select(table.columns).cast(table.schema)])
    for title in notes["unmatched_titles"]:
        context.log.warning(f"occupation title with no O*NET 29.2 match, so no title gold (the prompt keeps any gold "
                            f"of its task or code): {title}")
    context.add_output_metadata(
        {
            "metrics": MetadataValue.md(
                markdown_table(
                    table.select("benchmark", "labeler_version", "metric", "value", "ci_low", "ci_high", "n"),
                    limit=60,
                )
            ),
            "title_gold_prompts": notes["title_gold_prompts"],
            "unmatched_titles": "; ".join(notes["unmatched_titles"]) or "none",
            "tac_gold_prompts": notes["tac_gold_prompts"],
            "tac_role_mapping": mapping_source,
            "occupation_ranking": ranker_source,
            "tac_unmapped_roles": ", ".join(notes["tac_unmapped_roles"]) or "none",
            "task_gold_prompts": notes["task_gold_prompts"],
            "task_gold_unmatched_prompts": ", ".join(notes["task_gold_unmatched_prompts"]) or "none",
            "soc_code_gold_prompts": notes["soc_code_gold_prompts"],
            "gold_prompts": notes["gold_prompts"],
            "labelers": ", ".join(sorted(set(labels["labeler_version"].unique().to_list()))) or "none",
        }
    )
    return table


class ValidationFloorsConfig(Config):
    """'benchmark:metric' -> minimum point estimate; empty = models.validation.DEFAULT_FLOORS. Can also be set
    as JSON in the environment variable BENCHMAP_VALIDATION_FLOORS."""

    floors: dict[str, float] = {}


def _floors(config: ValidationFloorsConfig) -> dict[str, float]:
    if config.floors:
        return dict(config.floors)
    from_env = settings().validation_floors  # BENCHMAP_VALIDATION_FLOORS, parsed once (resources/settings.py)
    if from_env:
        return dict(from_env)
    return dict(val.DEFAULT_FLOORS)


@asset_check(
    asset=labeler_validation,
    name="labeler_validation_floors",
    blocking=False,
    description="Fails when a current labeler's metric falls below its floor (default: GDPval "
    "occupation top-5 >= 0.70).",
)
def labeler_validation_floors(
    context: AssetCheckExecutionContext, config: ValidationFloorsConfig, warehouse: Warehouse
) -> AssetCheckResult:
    floors = _floors(config)
    if not warehouse.table_exists("labeler_validation"):
        return AssetCheckResult(passed=False, metadata={"message": "labeler_validation is not materialized"})
    table = warehouse.read_table("labeler_validation")
    if warehouse.table_exists(
        "prompt_task_labels"
    ):  # floors bind the labelers in use, not old cache versions
        current = warehouse.current_labeler_versions()
        table = table.join(current, on=["labeler", "labeler_version"], how="semi")
    failures, not_evaluated = val.check_floors(table, floors)
    checked = table.filter(pl.concat_str("benchmark", pl.lit(":"), "metric").is_in(list(floors)))
    return AssetCheckResult(
        passed=not failures,
        metadata={
            "floors": MetadataValue.json(floors),
            "checked": MetadataValue.md(
                markdown_table(checked.select("benchmark", "labeler_version", "metric", "value", "ci_low", "n"))
            ),
            "below_floor": MetadataValue.md(markdown_table(pl.DataFrame(failures))) if failures else "none",
            "not_evaluated": ", ".join(not_evaluated) or "none",
        },
    )
