"""Great Expectations glue shared by every domain: run a list of expectations on a frame, get a tidy result.

    from models import expectations as ex
    outcome = ex.run_expectations(df, [*ex.unique_key(["onet_soc_code", "task_id"]), ex.row_count(18_796),
                                       ex.between("pi", 0, 1)], name="task_hours")
    outcome.success, outcome.results  # one row per expectation: expectation, column, arguments, success, ...

Each call builds an *ephemeral* GX context (no files written), a pandas data source with one whole-frame batch
definition and an `ExpectationSuite`, validates the batch and flattens the `ExpectationSuiteValidationResult`
into a polars frame. Great Expectations is imported lazily (it takes seconds to import), so importing this
module, and the Dagster definitions that use it, stays cheap. No Dagster here: asset checks turn an outcome
into an `AssetCheckResult` (see `assets/reference.py`).

The builders below return `Spec`s (the GX class name and its arguments, plain data): building them imports no
GX, and a spec can be sent to another process (a cold `run_all` validates in a label worker that imported GX
while the main process did other work: resources/label_pool.py, `validate`). `run_expectations` builds fresh
GX expectations from them for each call (GX assigns ids to the objects it adds to a suite).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    import pandas as pd
    from great_expectations.expectations import Expectation

RESULT_SCHEMA: dict[str, pl.DataType] = {
    "frame": pl.Utf8(),
    "expectation": pl.Utf8(),
    "column": pl.Utf8(),
    "arguments": pl.Utf8(),
    "success": pl.Boolean(),
    "observed_value": pl.Utf8(),
    "element_count": pl.Int64(),
    "unexpected_count": pl.Int64(),
    "unexpected_percent": pl.Float64(),
    "sample_unexpected": pl.Utf8(),
    "exception": pl.Utf8(),
}


@dataclass(frozen=True)
class Spec:
    """One expectation: the name of its class in `great_expectations.expectations` and its arguments."""

    kind: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def build(self) -> Expectation:
        return getattr(_ge().expectations, self.kind)(**self.arguments)


@dataclass(frozen=True)
class ValidationOutcome:
    """Result of one or more expectation suites: overall success and one row per expectation."""

    name: str
    success: bool
    results: pl.DataFrame

    @property
    def n_expectations(self) -> int:
        return self.results.height

    @property
    def n_failed(self) -> int:
        return int((~self.results["success"]).sum())

    def failures(self) -> pl.DataFrame:
        return self.results.filter(~pl.col("success"))

    def describe_failures(self, limit: int = 10) -> str:
        """One line per failed expectation, for logs and error messages."""
        lines = []
        for row in self.failures().head(limit).iter_rows(named=True):
            where = f"{row['frame']}." if row["frame"] else ""
            parts = [f"{where}{row['expectation']}({row['column'] or ''}) {row['arguments']}"]
            if row["observed_value"] is not None:
                parts.append(f"observed {row['observed_value']}")
            if row["unexpected_count"] is not None:
                parts.append(f"{row['unexpected_count']} unexpected ({row['unexpected_percent']:.3g}%)")
            if row["sample_unexpected"]:
                parts.append(f"e.g. {row['sample_unexpected']}")
            if row["exception"]:
                parts.append(f"exception {row['exception']}")
            lines.append(": ".join(parts[:1]) + (": " + ", ".join(parts[1:]) if len(parts) > 1 else ""))
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The result table as Markdown (for `mostly` expectations, observed = the share as expected)."""
        observed = (
            pl.when(pl.col("observed_value").is_null() & pl.col("unexpected_percent").is_not_null())
            .then(pl.format("{}% as expected", (100 - pl.col("unexpected_percent")).round(3)))
            .otherwise(pl.col("observed_value"))
        )
        shown = self.results.select(
            "frame",
            "expectation",
            "column",
            "arguments",
            "success",
            observed.alias("observed"),
            "unexpected_count",
            "sample_unexpected",
        )
        return shown.with_columns(pl.col(pl.Utf8).fill_null("")).to_pandas().to_markdown(index=False)

    def summary(self) -> dict[str, Any]:
        """Plain values for check metadata."""
        return {"expectations": self.n_expectations, "failed": self.n_failed, "success": self.success}


def _ge():
    import great_expectations as gx  # slow import: only when a validation actually runs

    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    return gx


def _to_pandas(frame: pl.DataFrame | pd.DataFrame) -> pd.DataFrame:
    if isinstance(frame, pl.DataFrame):
        return frame.to_pandas()
    return frame


