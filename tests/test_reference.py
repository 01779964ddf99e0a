"""Reference warehouse: materialize every reference asset on the mirrored data, then check counts, sums,
match rates, the GX asset checks, and the behaviour on broken input (tests/fixtures/reference/)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from assets import module_assets, module_checks, reference_checks
from assets import reference as reference_assets
from models import expectations as ex
from models import reference as ref
from models.errors import InputError, SourceNotFoundError
from resources import warehouse as wh
from resources.dagster_resources import Warehouse
from resources.io_manager import WarehouseIOManager
from resources.readers import read_source
from resources.sources import resolve_source, sha256_file

FIXTURES = Path(__file__).parent / "fixtures" / "reference"


def broken_task_statements(mirror: Path, kind: str, folder: Path) -> Path:
    """A damaged copy of the mirror's O*NET `Task Statements.txt`, made at test time (mirrored data is never
    committed): 'truncated' = header + 3 records, then record 4 cut after 60 characters with no final newline
    (InputError at line 5); 'bad_task_id' = header + 5 records with Task ID '88x27' on line 4; 'short' = header
    + the first 50 records (parses, then fails the blocking row-count expectation)."""
    lines = (mirror / "onet" / "Task Statements.txt").read_bytes().split(b"\n")
    if kind == "truncated":
        data = b"\n".join(lines[:4]) + b"\n" + lines[4][:60]
    elif kind == "bad_task_id":
        fields = lines[3].split(b"\t")
        fields[1] = fields[1][:2] + b"x" + fields[1][2:]
        data = b"\n".join([*lines[:3], b"\t".join(fields), *lines[4:6]]) + b"\n"
    elif kind == "short":
        data = b"\n".join(lines[:51]) + b"\n"
    else:
        raise ValueError(kind)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"Task Statements.{kind}.txt"
    path.write_bytes(data)
    return path
ALL = [*module_assets(reference_assets), *module_checks(reference_checks)]


def _resources(path: Path) -> dict[str, object]:
    warehouse = Warehouse(path=str(path))
    return {"warehouse": warehouse, "io_manager": WarehouseIOManager(warehouse=warehouse)}


def _materialize(path: Path, selection: list[str] | None = None) -> dg.ExecuteInProcessResult:
    return dg.materialize(ALL, resources=_resources(path), selection=selection, raise_on_error=False)


def _error_text(result: dg.ExecuteInProcessResult) -> str:
    """Messages of every step failure with their causes (the InputError sits in the cause chain)."""
    texts = []
    for event in result.get_step_failure_events():
        error = event.event_specific_data.error
        while error is not None:
            texts.append(f"{error.cls_name}: {error.message}")
            error = error.cause
    return "\n".join(texts)


def _table_digest(path: Path, table: str) -> str:
    df = wh.read_table(path, table)
    return hashlib.sha256(df.sort(df.columns[:2]).write_csv().encode()).hexdigest()


@pytest.fixture(scope="module")
def built(mirror: Path, tmp_path_factory: pytest.TempPathFactory):
    """All reference assets and checks materialized once from the mirror into a temporary warehouse."""
    root = tmp_path_factory.mktemp("reference")
    raw = root / "raw"
    raw.mkdir()
    with pytest.MonkeyPatch.context() as patch:  # as empty_raw_dir does, for the whole module
        patch.setenv("BENCHMAP_RAW_DIR", str(raw))
        patch.setenv("BENCHMAP_OFFLINE", "1")
        path = root / "warehouse" / "benchmap.duckdb"
        result = _materialize(path)
    assert result.success, _error_text(result)
    return path, result


def _table(built, name: str) -> pl.DataFrame:
    return wh.read_table(built[0], name)


def _metadata(built, asset: str) -> dict[str, object]:
    events = [e for e in built[1].get_asset_materialization_events() if e.asset_key.to_user_string() == asset]
    assert len(events) == 1
    return {k: getattr(v, "value", v) for k, v in events[0].materialization.metadata.items()}


# --- the materialized warehouse --------------------------------------------------------------------------


def test_every_asset_check_passes(built) -> None:
    evaluations = built[1].get_asset_check_evaluations()
    assert {e.check_name for e in evaluations} == {c.check_key.name for c in module_checks(reference_checks)}
    failed = [(e.check_name, e.description) for e in evaluations if not e.passed]
    assert failed == []
    by_name = {e.check_name: e for e in evaluations}
    md = by_name["task_hours_expectations"].metadata
    assert md["failed"].value == 0 and md["expectations"].value >= 8
    assert "expect_column_values_to_be_between" in md["results"].value


def test_assets_record_source_version_sha256_and_counts(built, mirror: Path) -> None:
    md = _metadata(built, "onet_tasks")
    assert md["sha256"] == sha256_file(mirror / "onet" / "Task Statements.txt")
    assert "O*NET 29.2" in md["source_version"]
    assert md["source_origin"] == "mirror"
    assert md["rows"] == md["row_count"] == 18_796
    assert md["tasks_with_ratings"] == 17_639
    # ratings: rows per source and each file's sha256; the 29.x IM/RT table rates every Core/Supplemental
    # task, so the partial table is not consulted
    assert (md["tasks_rated_onet_task_ratings_full"], md["tasks_rated_im_rt_29x"]) == (0, 17_639)
    assert md["tasks_rated_workbank_partial"] == 0 and md["typed_tasks_unrated"] == 0
    assert md["ratings_used"] == "im_rt_29x"
    per_source = md["ratings_sources"]
    ratings_file = mirror / "onet_task_ratings" / "task_ratings_im_rt_29x.csv"
    assert per_source["im_rt_29x"]["sha256"] == sha256_file(ratings_file)
    assert per_source["im_rt_29x"]["sha256"].startswith("ca8980e87ce76e17")  # as its SOURCES.md states
    assert per_source["im_rt_29x"]["rows_in_file"] == 17_639
    assert per_source["im_rt_29x"]["origin"] == "mirror" and per_source["im_rt_29x"]["tasks_rated_from_it"] == 17_639
    assert per_source["workbank_partial"] == {
        "source_file": "onet_task_ratings/task_ratings_partial_from_workbank.csv",
        "origin": "not used",
        "tasks_rated_from_it": 0,
    }
    assert per_source["onet_task_ratings_full"]["origin"] == "not used"  # not mirrored, downloads off
    assert sha256_file(ratings_file) in md["sources"]["onet_task_ratings/task_ratings_im_rt_29x.csv"]["sha256"]
    assert "|" in md["preview"]  # the Markdown preview
    oews_md = _metadata(built, "oews_wages")
    assert oews_md["sha256"] == sha256_file(mirror / "oews" / "national_M2024_dl.xlsx")
    assert oews_md["source_version"] == "BLS OEWS May 2024"
    for asset in module_assets(reference_assets):
        assert _metadata(built, asset.key.to_user_string())["rows"] > 0
    specs = {a.key.to_user_string(): a.specs_by_key[a.key] for a in module_assets(reference_assets)}
    assert {s.group_name for s in specs.values()} == {"reference"}
    assert all(s.description and {"polars", "duckdb"} <= set(s.kinds) for s in specs.values())


def test_onet_occupations(built) -> None:
    occ = _table(built, "onet_occupations")
    assert occ.height == 1_016 and occ["onet_soc_code"].n_unique() == 1_016
    with_tasks = occ.filter(pl.col("has_tasks"))
    assert with_tasks.height == 923
    assert with_tasks["major_group_code"].n_unique() == 22
    assert sorted(with_tasks["major_group_code"].unique())[0] == "11-0000"
    assert sorted(with_tasks["major_group_code"].unique())[-1] == "53-0000"
    military = occ.filter(pl.col("major_group_code") == "55-0000")
    assert military.height == 19 and not military["has_tasks"].any()  # no OEWS row, no tasks
    assert occ["major_group_title"].null_count() == 0
    row = occ.filter(pl.col("onet_soc_code") == "15-1252.00").row(0, named=True)
    assert (row["soc_code"], row["major_group_code"]) == ("15-1252", "15-0000")
    assert row["major_group_title"] == "Computer and Mathematical Occupations"


def test_onet_tasks_and_ratings(built, mirror: Path) -> None:
    tasks = _table(built, "onet_tasks")
    assert tasks.height == 18_796 and tasks["onet_soc_code"].n_unique() == 923
    assert tasks.select(pl.struct("onet_soc_code", "task_id").n_unique()).item() == 18_796
    assert tasks["task_type"].value_counts().sort("task_type", nulls_last=True)["count"].to_list() == [
        13_417,
        4_222,
        1_157,
    ]
    rated = tasks.filter(pl.col("has_ratings"))
    assert rated.height == 17_639 and rated["onet_soc_code"].n_unique() == 879
    assert set(rated["ratings_source"]) == {"im_rt_29x"}
    # exactly the Core and Supplemental tasks are rated; the 1,157 Task Type n/a tasks are not
    assert rated["task_type"].null_count() == 0
    assert tasks.filter(pl.col("task_type").is_null())["has_ratings"].sum() == 0
    assert tasks.filter(~pl.col("has_ratings"))["importance"].null_count() == 18_796 - 17_639
    assert rated["importance"].null_count() == 0 and rated["relevance"].null_count() == 0
    assert rated["importance"].min() == 1.44 and rated["importance"].max() == 5.0
    assert rated["relevance"].min() >= 0 and rated["relevance"].max() <= 100
    # the 29.x table's freq_* are not O*NET frequencies: no frequency category is taken from it
    assert rated["frequency_category"].null_count() == 17_639
    assert int(tasks["is_core"].sum()) == 13_417  # Core tasks; no n/a task is rated
    ceo = tasks.filter((pl.col("onet_soc_code") == "11-1011.00") & (pl.col("task_id") == 8823)).row(0, named=True)
    assert (ceo["importance"], ceo["relevance"]) == (4.52, 74.44)  # the raw Task Ratings.txt values
    first = tasks.filter((pl.col("onet_soc_code") == "11-2011.00") & (pl.col("task_id") == 3223)).row(
        0, named=True
    )
    assert (first["importance"], first["relevance"]) == (3.67, 81.73)
    # every one of the 2,131 partial values is identical in the full table
    partial = read_source(
        mirror / "onet_task_ratings" / "task_ratings_partial_from_workbank.csv", ref.parse_task_ratings
    )
    both = partial.join(tasks, on=["onet_soc_code", "task_id"], how="inner", suffix="_used")
    assert both.height == 2_131
    assert (both["importance"] == both["importance_used"]).all()
    assert (both["relevance"] == both["relevance_used"]).all()


def test_ratings_fall_back_to_the_partial_table(
    mirror: Path, empty_raw_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the 29.x table the partial one rates 2,131 tasks, and the ratings-coverage floor fails."""
    partial_mirror = tmp_path / "mirror"
    (partial_mirror / "onet_task_ratings").mkdir(parents=True)
    (partial_mirror / "onet").symlink_to(mirror / "onet", target_is_directory=True)
    shutil.copy(
        mirror / "onet_task_ratings" / "task_ratings_partial_from_workbank.csv", partial_mirror / "onet_task_ratings"
    )
    monkeypatch.setenv("BENCHMAP_MIRROR", str(partial_mirror))
    path = tmp_path / "warehouse" / "benchmap.duckdb"
    result = _materialize(path, ["onet_tasks"])
    assert result.success, _error_text(result)
    tasks = wh.read_table(path, "onet_tasks")
    rated = tasks.filter(pl.col("has_ratings"))
    assert rated.height == 2_131 and rated["onet_soc_code"].n_unique() == 287
    assert set(rated["ratings_source"]) == {"workbank_partial"}
    first = rated.filter((pl.col("onet_soc_code") == "11-2011.00") & (pl.col("task_id") == 3223)).row(
        0, named=True
    )
    assert (first["importance"], first["relevance"], first["frequency_category"]) == (3.67, 81.73, 3)
    events = result.get_asset_materialization_events()
    md = {k: getattr(v, "value", v) for k, v in events[0].materialization.metadata.items()}
    assert (md["tasks_rated_im_rt_29x"], md["tasks_rated_workbank_partial"]) == (0, 2_131)
    assert md["ratings_sources"]["workbank_partial"]["rows_in_file"] == 2_131
    assert md["ratings_sources"]["im_rt_29x"]["origin"] == "not used"
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    coverage = checks["onet_tasks_ratings_coverage"]
    assert coverage.passed is False and coverage.metadata["tasks_with_ratings"].value == 2_131
    # a documented fallback the importance model goes on with: a warning, so run_all does not exit 6 on it
    assert coverage.severity.value == "WARN"
    assert "tasks_with_ratings" in coverage.description and checks["onet_tasks_expectations"].passed


