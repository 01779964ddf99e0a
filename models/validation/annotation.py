"""Gold annotation: export a stratified sample of labeled prompts for annotators, read their answers back
(parse_gold_csv: a file's bytes; resources.readers.read_gold_csv reads the file) and resolve them against the
landed prompts and O*NET tasks."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np
import polars as pl

from models.errors import InputError
from models.exports.tables import csv_unsafe

# --- gold annotation: export a sample, import the answers ---------------------------------------------------

GOLD_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8, "prompt_id": pl.Utf8, "task_id": pl.Int64, "annotator": pl.Utf8,
    "source_file": pl.Utf8, "line_number": pl.Int64,
}
ANNOTATION_COLUMNS = ["sample_id", "benchmark", "prompt_id", "prompt_hash", "task_ids", "annotator", "notes",
                      "candidate_task_ids", "candidates", "prompt"]


def annotation_sample_keys(pool: pl.DataFrame, *, per_benchmark: int = 20, seed: int = 0) -> pl.DataFrame:
    """The stratified random draw of annotation_sample: up to `per_benchmark` rows per benchmark of `pool`
    (one row per labeled prompt: benchmark, prompt_id and any other columns), in benchmark order and, within a
    benchmark, in prompt_id order. The draw depends only on the sorted pool's keys and the seed, so the keys
    of the labeled prompts alone give the same sample as the full prompt rows."""
    pool = pool.sort("benchmark", "prompt_id")
    rng = np.random.default_rng(seed)
    picked = []
    for _bench, g in sorted(pool.group_by("benchmark"), key=lambda x: x[0]):
        idx = np.sort(rng.choice(g.height, size=min(per_benchmark, g.height), replace=False))
        picked.append(g[idx.tolist()])
    if not picked:
        return pool.clear()
    return pl.concat(picked)


def annotation_rows(sample: pl.DataFrame, labels: pl.DataFrame, tasks: pl.DataFrame,
                    occupations: pl.DataFrame, *, top_k: int = 10, max_prompt_chars: int = 6000) -> pl.DataFrame:
    """The annotation file rows (ANNOTATION_COLUMNS) of sampled prompts, in `sample` order.

    sample: benchmark, prompt_id, prompt_hash, prompt (annotation_sample_keys' rows with their texts).
    labels: at least benchmark, prompt_id, labeler, rank, task_id, onet_soc_code; labels of prompts outside
    the sample are ignored, so only the sample's labels need to be loaded."""
    if sample.is_empty():
        return pl.DataFrame(schema={c: pl.Utf8 for c in ANNOTATION_COLUMNS})
    titles = dict(occupations.select("onet_soc_code", "title").iter_rows())
    statements = dict(tasks.select("task_id", "task").iter_rows())
    top = (labels.join(sample.select("benchmark", "prompt_id"), on=["benchmark", "prompt_id"], how="semi")
           .sort("benchmark", "prompt_id", "labeler", "rank")
           .unique(["benchmark", "prompt_id", "task_id"], keep="first", maintain_order=True)
           .group_by("benchmark", "prompt_id", maintain_order=True).head(top_k))
    cands: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for b, p, t, soc in top.select("benchmark", "prompt_id", "task_id", "onet_soc_code").iter_rows():
        cands.setdefault((b, p), []).append((int(t), soc))
    rows = []
    chosen = sample.select("benchmark", "prompt_id", "prompt_hash", "prompt").iter_rows()
    for i, (b, p, h, text) in enumerate(chosen):
        c = cands.get((b, p), [])
        text = text or ""
        if len(text) > max_prompt_chars:
            text = text[:max_prompt_chars] + f" [... {len(text) - max_prompt_chars} more characters]"
        rows.append({
            "sample_id": f"{b}-{i + 1:04d}", "benchmark": b, "prompt_id": p, "prompt_hash": h, "task_ids": "",
            "annotator": "", "notes": "", "candidate_task_ids": ";".join(str(t) for t, _ in c),
            "candidates": "\n".join(f"{t} | {soc} {titles.get(soc, '')} | {statements.get(t, '')}"
                                    for t, soc in c),
            "prompt": text,
        })
    return pl.DataFrame(rows, schema={c: pl.Utf8 for c in ANNOTATION_COLUMNS})


def annotation_sample(prompts: pl.DataFrame, labels: pl.DataFrame, tasks: pl.DataFrame,
                      occupations: pl.DataFrame, *, per_benchmark: int = 20, top_k: int = 10, seed: int = 0,
                      max_prompt_chars: int = 6000) -> pl.DataFrame:
    """A stratified random sample of prompts (up to `per_benchmark` per benchmark, among labeled prompts)
    with their top-k candidate tasks, in the annotation format of docs/gold_labels.md.

    The annotator fills `task_ids` (and `annotator`, `notes`); the filled file is itself a valid import file.
    In memory: annotation_sample_keys then annotation_rows (the gold_annotation_sample asset runs the same two
    steps on keys drawn in SQL, loading texts and labels of the sampled prompts only).
    """
    labeled = labels.select("benchmark", "prompt_id").unique()
    pool = prompts.join(labeled, on=["benchmark", "prompt_id"], how="semi")
    sample = annotation_sample_keys(pool, per_benchmark=per_benchmark, seed=seed)
    return annotation_rows(sample, labels, tasks, occupations, top_k=top_k, max_prompt_chars=max_prompt_chars)


_ID_SPLIT = re.compile(r"[;,|\s]+")


def parse_gold_csv(data: bytes, source: str) -> pl.DataFrame:
    """One annotator CSV's bytes (docs/gold_labels.md; `source` names it in errors) -> long rows: benchmark, prompt_id, task_id, annotator,
    source_file, line_number. Wide (`task_ids`, several IDs per row) and long (`task_id`) layouts are
    accepted; an empty `task_ids` means "no O*NET task fits" (one row with task_id null). Raises InputError
    naming the file and line for a missing column, an empty prompt_id or a task ID that is not an integer."""
    rows: list[dict] = []
    # decoded as the file opened in text mode (utf-8-sig, newline="") was, so line numbers count the same
    with io.TextIOWrapper(io.BytesIO(data), newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = [h.strip() for h in next(reader, [])]
        if "prompt_id" not in header or not ({"task_ids", "task_id"} & set(header)):
            raise InputError(f"a gold label file needs the columns prompt_id and task_ids (or task_id); "
                             f"found {header}", path=source, line=1)
        id_column = "task_ids" if "task_ids" in header else "task_id"
        end_of_previous = reader.line_num
        for cells in reader:
            line = end_of_previous + 1  # a quoted field may span lines: report where the record starts
            end_of_previous = reader.line_num
            if not any(c.strip() for c in cells):
                continue  # a blank line
            record = dict(zip(header, cells, strict=False))
            # the exported sample's formula-like ids carry an apostrophe (models.exports.csv_safe)
            prompt_id = csv_unsafe((record.get("prompt_id") or "").strip())
            if not prompt_id:
                raise InputError("empty prompt_id", path=source, line=line)
            raw = (record.get(id_column) or "").strip()
            ids: list[int | None] = []
            for token in filter(None, _ID_SPLIT.split(raw)):
                try:
                    ids.append(int(token[:-2]) if re.fullmatch(r"\d+\.0", token) else int(token))
                except ValueError:
                    raise InputError(f"task ID {token!r} is not an integer", path=source, line=line,
                                     record=prompt_id) from None
            base = {"benchmark": csv_unsafe((record.get("benchmark") or "").strip()) or None, "prompt_id": prompt_id,
                    "annotator": (record.get("annotator") or "").strip() or None, "source_file": Path(source).name,
                    "line_number": line}
            for task_id in ids or [None]:
                rows.append({**base, "task_id": task_id})
    return pl.DataFrame(rows, schema=GOLD_SCHEMA)


def resolve_gold(gold: pl.DataFrame, prompts: pl.DataFrame, tasks: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    """Attach benchmarks to gold rows that lack one (prompt_id must then be unique across benchmarks), drop
    rows for prompts not in benchmark_prompts (reported), and refuse task IDs absent from onet_tasks.

    A prompt annotated with some tasks loses any "no task fits" row (a prompt cannot be both)."""
    notes: dict = {"gold_rows_read": gold.height}
    if gold.is_empty():
        return gold, notes
    ids = prompts.select("benchmark", "prompt_id").unique()
    bench_of = ids.group_by("prompt_id").agg(pl.col("benchmark").alias("_benches"))
    resolved = gold.join(bench_of, on="prompt_id", how="left")
    for row in resolved.filter(pl.col("benchmark").is_null() & (pl.col("_benches").list.len() > 1)).head(1) \
            .iter_rows(named=True):
        raise InputError(f"prompt_id {row['prompt_id']!r} exists in several benchmarks {row['_benches']}: "
                         f"add a benchmark column", path=row["source_file"], line=row["line_number"])
    resolved = resolved.with_columns(
        pl.coalesce(pl.col("benchmark"), pl.col("_benches").list.first()).alias("benchmark")).drop("_benches")
    known = resolved.join(ids, on=["benchmark", "prompt_id"], how="semi")
    unknown = resolved.join(ids, on=["benchmark", "prompt_id"], how="anti")
    notes["gold_unknown_prompts"] = sorted(
        {f"{r[0]}/{r[1]}" for r in unknown.select("benchmark", "prompt_id").iter_rows()})
    valid_tasks = set(tasks["task_id"].to_list())
    for row in known.filter(pl.col("task_id").is_not_null() & ~pl.col("task_id").is_in(list(valid_tasks))) \
            .head(1).iter_rows(named=True):
        raise InputError(f"task ID {row['task_id']} is not an O*NET task in onet_tasks",
                         path=row["source_file"], line=row["line_number"], record=row["prompt_id"])
    has_tasks = known.filter(pl.col("task_id").is_not_null()).select("benchmark", "prompt_id").unique()
    empty_rows = known.filter(pl.col("task_id").is_null()).join(has_tasks, on=["benchmark", "prompt_id"],
                                                                 how="anti")
    out = pl.concat([known.filter(pl.col("task_id").is_not_null()), empty_rows]) \
        .unique(["benchmark", "prompt_id", "task_id", "annotator"], keep="first", maintain_order=True) \
        .select(list(GOLD_SCHEMA)).sort("benchmark", "prompt_id", "task_id", nulls_last=True)
    notes["gold_prompts"] = out.select("benchmark", "prompt_id").unique().height
    return out, notes
