"""Labels: every benchmark prompt -> the O*NET tasks it exercises.

- `task_search_index` (group "reference"): the offline TaskIndex built once from the reference tables and
  pickled next to the warehouse (data/warehouse/task_index/), its path recorded in a one-row table keyed by
  O*NET version + index version, so benchmark partitions load it instead of rebuilding it.
- `prompt_task_labels` (group "labels", partitioned by benchmark): labels through the label cache (the loop
  in models/labeling/cache.py, the store in resources/label_cache.py): only prompts whose hash has no cached
  labels for this (O*NET version, labeler, model, template version) reach the labeler; each batch is
  committed as it completes; failures go to `label_failures` and are retried next run. Runs in the "llm_api"
  concurrency pool, whichever labeler is configured: a decorator argument is fixed when this module is
  imported, and the labeler is only known from the settings when the resource is built. The pool bounds
  labeling steps across all runs of the instance (dagster.yaml `pools.default_limit`, or `dagster instance
  concurrency set llm_api N`); an offline step holds a slot too, which costs it nothing while fewer labeling
  steps than the limit run at once (a deployment running more offline steps at once raises the limit).
- the neighbour step (issue 25, models/labeling/stacking.py; resources/neighbour_step.py): for a benchmark
  with judged texts (its own judge sample in judge_sample_labels, else the reference's texts of it:
  resources.readers.reference_folder), the selector's labels are restacked with the votes of each text's nearest judged texts of the benchmark (never the text itself);
  a benchmark without judged texts keeps the selector's labels. The label cache keeps the selector's labels;
  the step is recomputed on every run (a sparse TF-IDF product per benchmark) and its version is appended to
  labeler_version.
- how well labelers do against humans and each other: assets/label_validation.py.
"""

import dataclasses
import hashlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import polars as pl
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetIn,
    AssetOut,
    DataVersion,
    Failure,
    MetadataValue,
    Output,
    asset,
    asset_check,
    multi_asset,
)

from assets.partitions import benchmark_partitions
from assets.written_with_failures import RETRY_GIVEN_UP_TAG, max_label_runs, written_with_failures
from models.labeling import cache as lc
from models.labeling.base import PromptRecord
from models.markdown import markdown_table as md_table
from models.sources import ONET_VERSION
from resources import label_pool, task_index
from resources.dagster_resources import LabelerResource, Warehouse
from resources.io_manager import add_partition_metadata
from resources.neighbour_step import neighbour_step

GROUP = "labels"
INDEX_GROUP = "reference"
PARTITIONED = {"partition_expr": "benchmark"}
LLM_POOL = "llm_api"
COMPLETE_CHECK = "prompt_task_labels_complete"
# the offline labeler (scikit-learn) by default, an LLM judge through the openai client when configured
LABEL_KINDS = {"scikit-learn", "openai", "duckdb"}


# --- the task search index ----------------------------------------------------------------------------------


