"""From draws to the published tables: every estimator's point and interval per scope, the published choice
(model-assisted at >= 5 prompts, bounds at >= 1, labeler without a judge sample), and the published estimate
beside coverage_headline and in sentences (models/estimates/published.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from models.estimates.draws import (
    GroupedLabels,
    ModelAssisted,
    StratifiedBootstrap,
    design_counts,
    labeler_draw,
    labels_as_truth_counts,
    one_blas_thread,
)
from models.estimates.mc_error import MC_COLUMNS, bounds_mc_se, interval_mc_se
from models.estimates.problem import (
    BOUNDED_THRESHOLDS,
    BOUNDS,
    DEFAULT_DRAWS,
    ESTIMATORS,
    HEADLINE_ESTIMATE_SCHEMA,
    QUANTITIES,
    THRESHOLDS,
    Aggregator,
    Problem,
    Scope,
    build_problem,
    scopes_for,
)
from models.estimates.richness import BY_TASKS, RICHNESS, richness_with_caps
from models.estimates.texts import TextOccupationDraws
from models.estimates.units import UnitDraws

# --- putting it together ---------------------------------------------------------------------------------------


@dataclass
class EstimateDraws:
    """Point values and draws of every estimator: arrays (scopes, quantities, thresholds) and
    (draws, scopes, quantities, thresholds)."""

    point: dict[str, np.ndarray]
    draws: dict[str, np.ndarray]
    count_draws: dict[str, list[np.ndarray]]  # pooled ('all') per-task count vectors per draw, for the MI models


class DrawRecord:
    """The count matrices (benchmarks x tasks) of one run_estimators call, per estimator and draw, kept sparse
    (flat positions and values; float32 where that is exact, else float64), and the model-assisted draws'
    parameters (bootstrap, calibration factors, mixture). A second run_estimators over the same problem, seed
    and draws can replay them (`replay=`) instead of drawing again: the draws do not depend on the scopes, so
    the benchmark shares (index membership) and the per-index headline share one set of draws, bit for bit."""

    def __init__(self, shape: tuple[int, int], seed: int, n_draws: int) -> None:
        self.shape = shape
        self.seed = seed
        self.n_draws = n_draws
        self.entries: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self.parameters: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        # what the kept draws depend on (bench_draws.draw_record): per benchmark, and the pooled parameters
        self.bench_keys: list[str] | None = None
        self.pooled_key: str | None = None

    def add(self, estimator: str, counts: np.ndarray) -> None:
        flat = counts.ravel()
        where = np.flatnonzero(flat != 0)  # a boolean's nonzero is ~4x faster than a float's
        values = flat[where]
        narrow = values.astype(np.float32)
        self.entries.setdefault(estimator, []).append(
            (where.astype(np.int32), narrow if np.array_equal(narrow, values) else values))

    def sparse(self, estimator: str, draw: int) -> tuple[np.ndarray, np.ndarray]:
        """The draw's nonzero flat positions (row-major, benchmarks x tasks) and their values."""
        return self.entries[estimator][draw]

    def counts(self, estimator: str, draw: int) -> np.ndarray:
        where, values = self.entries[estimator][draw]
        flat = np.zeros(self.shape[0] * self.shape[1])
        flat[where] = values
        return flat.reshape(self.shape)

    def covers(self, estimators: Sequence[str], seed: int, n_draws: int, shape: tuple[int, int]) -> bool:
        """Whether this record can stand in for the draws of run_estimators(estimators, seed, n_draws)."""
        drawn = [e for e in estimators if e != "labels_as_truth"]
        return (self.seed == seed and self.n_draws == n_draws and self.shape == shape
                and all(len(self.entries.get(e, [])) == n_draws for e in drawn)
                and ("model_assisted" not in drawn or len(self.parameters) == n_draws))

    @property
    def nbytes(self) -> int:
        return sum(w.nbytes + v.nbytes for rows in self.entries.values() for w, v in rows) + sum(
            sum(a.nbytes for a in p) for p in self.parameters)


