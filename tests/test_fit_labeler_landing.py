"""Refitting the labeler when the landed benchmarks no longer hold every judged prompt (`pipelines.fit_labeler`)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest

from models.errors import InputError
from pipelines import fit_labeler
from resources import readers

MIRROR = Path(os.environ.get("BENCHMAP_MIRROR", "../shared/data"))


def test_a_judged_prompt_its_benchmark_no_longer_has_is_left_out_of_the_refit(
        tmp_path: Path, monkeypatch, capsys) -> None:
    """The last note's open end: with cybench's prompts.jsonl holding fewer items than were judged, `python -m
    pipelines.fit_labeler` stopped with `KeyError: <n> reference prompts have no landed text` after building the
    task index, while the pipeline leaves such rows out with a warning (tests/test_reference_removed_prompts.py).
    The refit now leaves them out the same way and says so, naming the first row's file and line."""
    source = MIRROR / "benchmarks" / "cybench"
    if not (source / "prompts.jsonl").is_file():
        pytest.skip("the mirror's cybench is not here")
    reference = readers.load_reference(readers.REFERENCE_DIR)
    # a development-split prompt: judged in two passes, so two rows of one prompt are left out
    judged_ids = set(reference.filter((pl.col("benchmark") == "cybench") & (pl.col("split") == "dev"))["prompt_id"])
    lines = (source / "prompts.jsonl").read_text(encoding="utf-8").rstrip("\n").split("\n")  # not splitlines()
    removed = next(json.loads(line)["prompt_id"] for line in lines if json.loads(line).get("prompt_id") in judged_ids)
    folder = tmp_path / "raw" / "benchmarks" / "cybench"  # the landing zone's copy wins over the mirror's
    shutil.copytree(source, folder)
    (folder / "prompts.jsonl").write_text(
        "\n".join(line for line in lines if json.loads(line).get("prompt_id") != removed) + "\n", encoding="utf-8")
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(tmp_path / "raw"))

    kept, prompts, _, _ = fit_labeler.prepare(readers.REFERENCE_DIR)

    dropped = reference.filter((pl.col("benchmark") == "cybench") & (pl.col("prompt_id") == removed))
    assert kept.height == reference.height - dropped.height > 0
    assert removed not in set(kept.filter(pl.col("benchmark") == "cybench")["prompt_id"])
    assert len(prompts) == reference.select("benchmark", "prompt_hash").n_unique() - 1
    warning = capsys.readouterr().err
    first = dropped.row(0, named=True)
    assert dropped.height == 2
    assert "2 reference rows (1 prompt) without a landed prompt holding the judged text" in warning
    assert f"{first['source_file']}, line {first['line_number']}: cybench/{removed}" in warning


def test_a_reference_with_no_landed_prompt_is_one_error_naming_its_file() -> None:
    reference = readers.load_reference(readers.REFERENCE_DIR)
    with pytest.raises(InputError, match=r"reference_.*: none of its \d+ rows has a landed prompt"):
        fit_labeler.landed_reference(reference, {})
