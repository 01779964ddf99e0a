"""What `run_all` reads back from a finished in-process run (errors, materializations, tables written, failed
checks), the headline lines of its final summary (from the warehouse's `coverage_headline`), the one line of a
run stopped by an interrupt, and the runs an earlier, killed run_all left unfinished."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from dagster import AssetKey, DagsterEventType, ExecuteInProcessResult

from assets.written_with_failures import WRITTEN_WITH_FAILURES
from resources.untrusted import scrub_untrusted

# --- reading a run's result ---------------------------------------------------------------------------------

FAILURE_PREFIX = "dagster._core.definitions.events.Failure: "  # how Dagster's error info names a raised Failure


def fail_abandoned_runs(instance: Any) -> list[str]:
    """Mark failed, and say so, the runs a killed run_all left STARTED (resources/run_launcher.py
    `fail_abandoned_in_process_runs`): without `dagster dev`'s run monitoring nothing else would."""
    from models.report.formatting import count
    from resources.run_launcher import fail_abandoned_in_process_runs

    abandoned = fail_abandoned_in_process_runs(instance)
    if abandoned:
        print(f"marked {count(len(abandoned), 'run')} of an earlier run_all failed: the process that ran "
              f"{'them' if len(abandoned) > 1 else 'it'} is gone and the run{'s' if len(abandoned) > 1 else ''} did "
              "not finish "
              f"({', '.join(r[:8] for r in abandoned)})")
    return abandoned


def step_error(event: Any) -> str:
    """What a STEP_FAILURE or RUN_FAILURE event says went wrong: the user's exception, not Dagster's wrapper
    (a Failure's description without its class: it is written for the reader). Of a chain, the outermost error
    that is not Dagster's: an InputError raised from a UnicodeDecodeError names the file and line, and printing
    the innermost cause dropped them (a probe, 2026-12-08: "UnicodeDecodeError: 'utf-8' codec can't decode byte
    0xe9 in position 73910", where the step's error named Task Statements.txt and its line)."""
    error = getattr(event.event_specific_data, "error", None)
    while error is not None and error.cause is not None and _dagsters(error):
        error = error.cause
    said = error.message.strip() if error else (event.message or "")
    return said.removeprefix(FAILURE_PREFIX)


def _dagsters(error: Any) -> bool:
    """Whether an error is Dagster's wrapper around the step's own (DagsterExecutionStepExecutionError, ...)."""
    return error.cls_name is None or error.cls_name.startswith("Dagster")


def errors(result: ExecuteInProcessResult) -> list[str]:
    messages, seen = [], set()
    for event in result.all_events:
        if event.event_type in (DagsterEventType.STEP_FAILURE, DagsterEventType.RUN_FAILURE):
            said = step_error(event)
            if event.event_type == DagsterEventType.RUN_FAILURE and said in seen:
                continue  # an in-process run's failure repeats its step's
            seen.add(said)
            step = event.step_key or "run"
            # a gate's description opens with its step already (a probe read "exports: exports: not run ...")
            text = said if said.startswith(f"{step}: ") else f"{step}: {said}"
            messages.append(scrub_untrusted(text) or "")  # an exception may quote a server: printed masked
    return messages


def materializations(result: ExecuteInProcessResult) -> list[Any]:
    out = []
    for event in result.get_asset_materialization_events():
        materialization = event.event_specific_data.materialization
        if materialization is not None:
            out.append(materialization)
    return out


def metadata_value(result: ExecuteInProcessResult, key: str, name: str, partition: str | None = None) -> object:
    """A metadata value of the asset's materialization (`partition`: of that partition, in a run of several)."""
    for materialization in materializations(result):
        if materialization.asset_key == AssetKey(key) and partition in (None, materialization.partition):
            value = materialization.metadata.get(name)
            return None if value is None else value.value
    return None


def failure_metadata_value(result: ExecuteInProcessResult, name: str) -> list[object]:
    """The values of metadata `name` that failed steps raised with (dagster.Failure(metadata=...)), in order."""
    values = []
    for event in result.all_events:
        if event.event_type == DagsterEventType.STEP_FAILURE:
            data = getattr(event.event_specific_data, "user_failure_data", None)
            value = (data.metadata or {}).get(name) if data is not None else None
            if value is not None:
                values.append(value.value)
    return values


def failed_after_writing(result: ExecuteInProcessResult | None) -> bool:
    """The run failed only because labeling steps left prompts without labels after writing their outputs
    (assets/written_with_failures.py): every failed step says so, the outputs are recorded. run_all counts those
    prompts (exit EXIT_LABEL_FAILURES) instead of a failed step."""
    if result is None or result.success:
        return False
    failed = [e for e in result.all_events if e.event_type == DagsterEventType.STEP_FAILURE]
    return bool(failed) and len(failure_metadata_value(result, WRITTEN_WITH_FAILURES)) == len(failed)


