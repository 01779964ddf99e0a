"""Generic parsers and field checks shared by every reference parser (pure: they take a file's content).

The files are read in `resources/readers.py` (`read_source(path, parser)`), which passes each parser the
file's bytes and its `source` name (the path, as the error messages name it). Every record keeps its 1-based
line number in `_line` (LINE) so a later check can name the line at fault: `parse_tsv` (O*NET:
tab-separated, no quoting) and `parse_csv_records` (quoted CSV/TSV) return text columns, the `cast_*` /
`check_*` helpers parse and validate them and raise `InputError(path=source, line=...)` at the first bad
value.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

import polars as pl

from models.errors import InputError
from models.markdown import markdown_table

# a missing value in O*NET files: the literal n/a, or an empty field
NA = ("n/a", "")
LINE = "_line"
ONET_CODE = r"^\d{2}-\d{4}\.\d{2}$"
SOC_CODE = r"^\d{2}-\d{4}$"


NO_DATA_ROWS = "the file has a header row and no data row (an export or copy that stopped early?)"


def decode_text(data: bytes | str, source: str) -> str:
    """UTF-8 text without a BOM (as Windows tools save it); InputError naming the line of the first byte
    that is not UTF-8. A str is taken as already decoded (its BOM is dropped all the same)."""
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            f"not valid UTF-8 text ({exc.reason} at byte {exc.start})", path=source, line=line
        ) from exc


def check_header(header: list[str], columns: Sequence[str], source: str) -> None:
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(f"header lacks column(s) {missing}; found {header}", path=source, line=1)


def _frame(header: list[str], records: list[list[str]], lines: list[int]) -> pl.DataFrame:
    columns = list(zip(*records, strict=True)) if records else [() for _ in header]
    data = {
        name: pl.Series(name, list(values), dtype=pl.Utf8)
        for name, values in zip(header, columns, strict=True)
    }
    data[LINE] = pl.Series(LINE, lines, dtype=pl.Int64)
    return pl.DataFrame(data)


def parse_tsv(
    data: bytes | str, source: str, columns: Sequence[str], *, require_final_newline: bool = True
) -> pl.DataFrame:
    """An O*NET-style tab-separated file's content (header row, no quoting) as text columns plus `_line`.

    Raises InputError naming the line of the first record whose field count differs from the header's
    (a truncated last line, a stray tab) and, with `require_final_newline`, a file cut mid-line.
    """
    text = decode_text(data, source)
    if not text.strip():
        raise InputError("file is empty (expected a header row and data rows)", path=source, line=1)
    raw_lines = text.split("\n")
    ends_with_newline = raw_lines[-1] == ""
    if ends_with_newline:
        raw_lines.pop()
    header = raw_lines[0].rstrip("\r").split("\t")
    check_header(header, columns, source)
    width = len(header)
    # split every record at once (polars, not a Python loop: the labeler reads ~150,000 O*NET lines per index)
    fields = pl.Series("fields", raw_lines[1:], dtype=pl.Utf8).str.strip_chars_end("\r").str.split("\t")
    found = fields.list.len()
    bad = found != width
    if bad.any():
        index = int(bad.arg_true()[0])
        raise InputError(
            f"expected {width} tab-separated fields as in the header, found {found[index]} "
            "(truncated or malformed record)",
            path=source,
            line=index + 2,
        )
    if len(raw_lines) < 2:
        raise InputError(NO_DATA_ROWS, path=source, line=1)
    if require_final_newline and not ends_with_newline:
        raise InputError(
            "file ends in the middle of a line (truncated download or copy?)", path=source, line=len(raw_lines)
        )
    frame = {name: fields.list.get(i).alias(name) for i, name in enumerate(header)}
    frame[LINE] = pl.Series(LINE, range(2, len(fields) + 2), dtype=pl.Int64)
    return pl.DataFrame(frame)


def parse_csv_records(
    data: bytes | str, source: str, columns: Sequence[str], *, delimiter: str = ",",
    require_final_newline: bool = True,
) -> pl.DataFrame:
    """A quoted CSV/TSV file's content (RFC 4180 style) as text columns plus `_line` (where each record
    starts). InputError for a file with a header and no data row, and, with `require_final_newline`, for a file
    that does not end with a line end: cut inside its last field, it keeps its field count and parsed (a probe,
    2026-12-08, cut the O*NET ratings file in half and 7,927 tasks lost their ratings without a word). Off for
    a source published without a final line end (WORKBank's expert ratings)."""
    text = decode_text(data, source)
    if not text.strip():
        raise InputError("file is empty (expected a header row and data rows)", path=source, line=1)
    if require_final_newline and not text.endswith("\n"):
        raise InputError("file ends without a line end (truncated download or copy?); if it is whole, end its "
                         "last line", path=source, line=text.count("\n") + 1)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader)
        check_header(header, columns, source)
        records: list[list[str]] = []
        lines: list[int] = []
        start = reader.line_num + 1
        for fields in reader:
            if len(fields) != len(header):
                if not fields:  # a blank line
                    raise InputError("blank line inside the data", path=source, line=start)
                raise InputError(
                    f"expected {len(header)} fields as in the header, found {len(fields)} "
                    "(truncated or malformed record)",
                    path=source,
                    line=start,
                )
            records.append(fields)
            lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InputError(f"malformed CSV ({exc})", path=source, line=reader.line_num) from exc
    if not records:  # read as a missing source would be, it fell back to another (a probe, 2026-12-08)
        raise InputError(NO_DATA_ROWS, path=source, line=1)
    return _frame(header, records, lines)


