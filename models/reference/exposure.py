"""Eloundou et al. (GPTs are GPTs) exposure labels `full_labelset.tsv` and the `task_exposure` table."""

from __future__ import annotations

import polars as pl

from models.reference.readers import (
    ONET_CODE,
    cast_number,
    check_in_set,
    check_pattern,
    check_unique,
    parse_csv_records,
)

EXPOSURE_LABELS = ("E0", "E1", "E2")


def parse_eloundou_labels(data: bytes, source: str) -> pl.DataFrame:
    """`full_labelset.tsv` -> onet_soc_code, task_id, human_exposure, gpt4_exposure (E0/E1/E2)."""
    df = parse_csv_records(
        data, source, ["O*NET-SOC Code", "Task ID", "human_exposure_agg", "gpt4_exposure"], delimiter="\t"
    )
    check_pattern(df, "O*NET-SOC Code", ONET_CODE, source, "an O*NET-SOC code")
    df = cast_number(df, "Task ID", pl.Int64(), source, rename="task_id", required=True, integral_float=True)
    check_in_set(df, "human_exposure_agg", EXPOSURE_LABELS, source)
    check_in_set(df, "gpt4_exposure", EXPOSURE_LABELS, source)
    df = df.rename({"O*NET-SOC Code": "onet_soc_code", "human_exposure_agg": "human_exposure"})
    check_unique(df, ["onet_soc_code", "task_id"], source)
    return df.select("onet_soc_code", "task_id", "human_exposure", "gpt4_exposure")


def build_task_exposure(labels: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """Labels of the 29.2 tasks, joined on (onet_soc_code, task_id); labels of tasks no longer in 29.2 are
    dropped. exposed = human label E1 or E2; gpt4_exposed = GPT-4 label E1 or E2."""
    return (
        labels.join(tasks.select("onet_soc_code", "task_id"), on=["onet_soc_code", "task_id"], how="semi")
        .with_columns(
            pl.col("human_exposure").is_in(["E1", "E2"]).alias("exposed"),
            pl.col("gpt4_exposure").is_in(["E1", "E2"]).alias("gpt4_exposed"),
        )
        .sort(["onet_soc_code", "task_id"])
    )


def task_exposure_summary(
    exposure: pl.DataFrame, labels: pl.DataFrame, tasks: pl.DataFrame
) -> dict[str, int | float]:
    return {
        "label_rows": labels.height,
        "matched_tasks": exposure.height,
        "match_rate_of_onet_tasks": exposure.height / tasks.height if tasks.height else 0.0,
        "match_rate_of_labels": exposure.height / labels.height if labels.height else 0.0,
        "labels_not_in_onet": labels.height - exposure.height,
        "onet_tasks_without_labels": tasks.height - exposure.height,
        "exposed_share": float(exposure["exposed"].mean()) if exposure.height else 0.0,
        "gpt4_exposed_share": float(exposure["gpt4_exposed"].mean()) if exposure.height else 0.0,
        **{f"human_{label}": int((exposure["human_exposure"] == label).sum()) for label in EXPOSURE_LABELS},
    }
