"""What every exported column means: table -> column -> (meaning, unit, source).

`DATA_DICTIONARY` documents each column of each exported table; `tests/test_exports.py` asserts that every
column the export writes has an entry here, so a column added upstream fails the test until it is described.
Threshold-suffixed columns (`covered_1`, `covered_5`, ...) are generated for `DOCUMENTED_THRESHOLDS`.

No dagster here.
"""

from __future__ import annotations

from collections.abc import Iterable

Entry = tuple[str, str, str]  # (meaning, unit, source)

DOCUMENTED_THRESHOLDS: tuple[int, ...] = (1, 5)

# --- sources -----------------------------------------------------------------------------------------------
ONET = "O*NET 29.2 database (Occupation Data, Task Statements; CC BY 4.0)"
ONET_RATINGS = "O*NET 29.2 Task Ratings (IM importance scale), where available"
OEWS = "BLS Occupational Employment and Wage Statistics, May 2024 (national)"
MIT = "MIT Work Analytics Lab task labour-input shares (O*NET 30.2)"
ELOUNDOU = "Eloundou et al. (2023), 'GPTs are GPTs' task exposure labels"
WORKBANK = "SALT-NLP WORKBank (Shao et al. 2025) worker and expert ratings"
BENCH = "benchmark prompt collections (benchmark_prompts, benchmark_results; see the benchmarks table)"
LABELS = "prompt_task_labels (labeler named in the labeler column)"
COVERAGE = "computed: models/coverage.py from prompt_task_labels and onet_tasks"
HOURS = "computed: models/coverage.py from task_hours (MIT task shares x OEWS hours)"
REGRESSION = "computed: models/regression.py (logit, occupation-clustered SEs)"
SCORES = "computed: models/scores.py from benchmark_results and prompt_task_labels"
VALIDATION = "computed: models/validation.py against human labels shipped with the benchmarks"
GAPS = "computed: models/gaps/ (priority formula in docs/gap_finder.md)"
SENSITIVITY = "computed: models/coverage.py headline re-run under alternative choices"
CODE = "pipeline configuration"

SHARE = "share (0-1)"
PROB = "probability (0-1)"
COUNT = "count"
TEXT = "text"
CODE_UNIT = "code"
BOOL = "boolean"
USD = "US dollars per year"
HOURS_UNIT = "hours per year"
PEOPLE = "persons employed"

# --- columns that mean the same wherever they appear ------------------------------------------------------
COMMON: dict[str, Entry] = {
    "onet_soc_code": ("O*NET-SOC occupation code (e.g. 13-2011.00)", CODE_UNIT, ONET),
    "soc_code": ("6-digit SOC 2018 occupation code (e.g. 13-2011)", CODE_UNIT, ONET),
    "task_id": ("O*NET task identifier", CODE_UNIT, ONET),
    "task": ("O*NET task statement", TEXT, ONET),
    "title": ("O*NET occupation title", TEXT, ONET),
    "occupation_title": ("O*NET occupation title", TEXT, ONET),
    "major_group_code": ("SOC 2018 major group code (e.g. 15-0000)", CODE_UNIT, ONET),
    "major_group_title": ("SOC 2018 major group title", TEXT, ONET),
    "benchmark": ("benchmark name (folder name of the prompt collection)", TEXT, BENCH),
    "labeler": (
        "labeler whose prompt-to-task labels the row is computed from ('offline' or 'openai')",
        TEXT,
        LABELS,
    ),
    "labeler_version": (
        "labeler version (model and prompt template, or offline method version)",
        TEXT,
        LABELS,
    ),
    "hours_weighting": (
        "how an occupation's hours are split over its tasks: 'pi' (MIT time shares) or 'equal'",
        TEXT,
        CODE,
    ),
    "threshold": ("minimum number of distinct benchmark prompts for a task to count as covered", COUNT, CODE),
    "n_tasks": ("number of O*NET tasks in the row's scope", COUNT, ONET),
    "employment": ("employment", PEOPLE, OEWS),
    "wage_bill": ("annual wage bill: employment x annual mean wage", USD, OEWS),
    "occupation_annual_hours": (
        "annual hours worked in the occupation: employment x annual hours per worker",
        HOURS_UNIT,
        OEWS,
    ),
    "ci_low": ("lower bound of the 95% confidence interval", "same unit as the estimate", CODE),
    "ci_high": ("upper bound of the 95% confidence interval", "same unit as the estimate", CODE),
    "n": ("number of observations behind the estimate", COUNT, CODE),
    "note": ("free-text caveat about how the row was estimated", TEXT, CODE),
    "model": ("statistical model the row belongs to", TEXT, REGRESSION),
    "desire_mean": ("mean worker desire for AI automation of the task (1-5)", "rating (1-5)", WORKBANK),
    "capability_mean": ("mean expert rating of AI capability for the task (1-5)", "rating (1-5)", WORKBANK),
    "zone": (
        "WORKBank zone: green_light, red_light, rnd_opportunity, low_priority (none = unzoned)",
        TEXT,
        WORKBANK,
    ),
    "exposed": ("task is exposed to LLMs (human rating E1 or E2)", BOOL, ELOUNDOU),
    "human_exposure": (
        "human exposure rating: E0 (none), E1 (direct), E2 (with LLM-powered tools)",
        TEXT,
        ELOUNDOU,
    ),
    "rank": ("rank in the ordering the table is sorted by (1 = first)", "rank", CODE),
}


