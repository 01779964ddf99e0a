"""Dictionary entries of the labeler validation and agreement, gap finder and benchmarks tables."""

from __future__ import annotations

from models.data_dictionary.common import (
    BENCH,
    BOOL,
    CODE_UNIT,
    COMMON,
    COUNT,
    COVERAGE,
    ELOUNDOU,
    GAPS,
    HOURS,
    HOURS_UNIT,
    LABELS,
    ONET,
    ONET_RATINGS,
    PROB,
    SHARE,
    TEXT,
    VALIDATION,
    WORKBANK,
    Entry,
    entries,
)


def _labeler_validation() -> dict[str, Entry]:
    return {
        "benchmark": (
            "benchmark whose human labels are the gold standard ('all' = pooled gold annotations)",
            TEXT,
            VALIDATION,
        ),
        "labeler": (
            "labeler measured: 'offline' or 'openai' (the labels of prompt_task_labels); on the ref_cv_* rows also "
            "offline_selector_only (the selector without the neighbour step), neighbour_vote_only (the plain vote "
            "of the nearest judged texts) and offline_neighbour_step (the step's figures while it is off); "
            "reference_pass_agreement: the judge's two passes against each other (the ceiling)",
            TEXT,
            VALIDATION,
        ),
        **entries(["labeler_version"]),
        "metric": (
            "occupation_top{k}: a gold occupation among the labeler's top-k ranked occupations; "
            "task_hit_at{k}: a gold task among the top-k ranked tasks; task_precision/recall/f1: "
            "labeled task set vs gold set; ref_*: against the task-level reference (an LLM judge, "
            "data/reference/): ref_task_f1/precision/recall (mean over prompts and passes; F1 = 1 when both "
            "sets are empty), ref_task_hit_at_1/5 (a reference task among the top-ranked candidates), "
            "ref_first_occupation_agreement (the first occupation among the judge's), ref_work_accuracy "
            "(work / not-work decided as the judge did); a plain ref_* row of a labeler fitted on the reference "
            "(offline) is IN SAMPLE, measured on the texts it was fitted on: not for quoting; ref_cv_*: the same, "
            "cross-validated leaving one benchmark out, for a labeler fitted on the reference (development "
            "split); ref_cv_within_benchmark_* / ref_cv_new_benchmark_*: the labeler step leaving one judged "
            "text out within its benchmark / leaving the benchmark out (the out-of-sample figures summary.md "
            "quotes); a ref_cv_new_benchmark_* row of benchmark 'all' has an interval that resamples benchmarks "
            "(a new benchmark is one draw from them), and a row per benchmark (for the published labeler) gives that "
            "benchmark's own figure left out (its interval: over its prompts), both when the committed "
            "out-of-fold labels reproduce the fit's figures (else the log says so); the human-label rows of gdpval are in sample too (its prompts tuned the retriever); labeler "
            "reference_pass_agreement: the judge's two passes against each other (the ceiling)",
            TEXT,
            VALIDATION,
        ),
        "value": ("mean of the per-prompt metric (accuracy for hits)", SHARE, VALIDATION),
        "ci_low": ("95% interval, lower bound: Wilson's score interval for a share of 0/1 hits (hits, accuracy, "
                   "agreement); a percentile bootstrap over prompts for the others (ref_*: both passes of a prompt "
                   "resampled together; where every prompt scored 0 or 1, Wilson's over the prompts, as a "
                   "resampling cannot move there)", SHARE, VALIDATION),
        "ci_high": ("95% interval, upper bound (as ci_low)", SHARE, VALIDATION),
        "n": ("gold prompts the metric is averaged over", COUNT, VALIDATION),
    }


def _labeler_agreement() -> dict[str, Entry]:
    return {
        "benchmark": COMMON["benchmark"],
        "labeler_a": ("first labeler compared", TEXT, LABELS),
        "labeler_version_a": ("version of the first labeler", TEXT, LABELS),
        "labeler_b": ("second labeler compared", TEXT, LABELS),
        "labeler_version_b": ("version of the second labeler", TEXT, LABELS),
        "metric": (
            "task_f1 (2|A∩B|/(|A|+|B|) of the task sets; a prompt one labeler judged not work counts with 0), "
            "work_agreement (both judged it work, or both not), "
            "task_jaccard (overlap of the labeled task sets), occupation_top1_agreement, "
            "occupation_spearman (rank correlation of occupation rankings)",
            TEXT,
            VALIDATION,
        ),
        "value": ("mean over prompts labeled by both", "share (0-1) or correlation", VALIDATION),
        "ci_low": (
            "95% interval, lower bound: Wilson's score interval for a share of 0/1 agreements "
            "(work_agreement, occupation_top1_agreement), else a percentile bootstrap over prompts",
            "same as value",
            VALIDATION,
        ),
        "ci_high": ("95% interval, upper bound (as ci_low)", "same as value", VALIDATION),
        "n": ("prompts labeled by both labelers", COUNT, VALIDATION),
    }


