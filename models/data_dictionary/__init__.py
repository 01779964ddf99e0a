"""What every exported column means: table -> column -> (meaning, unit, source).

`DATA_DICTIONARY` documents each column of each exported table; `tests/test_exports.py` asserts that every
column the export writes has an entry here, so a column added upstream fails the test until it is described.
Threshold-suffixed columns (`covered_1`, `covered_5`, ...) are generated for `DOCUMENTED_THRESHOLDS`.

Modules: `common` (sources, units, COMMON), `analysis_tables`, `report_tables`; this module assembles
DATA_DICTIONARY, adds the benchmark-index and headline-estimate entries, and answers `describe`.
It is mostly data: about 250 lines of table descriptions and entries, kept next to the code that reads them.

No dagster here.
"""

from __future__ import annotations

from collections.abc import Iterable

from models.data_dictionary import analysis_tables, onet_lookups, report_tables, unit_estimates
from models.data_dictionary.common import (
    BENCH,
    BOOL,
    CODE,
    CODE_UNIT,
    COMMON,
    COUNT,
    DOCUMENTED_THRESHOLDS,
    PROB,
    REGRESSION,
    SHARE,
    TEXT,
    Entry,
)

DATA_DICTIONARY: dict[str, dict[str, Entry]] = {**analysis_tables.TABLES, **report_tables.TABLES}

TABLE_DESCRIPTIONS: dict[str, str] = {
    "coverage_headline": (
        "Headline numbers: share of tasks, occupations, major groups and work hours covered, "
        "pooled and per benchmark, at each prompt threshold."
    ),
    "task_coverage": "One row per benchmark index and O*NET task: how many benchmark prompts are labeled with "
    "it.",
    "occupation_coverage": "One row per benchmark index and O*NET occupation with tasks: tasks and work hours "
    "covered.",
    "major_group_coverage": "One row per benchmark index and SOC major group (all 22): occupations, employment "
    "and wage bill covered.",
    "task_analysis_frame": "One row per benchmark index and task: coverage, importance, exposure, wage bill, WORKBank ratings and "
    "work hours -- the input of the coverage models.",
    "coverage_regressions": "Logit models of task coverage: coefficients, probability ratios, sample sizes.",
    "coverage_adjusted_probabilities": "Adjusted probabilities of coverage from the logit models, with 95% "
    "intervals.",
    "workbank_coverage": "Coverage of the tasks WORKBank lists, by WORKBank zone (none: listed without a "
    "worker-desire rating), with Wilson intervals.",
    "occupation_model_scores": "Per occupation and AI model: plain and O*NET-weighted mean benchmark scores.",
    "occupation_model_scores_estimated": "Per occupation and AI model: mean score over the prompts estimated to "
    "exercise the occupation, with the labeler's error and the clustered sampling error in its 95% interval.",
    "coverage_sensitivity": "Headline numbers recomputed under alternative analysis choices.",
    "labeler_validation": "Accuracy of each labeler against human labels and the task-level reference, per "
    "benchmark, with 95% intervals (Wilson for shares of hits, bootstrap otherwise).",
    "labeler_agreement": "Agreement between two labelers on the prompts both labeled; no rows when one labeler "
    "labeled every prompt (an offline run), kept so the columns stay the same across releases.",
    "coverage_gaps": "Uncovered tasks ranked by priority: what to benchmark next.",
    "occupation_gaps": "Every occupation, likely covered or not, ranked by expected uncovered work hours with an "
    "interval; without per-unit estimates: occupations with no covered task, by priority.",
    "major_group_gaps": "Per SOC major group, the largest blocks of uncovered work hours.",
    "jobbench_shortlist": "Occupations whose workers want automation, by wage bill, with uncovered tasks.",
    "benchmarks": "The benchmarks included: version, licence, prompts, results and content hash.",
}


