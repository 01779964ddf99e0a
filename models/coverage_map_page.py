"""The coverage map page's stylesheet and script (models/coverage_map.py puts them inline into the page).

The script reads the page's JSON data block: tiles are coloured by the estimated probability covered of the
chosen index and threshold (`estimates`, `classes`) when the page has them and the benchmarks are not picked
by hand, else by the share of tasks the labels cover (`bins`); the legend, the group counts, the summary line
and the hover say which. The header shows `headlines[index][threshold]`, the published answer of the chosen
index and threshold.
"""

CSS = """
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
.legend .checked{flex-basis:100%;color:#555;font-size:11px}
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

SCRIPT = r"""
(function(){
"use strict";
const D = JSON.parse(document.getElementById("coverage-data").textContent);
// the page opens at the threshold its header quotes (the published headline's), else the first
const OPENING = D.thresholds.includes(D.opening_threshold) ? D.opening_threshold : D.thresholds[0];
const BOUNDED = D.bounded_thresholds || [];
const state = {threshold: OPENING, selected: new Set(D.benchmarks.map((b, i) => i)), index: 0,
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
  const input = el("input", {type: "radio", name: "threshold", value: String(t), checked: t === OPENING,
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
  const counted = ix.members.length + ix.unmapped.length;  // as the header and the summary count them
  const option = el("option", {value: ix.name}, ix.title + (ix.version ? " (v" + ix.version + ")" : "") +
    " — " + counted + " benchmark" + (counted === 1 ? "" : "s"));
  option.selected = i === 0;
  indexSelect.append(option);
});
function showIndexNote(){
  const ix = INDEXES[state.index];
  indexNote.replaceChildren();
  indexNote.append(el("div", {}, "Members: " + (ix.members.join(", ") || "none")));
  if (ix.unmapped.length) {
    indexNote.append(el("div", {}, "Also members, adding no task (no prompt labeled as work): " +
      ix.unmapped.join(", ")));
  }
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
      t + unit + " (index " + INDEXES[state.index].name + "; share of the headline's imputation draws" +
      (BOUNDED.includes(t) ? ", whose count at \u2265 " + t + unit + " gives the published bounds their " +
       "ceiling: at least its 97.5th percentile" : "") + "):"));
    D.classes.forEach(([lower, col, label], i) => item(col, label + ": " + counts[i]));
    const held = (D.band_check || {})[String(t)], pct = v => Math.round(100 * v) + "%";
    const span = b => pct(b[0]) + (pct(b[0]) === pct(b[1]) ? "" : "\u2013" + pct(b[1]));
    if (held && (held.covered || held.not)) {  // how wrong a "likely" tile may be, where the truth is known
      const checks = [...new Set([...(held.covered || [0, 0, []])[2], ...(held.not || [0, 0, []])[2]])];
      legend.append(el("span", {className: "checked"}, "Checked against known truths (" + checks.join(", ") +
        "; unit_coverage_simulation_check): of the occupations shown likely covered, " +
        (held.covered ? span(held.covered) : "(no check)") + " were covered; of those shown likely not (p > 0), " +
        (held.not ? span(held.not) : "(no check)") + ". The unsure band is no tested chance."));
    }
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

// header: the published answer of the chosen index and threshold (summary.md's numbers), when the page has them
const estimateLine = document.getElementById("estimate");
function showHeadline(){
  if (!estimateLine || !D.headlines) return;
  const name = INDEXES[state.index].name, t = state.threshold;
  const text = (D.headlines[name] || {})[String(t)];
  estimateLine.replaceChildren(el("b", {}, text ? text + (state.modified ? " [The published figure of index " +
    name + "; a hand-picked set of benchmarks has none.]" : "") : "No published headline for index " + name +
    " at \u2265 " + t + " prompt" + (t > 1 ? "s" : "") + "."));
  estimateLine.dataset.index = name;
  estimateLine.dataset.threshold = String(t);
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
  let expected = 0;
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
      expected += p;
      likely.set(occ, c === 0);
    } else {
      tiles[i].style.background = colour(s);
      delete tiles[i].dataset.p;
      delete tiles[i].dataset.cls;
    }
    coveredOcc += k > 0; coveredTaskTotal += k; taskTotal += occ.n;
  });
  showLegend(est, counts);
  showHeadline();
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
  // the expected count (sum of p) is the headline's mean at an unbounded threshold; at a bounded one it is
  // the imputation's mean count, whose 97.5th percentile is the published ceiling
  const estimated = est ? "Estimated at \u2265 " + t + " prompt" + (t > 1 ? "s" : "") + ": " + counts[0] +
    " of " + D.occupations.length + " occupations likely covered, " + counts[1] + " unsure, " + counts[2] +
    " likely not; expected number covered (the sum of the tiles' p) " + expected.toFixed(0) +
    (BOUNDED.includes(t) ? ", the imputation's mean count (the published bounds' ceiling is at least its " +
     "97.5th percentile)" : ", the headline's estimate") + ". Labels as counted: " : "";
  const ix = INDEXES[state.index], silent = state.modified ? 0 : (ix.unmapped || []).length;
  document.getElementById("summary").textContent = estimated +
    coveredOcc + " of " + D.occupations.length + " occupations have a task with \u2265 " + t +
    " prompt" + (t > 1 ? "s" : "") + " from the " + nb + " selected benchmark" + (nb === 1 ? "" : "s") +
    (silent ? " (and " + silent + " member" + (silent === 1 ? "" : "s") + " of the index with no prompt " +
     "labeled as work)" : "") +
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
    const e = est[Number(tile.dataset.index)] || [0, 0, 0, 0, 0, 0, 0];
    const [p, mean, low, high, , judged, se] = e;
    // Monte Carlo error of p (another seed's draws): a band edge within 2 s.e. is a toss-up
    const edges = D.classes.map(c => c[0]).filter(x => x > 0);
    const mc = se > 0 ? " (\u00b1" + se.toFixed(2) + " Monte Carlo" +
      (edges.some(x => Math.abs(p - x) <= 2 * se) ? "; near a band edge: another run of the draws may change its band" : "") +
      ")" : "";
    tip.append(el("div", {className: "sec"}, "Estimated (index " + INDEXES[state.index].name + ", \u2265 " +
      state.threshold + " prompt" + (state.threshold > 1 ? "s" : "") + ")"));
    tip.append(el("div", {className: "est-p"}, "Probability covered: " + p.toFixed(2) + " \u2014 " +
      D.classes[pClass(p)][2].split(" (")[0] + mc));
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