def test_im_rt_ratings_layout_and_bad_values(tmp_path: Path) -> None:
    header = (
        "O*NET-SOC Code,Title,Task ID,Task,freq_mean,freq_lower,freq_upper,importance,importance_lower,"
        "importance_upper,relevance,relevance_lower,relevance_upper\n"
    )
    good = tmp_path / "task_ratings_im_rt_29x.csv"
    good.write_text(
        header
        + '11-1011.00,Chief Executives,8823,"Direct, or coordinate",0.61,0.2,1.97,4.52,4.3146,4.735,74.44,57.6,86.2\n'
        + "11-1011.00,Chief Executives,8824,Confer,0.56,0.23,1.51,4.32,,,81.71,61.0,92.7\n"
    )
    ratings = read_source(good, ref.parse_task_ratings)
    assert ratings.columns == list(ref.RATINGS_SCHEMA)
    assert ratings["importance"].to_list() == [4.52, 4.32] and ratings["relevance"].to_list() == [74.44, 81.71]
    assert ratings["frequency_category"].null_count() == 2  # freq_mean is not an FT category
    bad = tmp_path / "bad_29x.csv"
    bad.write_text(header + "11-1011.00,Chief Executives,8823,Direct,0.61,0.2,1.97,5.52,,,74.44,,\n")
    with pytest.raises(InputError, match=r"bad_29x.csv, line 2: column 'importance': above the maximum"):
        read_source(bad, ref.parse_task_ratings)
    # sources combine best first, never mixing columns across sources
    combined = ref.combine_task_ratings(
        [
            ("onet_task_ratings_full", ratings.head(1).with_columns(pl.lit(3, dtype=pl.Int64).alias("frequency_category"))),
            ("im_rt_29x", ratings.with_columns(pl.col("importance") - 1)),
        ]
    )
    assert combined["ratings_source"].to_list() == ["onet_task_ratings_full", "im_rt_29x"]
    assert combined["importance"].to_list() == [4.52, pytest.approx(3.32)]
    assert combined["frequency_category"].to_list() == [3, None]


