"""The benchmap code location: every asset, check, resource, sensor and schedule.

`dagster dev` (with DAGSTER_HOME at the project root) loads this module through pyproject's [tool.dagster].

Runs launched by the daemon, `dagster job execute` or `dagster asset materialize` use the multiprocess executor
(each step in its own process) with at most BENCHMAP_MAX_CONCURRENT (default 2) steps at once per run; the
labeling step of the `openai` labeler also takes a slot of the instance-wide `llm_api` concurrency pool. See
docs/scale_out.md. (`materialize()` / `execute_in_process()`, used by run_all and the tests, run in process.)
"""

from __future__ import annotations

import os

from dagster import Definitions, multiprocess_executor

from assets import analysis, benchmarks, estimates, exports, gaps, indexes, labels, reference
from pipelines.io_manager import WarehouseIOManager
from pipelines.jobs import JOBS
from pipelines.resources import Warehouse, build_labeler_resource, warehouse_path_from_env
from pipelines.schedules import SCHEDULES
from pipelines.sensors import SENSORS

_DOMAINS = [reference, benchmarks, labels, indexes, analysis, estimates, gaps, exports]


def max_concurrent_from_env() -> int:
    """Steps run at once within one run (BENCHMAP_MAX_CONCURRENT, default 2: this project's 2-core machine)."""
    return max(1, int(os.environ.get("BENCHMAP_MAX_CONCURRENT", "2")))


def build_definitions(warehouse_path: str | None = None) -> Definitions:
    """Definitions over one warehouse file (tests pass a temporary one)."""
    warehouse = Warehouse(path=warehouse_path or warehouse_path_from_env())
    return Definitions(
        assets=[asset for domain in _DOMAINS for asset in domain.ASSETS],
        asset_checks=[check for domain in _DOMAINS for check in domain.CHECKS],
        jobs=JOBS,
        sensors=SENSORS,
        schedules=SCHEDULES,
        executor=multiprocess_executor.configured({"max_concurrent": max_concurrent_from_env()}),
        resources={
            "warehouse": warehouse,
            "io_manager": WarehouseIOManager(warehouse=warehouse),
            "labeler": build_labeler_resource(),
        },
    )


defs = build_definitions()
