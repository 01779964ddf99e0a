"""The summary's counts as estimated: every quantity at every threshold from the published estimates
(headline_estimates) with its interval, the major groups likely left uncovered (major_group_estimates, when the
per-unit estimates exist), the benchmarks that exercise the most tasks; and why the GPT-4 and human exposure
ratios differ (their base rates, from task_analysis_frame); where the next benchmark should go (occupation_gaps,
with how far the map's bands held in unit_coverage_simulation_check). Pure; no dagster."""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from models.coverage import LIKELY_COVERED, LIKELY_NOT
from models.coverage_map import band_check
from models.estimates.mc_error import MC_EXPLAINED, mc_rounded
from models.report.answer import QUANTITY_NOUNS, capped_phrase, published_rows
from models.report.formatting import Tables, num, pct, present_table, ratio

_ORDER = ("tasks_covered", "occupations_covered", "major_groups_covered", "hours_share_covered")


def _fmt(quantity: str, value: Any) -> str:
    return pct(value) if quantity == "hours_share_covered" else num(value)


def _estimate(row: dict[str, Any]) -> str:
    """The row's figures rounded to what its draws support, with their Monte Carlo error where it exceeds the
    printed rounding (models.estimates.mc_error.mc_rounded)."""
    q = row["quantity"]
    figures, note = mc_rounded(row, q == "hours_share_covered")
    if row["estimator"] == "bounds":
        return (f"at least about {_fmt(q, figures['value'])}{capped_phrase(row)} (lower limit "
                f"{_fmt(q, figures['ci_low'])}), up to about {_fmt(q, figures['ci_high'])}"
                + (f" ({note})" if note else ""))
    return (f"{_fmt(q, figures['value'])} ({_fmt(q, figures['ci_low'])}\u2013{_fmt(q, figures['ci_high'])}"
            + (f"; {note})" if note else ")"))


def estimated_coverage_findings(tables: Tables, index: str = "all") -> list[str]:
    """One line per threshold with every quantity as estimated, the likely-uncovered major groups and the
    benchmarks that exercise the most tasks; a line saying so when headline_estimates is missing."""
    estimates = present_table(tables, "headline_estimates")
    if estimates is None or "published" not in estimates.columns:
        return ["Estimated coverage not available: the headline_estimates table is missing or empty."]
    rows = published_rows(estimates, index)
    out = []
    for t in sorted(set(rows["threshold"].to_list()), reverse=True):
        at = rows.filter(pl.col("threshold") == t)
        parts = []
        for q in _ORDER:
            hit = at.filter(pl.col("quantity") == q)
            if hit.height:
                r = hit.row(0, named=True)
                of = "" if q == "hours_share_covered" else f" of {num(r['denominator'])}"
                parts.append(f"{QUANTITY_NOUNS[q]}: {_estimate(r)}{of}")
        if parts:
            estimator = at["estimator"][0].replace("_", "-")
            # bounds are a floor and a ceiling from two estimators, not one interval (an audit: "95% interval")
            kind = ("bounds: a floor and a ceiling from two estimators, not one 95% interval" if estimator == "bounds"
                    else f"{estimator}, 95% interval")
            out.append(f"**At >= {t} prompt{'s' if t != 1 else ''}** ({kind}): "
                       + "; ".join(parts) + " (headline_estimates).")
    if any("Monte Carlo error" in line for line in out):
        drawn = rows["n_draws"].max() if "n_draws" in rows.columns else None
        what = MC_EXPLAINED.format(n_draws=drawn or 200).split(": ", 1)[1]
        out.append(f"**Monte Carlo error.** {what[0].upper()}{what[1:]}")
    groups = present_table(tables, "major_group_estimates")
    if groups is not None and "benchmark_index" in groups.columns:
        groups = groups.filter(pl.col("benchmark_index") == index)
    if groups is not None and groups.is_empty():  # an index without per-unit rows: nothing to read, no crash
        out.append(f"**Major groups likely uncovered:** not available for index {index} (no major_group_estimates "
                   "rows).")
    elif groups is not None and {"major_group_code", "threshold", "p_covered"} <= set(groups.columns):
        t = int(groups["threshold"].max())
        unlikely = groups.filter((pl.col("threshold") == t) & (pl.col("p_covered") < 0.5)).sort("p_covered")
        listed = ", ".join(f"{r['major_group_code']} (p = {r['p_covered']:.2f})" for r in unlikely.iter_rows(named=True))
        out.append(f"**Major groups likely uncovered** at >= {t} prompts (probability covered below one half): "
                   + (listed or "none") + " (major_group_estimates).")
    scopes = estimates.filter(pl.col("published") & (pl.col("scope") != "all") & (pl.col("quantity") == "tasks_covered"))
    if "benchmark_index" in scopes.columns:
        scopes = scopes.filter(pl.col("benchmark_index") == index)
    if scopes.height:
        t = int(scopes["threshold"].max())
        top = scopes.filter(pl.col("threshold") == t).sort(["value", "scope"], descending=[True, False]).head(3)
        out.append(f"**Benchmarks.** Exercising the most tasks at >= {t} prompts (estimated, alone): "
                   + ", ".join(f"{r['scope']} {_estimate(r)}" for r in top.iter_rows(named=True))
                   + " (headline_estimates, per benchmark).")
    return out


