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

Pure: the counts and examples arrive aggregated (`MapAggregates`); pipelines/coverage_map_queries.py
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

from models.coverage import THRESHOLDS
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
# Tile classes of the estimated probability that an occupation is covered (occupation_estimates.p_covered):
# (lower bound, colour, legend label), checked from the top; the same cut-offs as the gap finder's.
LIKELY_COVERED, LIKELY_NOT = 0.9, 0.1
ESTIMATE_CLASSES: tuple[tuple[float, str, str], ...] = (
    (LIKELY_COVERED, "#225ea8", "likely covered (p \u2265 0.9)"),
    (LIKELY_NOT, "#fdae61", "unsure (0.1 \u2264 p < 0.9)"),
    (0.0, "#e3e3e3", "likely not (p < 0.1)"),
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
    occupations; pipelines/coverage_map_queries.py computes it in DuckDB, so memory does not grow with the
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
) -> dict[str, Any]:
    """The page's data (JSON-ready) from `map_occupations(...)` and the label aggregates: tiles, groups,
    benchmarks, examples, and the per-occupation estimates (`map_estimates`) when `occupation_estimates` is
    given. The index selector holds only `all` until a builder fills it (index_options)."""
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
        "occupations": occupation_rows,
        "examples": example_list,
        "labeler": aggregates.labeler,
        "indexes": index_options(None, benchmarks),  # the builders fill in benchmark_index_membership
        "bins": [[lower, colour, label] for lower, colour, label in COLOUR_BINS],
        "no_coverage_colour": NO_COVERAGE_COLOUR,
        "classes": [[lower, colour, label] for lower, colour, label in ESTIMATE_CLASSES],
        "estimates": map_estimates(occupation_estimates, occ["onet_soc_code"].to_list(), thresholds),
    }


