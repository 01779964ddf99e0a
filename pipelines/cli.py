"""Command-line entry points speak to people: a known error is one clear line and a non-zero exit.

`run_cli(main, argv, prog=...)` calls `main(argv)` and turns the errors a user can act on into one line on
stderr: bad input (InputError: file and line), a missing source, a damaged or locked warehouse, an unreadable
or unwritable path, a label store that cannot be written. `--debug` anywhere on the command line is removed
before `main` sees it and shows the traceback instead. Any other exception is a bug and keeps its traceback.

Exit codes: 1 for an error in the input or the environment, 128 + the signal's number when interrupted: 130
for Ctrl-C (SIGINT), 143 for SIGTERM where the command takes it (run_all: resources/interrupts.py).

Used by `python -m pipelines.run_all`, `python -m pipelines.restore_labels`, the what-if command and
`python -m pipelines.local_llm`. No dagster here; it lives in pipelines/ because models/ hosts no
command line.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

import duckdb

from models.errors import InputError, LabelerConfigError, SourceNotFoundError
from resources.settings import SettingsError
from resources.warehouse import DiskFull, WarehouseLockTimeout, free_mib

DEBUG_FLAG = "--debug"
DEBUG_HELP = f"{DEBUG_FLAG}: show the full traceback of an error instead of one line"
DAMAGED_HINT = ("the warehouse file looks damaged: `python -m pipelines.run_all --rebuild` moves it aside, "
                "restores the label cache from the label store and rebuilds the rest")

KNOWN_ERRORS: tuple[type[BaseException], ...] = (InputError, SourceNotFoundError, WarehouseLockTimeout,
                                                 duckdb.Error, OSError, LabelerConfigError, SettingsError)


def describe(exc: BaseException) -> str:
    """One line saying what went wrong and, where there is one, what to do."""
    if isinstance(exc, WarehouseLockTimeout):
        return f"{exc} (another process is writing the warehouse: wait for it, or stop it)"
    if isinstance(exc, duckdb.Error):
        text = _one_line(str(exc)) or type(exc).__name__
        return f"DuckDB: {text}" + (f" ({DAMAGED_HINT})" if looks_damaged(str(exc)) else "")
    if isinstance(exc, IsADirectoryError):
        return f"{exc.filename or exc} is a directory, not a file"
    if isinstance(exc, NotADirectoryError):
        return f"{exc.filename or exc} is not a directory"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}"
    if isinstance(exc, DiskFull):
        return str(exc)
    if isinstance(exc, OSError) and not isinstance(exc, SourceNotFoundError) and exc.errno == 28:
        folder = Path(exc.filename).parent if exc.filename else Path.cwd()
        return f"disk full: {free_mib(folder):,.0f} MB free in {folder} ({exc.strerror or exc})"
    if isinstance(exc, FileNotFoundError) and not isinstance(exc, SourceNotFoundError) and exc.filename:
        return f"no such file or folder: {exc.filename}"
    return _one_line(str(exc)) or type(exc).__name__


def looks_damaged(text: str) -> bool:
    """Whether a DuckDB error's text says the warehouse file is damaged (a block that fails its checksum, a
    short read, a file that is not DuckDB's)."""
    return any(s in text for s in ("Could not read enough bytes", "not a valid DuckDB", "Corrupt database file",
                                   "does not match stored checksum", "Invalid Input Error: File"))


def _one_line(text: str) -> str:
    """A message's first line; when it carries a captured traceback (a child process's output), the first line
    and the traceback's last line, which names the actual error."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    if len(lines) > 1 and "Traceback (most recent call last)" in text:
        head = lines[0].replace("Traceback (most recent call last):", "").rstrip(": ")
        return f"{head}: {lines[-1]}"
    return lines[0]


def run_cli(main: Callable[[list[str]], int], argv: Sequence[str] | None = None, *, prog: str,
            extra_errors: tuple[type[BaseException], ...] = ()) -> int:
    """Run `main(argv)`; a known error becomes `<prog>: error: <one line>` and exit 1 (traceback with --debug)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = DEBUG_FLAG in args
    args = [a for a in args if a != DEBUG_FLAG]
    try:
        return main(args)
    except KeyboardInterrupt as stop:
        if debug:
            raise
        print(f"{prog}: interrupted", file=sys.stderr)
        return 128 + getattr(stop, "signum", signal.SIGINT)  # interrupts.StopRequested knows which signal
    except (*KNOWN_ERRORS, *extra_errors) as exc:
        if debug:
            raise
        print(f"{prog}: error: {describe(exc)} ({DEBUG_FLAG} shows the traceback)", file=sys.stderr)
        return 1


def exit_now(code: int) -> NoReturn:
    """End the process with `code` without the interpreter's teardown (freeing every object the run left), once
    everything that writes is closed: the exit handlers run first (the worker pools close and reap their
    workers, logging flushes its handlers, Dagster's own), then the output streams are flushed."""
    atexit._run_exitfuncs()  # noqa: SLF001 - what sys.exit would run, without the teardown after it
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


__all__ = ["DEBUG_FLAG", "DEBUG_HELP", "KNOWN_ERRORS", "describe", "exit_now", "looks_damaged", "run_cli"]
