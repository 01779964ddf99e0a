"""One list per fact (issue 28 item 5): the code location's assets are what the asset modules define (no hand-kept
ASSETS/CHECKS lists to fall behind), and every list of table names (exports, summary, map, figures, data
dictionary, sort keys, per-index tables, what-if inputs) names assets of those Definitions, with every exported
table documented and every documented table exported (the export list once missed headline_estimates)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest
from dagster import AssetKey

import assets as assets_package
from assets import module_assets, module_checks
from models import exports as ex
from models import gaps
from models.data_dictionary import DATA_DICTIONARY, INDEXED_TABLES, TABLE_DESCRIPTIONS

# Documented tables the export folder carries without an asset of that name: computed by the exports asset
# (benchmark_counts) or written beside the release folders (headline_history.csv, by the headline_history asset).
DOCUMENTED_NOT_EXPORTED = {"benchmark_counts", "headline_history"}


def _keys(definition: object) -> set[str]:
    keys = getattr(definition, "keys", None) or {definition.key}  # an AssetsDefinition, or an AssetSpec
    return {k.to_user_string() for k in keys}


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory):
    from pipelines.definitions import build_definitions

    path = tmp_path_factory.mktemp("registry") / "benchmap.duckdb"
    return build_definitions(str(path)).resolve_asset_graph()


@pytest.fixture(scope="module")
def modules() -> list:
    return [importlib.import_module(f"assets.{m.name}") for m in pkgutil.iter_modules(assets_package.__path__)]


def test_definitions_are_exactly_what_the_asset_modules_define(graph, modules) -> None:
    by_module = {m.__name__: set().union(*map(_keys, module_assets(m))) for m in modules}
    defined = set().union(*by_module.values())
    loaded = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert loaded == defined  # no asset only reached as a dependency, none left out
    assert sum(map(len, by_module.values())) == len(defined)  # each asset in one module only
    checks = {str(k) for m in modules for c in module_checks(m) for k in c.check_keys}
    assert {str(k) for k in graph.asset_check_keys} == checks
    # the external index files keep their spec (group, description) instead of an anonymous dependency stub
    spec = graph.get(AssetKey("benchmark_index_files"))
    assert spec.group_name == "landing" and spec.description and not spec.is_materializable
    assert not any(hasattr(m, name) for m in modules for name in ("ASSETS", "CHECKS"))


def test_every_table_list_names_defined_assets(graph) -> None:
    from assets import benchmarks, exports
    from resources import task_index, whatif

    loaded = {k.to_user_string() for k in graph.get_all_asset_keys()}
    lists = {
        "exported": exports.EXPORTED_TABLES, "summary": exports.SUMMARY_TABLES, "map": exports.MAP_TABLES,
        "figures": exports.FIGURE_TABLES, "headline previews": ex.HEADLINE_TABLES, "sort keys": list(ex.SORT_KEYS),
        "per-index": INDEXED_TABLES, "benchmark tables": benchmarks.TABLES, "gap inputs": gaps.REFERENCE_TABLES,
        "what-if index inputs": whatif.INDEX_TABLES, "what-if estimates": whatif.ESTIMATE_TABLES,
        "task index inputs": task_index.REFERENCE_TABLES, "what-if outputs": gaps.WHATIF_TABLES,
    }
    stray = {name: [t for t in tables if t not in loaded] for name, tables in lists.items()}
    assert {name: tables for name, tables in stray.items() if tables} == {}
    assert set(benchmarks.TABLES) == _keys(benchmarks.benchmark_landing)  # the multi-asset's outputs
    from assets import whatif as whatif_assets

    assert set(whatif_assets.WHATIF_OUTS) == {whatif_assets.WHATIF_SUMMARY, *gaps.WHATIF_TABLES}


def test_exported_and_documented_tables_are_the_same_tables() -> None:
    from assets.exports import EXPORTED_TABLES

    exported = set(EXPORTED_TABLES)
    assert len(EXPORTED_TABLES) == len(exported)
    assert exported - set(DATA_DICTIONARY) == set()  # every exported table has its columns described ...
    assert exported - set(TABLE_DESCRIPTIONS) == set()  # ... and a one-line description
    assert set(DATA_DICTIONARY) - exported == DOCUMENTED_NOT_EXPORTED  # documented, so exported
    assert set(TABLE_DESCRIPTIONS) - exported == DOCUMENTED_NOT_EXPORTED
    assert set(ex.REQUIRED_TABLES) <= exported and set(INDEXED_TABLES) <= exported


def test_every_asset_table_is_exported_or_marked_internal(graph) -> None:
    """The one registry (models/exports/tables.py): a table an asset writes is exported (with a role) or internal
    (with why), never both, never neither; and nothing in it names a table no asset writes."""
    materialized = {k.to_user_string() for k in graph.materializable_asset_keys}
    exported, internal = set(ex.EXPORTED), set(ex.INTERNAL_TABLES)
    assert exported & internal == set()
    assert sorted(materialized - exported - internal) == []  # a new asset must be exported or marked internal
    assert sorted((exported | internal) - materialized) == []
    assert all(why.strip() for why in ex.INTERNAL_TABLES.values())
    assert set(ex.EXPORTED.values()) == {ex.tables.REQUIRED, ex.tables.OPTIONAL, ex.tables.ESTIMATE, ex.tables.REFERENCE}
    # the derived lists are views of it, in its order
    assert tuple(ex.EXPORTED) == ex.EXPORT_TABLES and ex.REPORT_TABLES == ex.REQUIRED_TABLES + ex.OPTIONAL_TABLES
    assert set(ex.EXPORT_TABLES) == set(ex.REPORT_TABLES) | set(ex.ESTIMATE_TABLES) | set(ex.REFERENCE_TABLES)


def test_no_other_asset_or_check_list_is_kept_by_hand() -> None:
    """The lists this test replaced stay gone: a module-level ASSETS/CHECKS list in assets/ fails."""
    folder = Path(assets_package.__file__).parent
    kept = [f"{p.name}: {line.split('=')[0].strip()}" for p in sorted(folder.glob("*.py"))
            for line in p.read_text().splitlines() if line.startswith(("ASSETS", "CHECKS"))]
    assert kept == []
