"""The report summary (`summary.md`) and Markdown previews of tables, generated from the tables alone.

Every number in the summary is read from a table passed in -- none is typed here -- and every finding says
where it comes from. A finding whose table is missing or empty is replaced by a line saying so, so nothing is
dropped silently. Limitations list the benchmarks included, the labeler with its measured accuracy, and how
much of O*NET carries task ratings and of the economy hours data.

Modules: `formatting` (number formats, previews), `findings`, `limitations`; this module assembles them into
`summary_markdown` and re-exports their public names (`models.report.X` as before). No dagster here.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from models.markdown import markdown_table
from models.report.findings import (
    coverage_findings,
    headline_estimate_findings,
    regression_findings,
    score_findings,
    sensitivity_findings,
    workbank_findings,
)
from models.report.formatting import (
    MODEL_EXPOSURE_WAGE,
    MODEL_IMPORTANCE,
    MODEL_WORKBANK,
    PREVIEW_COLUMNS,
    WAGE_TERM,
    ZONE_NAMES,
    Tables,
    big,
    ci,
    labeler_of,
    num,
    pct,
    ratio,
    table_preview,
)
from models.report.limitations import (
    QUANTITY_WORDS,
    benchmark_limitations,
    data_limitations,
    estimate_limitations,
    index_findings,
    label_depth_limitation,
    label_quality_findings,
    labeler_limitations,
)


def summary_markdown(
    tables: Tables,
    *,
    onet_tasks: pl.DataFrame | None = None,
    labeler_model: str | None = None,
    export_date: str | None = None,
    missing_tables: Sequence[str] = (),
    benchmark_index: str | None = None,
    membership: pl.DataFrame | None = None,
) -> str:
    """`summary.md`: headline findings with their numbers and CIs, then the limitations that apply. With
    `benchmark_index`, `tables` hold that index's rows and the summary opens with the index and its members."""
    title = "# Which parts of the US economy do AI benchmarks measure?"
    lines = [title, ""]
    if export_date:
        lines += [
            f"_Export of {export_date}. Every number below is read from the exported tables named in "
            "brackets._",
            "",
        ]
    sections: list[tuple[str, list[str]]] = [
        *([("Benchmark index", index_findings(benchmark_index, membership))] if benchmark_index else []),
        ("Coverage", label_quality_findings(tables) + coverage_findings(tables)),
        ("What predicts coverage", regression_findings(tables) + workbank_findings(tables)),
        ("Model scores", score_findings(tables)),
        ("Robustness", sensitivity_findings(tables)),
        (
            "Limitations",
            benchmark_limitations(tables)
            + labeler_limitations(tables, labeler_model)
            + estimate_limitations(tables)
            + data_limitations(tables, onet_tasks),
        ),
    ]
    for heading, items in sections:
        lines += [f"## {heading}", ""] + [f"- {item}" for item in items] + [""]
    if missing_tables:
        lines += [f"_Tables not available for this summary: {', '.join(missing_tables)}._", ""]
    return "\n".join(lines)


__all__ = [
    "MODEL_EXPOSURE_WAGE", "MODEL_IMPORTANCE", "MODEL_WORKBANK", "PREVIEW_COLUMNS", "QUANTITY_WORDS", "WAGE_TERM",
    "ZONE_NAMES", "Tables", "benchmark_limitations", "big", "ci", "coverage_findings", "data_limitations",
    "estimate_limitations", "headline_estimate_findings", "index_findings", "label_depth_limitation",
    "label_quality_findings", "labeler_limitations", "labeler_of", "markdown_table", "num", "pct", "ratio",
    "regression_findings", "score_findings", "sensitivity_findings", "summary_markdown", "table_preview",
    "workbank_findings",
]
