"""Every environment variable benchmap reads, read in one place into one frozen `Settings`.

    from resources.settings import settings
    path = settings().warehouse

`Settings.from_env(environ)` is the only code that looks at the environment (besides Dagster's own
`EnvVar("OPENAI_API_KEY")` in the labeler resource, which Dagster resolves at run time). Nothing here runs at
import time. `settings()` builds the object on first use and keeps it; it is rebuilt only when one of the
variables it reads has changed since (tests monkeypatch them; `run_all` sets DAGSTER_HOME), so callers never see
a stale value and never parse the environment themselves. `settings.cache_clear()` forces a rebuild.

The API key is held (`api_key`) but never shown: it is excluded from repr and from `fingerprint_fields()`.

| variable | field | default |
|---|---|---|
| BENCHMAP_RAW_DIR | raw_dir | data/raw |
| BENCHMAP_MIRROR | mirror (relative: to the project root) | none |
| BENCHMAP_OFFLINE | offline (1/true/yes: no downloads) | false |
| BENCHMAP_FOLLOW_LINKS | follow_links (1/true/yes: follow links in data/raw that point outside it) | false |
| BENCHMAP_WAREHOUSE | warehouse | data/warehouse/benchmap.duckdb |
| BENCHMAP_DUCKDB_MEMORY | duckdb_memory | 1GB |
| BENCHMAP_LABELER | labeler | openai when OPENAI_API_KEY is set, else offline |
| BENCHMAP_LLM_MODEL | llm_model | gpt-4o-mini |
| OPENAI_BASE_URL | base_url | none (OpenAI) |
| OPENAI_API_KEY | api_key (never printed) | none |
| BENCHMAP_LLM_OCCUPATION_LIST | occupation_list | all |
| BENCHMAP_EXECUTOR | executor: in_process (a run's steps one after the other in its process) or multiprocess (each step in a process of its own) | in_process |
| BENCHMAP_MAX_CONCURRENT | max_concurrent (>= 1): steps at once under the multiprocess executor | 2 |
| BENCHMAP_RUN_LAUNCHER | run_launcher: fork (runs forked from a warm fork server, resources/run_launcher.py) or default (Dagster's) | fork |
| BENCHMAP_FORK_PRELOAD | fork_preload (comma-separated modules the fork server imports) | none (resources/run_fork_server.py's) |
| BENCHMAP_INDEX_DIR | index_dir | data/indexes |
| BENCHMAP_JUDGE_SAMPLE | judge_sample (raw text, parsed by assets.judge_sample) | "" (off) |
| BENCHMAP_JUDGE | judge: openai (any case) or off; anything else is an error | openai when OPENAI_API_KEY is set, else off |
| BENCHMAP_JUDGE_MODEL | judge_model | llm_model |
| BENCHMAP_VALIDATION_FLOORS | validation_floors (JSON object) | none (models.validation defaults) |
| BENCHMAP_ANALYSIS_QUIET_S | analysis_quiet_s | 30 |
| BENCHMAP_GGUF | gguf (local llama.cpp model file) | none (the gemma3 package's) |
| BENCHMAP_NEIGHBOUR_STEP | neighbour_step (restack labels with the benchmark's judged texts; 0/false/no/off: the selector's labels alone) | true |
| BENCHMAP_LABEL_WORKERS | label_workers (processes the offline labeler labels in; 0/1: the step's own) | 2 with 2+ cores |
| DAGSTER_HOME | dagster_home | none |
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RAW_DIR = PROJECT_ROOT / "data" / "raw"
DEFAULT_WAREHOUSE = PROJECT_ROOT / "data" / "warehouse" / "benchmap.duckdb"
DEFAULT_INDEX_DIR = PROJECT_ROOT / "data" / "indexes"
# where the workplace keeps its shared data; the local-LLM and validation commands fall back to it
DEFAULT_SHARED_MIRROR = PROJECT_ROOT.parent / "shared" / "data"
DEFAULT_DUCKDB_MEMORY = "1GB"
DEFAULT_LLM_MODEL = "gpt-4o-mini"
DEFAULT_MAX_CONCURRENT = 2
EXECUTORS = ("in_process", "multiprocess")
RUN_LAUNCHERS = ("fork", "default")
DEFAULT_ANALYSIS_QUIET_S = 30.0

# every variable from_env reads: the cache key of settings()
VARIABLES = (
    "BENCHMAP_RAW_DIR", "BENCHMAP_MIRROR", "BENCHMAP_OFFLINE", "BENCHMAP_WAREHOUSE", "BENCHMAP_DUCKDB_MEMORY",
    "BENCHMAP_FOLLOW_LINKS", "BENCHMAP_LABELER", "BENCHMAP_LLM_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY",
    "BENCHMAP_LLM_OCCUPATION_LIST", "BENCHMAP_MAX_CONCURRENT", "BENCHMAP_INDEX_DIR", "BENCHMAP_JUDGE_SAMPLE",
    "BENCHMAP_JUDGE", "BENCHMAP_JUDGE_MODEL", "BENCHMAP_VALIDATION_FLOORS", "BENCHMAP_ANALYSIS_QUIET_S",
    "BENCHMAP_GGUF", "BENCHMAP_NEIGHBOUR_STEP", "BENCHMAP_LABEL_WORKERS", "BENCHMAP_EXECUTOR", "DAGSTER_HOME",
    "BENCHMAP_RUN_LAUNCHER", "BENCHMAP_FORK_PRELOAD",
)
# fields that do not change what the pipeline computes: left out of fingerprint_fields() (a copied state is the
# same state; how many steps run at once or how long the sensor waits changes no result)
# index_dir is a path too: the index files' content is versioned by benchmark_index_files; a moved or other
# checkout of the same code must not look like new code
_NOT_RESULTS = {"raw_dir", "mirror", "warehouse", "max_concurrent", "analysis_quiet_s", "dagster_home", "api_key",
                "duckdb_memory", "gguf", "index_dir", "label_workers", "executor", "run_launcher", "fork_preload"}


class SettingsError(ValueError):
    """An environment variable holds a value benchmap cannot use; the message names it."""


def _path(value: str | None, default: Path | None, *, from_root: bool = False) -> Path | None:
    """`value` as a path; relative paths stay relative to the working directory, as they always were, except
    where `from_root` (BENCHMAP_MIRROR: the Makefile's `../shared/data` means the project's sibling)."""
    if not value:
        return default
    path = Path(value)
    return (PROJECT_ROOT / path).resolve() if from_root and not path.is_absolute() else path


def _number(environ: Mapping[str, str], name: str, default: float, kind: type) -> Any:
    text = environ.get(name) or ""
    try:
        return kind(text) if text.strip() else kind(default)
    except ValueError as exc:
        raise SettingsError(f"{name}={text!r}: expected a {kind.__name__}") from exc


_SWITCH = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


def _switch(environ: Mapping[str, str], name: str, default: bool) -> bool:
    text = (environ.get(name) or "").strip().lower()
    if not text:
        return default
    if text not in _SWITCH:
        raise SettingsError(f"{name}={text!r}: expected 1/0, true/false, yes/no or on/off")
    return _SWITCH[text]


def _choice(environ: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """One of `choices` (the first when unset; '-' and '_' alike, any case)."""
    text = (environ.get(name) or "").strip().lower().replace("-", "_")
    if not text:
        return choices[0]
    if text not in choices:
        raise SettingsError(f"{name}={text!r}: expected one of {', '.join(choices)}")
    return text


def _judge(text: str | None, api_key: str | None) -> str:
    """BENCHMAP_JUDGE: 'openai' (any case), or 'off'/'none'/'' for no LLM judge; unset: openai with a key. Any
    other value was taken as no judge, silently (a probe: "OpenAI" cleared every benchmark's judge sample)."""
    if not text:
        return "openai" if api_key else ""
    value = text.strip().lower()
    if value == "openai":
        return "openai"
    if value in ("", "off", "none", "0", "false", "no"):
        return ""
    raise SettingsError(f"BENCHMAP_JUDGE={text!r}: expected openai (the LLM judge through the openai client) or "
                        "off")


def _floors(text: str | None) -> Mapping[str, float] | None:
    if not text:
        return None
    try:
        floors = {str(k): float(v) for k, v in json.loads(text).items()}
    except (ValueError, AttributeError) as exc:
        raise SettingsError(f"BENCHMAP_VALIDATION_FLOORS={text!r}: expected a JSON object of numbers") from exc
    return MappingProxyType(floors)


@dataclass(frozen=True)
class Settings:
    """benchmap's configuration from the environment (see the module docstring for each variable)."""

    raw_dir: Path = DEFAULT_RAW_DIR
    mirror: Path | None = None
    offline: bool = False
    follow_links: bool = False
    warehouse: Path = DEFAULT_WAREHOUSE
    duckdb_memory: str = DEFAULT_DUCKDB_MEMORY
    labeler: str = "offline"
    llm_model: str = DEFAULT_LLM_MODEL
    base_url: str | None = None
    occupation_list: str = "all"
    max_concurrent: int = DEFAULT_MAX_CONCURRENT
    executor: str = "in_process"  # pipelines/definitions.py: the runs the daemon and the UI launch
    run_launcher: str = "fork"  # resources/run_launcher.py: how the daemon starts those runs
    fork_preload: tuple[str, ...] | None = None  # None: resources/run_fork_server.DEFAULT_PRELOAD
    index_dir: Path = DEFAULT_INDEX_DIR
    judge_sample: str = ""
    judge: str = ""
    judge_model: str = DEFAULT_LLM_MODEL
    validation_floors: Mapping[str, float] | None = None
    analysis_quiet_s: float = DEFAULT_ANALYSIS_QUIET_S
    gguf: Path | None = None
    # on by default (issue 25): the labels learn from their benchmark's judged texts (docs/offline_labeler.md,
    # "The neighbour step"); the split checks cover with it on. Off: the calibrated selector's labels alone
    neighbour_step: bool = True
    label_workers: int | None = None  # None: 2 when two cores are available (resources/label_pool.py)
    dagster_home: Path | None = None
    api_key: str | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every variable once; an unusable value raises SettingsError naming the variable."""
        env = os.environ if environ is None else environ
        api_key = env.get("OPENAI_API_KEY") or None
        llm_model = env.get("BENCHMAP_LLM_MODEL") or DEFAULT_LLM_MODEL
        return cls(
            raw_dir=_path(env.get("BENCHMAP_RAW_DIR"), DEFAULT_RAW_DIR),
            mirror=_path(env.get("BENCHMAP_MIRROR"), None, from_root=True),
            offline=(env.get("BENCHMAP_OFFLINE") or "").lower() in {"1", "true", "yes"},
            follow_links=(env.get("BENCHMAP_FOLLOW_LINKS") or "").lower() in {"1", "true", "yes"},
            warehouse=_path(env.get("BENCHMAP_WAREHOUSE"), DEFAULT_WAREHOUSE),
            duckdb_memory=env.get("BENCHMAP_DUCKDB_MEMORY") or DEFAULT_DUCKDB_MEMORY,
            labeler=env.get("BENCHMAP_LABELER") or ("openai" if api_key else "offline"),
            llm_model=llm_model,
            base_url=env.get("OPENAI_BASE_URL") or None,
            occupation_list=env.get("BENCHMAP_LLM_OCCUPATION_LIST") or "all",
            max_concurrent=max(1, _number(env, "BENCHMAP_MAX_CONCURRENT", DEFAULT_MAX_CONCURRENT, int)),
            executor=_choice(env, "BENCHMAP_EXECUTOR", EXECUTORS),
            run_launcher=_choice(env, "BENCHMAP_RUN_LAUNCHER", RUN_LAUNCHERS),
            fork_preload=(tuple(m.strip() for m in env["BENCHMAP_FORK_PRELOAD"].split(",") if m.strip())
                          if env.get("BENCHMAP_FORK_PRELOAD") else None),
            index_dir=_path(env.get("BENCHMAP_INDEX_DIR"), DEFAULT_INDEX_DIR),
            judge_sample=env.get("BENCHMAP_JUDGE_SAMPLE") or "",
            judge=_judge(env.get("BENCHMAP_JUDGE"), api_key),
            judge_model=env.get("BENCHMAP_JUDGE_MODEL") or llm_model,
            validation_floors=_floors(env.get("BENCHMAP_VALIDATION_FLOORS")),
            analysis_quiet_s=_number(env, "BENCHMAP_ANALYSIS_QUIET_S", DEFAULT_ANALYSIS_QUIET_S, float),
            gguf=_path(env.get("BENCHMAP_GGUF"), None),
            neighbour_step=_switch(env, "BENCHMAP_NEIGHBOUR_STEP", True),
            label_workers=(max(0, _number(env, "BENCHMAP_LABEL_WORKERS", 0, int))
                           if env.get("BENCHMAP_LABEL_WORKERS") else None),
            dagster_home=_path(env.get("DAGSTER_HOME"), None),
            api_key=api_key,
        )

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key)

    @property
    def downloads_allowed(self) -> bool:
        return not self.offline

    @property
    def mirror_or_shared(self) -> Path:
        """The mirror, or the workplace's shared data folder (the local-LLM and validation commands' default)."""
        return self.mirror or DEFAULT_SHARED_MIRROR

    def fingerprint_fields(self) -> dict[str, Any]:
        """The settings that change results (paths, concurrency, timing and the key left out), as plain JSON
        values: what pipelines.code_versions hashes into every code version."""
        values = {name: getattr(self, name) for name in self.__dataclass_fields__ if name not in _NOT_RESULTS}
        values["validation_floors"] = dict(self.validation_floors) if self.validation_floors else None
        values["has_api_key"] = self.has_api_key
        return {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}


class _Cached:
    """settings(): one Settings per process, rebuilt only when a variable it reads changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[str | None, ...] | None = None
        self._value: Settings | None = None

    def __call__(self) -> Settings:
        key = tuple(os.environ.get(name) for name in VARIABLES)
        with self._lock:
            if self._value is None or key != self._key:
                self._value, self._key = Settings.from_env(os.environ), key
            return self._value

    def cache_clear(self) -> None:
        with self._lock:
            self._value, self._key = None, None


settings = _Cached()

__all__ = ["DEFAULT_INDEX_DIR", "DEFAULT_RAW_DIR", "DEFAULT_SHARED_MIRROR", "DEFAULT_WAREHOUSE", "PROJECT_ROOT",
           "Settings", "SettingsError", "settings"]
