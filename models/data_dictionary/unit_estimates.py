"""Dictionary entries of the per-unit and per-text estimates and their calibration (models/estimates/units.py,
texts.py, calibration.py; issue 25)."""

from __future__ import annotations

from models.data_dictionary.common import (
    BOOL,
    COMMON,
    COUNT,
    HOURS_UNIT,
    PROB,
    SHARE,
    SHARE_DIFFERENCE,
    TEXT,
    Entry,
)

ESTIMATES = "computed: models/estimates/ from prompt_task_labels (p_exercised) and the judge sample"
DRAWS = "the headline's model-assisted draws (headline_estimates, same seed)"
INDEX: Entry = ("benchmark index the row is computed for ('all' = every landed benchmark)", TEXT, ESTIMATES)
# what an interval of no width over the draws means (headline_estimates' basis says the same per row)
AGREEING = ("the draws agreeing, not certainty: a judge sample of a few dozen texts per benchmark cannot rule out a "
            "unit it never saw")


def _unit(unit: str, prompts: str) -> dict[str, Entry]:
    hours_of = "task" if unit == "task" else f"{unit}'s tasks"
    return {
        "benchmark_index": INDEX,
        "threshold": COMMON["threshold"],
        "p_covered": (
            f"probability the {unit} is covered at the threshold: share of {DRAWS} in which {prompts} "
            "reach the threshold; summed over the units of an index and threshold it is the model-assisted "
            "headline mean (at >= 1 prompt the imputation's mean count: the published figure there is the bounds, "
            "whose ceiling is at least that count's 97.5th percentile)", PROB, ESTIMATES),
        "p_covered_calibrated": (
            "p_covered through a logistic map (log-odds of p_covered, its square, p = 1) per unit level and "
            "threshold fitted on the split_fifth check of unit_coverage_simulation_check (the judged texts as a population, a fifth as the sample), "
            "non-decreasing in p_covered and read between the check's steps of 1/30 (linearly to 0 below 1/30; "
            "29/30's value up to just below 1; at >= 1 raised to the unit's value at >= 5 where the two maps "
            "cross, since a unit with 5 prompts has 1); equal to p_covered for major groups (too few to fit a map on): "
            "the share of units truly covered at that p_covered where the judged texts are the population; it "
            "does not sum to the headline (p_covered does). Not shown to carry to the headline's scale (the judge "
            "reads ~8% of the texts, in split_fifth 20%): in both simulated worlds, where the judge reads ~6%, it is "
            "less well calibrated than p_covered for tasks and occupations (unit_coverage_simulation_check, "
            "docs/estimates.md); read a unit's middle band (0.1-0.9) as unsure, not as a chance", PROB, ESTIMATES),
        "prompts_mean": (f"{prompts}: mean over the draws", COUNT, ESTIMATES),
        "prompts_low": (f"{prompts}: 2.5th percentile over the draws (when 97.5% or more of the draws agree, "
                        "both ends equal that value and prompts_mean may lie outside them; most often 0 for a unit "
                        f"no draw reaches: {AGREEING})", COUNT, ESTIMATES),
        "prompts_high": (f"{prompts}: 97.5th percentile over the draws, interpolated between the two nearest "
                         "draws (numpy's linear rule), so it can be a fraction such as 0.025 when a few draws give "
                         "1 and the rest 0; prompts_mean can then exceed it", COUNT, ESTIMATES),
        "labels_count": (f"{prompts} with every published label counted as true (the labels as counted, as the "
                         "coverage tables count them)", COUNT, ESTIMATES),
        "judged_texts": (f"judge-sampled texts of the index whose judge labels exercise the {unit}", COUNT,
                         ESTIMATES),
        "hours": (f"annual US work hours on the {hours_of} (task_hours); null for a task or occupation of an "
                  "occupation without hours data (no OEWS hours), which a major group's sum leaves out",
                  HOURS_UNIT, ESTIMATES),
        "p_covered_mc_se": (
            "Monte Carlo standard error of p_covered: sqrt(p (1 - p) / (draws - 1)), binomial over the draws "
            "(independent given the data); how far a rerun with other random draws would move it. 0 when p_covered "
            "is 0 or 1 (the unseen rate may still be up to about 3 / draws)", PROB, ESTIMATES),
        "prompts_mean_mc_se": ("Monte Carlo standard error of prompts_mean: sd over the draws / sqrt(draws)", COUNT,
                               ESTIMATES),
        "prompts_low_mc_se": (
            "Monte Carlo standard error of prompts_low: the exact bootstrap (Maritz-Jarrett) error of the "
            "draws' order statistic at the 2.5th percentile; 0 when the draws agree there", COUNT, ESTIMATES),
        "prompts_high_mc_se": (
            "Monte Carlo standard error of prompts_high, as prompts_low_mc_se at the 97.5th percentile", COUNT,
            ESTIMATES),
    }