def run_estimators(
    problem: Problem,
    scopes: Sequence[Scope],
    *,
    thresholds: Sequence[int] = THRESHOLDS,
    n_draws: int = DEFAULT_DRAWS,
    seed: int = 16,
    keep_counts: int = 0,
    estimators: Sequence[str] = ESTIMATORS,
    unit_draws: UnitDraws | None = None,
    record: DrawRecord | None = None,
    replay: DrawRecord | None = None,
) -> EstimateDraws:
    """Every estimator's point value and `n_draws` draws for every scope. `keep_counts` keeps that many
    pooled per-task count vectors of the labeler and model-assisted draws (for refitting regressions).
    `unit_draws` is handed every model-assisted count matrix (the per-unit and per-text estimates of the same
    draws; models.estimates.units); it draws no random numbers, so the headline is the same with or without.
    `record`: a DrawRecord that keeps every draw's counts; `replay`: a DrawRecord of an earlier call with the same
    problem, seed and n_draws whose counts are used instead of drawing (the result is the same)."""
    # one BLAS thread (the draws' products are small: a second thread's start-up and spin cost 20x the product)
    with one_blas_thread():
        return _run_estimators(problem, scopes, thresholds, n_draws, seed, keep_counts, estimators, unit_draws,
                               record, replay)


def _run_estimators(problem: Problem, scopes: Sequence[Scope], thresholds: Sequence[int], n_draws: int, seed: int,
                    keep_counts: int, estimators: Sequence[str], unit_draws: UnitDraws | None,
                    record: DrawRecord | None, replay: DrawRecord | None) -> EstimateDraws:
    if replay is not None and not replay.covers(estimators, seed, n_draws, (problem.n_bench, problem.n_tasks)):
        raise ValueError("replay: the recorded draws are not those of this call (estimators, seed, draws, shape)")
    agg = Aggregator(problem, scopes, thresholds)
    rng = np.random.default_rng(seed)
    point: dict[str, np.ndarray] = {}
    draws: dict[str, np.ndarray] = {}
    kept: dict[str, list[np.ndarray]] = {"labeler": [], "model_assisted": []}
    if "labels_as_truth" in estimators:
        point["labels_as_truth"] = agg.headline(labels_as_truth_counts(problem))
    texts = unit_draws is not None and unit_draws.with_texts
    # a replay draws nothing: the ModelAssisted only feeds the per-text estimates, the samplers are not needed
    assisted = ModelAssisted(problem) if "model_assisted" in estimators and (replay is None or texts) else None
    if unit_draws is not None and texts and assisted is not None:
        unit_draws.text_estimates = TextOccupationDraws(assisted, unit_draws.text_subset)
    drawing = replay is None
    every_label = GroupedLabels(problem, np.arange(problem.lab_p.shape[0])) if drawing else None
    bootstrap = StratifiedBootstrap(problem) if drawing else None
    # benchmarks without judge-sampled texts enter the model-assisted draws through their labeler draws (of their
    # own label rows only: a draw of every label to keep a few benchmarks' rows cost a labeler draw per draw)
    fill = np.bincount(problem.text_bench, weights=problem.text_sampled, minlength=problem.n_bench) == 0
    fill_labels = GroupedLabels(problem, np.flatnonzero(fill[problem.text_bench[problem.lab_text]])) \
        if fill.any() and drawing else None
    for name in ("labeler", "design", "model_assisted"):
        if name not in estimators:
            continue
        stack = np.empty((n_draws, len(agg.scopes), len(QUANTITIES), len(agg.thresholds)))
        for d in range(n_draws):
            if replay is not None and record is None and not (name in kept and d < keep_counts):
                # a replayed draw from its ~3k entries: the headline and the per-unit sums need no dense matrix
                where, values = replay.sparse(name, d)
                if name == "model_assisted" and assisted is not None:
                    assisted.last_parameters = replay.parameters[d]
                if name == "model_assisted" and unit_draws is not None and unit_draws.with_shares:
                    unit_draws.add(replay.counts(name, d), assisted)  # the shares' reduceat: the dense matrix
                elif name == "model_assisted" and unit_draws is not None:
                    unit_draws.add_sparse(where, values, assisted)
                stack[d] = agg.headline_sparse(where, values)
                continue
            if replay is not None:
                counts = replay.counts(name, d)
                if name == "model_assisted" and assisted is not None:
                    assisted.last_parameters = replay.parameters[d]
            elif name == "labeler":
                counts = labeler_draw(problem, rng, every_label)
            elif name == "design":
                counts = design_counts(problem, rng, bootstrap)
            else:
                assert assisted is not None
                counts = assisted.draw(rng)
                if fill_labels is not None:
                    counts[fill] = fill_labels.draw(rng)[fill]
            if record is not None:
                record.add(name, counts)
                if name == "model_assisted" and replay is not None:
                    record.parameters.append(replay.parameters[d])
                elif name == "model_assisted" and assisted is not None:
                    record.parameters.append(assisted.last_parameters)
            if name == "model_assisted" and unit_draws is not None:
                unit_draws.add(counts, assisted)
            stack[d] = agg.headline(counts)
            if name in kept and d < keep_counts:
                kept[name].append(counts.sum(axis=0))
        draws[name] = stack
        point[name] = design_counts_point(problem, agg) if name == "design" else stack.mean(axis=0)
    return EstimateDraws(point, draws, kept)


