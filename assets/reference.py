"""Placeholder: filled in by the reference work (see docs/ARCHITECTURE.md)."""

ASSETS: list = []
CHECKS: list = []
