"""Shared fixtures: the mirrored real data and a temporary warehouse."""

from __future__ import annotations

import json
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MIRROR = (PROJECT_ROOT / ".." / "shared" / "data").resolve()


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The read-only mirror of real public data (BENCHMAP_MIRROR, default ../shared/data)."""
    path = Path(os.environ.get("BENCHMAP_MIRROR", DEFAULT_MIRROR))
    if not path.is_absolute():
        path = (PROJECT_ROOT / path).resolve()
    if not (path / "onet").is_dir():
        pytest.fail(f"the data mirror is missing at {path}: set BENCHMAP_MIRROR (see README)")
    os.environ["BENCHMAP_MIRROR"] = str(path)
    return path


@pytest.fixture
def empty_raw_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty landing zone so that sources resolve from the mirror, never from a developer's data/raw."""
    raw = tmp_path / "raw"
    raw.mkdir()
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(raw))
    monkeypatch.setenv("BENCHMAP_OFFLINE", "1")
    return raw


@pytest.fixture
def warehouse_path(tmp_path: Path) -> Path:
    return tmp_path / "warehouse" / "benchmap.duckdb"


@dataclass
class PipelineRun:
    """One full materialization of every asset on the mirror (run once per test session)."""

    root: Path
    warehouse: Path
    dagster_home: Path
    env: dict[str, str]
    defs: object
    seconds: float

    def apply_env(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)


@pytest.fixture(scope="session")
def full_pipeline(mirror: Path, tmp_path_factory: pytest.TempPathFactory) -> PipelineRun:
    """`pipelines.run_all` over all 29 mirrored benchmarks into a temporary warehouse and Dagster instance,
    exactly as `make run` does, with the offline labeler. Shared by the end-to-end tests."""
    from pipelines import run_all
    from pipelines.definitions import build_definitions

    root = tmp_path_factory.mktemp("full_pipeline")
    home = root / "dagster_home"
    home.mkdir()
    raw = root / "raw"
    raw.mkdir()
    warehouse = root / "warehouse" / "benchmap.duckdb"
    env = {"DAGSTER_HOME": str(home), "BENCHMAP_WAREHOUSE": str(warehouse), "BENCHMAP_LABELER": "offline",
           "BENCHMAP_RAW_DIR": str(raw), "BENCHMAP_OFFLINE": "1", "BENCHMAP_MIRROR": str(mirror)}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        patch.delenv("OPENAI_API_KEY", raising=False)
        defs = build_definitions(str(warehouse))
        started = time.perf_counter()
        assert run_all.main([], defs=defs) == 0, "run_all failed on the mirror"
        seconds = time.perf_counter() - started
    return PipelineRun(root, warehouse, home, env, defs, seconds)


def run_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's temporary root, shared by every xdist worker (each worker's basetemp is a `popen-gwN`
    folder inside it); without xdist the run's own basetemp, so nothing is shared between runs."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def snapshot(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> Any:
    """bench.common.labels_snapshot (the reference tables + pickled task index) for test_faults, test_integrity
    and test_multiprocess: built once per run (its file lock makes a second worker wait for the first), then
    read only: every test works on `snapshot.copy_to(...)`."""
    from bench import common

    return common.labels_snapshot(run_tmp(tmp_path_factory) / "benchmap_labels_snapshot", mirror)


# --- pytest-xdist (`-n 2 --dist loadgroup`, Makefile PYTEST_ARGS). A group runs on one worker; the work units are
# handed out in the order below (loadgroup's own order, largest group first, is switched off), so the two long
# lanes start at once on different workers and everything else fills in around them:
# 1. local_llm: the llama.cpp end-to-end test (the longest single test) and the server start/stop test;
# 2. full_pipeline: a whole cold run on the mirror, shared by every test that takes it; test_exports writes into it;
# 3. the tests of one module that share a module-scoped fixture (test_labels' e2e warehouse, test_selector's
#    prepared reference, test_gaps_mirror's landed benchmarks, ...): built once, not once per worker;
# 4. the tests on a copy of the labels snapshot (each a few Dagster runs), then the rest in file order.
# The labels snapshot itself is shared between workers through run_tmp and its file lock: those tests are free.
XDIST_GROUPS = {"full_pipeline": "full_pipeline"}
XDIST_MODULE_GROUPS = {"test_local_llm.py": "local_llm"}
XDIST_ORDER = ("local_llm", "full_pipeline")


