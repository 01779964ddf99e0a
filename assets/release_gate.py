"""What the analysis and the release steps refuse to start from in every run, whoever launched it (the UI, the
analysis automation sensor, `dagster asset materialize`, run_all): labels behind their benchmark's prompts (every
step that reads the labels, in any form: the headline, the label counts, coverage, gaps, scores, the release's
files), and a warehouse without the tables a release is made of.

run_all asks the first question before its analysis (pipelines/run_all.py `_labels_behind`) and runs nothing; a
run Dagster launches had no such question: after a benchmark's prompts changed and its labeling failed (or only its
benchmark tables were materialized), the automation's or the UI's analysis run published, as `latest`, figures
mixing the new prompts with the old texts' labels, and succeeded. On a warehouse without the analysis tables,
`exports` alone published an empty release as `latest` and succeeded. Each gate fails its step with one line
naming what is missing and what to run; nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from dagster import Failure, MetadataValue

from models import exports as ex
from models.report.formatting import describe_behind, latest_release_phrase
from resources import release as rl
from resources.dagster_resources import Warehouse

RELEASE_TABLES = ex.REQUIRED_TABLES  # a release (and its report) is made of these; the rest are optional
MAKE_ANALYSIS = ("run the job analysis_refresh_job (after reference_refresh_job and each benchmark partition's "
                 "benchmark_refresh_job), or `python -m pipelines.run_all`, which runs them in order")


def _latest(warehouse: Warehouse) -> str:
    latest = rl.latest_release(warehouse.exports_root())
    return latest_release_phrase(latest.name if latest is not None else None)


def refuse_labels_behind(warehouse: Warehouse, step: str) -> None:
    """Fail `step` when some benchmark's labels are not of its current prompts (resources/label_queries.py
    `labels_behind_prompts`): its numbers would mix both contents."""
    behind = warehouse.labels_behind_prompts()
    if not behind:
        return
    names = sorted(behind)
    raise Failure(
        description=(
            f"{step}: not run, nothing published ({_latest(warehouse)}): labels behind the prompts "
            f"({describe_behind(behind)}): the benchmark tables were refreshed but the labels were not (a labeling "
            "step failed or was stopped, or only the benchmark tables were materialized), and the numbers would "
            f"mix both contents. Materialize the labels first: benchmark_refresh_job for partition "
            f"{', '.join(names[:5])}{' ...' if len(names) > 5 else ''} (the sensor's retry, or the UI), or "
            "`python -m pipelines.run_all`; what was labeled is cached"),
        metadata={"labels_behind": MetadataValue.json({b: {"stale_label_texts": stale, "prompts_without_labels": n}
                                                       for b, (stale, n) in behind.items()})},
        allow_retries=False,
    )


def refuse_missing_tables(warehouse: Warehouse, step: str, tables: Iterable[str] = RELEASE_TABLES) -> None:
    """Fail `step` when a table it is made of is not in the warehouse (a fresh one, or one whose analysis has not
    run): a report or release without them would be empty, not wrong-looking."""
    tables = tuple(tables)
    missing = [name for name in tables if not warehouse.table_exists(name)]
    if not missing:
        return
    shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
    raise Failure(
        description=(f"{step}: not run, nothing published ({_latest(warehouse)}): the warehouse has no {shown} "
                     f"({len(missing)} of the {len(tables)} tables it is made of). To make them, {MAKE_ANALYSIS}"),
        metadata={"missing_tables": MetadataValue.json(missing)},
        allow_retries=False,
    )


def refuse_broken_index_files(warehouse: Warehouse, step: str, errors: Mapping[str, str]) -> None:
    """Fail `step` when an index file is broken (`errors`: index name -> its message with file and line): the
    release would leave its index out (its figures, its summary_<index>.md) as if the file had been removed, and
    a one-character typo unpublished an index (a probe, 2026-12-07)."""
    if not errors:
        return
    raise Failure(
        description=(f"{step}: not run, nothing published ({_latest(warehouse)}): {len(errors)} index file(s) "
                     f"broken, so their indexes are not computed and a release would drop them: "
                     + "; ".join(f"{name}: {message}" for name, message in sorted(errors.items()))
                     + ". Mend the file (data/indexes/ or $BENCHMAP_INDEX_DIR) and run again, or delete it to "
                     "remove its index"),
        metadata={"index_file_errors": MetadataValue.json(dict(errors))},
        allow_retries=False,
    )
