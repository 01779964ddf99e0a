"""Per-asset code versions: what Dagster compares to call an asset stale ("has a new code version").

An asset's version is a sha256 over the source of the module that defines it and of every project module that
module imports, followed transitively through `models/`, `pipelines/` and `assets/` (static imports, read with
`ast`, including imports inside functions), plus pyproject.toml (the dependency pins) and the settings that
change results (`resources/settings.py` `fingerprint_fields`, and the labeler resource's configuration without
its key; the reference and benchmark tables leave the labeler's settings out: `BEFORE_LABELING_GROUPS`). Editing
an estimator in `models/estimates/` marks the assets whose modules use it stale, not every asset; changing
BENCHMAP_LABELER marks the labels and everything after them stale. About 10 ms per Definitions build (each file read and
parsed once per process; a file's imported names are kept in .cache/ by the digest of its source, so a warm
process parses only what was edited).
"""

from __future__ import annotations

import ast
import collections
import functools
import hashlib
import inspect
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from dagster import AssetsDefinition

from resources.settings import PROJECT_ROOT, Settings, settings

PACKAGES = ("models", "resources", "assets", "pipelines")  # imports followed into these; anything else is a library


# the groups whose assets read no labeler or judge setting: the reference data and the benchmarks' own tables
# (switching the labeler, or only the port of OPENAI_BASE_URL, re-ran the reference stage as "oews_wages has a
# new code version")
BEFORE_LABELING_GROUPS = frozenset({"reference", "benchmarks"})
# the settings fields only labeling and what follows it read
LABELING_FIELDS = frozenset({"labeler", "llm_model", "base_url", "occupation_list", "judge_sample", "judge",
                             "judge_model", "neighbour_step", "has_api_key", "validation_floors"})


def settings_fingerprint(labeler: Any = None, config: Settings | None = None, *, labeling: bool = True) -> str:
    """The settings that change results and the labeler resource's configuration, never the key; without
    `labeling`, only those that change the assets before labeling (the labeler's left out)."""
    config = config or settings()
    fields = config.fingerprint_fields()
    resource: dict[str, Any] = {}
    if not labeling:
        fields = {k: v for k, v in fields.items() if k not in LABELING_FIELDS}
    elif labeler is not None and hasattr(labeler, "model_dump"):
        resource = {k: v for k, v in labeler.model_dump().items() if k != "api_key"}
    return hashlib.sha256(json.dumps([fields, resource], sort_keys=True, default=str).encode()).hexdigest()


@functools.cache  # the same names recur in every file: one lookup (two stats) each per process
def module_file(name: str, root: Path = PROJECT_ROOT) -> Path | None:
    """The file of a project module (`models.estimates.draws` -> models/estimates/draws.py or its package's
    __init__.py); None for a library or a name that is not a module (an attribute)."""
    if name.split(".")[0] not in PACKAGES:
        return None
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


# the nodes that can hold an import statement: statements, and the except/case clauses whose bodies hold them
_STATEMENT_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case)


def _statements(tree: ast.Module) -> Iterator[ast.AST]:
    """Every statement of `tree` (and every except/case clause), in ast.walk's order: imports are statements, and
    no expression holds one, so expressions (most of a file's nodes) are never visited (ast.walk over every
    node was half the names' cost on a cold run)."""
    todo = collections.deque([tree])
    while todo:
        node = todo.popleft()
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                todo.extend(item for item in value if isinstance(item, _STATEMENT_HOLDERS))
        yield node


def _imported_names(source: bytes, package: str, filename: str) -> list[str]:
    """The dotted names one file's source imports (relative imports resolved against `package`)."""
    tree = ast.parse(source, filename=filename)
    out: list[str] = []
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against this file's package
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            out.extend([base, *(f"{base}.{alias.name}" for alias in node.names)])
    return out


