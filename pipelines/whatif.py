"""What would a candidate benchmark add? The what-if over a candidate folder, reading the warehouse read-only.

    python -m pipelines.whatif path/to/candidate [--threshold N] [--top N] [--warehouse PATH] [--out DIR]

`run_whatif` reads the candidate's prompts.jsonl with the landing parser, labels it (by default with the
offline labeler over the labels stage's TaskIndex), reads the landed label counts and reference tables, and
returns the four what-if tables that models/gaps/whatif.py computes. The command prints them (and with --out
writes them as CSV) and writes nothing to the warehouse; the asset `candidate_benchmark_whatif`
(assets/gaps.py) runs the same `run_whatif` and stores them. Every file and warehouse read of the what-if is
here, so models/gaps stays pure.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

import polars as pl

from models import gaps
from models.errors import InputError
from resources import warehouse as wh
from resources.label_queries import LABELS, label_counts_from_connection

# The tables the offline labeler's TaskIndex is built from, beside gaps.REFERENCE_TABLES.
INDEX_TABLES = ("onet_job_titles", "onet_technology_skills")
PROG = "python -m pipelines.whatif"
EXIT_USAGE = 2  # a bad argument: one line on stderr, nothing computed


# --- the candidate folder ----------------------------------------------------------------------------------


def candidate_prompts_file(folder: str | Path) -> Path:
    """The candidate's prompts.jsonl: `folder`/prompts.jsonl, or `folder` itself when it is the file."""
    folder = Path(folder)
    path = folder / "prompts.jsonl" if folder.is_dir() else folder
    if not path.is_file():
        raise InputError("a candidate benchmark needs a prompts.jsonl (landing format)", path=path)
    return path


def candidate_benchmark_name(folder: str | Path) -> str:
    """The candidate's benchmark name (gaps.candidate_name over its prompts.jsonl and folder name)."""
    path = candidate_prompts_file(folder)
    stem = path.parent.name if path.name == "prompts.jsonl" else path.stem
    return gaps.candidate_name(path.read_bytes(), stem)


