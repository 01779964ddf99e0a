"""The label tables' reads, in DuckDB: label counts, the label checks, and the few prompts and labels the
validation and annotation steps need (semi joins, so memory follows the prompts asked for, not the label table).

Every function takes the warehouse path and returns polars frames; the assets (assets/labels.py,
assets/analysis.py) and the pure models never write SQL themselves. Row order is the tables' (`order by
rowid`) where a caller's seeded sampling or bootstrap depends on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import duckdb
import polars as pl

from models.coverage import LABEL_COUNT_SCHEMA, LABEL_DEPTHS
from resources import warehouse as wh

LABELS = "prompt_task_labels"
PROMPTS = "benchmark_prompts"
WORK = "prompt_work"
# a label_failures row `f` whose prompt the published labels have no work decision for: open work (a failure of
# an earlier labeler version whose prompt was labeled since is history)
UNLABELED_FAILURE_SQL = (f"not exists (select 1 from {WORK} w where w.benchmark = f.benchmark and "
                         "w.prompt_hash = f.prompt_hash)")
# A prompt the benchmark itself labeled by hand: any of the documented label fields (GDPval/TheAgentCompany
# occupation, JobBench task statement, an O*NET-SOC code or task id given by the source).
HUMAN_LABELED_SQL = ("occupation is not null or onet_task is not null or onet_task_id is not null "
                     "or onet_soc_code is not null")


def tables_exist(path: str | Path, *names: str) -> bool:
    """Whether every one of `names` is a table of the warehouse (False when the file does not exist yet)."""
    if not Path(path).exists():
        return False
    with wh.connect(path, read_only=True) as con:
        return all(wh.table_exists(con, name) for name in names)


# --- label counts -------------------------------------------------------------------------------------------

def label_counts_sql(relation: str = LABELS) -> str:
    """DuckDB SQL turning prompt-level labels (`relation`) into label counts (LABEL_COUNT_SCHEMA).

    A prompt counts once per task and labeler (its best rank decides the depth bucket), so summing n_prompts
    over benchmarks and buckets gives distinct (benchmark, prompt_id) per task, as `task_coverage` defines it.
    `models.coverage.label_counts` is the same computation on a frame.
    """
    depths = sorted(d for d in LABEL_DEPTHS if d is not None)
    bucket = "case " + " ".join(f"when best_rank <= {int(d)} then {int(d)}" for d in depths) + " end"
    return f"""
with prompt_task as (
    select labeler, min(labeler_version) as labeler_version, benchmark, prompt_id, onet_soc_code,
           cast(task_id as bigint) as task_id, min(rank) as best_rank
    from {wh.quote_identifier(relation)}
    group by labeler, benchmark, prompt_id, onet_soc_code, cast(task_id as bigint)
)
select labeler, labeler_version, benchmark, onet_soc_code, task_id, cast({bucket} as bigint) as min_depth,
       count(*)::bigint as n_prompts
from prompt_task
group by all
order by labeler, labeler_version, benchmark, onet_soc_code, task_id, min_depth nulls last
"""


def label_counts_from_connection(con: duckdb.DuckDBPyConnection, relation: str = LABELS) -> pl.DataFrame:
    """Label counts (LABEL_COUNT_SCHEMA) of the labels in `relation` on an open connection."""
    return wh.fetch_polars(con, label_counts_sql(relation)).cast(LABEL_COUNT_SCHEMA)  # type: ignore[arg-type]


def task_label_counts(path: str | Path) -> tuple[int, pl.DataFrame]:
    """(rows of prompt_task_labels, its label counts), read in one connection."""
    with wh.connect(path, read_only=True) as con:
        label_rows = con.execute(f"select count(*) from {LABELS}").fetchone()[0]
        return int(label_rows), label_counts_from_connection(con)


# --- the label checks ---------------------------------------------------------------------------------------

# a label row `l` whose text is not its benchmark's current prompt of that id (stale: the prompt changed or left)
NOT_A_CURRENT_PROMPT = (f"not exists (select 1 from {PROMPTS} p where p.benchmark = l.benchmark "
                        "and p.prompt_id = l.prompt_id and p.prompt_hash = l.prompt_hash)")

LABELS_VALID_SQL = f"""
select
  (select count(*) from prompt_task_labels l where not exists (
     select 1 from onet_tasks t where t.task_id = l.task_id and t.onet_soc_code = l.onet_soc_code))
     as unknown_tasks,
  (select count(*) from (select benchmark, prompt_id, labeler, labeler_version, task_id
     from prompt_task_labels
     group by all having count(*) > 1)) as duplicate_labels,
  (select count(*) from (select benchmark, prompt_id, labeler, labeler_version from prompt_task_labels
     group by all having min(rank) <> 1)) as prompts_without_rank1,
  (select count(*) from prompt_task_labels l where {NOT_A_CURRENT_PROMPT}) as stale_labels