def _entries(columns: Iterable[str], source: str | None = None, **overrides: Entry) -> dict[str, Entry]:
    """Entries for `columns`, taken from `overrides` or else COMMON (with `source` replacing COMMON's)."""
    out: dict[str, Entry] = {}
    for column in columns:
        if column in overrides:
            out[column] = overrides[column]
        elif column in COMMON:
            meaning, unit, common_source = COMMON[column]
            out[column] = (meaning, unit, common_source if source is None else source)
        else:
            raise KeyError(f"no description for column {column!r}")
    for column, entry in overrides.items():
        out.setdefault(column, entry)
    return out


def _per_threshold(template: dict[str, Entry]) -> dict[str, Entry]:
    """Expand {'covered_{t}': (meaning with {t}, unit, source)} over DOCUMENTED_THRESHOLDS."""
    out: dict[str, Entry] = {}
    for t in DOCUMENTED_THRESHOLDS:
        for name, (meaning, unit, source) in template.items():
            out[name.format(t=t)] = (meaning.format(t=t), unit, source)
    return out


def _task_coverage() -> dict[str, Entry]:
    return {
        **_entries(["onet_soc_code", "task_id"]),
        "n_prompts": (
            "distinct benchmark prompts (benchmark, prompt_id) labeled with the task",
            COUNT,
            COVERAGE,
        ),
        "n_benchmarks": (
            "distinct benchmarks with at least one prompt labeled with the task",
            COUNT,
            COVERAGE,
        ),
        "benchmarks": (
            "comma-separated benchmarks with prompts labeled with the task ('' when none)",
            TEXT,
            COVERAGE,
        ),
        **_per_threshold({"covered_{t}": ("task has at least {t} labeled prompts", BOOL, COVERAGE)}),
        **_entries(["labeler"]),
    }


def _occupation_coverage() -> dict[str, Entry]:
    return {
        **_entries(
            [
                "onet_soc_code",
                "title",
                "major_group_code",
                "n_tasks",
                "occupation_annual_hours",
                "hours_weighting",
                "labeler",
            ]
        ),
        "weight_source": (
            "where task hour weights come from: 'pi' (MIT time shares), 'equal' or "
            "'equal_fallback' (no time shares for the occupation)",
            TEXT,
            HOURS,
        ),
        **_per_threshold(
            {
                "tasks_covered_{t}": (
                    "tasks of the occupation with at least {t} labeled prompts",
                    COUNT,
                    COVERAGE,
                ),
                "task_share_covered_{t}": (
                    "share of the occupation's tasks with at least {t} labeled prompts",
                    SHARE,
                    COVERAGE,
                ),
                "covered_{t}": (
                    "occupation has at least one task with at least {t} labeled prompts",
                    BOOL,
                    COVERAGE,
                ),
                "hours_share_covered_{t}": (
                    "share of the occupation's work hours spent on tasks with at least {t} labeled prompts",
                    SHARE,
                    HOURS,
                ),
            }
        ),
    }


def _major_group_coverage() -> dict[str, Entry]:
    return {
        **_entries(["major_group_code", "major_group_title", "employment", "wage_bill", "labeler"]),
        "n_occupations": ("O*NET occupations with task statements in the group", COUNT, ONET),
        **_per_threshold(
            {
                "occupations_covered_{t}": (
                    "occupations with at least one task with >= {t} labeled prompts",
                    COUNT,
                    COVERAGE,
                ),
                "occupation_share_covered_{t}": (
                    "share of the group's occupations with a task with >= {t} labeled prompts",
                    SHARE,
                    COVERAGE,
                ),
                "employment_covered_{t}": (
                    "employment in covered occupations (>= {t} prompts on some task)",
                    PEOPLE,
                    OEWS,
                ),
                "wage_bill_covered_{t}": (
                    "wage bill of covered occupations (>= {t} prompts on some task)",
                    USD,
                    OEWS,
                ),
                "label_{t}": ("display label 'group covered/total' at threshold {t}", TEXT, COVERAGE),
            }
        ),
    }


def _coverage_headline() -> dict[str, Entry]:
    return {
        "scope": (
            "'all' for all benchmarks pooled, otherwise the single benchmark the row is about",
            TEXT,
            COVERAGE,
        ),
        **_entries(["threshold", "labeler", "hours_weighting"]),
        "metric": (
            "headline metric: tasks_covered, occupations_covered, major_groups_uncovered, "
            "hours_share_covered, hours_share_uncovered",
            TEXT,
            COVERAGE,
        ),
        "value": (
            "value of the metric (a share for *_covered/*_share_*, a count for major_groups_uncovered)",
            "share (0-1) or count",
            COVERAGE,
        ),
        "numerator": (
            "numerator of the share (count of tasks/occupations/groups, or hours)",
            "count or hours per year",
            COVERAGE,
        ),
        "denominator": (
            "denominator of the share (all tasks, occupations with tasks, the 22 major groups, "
            "or hours of occupations with hours data)",
            "count or hours per year",
            COVERAGE,
        ),
        "detail": ("for major_groups_uncovered: the uncovered groups, '; '-separated", TEXT, COVERAGE),
        "ci_low": ("lower bound of the 95% interval of the value (when computed)", "same as value", COVERAGE),
        "ci_high": (
            "upper bound of the 95% interval of the value (when computed)",
            "same as value",
            COVERAGE,
        ),
    }