def test_oews_wages(built) -> None:
    oews = _table(built, "oews_wages")
    assert oews.height == 1_403
    levels = dict(oews.group_by("group_level").len().iter_rows())
    assert levels == {"total": 1, "major": 22, "minor": 94, "broad": 455, "detailed": 831}
    total = oews.filter(pl.col("group_level") == "total").row(0, named=True)
    assert total["employment"] == 154_187_380 and total["annual_mean_wage"] == 67_920
    assert oews.filter(pl.col("group_level") == "detailed")["employment"].sum() == 154_186_300
    assert (oews["wage_bill"] - oews["employment"] * oews["annual_mean_wage"]).abs().max() < 1e-3
    assert (oews["annual_hours"] - oews["employment"] * 2_080).abs().max() < 1e-6
    assert int(oews["hourly_wage_imputed"].sum()) == 83 and int(oews["annual_wage_imputed"].sum()) == 7
    actors = oews.filter(pl.col("soc_code") == "27-2011").row(0, named=True)
    assert actors["annual_wage_imputed"] and actors["annual_mean_wage"] == pytest.approx(44.4 * 2_080)
    assert oews["annual_mean_wage"].min() > 0 and oews["hourly_mean_wage"].min() > 0


def test_occupation_wages(built) -> None:
    wages = _table(built, "occupation_wages")
    oews = _table(built, "oews_wages")
    assert wages.height == 923
    missing = wages.filter(pl.col("wage_match") == "missing")
    assert missing["onet_soc_code"].to_list() == ["45-3031.00"]  # fishers: outside OEWS coverage
    assert "45-3030" in missing["missing_reason"][0]
    counts = dict(wages.group_by("wage_match").len().iter_rows())
    assert counts == {"detailed": 708, "split_among_onet_codes": 184, "broad_aggregate": 30, "missing": 1}
    detailed = dict(
        oews.filter(pl.col("group_level") == "detailed").select("soc_code", "employment").iter_rows()
    )
    # several O*NET codes share one SOC code: the split adds back up to the OEWS row
    software = wages.filter(pl.col("soc_code") == "15-1299")
    assert software.height > 1 and software["employment"].sum() == pytest.approx(detailed["15-1299"])
    assert set(software["n_onet_codes_sharing"]) == {software.height}
    # SOC codes OEWS publishes only as an aggregate: 13-1021/22/23 share 13-1020
    buyers = wages.filter(pl.col("oews_code") == "13-1020")
    assert buyers.height == 3 and buyers["employment"].sum() == pytest.approx(486_900)
    # broad group residual: 21-1011 and 21-1014 share 21-1010 minus the detailed counselors matched directly
    counselors = wages.filter(pl.col("oews_code") == "21-1010")
    assert sorted(counselors["onet_soc_code"]) == ["21-1011.00", "21-1014.00"]
    assert counselors["employment"].sum() == pytest.approx(detailed["21-1018"] + detailed["21-1019"])
    summary = ref.occupation_wages_summary(wages, oews)
    assert summary["employment_share_attached"] == pytest.approx(152_124_960 / 154_187_380)
    assert 0.986 < summary["employment_share_attached"] < 0.987
    assert _metadata(built, "occupation_wages")["employment_share_attached"] == pytest.approx(
        summary["employment_share_attached"]
    )
    attached = wages.filter(pl.col("employment").is_not_null())
    assert attached["wage_bill"].sum() == pytest.approx(
        (attached["employment"] * attached["annual_mean_wage"]).sum()
    )


