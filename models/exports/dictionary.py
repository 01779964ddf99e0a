"""The data dictionary of an export: one row per exported column (the workbook sheet) and
`data_dictionary.md` (its Markdown tables through models/markdown.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from models.data_dictionary import TABLE_DESCRIPTIONS, describe
from models.exports.tables import FILE_ONLY_TABLES, TABLES_DIR, WORKBOOK_NAME
from models.markdown import markdown_text


def dictionary_frame(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """table, column, type, meaning, unit, source, documented -- one row per exported column."""
    rows = []
    for table, frame in tables.items():
        for column, dtype in frame.schema.items():
            entry = describe(table, column)
            meaning, unit, source = entry if entry else ("UNDOCUMENTED", "", "")
            rows.append(
                {
                    "table": table,
                    "column": column,
                    "type": str(dtype),
                    "meaning": meaning,
                    "unit": unit,
                    "source": source,
                    "documented": entry is not None,
                }
            )
    schema = {
        "table": pl.Utf8,
        "column": pl.Utf8,
        "type": pl.Utf8,
        "meaning": pl.Utf8,
        "unit": pl.Utf8,
        "source": pl.Utf8,
        "documented": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema)


def data_dictionary_markdown(
    tables: Mapping[str, pl.DataFrame], sheets: Mapping[str, str] | None = None, missing: Sequence[str] = ()
) -> str:
    """`data_dictionary.md`: per table its description and columns (column, type, meaning, unit, source)."""
    sheets = sheets or {}
    lines = [
        "# benchmap export: data dictionary",
        "",
        "Every column of every exported table, with its meaning, unit and source. Each table is in "
        f"`{TABLES_DIR}/<table>.parquet` and `{TABLES_DIR}/<table>.csv` and, unless it has a row per task or "
        f"per prompt text ({', '.join(f'`{t}`' for t in FILE_ONLY_TABLES)}: too many rows for a "
        f"spreadsheet), on its own sheet of `{WORKBOOK_NAME}`. Shares are fractions between 0 and 1; intervals "
        "are 95%. In the CSV files (not the Parquet files or the workbook) a text cell that opens with `=`, `+`, "
        "`-`, `@`, a tab or a carriage return has an apostrophe put before it, so that a spreadsheet opening the "
        "file shows it as text instead of running it as a formula.",
        "",
        "| table | rows | description |",
        "|---|---|---|",
    ]
    lines += [
        f"| [{t}](#{t}) | {f.height} | {markdown_text(TABLE_DESCRIPTIONS.get(t, ''))} |" for t, f in tables.items()
    ]
    if missing:
        lines += [
            "",
            "Not exported (the warehouse has no such table yet): " + ", ".join(f"`{m}`" for m in missing),
        ]
    for table, frame in tables.items():
        sheet = f"; sheet `{sheets[table]}`" if sheets.get(table) else \
            "; no workbook sheet (a row per task or per prompt text)" if table in FILE_ONLY_TABLES else ""
        lines += [
            "",
            f"## {table}",
            "",
            TABLE_DESCRIPTIONS.get(table, ""),
            "",
            f"{frame.height} rows; files `{TABLES_DIR}/{table}.parquet`, `{TABLES_DIR}/{table}.csv`{sheet}.",
            "",
            "| column | type | meaning | unit | source |",
            "|---|---|---|---|---|",
        ]
        for column, dtype in frame.schema.items():
            entry = describe(table, column)
            meaning, unit, source = entry if entry else ("**UNDOCUMENTED**", "", "")
            lines.append(
                f"| `{column}` | {dtype} | {markdown_text(meaning)} | {markdown_text(unit)} | {markdown_text(source)} |"
            )
    return "\n".join(lines) + "\n"