"""


def labels_behind_prompts(path: str | Path) -> dict[str, tuple[int, int]]:
    """benchmark -> (label texts it no longer has, prompts with neither a work decision nor a recorded failure):
    benchmarks whose label tables (prompt_task_labels, prompt_work) are not of their current prompts, as a
    labeling step that failed or was stopped after the prompts were refreshed leaves them. A prompt whose labeling
    failed (label_failures) is not behind: the release counts it as unlabeled and says so. Empty when every
    benchmark's labels are in step, or before any prompt landed."""
    if not tables_exist(path, PROMPTS):
        return {}
    with wh.connect(path, read_only=True) as con:
        label_tables = [t for t in (LABELS, WORK) if wh.table_exists(con, t)]
        rows: dict[str, list[int]] = {}
        if label_tables:
            labeled = " union ".join(f"select benchmark, prompt_id, prompt_hash from {t}" for t in label_tables)
            for benchmark, n in con.execute(
                    f"select benchmark, count(*) from ({labeled}) l where {NOT_A_CURRENT_PROMPT} group by 1"
                    ).fetchall():
                rows.setdefault(str(benchmark), [0, 0])[0] = int(n)
        where = []
        if WORK in label_tables:
            where.append(f"not exists (select 1 from {WORK} w where w.benchmark = p.benchmark "
                         "and w.prompt_id = p.prompt_id and w.prompt_hash = p.prompt_hash)")
        if wh.table_exists(con, "label_failures"):
            where.append("not exists (select 1 from label_failures f where f.benchmark = p.benchmark "
                         "and f.prompt_hash = p.prompt_hash)")
        for benchmark, n in con.execute(f"select benchmark, count(*) from {PROMPTS} p "
                                        f"{'where ' + ' and '.join(where) if where else ''} group by 1").fetchall():
            rows.setdefault(str(benchmark), [0, 0])[1] = int(n)
    return {b: (stale, unlabeled) for b, (stale, unlabeled) in sorted(rows.items())}


def label_problem_counts(path: str | Path) -> dict[str, int]:
    """unknown_tasks, duplicate_labels, prompts_without_rank1, stale_labels (all 0 when the labels are valid)."""
    return {k: int(v) for k, v in wh.query(path, LABELS_VALID_SQL).row(0, named=True).items()}


def current_labeler_versions(path: str | Path) -> pl.DataFrame:
    """The distinct (labeler, labeler_version) of prompt_task_labels: the labelers in use."""
    return wh.query(path, f"select distinct labeler, labeler_version from {LABELS}")


# --- prompts and labels of some prompts ---------------------------------------------------------------------

