"""run_all's closing lines: the answer and the headline of the release it made (or why there is none), the done
line with what was labeled and what failed, the release line, and the failures and failed checks on stderr."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from assets.labels import COMPLETE_CHECK
from models.report.formatting import count, per_benchmark
from pipelines import run_report as rr
from pipelines import up_to_date
from pipelines.run_steps import judge_failures, only_label_gaps
from pipelines.step_runner import Runner
from resources.label_cache import LabelCache

EXIT_LABEL_FAILURES = 4  # every step ran, but some prompts have no labels (label_failures lists them)
EXIT_CHECK_FAILED = 6  # every step succeeded, but a data-quality check of severity ERROR did not pass


def exit_code(runner: Runner, unlabeled: int, unjudged: int) -> int:
    """1 for a failed step; 4 for prompts without labels, this run's or, through the warehouse-wide completeness
    check, another benchmark's (a probe: a run whose own benchmark was fully labeled exited 6 on another's given-up
    prompts, which is exit 4's cause); 6 for any other ERROR check; else 0."""
    if runner.failures:
        return 1
    if unlabeled or unjudged or runner.totals["n_failed"]:
        return EXIT_LABEL_FAILURES
    if not runner.failed_error_checks:
        return 0
    return EXIT_LABEL_FAILURES if only_label_gaps(runner.failed_error_checks) else EXIT_CHECK_FAILED


def open_label_failures(warehouse_path: str | None, names: list[str], labeler: object,
                        released: Sequence[str] | None = None) -> tuple[int, dict[str, int]]:
    """(prompts of these benchmarks without labels because labeling failed, per benchmark the sampled texts without
    the judge's reading because the judge failed). The first from label_failures: this labeler's, whose prompts its
    published labels lack (an earlier model's failure on a prompt labeled since is not open); the second, with a
    judge sample configured, from the judge's latest design (a probe: they were added to the first, "6 prompts
    without labels", of prompts that all had labels), over `released` (the benchmarks a release of this run
    pools; default `names`): a benchmark whose sample the judge lost in an earlier run was published from the
    vendored reference by a later `--benchmarks` run of another, exit 0 (a probe, 2026-12-07)."""
    if not warehouse_path or not Path(warehouse_path).exists():
        return 0, {}
    cache = LabelCache(warehouse_path)
    return (sum(cache.open_failures_by_benchmark(names, getattr(labeler, "kind", None), unlabeled_only=True).values()),
            judge_failures(warehouse_path, released if released is not None else names))


