"""The labels-as-counted rows of coverage_headline kept per scope (issue 29 item 3): a scope's rows depend on its
task coverage, the task/hours/occupation tables, thresholds, labeler and models/ source alone, so they are kept
beside the warehouse under that key (`counted_<index>_<scope>`, resources/estimate_cache.py) and a refresh after a
new benchmark computes its scope and the pooled ones only; the other benchmarks' rows are read back.

occupation_model_scores' and occupation_score_power's rows kept per model (`model_scores_<model>`,
`score_power_<model>`): a model's rows are a function of its joined prompt x task x score frame, the parameters
and models/ source (models/scores.py, models/gaps/power.py), so a new benchmark's results recompute its own
models' rows only.

labeler_validation's metrics (`kept_result`): read back while the human-labeled and reference prompts, their
labels and rankings and the reference tables are the same (a benchmark without human labels that lands)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from models import coverage as cov
from resources.dagster_resources import Warehouse


def read_or_keep(warehouse: Warehouse, name: str, key: str | None, compute: Callable[[], Any],
                 valid: Callable[[Any], bool] = lambda kept: kept is not None) -> Any:
    """Result `name` read back when kept under `key` (and `valid`), else compute() kept under it (nothing is read
    or kept with key None: a frame that cannot be hashed)."""
    kept = warehouse.cached_result(name, key) if key is not None else None
    if kept is not None and valid(kept):
        return kept
    computed = compute()
    if key is not None:
        warehouse.keep_result(name, key, computed)
    return computed


def counted_rows_store(warehouse: Warehouse, thresholds: Sequence[int], labeler: str | None,
                       tables: list[pl.DataFrame]) -> Callable[[str], cov.ScopeRows | None]:
    """Per benchmark index, the `scope_rows` of models.coverage.coverage_headline that reads kept rows back and
    keeps computed ones (None when a table cannot be hashed: every scope computed)."""
    shared = warehouse.frames_key([warehouse.source_digest("models"), repr(tuple(thresholds)), str(labeler)], tables)

    def for_index(index: str) -> cov.ScopeRows | None:
        if shared is None:
            return None

        def rows(scope: str, task_cov: pl.DataFrame, compute: Callable[[], cov.Rows]) -> cov.Rows:
            return read_or_keep(warehouse, f"counted_{index}_{scope}",
                                warehouse.frames_key([shared, index, scope], [task_cov]), compute,
                                valid=lambda kept: isinstance(kept, list))

        return rows

    return for_index


def model_score_rows_store(warehouse: Warehouse, kind: str = "model_scores") -> Callable[
        [str, pl.DataFrame, tuple, Callable[[], Any]], Any]:
    """models.scores.occupation_model_scores' (and models.gaps.score_power's, `kind` "score_power") `kept`: a
    model's rows read back when kept under the key of its joined inputs, the parameters and the models/ source,
    else computed and kept."""
    code = warehouse.source_digest("models")

    def rows(model: str, joined: pl.DataFrame, parts: tuple, compute: Callable[[], Any]) -> Any:
        return read_or_keep(warehouse, f"{kind}_{model}",
                            warehouse.frames_key([code, kind, model, repr(parts)], [joined]), compute)

    return rows


def kept_result(warehouse: Warehouse, name: str, parts: list[str], frames: list[pl.DataFrame],
                compute: Callable[[], Any]) -> Any:
    """compute(), kept as result `name` under the key of `parts`, `frames` (their rows) and the models/ source,
    and read back while that key is the same (computed and nothing kept when a frame cannot be hashed)."""
    return read_or_keep(warehouse, name,
                        warehouse.frames_key([warehouse.source_digest("models"), name, *parts], frames), compute)