def _task_analysis_frame() -> dict[str, Entry]:
    return {
        **_task_coverage(),
        "importance": (
            "O*NET task importance (IM scale); null when the task is unrated",
            "rating (1-5)",
            ONET_RATINGS,
        ),
        "is_core": ("task is a Core task (O*NET task type), the documented importance proxy", BOOL, ONET),
        "task_type": ("O*NET task type: Core, Supplemental or null", TEXT, ONET),
        **_entries(
            [
                "exposed",
                "human_exposure",
                "wage_bill",
                "employment",
                "desire_mean",
                "capability_mean",
                "zone",
                "major_group_code",
            ]
        ),
        "gpt4_exposed": ("task is exposed to LLMs according to GPT-4's rating (E1 or E2)", BOOL, ELOUNDOU),
        "gpt4_exposure": ("GPT-4's exposure rating: E0, E1 or E2", TEXT, ELOUNDOU),
        "annual_mean_wage": ("annual mean wage of the occupation", "US dollars per worker per year", OEWS),
        "in_workbank": (
            "the task is rated in WORKBank (ratings averaged when rated more than once)",
            BOOL,
            WORKBANK,
        ),
        "pi": ("the task's share of its occupation's work time", SHARE, MIT),
        "pi_is_fallback": (
            "pi is a fallback (equal split): the source has no time share for the task",
            BOOL,
            MIT,
        ),
        "task_annual_hours": (
            "annual US work hours on the task: pi x occupation annual hours",
            HOURS_UNIT,
            HOURS,
        ),
    }


def _coverage_regressions() -> dict[str, Entry]:
    return {
        "model": (
            "coverage model: exposure_wage (model 1), importance_fe (model 2), workbank (model 3)",
            TEXT,
            REGRESSION,
        ),
        "table": (
            "which part of the model output the row is: 'coefficients' (term, coef, se, ...), 'contrasts' "
            "(contrast, prob_a, prob_b, ratio, ...) or 'sample' (item, value)",
            TEXT,
            REGRESSION,
        ),
        "exposure_source": ("exposure labels used: human (Eloundou E1/E2) or gpt4", TEXT, ELOUNDOU),
        "term": (
            "model term (Intercept, exposed, np.log(wage_bill), C(importance_quintile)[T.k], ...)",
            TEXT,
            REGRESSION,
        ),
        "coef": ("logit coefficient", "log-odds", REGRESSION),
        "se": ("occupation-clustered standard error of the coefficient", "log-odds", REGRESSION),
        "z": ("z statistic (coef / se)", "z", REGRESSION),
        "p": ("two-sided p-value", PROB, REGRESSION),
        "ci_low": (
            "lower bound of the 95% interval (coefficient in log-odds; contrast as a ratio)",
            "log-odds or ratio",
            REGRESSION,
        ),
        "ci_high": (
            "upper bound of the 95% interval (coefficient in log-odds; contrast as a ratio)",
            "log-odds or ratio",
            REGRESSION,
        ),
        "n": ("tasks in the estimation sample", COUNT, REGRESSION),
        "n_clusters": ("occupations (clusters) in the estimation sample", COUNT, REGRESSION),
        "cov_type": ("covariance estimator: cluster (CRV1) or nonrobust", TEXT, REGRESSION),
        "formula": ("model formula (patsy)", TEXT, REGRESSION),
        "converged": ("the maximum-likelihood fit converged", BOOL, REGRESSION),
        "note": ("sample restrictions and caveats; why a model was not estimated", TEXT, REGRESSION),
        "contrast": ("what the probability ratio compares", TEXT, REGRESSION),
        "prob_a": ("adjusted coverage probability of the first profile", PROB, REGRESSION),
        "prob_b": ("adjusted coverage probability of the second profile", PROB, REGRESSION),
        "ratio": ("probability ratio prob_a / prob_b", "ratio", REGRESSION),
        "se_log_ratio": ("delta-method standard error of log(ratio)", "log ratio", REGRESSION),
        "margin": (
            "'average' (average predictive margin over the sample) or 'pointwise' (one profile)",
            TEXT,
            REGRESSION,
        ),
        "item": (
            "sample-size item (n_tasks_used, n_occupations_dropped_no_variation, ...)",
            TEXT,
            REGRESSION,
        ),
        "value": ("value of the sample-size item", COUNT, REGRESSION),
    }


