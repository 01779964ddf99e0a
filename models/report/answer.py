"""The one-line answer: the sentence an analyst quotes, with its interval and basis, from the published
estimates (headline_estimates) alone. summary.md, the coverage map's header and the end of `run_all` all call
`headline_answer`, so the three say the same thing (the map, through `headlines_by_threshold`, each index's
sentence and its >= 1 bounds line); the release's headline rows hold the same numbers.

Pure: frames in, strings and floats out. No dagster, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from models.estimates.mc_error import mc_rounded
from models.estimates.published import judged_by_benchmark
from models.estimates.tables import CAPPED, OWN_ESTIMATE
from models.markdown import markdown_literal
from models.report.formatting import count, finite, plural

ALL_INDEX = "all"
ANSWER_THRESHOLD = 5  # the published headline's threshold: model-assisted with an interval (>= 1 is bounds)
QUANTITY_NOUNS: dict[str, str] = {
    "tasks_covered": "O*NET tasks",
    "occupations_covered": "occupations",
    "major_groups_covered": "SOC major groups",
    "hours_share_covered": "US work hours",
}
BASIS_WORDS: dict[str, str] = {
    "model_assisted": "labels corrected by a judge's reading of {n_sampled:,} sampled prompt texts",
    "labeler": "the labeler's calibrated labels alone (no judge sample)",
    "design": "the judge sample alone",
    "bounds": "bounds: a species-estimate floor to the imputation's ceiling",
}


@dataclass(frozen=True)
class Answer:
    """The quotable sentence, at most five supporting lines, and the numbers behind them (for metadata)."""

    sentence: str
    supporting: list[str] = field(default_factory=list)
    figures: dict[str, float] = field(default_factory=dict)
    benchmark_index: str = ALL_INDEX
    threshold: int = ANSWER_THRESHOLD


AT_ONE_PROMPT = "At >= 1 prompt: "  # the supporting line of the bounds at >= 1 (the map's header reads it back)


def _value(quantity: str, value: Any) -> str:
    if not finite(value):
        return "n/a"
    return f"{100 * float(value):.1f}%" if quantity == "hours_share_covered" else f"{round(float(value)):,}"


def _interval(quantity: str, row: dict[str, Any]) -> str:
    """' (low-high)' with the Monte Carlo error of the figures whose error exceeds their rounding (mc_rounded;
    those are printed rounded to what the draws support); '' without an interval."""
    figures, note = mc_rounded(row, quantity == "hours_share_covered")
    low, high = figures["ci_low"], figures["ci_high"]
    if not (finite(low) and finite(high)) or _value(quantity, low) == _value(quantity, high):
        return f" ({note})" if note else ""  # no interval, or one too narrow to show at this precision
    return f" ({_value(quantity, low)}\u2013{_value(quantity, high)}{'; ' + note if note else ''})"


def _estimate(quantity: str, row: dict[str, Any]) -> str:
    """The value (rounded to what the draws support) and its interval."""
    figures, _ = mc_rounded(row, quantity == "hours_share_covered")
    return f"{_value(quantity, figures['value'])}{_interval(quantity, row)}"


def published_rows(estimates: pl.DataFrame, benchmark_index: str = ALL_INDEX) -> pl.DataFrame:
    """The published pooled rows of one index (scope 'all'), one per quantity and threshold."""
    rows = estimates.filter(pl.col("published") & (pl.col("scope") == "all"))
    if "benchmark_index" in rows.columns:
        rows = rows.filter(pl.col("benchmark_index") == benchmark_index)
    return rows


def _row(rows: pl.DataFrame, quantity: str, threshold: int) -> dict[str, Any] | None:
    hit = rows.filter((pl.col("quantity") == quantity) & (pl.col("threshold") == threshold))
    return hit.row(0, named=True) if hit.height else None


def capped_phrase(row: dict[str, Any]) -> str:
    """' (capped at index all's value: its own estimate, 1,154, was higher ...)' for a bounds row whose value is
    a larger scope's species estimate (its basis says so: models.estimates.tables.capped_note), else ''; printed
    beside the value it describes."""
    basis = row.get("basis") or ""
    if CAPPED not in basis:
        return ""
    where, _, why = basis[basis.index(CAPPED) + len(CAPPED):].partition(" (")
    # the note's reason: "a part never covers more than the whole" (capped_note writes one in brackets)
    why = why.split(")", 1)[0].split(", and ")[-1] or "a part never covers more than the whole"
    own = basis.split(OWN_ESTIMATE + ": ", 1)[1].split(";", 1)[0].strip() if OWN_ESTIMATE + ": " in basis else ""
    return f" (capped at {where.strip()}'s value: its own estimate{', ' + own + ',' if own else ''} was higher, and {why})"


def _phrase(row: dict[str, Any]) -> str:
    """'133 (123-145) of 923 occupations' or, for bounds, 'at least 268, up to about 401 of 923 occupations'."""
    quantity = row["quantity"]
    noun = QUANTITY_NOUNS[quantity]
    if row["estimator"] == "bounds":
        figures, note = mc_rounded(row, quantity == "hours_share_covered")
        span = (f"at least about {_value(quantity, figures['value'])}{capped_phrase(row)} (lower limit "
                f"{_value(quantity, figures['ci_low'])}), up to about {_value(quantity, figures['ci_high'])}"
                + (f" ({note})" if note else ""))
        return f"{span} of {noun}" if quantity == "hours_share_covered" else \
            f"{span} of {row['denominator']:,.0f} {noun}"
    if quantity == "hours_share_covered":
        return f"{_estimate(quantity, row)} of {noun}"
    return f"{_estimate(quantity, row)} of {row['denominator']:,.0f} {noun}"


def _basis(rows: pl.DataFrame, unjudged: Sequence[str] = (), n_members: int | None = None) -> str:
    estimator = str(rows["estimator"][0])
    n_sampled = int(rows["n_sampled"][0]) if "n_sampled" in rows.columns and rows["n_sampled"][0] is not None else 0
    words = BASIS_WORDS.get(estimator, estimator).format(n_sampled=n_sampled)
    if estimator == "model_assisted" and unjudged and n_members:
        words += f" of {n_members - len(unjudged)} of the {n_members} benchmarks"
    label = estimator.replace("_", "-")
    return f"{label} estimate: {words}"


def unjudged_members(estimates: pl.DataFrame, excluded: Sequence[tuple[str, str]] = ()) -> tuple[list[str], int]:
    """(the index's member benchmarks without judged texts, the number of members with a per-benchmark row):
    `judged_by_benchmark` less the benchmarks outside the index."""
    outside = {n for n, r in excluded if r.startswith("not in this index")}
    members = {b: judged for b, judged in judged_by_benchmark(estimates).items() if b not in outside}
    return sorted(b for b, judged in members.items() if not judged), len(members)


def _unjudged_line(unjudged: Sequence[str], spell_out: int = 5) -> str:
    names = ", ".join(unjudged[:spell_out]) + (f" and {len(unjudged) - spell_out} more" if len(unjudged) > spell_out
                                               else "")
    one = len(unjudged) == 1
    return (f"Not corrected: {names} {'has' if one else 'have'} no judged texts, so {'it counts' if one else 'they count'}"
            " through the labeler alone, and the intervals above do not carry the labeler's error there. Measured"
            " on the mirrored benchmarks, each with its judged texts left out, such counts were right in the median"
            " for occupations and hours at >= 5 prompts but low for tasks (x0.34 of the corrected count at >= 1,"
            " x0.68 at >= 5) and for occupations at >= 1 (x0.40); a single benchmark's count at >= 5 was typically"
            " off by x1.6-1.9 either way, by 3x or more for a fifth to a third of them (docs/estimates.md, 'Known"
            " limits'; bench/pooled-correction-2026-12-05.json).")


def headline_answer(
    estimates: pl.DataFrame | None,
    *,
    benchmark_index: str = ALL_INDEX,
    n_benchmarks: int | None = None,
    released: str | None = None,
    excluded: Sequence[tuple[str, str]] = (),
    threshold: int = ANSWER_THRESHOLD,
    benchmark_rows: pl.DataFrame | None = None,
) -> Answer | None:
    """The answer of one benchmark index at `threshold` (default 5 prompts), or None when nothing is published.

    estimates: headline_estimates (published rows are used). n_benchmarks: benchmarks the index counts;
    excluded: (benchmark, reason) left out of it; released: the release date the sentence names.
    benchmark_rows: where the per-benchmark rows are (index `all`'s: which benchmarks have judged texts), when
    `estimates` holds one index's rows only (a per-index summary); default `estimates`."""
    if estimates is None or estimates.is_empty() or "published" not in estimates.columns:
        return None
    rows = published_rows(estimates, benchmark_index)
    at = rows.filter(pl.col("threshold") == threshold)
    hours = _row(at, "hours_share_covered", threshold)
    if hours is None:
        return None
    prompts = f"at >= {threshold} prompt{'s' if threshold != 1 else ''}"
    if n_benchmarks == 0:  # it read "AI benchmarks exercise about 0.0% ..." as if measured (a probe, 2026-12-07)
        sentence = (f"Benchmark index `{benchmark_index}` counts no benchmark"
                    + (f" (released {released})" if released else "")
                    + ": every landed benchmark fails its rules or is excluded (benchmark_index_membership says "
                    "which rule and why), so it measures nothing and gives no figure.")
        return Answer(sentence, [_not_counted(excluded)] if excluded else [],
                      answer_figures(estimates, benchmark_index), benchmark_index, threshold)
    unjudged, n_members = (unjudged_members(estimates if benchmark_rows is None else benchmark_rows, excluded)
                           if str(at["estimator"][0]) != "labeler" else ([], 0))
    hours_text = _estimate("hours_share_covered", hours)
    units = [_phrase(r) for q in ("occupations_covered", "major_groups_covered") if (r := _row(at, q, threshold))]
    context = [f"benchmark index `{benchmark_index}`"]
    if n_benchmarks is not None:
        context.append(count(n_benchmarks, "benchmark"))
    if released:
        context.append(f"released {released}")
    sentence = (
        f"AI benchmarks exercise about {hours_text} of US work hours {prompts}"
        + (": " + " and ".join(units) if units else "")
        + f" ({_basis(at, unjudged, n_members)}; {', '.join(context)})."
    )
    supporting: list[str] = []
    tasks = _row(at, "tasks_covered", threshold)
    if tasks is not None:
        supporting.append(f"Tasks: {_phrase(tasks)} have {threshold} or more prompts.")
    low = [r for q in ("occupations_covered", "hours_share_covered") if (r := _row(rows, q, 1))]
    if low:
        supporting.append(AT_ONE_PROMPT + "; ".join(_phrase(r) for r in low) + ".")
    if unjudged:
        supporting.append(_unjudged_line(unjudged))
    truth = estimates.filter((pl.col("estimator") == "labels_as_truth") & (pl.col("scope") == "all"))
    if "benchmark_index" in truth.columns:
        truth = truth.filter(pl.col("benchmark_index") == benchmark_index)
    counted = _row(truth, "occupations_covered", threshold)
    estimated = _row(at, "occupations_covered", threshold)
    if counted is not None and estimated is not None and counted["value"] < estimated["value"]:
        supporting.append(
            f"Counting every label as true would say {_value('occupations_covered', counted['value'])} "
            f"{plural(counted['value'], 'occupation')} "
            f"{prompts} instead of {_value('occupations_covered', estimated['value'])}: the labels miss tasks the "
            "judge finds (see 'What the raw labels say')."
        )
    if excluded:
        supporting.append(_not_counted(excluded))
    return Answer(sentence, supporting[:5], answer_figures(estimates, benchmark_index), benchmark_index, threshold)


def headlines_by_threshold(answer: Answer) -> dict[int, str]:
    """The coverage map's header per threshold (issue 25 item 5: the published headline of the chosen index and
    threshold): at the answer's threshold its sentence, at >= 1 prompt its bounds line naming the index; each
    followed by what the index leaves out and why, as the benchmark picker leaves it out."""
    notes = [s for s in answer.supporting if s.startswith(("Not corrected", "Not in this index", "Counted but adding"))]
    out = {answer.threshold: " ".join([answer.sentence, *notes])}
    for line in answer.supporting:
        if line.startswith(AT_ONE_PROMPT):
            out[1] = " ".join([f"At >= 1 prompt (benchmark index `{answer.benchmark_index}`): "
                               + line[len(AT_ONE_PROMPT):], *notes])
    return out


def _not_counted(excluded: Sequence[tuple[str, str]], spell_out: int = 3) -> str:
    """The benchmarks behind no figure: those outside the index ('not in this index: <reason>', named with their
    reason when few, else by name -- each one's reason is in benchmark_counts and data_documentation.md), then
    members that add to no task (e.g. no prompt labeled as work)."""
    # an index file's reasons, shown as written
    outside = [(n, markdown_literal(r.split(":", 1)[1].strip())) for n, r in excluded if r.startswith("not in this index")]
    inert = [(n, r) for n, r in excluded if not r.startswith("not in this index")]
    parts = []
    if outside:
        listed = "; ".join(f"{n} ({r})" for n, r in outside) if len(outside) <= spell_out else \
            ", ".join(n for n, _ in outside) + " (each one's reason: benchmark_counts)"
        parts.append(f"Not in this index: {listed}.")
    if inert:
        parts.append("Counted but adding to no task: " + "; ".join(f"{n} ({r})" for n, r in inert) + ".")
    return " ".join(parts)


def answer_figures(estimates: pl.DataFrame, benchmark_index: str = ALL_INDEX) -> dict[str, float]:
    """Every published pooled number of one index as floats named `<quantity>_<threshold>` (+ `_ci_low`,
    `_ci_high`): the headline assets' numeric metadata, which the Dagster UI plots over runs."""
    out: dict[str, float] = {}
    for r in published_rows(estimates, benchmark_index).sort("quantity", "threshold").iter_rows(named=True):
        key = f"{r['quantity']}_{r['threshold']}"
        for suffix, column in (("", "value"), ("_ci_low", "ci_low"), ("_ci_high", "ci_high")):
            if finite(r.get(column)):
                out[key + suffix] = float(r[column])
    return out
