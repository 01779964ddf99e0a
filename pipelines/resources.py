"""Resources, chosen by environment: where the warehouse lives and which labeler runs."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
from dagster import ConfigurableResource, EnvVar

from models import warehouse as wh
from models.sources import PROJECT_ROOT

DEFAULT_WAREHOUSE = PROJECT_ROOT / "data" / "warehouse" / "benchmap.duckdb"


class Warehouse(ConfigurableResource):
    """The embedded DuckDB warehouse. Connections are short-lived and retry on the file lock."""

    path: str = str(DEFAULT_WAREHOUSE)

    @property
    def export_dir(self) -> Path:
        return Path(self.path).parent / "exports"

    def query(self, sql: str, params: list | None = None) -> pl.DataFrame:
        return wh.query(self.path, sql, params)

    def read_table(self, name: str) -> pl.DataFrame:
        return wh.read_table(self.path, name)

    def table_exists(self, name: str) -> bool:
        if not Path(self.path).exists():
            return False
        with wh.connect(self.path, read_only=True) as con:
            return wh.table_exists(con, name)

    def append_rows(self, name: str, df: pl.DataFrame) -> None:
        wh.append_rows(self.path, name, df)

    def replace_table(self, name: str, df: pl.DataFrame) -> None:
        wh.replace_table(self.path, name, df)


def warehouse_path_from_env() -> str:
    return os.environ.get("BENCHMAP_WAREHOUSE", str(DEFAULT_WAREHOUSE))


def labeler_kind_from_env() -> str:
    """`openai` when BENCHMAP_LABELER says so or an API key is set; otherwise the offline labeler."""
    explicit = os.environ.get("BENCHMAP_LABELER")
    if explicit:
        return explicit
    return "openai" if os.environ.get("OPENAI_API_KEY") else "offline"


__all__ = ["EnvVar", "Warehouse", "labeler_kind_from_env", "warehouse_path_from_env"]


class LabelerResource(ConfigurableResource):
    """Which labeler labels prompts, and how. Placeholder fields; the labeling work completes `build`."""

    kind: str = "offline"  # 'offline' | 'openai'
    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key: str | None = None  # only ever from the environment: EnvVar("OPENAI_API_KEY")
    shortlist_k: int = 40
    max_concurrency: int = 4
    timeout_s: float = 60.0
    max_retries: int = 4
    response_format: str = "auto"  # 'json_schema' (OpenAI) | 'json_object' (llama.cpp) | 'auto'
    batch_size: int = 256
    progress_every: int = 500


def build_labeler_resource() -> LabelerResource:
    kind = labeler_kind_from_env()
    if kind == "openai":
        return LabelerResource(
            kind="openai",
            model=os.environ.get("BENCHMAP_LLM_MODEL", "gpt-4o-mini"),
            base_url=os.environ.get("OPENAI_BASE_URL") or None,
            api_key=EnvVar("OPENAI_API_KEY") if os.environ.get("OPENAI_API_KEY") else None,
        )
    return LabelerResource(kind="offline", model="offline")
