"""Shared helpers of the benchmarks in bench/ (and of tests/test_faults.py, tests/test_multiprocess.py).

Every bench script prints ONE JSON object on stdout and logs to stderr. They run the pipeline the way a user
does (`python -m pipelines.run_all`, sensors, jobs) in a child process whose environment points at a
throw-away state folder, so the project's own warehouse and Dagster instance are never touched:

    <state>/<name>/dagster_home/dagster.yaml   DAGSTER_HOME (runs, event logs, compute logs)
    <state>/<name>/warehouse/benchmap.duckdb   BENCHMAP_WAREHOUSE
    <state>/<name>/raw/                        BENCHMAP_RAW_DIR (landing zone; the mirror stays read-only)

The state root is $BENCHMAP_BENCH_DIR (default: the system temp folder /benchmap-bench). `cold` leaves its
state in `<root>/cold` (with `result.json`); `warm`, `new_benchmark` and `scale` start from a copy of it and run
`cold` first when it is missing.

Peak memory: the child's process tree (the child and every process it starts) is sampled with psutil every
0.1 s and the largest summed RSS is reported (`peak_rss_mib`); `max_rss_mib` is getrusage's ru_maxrss of the
largest single descendant (exact, not sampled). A sum of RSS counts the pages the processes share (libpython,
numpy's and DuckDB's libraries, mapped by every worker) once per process, so `peak_pss_mib` reports the largest
summed PSS beside it (each shared page split among its sharers: what the tree takes from the machine).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

PROJECT_ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
DEFAULT_MIRROR = (PROJECT_ROOT / ".." / "shared" / "data").resolve()
MIB = 1024 * 1024

DAGSTER_YAML = """\
# Written by bench/common.py: a throw-away Dagster instance (same storage layout as the project's dagster.yaml).
storage:
  custom:
    module: resources.dagster_storage
    class: PooledSqliteStorage
    config:
      base_dir: {home}/storage
local_artifact_storage:
  module: dagster._core.storage.root
  class: LocalArtifactStorage
  config:
    base_dir: {home}
compute_logs:
  module: dagster._core.storage.local_compute_log_manager
  class: LocalComputeLogManager
  config:
    base_dir: {home}/logs
run_launcher:
  module: resources.run_launcher
  class: ForkServerRunLauncher
concurrency:
  pools:
    default_limit: {pool_limit}
telemetry:
  enabled: false
"""


# ------------------------------------------------------------------------------------------------ output
def log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)


def emit(result: Mapping[str, Any]) -> None:
    """The one JSON object a bench script prints on stdout."""
    sys.stdout.write(json.dumps(result, default=str, sort_keys=False) + "\n")
    sys.stdout.flush()


def mib(n_bytes: float | None) -> float | None:
    return None if n_bytes is None else round(n_bytes / MIB, 1)


def machine() -> dict[str, Any]:
    """The machine a result was measured on (recorded with every result)."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for name in ("dagster", "duckdb", "polars"):
        try:
            from importlib.metadata import version

            versions[name] = version(name)
        except Exception:  # noqa: BLE001 - informative only
            versions[name] = "?"
    return {
        "cpu": cpu,
        "logical_cpus": psutil.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 1024**3, 1),
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
        "platform": platform.platform(),
        "python": platform.python_version(),
        **versions,
    }


# ------------------------------------------------------------------------------------------------ state
def mirror_path() -> Path:
    path = Path(os.environ.get("BENCHMAP_MIRROR", DEFAULT_MIRROR))
    return path if path.is_absolute() else (PROJECT_ROOT / path).resolve()


def state_root() -> Path:
    root = Path(os.environ.get("BENCHMAP_BENCH_DIR", Path(tempfile.gettempdir()) / "benchmap-bench"))
    root.mkdir(parents=True, exist_ok=True)
    return root


# data/reference (the vendored judge labels) and data/indexes (index definitions) are read by assets
CODE_PARTS = ("models", "resources", "assets", "pipelines", "bench", "data/reference", "data/indexes", "pyproject.toml",
              "dagster.yaml")


