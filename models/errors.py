"""Errors raised by benchmap's pure logic. Each names the file and line, or the record, at fault."""

from __future__ import annotations

from pathlib import Path


class InputError(ValueError):
    """Bad input data: a malformed file, a duplicate key, an empty prompt, an invalid model answer."""

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None,
                 record: str | None = None) -> None:
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if record is not None:
            where.append(f"record {record}")
        self.path = str(path) if path is not None else None
        self.line = line
        self.record = record
        super().__init__(f"{': '.join([', '.join(where)] if where else [])}{': ' if where else ''}{message}")


class SourceNotFoundError(FileNotFoundError):
    """No copy of a source file in data/raw, the mirror, or at its official URL."""