def test_task_hours(built) -> None:
    hours = _table(built, "task_hours")
    assert hours.height == 18_796
    sums = hours.group_by("onet_soc_code").agg(pl.col("pi").sum())
    assert sums.height == 923 and (sums["pi"] - 1).abs().max() < 1e-9
    assert int((~hours["pi_is_fallback"]).sum()) == 17_309
    assert _metadata(built, "task_hours")["pi_match_rate"] == pytest.approx(17_309 / 18_796)
    per_occ = hours.group_by("onet_soc_code").agg(
        pl.col("pi_is_fallback").all().alias("all_fallback"), pl.col("pi").std().alias("pi_std"), pl.len()
    )
    equal_split = per_occ.filter(pl.col("all_fallback"))
    assert equal_split.height == 29 and equal_split["pi_std"].fill_null(0).max() < 1e-12
    # fallback tasks in partly matched occupations get exactly 1/n
    partly = hours.join(per_occ, on="onet_soc_code").filter(
        pl.col("pi_is_fallback") & ~pl.col("all_fallback")
    )
    assert partly.height > 0 and (partly["pi"] - 1 / partly["len"]).abs().max() < 1e-12
    wages = _table(built, "occupation_wages")
    assert hours["task_annual_hours"].sum() == pytest.approx(wages["annual_hours"].sum(), rel=1e-12)
    assert hours["task_annual_hours"].null_count() == 30  # the 30 tasks of 45-3031.00 (no OEWS wages)


