"""Reference data: O*NET 29.2, BLS OEWS May 2024, task shares (π), exposure labels and WORKBank ratings.

Pure functions (no Dagster): `parse_*` read one source file into a typed polars frame and raise
`InputError(path=..., line=...)` on a truncated or malformed file; `build_*` turn parsed frames into the
warehouse tables of docs/ARCHITECTURE.md; `*_summary` compute the numbers the assets record as metadata and
the tests assert.

Decisions (each also stated where it is implemented):
- O*NET files are tab-separated with no quoting; the literal `n/a` means missing. A record whose field count
  differs from the header's, or a file that does not end with a newline (all O*NET files do), is an error.
- Task ratings come from up to three sources, best first (RATINGS_SOURCES): the raw O*NET `Task Ratings.txt`
  (`onet_task_ratings_full`), the derived one-row-per-task copy `task_ratings_im_rt_29x.csv` of all 17,639
  rated 29.x tasks (`im_rt_29x`; its `freq_*` columns are not O*NET values and are never read), then the
  partial WORKBank table of 2,131 tasks (`workbank_partial`). Each task takes all its rating columns from the
  first source that rates it, named in `ratings_source` (`combine_task_ratings`). `frequency_category` is the
  modal FT category of the raw file (the category with the largest share of respondents; ties go to the lower
  category) or the partial file's single FT category, and null for tasks rated from the 29.x copy (it has no
  FT categories). Where no rating exists, `is_core` follows O*NET's Task Type (Core = relevance >= 67% and
  importance >= 3.0); tasks with Task Type `n/a` use that rule on their ratings when rated and are not core
  when unrated.
- OEWS markers: `*` (wage not available) and `**` (employment not released) become null; `#` (wage at or
  above the top code, $115.00/hr or $239,200/yr) becomes the top-code value with `wage_top_coded` = true.
  Occupations published with an annual wage only (teachers) get hourly = annual / 2,080, and those with an
  hourly wage only (actors, dancers, musicians) annual = hourly x 2,080, flagged `*_wage_imputed`.
  `wage_bill` = employment x annual mean wage; `annual_hours` = employment x 2,080 (a full-time year).
- Occupation wages: see `build_occupation_wages`.
- Task shares π: see `build_task_hours`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from models.errors import InputError

# --- expected sizes of the releases used (the asset checks hold the data to them) ---
ONET_OCCUPATIONS = 1_016
ONET_OCCUPATIONS_WITH_TASKS = 923
ONET_TASKS = 18_796
ONET_TASKS_RATED = 17_639  # every Core or Supplemental task of 29.2; the 1,157 Task Type n/a tasks are unrated
# task-ratings sources, best first (the names land in onet_tasks.ratings_source)
RATINGS_SOURCES = ("onet_task_ratings_full", "im_rt_29x", "workbank_partial")
SOC_MAJOR_GROUPS = 22  # 11-0000 .. 53-0000; 55-0000 Military has no OEWS row and no O*NET tasks
HOURS_PER_YEAR = 2_080.0  # a full-time year: 40 h x 52 weeks (the BLS annual = hourly x 2,080 convention)
TOP_CODED_HOURLY = 115.0  # BLS '#': wage >= $115.00 per hour
TOP_CODED_ANNUAL = 239_200.0  # BLS '#': wage >= $239,200 per year
MILITARY_MAJOR_GROUP = ("55-0000", "Military Specific Occupations")  # SOC 2018 title; not in OEWS
CORE_MIN_RELEVANCE = 67.0
CORE_MIN_IMPORTANCE = 3.0
ZONE_THRESHOLD = 3.0
EXPOSURE_LABELS = ("E0", "E1", "E2")
ZONES = ("green_light", "red_light", "rnd_opportunity", "low_priority")

_ONET_CODE = r"^\d{2}-\d{4}\.\d{2}$"
_SOC_CODE = r"^\d{2}-\d{4}$"
NA = ("n/a", "")
LINE = "_line"


# ---------------------------------------------------------------------------------------------------------
# Generic readers: every record keeps its 1-based line number in `_line` so later checks can name it.
# ---------------------------------------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file ({exc})", path=path) from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            f"not valid UTF-8 text ({exc.reason} at byte {exc.start})", path=path, line=line
        ) from exc


def _check_header(header: list[str], columns: Sequence[str], path: Path) -> None:
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(f"header lacks column(s) {missing}; found {header}", path=path, line=1)


def _frame(header: list[str], records: list[list[str]], lines: list[int]) -> pl.DataFrame:
    columns = list(zip(*records, strict=True)) if records else [() for _ in header]
    data = {
        name: pl.Series(name, list(values), dtype=pl.Utf8)
        for name, values in zip(header, columns, strict=True)
    }
    data[LINE] = pl.Series(LINE, lines, dtype=pl.Int64)
    return pl.DataFrame(data)


def read_tsv(path: str | Path, columns: Sequence[str], *, require_final_newline: bool = True) -> pl.DataFrame:
    """An O*NET-style tab-separated file (header row, no quoting) as text columns plus `_line`.

    Raises InputError naming the line of the first record whose field count differs from the header's
    (a truncated last line, a stray tab) and, with `require_final_newline`, a file cut mid-line.
    """
    path = Path(path)
    text = _read_text(path)
    if not text.strip():
        raise InputError("file is empty (expected a header row and data rows)", path=path, line=1)
    raw_lines = text.split("\n")
    ends_with_newline = raw_lines[-1] == ""
    if ends_with_newline:
        raw_lines.pop()
    header = raw_lines[0].rstrip("\r").split("\t")
    _check_header(header, columns, path)
    width = len(header)
    records: list[list[str]] = []
    for number, raw in enumerate(raw_lines[1:], start=2):
        fields = raw.rstrip("\r").split("\t")
        if len(fields) != width:
            raise InputError(
                f"expected {width} tab-separated fields as in the header, found {len(fields)} "
                "(truncated or malformed record)",
                path=path,
                line=number,
            )
        records.append(fields)
    if require_final_newline and not ends_with_newline:
        raise InputError(
            "file ends in the middle of a line (truncated download or copy?)", path=path, line=len(raw_lines)
        )
    return _frame(header, records, list(range(2, len(records) + 2)))


def read_csv_records(path: str | Path, columns: Sequence[str], *, delimiter: str = ",") -> pl.DataFrame:
    """A quoted CSV/TSV file (RFC 4180 style) as text columns plus `_line` (where each record starts)."""
    path = Path(path)
    text = _read_text(path)
    if not text.strip():
        raise InputError("file is empty (expected a header row and data rows)", path=path, line=1)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader)
        _check_header(header, columns, path)
        records: list[list[str]] = []
        lines: list[int] = []
        start = reader.line_num + 1
        for fields in reader:
            if len(fields) != len(header):
                if not fields:  # a blank line
                    raise InputError("blank line inside the data", path=path, line=start)
                raise InputError(
                    f"expected {len(header)} fields as in the header, found {len(fields)} "
                    "(truncated or malformed record)",
                    path=path,
                    line=start,
                )
            records.append(fields)
            lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InputError(f"malformed CSV ({exc})", path=path, line=reader.line_num) from exc
    return _frame(header, records, lines)


def _fail_at(df: pl.DataFrame, mask: pl.Series, message: str, path: Path, column: str | None = None) -> None:
    """Raise for the first row where `mask` is true, naming its line and value."""
    if not mask.any():
        return
    index = int(mask.arg_true()[0])
    line = int(df[LINE][index]) if LINE in df.columns else None
    value = f" (found {df[column][index]!r})" if column is not None else ""
    raise InputError(f"{message}{value}; {int(mask.sum())} such row(s) in all", path=path, line=line)


def cast_number(
    df: pl.DataFrame,
    column: str,
    dtype: pl.DataType,
    path: Path,
    *,
    rename: str | None = None,
    na_values: Sequence[str] = NA,
    required: bool = False,
    min_value: float | None = None,
    max_value: float | None = None,
    integral_float: bool = False,
) -> pl.DataFrame:
    """Parse a text column as a number; InputError at the first unparsable, missing or out-of-range value."""
    text = df[column].str.strip_chars()
    missing = text.is_null() | text.is_in(list(na_values))
    as_float = text.cast(pl.Float64, strict=False)
    _fail_at(df, ~missing & as_float.is_null(), f"column {column!r}: not a number", path, column)
    if required:
        _fail_at(df, missing, f"column {column!r}: value missing", path, column)
    values = as_float.zip_with(~missing, pl.Series(column, [None] * df.height, dtype=pl.Float64))
    if dtype.is_integer():
        fractional = values.is_not_null() & (values != values.floor())
        _fail_at(df, fractional, f"column {column!r}: not an integer", path, column)
        if not integral_float:
            _fail_at(
                df, text.str.contains(r"[.eE]") & ~missing, f"column {column!r}: not an integer", path, column
            )
    if min_value is not None:
        _fail_at(
            df,
            values.is_not_null() & (values < min_value),
            f"column {column!r}: below the minimum {min_value}",
            path,
            column,
        )
    if max_value is not None:
        _fail_at(
            df,
            values.is_not_null() & (values > max_value),
            f"column {column!r}: above the maximum {max_value}",
            path,
            column,
        )
    return df.with_columns(values.cast(dtype).alias(rename or column))


def check_pattern(df: pl.DataFrame, column: str, pattern: str, path: Path, what: str) -> None:
    bad = df[column].is_null() | ~df[column].str.contains(pattern)
    _fail_at(df, bad, f"column {column!r}: not {what}", path, column)


def check_in_set(df: pl.DataFrame, column: str, allowed: Sequence[str], path: Path) -> None:
    bad = df[column].is_null() | ~df[column].is_in(list(allowed))
    _fail_at(df, bad, f"column {column!r}: expected one of {list(allowed)}", path, column)


def check_unique(df: pl.DataFrame, keys: Sequence[str], path: Path) -> None:
    duplicated = df.select(keys).is_duplicated()
    if duplicated.any():
        first = df.filter(duplicated).head(2)
        record = ", ".join(f"{k}={first[k][0]!r}" for k in keys)
        raise InputError(
            f"duplicate key {list(keys)}: lines {first[LINE].to_list()}", path=path, record=record
        )


def cast_flag(
    df: pl.DataFrame,
    column: str,
    path: Path,
    *,
    true: Sequence[str],
    false: Sequence[str],
    rename: str | None = None,
) -> pl.DataFrame:
    check_in_set(df, column, [*true, *false], path)
    return df.with_columns(pl.col(column).is_in(list(true)).alias(rename or column))


# ---------------------------------------------------------------------------------------------------------
# O*NET 29.2
# ---------------------------------------------------------------------------------------------------------


def parse_occupation_data(path: str | Path) -> pl.DataFrame:
    """`Occupation Data.txt` -> onet_soc_code, title, description (one row per O*NET-SOC code)."""
    path = Path(path)
    df = read_tsv(path, ["O*NET-SOC Code", "Title", "Description"])
    df = df.rename({"O*NET-SOC Code": "onet_soc_code", "Title": "title", "Description": "description"})
    check_pattern(df, "onet_soc_code", _ONET_CODE, path, "an O*NET-SOC code like 13-2011.00")
    check_unique(df, ["onet_soc_code"], path)
    return df.select("onet_soc_code", "title", "description")


def parse_task_statements(path: str | Path) -> pl.DataFrame:
    """`Task Statements.txt` -> onet_soc_code, task_id, task, task_type (null for n/a), incumbents_responding,
    task_date, domain_source."""
    path = Path(path)
    columns = [
        "O*NET-SOC Code",
        "Task ID",
        "Task",
        "Task Type",
        "Incumbents Responding",
        "Date",
        "Domain Source",
    ]
    df = read_tsv(path, columns)
    check_pattern(df, "O*NET-SOC Code", _ONET_CODE, path, "an O*NET-SOC code like 13-2011.00")
    df = cast_number(df, "Task ID", pl.Int64(), path, rename="task_id", required=True, min_value=1)
    df = cast_number(
        df, "Incumbents Responding", pl.Int64(), path, rename="incumbents_responding", min_value=0
    )
    check_in_set(df, "Task Type", ["Core", "Supplemental", "n/a"], path)
    _fail_at(
        df, df["Task"].str.strip_chars().str.len_chars() == 0, "column 'Task': empty task statement", path
    )
    check_unique(df, ["O*NET-SOC Code", "task_id"], path)
    return df.select(
        pl.col("O*NET-SOC Code").alias("onet_soc_code"),
        "task_id",
        pl.col("Task").alias("task"),
        pl.when(pl.col("Task Type") == "n/a").then(None).otherwise(pl.col("Task Type")).alias("task_type"),
        "incumbents_responding",
        pl.col("Date").alias("task_date"),
        pl.col("Domain Source").alias("domain_source"),
    )


RATINGS_SCHEMA = {
    "onet_soc_code": pl.Utf8,
    "task_id": pl.Int64,
    "importance": pl.Float64,
    "relevance": pl.Float64,
    "frequency_category": pl.Int64,
}


def _first_line(path: Path) -> str:
    with open(path, encoding="utf-8-sig", errors="replace") as handle:
        return handle.readline()


def parse_task_ratings(path: str | Path) -> pl.DataFrame:
    """Task ratings in any of three layouts -> onet_soc_code, task_id, importance (IM, 1-5), relevance (RT,
    0-100), frequency_category (FT, 1-7).

    - O*NET `Task Ratings.txt` (long: one row per task x scale x category): IM and RT data values; the modal
      FT category (largest share of respondents, ties to the lower category).
    - `task_ratings_im_rt_29x.csv` (O*NET-SOC Code, Title, Task ID, Task, freq_*, importance[_lower/_upper],
      relevance[_lower/_upper]; one row per rated task): importance and relevance only. Its `freq_*` columns
      are a third party's weighted sum of the FT percentages, not O*NET values, so they are not read and
      frequency_category stays null.
    - `task_ratings_partial_from_workbank.csv` (onetsoc_code, task_id, im, rt, ft_category_workbank).
    - WORKBank `task_statement_with_metadata.csv` (the partial file's upstream: Importance, Relevance and
      Frequency columns).
    """
    path = Path(path)
    header = _first_line(path)
    if "Scale ID" in header and "\t" in header:
        return _parse_full_task_ratings(path)
    if "importance_lower" in header and "relevance" in header:
        return _parse_im_rt_ratings(path)
    if header.startswith("onetsoc_code"):
        df = read_csv_records(path, ["onetsoc_code", "task_id", "im", "rt", "ft_category_workbank"])
        names = {
            "code": "onetsoc_code",
            "task": "task_id",
            "im": "im",
            "rt": "rt",
            "ft": "ft_category_workbank",
        }
    elif "Importance" in header:
        df = read_csv_records(path, ["O*NET-SOC Code", "Task ID", "Importance", "Relevance", "Frequency"])
        names = {
            "code": "O*NET-SOC Code",
            "task": "Task ID",
            "im": "Importance",
            "rt": "Relevance",
            "ft": "Frequency",
        }
    else:
        raise InputError(f"unknown task-ratings layout; header {header.strip()[:200]!r}", path=path, line=1)
    check_pattern(df, names["code"], _ONET_CODE, path, "an O*NET-SOC code")
    df = cast_number(
        df, names["task"], pl.Int64(), path, rename="task_id", required=True, integral_float=True
    )
    df = cast_number(df, names["im"], pl.Float64(), path, rename="importance", min_value=1, max_value=5)
    df = cast_number(df, names["rt"], pl.Float64(), path, rename="relevance", min_value=0, max_value=100)
    df = cast_number(
        df,
        names["ft"],
        pl.Int64(),
        path,
        rename="frequency_category",
        min_value=1,
        max_value=7,
        integral_float=True,
    )
    df = df.with_columns(pl.col(names["code"]).alias("onet_soc_code"))
    check_unique(df, ["onet_soc_code", "task_id"], path)
    return df.select(list(RATINGS_SCHEMA))


def _parse_im_rt_ratings(path: Path) -> pl.DataFrame:
    """The one-row-per-task IM/RT table: importance (IM, 1-5) and relevance (RT, 0-100), both required."""
    df = read_csv_records(path, ["O*NET-SOC Code", "Task ID", "importance", "relevance"])
    check_pattern(df, "O*NET-SOC Code", _ONET_CODE, path, "an O*NET-SOC code")
    df = cast_number(df, "Task ID", pl.Int64(), path, rename="task_id", required=True)
    df = cast_number(df, "importance", pl.Float64(), path, required=True, min_value=1, max_value=5)
    df = cast_number(df, "relevance", pl.Float64(), path, required=True, min_value=0, max_value=100)
    df = df.with_columns(
        pl.col("O*NET-SOC Code").alias("onet_soc_code"), pl.lit(None, dtype=pl.Int64).alias("frequency_category")
    )
    check_unique(df, ["onet_soc_code", "task_id"], path)
    return df.select(list(RATINGS_SCHEMA)).cast(RATINGS_SCHEMA).sort(["onet_soc_code", "task_id"])


def combine_task_ratings(layers: Sequence[tuple[str, pl.DataFrame]]) -> pl.DataFrame:
    """Ratings of several sources, best first -> one row per task with `ratings_source`.

    Each task takes every rating column from the first layer that rates it (importance or relevance not
    null); columns are never mixed across sources, so `ratings_source` says where all of a row's values
    come from.
    """
    frames = []
    taken = pl.DataFrame(schema={"onet_soc_code": pl.Utf8, "task_id": pl.Int64})
    for name, ratings in layers:
        rated = ratings.select(list(RATINGS_SCHEMA)).cast(RATINGS_SCHEMA).filter(
            pl.col("importance").is_not_null() | pl.col("relevance").is_not_null()
        )
        new = rated.join(taken, on=["onet_soc_code", "task_id"], how="anti")
        frames.append(new.with_columns(pl.lit(name, dtype=pl.Utf8).alias("ratings_source")))
        taken = pl.concat([taken, new.select("onet_soc_code", "task_id")])
    schema = {**RATINGS_SCHEMA, "ratings_source": pl.Utf8}
    if not frames:
        return pl.DataFrame(schema=schema)
    return pl.concat(frames).select(list(schema)).sort(["onet_soc_code", "task_id"])


def _parse_full_task_ratings(path: Path) -> pl.DataFrame:
    df = read_tsv(path, ["O*NET-SOC Code", "Task ID", "Scale ID", "Category", "Data Value"])
    check_pattern(df, "O*NET-SOC Code", _ONET_CODE, path, "an O*NET-SOC code")
    check_in_set(df, "Scale ID", ["IM", "RT", "FT"], path)
    df = cast_number(df, "Task ID", pl.Int64(), path, rename="task_id", required=True)
    df = cast_number(
        df, "Data Value", pl.Float64(), path, rename="value", required=True, min_value=0, max_value=100
    )
    df = df.rename({"O*NET-SOC Code": "onet_soc_code"})
    ft = df.filter(pl.col("Scale ID") == "FT")
    ft = cast_number(
        ft, "Category", pl.Int64(), path, rename="category", required=True, min_value=1, max_value=7
    )
    check_unique(ft, ["onet_soc_code", "task_id", "category"], path)
    single = df.filter(pl.col("Scale ID") != "FT")
    check_unique(single, ["onet_soc_code", "task_id", "Scale ID"], path)
    _fail_at(
        single,
        (single["Scale ID"] == "IM") & ((single["value"] < 1) | (single["value"] > 5)),
        "IM data value outside 1-5",
        path,
        "value",
    )
    wide = single.pivot(on="Scale ID", index=["onet_soc_code", "task_id"], values="value")
    for scale in ("IM", "RT"):
        if scale not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(scale))
    modal = (
        ft.sort(["onet_soc_code", "task_id", "value", "category"], descending=[False, False, True, False])
        .group_by(["onet_soc_code", "task_id"], maintain_order=True)
        .agg(pl.col("category").first().alias("frequency_category"))
    )
    out = wide.join(modal, on=["onet_soc_code", "task_id"], how="full", coalesce=True).rename(
        {"IM": "importance", "RT": "relevance"}
    )
    return out.select(list(RATINGS_SCHEMA)).cast(RATINGS_SCHEMA).sort(["onet_soc_code", "task_id"])


def build_onet_tasks(
    statements: pl.DataFrame, ratings: pl.DataFrame | None, ratings_source: str | None = None
) -> pl.DataFrame:
    """Task statements with ratings where present, `has_ratings`, `ratings_source` and the `is_core` proxy.

    `ratings` may carry a per-task `ratings_source` column (combine_task_ratings); otherwise every rated task
    gets `ratings_source`. is_core: Task Type Core -> true, Supplemental -> false; Task Type n/a -> the Core
    rule (relevance >= 67 and importance >= 3.0) on the task's ratings when rated, false when unrated.
    """
    if ratings is None:
        ratings = pl.DataFrame(schema=RATINGS_SCHEMA)
    if "ratings_source" not in ratings.columns:
        ratings = ratings.with_columns(pl.lit(ratings_source, dtype=pl.Utf8).alias("ratings_source"))
    joined = statements.join(
        ratings.select(*RATINGS_SCHEMA, pl.col("ratings_source").cast(pl.Utf8).alias("_source")),
        on=["onet_soc_code", "task_id"],
        how="left",
    )
    rated = pl.col("importance").is_not_null() | pl.col("relevance").is_not_null()
    rule = (pl.col("relevance") >= CORE_MIN_RELEVANCE) & (pl.col("importance") >= CORE_MIN_IMPORTANCE)
    return joined.with_columns(
        rated.alias("has_ratings"),
        pl.when(rated).then(pl.col("_source")).otherwise(None).cast(pl.Utf8).alias("ratings_source"),
        pl.when(pl.col("task_type") == "Core")
        .then(True)
        .when(pl.col("task_type") == "Supplemental")
        .then(False)
        .otherwise(rule.fill_null(False))
        .alias("is_core"),
    ).select(
        "onet_soc_code",
        "task_id",
        "task",
        "task_type",
        "incumbents_responding",
        "task_date",
        "domain_source",
        "importance",
        "relevance",
        "frequency_category",
        "has_ratings",
        "ratings_source",
        "is_core",
    )


def onet_tasks_summary(tasks: pl.DataFrame, ratings: pl.DataFrame | None = None) -> dict[str, int | float]:
    rated = tasks.filter(pl.col("has_ratings"))
    typed = rated.filter(
        pl.col("task_type").is_not_null()
        & pl.col("importance").is_not_null()
        & pl.col("relevance").is_not_null()
    )
    rule = (typed["relevance"] >= CORE_MIN_RELEVANCE) & (typed["importance"] >= CORE_MIN_IMPORTANCE)
    summary: dict[str, int | float] = {
        "tasks": tasks.height,
        "occupations": tasks["onet_soc_code"].n_unique(),
        "tasks_core": int((tasks["task_type"] == "Core").sum()),
        "tasks_supplemental": int((tasks["task_type"] == "Supplemental").sum()),
        "tasks_type_na": int(tasks["task_type"].is_null().sum()),
        "tasks_with_ratings": rated.height,
        "rated_share": rated.height / tasks.height if tasks.height else 0.0,
        "occupations_with_ratings": rated["onet_soc_code"].n_unique(),
        "typed_tasks_unrated": int((tasks["task_type"].is_not_null() & ~tasks["has_ratings"]).sum()),
        **{
            f"tasks_rated_{name}": int((rated["ratings_source"] == name).sum())
            for name in RATINGS_SOURCES
        },
        "is_core_true": int(tasks["is_core"].sum()),
        # how well the documented Core rule reproduces O*NET's Task Type on the rated tasks
        "core_rule_agreement": float(((typed["task_type"] == "Core") == rule).mean())
        if typed.height
        else 0.0,
    }
    if ratings is not None:
        summary["ratings_rows_not_in_statements"] = ratings.join(
            tasks, on=["onet_soc_code", "task_id"], how="anti"
        ).height
    return summary


def build_onet_occupations(
    occupations: pl.DataFrame, tasks: pl.DataFrame, oews: pl.DataFrame
) -> pl.DataFrame:
    """All O*NET-SOC codes with the 6-digit SOC code, SOC major group (titles from OEWS major rows; 55-0000
    Military, absent from OEWS, gets its SOC 2018 title) and has_tasks."""
    majors = oews.filter(pl.col("group_level") == "major").select(
        pl.col("soc_code").alias("major_group_code"), pl.col("title").alias("major_group_title")
    )
    majors = pl.concat(
        [
            majors,
            pl.DataFrame(
                {
                    "major_group_code": [MILITARY_MAJOR_GROUP[0]],
                    "major_group_title": [MILITARY_MAJOR_GROUP[1]],
                }
            ),
        ]
    ).unique("major_group_code", keep="first")
    with_tasks = tasks.select("onet_soc_code").unique().with_columns(pl.lit(True).alias("has_tasks"))
    return (
        occupations.with_columns(
            pl.col("onet_soc_code").str.slice(0, 7).alias("soc_code"),
            (pl.col("onet_soc_code").str.slice(0, 2) + "-0000").alias("major_group_code"),
        )
        .join(majors, on="major_group_code", how="left")
        .join(with_tasks, on="onet_soc_code", how="left")
        .with_columns(pl.col("has_tasks").fill_null(False))
        .select(
            "onet_soc_code",
            "title",
            "description",
            "soc_code",
            "major_group_code",
            "major_group_title",
            "has_tasks",
        )
        .sort("onet_soc_code")
    )


def parse_alternate_titles(path: str | Path) -> pl.DataFrame:
    """`Alternate Titles.txt` -> onet_soc_code, alternate_title, short_title (null for n/a)."""
    path = Path(path)
    df = read_tsv(path, ["O*NET-SOC Code", "Alternate Title", "Short Title"])
    check_pattern(df, "O*NET-SOC Code", _ONET_CODE, path, "an O*NET-SOC code")
    return df.select(
        pl.col("O*NET-SOC Code").alias("onet_soc_code"),
        pl.col("Alternate Title").alias("alternate_title"),
        pl.when(pl.col("Short Title").is_in(list(NA)))
        .then(None)
        .otherwise(pl.col("Short Title"))
        .alias("short_title"),
    )


def parse_reported_titles(path: str | Path) -> pl.DataFrame:
    """`Sample of Reported Titles.txt` -> onet_soc_code, reported_title."""
    path = Path(path)
    df = read_tsv(path, ["O*NET-SOC Code", "Reported Job Title"])
    check_pattern(df, "O*NET-SOC Code", _ONET_CODE, path, "an O*NET-SOC code")
    return df.select(
        pl.col("O*NET-SOC Code").alias("onet_soc_code"), pl.col("Reported Job Title").alias("reported_title")
    )


def build_onet_job_titles(
    occupations: pl.DataFrame, alternate: pl.DataFrame, reported: pl.DataFrame
) -> pl.DataFrame:
    """One row per (onet_soc_code, job_title, title_source); exact duplicates within a source dropped."""
    parts = [
        occupations.select(
            "onet_soc_code", pl.col("title").alias("job_title"), pl.lit("title").alias("title_source")
        ),
        alternate.select(
            "onet_soc_code",
            pl.col("alternate_title").alias("job_title"),
            pl.lit("alternate").alias("title_source"),
        ),
        alternate.filter(pl.col("short_title").is_not_null()).select(
            "onet_soc_code", pl.col("short_title").alias("job_title"), pl.lit("short").alias("title_source")
        ),
        reported.select(
            "onet_soc_code",
            pl.col("reported_title").alias("job_title"),
            pl.lit("reported").alias("title_source"),
        ),
    ]
    return (
        pl.concat(parts)
        .with_columns(pl.col("job_title").str.strip_chars())
        .filter(pl.col("job_title").str.len_chars() > 0)
        .unique(maintain_order=True)
    )


def parse_technology_skills(path: str | Path) -> pl.DataFrame:
    """`Technology Skills.txt` -> onet_soc_code, example, commodity_code, commodity_title, hot_technology,
    in_demand."""
    path = Path(path)
    df = read_tsv(
        path,
        ["O*NET-SOC Code", "Example", "Commodity Code", "Commodity Title", "Hot Technology", "In Demand"],
    )
    check_pattern(df, "O*NET-SOC Code", _ONET_CODE, path, "an O*NET-SOC code")
    df = cast_number(df, "Commodity Code", pl.Int64(), path, rename="commodity_code", required=True)
    df = cast_flag(df, "Hot Technology", path, true=["Y"], false=["N"], rename="hot_technology")
    df = cast_flag(df, "In Demand", path, true=["Y"], false=["N"], rename="in_demand")
    df = df.rename(
        {"O*NET-SOC Code": "onet_soc_code", "Example": "example", "Commodity Title": "commodity_title"}
    )
    check_unique(df, ["onet_soc_code", "example", "commodity_code"], path)
    return df.select(
        "onet_soc_code", "example", "commodity_code", "commodity_title", "hot_technology", "in_demand"
    )


# ---------------------------------------------------------------------------------------------------------
# BLS OEWS May 2024 national
# ---------------------------------------------------------------------------------------------------------

OEWS_GROUPS = ("total", "major", "minor", "broad", "detailed")
OEWS_SHEET = "national_M2024_dl"


def parse_oews_national(path: str | Path, sheet: str = OEWS_SHEET) -> pl.DataFrame:
    """BLS `national_M2024_dl.xlsx` -> the `oews_wages` table (one row per OCC_CODE x O_GROUP).

    Line numbers in errors are worksheet rows (row 1 is the header). See the module docstring for the
    `*` / `**` / `#` markers and the imputed hourly/annual wages.
    """
    path = Path(path)
    try:
        raw = pl.read_excel(path, sheet_name=sheet, engine="calamine", infer_schema_length=0)
    except Exception as exc:  # fastexcel raises its own error types for a corrupt or truncated workbook
        raise InputError(
            f"cannot read sheet {sheet!r} of the OEWS workbook ({type(exc).__name__}: {exc})", path=path
        ) from exc
    columns = ["OCC_CODE", "OCC_TITLE", "O_GROUP", "TOT_EMP", "H_MEAN", "A_MEAN"]
    _check_header(raw.columns, columns, path)
    df = raw.with_columns(pl.Series(LINE, range(2, raw.height + 2), dtype=pl.Int64))
    if df.is_empty():
        raise InputError("the OEWS sheet has no data rows", path=path, line=2)
    check_pattern(df, "OCC_CODE", _SOC_CODE, path, "a SOC code like 13-2011")
    check_in_set(df, "O_GROUP", OEWS_GROUPS, path)
    check_unique(df, ["OCC_CODE", "O_GROUP"], path)
    df = df.with_columns(
        (pl.col("H_MEAN") == "#").alias("_h_top"),
        (pl.col("A_MEAN") == "#").alias("_a_top"),
        pl.col("H_MEAN").replace("#", str(TOP_CODED_HOURLY)),
        pl.col("A_MEAN").replace("#", str(TOP_CODED_ANNUAL)),
    )
    df = cast_number(
        df,
        "TOT_EMP",
        pl.Float64(),
        path,
        rename="employment",
        na_values=("**", ""),
        min_value=0,
        integral_float=True,
    )
    df = cast_number(
        df, "H_MEAN", pl.Float64(), path, rename="hourly_published", na_values=("*", ""), min_value=0
    )
    df = cast_number(
        df, "A_MEAN", pl.Float64(), path, rename="annual_published", na_values=("*", ""), min_value=0
    )
    return df.select(
        pl.col("OCC_CODE").alias("soc_code"),
        pl.col("OCC_TITLE").str.strip_chars().alias("title"),
        pl.col("O_GROUP").alias("group_level"),
        "employment",
        pl.coalesce("hourly_published", pl.col("annual_published") / HOURS_PER_YEAR).alias(
            "hourly_mean_wage"
        ),
        pl.coalesce("annual_published", pl.col("hourly_published") * HOURS_PER_YEAR).alias(
            "annual_mean_wage"
        ),
        (
            pl.col("employment")
            * pl.coalesce("annual_published", pl.col("hourly_published") * HOURS_PER_YEAR)
        ).alias("wage_bill"),
        (pl.col("employment") * HOURS_PER_YEAR).alias("annual_hours"),
        (pl.col("_h_top") | pl.col("_a_top")).alias("wage_top_coded"),
        (pl.col("hourly_published").is_null() & pl.col("annual_published").is_not_null()).alias(
            "hourly_wage_imputed"
        ),
        (pl.col("annual_published").is_null() & pl.col("hourly_published").is_not_null()).alias(
            "annual_wage_imputed"
        ),
    )


def oews_summary(oews: pl.DataFrame) -> dict[str, int | float]:
    counts = dict(oews.group_by("group_level").len().iter_rows())
    total = oews.filter(pl.col("group_level") == "total")["employment"]
    return {
        "rows": oews.height,
        **{f"rows_{g}": int(counts.get(g, 0)) for g in OEWS_GROUPS},
        "total_employment": float(total[0]) if total.len() else 0.0,
        "detailed_employment": float(oews.filter(pl.col("group_level") == "detailed")["employment"].sum()),
        "employment_suppressed": int(oews["employment"].is_null().sum()),
        "wage_missing": int(oews["annual_mean_wage"].is_null().sum()),
        "wage_top_coded": int(oews["wage_top_coded"].sum()),
        "hourly_wage_imputed": int(oews["hourly_wage_imputed"].sum()),
        "annual_wage_imputed": int(oews["annual_wage_imputed"].sum()),
    }


# ---------------------------------------------------------------------------------------------------------
# O*NET occupations x OEWS employment and wages
# ---------------------------------------------------------------------------------------------------------


def build_occupation_wages(occupations: pl.DataFrame, oews: pl.DataFrame) -> pl.DataFrame:
    """Every O*NET occupation with tasks, with employment and wages from OEWS May 2024 (national).

    Matching, in order:
    1. `detailed` / `split_among_onet_codes`: the O*NET code's 6-digit SOC code has an OEWS detailed row. When
       n O*NET codes share that SOC code (e.g. 15-1299.01 .. .09), each gets employment / n (an equal split:
       OEWS has no finer counts) and the SOC code's mean wages. Totals are preserved.
    2. `broad_aggregate`: the SOC code has no OEWS detailed row (OEWS publishes e.g. 13-1020 "Buyers and
       Purchasing Agents" instead of 13-1021/22/23, or 29-2010 instead of 29-2011/12): the O*NET codes under
       the broad group (SOC code with last digit 0) share, equally, the broad group's employment *not already
       attached* under rule 1 (broad employment minus the detailed rows matched directly), with the mean wage
       of that residual (residual wage bill / residual employment; the broad mean if that is not positive).
    3. `missing`: neither exists (45-3031 Fishers and Related Fishing Workers: OEWS does not cover them), or
       OEWS suppresses the employment, or nothing is left of the broad group. `missing_reason` says which.
    OEWS employment no O*NET occupation with tasks maps to (e.g. most "All Other" codes) stays unattached;
    `occupation_wages_summary` reports how much.
    """
    occ = occupations.filter(pl.col("has_tasks")).select(
        "onet_soc_code", "soc_code", "title", "major_group_code"
    )
    detailed = oews.filter(pl.col("group_level") == "detailed").select(
        pl.col("soc_code"),
        pl.col("employment").alias("d_emp"),
        pl.col("annual_mean_wage").alias("d_annual"),
        pl.col("hourly_mean_wage").alias("d_hourly"),
    )
    broad_rows = (
        oews.filter(pl.col("group_level").is_in(["broad", "detailed"]))
        .sort(pl.col("group_level") == "detailed")  # prefer the broad row when both exist
        .unique("soc_code", keep="first")
        .select(
            pl.col("soc_code").alias("broad_code"),
            pl.col("employment").alias("b_emp"),
            pl.col("annual_mean_wage").alias("b_annual"),
            pl.col("hourly_mean_wage").alias("b_hourly"),
        )
    )

    direct = occ.join(detailed, on="soc_code", how="inner")
    direct = direct.with_columns(pl.len().over("soc_code").alias("n_onet_codes_sharing"))
    direct = direct.with_columns(
        (pl.col("d_emp") / pl.col("n_onet_codes_sharing")).alias("employment"),
        pl.col("d_annual").alias("annual_mean_wage"),
        pl.col("d_hourly").alias("hourly_mean_wage"),
        pl.col("soc_code").alias("oews_code"),
        pl.when(pl.col("d_emp").is_null())
        .then(pl.lit("missing"))
        .when(pl.col("n_onet_codes_sharing") == 1)
        .then(pl.lit("detailed"))
        .otherwise(pl.lit("split_among_onet_codes"))
        .alias("wage_match"),
        pl.when(pl.col("d_emp").is_null())
        .then(pl.format("OEWS does not release employment for SOC {}", pl.col("soc_code")))
        .otherwise(None)
        .alias("missing_reason"),
    )

    # employment and wage bills already attached directly, per broad group
    attached_soc = direct.filter(pl.col("d_emp").is_not_null()).select("soc_code").unique()
    taken = (
        detailed.join(attached_soc, on="soc_code", how="semi")
        .with_columns((pl.col("soc_code").str.slice(0, 6) + "0").alias("broad_code"))
        .group_by("broad_code")
        .agg(
            pl.col("d_emp").sum().alias("taken_emp"),
            (pl.col("d_emp") * pl.col("d_annual")).sum().alias("taken_annual_bill"),
            (pl.col("d_emp") * pl.col("d_hourly")).sum().alias("taken_hourly_bill"),
            (pl.col("d_annual").is_null() | pl.col("d_hourly").is_null()).any().alias("taken_wage_gap"),
        )
    )

    rest = (
        occ.join(detailed.select("soc_code"), on="soc_code", how="anti")
        .with_columns((pl.col("soc_code").str.slice(0, 6) + "0").alias("broad_code"))
        .join(broad_rows, on="broad_code", how="left")
        .join(taken, on="broad_code", how="left")
        .with_columns(
            pl.col("taken_emp").fill_null(0.0),
            pl.col("taken_annual_bill").fill_null(0.0),
            pl.col("taken_hourly_bill").fill_null(0.0),
            pl.col("taken_wage_gap").fill_null(False),
        )
        .with_columns(
            (pl.col("b_emp") - pl.col("taken_emp")).alias("residual_emp"),
            pl.len().over("broad_code").alias("n_onet_codes_sharing"),
        )
    )
    residual_annual = (pl.col("b_emp") * pl.col("b_annual") - pl.col("taken_annual_bill")) / pl.col(
        "residual_emp"
    )
    residual_hourly = (pl.col("b_emp") * pl.col("b_hourly") - pl.col("taken_hourly_bill")) / pl.col(
        "residual_emp"
    )
    usable = ~pl.col("taken_wage_gap") & (pl.col("taken_emp") > 0)
    ok = pl.col("b_emp").is_not_null() & (pl.col("residual_emp") > 0)
    rest = rest.with_columns(
        pl.when(ok)
        .then(pl.col("residual_emp") / pl.col("n_onet_codes_sharing"))
        .otherwise(None)
        .alias("employment"),
        pl.when(ok & usable & (residual_annual > 0))
        .then(residual_annual)
        .when(ok)
        .then(pl.col("b_annual"))
        .otherwise(None)
        .alias("annual_mean_wage"),
        pl.when(ok & usable & (residual_hourly > 0))
        .then(residual_hourly)
        .when(ok)
        .then(pl.col("b_hourly"))
        .otherwise(None)
        .alias("hourly_mean_wage"),
        pl.when(pl.col("b_emp").is_not_null()).then(pl.col("broad_code")).otherwise(None).alias("oews_code"),
        pl.when(ok).then(pl.lit("broad_aggregate")).otherwise(pl.lit("missing")).alias("wage_match"),
        pl.when(ok)
        .then(None)
        .when(pl.col("b_emp").is_null() & pl.col("broad_code").is_in(broad_rows["broad_code"].implode()))
        .then(pl.format("OEWS does not release employment for broad group {}", pl.col("broad_code")))
        .when(pl.col("b_emp").is_null())
        .then(
            pl.format(
                "neither SOC {} nor its broad group {} has an OEWS May 2024 national row "
                "(outside OEWS coverage)",
                pl.col("soc_code"),
                pl.col("broad_code"),
            )
        )
        .otherwise(
            pl.format(
                "all of broad group {}'s OEWS employment is already attached to detailed matches",
                pl.col("broad_code"),
            )
        )
        .alias("missing_reason"),
    )
    columns = [
        "onet_soc_code",
        "soc_code",
        "title",
        "major_group_code",
        "employment",
        "annual_mean_wage",
        "hourly_mean_wage",
        "wage_match",
        "n_onet_codes_sharing",
        "oews_code",
        "missing_reason",
    ]
    out = pl.concat([direct.select(columns), rest.select(columns)], how="vertical_relaxed")
    out = out.with_columns(
        pl.when(pl.col("wage_match") == "missing")
        .then(None)
        .otherwise(pl.col("employment"))
        .alias("employment"),
        pl.col("n_onet_codes_sharing").cast(pl.Int64),
    ).with_columns(
        (pl.col("employment") * pl.col("annual_mean_wage")).alias("wage_bill"),
        (pl.col("employment") * HOURS_PER_YEAR).alias("annual_hours"),
    )
    return out.select(
        "onet_soc_code",
        "soc_code",
        "title",
        "major_group_code",
        "employment",
        "annual_mean_wage",
        "hourly_mean_wage",
        "wage_bill",
        "annual_hours",
        "wage_match",
        "n_onet_codes_sharing",
        "oews_code",
        "missing_reason",
    ).sort("onet_soc_code")


def occupation_wages_summary(wages: pl.DataFrame, oews: pl.DataFrame) -> dict[str, int | float]:
    total = oews.filter(pl.col("group_level") == "total")["employment"]
    total_employment = (
        float(total[0])
        if total.len() and total[0] is not None
        else float(oews.filter(pl.col("group_level") == "detailed")["employment"].sum())
    )
    attached = float(wages["employment"].sum())
    counts = dict(wages.group_by("wage_match").len().iter_rows())
    used = set(wages["oews_code"].drop_nulls().to_list())
    detailed = oews.filter(pl.col("group_level") == "detailed")
    # detailed OEWS rows reached neither directly nor through their broad group
    unreached = detailed.filter(
        ~pl.col("soc_code").is_in(list(used)) & ~(pl.col("soc_code").str.slice(0, 6) + "0").is_in(list(used))
    )
    return {
        "occupations": wages.height,
        "with_wages": int(wages["employment"].is_not_null().sum()),
        "missing": int(counts.get("missing", 0)),
        "match_detailed": int(counts.get("detailed", 0)),
        "match_split_among_onet_codes": int(counts.get("split_among_onet_codes", 0)),
        "match_broad_aggregate": int(counts.get("broad_aggregate", 0)),
        "attached_employment": attached,
        "oews_total_employment": total_employment,
        "employment_share_attached": attached / total_employment if total_employment else 0.0,
        "attached_wage_bill": float(wages["wage_bill"].sum()),
        "oews_detailed_rows_unattached": unreached.height,
        "oews_detailed_employment_unattached": float(unreached["employment"].sum()),
    }


# ---------------------------------------------------------------------------------------------------------
# Task shares π (MIT WAL, O*NET 30.2) -> task_hours
# ---------------------------------------------------------------------------------------------------------


def parse_task_shares(path: str | Path) -> pl.DataFrame:
    """MIT WAL `onet_task_labor_input_30_2.parquet` (or .csv) -> onet_soc_code, task_id, pi."""
    path = Path(path)
    try:
        if path.suffix == ".csv":
            raw = read_csv_records(path, ["onetsoc_code", "task_id", "pi"])
            raw = cast_number(raw, "task_id", pl.Int64(), path, required=True)
            raw = cast_number(raw, "pi", pl.Float64(), path, required=True)
        else:
            raw = pl.read_parquet(path)
            raw = raw.with_columns(pl.Series(LINE, range(1, raw.height + 1), dtype=pl.Int64))
    except InputError:
        raise
    except Exception as exc:  # a truncated or corrupt parquet file
        raise InputError(
            f"cannot read the task-share table ({type(exc).__name__}: {exc})", path=path
        ) from exc
    _check_header(raw.columns, ["onetsoc_code", "task_id", "pi"], path)
    df = raw.rename({"onetsoc_code": "onet_soc_code"}).with_columns(
        pl.col("task_id").cast(pl.Int64, strict=False), pl.col("pi").cast(pl.Float64, strict=False)
    )
    check_pattern(df, "onet_soc_code", _ONET_CODE, path, "an O*NET-SOC code")
    _fail_at(df, df["task_id"].is_null(), "column 'task_id': missing or not an integer (row number)", path)
    _fail_at(
        df,
        df["pi"].is_null() | df["pi"].is_nan() | (df["pi"] < 0) | (df["pi"] > 1),
        "column 'pi': missing or outside [0, 1] (row number)",
        path,
        "pi",
    )
    check_unique(df, ["onet_soc_code", "task_id"], path)
    return df.select("onet_soc_code", "task_id", "pi")


def build_task_hours(tasks: pl.DataFrame, shares: pl.DataFrame, wages: pl.DataFrame) -> pl.DataFrame:
    """Per 29.2 task: its share π of the occupation's labour and its US annual hours (π x occupation hours).

    π comes from O*NET 30.2 (MIT WAL), joined on (onet_soc_code, task_id). Within each occupation with n tasks
    of which k have a 30.2 π:
    - each of the n - k tasks without π gets the equal-split fallback 1/n (`pi_is_fallback` = true);
    - the k matched π are renormalised to fill the rest: π_i / Σ_matched π x k/n.
    So π sums to 1 over the occupation's 29.2 tasks (30.2 tasks absent from 29.2 drop out and the others
    grow in proportion), and an occupation without any 30.2 π is an equal split. `pi_raw` keeps the 30.2
    value. Hours: occupation_annual_hours = OEWS employment x 2,080 (`occupation_wages`), null where wages
    are missing.
    """
    joined = tasks.select("onet_soc_code", "task_id").join(
        shares.select("onet_soc_code", "task_id", pl.col("pi").alias("pi_raw")),
        on=["onet_soc_code", "task_id"],
        how="left",
    )
    per_occ = pl.len().over("onet_soc_code")
    matched = pl.col("pi_raw").is_not_null()
    k = matched.sum().over("onet_soc_code")
    matched_sum = pl.col("pi_raw").sum().over("onet_soc_code")
    pi = (
        pl.when(matched & (matched_sum > 0))
        .then(pl.col("pi_raw") / matched_sum * k / per_occ)
        .when(matched)  # every matched π is 0: spread the matched tasks' part equally among them
        .then(1.0 / per_occ)
        .otherwise(1.0 / per_occ)
    )
    hours = wages.select("onet_soc_code", pl.col("annual_hours").alias("occupation_annual_hours"))
    return (
        joined.with_columns(pi.alias("pi"), (~matched).alias("pi_is_fallback"))
        .join(hours, on="onet_soc_code", how="left")
        .with_columns((pl.col("pi") * pl.col("occupation_annual_hours")).alias("task_annual_hours"))
        .select(
            "onet_soc_code",
            "task_id",
            "pi",
            "pi_is_fallback",
            "pi_raw",
            "occupation_annual_hours",
            "task_annual_hours",
        )
        .sort(["onet_soc_code", "task_id"])
    )


def task_hours_summary(task_hours: pl.DataFrame, shares: pl.DataFrame) -> dict[str, int | float]:
    per_occ = task_hours.group_by("onet_soc_code").agg(
        pl.col("pi").sum().alias("pi_sum"), (~pl.col("pi_is_fallback")).sum().alias("k"), pl.len().alias("n")
    )
    sums = per_occ["pi_sum"]
    return {
        "tasks": task_hours.height,
        "tasks_with_pi": int((~task_hours["pi_is_fallback"]).sum()),
        "pi_match_rate": float((~task_hours["pi_is_fallback"]).mean()) if task_hours.height else 0.0,
        "occupations": per_occ.height,
        "occupations_all_fallback": int((per_occ["k"] == 0).sum()),
        "occupations_partial_fallback": int(((per_occ["k"] > 0) & (per_occ["k"] < per_occ["n"])).sum()),
        "pi_rows_not_in_tasks": shares.join(task_hours, on=["onet_soc_code", "task_id"], how="anti").height,
        "pi_sum_max_abs_error": float((sums - 1.0).abs().max()) if sums.len() else 0.0,
        "tasks_with_hours": int(task_hours["task_annual_hours"].is_not_null().sum()),
        "total_task_annual_hours": float(task_hours["task_annual_hours"].sum()),
    }


def pi_sums(task_hours: pl.DataFrame) -> pl.DataFrame:
    """Σπ per occupation (the check expects 1 within 1e-6)."""
    return task_hours.group_by("onet_soc_code").agg(pl.col("pi").sum().alias("pi_sum")).sort("onet_soc_code")


# ---------------------------------------------------------------------------------------------------------
# Eloundou et al. exposure labels
# ---------------------------------------------------------------------------------------------------------


def parse_eloundou_labels(path: str | Path) -> pl.DataFrame:
    """`full_labelset.tsv` -> onet_soc_code, task_id, human_exposure, gpt4_exposure (E0/E1/E2)."""
    path = Path(path)
    df = read_csv_records(
        path, ["O*NET-SOC Code", "Task ID", "human_exposure_agg", "gpt4_exposure"], delimiter="\t"
    )
    check_pattern(df, "O*NET-SOC Code", _ONET_CODE, path, "an O*NET-SOC code")
    df = cast_number(df, "Task ID", pl.Int64(), path, rename="task_id", required=True, integral_float=True)
    check_in_set(df, "human_exposure_agg", EXPOSURE_LABELS, path)
    check_in_set(df, "gpt4_exposure", EXPOSURE_LABELS, path)
    df = df.rename({"O*NET-SOC Code": "onet_soc_code", "human_exposure_agg": "human_exposure"})
    check_unique(df, ["onet_soc_code", "task_id"], path)
    return df.select("onet_soc_code", "task_id", "human_exposure", "gpt4_exposure")


def build_task_exposure(labels: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """Labels of the 29.2 tasks, joined on (onet_soc_code, task_id); labels of tasks no longer in 29.2 are
    dropped. exposed = human label E1 or E2; gpt4_exposed = GPT-4 label E1 or E2."""
    return (
        labels.join(tasks.select("onet_soc_code", "task_id"), on=["onet_soc_code", "task_id"], how="semi")
        .with_columns(
            pl.col("human_exposure").is_in(["E1", "E2"]).alias("exposed"),
            pl.col("gpt4_exposure").is_in(["E1", "E2"]).alias("gpt4_exposed"),
        )
        .sort(["onet_soc_code", "task_id"])
    )


def task_exposure_summary(
    exposure: pl.DataFrame, labels: pl.DataFrame, tasks: pl.DataFrame
) -> dict[str, int | float]:
    return {
        "label_rows": labels.height,
        "matched_tasks": exposure.height,
        "match_rate_of_onet_tasks": exposure.height / tasks.height if tasks.height else 0.0,
        "match_rate_of_labels": exposure.height / labels.height if labels.height else 0.0,
        "labels_not_in_onet": labels.height - exposure.height,
        "onet_tasks_without_labels": tasks.height - exposure.height,
        "exposed_share": float(exposure["exposed"].mean()) if exposure.height else 0.0,
        "gpt4_exposed_share": float(exposure["gpt4_exposed"].mean()) if exposure.height else 0.0,
        **{f"human_{label}": int((exposure["human_exposure"] == label).sum()) for label in EXPOSURE_LABELS},
    }


# ---------------------------------------------------------------------------------------------------------
# WORKBank (Shao et al. 2025)
# ---------------------------------------------------------------------------------------------------------


def parse_workbank_tasks(path: str | Path) -> pl.DataFrame:
    """`task_statement_with_metadata.csv` -> task_id, onet_soc_code, occupation_title, task."""
    path = Path(path)
    df = read_csv_records(path, ["O*NET-SOC Code", "Occupation (O*NET-SOC Title)", "Task ID", "Task"])
    check_pattern(df, "O*NET-SOC Code", _ONET_CODE, path, "an O*NET-SOC code")
    df = cast_number(df, "Task ID", pl.Int64(), path, rename="task_id", required=True, integral_float=True)
    check_unique(df, ["task_id"], path)
    return df.select(
        "task_id",
        pl.col("O*NET-SOC Code").alias("onet_soc_code"),
        pl.col("Occupation (O*NET-SOC Title)").alias("occupation_title"),
        pl.col("Task").alias("task"),
    )


def _parse_workbank_ratings(path: str | Path, rating_column: str, rating: str, has: str) -> pl.DataFrame:
    """A WORKBank rating file -> task_id, occupation_title, task, `rating` (from `rating_column`, required,
    1-5) and `has` (the Human Agency Scale rating, 1-5)."""
    path = Path(path)
    df = read_csv_records(
        path,
        [
            "Task ID",
            "Occupation (O*NET-SOC Title)",
            "Task",
            rating_column,
            "Human Agency Scale Rating",
        ],
    )
    df = cast_number(df, "Task ID", pl.Int64(), path, rename="task_id", required=True, integral_float=True)
    df = cast_number(
        df,
        rating_column,
        pl.Int64(),
        path,
        rename=rating,
        required=True,
        min_value=1,
        max_value=5,
        integral_float=True,
    )
    df = cast_number(
        df,
        "Human Agency Scale Rating",
        pl.Int64(),
        path,
        rename=has,
        min_value=1,
        max_value=5,
        integral_float=True,
    )
    return df.select(
        "task_id",
        pl.col("Occupation (O*NET-SOC Title)").alias("occupation_title"),
        pl.col("Task").alias("task"),
        rating,
        has,
    )


def parse_workbank_desires(path: str | Path) -> pl.DataFrame:
    """`domain_worker_desires.csv` -> task_id, occupation_title, task, desire (1-5), worker_has (1-5)."""
    return _parse_workbank_ratings(path, "Automation Desire Rating", "desire", "worker_has")


def parse_workbank_capability(path: str | Path) -> pl.DataFrame:
    """`expert_rated_technological_capability.csv` -> task_id, occupation_title, task, capability (1-5),
    expert_has (1-5)."""
    return _parse_workbank_ratings(path, "Automation Capacity Rating", "capability", "expert_has")


def zone_expr(desire: str = "desire_mean", capability: str = "capability_mean") -> pl.Expr:
    """WORKBank zone from mean worker desire and mean expert capability (threshold 3 on both 1-5 scales)."""
    d, c = pl.col(desire), pl.col(capability)
    return (
        pl.when(d.is_null() | c.is_null())
        .then(None)
        .when((d >= ZONE_THRESHOLD) & (c >= ZONE_THRESHOLD))
        .then(pl.lit("green_light"))
        .when((d < ZONE_THRESHOLD) & (c >= ZONE_THRESHOLD))
        .then(pl.lit("red_light"))
        .when((d >= ZONE_THRESHOLD) & (c < ZONE_THRESHOLD))
        .then(pl.lit("rnd_opportunity"))
        .otherwise(pl.lit("low_priority"))
    )


def build_workbank_tasks(
    meta: pl.DataFrame, desires: pl.DataFrame, capability: pl.DataFrame, tasks: pl.DataFrame
) -> pl.DataFrame:
    """One row per WORKBank task (metadata file, plus any rated task missing from it) with rating statistics,
    the zone (null unless both worker desire and expert capability exist) and `in_onet_29_2`."""
    worker = desires.group_by("task_id").agg(
        pl.col("desire").mean().alias("desire_mean"),
        pl.col("desire").median().alias("desire_median"),
        pl.col("desire").count().alias("desire_n"),
        pl.col("worker_has").mean().alias("worker_has_mean"),
        pl.col("worker_has").median().alias("worker_has_median"),
        pl.col("worker_has").count().alias("worker_has_n"),
        pl.col("occupation_title").first().alias("_w_title"),
        pl.col("task").first().alias("_w_task"),
    )
    expert = capability.group_by("task_id").agg(
        pl.col("capability").mean().alias("capability_mean"),
        pl.col("capability").median().alias("capability_median"),
        pl.col("capability").count().alias("capability_n"),
        pl.col("expert_has").mean().alias("expert_has_mean"),
        pl.col("expert_has").median().alias("expert_has_median"),
        pl.col("expert_has").count().alias("expert_has_n"),
        pl.col("occupation_title").first().alias("_e_title"),
        pl.col("task").first().alias("_e_task"),
    )
    out = (
        meta.join(worker, on="task_id", how="full", coalesce=True)
        .join(expert, on="task_id", how="full", coalesce=True)
        .with_columns(
            pl.coalesce("occupation_title", "_w_title", "_e_title").alias("occupation_title"),
            pl.coalesce("task", "_w_task", "_e_task").alias("task"),
            *[
                pl.col(c).fill_null(0).cast(pl.Int64)
                for c in ("desire_n", "worker_has_n", "capability_n", "expert_has_n")
            ],
        )
    )
    keys = tasks.select("onet_soc_code", "task_id").with_columns(pl.lit(True).alias("in_onet_29_2"))
    return (
        out.with_columns(zone_expr().alias("zone"))
        .join(keys, on=["onet_soc_code", "task_id"], how="left")
        .with_columns(pl.col("in_onet_29_2").fill_null(False))
        .select(
            "task_id",
            "onet_soc_code",
            "occupation_title",
            "task",
            "desire_mean",
            "desire_median",
            "desire_n",
            "capability_mean",
            "capability_median",
            "capability_n",
            "worker_has_mean",
            "worker_has_median",
            "worker_has_n",
            "expert_has_mean",
            "expert_has_median",
            "expert_has_n",
            "zone",
            "in_onet_29_2",
        )
        .sort("task_id")
    )


def workbank_summary(workbank: pl.DataFrame) -> dict[str, int | float]:
    zones = dict(workbank.group_by("zone").len().iter_rows())
    return {
        "tasks": workbank.height,
        "tasks_worker_rated": int((workbank["desire_n"] > 0).sum()),
        "tasks_expert_rated": int((workbank["capability_n"] > 0).sum()),
        "tasks_with_zone": int(workbank["zone"].is_not_null().sum()),
        "worker_ratings": int(workbank["desire_n"].sum()),
        "expert_ratings": int(workbank["capability_n"].sum()),
        **{f"zone_{z}": int(zones.get(z, 0)) for z in ZONES},
        "in_onet_29_2": int(workbank["in_onet_29_2"].sum()),
        "match_rate_onet_29_2": float(workbank["in_onet_29_2"].mean()) if workbank.height else 0.0,
        "without_onet_code": int(workbank["onet_soc_code"].is_null().sum()),
    }


def markdown_preview(df: pl.DataFrame, rows: int = 10, max_chars: int = 80) -> str:
    """First rows as a Markdown table (long text cut) for Dagster metadata."""
    head = df.head(rows).with_columns(
        [pl.col(c).str.slice(0, max_chars) for c, t in df.schema.items() if t == pl.Utf8]
    )
    return head.to_pandas().to_markdown(index=False)
