"""An interrupt stops `run_all` (an audit: Ctrl-C during labeling failed the step, then the run went on to the
analysis and published a release mixing the benchmark's new prompts with its old labels, exit 1, with two raw
KeyboardInterrupt tracebacks of Dagster's log helpers). Now SIGINT (to the process group, as a terminal sends it,
or to the process) and SIGTERM end the run where it is: no further step, no release, one line, exit 128 + the
signal's number; what was labeled stays in the label cache and the rerun labels only the rest.

run_all runs in a child process (this file as a script, see `child`) on a copy of the labels snapshot (conftest
`snapshot`) with one benchmark of real mirrored prompts, labeled by the offline labeler paced per batch so the
signal can be sent after some batches were committed (when their label-store segments appear).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import common  # noqa: E402
from resources import interrupts  # noqa: E402
from tests.test_faults import PacedLabeler, real_records  # noqa: E402

N_PROMPTS, BATCH = 200, 20


def _segments(state: common.State) -> int:
    from resources import label_store

    folder = label_store.store_dir(state.warehouse)
    return len(list(folder.glob("*.parquet"))) if folder.is_dir() else 0


def _cached(state: common.State) -> int:
    from resources.label_cache import LabelCache

    cache = LabelCache(state.warehouse)
    return cache.read_frame().height if cache.exists("label_cache") else 0


def _start(state: common.State, out: Path, pace: float, *args: str) -> subprocess.Popen:
    """run_all in a child of its own session (as a terminal's job: the child leads its process group)."""
    command = [sys.executable, __file__, "run_all", str(state.warehouse), "--pace", str(pace), "--", *args]
    with open(out, "w", encoding="utf-8") as handle:
        return subprocess.Popen(command, env=state.env(), cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT,
                                start_new_session=True)


@pytest.mark.parametrize("signum, to_group", [(signal.SIGINT, True), (signal.SIGTERM, False)],
                         ids=["ctrl-c-to-the-group", "sigterm-to-the-process"])
def test_an_interrupt_mid_labeling_stops_the_run_releases_nothing_and_keeps_the_labels(
        snapshot: common.State, tmp_path: Path, signum: int, to_group: bool) -> None:
    state = snapshot.copy_to(tmp_path / "state")
    records = real_records("crmarena", N_PROMPTS)
    common.write_benchmark(state.landing, "stopped", records)
    n_texts = len({r["prompt"] for r in records})
    base, cached_before = _segments(state), _cached(state)
    out = tmp_path / "interrupted.txt"
    child = _start(state, out, 0.3, "--skip-reference", "--benchmarks", "stopped")
    deadline = time.monotonic() + 240  # a bound on a stuck child, not a timing the test depends on
    while _segments(state) < base + 3:  # three batches committed: the signal comes mid-labeling
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            pytest.fail(f"the child ended or stalled before labeling three batches:\n{out.read_text()[-3000:]}")
        time.sleep(0.05)
    (os.killpg if to_group else os.kill)(child.pid, signum)
    code = child.wait(timeout=240)
    text = out.read_text()
    assert code == 128 + signum, text[-3000:]
    name = signal.Signals(signum).name
    lines = [line for line in text.splitlines() if "interrupted" in line]
    assert len(lines) == 1 and lines[0].startswith(f"python -m pipelines.run_all: interrupted ({name}) during "
                                                   "[1/1] stopped: stopped, no further step ran; nothing released")
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    assert "analysis/exports" not in text  # the run went on to the analysis before
    assert not (state.exports / "latest").exists() and not (state.exports / "headline_history.csv").exists()
    kept = _cached(state) - cached_before
    assert 0 < kept < n_texts  # the committed batches, not the rest
    assert lines[0].endswith(f"work done so far is kept (at least {kept:,} prompts labeled by this run are in the label "
                             "cache): rerun `python -m pipelines.run_all` to continue")

    if to_group:  # the rerun labels the rest only: nothing labeled before is paid for again
        again = tmp_path / "rerun.txt"
        rerun = _start(state, again, 0.0, "--skip-reference", "--skip-analysis", "--benchmarks", "stopped")
        assert rerun.wait(timeout=300) == 0, again.read_text()[-3000:]
        match = re.search(r"\((\d+) prompts? labeled, (\d+) from the cache\)", again.read_text())
        assert match is not None, again.read_text()[-3000:]
        labeled, cached = int(match.group(1)), int(match.group(2))
        # every text once; the cache holds what the line counted, and at most the one batch the signal caught
        # between the label store and the warehouse, which the rerun copies from the store (a CI run: 60 of 40)
        assert labeled + cached == n_texts and kept <= cached <= kept + BATCH, (labeled, cached, kept)


def test_a_signal_another_handler_took_is_still_seen() -> None:
    """Within a Dagster run its handler takes SIGINT (and a DuckDB query may turn the interrupt into its own
    error): `received` still knows, so run_all, the warehouse writes and the release stop."""
    before = signal.getsignal(signal.SIGINT)
    with interrupts.watching():
        assert interrupts.received() is None
        interrupts.check()  # nothing asked: no-op
        taken = []
        ours = signal.signal(signal.SIGINT, lambda signum, _frame: taken.append(signum))  # as Dagster's does
        try:
            os.kill(os.getpid(), signal.SIGINT)
            while not taken:  # the handler runs at the interpreter's next check
                time.sleep(0.01)
        finally:
            signal.signal(signal.SIGINT, ours)
        assert interrupts.received() == signal.SIGINT
        with pytest.raises(interrupts.StopRequested) as stop:
            interrupts.check()
        assert stop.value.signum == signal.SIGINT and isinstance(stop.value, KeyboardInterrupt)
    assert interrupts.received() is None  # outside the block: nothing watched, the handlers are back
    assert signal.getsignal(signal.SIGINT) is before


# ------------------------------------------------------------------------------------------------ child driver
def child(argv: list[str]) -> int:
    """`python tests/test_interrupts.py run_all <warehouse> [--pace S] [--batch N] -- <run_all args>`: run_all's
    command line (pipelines.cli.run_cli, the instance at DAGSTER_HOME) with the offline labeler sleeping S
    seconds before each batch of N prompts."""
    import argparse

    from dagster import Definitions

    from pipelines import cli, run_all
    from pipelines.definitions import build_definitions
    from resources import integrity
    from resources.dagster_resources import LabelerResource

    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["run_all"])
    parser.add_argument("warehouse")
    parser.add_argument("--pace", type=float, default=0.0)
    parser.add_argument("--batch", type=int, default=BATCH)
    args, rest = parser.parse_known_args(argv)

    class PacedLabelerResource(LabelerResource):
        pace_s: float = 0.0

        def build(self, index: Any) -> Any:
            return PacedLabeler(super().build(index), self.pace_s)

    defs = build_definitions(args.warehouse)
    labeler = PacedLabelerResource(kind="offline", model="offline", batch_size=args.batch, pace_s=args.pace)
    paced = Definitions(assets=defs.assets, asset_checks=defs.asset_checks,
                        resources={**(defs.resources or {}), "labeler": labeler})
    run_args = [a for a in rest if a != "--"]
    code = cli.run_cli(lambda a: run_all.main(a, defs=paced), run_args, prog="python -m pipelines.run_all",
                       extra_errors=(integrity.WarehouseDamaged,))
    cli.exit_now(code)


if __name__ == "__main__":
    sys.exit(child(sys.argv[1:]))
