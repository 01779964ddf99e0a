"""Headline estimates that stay right when the labeler is weak: labeler, judge sample, and both combined.

The headline quantities (tasks, occupations and SOC major groups covered at >= t prompts, and the share of US
work hours on covered tasks) are all functions of one object: the number of prompts that exercise each task,
per benchmark, `T[b, j]`. Three sources of information about `T`:

- the **labeler** labels every prompt; each label carries `p_exercised`, its calibrated probability that the
  judge would say the prompt exercises the task. Labels the labeler did not emit carry nothing: the judge's
  tasks it missed are invisible to it.
- the **judge sample**: a stratified random sample of distinct prompt texts per benchmark (the sampling unit
  is `prompt_hash` within a benchmark, drawn uniformly without replacement; N_b texts, n_b drawn), each labeled
  by the careful judge. A text stands for all `m_h` prompts of its benchmark that share it.
- the **design**: N_b, n_b and the multiplicities m_h, all known.

Estimators (every one produces per-task counts `T[b, j]` first and applies the threshold to them, so the
non-linear threshold counts are computed on a whole count vector, never averaged across tasks):

- `labels_as_truth`: today's numbers, T[b, j] = prompts labeled with j. No interval.
- `labeler`: the labels' own calibrated uncertainty. Each draw keeps every label with probability p_exercised
  (vectorised: per benchmark x task, Binomial(labels, their mean p), see GroupedLabels), recomputes the counts
  and the headline. Value = mean over draws,
  interval = 2.5/97.5 percentiles. It cannot see the judge's tasks the labeler never emits (its recall), so it
  is biased wherever recall is low; it is what a benchmark without a judge sample gets.
- `design`: the judge sample alone, Horvitz-Thompson expansion within each benchmark:
  T^[b, j] = (N_b / n_b) sum_{h in s_b} m_h y[h, j], then thresholded. Interval: stratified bootstrap (texts
  resampled with replacement within each benchmark). A task seen in the sample at all gets about N_b/n_b
  prompts, so at >= 1 it counts only tasks the sample happened to see (a lower bound when many tasks are rare)
  and at >= 5 it can count a task seen once; the bootstrap carries the sampling noise, not that plug-in bias.
- `model_assisted`: the labeler on every prompt, corrected by the judge sample, as multiple imputation of the
  judge's labels on the texts the judge did not read. Each draw (1) resamples the judge sample within each
  benchmark (bootstrap), (2) recalibrates p_exercised per benchmark on it: a_b = (sum_s m y_L + k a) /
  (sum_s m p_L + k) over the labeled pairs of sampled texts (shrunk to the pooled factor a with prior weight
  k), (3) keeps the judge's own labels on sampled texts, (4) on every other text draws each label with
  probability min(1, a_b p), and (5) adds the labels the labeler misses: each unsampled text takes as many
  as a random sampled text of its benchmark (a donor) has, their tasks drawn from a mixture of the benchmark's
  sampled misses, the labeler's mass and tasks of the text's and the benchmark's occupations and major groups
  (weights by leave-one-text-out likelihood; ModelAssisted). Counts of
  the completed data set are thresholded; value = mean over draws, interval = 2.5/97.5 percentiles. For linear
  totals its expectation is that of a ratio-calibrated difference estimator (labeler prediction on all texts +
  expanded judge residual); the imputation lets the threshold act on whole plausible count vectors. A
  benchmark without judge-sampled texts enters pooled scopes through its `labeler` draws (said in `basis`).
- `richness` (>= 1 prompt): the Chao-Lin species estimate of the distinct tasks (and occupations) in every
  text's judge labels, from the sample's incidence frequencies and the sampling fraction (`richness`); a lower
  bound in expectation.
- `bounds` (>= 1 prompt): a species count, how many distinct tasks all prompts exercise, which the imputation
  over-extrapolates; published as "at least about" the richness estimate, a floor (the highest of its lower
  95% limit, what the judge saw and the model-assisted lower bound at >= 5) and a ceiling (the model-assisted
  97.5th percentile).

Modules: `problem` (inputs, scopes, the headline of a count matrix), `draws` (the estimators' count
matrices), `richness` (the species estimate at >= 1), `tables` (points, intervals, the published choice), `published` (the published estimate beside
coverage_headline and in sentences), `mc_error` (Monte Carlo errors),
`checks` (design, reliability, split and simulation checks). No dagster, no I/O: frames in, frames out; every
draw is a numpy bincount over label rows.
"""