def _short(value: Any, limit: int = 200) -> str | None:
    if value is None:
        return None
    if isinstance(value, list) and len(value) > 5:  # GX's partial_unexpected_list holds up to 20 values
        value = [*value[:5], "..."]
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_expectations(
    frame: pl.DataFrame | pd.DataFrame, expectations: Sequence[Spec], *, name: str = "frame"
) -> ValidationOutcome:
    """Validate `frame` against `expectations` in an ephemeral GX context.

    Never raises on a failed expectation: the outcome says which failed (an expectation that errors, e.g. on a
    missing column, counts as failed with its `exception`)."""
    gx = _ge()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    batch_definition = (
        context.data_sources.add_pandas(name="benchmap")
        .add_dataframe_asset(name=name)
        .add_batch_definition_whole_dataframe("whole_frame")
    )
    suite = context.suites.add(gx.ExpectationSuite(name=name))
    for expectation in expectations:
        suite.add_expectation(expectation.build())
    batch = batch_definition.get_batch(batch_parameters={"dataframe": _to_pandas(frame)})
    validation = batch.validate(suite, result_format="SUMMARY")
    rows = []
    for result in validation.results:
        config = result.expectation_config
        kwargs = {k: v for k, v in dict(config.kwargs).items() if k not in {"batch_id", "column"}}
        detail = result.result or {}
        exception = (result.exception_info or {}).get("exception_message") if result.exception_info else None
        rows.append(
            {
                "frame": name,
                "expectation": config.type,
                "column": config.kwargs.get("column") or _short(config.kwargs.get("column_list")),
                "arguments": _short(kwargs),
                "success": bool(result.success),
                "observed_value": _short(detail.get("observed_value")),
                "element_count": detail.get("element_count"),
                "unexpected_count": detail.get("unexpected_count"),
                "unexpected_percent": detail.get("unexpected_percent"),
                "sample_unexpected": _short(detail.get("partial_unexpected_list") or None),
                "exception": _short(exception),
            }
        )
    results = pl.DataFrame(rows, schema=RESULT_SCHEMA)
    return ValidationOutcome(
        name=name, success=bool(validation.success) and bool(results["success"].all()), results=results
    )


def run_parts(parts: Sequence[tuple[str, pl.DataFrame, Sequence[Spec]]]) -> list[ValidationOutcome]:
    """`run_expectations` of each (name, frame, specs): one task for a worker process."""
    return [run_expectations(frame, specs, name=name) for name, frame, specs in parts]


def combine(outcomes: Iterable[ValidationOutcome], *, name: str) -> ValidationOutcome:
    """One outcome from several (e.g. the table itself plus a per-group aggregate of it)."""
    outcomes = list(outcomes)
    results = pl.concat([o.results for o in outcomes]) if outcomes else pl.DataFrame(schema=RESULT_SCHEMA)
    return ValidationOutcome(name=name, success=all(o.success for o in outcomes), results=results)


# --- builders for the expectations every table needs (plain data: no GX imported) ---


def not_null(columns: Sequence[str], *, mostly: float | None = None) -> list[Spec]:
    extra = {"mostly": mostly} if mostly is not None else {}
    return [Spec("ExpectColumnValuesToNotBeNull", {"column": c, **extra}) for c in columns]


def unique_key(columns: Sequence[str]) -> list[Spec]:
    """Every key column non-null, and the key (one column or a compound key) unique."""
    unique = (
        Spec("ExpectColumnValuesToBeUnique", {"column": columns[0]})
        if len(columns) == 1
        else Spec("ExpectCompoundColumnsToBeUnique", {"column_list": list(columns)})
    )
    return [*not_null(columns), unique]


def between(
    column: str, min_value: float | None, max_value: float | None, *, mostly: float | None = None
) -> Spec:
    """Non-null values of `column` within [min_value, max_value] (nulls are not counted as failures)."""
    extra = {"mostly": mostly} if mostly is not None else {}
    return Spec(
        "ExpectColumnValuesToBeBetween", {"column": column, "min_value": min_value, "max_value": max_value, **extra}
    )


def positive(column: str) -> Spec:
    """Non-null values of `column` strictly above 0."""
    return Spec("ExpectColumnValuesToBeBetween", {"column": column, "min_value": 0, "strict_min": True})


def matches(column: str, regex: str) -> Spec:
    return Spec("ExpectColumnValuesToMatchRegex", {"column": column, "regex": regex})


def in_set(column: str, values: Sequence[Any], *, mostly: float | None = None) -> Spec:
    extra = {"mostly": mostly} if mostly is not None else {}
    return Spec("ExpectColumnValuesToBeInSet", {"column": column, "value_set": list(values), **extra})


def row_count(value: int) -> Spec:
    return Spec("ExpectTableRowCountToEqual", {"value": value})


def row_count_between(min_value: int | None, max_value: int | None) -> Spec:
    return Spec("ExpectTableRowCountToBeBetween", {"min_value": min_value, "max_value": max_value})


def distinct_count(column: str, value: int) -> Spec:
    return Spec("ExpectColumnUniqueValueCountToBeBetween", {"column": column, "min_value": value, "max_value": value})


def share_at_least(column: str, floor: float) -> Spec:
    """At least `floor` of the rows have `column` true: a join match rate expressed as a GX expectation."""
    return in_set(column, [True], mostly=floor)


def metric_at_least(column: str, floor: float) -> Spec:
    """For one-row metric frames: the value in `column` is at least `floor`."""
    return between(column, floor, None)