def _coverage_adjusted_probabilities() -> dict[str, Entry]:
    return {
        "model": (
            "coverage model the probabilities come from (exposure_wage, importance_fe, workbank)",
            TEXT,
            REGRESSION,
        ),
        "exposure_source": ("exposure labels used: human (Eloundou E1/E2) or gpt4", TEXT, ELOUNDOU),
        "margin": (
            "'average' (average predictive margin over the estimation sample) or 'pointwise'",
            TEXT,
            REGRESSION,
        ),
        "exposed": (
            "exposure setting of the profile (1 exposed, 0 not; null when not part of the model)",
            "0/1",
            ELOUNDOU,
        ),
        "wage_bill": ("occupation wage bill of the profile (model 1 grid)", USD, OEWS),
        "importance_quintile": (
            "within-occupation task-importance quintile of the profile, 1 (least) to 5 (most important)",
            "quintile",
            ONET_RATINGS,
        ),
        "desire_mean": ("WORKBank worker desire of the profile (model 3 grid)", "rating (1-5)", WORKBANK),
        "capability_mean": ("WORKBank AI capability of the profile (model 3 grid)", "rating (1-5)", WORKBANK),
        "varying": (
            "model 3: which rating varies along the grid (the other is held at its mean)",
            TEXT,
            REGRESSION,
        ),
        "prob": (
            "adjusted probability that a task with this profile has >= 5 labeled prompts",
            PROB,
            REGRESSION,
        ),
        "se": ("delta-method standard error of prob (clustered covariance)", PROB, REGRESSION),
        "ci_low": ("lower bound of the 95% interval of prob (logit-scale delta method)", PROB, REGRESSION),
        "ci_high": ("upper bound of the 95% interval of prob (logit-scale delta method)", PROB, REGRESSION),
        "note": ("sample restrictions and caveats of the model", TEXT, REGRESSION),
    }


def _workbank_coverage() -> dict[str, Entry]:
    return {
        "model": ("name of the summary (workbank_zone)", TEXT, REGRESSION),
        "zone": COMMON["zone"],
        **_entries(["threshold", "labeler"]),
        "n_tasks": ("WORKBank-rated tasks in the zone", COUNT, WORKBANK),
        "n_covered": ("of those, tasks with at least `threshold` labeled prompts", COUNT, COVERAGE),
        "share": ("n_covered / n_tasks", SHARE, COVERAGE),
        "ci_low": ("Wilson 95% interval, lower bound of share", SHARE, COVERAGE),
        "ci_high": ("Wilson 95% interval, upper bound of share", SHARE, COVERAGE),
    }


def _occupation_model_scores() -> dict[str, Entry]:
    return {
        **_entries(["onet_soc_code", "title", "major_group_code", "labeler"]),
        "model": ("AI model whose benchmark results are summarised", TEXT, BENCH),
        "min_prompts": (
            "tasks enter the O*NET-weighted mean only with at least this many scored prompts",
            COUNT,
            CODE,
        ),
        "n_prompts": (
            "distinct prompts scored for the model and labeled with a task of the occupation",
            COUNT,
            SCORES,
        ),
        "n_benchmarks": ("benchmarks those prompts come from", COUNT, SCORES),
        "n_tasks_labeled": ("tasks of the occupation with at least one such prompt", COUNT, SCORES),
        "n_tasks": (
            "tasks with at least min_prompts such prompts (averaged by the weighted mean)",
            COUNT,
            SCORES,
        ),
        "plain_mean": ("mean score over the occupation's prompts", "score (0-1)", SCORES),
        "plain_ci_low": (
            "percentile-bootstrap 95% interval of plain_mean, lower bound",
            "score (0-1)",
            SCORES,
        ),
        "plain_ci_high": (
            "percentile-bootstrap 95% interval of plain_mean, upper bound",
            "score (0-1)",
            SCORES,
        ),
        "weighted_mean": (
            "O*NET-weighted mean: mean over tasks of each task's mean prompt score",
            "score (0-1)",
            SCORES,
        ),
        "weighted_ci_low": ("bootstrap 95% interval of weighted_mean, lower bound", "score (0-1)", SCORES),
        "weighted_ci_high": ("bootstrap 95% interval of weighted_mean, upper bound", "score (0-1)", SCORES),
        "difference": ("weighted_mean - plain_mean", "score difference", SCORES),
        "difference_ci_low": (
            "bootstrap 95% interval of difference, lower bound",
            "score difference",
            SCORES,
        ),
        "difference_ci_high": (
            "bootstrap 95% interval of difference, upper bound",
            "score difference",
            SCORES,
        ),
        "n_boot": ("bootstrap replicates", COUNT, CODE),
    }


def _coverage_sensitivity() -> dict[str, Entry]:
    return {
        "dimension": (
            "analysis choice varied: threshold, hours_weighting ('pi' vs 'equal'), exposure_labels "
            "('human' vs 'gpt4'), labeler (when several labelers labeled the prompts), labeler_same_prompts "
            "(each labeler's headline on the prompts all of them labeled; metric n_prompts gives how many)",
            TEXT,
            SENSITIVITY,
        ),
        "variant": (
            "the value the choice takes in this row (e.g. '5', 'equal', 'gpt4', 'offline')",
            TEXT,
            SENSITIVITY,
        ),
        "metric": (
            "headline metric under the variant: tasks_covered, occupations_covered, hours_share_covered "
            "(shares), major_groups_uncovered (count), hours_share_covered_{t}, tasks_covered_{t}, "
            "occupations_covered_{t}; for exposure_labels the model-1 exposed_coef / exposed_se (log-odds) "
            "and exposed_ratio with exposed_ratio_ci_low / _ci_high (probability ratio, 95% CI)",
            TEXT,
            SENSITIVITY,
        ),
        "value": (
            "value of the metric under the variant",
            "share (0-1), count, log-odds or ratio (see metric)",
            SENSITIVITY,
        ),
        **_entries(["labeler"], source=SENSITIVITY),
    }


