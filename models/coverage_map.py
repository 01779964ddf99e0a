"""The benchmark-coverage map: one self-contained HTML page (inline CSS, JS and data; no network access).

Every O*NET occupation with tasks is a tile, grouped into the 22 SOC major groups and coloured by the share of
its tasks covered, i.e. labeled with at least `threshold` distinct benchmark prompts. Toggles pick the
threshold (>= 1 / >= 5 prompts) and which benchmarks count; an index selector (models/indexes/) ticks
exactly the members of a named benchmark index and lists why the others are left out; hovering a tile shows
the occupation, its tasks covered (with the most-prompted ones), the benchmarks behind it and example
prompts.

The page recomputes coverage in the browser from per-task, per-benchmark prompt counts, so any benchmark
subset is exact: a task's count is the sum over the selected benchmarks (prompts are distinct per benchmark).
`occupation_shares` is the same computation in Python, for tests.

Pure: the counts and examples arrive aggregated (`MapAggregates`); resources/coverage_map_queries.py
aggregates them in DuckDB, against the warehouse (`build_coverage_map_from_warehouse`: the label table and
prompt texts are never loaded whole) or against frames (`coverage_map_data` / `build_coverage_map`), and calls
`coverage_map_data_from_aggregates` and `coverage_map_html` here.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from models.coverage import LIKELY_COVERED, LIKELY_NOT, THRESHOLDS
from models.coverage_map_page import CSS as _CSS  # the page's stylesheet and script
from models.coverage_map_page import SCRIPT as _JS
from models.estimates.problem import BOUNDED_THRESHOLDS
from models.soc import SOC_MAJOR_GROUPS, major_group_of, short_group_title

# Colour bins of the share of tasks covered: (lower bound, colour, legend label); share 0 is NO_COVERAGE.
NO_COVERAGE_COLOUR = "#e3e3e3"
COLOUR_BINS: tuple[tuple[float, str, str], ...] = (
    (0.0, "#c7e9b4", "> 0%"),
    (0.05, "#7fcdbb", "\u2265 5%"),
    (0.10, "#41b6c4", "\u2265 10%"),
    (0.25, "#1d91c0", "\u2265 25%"),
    (0.50, "#225ea8", "\u2265 50%"),
    (0.75, "#0c2c84", "\u2265 75%"),
)
PROMPT_CHARS = 180
TASK_CHARS = 120
# Tile classes of the estimated probability that an occupation is covered (occupation_estimates.p_covered, the
# draws' share, which sums to the headline; its two ends hold roughly in the checks (the legend quotes how:
# `band_check`), its middle band is no tested chance,
# so it reads "unsure": docs/estimates.md): (lower bound, colour, legend label), checked from
# the top; the cut-offs are models.coverage's, as the gap finder's.
ESTIMATE_CLASSES: tuple[tuple[float, str, str], ...] = (
    (LIKELY_COVERED, "#225ea8", "likely covered (p_covered \u2265 0.9)"),
    (LIKELY_NOT, "#fdae61", "unsure (0.1 \u2264 p_covered < 0.9)"),
    (0.0, "#e3e3e3", "likely not (p_covered < 0.1)"),
)


def colour_for(share: float) -> str:
    """The tile colour of a share of tasks covered (the same rule as the page's JavaScript)."""
    if share <= 0:
        return NO_COVERAGE_COLOUR
    colour = COLOUR_BINS[0][1]
    for lower, bin_colour, _ in COLOUR_BINS:
        if share >= lower:
            colour = bin_colour
    return colour


def estimate_class(p: float) -> int:
    """The ESTIMATE_CLASSES position of a probability covered (0 likely covered, 1 unsure, 2 likely not)."""
    return next(i for i, (lower, _, _) in enumerate(ESTIMATE_CLASSES) if p >= lower)


def colour_for_p(p: float) -> str:
    """The tile colour of an estimated probability covered (the same rule as the page's JavaScript)."""
    return ESTIMATE_CLASSES[estimate_class(p)][1]


def _clip(text: str | None, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class MapAggregates:
    """What the page needs of the labels, already aggregated (over the chosen labeler's labels of the map's
    occupations; resources/coverage_map_queries.py computes it in DuckDB, so memory does not grow with the
    labels or prompts). Frames in the order the page lists them (by code, task, benchmark)."""

    labeler: str | None
    bench_totals: pl.DataFrame  # benchmark, n: distinct prompts labeled with a task of the map's occupations
    task_counts: pl.DataFrame  # onet_soc_code, task_id, benchmark, n: distinct prompts per task and benchmark
    occ_bench: pl.DataFrame  # onet_soc_code, benchmark, n: distinct prompts per occupation and benchmark
    statements: pl.DataFrame | None = None  # onet_soc_code, task_id, task: the labeled tasks' statements
    examples: pl.DataFrame | None = None  # onet_soc_code, benchmark, prompt_id, prompt: the example prompts


def map_occupations(occupations: pl.DataFrame, n_tasks: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per occupation: onet_soc_code, title, n_tasks (from `occupations`, else joined from `n_tasks`:
    onet_soc_code, n_tasks) and major_group_code, sorted by code."""
    occ = (
        occupations.select(
            pl.col("onet_soc_code").cast(pl.Utf8),
            pl.col("title").cast(pl.Utf8),
            *([pl.col("n_tasks").cast(pl.Int64)] if "n_tasks" in occupations.columns else []),
        )
        .unique("onet_soc_code")
        .sort("onet_soc_code")
    )
    if "n_tasks" not in occ.columns:
        if n_tasks is None:
            raise ValueError("coverage_map_data needs n_tasks in `occupations` or a `tasks` frame")
        occ = occ.join(n_tasks, on="onet_soc_code", how="left").with_columns(pl.col("n_tasks").fill_null(0))
    return occ.with_columns(major_group_of().alias("major_group_code"))


def coverage_map_data_from_aggregates(
    occ: pl.DataFrame,
    aggregates: MapAggregates,
    *,
    thresholds: Sequence[int] = THRESHOLDS,
    prompt_chars: int = PROMPT_CHARS,
    task_chars: int = TASK_CHARS,
    occupation_estimates: pl.DataFrame | None = None,
    simulation_check: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """The page's data (JSON-ready) from `map_occupations(...)` and the label aggregates: tiles, groups,
    benchmarks, examples, and the per-occupation estimates (`map_estimates`) when `occupation_estimates` is
    given, with how their outer bands held in `simulation_check` (unit_coverage_simulation_check: `band_check`).
    The index selector holds only `all` until a builder fills it (index_options)."""
    bench_totals = dict(aggregates.bench_totals.iter_rows())
    benchmarks = sorted(bench_totals)
    bench_index = {b: i for i, b in enumerate(benchmarks)}

    statements: dict[tuple[str, int], str] = {}
    if aggregates.statements is not None:
        statements = {(code, int(tid)): _clip(text, task_chars)
                      for code, tid, text in aggregates.statements.iter_rows()}
    per_occ_tasks: dict[str, list[list[Any]]] = {}
    current: tuple[str, int] | None = None
    for code, task_id, bench, n in aggregates.task_counts.iter_rows():
        if (code, task_id) != current:
            current = (code, task_id)
            per_occ_tasks.setdefault(code, []).append([task_id, statements.get((code, task_id), ""), []])
        per_occ_tasks[code][-1][2] += [bench_index[bench], int(n)]

    per_occ_bench: dict[str, list[int]] = {}
    for code, bench, n in aggregates.occ_bench.iter_rows():
        per_occ_bench.setdefault(code, []).extend([bench_index[bench], int(n)])

    example_list: list[list[Any]] = []
    per_occ_examples: dict[str, list[int]] = {}
    if aggregates.examples is not None:
        example_index: dict[tuple[str, str], int] = {}
        for code, bench, prompt_id, text in aggregates.examples.iter_rows():
            key = (bench, prompt_id)
            if key not in example_index:
                example_index[key] = len(example_list)
                example_list.append([bench_index[bench], prompt_id, _clip(text, prompt_chars)])
            per_occ_examples.setdefault(code, []).append(example_index[key])

    groups = [[code, short_group_title(title)] for code, title in SOC_MAJOR_GROUPS.items()]
    extra_groups = sorted(set(occ["major_group_code"].to_list()) - set(SOC_MAJOR_GROUPS))
    groups += [[code, code] for code in extra_groups]
    group_index = {code: i for i, (code, _) in enumerate(groups)}
    occupation_rows = [
        {
            "c": code,
            "t": title or code,
            "g": group_index[group],
            "n": int(n_tasks or 0),
            "k": per_occ_tasks.get(code, []),
            "b": per_occ_bench.get(code, []),
            "e": per_occ_examples.get(code, []),
        }
        for code, title, n_tasks, group in occ.select(
            "onet_soc_code", "title", "n_tasks", "major_group_code"
        ).iter_rows()
    ]
    return {
        "groups": groups,
        "benchmarks": [[b, int(bench_totals.get(b, 0))] for b in benchmarks],
        "thresholds": [int(t) for t in thresholds],
        # the thresholds whose published headline is a floor and a ceiling (the legend says what p sums to)
        "bounded_thresholds": [int(t) for t in thresholds if t in BOUNDED_THRESHOLDS],
        "occupations": occupation_rows,
        "examples": example_list,
        "labeler": aggregates.labeler,
        "indexes": index_options(None, benchmarks),  # the builders fill in benchmark_index_membership
        "bins": [[lower, colour, label] for lower, colour, label in COLOUR_BINS],
        "no_coverage_colour": NO_COVERAGE_COLOUR,
        "classes": [[lower, colour, label] for lower, colour, label in ESTIMATE_CLASSES],
        "estimates": map_estimates(occupation_estimates, occ["onet_soc_code"].to_list(), thresholds),
        # how the outer bands held in the checks (unit_coverage_simulation_check): the legend quotes it
        "band_check": band_check(simulation_check) if occupation_estimates is not None else {},
    }


CHECKED_BAND_MIN_UNITS = 40  # a check's band with fewer units says little (the checks' own rule for a bin)


def band_check(simulation_check: pl.DataFrame | None) -> dict[str, dict[str, list[Any]]]:
    """How the map's two outer bands held where the truth is known: str(threshold) -> {"covered": [lowest,
    highest share truly covered, checks], "not": [...]}, over the checks of unit_coverage_simulation_check
    (occupations, raw p_covered: what the tiles show) whose bin p >= LIKELY_COVERED, resp. 0 < p < LIKELY_NOT (the
    checks bin units with p > 0 only), holds at least CHECKED_BAND_MIN_UNITS units. Empty without the table. The legend quotes it, so a reader sees how
    wrong a "likely" tile may be; the middle band is no tested chance and gets none."""
    if simulation_check is None or simulation_check.is_empty():
        return {}
    rows = simulation_check.filter((pl.col("unit") == "occupation") & (pl.col("predictor") == "p_covered")
                                   & (pl.col("n_units") >= CHECKED_BAND_MIN_UNITS))
    bands = {"covered": pl.col("p_low") >= LIKELY_COVERED - 1e-9, "not": pl.col("p_high") <= LIKELY_NOT + 1e-9}
    out: dict[str, dict[str, list[Any]]] = {}
    for band, condition in bands.items():
        # in threshold order: the map's JSON keys follow it (group_by's own order differed between two runs of
        # the same inputs, and so did coverage_map.html's bytes)
        held = (rows.filter(condition).group_by("threshold")
                .agg(pl.col("share_covered").min().alias("low"), pl.col("share_covered").max().alias("high"),
                     pl.col("check").sort().unique(maintain_order=True).alias("checks"))
                .sort("threshold"))
        for threshold, low, high, checks in held.iter_rows():
            out.setdefault(str(int(threshold)), {})[band] = [float(low), float(high), list(checks)]
    return out


def map_estimates(
    occupation_estimates: pl.DataFrame | None, codes: Sequence[str], thresholds: Sequence[int] = THRESHOLDS
) -> dict[str, dict[str, list[list[float] | None]]]:
    """index -> str(threshold) -> one entry per occupation of `codes` (the page's tile order): [p_covered,
    prompts_mean, prompts_low, prompts_high, labels_count, judged_texts, p_covered_mc_se] (the prompts: on the
    occupation's most-exercised task, so covered <=> prompts >= threshold; the Monte Carlo error 0 in a table
    without it), or None where the table has no row (p 0, no prompts). Empty without estimates."""
    if occupation_estimates is None or occupation_estimates.is_empty():
        return {}
    position = {code: i for i, code in enumerate(codes)}
    fields = ["p_covered", "prompts_mean", "prompts_low", "prompts_high", "labels_count", "judged_texts",
              "p_covered_mc_se"]
    frame = occupation_estimates.filter(pl.col("threshold").is_in([int(t) for t in thresholds]))
    out: dict[str, dict[str, list[list[float] | None]]] = {}
    for row in frame.iter_rows(named=True):
        at = position.get(row["onet_soc_code"])
        if at is None:
            continue
        per_threshold = out.setdefault(row["benchmark_index"], {})
        entries = per_threshold.setdefault(str(int(row["threshold"])), [None] * len(codes))
        # p exactly as in the table (a tile's class must match it at the cut-offs); the counts to 4 decimals
        entries[at] = [float(row["p_covered"] or 0.0)] + [round(float(row.get(f) or 0.0), 4) for f in fields[1:]]
    for per_threshold in out.values():  # every threshold present, so the page never falls back silently
        for t in thresholds:
            per_threshold.setdefault(str(int(t)), [None] * len(codes))
    return out


def estimate_classes(data: dict[str, Any], index: str, threshold: int) -> dict[str, int]:
    """onet_soc_code -> ESTIMATE_CLASSES position of its p_covered (missing rows: p 0) for `index` and
    `threshold`, as the page colours the tiles; empty when the page holds no estimates of the index."""
    entries = data.get("estimates", {}).get(index, {}).get(str(int(threshold)))
    if entries is None:
        return {}
    return {occ["c"]: estimate_class(entry[0] if entry else 0.0)
            for occ, entry in zip(data["occupations"], entries, strict=True)}

def index_options(membership: pl.DataFrame | None, benchmarks: Sequence[str]) -> list[dict[str, Any]]:
    """The map's index selector (JSON-ready): per index of benchmark_index_membership, `all` first: name,
    title, version, members (benchmarks on the map it includes), unmapped (members with no labeled prompt:
    counted by the index, so in its number of benchmarks, but adding no task to the map) and excluded
    ([benchmark, decided_by, reason]). Without a membership table: only `all`, every benchmark on the map."""
    on_map = set(benchmarks)
    if membership is None or membership.is_empty():
        return [{"name": "all", "title": "Every landed benchmark", "version": "", "members": sorted(on_map),
                 "unmapped": [], "excluded": []}]
    out = []
    names = sorted(set(membership["benchmark_index"].to_list()), key=lambda n: (n != "all", n))
    for name in names:
        rows = membership.filter(pl.col("benchmark_index") == name).sort("benchmark")
        first = rows.row(0, named=True)
        included = rows.filter(pl.col("included"))["benchmark"].to_list()
        out.append({
            "name": name,
            "title": first.get("title") or name,
            "version": first.get("version") or "",
            "members": [b for b in included if b in on_map],
            "unmapped": [b for b in included if b not in on_map],
            "excluded": [[r["benchmark"], r.get("decided_by") or "", r.get("reason") or ""]
                         for r in rows.filter(~pl.col("included")).iter_rows(named=True)],
        })
    return out


def occupation_shares(
    data: dict[str, Any], threshold: int, benchmarks: Iterable[str] | None = None
) -> dict[str, float]:
    """onet_soc_code -> share of tasks covered at `threshold` counting only `benchmarks` (all when None);
    the page's JavaScript computes the same."""
    names = [b for b, _ in data["benchmarks"]]
    selected = {names.index(b) for b in benchmarks} if benchmarks is not None else set(range(len(names)))
    shares = {}
    for occ in data["occupations"]:
        covered = 0
        for _task_id, _text, pairs in occ["k"]:
            n = sum(pairs[i + 1] for i in range(0, len(pairs), 2) if pairs[i] in selected)
            covered += n >= threshold
        shares[occ["c"]] = covered / occ["n"] if occ["n"] else 0.0
    return shares


def _script_json(data: Any) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' left that could end the element or open a comment."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def coverage_map_html(
    data: dict[str, Any],
    *,
    title: str = "Which occupations do AI benchmarks cover?",
    subtitle: str | None = None,
    footer: str | None = None,
    headline: str | None = None,
) -> str:
    """The complete page for `coverage_map_data(...)`: no external resource of any kind. The header's first line,
    above the subtitle: `data["headlines"][index][threshold]` (the published answers, models/report/answer.py),
    which the script swaps as the index and threshold change, opening at index `all`'s; else `headline`."""
    opening = data.get("headlines", {}).get("all", {})
    headline = opening.get(str(data.get("opening_threshold", ""))) or headline
    n_occ = len(data["occupations"])
    n_groups = len({o["g"] for o in data["occupations"]})
    default_subtitle = (
        f"Each tile is one of {n_occ} O*NET occupations, grouped into {n_groups} SOC major groups and "
        + ("coloured by the estimated probability that it has a task exercised by at least the chosen number of "
           "distinct benchmark prompts (the legend says how; labels corrected by the judge sample); a "
           "hand-picked set of benchmarks shows the share of its tasks labeled that often instead"
           if data.get("estimates") else
           "coloured by the share of its tasks covered, i.e. labeled with at least the chosen number of "
           "distinct benchmark prompts")
        + f" (labeler: {data.get('labeler') or 'n/a'}). Pick the threshold and the "
        "benchmarks that count, or a named benchmark index; hover over a tile for the tasks, benchmarks and example prompts behind it."
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # forbid any network access by the page itself
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">",
        f"<title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<header>",
        f"<h1>{html.escape(title)}</h1>",
        # the answer first (models/report/answer.py: the sentence summary.md opens with), then how to read tiles
        *([f'<p id="estimate" style="font-size:15px;margin:4px 0 6px"><b>{html.escape(headline or "")}</b></p>']
          if headline or data.get("headlines") else []),
        f'<p class="sub">{html.escape(subtitle or default_subtitle)}</p>',
        '<div class="controls">',
        '<fieldset id="thresholds"><legend>Covered task = at least</legend></fieldset>',
        '<fieldset><legend>Benchmark index</legend><select id="index"></select>'
        '<div id="index-note"></div></fieldset>',
        "<fieldset><legend>Benchmarks counted (labeled prompts)</legend>"
        '<button type="button" id="all-benchmarks">all</button>'
        '<button type="button" id="no-benchmarks">none</button>'
        '<div id="benchmarks"></div></fieldset>',
        "</div>",
        '<div class="legend" id="legend"><b>Share of tasks covered:</b></div>',
        '<p id="summary"></p>',
        "</header>",
        '<main id="map"></main>',
        '<div id="tip" role="tooltip"></div>',
        f"<footer>{html.escape(footer or '')}</footer>",
        f'<script type="application/json" id="coverage-data">{_script_json(data)}</script>',
        f"<script>{_JS}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


_EXTERNAL = re.compile(
    r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|<link\b|@import|url\(\s*["']?(?:https?:)?//""", re.I
)


def map_self_containment(page: str) -> tuple[int, int]:
    """(tiles, external references) of a rendered map: the occupations in its data block, and every
    src/href to a URL, <link> or @import (the map must open offline, from one file)."""
    found = re.search(r'<script type="application/json" id="coverage-data">(.*?)</script>', page, re.S)
    tiles = len(json.loads(found.group(1))["occupations"]) if found else 0
    return tiles, len(_EXTERNAL.findall(page))
