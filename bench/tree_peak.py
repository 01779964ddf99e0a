"""tree_peak: run a command, sample the RSS of its whole process tree every 0.1 s (bench/common.run_measured),
print the peak (MiB) and the children's CPU seconds as JSON (issue 29 item 5: a step's own process plus its worker
processes).

    .venv/bin/python bench/tree_peak.py .venv/bin/python bench/one_step.py --state STATE exports
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402


def main(argv: list[str]) -> int:
    measured = common.run_measured(argv, os.environ, cwd=Path.cwd(), echo=False)
    sys.stderr.write(measured.stderr)
    sys.stdout.write(measured.stdout)
    print(json.dumps({"tree_peak_mib": round(measured.peak_rss_bytes / 2**20),
                      "children_cpu_s": round(measured.cpu_s, 1), "rc": measured.returncode}), flush=True)
    return measured.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