def _labeler_validation() -> dict[str, Entry]:
    return {
        "benchmark": (
            "benchmark whose human labels are the gold standard ('all' = pooled gold annotations)",
            TEXT,
            VALIDATION,
        ),
        **_entries(["labeler", "labeler_version"]),
        "metric": (
            "occupation_top{k}: a gold occupation among the labeler's top-k ranked occupations; "
            "task_hit_at{k}: a gold task among the top-k ranked tasks; task_precision/recall/f1: "
            "labeled task set vs gold set; ref_*: against the task-level reference (an LLM judge, "
            "data/reference/): ref_task_f1/precision/recall (mean over prompts and passes; F1 = 1 when both "
            "sets are empty), ref_task_hit_at_1/5 (a reference task among the top-ranked candidates), "
            "ref_first_occupation_agreement (the first occupation among the judge's), ref_work_accuracy "
            "(work / not-work decided as the judge did); ref_cv_*: the same, cross-validated leaving one "
            "benchmark out, for a labeler fitted on the reference (development split); labeler "
            "reference_pass_agreement: the judge's two passes against each other (the ceiling)",
            TEXT,
            VALIDATION,
        ),
        "value": ("mean of the per-prompt metric (accuracy for hits)", SHARE, VALIDATION),
        "ci_low": ("percentile-bootstrap 95% interval over prompts, lower bound", SHARE, VALIDATION),
        "ci_high": ("percentile-bootstrap 95% interval over prompts, upper bound", SHARE, VALIDATION),
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
            "percentile-bootstrap 95% interval over prompts, lower bound",
            "same as value",
            VALIDATION,
        ),
        "ci_high": (
            "percentile-bootstrap 95% interval over prompts, upper bound",
            "same as value",
            VALIDATION,
        ),
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
        **_entries(
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
        "prompts_needed": ("threshold - n_prompts: prompts still needed to cover the task", COUNT, GAPS),
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
        "imputed": ("some component was missing and took its neutral default", BOOL, GAPS),
    }