def code_snapshot(target: Path) -> Path:
    """A copy of the project's code (models, assets, pipelines, bench) at `target`, so that a series of benches
    (cold, then warm, ...) runs one version of the code even while the working tree changes."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for part in CODE_PARTS:
        source = PROJECT_ROOT / part
        if source.is_dir():
            shutil.copytree(source, target / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif source.is_file():
            shutil.copy2(source, target / part)
    return target


def code_version(root: Path = PROJECT_ROOT) -> str:
    """Short sha256 over the .py files of models/, assets/, pipelines/ (the bench's marker of which code built a state)."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(p for d in ("models", "resources", "assets", "pipelines") for p in (root / d).rglob("*.py")
                       if "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


@dataclass(frozen=True)
class State:
    """One throw-away pipeline state: Dagster home, warehouse and landing zone under `root`; `code` is the code
    snapshot the child processes import (default: the project itself)."""

    root: Path
    code: Path = PROJECT_ROOT

    @property
    def home(self) -> Path:
        return self.root / "dagster_home"

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse" / "benchmap.duckdb"

    @property
    def raw(self) -> Path:
        return self.root / "raw"

    @property
    def landing(self) -> Path:
        return self.raw / "benchmarks"

    @property
    def exports(self) -> Path:
        return self.warehouse.parent / "exports"

    def create(self, *, pool_limit: int = 4) -> State:
        self.home.mkdir(parents=True, exist_ok=True)
        self.warehouse.parent.mkdir(parents=True, exist_ok=True)
        self.landing.mkdir(parents=True, exist_ok=True)
        write_dagster_yaml(self.home, pool_limit=pool_limit)
        return self

    def env(self, *, mirror: Path | None = None, labeler: str = "offline", **extra: str) -> dict[str, str]:
        """The child environment: this state, the read-only mirror, no downloads, no API key by default. Python
        writes bytecode as a user's does (from 2026-12-04 15:30: this sandbox sets PYTHONDONTWRITEBYTECODE, so every
        measured process compiled the project's modules again, ~0.2-0.3 s each; a code snapshot starts without
        __pycache__, so the cold run still compiles them once, as a fresh clone's first run does)."""
        env = {k: v for k, v in os.environ.items()
               if k not in {"OPENAI_API_KEY", "OPENAI_BASE_URL", "BENCHMAP_LABELER", "PYTHONDONTWRITEBYTECODE"}}
        env.update({
            "DAGSTER_HOME": str(self.home),
            "BENCHMAP_WAREHOUSE": str(self.warehouse),
            "BENCHMAP_RAW_DIR": str(self.raw),
            "BENCHMAP_MIRROR": str(mirror or mirror_path()),
            "BENCHMAP_OFFLINE": "1",
            "BENCHMAP_LABELER": labeler,
            "PYTHONPATH": str(self.code),
            "PYTHONUNBUFFERED": "1",
        })
        env.update(extra)
        return env

    def enter(self) -> State:
        """This process becomes one of the state's children (a bench helper importing the pipeline itself): its
        environment (the in-process executor), working directory and code first on the import path, as PYTHONPATH
        puts it first in a child's."""
        os.environ.clear()
        os.environ.update(self.env(BENCHMAP_EXECUTOR="in_process"))
        os.chdir(self.code)
        sys.path.insert(0, str(self.code))
        return self

    def carry_vouch(self, copy: State) -> bool:
        """Vouch for the copy's warehouse when this state's is vouched (resources/integrity.py): run_all leaves its
        file vouched, so the daemon's next run does not read every block again; a copy has another inode and
        ctime and its task index path was rewritten (copy_to), so without this the copy's first run checks in
        full (~0.3 s of the mirror's warehouse), which a user's run after run_all does not. Runs the copy's code;
        False (nothing vouched) when the original is not vouched or that code has no vouch."""
        script = ("import sys\nfrom resources import integrity\n"
                  "ok = integrity.vouched(sys.argv[1])\nif ok:\n    integrity.vouch(sys.argv[2])\n"
                  "print(ok and integrity.vouched(sys.argv[2]))")
        done = subprocess.run([PYTHON, "-c", script, str(self.warehouse), str(copy.warehouse)],
                              env=copy.env(), cwd=copy.code, capture_output=True, text=True)
        return done.returncode == 0 and done.stdout.strip() == "True"

    def copy_to(self, target: Path) -> State:
        """A copy of this state (warehouse, instance, landing zone); paths in dagster.yaml are rewritten."""
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(self.root, target, symlinks=True)
        new = State(target, self.code)
        yaml = (new.home / "dagster.yaml").read_text().replace(str(self.home), str(new.home))
        (new.home / "dagster.yaml").write_text(yaml)
        # the stored task index path points into the old state: rewrite it (one row, tiny table)
        if new.warehouse.exists():
            import duckdb

            con = duckdb.connect(str(new.warehouse))
            try:
                has = con.execute("select count(*) from information_schema.tables where table_name = "
                                  "'task_search_index'").fetchone()[0]
                if has:
                    con.execute("update task_search_index set path = replace(path, ?, ?)",
                                [str(self.root), str(new.root)])
            finally:
                con.close()
        return new


def write_dagster_yaml(home: Path, *, pool_limit: int = 4) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "dagster.yaml"
    path.write_text(DAGSTER_YAML.format(home=home, pool_limit=pool_limit))
    return path


# ------------------------------------------------------------------------------------------------ measuring
@dataclass
class Measured:
    cmd: list[str]
    returncode: int
    wall_s: float
    peak_rss_bytes: int  # sampled: largest summed RSS of the child's process tree
    max_rss_bytes: int  # getrusage(RUSAGE_CHILDREN).ru_maxrss: largest single descendant waited for so far
    max_processes: int
    cpu_s: float  # user + system CPU seconds of the child and the descendants it waited for
    stdout: str
    stderr: str
    samples: list[tuple[float, int]] = field(default_factory=list)  # (unix time, tree RSS), every interval_s
    started_at: float = 0.0  # unix time
    peak_pss_bytes: int = 0  # sampled: largest summed PSS of the tree (shared pages split among their sharers)

    def timeline_mib(self, points: int = 60) -> list[list[float | None]]:
        step = max(1, len(self.samples) // points)
        return [[round(t - self.started_at, 1), mib(rss)] for t, rss in self.samples[::step]]

    def summary(self) -> dict[str, Any]:
        return {"wall_s": round(self.wall_s, 1), "peak_rss_mib": mib(self.peak_rss_bytes),
                "peak_pss_mib": mib(self.peak_pss_bytes),
                "max_rss_mib": mib(self.max_rss_bytes), "cpu_s": round(self.cpu_s, 1),
                "returncode": self.returncode, "max_processes": self.max_processes,
                "load_avg_1m_at_end": round(os.getloadavg()[0], 2)}


def _tree_memory(proc: psutil.Process) -> tuple[int, int, int]:
    """(summed RSS, summed PSS, processes) of `proc` and its descendants (PSS from /proc/<pid>/smaps_rollup)."""
    rss, pss, count = 0, 0, 0
    try:
        members = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0, 0, 0
    for member in members:
        try:
            full = member.memory_full_info()
        except psutil.Error:
            continue
        rss, pss, count = rss + full.rss, pss + getattr(full, "pss", full.rss), count + 1
    return rss, pss, count


def tree_cpu_s(proc: psutil.Process | None = None) -> float:
    """CPU-s (user+sys) of a process tree so far: the process, its reaped children and its live descendants
    (a worker pool's processes count while they run)."""
    proc = proc or psutil.Process()
    times = proc.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    try:
        members = proc.children(recursive=True)
    except psutil.Error:
        members = []
    for member in members:
        try:
            own = member.cpu_times()
            total += own.user + own.system
        except psutil.Error:
            continue
    return total


def run_measured(cmd: Sequence[str], env: Mapping[str, str], *, cwd: Path = PROJECT_ROOT,
                 interval_s: float = 0.1, timeout_s: float | None = None, echo: bool = True) -> Measured:
    """Run a child process to completion, sampling its process tree's RSS; stderr is echoed to our stderr."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_before = usage.ru_utime + usage.ru_stime
    started = time.perf_counter()
    started_at = time.time()
    proc = subprocess.Popen(list(cmd), cwd=cwd, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    ps = psutil.Process(proc.pid)
    out_chunks: list[str] = []
    err_chunks: list[str] = []

    def pump(stream: Any, sink: list[str], echo_to: Any) -> None:
        for line in stream:
            sink.append(line)
            if echo_to is not None:
                echo_to.write(line)
                echo_to.flush()

    threads = [threading.Thread(target=pump, args=(proc.stdout, out_chunks, sys.stderr if echo else None)),
               threading.Thread(target=pump, args=(proc.stderr, err_chunks, sys.stderr if echo else None))]
    for thread in threads:
        thread.daemon = True
        thread.start()
    peak, peak_pss, peak_n = 0, 0, 0
    samples: list[tuple[float, int]] = []
    while proc.poll() is None:
        rss, pss, n = _tree_memory(ps)
        peak, peak_pss, peak_n = max(peak, rss), max(peak_pss, pss), max(peak_n, n)
        now = time.perf_counter() - started
        samples.append((time.time(), rss))
        if timeout_s is not None and now > timeout_s:
            proc.kill()
            break
        time.sleep(interval_s)
    proc.wait()
    wall = time.perf_counter() - started
    for thread in threads:
        thread.join(timeout=5)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Measured(list(cmd), proc.returncode, wall, peak, usage.ru_maxrss * 1024, peak_n,
                    usage.ru_utime + usage.ru_stime - cpu_before, "".join(out_chunks),
                    "".join(err_chunks), samples, started_at, peak_pss)


def last_json_line(text: str) -> dict[str, Any]:
    """The last line of `text` that parses as a JSON object (child scripts report this way)."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    raise ValueError("no JSON object in the child's output")


# ------------------------------------------------------------------------------------------------ warehouse
def warehouse_counts(path: Path) -> dict[str, int]:
    """Rows of the tables the benchmarks compare (0 when a table does not exist)."""
    import duckdb

    out: dict[str, int] = {}
    if not path.exists():
        return out
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = {r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_schema = 'main'").fetchall()}
        for table in ("benchmark_prompts", "prompt_task_labels", "label_cache", "label_failures",
                      "task_coverage", "occupation_coverage"):
            out[table] = int(con.execute(f'select count(*) from "{table}"').fetchone()[0]) if table in tables else 0
        out["n_tables"] = len(tables)
        if "label_cache" in tables:
            out["label_cache_hashes"] = int(con.execute(
                "select count(distinct (prompt_hash, labeler, model, template_version, onet_version)) "
                "from label_cache").fetchone()[0])
    finally:
        con.close()
    return out


# ------------------------------------------------------------------------------------------------ dagster
STAGES = {  # step key (asset op name) -> the stage it belongs to in the reports
    "benchmark_landing": "ingest",
    "prompt_task_labels": "label",
    "task_search_index": "task_index",
}


def stage_of(step_key: str, groups: Mapping[str, str]) -> str:
    """The report stage of a step: its asset's group (a check step `<asset>_<check>` counts with its asset)."""
    name = step_key
    if name not in STAGES and name not in groups:
        owners = [a for a in (*STAGES, *groups) if name.startswith(a + "_")]
        name = max(owners, key=len) if owners else name
    if name in STAGES:
        return STAGES[name]
    group = groups.get(name)
    if group == "reference":
        return "reference"
    if group == "exports":
        return "exports"
    if group == "benchmarks":
        return "ingest"
    if group == "labels":
        return "label"
    if group == "label_validation":
        return "label_validation"
    return "analysis"


def asset_groups() -> dict[str, str]:
    """op name -> asset group, from the code location (needs the benchmap environment variables set)."""
    from pipelines.definitions import defs

    out: dict[str, str] = {}
    graph = defs.resolve_asset_graph()
    for key in graph.materializable_asset_keys:
        node = graph.get(key)
        out[key.path[-1]] = node.group_name
    return out


def step_timings(home: Path, since: float = 0.0) -> list[dict[str, Any]]:
    """Every step of every run in the instance at `home` started after `since` (unix time): run id, job,
    partition, step key, start/end, seconds, status."""
    from dagster import DagsterEventType, DagsterInstance

    rows: list[dict[str, Any]] = []
    with dagster_home(home), DagsterInstance.get() as instance:
        for run in instance.get_runs():
            records = instance.all_logs(run.run_id, of_type={
                DagsterEventType.STEP_START, DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE})
            starts: dict[str, float] = {}
            for record in records:
                event = record.dagster_event
                if event is None or event.step_key is None:
                    continue
                if event.event_type == DagsterEventType.STEP_START:
                    starts[event.step_key] = record.timestamp
                elif event.step_key in starts and starts[event.step_key] >= since:
                    rows.append({
                        "run_id": run.run_id, "job": run.job_name,
                        "partition": run.tags.get("dagster/partition")
                        or run.tags.get("dagster/asset_partition_range_start"),  # run_all's range runs
                        "step": event.step_key,
                        "start": starts[event.step_key], "end": record.timestamp,
                        "seconds": record.timestamp - starts[event.step_key],
                        "status": "success" if event.event_type == DagsterEventType.STEP_SUCCESS else "failure",
                    })
    return rows


@contextlib.contextmanager
def dagster_home(home: Path) -> Iterator[None]:
    """DAGSTER_HOME set to `home` inside the block (for DagsterInstance.get), restored after."""
    previous = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = previous


def stage_seconds(rows: Iterable[Mapping[str, Any]], groups: Mapping[str, str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for row in rows:
        stage = stage_of(str(row["step"]), groups)
        out[stage] = out.get(stage, 0.0) + float(row["seconds"])
    return {k: round(v, 1) for k, v in sorted(out.items())}


def materialization_metadata(home: Path, asset: str, name: str, since: float = 0.0) -> list[Any]:
    """The metadata value `name` of every materialization of `asset` after `since` (unix time)."""
    from dagster import AssetKey, AssetRecordsFilter, DagsterInstance

    previous = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    values: list[Any] = []
    try:
        with DagsterInstance.get() as instance:
            cursor = None
            while True:
                result = instance.fetch_materializations(
                    AssetRecordsFilter(asset_key=AssetKey(asset), after_timestamp=since), limit=1000,
                    cursor=cursor)
                for record in result.records:
                    mat = record.asset_materialization
                    if mat is not None and name in mat.metadata:
                        values.append(mat.metadata[name].value)
                if not result.has_more:
                    break
                cursor = result.cursor
    finally:
        if previous is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = previous
    return values


# ------------------------------------------------------------------------------------------------ the cold state
def run_all(state: State, *args: str, env_extra: Mapping[str, str] | None = None,
            timeout_s: float | None = None) -> Measured:
    """`python -m pipelines.run_all` over a state (with its code snapshot), measured."""
    return run_measured([PYTHON, "-m", "pipelines.run_all", *args], state.env(**dict(env_extra or {})),
                        cwd=state.code, timeout_s=timeout_s)


def cold_state(*, rebuild: bool = False) -> tuple[State, dict[str, Any]]:
    """The state `cold` leaves behind (built now, by running bench/cold.py, when missing or when it was built
    from other code than the working tree's: a stale state would measure old code)."""
    root = state_root() / "cold"
    marker = root / "result.json"
    stale = marker.exists() and json.loads(marker.read_text()).get("code_version") != code_version()
    if rebuild or not marker.exists() or stale:
        log(f"[bench] {'stale' if stale else 'no'} cold state in {root}: running bench/cold.py first")
        measured = run_measured([PYTHON, str(PROJECT_ROOT / "bench" / "cold.py")], dict(os.environ), echo=True)
        if measured.returncode != 0 or not marker.exists():
            raise RuntimeError(f"bench/cold.py failed (exit {measured.returncode})")
    result = json.loads(marker.read_text())
    return State(root, Path(result.get("code_dir") or PROJECT_ROOT)), result


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------------------------------ synthetic landing
def real_prompts(mirror: Path | None = None) -> list[dict[str, Any]]:
    """Every mirrored prompt record as parsed JSON (benchmark order, file order); bad lines are skipped."""
    root = (mirror or mirror_path()) / "benchmarks"
    out: list[dict[str, Any]] = []
    for folder in sorted(p for p in root.iterdir() if (p / "prompts.jsonl").is_file()):
        for line in (folder / "prompts.jsonl").read_bytes().split(b"\n"):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("prompt"), str) and record["prompt"].strip():
                out.append(record)
    return out


def write_benchmark(landing: Path, name: str, records: Iterable[Mapping[str, Any]], *, title: str | None = None,
                    results: Iterable[tuple[str, str, float]] = ()) -> Path:
    """A landing folder `<landing>/<name>/` with prompts.jsonl (benchmark field set to `name`),
    benchmark.toml and, when given, results.csv (benchmark, prompt_id, model, score)."""
    folder = landing / name
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "prompts.jsonl", "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps({**record, "benchmark": name}, ensure_ascii=False) + "\n")
    (folder / "benchmark.toml").write_text(
        f'title = "{title or name}"\nversion = "synthetic"\nsource_url = "https://example.org/{name}"\n'
        'license = "CC0-1.0"\nagentic = false\npublic_items = 0\nsaturated = false\n')
    rows = list(results)
    if rows:
        with open(folder / "results.csv", "w", encoding="utf-8") as handle:
            handle.write("benchmark,prompt_id,model,score\n")
            for prompt_id, model, score in rows:
                handle.write(f"{name},{prompt_id},{model},{score}\n")
    return folder


def edited_sample(n: int, *, seed: int = 7, tag: str = "v") -> list[dict[str, Any]]:
    """`n` real prompts sampled across the mirrored benchmarks, each with a small edit (a leading request
    phrase and a numbered suffix) so its prompt_hash is new; fresh prompt ids; the source benchmark in extra."""
    import random

    pool = real_prompts()
    rng = random.Random(seed)
    picked = rng.sample(pool, n)
    openers = ["Please help with this:", "Task:", "Request:", "Assignment:", "Could you do the following?"]
    out = []
    for i, record in enumerate(picked):
        out.append({
            "prompt_id": f"{tag}{i:05d}",
            "prompt": f"{openers[i % len(openers)]} {record['prompt']} [{tag}-{i}]",
            "sector": record.get("sector"),
            "extra": {"source_benchmark": record.get("benchmark"), "source_prompt_id": record.get("prompt_id")},
        })
    return out


# ------------------------------------------------------------------------------------------------ test snapshots
def labels_snapshot(root: Path, mirror: Path | None = None) -> State:
    """A state whose warehouse holds the reference group (O*NET, OEWS, task hours, exposure, WORKBank and the
    pickled task index: what labeling, analysis and exports read), built once under `root` (a file lock makes
    concurrent callers wait) in a child process, then reused; copy it with `State.copy_to` before writing."""
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    state = State(root / "state")
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "READY").exists():
            if state.root.exists():
                shutil.rmtree(state.root)
            state.create()
            code = (
                "from dagster import AssetSelection, DagsterInstance, materialize\n"
                "from pipelines.definitions import build_definitions\n"
                f"defs = build_definitions({str(state.warehouse)!r})\n"
                "sel = AssetSelection.groups('reference').without_checks()\n"
                "r = materialize(list(defs.assets), selection=sel, resources=defs.resources,\n"
                "                instance=DagsterInstance.ephemeral(), raise_on_error=False)\n"
                "raise SystemExit(0 if r.success else 1)\n")
            done = subprocess.run([PYTHON, "-c", code], env=state.env(mirror=mirror), cwd=PROJECT_ROOT,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"building the labels snapshot failed:\n{done.stderr[-4000:]}")
            (root / "READY").write_text(now_iso())
    return state


if __name__ == "__main__":  # `make bench` runs every bench/*.py: this one reports the machine and code version
    emit({"bench": "machine", "measured_at": now_iso(), "machine": machine(), "code_version": code_version(),
          "state_root": str(state_root())})
