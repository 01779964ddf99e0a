"""Placeholder: filled in by the labels work (see docs/ARCHITECTURE.md)."""

ASSETS: list = []
CHECKS: list = []
