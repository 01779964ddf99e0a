"""Materialize everything into the Dagster instance at DAGSTER_HOME: `python -m pipelines.run_all`.

Order: register one dynamic partition per benchmark found in the landing zone; materialize the unpartitioned
assets that do not depend on benchmarks (reference data); each benchmark partition (its tables, then labels);
then the unpartitioned assets downstream of the benchmarks (analysis, gaps, exports). Assets are selected from
the Definitions by partitioning and dependencies, so assets that other domains add later are included.

Steps whose inputs did not change since their last successful run are skipped (pipelines/run_state.py keeps a
fingerprint of each step's inputs in the warehouse); `--force` runs every step.

Exit code 0 when every step succeeded, 1 otherwise (the remaining steps still run; the summary lists
failures).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dagster import (
    AssetKey,
    AssetSelection,
    DagsterEventType,
    DagsterInstance,
    Definitions,
    ExecuteInProcessResult,
    materialize,
)

from models import benchmarks as bm
from models.sources import PROJECT_ROOT
from pipelines import run_state
from pipelines.jobs import WAREHOUSE_CHECKS
from pipelines.partitions import BENCHMARK_PARTITIONS_NAME


@dataclass
class RunPlan:
    reference: list[AssetKey] = field(default_factory=list)  # unpartitioned, not downstream of benchmarks
    partitioned: list[AssetKey] = field(default_factory=list)  # per benchmark: tables, labels, ...
    landing_only: list[AssetKey] = field(default_factory=list)  # what the `_landing` partition materializes
    downstream: list[AssetKey] = field(default_factory=list)  # unpartitioned, downstream of benchmarks
    other: list[AssetKey] = field(default_factory=list)  # other partitioning: not run here


def plan_from_definitions(defs: Definitions) -> RunPlan:
    graph = defs.resolve_asset_graph()
    plan = RunPlan()
    keys = graph.toposorted_asset_keys
    materializable = set(graph.materializable_asset_keys)
    partitioned = [k for k in keys if k in materializable and graph.get(k).partitions_def is not None
                   and getattr(graph.get(k).partitions_def, "name", None) == BENCHMARK_PARTITIONS_NAME]
    downstream = AssetSelection.assets(*partitioned).downstream().resolve(graph) if partitioned else set()
    for key in keys:
        if key not in materializable:
            continue
        node = graph.get(key)
        if key in partitioned:
            plan.partitioned.append(key)
            if node.group_name == "benchmarks":
                plan.landing_only.append(key)
        elif node.partitions_def is not None:
            plan.other.append(key)
        elif key in downstream:
            plan.downstream.append(key)
        else:
            plan.reference.append(key)
    return plan


def _errors(result: ExecuteInProcessResult) -> list[str]:
    messages = []
    for event in result.all_events:
        if event.event_type in (DagsterEventType.STEP_FAILURE, DagsterEventType.RUN_FAILURE):
            error = getattr(event.event_specific_data, "error", None)
            while error is not None and error.cause is not None:  # the user's exception, not Dagster's wrapper
                error = error.cause
            messages.append(f"{event.step_key or 'run'}: {error.message.strip() if error else event.message}")
    return messages


def _metadata_value(result: ExecuteInProcessResult, key: str, name: str) -> object:
    for event in result.get_asset_materialization_events():
        materialization = event.event_specific_data.materialization
        if materialization is not None and materialization.asset_key == AssetKey(key):
            value = materialization.metadata.get(name)
            return None if value is None else value.value
    return None


def _failed_checks(result: ExecuteInProcessResult) -> list[str]:
    return [f"{e.asset_key.to_user_string()}:{e.check_name} ({e.severity.value})"
            for e in result.get_asset_check_evaluations() if not e.passed]


def _add_stored_counts(warehouse_path: str, names: list[str], totals: dict[str, int]) -> dict[str, int]:
    """Add the stored prompt/result/reject counts of skipped partitions to the run's totals."""
    from models import warehouse as wh

    out = dict(totals)
    try:
        rows = wh.query(warehouse_path, "select coalesce(sum(n_prompts), 0) as n_prompts, coalesce(sum(n_results), 0)"
                        " as n_results from benchmarks where benchmark in (select unnest(?::varchar[]))", [names])
        rejects = wh.query(warehouse_path, "select count(*) as n from benchmark_rejects "
                           "where benchmark in (select unnest(?::varchar[]))", [names])
    except Exception:  # counts are informative only
        return out
    out["n_prompts"] += int(rows["n_prompts"][0])
    out["n_results"] += int(rows["n_results"][0])
    out["n_rejects"] += int(rejects["n"][0])
    return out