from __future__ import annotations

from models.estimates.bench_draws import DrawReport, PooledParameters, draw_record  # noqa: F401
from models.estimates.bench_shares import kept_share_estimates, share_keys  # noqa: F401
from models.estimates.calibration import (  # noqa: F401
    CALIBRATION_SCHEMA,
    Recalibration,
    occupation_probability_calibration,
    text_probability_calibration,
)
from models.estimates.checks import (  # noqa: F401
    RELIABILITY_SCHEMA,
    Relabel,
    as_mapping,
    check_against_truth,
    draw_judge_sample,
    reliability_table,
    rubin_combine,
    sample_design,
    split_sample_problem,
    summarize_checks,
)
from models.estimates.coverage_check import (  # noqa: F401
    COVERAGE_CHECK_SCHEMA,
    SIMULATED_WORLDS,
    CoverageCheck,
    CoverageMap,
    model_population,
    unit_coverage_check,
    unit_coverage_simulation_check,
    with_calibrated_p_covered,
)
from models.estimates.draws import (  # noqa: F401
    UNIFORM_SHARE,
    GroupedLabels,
    ModelAssisted,
    StratifiedBootstrap,
    calibration_factors,
    design_counts,
    labeler_draw,
    labels_as_truth_counts,
)
from models.estimates.judged import (  # noqa: F401
    checks_key,
    judged_benchmarks,
    judged_problem,
    restrict_to_benchmarks,
)
from models.estimates.problem import (  # noqa: F401
    ALL_INDEX,
    ALL_SCOPE,
    BOUNDED_THRESHOLDS,
    BOUNDS,
    CALIBRATION_PRIOR,
    DEFAULT_DRAWS,
    ESTIMATORS,
    HEADLINE_ESTIMATE_SCHEMA,
    QUANTITIES,
    TASK_KEY,
    THRESHOLDS,
    Aggregator,
    Problem,
    Scope,
    build_problem,
    judge_pairs,
    labeler_pairs,
    scopes_for,
    task_counts,
    text_frame,
)
from models.estimates.published import (  # noqa: F401
    PUBLISHED_COLUMNS,
    published_sentences,
    with_published,
)
from models.estimates.reference_sample import (  # noqa: F401
    reference_sample_rows,
    with_out_of_fold_labels,
)
from models.estimates.richness import RICHNESS, richness_estimates  # noqa: F401
from models.estimates.simulation import (  # noqa: F401
    MIRROR_LIKE,
    Simulation,
    judge_sample_statistics,
    simulate,
    simulation_study,
    world_statistics,
)
from models.estimates.tables import (  # noqa: F401
    BOUNDS_BASIS,
    DrawRecord,
    EstimateDraws,
    bounds_interval,
    design_counts_point,
    estimates_frame,
    headline_estimates,
    interval,
    pass_b_frame,
    published_estimator,
    run_estimators,
    with_bounds,
    with_flat_interval_basis,
)
from models.estimates.text_sums import KeptTextSums, text_keys  # noqa: F401
from models.estimates.texts import (  # noqa: F401
    P_MIN,
    PROMPT_OCCUPATION_SCHEMA,
    TextOccupationDraws,
    text_occupation_probabilities,
)
from models.estimates.units import (  # noqa: F401
    SHARE_TABLES,
    UNIT_TABLES,
    UnitDraws,
    benchmark_share_estimates,
    timed_unit_estimates,
    unit_estimates,
    unit_sum_check,
    with_unknown_hours,
)
from models.estimates.weighted_blocks import MIX_STEP  # noqa: F401
