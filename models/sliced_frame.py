"""A table built slice by slice as it is written, never whole in memory (issue 29 item 5: 50x the mirror's
per-text table, prompt_occupation_estimates, is 7.3M rows of strings, ~1 GiB, and set headline_estimates' peak).

The IO manager (resources/io_manager.py) writes one slice at a time; `collect()` gives the whole frame (tests,
small tables)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import polars as pl

SLICE_ROWS = 250_000


@dataclass(frozen=True)
class SlicedFrame:
    """`height` rows in `schema`; `rows(offset, length)` builds those rows (the same columns as every slice)."""

    schema: dict[str, pl.DataType]
    height: int
    rows: Callable[[int, int], pl.DataFrame]
    slice_rows: int = SLICE_ROWS

    def slices(self) -> Iterator[pl.DataFrame]:
        """The rows in order, `slice_rows` at a time; one empty slice for an empty table (it still has columns)."""
        if self.height == 0:
            yield self.rows(0, 0)
            return
        for offset in range(0, self.height, self.slice_rows):
            yield self.rows(offset, min(self.slice_rows, self.height - offset))

    def head(self, n: int) -> pl.DataFrame:
        return self.rows(0, max(min(n, self.height), 0))

    def collect(self) -> pl.DataFrame:
        return pl.concat(list(self.slices()))
