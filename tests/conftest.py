"""Shared fixtures: the mirrored real data and a temporary warehouse."""

from __future__ import annotations

import os
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
