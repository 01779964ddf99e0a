"""What the headline step (`headline_estimates` in assets/estimates.py) writes: each output table and what it
holds, as the Dagster UI shows it. Kept apart from the step, which reads like a table of contents without them."""

from dagster import AssetOut

from assets import TABLE_KINDS

COVERAGE_HEADLINE_DESCRIPTION = (
    "Per threshold, benchmark index (scope 'all' = the index's members pooled) and benchmark (index `all`): the "
    "published estimates policy reports quote (published_value / published_ci_low / published_ci_high, and "
    "published_note where the value is a larger scope's capped species estimate, from "
    "headline_estimates of the same step, as shares of 18,796 tasks, 923 occupations and US work hours, and as "
    "the count of major groups with no covered occupation) beside the labels as counted (value, numerator, "
    "denominator: uncorrected for the labeler's errors, not for quoting). The same published figures as counts, "
    "with every estimator behind them: headline_estimates."
)


UNIT_OUTS: dict[str, AssetOut] = {
    "task_estimates": AssetOut(
        kinds=TABLE_KINDS,
        description="Per benchmark index, O*NET task and threshold (1, 5): p_covered (share of the headline's "
        "model-assisted draws with the task at or above the threshold), expected prompts with a 2.5-97.5 "
        "interval, the labels-as-counted count and the judged texts that exercise it. Sums of p_covered are the "
        "headline's model-assisted means (asset check unit_estimates_sum_to_headline): the published figure at "
        ">= 5 prompts; at >= 1 the imputation's mean count, 1.1-2 times the published bounds' floor (their ceiling "
        "is at least its 97.5th percentile). p_covered_calibrated beside it: a unit's chance read through a map "
        "learnt on the split check (it does not sum to the headline; read a unit in 0.1-0.9 as unsure). Filter "
        "on benchmark_index before summing.",
    ),
    "occupation_estimates": AssetOut(
        kinds=TABLE_KINDS,
        description="As task_estimates (p_covered, p_covered_calibrated, expected prompts) per occupation: covered "
        "when its most-exercised task is (prompts = that task's prompts), plus the expected annual hours on its "
        "uncovered tasks with an interval across draws.",
    ),
    "major_group_estimates": AssetOut(
        kinds=TABLE_KINDS,
        description="As occupation_estimates (p_covered, p_covered_calibrated, expected prompts, expected "
        "uncovered hours) per SOC major group: its most-exercised occupation decides.",
    ),
    "benchmark_occupation_estimates": AssetOut(
        kinds=TABLE_KINDS,
        description="Each benchmark's estimated occupation shares of its prompt x task labels across the "
        "headline's draws (mean and 2.5-97.5), occupations with a mean share >= 0.001.",
    ),
    "benchmark_major_group_estimates": AssetOut(
        kinds=TABLE_KINDS,
        description="Each benchmark's estimated SOC major group shares of its prompt x task labels across the "
        "headline's draws (mean and 2.5-97.5), all 22 groups, rank 1 = the largest.",
    ),
    "occupation_probability_calibration": AssetOut(
        kinds=TABLE_KINDS,
        description="Per-text occupation probabilities against the judge on held-out judged texts (five folds "
        "within each benchmark; leave one benchmark out): top-1 accuracy, Brier score, ECE (pairs with p >= "
        "0.05, ten bins) and the reliability bins for the share of draws (predictor model) and its recalibrated "
        "value (model_recalibrated, the p_calibrated the scores read), beside the labeler's own labels read as "
        "0/1 (raw_labels).",
    ),
    "unit_coverage_simulation_check": AssetOut(
        kinds=TABLE_KINDS,
        description="p_covered against a known truth: units binned by p_covered, the share truly covered per "
        "bin, in split samples of the judge sample (split_half, split_fifth: the judged texts are the population), "
        "in simulated populations of two worlds (simulated, simulated_mirror_like) and in populations drawn from "
        "the estimator's own fitted model (model: issue 25's check, its bins not yet within 0.05); predictor "
        "p_covered and, where a map applies, p_covered_calibrated.",
    ),
    "prompt_occupation_estimates": AssetOut(
        kinds=TABLE_KINDS,
        description="Per prompt text and occupation: p, the probability (expected share of the headline's draws) "
        "that the text exercises the occupation, and p_calibrated (p through a logistic map fitted on the judge "
        "sample's held-out texts, see occupation_probability_calibration); judged texts carry their judge labels "
        "(p = 1); stored where p >= 0.01.",
    ),
}


HEADLINE_OUTS: dict[str, AssetOut] = {
    "coverage_headline": AssetOut(kinds=TABLE_KINDS, group_name="analysis",
                                  description=COVERAGE_HEADLINE_DESCRIPTION),
    "headline_estimates": AssetOut(
        kinds=TABLE_KINDS,
        description="Every headline quantity (tasks, occupations, major groups covered and share of US work "
        "hours on covered tasks, at >= 1 and >= 5 prompts) per benchmark index and scope, under every "
        "estimator (labels_as_truth, labeler, design, model_assisted, richness, bounds, model_assisted_pass_b) "
        "with 95% intervals. Quote only rows with `published` = true: at >= 5 prompts the model_assisted "
        "row; at >= 1 the bounds row (value: a floor, \"at least about\"; ci_low: its lower limit; ci_high: "
        "the ceiling). The model_assisted row at >= 1 is not published: it extrapolates to the texts no judge "
        "read and comes out 1.1-2 times the floor; `basis` says why. Filter on benchmark_index before summing. "
        "The same published figures, as shares and uncovered major groups beside the labels as counted: "
        "coverage_headline.",
    ),
    "estimate_design": AssetOut(
        kinds=TABLE_KINDS,
        description="The judge sample the estimates used, per benchmark: source (judge_sample, reference, "
        "or none: no judged texts), distinct texts N_b, prompts, sampled texts n_b, fraction, weight N_b/n_b.",
    ),
    "labeler_reliability": AssetOut(
        kinds=TABLE_KINDS,
        description="Reliability of the labeler's p_exercised against the judge: per probability bin the mean "
        "predicted and the observed share the judge confirms (Wilson 95% CI), ECE and recall, pooled and "
        "per benchmark with a sample.",
    ),
    "estimate_split_check": AssetOut(
        kinds=TABLE_KINDS,
        description="Split-sample check: estimate from half (split_half) and from a fifth (split_fifth, the "
        "split the published p_covered map is fitted on) of each benchmark's judge sample, compare with the "
        "judge-labeled sub-population; interval coverage and errors over repeated splits, per estimator.",
    ),
    "headline_count_draws": AssetOut(
        kinds=TABLE_KINDS,
        description="Internal (not exported): the pooled per-task prompt counts of the first mi_draws "
        "model-assisted draws (draw, task, prompts; tasks with none left out), the label sets "
        "coverage_regressions_mi refits the logits on.",
    ),
    **UNIT_OUTS,
}