class _NamesCache:
    """The imported names of a file by the digest of its source (and its package), kept between processes in
    PROJECT_ROOT/.cache/: parsing the ~150 project files cost ~1 CPU-s of every Definitions build (every
    `run_all`, warm or not); the names of unchanged source are the same, so only an edited file is parsed
    again. A cache that cannot be read or written is only slower."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.used: dict[str, list[str]] = {}
        self.new = False
        try:
            self.stored: dict[str, list[str]] = json.loads(path.read_text())
        except (OSError, ValueError):
            self.stored = {}

    def names(self, path: Path, package: str) -> list[str]:
        key = f"{package}:{_file_digest(path)}"
        if key not in self.used:
            found = self.stored.get(key)
            if not isinstance(found, list):
                found = _imported_names(path.read_bytes(), package, str(path))
                self.new = True
            self.used[key] = found
        return self.used[key]

    def save(self) -> None:
        """Write the names used in this process (only when one had to be parsed; stale entries dropped)."""
        if not self.new:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            temporary.write_text(json.dumps(self.used, sort_keys=True))
            os.replace(temporary, self.path)  # whole or not at all, for a process reading it meanwhile
            self.new = False
        except OSError:
            pass


NAMES_CACHE_FILE = ".cache/code_version_imports.json"


@functools.cache
def _names_cache(root: Path) -> _NamesCache:
    return _NamesCache(root / NAMES_CACHE_FILE)


@functools.cache
def _imports(path: Path, root: Path) -> tuple[Path, ...]:
    """The project modules one file imports (`import a.b`, `from a.b import c` where c may be a module)."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    found: set[Path] = set()
    for name in _names_cache(root).names(path, package):
        parts = name.split(".")
        for end in range(1, len(parts) + 1):  # a package's __init__ runs on import too
            file = module_file(".".join(parts[:end]), root)
            if file is not None:
                found.add(file)
    return tuple(sorted(found))


def module_closure(start: Path, root: Path = PROJECT_ROOT) -> list[Path]:
    """`start` and every project module it imports, transitively (sorted)."""
    seen: set[Path] = set()
    todo = [start]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo.extend(_imports(path, root))
    return sorted(seen)


@functools.cache
def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files_version(files: Iterable[Path], salt: str = "", root: Path = PROJECT_ROOT) -> str:
    digest = hashlib.sha256(salt.encode())
    for path in [*files, root / "pyproject.toml"]:
        if path.is_file():
            digest.update(f"{path.relative_to(root)}\0{_file_digest(path)}\0".encode())
    return digest.hexdigest()[:12]


def defining_file(assets_def: AssetsDefinition) -> Path | None:
    """The source file of the function an asset (or multi-asset) runs; None when it has none."""
    try:
        fn = assets_def.op.compute_fn
    except Exception:  # noqa: BLE001 - a graph-backed or external asset has no single op
        return None
    fn = getattr(fn, "decorated_fn", fn)
    try:
        source = inspect.getsourcefile(inspect.unwrap(fn))
    except TypeError:
        return None
    return Path(source).resolve() if source else None


def asset_code_version(assets_def: AssetsDefinition, salt: str = "", root: Path = PROJECT_ROOT) -> str | None:
    """The code version of one asset definition: its module and what it imports (see the module doc)."""
    start = defining_file(assets_def)
    if start is None or not start.is_relative_to(root):
        return None
    return files_version(module_closure(start, root), salt, root)


def with_code_versions(assets: list[Any], salt: str = "", salt_before_labeling: str | None = None) -> list[Any]:
    """`assets` with a per-asset `code_version` on every asset spec that has none (an asset's own, e.g. the
    task index's offline labeler fingerprint, stays). One helper for every asset: no version by hand. An asset
    all of whose keys are in BEFORE_LABELING_GROUPS is salted with `salt_before_labeling` (when given)."""
    out = []
    for assets_def in assets:
        materializable = isinstance(assets_def, AssetsDefinition) and assets_def.is_materializable
        before = (salt_before_labeling is not None and materializable
                  and set(assets_def.group_names_by_key.values()) <= BEFORE_LABELING_GROUPS)
        version = (asset_code_version(assets_def, salt_before_labeling if before else salt)  # type: ignore[arg-type]
                   if materializable else None)
        if version is None:
            out.append(assets_def)
            continue
        out.append(assets_def.map_asset_specs(
            lambda spec, v=version: spec if spec.code_version else spec.replace_attributes(code_version=v)))
    _names_cache(PROJECT_ROOT).save()
    return out