def _occupation_gaps() -> dict[str, Entry]:
    return {
        "rank": ("priority rank among uncovered occupations (1 = first)", "rank", GAPS),
        **_entries(
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
        "uncovered_hours": ("annual hours on tasks below the threshold", HOURS_UNIT, HOURS),
        "hours_share_uncovered": (
            "share of the occupation's hours on tasks below the threshold",
            SHARE,
            HOURS,
        ),
        "exposed_task_share": ("hour-weighted share of LLM-exposed tasks", SHARE, ELOUNDOU),
        "n_desire_rated": ("tasks with a WORKBank desire rating", COUNT, WORKBANK),
        **_GAP_COMPONENTS,
    }


def _major_group_gaps() -> dict[str, Entry]:
    return {
        **_entries(
            ["major_group_code", "major_group_title", "threshold", "onet_soc_code", "occupation_title"]
        ),
        "group_n_occupations": ("occupations with tasks in the group", COUNT, ONET),
        "group_hours": ("annual work hours in the group", HOURS_UNIT, HOURS),
        "group_uncovered_hours": (
            "annual hours on tasks below the threshold in the group",
            HOURS_UNIT,
            HOURS,
        ),
        "group_uncovered_share": ("group_uncovered_hours / group_hours", SHARE, HOURS),
        "group_uncovered_tasks": ("tasks below the threshold in the group", COUNT, COVERAGE),
        "block_rank": (
            "rank of the occupation's uncovered block within the group (1 = most hours)",
            "rank",
            GAPS,
        ),
        "block_uncovered_hours": (
            "the occupation's annual hours on tasks below the threshold",
            HOURS_UNIT,
            HOURS,
        ),
        "block_share_of_group_uncovered": ("block_uncovered_hours / group_uncovered_hours", SHARE, HOURS),
        "block_uncovered_tasks": ("the occupation's tasks below the threshold", COUNT, COVERAGE),
        "block_n_tasks": ("the occupation's tasks", COUNT, ONET),
        "largest_uncovered_task": ("the occupation's uncovered task with the most hours", TEXT, ONET),
        "largest_uncovered_task_hours": ("annual hours of that task", HOURS_UNIT, HOURS),
    }


def _jobbench_shortlist() -> dict[str, Entry]:
    return {
        "rank": ("rank by wage bill among occupations whose workers want automation", "rank", GAPS),
        **_entries(
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


DATA_DICTIONARY: dict[str, dict[str, Entry]] = {
    "coverage_headline": _coverage_headline(),
    "task_coverage": _task_coverage(),
    "occupation_coverage": _occupation_coverage(),
    "major_group_coverage": _major_group_coverage(),
    "task_analysis_frame": _task_analysis_frame(),
    "coverage_regressions": _coverage_regressions(),
    "coverage_adjusted_probabilities": _coverage_adjusted_probabilities(),
    "workbank_coverage": _workbank_coverage(),
    "occupation_model_scores": _occupation_model_scores(),
    "coverage_sensitivity": _coverage_sensitivity(),
    "labeler_validation": _labeler_validation(),
    "labeler_agreement": _labeler_agreement(),
    "coverage_gaps": _coverage_gaps(),
    "occupation_gaps": _occupation_gaps(),
    "major_group_gaps": _major_group_gaps(),
    "jobbench_shortlist": _jobbench_shortlist(),
    "benchmarks": _benchmarks(),
}

TABLE_DESCRIPTIONS: dict[str, str] = {
    "coverage_headline": (
        "Headline numbers: share of tasks, occupations, major groups and work hours covered, "
        "pooled and per benchmark, at each prompt threshold."
    ),
    "task_coverage": "One row per O*NET task: how many benchmark prompts are labeled with it.",
    "occupation_coverage": "One row per O*NET occupation with tasks: tasks and work hours covered.",
    "major_group_coverage": "One row per SOC major group (all 22): occupations, employment and wage bill "
    "covered.",
    "task_analysis_frame": "One row per task: coverage, importance, exposure, wage bill, WORKBank ratings and "
    "work hours -- the input of the coverage models.",
    "coverage_regressions": "Logit models of task coverage: coefficients, probability ratios, sample sizes.",
    "coverage_adjusted_probabilities": "Adjusted probabilities of coverage from the logit models, with 95% "
    "intervals.",
    "workbank_coverage": "Coverage of WORKBank-rated tasks by WORKBank zone, with Wilson intervals.",
    "occupation_model_scores": "Per occupation and AI model: plain and O*NET-weighted mean benchmark scores.",
    "coverage_sensitivity": "Headline numbers recomputed under alternative analysis choices.",
    "labeler_validation": "Accuracy of each labeler against human labels, per benchmark, with bootstrap "
    "intervals.",
    "labeler_agreement": "Agreement between two labelers on the prompts both labeled.",
    "coverage_gaps": "Uncovered tasks ranked by priority: what to benchmark next.",
    "occupation_gaps": "Occupations with no covered task, ranked by priority.",
    "major_group_gaps": "Per SOC major group, the largest blocks of uncovered work hours.",
    "jobbench_shortlist": "Occupations whose workers want automation, by wage bill, with uncovered tasks.",
    "benchmarks": "The benchmarks included: version, licence, prompts, results and content hash.",
}


# --- benchmark indexes (models/indexes.py, data/indexes/<name>.toml) ---------------------------------------
INDEX = "data/indexes/<name>.toml evaluated by models/indexes.py over the benchmarks table and prompt_work"
BENCHMARK_INDEX_ENTRY: Entry = (
    "benchmark index the row is computed for: 'all' = every landed benchmark, else only the members of "
    "data/indexes/<name>.toml (benchmark_index_membership)",
    TEXT,
    INDEX,
)
# Tables computed once per benchmark index: each row names its index.
INDEXED_TABLES: tuple[str, ...] = (
    "coverage_headline", "task_coverage", "occupation_coverage", "major_group_coverage", "task_analysis_frame",
    "coverage_regressions", "coverage_adjusted_probabilities", "workbank_coverage", "coverage_gaps",
    "occupation_gaps", "major_group_gaps", "jobbench_shortlist",
)
for _table in INDEXED_TABLES:
    DATA_DICTIONARY[_table]["benchmark_index"] = BENCHMARK_INDEX_ENTRY
DATA_DICTIONARY["benchmark_index_membership"] = {
    "benchmark_index": ("benchmark index: the name of its file data/indexes/<name>.toml", TEXT, INDEX),
    "version": ("version of the index definition (its `version` field)", TEXT, INDEX),
    "title": ("title of the index", TEXT, INDEX),
    "benchmark": COMMON["benchmark"],
    "included": ("the benchmark counts in this index", BOOL, INDEX),
    "decided_by": (
        "what decided: a rule (name, condition, file:line), an include/exclude entry, the cap per group, or "
        "'every rule passed'",
        TEXT,
        INDEX,
    ),
    "reason": ("why: the failing value, the entry's reason, or the benchmark's rank under the cap", TEXT, INDEX),
    "values_read": (
        "every value the rules and the cap read, 'unknown' where the metadata or measurement is missing; "
        "values asserted by the index file say so",
        TEXT,
        INDEX,
    ),
    "unknown_passed": (
        "rules passed although their value was unknown (the rule says unknown = \"include\")",
        TEXT,
        INDEX,
    ),
    "major_group": (
        "SOC major group of the benchmark: target_major_group from benchmark.toml, else the group holding most "
        "of its top-ranked task labels",
        CODE_UNIT,
        INDEX,
    ),
    "index_file": ("the index definition file", TEXT, INDEX),
}
TABLE_DESCRIPTIONS["benchmark_index_membership"] = (
    "Per benchmark index and landed benchmark: included or not, the rule or entry that decided, and the "
    "values read."
)


# --- headline estimates (issue 16, models/estimates/) -------------------------------------------------------
ESTIMATES = "computed: models/estimates/ from prompt_task_labels (p_exercised) and the judge sample"
JUDGE_SAMPLE = "judge sample: data/reference/ (vendored reference labels) or judge_sample_labels (BENCHMAP_JUDGE_SAMPLE)"
_ESTIMATOR_TEXT = (
    "labels_as_truth (every label counted as certain), labeler (draws of each label with its p_exercised), "
    "design (judge sample alone, N_b/n_b weights), model_assisted (labeler on every prompt corrected and "
    "completed by the judge sample; multiple imputation), model_assisted_pass_b (the same with the development "
    "split's second judge pass: the judge's reproducibility; never published), bounds (at >= 1 prompt, a species "
    "count: value = ci_low = the floor (what the judge sample saw, or the model-assisted lower bound at >= 5 "
    "if higher), ci_high = the model-assisted extrapolation's 97.5th percentile)"
)
DATA_DICTIONARY["headline_estimates"] = {
    "benchmark_index": (
        "benchmark index the row is computed for ('all' = every landed benchmark)",
        TEXT,
        ESTIMATES,
    ),
    "scope": ("'all' for every member benchmark of the index pooled, else the one benchmark", TEXT, ESTIMATES),
    "quantity": (
        "tasks_covered, occupations_covered, major_groups_covered (counts) or hours_share_covered (share of US "
        "work hours on covered tasks)",
        TEXT,
        ESTIMATES,
    ),
    "threshold": COMMON["threshold"],
    "estimator": (f"how the value was estimated: {_ESTIMATOR_TEXT}", TEXT, ESTIMATES),
    "value": (
        "estimate (mean over draws for labeler and model_assisted; plug-in for design and labels_as_truth)",
        "count, or share (0-1) for hours_share_covered",
        ESTIMATES,
    ),
    "ci_low": ("lower bound of the 95% interval (2.5th percentile of the draws)", "same as value", ESTIMATES),
    "ci_high": ("upper bound of the 95% interval (97.5th percentile of the draws)", "same as value", ESTIMATES),
    "denominator": (
        "what the count is out of: all O*NET tasks, occupations with tasks, SOC major groups; 1 for shares",
        COUNT,
        ESTIMATES,
    ),
    "published": (
        "this is the estimate the headline quotes: where the scope has judge-sampled texts, model_assisted at "
        ">= 5 prompts and bounds at >= 1; labeler otherwise",
        BOOL,
        ESTIMATES,
    ),
    "n_texts": ("distinct prompt texts in the scope", COUNT, BENCH),
    "n_sampled": ("distinct prompt texts of the scope in the judge sample", COUNT, JUDGE_SAMPLE),
    "n_draws": ("draws (bootstrap replicates or imputations) behind the interval; 0 = no interval", COUNT, CODE),
    "basis": ("what the estimate rests on and what it cannot see", TEXT, ESTIMATES),
    "labeler": COMMON["labeler"],
    "labeler_version": COMMON["labeler_version"],
}
DATA_DICTIONARY["estimate_design"] = {
    "benchmark": COMMON["benchmark"],
    "distinct_texts": ("distinct prompt texts N_b (the sampling units: prompt_hash within the benchmark)", COUNT,
                       BENCH),
    "prompts": ("prompts of the benchmark (a text stands for all prompts sharing it)", COUNT, BENCH),
    "n_sampled": ("texts in the judge sample n_b that are in the warehouse", COUNT, JUDGE_SAMPLE),
    "sampling_fraction": ("n_b / N_b", SHARE, ESTIMATES),
    "weight": ("design weight N_b / n_b of a sampled text (null without a sample)", "texts per sampled text",
               ESTIMATES),
    "source": ("where the judge labels come from: judge_sample, reference or none", TEXT, JUDGE_SAMPLE),
}
DATA_DICTIONARY["labeler_reliability"] = {
    "benchmark": ("'all' (every benchmark with a judge sample) or one benchmark", TEXT, ESTIMATES),
    "bin": ("probability bin (0 = lowest) of p_exercised", "rank", ESTIMATES),
    "p_low": ("lower edge of the bin", PROB, ESTIMATES),
    "p_high": ("upper edge of the bin", PROB, ESTIMATES),
    "n": ("labels of judge-sampled texts in the bin", COUNT, ESTIMATES),
    "mean_predicted": ("mean p_exercised of the bin's labels", PROB, ESTIMATES),
    "observed": ("share of the bin's labels the judge also gives", SHARE, JUDGE_SAMPLE),
    "ci_low": ("Wilson 95% lower bound of observed", SHARE, ESTIMATES),
    "ci_high": ("Wilson 95% upper bound of observed", SHARE, ESTIMATES),
    "ece": ("expected calibration error of the scope: sum over bins of n_bin / n x |predicted - observed|",
            PROB, ESTIMATES),
    "recall": ("share of the judge's (prompt, task) pairs the labeler emitted at all (calibration says nothing "
               "about the others)", SHARE, ESTIMATES),
    "n_judge_pairs": ("the judge's (prompt, task) pairs in the scope", COUNT, JUDGE_SAMPLE),
}
DATA_DICTIONARY["estimate_split_check"] = {
    "scope": ("'all': every benchmark's judge-labeled texts pooled", TEXT, ESTIMATES),
    "quantity": ("headline quantity (see headline_estimates)", TEXT, ESTIMATES),
    "threshold": COMMON["threshold"],
    "estimator": (f"estimator: {_ESTIMATOR_TEXT}", TEXT, ESTIMATES),
    "n_replications": ("random half splits of the judge sample", COUNT, ESTIMATES),
    "coverage": ("share of splits whose 95% interval (from one half) holds the judge-labeled truth of both halves",
                 SHARE, ESTIMATES),
    "mean_abs_error": ("mean |estimate - truth| over the splits", "same as the quantity", ESTIMATES),
    "mean_error": ("mean estimate - truth over the splits (bias)", "same as the quantity", ESTIMATES),
    "mean_truth": ("mean truth over the splits", "same as the quantity", ESTIMATES),
    "check": ("which check: split_half (estimated from a random half of each benchmark's judge sample) or "
              "split_fifth (from a fifth: closer to the headline, which imputes ~93% of the texts)", TEXT, ESTIMATES),
}
DATA_DICTIONARY["coverage_regressions_mi"] = {
    "model": ("coverage logit (exposure_wage, importance_fe, workbank; see coverage_regressions)", TEXT, REGRESSION),
    "kind": ("coefficient, or log_ratio (a probability-ratio contrast combined on the log scale)", TEXT, ESTIMATES),
    "term": ("coefficient term or contrast, as in coverage_regressions", TEXT, REGRESSION),
    "estimate": ("combined estimate: the coefficient, or the probability ratio exp(mean log ratio)",
                 "logit or ratio", ESTIMATES),
    "coef": ("mean over the draws on the fitted scale (coefficient or log ratio)", "logit or log ratio", ESTIMATES),
    "se": ("Rubin total standard error sqrt(W + (1 + 1/m) B)", "same as coef", ESTIMATES),
    "ci_low": ("lower bound of the 95% interval (t with Rubin's df), on the estimate's scale", "same as estimate",
               ESTIMATES),
    "ci_high": ("upper bound of the 95% interval, on the estimate's scale", "same as estimate", ESTIMATES),
    "within_var": ("W: mean squared clustered SE over the draws (sampling of tasks)", "squared coef", ESTIMATES),
    "between_var": ("B: variance of the estimate across draws (labeler error)", "squared coef", ESTIMATES),
    "fraction_missing_info": ("(1 + 1/m) B / T: share of the variance due to labeler error", SHARE, ESTIMATES),
    "df": ("Rubin's degrees of freedom (inf when B = 0)", COUNT, ESTIMATES),
    "m": ("completed label sets (draws) refitted", COUNT, ESTIMATES),
    "draws": ("which draws: model_assisted imputations of the label set", TEXT, ESTIMATES),
}
DATA_DICTIONARY["coverage_headline"].update({
    "published_estimator": (
        "the estimator of the published headline for this row (headline_estimates.published): where the scope "
        "has judge-sampled texts model_assisted at >= 5 prompts and bounds at >= 1 (published_value = its "
        "floor), labeler otherwise; value/numerator stay the labels as counted",
        TEXT,
        ESTIMATES,
    ),
    "published_value": ("the published estimate, in the unit of value", "same as value", ESTIMATES),
    "published_ci_low": ("lower bound of the published estimate's 95% interval", "same as value", ESTIMATES),
    "published_ci_high": ("upper bound of the published estimate's 95% interval", "same as value", ESTIMATES),
})
TABLE_DESCRIPTIONS["headline_estimates"] = (
    "Headline quantities under four estimators with 95% intervals; `published` marks the one the headline "
    "quotes."
)
TABLE_DESCRIPTIONS["estimate_design"] = "The judge sample's design per benchmark (N_b, n_b, weights, source)."
TABLE_DESCRIPTIONS["labeler_reliability"] = (
    "Reliability of the labeler's p_exercised against the judge: predicted vs observed per bin, ECE, recall."
)
TABLE_DESCRIPTIONS["estimate_split_check"] = (
    "Split-sample check of the estimators: estimate from half the judge sample, compare with the rest."
)
TABLE_DESCRIPTIONS["coverage_regressions_mi"] = (
    "Coverage logits with labeler error: refitted on imputed label sets, combined with Rubin's rules."
)

def describe(table: str, column: str) -> Entry | None:
    """(meaning, unit, source) of `column` in `table`, or None when undocumented."""
    return DATA_DICTIONARY.get(table, {}).get(column)


def undocumented_columns(tables: dict[str, Iterable[str]]) -> dict[str, list[str]]:
    """Columns without a dictionary entry, per table (tables with none left out)."""
    missing: dict[str, list[str]] = {}
    for table, columns in tables.items():
        gaps = [c for c in columns if describe(table, c) is None]
        if gaps:
            missing[table] = gaps
    return missing