def fail_at(df: pl.DataFrame, mask: pl.Series, message: str, source: str, column: str | None = None) -> None:
    """Raise for the first row where `mask` is true, naming its line and value."""
    if not mask.any():
        return
    index = int(mask.arg_true()[0])
    line = int(df[LINE][index]) if LINE in df.columns else None
    value = f" (found {df[column][index]!r})" if column is not None else ""
    raise InputError(f"{message}{value}; {int(mask.sum())} such row(s) in all", path=source, line=line)


def cast_number(
    df: pl.DataFrame,
    column: str,
    dtype: pl.DataType,
    source: str,
    *,
    rename: str | None = None,
    na_values: Sequence[str] = NA,
    required: bool = False,
    min_value: float | None = None,
    max_value: float | None = None,
    integral_float: bool = False,
) -> pl.DataFrame:
    """Parse a text column as a number; InputError at the first unparsable, missing or out-of-range value."""
    text = df[column].str.strip_chars()
    missing = text.is_null() | text.is_in(list(na_values))
    as_float = text.cast(pl.Float64, strict=False)
    fail_at(df, ~missing & as_float.is_null(), f"column {column!r}: not a number", source, column)
    if required:
        fail_at(df, missing, f"column {column!r}: value missing", source, column)
    values = as_float.zip_with(~missing, pl.Series(column, [None] * df.height, dtype=pl.Float64))
    if dtype.is_integer():
        fractional = values.is_not_null() & (values != values.floor())
        fail_at(df, fractional, f"column {column!r}: not an integer", source, column)
        if not integral_float:
            fail_at(
                df, text.str.contains(r"[.eE]") & ~missing, f"column {column!r}: not an integer", source, column
            )
    if min_value is not None:
        fail_at(
            df,
            values.is_not_null() & (values < min_value),
            f"column {column!r}: below the minimum {min_value}",
            source,
            column,
        )
    if max_value is not None:
        fail_at(
            df,
            values.is_not_null() & (values > max_value),
            f"column {column!r}: above the maximum {max_value}",
            source,
            column,
        )
    return df.with_columns(values.cast(dtype).alias(rename or column))


def check_pattern(df: pl.DataFrame, column: str, pattern: str, source: str, what: str) -> None:
    bad = df[column].is_null() | ~df[column].str.contains(pattern)
    fail_at(df, bad, f"column {column!r}: not {what}", source, column)


def check_in_set(df: pl.DataFrame, column: str, allowed: Sequence[str], source: str) -> None:
    bad = df[column].is_null() | ~df[column].is_in(list(allowed))
    fail_at(df, bad, f"column {column!r}: expected one of {list(allowed)}", source, column)


def check_unique(df: pl.DataFrame, keys: Sequence[str], source: str) -> None:
    duplicated = df.select(keys).is_duplicated()
    if duplicated.any():
        first = df.filter(duplicated).head(2)
        record = ", ".join(f"{k}={first[k][0]!r}" for k in keys)
        raise InputError(
            f"duplicate key {list(keys)}: lines {first[LINE].to_list()}", path=source, record=record
        )


def cast_flag(
    df: pl.DataFrame,
    column: str,
    source: str,
    *,
    true: Sequence[str],
    false: Sequence[str],
    rename: str | None = None,
) -> pl.DataFrame:
    check_in_set(df, column, [*true, *false], source)
    return df.with_columns(pl.col(column).is_in(list(true)).alias(rename or column))


def markdown_preview(df: pl.DataFrame, rows: int = 10, max_chars: int = 80) -> str:
    """First rows as a Markdown table (long text cut) for Dagster metadata."""
    return markdown_table(df, max_rows=rows, max_chars=max_chars)
