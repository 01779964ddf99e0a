"""The headline's draws, shared by benchmark_index_membership (assets/indexes.py) and headline_estimates
(assets/estimates.py), which replays them: each benchmark from its own random streams, its rows kept beside the
warehouse by what they depend on (models/estimates/bench_draws.py), so a benchmark without judged texts that
lands draws its own rows only (issue 29 item 3)."""

from __future__ import annotations

import time
from typing import Any

from models import estimates as es
from models.report.formatting import count
from resources.dagster_resources import Warehouse


def headline_draws(warehouse: Warehouse, problem: es.Problem, seed: int, n_draws: int,
                   estimators: tuple[str, ...] = ("labeler", "design", "model_assisted"), purpose: str = "headline",
                   log: Any = None) -> es.DrawRecord:
    """The headline's draws (run_estimators replays them), each benchmark from its own random streams, its rows
    kept beside the warehouse by what they depend on (models/estimates/bench_draws.py): a benchmark without
    judged texts that lands draws its own rows only."""
    started = time.process_time()
    record, report = es.draw_record(problem, seed, n_draws, estimators, purpose=purpose,
                                    code_version=warehouse.draws_code_version(), read=warehouse.cached_result,
                                    write=warehouse.keep_result)
    if log is not None:
        log.info(f"{purpose} draws {time.process_time() - started:.1f} CPU-s: {len(report.drawn)} benchmark(s) drawn "
                 f"({', '.join(report.drawn[:5])}{', ...' if len(report.drawn) > 5 else ''}), {len(report.kept)} "
                 f"read back; pooled parameters {'read back' if report.pooled_cached else 'drawn'}")
    return record


def kept_text_sums(warehouse: Warehouse, problem: es.Problem, record: es.DrawRecord | None) -> es.KeptTextSums:
    """The per-text table's sums of the benchmarks whose inputs are unchanged, read back (keyed by the draws'
    keys on `record`, models/estimates/text_sums.py); the headline sums the other benchmarks' texts only."""
    return es.KeptTextSums(problem, es.text_keys(record) if record is not None else None, warehouse.cached_result)


def kept_reliability_table(warehouse: Warehouse, problem: es.Problem, record: es.DrawRecord | None) -> Any:
    """es.reliability_table(problem), read back when kept: it reads the judged texts' labels and judge pairs only,
    which the draws' pooled key covers (the judged benchmarks' problem and models/estimates/), with the rest
    of models/ (the Wilson interval) in the key too."""
    pooled_key = getattr(record, "pooled_key", None)
    key = f"{pooled_key}:{warehouse.source_digest('models')}" if pooled_key is not None else None
    kept = warehouse.cached_result("labeler_reliability", key) if key is not None else None
    if kept is not None:
        return kept
    table = es.reliability_table(problem)
    if key is not None:
        warehouse.keep_result("labeler_reliability", key, table)
    return table


def kept_share_tables(warehouse: Warehouse, problem: es.Problem, record: es.DrawRecord, log: Any = None
                      ) -> dict[str, Any]:
    """benchmark_occupation_estimates and benchmark_major_group_estimates of `record`'s model-assisted draws,
    each benchmark's rows read back when kept under its draws' key (models/estimates/bench_shares.py), the
    others computed and kept."""
    started = time.process_time()
    tables, computed = es.kept_share_estimates(problem, record, warehouse.cached_result, warehouse.keep_result)
    if log is not None:
        which = f" ({', '.join(computed[:5])}{', ...' if len(computed) > 5 else ''})" if computed else ""
        log.info(f"benchmark shares {time.process_time() - started:.2f} CPU-s: "
                 f"{count(len(computed), 'benchmark')} computed{which}, {problem.n_bench - len(computed)} read back")
    return tables