def _xdist_group(item: pytest.Item) -> str | None:
    names = set(getattr(item, "fixturenames", ()))
    group = next((g for fixture, g in XDIST_GROUPS.items() if fixture in names), None)
    group = group or XDIST_MODULE_GROUPS.get(item.path.name)
    if group is None:
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info else ()
        if any(d and d[-1].scope == "module" for d in defs):
            group = f"module:{item.path.name}"
    return group


def _lane(item: pytest.Item) -> int:
    group = next((m.args[0] for m in item.iter_markers("xdist_group")), None)
    if group in XDIST_ORDER:
        return XDIST_ORDER.index(group)
    if group is not None:
        return len(XDIST_ORDER)
    return len(XDIST_ORDER) + (1 if "snapshot" in getattr(item, "fixturenames", ()) else 2)


def _loadgroup(config: pytest.Config) -> bool:
    # the controller has dist == "loadgroup"; xdist gives its workers dist "no" and loadgroup True
    return getattr(config.option, "dist", "no") == "loadgroup" or bool(getattr(config.option, "loadgroup", False))


def pytest_configure(config: pytest.Config) -> None:
    if _loadgroup(config):
        config.option.loadscopereorder = False  # hand out the units in collection order (below), not by size


def _suffix_node_id(item: pytest.Item, group: str) -> None:
    """`<node id>@<group>`: what loadgroup schedules by. xdist 3.8 writes `item._nodeid`, which pytest 9 no longer
    reads (its node IDs are `item._id`), so without this every group was silently ignored and full_pipeline was
    built once per worker."""
    if item.nodeid.endswith(f"@{group}"):
        return  # an xdist that does it itself
    try:
        from _pytest.nodeid import coerce_node_id

        item._id = coerce_node_id(f"{item.nodeid}@{group}")
    except (ImportError, AttributeError, TypeError, ValueError):
        pass
    if not item.nodeid.endswith(f"@{group}"):
        raise pytest.UsageError(f"cannot put {item.nodeid} in xdist group {group}: pytest's node IDs changed; "
                                "fix tests/conftest.py _suffix_node_id or run with PYTEST_ARGS=")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = _xdist_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
            if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
                _suffix_node_id(item, group)
    if _loadgroup(config):
        items.sort(key=_lane)  # stable: file order within a lane


# --- CPU time per test: the machine is shared, so wall times alone say little. Each phase's CPU seconds (this
# process and its waited-for children, e.g. Dagster step processes and the llama.cpp server) go into the
# report; the run ends with the per-worker totals, and BENCHMAP_TEST_TIMES=<file> appends every test's (JSON lines).
def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(item: pytest.Item, phase: str):
    started = _cpu_seconds()
    yield
    item.user_properties.append((f"cpu_{phase}", round(_cpu_seconds() - started, 3)))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    yield from _timed(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    yield from _timed(item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item):
    yield from _timed(item, "teardown")


_TIMES: list[dict] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    cpu = dict(report.user_properties).get(f"cpu_{report.when}")
    if cpu is None or os.environ.get("PYTEST_XDIST_WORKER"):
        return  # counted once, where the reports meet (the controller, or the only process)
    node = getattr(report, "node", None)
    worker = getattr(getattr(node, "gateway", None), "id", "main")
    row = {"test": report.nodeid, "phase": report.when, "worker": worker, "wall_s": round(report.duration, 3),
           "cpu_s": cpu}
    _TIMES.append(row)
    if os.environ.get("BENCHMAP_TEST_TIMES"):  # one JSON line per test phase, as they finish
        with open(os.environ["BENCHMAP_TEST_TIMES"], "a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _TIMES:
        return
    workers: dict[str, list[float]] = {}
    for row in _TIMES:
        totals = workers.setdefault(row["worker"], [0.0, 0.0])
        totals[0] += row["wall_s"]
        totals[1] += row["cpu_s"]
    terminalreporter.write_sep("=", "time per worker (sum over tests)")
    for worker, (wall, cpu) in sorted(workers.items()):
        terminalreporter.write_line(f"{worker}: {wall:8.1f} s wall, {cpu:8.1f} CPU-s")
    terminalreporter.write_line(f"load average at the end: {os.getloadavg()}")
