"""The label store: every label_cache and label_failures row also kept outside DuckDB, append-only.

Labels are the one expensive thing benchmap computes (with the `openai` labeler every label set is paid for).
The warehouse file can be lost or damaged (a full disk, a killed copy, a truncation); the store keeps each
labeled batch a second time, so a new warehouse gets its label cache back without a single labeler call
(`python -m pipelines.restore_labels`, or `python -m pipelines.run_all --rebuild`).

Layout, next to the warehouse file (`data/warehouse/benchmap.duckdb` -> `data/warehouse/benchmap.label_store/`):

    <seq>.cache.parquet            the exact label_cache rows of one batch (whatever columns write_batch wrote)
    <seq>.cache.parquet.sha256     `<sha256>  <file name>` (the format of `sha256sum -c`)
    <seq>.failures.parquet         that batch's label_failures rows (attempts of this batch only), when any
    <seq>.failures.parquet.sha256

    .locks/<benchmark>.lock        the per-benchmark labeling lock (resources/label_cache.py), no data

`<seq>` = `<UTC nanoseconds>-<pid>-<random>`: segments sort in the order they were written. A segment is never
changed after it is written: the checksum file is written first and the Parquet file renamed into place last,
so a Parquet file that is present is complete, and one whose bytes differ from its checksum is reported and
skipped (the others are still restored).

`label_failures` holds the *outstanding* failures, replaced and deleted as prompts are retried
(models/labeling/cache.py). `replay` applies the batches in order with the same rules as `write_batch`: every
prompt hash a batch touched (its cache rows and its failure rows) loses its outstanding failures of that
labeler and version, the batch's failures are inserted with the attempts of the replaced ones added.

A batch in the store but not in the warehouse (a process killed between the two writes) is copied into the
warehouse by `LabelCache.read` the next time its prompts are to be labeled: it is never requested again.

No dagster here; the only I/O is this folder.
"""

from __future__ import annotations

import hashlib
import io
import os
import secrets
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

CACHE_KIND = "cache"
FAILURES_KIND = "failures"
SUFFIX = ".parquet"
CHECKSUM_SUFFIX = ".sha256"
CACHE_KEY = ["prompt_hash", "onet_version", "labeler", "model", "template_version"]


class LabelStoreError(OSError):
    """The label store cannot be written or read (a full disk, a permission problem)."""


