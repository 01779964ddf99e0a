"""Placeholder: filled in by the gaps work (see docs/ARCHITECTURE.md)."""

ASSETS: list = []
CHECKS: list = []
