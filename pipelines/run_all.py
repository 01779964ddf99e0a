"""Materialize everything into the Dagster instance at DAGSTER_HOME: `python -m pipelines.run_all`.

Order: check the warehouse (resources/integrity.py: the file is whole and every table reads; a damaged file
stops the run with the recovery command); register one dynamic partition per benchmark found in the landing
zone; materialize the unpartitioned assets that do not depend on benchmarks (reference data); each benchmark
partition (its tables, then labels; with the offline labeler, neighbouring stale partitions as one Dagster run of
their range: pipelines/run_partitions.py); then the unpartitioned assets downstream of the benchmarks (analysis, gaps,
exports). Assets are selected from the Definitions by partitioning and dependencies, so assets that other
domains add later are included.

A step runs only when Dagster's records say one of its assets is stale or missing (pipelines/run_steps.py:
never materialized in this warehouse, an unfinished attempt, a new code version (pipelines/code_versions.py),
a new source data version (the landing folder hashes and reference file checksums run_all reports first:
resources/source_versions.py), a dependency materialized since, or its output table changed behind Dagster's
back); `--force` runs every step. Before any of this, a plain run whose fingerprint matches the last complete
run's prints its summary and exits without importing Dagster (pipelines/up_to_date.py). The instance's records
are trusted only for the warehouse file they describe (its identity is stored in it). `--rebuild` first moves a damaged warehouse aside and restores the label cache
from the label store (pipelines/restore_labels.py), then runs every step: a lost warehouse costs the cheap
tables, never a relabel. A deleted warehouse whose label store is still there gets its labels back the same
way, without being asked. A benchmark whose landing folder was removed (a registered partition, or rows in the
`benchmarks` table) leaves the tables and the partition list on a plain run (no `--benchmarks`); its labels stay,
and the analysis runs again.

Output: one line per stage (what ran, rows, seconds) and a summary with the headline numbers of
`coverage_headline` (a failed run that released nothing says so and names the release that stands instead);
Dagster's own log of every run goes to a file whose path is printed (`--verbose` shows it on the console as well).

A partition whose prompts failed to label (rows in `label_failures` that a plain run may still retry: fewer than
MAX_LABEL_RUNS failed runs) is never skipped: the next plain run retries exactly those prompts (the rest come
from the label cache).

Exit code 0 when every step succeeded, every prompt is labeled and every check of severity ERROR passed, 1 when
a step failed (the remaining steps still run, except the analysis and the release while some benchmark's labels
are not of its current prompts: docs/reliability.md; the summary lists failures), 2 for an unknown benchmark
name, 3 when the warehouse is damaged (nothing runs; or a step found damage the check did not, then with the
same recovery line), 4 (EXIT_LABEL_FAILURES) when every other step succeeded but prompts of the run's
benchmarks failed to label ("10 labeled, 6 failed (see label_failures)"; their labeling steps wrote the other
labels, then failed their Dagster runs: assets/written_with_failures.py), or when the warehouse-wide check
`prompt_task_labels_complete` is the one that failed (another benchmark's prompts in a `--benchmarks` run: the
line after CHECK FAILED names them), 5 (EXIT_NO_BENCHMARKS) when every step succeeded but no benchmark landed
(nothing is measured; with no benchmark table from an earlier run the analysis steps fail instead, exit 1, and
the run names the cause either way), 6 (EXIT_CHECK_FAILED) when every step succeeded and every prompt is labeled
but a data-quality check of severity ERROR did not pass (a non-blocking check does not fail its step; the
summary names it, the run is not recorded as up to date, and the next plain run runs the step again instead of
skipping it as unchanged, so it reports the check until it passes; the completeness check alone is reported
without re-running an unchanged step, which would fail on the same prompts), 7 (EXIT_LANDING_PROBLEMS) when all
else passed but landing folders did not land (a bad name, no prompts.jsonl: the header's warnings say which; the
landing sensor records them under partition `_landing` and names them on every quiet tick). A WARN check is
printed and leaves the code alone. 130 (SIGINT: Ctrl-C) or 143 (SIGTERM) when interrupted: the run stops where it is, nothing
further runs or is released, and one line says so (resources/interrupts.py); every committed label batch stays in
the label cache.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":  # the warm run's fast path, decided before Dagster is imported (pipelines/up_to_date.py)
    from pipelines import up_to_date

    if (fast_exit := up_to_date.fast_path(sys.argv[1:])) is not None:
        sys.exit(fast_exit)
    from pipelines.label_workers import start_if_cold
    start_if_cold(sys.argv[1:])  # a cold run: the label workers import while Dagster does

import argparse
import contextlib
import datetime as dt
import gc
import os
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from dagster import (
    AssetKey,
    DagsterInstance,
    Definitions,
)

from assets.estimates_ahead import judged_checks_ahead, warm_judged_checks_worker
from assets.partitions import BENCHMARK_PARTITIONS_NAME
from models import benchmarks as bm
from models.labeling.limits import MAX_LABEL_RUNS
from models.report.formatting import count
from pipelines import cli, label_workers, restore_labels, run_summary, up_to_date
from pipelines import run_report as rr
from pipelines.run_partitions import prompt_bytes, run_partitions
from pipelines.run_steps import Steps, lock_file
from pipelines.run_summary import EXIT_CHECK_FAILED, EXIT_LABEL_FAILURES  # noqa: F401 - its exit codes (module doc)
from pipelines.step_runner import Runner, RunPlan, plan_from_definitions
from resources import integrity, interrupts, label_pool
from resources import source_versions as sv
from resources import warehouse as wh
from resources.settings import DEFAULT_WAREHOUSE, PROJECT_ROOT, settings
from resources.sources import discover_landing, landing_roots

EXIT_DAMAGED = 3
EXIT_NO_BENCHMARKS = 5  # every step ran, but no benchmark landed: nothing was measured


def _log_path(warehouse_path: str | None, given: str | None) -> Path:
    if given:
        return Path(given)
    base = Path(warehouse_path).parent if warehouse_path else DEFAULT_WAREHOUSE.parent
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    return base / "logs" / f"run_all-{stamp}-{os.getpid()}.log"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipelines.run_all", description=__doc__.split("\n\n")[0],
                                     epilog=cli.DEBUG_HELP)
    parser.add_argument("--benchmarks", help="comma-separated benchmark names (default: every one found)")
    parser.add_argument("--skip-reference", action="store_true", help="skip the reference assets")
    parser.add_argument("--skip-analysis", action="store_true", help="skip the downstream assets")
    parser.add_argument("--force", action="store_true",
                        help="run every step even when its inputs are unchanged since it last wrote its outputs, "
                             f"and ask again the prompts given up after failing to label in {MAX_LABEL_RUNS} runs")
    parser.add_argument("--rebuild", action="store_true",
                        help="move a damaged warehouse aside, restore the label cache from the label store, then "
                             "run every step (no label is computed again)")
    parser.add_argument("--log-file", help="where Dagster's log goes (default data/warehouse/logs/run_all-*.log)")
    parser.add_argument("--verbose", action="store_true", help="also show Dagster's log on the console")
    return parser


def main(argv: Sequence[str] | None = None, defs: Definitions | None = None,
         instance: DagsterInstance | None = None) -> int:
    """Run everything; `defs` defaults to pipelines.definitions.defs and `instance` to the one at DAGSTER_HOME
    (tests pass their own). The label workers (started first on a cold run) are stopped on every exit. An
    interrupt (SIGINT, SIGTERM) stops the run where it is, whichever handler took it (resources/interrupts.py):
    one line, exit 128 + the signal's number."""
    progress = rr.Progress()
    try:
        with interrupts.watching():
            try:
                code = _main(argv, defs, instance, progress)
            except BaseException:
                if interrupts.received() is None:  # an interrupt may surface as another error (a DuckDB query's)
                    raise
                code = 1
            signum = interrupts.received()
            if signum is not None:
                print(rr.stopped_line(progress, signum), file=sys.stderr)
                return 128 + signum
            return code
    finally:
        label_pool.shutdown()


