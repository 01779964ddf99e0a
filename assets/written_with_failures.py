"""A labeling step that wrote its labels but left some prompts without them fails after writing them.

Its outputs are yielded first (the IO manager writes them and Dagster records their materializations), then the
step raises `written_with_failures(...)`: the Dagster run is a FAILURE, as it is in the UI's run list, while the
labels of every other prompt are kept and published. Before, such a run was a SUCCESS with a failed check beside
it (an audit: "a labels run that left prompts failed is a SUCCESS in Dagster's run list"). The metadata key tells
run_all (pipelines/run_report.py `failed_after_writing`) that the step's outputs are whole apart from the failed
prompts it counts: the run goes on to the analysis and exits EXIT_LABEL_FAILURES, as before; the landing sensor
requests the refresh again, which asks only for the failed prompts (the label cache holds the rest). A prompt
given up after MAX_LABEL_RUNS failed runs keeps failing the step (it has no labels) without being asked again,
until a run tagged RETRY_GIVEN_UP_TAG asks for it.
"""

from __future__ import annotations

from collections.abc import Mapping

from dagster import Failure, MetadataValue

from models.labeling.limits import MAX_LABEL_RUNS

WRITTEN_WITH_FAILURES = "prompts_failed_after_writing"  # benchmark -> prompts (texts) that failed to label
# a run tag: ask again the prompts given up after MAX_LABEL_RUNS failed runs (`run_all --force` sets it; in the UI,
# add the tag to the launched run)
RETRY_GIVEN_UP_TAG = "benchmap/retry_given_up"


def max_label_runs(run_tags: Mapping[str, str]) -> int | None:
    """The failed runs after which a prompt is not asked again: MAX_LABEL_RUNS, or no limit in a run tagged
    RETRY_GIVEN_UP_TAG=1."""
    return None if run_tags.get(RETRY_GIVEN_UP_TAG) == "1" else MAX_LABEL_RUNS


def written_with_failures(description: str, failed_by_benchmark: Mapping[str, int]) -> Failure:
    """The Failure a step raises after yielding its outputs, when `failed_by_benchmark` prompts have no labels."""
    return Failure(description=description, metadata={
        WRITTEN_WITH_FAILURES: MetadataValue.json({str(b): int(n) for b, n in failed_by_benchmark.items() if n})})