def test_task_exposure(built) -> None:
    exposure = _table(built, "task_exposure")
    assert exposure.height == 18_751
    md = _metadata(built, "task_exposure")
    assert md["match_rate_of_onet_tasks"] == pytest.approx(18_751 / 18_796)
    assert md["labels_not_in_onet"] == 514
    assert (
        int(exposure["exposed"].sum()) == int(exposure["human_exposure"].is_in(["E1", "E2"]).sum()) == 8_865
    )
    assert int(exposure["gpt4_exposed"].sum()) == int(exposure["gpt4_exposure"].is_in(["E1", "E2"]).sum())


def test_workbank_tasks(built) -> None:
    wb = _table(built, "workbank_tasks")
    assert wb.height == 2_131 and wb["task_id"].n_unique() == 2_131
    assert int(wb["desire_n"].sum()) == 5_731 and int(wb["capability_n"].sum()) == 2_057
    zones = dict(wb.group_by("zone").len().iter_rows())
    assert zones == {
        "green_light": 364,
        "red_light": 267,
        "rnd_opportunity": 107,
        "low_priority": 106,
        None: 2_131 - 844,
    }
    # the zone rule, recomputed
    both = wb.filter(pl.col("zone").is_not_null())
    expected = [
        (
            "green_light"
            if d >= 3 and c >= 3
            else "red_light"
            if c >= 3
            else "rnd_opportunity"
            if d >= 3
            else "low_priority"
        )
        for d, c in both.select("desire_mean", "capability_mean").iter_rows()
    ]
    assert both["zone"].to_list() == expected
    assert wb["in_onet_29_2"].all()
    task = wb.filter(pl.col("task_id") == 3226).row(0, named=True)
    assert task["onet_soc_code"] == "11-2011.00" and task["desire_median"] is not None


def test_job_titles_and_technology_skills(built) -> None:
    titles = _table(built, "onet_job_titles")
    counts = dict(titles.group_by("title_source").len().iter_rows())
    assert counts == {"title": 1_016, "alternate": 56_558, "short": 3_442, "reported": 7_796}
    ceo = titles.filter(pl.col("onet_soc_code") == "11-1011.00")
    assert {"Chief Executives", "CEO", "CEO (Chief Executive Officer)"} <= set(ceo["job_title"])
    tech = _table(built, "onet_technology_skills")
    assert tech.height == 32_627 and int(tech["hot_technology"].sum()) == 11_621
    assert tech.columns[:4] == ["onet_soc_code", "example", "commodity_code", "commodity_title"]


# --- bad input --------------------------------------------------------------------------------------------


def test_truncated_onet_file_names_file_and_line(mirror: Path, tmp_path: Path) -> None:
    path = broken_task_statements(mirror, "truncated", tmp_path)
    with pytest.raises(InputError) as info:
        read_source(path, ref.parse_task_statements)
    assert info.value.line == 5 and info.value.path == str(path)
    assert "Task Statements.truncated.txt, line 5" in str(info.value)
    with pytest.raises(InputError, match=r"bad_task_id\.txt, line 4: column 'Task ID': not a number"):
        read_source(broken_task_statements(mirror, "bad_task_id", tmp_path), ref.parse_task_statements)
    with pytest.raises(InputError, match=r"line 3: column 'Automation Desire Rating': above the maximum"):
        read_source(FIXTURES / "desires.bad_rating.csv", ref.parse_workbank_desires)
    with pytest.raises(InputError, match=r"line 3: column 'human_exposure_agg'.*'E3'"):
        read_source(FIXTURES / "full_labelset.bad_label.tsv", ref.parse_eloundou_labels)


def test_parsers_take_content_and_read_source_names_unreadable_files(tmp_path: Path) -> None:
    # the parsers are pure: a file's bytes (here with a BOM and CRLF line ends) and the name errors give
    data = b"\xef\xbb\xbfO*NET-SOC Code\tTitle\tDescription\r\n13-2011.00\tAccountants\tExamine records.\r\n"
    occupations = ref.parse_occupation_data(data, "Occupation Data.txt")
    assert occupations.rows() == [("13-2011.00", "Accountants", "Examine records.")]
    with pytest.raises(InputError, match=r"^in_memory.txt, line 2: not valid UTF-8 text"):
        ref.parse_occupation_data(b"O*NET-SOC Code\tTitle\tDescription\n13-2011.00\t\xff\tx\n", "in_memory.txt")
    # the file is read in resources.readers, which names a path it cannot read
    folder = tmp_path / "Occupation Data.txt"
    folder.mkdir()
    with pytest.raises(InputError, match=r"Occupation Data.txt: cannot read file \(.*Is a directory"):
        read_source(folder, ref.parse_occupation_data)
    with pytest.raises(InputError, match=r"missing.txt: cannot read file \(.*No such file"):
        read_source(tmp_path / "missing.txt", ref.parse_task_ratings)


