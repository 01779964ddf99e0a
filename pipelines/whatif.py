"""What would a candidate benchmark add? The command over resources/whatif.py's `run_whatif`:

    python -m pipelines.whatif path/to/candidate [--threshold N] [--top N] [--warehouse PATH] [--out DIR]

It prints the four what-if tables (and with --out writes them as CSV) and writes nothing to the warehouse.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import duckdb
import polars as pl

from models import gaps
from models.errors import InputError
from models.gaps.expected import EXPECTED_THRESHOLDS
from pipelines.cli import looks_damaged
from resources.export_files import write_csv
from resources.warehouse import error_first_line
from resources.whatif import (
    NotABenchmapWarehouse,
    check_candidate_folder,
    run_whatif,
    warehouse_open_error,
)

PROG = "python -m pipelines.whatif"
EXIT_USAGE = 2  # a bad argument: one line on stderr, nothing computed


# --- the command -------------------------------------------------------------------------------------------


def _print_frame(title: str, frame: pl.DataFrame, limit: int = 30) -> None:
    print(f"\n## {title} ({frame.height} rows)")
    with pl.Config(
        tbl_rows=limit, tbl_cols=12, fmt_str_lengths=60, tbl_width_chars=160, tbl_hide_dataframe_shape=True
    ):
        print(frame.head(limit))
    if frame.height > limit:  # a probe: the gain's 21st row was dropped without a word at 20
        print(f"... {frame.height - limit} more rows (--out writes them all)")


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit 2 (argparse's default prints the usage block first)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _at_least_one(text: str) -> int:
    """An argparse type: a whole number >= 1 (argparse names the option in the error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def check_out_folder(out: Path) -> str | None:
    """Why `--out` cannot take the what-if's CSV files (None when it can), checked before anything is computed:
    it must be a folder (or not exist yet) in a writable place, and the files it would replace must be the
    what-if's own CSV files, not something else of the same name."""
    if out.exists() and not out.is_dir():
        return f"--out {out} is an existing file, not a folder: --out takes a folder for the what-if CSV files"
    if out.is_dir():
        for name in gaps.WHATIF_TABLES:
            target = out / f"{name}.csv"
            if target.exists() and not target.is_file():
                return f"--out {out}: {target} exists and is not a file"
    probe = out
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"--out {out}: {probe} is not a folder"
    try:  # a real write: access() says yes to root on a read-only file system
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        return f"--out {out} is not writable ({probe}: {exc.strerror or exc})"
    return None


def run_all_command(warehouse: Path) -> str:
    """The run_all command that builds `warehouse` (run_all takes its warehouse from BENCHMAP_WAREHOUSE only):
    a plain `run_all --rebuild` would rebuild the default warehouse, not a file passed with --warehouse."""
    from resources.settings import settings

    if warehouse.resolve() == Path(settings().warehouse).resolve():
        return "python -m pipelines.run_all"
    return f"BENCHMAP_WAREHOUSE={shlex.quote(str(warehouse))} python -m pipelines.run_all"


def check_warehouse(warehouse: Path, given: bool) -> str | None:
    """Why `warehouse` cannot be the what-if's warehouse (None when it opens as DuckDB), in one line naming the
    file and what to do for that file; checked before any work. `given`: passed with --warehouse."""
    name = f"--warehouse {warehouse}" if given else f"the warehouse {warehouse}"
    if not warehouse.exists():
        if given:
            return (f"no warehouse at {warehouse}: `{run_all_command(warehouse)}` builds one there, or pass another "
                    "--warehouse")
        return f"no warehouse at {warehouse}: run `make run` first or pass --warehouse"
    if warehouse.is_dir():
        inside = warehouse / "benchmap.duckdb"
        return (f"{name} is a folder, not a warehouse file: pass the warehouse's .duckdb file"
                + (f" (e.g. {inside})" if inside.is_file() else ""))
    problem = warehouse_open_error(warehouse)
    if problem is None:
        return None
    if not looks_damaged(problem):  # e.g. a file of a newer DuckDB, or not readable
        return f"{name} cannot be opened: DuckDB: {problem}"
    return (f"{name}: not a DuckDB database, so not a benchmap warehouse (another kind of file, or a damaged "
            f"warehouse): pass the warehouse file run_all builds; if it is a damaged warehouse, "
            f"`{run_all_command(warehouse)} --rebuild` moves it aside and builds a warehouse there")


def _parser() -> argparse.ArgumentParser:
    from pipelines.cli import DEBUG_HELP

    parser = _OneLineParser(
        prog=PROG, description="Marginal gain of a candidate benchmark folder (prompts.jsonl): what it would "
        "add to the coverage map, computed without writing to the warehouse.", epilog=DEBUG_HELP)
    parser.add_argument("folder", type=Path, help="the candidate folder (or its prompts.jsonl)")
    parser.add_argument("--threshold", type=_at_least_one, default=gaps.DEFAULT_THRESHOLD,
                        help=f"prompts a task needs to count as covered (>= 1, default {gaps.DEFAULT_THRESHOLD})")
    parser.add_argument(
        "--warehouse", default=None,
        help="the DuckDB file (default $BENCHMAP_WAREHOUSE or data/warehouse/benchmap.duckdb)",
    )
    parser.add_argument("--top", type=_at_least_one, default=100,
                        help="gap ranks compared (>= 1, default 100)")
    parser.add_argument("--out", type=Path, help="also write the five what-if tables as CSV into this folder")
    return parser


REJECTS_SHOWN = 5


def _print_rejects(rejects: pl.DataFrame | None) -> None:
    """The candidate's rejected lines, each with its line and why, on stderr: the tables said only
    `candidate_rejected_lines 3` (a probe, 2026-12-07); the rest of the file was counted."""
    if rejects is None:
        return
    for row in rejects.head(REJECTS_SHOWN).iter_rows(named=True):
        print(f"warning: {row['file']}:{row['line_number']}: {row['reason']} (line not counted)", file=sys.stderr)
    if rejects.height > REJECTS_SHOWN:
        more = rejects.height - REJECTS_SHOWN
        print(f"warning: {more} more rejected line{'' if more == 1 else 's'}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m pipelines.whatif <folder> [--threshold N] [--warehouse PATH] [--top N] [--out DIR]`."""
    from resources.settings import settings

    parser = _parser()
    args = parser.parse_args(argv)
    warehouse = Path(args.warehouse or settings().warehouse)  # BENCHMAP_WAREHOUSE, read by the settings
    if problem := check_warehouse(warehouse, given=args.warehouse is not None):
        parser.error(problem)
    if args.out is not None and (problem := check_out_folder(args.out)):
        parser.error(problem)  # before any work: a bad --out used to fail only after printing the results
    check_candidate_folder(Path(args.folder))
    try:
        result = run_whatif(warehouse, args.folder, gaps.WhatIfParams(threshold=args.threshold, top_n=args.top))
    except NotABenchmapWarehouse as exc:  # the command says what to do for this file
        raise InputError(f"{exc}: " + (
            "pass the warehouse file run_all builds; `BENCHMAP_WAREHOUSE=<new file> python -m pipelines.run_all` "
            "builds one" if exc.none_present else f"`{run_all_command(warehouse)}` materializes them")) from exc
    except duckdb.Error as exc:  # damage the open did not see (a block failing its checksum when read)
        if not looks_damaged(str(exc)):
            raise
        raise InputError(f"the warehouse file looks damaged ({error_first_line(exc)}): `{run_all_command(warehouse)} --rebuild` "
                         "moves it aside, restores its label cache from its label store and rebuilds it there",
                         path=warehouse) from exc
    _print_rejects(result.rejects)
    if args.threshold not in EXPECTED_THRESHOLDS:
        print(f"--threshold {args.threshold}: the labels are counted as they are; the expected gain (expected_* "
              f"metrics, from the per-unit estimates) exists at thresholds "
              f"{' and '.join(map(str, EXPECTED_THRESHOLDS))} only")
    for name, frame in gaps.whatif_tables(result).items():
        shown = frame.drop("candidate")
        _print_frame(name, shown.filter(pl.col("closed")) if name == "whatif_gap_rank_changes" else shown)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            write_csv(args.out / f"{name}.csv", frame)  # formula-like text made text (models.exports.csv_safe)
    return 0


if __name__ == "__main__":
    from pipelines.cli import run_cli

    raise SystemExit(run_cli(main, prog=PROG))