def read_candidate_prompts(folder: str | Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Parse a candidate folder's prompts.jsonl with the landing parser (models.benchmarks): prompt rows
    (benchmark_prompts columns, with prompt_hash) and reject rows. Nothing is written anywhere."""
    from models import benchmarks as bm
    from resources.landing import read_prompts

    path = candidate_prompts_file(folder)
    prompts, rejects = read_prompts(path, candidate_benchmark_name(folder), label=str(path))
    return prompts, bm.rejects_frame(rejects)


def check_candidate_folder(folder: Path) -> None:
    """Name, in one line, what is wrong with a candidate folder before any work is done (InputError)."""
    prompts_file = folder / "prompts.jsonl"
    if not folder.exists():
        raise InputError("no such candidate folder (or prompts.jsonl file)", path=folder)
    if folder.is_dir() and prompts_file.is_dir():
        raise InputError(
            "is a directory, not a file: a candidate's prompts.jsonl must be a file with one JSON object per line",
            path=prompts_file,
        )
    if folder.is_dir() and not prompts_file.exists():
        raise InputError(
            "no prompts.jsonl in this folder: a candidate benchmark folder needs one (one JSON object per line: "
            "benchmark, prompt_id, prompt; see README 'What would a new benchmark add?')",
            path=folder,
        )


# --- the labeler -------------------------------------------------------------------------------------------


def build_task_index(tables: dict[str, pl.DataFrame], warehouse_path: str | Path | None = None) -> Any:
    """The labelers' TaskIndex, as the labels stage uses it: the index it pickled (table task_search_index)
    when one was built by the current offline labeler code for this O*NET version, so candidate prompts are
    labeled exactly like the landed ones; else built from the reference tables (onet_tasks,
    onet_occupations, onet_job_titles, onet_technology_skills) plus O*NET's task -> DWA titles."""
    from resources import task_index as index_store

    stored = index_store.stored_index_path(warehouse_path) if warehouse_path is not None else None
    if stored is not None:
        return index_store.load_pickle(stored)
    return index_store.build_index(tables)


def build_offline_labeler(tables: dict[str, pl.DataFrame], warehouse_path: str | Path | None = None) -> Any:
    """The offline labeler (default settings) over build_task_index(tables, warehouse_path)."""
    from models.labeling.offline import OfflineLabeler
    from resources.readers import load_selector_fit

    return OfflineLabeler.calibrated(build_task_index(tables, warehouse_path), load_selector_fit())


# --- warehouse reads (read-only) ---------------------------------------------------------------------------


def read_tables(warehouse_path: str | Path, names: Sequence[str]) -> dict[str, pl.DataFrame]:
    return {name: wh.read_table(warehouse_path, name) for name in names}


def existing_label_counts(
    warehouse_path: str | Path, benchmarks: Sequence[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The warehouse's label counts and the labeled (benchmark, prompt_id) keys of the candidate's benchmark
    names (to drop already-landed ids)."""
    with wh.connect(warehouse_path, read_only=True) as con:
        if not wh.table_exists(con, LABELS):
            raise LookupError(
                f"table {LABELS!r} is not in the warehouse {warehouse_path}: "
                "label the landed benchmarks first"
            )
        counts = label_counts_from_connection(con, LABELS)
        keys = wh.fetch_polars(
            con,
            f"select distinct benchmark, prompt_id from {LABELS} "
            "where benchmark in (select unnest(?::varchar[]))",
            [list(benchmarks)],
        )
    return counts, keys


ESTIMATE_TABLES = ("task_estimates", "occupation_estimates", "major_group_estimates")


def unit_estimates(warehouse_path: str | Path) -> dict[str, pl.DataFrame] | None:
    """The per-unit estimate tables the warehouse holds (issue 25), by name; None without task_estimates
    (the what-if then reports the labels-as-counted gain only)."""
    with wh.connect(warehouse_path, read_only=True) as con:
        present = [name for name in ESTIMATE_TABLES if wh.table_exists(con, name)]
        if "task_estimates" not in present:
            return None
        return {name: wh.fetch_polars(con, f"select * from {wh.quote_identifier(name)}") for name in present}


def landed_hashes(warehouse_path: str | Path) -> list[str]:
    """Every landed prompt's text hash (benchmark_prompts), so a candidate's copy of a landed text counts
    for nothing."""
    with wh.connect(warehouse_path, read_only=True) as con:
        if not wh.table_exists(con, "benchmark_prompts"):
            return []
        return [r[0] for r in con.execute("select distinct prompt_hash from benchmark_prompts").fetchall()]


def table_fingerprints(
    warehouse_path: str | Path,
    exclude_prefixes: Sequence[str] = ("whatif_",),
    exclude: Sequence[str] = ("candidate_benchmark_whatif",),
) -> dict[str, tuple[int, int]]:
    """(row count, order-independent hash of all rows) of every table, except the what-if's own: compare
    before and after a what-if to show the published tables are untouched."""
    if not Path(warehouse_path).exists():
        return {}
    out: dict[str, tuple[int, int]] = {}
    with wh.connect(warehouse_path, read_only=True) as con:
        names = [
            r[0]
            for r in con.execute(
                "select table_name from information_schema.tables where table_schema = 'main' order by 1"
            ).fetchall()
        ]
        for name in names:
            if name in exclude or any(name.startswith(p) for p in exclude_prefixes):
                continue
            table = wh.quote_identifier(name)
            sql = f"select count(*), coalesce(sum(hash(t)), 0) from {table} t"
            count, digest = con.execute(sql).fetchone()
            out[name] = (int(count), int(digest))
    return out


# --- the what-if -------------------------------------------------------------------------------------------


def run_whatif(
    warehouse_path: str | Path,
    folder: str | Path,
    params: gaps.WhatIfParams = gaps.WhatIfParams(),
    *,
    labeler: Any = None,
    cached: dict[str, list[Any]] | None = None,
    weights: gaps.PriorityWeights | None = None,
) -> gaps.WhatIfResult:
    """Label a candidate folder and compute its marginal gain against the warehouse (params.threshold and
    params.top_n; the labeler's name decides whose labels compare), reading the warehouse read-only.
    `labeler` defaults to the offline labeler built from the warehouse's reference tables; pass `cached`
    (hash -> labels, e.g. from label_cache) to reuse labels. Each result frame carries `candidate`."""
    tables = read_tables(warehouse_path, gaps.REFERENCE_TABLES)
    if labeler is None:
        tables |= read_tables(warehouse_path, INDEX_TABLES)
        labeler = build_offline_labeler(tables, warehouse_path)
    prompts, rejects = read_candidate_prompts(folder)
    if prompts.is_empty():
        raise InputError(
            f"no valid prompts ({rejects.height} rejected lines)", path=candidate_prompts_file(folder)
        )
    candidate_labels, failed = gaps.label_candidate(prompts, labeler, cached)
    existing, landed_keys = existing_label_counts(warehouse_path, prompts["benchmark"].unique().to_list())
    params = replace(params, labeler=labeler.name, n_candidate_prompts=prompts.height)
    result = gaps.whatif_gain(
        existing,
        candidate_labels,
        tables["onet_tasks"],
        tables["task_hours"],
        tables["onet_occupations"],
        params,
        priorities=gaps.score_reference_tasks(existing, tables, params.threshold, weights, labeler.name),
        existing_prompt_hashes=landed_hashes(warehouse_path),
        landed_keys=landed_keys,
        estimates=unit_estimates(warehouse_path),
    )
    return gaps.for_candidate(result, prompts["benchmark"][0], params, labeler.name,
                              rejected_lines=rejects.height, label_failed=failed)


# --- the command -------------------------------------------------------------------------------------------


def _print_frame(title: str, frame: pl.DataFrame, limit: int = 20) -> None:
    print(f"\n## {title} ({frame.height} rows)")
    with pl.Config(
        tbl_rows=limit, tbl_cols=12, fmt_str_lengths=60, tbl_width_chars=160, tbl_hide_dataframe_shape=True
    ):
        print(frame.head(limit))


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
    parser.add_argument("--out", type=Path, help="also write the four tables as CSV into this folder")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m pipelines.whatif <folder> [--threshold N] [--warehouse PATH] [--top N] [--out DIR]`."""
    from resources.settings import settings

    parser = _parser()
    args = parser.parse_args(argv)
    warehouse = args.warehouse or str(settings().warehouse)  # BENCHMAP_WAREHOUSE, read by the settings
    if not Path(warehouse).exists():
        parser.error(f"no warehouse at {warehouse}: run `make run` first or pass --warehouse")
    if args.out is not None and (problem := check_out_folder(args.out)):
        parser.error(problem)  # before any work: a bad --out used to fail only after printing the results
    check_candidate_folder(Path(args.folder))
    result = run_whatif(warehouse, args.folder, gaps.WhatIfParams(threshold=args.threshold, top_n=args.top))
    for name, frame in gaps.whatif_tables(result).items():
        shown = frame.drop("candidate")
        _print_frame(name, shown.filter(pl.col("closed")) if name == "whatif_gap_rank_changes" else shown)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            frame.write_csv(args.out / f"{name}.csv")
    return 0


if __name__ == "__main__":
    from pipelines.cli import run_cli

    raise SystemExit(run_cli(main, prog=PROG))