def _uncovered(unit: str) -> dict[str, Entry]:
    what = f"annual hours on the {unit}'s tasks below the threshold in a draw (null where hours is)"
    return {
        "uncovered_hours_mean": (f"{what}: mean over the draws (= sum over its tasks of hours x (1 - p_covered))",
                                 HOURS_UNIT, ESTIMATES),
        "uncovered_hours_low": (f"{what}: 2.5th percentile over the draws (equal to the high end where the "
                                f"draws agree, e.g. all of its hours where no draw covers a task of it: {AGREEING}). "
                                "A percentile interval of skewed draws: the mean can lie just outside it when nearly "
                                "every draw agrees and a few differ far (an audit found 2 major groups so at >= 5)",
                                HOURS_UNIT, ESTIMATES),
        "uncovered_hours_high": (f"{what}: 97.5th percentile over the draws", HOURS_UNIT, ESTIMATES),
    }


def _shares(unit: str) -> dict[str, Entry]:
    what = f"the {unit}'s share of the benchmark's prompt x task labels in a draw"
    return {
        "benchmark": COMMON["benchmark"],
        "share_mean": (f"{what}: mean over {DRAWS} (a few draws far from the rest can put it just outside "
                       "share_low-share_high, which are percentiles)", SHARE, ESTIMATES),
        "share_low": (f"{what}: 2.5th percentile (equal to share_high where the draws agree: {AGREEING})", SHARE,
                      ESTIMATES),
        "share_high": (f"{what}: 97.5th percentile", SHARE, ESTIMATES),
        "rank": ("rank of the mean share within the benchmark (1 = largest; null for a zero share)", "rank",
                 ESTIMATES),
    }


