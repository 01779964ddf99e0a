"""Where the offline labeler's TaskIndex is stored, and how it is loaded or built (no Dagster).

The `task_search_index` asset (assets/labels.py) builds the index once from the O*NET reference tables,
pickles it next to the warehouse (data/warehouse/task_index/) and records its path in the one-row table
`task_search_index`, keyed by O*NET version + index version. The index version names the pickle layout
(INDEX_FORMAT), offline.INDEX_VERSION and a fingerprint of the source of the models/labeling/offline/
package, so a pickle is only reused by the code that built it. Both the labels stage and the gap finder's
what-if (pipelines/whatif.py) go through here, so candidate prompts are labeled with exactly the index the
landed ones were.

In resources/ because all of it is I/O: the warehouse table, the pickles, O*NET's DWA files, the source
fingerprint. The index itself (models.labeling.offline.TaskIndex) is pure.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import pickle
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from models.sources import ONET_VERSION
from resources import warehouse as wh
from resources.sources import resolve_source

TABLE = "task_search_index"
# Bump when the pickled index layout changes; the offline module's own INDEX_VERSION (if any) is appended.
INDEX_FORMAT = "1"
# The reference tables TaskIndex.build takes, in its argument order.
REFERENCE_TABLES: tuple[str, ...] = ("onet_tasks", "onet_occupations", "onet_job_titles", "onet_technology_skills")


def offline_code_fingerprint() -> str:
    """sha256 (12 hex) of the offline labeler's source: every module of the models.labeling.offline package
    (the index is built and scored by several of them), by name and content. A pickled TaskIndex is only
    reused by the code that built it, even when a change to the index forgot to bump INDEX_VERSION."""
    spec = importlib.util.find_spec("models.labeling.offline")  # its folder, without importing it
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    files = sorted(f for folder in folders for f in Path(folder).glob("*.py"))
    if not files:
        return "missing"
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def index_version() -> str:
    """INDEX_FORMAT . offline.INDEX_VERSION . offline code fingerprint."""
    from models.labeling import offline

    inner = getattr(offline, "INDEX_VERSION", "none")
    return f"{INDEX_FORMAT}.{inner}.{offline_code_fingerprint()}"


def index_dir(warehouse_path: str | Path) -> Path:
    """The folder of the pickled indexes: next to the warehouse file."""
    return Path(warehouse_path).parent / "task_index"


def index_pickle_path(warehouse_path: str | Path, version: str) -> Path:
    """Where the index of this O*NET version and index version is pickled."""
    return index_dir(warehouse_path) / f"task_index_onet{ONET_VERSION}_v{version}.pkl"


class _HashingWriter:
    """A binary file that also feeds what is written to sha256 (the pickle's identity without reading it back)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()

    def write(self, data: Any) -> int:
        self.digest.update(data)
        return self.handle.write(data)


def save_index(index: Any, path: Path) -> str:
    """Pickle the index atomically (a reader never loads a half-written file); returns the file's sha256.
    The object itself becomes this process's loaded copy of the file (`load_pickle`'s memo): partition runs
    in this process (run_all) use it instead of unpickling what was just written (about a second)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(path)
    with open(partial, "wb") as handle:
        writer = _HashingWriter(handle)
        pickle.dump(index, writer, protocol=pickle.HIGHEST_PROTOCOL)
    partial.replace(path)
    _remember_loaded(path, index)
    return writer.digest.hexdigest()


def partial_path(path: Path) -> Path:
    """Where `path` is written before it is renamed into place."""
    return path.with_name(path.name + ".part")


def adopt_prebuilt(prebuilt: Path, path: Path) -> None:
    """Move an index pickled ahead (by a label worker, resources/label_pool.py) into its place, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    prebuilt.replace(path)


def task_dwas_frame() -> pl.DataFrame | None:
    """Task -> detailed work activity titles (O*NET Tasks to DWAs + DWA Reference) for the index, or None
    when either file is absent."""
    tasks_to_dwas = resolve_source("onet/Tasks to DWAs.txt", required=False)
    reference = resolve_source("onet/DWA Reference.txt", required=False)
    if tasks_to_dwas is None or reference is None:
        return None

    def read(path: Path) -> pl.DataFrame:
        return pl.read_csv(path, separator="\t", quote_char=None, infer_schema_length=0)

    titles = read(reference.path).select("DWA ID", pl.col("DWA Title").alias("dwa_title"))
    return (
        read(tasks_to_dwas.path)
        .join(titles, on="DWA ID", how="inner")
        .select(
            pl.col("O*NET-SOC Code").alias("onet_soc_code"),
            pl.col("Task ID").cast(pl.Int64).alias("task_id"),
            "dwa_title",
        )
    )


_READ = object()


def build_index(tables: Mapping[str, pl.DataFrame], task_dwas: Any = _READ) -> Any:
    """A fresh TaskIndex from the reference tables (REFERENCE_TABLES) plus O*NET's task -> DWA titles
    (`task_dwas_frame()` unless given)."""
    from models.labeling.offline import TaskIndex

    dwas = task_dwas_frame() if task_dwas is _READ else task_dwas
    return TaskIndex.build(*(tables[name] for name in REFERENCE_TABLES), dwas)


# the columns TaskIndex.build reads of each input (models/labeling/offline/build.py), in their row order
INDEX_INPUT_COLUMNS: dict[str, tuple[str, ...]] = {
    "onet_tasks": ("onet_soc_code", "task_id", "task"),
    "onet_occupations": ("onet_soc_code", "title", "description"),
    "onet_job_titles": ("onet_soc_code", "job_title", "title_source"),
    "onet_technology_skills": ("onet_soc_code", "example", "commodity_title"),
    "task_dwas": ("onet_soc_code", "task_id", "dwa_title"),
}


def inputs_digest(tables: Mapping[str, pl.DataFrame], task_dwas: pl.DataFrame | None) -> str:
    """sha256 of what the index is built from: the columns TaskIndex.build reads of every input, row by row in
    order, as text. Equal digests: the same index (the build is a pure function of these)."""
    digest = hashlib.sha256()
    for name, columns in INDEX_INPUT_COLUMNS.items():
        frame = task_dwas if name == "task_dwas" else tables[name]
        digest.update(f"{name}\0".encode())
        if frame is None:
            continue
        text = frame.select(pl.col(c).cast(pl.Utf8).fill_null("\x00null") for c in columns)
        for column in text.columns:
            values = text[column]
            digest.update(values.str.len_bytes().to_numpy().tobytes())
            digest.update("".join(values.to_list()).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def tables_from_sources() -> dict[str, pl.DataFrame]:
    """The four reference tables' index columns read straight from the O*NET files (the reference assets'
    parsers): what a label worker builds the index from ahead of `task_search_index`, which uses it only when
    `inputs_digest` says it is what the warehouse tables hold (resources/label_pool.py)."""
    from resources.readers import load_onet_reference_frames

    onet = resolve_source("onet/Task Statements.txt")
    frames = load_onet_reference_frames(onet.path.parent)
    return {"onet_tasks": frames["tasks"], "onet_occupations": frames["occupations"],
            "onet_job_titles": frames["job_titles"], "onet_technology_skills": frames["technology_skills"]}


def stored_index_path(warehouse_path: str | Path) -> Path | None:
    """The pickled TaskIndex recorded in table task_search_index for this O*NET version and the current
    index_version() (a stale index would label differently), when its file exists; else None."""
    if not Path(warehouse_path).exists():
        return None
    with wh.connect(warehouse_path, read_only=True) as con:
        if not wh.table_exists(con, TABLE):
            return None
        rows = wh.fetch_polars(con, f"select * from {TABLE}")
    if rows.is_empty() or not {"onet_version", "index_version", "path"} <= set(rows.columns):
        return None
    version = index_version()
    paths = [
        Path(path)
        for onet, index, path in rows.select("onet_version", "index_version", "path").iter_rows()
        if onet == ONET_VERSION and index == version and path and Path(path).is_file()
    ]
    return paths[-1] if paths else None


_INDEX_MEMO: dict[tuple[str, int], Any] = {}
_INDEX_LOCK = threading.Lock()


def _remember_loaded(path: Path, index: Any) -> None:
    """Make `index` this process's loaded copy of the file at `path` (one pickled index in memory at a time)."""
    key = (str(path), path.stat().st_mtime_ns)
    with _INDEX_LOCK:
        for stale in [k for k in _INDEX_MEMO if not k[0].startswith("built:")]:
            del _INDEX_MEMO[stale]
        _INDEX_MEMO[key] = index


def load_pickle(path: Path) -> Any:
    """Load (once per process and file version) a pickled index this pipeline wrote itself."""
    key = (str(path), path.stat().st_mtime_ns)
    with _INDEX_LOCK:
        if key not in _INDEX_MEMO:
            with open(path, "rb") as handle:
                for stale in [k for k in _INDEX_MEMO if not k[0].startswith("built:")]:
                    del _INDEX_MEMO[stale]  # one pickled index in memory at a time
                _INDEX_MEMO[key] = pickle.load(handle)  # noqa: S301 - our own artifact, path from our table
        return _INDEX_MEMO[key]


def load_in_background(path: Path) -> threading.Thread:
    """Start loading the pickled index at `path` in a thread of this process (`load_pickle` then waits for that
    load instead of doing it again); an error is left to the later `load_pickle`, which raises it. Returns the
    thread (for a test to join)."""
    def load() -> None:
        with contextlib.suppress(Exception):
            load_pickle(path)

    thread = threading.Thread(target=load, name="task index load", daemon=True)
    thread.start()
    return thread


def load_or_build(
    warehouse_path: str | Path, warn: Callable[[str], Any] | None = None
) -> tuple[Any, str, float]:
    """The TaskIndex for this O*NET version: the stored pickle when current, else built (once per process)
    from the warehouse's reference tables, calling `warn` first. Returns (index, 'pickle'|'built', seconds)."""
    version = index_version()
    started = time.perf_counter()
    stored = stored_index_path(warehouse_path)
    if stored is not None:
        return load_pickle(stored), "pickle", time.perf_counter() - started
    memo_key = (f"built:{warehouse_path}:{ONET_VERSION}:{version}", 0)
    with _INDEX_LOCK:
        if memo_key in _INDEX_MEMO:
            return _INDEX_MEMO[memo_key], "built", time.perf_counter() - started
    if warn is not None:
        warn(
            f"no stored task index for O*NET {ONET_VERSION} / index v{version} (none yet, or the offline "
            "labeler's code changed since it was built): building it in this run; materialize "
            "task_search_index to build it once for all partitions"
        )
    index = build_index({name: wh.read_table(warehouse_path, name) for name in REFERENCE_TABLES})
    with _INDEX_LOCK:
        _INDEX_MEMO[memo_key] = index
    return index, "built", time.perf_counter() - started
