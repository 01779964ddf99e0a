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
from pipelines.coverage_map_queries import build_coverage_map

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
            for b in BENCHMARKS
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
    path = tmp_path / "indexed_map.html"
    path.write_text(coverage_map_html(data), encoding="utf-8")
    _load(browser, path)

    assert browser.execute_script("return document.body.dataset.index") == "all"
    assert browser.find_element(By.ID, "summary").text.endswith("Index: Every landed benchmark.")
    Select(browser.find_element(By.ID, "index")).select_by_value("office")
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
    _assert_view(_tiles(browser), occupation_shares(data, 1, list(BENCHMARKS)))
    Select(browser.find_element(By.ID, "index")).select_by_value("all")
    _assert_view(_tiles(browser), dict(page["occupation_coverage"].select("onet_soc_code",
                                                                         "task_share_covered_1").iter_rows()))
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == [], json.dumps(severe)[:500]
