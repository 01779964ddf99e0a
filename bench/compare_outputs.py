"""compare_outputs: are two pipeline states' published outputs equal in value? (issue 29: speed-ups must not
change a number.)

    .venv/bin/python bench/compare_outputs.py STATE_A STATE_B     # state folders as bench/common.State makes
    .venv/bin/python bench/compare_outputs.py A B --tolerance 1e-9

Compares every warehouse table present in both states (rows sorted by every column, so row order does not
matter) and every file of the newest export folder (CSV/Parquet/JSON/markdown by content; XLSX and figures are
skipped: they embed timestamps). Columns that record when or how fast something ran, or where a state lives,
are left out (VOLATILE_COLUMNS); tables that are bookkeeping of the run itself are left out (VOLATILE_TABLES).
Floats compare with an absolute and a relative tolerance (default 0: bit-equal; `--rtol 1e-12` forgives the
last-bit differences of DuckDB's multi-threaded sums, which differ between two runs of the same code). CSV
columns are compared as text. Prints one JSON object: equal or not, and
per differing table/file what differs. Exit 0 when equal.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

VOLATILE_TABLES = {"run_all_state", "warehouse_identity", "task_search_index", "label_cache", "label_failures"}
VOLATILE_COLUMNS = {"first_seen", "last_changed", "labeled_at", "created_at", "computed_at", "built_at",
                    "materialized_at", "seconds", "build_seconds", "load_seconds", "path", "landing_path",
                    "generated_at", "run_id", "measured_at", "written_at", "updated_at"}
SKIP_SUFFIXES = {".xlsx", ".png", ".svg", ".pdf", ".html", ".ipynb"}


def _tables(warehouse: Path) -> dict[str, pl.DataFrame]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        names = [r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_schema = 'main'").fetchall()]
        return {n: con.sql(f'select * from "{n}"').pl() for n in names if n not in VOLATILE_TABLES}
    finally:
        con.close()


def _normalised(df: pl.DataFrame) -> pl.DataFrame:
    keep = [c for c in df.columns if c not in VOLATILE_COLUMNS and not c.endswith("_at")]
    df = df.select(keep)
    sortable = [c for c in df.columns if df[c].dtype.is_numeric() or df[c].dtype in (pl.Utf8, pl.Boolean, pl.Date)]
    return df.sort(sortable, nulls_last=True) if sortable else df


def compare_frames(a: pl.DataFrame, b: pl.DataFrame, tolerance: float, rtol: float = 0.0) -> str | None:
    """None when equal, else what differs (briefly)."""
    a, b = _normalised(a), _normalised(b)
    if a.columns != b.columns:
        return f"columns differ: {sorted(set(a.columns) ^ set(b.columns))}"
    if a.height != b.height:
        return f"rows {a.height} vs {b.height}"
    for column in a.columns:
        left, right = a[column], b[column]
        if left.dtype.is_float() and right.dtype.is_float():
            both_null = left.is_null() & right.is_null()
            both_nan = left.is_nan().fill_null(False) & right.is_nan().fill_null(False)
            diff = (left - right).abs()
            bad = ~(both_null | both_nan | (diff <= tolerance + rtol * right.abs()).fill_null(False))
            if bad.any():
                return f"{column}: {int(bad.sum())} values differ (max abs diff {diff.filter(bad).max()})"
        elif not left.equals(right, check_names=False):
            return f"{column}: values differ"
    return None


def _export_dir(state: Path) -> Path | None:
    folders = sorted((state / "warehouse" / "exports").glob("[0-9]*"))
    return folders[-1] if folders else None


def _read_file(path: Path) -> pl.DataFrame | str | None:
    if path.suffix in SKIP_SUFFIXES:
        return None
    if path.suffix == ".parquet":
        return pl.read_parquet(path)
    if path.suffix == ".csv":
        return pl.read_csv(path, infer_schema_length=0)
    return path.read_text(errors="replace")


def compare_states(a: Path, b: Path, tolerance: float = 0.0, rtol: float = 0.0) -> dict[str, Any]:
    tables_a = _tables(a / "warehouse" / "benchmap.duckdb")
    tables_b = _tables(b / "warehouse" / "benchmap.duckdb")
    differences: dict[str, str] = {}
    for name in sorted(set(tables_a) | set(tables_b)):
        if name not in tables_a or name not in tables_b:
            differences[f"table {name}"] = "only in " + ("A" if name in tables_a else "B")
            continue
        why = compare_frames(tables_a[name], tables_b[name], tolerance, rtol)
        if why:
            differences[f"table {name}"] = why
    files_compared = 0
    exports_a, exports_b = _export_dir(a), _export_dir(b)
    if exports_a is not None and exports_b is not None:
        rel_a = {p.relative_to(exports_a) for p in exports_a.rglob("*") if p.is_file()}
        rel_b = {p.relative_to(exports_b) for p in exports_b.rglob("*") if p.is_file()}
        for rel in sorted(rel_a | rel_b):
            if rel not in rel_a or rel not in rel_b:
                differences[f"file {rel}"] = "only in " + ("A" if rel in rel_a else "B")
                continue
            left, right = _read_file(exports_a / rel), _read_file(exports_b / rel)
            if left is None:
                continue
            files_compared += 1
            if isinstance(left, pl.DataFrame) and isinstance(right, pl.DataFrame):
                why = compare_frames(left, right, tolerance, rtol)
            else:
                why = None if _strip_volatile_text(str(left)) == _strip_volatile_text(str(right)) else "text differs"
            if why:
                differences[f"file {rel}"] = why
    return {"equal": not differences, "tables_compared": len(set(tables_a) & set(tables_b)),
            "files_compared": files_compared, "differences": differences}


def _strip_volatile_text(text: str) -> str:
    """Text exports name their folder and time of writing: drop lines that carry a date-time or a tmp path."""
    import re

    stamp = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|/tmp/|seconds|elapsed")
    return "\n".join(line for line in text.splitlines() if not stamp.search(line))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("state_a", type=Path)
    parser.add_argument("state_b", type=Path)
    parser.add_argument("--tolerance", type=float, default=0.0, help="absolute tolerance of floats")
    parser.add_argument("--rtol", type=float, default=0.0,
                        help="relative tolerance of floats (DuckDB's parallel sums differ in the last bits run to run)")
    args = parser.parse_args(argv)
    result = compare_states(args.state_a, args.state_b, args.tolerance, args.rtol)
    print(json.dumps(result, indent=1))
    return 0 if result["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
