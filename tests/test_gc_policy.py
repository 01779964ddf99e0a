"""A run's garbage collector skips the objects alive at the run's start and gives them back when the run ends
(resources/gc_policy.py, through the Warehouse resource); at the process's exit the teardown skips the walk."""

import gc
import subprocess
import sys
import weakref
from pathlib import Path

import polars as pl
from dagster import AssetExecutionContext, DagsterInstance, asset, materialize

from resources.dagster_resources import Warehouse
from resources.io_manager import WarehouseIOManager


class _Node:
    """A container object that can sit in a reference cycle and be watched through a weak reference."""

    def __init__(self) -> None:
        self.other: _Node | None = None


def _cyclic_garbage() -> weakref.ref:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)  # a and b are unreachable garbage once this returns: only a full collection frees them


def test_a_run_collects_what_it_creates_and_leaves_what_it_found_until_it_ends(tmp_path: Path) -> None:
    seen: dict[str, object] = {}

    @asset
    def collected_table(context: AssetExecutionContext, warehouse: Warehouse) -> pl.DataFrame:
        seen["frozen_in_run"] = gc.get_freeze_count()
        made_in_run = _cyclic_garbage()
        gc.collect()
        seen["run_garbage_freed"] = made_in_run() is None
        seen["earlier_garbage_kept"] = seen["earlier"]() is not None  # type: ignore[operator]
        return pl.DataFrame({"n": [1]})

    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    was_enabled = gc.isenabled()
    gc.disable()  # no automatic pass may free the earlier garbage before the run begins
    try:
        gc.unfreeze()  # whatever an earlier test of this process may have frozen for good (run_all's CLI does)
        gc.collect()
        seen["earlier"] = _cyclic_garbage()
        with DagsterInstance.ephemeral() as instance:
            result = materialize([collected_table], instance=instance, resources={
                "warehouse": warehouse, "io_manager": WarehouseIOManager(warehouse=warehouse)})
        assert result.success
        assert seen["frozen_in_run"] > 0  # type: ignore[operator]
        assert seen["run_garbage_freed"] is True
        assert seen["earlier_garbage_kept"] is True
        assert gc.get_freeze_count() == 0  # given back: a process that runs on collects them as before
        gc.collect()
        assert seen["earlier"]() is None  # type: ignore[operator]
    finally:
        if was_enabled:
            gc.enable()


def test_the_exit_hook_is_registered_once_and_the_other_exit_hooks_still_run() -> None:
    code = (
        "import atexit, gc\n"
        "atexit.register(lambda: print('earlier hook ran, frozen:', gc.get_freeze_count() > 0))\n"
        "from resources.gc_policy import startup_objects_frozen\n"
        "before = atexit._ncallbacks()\n"
        "for _ in range(3):\n"
        "    with startup_objects_frozen():\n"
        "        with startup_objects_frozen():\n"
        "            assert gc.get_freeze_count() > 0\n"
        "        assert gc.get_freeze_count() > 0\n"
        "    assert gc.get_freeze_count() == 0\n"
        "print('hooks added:', atexit._ncallbacks() - before)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.stdout.splitlines() == ["hooks added: 1", "earlier hook ran, frozen: True"]
