"""Stores each asset as a DuckDB table named after the asset; benchmark-partitioned assets as row sets.

Swap this IO manager (and the `Warehouse` resource) for a shared warehouse when one machine is not enough:
`dagster_duckdb_polars.DuckDBPolarsIOManager(database="md:benchmap")` for MotherDuck, or a PostgreSQL IO
manager; asset code does not change because assets only return and receive polars DataFrames.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
from dagster import AssetExecutionContext, AssetKey, ConfigurableIOManager, InputContext, OutputContext

from models.sliced_frame import SlicedFrame
from resources import interrupts
from resources import warehouse as wh
from resources.dagster_resources import Warehouse

PARTITION_COLUMN = "benchmark"


def _table_name(context: InputContext | OutputContext) -> str:
    return context.asset_key.path[-1]


def _partition_column(context: OutputContext | InputContext) -> str:
    definition_metadata = context.definition_metadata or {}
    return str(definition_metadata.get("partition_expr", PARTITION_COLUMN))


class WarehouseIOManager(ConfigurableIOManager):
    warehouse: Warehouse

    def handle_output(self, context: OutputContext, obj: pl.DataFrame | None) -> None:
        interrupts.check()  # run_all was asked to stop: a step that swallowed the interrupt writes nothing
        if obj is None:
            return
        if isinstance(obj, SlicedFrame):  # a table too big to hold whole: written a slice at a time
            wh.replace_table_in_slices(self.warehouse.path, _table_name(context), obj.slices())
            context.add_output_metadata({"table": f"main.{_table_name(context)}", "row_count": obj.height})
            return
        if not isinstance(obj, pl.DataFrame):
            raise TypeError(f"asset {context.asset_key.to_user_string()} must return a polars DataFrame (or a SlicedFrame)")
        table = _table_name(context)
        if context.has_asset_partitions:
            keys = list(context.asset_partition_keys)
            column = _partition_column(context)
            wh.replace_partitions(self.warehouse.path, table, obj, column, keys)
            if len(keys) > 1:  # one run of several partitions: each partition's record gets its own row count
                counts = dict(obj.group_by(column).len().iter_rows()) if obj.height else {}
                add_partition_metadata(context, context.asset_key,
                                       {key: {"row_count": int(counts.get(key, 0))} for key in keys})
        else:
            wh.replace_table(self.warehouse.path, table, obj)
        context.add_output_metadata({"table": f"main.{table}", "row_count": obj.height})

    def load_input(self, context: InputContext) -> pl.DataFrame:
        """The upstream table (its partitions' rows when partitioned). Input metadata narrows what is loaded, so
        big tables do not cost memory a step does not use: `{"columns": [...]}` loads only those columns,
        `{"keys_in": "other_table"}` only rows whose (benchmark, prompt_id) occur in that table."""
        table = _table_name(context)
        metadata = context.definition_metadata or {}
        columns = metadata.get("columns")
        keys_in = metadata.get("keys_in")
        if context.has_asset_partitions:
            keys = list(context.asset_partition_keys)
            upstream = context.upstream_output
            column = _partition_column(upstream) if upstream is not None else PARTITION_COLUMN
            return wh.read_table(self.warehouse.path, table, where_column=column, where_values=keys,
                                 columns=columns, keys_in=keys_in)
        return wh.read_table(self.warehouse.path, table, columns=columns, keys_in=keys_in)


def add_partition_metadata(context: AssetExecutionContext | OutputContext, asset_key: AssetKey | str,
                           by_partition: Mapping[str, Mapping[str, Any]]) -> None:
    """Metadata of each partition's own materialization record, in a run of several partitions.

    Dagster's `add_asset_metadata(partition_key=...)` checks the key against the run's range by reading the
    instance's dynamic partitions anew on every call (a SQLite query, about 0.04 s: 12 per benchmark in a
    cold run); the keys are checked here once against the run's partitions, then added to the step's
    metadata directly (falling back to the public call if Dagster's internals move)."""
    if isinstance(context, OutputContext):
        step_context, targeted = context.step_context, set(context.asset_partition_keys)
    else:
        step_context, targeted = context.op_execution_context._step_execution_context, set(context.partition_keys)
    key = AssetKey.from_coercible(asset_key)
    outside = sorted(set(by_partition) - targeted)
    if outside:
        raise ValueError(f"metadata for partitions {outside} of {key.to_user_string()} that this run does not target")
    accumulator = getattr(step_context, "_metadata_accumulator", None)
    for partition, metadata in by_partition.items():
        if accumulator is None or not hasattr(accumulator, "with_additional_asset_metadata"):
            step_context.add_asset_metadata(metadata, asset_key=key, partition_key=partition)
            continue
        accumulator = accumulator.with_additional_asset_metadata(asset_key=key, partition_key=partition,
                                                                 metadata=metadata)
    if accumulator is not None and hasattr(accumulator, "with_additional_asset_metadata"):
        step_context._metadata_accumulator = accumulator
