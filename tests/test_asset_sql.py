"""Assets ask the warehouse resource for frames (issue 28 item 2): no SQL text and no warehouse path in assets/.

The SQL lives in the I/O layer (resources/warehouse_queries.py, the resource's named reads, and the query
modules they call); an asset that wants a new read adds a named method there. Parsed with `ast`, so comments
and docstrings that merely mention a table do not count, but any string (or f-string) shaped like a statement
does, as does `<warehouse>.path` or `<warehouse>.query(...)` on the resource."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ASSETS_DIR = Path(__file__).resolve().parents[1] / "assets"

# A statement, not prose: "select ... from", "with x as (", "insert into", "create table", ...
SQL_STATEMENT = re.compile(
    r"^\s*(select\b.+\bfrom\b|select\s+\*|with\s+\w+\s+as\s*\(|insert\s+into\b|create\s+(or\s+replace\s+)?"
    r"(temp\s+|temporary\s+)?(table|view)\b|delete\s+from\b|update\s+\w+\s+set\b|drop\s+(table|view)\b"
    r"|alter\s+table\b|copy\s+\w+\s+(to|from)\b)",
    re.IGNORECASE | re.DOTALL,
)
# The resource's raw entry points an asset must not use: its file path and free SQL.
FORBIDDEN_ATTRIBUTES = {"path", "query"}
# Modules that take a warehouse path: an asset reaches them through the resource's methods instead.
PATH_MODULES = {"resources.warehouse", "resources.label_queries", "resources.answer_queries", "duckdb"}
# (file, line) -> why: none remain. Add one only with a reason the lead can read in the report.
EXEMPT: dict[tuple[str, int], str] = {}


def _string_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # an f-string: its literal parts, the holes as a placeholder
        return "".join(v.value if isinstance(v, ast.Constant) else " x " for v in node.values)
    return None


def _warehouse_names(tree: ast.AST) -> set[str]:
    """Names bound to the Warehouse resource: parameters annotated `Warehouse`, and `warehouse` itself."""
    names = {"warehouse"}
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None and "Warehouse" in ast.unparse(node.annotation):
            names.add(node.arg)
    return names


def violations(source: str, filename: str = "<asset>") -> list[tuple[str, int, str]]:
    """(file, line, what) of every SQL statement string, warehouse `.path`/`.query` and path-module import."""
    tree = ast.parse(source)
    found: list[tuple[str, int, str]] = []
    f_string_parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}  # a bare string runs nothing
    skipped = f_string_parts | docstrings
    resource = _warehouse_names(tree)
    for node in ast.walk(tree):
        text = None if id(node) in skipped else _string_text(node)
        if text is not None and SQL_STATEMENT.match(text):
            found.append((filename, node.lineno, f"SQL: {text.strip()[:60]!r}"))
        if (isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES
                and isinstance(node.value, ast.Name) and node.value.id in resource):
            found.append((filename, node.lineno, f"{node.value.id}.{node.attr}"))
        if isinstance(node, ast.Import):
            found += [(filename, node.lineno, f"import {a.name}") for a in node.names if a.name in PATH_MODULES]
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            modules = {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            found += [(filename, node.lineno, f"from {node.module} import") for m in modules & PATH_MODULES]
    return [v for v in found if (v[0], v[1]) not in EXEMPT]


def test_the_detector_finds_sql_paths_and_raw_queries() -> None:
    source = '''
from resources import label_queries as lq
from resources.dagster_resources import Warehouse

def read(store: Warehouse, name: str):
    """Select the rows; with a docstring that says select and from in prose."""
    a = store.query("select count(*) from benchmarks where benchmark = ?", [name])
    b = lq.prompt_texts(store.path, a)
    c = f"with x as (select 1) select * from {name}"
    return store.read_table("benchmarks"), "create or replace table t as select 1"
'''
    found = [what for _, _, what in violations(source)]
    assert "store.query" in found and "store.path" in found
    assert "from resources import" in found
    assert sum(what.startswith("SQL:") for what in found) == 3  # the query, the f-string, the create
    assert len(found) == 6  # the docstring and read_table are fine


@pytest.mark.parametrize("module", sorted(p.name for p in ASSETS_DIR.glob("*.py")))
def test_assets_hold_no_sql_and_no_warehouse_path(module: str) -> None:
    path = ASSETS_DIR / module
    assert violations(path.read_text(), f"assets/{module}") == []