def design_counts_point(problem: Problem, agg: Aggregator) -> np.ndarray:
    return agg.headline(design_counts(problem))


def interval(estimator: str, point: float, draws: np.ndarray) -> tuple[float, float]:
    """95% interval from the draws. Draw-based estimators (labeler, model_assisted) report the mean of their
    draws, so the 2.5/97.5 percentiles are used as they are. The design estimator reports the plug-in of the
    whole sample, and a bootstrap replicate holds only ~63% distinct texts, so its distinct-task counts run
    low: its percentile interval is recentred on the plug-in (point + q - median of the replicates), keeping
    the bootstrap's spread without its loss of distinct texts (the plug-in's own bias from unseen tasks stays,
    see the module docstring)."""
    low, high = (float(v) for v in np.quantile(draws, [0.025, 0.975]))
    if estimator == "design":
        shift = point - float(np.median(draws))
        low, high = max(0.0, low + shift), high + shift
    return low, high


def _basis(estimator: str, scope: Scope, problem: Problem, n_draws: int) -> str:
    sampled = [problem.n_sampled(b) for b in scope.members]
    n_with = sum(1 for s in sampled if s > 0)
    n_members = len(scope.members)
    if estimator == "labels_as_truth":
        return "every label counted as certain (the published labels as they are); no interval"
    if estimator == "labeler":
        return (
            f"labeler alone: {n_draws} draws keeping each label with its p_exercised; percentile interval; "
            "blind to the judge's tasks the labeler never emits"
        )
    if estimator == "design":
        missing = "" if n_with == n_members else f"; {n_members - n_with} member benchmark(s) without a sample count 0"
        return (
            f"judge sample alone: {sum(sampled)} sampled texts weighted N_b/n_b within benchmark; "
            f"stratified bootstrap ({n_draws} replicates){missing}"
        )
    fill = "" if n_with == n_members else (
        f"; {n_members - n_with} of {n_members} benchmarks have no judge sample and enter through the labeler's "
        "calibrated draws"
    )
    return (
        f"labeler on every prompt, recalibrated and completed by the judge's labels of {sum(sampled)} sampled "
        f"texts ({n_draws} imputations with a stratified bootstrap of the sample){fill}"
    )


