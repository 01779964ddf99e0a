"""A candidate benchmark folder's prompts, in memory: its benchmark name, its labels and its what-if result.

pipelines/whatif.py reads the folder and the warehouse and calls these; nothing here touches a file.
"""

from __future__ import annotations

import json
import re
from typing import Any

import polars as pl

from models.gaps.whatif import GAIN_SCHEMA, WhatIfParams, WhatIfResult


def candidate_name(prompts_jsonl: bytes, stem: str) -> str:
    """The candidate's benchmark name: the most common `benchmark` field of its prompts.jsonl lines
    (`prompts_jsonl`, the file's bytes), else `stem` (the folder or file name) made safe (lowercase,
    non-alphanumerics to '_')."""
    names: dict[str, int] = {}
    for raw in prompts_jsonl.split(b"\n"):
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        name = record.get("benchmark") if isinstance(record, dict) else None
        if isinstance(name, str) and name.strip():
            names[name.strip()] = names.get(name.strip(), 0) + 1
    if names:
        return max(sorted(names), key=lambda n: names[n])
    safe = re.sub(r"[^a-z0-9_]+", "_", stem.lower()).strip("_")
    return safe if safe and safe[0].isalpha() else f"candidate_{safe}" if safe else "candidate"


def label_candidate(
    prompts: pl.DataFrame, labeler: Any, cached: dict[str, list[Any]] | None = None, batch_size: int = 256
) -> tuple[pl.DataFrame, int]:
    """Label candidate prompts with `labeler` (models.labeling.base.Labeler), reusing `cached` labels by
    prompt hash (e.g. read from label_cache) and writing nothing. Returns prompt_task_labels rows and the
    number of prompts the labeler failed on."""
    from models.labeling.base import PromptRecord
    from models.labeling.cache import batched, labels_frame, unique_by_hash

    records = [
        PromptRecord(r["benchmark"], r["prompt_id"], r["prompt_hash"], r["prompt"])
        for r in prompts.iter_rows(named=True)
    ]
    labels_by_hash: dict[str, list[Any]] = dict(cached or {})
    todo = [group[0] for h, group in unique_by_hash(records).items() if h not in labels_by_hash]
    failed = 0
    for batch in batched(todo, batch_size):
        for record, outcome in zip(batch, labeler.label(batch), strict=True):
            if outcome.ok:
                labels_by_hash[record.prompt_hash] = list(outcome.labels)
            else:
                failed += 1
    return labels_frame(records, labels_by_hash, labeler.name, labeler.labeler_version), failed


def for_candidate(
    result: WhatIfResult, candidate: str, params: WhatIfParams, labeler: str, *, rejects: pl.DataFrame,
    label_failed: int,
) -> WhatIfResult:
    """A candidate folder's result: the gain gains the count of the folder's rejected lines (`rejects`, kept
    whole for the command to name) and the prompts the labeler failed on, and every frame carries `candidate`
    as its first column."""
    extra = pl.DataFrame(
        {
            "metric": ["candidate_rejected_lines", "candidate_prompts_label_failed"],
            "before": [None, None],
            "after": [float(rejects.height), float(label_failed)],
            "gain": [None, None],
        },
        schema=GAIN_SCHEMA,
    ).with_columns(
        pl.lit(params.threshold, dtype=pl.Int64).alias("threshold"), pl.lit(labeler).alias("labeler")
    )
    gain = pl.concat([result.marginal_gain, extra])
    tag = pl.lit(candidate, dtype=pl.Utf8).alias("candidate")
    return WhatIfResult(
        *(
            frame.with_columns(tag).select("candidate", *frame.columns)
            for frame in (gain, *result.frames()[1:])
        ),
        rejects=rejects,
    )
