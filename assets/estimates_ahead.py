"""The headline's judged checks started ahead of the headline (issue 29): run_all's analysis run executes its
steps one after the other in one process, and the headline step (assets/estimates.py) only started the judged
checks (~15 CPU-s in a worker, assets/estimates_split.py) once it had read its inputs, so the worker's core sat
idle through the analysis steps before it. Their inputs (texts, labels, judge rows, tasks, hours) are all
materialized before the analysis run: `judged_checks_ahead` starts them in the worker before the run, keeps
them under their key (the judged problem, the relabeling's inputs, the settings, the code version) and drops
them when the run ends. The headline takes them only when its own key is the same (the same inputs, settings
and code: the same values), else starts its own as before; a materialization outside run_all never finds any.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from dagster import AssetKey, AssetsDefinition

from assets.estimates import EstimatesConfig, _problem, read_inputs
from assets.estimates_split import drop_ahead, keep_ahead, start_judged_checks
from models import estimates as es
from resources.dagster_resources import Warehouse
from resources.worker_pool import shared_pool

HEADLINE = AssetKey("headline_estimates")
FIGURE_MODULES = ("matplotlib.figure", "matplotlib.backends.backend_agg", "PIL.Image", "models.figures.estimates")
# what the judged checks' parts run (and unpickle: the split relabeler): ~3 CPU-s of imports in a fresh worker
JUDGED_CHECK_MODULES = ("models.estimates", "models.labeling.stacking_split")


def warm_judged_checks_worker() -> None:
    """Start the worker pool's worker now and have it import what the judged checks run: run_all calls it when
    the analysis is about to run, so the imports use the core this process leaves idle while it sets the run up
    and reads the checks' inputs (`judged_checks_ahead`), instead of delaying the checks' first part. Only a
    head start: when the worker cannot start, the steps start theirs (or compute in process) as before."""
    try:
        shared_pool().warm(JUDGED_CHECK_MODULES)
    except Exception as error:  # noqa: BLE001 - said, and left to the steps
        print(f"  warning: the analysis worker did not start ahead ({type(error).__name__}: {error})",
              file=sys.stderr)


def headline_code_versions(assets: list[Any]) -> list[str] | None:
    """The code versions the headline step keys its checks by (assets.estimates.code_versions_of), or None when
    `assets` define no headline."""
    for definition in assets:
        if isinstance(definition, AssetsDefinition) and HEADLINE in definition.keys:
            return sorted(str(v) for v in (definition.code_versions_by_key or {}).values() if v)
    return None


def start_judged_checks_ahead(warehouse: Warehouse, code_versions: list[str],
                              config: EstimatesConfig | None = None, log: Any = None) -> bool:
    """Start the headline's judged checks in the worker pool now, from the warehouse as it is (the headline takes
    them when its key is the same); False when there is nothing to start (no labels yet)."""
    if not warehouse.table_exists("prompt_task_labels") or not warehouse.table_exists("benchmark_prompts"):
        return False
    config = config or EstimatesConfig()  # run_all's analysis run has no run config: the headline's defaults
    with warehouse.held():  # one open of the file for the dozen reads
        inputs = read_inputs(warehouse)
    judge_rows = inputs["judge_rows"]
    texts = es.text_frame(inputs["prompts"], judge_rows)  # type: ignore[arg-type]
    problem = _problem(inputs, judge_rows, inputs["labels"])  # type: ignore[arg-type]
    # computing in a worker, or read back from the cache (the headline then need not read it again)
    keep_ahead(start_judged_checks(warehouse, inputs, texts, problem, config, code_versions, log))
    # then the worker imports what the headline's figures draw with (it is idle between the checks and them)
    shared_pool().warm(FIGURE_MODULES)
    return True


@contextlib.contextmanager
def judged_checks_ahead(warehouse: Warehouse | None, assets: list[Any]) -> Iterator[bool]:
    """Around a run that materializes the headline in this process: its judged checks start before it and are
    dropped when it ends (taken or not), so no later run finds checks of older inputs. Starting them never fails
    the run: the headline then starts its own."""
    code_versions = headline_code_versions(assets)
    started = False
    if warehouse is not None and code_versions is not None:
        try:
            started = start_judged_checks_ahead(warehouse, code_versions)
        except Exception as error:  # noqa: BLE001 - the headline computes them itself
            drop_ahead()
            print(f"  warning: judged checks not started ahead ({type(error).__name__}: {error}): the headline "
                  "starts them", file=sys.stderr)
    try:
        yield started
    finally:
        drop_ahead()
