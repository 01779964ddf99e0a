"""The sensors of the code location, one module each:

- `benchmark_landing_sensor` (pipelines/landing_sensor.py): a new or changed benchmark folder refreshes exactly
  that benchmark's partition;
- `analysis_automation_sensor` (pipelines/analysis_automation.py): once those refreshes (and reference or
  index-file updates) have settled, the analysis is refreshed once.
"""

from __future__ import annotations

from pipelines.analysis_automation import analysis_automation_sensor
from pipelines.landing_sensor import benchmark_landing_sensor

SENSORS: list = [benchmark_landing_sensor, analysis_automation_sensor]
