"""The benchmap code location: every asset, check, resource, sensor and schedule.

`dagster dev` (with DAGSTER_HOME at the project root) loads this module through pyproject's [tool.dagster] and
calls `code_location` (`@definitions`: nothing is built, and no setting read, when the module is imported).
`from pipelines.definitions import defs` (run_all, bench) builds the same Definitions on first use.

Assets and checks are collected from the modules of the `assets` package (`load_assets_from_package_module`),
so an asset added to any of them is in the code location without a list to edit here. Every asset has a
`code_version` of its own (pipelines/code_versions.py: its module, the project modules it imports, and the
settings that change results), so Dagster's "stale" badge names the assets a code change affects.

Runs launched by the daemon (the sensors' refreshes), the UI, `dagster job execute` or `dagster asset materialize`
run their steps one after the other in the run's process (`in_process_executor`), as run_all's and the tests'
`execute_in_process()` do: the steps share the run's imports, its open warehouse and its worker processes
(resources/worker_pool.py: the second core). BENCHMAP_EXECUTOR=multiprocess gives each step a process of its own,
at most BENCHMAP_MAX_CONCURRENT (default 2) at once: each step process then imports Dagster, the code location and
its libraries again (~1-2 CPU-s a step): after one new 300-prompt benchmark the daemon's two runs took 9-11 s +
61-79 s that way, 5-6 s + 11-14 s in process (bench/daemon_path.py, 2026-12-04, 2 cores). The daemon starts each
run in a process forked from a warm fork server that has imported this module and the runs' libraries
(dagster.yaml's run launcher, resources/run_launcher.py: 2.2 s + 9.0 s, 2026-12-05). The labeling step (of any
labeler) takes a slot of the instance-wide `llm_api` concurrency pool under either executor. See
docs/scale_out.md.
"""

from __future__ import annotations

from typing import Any

from dagster import (
    AssetChecksDefinition,
    AssetsDefinition,
    AssetSpec,
    Definitions,
    definitions,
    in_process_executor,
    load_asset_checks_from_package_module,
    load_assets_from_package_module,
    multiprocess_executor,
)

import assets as assets_package
from models.markdown import markdown_plain
from pipelines import code_versions
from pipelines.jobs import JOBS
from pipelines.schedules import SCHEDULES
from pipelines.sensors import SENSORS
from resources.dagster_resources import Warehouse, build_labeler_resource
from resources.io_manager import WarehouseIOManager
from resources.settings import settings


def all_assets() -> list[AssetsDefinition]:
    """Every asset defined in the `assets` package, its description escaped for the UI's Markdown (models/markdown.py
    `markdown_plain`): an asset's page renders it (checked in a browser); the catalog's list shows it as written,
    so paths and globs are written as `code spans`, which read the same in both."""
    return [_markdown_description(a) for a in load_assets_from_package_module(assets_package, include_specs=True)]


def _markdown_description(asset: Any) -> Any:
    def plain(spec: AssetSpec) -> AssetSpec:
        return spec.replace_attributes(description=markdown_plain(spec.description)) if spec.description else spec

    if isinstance(asset, AssetSpec):
        return plain(asset)
    return asset.map_asset_specs(plain) if isinstance(asset, AssetsDefinition) else asset


def all_asset_checks() -> list[AssetChecksDefinition]:
    """Every asset check defined in the `assets` package."""
    return list(load_asset_checks_from_package_module(assets_package))


def build_definitions(warehouse_path: str | None = None) -> Definitions:
    """Definitions over one warehouse file (tests pass a temporary one; default: the settings' warehouse)."""
    config = settings()
    warehouse = Warehouse(path=warehouse_path or str(config.warehouse))
    labeler = build_labeler_resource(config)
    salt = code_versions.settings_fingerprint(labeler, config)
    return Definitions(
        assets=code_versions.with_code_versions(all_assets(), salt,
                                                code_versions.settings_fingerprint(config=config, labeling=False)),
        asset_checks=all_asset_checks(),
        jobs=JOBS,
        sensors=SENSORS,
        schedules=SCHEDULES,
        executor=(multiprocess_executor.configured({"max_concurrent": config.max_concurrent})
                  if config.executor == "multiprocess" else in_process_executor),
        resources={
            "warehouse": warehouse,
            "io_manager": WarehouseIOManager(warehouse=warehouse),
            "labeler": labeler,
        },
    )


@definitions
def code_location() -> Definitions:
    """What Dagster's tools load (`dagster dev`, the daemon, the multiprocess executor's step processes)."""
    return build_definitions()


def __getattr__(name: str) -> Any:
    """`defs`: the Definitions over the settings' warehouse, built on first use and then kept (as the module
    attribute it used to be)."""
    if name == "defs":
        value = build_definitions()
        globals()["defs"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
