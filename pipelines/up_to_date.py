"""The warm run's fast path: `python -m pipelines.run_all` with nothing changed since the last complete run
answers from a fingerprint, before Dagster is imported (issue 29: warm run < 5% of cold).

A plain `run_all` (no arguments besides --verbose/--log-file) that ends with every step succeeded, every
prompt labeled and every check of severity ERROR passed (exit 0; 7 when landing folders did not land, which the
fast path then repeats) writes `<warehouse>.run_all.json`: a
fingerprint of everything a run depends on, and the closing summary lines it printed (and its landing-zone warnings). The next plain run computes the fingerprint
again (~0.1 CPU-s on the mirror, stdlib and PyYAML only) and, when every part matches, prints that nothing
changed since then and the same closing lines, and exits 0 without importing Dagster (~0.2 CPU-s in all). Any
difference (or an unreadable part) takes the full path, whose header says which parts changed; when the
warehouse part still matches, its integrity check does not read every block again (that run's check did, and
the file has not been written since). The parts:

- `code`: the content of every file of models/, resources/, assets/, pipelines/ (the modules code_versions.py
  versions, the run's own code, the fitted labeler parameters in models/labeling/*.json), pyproject.toml, the
  project's dagster.yaml, the Python executable and the modification times of its site-packages folders (an
  installed or removed library);
- `settings`: every BENCHMAP_*, DAGSTER_* and OPENAI_* variable (a variable whose name says KEY, TOKEN, SECRET or
  PASSWORD: only whether it is set; no value is stored, only a sha256 over them), the working directory (a
  relative storage folder in dagster.yaml) and DAGSTER_HOME's dagster.yaml;
- `sources`: path, size and modification time of every file and folder under the landing zone and the mirror
  (the benchmarks' folders and the reference files), data/ of the project (vendored reference labels, index
  definitions) and BENCHMAP_INDEX_DIR;
- `warehouse`: the warehouse file's size, mtime, ctime and inode (a file replaced or modified since is never
  trusted: the full path checks its integrity again), and path/size/mtime of everything beside it (DuckDB's WAL,
  the label store, exports, the task index, the integrity check's run markers, the step locks; not logs/);
- `instance`: from the Dagster instance's SQLite files (read with sqlite3): the runs (count, newest update,
  any not finished), the event log (count and newest event id: a materialization from the UI, a sensor run, an
  observation, a failed or interrupted run all add events), the dynamic partitions, wiped assets and benchmap's
  own keys. A storage other than SQLite under a known folder has no fast path.

The input parts (code, settings, sources) are taken when the full run starts, the state parts (warehouse,
instance) when it has finished: a file edited while the run was going makes the next run a full one.
No dagster here (tests/test_up_to_date.py checks the fast path imports none).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import sqlite3
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from resources.settings import DEFAULT_WAREHOUSE, PROJECT_ROOT, Settings, settings

FORMAT = 1  # bumped when what is fingerprinted changes: an older file never matches
SUFFIX = ".run_all.json"
CODE_PACKAGES = ("models", "resources", "assets", "pipelines")
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
PREFIXES = ("BENCHMAP_", "DAGSTER_", "OPENAI_")
PLAIN_FLAGS = ("--verbose",)  # arguments that change nothing a run does (--log-file: with a value)
INPUT_PARTS = ("code", "settings", "sources")
STATE_PARTS = ("warehouse", "instance")
_STARTED: dict[str, Any] = {}  # the input parts this process computed first (run_all's entry, then main)


def plain_run(argv: Sequence[str]) -> bool:
    """Only `run_all` with no arguments (or only --verbose / --log-file) may skip everything."""
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in PLAIN_FLAGS or arg.startswith("--log-file="):
            continue
        if arg == "--log-file" and args:
            args.pop(0)
            continue
        return False
    return True


def fingerprint_file(warehouse: Path) -> Path:
    return warehouse.with_name(warehouse.name + SUFFIX)


# --- the parts -----------------------------------------------------------------------------------------------

def _digest(items: Iterable[object]) -> str:
    digest = hashlib.sha256()
    for item in items:
        digest.update(repr(item).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _walk(root: Path, *, skip: Iterable[Path] = (), follow: bool = True) -> list[tuple[str, int, int]]:
    """(relative path, size, mtime_ns) of every file and folder under `root` (folders: size -1, mtime 0, so an
    added empty folder counts but a folder's own mtime does not); `follow` follows links (a linked landing
    folder), each real folder once."""
    out: list[tuple[str, int, int]] = []
    skipped = {str(p) for p in skip}
    seen: set[tuple[int, int]] = set()
    todo = [root]
    while todo:
        folder = todo.pop()
        try:
            info = folder.stat()
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.path in skipped:
                continue
            rel = os.path.relpath(entry.path, root)
            try:
                if entry.is_dir(follow_symlinks=follow):
                    out.append((rel, -1, 0))
                    todo.append(Path(entry.path))
                    continue
                stat = entry.stat(follow_symlinks=follow)
            except OSError:
                out.append((rel, -2, 0))  # a broken link: its presence counts
                continue
            out.append((rel, stat.st_size, stat.st_mtime_ns))
    return sorted(out)


def _code() -> str:
    files = sorted(p for package in CODE_PACKAGES for p in (PROJECT_ROOT / package).rglob("*")
                   if "__pycache__" not in p.parts and p.suffix != ".pyc" and p.is_file())
    digest = hashlib.sha256(f"{FORMAT}\0{PROJECT_ROOT}\0{sys.executable}\0{sys.version}\0".encode())
    for path in [*files, PROJECT_ROOT / "pyproject.toml", PROJECT_ROOT / "dagster.yaml"]:
        with contextlib.suppress(OSError):
            digest.update(f"{path.relative_to(PROJECT_ROOT)}\0".encode() + path.read_bytes() + b"\0")
    for entry in sys.path:  # an installed, upgraded or removed library changes its site-packages folder
        if entry.endswith("site-packages"):
            with contextlib.suppress(OSError):
                digest.update(f"{entry}\0{os.stat(entry).st_mtime_ns}\0".encode())
    return digest.hexdigest()


def _settings(environ: dict[str, str] | os._Environ[str]) -> str:
    values = []
    for name in sorted(environ):
        if name.startswith(PREFIXES):
            secret = any(word in name for word in SECRET_WORDS)
            values.append((name, bool(environ[name]) if secret else environ[name]))
    home = _home(environ)
    yaml_text = ""
    with contextlib.suppress(OSError):
        yaml_text = (home / "dagster.yaml").read_text()
    return _digest([FORMAT, values, os.getcwd(), str(home), yaml_text])


def _home(environ: dict[str, str] | os._Environ[str]) -> Path:
    """DAGSTER_HOME, or the project root run_all uses when it is not set."""
    return Path(environ.get("DAGSTER_HOME") or PROJECT_ROOT)


def _source_roots(config: Settings) -> list[Path]:
    roots = [config.raw_dir, config.index_dir, PROJECT_ROOT / "data"]
    if config.mirror is not None:
        roots.append(config.mirror)
    if config.gguf is not None:
        roots.append(config.gguf)
    return roots


def _sources(config: Settings) -> str:
    warehouses = {DEFAULT_WAREHOUSE.parent, config.warehouse.parent}  # outputs, not inputs
    parts: list[object] = [FORMAT]
    roots = _source_roots(config)
    for root in roots:  # a root inside another (data/raw in data/) is walked once, as itself
        skip = [w for w in [*warehouses, *roots] if w.is_relative_to(root) and w != root]
        if root.is_file():
            stat = root.stat()
            parts.append((str(root), stat.st_size, stat.st_mtime_ns))
        else:
            parts.append((str(root), root.is_dir(), _walk(root, skip=skip)))
    return _digest(parts)


def _warehouse(config: Settings) -> str:
    path = config.warehouse
    try:
        stat = path.stat()
        own: object = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev)
    except OSError:
        own = None
    beside = _walk(path.parent, skip=[path.parent / "logs", fingerprint_file(path)], follow=False)
    return _digest([FORMAT, str(path), own, beside])


def storage_folder(home: Path) -> Path | None:
    """The SQLite storage folder of the instance at `home`: dagster.yaml's `storage: sqlite` or benchmap's
    PooledSqliteStorage base_dir, or `home` itself without a storage setting (Dagster's default); None for
    anything else (Postgres, per-storage settings: no fast path)."""
    try:
        text = (home / "dagster.yaml").read_text()
    except FileNotFoundError:
        return home.resolve()
    except OSError:
        return None
    try:
        import yaml  # PyYAML, a dependency of Dagster's; ~10 ms

        config = yaml.safe_load(text) or {}
    except Exception:  # noqa: BLE001 - a file PyYAML cannot read (YAMLError): the full path reports it
        return None
    if not isinstance(config, dict) or {"run_storage", "event_log_storage", "schedule_storage"} & set(config):
        return None
    storage = config.get("storage")
    if storage is None:
        return home.resolve()
    if not isinstance(storage, dict):
        return None
    if isinstance(storage.get("sqlite"), dict):
        base = storage["sqlite"].get("base_dir")
    elif isinstance(storage.get("custom"), dict) and storage["custom"].get("class") == "PooledSqliteStorage":
        base = (storage["custom"].get("config") or {}).get("base_dir")
    else:
        return None
    return Path(base).resolve() if isinstance(base, str) else None  # relative: to the working directory


INSTANCE_QUERIES = {  # file under the storage folder -> the queries whose answers describe the instance's records
    "history/runs.db": [
        "select count(*), max(id), max(update_timestamp) from runs",
        "select status, count(*) from runs group by status order by status",
        "select status, count(*), max(id) from bulk_actions group by status order by status",
        "select key, value from kvs where key like 'benchmap/%' order by key",
    ],
    "history/runs/index.db": [
        "select count(*), max(id) from event_logs",
        "select count(*), max(id) from dynamic_partitions",
        "select count(*), max(wipe_timestamp) from asset_keys",
    ],
}


UNFINISHED_RUNS = "select count(*) from runs where status not in ('SUCCESS', 'FAILURE', 'CANCELED')"


def _instance(environ: dict[str, str] | os._Environ[str]) -> str | None:
    folder = storage_folder(_home(environ))
    if folder is None:
        return None
    answers: list[object] = [FORMAT, str(folder)]
    for name, queries in INSTANCE_QUERIES.items():
        path = folder / name
        if not path.is_file():
            return None
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
            try:
                answers.append([con.execute(q).fetchall() for q in queries])
                if name == "history/runs.db" and con.execute(UNFINISHED_RUNS).fetchone()[0]:
                    return None  # a run queued or going: the full path decides what it means
            finally:
                con.close()
        except sqlite3.Error:
            return None
    return _digest(answers)


def inputs() -> dict[str, str]:
    """The input parts now, kept for this process (the entry computes them; main records the same ones)."""
    if not _STARTED:
        config = settings()
        _STARTED.update({"code": _code(), "settings": _settings(os.environ), "sources": _sources(config)})
    return dict(_STARTED)


def state() -> dict[str, str | None]:
    """The state parts now; `instance` None when the instance's storage cannot be read without Dagster or a run
    is going (nothing matches None)."""
    return {"warehouse": _warehouse(settings()), "instance": _instance(os.environ)}


# --- the summary both paths print ----------------------------------------------------------------------------

def done_line(seconds: float, n_benchmarks: int, totals: dict[str, int], failures: int, labeled: str,
              failed_checks: int = 0, label_failed_steps: int = 0) -> str:
    """`label_failed_steps`: steps that wrote their labels and failed on some prompts (failed runs in Dagster;
    the prompts are counted in `labeled`)."""
    def n(value: int, word: str) -> str:  # models.report's count() would cost the fast path polars' import
        return f"{value} {word}{'' if value == 1 else 's'}"

    steps = [f"{failures} step(s) FAILED"] if failures else []
    if label_failed_steps:
        steps.append(f"{n(label_failed_steps, 'labeling step')} FAILED on some prompts"
                     + ("" if failures else ", every other step succeeded"))
    if failed_checks:
        steps.append(f"{failed_checks} check(s) of severity ERROR FAILED")
    if not failures and not label_failed_steps:
        steps.insert(0, "all steps succeeded")
    return (f"done in {seconds:.0f}s: {n(n_benchmarks, 'benchmark')}, {n(totals['n_prompts'], 'prompt')}, "
            f"{n(totals['n_results'], 'result')}, {n(totals['n_rejects'], 'reject')}; {', '.join(steps)}; {labeled}")


# A plain run's exit code when every step succeeded but landing folders did not land (a bad name, no
# prompts.jsonl): the benchmark the folder holds is missing from every figure, so the run is not a success; here,
# not in run_summary, because the fast path repeats it without importing anything heavy.
EXIT_LANDING_PROBLEMS = 7


def landing_problems_line(warnings: Sequence[str]) -> str:
    """The closing error line of a run (or a fast path) whose landing zone has folders that did not land."""
    n = len(warnings)
    return (f"python -m pipelines.run_all: error: {n} landing folder{'' if n == 1 else 's'} did not land (the "
            f"warnings above say why; benchmark_rejects holds them under partition _landing): fix or remove "
            f"{'it' if n == 1 else 'them'} (exit {EXIT_LANDING_PROBLEMS})")


# --- record and compare -------------------------------------------------------------------------------------

def record(*, headline: list[str], n_benchmarks: int, totals: dict[str, int], release: str | None,
           log_path: Path, warnings: Sequence[str] = ()) -> Path | None:
    """After a complete plain run (exit 0, or EXIT_LANDING_PROBLEMS): the fingerprint and the closing lines (and
    its warnings about the landing zone, which the fast path repeats with that exit code), beside the warehouse."""
    now = state()
    if now["instance"] is None:
        return None
    target = fingerprint_file(settings().warehouse)
    content = {
        "format": FORMAT,
        "finished_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "parts": {**inputs(), **now},
        "summary": {"headline": headline, "n_benchmarks": n_benchmarks,
                    "totals": {k: int(totals.get(k, 0)) for k in ("n_prompts", "n_results", "n_rejects")},
                    "release": release, "log": str(log_path), "warnings": list(warnings)},
    }
    try:
        temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(content, indent=1))
        os.replace(temporary, target)  # whole or not at all, for a run reading it meanwhile
    except OSError:
        return None
    return target


def forget() -> None:
    """A full run starts: the recorded fingerprint no longer describes a finished run (removed)."""
    with contextlib.suppress(OSError):
        fingerprint_file(settings().warehouse).unlink()


def _recorded() -> dict[str, Any] | None:
    try:
        content = json.loads(fingerprint_file(settings().warehouse).read_text())
    except (OSError, ValueError):
        return None
    return content if isinstance(content, dict) and content.get("format") == FORMAT else None


def changed_parts(recorded: dict[str, Any] | None = None) -> list[str] | None:
    """The parts that differ from the recorded fingerprint (empty: nothing changed); None when there is none."""
    recorded = recorded if recorded is not None else _recorded()
    if recorded is None:
        return None
    parts = recorded.get("parts") or {}
    now = {**inputs(), **state()}
    return [name for name in (*INPUT_PARTS, *STATE_PARTS) if now.get(name) is None or parts.get(name) != now[name]]


def why_full() -> tuple[str, bool]:
    """For the full path's header: why nothing could be skipped before Dagster was imported; and whether the
    warehouse part still matches (the file, its blocks read by that run's integrity check, is as it left it)."""
    recorded = _recorded()
    changed = changed_parts(recorded) if recorded is not None else None
    if changed is None:
        return "no complete run recorded", False
    why = f"changed since the complete run of {recorded.get('finished_at')}: {', '.join(changed) or 'none'}"
    if "warehouse" not in changed:
        why += " (the warehouse file is as that run left it: its blocks are not read again)"
    return why, "warehouse" not in changed


def start() -> tuple[str, bool]:
    """A full run starts (before the Definitions are built: a file edited meanwhile makes the next run full):
    why_full(), then the record is removed (it no longer describes the state once this run writes)."""
    why = why_full()
    forget()
    return why


def fast_path(argv: Sequence[str]) -> int | None:
    """The exit code (and the summary printed) when a plain run finds nothing changed since the last complete
    run: 0, or EXIT_LANDING_PROBLEMS when that run's landing zone had folders that did not land; else None."""
    if not plain_run(argv):
        return None
    try:
        recorded = _recorded()
        if recorded is None or changed_parts(recorded) != []:
            return None
        summary = recorded["summary"]
        print(f"benchmap run_all: nothing changed since {recorded['finished_at']} (code, settings, landing zone, "
              f"reference files, warehouse and Dagster instance as that complete run left them): every step up "
              f"to date, nothing run")
        for warning in summary.get("warnings") or []:
            print(f"  warning: {warning}")
        print()
        for line in summary["headline"]:
            print(line)
        print(done_line(0, summary["n_benchmarks"], summary["totals"], 0, "0 labeled, 0 failed"))
        if summary.get("release"):
            print(summary["release"])
        print(f"Dagster log: {summary['log']} (of that run; nothing ran now)")
        if summary.get("warnings"):
            print(landing_problems_line(summary["warnings"]), file=sys.stderr)
            return EXIT_LANDING_PROBLEMS
        return 0
    except (KeyError, TypeError, ValueError, OSError):  # a damaged record or a bad setting: the full path decides
        return None
