"""The coverage map in headless Chromium: 923 tiles, toggles recolour them exactly as the estimator says,
hovering explains a tile, and the page fetches nothing from the network.

The occupations and tasks are the real O*NET 29.2 ones from the mirror; the labels are synthetic (real
benchmark prompts from the mirror, each labeled with tasks drawn by a seeded generator), so the test does not
depend on a labeler. Needs /usr/bin/chromium and /usr/bin/chromedriver (`make browser` installs them).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from models import coverage as cov
from models.coverage_map import (
    NO_COVERAGE_COLOUR,
    colour_for,
    coverage_map_html,
    index_options,
    occupation_shares,
)
from resources.coverage_map_queries import build_coverage_map

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1100",
]
BENCHMARKS = {"gdpval": 80, "swe_lancer": 60, "webarena": 60}


def _read_tsv(path: Path) -> pl.DataFrame:
    return pl.read_csv(path, separator="\t", quote_char=None, infer_schema_length=0)


@pytest.fixture(scope="module")
def onet(mirror: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    tasks = _read_tsv(mirror / "onet" / "Task Statements.txt").select(
        pl.col("O*NET-SOC Code").alias("onet_soc_code"),
        pl.col("Task ID").cast(pl.Int64).alias("task_id"),
        pl.col("Task").alias("task"),
    )
    occupations = (
        _read_tsv(mirror / "onet" / "Occupation Data.txt")
        .select(pl.col("O*NET-SOC Code").alias("onet_soc_code"), pl.col("Title").alias("title"))
        .join(tasks.select("onet_soc_code").unique(), on="onet_soc_code", how="semi")
    )
    return occupations, tasks


@pytest.fixture(scope="module")
def page(onet, mirror: Path, tmp_path_factory) -> dict:
    """The map of the real occupations with synthetic labels, its data and the estimator's coverage."""
    occupations, tasks = onet
    rng = np.random.default_rng(0)
    keys = tasks.select("onet_soc_code", "task_id").rows()
    # prompts concentrate on office/computer work, as real benchmarks do
    weights = np.array([6.0 if code[:2] in ("13", "15", "43") else 0.2 for code, _ in keys])
    weights /= weights.sum()
    hot = rng.choice(len(keys), size=60, replace=False, p=weights)
    prompt_frames, label_rows = [], []
    for bench, n in BENCHMARKS.items():
        prompts = (
            pl.read_ndjson(mirror / "benchmarks" / bench / "prompts.jsonl")
            .select(
                pl.col("benchmark").cast(pl.Utf8),
                pl.col("prompt_id").cast(pl.Utf8),
                pl.col("prompt").cast(pl.Utf8),
            )
            .head(n)
        )
        prompt_frames.append(prompts)
        for prompt_id in prompts["prompt_id"].to_list():
            # most labels hit a pool of popular tasks, so some tasks reach 5 prompts
            picks = {
                int(rng.choice(hot)) if rng.random() < 0.6 else int(rng.choice(len(keys), p=weights))
                for _ in range(3)
            }
            for rank, index in enumerate(sorted(picks), start=1):
                code, task_id = keys[index]
                label_rows.append(
                    {
                        "benchmark": bench,
                        "prompt_id": prompt_id,
                        "onet_soc_code": code,
                        "task_id": task_id,
                        "labeler": "offline",
                        "rank": rank,
                    }
                )
    labels = pl.DataFrame(label_rows)
    task_cov = cov.task_coverage(cov.label_counts(labels), tasks)
    no_hours = pl.DataFrame(
        schema={
            "onet_soc_code": pl.Utf8,
            "task_id": pl.Int64,
            "pi": pl.Float64,
            "occupation_annual_hours": pl.Float64,
        }
    )
    occ_cov = cov.occupation_coverage(task_cov, no_hours, occupations)
    html, data = build_coverage_map(occ_cov, labels, pl.concat(prompt_frames), tasks)
    path = tmp_path_factory.mktemp("map") / "coverage_map.html"
    path.write_text(html, encoding="utf-8")
    return {"path": path, "data": data, "occupation_coverage": occ_cov}


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not Path(binary).exists() and not shutil.which(Path(binary).name):
            pytest.fail(
                f"{binary} is missing: install the Debian packages chromium and chromium-driver "
                "(`make browser`)"
            )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _hex(css: str) -> str:
    """'rgb(12, 44, 132)' -> '#0c2c84'."""
    values = [int(v) for v in css[css.index("(") + 1 : css.index(")")].split(",")[:3]]
    return "#" + "".join(f"{v:02x}" for v in values)


