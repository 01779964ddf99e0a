"""Assets by domain, one module each. The code location (pipelines/definitions.py) collects every asset, spec
and check of the package; `module_assets`/`module_checks` give one module's, for tests and the few assets
that look at another domain's keys. There is no hand-kept list of a module's assets to keep in step."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from dagster import load_asset_checks_from_modules, load_assets_from_modules

# the kinds the UI shows on an asset that is a warehouse table computed with polars (most of them)
TABLE_KINDS = frozenset({"polars", "duckdb"})


def module_assets(module: ModuleType) -> list[Any]:
    """The assets and asset specs defined in `module` (what the code location loads from it), not those it
    imports from another module (reference_checks imports the reference assets to attach its checks)."""
    return [d for d in load_assets_from_modules([module], include_specs=True)
            if _origin(d) in (None, module.__name__)]


def _origin(definition: Any) -> str | None:
    """The module of the function an asset was decorated from, or an observable source asset observes with
    (None for a spec: it has no function)."""
    observe = getattr(definition, "observe_fn", None)
    if observe is not None:
        return observe.__module__
    try:
        return definition.op.compute_fn.decorated_fn.__module__
    except AttributeError:
        return None


def module_checks(module: ModuleType) -> list[Any]:
    """The asset checks defined in `module`."""
    return list(load_asset_checks_from_modules([module]))
