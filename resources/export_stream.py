"""Export tables written from the warehouse in slices (issue 29 item 5): the Parquet and CSV files of a big table
(`models.exports.STREAMED_TABLES`, e.g. the 7.3M rows of prompt_occupation_estimates at 50x) without the table
ever whole in memory.

DuckDB sorts the table in the canonical order (`models.exports.plain_sort_columns`; it spills to disk past its
memory limit) and hands it over in record batches; each batch is appended to the CSV by polars (the same cell text
as `DataFrame.write_csv` of the whole frame) and to the Parquet file as a row group (pyarrow, zstd, statistics:
the same values as `write_parquet`). `StreamedTable` stands in for the prepared frame where only its shape is
read (height, schema, columns: data dictionary, README, manifest). No dagster here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from models import exports as ex
from models.sliced_frame import SLICE_ROWS
from resources import warehouse as wh
from resources.warehouse import quote_identifier

BATCH_ROWS = SLICE_ROWS  # per slice (as the warehouse write's): ~20 MB of a 6-column table, few Parquet row groups


@dataclass(frozen=True)
class StreamedTable:
    """An exported table left in the warehouse: its shape, and the order its files are written in."""

    warehouse: str
    table: str
    schema: pl.Schema
    height: int
    order: tuple[str, ...]

    @property
    def columns(self) -> list[str]:
        return list(self.schema)

    def content_sha256(self) -> str:
        """A SHA-256 of the table's rows (count and the sum of DuckDB's row hashes, which no order changes):
        what a release compares without reading the table into memory (resources/release.py table_hashes)."""
        columns = ", ".join(quote_identifier(c) for c in self.schema)
        with wh.connect(self.warehouse, read_only=True) as con:
            n, total = con.execute(f"select count(*), coalesce(sum(hash({columns})), 0)::varchar "
                                   f"from {quote_identifier(self.table)}").fetchone()
        return hashlib.sha256(f"{n}:{total}:{list(self.schema.items())}".encode()).hexdigest()

    def write(self, parquet: Path, csv: Path, batch_rows: int = BATCH_ROWS) -> None:
        """`<table>.parquet` and `<table>.csv`, slice by slice in the canonical order."""
        order = ", ".join(f"{quote_identifier(c)} asc nulls last" for c in self.order)
        columns = ", ".join(quote_identifier(c) for c in self.schema)
        sql = f"select {columns} from {quote_identifier(self.table)} order by {order}"
        writer: pq.ParquetWriter | None = None
        with wh.connect(self.warehouse, read_only=True) as con, open(csv, "wb") as text:
            con.abort()
            batches = con.sql(sql).to_arrow_reader(batch_rows)
            try:
                for batch in batches:
                    frame = pl.from_arrow(batch, schema_overrides=dict(self.schema))
                    assert isinstance(frame, pl.DataFrame)
                    frame = frame.cast(dict(self.schema))  # the warehouse's types, as read_table gives them
                    arrow = frame.to_arrow()
                    if writer is None:
                        writer = pq.ParquetWriter(parquet, arrow.schema, compression="zstd", write_statistics=True)
                    writer.write_table(arrow)
                    ex.csv_safe(frame).write_csv(text, include_header=text.tell() == 0)
                if writer is None:  # no rows: the header and an empty file, as the whole-frame path writes
                    empty = pl.DataFrame(schema=self.schema)
                    empty.write_parquet(parquet, compression="zstd", statistics=True)
                    empty.write_csv(text)
            finally:
                if writer is not None:
                    writer.close()


def streamed_table(warehouse: str | Path, table: str) -> StreamedTable | None:
    """The table as a `StreamedTable` when it is one of `models.exports.STREAMED_TABLES`, the warehouse has it
    and its canonical order is a plain column sort; else None (the caller reads it whole)."""
    if table not in ex.STREAMED_TABLES:
        return None
    with wh.connect(warehouse, read_only=True) as con:
        if not wh.table_exists(con, table):
            return None
        schema = wh.fetch_polars(con, f"select * from {quote_identifier(table)} limit 0").schema
        order = ex.plain_sort_columns(table, schema)
        if order is None:
            return None
        height = con.execute(f"select count(*) from {quote_identifier(table)}").fetchone()[0]
    return StreamedTable(str(warehouse), table, schema, int(height), tuple(order))
