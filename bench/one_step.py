"""one_step: materialize a few assets over a kept bench state, in process; CPU-s and max RSS of each (issue 29 item 5:
re-measure a fixed step at 10x/50x without running the whole pipeline again).

    .venv/bin/python bench/one_step.py --state /work/scale-bench/v2/scale_seeded_50x labeler_validation \
        labeler_agreement [--profile out.pstats] [--out result.json]

The state (bench/common.State: its Dagster home, warehouse and landing zone) must hold what the assets read (a
finished run). Each asset is one `materialize` of that asset alone (its inputs come from the warehouse); the
process's CPU seconds (user+sys, DuckDB's threads included) and ru_maxrss are read around it. Run it in its own
process per state: the max RSS is the process's since it started (imports and the Definitions included).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--state", type=Path, required=True, help="a bench state folder (a finished run)")
    ap.add_argument("assets", nargs="+")
    ap.add_argument("--profile", type=Path, help="write a cProfile of the asset runs here")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    from bench import common

    state = common.State(args.state)
    os.environ.update(state.env())
    from dagster import AssetSelection, DagsterInstance, materialize

    from pipelines.definitions import build_definitions

    t0, c0 = time.perf_counter(), _cpu_s()
    defs = build_definitions()
    instance = DagsterInstance.get()
    rows = [{"step": "definitions+instance", "cpu_s": round(_cpu_s() - c0, 2), "wall_s": round(time.perf_counter() - t0, 2),
             "maxrss_mib": round(_maxrss_mib(), 1)}]
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
    for name in args.assets:
        t0, c0, rss0 = time.perf_counter(), _cpu_s(), _maxrss_mib()
        if profiler:
            profiler.enable()
        result = materialize([*defs.assets, *(defs.asset_checks or [])], selection=AssetSelection.assets(name).required_multi_asset_neighbors(),
                             instance=instance, resources=dict(defs.resources or {}), raise_on_error=False)
        if profiler:
            profiler.disable()
        rows.append({"step": name, "success": result.success, "cpu_s": round(_cpu_s() - c0, 2),
                     "wall_s": round(time.perf_counter() - t0, 2), "maxrss_before_mib": round(rss0, 1),
                     "maxrss_mib": round(_maxrss_mib(), 1)})
    if profiler:
        profiler.dump_stats(str(args.profile))
    out = {"bench": "one_step", "state": str(args.state), "measured_at": common.now_iso(),
           "code_version": common.code_version(), "load_avg_1m": os.getloadavg()[0], "steps": rows}
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0 if all(r.get("success", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
