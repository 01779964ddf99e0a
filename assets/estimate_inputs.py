"""The headline estimates' inputs (assets/estimates.py), read from the warehouse in one place: the texts, the
published labels (and the labeler's cross-fitted ones for the reference texts), the judge's labels (the user's
own judge sample where one was drawn, else the reference: resources.readers.reference_folder), task keys and
hours, index membership."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from models import coverage as cov
from models import estimates as es
from resources.dagster_resources import Warehouse
from resources.readers import load_reference, read_labeler_oof


def read_reference_sample(folder: Path | None = None, dev_pass: str = "a") -> pl.DataFrame:
    """The reference's judge labels (`resources.readers.reference_folder()` by default) as judge-sample rows
    (`models.estimates.reference_sample_rows` says which pass and why)."""
    return es.reference_sample_rows(load_reference(folder), dev_pass)


def published_labels(warehouse: Warehouse, has_p: bool) -> tuple[pl.DataFrame, str | None, str | None, set[str]]:
    """The labels the estimates read: each benchmark's by its preferred labeler (`cov.select_labeler`: a run that
    labeled a few benchmarks with an LLM keeps the others' offline labels, which the estimates once dropped for
    the LLM's alone), the name of the choice (several joined by `cov.MIXED_LABELERS`), the version whose labels
    have cross-fitted twins (the offline labeler's, when chosen anywhere) and the benchmarks another labeler
    labeled (their reference texts keep that labeler's labels)."""
    everyone = warehouse.published_task_labels(None, has_p)
    labels, name = cov.select_labeler(everyone)
    versions = dict(warehouse.published_labelers().iter_rows())
    offline = labels.filter(pl.col("labeler") == "offline").height > 0
    version = versions.get("offline") if offline else versions.get(name) if name else None
    others = labels.filter(pl.col("labeler") != "offline")["benchmark"].unique().to_list() if offline else []
    return labels.drop("labeler"), name, version, set(others)


def with_out_of_fold_labels(labels: pl.DataFrame, labeler_version: str | None, sampled: pl.DataFrame,
                            log: object = None) -> pl.DataFrame:
    """The published labels with the reference texts' labels swapped for the labeler's cross-fitted ones
    (models/labeling/neighbour_oof.json for the neighbour stack's labels, else selector_oof.json;
    `models.estimates.with_out_of_fold_labels` says why and when)."""
    if labeler_version is None or not labeler_version.startswith("offline-calibrated") or sampled.is_empty():
        return labels
    out_of_fold = read_labeler_oof(labeler_version)
    if out_of_fold is None:
        return labels
    swapped, problem = es.with_out_of_fold_labels(labels, labeler_version, sampled, out_of_fold)
    if problem and log is not None:
        log.warning(problem)
    return swapped


def read_judge_rows(warehouse: Warehouse, prompts: pl.DataFrame, dev_pass: str = "a") -> pl.DataFrame:
    """The judge's labels: the user's own judge sample where one was drawn, else the reference (its
    development split's pass `dev_pass`); only texts that are in the warehouse count as sampled (the blind
    split and other benchmarks are not). benchmark, prompt_hash, task_id (null: a not-work text), source."""
    own = pl.DataFrame(schema={"benchmark": pl.Utf8, "prompt_hash": pl.Utf8, "task_id": pl.Int64})
    own_benchmarks: list[str] = []
    if warehouse.table_exists("judge_sample_labels"):
        own = warehouse.judge_sample_task_keys()
        own_benchmarks = sorted(own["benchmark"].unique().to_list())
    reference = read_reference_sample(dev_pass=dev_pass)
    reference = reference.filter(~pl.col("benchmark").is_in(own_benchmarks))
    judge_rows = pl.concat(
        [own.with_columns(pl.lit("judge_sample").alias("source")),
         reference.select("benchmark", "prompt_hash", "task_id").with_columns(pl.lit("reference").alias("source"))],
        how="vertical_relaxed",
    )
    # only texts that are in the warehouse count as sampled (the blind split and other benchmarks are not)
    known = prompts.select("benchmark", "prompt_hash").unique()
    judge_rows = judge_rows.join(known, on=["benchmark", "prompt_hash"])
    return judge_rows


def read_inputs(warehouse: Warehouse, log: object = None, dev_pass: str = "a") -> dict[str, object]:
    """Texts, labeler pairs, judge pairs (the user's own judge sample where one was drawn, else the reference),
    task keys and hours, index membership."""
    prompts = warehouse.prompt_keys()
    labeled = warehouse.table_exists("prompt_task_labels")
    has_p = labeled and "p_exercised" in warehouse.table_columns("prompt_task_labels")
    if labeled:
        labels, labeler, version, not_offline = published_labels(warehouse, has_p)
    else:
        labeler = version = None
        not_offline: set[str] = set()
        labels = pl.DataFrame(schema={"benchmark": pl.Utf8, "prompt_hash": pl.Utf8, "onet_soc_code": pl.Utf8,
                                      "task_id": pl.Int64, "p_exercised": pl.Float64})
    judge_rows = read_judge_rows(warehouse, prompts, dev_pass)
    published = labels
    # only the offline labeler's labels have cross-fitted twins (an LLM's were never fitted on the judge's)
    reference = judge_rows.filter((pl.col("source") == "reference") & ~pl.col("benchmark").is_in(sorted(not_offline)))
    labels = with_out_of_fold_labels(labels, version, reference, log)
    tasks = warehouse.onet_task_keys()
    task_hours = warehouse.task_hours()
    weighted = cov.task_hour_weights(tasks, task_hours).select(*cov.TASK_KEY, "task_hours_used")
    membership = None
    if warehouse.table_exists("benchmark_index_membership"):
        membership = warehouse.index_membership()
    return {
        "prompts": prompts,
        "labels": labels,
        "published_labels": published,  # labels_as_truth counts these (no out-of-fold swap)
        "labeler": labeler,
        "labeler_version": version,
        "has_p": has_p,
        "judge_rows": judge_rows,
        "tasks": tasks,
        "task_hours": weighted,
        "membership": membership,
    }