SCORE_MIN_EXPECTED_PROMPTS = 5.0  # as the raw comparison's tasks with >= 5 prompts: fewer say little of a score


def estimated_score_findings(tables: Tables) -> list[str]:
    """How precise the per-occupation model scores are once the labels' error is in them
    (occupation_model_scores_estimated: each prompt weighted by its text's estimated probability of exercising the
    occupation; Rubin's rules over the draws): the pairs with enough expected prompts, the median half-width of
    their 95% interval and the median share of its variance that is the labeler's error."""
    frame = present_table(tables, "occupation_model_scores_estimated")
    needed = {"expected_prompts", "estimated_mean", "ci_low", "ci_high", "fraction_missing_info"}
    if frame is None or not needed <= set(frame.columns):
        return ["Estimated model-score finding not available: occupation_model_scores_estimated is missing or "
                "empty (model results exist only for some benchmarks)."]
    pairs = frame.filter((pl.col("expected_prompts") >= SCORE_MIN_EXPECTED_PROMPTS)
                         & pl.col("estimated_mean").is_not_nan() & pl.col("ci_low").is_not_null()
                         & pl.col("ci_high").is_not_null())
    if not pairs.height:
        return [f"**Model scores, as estimated.** No occupation-model pair has {SCORE_MIN_EXPECTED_PROMPTS:.0f} or "
                "more prompts expected to exercise the occupation (occupation_model_scores_estimated)."]
    half_width = float(((pairs["ci_high"] - pairs["ci_low"]) / 2).median())
    labeler_share = pairs["fraction_missing_info"].fill_nan(None).median()
    return [
        f"**Model scores, as estimated.** For the {num(pairs.height)} occupation-model pairs with at least "
        f"{SCORE_MIN_EXPECTED_PROMPTS:.0f} prompts expected to exercise the occupation (each prompt weighted by its "
        f"text's estimated probability of doing so), the 95% interval of the mean score spans a median "
        f"\u00b1{half_width:.3f} around it, and the labels' error makes up a median {pct(labeler_share, 0)} of its "
        "variance: a per-occupation score without it would look more precise than it is "
        "(occupation_model_scores_estimated; the raw labels' O*NET-weighted comparison is below)."
    ]


def exposure_base_rates(frame: pl.DataFrame, threshold: int = 5, index: str = "all") -> dict[str, dict[str, float]]:
    """Per exposure rating (human: `exposed`, gpt4: `gpt4_exposed`): share of tasks rated exposed, and the
    share covered at `threshold` among exposed and among non-exposed tasks (the labels as counted)."""
    if "benchmark_index" in frame.columns:
        frame = frame.filter(pl.col("benchmark_index") == index)
    covered = f"covered_{threshold}"
    out: dict[str, dict[str, float]] = {}
    for name, column in (("human", "exposed"), ("gpt4", "gpt4_exposed")):
        if column not in frame.columns or covered not in frame.columns:
            continue
        rows = frame.filter(pl.col(column).is_not_null() & pl.col(covered).is_not_null()).select(
            pl.col(column).cast(pl.Boolean).alias("x"), pl.col(covered).cast(pl.Float64).alias("y"))
        if rows.is_empty():
            continue
        exposed, other = rows.filter(pl.col("x")), rows.filter(~pl.col("x"))
        out[name] = {
            "share_exposed": exposed.height / rows.height,
            "covered_exposed": float(exposed["y"].mean()) if exposed.height else float("nan"),
            "covered_not": float(other["y"].mean()) if other.height else float("nan"),
            "n": float(rows.height),
        }
    return out


