"""integrity_cost: what the integrity check every run starts with costs, with and without the checksum pass.

    .venv/bin/python bench/integrity_cost.py [--warehouse PATH] [--factors 1,50] [--repeat 3]

The checksum pass (resources/integrity.py, issue 26) reads every value of every table so that DuckDB verifies
each block's checksum: it finds bytes damaged inside the file, which the length/catalog/row-count check
(`checksums=False`, the check before) does not. Measured on the given warehouse (default: BENCHMAP_WAREHOUSE or
data/warehouse/benchmap.duckdb, a `python -m pipelines.run_all` over the mirror) and, for each factor F > 1, on
a copy in which every table holds F copies of its rows (built here with DuckDB: the file grows F-fold, which is
what the check's cost follows; bench/scale.py's 50x run grows the prompt tables the same way, through the
pipeline, and takes far longer). run_all calls the check with per_benchmark=True, as here. The OS page cache is
warm (the run reads the same file right after); the first run after a reboot reads the file from disk once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402


def replicate(source: Path, target: Path, factor: int) -> None:
    """A warehouse whose every table holds `factor` copies of the source's rows."""
    import duckdb

    target.unlink(missing_ok=True)
    con = duckdb.connect(str(target))
    try:
        con.execute(f"attach '{source}' as src (read_only)")
        tables = [r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_catalog = 'src' and "
            "table_schema = 'main' and table_type = 'BASE TABLE'").fetchall()]
        for name in tables:
            con.execute(f'create table "{name}" as select s.* from src."{name}" s, range({factor})')
        con.execute("detach src")
        con.execute("checkpoint")
    finally:
        con.close()


def measure(path: Path, repeat: int) -> dict:
    from resources import integrity

    out: dict = {"file_mib": common.mib(path.stat().st_size)}
    for label, checksums in (("counts_only_s", False), ("with_checksums_s", True)):
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            report = integrity.check_warehouse(path, per_benchmark=True, checksums=checksums)
            times.append(time.perf_counter() - started)
            assert report.ok, report.message()
        out[label] = round(statistics.median(times), 3)
        out[label.replace("_s", "_all_s")] = [round(t, 3) for t in times]
        out["tables"] = len(report.counts)
        out["rows"] = sum(report.counts.values())
    out["checksum_pass_s"] = round(out["with_checksums_s"] - out["counts_only_s"], 3)
    out["checksum_mib_per_s"] = round(out["file_mib"] / max(out["checksum_pass_s"], 1e-3), 1)
    return out


def main(argv: list[str] | None = None) -> int:
    from resources.settings import settings

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warehouse", type=Path, default=None)
    ap.add_argument("--factors", default="1,50")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    source = args.warehouse or settings().warehouse
    if not source.exists():
        common.log(f"no warehouse at {source}: run `python -m pipelines.run_all` first or pass --warehouse")
        return 2
    runs = []
    for factor in (int(f) for f in args.factors.split(",") if f.strip()):
        path = source
        built_s = None
        if factor > 1:
            path = common.state_root() / f"integrity_{factor}x.duckdb"
            started = time.perf_counter()
            replicate(source, path, factor)
            built_s = round(time.perf_counter() - started, 1)
        common.log(f"[integrity_cost] {factor}x: {path}")
        runs.append({"factor": factor, "warehouse": str(path), "built_s": built_s, **measure(path, args.repeat)})
        if factor > 1 and os.environ.get("BENCHMAP_BENCH_KEEP") != "1":
            path.unlink(missing_ok=True)
    common.emit({"bench": "integrity_cost", "measured_at": common.now_iso(), "machine": common.machine(),
                 "code_version": common.code_version(), "source_warehouse": str(source), "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
