"""A warm `run_all` (every step skipped) builds the Definitions and nothing else: the libraries only an asset's
body uses must not be imported by building them (issue 29: warm run < 5% of cold). Before they were imported
lazily, scipy, statsmodels/pandas, matplotlib and scikit-learn cost ~4 of the warm run's ~8.5 CPU-s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("scipy", "statsmodels", "pandas", "patsy", "matplotlib", "sklearn", "great_expectations", "openai")

PROBE = f"""
import json, sys
from pipelines.definitions import defs
assert len(list(defs.resolve_all_asset_keys())) > 50
print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
"""


def test_building_the_definitions_imports_no_heavy_library(tmp_path: Path) -> None:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert imported == [], f"building the Definitions imported {imported}: import them inside the function"


VERSION_PROBE = """
import json, sys
from models.labeling.offline.config import calibrated_version
from resources.readers import load_selector_fit
version = calibrated_version(load_selector_fit().version)
before = sorted(m for m in ("sklearn", "scipy") if m in sys.modules)
import models.labeling.offline as offline
unresolved = [name for name in offline.__all__ if getattr(offline, name, None) is None]
print(json.dumps({"version": version, "before": before, "unresolved": unresolved,
                  "after": "sklearn" in sys.modules}))
"""


def test_the_offline_labelers_version_is_known_without_scikit_learn(tmp_path: Path) -> None:
    """labeler_validation keys its kept rankings by the calibrated labeler's version and loads the labeler only to
    compute them (assets/label_validation.py): the package's names load lazily, so the version imports neither
    scikit-learn nor scipy; every public name still resolves (and then the labeler's modules are imported)."""
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", VERSION_PROBE], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["before"] == [] and found["unresolved"] == [] and found["after"] is True
    assert found["version"].startswith("offline-calibrated+v")
