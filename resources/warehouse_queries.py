"""The warehouse resource's named reads: every query an asset needs, by what it returns (issue 28 item 2).

Assets ask the `Warehouse` resource (resources/dagster_resources.py, which mixes this class in) for frames and hand
frames back; they write no SQL and never see the file's path. The SQL is here, or in the query modules these
methods delegate to (resources/label_queries.py, answer_queries.py, coverage_map_queries.py, whatif.py), which
other I/O code (run_all, the CLIs) calls with a path. The stores bound to the file (label cache, task index,
export folders) are handed out here too. tests/test_asset_sql.py keeps SQL and paths out of assets/.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from resources import label_queries as lq
from resources import warehouse as wh

if TYPE_CHECKING:
    from models import report
    from resources.export_stream import StreamedTable
    from resources.label_cache import LabelCache


class WarehouseQueries:
    """Named reads of the warehouse file at `self.path` (the resource's field), each returning a polars frame
    or a plain value. No state of its own: a mixin of the `Warehouse` resource."""

    if TYPE_CHECKING:
        path: str  # the resource's pydantic field

    def _query(self, sql: str, params: list | None = None) -> pl.DataFrame:
        return wh.query(self.path, sql, params)

    def held(self) -> Any:
        """A context manager: within it this process keeps the file open, so the asset's reads reuse one DuckDB
        instance (~1 ms a connect instead of ~27 CPU-ms; `warehouse.held`). Other processes wait meanwhile, so
        hold it for one step, not a run."""
        return wh.held(self.path)

    def benchmark_has_rows(self, tables: Sequence[str], benchmark: str) -> bool:
        """Whether any of `tables` (those that exist) holds a row of `benchmark`; one connection for all."""
        with wh.connect(self.path, read_only=True) as con:
            for table in tables:
                if wh.table_exists(con, table) and con.execute(
                        f"select 1 from {wh.quote_identifier(table)} where benchmark = ? limit 1", [benchmark]
                ).fetchone():
                    return True
        return False

    def prompts_of_texts(self, keys: Sequence[tuple[str, str]]) -> pl.DataFrame:
        """benchmark, prompt_id, prompt_hash, prompt of the given (benchmark, prompt_hash) texts, one row each."""
        return self._query(
            "select benchmark, prompt_id, prompt_hash, prompt from benchmark_prompts p "
            "where list_contains(?, benchmark || '/' || prompt_hash)",
            [[f"{b}/{h}" for b, h in keys]]).unique(["benchmark", "prompt_hash"])

    def neighbour_cache_path(self, benchmark: str) -> Path:
        """Where the neighbour step keeps `benchmark`'s decisions, beside this warehouse (neighbour_cache.py)."""
        from resources import neighbour_cache

        return neighbour_cache.cache_path(self.path, benchmark)

    def estimate_cache_path(self, name: str) -> Path:
        """Where the judged checks' result `name` is kept, beside this warehouse (estimate_cache.py)."""
        from resources import estimate_cache

        return estimate_cache.cache_path(self.path, name)

    def cached_result(self, name: str, key: str) -> Any | None:
        """The judged checks' result `name` kept under `key` beside this warehouse, else None."""
        from resources import estimate_cache

        return estimate_cache.read(self.estimate_cache_path(name), key)

    def source_digest(self, *packages: str) -> str:
        """A digest of the packages' source (a cache key part, estimate_cache.py)."""
        from resources import estimate_cache

        return estimate_cache.source_digest(*packages)

    def draws_code_version(self) -> str:
        """The code version the kept per-benchmark draws are keyed by (estimate_cache.py)."""
        from resources import estimate_cache

        return estimate_cache.draws_code_version()

    def figure_key(self, name: str, frames: list[Any]) -> str | None:
        """The key a figure drawn from `frames` is kept under (estimate_cache.figure_key)."""
        from resources import estimate_cache

        return estimate_cache.figure_key(name, frames)

    def frames_key(self, parts: list[str], frames: list[Any]) -> str | None:
        """A key of `parts` and polars frames' rows (estimate_cache.frames_key)."""
        from resources import estimate_cache

        return estimate_cache.frames_key(parts, frames)

    def keep_result(self, name: str, key: str, value: Any) -> None:
        """Keep `value` as result `name` under `key` (replacing the one kept before)."""
        from resources import estimate_cache

        estimate_cache.write(self.estimate_cache_path(name), key, value)

    # --- stores and folders bound to the warehouse file ---------------------------------------------------------

    def label_cache(self) -> LabelCache:
        """The label cache and failure store in this warehouse (resources/label_cache.py)."""
        from resources.label_cache import LabelCache

        return LabelCache(self.path)

    def exports_root(self) -> Path:
        """`<folder of the warehouse file>/exports` (resources/release.py)."""
        from resources import release

        return release.exports_root(self.path)

    def streamed_export_table(self, name: str) -> StreamedTable | None:
        """A big exported table (models.exports.STREAMED_TABLES) as a handle the export writer writes from the
        warehouse in slices, never whole in memory; None when it is not one (read it whole)."""
        from resources.export_stream import streamed_table

        return streamed_table(self.path, name)

    def annotation_dir(self) -> Path:
        """Where the human-annotation CSVs are written: `<folder of the warehouse file>/annotation`."""
        return Path(self.path).parent / "annotation"

    def task_index_path(self, version: str) -> Path:
        """Where the task index of this O*NET and index version is pickled (resources/task_index.py)."""
        from resources import task_index

        return task_index.index_pickle_path(self.path, version)

    def stored_task_index_path(self) -> Path | None:
        """The current pickled task index, when there is one (resources/task_index.py: stored_index_path)."""
        from resources import task_index

        return task_index.stored_index_path(self.path)

    def load_task_index(self, warn: Callable[[str], Any] | None = None) -> tuple[Any, str, float]:
        """(TaskIndex, 'pickle'|'built', seconds): the stored pickle when current, else built from the reference
        tables, calling `warn` first (resources/task_index.py)."""
        from resources import task_index

        return task_index.load_or_build(self.path, warn)

    # --- tables -------------------------------------------------------------------------------------------------

    def table_columns(self, name: str) -> list[str]:
        """The column names of table `name` (none when it does not exist)."""
        return self._query(
            "select column_name from information_schema.columns where table_name = ? order by ordinal_position",
            [name])["column_name"].to_list()

    def table_fingerprints(self) -> dict[str, tuple[int, int]]:
        """(rows, order-independent hash) of every table but the what-if's own (pipelines/whatif.py)."""
        from resources import whatif

        return whatif.table_fingerprints(self.path)

    # --- benchmarks ---------------------------------------------------------------------------------------------

    def benchmark_registry_row(self, benchmark: str) -> pl.DataFrame:
        """first_seen, last_changed, content_hash and the metadata of the benchmark's registry row (no row when
        new): a metadata file that cannot be read keeps the stored metadata (models.benchmarks.ingest_benchmark),
        which it could not while this read only the three dates and hash (the defaults replaced it)."""
        return self._query(
            "select first_seen, last_changed, content_hash, title, version, source_url, license, agentic, "
            "public_items, saturated, target_major_group from benchmarks where benchmark = ?", [benchmark])

    def stored_prompt_count(self, benchmark: str) -> int:
        counted = self._query("select count(*) as n from benchmark_prompts where benchmark = ?", [benchmark])
        return int(counted["n"][0])

    def stored_result_count(self, benchmark: str) -> int:
        if not self.table_exists("benchmark_results"):
            return 0
        counted = self._query("select count(*) as n from benchmark_results where benchmark = ?", [benchmark])
        return int(counted["n"][0])

    def benchmark_count_mismatches(self) -> pl.DataFrame:
        """Registry rows whose counts differ from the stored prompts/results/rejects, or whose prompt ids repeat."""
        return self._query(_CONSISTENCY_SQL)

    def orphan_or_out_of_range_results(self) -> int:
        """Results with no stored prompt, or a score outside [0, 1]."""
        return int(self._query(_ORPHANS_SQL)["n"][0])

    def benchmarks_over_reject_rate(self, threshold: float) -> pl.DataFrame:
        return self._query(
            "select benchmark, n_prompts, n_results, n_rejects, "
            "n_rejects / greatest(n_prompts + n_results + n_rejects, 1) as reject_rate from benchmarks "
            "where n_rejects / greatest(n_prompts + n_results + n_rejects, 1) > ? order by reject_rate desc",
            [threshold])

    def reject_count(self, benchmark: str) -> int:
        return int(self._query("select count(*) as n from benchmark_rejects where benchmark = ?",
                               [benchmark])["n"][0])

    def benchmark_prompt_texts(self, benchmark: str) -> pl.DataFrame:
        """benchmark, prompt_id, prompt_hash, prompt of one benchmark's prompts."""
        return self._query(
            "select benchmark, prompt_id, prompt_hash, prompt from benchmark_prompts where benchmark = ?", [benchmark]
        )

    def prompt_keys(self) -> pl.DataFrame:
        """benchmark, prompt_id, prompt_hash of every prompt."""
        return self._query("select benchmark, prompt_id, prompt_hash from benchmark_prompts")

    def benchmark_counts(self, benchmarks: pl.DataFrame | None = None,
                         membership: pl.DataFrame | None = None) -> pl.DataFrame:
        """Per benchmark: prompts, labeled prompts, results (resources/answer_queries.py)."""
        from resources import answer_queries

        return answer_queries.benchmark_counts(self.path, benchmarks, membership)

    def answer(self, index: str = "all", released: str | None = None) -> report.Answer | None:
        """The headline answer of a benchmark index (resources/answer_queries.py)."""
        from resources import answer_queries

        return answer_queries.answer(self.path, index, released)

    def answers(self, indexes: Sequence[str], released: str | None = None) -> dict[str, report.Answer]:
        """The headline answers of several indexes, read once (resources/answer_queries.py)."""
        from resources import answer_queries

        return answer_queries.answers(self.path, indexes, released)

    # --- labels (resources/label_queries.py) --------------------------------------------------------------------

    def task_label_counts(self) -> tuple[int, pl.DataFrame]:
        """(label rows, label counts) of prompt_task_labels, aggregated in DuckDB."""
        return lq.task_label_counts(self.path)

    def label_problem_counts(self) -> dict[str, int]:
        return lq.label_problem_counts(self.path)

    def labels_behind_prompts(self) -> dict[str, tuple[int, int]]:
        """benchmark -> (label texts it no longer has, prompts without labels): lq.labels_behind_prompts."""
        return lq.labels_behind_prompts(self.path)

    def current_labeler_versions(self) -> pl.DataFrame:
        return lq.current_labeler_versions(self.path)

    def prompt_columns(self, schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
        return lq.prompt_columns(self.path, schema)

    def prompt_texts(self, keys: pl.DataFrame) -> pl.DataFrame:
        return lq.prompt_texts(self.path, keys)

    def prompt_hashes(self, benchmarks: Sequence[str]) -> pl.DataFrame:
        return lq.prompt_hashes(self.path, benchmarks)

    def validation_inputs(self, gold_keys: pl.DataFrame, prompt_schema: Mapping[str, pl.DataType],
                          label_schema: Mapping[str, pl.DataType]) -> tuple[pl.DataFrame, pl.DataFrame]:
        return lq.validation_inputs(self.path, gold_keys, prompt_schema, label_schema)

    def annotation_pool(self) -> pl.DataFrame:
        return lq.annotation_pool(self.path)

    def labels_of_keys(self, keys: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
        return lq.labels_of_keys(self.path, keys, columns)

    def labels_of_hashes(self, hashes: Sequence[str], *, columns: Sequence[str] | None = None) -> pl.DataFrame:
        return lq.labels_of_hashes(self.path, hashes, columns=columns)

    def work_of_hashes(self, hashes: Sequence[str], schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
        return lq.work_of_hashes(self.path, hashes, schema)

    def published_labelers(self) -> pl.DataFrame:
        """labeler, v (its lowest labeler_version) of every labeler in prompt_task_labels."""
        return self._query("select labeler, min(labeler_version) as v from prompt_task_labels group by 1")

    def published_labeler_names(self) -> list[str]:
        return self._query("select distinct labeler from prompt_task_labels")["labeler"].to_list()

    def published_task_labels(self, labeler: str | None, has_p: bool) -> pl.DataFrame:
        """One labeler's (benchmark, prompt_hash, onet_soc_code, task_id, p_exercised) rows, p = 1 without a
        p_exercised column; with `labeler` None, every labeler's, with a `labeler` column."""
        p_expr = "max(p_exercised)" if has_p else "1.0"
        if labeler is None:
            return self._query(
                f"select benchmark, prompt_hash, onet_soc_code, cast(task_id as bigint) as task_id, {p_expr} as "
                "p_exercised, labeler from prompt_task_labels group by all")
        return self._query(
            f"select benchmark, prompt_hash, onet_soc_code, cast(task_id as bigint) as task_id, {p_expr} as p_exercised "
            "from prompt_task_labels where labeler = ? group by all",
            [labeler],
        )

    def labeler_summary(self) -> pl.DataFrame:
        """Per labeler and version: label rows, prompts, benchmarks."""
        return self._query(
            "select labeler, labeler_version, count(*) as n_labels, "
            "count(distinct (benchmark, prompt_id)) as n_prompts, count(distinct benchmark) as n_benchmarks "
            "from prompt_task_labels group by labeler, labeler_version order by labeler, labeler_version"
        )

    def undecided_prompts(self) -> pl.DataFrame:
        """benchmark, n: current prompts (benchmark_prompts) with no prompt_work row of their text: never labeled
        (work or not), whatever label_failures says."""
        if not self.table_exists("prompt_work"):
            return self._query("select benchmark, count(*) as n from benchmark_prompts group by 1 order by 1")
        return self._query(
            "select p.benchmark, count(*) as n from benchmark_prompts p anti join prompt_work w on "
            "w.benchmark = p.benchmark and w.prompt_id = p.prompt_id and w.prompt_hash = p.prompt_hash "
            "group by 1 order by 1")

    def judge_failed_texts(self, sample: tuple[float, int] | None = None) -> pl.DataFrame:
        """benchmark, n: sampled texts without the LLM judge's reading (`label_queries.judge_sample_gaps`: those
        it failed on in its latest run, and with `sample` configured the whole sample of a benchmark it labeled
        none of): the estimates' sample is short of them."""
        gaps = lq.judge_sample_gaps(self.path, sample)
        return pl.DataFrame({"benchmark": list(gaps), "n": list(gaps.values())},
                            schema={"benchmark": pl.Utf8, "n": pl.Int64})

    def open_label_failures(self) -> pl.DataFrame:
        """label_failures rows of prompts still in benchmark_prompts that the published labels have no work
        decision for (prompt_work): a failure of an earlier labeler version whose prompt was labeled since is
        history, not open work."""
        unlabeled = f"where {lq.UNLABELED_FAILURE_SQL} " if self.table_exists(lq.WORK) else ""
        return self._query(
            "select f.benchmark, f.prompt_id, f.labeler, f.labeler_version, f.attempts, coalesce(f.runs, 1) as runs, "
            "f.error from label_failures f semi join benchmark_prompts p on p.benchmark = f.benchmark and "
            f"p.prompt_hash = f.prompt_hash {unlabeled}order by f.benchmark, f.prompt_id")

    def label_cache_models(self, labelers: Sequence[str]) -> list[str]:
        """The models behind the given labelers' cached labels, sorted."""
        return self._query(
            "select distinct model from label_cache where labeler in (select unnest(?::varchar[])) "
            "order by model",
            [list(labelers)],
        )["model"].to_list()

    def label_cache_labeler_keys(self, onet_version: str) -> pl.DataFrame:
        """labeler, labeler_version (model+template_version when unset), model, template_version: the distinct
        cache keys of one O*NET version (a few rows, whatever the cache's size; empty without the table)."""
        schema = {"labeler": pl.Utf8, "labeler_version": pl.Utf8, "model": pl.Utf8, "template_version": pl.Utf8}
        if not self.table_exists("label_cache"):
            return pl.DataFrame(schema=schema)
        return self._query(
            "select distinct labeler, coalesce(labeler_version, model || '+' || template_version) as labeler_version, "
            "model, template_version from label_cache where onet_version = ? order by all", [onet_version]
        ).cast(schema)  # type: ignore[arg-type]

    def label_cache_model_counts(self) -> pl.DataFrame:
        """Per labeler, model, template and O*NET version: cached prompts."""
        return self._query(
            "select labeler, model, template_version, onet_version, count(*) as n_prompts from label_cache "
            "group by all order by all"
        )

    def judge_sample_task_keys(self) -> pl.DataFrame:
        """benchmark, prompt_hash, task_id of every judge_sample_labels row."""
        return self._query(
            "select benchmark, prompt_hash, cast(task_id as bigint) as task_id from judge_sample_labels"
        )

    def judge_sample_labels_of(self, benchmark: str) -> pl.DataFrame:
        """benchmark, prompt_hash, task_id, onet_soc_code of one benchmark's judge_sample_labels rows."""
        return self._query("select benchmark, prompt_hash, cast(task_id as bigint) as task_id, onet_soc_code "
                           "from judge_sample_labels where benchmark = ?", [benchmark])

    # --- reference and analysis tables --------------------------------------------------------------------------

    def onet_task_keys(self) -> pl.DataFrame:
        return self._query("select onet_soc_code, cast(task_id as bigint) as task_id from onet_tasks")

    def onet_task_ratings(self) -> pl.DataFrame:
        """task_id, has_ratings of every O*NET task."""
        return self._query("select task_id, has_ratings from onet_tasks")

    def occupation_titles(self) -> pl.DataFrame:
        return self._query("select onet_soc_code, title from onet_occupations")

    def task_hours(self) -> pl.DataFrame:
        return self._query("select * from task_hours")

    def index_membership(self) -> pl.DataFrame:
        return self._query("select * from benchmark_index_membership")

    def coverage_labelers(self) -> pl.DataFrame:
        """The labelers task_coverage was counted from."""
        return self._query("select distinct labeler from task_coverage where labeler is not null")

    def all_index_occupations(self, columns: Sequence[str]) -> pl.DataFrame:
        """`columns` of occupation_coverage's rows of index `all` (every row when the table has no
        benchmark_index column)."""
        return self._query(f"select {', '.join(columns)} from occupation_coverage{self._all_index_filter()}")

    def all_index_occupation_count(self) -> int:
        """How many occupation_coverage rows index `all` has (the coverage map's tiles)."""
        return self._query(f"select count(*) as n from occupation_coverage{self._all_index_filter()}")["n"][0]

    def _all_index_filter(self) -> str:
        present = self._query("select * from occupation_coverage limit 0").columns
        return " where benchmark_index = 'all'" if "benchmark_index" in present else ""

    def scored_prompt_keys(self) -> pl.DataFrame:
        """benchmark, prompt_id, prompt_hash of the prompts with model results."""
        return self._query(
            "select distinct p.benchmark, p.prompt_id, p.prompt_hash from benchmark_prompts p "
            "semi join benchmark_results r on r.benchmark = p.benchmark and r.prompt_id = p.prompt_id"
        )

    def scored_prompt_estimates(self) -> pl.DataFrame:
        """prompt_hash, benchmark, onet_soc_code, p of the scored prompts' occupation estimates; p is a single
        text's weight, its calibrated probability where estimated (docs/estimates.md)."""
        columns = self._query("select * from prompt_occupation_estimates limit 0").columns
        p = "coalesce(e.p_calibrated, e.p)" if "p_calibrated" in columns else "e.p"
        return self._query(
            f"select e.prompt_hash, e.benchmark, e.onet_soc_code, {p} as p from prompt_occupation_estimates e "
            "semi join (select distinct p.benchmark, p.prompt_hash from benchmark_prompts p semi join "
            "benchmark_results r on r.benchmark = p.benchmark and r.prompt_id = p.prompt_id) k "
            "on k.benchmark = e.benchmark and k.prompt_hash = e.prompt_hash"
        )

    # --- exports and the what-if --------------------------------------------------------------------------------

    def coverage_map(self, occupations: pl.DataFrame, **options: Any) -> tuple[str, dict]:
        """The coverage map's HTML and data, aggregated in DuckDB (resources/coverage_map_queries.py)."""
        from resources.coverage_map_queries import build_coverage_map_from_warehouse

        return build_coverage_map_from_warehouse(self.path, occupations, **options)

    def run_whatif(self, folder: str | Path, params: Any, *, labeler: Any = None,
                   cached: dict[str, list[Any]] | None = None) -> Any:
        """A candidate benchmark's what-if against this warehouse, which it leaves unchanged (pipelines/whatif.py)."""
        from resources import whatif

        return whatif.run_whatif(self.path, folder, params, labeler=labeler, cached=cached)


_CONSISTENCY_SQL = """
with p as (select benchmark, count(*) as n, count(distinct prompt_id) as ids
           from benchmark_prompts group by 1),
     r as (select benchmark, count(*) as n from benchmark_results group by 1),
     j as (select benchmark, count(*) as n from benchmark_rejects group by 1)
select b.benchmark, b.n_prompts, coalesce(p.n, 0) as stored_prompts, coalesce(p.ids, 0) as distinct_ids,
       b.n_results, coalesce(r.n, 0) as stored_results, b.n_rejects, coalesce(j.n, 0) as stored_rejects
from benchmarks b left join p using (benchmark) left join r using (benchmark) left join j using (benchmark)
where b.n_prompts <> coalesce(p.n, 0) or coalesce(p.n, 0) <> coalesce(p.ids, 0)
   or b.n_results <> coalesce(r.n, 0) or b.n_rejects <> coalesce(j.n, 0)
"""
_ORPHANS_SQL = """
select count(*) as n from benchmark_results r
where r.score is null or r.score < 0 or r.score > 1
   or not exists (select 1 from benchmark_prompts p
                  where p.benchmark = r.benchmark and p.prompt_id = r.prompt_id)
"""