def _main(argv: Sequence[str] | None, defs: Definitions | None, instance: DagsterInstance | None,
          progress: rr.Progress) -> int:
    args = _parser().parse_args(argv)
    own = defs is None and instance is None  # the code location's and DAGSTER_HOME's: the CLI's run
    plain = own and up_to_date.plain_run(argv if argv is not None else sys.argv[1:])
    why, sound = up_to_date.start() if own else ("", False)  # before the Definitions are built (up_to_date.py)
    defs = _definitions(defs, own_instance=instance is None)
    if own:
        _freeze_long_lived()  # what the imports and the Definitions made
    started = time.monotonic()
    warehouse_path = getattr((defs.resources or {}).get("warehouse"), "path", None)
    started_ns = time.time_ns()  # before the warehouse is read: what other run_alls do later is newer
    progress.start(warehouse_path)
    fingerprinted = bool(own and warehouse_path and Path(warehouse_path).resolve() == settings().warehouse.resolve())
    checked = _check_warehouse(warehouse_path, rebuild=args.rebuild, checksums=not (sound and fingerprinted))
    if isinstance(checked, int):
        return checked
    report, restored = checked
    instance = instance or open_instance()
    rr.fail_abandoned_runs(instance)  # a killed run_all's runs, without the daemon's run monitoring
    landing = discover_landing()
    names = _benchmark_names(landing, args.benchmarks)
    if names is None:
        return 2
    names = _every_benchmark_if_rebuilt(args, names, landing, restored)
    plan = plan_from_definitions(defs)
    log_path = _log_path(warehouse_path, args.log_file)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    _print_header(landing, names, plan, instance, warehouse_path, report, log_path)
    if plain:
        print(f"  up-to-date check (before Dagster): {why}")
    removed = _remove_gone_benchmarks(instance, landing, plan, warehouse_path) if not args.benchmarks else {}
    partitions = _partitions(instance, landing, names)
    trust = integrity.trusted(warehouse_path) if warehouse_path else contextlib.nullcontext()
    with trust, open(log_path, "a", encoding="utf-8") as log:  # checked: its in-process runs need not again
        runner = progress.runner = Runner(defs, instance, log=log, verbose=args.verbose)
        runner.retry_given_up = args.force  # the one way to ask a given-up prompt again without editing it
        _report_sources(instance, landing, partitions, warehouse_path)
        steps = Steps(defs, instance, warehouse_path, report, args.force or restored, started_ns)
        reference_failed = False
        if not args.skip_reference:
            said = (len(runner.failures), len(runner.failed_error_checks))
            _run_step(runner, steps, "reference", "reference", plan.reference, "reference",
                      before=(lambda: label_workers.start(warehouse_path)) if runner.offline_labeler else None)
            reference_failed = _reference_failed(runner, said)
        try:
            label_pool.end_checks()  # the checks worker (label_pool.validate) loads the index for labeling too
            if not reference_failed:
                run_partitions(runner, steps, plan, partitions, prompt_bytes(landing))
        finally:
            label_pool.shutdown()  # the workers' memory is free before the analysis
        if not args.skip_analysis and not reference_failed and not _labels_behind(runner, plan, warehouse_path):
            if own:
                _freeze_long_lived()  # what the labels stage imported (the labeler, sklearn) and keeps
            _run_step(runner, steps, "analysis", "analysis/exports (+ warehouse-wide benchmark checks)",
                      plan.downstream, "analysis", with_warehouse_checks=True, force=bool(removed),
                      before=warm_judged_checks_worker,
                      around=lambda: judged_checks_ahead(runner.resources.get("warehouse"), runner.assets))
    # the closing reads (open failures, the headline lines) share one open of the file (~30 CPU-ms per open)
    with wh.held(warehouse_path if warehouse_path and Path(warehouse_path).exists() else None):
        # the judge's gaps over every benchmark a release of this run pools, not only the ones it ran
        released = names if args.skip_analysis else sorted(landing.benchmarks)
        unlabeled, unjudged = run_summary.open_label_failures(warehouse_path, names, runner.resources.get("labeler"),
                                                              released)
        headline, release = run_summary.print_summary(runner, names, warehouse_path, log_path, started,
                                           skip_analysis=args.skip_analysis, unlabeled=unlabeled, unjudged=unjudged,
                                           release_before=progress.release_before)
    for name, deleted in removed.items():
        print(f"removed benchmark {name} (its landing folder is gone): {sum(deleted.values()):,} rows deleted from "
              f"{len(deleted)} tables; its labels stay in the label cache and label store")
    if any(cli.looks_damaged(failure) for failure in runner.failures):  # damage found by a step, mid-run
        print(f"python -m pipelines.run_all: error: a step found the warehouse damaged: recover with "
              f"`{integrity.REBUILD_COMMAND}`", file=sys.stderr)
        return EXIT_DAMAGED
    code = run_summary.exit_code(runner, unlabeled, sum(unjudged.values()))
    if not names:  # a run that measured nothing is not a success (its steps may fail for want of the tables,
        # or pass on an earlier run's): the cause first, since the prompts have no download
        print("python -m pipelines.run_all: error: no benchmark landed, so nothing was measured and the release "
              "has no headline: set BENCHMAP_MIRROR to the folder holding benchmarks/ (default ../shared/data) or "
              "add data/raw/benchmarks/<name>; benchmark prompts are never downloaded", file=sys.stderr)
        code = code if code in (1, EXIT_LABEL_FAILURES) else EXIT_NO_BENCHMARKS  # the more basic cause than a check
    warnings = [f"landing folder {p.path}: {p.reason}" for p in landing.problems]
    if code == 0 and warnings:  # a folder that did not land is a benchmark missing from every figure
        print(up_to_date.landing_problems_line(warnings), file=sys.stderr)
        code = up_to_date.EXIT_LANDING_PROBLEMS
    complete = not (args.benchmarks or args.skip_reference or args.skip_analysis)
    if code in (0, up_to_date.EXIT_LANDING_PROBLEMS) and complete and fingerprinted:  # the file the fast path reads
        up_to_date.record(headline=headline, n_benchmarks=len(names), totals=runner.totals, release=release,
                          log_path=log_path, warnings=warnings)
    return code


