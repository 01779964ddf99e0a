"""Shared fixtures: the mirrored real data and a temporary warehouse."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

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


# --- pytest-xdist (`-n 2`, Makefile PYTEST_ARGS): tests that share an expensive session fixture run on one worker
# (`--dist loadgroup`), so the fixture is built once per run, not once per worker: full_pipeline (a whole cold run
# on the mirror; test_exports writes into it, so it is not shared across processes) and the reference snapshot of
# bench/common.labels_snapshot (fixture `snapshot` of test_faults/test_integrity/test_multiprocess).
XDIST_GROUPS = {"full_pipeline": "full_pipeline", "snapshot": "labels_snapshot"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        for fixture, group in XDIST_GROUPS.items():
            if fixture in names:
                item.add_marker(pytest.mark.xdist_group(group))
                break
