"""Resources, chosen by the settings (resources/settings.py): where the warehouse lives and which labeler runs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from dagster import Config, ConfigurableResource, EnvVar, InitResourceContext

from resources import warehouse as wh
from resources.gc_policy import startup_objects_frozen
from resources.settings import DEFAULT_WAREHOUSE, Settings, settings
from resources.warehouse_queries import WarehouseQueries

if TYPE_CHECKING:
    from models.labeling.base import Labeler
    from models.labeling.llm_config import LLMConfig


_SET_UP: dict[tuple[str, str | None], int] = {}  # (warehouse file, run id) this process checked -> its failures then


def _run_id(context: InitResourceContext) -> str | None:
    """The run a resource is set up for (None outside a run: `build_resources`, tests). Not context.run_id:
    deprecated in Dagster 1.13."""
    return context.run.run_id if context.run is not None else None


class Warehouse(WarehouseQueries, ConfigurableResource):
    """The embedded DuckDB warehouse. Connections are short-lived and retry on the file lock. Assets read through
    its named queries (resources/warehouse_queries.py) and `read_table`, and write through the IO manager or
    `replace_table`/`append_rows`: no SQL and no file path in assets/."""

    path: str = str(DEFAULT_WAREHOUSE)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """Integrity before trust: every run (sensor, schedule, UI) starts by checking that the warehouse file is
        whole and every table reads, every block's checksum once per run (resources/integrity.py); a damaged
        file fails the run with the recovery command instead of writing into it."""
        from resources import integrity

        integrity.check_for_run(self.path, _run_id(context))

    @contextlib.contextmanager
    def yield_for_execution(self, context: InitResourceContext) -> Iterator[Warehouse]:
        """The run keeps the file open between its connects (warehouse.lingering: let go within half a second
        of a pause, so another process waiting for the file still gets it): each input load, output write and
        named read of a step is a connect, ~27 CPU-ms each when it opens the file anew (an analysis run connects
        some 300 times). run_all's runs already held or lingered (pipelines/step_runner.py); now a sensor's,
        schedule's or the UI's run does too. Inside a `held` or `lingering` block of this process it is a no-op.
        The garbage collector skips the objects alive at the run's start meanwhile (resources/gc_policy.py)."""
        run = (str(Path(self.path).resolve()), _run_id(context))
        if run[1] is None or run not in _SET_UP:  # a run's second Warehouse (the IO manager's) is checked already
            self.setup_for_execution(context)
            _SET_UP[run] = wh.failures(self.path)
        try:
            with startup_objects_frozen(), wh.lingering(self.path):
                yield self
        finally:
            self.teardown_after_execution(context)
            self._vouch_if_clean(run)

    def _vouch_if_clean(self, run: tuple[str, str | None]) -> None:
        """A run that found the file sound and wrote it through DuckDB without an error vouches for the file it
        leaves (resources/integrity.py `vouch`): the next run need not read every block again. Only once no
        connection of this process is open (the last of the run's Warehouses), so the checkpoint is in it."""
        from resources import integrity

        if run in _SET_UP:
            integrity.vouch_if_clean(self.path, _SET_UP[run])

    @property
    def export_dir(self) -> Path:
        return Path(self.path).parent / "exports"

    def query(self, sql: str, params: list | None = None) -> pl.DataFrame:
        return wh.query(self.path, sql, params)

    def read_table(self, name: str, *, columns: list[str] | None = None, keys_in: str | None = None
                   ) -> pl.DataFrame:
        """A table, optionally only `columns` and only rows whose (benchmark, prompt_id) occur in `keys_in`."""
        return wh.read_table(self.path, name, columns=columns, keys_in=keys_in)

    def read_tables(self, names: Sequence[str]) -> tuple[dict[str, pl.DataFrame], list[str]]:
        """The tables of `names` the warehouse has, and the names it lacks: one query a table (a missing one is
        told by its read, not asked before every read)."""
        if not Path(self.path).exists():
            return {}, list(names)
        tables: dict[str, pl.DataFrame] = {}
        missing: list[str] = []
        for name in names:
            try:
                tables[name] = self.read_table(name)
            except LookupError:
                missing.append(name)
        return tables, missing

    def table_exists(self, name: str) -> bool:
        if not Path(self.path).exists():
            return False
        with wh.connect(self.path, read_only=True) as con:
            return wh.table_exists(con, name)

    def append_rows(self, name: str, df: pl.DataFrame) -> None:
        wh.append_rows(self.path, name, df)

    def replace_table(self, name: str, df: pl.DataFrame) -> None:
        wh.replace_table(self.path, name, df)