def store_dir(warehouse_path: str | Path) -> Path:
    """`<folder>/<stem>.label_store/` for the warehouse file `<folder>/<stem>.duckdb`."""
    path = Path(warehouse_path)
    return path.parent / f"{path.stem}.label_store"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    """Write a temporary file in the same folder, fsync it, rename it into place."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _parquet_bytes(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer, compression="zstd", statistics=False)
    return buffer.getvalue()


def _new_seq() -> str:
    return f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(3)}"


def write_segment(folder: Path, seq: str, kind: str, frame: pl.DataFrame) -> Path:
    """One segment: checksum file first, then the Parquet file (renamed into place last)."""
    name = f"{seq}.{kind}{SUFFIX}"
    data = _parquet_bytes(frame)
    _write_atomic(folder / f"{name}{CHECKSUM_SUFFIX}", f"{sha256_bytes(data)}  {name}\n".encode())
    _write_atomic(folder / name, data)
    return folder / name


def append_batch(warehouse_path: str | Path, cache_rows: pl.DataFrame, failure_rows: pl.DataFrame) -> str | None:
    """Keep one labeled batch: its label_cache rows and its label_failures rows, exactly as given.

    Called by LabelCache.write_batch before the batch is committed to DuckDB, so a batch in the warehouse is
    always in the store too. Returns the segment sequence (None when the batch had no rows). Raises
    LabelStoreError when the folder cannot be written: the batch is then not committed either, so a label is
    never held only by the warehouse."""
    if cache_rows.is_empty() and failure_rows.is_empty():
        return None
    folder = store_dir(warehouse_path)
    seq = _new_seq()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not cache_rows.is_empty():
            write_segment(folder, seq, CACHE_KIND, cache_rows)
        if not failure_rows.is_empty():
            write_segment(folder, seq, FAILURES_KIND, failure_rows)
    except OSError as exc:
        raise LabelStoreError(f"label store {folder} cannot be written ({exc}); the batch was not committed")\
            from exc
    return seq


# --- reading ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Segment:
    path: Path
    seq: str
    kind: str


@dataclass
class StoreContents:
    cache_files: list[Path]  # verified label_cache segments, in write order
    failures: pl.DataFrame  # outstanding label_failures after replaying every batch in order
    segments: int = 0  # segment files found
    damaged: list[str] = field(default_factory=list)  # segments skipped, each with why

    def cache_frame(self) -> pl.DataFrame:
        """The label_cache rows, one per cache key (the first written). Loads every segment: for tests and
        small stores; the restore command lets DuckDB read the files instead."""
        if not self.cache_files:
            return pl.DataFrame()
        frames = [pl.read_parquet(p) for p in self.cache_files]
        return (pl.concat(frames, how="diagonal_relaxed").with_row_index("_order")
                .sort("created_at", "_order").unique(subset=CACHE_KEY, keep="first", maintain_order=True)
                .sort("_order").drop("_order"))


def segments(warehouse_path: str | Path) -> list[Segment]:
    """Every complete segment (Parquet file present), in write order."""
    folder = store_dir(warehouse_path)
    if not folder.is_dir():
        return []
    out = []
    for path in folder.iterdir():
        if path.name.startswith(".") or not path.name.endswith(SUFFIX):
            continue
        stem = path.name[: -len(SUFFIX)]
        seq, _, kind = stem.rpartition(".")
        if kind in (CACHE_KIND, FAILURES_KIND) and seq:
            out.append(Segment(path, seq, kind))
    return sorted(out, key=lambda s: (s.seq, s.kind))


def has_segments(warehouse_path: str | Path) -> bool:
    folder = store_dir(warehouse_path)
    return folder.is_dir() and any(p.name.endswith(SUFFIX) and not p.name.startswith(".")
                                   for p in folder.iterdir())


def verify_segment(segment: Segment) -> tuple[bytes | None, str | None]:
    """(the segment's bytes, None) when its checksum matches, else (None, why)."""
    checksum = segment.path.with_name(segment.path.name + CHECKSUM_SUFFIX)
    try:
        data = segment.path.read_bytes()
        expected = checksum.read_text().split()[0]
    except (OSError, IndexError) as exc:
        return None, f"{segment.path.name}: no readable checksum ({exc})"
    if sha256_bytes(data) != expected:
        return None, f"{segment.path.name}: sha256 differs from {checksum.name} (damaged)"
    return data, None


def verified_cache_frames(warehouse_path: str | Path) -> Iterator[pl.DataFrame]:
    """Every label_cache segment whose checksum matches, read whole (damaged ones are skipped)."""
    for segment in segments(warehouse_path):
        if segment.kind != CACHE_KIND:
            continue
        data, _problem = verify_segment(segment)
        if data is not None:
            try:
                yield pl.read_parquet(io.BytesIO(data))
            except Exception:  # noqa: BLE001 - a checksummed file that still does not parse: skipped
                continue


def replay_failures(batches: Iterable[tuple[pl.DataFrame, pl.DataFrame]]) -> pl.DataFrame | None:
    """Outstanding failures after applying (cache rows, failure rows) batches in order, as write_batch does."""
    current: pl.DataFrame | None = None
    for cache_rows, failure_rows in batches:
        if not failure_rows.is_empty() and "runs" not in failure_rows.columns:  # written before runs were counted
            failure_rows = failure_rows.with_columns(pl.lit(1, pl.Int32).alias("runs"))
        touched_parts = []
        if not cache_rows.is_empty():
            touched_parts.append(cache_rows.select("prompt_hash", "labeler", "labeler_version"))
        if not failure_rows.is_empty():
            touched_parts.append(failure_rows.select("prompt_hash", "labeler", "labeler_version"))
        if not touched_parts:
            continue
        touched = pl.concat(touched_parts, how="vertical_relaxed").unique()
        if current is None:
            if failure_rows.is_empty():
                continue  # nothing outstanding yet, nothing new
            current = failure_rows.clear()
        key = ["prompt_hash", "labeler", "labeler_version"]
        previous = (current.join(touched, on=key, how="semi")
                    .group_by("prompt_hash", "labeler", "labeler_version",
                              pl.col("prompt_id").fill_null("").alias("_pid"))
                    .agg(pl.col("attempts").max().alias("_prev"),
                         pl.col("runs").fill_null(1).max().alias("_prev_runs")))
        kept = current.join(touched, on=key, how="anti")
        if failure_rows.is_empty():
            current = kept
            continue
        new = (failure_rows.with_columns(pl.col("prompt_id").fill_null("").alias("_pid"))
               .join(previous, on=[*key, "_pid"], how="left")
               .with_columns((pl.col("attempts") + pl.col("_prev").fill_null(0)).cast(failure_rows["attempts"].dtype)
                             .alias("attempts"),
                             (pl.col("runs").fill_null(1) + pl.col("_prev_runs").fill_null(0)).cast(pl.Int32)
                             .alias("runs"))
               .drop("_pid", "_prev", "_prev_runs"))
        current = pl.concat([kept, new], how="diagonal_relaxed")
    return current


def read_store(warehouse_path: str | Path) -> StoreContents:
    """What the store holds, verified: the label_cache segments whose checksum matches, and the outstanding
    label_failures replayed from every batch. Damaged segments are skipped and listed."""
    damaged: list[str] = []
    found = segments(warehouse_path)
    cache_files: list[Path] = []
    by_seq: dict[str, dict[str, pl.DataFrame]] = {}
    for segment in found:
        data, problem = verify_segment(segment)
        if data is None:
            damaged.append(problem or segment.path.name)
            continue
        try:
            columns = ["prompt_hash", "labeler", "labeler_version"] if segment.kind == CACHE_KIND else None
            frame = pl.read_parquet(io.BytesIO(data), columns=columns)
        except Exception as exc:  # noqa: BLE001 - a checksummed file that still does not parse
            damaged.append(f"{segment.path.name}: not readable as Parquet ({exc})")
            continue
        if segment.kind == CACHE_KIND:
            cache_files.append(segment.path)
        by_seq.setdefault(segment.seq, {})[segment.kind] = frame
    failure_frames = [parts[FAILURES_KIND] for parts in by_seq.values() if FAILURES_KIND in parts]
    empty_failures = failure_frames[0].clear() if failure_frames else pl.DataFrame()
    empty_cache = pl.DataFrame(schema={"prompt_hash": pl.Utf8, "labeler": pl.Utf8, "labeler_version": pl.Utf8})
    failures = replay_failures((parts.get(CACHE_KIND, empty_cache), parts.get(FAILURES_KIND, empty_failures))
                               for _, parts in sorted(by_seq.items()))
    return StoreContents(cache_files, failures if failures is not None else empty_failures, len(found), damaged)


__all__ = ["CACHE_KEY", "LabelStoreError", "Segment", "StoreContents", "append_batch", "has_segments", "read_store",
           "replay_failures", "segments", "store_dir", "verify_segment", "write_segment"]