def published_estimator(scope: Scope, problem: Problem, threshold: int = 5) -> str:
    """model_assisted where a member benchmark has judge-sampled texts (`bounds` at the species-count
    thresholds, BOUNDED_THRESHOLDS), labeler otherwise."""
    if not any(problem.n_sampled(b) > 0 for b in scope.members):
        return "labeler"
    return BOUNDS if threshold in BOUNDED_THRESHOLDS else "model_assisted"


def bounds_interval(floor: float, design_high: float | None, assisted_high: float | None,
                    richness: float | None = None, richness_low: float | None = None,
                    next_value: float | None = None) -> tuple[float, float, float]:
    """(value, ci_low, ci_high) of `bounds`. ci_low: the higher of `floor` (certain: what the judge sample saw,
    or the lower bound at the next threshold) and the species estimate's lower 95% limit; value: the species
    estimate itself when higher ("at least about"), and no lower than the model-assisted estimate at the next
    threshold (covered at >= 1 holds covered at >= 5; an audit: tau2_bench read 1.17% of hours at >= 1 beside
    1.43% at >= 5); ci_high: the higher of the model-assisted and design 97.5th percentiles."""
    low = max(floor, richness_low if richness_low is not None else floor)
    value = max(low, richness if richness is not None else low, next_value if next_value is not None else low)
    highs = [h for h in (design_high, assisted_high) if h is not None]
    return value, low, max([value, *highs])


BOUNDS_BASIS = (
    "species count: at least about the Chao-Lin species estimate from the judge sample (value; a lower bound in "
    "expectation; no lower than the model-assisted estimate at >= 5 prompts), no lower than its 95% lower limit, "
    "what the judge sample itself saw, or the lower 95% bound at >= 5 prompts (ci_low); at most the "
    "model-assisted extrapolation's 97.5th percentile (ci_high)"
)


def bounds_basis(value: float, design_high: float | None, assisted_high: float | None) -> str:
    """BOUNDS_BASIS, saying so where the species estimate lies above both 97.5th percentiles: the estimators
    disagree, and ci_high is the species estimate, not an extrapolation's upper end (a row reading "at least about
    249, up to about 249" is that disagreement, not precision)."""
    highs = [h for h in (design_high, assisted_high) if h is not None and math.isfinite(h)]
    if not highs or value <= max(highs):
        return BOUNDS_BASIS
    return (f"{BOUNDS_BASIS}; here the species estimate lies above the model-assisted and design 97.5th percentiles "
            f"(up to {max(highs):.4g}): the estimators disagree, and ci_high is raised to the species estimate")


CAPPED = "capped at the value of"  # how a capped richness or bounds row's basis says so (the summary reads it)


OWN_ESTIMATE = "this scope's own estimate was higher"  # then ": <value>" when known (the summary reads it)


def capped_note(scopes: Sequence[Scope], outer: int, own: str | None = None) -> str:
    """The basis' note of a species estimate capped at a larger scope's value (`outer`, -1: none); `own`: the
    scope's own estimate, as printed."""
    if outer == BY_TASKS:
        return (f"; {CAPPED} the tasks' species estimate (every covered occupation has a covered task): "
                f"{OWN_ESTIMATE}" + (f": {own}" if own else ""))
    if outer < 0:
        return ""
    scope = scopes[outer]
    where = f"index {scope.benchmark_index}" + ("" if scope.scope == "all" else f", scope {scope.scope}")
    return (f"; {CAPPED} {where} (its judge-sampled benchmarks include all of these, and a part never covers "
            f"more than the whole): {OWN_ESTIMATE}" + (f": {own}" if own else ""))


def printed_estimate(quantity: str, value: float) -> str:
    """A species estimate as a note prints it: a share in percent to one decimal, a count to the unit."""
    return f"{100 * value:.1f}%" if quantity == "hours_share_covered" else f"{value:,.0f}"


