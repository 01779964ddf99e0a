"""What would a candidate benchmark add? The what-if's I/O over a candidate folder, reading the warehouse
read-only (the command is pipelines/whatif.py).

`run_whatif` reads the candidate's prompts.jsonl with the landing parser, labels it (by default with the
offline labeler over the labels stage's TaskIndex), reads the landed label counts and reference tables, and
returns the four what-if tables that models/gaps/whatif.py computes. The command (pipelines/whatif.py) prints them (and with --out
writes them as CSV) and writes nothing to the warehouse; the asset `candidate_benchmark_whatif`
(assets/gaps.py) runs the same `run_whatif` and stores them. Every file and warehouse read of the what-if is
here, so models/gaps stays pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from models import gaps
from models.errors import InputError
from resources import warehouse as wh
from resources.label_queries import LABELS, WORK, label_counts_from_connection

# The tables the offline labeler's TaskIndex is built from, beside gaps.REFERENCE_TABLES.
INDEX_TABLES = ("onet_job_titles", "onet_technology_skills")


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
            "benchmark, prompt_id, prompt; see docs/whatif_command.md)",
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


def landed_label_sets(warehouse_path: str | Path, hashes: Sequence[str], labeler: Any) -> dict[str, list[Any]]:
    """prompt_hash -> the published labels (TaskLabel, by rank) of the candidate texts the warehouse already
    landed and labeled with this kind of labeler (offline, openai): a copy of a landed
    text is labeled as the landed text was (with the neighbour step on, the labeler alone would not restack
    it); an empty set for a landed text with no labels (not work)."""
    from models.labeling.base import TaskLabel

    with wh.connect(warehouse_path, read_only=True) as con:
        if not wh.table_exists(con, LABELS):
            return {}
        # the landed texts this labeler kind decided (its published labels, whatever the version: they are what
        # the warehouse counts): those with labels, and the not-work ones prompt_work holds (when it is there)
        sources = [f"select prompt_hash from {LABELS} where labeler = ?"]
        if wh.table_exists(con, WORK):
            sources.append(f"select prompt_hash from {WORK} where labeler = ?")
        decided = wh.fetch_polars(
            con,
            f"select distinct prompt_hash from ({' union all '.join(sources)}) "
            "where prompt_hash in (select unnest(?::varchar[]))",
            [*([labeler.name] * len(sources)), list(hashes)])
        rows = wh.fetch_polars(
            con,
            f"select distinct prompt_hash, task_id, onet_soc_code, rank, score, p_exercised from {LABELS} "
            "where labeler = ? and prompt_hash in (select unnest(?::varchar[])) order by prompt_hash, rank",
            [labeler.name, decided["prompt_hash"].to_list()])
    out: dict[str, list[Any]] = {h: [] for h in decided["prompt_hash"].to_list()}
    for h, task, code, rank, score, p in rows.iter_rows():
        out[h].append(TaskLabel(int(task), str(code), int(rank), float(score), None, p))
    return out


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


# --- the warehouse -----------------------------------------------------------------------------------------


class NotABenchmapWarehouse(InputError):
    """The warehouse lacks tables the what-if reads: `missing` names them; `none_present` when it has none of
    them (another DuckDB file, not a benchmap warehouse)."""

    def __init__(self, warehouse_path: str | Path, missing: Sequence[str], none_present: bool) -> None:
        self.missing, self.none_present = list(missing), none_present
        what = ("not a benchmap warehouse (it has none of the tables the what-if reads: " if none_present
                else "the warehouse lacks tables the what-if reads (")
        super().__init__(f"{what}{', '.join(missing)})", path=warehouse_path)


def warehouse_open_error(warehouse_path: str | Path) -> str | None:
    """DuckDB's reason (first line) why the file does not open read-only; None when it opens."""
    try:
        with wh.connect(warehouse_path, read_only=True) as con:
            con.execute("select 1")
    except duckdb.Error as exc:
        return wh.error_first_line(exc)
    return None


def check_warehouse_tables(warehouse_path: str | Path, names: Sequence[str]) -> None:
    """NotABenchmapWarehouse unless every table of `names` is in the warehouse."""
    with wh.connect(warehouse_path, read_only=True) as con:
        missing = [n for n in names if not wh.table_exists(con, n)]
    if missing:
        raise NotABenchmapWarehouse(warehouse_path, missing, none_present=len(missing) == len(names))


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
    (hash -> labels, e.g. from label_cache) to reuse labels; a text already landed keeps its published labels
    (`landed_label_sets`). Each result frame carries `candidate`."""
    prompts, rejects = read_candidate_prompts(folder)  # first: a file of no prompt costs no labeler build
    if prompts.is_empty():  # said as the landing step says it: which line and why, not a count alone
        first = rejects.row(0, named=True) if rejects.height else None
        why = f"; first line {first['line_number']}: {first['reason']}" if first else ""
        lines = f"{rejects.height} rejected line{'' if rejects.height == 1 else 's'}"
        raise InputError(f"no valid prompts ({lines}{why})",
                         path=candidate_prompts_file(folder))
    check_warehouse_tables(warehouse_path, (*gaps.REFERENCE_TABLES, *(INDEX_TABLES if labeler is None else ())))
    tables = read_tables(warehouse_path, gaps.REFERENCE_TABLES)
    if labeler is None:
        tables |= read_tables(warehouse_path, INDEX_TABLES)
        labeler = build_offline_labeler(tables, warehouse_path)
    landed = landed_label_sets(warehouse_path, prompts["prompt_hash"].unique().to_list(), labeler)
    candidate_labels, failed = gaps.label_candidate(prompts, labeler, {**(cached or {}), **landed})
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
                              rejects=rejects, label_failed=failed)