def failed_prompts_by_benchmark(result: ExecuteInProcessResult) -> dict[str, int]:
    """benchmark -> prompts its labeling steps left failed after writing the rest (a range run's, per partition)."""
    failed: dict[str, int] = {}
    for by_benchmark in failure_metadata_value(result, WRITTEN_WITH_FAILURES):
        for benchmark, n in (by_benchmark if isinstance(by_benchmark, dict) else {}).items():
            failed[benchmark] = failed.get(benchmark, 0) + int(n)
    return failed


def written_tables(result: ExecuteInProcessResult, partition: str | None = None) -> dict[str, int]:
    """table -> rows written, for every materialization the IO manager stored as a table (`partition`: only
    that partition's, in a run of several)."""
    out = {}
    for materialization in materializations(result):
        if partition is not None and materialization.partition != partition:
            continue
        if "table" in materialization.metadata:
            rows = materialization.metadata.get("row_count")
            out[materialization.asset_key.path[-1]] = int(rows.value) if rows is not None else 0
    return out


def failed_evaluations(result: ExecuteInProcessResult, severity: str | None = None) -> list[Any]:
    """The check evaluations that did not pass (of `severity` only, e.g. "ERROR", when given)."""
    return [e for e in result.get_asset_check_evaluations()
            if not e.passed and (severity is None or e.severity.value == severity)]


def check_label(evaluation: Any) -> str:
    """'asset:check (SEVERITY)', how the run's lines name a check."""
    return f"{evaluation.asset_key.to_user_string()}:{evaluation.check_name} ({evaluation.severity.value})"


def failed_checks(result: ExecuteInProcessResult, severity: str | None = None) -> list[str]:
    """check_label of every check that did not pass (of `severity` only, when given)."""
    return [check_label(e) for e in failed_evaluations(result, severity)]


def check_errors(evaluation: Any, limit: int = 3) -> list[str]:
    """The first `limit` entries of a check's `errors` metadata (a mapping, say index name -> the file and line at
    fault): the console named only `benchmark_index_files_valid`, the file and line were in Dagster's log."""
    errors = getattr(evaluation.metadata.get("errors"), "value", None)
    items = errors.values() if isinstance(errors, dict) else errors if isinstance(errors, list) else []
    if not items and getattr(evaluation, "description", None):
        # a data check's failed rules (its description): the console said only "oews_wages_expectations (ERROR)",
        # the rule and an example value were in Dagster's log (a probe, 2026-12-08)
        items = [line for line in evaluation.description.splitlines() if line.strip()]
    return [str(item) for item in list(items)[:limit]]


# --- the summary --------------------------------------------------------------------------------------------

def headline_lines(warehouse_path: str | None) -> list[str]:
    """The headline numbers of `coverage_headline` (all benchmarks), read defensively: only the columns that
    exist are used, unknown metrics are shown as they are, and a missing table gives no line."""
    if not warehouse_path:
        return []
    from resources import warehouse as wh

    try:
        frame = wh.read_table(warehouse_path, "coverage_headline")
    except Exception:  # noqa: BLE001 - the summary is informative; a missing table says nothing
        return []
    columns = set(frame.columns)
    if frame.is_empty() or not {"metric", "value"} <= columns:
        return []
    rows = frame.to_dicts()
    for column in frame.columns:  # scope, benchmark_index, ...: the pooled 'all' rows where a column has them
        if column not in {"metric", "detail", "labeler", "hours_weighting"} and frame.schema[column] == pl.Utf8:
            rows = [r for r in rows if r.get(column) == "all"] or rows
    if "hours_weighting" in columns:
        rows = [r for r in rows if r.get("hours_weighting") in (None, "pi")] or rows
    labelers = sorted({str(r["labeler"]) for r in rows if r.get("labeler") is not None}) if "labeler" in columns else []
    if labelers:
        rows = [r for r in rows if str(r.get("labeler")) == labelers[0]]
    heading = "headline (all benchmarks" + (f", labeler {labelers[0]}" if labelers else "") + "):"
    metrics: dict[str, list[str]] = {}
    for row in sorted(rows, key=lambda r: r.get("threshold") or 0):
        value, metric = row.get("value"), str(row.get("metric"))
        if value is None or (metric.endswith("_uncovered") and metric.replace("_uncovered", "_covered") in
                             {str(r.get("metric")) for r in rows}):
            continue  # the complement of a metric already shown
        numerator, denominator = row.get("numerator"), row.get("denominator")
        ratio = (isinstance(numerator, int | float) and isinstance(denominator, int | float) and denominator
                 and abs(numerator / denominator - value) < 1e-9)
        is_share = isinstance(value, float) and 0 <= value <= 1 and ("share" in metric or bool(ratio))
        share = f"{value:.1%}" if is_share else f"{value:,.4g}"
        if isinstance(numerator, int | float) and isinstance(denominator, int | float) and denominator:
            count = (f"{numerator / 1e9:,.1f} of {denominator / 1e9:,.1f} billion hours" if denominator > 1e6
                     else f"{numerator:,.0f} of {denominator:,.0f}")
            text = f"{count} ({share})" if is_share else count  # a count needs no second number
        else:
            text = share
        at = f" at >= {row['threshold']}" if row.get("threshold") is not None else ""
        metrics.setdefault(metric, []).append(f"{text}{at}")
    order = ["tasks_covered", "occupations_covered", "major_groups_uncovered", "hours_share_covered"]
    lines = ["what the raw labels say (" + heading.removeprefix("headline (").replace("):", "), every label counted "
                                                                                 "as true, for comparison only:")]
    for metric in sorted(metrics, key=lambda m: (order.index(m) if m in order else len(order), m)):
        lines.append(f"  {metric.replace('_', ' ')}: {'; '.join(metrics[metric])}")
    return [*published_lines(warehouse_path), *lines] if len(lines) > 1 else []