_GAP_COMPONENTS: dict[str, Entry] = {
    "c_hours": ("priority component: normalised (log min-max) uncovered work hours", SHARE, GAPS),
    "c_wage_bill": ("priority component: normalised (log min-max) wage bill", SHARE, GAPS),
    "c_exposure": ("priority component: LLM exposure (E1 = 1, E2 = 0.5, E0 = 0)", SHARE, GAPS),
    "c_desire": ("priority component: WORKBank worker desire rescaled to 0-1", SHARE, GAPS),
    "c_capability": ("priority component: WORKBank AI capability rescaled to 0-1", SHARE, GAPS),
    "digital_factor": (
        "multiplicative gate: 1 for exposed tasks, lower for non-exposed or unlabeled",
        SHARE,
        GAPS,
    ),
    "priority": ("gap priority (higher = benchmark first)", "score (0-1)", GAPS),
}


def _coverage_gaps() -> dict[str, Entry]:
    return {
        "rank": ("priority rank among uncovered tasks (1 = build a benchmark for this first)", "rank", GAPS),
        **entries(
            [
                "onet_soc_code",
                "occupation_title",
                "major_group_code",
                "task_id",
                "task",
                "threshold",
                "wage_bill",
                "human_exposure",
                "exposed",
                "desire_mean",
                "capability_mean",
                "zone",
                "labeler",
            ]
        ),
        "n_prompts": ("distinct labeled prompts the task has now", COUNT, COVERAGE),
        "prompts_needed": ("threshold - n_prompts, at least 0: labeled prompts still needed to cover the task",
                           COUNT, GAPS),
        "p_covered": ("the estimates' probability that the task has >= threshold prompts in this index "
                      "(task_estimates): the list holds the tasks with p_covered < 0.9; null when there are no "
                      "estimates, and the list holds the tasks below the threshold by the labels as counted",
                      PROB, _ESTIMATED),
        "task_annual_hours": (
            "annual US work hours on the task (occupation hours x task share)",
            HOURS_UNIT,
            HOURS,
        ),
        **_GAP_COMPONENTS,
        "importance": ("O*NET task importance (IM scale); null when the task is unrated", "rating (1-5)", ONET_RATINGS),
        "c_importance": (
            "priority component: O*NET importance as a mid-rank percentile within the occupation (0-1)",
            SHARE,
            GAPS,
        ),
        "imputed": ("the components that were missing and took their neutral default, comma-separated (e.g. "
                    "'desire,capability'); null when none was", TEXT, GAPS),
    }


_ESTIMATED = "computed: models/gaps/expected.py from the per-unit estimates (task_estimates, occupation_estimates)"


def _occupation_gaps() -> dict[str, Entry]:
    return {
        "rank": ("rank, 1 = first: by expected uncovered hours among every occupation, or without estimates by "
                 "priority among the occupations with no task at the threshold (ranked_by)", "rank", GAPS),
        **entries(
            [
                "onet_soc_code",
                "occupation_title",
                "major_group_code",
                "threshold",
                "n_tasks",
                "occupation_annual_hours",
                "wage_bill",
                "desire_mean",
                "capability_mean",
            ]
        ),
        "tasks_covered": ("tasks with at least `threshold` prompts", COUNT, COVERAGE),
        "n_prompt_labels": ("prompt-task labels summed over the occupation's tasks", COUNT, COVERAGE),
        "uncovered_hours": ("annual hours on tasks below the threshold; null for an occupation without hours "
                            "data (no OEWS hours)", HOURS_UNIT, HOURS),
        "hours_share_uncovered": (
            "share of the occupation's hours on tasks below the threshold",
            SHARE,
            HOURS,
        ),
        "exposed_task_share": ("hour-weighted share of LLM-exposed tasks", SHARE, ELOUNDOU),
        "n_desire_rated": ("tasks with a WORKBank desire rating", COUNT, WORKBANK),
        **_GAP_COMPONENTS,
        "p_covered": ("estimated probability that the occupation has a task at the threshold "
                      "(occupation_estimates). The list holds every occupation: one likely covered (>= 0.9) can "
                      "still hold many hours on its other tasks", PROB, _ESTIMATED),
        "expected_tasks_covered": ("sum over its tasks of P(covered) (task_estimates)", COUNT, _ESTIMATED),
        "expected_uncovered_hours": ("sum over its tasks of annual hours x P(not covered): the ranking, on the "
                                     "value rounded to the whole hour, ties by onet_soc_code (an occupation without "
                                     "hours data: null, ranked last)", HOURS_UNIT, _ESTIMATED),
        "expected_uncovered_hours_low": ("2.5% point of the uncovered hours over the headline's draws "
                                         "(occupation_estimates.uncovered_hours_low); without that table, over "
                                         "simulated draws of its tasks' coverage (tasks independent). The mean "
                                         "can lie just outside the interval when nearly every draw agrees",
                                         HOURS_UNIT, _ESTIMATED),
        "expected_uncovered_hours_high": ("97.5% point of the same", HOURS_UNIT, _ESTIMATED),
        "expected_uncovered_share": ("expected_uncovered_hours / the occupation's task hours", SHARE, _ESTIMATED),
        "ranked_by": ("what the rank orders by: expected uncovered hours, or the priority when no per-unit "
                      "estimates exist", TEXT, GAPS),
    }