def exposure_difference_finding(tables: Tables, threshold: int = 5) -> list[str]:
    """One sentence: why the GPT-4 and human exposure ratios differ, from their base rates."""
    frame = present_table(tables, "task_analysis_frame")
    if frame is None:
        return []
    rates = exposure_base_rates(frame, threshold)
    if not {"human", "gpt4"} <= set(rates):
        return []
    h, g = rates["human"], rates["gpt4"]

    def raw(r: dict[str, float]) -> str:
        return ratio(r["covered_exposed"] / r["covered_not"]) if r["covered_not"] > 0 else "n/a"

    return [
        f"**Why the GPT-4 and human ratios differ.** They divide by different base rates: GPT-4 rates "
        f"{pct(g['share_exposed'], 0)} of tasks exposed against the humans' {pct(h['share_exposed'], 0)}, and the "
        f"tasks it leaves unexposed are covered at >= {threshold} prompts only {pct(g['covered_not'])} of the time "
        f"(the humans' unexposed {pct(h['covered_not'])}), while the exposed ones are covered at "
        f"{pct(g['covered_exposed'])} and {pct(h['covered_exposed'])}: unadjusted ratios {raw(g)} and {raw(h)} "
        "(task_analysis_frame, labels as counted)."
    ]


GAPS_QUOTED = 5  # the summary names this many gaps; occupation_gaps ranks them all


def gap_findings(tables: Tables, threshold: int = 5) -> list[str]:
    """Where the next benchmark should go, as estimated (occupation_gaps ranked by expected uncovered hours): how
    many occupations are not likely covered at `threshold`, and the first GAPS_QUOTED by the annual US work hours
    on their tasks expected to stay below it, each with its 95% interval across the estimates' draws; one likely
    covered (a task at the threshold) is named as such, since its other tasks can still hold the most hours."""
    gaps = present_table(tables, "occupation_gaps")
    needed = {"threshold", "rank", "occupation_title", "expected_uncovered_hours", "expected_uncovered_hours_low",
              "expected_uncovered_hours_high", "ranked_by"}
    if gaps is None or not needed <= set(gaps.columns):
        return ["Gap finding not available: occupation_gaps is missing or empty."]
    gaps = gaps.filter((pl.col("threshold") == threshold) & pl.col("ranked_by").str.starts_with("expected"))
    if not gaps.height:
        return [f"Gap finding not available: occupation_gaps has no row ranked by expected uncovered hours at "
                f">= {threshold} prompts (no per-unit estimates)."]
    coverage = present_table(tables, "occupation_coverage")
    of = f" of {num(coverage['onet_soc_code'].n_unique())}" if coverage is not None and \
        "onet_soc_code" in coverage.columns else ""

    def billions(value: float) -> str:
        return f"{value / 1e9:.2f}"

    def with_interval(row: dict) -> str:
        raw = [row[f"expected_uncovered_hours{end}"] for end in ("", "_low", "_high")]
        value, low, high = (billions(v) for v in raw)
        # every draw leaves each of its tasks below the threshold: "(6.55-6.55)" would read as a slip. Only when
        # the mean equals the range: a mean just outside a one-value range (a few draws differ far; an audit:
        # Personal Care Aides 4.1451 against 4.1477-4.1477) read "4.15 (in every draw)"
        if low != high:
            span = f"{low}\u2013{high}"
        else:
            span = "in every draw" if math.isclose(raw[0], raw[1], rel_tol=1e-9) else \
                f"{low} in 95% of the draws; a few differ"
        p = row.get("p_covered")
        covered = f"; the occupation itself likely covered, p = {p:.2f}" if p is not None and p >= LIKELY_COVERED \
            else ""
        return f"{value} ({span}{covered})"

    top = gaps.sort("rank").head(GAPS_QUOTED)
    named = "; ".join(f"{r['occupation_title']} {with_interval(r)}" for r in top.iter_rows(named=True))
    held = band_check(present_table(tables, "unit_coverage_simulation_check")).get(str(threshold), {})

    def share(band: str) -> str:
        low, high = (f"{100 * v:.0f}%" for v in held[band][:2])
        return low if low == high else f"{low}\u2013{high}"

    checked = [f"those shown likely covered (p >= {LIKELY_COVERED:g}) were covered in {share('covered')}"
               ] if "covered" in held else []
    checked += [f"those shown likely not (0 < p < {LIKELY_NOT:g}){'' if checked else ' were covered'} in "
                f"{share('not')}"] if "not" in held else []
    how_far = (f" In the release's checks against known truths, {' and '.join(checked)} of cases "
               "(unit_coverage_simulation_check); read the band between as unsure.") if checked else ""
    not_likely = gaps.filter(pl.col("p_covered") < LIKELY_COVERED).height if "p_covered" in gaps.columns else \
        gaps.height
    return [f"**Where the next benchmark should go.** {num(not_likely)}{of} occupations are not likely covered at "
            f">= {threshold} prompts (estimated probability below {LIKELY_COVERED:g}).{how_far} The occupations, "
            f"likely covered or not, with the most annual US work hours on tasks expected to stay below {threshold} "
            f"prompts (expected uncovered hours, billions, 95% interval across the estimates' draws): {named} "
            "(occupation_gaps; `python -m pipelines.whatif` scores a candidate benchmark against them)."]