# --- the steps of main --------------------------------------------------------------------------------------

def _freeze_long_lived() -> None:
    """Leave the objects alive now (imported modules, the Definitions: they live as long as the run) out of the
    collector's later full passes, which otherwise walk all of them each time (a cold run's main process spent
    ~1.7 of its ~37 CPU-s in 11 such passes). Collected first, so no garbage is kept for good. The CLI's run only:
    a test process calling `main` again and again would keep every run's objects."""
    gc.collect()
    gc.freeze()


def _definitions(defs: Definitions | None, *, own_instance: bool) -> Definitions:
    """The given Definitions, or the code location's, once DAGSTER_HOME is set (the project root by default)."""
    if own_instance and settings().dagster_home is None:
        os.environ["DAGSTER_HOME"] = str(PROJECT_ROOT)  # written for Dagster, which reads it itself
        print(f"DAGSTER_HOME not set: using {PROJECT_ROOT}")
    if defs is None:
        from pipelines.definitions import defs  # after DAGSTER_HOME is set
    home = settings().dagster_home
    if own_instance and home is not None and home.resolve() == PROJECT_ROOT and Path.cwd().resolve() != PROJECT_ROOT:
        print(f"  warning: dagster.yaml keeps runs in .dagster/ relative to the working directory; run from "
              f"{PROJECT_ROOT} to use the project's instance", file=sys.stderr)
    return defs


