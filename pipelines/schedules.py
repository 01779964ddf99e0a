"""Schedules: placeholder until the refresh work defines them."""

SCHEDULES: list = []
