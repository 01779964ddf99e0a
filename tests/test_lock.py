"""requirements.lock: the versions `make` installs (pip's -c) are the ones the tests pass with. Every dependency
pyproject.toml declares is pinned there within its declared range, and the environment the tests run in holds the
pinned versions (a package installed by hand at another version would make a passing run say nothing of the lock)."""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for number, line in enumerate((ROOT / "requirements.lock").read_text().splitlines(), start=1):
        if not line.strip():
            continue
        name, separator, pinned = line.partition("==")
        assert separator and pinned, f"requirements.lock line {number}: {line!r} is not name==version"
        pins[canonicalize_name(name)] = pinned.strip()
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    return [Requirement(line) for line in lines]


def test_every_declared_dependency_is_pinned_within_its_range() -> None:
    locked = _locked()
    pinned = [(r, locked.get(canonicalize_name(r.name))) for r in _declared()]
    missing = [str(r) for r, pin in pinned if pin is None]
    outside = [f"{r} (locked {pin})" for r, pin in pinned
               if pin is not None and not r.specifier.contains(pin, prereleases=True)]
    assert not missing, f"declared but not in requirements.lock (run `make lock`): {missing}"
    assert not outside, f"locked outside pyproject.toml's range (run `make lock`): {outside}"


def test_the_tests_run_on_the_locked_versions() -> None:
    drifted = []
    for name, pinned in _locked().items():
        try:
            installed = version(name)
        except PackageNotFoundError:  # an extra this environment did not install (e.g. local-llm)
            continue
        if installed != pinned:
            drifted.append(f"{name} {installed} (locked {pinned})")
    assert not drifted, f"installed at other versions than requirements.lock: {drifted}"
