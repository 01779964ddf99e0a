"""The judged checks' cache (issue 29): the split check, the p_covered check and the per-text calibration depend
only on the judged benchmarks' problem, the relabeling, the settings and the code
(models/estimates/judged.py); their result is kept beside the warehouse
(data/warehouse/estimate_checks/<name>.pickle) under that key. A run whose key matches (a new benchmark without
judged texts, a forced re-materialization) reads the result instead of recomputing it; any other key recomputes
and replaces the file. Only this process's own pickles are read (a file of the warehouse's folder, as the
warehouse itself); an unreadable file is a miss, never an error.

The headline's per-benchmark draws are kept the same way (models/estimates/bench_draws.py: one file per
benchmark, `draws_<purpose>_<benchmark>`, and the pooled parameters), under a key that includes
`draws_code_version`: the source of models/estimates/ (the same for the membership step, which draws them, and
the headline step, which reads them; their Dagster code versions differ) and numpy's version (the streams)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

CACHE_DIR = "estimate_checks"


def source_digest(*packages: str) -> str:
    """A digest of the *.py files of the given packages (e.g. "models.estimates") and numpy's version."""
    import hashlib
    import importlib

    import numpy

    digest = hashlib.blake2b(digest_size=12)
    digest.update(numpy.__version__.encode())
    for package in packages:
        folder = Path(importlib.import_module(package).__file__ or "").parent
        for path in sorted(folder.rglob("*.py")):
            digest.update(str(path.relative_to(folder)).encode() + b"\x1f" + path.read_bytes())
    return digest.hexdigest()


def draws_code_version() -> str:
    """A digest of models/estimates/ and numpy's version: the code the draws depend on."""
    return source_digest("models.estimates")


def frames_key(parts: list[str], frames: list[Any]) -> str | None:
    """A key of `parts` and `frames` (polars DataFrames: their columns, types and rows, by polars' row hash, so
    polars' version is a part), models.cache_keys.result_key. None when a frame cannot be hashed (then nothing
    is kept or read)."""
    import polars as pl

    from models.cache_keys import result_key

    chunks = []
    try:
        for frame in frames:
            chunks.append(repr(list(frame.schema.items())).encode() + b"\x1f")
            chunks.append(frame.hash_rows().to_numpy().tobytes() if frame.height else b"")
    except Exception:  # noqa: BLE001  (a type hash_rows refuses: compute, keep nothing)
        return None
    return result_key([*parts, pl.__version__], chunks=chunks)


def figure_key(name: str, frames: list[Any]) -> str | None:
    """The key of a figure drawn from `frames`: its name, the frames (frames_key), the figure code
    (models/figures/) and matplotlib's version. A figure is byte-stable given these
    (models.figures.figure_outputs), so one drawn before under the same key is reused."""
    from importlib.metadata import version  # matplotlib's own import is ~0.07 s of the step that asks first

    return frames_key([name, source_digest("models.figures"), version("matplotlib")], frames)


def cache_path(warehouse_path: str | Path, name: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return Path(warehouse_path).parent / CACHE_DIR / f"{safe}.pickle"


def read(path: Path, key: str) -> Any | None:
    """The value stored under `key`, else None (missing, unreadable, another key)."""
    try:
        with path.open("rb") as handle:
            stored = pickle.load(handle)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
        return None
    if not isinstance(stored, dict) or stored.get("key") != key:
        return None
    return stored.get("value")


def write(path: Path, key: str, value: Any) -> None:
    """Replace the file atomically (a crash leaves the old file or the new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with tmp.open("wb") as handle:
        pickle.dump({"key": key, "value": value}, handle, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)
