"""A run whose labeling step fails after a benchmark's prompts changed publishes nothing (an audit: the run went
on to the analysis and released, as `latest` and in headline_history.csv, numbers mixing the new prompts with
the old texts' labels). The policy stays: a benchmark whose step fails keeps its last successful tables and the
others are refreshed and released (docs/reliability.md, "A failed step and the release"); only labels behind
their prompts hold the analysis and the release back, and a rerun that finishes the labeling releases again.

Through `run_all` on a copy of the labels snapshot (tests/test_faults.py's `world`) with the `openai` labeler
against the local stub (tests/openai_stub.py), whose key is revoked (HTTP 401) in the middle of the changed
benchmark's labeling.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests import test_faults as faults  # noqa: E402
from tests.test_faults import World, real_records  # noqa: E402
from tests.test_llm_reliability import _openai_defs, marked, needle  # noqa: E402

world = faults.world  # the fixture, by name


def _cached_hashes(world: World) -> set[str]:
    from resources.label_cache import LabelCache

    return set(LabelCache(world.state.warehouse).read_frame()["prompt_hash"].to_list())


def test_labels_left_behind_their_changed_prompts_hold_back_the_analysis_and_the_release(
        world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from pipelines import run_all
    from resources.label_queries import labels_behind_prompts
    from tests.openai_stub import OpenAIStub, Status

    records = marked(real_records("officebench", 16), "moved")
    world.add("moved", records)
    world.add("steady", marked(real_records("tau_bench", 8), "steady"))
    args = ["--skip-reference", "--benchmarks", "moved,steady"]
    with OpenAIStub() as stub:
        defs = _openai_defs(world, monkeypatch, stub.base_url)
        assert run_all.main([*args, "--skip-analysis"], defs=defs, instance=world.instance) == 0
        assert labels_behind_prompts(world.state.warehouse) == {}  # every label of a current prompt
        capsys.readouterr()

        # moved's prompts change (same ids, new texts); the key is revoked at its 9th new prompt
        edited = [{**r, "prompt": f"{r['prompt']} (second edition)"} for r in records]
        world.add("moved", edited)
        stub.on(needle(edited[8]), Status(401, "Incorrect API key provided"))
        cached_before = _cached_hashes(world)
        assert run_all.main(args, defs=defs, instance=world.instance) == 1
    out = capsys.readouterr().out
    assert "] moved: FAILED" in out and "HTTP 401" in out

    # the closing lines say what was done (it said "0 labeled" and printed a headline as if the run succeeded)
    new_labels = len(_cached_hashes(world) - cached_before)
    assert new_labels >= 8  # the batches answered before the 401, committed and kept
    assert f"; no labels written, but {new_labels:,} prompts labeled before the step failed (the answers kept in " \
           "the label cache)" in out
    assert f"; 2 step(s) FAILED; {new_labels} labeled, 0 failed" in out, out  # moved and the analysis
    assert "not released: this run FAILED (2 step(s), below), so it published no figures; there is no release yet" \
        in out
    assert "AI benchmarks exercise" not in out and "what the raw labels say" not in out
    assert "\nrelease: " not in out
    [line] = [s for s in out.splitlines() if s.startswith("- analysis/exports")]
    assert line.startswith("- analysis/exports: not run, nothing released (there is no release yet): labels behind "
                           "the prompts (moved: 16 prompts without labels, labels of 16 texts it no longer has)")
    assert "steady" not in line
    assert not list(world.state.exports.glob("*/manifest.json"))  # no release, no `latest`, no history
    assert not (world.state.exports / "latest").exists()
    assert not (world.state.exports / "headline_history.csv").exists()
    assert labels_behind_prompts(world.state.warehouse) == {"moved": (16, 16)}

    # a landing step that refuses the folder writes nothing: the benchmark keeps its last tables, in step with
    # each other, so it does not hold the release back (the policy: the other benchmarks are still refreshed)
    steady = world.state.landing / "steady" / "prompts.jsonl"
    steady.write_bytes(b"{broken\n")
    assert run_all.main(["--skip-reference", "--skip-analysis", "--benchmarks", "steady"], defs=defs,
                        instance=world.instance) == 1
    assert "] steady: FAILED" in capsys.readouterr().out
    assert set(labels_behind_prompts(world.state.warehouse)) == {"moved"}

    # the rerun labels the rest of moved: its labels are its prompts' again
    with OpenAIStub() as stub:
        defs = _openai_defs(world, monkeypatch, stub.base_url)
        assert run_all.main(["--skip-reference", "--skip-analysis", "--benchmarks", "moved"], defs=defs,
                            instance=world.instance) == 0
    assert labels_behind_prompts(world.state.warehouse) == {}
