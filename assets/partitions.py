"""Partitions shared by benchmark-level assets (benchmark tables, labels): a dynamic partition per benchmark.

Import `benchmark_partitions` from here; the partition key is the benchmark's folder name (a safe identifier,
see models.benchmarks.SAFE_NAME) or the reserved `_landing` key for landing-zone problems.
"""

from __future__ import annotations

from dagster import DynamicPartitionsDefinition

BENCHMARK_PARTITIONS_NAME = "benchmark"

benchmark_partitions = DynamicPartitionsDefinition(name=BENCHMARK_PARTITIONS_NAME)