# --- benchmark indexes (models/indexes/, data/indexes/<name>.toml) ---------------------------------------
INDEX = "data/indexes/<name>.toml evaluated by models/indexes/ over the benchmarks table and prompt_work"
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
    if "benchmark index" not in TABLE_DESCRIPTIONS.get(_table, "benchmark index"):  # say what a row is
        TABLE_DESCRIPTIONS[_table] += " Computed once per benchmark index (column benchmark_index)."
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
        "SOC major group of the benchmark, by major_group_rule: the index file's [[assign]] entry, else "
        "target_major_group from benchmark.toml, else the largest share of its estimated work "
        "(prompt_occupation_estimates), else (no estimate) the group holding most of its top-ranked raw labels",
        CODE_UNIT,
        INDEX,
    ),
    "major_group_rule": ("the rule that placed the benchmark in major_group (an [[assign]] entry names its "
                         "file, line and reason)", TEXT, INDEX),
    "major_group_share": ("major_group's share of the benchmark's estimated work: texts' estimated occupation "
                          "probabilities x prompts, summed per group; null without an estimate", SHARE, INDEX),
    "index_file": ("the index definition file", TEXT, INDEX),
}
TABLE_DESCRIPTIONS["benchmark_index_membership"] = (
    "Per benchmark index and landed benchmark: included or not, the rule or entry that decided, and the "
    "values read."
)


# --- headline estimates (issue 16, models/estimates/) -------------------------------------------------------
ESTIMATES = "computed: models/estimates/ from prompt_task_labels (p_exercised) and the judge sample"
JUDGE_SAMPLE = ("judge sample: the reference labels (vendored data/reference/, or the landing zone's reference_labels/) "
                "or judge_sample_labels (BENCHMAP_JUDGE_SAMPLE)")
