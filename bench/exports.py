"""exports: CPU seconds of the export stage alone, on the warehouse of a finished run (issue 29).

    .venv/bin/python bench/exports.py STATE                 # STATE: a state folder a cold run left (bench/cold.py,
                                                            # bench/step_profile.py), e.g. $BENCHMAP_BENCH_DIR/cold
    .venv/bin/python bench/exports.py STATE --code DIR      # the code snapshot to run (A/B: main's against yours)
    .venv/bin/python bench/exports.py STATE --cprofile      # plus the top functions per step
    .venv/bin/python bench/exports.py STATE --select label_validation,task_search_index   # other groups/assets

Copies STATE's warehouse into a scratch state without its exports folder (so a first release is written, as on a
cold run), then materializes the `exports` group (figures, coverage map, summary, tables + workbook + release,
headline history) in a child process. `--select` names other asset groups or assets (comma-separated; their
checks come along): the same timing for any stage of a finished run (the task index pickle stays where STATE's
table says it is).
Copies STATE's warehouse into a scratch state without its exports folder (so a first release is written, as on a
cold run), then materializes the `exports` group (figures, coverage map, summary, tables + workbook + release,
headline history) in a child process. Each Dagster step is timed as in bench/step_profile.py: wall and CPU
seconds of the process (DuckDB's threads included). Also reported: the release's size per kind of file. Prints
one JSON object; the scratch state (with the release, for bench/compare_outputs.py) stays in
`<state root>/exports-<label>`.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402


def _child(out_dir: Path, use_cprofile: bool, code: Path, select: str) -> int:
    """Materialize the `select`ed groups or assets in this process with every step timed (and profiled)."""
    sys.path.insert(0, str(code))  # the code under test first (this script may come from another checkout)
    from dagster import AssetSelection, DagsterInstance, materialize
    from dagster._core.execution.plan import execute_plan

    original = execute_plan.core_dagster_event_sequence_for_step
    steps: list[dict[str, Any]] = []
    profiles: dict[str, cProfile.Profile] = {}

    def timed(step_context: Any) -> Any:
        key = step_context.step.key
        profile = profiles.setdefault(key, cProfile.Profile()) if use_cprofile else None
        events = original(step_context)
        wall, cpu = 0.0, 0.0
        while True:  # only the step's own work: not Dagster's handling of the events it yields
            w0, c0 = time.perf_counter(), time.process_time()
            if profile is not None:
                profile.enable()
            try:
                event = next(events)
            except StopIteration:
                break
            finally:
                if profile is not None:
                    profile.disable()
                wall += time.perf_counter() - w0
                cpu += time.process_time() - c0
            yield event
        steps.append({"step": key, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3)})

    execute_plan.core_dagster_event_sequence_for_step = timed
    from pipelines.definitions import defs

    w0, c0 = time.perf_counter(), time.process_time()
    names = [n.strip() for n in select.split(",") if n.strip()]
    groups = {node.group_name for node in (defs.resolve_asset_graph().get(k) for k in
                                            defs.resolve_asset_graph().materializable_asset_keys)}
    selection = AssetSelection.groups(*[n for n in names if n in groups]) | AssetSelection.assets(
        *[n for n in names if n not in groups])
    result = materialize([*defs.assets, *(defs.asset_checks or [])], selection=selection,
                         instance=DagsterInstance.ephemeral(), resources=dict(defs.resources or {}),
                         raise_on_error=False)
    out_dir.mkdir(parents=True, exist_ok=True)
    top: dict[str, list[str]] = {}
    for key, profile in profiles.items():
        items = pstats.Stats(profile).stats.items()  # type: ignore[attr-defined]
        own = sorted(items, key=lambda kv: -kv[1][2])[:12]  # by own time, then the project's by cumulative
        project = sorted((kv for kv in items if any(m in kv[0][0] for m in ("/models/", "/assets/", "/pipelines/"))),
                         key=lambda kv: -kv[1][3])[:12]
        top[key] = [f"{label} {func[0].rsplit('/', 1)[-1]}:{func[1]}:{func[2]} cum {v[3]:.2f}s own {v[2]:.2f}s "
                    f"calls {v[1]}" for label, rows in (("own", own), ("project", project)) for func, v in rows]
    (out_dir / "steps.json").write_text(json.dumps({
        "success": result.success, "steps": steps, "top": top,
        "wall_s": time.perf_counter() - w0, "cpu_s": time.process_time() - c0}))
    return 0 if result.success else 1


def _sizes(release: Path | None) -> dict[str, Any]:
    """Bytes of the release per kind of file (the workbook, the tables folder, figures, the rest)."""
    if release is None:
        return {}
    kinds: dict[str, int] = {}
    for path in release.rglob("*"):
        if path.is_file():
            part = path.relative_to(release).parts
            kind = part[0] if len(part) > 1 else path.suffix.lstrip(".") or path.name
            kinds[kind] = kinds.get(kind, 0) + path.stat().st_size
    return {"bytes": dict(sorted(kinds.items())), "total_bytes": sum(kinds.values())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("state", type=Path, nargs="?", help="a finished state folder (default: <state root>/cold)")
    parser.add_argument("--code", type=Path, default=common.PROJECT_ROOT, help="the code to run (a snapshot)")
    parser.add_argument("--label", default="run", help="names the scratch state exports-<label>")
    parser.add_argument("--cprofile", action="store_true", help="profile each step (slower)")
    parser.add_argument("--select", default="exports", help="asset groups or assets, comma-separated")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(Path(args.child), args.cprofile, args.code.resolve(), args.select)

    source = common.State(args.state or common.state_root() / "cold")
    if not source.warehouse.is_file():
        raise SystemExit(f"no warehouse in {source.root}: run bench/cold.py (or step_profile.py) first")
    scratch = common.State(common.state_root() / f"exports-{args.label}", args.code.resolve())
    if scratch.root.exists():
        shutil.rmtree(scratch.root)
    scratch.create()
    shutil.copy2(source.warehouse, scratch.warehouse)
    out_dir = scratch.root / "profile"
    cmd = [common.PYTHON, str(Path(__file__).resolve()), "--child", str(out_dir), "--code", str(scratch.code),
           "--select", args.select]
    if args.cprofile:
        cmd.append("--cprofile")
    machine = common.machine()
    measured = common.run_measured(cmd, scratch.env(), cwd=scratch.code)
    child = json.loads((out_dir / "steps.json").read_text()) if (out_dir / "steps.json").is_file() else {}
    steps = child.get("steps", [])
    releases = sorted(p for p in scratch.exports.glob("[0-9]*") if p.is_dir())
    result = {
        "bench": "exports" if args.select == "exports" else f"stage {args.select}",
        "measured_at": common.now_iso(),
        "machine": machine,
        "code": str(scratch.code),
        "code_version": common.code_version(scratch.code),
        **measured.summary(),
        "success": measured.returncode == 0 and bool(child.get("success")),
        "steps_cpu_s": round(sum(s["cpu_s"] for s in steps), 2),
        "steps": steps,
        "child_cpu_s": round(child.get("cpu_s", 0.0), 2),
        "release": str(releases[-1]) if releases else None,
        **_sizes(releases[-1] if releases else None),
        **({"top": child.get("top")} if args.cprofile else {}),
    }
    common.emit(result)
    return 0 if result["success"] else 1


if __name__ == "__main__":
    sys.exit(main())
