"""Errors a user can act on, raised by benchmap's pure logic and its labelers: bad input names the file and line,
or the record, at fault; a labeler's configuration error says which setting or what the server answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any


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


class LabelerConfigError(RuntimeError):
    """Authentication, permission or unknown model: affects every prompt, so labeling stops.

    Built and raised outside the SDK's `except` block, so neither `__context__` nor `__cause__` holds the SDK's
    exception, whose text may quote the key unmasked. `finished_outcomes`: the outcomes the labeler finished
    before it stopped (paid answers, for the caller to commit: resources/llm_labeler.py's label_batches). Here,
    not beside the client, so that a command line names it in one line without importing the openai SDK
    (pipelines/cli.py)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.finished_outcomes: list[Any] = []