def _tiles(driver) -> list[dict]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('.tile')).map(t => ({code: t.dataset.code, "
        "share: Number(t.dataset.share), colour: getComputedStyle(t).backgroundColor}));"
    )


def _load(driver, path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(path.as_uri())
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))


def _assert_view(tiles: list[dict], expected: dict[str, float]) -> None:
    assert {t["code"] for t in tiles} == set(expected)
    for tile in tiles:
        share = expected[tile["code"]]
        assert tile["share"] == pytest.approx(share, abs=1e-6), tile["code"]
        assert _hex(tile["colour"]) == colour_for(share), tile["code"]


def test_coverage_map_in_headless_chromium(browser, page, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    data, occ = page["data"], page["occupation_coverage"]
    _load(browser, page["path"])

    # 923 tiles in 22 major groups; the default view (>= 1 prompt, all benchmarks) is the estimator's
    tiles = _tiles(browser)
    assert len(tiles) == 923
    assert len(browser.find_elements(By.CSS_SELECTOR, "section.group")) == 22
    share_1 = dict(occ.select("onet_soc_code", "task_share_covered_1").iter_rows())
    _assert_view(tiles, share_1)
    covered_1 = int(occ["covered_1"].sum())
    summary = browser.find_element(By.ID, "summary").text
    assert summary.startswith(
        f"{covered_1} of 923 occupations have a task with \u2265 1 prompt from the 3 selected"
    )

    # threshold toggle: >= 5 prompts recolours tiles, exactly as task_share_covered_5 says
    browser.find_element(By.ID, "threshold-5").click()
    tiles_5 = _tiles(browser)
    _assert_view(tiles_5, dict(occ.select("onet_soc_code", "task_share_covered_5").iter_rows()))
    changed = sum(a["colour"] != b["colour"] for a, b in zip(tiles, tiles_5, strict=True))
    assert changed > 100
    assert browser.find_element(By.ID, "summary").text.startswith(f"{int(occ['covered_5'].sum())} of 923")

    # benchmark toggle: without gdpval, the shares are those of the other two benchmarks' prompts only
    browser.find_element(By.ID, "bench-gdpval").click()
    tiles_no_gdpval = _tiles(browser)
    _assert_view(tiles_no_gdpval, occupation_shares(data, 5, ["swe_lancer", "webarena"]))
    assert sum(a["colour"] != b["colour"] for a, b in zip(tiles_5, tiles_no_gdpval, strict=True)) > 0
    browser.find_element(By.ID, "no-benchmarks").click()
    assert {_hex(t["colour"]) for t in _tiles(browser)} == {NO_COVERAGE_COLOUR}
    browser.find_element(By.ID, "all-benchmarks").click()
    browser.find_element(By.ID, "threshold-1").click()
    _assert_view(_tiles(browser), share_1)

    # hovering a covered tile explains it: occupation, tasks covered, benchmarks and example prompts
    best = occ.sort(["tasks_covered_1", "onet_soc_code"], descending=[True, False]).row(0, named=True)
    tile = browser.find_element(By.CSS_SELECTOR, f'.tile[data-code="{best["onet_soc_code"]}"]')
    ActionChains(browser).move_to_element(tile).perform()
    tip = browser.find_element(By.ID, "tip")
    assert tip.is_displayed()
    text = tip.text
    assert best["title"] in text and best["onet_soc_code"] in text
    assert f"Tasks covered (\u2265 1 prompt): {best['tasks_covered_1']} of {best['n_tasks']}" in text
    assert "Benchmarks behind it" in text and "Example prompts" in text
    occupation = next(o for o in data["occupations"] if o["c"] == best["onet_soc_code"])
    named = [data["benchmarks"][occupation["b"][i]][0] for i in range(0, len(occupation["b"]), 2)]
    assert all(name in text for name in named)

    browser.save_screenshot(str(tmp_path / "coverage_map.png"))
    screenshot = (tmp_path / "coverage_map.png").read_bytes()
    assert screenshot[:8] == b"\x89PNG\r\n\x1a\n" and len(screenshot) > 50_000

    # nothing fetched, nothing broken
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == [], json.dumps(severe)[:500]


def test_index_selector_ticks_the_members_and_says_why_others_are_out(browser, page, tmp_path):
    """The index selector (issue 18): choosing an index ticks exactly its members, the tiles are the
    estimator's shares over them, the summary names the index and the note lists each exclusion's reason."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    membership = pl.DataFrame(
        [
            {"benchmark_index": "all", "version": "1", "title": "Every landed benchmark", "benchmark": b,
             "included": True, "decided_by": "no rules: every landed benchmark", "reason": None}
            for b in (*BENCHMARKS, "webshop")  # webshop: a member with no labeled prompt, so not on the map
        ]
        + [
            {"benchmark_index": "office", "version": "3", "title": "Office work", "benchmark": b,
             "included": b != "webarena", "decided_by": "every rule passed" if b != "webarena" else
             "rule economic_work (work_share >= 0.500; data/indexes/office.toml:9)",
             "reason": None if b != "webarena" else "work_share=0.290 fails work_share >= 0.500"}
            for b in BENCHMARKS
        ]
    )
    data = dict(page["data"])
    data["indexes"] = index_options(membership, [b for b, _ in data["benchmarks"]])
    assert [i["name"] for i in data["indexes"]] == ["all", "office"]
    # the header: the published answer of the chosen index and threshold (issue 25 item 5); office has none at 1
    data["headlines"] = {"all": {"1": "all at one", "5": "all at five"}, "office": {"5": "office at five"}}
    path = tmp_path / "indexed_map.html"
    path.write_text(coverage_map_html(data), encoding="utf-8")
    _load(browser, path)

    def header() -> str:
        return browser.find_element(By.ID, "estimate").text

    assert header() == "all at one"

    assert browser.execute_script("return document.body.dataset.index") == "all"
    assert browser.find_element(By.ID, "summary").text.endswith("Index: Every landed benchmark.")
    # the summary line counts the index's members as the header does: the one adding no task is named a member
    assert ("from the 3 selected benchmarks (and 1 member of the index with no prompt labeled as work)"
            in browser.find_element(By.ID, "summary").text)
    # the selector counts every member, as the header and summary.md do, and names the one adding no task
    options = [o.text for o in Select(browser.find_element(By.ID, "index")).options]
    assert options[0].endswith("— 4 benchmarks") and options[1].endswith("— 2 benchmarks"), options
    assert ("Also members, adding no task (no prompt labeled as work): webshop"
            in browser.find_element(By.ID, "index-note").text)
    Select(browser.find_element(By.ID, "index")).select_by_value("office")
    assert header() == "No published headline for index office at \u2265 1 prompt."
    browser.find_element(By.ID, "threshold-5").click()
    assert header() == "office at five"
    browser.find_element(By.ID, "threshold-1").click()
    checked = {b: browser.find_element(By.ID, f"bench-{b}").is_selected() for b in BENCHMARKS}
    assert checked == {"gdpval": True, "swe_lancer": True, "webarena": False}
    _assert_view(_tiles(browser), occupation_shares(data, 1, ["gdpval", "swe_lancer"]))
    summary = browser.find_element(By.ID, "summary").text
    assert "from the 2 selected benchmarks" in summary and summary.endswith("Index: Office work.")
    note = browser.find_element(By.ID, "index-note")
    assert "Members: gdpval, swe_lancer" in note.text
    browser.find_element(By.CSS_SELECTOR, "#index-note summary").click()
    assert "webarena: work_share=0.290 fails work_share >= 0.500 (rule economic_work" in note.text
    # a hand toggle after choosing the index is allowed, and the summary says so
    browser.find_element(By.ID, "bench-webarena").click()
    assert browser.find_element(By.ID, "summary").text.endswith("Index: Office work (benchmarks changed by hand).")
    browser.find_element(By.ID, "threshold-5").click()
    assert header() == "office at five [The published figure of index office; a hand-picked set of benchmarks has none.]"
    browser.find_element(By.ID, "threshold-1").click()
    _assert_view(_tiles(browser), occupation_shares(data, 1, list(BENCHMARKS)))
    Select(browser.find_element(By.ID, "index")).select_by_value("all")
    assert header() == "all at one"
    _assert_view(_tiles(browser), dict(page["occupation_coverage"].select("onet_soc_code",
                                                                         "task_share_covered_1").iter_rows()))
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == [], json.dumps(severe)[:500]


def _synthetic_estimates(data: dict) -> pl.DataFrame:
    """occupation_estimates rows for index `all` (both thresholds) built from the page's own counts, with every
    class present: occupations with labeled tasks get a p from their share, a few without any get an unsure
    p (the estimates see work the labels miss), and the sparse table leaves the rest out (p 0)."""
    rows = []
    for position, occ in enumerate(data["occupations"]):
        labelled = sum(pairs[i + 1] for _, _, pairs in occ["k"] for i in range(0, len(pairs), 2))
        for threshold in (1, 5):
            if labelled:
                p = min(1.0, 0.3 + 0.6 * labelled / threshold)
            elif position % 7 == 0:
                p = 0.4
            else:
                continue
            rows.append({"benchmark_index": "all", "onet_soc_code": occ["c"], "threshold": threshold,
                         "p_covered": p, "prompts_mean": 2.5 * p * labelled + 0.5,
                         "prompts_low": 0.0, "prompts_high": 4.0 * p * labelled + 3.0,
                         "labels_count": labelled, "judged_texts": position % 3,
                         "p_covered_mc_se": (p * (1 - p) / 199) ** 0.5})
    return pl.DataFrame(rows)


def test_tiles_show_the_estimated_probability_with_its_legend_and_hover(browser, page, tmp_path):
    """Issue 25 item 5: with occupation_estimates, a tile's colour is its p_covered class at the chosen
    threshold (likely covered / unsure / likely not, counted in the legend), the hover gives the expected
    prompts with their interval and then the labels as counted, named as such; a hand-picked benchmark set
    has no estimate and falls back to the labels' shares, saying why."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    from models.coverage_map import ESTIMATE_CLASSES, colour_for_p, estimate_classes, map_estimates

    estimates = _synthetic_estimates(page["data"])
    data = dict(page["data"])
    data["estimates"] = map_estimates(estimates, [o["c"] for o in data["occupations"]])
    data["opening_threshold"] = 5  # the header's headline is at >= 5 prompts: the page opens there
    # how the outer bands held in the checks (models/coverage_map.py band_check): >= 5 has no "likely not" check
    data["band_check"] = {"1": {"covered": [0.864, 1.0, ["split_fifth", "split_half"]],
                                "not": [0.03, 0.067, ["split_half"]]},
                          "5": {"covered": [0.992, 0.997, ["simulated"]]}}
    path = tmp_path / "estimated_map.html"
    path.write_text(coverage_map_html(data), encoding="utf-8")
    _load(browser, path)
    assert browser.find_element(By.ID, "threshold-5").is_selected()
    assert not browser.find_element(By.ID, "threshold-1").is_selected()

    for threshold in (5, 1):
        if threshold == 1:
            browser.find_element(By.ID, "threshold-1").click()
        expected = {r["onet_soc_code"]: r["p_covered"]
                    for r in estimates.filter(pl.col("threshold") == threshold).iter_rows(named=True)}
        classes = estimate_classes(data, "all", threshold)
        counts = [sum(1 for c in classes.values() if c == i) for i in range(3)]
        assert all(counts), counts  # every class shows up
        tiles = browser.execute_script(
            "return Array.from(document.querySelectorAll('.tile')).map(t => ({code: t.dataset.code, "
            "p: Number(t.dataset.p), colour: getComputedStyle(t).backgroundColor}));"
        )
        assert len(tiles) == 923
        for tile in tiles:
            p = expected.get(tile["code"], 0.0)
            assert tile["p"] == pytest.approx(p, abs=1e-4), tile["code"]
            assert _hex(tile["colour"]) == colour_for_p(p), tile["code"]
        legend = browser.find_element(By.ID, "legend").text
        assert legend.startswith(f"Tile colour: estimated probability p that the occupation has a task with \u2265 "
                                 f"{threshold}")
        for (_, _, label), n in zip(ESTIMATE_CLASSES, counts, strict=True):
            assert f"{label}: {n}" in legend
        checked = ("Checked against known truths (split_fifth, split_half; unit_coverage_simulation_check): of the "
                   "occupations shown likely covered, 86%\u2013100% were covered; of those shown likely not (p > 0), "
                   "3%\u20137%." if threshold == 1 else
                   "Checked against known truths (simulated; unit_coverage_simulation_check): of the occupations "
                   "shown likely covered, 99%\u2013100% were covered; of those shown likely not (p > 0), (no check).")
        assert checked + " The unsure band is no tested chance." in legend, legend
        summary = browser.find_element(By.ID, "summary").text
        assert summary.startswith(f"Estimated at \u2265 {threshold} prompt")
        assert f"{counts[0]} of 923 occupations likely covered, {counts[1]} unsure, {counts[2]} likely not" in summary
        # the expected count is the sum of the tiles' p: the headline at >= 5; at >= 1, where the headline is
        # bounds, the imputation's mean count, whose 97.5th percentile is the published ceiling (the audit found
        # "the ceiling side of the published bounds" read as if the mean were the ceiling), and the legend says so
        expected_count = sum(expected.values())
        assert f"expected number covered (the sum of the tiles' p) {expected_count:.0f}" in summary
        assert ("the imputation's mean count (the published bounds' ceiling is at least its 97.5th percentile)"
                in summary) == (threshold == 1)
        assert ("gives the published bounds their ceiling: at least its 97.5th percentile" in legend) == (
            threshold == 1)
        assert ("the headline's estimate" in summary) == (threshold == 5)
        assert "Labels as counted: " in summary
    browser.find_element(By.ID, "threshold-5").click()

    # hover: the estimate first, then the labels as counted, named as such
    row = estimates.filter(pl.col("threshold") == 5).sort(["p_covered", "onet_soc_code"],
                                                            descending=[True, False]).row(0, named=True)
    tile = browser.find_element(By.CSS_SELECTOR, f'.tile[data-code="{row["onet_soc_code"]}"]')
    ActionChains(browser).move_to_element(tile).perform()
    text = browser.find_element(By.ID, "tip").text
    assert f"Probability covered: {row['p_covered']:.2f} \u2014 likely covered" in text

    def fmt(value: float) -> str:  # as the page shows the (4-decimal) numbers it holds
        value = round(value, 4)
        return f"{value:.0f}" if value >= 10 else f"{value:.1f}"

    assert (f"Expected prompts on its most-exercised task: {fmt(row['prompts_mean'])} (95% interval "
            f"{fmt(row['prompts_low'])}\u2013{fmt(row['prompts_high'])})") in text
    assert f"Prompts labeled with its most-labeled task: {row['labels_count']}" in text
    assert text.index("Expected prompts") < text.index("Labels as counted (for comparison)")
    assert text.index("Labels as counted") < text.index("Tasks covered (\u2265 5 prompts)")

    # the Monte Carlo error of p: shown when there is one, with a warning where a band edge is within 2 s.e.
    assert "Monte Carlo" not in text  # p = 1: none
    rows = estimates.filter((pl.col("threshold") == 5) & (pl.col("p_covered") < 1)).with_columns(
        (pl.min_horizontal((pl.col("p_covered") - 0.9).abs(), (pl.col("p_covered") - 0.1).abs())
         <= 2 * pl.col("p_covered_mc_se")).alias("near"))
    for near in (False, True):
        row = rows.filter(pl.col("near") == near).sort("onet_soc_code").row(0, named=True)
        tile = browser.find_element(By.CSS_SELECTOR, f'.tile[data-code="{row["onet_soc_code"]}"]')
        ActionChains(browser).move_to_element(tile).perform()
        text = browser.find_element(By.ID, "tip").text
        assert f"(\u00b1{row['p_covered_mc_se']:.2f} Monte Carlo" in text, text
        assert ("near a band edge" in text) == near, text

    # a hand-picked set of benchmarks has no estimate: the labels' shares, and the legend says why
    browser.find_element(By.ID, "bench-gdpval").click()
    _assert_view(_tiles(browser), occupation_shares(data, 5, ["swe_lancer", "webarena"]))
    legend = browser.find_element(By.ID, "legend").text
    assert "labels as counted (benchmarks changed by hand: estimates exist for the named indexes only)" in legend
    assert browser.find_element(By.ID, "summary").text.startswith(
        f"{sum(1 for v in occupation_shares(data, 5, ['swe_lancer', 'webarena']).values() if v > 0)} of 923")
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == [], json.dumps(severe)[:500]