def _check_warehouse(warehouse_path: str | None, *, rebuild: bool, checksums: bool = True
                     ) -> int | tuple[integrity.IntegrityReport | None, bool]:
    """Integrity before trust: nothing is planned, skipped or written over a warehouse that cannot be read.
    Returns EXIT_DAMAGED, or the integrity report and whether the label cache was restored (every step runs)."""
    restored = False
    if warehouse_path and (rebuild or (not Path(warehouse_path).exists()
                                       and restore_labels.label_store.has_segments(warehouse_path))):
        # asked to, or the warehouse is gone but its labels are not: they come back before anything runs
        for line in restore_labels.restore(warehouse_path).lines():
            print(line)
        restored = True
    report = integrity.check_warehouse(warehouse_path, per_benchmark=True, checksums=checksums or rebuild
                                       ) if warehouse_path else None
    if report is not None and not report.ok:
        print(f"python -m pipelines.run_all: error: {report.message()}", file=sys.stderr)
        return EXIT_DAMAGED
    if warehouse_path:
        copied = restore_labels.backfill(warehouse_path)
        if copied:
            print(f"label store: copied the {copied:,} cached label sets of this warehouse to "
                  f"{restore_labels.label_store.store_dir(warehouse_path)}")
    return report, restored


def _every_benchmark_if_rebuilt(args: argparse.Namespace, names: list[str], landing: bm.Landing,
                                restored: bool) -> list[str]:
    """Every landed benchmark when the warehouse was rebuilt and the run releases: a rebuild of the named
    `--benchmarks` alone published their headline as `latest` ("about 0.0% ... 2 benchmarks" beside 30 folders:
    a probe, 2026-12-07). The others' labels come back from the label store, so they cost no labeling. Clears
    `args.benchmarks` (the run is then a complete one)."""
    if not (restored and args.benchmarks and not args.skip_analysis):
        return names
    print(f"  the warehouse was rebuilt: every benchmark runs, not only {args.benchmarks} (a release of those "
          "alone would stand as the latest)")
    args.benchmarks = None
    return sorted(landing.benchmarks)


