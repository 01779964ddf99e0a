"""The code's shape, read from its own imports (docs/ARCHITECTURE.md): the code location on top, assets under it,
the I/O layer under them, pure models at the bottom. An import may only point down or sideways, and no modules
import each other in a circle, lazily or not. Parsing, not importing: the test costs a fraction of a second."""

from __future__ import annotations

import ast
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Higher imports lower, never the reverse.
LAYERS = {"pipelines": 3, "assets": 2, "resources": 1, "models": 0}
# What each layer may import from outside the project: models/ is pure (no Dagster, no warehouse, no network).
FORBIDDEN_BELOW = {"models": ("dagster", "duckdb", "openai", "requests", "urllib.request", "xlsxwriter")}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(f): f for package in LAYERS for f in sorted((ROOT / package).rglob("*.py"))}


def imported_names(path: Path, name: str) -> list[tuple[int, str]]:
    """Every name an import statement brings in (module-level, lazy, or under TYPE_CHECKING) with its line, as
    `module.name` for `from module import name` (resolved later to the deepest project module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def resolve(target: str, modules: dict[str, Path]) -> str | None:
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def import_graph() -> tuple[dict[str, set[str]], list[str]]:
    """Module -> project modules it imports, and every upward or forbidden import as 'file:line: what'."""
    modules = project_modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    violations = []
    for name, path in modules.items():
        layer = name.split(".")[0]
        where = path.relative_to(ROOT)
        for line, target in imported_names(path, name):
            for forbidden in FORBIDDEN_BELOW.get(layer, ()):
                if target == forbidden or target.startswith(forbidden + "."):
                    violations.append(f"{where}:{line}: {layer}/ imports {target} (models/ is pure)")
            resolved = resolve(target, modules)
            if resolved is None or resolved == name or name.startswith(resolved + "."):
                continue  # outside the project, the module itself, or its own package's __init__
            if LAYERS[resolved.split(".")[0]] > LAYERS[layer]:
                violations.append(f"{where}:{line}: {layer}/ imports {resolved} from the layer above")
            graph[name].add(resolved)
    return graph, sorted(set(violations))


def test_every_import_points_down_a_layer_or_stays_in_its_own() -> None:
    graph, violations = import_graph()
    assert len(graph) > 150  # the walk found the code (a wrong root would pass vacuously)
    assert violations == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph, _ = import_graph()
    # A package's __init__ importing its own submodules is how a package exports; not a circle of modules.
    edges = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in graph.items()}
    try:
        tuple(TopologicalSorter(edges).static_order())
    except CycleError as error:
        pytest.fail(f"import circle: {' -> '.join(error.args[1])}")


def test_the_checker_sees_an_upward_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule can fail: a models/ module importing the I/O layer and Dagster is reported with its line."""
    fake = tmp_path / "proj"
    for package in LAYERS:
        (fake / package).mkdir(parents=True)
        (fake / package / "__init__.py").write_text("")
    (fake / "resources" / "warehouse.py").write_text("import duckdb\n")
    (fake / "models" / "pure.py").write_text("import math\n\n\ndef f():\n    from resources import warehouse\n"
                                             "    import dagster\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", fake)
    graph, violations = import_graph()
    assert violations == ["models/pure.py:5: models/ imports resources.warehouse from the layer above",
                          "models/pure.py:6: models/ imports dagster (models/ is pure)"]