def published_lines(warehouse_path: str) -> list[str]:
    """The one-line answer (models/report/answer.py: the sentence summary.md and the map open with) and its
    supporting lines, naming the latest release; nothing when headline_estimates is missing."""
    from resources import answer_queries as aq
    from resources import release as rl

    try:
        latest = latest_release_of(warehouse_path)
        answer = aq.answer(warehouse_path, released=rl.release_date(latest.name) if latest is not None else None)
    except Exception:  # noqa: BLE001 - informative only: a missing or unreadable table gives no line
        return []
    if answer is None:
        return []
    return [answer.sentence, *[f"  - {line}" for line in answer.supporting]]


def behind_line(behind: dict[str, tuple[int, int]], latest: Path | None) -> str:
    """Why the analysis and the release did not run: the benchmarks whose labels are not of their prompts
    (benchmark -> texts labeled that it no longer has, prompts with neither labels nor a recorded failure)."""
    from models.report.formatting import describe_behind, latest_release_phrase

    return (f"analysis/exports: not run, nothing released ({latest_release_phrase(latest)}): labels behind the "
            f"prompts ({describe_behind(behind)}): a "
            f"labeling step failed or was stopped after the prompts changed, and the numbers would mix both "
            f"contents; rerun `python -m pipelines.run_all` to finish labeling (what was labeled is cached)")


def not_released_line(n_failed: int, latest: Path | None) -> str:
    """What a failed run that made no release says in place of the headline: its warehouse figures are no
    release; the one that stands, with its sentence (its summary.md's first bold line)."""
    head = f"not released: this run FAILED ({n_failed} step(s), below), so it published no figures"
    if latest is None:
        return f"{head}; there is no release yet"
    from assets.export_context import SUMMARY_NAME

    try:
        lines = (latest / SUMMARY_NAME).read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    sentence = next((line[2:-2] for line in lines if len(line) > 4 and line.startswith("**") and line.endswith("**")),
                    None)
    return f"{head}; the latest release stands, {latest.name}" + (f": {sentence}" if sentence else "")


# --- a run that was stopped ---------------------------------------------------------------------------------

@dataclass
class Progress:
    """How far one run_all got: what its closing line says when it is stopped (an interrupt) mid-way."""

    warehouse_path: str | None = None
    release_before: Path | None = None  # the latest release when the run started
    runner: Any = None  # pipelines.step_runner.Runner, once the steps begin

    def start(self, warehouse_path: str | None) -> None:
        self.warehouse_path = warehouse_path
        self.release_before = latest_release_of(warehouse_path)


def latest_release_of(warehouse_path: str | None) -> Path | None:
    from resources import release as rl

    return rl.latest_release(rl.exports_root(warehouse_path)) if warehouse_path else None


def stopped_line(progress: Progress, signum: int) -> str:
    """The one line of a run stopped by a signal: where, whether anything was released, how to go on."""
    name = signal.Signals(signum).name
    where = f" during {progress.runner.current}" if progress.runner is not None and progress.runner.current else ""
    latest = latest_release_of(progress.warehouse_path)
    if latest is not None and latest != progress.release_before:
        released = f"release {latest.name} was published before it"
    else:
        released = "nothing released" + (f" (the latest release stays {latest})" if latest is not None else "")
    # a floor: a batch the signal caught between the label store and the warehouse is in neither count, and the
    # rerun copies it from the store (resources/label_store.py)
    labeled = progress.runner.labeled_so_far() if progress.runner is not None else 0
    return (f"python -m pipelines.run_all: interrupted ({name}){where}: stopped, no further step ran; {released}; "
            f"work done so far is kept (at least {labeled:,} prompts labeled by this run are in the label cache): rerun "
            f"`python -m pipelines.run_all` to continue")
