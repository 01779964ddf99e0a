"""Resources, chosen by environment: where the warehouse lives and which labeler runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from dagster import ConfigurableResource, EnvVar, InitResourceContext

from models import warehouse as wh
from models.sources import PROJECT_ROOT

if TYPE_CHECKING:
    from models.labeling.base import Labeler
    from models.labeling.llm import LLMConfig

DEFAULT_WAREHOUSE = PROJECT_ROOT / "data" / "warehouse" / "benchmap.duckdb"


class Warehouse(ConfigurableResource):
    """The embedded DuckDB warehouse. Connections are short-lived and retry on the file lock."""

    path: str = str(DEFAULT_WAREHOUSE)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """Integrity before trust: every run (sensor, schedule, UI) starts by checking that the warehouse file is
        whole and every table reads (pipelines/integrity.py, ~0.1 s); a damaged file fails the run with the
        recovery command instead of writing into it."""
        from pipelines import integrity

        integrity.check_for_run(self.path)

    @property
    def export_dir(self) -> Path:
        return Path(self.path).parent / "exports"

    def query(self, sql: str, params: list | None = None) -> pl.DataFrame:
        return wh.query(self.path, sql, params)

    def read_table(self, name: str, *, columns: list[str] | None = None, keys_in: str | None = None
                   ) -> pl.DataFrame:
        """A table, optionally only `columns` and only rows whose (benchmark, prompt_id) occur in `keys_in`."""
        return wh.read_table(self.path, name, columns=columns, keys_in=keys_in)

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
    occupation_list: str = "all"  # openai step 1: 'all' 923 titles by major group (cached) | 'ranked' top-k
    occupation_k: int = 40  # openai, occupation_list='ranked': the offline ranking's top-k occupations
    max_concurrency: int = 4
    timeout_s: float = 60.0
    max_retries: int = 4
    response_format: str = "auto"  # 'json_schema' (OpenAI) | 'json_object' (llama.cpp) | 'auto'
    batch_size: int = 256
    progress_every: int = 500
    max_labels: int = 10  # openai: at most this many tasks per prompt
    max_prompt_chars: int = 6000  # openai: longer prompts are cut head+tail to this (as the reference saw)
    max_output_tokens: int = 400
    backoff_base_s: float = 1.0

    def llm_config(self) -> LLMConfig:
        """The LLM labeler's configuration (its repr never shows the key)."""
        from models.labeling.llm import LLMConfig

        key = self.api_key
        if isinstance(key, EnvVar):  # an uninitialized resource holds the EnvVar itself, not its value
            key = key.get_value()
        return LLMConfig(
            model=self.model, base_url=self.base_url,
            api_key=key or os.environ.get("OPENAI_API_KEY") or None,
            occupation_list=self.occupation_list, occupation_k=self.occupation_k, max_labels=self.max_labels,
            max_concurrency=self.max_concurrency,
            timeout_s=self.timeout_s, max_retries=self.max_retries, response_format=self.response_format,
            max_prompt_chars=self.max_prompt_chars, max_output_tokens=self.max_output_tokens,
            backoff_base_s=self.backoff_base_s)

    def build(self, index: Any) -> Labeler:
        """The configured labeler over a TaskIndex: OfflineLabeler, or the two-step OpenAILabeler."""
        if self.kind == "openai":
            from models.labeling.llm import OpenAILabeler

            return OpenAILabeler(index, self.llm_config())
        if self.kind == "offline":
            from models.labeling.offline import OfflineLabeler

            return OfflineLabeler.calibrated(index)  # the retriever + the fitted selector_fit.json
        raise ValueError(f"unknown labeler kind {self.kind!r}: expected 'offline' or 'openai'")


def build_labeler_resource() -> LabelerResource:
    kind = labeler_kind_from_env()
    if kind == "openai":
        return LabelerResource(
            kind="openai",
            model=os.environ.get("BENCHMAP_LLM_MODEL", "gpt-4o-mini"),
            base_url=os.environ.get("OPENAI_BASE_URL") or None,
            api_key=EnvVar("OPENAI_API_KEY") if os.environ.get("OPENAI_API_KEY") else None,
            occupation_list=os.environ.get("BENCHMAP_LLM_OCCUPATION_LIST", "all"),
        )
    return LabelerResource(kind="offline", model="offline")
