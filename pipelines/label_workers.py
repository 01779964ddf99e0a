"""When `run_all` starts the offline labeler's worker processes (resources/label_pool.py; issue 29: a cold run on
two cores): as the very first thing of a cold run (no warehouse file yet: every step runs), before Dagster and the
Definitions are imported, so that the workers' imports, the task index build (the first worker) and Great
Expectations' import (the last worker, which then runs the reference checks) use the second core while the main
process imports and sets up; otherwise when the reference stage runs (`start`). No Dagster here: this runs
before it is imported. run_all shuts the pool down after the partitions and on every exit (`label_pool.shutdown`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from resources import label_pool
from resources.settings import SettingsError, settings


def start(warehouse_path: str | None, *, warm_checks: bool = True) -> None:
    """Start the pool: its first worker builds the task index from the O*NET files (task_search_index takes it
    when its inputs are the same), the last imports Great Expectations for the reference checks (`warm_checks`)."""
    from resources.task_index import index_dir

    label_pool.prestart(index_dir(warehouse_path) if warehouse_path else None, warm_checks=warm_checks)


def start_if_cold(argv: Sequence[str]) -> bool:
    """Start the pool now when this `run_all` is a cold one with the offline labeler: the settings' warehouse
    file does not exist yet (so the reference stage and the labeling run; `--skip-reference`: the pool starts
    when a partition has enough to label, as without run_all). True when it started."""
    try:
        config = settings()
    except SettingsError:  # said in one line by the command (pipelines/cli.py), not as a traceback from here
        return False
    if config.labeler != "offline" or label_pool.worker_count() < 2 or Path(config.warehouse).exists():
        return False
    if any(arg in ("-h", "--help", "--skip-reference") for arg in argv):  # without the reference stage: as before
        return False
    start(str(config.warehouse))
    return True
