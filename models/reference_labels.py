"""The task-level reference: an LLM judge's labels of a random sample of benchmark prompts (data/reference/).

The reference (`data/reference/SOURCES.md`, protocol in `PROTOCOL.md`) holds, per sampled prompt and pass,
whether the prompt is occupational work, the judge's 1-3 occupations and the O*NET tasks it exercises. It
serves three purposes: fitting the offline labeler's selector (models/labeling/selector.py), measuring every
labeler task by task (`task_metrics`, `labeler_reference_metrics`), and weighting the judge's labels up to
whole benchmarks (models/estimates/, with `sampling_design`).

Parsing is pure (`parse_reference` takes a file's bytes, `parse_reference_lines` its lines); the files are
read, and the vendored folder data/reference/ is located, in `resources/readers.py` (`read_reference`,
`load_reference`, `sampling_design`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from models.errors import InputError
from models.stats import wilson_ci

SPLIT_FILES = {"train": "reference_task_labels_train.jsonl", "dev": "reference_task_labels_dev.jsonl"}
DESIGN_FILE = "sampling_design.csv"

REFERENCE_SCHEMA: dict[str, pl.DataType] = {
    "split": pl.Utf8, "sample_id": pl.Utf8, "benchmark": pl.Utf8, "prompt_id": pl.Utf8,
    "prompt_hash": pl.Utf8, "annotation": pl.Utf8, "annotator": pl.Utf8, "is_work": pl.Boolean,
    "occupations": pl.List(pl.Utf8), "task_ids": pl.List(pl.Int64), "primary_task": pl.Int64,
    "confidence": pl.Utf8, "notes": pl.Utf8, "source_file": pl.Utf8, "line_number": pl.Int64,
}
_REQUIRED = ("sample_id", "benchmark", "prompt_id", "prompt_hash", "annotation", "work")


def parse_reference_lines(lines: Iterable[str], source: str | Path, split: str) -> pl.DataFrame:
    """JSONL lines of one reference file -> one row per (prompt, pass), REFERENCE_SCHEMA.

    Raises InputError naming the file and line for a line that is not a JSON object, a missing field, a
    work value other than yes/no, a task ID that is not an integer, labels on a not-work prompt, or a
    (benchmark, prompt_id, annotation) that occurs twice."""
    rows: list[dict] = []
    seen: dict[tuple[str, str, str], int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg})", path=source, line=number) from None
        if not isinstance(record, dict):
            raise InputError("a reference line must be a JSON object", path=source, line=number)
        missing = [f for f in _REQUIRED if record.get(f) in (None, "")]
        if missing:
            raise InputError(f"missing field(s) {', '.join(missing)}", path=source, line=number)
        work = str(record["work"]).strip().lower()
        if work not in {"yes", "no"}:
            raise InputError(f"work must be 'yes' or 'no', got {record['work']!r}", path=source, line=number)
        try:
            task_ids = [int(t) for t in record.get("task_ids") or []]
            primary = record.get("primary_task")
            primary = int(primary) if primary not in (None, "") else None
        except (TypeError, ValueError):
            raise InputError("task IDs must be integers", path=source, line=number,
                             record=str(record["prompt_id"])) from None
        if work == "no" and task_ids:
            raise InputError("a prompt judged not work has no tasks", path=source, line=number,
                             record=str(record["prompt_id"]))
        key = (str(record["benchmark"]), str(record["prompt_id"]), str(record["annotation"]))
        if key in seen:
            raise InputError(f"duplicate (benchmark, prompt_id, pass) {key} (first at line {seen[key]})",
                             path=source, line=number)
        seen[key] = number
        rows.append({
            "split": split, "sample_id": str(record["sample_id"]), "benchmark": key[0], "prompt_id": key[1],
            "prompt_hash": str(record["prompt_hash"]), "annotation": key[2],
            "annotator": record.get("annotator"), "is_work": work == "yes",
            "occupations": [str(o) for o in record.get("occupations") or []],
            "task_ids": list(dict.fromkeys(task_ids)), "primary_task": primary,
            "confidence": record.get("confidence"), "notes": record.get("notes"),
            "source_file": Path(source).name, "line_number": number,
        })
    return pl.DataFrame(rows, schema=REFERENCE_SCHEMA)


def split_of(filename: str) -> str:
    """The split a reference file holds, from its name (SPLIT_FILES; another file: its stem)."""
    return next((s for s, name in SPLIT_FILES.items() if name == filename), Path(filename).stem)


def parse_reference(data: bytes, source: str, split: str) -> pl.DataFrame:
    """One reference JSONL file's bytes -> REFERENCE_SCHEMA rows (`parse_reference_lines`; a BOM is dropped).

    Lines are split as a text file's lines (on \\n, \\r\\n or \\r), never on U+2028, which judge notes
    may contain."""
    return parse_reference_lines(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig"), source, split)


def parse_sampling_design(data: bytes) -> pl.DataFrame:
    """`sampling_design.csv`'s bytes -> benchmark, distinct_texts, n_train, n_dev, n_blind."""
    rows = list(csv.DictReader(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")))
    return pl.DataFrame(rows).select(
        "benchmark", *[pl.col(c).cast(pl.Int64) for c in ("distinct_texts", "n_train", "n_dev", "n_blind")])


def check_reference(reference: pl.DataFrame, onet_tasks: pl.DataFrame) -> None:
    """InputError (file and line) for a task ID that is not an O*NET task. Nothing is stored before this passes.
    (A judged prompt its benchmark no longer has is left out by the asset, as one whose text changed.)"""
    known = set(onet_tasks["task_id"].cast(pl.Int64).to_list())
    for row in reference.select("task_ids", "source_file", "line_number", "prompt_id").iter_rows(named=True):
        unknown = [t for t in row["task_ids"] if t not in known]
        if unknown:
            raise InputError(f"unknown O*NET task ID(s) {unknown}", path=row["source_file"],
                             line=row["line_number"], record=row["prompt_id"])


# --- task-level metrics ----------------------------------------------------------------------------------

def _set_scores(pred: set[int], ref: set[int]) -> tuple[float | None, float | None, float]:
    """(precision, recall, f1) of one prompt; precision is undefined for an empty prediction, recall for an
    empty reference; F1 is 1 when both are empty (agreeing that nothing is exercised) and 0 when one is."""
    hit = len(pred & ref)
    precision = hit / len(pred) if pred else None
    recall = hit / len(ref) if ref else None
    if not pred and not ref:
        return precision, recall, 1.0
    f1 = 2 * hit / (len(pred) + len(ref))
    return precision, recall, f1


METRICS = ("task_f1", "task_precision", "task_recall", "task_hit_at_1", "task_hit_at_5",
           "first_occupation_agreement", "work_accuracy")


def per_prompt_metrics(predictions: pl.DataFrame, reference: pl.DataFrame) -> pl.DataFrame:
    """One row per (reference prompt, pass) with every metric of METRICS (null where undefined).

    `predictions`: one row per prompt with prompt_hash, is_work (bool), tasks (list[int]: the label set),
    ranking (list[int]: the labeler's ranked candidates, best first, or null), first_occupation (str|null).
    Reference prompts the labeler has no prediction for are left out (and so counted by nobody). With a
    `benchmark` column (a text landed in several benchmarks has a prediction in each: labels depend on the
    benchmark's context) a reference prompt is scored on its own benchmark's prediction, else on the first
    benchmark's by name: never on whichever row came first (the metric moved when an unrelated benchmark
    sharing texts landed)."""
    if "benchmark" in predictions.columns:
        joined = (reference.with_row_index("_reference_row")
                  .join(predictions, on="prompt_hash", how="inner", suffix="_pred")
                  .sort("_reference_row", pl.col("benchmark_pred") != pl.col("benchmark"), "benchmark_pred",
                        nulls_last=True)
                  .unique(subset="_reference_row", keep="first", maintain_order=True)
                  .drop("_reference_row"))
    else:
        joined = reference.join(predictions, on="prompt_hash", how="inner", suffix="_pred")
    out: dict[str, list] = {"sample_id": [], "benchmark": [], "annotation": [], "split": [],
                            **{m: [] for m in METRICS}}
    for row in joined.iter_rows(named=True):
        pred = set(row["tasks"] or []) if row["is_work_pred"] is not False else set()
        ref = set(row["task_ids"] or [])
        precision, recall, f1 = _set_scores(pred, ref)
        ranking = row.get("ranking") or []
        ref_work = bool(row["is_work"])
        out["sample_id"].append(row["sample_id"])
        out["benchmark"].append(row["benchmark"])
        out["annotation"].append(row["annotation"])
        out["split"].append(row["split"])
        out["task_f1"].append(f1)
        out["task_precision"].append(precision)
        out["task_recall"].append(recall)
        out["task_hit_at_1"].append(float(bool(ranking) and ranking[0] in ref) if ref else None)
        out["task_hit_at_5"].append(float(bool(set(ranking[:5]) & ref)) if ref else None)
        first = row.get("first_occupation")
        out["first_occupation_agreement"].append(
            float(first is not None and first in set(row["occupations"] or [])) if ref_work else None)
        out["work_accuracy"].append(float(bool(row["is_work_pred"]) == ref_work))
    return pl.DataFrame(out, schema={"sample_id": pl.Utf8, "benchmark": pl.Utf8, "annotation": pl.Utf8,
                                     "split": pl.Utf8, **{m: pl.Float64 for m in METRICS}})


def pass_agreement(reference: pl.DataFrame) -> pl.DataFrame:
    """The ceiling: pass a scored against pass b (and b against a) on the prompts labeled twice, in the
    per_prompt_metrics layout (hit@k from the other pass's task list in ID order is not defined: null)."""
    twice = reference.filter(pl.col("sample_id").is_in(
        reference.group_by("sample_id").len().filter(pl.col("len") >= 2)["sample_id"].implode()))
    frames = []
    for mine, other in (("a", "b"), ("b", "a")):
        pred = twice.filter(pl.col("annotation") == mine).select(
            "prompt_hash", "is_work", pl.col("task_ids").alias("tasks"),
            pl.lit(None, pl.List(pl.Int64)).alias("ranking"),
            pl.col("occupations").list.first().alias("first_occupation"))
        frames.append(per_prompt_metrics(pred, twice.filter(pl.col("annotation") == other)))
    out = pl.concat(frames)
    return out.with_columns(pl.lit(None, pl.Float64).alias("task_hit_at_1"),
                            pl.lit(None, pl.Float64).alias("task_hit_at_5"))


def summarise_metrics(per_prompt: pl.DataFrame, *, n_boot: int = 1000, seed: int = 0,
                      by_benchmark: bool = True) -> pl.DataFrame:
    """Mean of each metric (over prompts and passes), pooled ('all') and per benchmark, with n (defined
    rows) and a 95% bootstrap interval that resamples prompts (sample_id: both passes of a prompt move
    together); where every prompt scored 0 (or 1) the resampling cannot move, and the interval is Wilson's over
    the prompts instead. Columns: benchmark, metric, value, ci_low, ci_high, n, n_prompts."""
    rows: list[dict] = []
    groups: list[tuple[str, pl.DataFrame]] = [("all", per_prompt)]
    if by_benchmark:
        groups += [(str(b), g) for (b,), g in per_prompt.group_by(["benchmark"], maintain_order=True)]
    rng = np.random.default_rng(seed)
    for name, group in groups:
        ids, inverse = np.unique(group["sample_id"].to_numpy(), return_inverse=True)
        draws = rng.integers(0, len(ids), size=(n_boot, len(ids))) if len(ids) else None
        for metric in METRICS:
            values = group[metric].to_numpy().astype(float)
            defined = ~np.isnan(values)
            if not defined.any():
                continue
            sums = np.bincount(inverse[defined], weights=values[defined], minlength=len(ids))
            counts = np.bincount(inverse[defined], minlength=len(ids)).astype(float)
            value = float(sums.sum() / counts.sum())
            low = high = value
            if draws is not None and len(ids) > 1:
                boot_sums = sums[draws].sum(axis=1)
                boot_counts = counts[draws].sum(axis=1)
                ok = boot_counts > 0
                stats = boot_sums[ok] / boot_counts[ok]
                low, high = (float(x) for x in np.quantile(stats, [0.025, 0.975]))
            n_prompts = int((counts > 0).sum())
            if low == high and value in (0.0, 1.0):
                # every prompt scored 0 (or 1): the resampling cannot move, yet a few dozen prompts do not show
                # a labeler never (always) right. Wilson's interval of 0 (all) of the prompts bounds the mean of
                # a metric in [0, 1] (its mean is at most the share of prompts above 0); prompts, not passes,
                # because the two passes of a prompt move together
                interval = wilson_ci(int(round(value * n_prompts)), n_prompts)
                low, high = interval.ci_low, interval.ci_high
            rows.append({"benchmark": name, "metric": metric, "value": value, "ci_low": low, "ci_high": high,
                         "n": int(counts.sum()), "n_prompts": n_prompts})
    return pl.DataFrame(rows, schema={"benchmark": pl.Utf8, "metric": pl.Utf8, "value": pl.Float64,
                                      "ci_low": pl.Float64, "ci_high": pl.Float64, "n": pl.Int64,
                                      "n_prompts": pl.Int64})


# --- labelers against the reference ------------------------------------------------------------------------

PREDICTION_SCHEMA: dict[str, pl.DataType] = {
    "labeler": pl.Utf8, "labeler_version": pl.Utf8, "benchmark": pl.Utf8, "prompt_hash": pl.Utf8,
    "is_work": pl.Boolean,
    "tasks": pl.List(pl.Int64), "ranking": pl.List(pl.Int64), "first_occupation": pl.Utf8}
CEILING_LABELER = "reference_pass_agreement"
METRIC_PREFIX = "ref_"


def predictions_from_labels(labels: pl.DataFrame, work: pl.DataFrame | None = None) -> pl.DataFrame:
    """PREDICTION_SCHEMA rows from prompt_task_labels (labeler, labeler_version, prompt_hash, task_id,
    onet_soc_code, rank) and prompt_work (is_work): the label set is the labeled tasks, the ranking their rank
    order, the first occupation that of the rank-1 task. Without a work row a prompt with labels is work. One
    prediction per benchmark a text landed in (its labels are that benchmark's)."""
    if "benchmark" not in labels.columns:
        labels = labels.with_columns(pl.lit(None, pl.Utf8).alias("benchmark"))
    if work is not None and "benchmark" not in work.columns:
        work = work.with_columns(pl.lit(None, pl.Utf8).alias("benchmark"))
    keys = ["labeler", "labeler_version", "benchmark", "prompt_hash"]
    per_prompt = (labels.sort([*keys, "rank", "task_id"])
                  .group_by(keys, maintain_order=True)
                  .agg(pl.col("task_id").unique(maintain_order=True).alias("tasks"),
                       pl.col("onet_soc_code").first().alias("first_occupation")))
    per_prompt = per_prompt.with_columns(pl.col("tasks").alias("ranking"))
    if work is not None and not work.is_empty():
        # every prompt with a decision or with labels; a labeler without work rows: labeled = work
        decisions = work.select(*keys, "is_work").unique(subset=keys, keep="first")
        every = pl.concat([decisions.select(keys), per_prompt.select(keys)]).unique(maintain_order=True)
        per_prompt = (every.join(decisions, on=keys, how="left").join(per_prompt, on=keys, how="left")
                      .with_columns(pl.coalesce("is_work", pl.col("tasks").is_not_null()).alias("is_work")))
    else:
        per_prompt = per_prompt.with_columns(pl.lit(True).alias("is_work"))
    return per_prompt.with_columns(
        pl.col("tasks").fill_null(pl.lit([], pl.List(pl.Int64))),
        pl.col("ranking").fill_null(pl.lit([], pl.List(pl.Int64))),
    ).select(list(PREDICTION_SCHEMA)).cast(PREDICTION_SCHEMA)  # type: ignore[arg-type]


def labeler_reference_metrics(predictions: pl.DataFrame, reference: pl.DataFrame, *, n_boot: int = 1000,
                              seed: int = 0, ceiling: bool = True) -> pl.DataFrame:
    """Every labeler of `predictions` (PREDICTION_SCHEMA) against the reference, per benchmark and pooled,
    plus the judge's two passes against each other as the ceiling row (labeler CEILING_LABELER).
    Columns: benchmark, labeler, labeler_version, metric ('ref_' + METRICS), value, ci_low, ci_high, n."""
    frames: list[pl.DataFrame] = []
    for (labeler, version), group in predictions.group_by(["labeler", "labeler_version"], maintain_order=True):
        per_prompt = per_prompt_metrics(group.drop("labeler", "labeler_version"), reference)
        if per_prompt.is_empty():
            continue
        frames.append(summarise_metrics(per_prompt, n_boot=n_boot, seed=seed).with_columns(
            pl.lit(labeler).alias("labeler"), pl.lit(version).alias("labeler_version")))
    if ceiling:
        agreement = pass_agreement(reference)
        if not agreement.is_empty():
            frames.append(summarise_metrics(agreement, n_boot=n_boot, seed=seed).with_columns(
                pl.lit(CEILING_LABELER).alias("labeler"), pl.lit("two independent passes").alias("labeler_version")))
    if not frames:
        return pl.DataFrame(schema={"benchmark": pl.Utf8, "labeler": pl.Utf8, "labeler_version": pl.Utf8,
                                    "metric": pl.Utf8, "value": pl.Float64, "ci_low": pl.Float64,
                                    "ci_high": pl.Float64, "n": pl.Int64})
    return (pl.concat(frames)
            .with_columns((pl.lit(METRIC_PREFIX) + pl.col("metric")).alias("metric"))
            .select("benchmark", "labeler", "labeler_version", "metric", "value", "ci_low", "ci_high", "n"))


# --- a new benchmark's figures: the benchmark is the unit ----------------------------------------------------

def predictions_from_out_of_fold(prompts: Sequence[dict]) -> pl.DataFrame:
    """PREDICTION_SCHEMA rows (without labeler columns) from a fit's cross-fitted labels of the judged texts
    (selector_oof.json / neighbour_oof.json `prompts`: benchmark, prompt_hash, is_work, labels [[task, code,
    p], ...] in rank order): the label set, its rank order, the rank-1 label's occupation."""
    return pl.DataFrame(
        [{"benchmark": p["benchmark"], "prompt_hash": p["prompt_hash"], "is_work": bool(p["is_work"]),
          "tasks": [int(t) for t, _, _ in p["labels"]], "ranking": [int(t) for t, _, _ in p["labels"]],
          "first_occupation": p["labels"][0][1] if p["labels"] else None} for p in prompts],
        schema={"benchmark": pl.Utf8, "prompt_hash": pl.Utf8, "is_work": pl.Boolean, "tasks": pl.List(pl.Int64),
                "ranking": pl.List(pl.Int64), "first_occupation": pl.Utf8})


def benchmark_resampled_interval(per_prompt: pl.DataFrame, metric: str, *, n_boot: int = 1000,
                                 seed: int = 0) -> tuple[float, float] | None:
    """95% interval of a metric's pooled mean (over prompt-passes) when the *benchmarks* are the sample:
    benchmarks drawn with replacement, each with all its prompt-passes. What a figure for benchmarks that
    arrive without judged texts needs: resampling prompts treats the 29 mirrored benchmarks as the only ones
    there are, and a rehearsal of the blind check (three benchmarks held out) found the score set by which
    benchmarks they were (SD 0.22 in task F1 between benchmarks), 3-5 times the prompts' interval."""
    rows = per_prompt.filter(pl.col(metric).is_not_null() & pl.col(metric).is_not_nan())
    if rows.is_empty():
        return None
    names, inverse = np.unique(rows["benchmark"].to_numpy(), return_inverse=True)
    if len(names) < 2:
        return None
    sums = np.bincount(inverse, weights=rows[metric].to_numpy(), minlength=len(names))
    counts = np.bincount(inverse, minlength=len(names)).astype(float)
    draws = np.random.default_rng(seed).integers(0, len(names), size=(n_boot, len(names)))
    stats = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    low, high = np.quantile(stats, [0.025, 0.975])
    return float(low), float(high)


def with_benchmark_spread(rows: pl.DataFrame, per_prompt: pl.DataFrame, prefix: str, labelers: Sequence[str],
                          *, n_boot: int = 1000, seed: int = 0) -> tuple[pl.DataFrame, str | None]:
    """(rows, problem). `rows` (labeler_validation rows) with every pooled `prefix`<metric> row given the
    benchmark-resampled interval, and for the `labelers` (one is enough: the rows of a new benchmark are the
    same for the selector and the step) a row per benchmark beside it (that benchmark's prompt-passes, their own
    bootstrap over prompts): how far one new benchmark's figure may land from the mean. All or nothing: when
    `per_prompt` does not reproduce every pooled figure (a stale file), `rows` come back unchanged and
    `problem` says so."""
    pooled = rows.filter((pl.col("benchmark") == "all") & pl.col("metric").str.starts_with(prefix))
    if per_prompt.is_empty() or pooled.is_empty():
        return rows, None
    intervals: dict[str, tuple[float, float]] = {}
    for metric in sorted({m[len(prefix):] for m in pooled["metric"].to_list()} & set(METRICS)):
        defined = per_prompt.filter(pl.col(metric).is_not_null() & pl.col(metric).is_not_nan())[metric]
        published = pooled.filter(pl.col("metric") == prefix + metric)["value"].to_list()
        interval = benchmark_resampled_interval(per_prompt, metric, n_boot=n_boot, seed=seed)
        # the fit file keeps 4 decimals
        if interval is None or any(abs(float(defined.mean()) - v) > 5e-5 + 1e-9 for v in published):  # type: ignore[arg-type]
            return rows, (f"the cross-validated labels do not reproduce the published {prefix}{metric} "
                          f"({float(defined.mean()):.4f} against {published[0]:.4f}): the new-benchmark rows keep "
                          "their intervals over prompts and get no per-benchmark rows (a stale out-of-fold file?)")
        intervals[metric] = interval
    per_benchmark = summarise_metrics(per_prompt, n_boot=n_boot, seed=seed).filter(pl.col("benchmark") != "all")
    out: list[dict] = []
    added: list[dict] = []
    for row in rows.iter_rows(named=True):
        metric = row["metric"][len(prefix):] if row["metric"].startswith(prefix) else None
        if row["benchmark"] == "all" and metric in intervals:
            row = {**row, "ci_low": intervals[metric][0], "ci_high": intervals[metric][1]}
            if row["labeler"] in labelers:
                added += [{**row, "benchmark": b["benchmark"], "value": b["value"], "ci_low": b["ci_low"],
                           "ci_high": b["ci_high"], "n": b["n"]}
                          for b in per_benchmark.filter(pl.col("metric") == metric).iter_rows(named=True)]
        out.append(row)
    return pl.DataFrame(out + added, schema=rows.schema), None
