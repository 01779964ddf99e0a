"""Placeholder: filled in by the exports work (see docs/ARCHITECTURE.md)."""

ASSETS: list = []
CHECKS: list = []