def main(argv: Sequence[str] | None = None, defs: Definitions | None = None,
         instance: DagsterInstance | None = None) -> int:
    """Run everything; `defs` defaults to pipelines.definitions.defs and `instance` to the one at DAGSTER_HOME
    (tests pass their own)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmarks", help="comma-separated benchmark names (default: every one found)")
    parser.add_argument("--skip-reference", action="store_true", help="skip the reference assets")
    parser.add_argument("--skip-analysis", action="store_true", help="skip the downstream assets")
    parser.add_argument("--force", action="store_true",
                        help="run every step even when its inputs are unchanged since its last successful run")
    args = parser.parse_args(argv)

    if instance is None and not os.environ.get("DAGSTER_HOME"):
        os.environ["DAGSTER_HOME"] = str(PROJECT_ROOT)
        print(f"DAGSTER_HOME not set: using {PROJECT_ROOT}")
    if defs is None:
        from pipelines.definitions import defs  # after DAGSTER_HOME is set; builds the warehouse from the env

    home = Path(os.environ.get("DAGSTER_HOME", "")).resolve()
    if instance is None and home == PROJECT_ROOT and Path.cwd().resolve() != PROJECT_ROOT:
        print(f"  warning: dagster.yaml keeps runs in .dagster/ relative to the working directory; run from "
              f"{PROJECT_ROOT} to use the project's instance", file=sys.stderr)
    instance = instance or DagsterInstance.get()
    plan = plan_from_definitions(defs)
    assets = [*defs.assets, *(defs.asset_checks or [])]
    resources = dict(defs.resources or {})
    failures: list[str] = []
    started = time.monotonic()

    graph = defs.resolve_asset_graph()

    def run(label: str, keys: list[AssetKey], kind: str, partition: str | None = None, *,
            with_warehouse_checks: bool = False) -> ExecuteInProcessResult | None:
        selection = AssetSelection.assets(*keys) - WAREHOUSE_CHECKS
        if with_warehouse_checks:
            selection = selection | WAREHOUSE_CHECKS
        if not keys and not (with_warehouse_checks and WAREHOUSE_CHECKS.resolve_checks(graph)):
            print(f"- {label}: no assets defined yet, skipped")
            return None
        t0 = time.monotonic()
        result = materialize(assets, selection=selection, instance=instance, resources=resources,
                             partition_key=partition, raise_on_error=False,
                             tags={"benchmap/kind": kind, "benchmap/run_all": "1"})
        status = "ok" if result.success else "FAILED"
        print(f"- {label}: {status} ({len(result.get_asset_materialization_events())} materializations, "
              f"{time.monotonic() - t0:.1f}s)")
        if not result.success:
            errors = _errors(result)
            failures.append(f"{label}: {errors[0] if errors else 'failed'}")
            for message in errors[:3]:
                print(f"    {message.splitlines()[0][:300]}")
        for check in _failed_checks(result):
            print(f"    check not passed: {check}")
        return result

    landing = bm.discover()
    names = sorted(landing.benchmarks)
    if args.benchmarks:
        wanted = [n.strip() for n in args.benchmarks.split(",") if n.strip()]
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            print(f"unknown benchmark(s): {', '.join(unknown)} (found: {', '.join(names)})", file=sys.stderr)
            return 2
        names = wanted
    roots = ", ".join(f"{origin}={path}" for origin, path in bm.landing_roots())
    print(f"benchmap run_all: {len(names)} benchmarks in {roots}; instance {instance.root_directory}")
    if not landing.benchmarks:
        print("  warning: no benchmark folders found (set BENCHMAP_MIRROR or add data/raw/benchmarks/<name>)")
    for problem in landing.problems:
        print(f"  warning: landing folder {problem.path}: {problem.reason}")
    if plan.other:
        other = ", ".join(k.to_user_string() for k in plan.other)
        print(f"  warning: not run (unknown partitioning): {other}")

    partitions = list(names)
    if landing.problems or bm.LANDING_PARTITION in instance.get_dynamic_partitions(BENCHMARK_PARTITIONS_NAME):
        partitions.append(bm.LANDING_PARTITION)
    registered = set(instance.get_dynamic_partitions(BENCHMARK_PARTITIONS_NAME))
    new = [p for p in partitions if p not in registered]
    if new:
        instance.add_dynamic_partitions(BENCHMARK_PARTITIONS_NAME, new)
        print(f"registered {len(new)} new benchmark partitions")
    gone = sorted(registered - set(landing.benchmarks) - {bm.LANDING_PARTITION})
    if gone:
        print(f"  warning: partitions without a landing folder (kept, not refreshed): {', '.join(gone)}")

    warehouse_path = getattr(resources.get("warehouse"), "path", None)
    stored = run_state.load(warehouse_path) if warehouse_path and not args.force else {}
    reference_fp = run_state.reference_fingerprint(resources.get("labeler"))

    def unchanged(step: str, fingerprint: str, label: str) -> bool:
        if stored.get(step) != fingerprint:
            return False
        print(f"- {label}: unchanged since its last successful run, skipped (--force to run it)")
        return True

    def attempt(step: str) -> None:  # a failed attempt may have written part of its output: redo it next time
        if warehouse_path and step in stored:
            run_state.forget(warehouse_path, step)
            stored.pop(step)

    def remember(step: str, fingerprint: str, result: ExecuteInProcessResult | None) -> None:
        if warehouse_path and result is not None and result.success:
            run_state.save(warehouse_path, step, fingerprint)
            stored[step] = fingerprint

    if not args.skip_reference and not unchanged("reference", reference_fp, "reference"):
        attempt("reference")
        remember("reference", reference_fp, run("reference", plan.reference, "reference"))
    totals = {"n_prompts": 0, "n_results": 0, "n_rejects": 0}
    skipped: list[str] = []
    for index, name in enumerate(partitions, start=1):
        keys = plan.landing_only if name == bm.LANDING_PARTITION else plan.partitioned
        label = f"[{index}/{len(partitions)}] {name}"
        content = (landing.problems_hash() or "none") if name == bm.LANDING_PARTITION else \
            bm.content_hash(landing.benchmarks[name].path)
        partition_fp = run_state.partition_fingerprint(reference_fp, content)
        if unchanged(f"partition:{name}", partition_fp, label):
            skipped.append(name)
            continue
        attempt(f"partition:{name}")
        result = run(label, keys, "benchmark", partition=name)
        remember(f"partition:{name}", partition_fp, result)
        if result is not None:  # count what was written even when a later step (labels) failed
            counts = {k: _metadata_value(result, "benchmarks" if k != "n_rejects" else "benchmark_rejects", k)
                      for k in totals}
            for k, v in counts.items():
                totals[k] += int(v or 0)
            if name != bm.LANDING_PARTITION:
                print(f"    {counts['n_prompts']} prompts, {counts['n_results']} results, "
                      f"{counts['n_rejects']} rejects")
    if skipped and warehouse_path:  # their counts, from the warehouse
        totals = _add_stored_counts(warehouse_path, skipped, totals)
    if not args.skip_analysis:
        analysis_fp = run_state.analysis_fingerprint(
            reference_fp, {k[len("partition:"):]: v for k, v in stored.items() if k.startswith("partition:")})
        label = "analysis/exports (+ warehouse-wide benchmark checks)"
        if not unchanged("analysis", analysis_fp, label):
            attempt("analysis")
            remember("analysis", analysis_fp, run(label, plan.downstream, "analysis", with_warehouse_checks=True))

    print(f"done in {time.monotonic() - started:.0f}s: {len(names)} benchmarks, {totals['n_prompts']} "
          f"prompts, {totals['n_results']} results, {totals['n_rejects']} rejects; "
          f"{'all steps succeeded' if not failures else f'{len(failures)} step(s) FAILED'}")
    for failure in failures:
        print(f"  FAILED {failure[:500]}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
