"""Placeholder: filled in by the benchmarks work (see docs/ARCHITECTURE.md)."""

ASSETS: list = []
CHECKS: list = []
