"""Sensors: placeholder until the refresh work defines them."""

SENSORS: list = []