def map_estimates(
    occupation_estimates: pl.DataFrame | None, codes: Sequence[str], thresholds: Sequence[int] = THRESHOLDS
) -> dict[str, dict[str, list[list[float] | None]]]:
    """index -> str(threshold) -> one entry per occupation of `codes` (the page's tile order): [p_covered,
    prompts_mean, prompts_low, prompts_high, labels_count, judged_texts] (the prompts: on the occupation's
    most-exercised task, so covered <=> prompts >= threshold), or None where the table has no row (p 0, no
    prompts). Empty without estimates."""
    if occupation_estimates is None or occupation_estimates.is_empty():
        return {}
    position = {code: i for i, code in enumerate(codes)}
    fields = ["p_covered", "prompts_mean", "prompts_low", "prompts_high", "labels_count", "judged_texts"]
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
    title, version, members (benchmarks on the map it includes) and excluded ([benchmark, decided_by,
    reason]). Without a membership table: only `all`, every benchmark on the map."""
    on_map = set(benchmarks)
    if membership is None or membership.is_empty():
        return [{"name": "all", "title": "Every landed benchmark", "version": "", "members": sorted(on_map),
                 "excluded": []}]
    out = []
    names = sorted(set(membership["benchmark_index"].to_list()), key=lambda n: (n != "all", n))
    for name in names:
        rows = membership.filter(pl.col("benchmark_index") == name).sort("benchmark")
        first = rows.row(0, named=True)
        out.append({
            "name": name,
            "title": first.get("title") or name,
            "version": first.get("version") or "",
            "members": [b for b in rows.filter(pl.col("included"))["benchmark"].to_list() if b in on_map],
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


_CSS = """
*{box-sizing:border-box}
body{font-family:-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0;color:#222;
background:#fafafa}
header{padding:14px 20px 8px;background:#fff;border-bottom:1px solid #ddd;position:sticky;top:0;z-index:5}
h1{font-size:19px;margin:0 0 4px}
.sub{font-size:12px;color:#555;margin:0 0 8px;max-width:1100px}
.controls{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start;font-size:12px}
fieldset{border:1px solid #ddd;border-radius:6px;padding:4px 8px;margin:0;background:#fff}
legend{font-weight:600;padding:0 4px}
#benchmarks{display:flex;flex-wrap:wrap;gap:2px 10px;max-width:820px}
#benchmarks label{white-space:nowrap}
button{font-size:11px;margin:2px 4px 2px 0;padding:1px 8px;cursor:pointer}
#summary{font-size:13px;margin:8px 0 0;font-weight:600}
#index-note{font-size:11px;color:#444;max-width:520px;margin:3px 0 0}
#index-note details{margin-top:2px}
.legend{display:flex;gap:8px;align-items:center;font-size:11px;margin-top:6px;flex-wrap:wrap}
.legend span.sw{display:inline-block;width:14px;height:14px;border-radius:2px;vertical-align:middle;
margin-right:3px}
main{padding:10px 20px 40px;display:grid;grid-template-columns:repeat(auto-fill,minmax(330px,1fr));gap:10px}
section.group{background:#fff;border:1px solid #e2e2e2;border-radius:6px;padding:6px 8px 8px}
section.group h2{font-size:12px;margin:0 0 5px;font-weight:600;display:flex;
justify-content:space-between;gap:8px}
section.group h2 .count{color:#666;font-weight:400;white-space:nowrap}
.tiles{display:flex;flex-wrap:wrap;gap:2px}
.tile{width:15px;height:15px;border-radius:2px;background:#e3e3e3;cursor:pointer;outline-offset:1px}
.tile:hover,.tile:focus{outline:2px solid #f39c12}
#tip{position:fixed;display:none;max-width:430px;background:#fff;border:1px solid #bbb;border-radius:6px;
box-shadow:0 4px 14px rgba(0,0,0,.18);padding:8px 10px;font-size:12px;z-index:10;pointer-events:none}
#tip h3{font-size:13px;margin:0 0 2px}
#tip .code{color:#777;font-size:11px;margin-bottom:4px}
#tip .sec{font-weight:600;margin-top:6px}
#tip ul{margin:2px 0 0 16px;padding:0}
#tip li{margin:1px 0}
#tip .ex{color:#333;font-style:italic}
footer{font-size:11px;color:#666;padding:0 20px 20px}
"""

_JS = r"""
(function(){
"use strict";
const D = JSON.parse(document.getElementById("coverage-data").textContent);
const state = {threshold: D.thresholds[0], selected: new Set(D.benchmarks.map((b, i) => i)), index: 0,
  modified: false};
const INDEXES = (D.indexes && D.indexes.length) ? D.indexes :
  [{name: "all", title: "Every landed benchmark", version: "", members: D.benchmarks.map(b => b[0]),
    excluded: []}];
const el = (tag, props, text) => { const e = document.createElement(tag); if (props) Object.assign(e, props);
  if (text !== undefined) e.textContent = text; return e; };
function colour(share){
  if (share <= 0) return D.no_coverage_colour;
  let c = D.bins[0][1];
  for (const [lower, col] of D.bins) { if (share >= lower) c = col; }
  return c;
}
function taskCount(pairs){
  let n = 0;
  for (let i = 0; i < pairs.length; i += 2) { if (state.selected.has(pairs[i])) n += pairs[i + 1]; }
  return n;
}
function coveredTasks(occ){
  const out = [];
  for (const [id, text, pairs] of occ.k) {
    const n = taskCount(pairs);
    if (n >= state.threshold) out.push([id, text, n]);
  }
  out.sort((a, b) => b[2] - a[2] || a[0] - b[0]);
  return out;
}
function share(occ){ return occ.n ? coveredTasks(occ).length / occ.n : 0; }
// the estimates (occupation_estimates) of the chosen index and threshold; null when the benchmarks were
// changed by hand or the index has none: the tiles then show the labels as counted
function estimates(){
  if (state.modified || !D.estimates) return null;
  const ix = D.estimates[INDEXES[state.index].name];
  return ix ? (ix[String(state.threshold)] || null) : null;
}
function pClass(p){
  for (let i = 0; i < D.classes.length; i++) { if (p >= D.classes[i][0]) return i; }
  return D.classes.length - 1;
}
const fmt = x => x >= 10 ? x.toFixed(0) : x.toFixed(1);

// controls
const thresholdBox = document.getElementById("thresholds");
D.thresholds.forEach((t, i) => {
  const label = el("label");
  const input = el("input", {type: "radio", name: "threshold", value: String(t), checked: i === 0,
                             id: "threshold-" + t});
  input.addEventListener("change", () => { state.threshold = t; render(); });
  label.append(input, " \u2265 " + t + " prompt" + (t > 1 ? "s" : ""));
  thresholdBox.append(label, " ");
});
const benchBox = document.getElementById("benchmarks");
D.benchmarks.forEach(([name, n], i) => {
  const label = el("label");
  const input = el("input", {type: "checkbox", checked: true, value: name, id: "bench-" + name});
  input.dataset.index = String(i);
  input.addEventListener("change", () => {
    if (input.checked) state.selected.add(i); else state.selected.delete(i);
    state.modified = true;
    render();
  });
  label.append(input, " " + name + " (" + n + ")");
  benchBox.append(label);
});
function setAll(on){
  benchBox.querySelectorAll("input").forEach(input => { input.checked = on; });
  state.selected = new Set(on ? D.benchmarks.map((b, i) => i) : []);
  state.modified = true;
  render();
}
// index selector: ticks exactly the index's members; the benchmark toggles still work afterwards
const indexSelect = document.getElementById("index");
const indexNote = document.getElementById("index-note");
INDEXES.forEach((ix, i) => {
  const option = el("option", {value: ix.name}, ix.title + (ix.version ? " (v" + ix.version + ")" : "") +
    " — " + ix.members.length + " benchmark" + (ix.members.length === 1 ? "" : "s"));
  option.selected = i === 0;
  indexSelect.append(option);
});
function showIndexNote(){
  const ix = INDEXES[state.index];
  indexNote.replaceChildren();
  indexNote.append(el("div", {}, "Members: " + (ix.members.join(", ") || "none")));
  if (ix.excluded.length) {
    const details = el("details");
    details.append(el("summary", {}, ix.excluded.length + " left out, and why"));
    const ul = el("ul");
    ix.excluded.forEach(([name, by, why]) => ul.append(el("li", {}, name + ": " + why + " (" + by + ")")));
    details.append(ul);
    indexNote.append(details);
  }
}
function selectIndex(position){
  state.index = position;
  const members = new Set(INDEXES[position].members);
  state.selected = new Set();
  benchBox.querySelectorAll("input").forEach(input => {
    input.checked = members.has(input.value);
    if (input.checked) state.selected.add(Number(input.dataset.index));
  });
  state.modified = false;
  showIndexNote();
  render();
}
indexSelect.addEventListener("change", () => selectIndex(indexSelect.selectedIndex));
showIndexNote();
document.getElementById("all-benchmarks").addEventListener("click", () => setAll(true));
document.getElementById("no-benchmarks").addEventListener("click", () => setAll(false));

// legend: what the tile colour means in the current view
const legend = document.getElementById("legend");
const item = (col, text) => { const s = el("span"); s.append(el("span", {className: "sw"}), text);
  s.firstChild.style.background = col; legend.append(s); };
function showLegend(est, counts){
  legend.replaceChildren();
  const t = state.threshold, unit = " prompt" + (t > 1 ? "s" : "");
  if (est) {
    legend.append(el("b", {}, "Tile colour: estimated probability p that the occupation has a task with \u2265 " +
      t + unit + " (index " + INDEXES[state.index].name + "; share of the headline's imputation draws):"));
    D.classes.forEach(([lower, col, label], i) => item(col, label + ": " + counts[i]));
  } else {
    const why = D.estimates && Object.keys(D.estimates).length ? (state.modified ?
      " (benchmarks changed by hand: estimates exist for the named indexes only)" :
      " (no estimates for this index)") : " (no estimates in this export)";
    legend.append(el("b", {}, "Tile colour: share of tasks covered, labels as counted" + why + ":"));
    item(D.no_coverage_colour, "no task covered");
    D.bins.forEach(([lower, col, label]) => item(col, label));
  }
  legend.dataset.mode = est ? "estimate" : "labels";
}

// tiles
const main = document.getElementById("map");
const groupEls = D.groups.map(([code, title]) => {
  const section = el("section", {className: "group"});
  section.dataset.group = code;
  const h2 = el("h2");
  const count = el("span", {className: "count"});
  h2.append(el("span", {}, title), count);
  const tiles = el("div", {className: "tiles"});
  section.append(h2, tiles);
  return {section, count, tiles, occs: []};
});
const tiles = D.occupations.map((occ, index) => {
  const tile = el("div", {className: "tile", tabIndex: 0});
  tile.dataset.index = String(index);
  tile.dataset.code = occ.c;
  tile.setAttribute("aria-label", occ.t);
  groupEls[occ.g].tiles.append(tile);
  groupEls[occ.g].occs.push(occ);
  return tile;
});
groupEls.forEach(g => { if (g.occs.length) main.append(g.section); });

function render(){
  let coveredOcc = 0, coveredTaskTotal = 0, taskTotal = 0;
  const est = estimates(), counts = D.classes.map(() => 0), likely = new Map();
  D.occupations.forEach((occ, i) => {
    const k = coveredTasks(occ).length, s = occ.n ? k / occ.n : 0;
    tiles[i].dataset.share = s.toFixed(6);
    tiles[i].dataset.covered = String(k);
    if (est) {
      const p = est[i] ? est[i][0] : 0, c = pClass(p);
      tiles[i].style.background = D.classes[c][1];
      tiles[i].dataset.p = p.toFixed(4);
      tiles[i].dataset.cls = String(c);
      counts[c] += 1;
      likely.set(occ, c === 0);
    } else {
      tiles[i].style.background = colour(s);
      delete tiles[i].dataset.p;
      delete tiles[i].dataset.cls;
    }
    coveredOcc += k > 0; coveredTaskTotal += k; taskTotal += occ.n;
  });
  showLegend(est, counts);
  groupEls.forEach(g => {
    if (est) {
      g.count.textContent = g.occs.filter(o => likely.get(o)).length + " of " + g.occs.length + " likely covered";
    } else {
      const k = g.occs.filter(o => coveredTasks(o).length > 0).length;
      g.count.textContent = k + " of " + g.occs.length + " covered (labels as counted)";
    }
  });
  const pct = x => (100 * x).toFixed(1) + "%";
  const t = state.threshold, nb = state.selected.size;
  const estimated = est ? "Estimated at \u2265 " + t + " prompt" + (t > 1 ? "s" : "") + ": " + counts[0] +
    " of " + D.occupations.length + " occupations likely covered, " + counts[1] + " unsure, " + counts[2] +
    " likely not. Labels as counted: " : "";
  document.getElementById("summary").textContent = estimated +
    coveredOcc + " of " + D.occupations.length + " occupations have a task with \u2265 " + t +
    " prompt" + (t > 1 ? "s" : "") + " from the " + nb + " selected benchmark" + (nb === 1 ? "" : "s") +
    "; " + coveredTaskTotal.toLocaleString("en-US") + " of " + taskTotal.toLocaleString("en-US") + " tasks (" +
    pct(taskTotal ? coveredTaskTotal / taskTotal : 0) + ") are covered. Index: " + INDEXES[state.index].title +
    (state.modified ? " (benchmarks changed by hand)" : "") + ".";
  document.body.dataset.index = INDEXES[state.index].name;
}

// tooltip
const tip = document.getElementById("tip");
function showTip(tile, x, y){
  const occ = D.occupations[Number(tile.dataset.index)];
  const covered = coveredTasks(occ);
  tip.replaceChildren();
  tip.append(el("h3", {}, occ.t), el("div", {className: "code"}, occ.c + " \u00b7 " + D.groups[occ.g][1]));
  const pctCovered = occ.n ? (100 * covered.length / occ.n).toFixed(0) : 0;
  const unit = state.threshold > 1 ? " prompts): " : " prompt): ";
  const est = estimates();
  if (est) {
    const e = est[Number(tile.dataset.index)] || [0, 0, 0, 0, 0, 0];
    const [p, mean, low, high, , judged] = e;
    tip.append(el("div", {className: "sec"}, "Estimated (index " + INDEXES[state.index].name + ", \u2265 " +
      state.threshold + " prompt" + (state.threshold > 1 ? "s" : "") + ")"));
    tip.append(el("div", {className: "est-p"}, "Probability covered: " + p.toFixed(2) + " \u2014 " +
      D.classes[pClass(p)][2].split(" (")[0]));
    tip.append(el("div", {className: "est-prompts"}, "Expected prompts on its most-exercised task: " + fmt(mean) +
      " (95% interval " + fmt(low) + "\u2013" + fmt(high) + ")"));
    tip.append(el("div", {}, "Judged texts exercising it: " + judged));
  }
  tip.append(el("div", {className: "sec"}, "Labels as counted" + (est ? " (for comparison)" : "")));
  if (est) {
    const labelled = (est[Number(tile.dataset.index)] || [0, 0, 0, 0, 0])[4];
    tip.append(el("div", {className: "labels-count"}, "Prompts labeled with its most-labeled task: " + labelled));
  }
  tip.append(el("div", {}, "Tasks covered (\u2265 " + state.threshold + unit + covered.length +
    " of " + occ.n + " (" + pctCovered + "%)"));
  if (covered.length) {
    const ul = el("ul");
    covered.slice(0, 3).forEach(([id, text, n]) => ul.append(
      el("li", {}, (text || ("task " + id)) + " \u2014 " + n + " prompt" + (n > 1 ? "s" : ""))));
    if (covered.length > 3) ul.append(el("li", {}, "\u2026 and " + (covered.length - 3) + " more"));
    tip.append(ul);
  }
  const benches = [];
  for (let i = 0; i < occ.b.length; i += 2) {
    if (state.selected.has(occ.b[i])) benches.push([occ.b[i], occ.b[i + 1]]);
  }
  benches.sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  tip.append(el("div", {className: "sec"}, "Benchmarks behind it"));
  if (benches.length) {
    const named = benches.map(([b, n]) => D.benchmarks[b][0] + " (" + n + (n > 1 ? " prompts)" : " prompt)"));
    tip.append(el("div", {}, named.join(", ")));
  } else {
    tip.append(el("div", {}, "none of the selected benchmarks has a prompt labeled with its tasks"));
  }
  const examples = occ.e.map(i => D.examples[i]).filter(ex => state.selected.has(ex[0])).slice(0, 3);
  if (examples.length) {
    tip.append(el("div", {className: "sec"}, "Example prompts"));
    const ul = el("ul");
    examples.forEach(([b, id, text]) => {
      const li = el("li");
      li.append(el("b", {}, D.benchmarks[b][0] + ": "), el("span", {className: "ex"}, text));
      ul.append(li);
    });
    tip.append(ul);
  }
  tip.style.display = "block";
  const w = tip.offsetWidth, h = tip.offsetHeight;
  tip.style.left = Math.max(4, Math.min(x + 14, window.innerWidth - w - 8)) + "px";
  tip.style.top = Math.max(4, (y + 14 + h > window.innerHeight ? y - h - 10 : y + 14)) + "px";
}
const onPointer = ev => { const t = ev.target.closest(".tile"); if (t) showTip(t, ev.clientX, ev.clientY); };
main.addEventListener("mouseover", onPointer);
main.addEventListener("mousemove", onPointer);
main.addEventListener("mouseout", ev => { if (ev.target.closest(".tile")) tip.style.display = "none"; });
main.addEventListener("focusin", ev => { const t = ev.target.closest(".tile");
  if (t) { const r = t.getBoundingClientRect(); showTip(t, r.right, r.bottom); } });
main.addEventListener("focusout", () => { tip.style.display = "none"; });
render();
document.body.dataset.ready = "1";
})();
"""


def coverage_map_html(
    data: dict[str, Any],
    *,
    title: str = "Which occupations do AI benchmarks cover?",
    subtitle: str | None = None,
    footer: str | None = None,
    headline: str | None = None,
) -> str:
    """The complete page for `coverage_map_data(...)`: no external resource of any kind. `headline`: the
    published estimate (headline_estimates), shown under the subtitle; the tiles count the labels as they are."""
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
        f'<p class="sub">{html.escape(subtitle or default_subtitle)}</p>',
        *([f'<p class="sub" id="estimate"><b>Headline:</b> {html.escape(headline)}</p>'] if headline else []),
        '<div class="controls">',
        '<fieldset id="thresholds"><legend>Covered task = at least</legend></fieldset>',
        '<fieldset><legend>Benchmark index</legend><select id="index"></select>'
        '<div id="index-note"></div></fieldset>',
        "<fieldset><legend>Benchmarks counted</legend>"
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
