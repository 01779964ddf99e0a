"""Dictionary entries of the coverage, regression, score and sensitivity tables (models/coverage/,
models/regression.py, models/scores.py)."""

from __future__ import annotations

from models.data_dictionary.common import (
    BENCH,
    BOOL,
    CODE,
    COMMON,
    COUNT,
    COVERAGE,
    ELOUNDOU,
    HOURS,
    HOURS_UNIT,
    MIT,
    OEWS,
    ONET,
    ONET_RATINGS,
    PEOPLE,
    PROB,
    REGRESSION,
    SCORES,
    SENSITIVITY,
    SHARE,
    TEXT,
    USD,
    WORKBANK,
    Entry,
    entries,
    per_threshold,
)


def _task_coverage() -> dict[str, Entry]:
    return {
        **entries(["onet_soc_code", "task_id"]),
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
            "comma-separated benchmarks with prompts labeled with the task (empty when none)",
            TEXT,
            COVERAGE,
        ),
        **per_threshold({"covered_{t}": ("task has at least {t} labeled prompts", BOOL, COVERAGE)}),
        **entries(["labeler"]),
    }


def _occupation_coverage() -> dict[str, Entry]:
    return {
        **entries(
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
        **per_threshold(
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
        **entries(["major_group_code", "major_group_title", "employment", "wage_bill", "labeler"]),
        "n_occupations": ("O*NET occupations with task statements in the group", COUNT, ONET),
        **per_threshold(
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
        **entries(["threshold", "labeler", "hours_weighting"]),
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
        "detail": ("for major_groups_uncovered: the uncovered groups, '; '-separated ('none' when every group is "
                   "covered); empty for the other metrics", TEXT, COVERAGE),
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
        **entries(
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
            "the task is listed in WORKBank's task data (ratings averaged when rated more than once; a listed task "
            "may have no rating: desire_mean and zone empty)",
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
        **entries(["threshold", "labeler"]),
        "n_tasks": ("WORKBank-listed tasks in the zone (zone none: listed, without a worker-desire rating)", COUNT,
                    WORKBANK),
        "n_covered": ("of those, tasks with at least `threshold` labeled prompts", COUNT, COVERAGE),
        "share": ("n_covered / n_tasks", SHARE, COVERAGE),
        "ci_low": ("Wilson 95% interval, lower bound of share", SHARE, COVERAGE),
        "ci_high": ("Wilson 95% interval, upper bound of share", SHARE, COVERAGE),
    }


def _occupation_model_scores() -> dict[str, Entry]:
    return {
        **entries(["onet_soc_code", "title", "major_group_code", "labeler"]),
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
            "percentile-bootstrap 95% interval of plain_mean, lower bound; null (with the weighted and difference "
            "intervals) when every prompt scored the same, a single prompt included: the spread is not estimable",
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
            "bootstrap 95% interval of difference, lower bound (0 to 0 where the weighting gives every prompt of "
            "the occupation the same weight: the two means are then one by construction, in every resample)",
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
            "('human' vs 'gpt4'), label_depth ('top1', 'top3', 'top5' or 'all': only each prompt's best-ranked "
            "labels counted), labeler (when several labelers labeled the prompts), labeler_same_prompts "
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
        **entries(["labeler"], source=SENSITIVITY),
    }



_ESTIMATED_SCORES = "computed: models/scores_estimated.py from benchmark_results and prompt_occupation_estimates"


def _occupation_model_scores_estimated() -> dict[str, Entry]:
    score = "score (0-1)"
    return {
        **entries(["onet_soc_code"]),
        "model": ("AI model whose benchmark results are summarised", TEXT, BENCH),
        "n_prompts": ("scored prompts whose text has a calibrated probability > 0 of exercising the occupation "
                      "(prompt_occupation_estimates.p_calibrated)", COUNT, _ESTIMATED_SCORES),
        "expected_prompts": ("sum of those calibrated probabilities: the expected number of scored prompts in the "
                             "occupation", COUNT, _ESTIMATED_SCORES),
        "n_benchmarks": ("benchmarks those prompts come from", COUNT, _ESTIMATED_SCORES),
        "cluster_unit": ("the sampling error's clusters: benchmark (2 or more benchmarks), else prompt", TEXT,
                         _ESTIMATED_SCORES),
        "n_clusters": ("clusters of the sampling error", COUNT, _ESTIMATED_SCORES),
        "estimated_mean": ("mean score over the occupation's prompts, each in with its text's calibrated probability "
                           "(multiple imputation: mean over the draws that include at least one prompt)", score,
                           _ESTIMATED_SCORES),
        "ci_low": ("95% interval of estimated_mean (Rubin's rules: labeler error between draws + clustered "
                   "sampling error), lower bound, clipped to 0; null when se is ~0 (every draw saw the same, equal "
                   "scores: the spread is not estimable)", score, _ESTIMATED_SCORES),
        "ci_high": ("the same, upper bound, clipped to 1", score, _ESTIMATED_SCORES),
        "se": ("standard error of estimated_mean (total variance)", score, _ESTIMATED_SCORES),
        "within_var": ("mean over draws of the clustered sampling variance (a single-cluster draw: the other draws' "
                       "per-cluster variance)", "score^2", _ESTIMATED_SCORES),
        "between_var": ("variance of the mean between draws: which prompts exercise the occupation",
                        "score^2", _ESTIMATED_SCORES),
        "fraction_missing_info": ("share of the total variance from the labeler's error; null where ci_low is "
                                  "(no spread: a share of rounding)", SHARE, _ESTIMATED_SCORES),
        "n_draws": ("draws combined: every draw that includes a prompt (a draw of a single cluster takes the other "
                    "draws' per-cluster sampling variance); a pair no draw of which holds two clusters, such as a "
                    "single prompt, has no row", COUNT, _ESTIMATED_SCORES),
        "estimated_mean_mc_se": ("Monte Carlo error of estimated_mean: its standard error over reruns with other "
                                 "random draws, sqrt(between_var / n_draws) (about 0.02 for a pair of few prompts "
                                 "with uncertain occupations; the 95% interval is far wider)", score,
                                 _ESTIMATED_SCORES),
    }


TABLES: dict[str, dict[str, Entry]] = {
    "coverage_headline": _coverage_headline(),
    "task_coverage": _task_coverage(),
    "occupation_coverage": _occupation_coverage(),
    "major_group_coverage": _major_group_coverage(),
    "task_analysis_frame": _task_analysis_frame(),
    "coverage_regressions": _coverage_regressions(),
    "coverage_adjusted_probabilities": _coverage_adjusted_probabilities(),
    "workbank_coverage": _workbank_coverage(),
    "occupation_model_scores": _occupation_model_scores(),
    "occupation_model_scores_estimated": _occupation_model_scores_estimated(),
    "coverage_sensitivity": _coverage_sensitivity(),
}
