"""The one Markdown-table helper: asset metadata previews, the export's data dictionary and the summary report.

Every Markdown table in the project is written here, so numbers, escaping and the "N more rows" note look
the same in the Dagster UI, in `summary.md` and in `data_dictionary.md`. Pure: text in, text out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import polars as pl

_CODE_SPAN = re.compile(r"(`[^`]*`)")
_HTML_START = re.compile(r"<(?=[A-Za-z/!?])")


def markdown_plain(text: str) -> str:
    """Plain text that Markdown shows as written: outside `code spans`, `*` escaped where two or more could pair
    into emphasis and `<` where it could open an HTML tag. Dagster's UI renders asset descriptions as Markdown, and
    ours are plain text: there the asterisk of one "O*NET" and that of the next set the words between them in
    italics and vanished, and "<name>" in a path vanished as a tag. Only what Markdown would read is escaped,
    since the asset catalog's list shows the text as written, escapes included."""
    parts = _CODE_SPAN.split(text)  # odd positions are code spans, shown as written
    pairs = sum(part.count("*") for part in parts[::2]) >= 2
    return "".join(part if i % 2 else _HTML_START.sub(r"\\<", part.replace("*", "\\*") if pairs else part)
                   for i, part in enumerate(parts))


_LITERAL = re.compile(r"([\\`*\[\]<|])")  # `>` opens nothing mid-line ("public_items >= 25" stays as written)


def markdown_literal(text: object) -> str:
    """Text from outside the code (a landing folder's benchmark.toml, results.csv's model names, an index file's
    titles and reasons) as Markdown shows it as written, on one line: each character that could open HTML, a
    link, emphasis, code or a table cell backslash-escaped (a probe: `<script>` and `<img onerror=...>` in them
    stayed HTML in summary.md and data_documentation.md once rendered)."""
    return _LITERAL.sub(r"\\\1", str(text).replace("\r", " ").replace("\n", " "))


def markdown_text(text: object) -> str:
    """Text that stays inside one table cell: `|` escaped, newlines as spaces."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_cell(value: Any, digits: int = 3, max_chars: int | None = None) -> str:
    """One cell: floats to `digits` (scientific when tiny or huge), big integers with thousands separators,
    None as empty, text escaped and cut to `max_chars` (with an ellipsis) when given."""
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 10 ** (-digits)):
            return f"{value:.{digits}g}"
        return f"{value:,.{digits}f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    text = str(value)
    if max_chars is not None and len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return markdown_text(text)


def markdown_table(
    frame: pl.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    max_rows: int = 25,
    digits: int = 3,
    max_chars: int | None = None,
    empty: str | None = None,
) -> str:
    """A GitHub-flavoured Markdown table of the first `max_rows` rows (a note says how many were left out).

    `columns` selects and orders columns (names the frame lacks are skipped); `max_chars` cuts long text;
    `empty`, when given, is the whole answer for a frame with no rows (e.g. "None." in check metadata).
    """
    if frame.height == 0 and empty is not None:
        return empty
    columns = [c for c in (columns or frame.columns) if c in frame.columns]
    if not columns:
        return "_(no columns)_"
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in frame.select(columns).head(max_rows).iter_rows():
        lines.append("| " + " | ".join(markdown_cell(v, digits, max_chars) for v in row) + " |")
    if frame.height > max_rows:
        lines.append(f"\n_{frame.height - max_rows} more rows not shown ({frame.height} in all)._")
    if frame.height == 0:
        lines.append("\n_(no rows)_")
    return "\n".join(lines)


__all__ = ["markdown_cell", "markdown_table", "markdown_text"]