def print_summary(runner: Runner, names: list[str], warehouse_path: str | None, log_path: Path, started: float,
                  *, skip_analysis: bool, unlabeled: int = 0, unjudged: Mapping[str, int] | None = None,
                  release_before: Path | None = None) -> tuple[list[str], str | None]:
    """Print the closing summary; returns its headline lines and release line (what the fast path repeats).
    `release_before`: the latest release when the run started (a failed run that made none prints no headline);
    `unjudged`: per benchmark, sampled texts without the judge's reading (`open_label_failures`)."""
    totals, failures = runner.totals, runner.failures
    judge_gaps = dict(unjudged or {})
    unjudged = sum(judge_gaps.values())
    labeled = f"{totals['n_labeled']} labeled, {totals['n_failed']} failed"
    if totals.get("judge_labeled"):  # the judge's answers (paid requests), apart from the labeler's
        labeled += f", the judge labeled {count(totals['judge_labeled'], 'sampled text')}"
    if totals.get("judge_failed"):  # a judge step that lost a benchmark's sample wrote no design to count from
        labeled += f", the judge failed on {totals['judge_failed']} sampled texts"
    if totals["n_failed"] or unlabeled or unjudged:
        missing = ([f"{count(unlabeled, 'prompt')} without labels"] if totals["n_failed"] or unlabeled else []) + \
            ([f"{count(unjudged, 'sampled text')} without the judge's reading"] if unjudged else [])
        labeled += (f" (see label_failures; {', '.join(missing)}"
                    # a failed step's exit (1) comes first: the suffix must not name another code
                    + (")" if failures else f", exit {EXIT_LABEL_FAILURES})"))
    elif totals.get("judge_failed"):  # a lost sample: its texts have labels, the judge's reading is what failed
        labeled += " (see label_failures)"
    print()  # the answer first: the sentence summary.md and the map open with, then the raw labels' figures
    latest = rr.latest_release_of(warehouse_path)
    released = not failures or (latest is not None and latest != release_before)
    headline: list[str] = []
    if not released:  # a failed run's figures in the warehouse are no release: not printed as if they were
        print(rr.not_released_line(len(failures), latest))
    else:
        if failures:  # released by the policy (docs/reliability.md): a failed benchmark's last tables are in it
            print(f"released although {len(failures)} step(s) FAILED (below): a benchmark that failed is in it as its "
                  f"last successful run left it")
        headline = rr.headline_lines(warehouse_path) if not skip_analysis else []
        for line in headline:
            print(line)
    print(up_to_date.done_line(time.monotonic() - started, len(names), totals, len(failures), labeled,
                               len(runner.failed_error_checks), len(runner.label_failed_steps)))
    release = None
    if skip_analysis:  # the exports did not run: an older release must not read as this run's
        print("release: none written by this run (--skip-analysis)"
              + (f"; the newest is {latest}" if latest is not None else "; there is none yet"))
    elif latest is not None and released:
        # a run whose figures are those of the release that stands writes none (a probe: the line did not say so)
        release = (f"release: {latest} (newest; also {latest.parent / 'latest'})" if latest != release_before else
                   f"release: {latest} (still the newest: this run's figures and tables are the same, so no new release was "
                   f"written; also {latest.parent / 'latest'})")
        print(release)
    print(f"Dagster log: {log_path}")
    for failure in failures:
        print(f"  FAILED {failure[:500]}", file=sys.stderr)
    # the exit code beside the check, unless the closing line already gave it (prompts without labels) or a step failed
    said = failures or unlabeled or unjudged or totals["n_failed"]
    for check in runner.failed_error_checks:
        print(f"  CHECK FAILED {check[:500]}" + ("" if said else f" (exit {exit_code(runner, 0, 0)})"), file=sys.stderr)
        if COMPLETE_CHECK in check:  # which benchmarks (a probe: exit 6 of a run whose own prompts were all labeled)
            print(f"    {_without_labels_line(runner, names)}", file=sys.stderr)
    others = {b: n for b, n in judge_gaps.items() if b not in names}
    if others:  # its exit 4 must say whose: the judge's step of a benchmark this run did not run
        print(f"  without the judge's reading: {per_benchmark(others, 'sampled text')} (not run by this command; the "
              "estimates use the texts the judge read, or the vendored reference labels where it read none: "
              f"`python -m pipelines.run_all --benchmarks {','.join(others)}` asks the judge again)", file=sys.stderr)
    return list(headline), release


def _without_labels_line(runner: Runner, names: list[str]) -> str:
    """The benchmarks with prompts without labels, warehouse-wide (what `prompt_task_labels_complete` counts)."""
    warehouse = runner.resources.get("warehouse")
    try:
        undecided = dict(warehouse.undecided_prompts().iter_rows()) if warehouse is not None else {}
    except Exception:  # noqa: BLE001 - a closing line; the check's own metadata has the counts
        undecided = {}
    if not undecided:
        return "prompts without labels: see the check's metadata (label_failures)"
    others = sorted(set(undecided) - set(names))
    listed = per_benchmark(undecided, "prompt")
    return (f"prompts without labels: {listed}" + (f" ({', '.join(others)} not in this run: `python -m "
                                                   f"pipelines.run_all --force --benchmarks {','.join(others)}` "
                                                   "asks for them again)" if others else ""))