def _keys_frame(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(pl.col("benchmark").cast(pl.Utf8), pl.col("prompt_id").cast(pl.Utf8)).unique()


def prompt_columns(path: str | Path, schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """The columns of benchmark_prompts named by `schema` (an empty frame of it before the table exists)."""
    if not tables_exist(path, PROMPTS):
        return pl.DataFrame(schema=dict(schema))
    return wh.query(path, "select " + ", ".join(schema) + f" from {PROMPTS}")


def prompt_texts(path: str | Path, keys: pl.DataFrame) -> pl.DataFrame:
    """benchmark, prompt_id, prompt_hash, prompt of the given (benchmark, prompt_id) keys only."""
    with wh.connect(path, read_only=True) as con:
        con.register("_text_keys", _keys_frame(keys).to_arrow())
        return wh.fetch_polars(
            con,
            "select p.benchmark, p.prompt_id, p.prompt_hash, p.prompt from benchmark_prompts p "
            "semi join _text_keys using (benchmark, prompt_id) order by p.rowid",
        )


def prompt_hashes(path: str | Path, benchmarks: Sequence[str]) -> pl.DataFrame:
    """benchmark, prompt_id, prompt_hash of every prompt of `benchmarks`, in table order."""
    return wh.query(path, f"select benchmark, prompt_id, prompt_hash from {PROMPTS} "
                          "where benchmark in (select unnest(?::varchar[])) order by rowid", [list(benchmarks)])


def validation_inputs(path: str | Path, gold_keys: pl.DataFrame, prompt_schema: Mapping[str, pl.DataType],
                      label_schema: Mapping[str, pl.DataType]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The prompts a human labeled (in benchmark_prompts: an occupation or an O*NET task statement; or a
    (benchmark, prompt_id) of `gold_keys`), `prompt_schema`'s columns only, and their prompt_task_labels rows
    in `label_schema`'s columns (rationale null), both filtered in DuckDB (semi join on (benchmark,
    prompt_id)) so memory follows the human-labeled prompts, not the label table. Both come in table order
    (`order by rowid`: a join does not preserve it), as a plain scan returned them: the per-prompt order feeds
    the seeded bootstrap."""
    prompts = pl.DataFrame(schema=dict(prompt_schema))
    labels = pl.DataFrame(schema=dict(label_schema))
    has_prompts = tables_exist(path, PROMPTS)
    has_labels = tables_exist(path, LABELS)
    if not (has_prompts or has_labels):
        return prompts, labels
    keys = "select benchmark, prompt_id from _gold_keys"
    if has_prompts:
        keys = f"select benchmark, prompt_id from benchmark_prompts where {HUMAN_LABELED_SQL} union all {keys}"
    with wh.connect(path, read_only=True) as con:
        con.register("_gold_keys", _keys_frame(gold_keys).to_arrow())
        if has_prompts:
            selected = ", ".join(f"p.{c}" for c in prompt_schema)
            prompts = wh.fetch_polars(
                con,
                f"with keys as ({keys}) select {selected} from benchmark_prompts p "
                "semi join keys using (benchmark, prompt_id) order by p.rowid",
            )
        if has_labels:  # rationale (free text, unused by validation) stays in the warehouse
            selected = ", ".join(
                "null::varchar as rationale" if c == "rationale" else f"l.{c}" for c in label_schema
            )
            labels = wh.fetch_polars(
                con,
                f"with keys as ({keys}) select {selected} from prompt_task_labels l "
                "semi join keys using (benchmark, prompt_id) order by l.rowid",
            )
    return prompts, labels


def annotation_pool(path: str | Path) -> pl.DataFrame:
    """(benchmark, prompt_id) of every labeled prompt in benchmark_prompts: what the annotation sample draws
    from, without texts or labels."""
    if not tables_exist(path, PROMPTS, LABELS):
        return pl.DataFrame(schema={"benchmark": pl.Utf8, "prompt_id": pl.Utf8})
    return wh.query(
        path,
        "select p.benchmark, p.prompt_id from benchmark_prompts p "
        "semi join prompt_task_labels l using (benchmark, prompt_id)",  # DuckDB builds on the prompts side
    )


def labels_of_keys(path: str | Path, keys: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """`columns` of the prompt_task_labels rows of the (benchmark, prompt_id) `keys`, in table order."""
    with wh.connect(path, read_only=True) as con:
        con.register("_sample_keys", keys.select("benchmark", "prompt_id").to_arrow())
        return wh.fetch_polars(
            con,
            "select " + ", ".join(f"l.{c}" for c in columns) + " from prompt_task_labels l "
            "semi join _sample_keys using (benchmark, prompt_id) order by l.rowid",
        )


def labels_of_hashes(path: str | Path, hashes: Sequence[str], *, columns: Sequence[str] | None = None
                     ) -> pl.DataFrame:
    """prompt_task_labels rows of the prompts with these hashes: `columns` of them, or every column with the
    rationale (free text) nulled."""
    selected = (", ".join(wh.quote_identifier(c) for c in columns) if columns is not None
                else "* exclude (rationale), null::varchar as rationale")
    return wh.query(path, f"select {selected} from {LABELS} where prompt_hash in (select unnest(?::varchar[]))",
                    [list(hashes)])


def work_of_hashes(path: str | Path, hashes: Sequence[str], schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """prompt_work rows of the prompts with these hashes (an empty `schema` frame before the table exists)."""
    if not tables_exist(path, WORK):
        return pl.DataFrame(schema=dict(schema))
    return wh.query(path, f"select * from {WORK} where prompt_hash in (select unnest(?::varchar[]))",
                    [list(hashes)])


def judge_sample_gaps(path: str | Path, sample: tuple[float, int] | None,
                      benchmarks: Sequence[str] | None = None) -> dict[str, int]:
    """Per benchmark (of `benchmarks`, default every landed one), the sampled texts without the LLM judge's
    reading: those it failed on in its latest run (judge_sample_design.n_failed), and, while a judge sample is
    configured (`sample`: fraction, minimum), every text a landed benchmark with no design row would sample
    (max(minimum, ceil(fraction N)) of its N distinct texts). No design means the judge labeled none of its
    sample (the step failed and wrote nothing), so its estimates use the vendored reference labels: a probe's
    later `run_all --benchmarks` of another benchmark published them so and exited 0."""
    if not Path(path).exists():
        return {}
    with wh.connect(path, read_only=True) as con:
        has_design, has_prompts = wh.table_exists(con, "judge_sample_design"), wh.table_exists(con, PROMPTS)
        chosen = "true" if benchmarks is None else "benchmark in (select unnest(?::varchar[]))"
        params = [] if benchmarks is None else [list(benchmarks)]
        gaps: dict[str, int] = {}
        if has_design:
            gaps |= dict(con.execute(f"select benchmark, sum(n_failed)::bigint from judge_sample_design where {chosen} "
                                     "group by 1 having sum(n_failed) > 0", params).fetchall())
        if sample is not None and has_prompts:
            fraction, minimum = sample
            undesigned = "anti join judge_sample_design d using (benchmark)" if has_design else ""
            gaps |= dict(con.execute(
                f"select benchmark, least(n, greatest(?, ceil(? * n)))::bigint from (select p.benchmark, "
                f"count(distinct p.prompt_hash) as n from {PROMPTS} p {undesigned} where {chosen} group by 1) "
                "where n > 0", [minimum, fraction, *params]).fetchall())
    return {str(b): int(n) for b, n in sorted(gaps.items())}
