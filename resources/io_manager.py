"""Stores each asset as a DuckDB table named after the asset; benchmark-partitioned assets as row sets.

Swap this IO manager (and the `Warehouse` resource) for a shared warehouse when one machine is not enough:
`dagster_duckdb_polars.DuckDBPolarsIOManager(database="md:benchmap")` for MotherDuck, or a PostgreSQL IO
manager; asset code does not change because assets only return and receive polars DataFrames.
"""

from __future__ import annotations

import polars as pl
from dagster import ConfigurableIOManager, InputContext, OutputContext

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
        if obj is None:
            return
        if not isinstance(obj, pl.DataFrame):
            raise TypeError(f"asset {context.asset_key.to_user_string()} must return a polars DataFrame")
        table = _table_name(context)
        if context.has_asset_partitions:
            keys = list(context.asset_partition_keys)
            column = _partition_column(context)
            wh.replace_partitions(self.warehouse.path, table, obj, column, keys)
            if len(keys) > 1:  # one run of several partitions: each partition's record gets its own row count
                counts = dict(obj.group_by(column).len().iter_rows()) if obj.height else {}
                for key in keys:
                    context.step_context.add_asset_metadata({"row_count": int(counts.get(key, 0))},
                                                            asset_key=context.asset_key, partition_key=key)
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
