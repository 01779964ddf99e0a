"""Placeholder: filled in by the analysis work (see docs/ARCHITECTURE.md)."""

ASSETS: list = []
CHECKS: list = []
