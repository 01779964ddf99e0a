"""The coverage map's aggregation in DuckDB: per-task / per-occupation prompt counts, example prompts and task
statements of the chosen labeler's labels (models/coverage_map.py turns them into the page).

`coverage_map_data_from_connection` runs on any connection whose relations hold prompt_task_labels,
benchmark_prompts and onet_tasks: the warehouse (`build_coverage_map_from_warehouse`, read-only, the label table
and prompt texts never loaded whole) or an in-memory DuckDB with frames registered (`coverage_map_data` /
`build_coverage_map`): one implementation for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from models.coverage import THRESHOLDS, select_labeler
from models.coverage_map import (
    PROMPT_CHARS,
    TASK_CHARS,
    MapAggregates,
    coverage_map_data_from_aggregates,
    coverage_map_html,
    index_options,
    map_occupations,
)
from resources import warehouse as wh

LABELS_RELATION = "prompt_task_labels"
SIMULATION_CHECK_RELATION = "unit_coverage_simulation_check"  # p_covered against known truths, per bin
ESTIMATES_RELATION = "occupation_estimates"  # per index, occupation and threshold: p_covered, prompts (issue 25)
PROMPTS_RELATION = "benchmark_prompts"
TASKS_RELATION = "onet_tasks"


def _columns(con: duckdb.DuckDBPyConnection, relation: str) -> list[str]:
    return list(con.sql(f"select * from {wh.quote_identifier(relation)} limit 0").columns)


def _labels_cte(columns: Sequence[str], relation: str, filter_labeler: bool) -> str:
    """`labels`: the chosen labeler's labels of the map's occupations, canonical types; rank 1 without ranks.

    Every aggregate below is over distinct prompt ids or takes min(rank), so it equals the same aggregate over
    the (benchmark, prompt_id, onet_soc_code, task_id) rows deduplicated with min(rank); no query needs that
    11M-row deduplicated set itself. Parameters: the occupation codes, then the labeler when filtered."""
    rank = "rank::bigint" if "rank" in columns else "1::bigint"
    labeler = " and labeler = ?" if filter_labeler else ""
    return f"""with labels as (
    select benchmark::varchar as benchmark, prompt_id::varchar as prompt_id,
        onet_soc_code::varchar as onet_soc_code, task_id::bigint as task_id, {rank} as rank
    from {wh.quote_identifier(relation)}
    where onet_soc_code::varchar in (select unnest(?::varchar[]))
        and benchmark is not null and prompt_id is not null and task_id is not null{labeler}
)
"""


# per task and benchmark: distinct prompts
_TASK_COUNTS_SQL = """
select onet_soc_code, task_id, benchmark, count(distinct prompt_id) as n
from labels group by onet_soc_code, task_id, benchmark
order by onet_soc_code, task_id, benchmark
"""
# per occupation and benchmark: distinct prompts (a prompt with two tasks of the occupation counts once)
_OCC_BENCH_SQL = """
select onet_soc_code, benchmark, count(distinct prompt_id) as n
from labels group by onet_soc_code, benchmark
order by onet_soc_code, benchmark
"""
# per benchmark: distinct prompts labeled with a task of the map's occupations
_BENCH_TOTALS_SQL = """
select benchmark, count(distinct prompt_id) as n from labels group by benchmark order by benchmark
"""
# example prompts: per occupation and benchmark the k prompts labeled most confidently (best rank, then id),
# with the texts of only those prompts. Extra parameter: k.
_EXAMPLES_SQL = """,
best as (
    select onet_soc_code, benchmark, prompt_id, rank from (
        select onet_soc_code, benchmark, prompt_id, min(rank) as rank,
            row_number() over (partition by onet_soc_code, benchmark
                               order by min(rank) asc nulls first, prompt_id asc) as pos
        from labels group by onet_soc_code, benchmark, prompt_id
    ) where pos <= ?
),
texts as (
    select p.benchmark::varchar as benchmark, p.prompt_id::varchar as prompt_id, min(p.prompt::varchar) as prompt
    from {prompts} p
    semi join best on p.benchmark::varchar = best.benchmark and p.prompt_id::varchar = best.prompt_id
    group by p.benchmark::varchar, p.prompt_id::varchar
)
select best.onet_soc_code, best.benchmark, best.prompt_id, texts.prompt
from best left join texts on texts.benchmark = best.benchmark and texts.prompt_id = best.prompt_id
order by best.onet_soc_code, best.benchmark, best.rank asc nulls first, best.prompt_id
"""
# statements of the labeled tasks only
_STATEMENTS_SQL = """
select t.onet_soc_code::varchar as onet_soc_code, t.task_id::bigint as task_id, t.task::varchar as task
from {tasks} t
semi join (select distinct onet_soc_code, task_id from labels) k
    on t.onet_soc_code::varchar = k.onet_soc_code and t.task_id::bigint = k.task_id
