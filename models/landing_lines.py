"""Reading a landing file line by line (pure): its physical lines (LF, CRLF, or a file of bare CRs), a line cut
by a half-written file, UTF-8 decoding with the byte that failed, a file saved as UTF-16, a lone surrogate in a
decoded value, and the reject a line that cannot be taken becomes (file, line number, reason, excerpt). Shared by
the prompts (models/benchmarks.py), results (models/benchmark_results.py) and metadata
(models/benchmark_metadata.py) parsers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

PROMPTS_FILE = "prompts.jsonl"  # a benchmark folder's two data files
RESULTS_FILE = "results.csv"
EXCERPT_CHARS = 200


@dataclass
class Reject:
    benchmark: str
    file: str
    line_number: int | None
    reason: str
    raw_excerpt: str

    def as_row(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "file": self.file, "line_number": self.line_number,
                "reason": self.reason, "raw_excerpt": self.raw_excerpt}


def excerpt(raw: bytes | str) -> str:
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    text = text.replace("\u2028", " ").replace("\n", " ")
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def line_break(data: bytes) -> bytes:
    """b'\\n' (a trailing b'\\r' is stripped from each line: CRLF), or b'\\r' for a file whose lines end in a bare
    carriage return only (classic Mac OS; before, the whole file was one line and one unhelpful reject)."""
    return b"\r" if b"\n" not in data and b"\r" in data else b"\n"


def physical_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, bytes) for each line split on `line_break`; strips a BOM and a trailing b'\\r'."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, line in enumerate(data.split(line_break(data)), start=1):
        yield number, line[:-1] if line.endswith(b"\r") else line


def cut_last_line(data: bytes) -> int | None:
    """The number of the last line when the file does not end in a line break (it may have been cut mid-write)."""
    if not data.strip() or data.endswith(line_break(data)):
        return None
    if data.endswith(b"\r") and b"\r\n" in data:  # CRLF lines cut between the two: the last line is whole
        return None
    return data.count(line_break(data)) + 1


def decode_line(line: bytes) -> tuple[str | None, str | None]:
    try:
        return line.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1})"


def looks_utf16(data: bytes) -> str | None:
    """Why a file looks UTF-16 rather than UTF-8 (None when it does not): a UTF-16 byte-order mark, or NUL bytes
    in every other position (ASCII text in UTF-16 without a mark). UTF-8 JSON or CSV text holds no NUL byte, and
    a Windows editor's "Unicode" is UTF-16: line by line it only gave rejects such as "not valid UTF-8"."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return f"byte-order mark {data[:2].hex(' ').upper()}"
    sample = data[:4096]
    even, odd = sample[0::2], sample[1::2]
    if len(sample) >= 8 and any(half.count(0) * 2 >= len(half) and other.count(0) * 10 < len(other)
                                for half, other in ((even, odd), (odd, even))):
        return "every other byte is NUL"
    return None


def utf16_lines(data: bytes) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of a file `looks_utf16` names, decoded as UTF-16 (bad units replaced): for
    readable excerpts of its rejects."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"  # the mark says the byte order
    else:
        encoding = "utf-16-le" if data[1:4096:2].count(0) > data[0:4096:2].count(0) else "utf-16-be"
    text = data.decode(encoding, errors="replace")
    for number, line in enumerate(text.split("\n"), start=1):
        yield number, line.removesuffix("\r")


def utf16_reason(data: bytes, file_name: str) -> str | None:
    """The reject reason of a file `looks_utf16` names ("save <file> as UTF-8"); None for any other file."""
    found = looks_utf16(data)
    return None if found is None else f"the file looks UTF-16 ({found}), not UTF-8: save {file_name} as UTF-8"


def utf16_text_lines(data: bytes) -> list[tuple[int, str]]:
    """`utf16_lines` without blank lines and the decoded byte-order mark (for excerpts and a line count)."""
    return [(number, text.lstrip("\ufeff")) for number, text in utf16_lines(data) if text.strip("\ufeff \t\r")]


_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate (U+D800..U+DFFF) in a decoded JSON or YAML value's strings, keys included, as
    `\\udxxx`; None when there is none. An unpaired `\\ud83d` escape decodes to one: it is half of a UTF-16 pair,
    not a character, and no UTF-8 writer (polars, DuckDB) can store it (it failed the whole benchmark)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if found := _SURROGATE.search(item):
                return f"\\u{ord(found.group()):04x}"
        elif isinstance(item, dict):
            stack.extend([*item.values(), *item.keys()])
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))
    return None