RICHNESS_BASIS = (
    "judge sample alone: Chao & Lin (2012) species estimate for sampling without replacement, S_obs + Q1^2 / "
    "(2 Q2 n/(n-1) + Q1 q/(1-q)) over the sampled texts' distinct tasks (occupations), q = n/N; "
    "log-normal 95% interval (Chao 1987); a lower bound in expectation; hours: unseen tasks at the median hours "
    "of the tasks seen once; none for the major groups (too few)"
)


def _carried_cap(value: float, richness: float | None, richness_basis: str | None) -> str:
    """A bounds row whose value is a capped species estimate says it is the larger scope's (capped_note)."""
    if richness is None or not richness_basis or CAPPED not in richness_basis or value != richness:
        return ""
    return "; " + richness_basis[richness_basis.index(CAPPED):]


def estimates_frame(
    problem: Problem, scopes: Sequence[Scope], result: EstimateDraws, thresholds: Sequence[int] = THRESHOLDS
) -> pl.DataFrame:
    """The `headline_estimates` table (HEADLINE_ESTIMATE_SCHEMA)."""
    agg_denominators = Aggregator(problem, scopes[:1], thresholds).denominators
    rows: list[dict[str, object]] = []
    for si, scope in enumerate(scopes):
        n_texts = sum(problem.n_texts(b) for b in scope.members)
        n_sampled = sum(problem.n_sampled(b) for b in scope.members)
        for estimator, point in result.point.items():
            if estimator in ("design", "model_assisted") and n_sampled == 0:
                continue
            stack = result.draws.get(estimator)
            n_draws = 0 if stack is None else stack.shape[0]
            for qi, quantity in enumerate(QUANTITIES):
                for ti, t in enumerate(thresholds):
                    low = high = low_se = high_se = None
                    value_se: float | None = 0.0  # deterministic unless drawn
                    if stack is not None:
                        values = stack[:, si, qi, ti]
                        values = values[np.isfinite(values)]
                        if values.size:
                            low, high = interval(estimator, float(point[si, qi, ti]), values)
                            high = min(high, agg_denominators[quantity])
                            value_se, low_se, high_se = interval_mc_se(estimator, values)
                    value = float(point[si, qi, ti])
                    rows.append(
                        {
                            "benchmark_index": scope.benchmark_index,
                            "scope": scope.scope,
                            "quantity": quantity,
                            "threshold": int(t),
                            "estimator": estimator,
                            "value": value if math.isfinite(value) else None,
                            "ci_low": low,
                            "ci_high": high,
                            "value_mc_se": value_se if math.isfinite(value) else None,
                            "ci_low_mc_se": low_se,
                            "ci_high_mc_se": high_se,
                            "denominator": agg_denominators[quantity],
                            "published": estimator == published_estimator(scope, problem, int(t)),
                            "n_texts": n_texts,
                            "n_sampled": n_sampled,
                            "n_draws": n_draws,
                            "basis": _basis(estimator, scope, problem, n_draws),
                        }
                    )
    if "design" in result.point:  # a judge-sample estimate, beside the design one (the bounds need both)
        rows += richness_rows(problem, scopes, thresholds, agg_denominators)
    return with_flat_interval_basis(with_bounds(pl.DataFrame(rows, schema=HEADLINE_ESTIMATE_SCHEMA)))