_ESTIMATOR_TEXT = (
    "labels_as_truth (every label counted as certain), labeler (draws of each label with its p_exercised), "
    "design (judge sample alone, N_b/n_b weights), model_assisted (labeler on every prompt corrected and "
    "completed by the judge sample; multiple imputation), model_assisted_pass_b (the same with the development "
    "split's second judge pass: the judge's reproducibility; never published), richness (at >= 1 prompt: the "
    "Chao-Lin species estimate from the judge sample alone, a lower bound in expectation, log-normal 95% "
    "interval; value and lower limit capped at those of any scope holding all the scope's benchmarks; never "
    "published by itself), bounds (at >= 1 prompt, a species count: value = the richness "
    "estimate (at least about), no lower than the model-assisted estimate at >= 5, ci_low = the highest of its "
    "lower 95% limit, what the judge sample saw and the model-assisted lower bound at >= 5, ci_high = the "
    "model-assisted extrapolation's 97.5th percentile, or the richness estimate where that is higher: the "
    "estimators then disagree, and the basis says so)"
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
    "value_mc_se": (
        "Monte Carlo standard error of value: how much it would move with other random draws (same estimator, "
        "another seed); sd/sqrt(draws) for a draw mean, 0 for a deterministic figure (labels_as_truth, design "
        "plug-in, richness); for bounds, that of the figure it was taken from",
        "same as value",
        ESTIMATES,
    ),
    "ci_low_mc_se": (
        "Monte Carlo standard error of ci_low (Maritz-Jarrett standard error of the draws' 2.5th percentile; "
        "design: with the median's in quadrature; bounds: that of the figure it was taken from); empty when no "
        "interval",
        "same as value",
        ESTIMATES,
    ),
    "ci_high_mc_se": (
        "Monte Carlo standard error of ci_high (as ci_low_mc_se, at the 97.5th percentile): large when a few "
        "draws lie far above the rest",
        "same as value",
        ESTIMATES,
    ),
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
    "basis": ("what the estimate rests on and what it cannot see; a row whose interval has no width while the "
              "judge read only some of the texts says that this is the draws agreeing, not certainty", TEXT,
              ESTIMATES),
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
    "n_replications": ("random splits of the judge sample (per check)", COUNT, ESTIMATES),
    "coverage": ("share of splits whose 95% interval (from the estimation part: a half or a fifth, `check`) holds "
                 "the judge-labeled truth of the whole judge sample", SHARE, ESTIMATES),
    "mean_abs_error": ("mean |estimate - truth| over the splits", "same as the quantity", ESTIMATES),
    "mean_error": ("mean estimate - truth over the splits (bias)", "same as the quantity", ESTIMATES),
    "mean_truth": ("mean truth over the splits", "same as the quantity", ESTIMATES),
    "check": ("which check: split_half (estimated from a random half of each benchmark's judge sample) or "
              "split_fifth (from a fifth: closer to the headline, which imputes over 90% of the texts)", TEXT, ESTIMATES),
    "held_out_labels": ("the labels of the split's texts: 'as published', or, with the neighbour step on, "
                        "'relabeled from the estimation part's judged texts alone, with the stack fitted without "
                        "the benchmark' (a held-out text is labeled as a text the judge never read)", TEXT,
                        ESTIMATES),
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
    "df": ("Rubin's degrees of freedom (inf when B = 0; not a whole number)", "degrees of freedom", ESTIMATES),
    "m": ("completed label sets (draws) refitted", COUNT, ESTIMATES),
    "draws": ("which draws: model_assisted imputations of the label set", TEXT, ESTIMATES),
}
DATA_DICTIONARY["coverage_headline"].update({
    "published_estimator": (
        "the estimator of the published headline for this row (headline_estimates.published): where the scope "
        "has judge-sampled texts model_assisted at >= 5 prompts and bounds at >= 1 (published_value = its "
        "species estimate, published_ci_low its floor), labeler otherwise; value/numerator stay the labels as counted",
        TEXT,
        ESTIMATES,
    ),
    "published_value": ("the published estimate, in the unit of value", "same as value", ESTIMATES),
    "published_ci_low": ("lower bound of the published estimate's 95% interval; for bounds (>= 1 prompt) its floor; "
                         "for an uncovered row (occupations, hours, major groups uncovered) the covered figure's "
                         "other end taken from the denominator (1 - its ceiling for hours: at >= 1 prompt the "
                         "ceiling's complement, not a 95% limit)", "same as value", ESTIMATES),
    "published_ci_high": ("upper bound of the published estimate's 95% interval; equal to published_ci_low where "
                          "the draws' 2.5th and 97.5th percentiles are equal, which is the draws agreeing, not "
                          "certainty; the value (their mean) can lie just off that point when a few draws differ "
                          "(headline_estimates' basis)", "same as value", ESTIMATES),
    "published_note": ("where published_value is a larger scope's capped species estimate (a part never covers more "
                       "than the whole), which scope capped it and this row's own estimate (headline_estimates' "
                       "basis); null otherwise", TEXT, ESTIMATES),
})
TABLE_DESCRIPTIONS["headline_estimates"] = (
    "Headline quantities under each estimator (see `estimator`) with 95% intervals; `published` marks the one "
    "the headline quotes."
)
TABLE_DESCRIPTIONS["estimate_design"] = "The judge sample's design per benchmark (N_b, n_b, weights, source)."
TABLE_DESCRIPTIONS["labeler_reliability"] = (
    "Reliability of the labeler's p_exercised against the judge: predicted vs observed per bin, ECE, recall."
)
TABLE_DESCRIPTIONS["estimate_split_check"] = (
    "Split-sample checks of the estimators: estimate from a random half (split_half) or fifth (split_fifth) of "
    "each benchmark's judge sample, compare with the judge's labels of the whole sample."
)
TABLE_DESCRIPTIONS["coverage_regressions_mi"] = (
    "Coverage logits with labeler error: refitted on imputed label sets, combined with Rubin's rules."
)
DATA_DICTIONARY.update(unit_estimates.TABLES)  # per-unit and per-text estimates (issue 25)
TABLE_DESCRIPTIONS.update(unit_estimates.DESCRIPTIONS)
DATA_DICTIONARY.update(onet_lookups.TABLES)  # the O*NET lookups of the codes (models/exports/tables.py REFERENCE)
TABLE_DESCRIPTIONS.update(onet_lookups.DESCRIPTIONS)


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



__all__ = [
    "BENCHMARK_INDEX_ENTRY",
    "COMMON",
    "DATA_DICTIONARY",
    "DOCUMENTED_THRESHOLDS",
    "INDEXED_TABLES",
    "TABLE_DESCRIPTIONS",
    "Entry",
    "describe",
    "undocumented_columns",
]