@asset(
    group_name=INDEX_GROUP,
    ins={
        "onet_tasks": AssetIn(),
        "onet_occupations": AssetIn(),
        "onet_job_titles": AssetIn(),
        "onet_technology_skills": AssetIn(),
    },
    code_version=task_index.offline_code_fingerprint(),
    kinds={"scikit-learn", "duckdb"},
    description="The offline labeler's TaskIndex, built once from the O*NET reference tables and pickled "
    "next to the warehouse; one row: onet_version, index_version, path, bytes and build seconds "
    "(load_seconds is not measured: empty).",
)
def task_search_index(
    context: AssetExecutionContext,
    warehouse: Warehouse,
    onet_tasks: pl.DataFrame,
    onet_occupations: pl.DataFrame,
    onet_job_titles: pl.DataFrame,
    onet_technology_skills: pl.DataFrame,
) -> Output[pl.DataFrame]:
    version = task_index.index_version()
    tables = {"onet_tasks": onet_tasks, "onet_occupations": onet_occupations, "onet_job_titles": onet_job_titles,
              "onet_technology_skills": onet_technology_skills}
    path = warehouse.task_index_path(version)
    dwas = task_index.task_dwas_frame()
    inputs = task_index.inputs_digest(tables, dwas)  # ~0.05 s
    # run_all's label worker may have built it from the O*NET files meanwhile: taken only when built from
    # exactly these inputs (resources/label_pool.py)
    prebuilt = label_pool.take_prebuilt(inputs) if label_pool.has_prebuilt() else None
    started = time.perf_counter()
    if prebuilt is not None:
        task_index.adopt_prebuilt(prebuilt[0], path)
        # this process needs it too (the labeler's cache key, the neighbour step): loaded while the next steps
        # run, not when the partitions start and the workers wait for it (~1.2 s)
        task_index.load_in_background(path)
        digest, build_s, dump_s = prebuilt[1], prebuilt[2], time.perf_counter() - started
        context.log.info("task index: built by a label worker from the same inputs while the reference ran")
    else:
        index = task_index.build_index(tables, dwas)
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        # atomic: a partition never loads a half-written index; this process's partitions reuse the object
        digest = task_index.save_index(index, path)
        dump_s = time.perf_counter() - started
    label_pool.preload(path)  # run_all's label workers (when started) load it while the next steps run
    row = pl.DataFrame(
        [
            {
                "onet_version": ONET_VERSION,
                "index_version": version,
                "path": str(path),
                "n_tasks": onet_tasks.height,
                "bytes": path.stat().st_size,
                "sha256": digest,
                "build_seconds": round(build_s, 3),
                "load_seconds": None,  # not measured: unpickling it only to time it cost a second a run
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        ],
        schema_overrides={"load_seconds": pl.Float64},
    )
    context.log.info(
        f"task index: built in {build_s:.2f}s, pickled {path.stat().st_size / 1e6:.1f} MB in {dump_s:.2f}s"
    )
    context.add_output_metadata(
        {
            "build_seconds": round(build_s, 3),
            "dump_seconds": round(dump_s, 3),
            "bytes": path.stat().st_size,
            "path": MetadataValue.path(str(path)),
            "index_version": version,
        }
    )
    # its data version is what it is built from (the build is a pure function of the code and these inputs), not
    # Dagster's default of every reference input's version: a new OEWS file changed the index's version and the
    # landing sensor relabeled all 29 partitions for an index whose content had not changed (a probe, 2026-12-08)
    return Output(row, data_version=DataVersion(hashlib.sha256(f"{version}\0{inputs}".encode()).hexdigest()))


def load_task_index(warehouse: Warehouse, log: Any = None) -> tuple[Any, str, float]:
    """The TaskIndex for this O*NET version: the stored pickle when present, else built from the reference
    tables (logged as a warning). Returns (index, origin 'pickle'|'built', seconds)."""
    return warehouse.load_task_index(log.warning if log is not None else None)


# --- labels -------------------------------------------------------------------------------------------------


def prompt_records(prompts: pl.DataFrame) -> list[PromptRecord]:
    return [
        PromptRecord(b, p, h, t)
        for b, p, h, t in prompts.select("benchmark", "prompt_id", "prompt_hash", "prompt").iter_rows()
    ]


def markdown_table(df: pl.DataFrame, limit: int = 20) -> str:
    """The label assets' metadata tables (models/markdown.py): "None." when empty, text cut at 200 chars."""
    return md_table(df, max_rows=limit, max_chars=200, empty="None.")


@multi_asset(
    group_name=GROUP,
    partitions_def=benchmark_partitions,
    outs={
        "prompt_task_labels": AssetOut(
            metadata=PARTITIONED,
            kinds=LABEL_KINDS,
            is_required=False,  # a subset run selects one of the two
            description="The O*NET tasks each prompt of one benchmark exercises (rank 1 = most clearly), "
            "with the labeler's calibrated p_exercised; none for a prompt that is not occupational work. "
            "Through the label cache: a prompt whose hash was labeled before (same O*NET version, labeler, "
            "model, template) is never labeled again. Failures are in label_failures, never here.",
        ),
        "prompt_work": AssetOut(
            metadata=PARTITIONED,
            kinds=LABEL_KINDS,
            is_required=False,
            description="The labeler's work decision per prompt of one benchmark: is_work, p_work (a "
            "not-work prompt has no prompt_task_labels rows).",
        ),
    },
    ins={"benchmark_prompts": AssetIn()},
    deps=[task_search_index],
    pool=LLM_POOL,  # for every labeler: the settings are not read at import time (module docstring)
    can_subset=True,  # a run may select prompt_task_labels alone; both come from the same labeling pass
)
def prompt_task_labels(
    context: AssetExecutionContext,
    warehouse: Warehouse,
    labeler: LabelerResource,
    benchmark_prompts: pl.DataFrame,
) -> Iterator[Output[pl.DataFrame]]:
    selected = set(context.op_execution_context.selected_output_names)
    benchmarks = context.partition_keys  # one, or several when run_all runs a range of partitions in one run
    built: dict[str, Any] = {}  # the task index and the labeler, loaded once per step (not per partition)
    records = {b: prompt_records(benchmark_prompts.filter(pl.col("benchmark") == b)) for b in benchmarks}
    stepped: dict[str, StepOutcome] = {}  # benchmark -> its neighbour step's result, or the error it raised

    def step_now(benchmark: str, labels_by_hash: dict) -> None:
        # a benchmark's neighbour step as soon as its labels are written, while the label workers label the next
        # ones (after the last one it ran on one core, both workers idle); its error is raised in its turn below
        try:
            stepped[benchmark] = neighbour_step(warehouse, benchmark, records[benchmark], labels_by_hash,
                                                built["impl"], built["index"])
        except Exception as exc:  # noqa: BLE001 - raised by _label_partition, after every label is written
            stepped[benchmark] = exc

    labeled = _label_benchmarks(context, warehouse, labeler, records, built, step_now,
                                max_label_runs(context.run.tags))
    parts = [_label_partition(context, warehouse, records[benchmark], benchmark, built, labeled.get(benchmark),
                              stepped.get(benchmark)) for benchmark in benchmarks]
    if len(parts) == 1:
        (frame, label_meta), (work, work_meta) = parts[0]
        yield from _selected_outputs(selected, Output(frame, "prompt_task_labels", metadata=label_meta),
                                     Output(work, "prompt_work", metadata=work_meta))
    else:
        for position, output in enumerate(("prompt_task_labels", "prompt_work")):
            if output in selected:  # each partition's record: its own counts
                add_partition_metadata(context, output, {b: part[position][1]
                                                         for b, part in zip(benchmarks, parts, strict=True)})
        yield from _selected_outputs(
            selected,
            Output(pl.concat([p[0][0] for p in parts], how="vertical_relaxed"), "prompt_task_labels"),
            Output(pl.concat([p[1][0] for p in parts], how="vertical_relaxed"), "prompt_work"))
    # written, and still not done: the run fails, its labels kept (assets/written_with_failures.py); a prompt
    # given up is not done either (a probe: the landing sensor's last retry asked nothing and ended green)
    failed = {b: labeled[b][1] for b in benchmarks if b in labeled and labeled[b][1].n_failed + labeled[b][1].n_given_up}
    if failed:
        stats = list(failed.values())
        raise written_with_failures(
            "; ".join(_failed_line(b, len(records[b]), s) for b, s in failed.items())
            + ". The labels of the other prompts are written; the failures are in label_failures. "
            + (f"The next run asks for a prompt that has failed in fewer than {lc.MAX_LABEL_RUNS} runs again; "
               if any(s.n_failed for s in stats) else "")
            + f"`python -m pipelines.run_all --force` (or a run tagged {RETRY_GIVEN_UP_TAG}=1) asks for every one",
            {b: s.n_failed + s.n_given_up for b, s in failed.items()})


def _clipped(text: str, limit: int = 240) -> str:
    """A server's error within `limit` characters, its end kept (where the labeler says "(after 6 attempts)")."""
    return text if len(text) <= limit else f"{text[:limit - 60]} ... {text[-55:]}"


def _failed_line(benchmark: str, n_prompts: int, stats: lc.LabelingStats) -> str:
    """'3 of 12 prompts of 'b' have no labels: 2 failed in this run (first error: ...), 1 given up ...'."""
    parts = []
    if stats.n_failed:
        first = _clipped(stats.failures[0]["error"]) if stats.failures else "not kept"
        parts.append(f"{stats.n_failed} failed in this run (first error: {first})")
    if stats.n_given_up:
        parts.append(f"{stats.n_given_up} given up after failing in {lc.MAX_LABEL_RUNS} runs, not asked again")
    return (f"{stats.n_failed + stats.n_given_up} of {n_prompts} prompts of {benchmark!r} have no labels: "
            + ", ".join(parts))


# a benchmark's neighbour step: (label sets, labeler_version, metadata), or the error it raised
StepOutcome = tuple[dict, str, dict[str, Any]] | Exception
LabeledPartition = tuple[tuple[pl.DataFrame, dict[str, Any]], tuple[pl.DataFrame, dict[str, Any]]]


def _label_benchmarks(context: AssetExecutionContext, warehouse: Warehouse, labeler: LabelerResource,
                      records: dict[str, list[PromptRecord]], built: dict[str, Any],
                      labeled_one: Callable[[str, dict], None] | None = None,
                      max_runs: int | None = lc.MAX_LABEL_RUNS) -> dict[str, tuple[dict, lc.LabelingStats]]:
    """benchmark -> (label sets by hash, stats) through the label cache, for every benchmark with prompts;
    `labeled_one(benchmark, label sets by hash)` is called as each benchmark's labels are written; a prompt
    that failed in `max_runs` runs is not asked again (None: every failed prompt is).

    Under the labeling lock of all of them: each benchmark's cache read (`plan_labeling`) first, then, with
    the offline labeler and enough texts, every benchmark's batches sent to the worker processes at once
    (resources/label_pool.py) while this process writes each batch as it comes back, benchmark by benchmark
    (one commit per batch, as `label_with_cache`). The labels are the in-process loop's: the same batches,
    each benchmark on one worker. A text shared with an earlier benchmark of the range is planned after
    the earlier one's writes (its plan is read again, as the one-by-one loop reads it): the LLM asks for it
    once; the offline labeler labels it again under this benchmark's context when the two differ (the cache
    holds one label set per text: docs/offline_labeler.md)."""
    todo = [b for b, prompts in records.items() if prompts]
    if not todo:
        return {}
    cache = warehouse.label_cache()
    if not built:
        index, origin, index_s = load_task_index(warehouse, context.log)
        context.log.info(f"task index from {origin} in {index_s:.2f}s")
        built.update(index=index, origin=origin, index_s=index_s, impl=labeler.build(index))
    impl = built["impl"]
    options = {"batch_size": labeler.batch_size, "progress_every": labeler.progress_every,
               "log_fn": context.log.info}
    out: dict[str, tuple[dict, lc.LabelingStats]] = {}
    with lc.labeling_lock(cache, [p for b in todo for p in records[b]], context.log.info):
        plans = {b: lc.plan_labeling(records[b], impl, cache, ONET_VERSION, max_runs=max_runs) for b in todo}
        earlier: set[str] = set()
        shared: set[str] = set()  # benchmarks whose plan overlaps an earlier one's: planned again later
        for b in todo:
            hashes = {p.prompt_hash for p in plans[b].todo}
            if hashes & earlier:
                shared.add(b)
            earlier |= hashes
        n_todo = sum(len(plans[b].todo) for b in todo if b not in shared)
        index_path = warehouse.stored_task_index_path() if labeler.kind == "offline" else None
        with label_pool.pool_for(n_todo if index_path is not None else 0) as pool:
            futures: dict[str, list] = {}
            if pool is not None and index_path is not None and _workers_ready(context, pool, index_path, impl):
                futures = pool.label([(b, records[b], plans[b].batches(labeler.batch_size)) for b in todo
                                      if b not in shared and plans[b].todo])
                context.log.info(f"labeling {n_todo:,} prompts of {len(futures)} benchmarks in "
                                 f"{len(pool.workers)} worker processes")
            for position, b in enumerate(todo):
                plan = plans[b]
                if b in shared:  # after the earlier benchmarks' writes, as the one-by-one loop reads it
                    plan = lc.plan_labeling(records[b], impl, cache, ONET_VERSION, max_runs=max_runs)
                try:
                    out[b] = lc.run_plan(plan, impl, cache, **options,
                                         outcomes_of=label_pool.outcomes_from(futures[b]) if b in futures else None)
                    if labeled_one is not None:
                        labeled_one(b, out[b][0])
                except label_pool.LabelWorkerError as exc:
                    kept = _write_finished(impl, cache, plans, futures, todo[position + 1:], labeler.batch_size)
                    label_pool.cancel(futures)
                    raise Failure(description=f"labeling {b!r} failed: {exc}. Every batch labeled before "
                                  f"is committed ({kept} more batches of later benchmarks written); a rerun "
                                  "labels the rest.") from exc
                except BaseException:
                    label_pool.cancel(futures)
                    raise
            if futures:  # label validation, later in this process, reuses them as after in-process labeling
                from models.labeling.offline.labeler import adopt_contexts

                adopt_contexts(built["index"], pool.contexts())
    return out


def _workers_ready(context: AssetExecutionContext, pool: Any, index_path: Any, impl: Any) -> bool:
    """Whether the pool's workers built this process's labeler; else label here (said in the log)."""
    try:
        pool.check(index_path, impl)
        return True
    except label_pool.LabelWorkerError as exc:
        context.log.warning(f"labeling in this process: the worker processes are not usable ({exc})")
        return False


def _write_finished(impl: Any, cache: Any, plans: dict[str, lc.LabelingPlan], futures: dict[str, list],
                    later: list[str], batch_size: int) -> int:
    """After a worker failed: commit the batches of later benchmarks the workers finished (nothing done is
    lost); returns how many."""
    written = 0
    for b in later:
        done = label_pool.finished_prefix(futures.get(b, []))
        if not done:
            continue
        batches = plans[b].batches(batch_size)[:len(done)]
        part = dataclasses.replace(plans[b], todo=[p for batch in batches for p in batch])
        lc.run_plan(part, impl, cache, batch_size=batch_size, outcomes_of=lambda _b, d=done: iter(d))
        written += len(done)
    return written


def _label_partition(context: AssetExecutionContext, warehouse: Warehouse, prompts: list[PromptRecord],
                     benchmark: str, built: dict[str, Any], labeled: tuple[dict, lc.LabelingStats] | None,
                     stepped: StepOutcome | None) -> LabeledPartition:
    """((labels, their metadata), (work decisions, their metadata)) of one benchmark from its labeling
    (`_label_benchmarks`) and its neighbour step (`stepped`: its result, or the error it raised, raised here);
    raises Failure when every prompt of it failed to label."""
    if not prompts or labeled is None:
        empty = {"n_prompts": 0, "labeler_calls": 0}
        return ((pl.DataFrame(schema=lc.LABEL_COLUMNS), empty), (pl.DataFrame(schema=lc.WORK_COLUMNS), empty))
    cache = warehouse.label_cache()
    origin, index_s, impl = built["origin"], built["index_s"], built["impl"]
    stats = labeled[1]
    if isinstance(stepped, Exception):
        raise stepped
    assert stepped is not None, "every labeled benchmark is stepped (prompt_task_labels' step_now)"
    labels_by_hash, version, neighbour_meta = stepped
    frame = lc.labels_frame(prompts, labels_by_hash, impl.name, version)
    work = lc.work_frame(prompts, labels_by_hash, impl.name, version)
    failures = pl.DataFrame(
        stats.failures,
        schema={
            "benchmark": pl.Utf8,
            "prompt_id": pl.Utf8,
            "prompt_hash": pl.Utf8,
            "error": pl.Utf8,
            "attempts": pl.Int64,
        },
    )
    unlabeled = len({p.prompt_hash for p in prompts} - set(labels_by_hash))
    if stats.n_failed and stats.n_labeled == 0 and stats.n_cached == 0:
        first = stats.failures[0]
        raise Failure(
            description=f"every prompt of {benchmark!r} failed to label ({stats.n_failed} distinct prompts; "
            f"first error: {first['error']}). Failures are in label_failures and will be retried; the "
            "partition's stored labels are left unchanged.",
            metadata={**stats.as_metadata(), "failures_preview": MetadataValue.md(markdown_table(failures))},
        )
    open_failures = cache.open_failures(benchmark, impl.name, impl.labeler_version)
    if stats.n_failed or stats.n_given_up:
        context.log.warning(
            f"{stats.n_labeled} labeled, {stats.n_failed} failed (see label_failures); failed prompts are "
            f"retried by the next plain run (at most {lc.MAX_LABEL_RUNS} runs each"
            + (f"; {stats.n_given_up} not asked again after {lc.MAX_LABEL_RUNS} failed runs)" if stats.n_given_up
               else ")"))
    labeler_stats = getattr(impl, "stats", None)
    metadata = {
            **stats.as_metadata(),
            "labeler": impl.name,
            "labeler_version": version,
            **neighbour_meta,
            "onet_version": ONET_VERSION,
            "task_index_origin": origin,
            "task_index_seconds": round(index_s, 3),
            "prompts_without_labels": unlabeled,
            "open_label_failures": open_failures,
            "labels_per_prompt": round(frame.height / max(1, len(prompts) - unlabeled), 2),
            "failures_preview": MetadataValue.md(markdown_table(failures)),
            "progress_log": MetadataValue.md(
                "\n".join(f"- {m}" for m in stats.progress) or "nothing to label"
            ),
            **(
                {"labeler_stats": MetadataValue.json(labeler_stats.as_dict())}
                if hasattr(labeler_stats, "as_dict")
                else {}
            ),
        }
    n_not_work = int((~work["is_work"]).sum()) if work.height else 0
    metadata["prompts_not_work"] = n_not_work
    return ((frame, metadata),
            (work, {"n_prompts": work.height, "prompts_not_work": n_not_work, "labeler_version": version}))


def _selected_outputs(selected: set[str], *outputs: Output) -> Iterator[Output]:
    """The outputs a (possibly subset) run asked for."""
    return (o for o in outputs if o.output_name in selected)


@asset_check(
    asset="prompt_task_labels",
    name="prompt_task_labels_valid",
    blocking=False,
    description="Warehouse-wide: every labeled (task_id, onet_soc_code) is in onet_tasks, no duplicate "
    "labels, every labeled prompt has a rank-1 task, and every label belongs to a "
    "current prompt (same prompt_hash).",
)
def prompt_task_labels_valid(context: AssetCheckExecutionContext, warehouse: Warehouse) -> AssetCheckResult:
    missing = [
        t for t in ("prompt_task_labels", "onet_tasks", "benchmark_prompts") if not warehouse.table_exists(t)
    ]
    if missing:
        return AssetCheckResult(passed=False, metadata={"missing_tables": ", ".join(missing)})
    counts = warehouse.label_problem_counts()
    outstanding = warehouse.label_cache().outstanding_failures()
    return AssetCheckResult(
        passed=all(v == 0 for v in counts.values()),
        metadata={**{k: int(v) for k, v in counts.items()}, "outstanding_label_failures": outstanding},
    )


@asset_check(
    asset="prompt_task_labels",
    name=COMPLETE_CHECK,
    blocking=False,
    description="Warehouse-wide: every current prompt is labeled, i.e. has a work decision (prompt_work) for its "
    "text. Fails while a prompt has none, or while label_failures holds prompts of the current benchmarks that "
    "have none (a plain run_all retries them, up to MAX_LABEL_RUNS failed runs per prompt; an earlier labeler "
    "version's failure on a prompt labeled since is history); the metadata counts both per "
    "benchmark and shows the last errors.",
)
def prompt_task_labels_complete(context: AssetCheckExecutionContext, warehouse: Warehouse) -> AssetCheckResult:
    if not warehouse.table_exists("benchmark_prompts"):
        return AssetCheckResult(passed=True, metadata={"open_label_failures": 0, "prompts_without_labels": 0})
    undecided = warehouse.undecided_prompts()
    open_rows = (warehouse.open_label_failures() if warehouse.table_exists("label_failures")
                 else pl.DataFrame(schema={"benchmark": pl.Utf8, "runs": pl.Int64}))
    per_benchmark = open_rows.group_by("benchmark").len().sort("benchmark")
    return AssetCheckResult(
        passed=open_rows.is_empty() and undecided.is_empty(),
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "prompts_without_labels": int(undecided["n"].sum()) if undecided.height else 0,
            "without_labels_by_benchmark": MetadataValue.md(markdown_table(undecided)),
            "open_label_failures": open_rows.height,
            "given_up": int((open_rows["runs"] >= lc.MAX_LABEL_RUNS).sum()) if open_rows.height else 0,
            "by_benchmark": MetadataValue.md(markdown_table(per_benchmark)),
            "failures_preview": MetadataValue.md(markdown_table(open_rows)),
        },
    )