def with_flat_interval_basis(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows whose interval has no width (ci_low = ci_high up to float rounding) while the judge read only some of
    the texts say so in their basis: "3 (3-3)" from 28 judged of 40 texts, or "0 (0-0)" from 28 of 837 that
    showed no work, is the draws agreeing, not precision: a task none of the judged texts shows can still be
    exercised by the rest. The ends are percentiles, so a few draws may differ; where they move the value (the
    draws' mean) off the ends, e.g. 2.995 in 3-3, the basis says that too."""
    low, high, value = pl.col("ci_low"), pl.col("ci_high"), pl.col("value")
    tolerance = 1e-9 * pl.max_horizontal(pl.lit(1.0), high.abs())
    flat = ((high - low).abs() <= tolerance) & (pl.col("n_sampled") < pl.col("n_texts"))
    note = pl.format("; the draws' 2.5th and 97.5th percentiles are equal, so the interval has no width: that is "
                     "the draws agreeing, not certainty (the judge read {} of {} texts, and a task none of them "
                     "shows can still be there)", "n_sampled", "n_texts")
    apart = ("; the value, the draws' mean, lies just off that point because a few draws (under 2.5% on either "
             "side) differ")
    off = (value - low).abs() > tolerance
    return frame.with_columns(
        pl.when(flat & off).then(pl.col("basis") + note + pl.lit(apart))
        .when(flat).then(pl.col("basis") + note).otherwise(pl.col("basis")).alias("basis"))


def richness_rows(problem: Problem, scopes: Sequence[Scope], thresholds: Sequence[int],
                  denominators: dict[str, float]) -> list[dict[str, object]]:
    """The `richness` rows (species estimate, models.estimates.richness) at the bounded thresholds, for every
    scope with a judge sample; never published by themselves (they raise the `bounds` floor)."""
    bounded = [t for t in thresholds if t in BOUNDED_THRESHOLDS]
    if not bounded:
        return []
    values, caps, uncapped = richness_with_caps(problem, scopes)
    rows: list[dict[str, object]] = []
    for si, scope in enumerate(scopes):
        n_sampled = sum(problem.n_sampled(b) for b in scope.members)
        if n_sampled == 0:
            continue
        for qi, quantity in enumerate(QUANTITIES):
            value, low, high = (float(v) for v in values[si, qi])
            if not math.isfinite(value):
                continue
            rows += [{
                "benchmark_index": scope.benchmark_index, "scope": scope.scope, "quantity": quantity,
                "threshold": int(t), "estimator": RICHNESS, "value": value, "ci_low": low, "ci_high": high,
                "value_mc_se": 0.0, "ci_low_mc_se": 0.0, "ci_high_mc_se": 0.0, "denominator": denominators[quantity], "published": False,
                "n_texts": sum(problem.n_texts(b) for b in scope.members), "n_sampled": n_sampled, "n_draws": 0,
                "basis": RICHNESS_BASIS + capped_note(scopes, int(caps[si, qi]),
                                                      printed_estimate(quantity, float(uncapped[si, qi, 0]))),
            } for t in bounded]
    return rows


def with_bounds(frame: pl.DataFrame) -> pl.DataFrame:
    """Add the `bounds` rows (BOUNDED_THRESHOLDS, scopes with a judge sample) built from the design, richness
    and model-assisted rows of the same scope and quantity: covered at >= 1 holds everything covered at >= 5, so
    the certain floor is the larger of the sample's own count and the model-assisted lower bound at the next
    threshold; the species estimate (richness) raises it (bounds_interval)."""
    keys = ["benchmark_index", "scope", "quantity"]
    columns = frame.columns  # a frame without the Monte Carlo error columns gets bounds without them
    frame = frame.with_columns(pl.lit(None, pl.Float64).alias(c) for c in MC_COLUMNS if c not in columns)
    design = frame.filter((pl.col("estimator") == "design") & pl.col("threshold").is_in(BOUNDED_THRESHOLDS))
    if design.is_empty():
        return frame.select(columns)
    assisted = frame.filter(pl.col("estimator") == "model_assisted")
    richness = frame.filter(pl.col("estimator") == RICHNESS).select(
        *keys, "threshold", pl.col("value").alias("_rich"), pl.col("ci_low").alias("_rich_low"),
        (pl.col("basis") if "basis" in columns else pl.lit(None, pl.Utf8)).alias("_rich_basis"))
    higher = assisted.filter(~pl.col("threshold").is_in(BOUNDED_THRESHOLDS)).group_by(keys).agg(
        pl.col("ci_low").max().alias("_next_low"), pl.col("ci_low_mc_se").sort_by("ci_low").last().alias("_next_se"),
        pl.col("value").max().alias("_next_value"),
        pl.col("value_mc_se").sort_by("value").last().alias("_next_value_se"))
    joined = (
        design.join(assisted.select(*keys, "threshold", pl.col("ci_high").alias("_ma"),
                                    pl.col("ci_high_mc_se").alias("_ma_se")), on=[*keys, "threshold"], how="left")
        .join(richness, on=[*keys, "threshold"], how="left")
        .join(higher, on=keys, how="left")
        .with_columns(pl.max_horizontal("value", pl.col("_next_low").fill_null(0.0)).alias("_floor"))
    )
    bounds = [bounds_interval(f, h, m, r, rl, nv) for f, h, m, r, rl, nv in zip(
        joined["_floor"], joined["ci_high"], joined["_ma"], joined["_rich"], joined["_rich_low"],
        joined["_next_value"], strict=True)]
    bases = [bounds_basis(b[0], h, m) + _carried_cap(b[0], r, rb) for b, h, m, r, rb in zip(
        bounds, joined["ci_high"], joined["_ma"], joined["_rich"], joined["_rich_basis"], strict=True)]
    errors = [bounds_mc_se(r["value"], r["_next_low"], r["_next_se"], r["_rich"], r["_rich_low"], r["ci_high"],
                           r["ci_high_mc_se"], r["_ma"], r["_ma_se"], b, r["_next_value"], r["_next_value_se"])
              for r, b in zip(joined.iter_rows(named=True), bounds, strict=True)]
    rows = joined.with_columns(
        pl.lit(BOUNDS).alias("estimator"),
        pl.Series("value", [b[0] for b in bounds], pl.Float64),
        pl.Series("ci_low", [b[1] for b in bounds], pl.Float64),
        pl.Series("ci_high", [b[2] for b in bounds], pl.Float64),
        *(pl.Series(name, [e[i] for e in errors], pl.Float64)
          for i, name in enumerate(("value_mc_se", "ci_low_mc_se", "ci_high_mc_se"))),
        pl.lit(True).alias("published"),
        pl.Series("basis", bases, pl.Utf8),
    ).select(columns)
    return pl.concat([frame.select(columns), rows])


def headline_estimates(
    texts: pl.DataFrame,
    labels: pl.DataFrame,
    judge: pl.DataFrame,
    tasks: pl.DataFrame,
    task_hours: pl.DataFrame | None = None,
    membership: pl.DataFrame | None = None,
    *,
    thresholds: Sequence[int] = THRESHOLDS,
    n_draws: int = DEFAULT_DRAWS,
    seed: int = 16,
    per_benchmark: bool = True,
) -> pl.DataFrame:
    """One call from frames to the `headline_estimates` table (see the module docstring)."""
    problem = build_problem(texts, labels, judge, tasks, task_hours)
    scopes = scopes_for(problem, membership, per_benchmark)
    result = run_estimators(problem, scopes, thresholds=thresholds, n_draws=n_draws, seed=seed)
    return estimates_frame(problem, scopes, result, thresholds)


PASS_B_BASIS = "; development split judged by its second pass (b): the judge's own reproducibility"


def pass_b_frame(problem_b: Problem, scopes: Sequence[Scope], thresholds: Sequence[int], n_draws: int, seed: int,
                 replay: object = None) -> pl.DataFrame:
    """The judge's reproducibility rows: the model-assisted estimate with the development split judged by its
    second pass (`problem_b`), as estimator `model_assisted_pass_b`, never published. Pure (a worker computes
    it while the headline step draws: assets/estimates.py)."""
    result = run_estimators(problem_b, scopes, thresholds=thresholds, n_draws=n_draws, seed=seed,
                            estimators=("model_assisted",), replay=replay)
    return estimates_frame(problem_b, scopes, result, thresholds).with_columns(
        pl.lit("model_assisted_pass_b").alias("estimator"),
        pl.lit(False).alias("published"),
        (pl.col("basis") + pl.lit(PASS_B_BASIS)).alias("basis"),
    )