def _benchmark_names(landing: bm.Landing, wanted_text: str | None) -> list[str] | None:
    """The benchmarks to run: every one found, or the `--benchmarks` asked for (None: one is unknown)."""
    names = sorted(landing.benchmarks)
    if not wanted_text:
        return names
    # each once, in the order given: `--benchmarks x,x` labeled x twice in one command (its failed prompts asked
    # twice, counted as two runs towards giving up, and summed twice in the run's totals)
    wanted = list(dict.fromkeys(n.strip() for n in wanted_text.split(",") if n.strip()))
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)} (found: {', '.join(names)})", file=sys.stderr)
        return None
    return wanted


def _print_header(landing: bm.Landing, names: list[str], plan: RunPlan, instance: DagsterInstance,
                  warehouse_path: str | None, report: integrity.IntegrityReport | None, log_path: Path) -> None:
    roots = ", ".join(f"{origin}={path}" for origin, path in landing_roots())
    print(f"benchmap run_all: {count(len(names), 'benchmark')} in {roots}; instance {instance.root_directory}")
    print(f"  warehouse {warehouse_path} checked in {report.seconds:.1f}s ({len(report.counts)} tables readable)"
          if report is not None else "  no warehouse resource")
    print(f"  Dagster log: {log_path}")
    if not landing.benchmarks:
        print("  warning: no benchmark folders found (set BENCHMAP_MIRROR or add data/raw/benchmarks/<name>)")
    for problem in landing.problems:
        print(f"  warning: landing folder {problem.path}: {problem.reason}")
    if plan.other:
        print(f"  warning: not run (unknown partitioning): {', '.join(k.to_user_string() for k in plan.other)}")


def _partitions(instance: DagsterInstance, landing: bm.Landing, names: list[str]) -> list[str]:
    """The partitions to run (the benchmarks, plus `_landing` when there are landing problems or it exists),
    registered with the instance."""
    partitions = list(names)
    registered = set(instance.get_dynamic_partitions(BENCHMARK_PARTITIONS_NAME))
    if landing.problems or bm.LANDING_PARTITION in registered:
        partitions.append(bm.LANDING_PARTITION)
    new = [p for p in partitions if p not in registered]
    if new:
        _register_partitions(instance, new)
        print(f"registered {count(len(new), 'new benchmark partition')}")
    gone = sorted(registered - set(landing.benchmarks) - {bm.LANDING_PARTITION})
    if gone:
        print(f"  warning: partitions without a landing folder (kept, not refreshed): {', '.join(gone)}")
    return partitions