TABLES: dict[str, dict[str, Entry]] = {
    "task_estimates": {**_unit("task", "prompts exercising the task"),
                       "onet_soc_code": COMMON["onet_soc_code"], "task_id": COMMON["task_id"]},
    "occupation_estimates": {**_unit("occupation", "prompts on the occupation's most-exercised task"),
                             **_uncovered("occupation"), "onet_soc_code": COMMON["onet_soc_code"]},
    "major_group_estimates": {**_unit("major group", "prompts on the group's most-exercised task"),
                              **_uncovered("major group"), "major_group_code": COMMON["major_group_code"]},
    "benchmark_occupation_estimates": {**_shares("occupation"), "onet_soc_code": COMMON["onet_soc_code"]},
    "benchmark_major_group_estimates": {**_shares("major group"), "major_group_code": COMMON["major_group_code"]},
    "prompt_occupation_estimates": {
        "prompt_hash": ("hash of the prompt text (the texts shared by several prompts of a benchmark are one)",
                        TEXT, ESTIMATES),
        "benchmark": COMMON["benchmark"],
        "onet_soc_code": COMMON["onet_soc_code"],
        "p": ("probability the text exercises the occupation: the expected share of the headline's draws in "
              "which it does (rows with p >= 0.01); 1 for a judged text's own judge occupations", PROB, ESTIMATES),
        "p_calibrated": ("p through a logistic recalibration (log-odds of p, whether the text has a label in the "
                         "occupation) fitted on the judge sample's held-out texts (within-benchmark folds for "
                         "benchmarks with a sample, leave one benchmark out for the others); = p for judged texts",
                         PROB, ESTIMATES),
        "judged": ("the judge read this text: p is its judge label", BOOL, ESTIMATES),
    },
    "occupation_probability_calibration": {
        "evaluation": ("within_benchmark (five folds of each benchmark's judged texts held out in turn) or "
                       "leave_one_benchmark_out (a benchmark's whole sample held out, its texts labeled as a "
                       "benchmark without judged texts is: the selector's labels, fitted without it)", TEXT, ESTIMATES),
        "predictor": ("model (the per-text p: share of draws), model_recalibrated (p through the logistic map "
                      "fitted on the other benchmarks' held-out texts: p_calibrated) or raw_labels (the labeler's "
                      "occupations as 0/1)", TEXT, ESTIMATES),
        "bin": ("probability bin of width 0.1 (0 = lowest); null on the summary row", "rank", ESTIMATES),
        "p_low": ("lower edge of the bin (summary row: 0.05, the ECE's floor)", PROB, ESTIMATES),
        "p_high": ("upper edge of the bin", PROB, ESTIMATES),
        "n_pairs": ("(text, occupation) pairs with p >= 0.05 in the bin (summary: in all bins)", COUNT, ESTIMATES),
        "mean_p": ("mean predicted p of the bin", PROB, ESTIMATES),
        "observed": ("share of the bin's pairs the judge gives", SHARE, ESTIMATES),
        "n_texts": ("held-out judged texts scored", COUNT, ESTIMATES),
        "top1_accuracy": ("share of judged texts with an occupation whose most probable occupation is one the "
                          "judge gives", SHARE, ESTIMATES),
        "brier": ("mean squared error of p against the judge over the pairs either predictor or the judge names",
                  "squared probability", ESTIMATES),
        "ece": ("expected calibration error: sum over bins of n_bin / n x |mean p - observed| (pairs with p >= "
                "0.05)", PROB, ESTIMATES),
        "top1_accuracy_se": ("Monte Carlo standard error of top1_accuracy: jackknife over four groups of the draws "
                             "(summary rows)", SHARE, ESTIMATES),
        "brier_se": ("Monte Carlo standard error of brier (jackknife over groups of the draws)",
                     "squared probability", ESTIMATES),
        "ece_se": ("Monte Carlo standard error of ece (jackknife over groups of the draws)", PROB, ESTIMATES),
        "n_draws": ("model-assisted draw parameters per held-out fit", COUNT, ESTIMATES),
    },
    "unit_coverage_simulation_check": {
        "check": ("split_half / split_fifth (the judged texts are the population, half / a fifth of each "
                  "benchmark's the sample, the rest imputed), simulated (populations drawn from "
                  "models.estimates.simulation.simulate; pools spread over most major groups), "
                  "simulated_mirror_like (its MIRROR_LIKE world: a judge sample with the mirror's statistics) "
                  "or model (populations drawn from the estimator's own fitted model, each with a new judge sample: the "
                  "issue's simulation check; p_covered only)",
                  TEXT, ESTIMATES),
        "predictor": ("p_covered (the share of draws) or p_covered_calibrated (through the map; on split_fifth "
                      "cross-fitted by folds of units, on split_half and the simulated worlds the map fitted on "
                      "split_fifth, as published)", TEXT, ESTIMATES),
        "unit": ("task, occupation or major_group", TEXT, ESTIMATES),
        "threshold": COMMON["threshold"],
        "bin": ("bin of width 0.1 of the predictor (0 = lowest; units with p_covered = 0 left out)", "rank",
                ESTIMATES),
        "p_low": ("lower edge of the bin", PROB, ESTIMATES),
        "p_high": ("upper edge of the bin", PROB, ESTIMATES),
        "n_units": ("units in the bin, over all replications", COUNT, ESTIMATES),
        "mean_p": ("mean p_covered of the bin", PROB, ESTIMATES),
        "share_covered": ("share of the bin's units covered in the known truth", SHARE, ESTIMATES),
        "difference": ("share_covered - mean_p", SHARE_DIFFERENCE, ESTIMATES),
        "difference_se": ("standard error of difference across the replications (the check's own Monte Carlo "
                          "noise; null with one replication)", SHARE_DIFFERENCE, ESTIMATES),
        "difference_se_units": ("standard error of difference with the units as the clusters (a unit sits in "
                                "the same bin in many replications, so a thin bin's few units are noise too: "
                                "read a bin against the larger of the two; null when the bin holds one distinct "
                                "unit: n_units counts a unit once per replication)", SHARE_DIFFERENCE, ESTIMATES),
        "replications": ("populations (splits or simulations) pooled", COUNT, ESTIMATES),
    },
}

DESCRIPTIONS: dict[str, str] = {
    "task_estimates": "Per index, task and threshold: probability covered, expected prompts with interval, the "
    "labels as counted and the judged texts (from the headline's draws).",
    "occupation_estimates": "Per index, occupation and threshold: probability covered, expected prompts, "
    "expected uncovered work hours with intervals.",
    "major_group_estimates": "Per index, SOC major group and threshold: probability covered, expected prompts, "
    "expected uncovered work hours.",
    "benchmark_occupation_estimates": "Each benchmark's estimated occupation shares of its labels, with "
    "intervals.",
    "benchmark_major_group_estimates": "Each benchmark's estimated SOC major group shares of its labels, with "
    "intervals.",
    "prompt_occupation_estimates": "Per prompt text: the probability it exercises each occupation (p >= 0.01).",
    "occupation_probability_calibration": "Per-text occupation probabilities against the judge on held-out "
    "texts: top-1, Brier, ECE and reliability bins, beside the raw labels.",
    "unit_coverage_simulation_check": "p_covered against a known truth: share covered per probability bin.",
}