"""
_N_TASKS_SQL = """
select onet_soc_code::varchar as onet_soc_code, count(*)::bigint as n_tasks from {tasks} group by 1
"""


def map_aggregates(
    con: duckdb.DuckDBPyConnection,
    codes: Sequence[str],
    *,
    labels: str = LABELS_RELATION,
    prompts: str | None = PROMPTS_RELATION,
    tasks: str | None = TASKS_RELATION,
    labeler: str | None = None,
    examples_per_benchmark: int = 1,
) -> MapAggregates:
    """The label aggregates of the occupations `codes`, computed by DuckDB on `con`; `prompts` / `tasks` None
    (or lacking their text columns): no examples / statements. The labeler is chosen exactly as
    select_labeler chooses it, from the distinct labelers of the whole relation."""
    label_columns = _columns(con, labels)
    prompt_columns = _columns(con, prompts) if prompts is not None else []
    task_columns = _columns(con, tasks) if tasks is not None else []
    chosen = labeler
    params: list[Any] = [list(codes)]
    filter_labeler = False
    if "labeler" in label_columns:
        present = wh.fetch_polars(con, f"select distinct labeler from {wh.quote_identifier(labels)}")
        if not present.is_empty():
            _, chosen = select_labeler(present, labeler)
            filter_labeler = True
            params.append(chosen)
    cte = _labels_cte(label_columns, labels, filter_labeler)

    def run(sql: str, extra: Sequence[Any] = ()) -> pl.DataFrame:
        return wh.fetch_polars(con, cte + sql, [*params, *extra])

    statements = examples = None
    if tasks is not None and {"onet_soc_code", "task_id", "task"} <= set(task_columns):
        statements = run(_STATEMENTS_SQL.format(tasks=wh.quote_identifier(tasks)))
    if prompts is not None and {"benchmark", "prompt_id", "prompt"} <= set(prompt_columns):
        examples = run(_EXAMPLES_SQL.format(prompts=wh.quote_identifier(prompts)), [int(examples_per_benchmark)])
    return MapAggregates(labeler=chosen, bench_totals=run(_BENCH_TOTALS_SQL), task_counts=run(_TASK_COUNTS_SQL),
                         occ_bench=run(_OCC_BENCH_SQL), statements=statements, examples=examples)


def coverage_map_data_from_connection(
    con: duckdb.DuckDBPyConnection,
    occupations: pl.DataFrame,
    *,
    labels: str = LABELS_RELATION,
    prompts: str | None = PROMPTS_RELATION,
    tasks: str | None = TASKS_RELATION,
    labeler: str | None = None,
    thresholds: Sequence[int] = THRESHOLDS,
    examples_per_benchmark: int = 1,
    prompt_chars: int = PROMPT_CHARS,
    task_chars: int = TASK_CHARS,
    occupation_estimates: pl.DataFrame | None = None,
    simulation_check: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """The page's data (JSON-ready), aggregated by DuckDB on `con`: only per-task/per-occupation counts, the
    example prompts' texts and the labeled tasks' statements reach Python.

    `labels`, `prompts` and `tasks` name relations on `con` (tables of the warehouse, or registered frames):
    prompt_task_labels (benchmark, prompt_id, onet_soc_code, task_id; labeler and rank used when present),
    benchmark_prompts (benchmark, prompt_id, prompt) for the examples, onet_tasks (onet_soc_code, task_id,
    task) for task statements; `prompts` / `tasks` None: no examples / statements. occupations: one row per
    occupation with tasks -- onet_soc_code, title, and n_tasks (else counted from `tasks`)."""
    n_tasks = None
    if "n_tasks" not in occupations.columns and tasks is not None:
        n_tasks = wh.fetch_polars(con, _N_TASKS_SQL.format(tasks=wh.quote_identifier(tasks)))
    occ = map_occupations(occupations, n_tasks)
    codes = [c for c in occ["onet_soc_code"].to_list() if c is not None]
    aggregates = map_aggregates(con, codes, labels=labels, prompts=prompts, tasks=tasks, labeler=labeler,
                                examples_per_benchmark=examples_per_benchmark)
    return coverage_map_data_from_aggregates(occ, aggregates, thresholds=thresholds, prompt_chars=prompt_chars,
                                             task_chars=task_chars, occupation_estimates=occupation_estimates,
                                             simulation_check=simulation_check)


def coverage_map_data(
    occupations: pl.DataFrame,
    labels: pl.DataFrame,
    prompts: pl.DataFrame | None = None,
    tasks: pl.DataFrame | None = None,
    *,
    labeler: str | None = None,
    thresholds: Sequence[int] = THRESHOLDS,
    examples_per_benchmark: int = 1,
    prompt_chars: int = PROMPT_CHARS,
    task_chars: int = TASK_CHARS,
    occupation_estimates: pl.DataFrame | None = None,
    simulation_check: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """The page's data (JSON-ready) from frames: `coverage_map_data_from_connection` on an in-memory DuckDB
    with the frames registered as its relations (one implementation for frames and the warehouse).

    occupations: one row per occupation with tasks -- onet_soc_code, title, and n_tasks (else counted from
    `tasks`); occupation_coverage fits. labels: prompt_task_labels (benchmark, prompt_id, onet_soc_code,
    task_id; labeler and rank used when present). prompts: benchmark_prompts (benchmark, prompt_id, prompt)
    for the examples. tasks: onet_tasks (onet_soc_code, task_id, task) for task statements.
    """
    con = duckdb.connect()
    try:
        con.register(LABELS_RELATION, labels.to_arrow())
        if prompts is not None:
            con.register(PROMPTS_RELATION, prompts.to_arrow())
        if tasks is not None:
            con.register(TASKS_RELATION, tasks.to_arrow())
        return coverage_map_data_from_connection(
            con,
            occupations,
            prompts=PROMPTS_RELATION if prompts is not None else None,
            tasks=TASKS_RELATION if tasks is not None else None,
            labeler=labeler,
            thresholds=thresholds,
            examples_per_benchmark=examples_per_benchmark,
            prompt_chars=prompt_chars,
            task_chars=task_chars,
            occupation_estimates=occupation_estimates,
            simulation_check=simulation_check,
        )
    finally:
        con.close()


def build_coverage_map(
    occupations: pl.DataFrame,
    labels: pl.DataFrame,
    prompts: pl.DataFrame | None = None,
    tasks: pl.DataFrame | None = None,
    *,
    labeler: str | None = None,
    thresholds: Sequence[int] = THRESHOLDS,
    subtitle: str | None = None,
    footer: str | None = None,
    membership: pl.DataFrame | None = None,
    occupation_estimates: pl.DataFrame | None = None,
    simulation_check: pl.DataFrame | None = None,
) -> tuple[str, dict[str, Any]]:
    """(HTML page, its data) in one call; `membership` (benchmark_index_membership) fills the index
    selector; `occupation_estimates` colours the tiles by p_covered (models/coverage_map.py)."""
    data = coverage_map_data(occupations, labels, prompts, tasks, labeler=labeler, thresholds=thresholds,
                             occupation_estimates=occupation_estimates, simulation_check=simulation_check)
    data["indexes"] = index_options(membership, [b for b, _ in data["benchmarks"]])
    return coverage_map_html(data, subtitle=subtitle, footer=footer), data


def build_coverage_map_from_warehouse(
    path: str | Path,
    occupations: pl.DataFrame,
    *,
    labeler: str | None = None,
    thresholds: Sequence[int] = THRESHOLDS,
    subtitle: str | None = None,
    footer: str | None = None,
    examples_per_benchmark: int = 1,
    membership: pl.DataFrame | None = None,
    headlines: dict[str, dict[str, str]] | None = None,
    opening_threshold: int | None = None,
) -> tuple[str, dict[str, Any]]:
    """(HTML page, its data) from the warehouse at `path`, aggregated in DuckDB on a read-only connection:
    prompt_task_labels and benchmark_prompts are never loaded whole (examples and statements are left out
    when benchmark_prompts / onet_tasks are missing; without occupation_estimates the tiles show the labels
    as counted; `headlines`: the header per index and threshold, the published answers; `opening_threshold`: the
    one the page opens at, that of the answer's sentence)."""
    with wh.connect(path, read_only=True) as con:
        if not wh.table_exists(con, LABELS_RELATION):
            raise LookupError(f"table {LABELS_RELATION!r} is not in the warehouse {path}")
        estimates = (
            wh.fetch_polars(con, f"select * from {wh.quote_identifier(ESTIMATES_RELATION)}")
            if wh.table_exists(con, ESTIMATES_RELATION) else None
        )
        checked = (wh.fetch_polars(con, f"select * from {wh.quote_identifier(SIMULATION_CHECK_RELATION)}")
                   if estimates is not None and wh.table_exists(con, SIMULATION_CHECK_RELATION) else None)
        data = coverage_map_data_from_connection(
            con,
            occupations,
            prompts=PROMPTS_RELATION if wh.table_exists(con, PROMPTS_RELATION) else None,
            tasks=TASKS_RELATION if wh.table_exists(con, TASKS_RELATION) else None,
            labeler=labeler,
            thresholds=thresholds,
            examples_per_benchmark=examples_per_benchmark,
            occupation_estimates=estimates,
            simulation_check=checked,
        )
    data["indexes"] = index_options(membership, [b for b, _ in data["benchmarks"]])
    if opening_threshold is not None:  # the threshold the header's headline is at, where the page opens
        data["opening_threshold"] = int(opening_threshold)
    if headlines:
        data["headlines"] = headlines
    return coverage_map_html(data, subtitle=subtitle, footer=footer), data