def _remove_gone_benchmarks(instance: DagsterInstance, landing: bm.Landing, plan: RunPlan,
                            warehouse_path: str | None) -> dict[str, dict[str, int]]:
    """A benchmark whose landing folder is gone leaves the tables its partition writes and the partition list
    (so the analysis and the next exports run without it); its labels stay (label_cache and the label store are
    keyed by text, not benchmark). Gone: registered as a partition or in the warehouse's `benchmarks` registry,
    and not landed. The registry counts too: a partition deleted by hand (the landing sensor's old advice) left
    every row in the tables and the release while runs said one benchmark fewer. Only when the landing root it
    came from is still there: an unset BENCHMAP_MIRROR or an unmounted folder removes nothing. Returns
    benchmark -> table -> rows deleted."""
    if not warehouse_path or not Path(warehouse_path).exists():
        return {}
    registered = set(instance.get_dynamic_partitions(BENCHMARK_PARTITIONS_NAME))
    paths: dict[str, str] = {}
    with contextlib.suppress(LookupError):
        registry = wh.read_table(warehouse_path, "benchmarks", columns=["benchmark", "landing_path"])
        paths = dict(zip(registry["benchmark"].to_list(), registry["landing_path"].to_list(), strict=True))
    gone = sorted((registered | set(paths)) - set(landing.benchmarks) - {bm.LANDING_PARTITION})
    if not gone:
        return {}
    roots = [root for _, root in landing_roots()]
    tables = [key.path[-1] for key in plan.partitioned]
    removed: dict[str, dict[str, int]] = {}
    for name in gone:
        folder = Path(paths[name]) if paths.get(name) else None
        root_there = folder.parent.is_dir() if folder is not None else all(r.is_dir() for r in roots)
        if not root_there or (folder is not None and folder.exists()):
            continue  # its root is not reachable now (or the folder is there but not a benchmark): keep it
        removed[name] = wh.delete_benchmark_rows(warehouse_path, name, tables)
        if name in registered:
            instance.delete_dynamic_partition(BENCHMARK_PARTITIONS_NAME, name)
        print(f"  benchmark {name}: its landing folder {folder or '(unknown)'} is gone: removing it from "
              f"{len(removed[name])} tables ({sum(removed[name].values()):,} rows) and the partition list")
    return removed


def _report_sources(instance: DagsterInstance, landing: bm.Landing, partitions: list[str],
                    warehouse_path: str | None = None) -> None:
    """Record the sources' data versions with the instance where they changed (the landing folders of the
    partitions to run, the reference files), and the index files as updated when they changed since the
    membership was built: what Dagster's stale status of their dependents compares. One run_all at a time
    (a lock beside the warehouse): two starting together would both record the same new version, and the
    second observation would make the first one's fresh partition look stale to the other."""
    import fcntl

    from pipelines.landing_sensor import index_files_event

    lock = None
    if warehouse_path:
        lock = open(lock_file(warehouse_path, "sources"), "a+")  # noqa: SIM115 - held until the versions are recorded
        fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        sv.report_source_versions(instance, reference=sv.reference_files_version(), gold=sv.gold_files_version(),
                                  landing=sv.landing_versions(landing, partitions))
        for event in index_files_event(instance):
            instance.report_runless_asset_event(event)
    finally:
        if lock is not None:
            lock.close()  # closing releases the flock