class LLMSettings(Config):
    """models.labeling.llm_config.LLMConfig as Dagster config, without the key: the same fields with the same
    defaults (tests/test_definitions.py holds the two together), converted by `to_llm_config`. Declared rather
    than derived from the dataclass because the labeler module pulled in the openai client (~0.4 s) for every
    process that loads the Definitions; the dataclass now lives in models/labeling/llm_config.py, which does not
    (the labeler, resources/llm_labeler.py, is imported only when one is built)."""

    model: str = "gpt-4o-mini"
    base_url: str | None = None  # None = api.openai.com; e.g. http://127.0.0.1:8000/v1 for llama.cpp
    occupation_list: str = "all"  # step 1: 'all' 923 titles by major group (cached) | 'ranked' top-k
    occupation_k: int = 40  # occupation_list='ranked': the offline ranking's top-k occupations
    max_labels: int = 10  # at most this many tasks per prompt
    max_concurrency: int = 4
    timeout_s: float = 60.0
    batch_file_timeout_s: float = 1800.0  # Batch API: per file uploaded or downloaded, in total
    max_retries: int = 4
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 120.0
    response_format: str = "auto"  # 'json_schema' (OpenAI) | 'json_object' (llama.cpp) | 'auto'
    temperature: float = 0.0
    seed: int | None = 0
    max_output_tokens: int = 400
    max_reading_chars: int = 160
    max_prompt_chars: int = 6000  # longer prompts are cut head+tail to this (as the reference saw)
    head_fraction: float = 0.7

    def to_llm_config(self, api_key: str | None) -> LLMConfig:
        from models.labeling.llm_config import LLMConfig

        return LLMConfig(**self.model_dump(), api_key=api_key)


_LLM_FIELDS = frozenset(LLMSettings.model_fields)


class LabelerResource(ConfigurableResource):
    """Which labeler labels prompts, and how: `kind`, the LLM labeler's `llm` settings, and the key.

    LLM settings may also be given flat, `LabelerResource(kind="openai", model="gpt-4o-mini", timeout_s=30)`:
    any keyword that names an `LLMSettings` field goes into `llm`.

    `batch_size`: prompts per committed batch. The `openai` labeler's default is its `max_concurrency`: a
    batch is committed only once all of it is answered, so a killed run pays again for the answers of the
    batches in flight (256 prompts before); its pool works one batch ahead, so small batches cost little speed (a slow prompt can still leave threads idle)."""

    kind: str = "offline"  # 'offline' | 'openai'
    llm: LLMSettings = LLMSettings()
    api_key: str | None = None  # only ever from the environment: EnvVar("OPENAI_API_KEY")
    batch_size: int = 256
    progress_every: int = 500

    def __init__(self, **data: Any) -> None:
        flat = {name: data.pop(name) for name in list(data) if name in _LLM_FIELDS}
        if flat:
            nested = data.get("llm") or {}
            nested = nested.model_dump() if isinstance(nested, LLMSettings) else dict(nested)
            data["llm"] = LLMSettings(**{**nested, **flat})
        if data.get("kind") == "openai" and data.get("batch_size") is None:
            llm = data.get("llm") or {}
            concurrency = llm.max_concurrency if isinstance(llm, LLMSettings) else \
                dict(llm).get("max_concurrency", LLMSettings().max_concurrency)
            data["batch_size"] = max(1, int(concurrency))
        super().__init__(**data)

    @property
    def model(self) -> str:
        return self.llm.model

    def llm_config(self) -> LLMConfig:
        """The LLM labeler's configuration (its repr never shows the key)."""
        key = self.api_key
        if isinstance(key, EnvVar):  # an uninitialized resource holds the EnvVar itself, not its value
            key = key.get_value()
        return self.llm.to_llm_config(key or settings().api_key)

    def build(self, index: Any) -> Labeler:
        """The configured labeler over a TaskIndex: OfflineLabeler, or the two-step OpenAILabeler."""
        if self.kind == "openai":
            from resources.llm_labeler import OpenAILabeler

            return OpenAILabeler(index, self.llm_config())
        if self.kind == "offline":
            from models.labeling.offline import OfflineLabeler
            from resources.readers import load_selector_fit

            return OfflineLabeler.calibrated(index, load_selector_fit())  # the retriever + selector_fit.json
        raise ValueError(f"unknown labeler kind {self.kind!r}: expected 'offline' or 'openai'")


def build_labeler_resource(config: Settings | None = None) -> LabelerResource:
    """The labeler the settings choose: the offline one, or `openai` with the key from EnvVar("OPENAI_API_KEY")."""
    config = config or settings()
    if config.labeler == "openai":
        return LabelerResource(
            kind="openai",
            llm=LLMSettings(model=config.llm_model, base_url=config.base_url,
                            occupation_list=config.occupation_list),
            api_key=EnvVar("OPENAI_API_KEY") if config.has_api_key else None,
        )
    return LabelerResource(kind="offline", model="offline")


__all__ = ["DEFAULT_WAREHOUSE", "EnvVar", "LLMSettings", "LabelerResource", "Warehouse", "build_labeler_resource"]
