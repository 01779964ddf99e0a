"""run_all's benchmark stage: each stale benchmark partition materialized, neighbours in the instance's partition
order run as one Dagster run of their range (up to MAX_RANGE_BYTES of prompts), a failed range run again one
partition at a time, and the skipped partitions' stored counts added to the run's totals. Split from
pipelines/run_all.py, which calls `run_partitions` and `prompt_bytes`.
"""

from __future__ import annotations

import contextlib

from assets.partitions import BENCHMARK_PARTITIONS_NAME
from models import benchmarks as bm
from pipelines import run_report as rr
from pipelines.run_steps import Steps
from pipelines.step_runner import Runner, RunPlan, StepOutcome
from resources import warehouse as wh


def add_stored_counts(counts: dict[str, int], by_benchmark: dict[str, dict[str, int]], names: list[str],
                       warehouse_path: str, totals: dict[str, int]) -> None:
    """Add the stored prompt/result/reject counts of skipped partitions to the run's totals."""
    if "benchmarks" in counts and names:
        try:
            rows = wh.query(warehouse_path, "select coalesce(sum(n_prompts), 0) as n_prompts, "
                            "coalesce(sum(n_results), 0) as n_results from benchmarks "
                            "where benchmark in (select unnest(?::varchar[]))", [names])
            totals["n_prompts"] += int(rows["n_prompts"][0])
            totals["n_results"] += int(rows["n_results"][0])
        except Exception:  # noqa: BLE001 - counts are informative only
            pass
    rejects = by_benchmark.get("benchmark_rejects", {})
    totals["n_rejects"] += sum(rejects.get(n, 0) for n in names)



def run_partitions(runner: Runner, steps: Steps, plan: RunPlan, partitions: list[str],
                    sizes: dict[str, int] | None = None) -> None:
    """Each benchmark partition Dagster finds stale or missing (or with prompts to retry); the skipped ones'
    counts are added to the totals from the warehouse. With the offline labeler, stale partitions next to each
    other (the instance's order) run as one Dagster run of their range (`partition_groups`): the per-run cost (run and
    step events, resources, the task index and labeler, the IO manager's writes) is paid once instead of once
    per benchmark. A range run that fails is run again one partition at a time, so a failure is reported for
    its own benchmark (the label cache keeps every label computed meanwhile). With the offline labeler one
    run_all at a time decides and runs the stage (the held warehouse lets one writer in anyway): a second one
    waits, then finds the partitions the first ran up to date instead of materializing them again after the
    first's analysis started (which made that analysis stale and ran it twice)."""
    exclusive = steps.exclusive("partitions", "benchmark partitions") if runner.offline_labeler \
        else contextlib.nullcontext()
    with exclusive:
        run_stale_partitions(runner, steps, plan, partitions, sizes)


def run_stale_partitions(runner: Runner, steps: Steps, plan: RunPlan, partitions: list[str],
                          sizes: dict[str, int] | None) -> None:
    skipped: list[str] = []
    stale: list[tuple[str, str]] = []
    retryable = steps.retryable_failures(partitions, runner.resources.get("labeler"))
    steps.refresh()
    for index, name in enumerate(partitions, start=1):
        keys = plan.landing_only if name == bm.LANDING_PARTITION else plan.partitioned
        label = f"[{index}/{len(partitions)}] {name}"
        if steps.unchanged(keys, label, partition=name, open_failures=retryable.get(name, 0)):
            skipped.append(name)
            continue
        stale.append((name, label))
    order = runner.instance.get_dynamic_partitions(BENCHMARK_PARTITIONS_NAME) if runner.offline_labeler else []
    for group in partition_groups(stale, order, sizes or {}):
        if len(group) > 1 and run_range(runner, plan, group):
            continue
        for name, label in group:
            keys = plan.landing_only if name == bm.LANDING_PARTITION else plan.partitioned
            outcome = runner.run(label, keys, "benchmark", partition=name)
            if outcome.result is not None:  # count what was written even when a later step (labels) failed
                runner.report(label, outcome, runner.partition_detail(name, outcome.result, started=outcome.started))
    if stale:
        steps.ran()
    report = steps.report
    if skipped and steps.path and report is not None:  # their counts, from the warehouse
        add_stored_counts(report.counts, report.by_benchmark, skipped, steps.path, runner.totals)


MAX_RANGE_BYTES = 16 * 2**20  # prompts.jsonl bytes per range run: a 50x landing zone runs in several, not one


def partition_groups(stale: list[tuple[str, str]], order: list[str], sizes: dict[str, int]
            ) -> list[list[tuple[str, str]]]:
    """The stale partitions in runs: neighbours in `order` (the instance's partition order; empty: one run
    each) whose range holds only stale partitions, up to MAX_RANGE_BYTES of prompts per run; `_landing` alone."""
    position = {name: i for i, name in enumerate(order)}
    groups: list[list[tuple[str, str]]] = []
    run_bytes = 0
    for name, label in sorted(stale, key=lambda item: position.get(item[0], len(order))):
        previous = groups[-1][-1][0] if groups else None
        joins = (previous is not None and name in position and previous in position
                 and position[name] == position[previous] + 1 and bm.LANDING_PARTITION not in (name, previous)
                 and run_bytes + sizes.get(name, 0) <= MAX_RANGE_BYTES)
        if joins:
            groups[-1].append((name, label))
            run_bytes += sizes.get(name, 0)
        else:
            groups.append([(name, label)])
            run_bytes = sizes.get(name, 0)
    return groups


def run_range(runner: Runner, plan: RunPlan, group: list[tuple[str, str]]) -> bool:
    """One Dagster run of the group's partitions; each partition's line as if it ran alone. False (nothing
    reported) when the run failed: the caller runs them one by one."""
    first, last = group[0][0], group[-1][0]
    outcome = runner.run(f"{first}..{last}", plan.partitioned, "benchmark", partition=first, last_partition=last)
    # a run whose labels are written but some prompts failed (rr.failed_after_writing) is not run again: each
    # partition's line says FAILED and counts its failed prompts; a rerun would only ask for them again
    if outcome.result is None or not (outcome.result.success or rr.failed_after_writing(outcome.result)):
        if outcome.started is not None:  # what its labels step committed: the reruns find it in the cache
            runner.committed([name for name, _ in group], outcome.started)
        why = "; ".join(rr.errors(outcome.result))[:300] if outcome.result is not None else "no run"
        print(f"- {len(group)} partitions {first}..{last} in one run: FAILED ({why}): running them one at a "
              f"time", flush=True)
        return False
    share = outcome.seconds / len(group)
    for name, label in group:
        runner.report(label, StepOutcome(outcome.result, share), runner.partition_detail(name, outcome.result, name),
                      partition=name)
    print(f"  ({len(group)} partitions in one run, {outcome.seconds:.1f}s)", flush=True)
    return True


def prompt_bytes(landing: bm.Landing) -> dict[str, int]:
    """benchmark -> bytes of its prompts file (how run_all sizes its range runs)."""
    sizes = {}
    for name, folder in landing.benchmarks.items():
        with contextlib.suppress(OSError):
            sizes[name] = (folder.path / bm.PROMPTS_FILE).stat().st_size
    return sizes
