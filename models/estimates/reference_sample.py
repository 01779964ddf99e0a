"""The task-level reference (vendored, or the landing zone's) as the estimates' judge sample, and the labeler's
out-of-fold labels of those texts: pure functions over the parsed reference (resources/readers.py reads the
files)."""

from __future__ import annotations

from typing import Any

import polars as pl

JUDGE_ROW_SCHEMA = {"benchmark": pl.Utf8, "prompt_id": pl.Utf8, "prompt_hash": pl.Utf8, "split": pl.Utf8,
                    "task_id": pl.Int64}
OOF_SCHEMA = {"benchmark": pl.Utf8, "prompt_hash": pl.Utf8, "onet_soc_code": pl.Utf8, "task_id": pl.Int64,
              "p_exercised": pl.Float64}


def reference_sample_rows(reference: pl.DataFrame, dev_pass: str = "a") -> pl.DataFrame:
    """benchmark, prompt_id, prompt_hash, split, task_id (null for a text judged not work) of the training
    split and the development split's pass `dev_pass`. Pass 'b' is a second judge run on the same prompts,
    not more sample: the estimates use pass 'a' and report the model-assisted estimate with pass 'b' beside
    it (estimator model_assisted_pass_b) as the judge's own reproducibility."""
    if reference.is_empty():
        return pl.DataFrame(schema=JUDGE_ROW_SCHEMA)
    if "annotation" in reference.columns:  # the training split has pass 'a' only
        reference = reference.filter((pl.col("annotation") == dev_pass)
                                     | ((pl.col("split") != "dev") & (pl.col("annotation") == "a")))
    reference = reference.select(
        pl.col("benchmark").cast(pl.Utf8),
        pl.col("prompt_id").cast(pl.Utf8),
        pl.col("prompt_hash").cast(pl.Utf8),
        pl.col("split").cast(pl.Utf8),
        pl.col("task_ids").cast(pl.List(pl.Int64)),
    )
    # a text judged not work has no task: one row with a null task (explode would drop it)
    empty = reference.filter(pl.col("task_ids").list.len().fill_null(0) == 0).drop("task_ids").with_columns(
        pl.lit(None, pl.Int64).alias("task_id")
    )
    tasks = reference.filter(pl.col("task_ids").list.len() > 0).explode("task_ids").rename({"task_ids": "task_id"})
    return pl.concat([tasks, empty])


def with_out_of_fold_labels(labels: pl.DataFrame, labeler_version: str, sampled: pl.DataFrame,
                            out_of_fold: dict[str, Any]) -> tuple[pl.DataFrame, str | None]:
    """(labels, problem). The calibrated offline labeler (and the neighbour stack on it) was fitted on the
    reference texts, so on them its labels are in sample. Where the judge sample is the reference (`sampled`:
    benchmark, prompt_hash), swap its labels of those texts for the cross-fitted ones (`out_of_fold`:
    neighbour_oof.json for labels carrying the neighbour stack's version, each from models that never saw the
    text's benchmark and the votes of the benchmark's other judged texts; else selector_oof.json, each from the
    fold that never saw the text's benchmark), so the model-assisted correction sees the labeler as it is on
    texts it was not fitted on. A file for another fit changes nothing and says so in `problem`."""
    if not labeler_version.endswith(str(out_of_fold.get("fit_version"))):
        return labels, (f"the out-of-fold labels are for fit {out_of_fold.get('fit_version')}, not "
                        f"{labeler_version}: in-sample labels kept")
    keys = sampled.select("benchmark", "prompt_hash").unique()
    prompts = out_of_fold["prompts"]
    oof = pl.DataFrame([{"benchmark": r["benchmark"], "prompt_hash": r["prompt_hash"], "onet_soc_code": code,
                         "task_id": int(task), "p_exercised": float(p)}
                        for r in prompts for task, code, p in r["labels"]], schema=OOF_SCHEMA)
    covered = pl.DataFrame([{"benchmark": r["benchmark"], "prompt_hash": r["prompt_hash"]} for r in prompts],
                           schema={"benchmark": pl.Utf8, "prompt_hash": pl.Utf8}).join(keys, on=list(keys.columns))
    kept = labels.join(covered, on=["benchmark", "prompt_hash"], how="anti")
    swapped = oof.join(covered, on=["benchmark", "prompt_hash"], how="semi")
    out = pl.concat([kept, swapped.select(labels.columns).cast(labels.schema)])
    # a judged reference text the file does not hold (the reference edited or extended after the file was
    # written) keeps its in-sample labels: said, not silent
    missing = keys.join(covered, on=list(keys.columns), how="anti").sort("benchmark", "prompt_hash")
    if missing.height:
        names = ", ".join(sorted(set(missing["benchmark"].to_list()))[:5])
        return out, (f"{missing.height} of {keys.height} judged reference texts have no out-of-fold labels (of "
                     f"{names}): their in-sample labels kept, so the correction sees the labeler as better than "
                     "it is on them")
    return out, None