def _run_step(runner: Runner, steps: Steps, step: str, label: str, keys: list[AssetKey], kind: str, *,
              with_warehouse_checks: bool = False, force: bool = False,
              before: Callable[[], None] | None = None,
              around: Callable[[], AbstractContextManager] | None = None) -> None:
    """An unpartitioned step (reference, analysis): skipped when Dagster finds its assets up to date, else run
    and reported. One run_all at a time runs it: a second one waits, then finds it done (one analysis per set
    of inputs)."""
    with steps.exclusive(step, label):
        steps.refresh()  # what the previous stage (or the run_all we waited for) materialized
        if steps.unchanged(keys, label, force=force, warehouse_checks=with_warehouse_checks):
            runner.failed_error_checks += steps.carried_checks  # still failing: the exit code and summary say so
            steps.carried_checks = []
            return
        if before is not None:
            before()
        with around() if around is not None else contextlib.nullcontext():  # e.g. the judged checks started ahead
            outcome = runner.run(label, keys, kind, with_warehouse_checks=with_warehouse_checks)
        steps.ran()
        runner.report(label, outcome)


def _reference_failed(runner: Runner, said: tuple[int, int]) -> bool:
    """Whether the reference step failed or one of its ERROR checks did not pass (`said`: the failures counted
    before it). Then nothing downstream runs: the analysis rebuilt 37 tables from a cut O*NET file and its first
    error blamed a vendored file that was whole (a probe, 2026-12-08)."""
    if (len(runner.failures), len(runner.failed_error_checks)) == said:
        return False
    line = ("benchmarks, analysis/exports: not run: the reference data failed (above); the release stands. Mend "
            "the file it names (data/raw shadows the mirror) and run again")
    print(f"- {line}", flush=True)
    runner.failures.append(line)
    return True


def _labels_behind(runner: Runner, plan: RunPlan, warehouse_path: str | None) -> bool:
    """Whether some benchmark's labels are not of its current prompts (a labeling step that failed or was
    stopped after they changed; this run's or an earlier one's): then the analysis and the release do not run,
    a failure says why. Its numbers would mix the new prompts with the old texts' labels (an audit: 8.0% instead
    of 8.4%, the benchmark top of summary.md from stale labels and 0.0 in release.csv, published as `latest`)."""
    if not warehouse_path or not {AssetKey("prompt_task_labels"), AssetKey("prompt_work")} <= set(plan.partitioned):
        return False
    from resources.label_queries import labels_behind_prompts

    behind = labels_behind_prompts(warehouse_path)
    if behind:
        print(f"- {rr.behind_line(behind, rr.latest_release_of(warehouse_path))}", flush=True)
        runner.failures.append(f"analysis/exports: not run: labels behind the prompts of {', '.join(sorted(behind))}")
    return bool(behind)


def open_instance() -> DagsterInstance:
    """The instance at DAGSTER_HOME, created under a file lock: Dagster's SQLite storages create their tables
    without guarding against a second process doing the same (two `run_all` started together on a fresh home
    failed with `table secondary_indexes already exists`)."""
    import fcntl

    home = Path(os.environ["DAGSTER_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".benchmap-instance.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        return DagsterInstance.get()


def _register_partitions(instance: DagsterInstance, names: list[str], attempts: int = 5) -> None:
    """Add dynamic partitions; another run registering the same ones at the same moment is not an error
    (the storage refuses a duplicate key: re-read what is there and add only the rest)."""
    for attempt in range(attempts):
        missing = [n for n in names if n not in set(instance.get_dynamic_partitions(BENCHMARK_PARTITIONS_NAME))]
        if not missing:
            return
        try:
            instance.add_dynamic_partitions(BENCHMARK_PARTITIONS_NAME, missing)
            return
        except Exception:  # noqa: BLE001 - a concurrent insert of the same key (sqlite/postgres IntegrityError)
            if attempt == attempts - 1:
                raise
            time.sleep(0.2 * (attempt + 1))


if __name__ == "__main__":
    exit_code = cli.run_cli(main, prog="python -m pipelines.run_all", extra_errors=(integrity.WarehouseDamaged,))
    # the warehouse, the instance's storage and the log are closed and the workers stopped by now: the
    # interpreter's teardown would only free what the run left in memory (~1.5 s of a cold run's wall)
    cli.exit_now(exit_code)
