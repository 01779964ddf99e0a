"""A code location for tests/test_run_launcher.py: one job whose op records where it ran, then waits if asked."""

import json
import os
import sys
import time
from pathlib import Path

from dagster import Config, Definitions, in_process_executor, job, op


class ProbeConfig(Config):
    out: str
    sleep_s: float = 0.0


@op
def probe(config: ProbeConfig) -> None:
    Path(config.out).write_text(json.dumps({"pid": os.getpid(), "marker_preloaded": "fork_marker" in sys.modules}))
    time.sleep(config.sleep_s)


@job(executor_def=in_process_executor)  # as the code location's runs: the op in the run's process
def probe_job() -> None:
    probe()


defs = Definitions(jobs=[probe_job])