def test_truncated_binary_sources(tmp_path: Path, mirror: Path) -> None:
    parquet = tmp_path / "shares.parquet"
    parquet.write_bytes((mirror / "task_hours" / "onet_task_labor_input_30_2.parquet").read_bytes()[:5_000])
    with pytest.raises(InputError, match="shares.parquet: cannot read"):
        read_source(parquet, ref.parse_task_shares)
    xlsx = tmp_path / "national_M2024_dl.xlsx"
    xlsx.write_bytes((mirror / "oews" / "national_M2024_dl.xlsx").read_bytes()[:20_000])
    with pytest.raises(InputError, match="national_M2024_dl.xlsx: cannot read sheet"):
        read_source(xlsx, ref.parse_oews_national)


def _oews_workbook(path: Path, rows: list[list[object]]) -> Path:
    header = ["OCC_CODE", "OCC_TITLE", "O_GROUP", "TOT_EMP", "H_MEAN", "A_MEAN"]
    pl.DataFrame([dict(zip(header, [str(v) for v in r], strict=True)) for r in rows]).write_excel(
        path, worksheet=ref.OEWS_SHEET
    )
    return path


def test_oews_markers_and_bad_values(tmp_path: Path) -> None:
    good = _oews_workbook(
        tmp_path / "ok.xlsx",
        [
            ["00-0000", "All Occupations", "total", 1000, 30, 62400],
            ["11-1011", "Chief Executives", "detailed", 200, "#", "#"],
            ["27-2011", "Actors", "detailed", 50, 40, "*"],
            ["25-2021", "Elementary School Teachers", "detailed", "**", "*", 70000],
        ],
    )
    oews = read_source(good, ref.parse_oews_national)
    ceo = oews.row(1, named=True)
    assert (ceo["hourly_mean_wage"], ceo["annual_mean_wage"], ceo["wage_top_coded"]) == (
        115.0,
        239_200.0,
        True,
    )
    assert ceo["wage_bill"] == 200 * 239_200.0 and ceo["annual_hours"] == 200 * 2_080
    actors = oews.row(2, named=True)
    assert actors["annual_mean_wage"] == 40 * 2_080 and actors["annual_wage_imputed"]
    teachers = oews.row(3, named=True)
    assert teachers["employment"] is None and teachers["hourly_mean_wage"] == pytest.approx(70000 / 2080)
    bad = _oews_workbook(
        tmp_path / "bad.xlsx",
        [
            ["00-0000", "All Occupations", "total", 1000, 30, 62400],
            ["11-1011", "Chief Executives", "detailed", "2OO", 100, 208000],
        ],
    )
    with pytest.raises(InputError, match=r"bad.xlsx, line 3: column 'TOT_EMP': not a number \(found '2OO'\)"):
        read_source(bad, ref.parse_oews_national)


def test_failed_rematerialization_leaves_table_unchanged(
    mirror: Path, empty_raw_dir: Path, warehouse_path: Path
) -> None:
    # first run: the full-layout ratings file in data/raw wins over the mirror's partial table
    (empty_raw_dir / "onet").mkdir()
    shutil.copy(FIXTURES / "Task Ratings.sample.txt", empty_raw_dir / "onet" / "Task Ratings.txt")
    first = _materialize(warehouse_path, ["onet_tasks"])
    assert first.success, _error_text(first)
    tasks = wh.read_table(warehouse_path, "onet_tasks")
    # each task takes its ratings from the best source that rates it: 4 from the raw file, the other
    # 17,637 Core/Supplemental tasks from the mirror's 29.x IM/RT table
    counts = dict(tasks.group_by("ratings_source").len().iter_rows())
    assert counts == {"onet_task_ratings_full": 4, "im_rt_29x": 17_637, None: 18_796 - 17_641}
    rated = tasks.filter(pl.col("ratings_source") == "onet_task_ratings_full").sort("task_id")
    assert rated["task_id"].to_list() == [8823, 8824, 15267, 15268]
    assert rated["frequency_category"].to_list() == [3, 4, 5, 3]  # modal FT; the 4/5 tie goes to 4
    assert rated["importance"].to_list() == [4.52, 4.10, 3.50, 3.20]
    # Task Type n/a tasks: the Core rule on their ratings (RT 80 / IM 3.5 -> core; RT 50 -> not)
    assert rated["is_core"].to_list() == [True, True, True, False]
    metadata = first.get_asset_materialization_events()[0].materialization.metadata
    assert metadata["ratings_used"].value == "onet_task_ratings_full, im_rt_29x"
    assert metadata["ratings_sources"].value["onet_task_ratings_full"]["origin"] == "raw"
    before = _table_digest(warehouse_path, "onet_tasks")

    # second run: a truncated Task Statements.txt in data/raw -> InputError, nothing written
    shutil.copy(broken_task_statements(mirror, "truncated", warehouse_path.parent.parent / "broken"),
                empty_raw_dir / "onet" / "Task Statements.txt")
    second = _materialize(warehouse_path, ["onet_tasks"])
    assert not second.success
    message = _error_text(second)
    assert "InputError" in message
    assert f"{empty_raw_dir / 'onet' / 'Task Statements.txt'}, line 5" in message
    assert _table_digest(warehouse_path, "onet_tasks") == before
    assert wh.read_table(warehouse_path, "onet_tasks").height == 18_796