def _major_group_gaps() -> dict[str, Entry]:
    return {
        **entries(
            ["major_group_code", "major_group_title", "threshold", "onet_soc_code", "occupation_title"]
        ),
        "group_n_occupations": ("occupations with tasks in the group", COUNT, ONET),
        "group_hours": ("annual work hours in the group", HOURS_UNIT, HOURS),
        "uncovered_by": ("what counts a task as uncovered: the estimates (1 - p_covered per task, so hours and task "
                         "counts are expected ones) or, without estimates, the labels as counted (tasks below the "
                         "threshold)", TEXT, GAPS),
        "group_uncovered_hours": (
            "annual hours on uncovered tasks in the group (expected hours with the estimates: uncovered_by)",
            HOURS_UNIT,
            HOURS,
        ),
        "group_uncovered_share": ("group_uncovered_hours / group_hours", SHARE, HOURS),
        "group_uncovered_tasks": ("uncovered tasks in the group (expected number with the estimates)", COUNT,
                                  COVERAGE),
        "block_rank": (
            "rank of the occupation's uncovered block within the group (1 = most hours)",
            "rank",
            GAPS,
        ),
        "block_uncovered_hours": (
            "the occupation's annual hours on uncovered tasks (expected hours with the estimates)",
            HOURS_UNIT,
            HOURS,
        ),
        "block_share_of_group_uncovered": ("block_uncovered_hours / group_uncovered_hours", SHARE, HOURS),
        "block_uncovered_tasks": ("the occupation's uncovered tasks (expected number with the estimates)", COUNT,
                                  COVERAGE),
        "block_n_tasks": ("the occupation's tasks", COUNT, ONET),
        "largest_uncovered_task": ("the occupation's uncovered task with the most (expected) uncovered hours", TEXT,
                                   ONET),
        "largest_uncovered_task_hours": ("annual hours of that task", HOURS_UNIT, HOURS),
    }


def _jobbench_shortlist() -> dict[str, Entry]:
    return {
        "rank": ("rank by wage bill among occupations whose workers want automation", "rank", GAPS),
        **entries(
            [
                "onet_soc_code",
                "occupation_title",
                "major_group_code",
                "wage_bill",
                "employment",
                "threshold",
                "n_tasks",
            ]
        ),
        "desire_mean": (
            "mean worker desire over the occupation's WORKBank-rated tasks",
            "rating (1-5)",
            WORKBANK,
        ),
        "n_desire_rated": ("tasks with a WORKBank desire rating", COUNT, WORKBANK),
        "tasks_covered": ("tasks with at least `threshold` prompts", COUNT, COVERAGE),
        "task_share_covered": ("tasks_covered / n_tasks", SHARE, COVERAGE),
        "hours_share_covered": ("share of the occupation's hours on covered tasks", SHARE, HOURS),
        "occupation_covered": ("at least one task with >= threshold prompts", BOOL, COVERAGE),
        "n_prompt_labels": ("prompt-task labels summed over the occupation's tasks", COUNT, COVERAGE),
        "n_driving_tasks": ("uncovered rated tasks whose workers want automation", COUNT, GAPS),
        "driving_task_ids": ("their task IDs, comma-separated", TEXT, GAPS),
        "driving_tasks": ("'desire | task' for the most desired of them", TEXT, GAPS),
        "driving_hours": ("annual hours on those tasks", HOURS_UNIT, HOURS),
    }


def _benchmarks() -> dict[str, Entry]:
    return {
        "benchmark": COMMON["benchmark"],
        "title": ("benchmark title", TEXT, BENCH),
        "version": ("benchmark version or snapshot", TEXT, BENCH),
        "source_url": ("where the benchmark is published", TEXT, BENCH),
        "license": ("licence of the benchmark data", TEXT, BENCH),
        "agentic": ("tasks are carried out by an agent acting in an environment", BOOL, BENCH),
        "public_items": ("items published (as stated by the source)", COUNT, BENCH),
        "saturated": ("frontier models score near the ceiling", BOOL, BENCH),
        "target_major_group": ("SOC major group the benchmark targets, if any", CODE_UNIT, BENCH),
        "n_prompts": ("prompts ingested", COUNT, BENCH),
        "n_results": ("per-item model results ingested", COUNT, BENCH),
        "n_rejects": ("lines rejected at ingestion", COUNT, BENCH),
        "metadata_warnings": ("problems found in the benchmark metadata (fields defaulted)", TEXT, BENCH),
        "content_hash": (
            "SHA-256 over the benchmark folder's files (changes when the data change)",
            TEXT,
            BENCH,
        ),
    }



TABLES: dict[str, dict[str, Entry]] = {
    "labeler_validation": _labeler_validation(),
    "labeler_agreement": _labeler_agreement(),
    "coverage_gaps": _coverage_gaps(),
    "occupation_gaps": _occupation_gaps(),
    "major_group_gaps": _major_group_gaps(),
    "jobbench_shortlist": _jobbench_shortlist(),
    "benchmarks": _benchmarks(),
}
