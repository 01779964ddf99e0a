"""The benchmap code location: every asset, check, resource, sensor and schedule.

`dagster dev` (with DAGSTER_HOME at the project root) loads this module through pyproject's [tool.dagster].
"""

from __future__ import annotations

from dagster import Definitions

from assets import analysis, benchmarks, exports, gaps, labels, reference
from pipelines.io_manager import WarehouseIOManager
from pipelines.jobs import JOBS
from pipelines.resources import Warehouse, build_labeler_resource, warehouse_path_from_env
from pipelines.schedules import SCHEDULES
from pipelines.sensors import SENSORS

_DOMAINS = [reference, benchmarks, labels, analysis, gaps, exports]


def build_definitions(warehouse_path: str | None = None) -> Definitions:
    """Definitions over one warehouse file (tests pass a temporary one)."""
    warehouse = Warehouse(path=warehouse_path or warehouse_path_from_env())
    return Definitions(
        assets=[asset for domain in _DOMAINS for asset in domain.ASSETS],
        asset_checks=[check for domain in _DOMAINS for check in domain.CHECKS],
        jobs=JOBS,
        sensors=SENSORS,
        schedules=SCHEDULES,
        resources={
            "warehouse": warehouse,
            "io_manager": WarehouseIOManager(warehouse=warehouse),
            "labeler": build_labeler_resource(),
        },
    )


defs = build_definitions()
