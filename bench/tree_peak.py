"""tree_peak: run a command, sample the RSS of its whole process tree every 0.1 s, print the peak (MiB) and the
children's CPU seconds as JSON (issue 29 item 5: a step's own process plus its worker processes).

    .venv/bin/python bench/tree_peak.py .venv/bin/python bench/one_step.py --state STATE exports
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time


def tree_rss_mib(root: int) -> float:
    """The summed VmRSS of `root` and every process below it (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
            except OSError:
                pass  # the process ended meanwhile
    total_kib, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/status") as handle:
                total_kib += next((int(line.split()[1]) for line in handle if line.startswith("VmRSS:")), 0)
        except OSError:
            pass
        stack.extend(children.get(pid, []))
    return total_kib / 1024


def main(argv: list[str]) -> int:
    process = subprocess.Popen(argv)
    peak = 0.0
    while process.poll() is None:
        peak = max(peak, tree_rss_mib(process.pid))
        time.sleep(0.1)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"tree_peak_mib": round(peak), "children_cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
                      "rc": process.returncode}), flush=True)
    return process.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