def test_failing_blocking_check_stops_downstream(
    mirror: Path, empty_raw_dir: Path, warehouse_path: Path
) -> None:
    (empty_raw_dir / "onet").mkdir()
    shutil.copy(broken_task_statements(mirror, "short", warehouse_path.parent.parent / "broken"),
                empty_raw_dir / "onet" / "Task Statements.txt")
    result = _materialize(warehouse_path, ["oews_wages", "onet_tasks", "onet_occupations"])
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks["onet_tasks_expectations"].passed is False
    assert "expect_table_row_count_to_equal" in checks["onet_tasks_expectations"].description
    assert checks["oews_wages_expectations"].passed is True
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert materialized == {"oews_wages", "onet_tasks"}  # onet_occupations did not run
    assert "DagsterAssetCheckFailedError" in _error_text(result)
    assert not wh.query(
        warehouse_path,
        "select count(*) as n from information_schema.tables where table_name = 'onet_occupations'",
    )["n"][0]


def test_resolve_source_failure_names_every_place_and_the_url(
    empty_raw_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty_mirror = tmp_path / "empty_mirror"
    empty_mirror.mkdir()
    monkeypatch.setenv("BENCHMAP_MIRROR", str(empty_mirror))
    with pytest.raises(SourceNotFoundError) as info:
        resolve_source("onet/Task Ratings.txt")
    message = str(info.value)
    assert "onet/Task Ratings.txt" in message
    assert str(empty_raw_dir / "onet" / "Task Ratings.txt") in message
    assert str(empty_mirror / "onet" / "Task Ratings.txt") in message
    assert "https://www.onetcenter.org/dl_files/database/db_29_2_text/Task%20Ratings.txt" in message
    assert resolve_source("onet/Task Ratings.txt", required=False) is None


# --- pure builders on small frames ------------------------------------------------------------------------


def test_occupation_wages_split_and_broad_residual() -> None:
    occupations = pl.DataFrame(
        {
            "onet_soc_code": [
                "15-1299.01",
                "15-1299.02",
                "21-1011.00",
                "21-1014.00",
                "21-1012.00",
                "45-3031.00",
                "11-1011.00",
            ],
            "title": list("abcdefg"),
            "description": [""] * 7,
            "has_tasks": [True, True, True, True, True, True, False],
        }
    ).with_columns(
        pl.col("onet_soc_code").str.slice(0, 7).alias("soc_code"),
        (pl.col("onet_soc_code").str.slice(0, 2) + "-0000").alias("major_group_code"),
    )
    oews = pl.DataFrame(
        {
            "soc_code": ["00-0000", "15-1299", "21-1010", "21-1012", "21-1018"],
            "group_level": ["total", "detailed", "broad", "detailed", "detailed"],
            "employment": [10_000.0, 300.0, 1_000.0, 400.0, 600.0],
            "annual_mean_wage": [50_000.0, 100_000.0, 60_000.0, 50_000.0, 2_000_000 / 30],
            "hourly_mean_wage": [24.0, 48.0, 28.8, 24.0, 32.0],
        }
    )
    out = {r["onet_soc_code"]: r for r in ref.build_occupation_wages(occupations, oews).iter_rows(named=True)}
    assert set(out) == {"15-1299.01", "15-1299.02", "21-1011.00", "21-1014.00", "21-1012.00", "45-3031.00"}
    assert (
        out["15-1299.01"]["employment"] == 150 and out["15-1299.01"]["wage_match"] == "split_among_onet_codes"
    )
    assert out["21-1012.00"]["wage_match"] == "detailed" and out["21-1012.00"]["employment"] == 400
    residual = out["21-1011.00"]
    assert residual["wage_match"] == "broad_aggregate" and residual["employment"] == 300  # (1000 - 400) / 2
    # residual mean wage = (1000 x 60,000 - 400 x 50,000) / 600
    assert residual["annual_mean_wage"] == pytest.approx((60_000_000 - 20_000_000) / 600)
    assert out["45-3031.00"]["wage_match"] == "missing" and out["45-3031.00"]["employment"] is None
    summary = ref.occupation_wages_summary(ref.build_occupation_wages(occupations, oews), oews)
    assert summary["employment_share_attached"] == pytest.approx(1_300 / 10_000)


def test_task_hours_renormalises_matched_pi() -> None:
    tasks = pl.DataFrame({"onet_soc_code": ["A"] * 4 + ["B"] * 2, "task_id": [1, 2, 3, 4, 5, 6]})
    # occupation A: tasks 1-3 have π (summing to 0.9 because a 30.2-only task took 0.1), task 4 has none
    shares = pl.DataFrame(
        {"onet_soc_code": ["A", "A", "A", "A"], "task_id": [1, 2, 3, 99], "pi": [0.45, 0.3, 0.15, 0.1]}
    )
    wages = pl.DataFrame({"onet_soc_code": ["A", "B"], "annual_hours": [1_000.0, None]})
    out = ref.build_task_hours(tasks, shares, wages)
    pi = dict(zip(out["task_id"], out["pi"], strict=True))
    assert pi[4] == pytest.approx(0.25)  # fallback 1/n
    assert pi[1] == pytest.approx(0.45 / 0.9 * 0.75) and pi[3] == pytest.approx(0.15 / 0.9 * 0.75)
    assert pi[5] == pi[6] == 0.5
    assert out.filter(pl.col("onet_soc_code") == "A")["task_annual_hours"].sum() == pytest.approx(1_000)
    assert out["pi_is_fallback"].to_list() == [False, False, False, True, True, True]
    assert out.filter(pl.col("onet_soc_code") == "B")["task_annual_hours"].null_count() == 2


def test_expectation_helper_reports_each_failure() -> None:
    frame = pl.DataFrame(
        {"key": [1, 2, 2, None], "share": [0.2, 0.5, 1.5, 0.1], "ok": [True, True, False, True]}
    )
    outcome = ex.run_expectations(
        frame,
        [*ex.unique_key(["key"]), ex.between("share", 0, 1), ex.row_count(4), ex.share_at_least("ok", 0.7)],
        name="toy",
    )
    assert outcome.success is False
    results = {(r["expectation"], r["column"]): r for r in outcome.results.iter_rows(named=True)}
    assert results[("expect_column_values_to_not_be_null", "key")]["unexpected_count"] == 1
    assert results[("expect_column_values_to_be_unique", "key")]["success"] is False
    assert results[("expect_column_values_to_be_between", "share")]["sample_unexpected"] == "[1.5]"
    assert results[("expect_column_values_to_be_unique", "key")]["unexpected_count"] == 2
    assert results[("expect_table_row_count_to_equal", None)]["success"] is True
    assert results[("expect_column_values_to_be_in_set", "ok")]["success"] is True  # 75% >= 70%
    assert (
        outcome.n_failed == 3
        and "toy.expect_column_values_to_be_between(share)" in outcome.describe_failures()
    )


def test_a_cut_or_header_only_or_doubled_reference_file_is_an_error(mirror: Path, tmp_path: Path) -> None:
    """A probe (2026-12-08) damaged reference files in data/raw; three of them were published from:
    - the O*NET ratings file cut inside its last field: it kept its field count, 7,927 tasks lost their ratings,
      and only a WARN check said anything;
    - the ratings file with its header alone: read as a missing file, the 2,131-task fallback was used;
    - WORKBank's worker desires with 300 lines copied twice: each counted twice, and the zones moved."""
    ratings = (mirror / "onet_task_ratings" / "task_ratings_im_rt_29x.csv").read_bytes()
    cut = tmp_path / "task_ratings_im_rt_29x.csv"
    cut.write_bytes(ratings[: ratings.index(b"\n", len(ratings) // 2) - 2])
    lines = cut.read_bytes().count(b"\n") + 1
    with pytest.raises(InputError, match=rf"task_ratings_im_rt_29x.csv, line {lines}: file ends without a line end"):
        read_source(cut, ref.parse_task_ratings)
    header_only = tmp_path / "header_only" / "task_ratings_im_rt_29x.csv"
    header_only.parent.mkdir()
    header_only.write_bytes(ratings[: ratings.index(b"\n") + 1])
    with pytest.raises(InputError, match=r"line 1: the file has a header row and no data row"):
        read_source(header_only, ref.parse_task_ratings)
    desires = (mirror / "workbank" / "domain_worker_desires.csv").read_bytes().split(b"\n")
    doubled = tmp_path / "domain_worker_desires.csv"
    doubled.write_bytes(b"\n".join([desires[0], desires[1], desires[1], *desires[2:]]))
    with pytest.raises(InputError, match=r"duplicate key \['task_id', 'User ID'\]: lines \[2, 3\]"):
        read_source(doubled, ref.parse_workbank_desires)
    # the files as published still parse: WORKBank's expert ratings end without a line end and repeat 19 ratings
    assert read_source(mirror / "workbank" / "expert_rated_technological_capability.csv",
                       ref.parse_workbank_capability).height == 2_057
    assert read_source(mirror / "workbank" / "domain_worker_desires.csv", ref.parse_workbank_desires).height == 5_731
