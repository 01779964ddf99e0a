"""The task-level reference in the landing zone (data/raw/reference_labels/) overrides the vendored one for every
reader: the labels' judged texts, their validation, the estimates' judge sample, the index names and a refit."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from models.reference_labels import SPLIT_FILES
from resources import readers


def _write_subset(folder: Path, benchmarks: set[str]) -> None:
    folder.mkdir(parents=True)
    for name in SPLIT_FILES.values():
        lines = (readers.REFERENCE_DIR / name).read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if line.strip() and json.loads(line)["benchmark"] in benchmarks]
        (folder / name).write_text("\n".join(kept) + "\n", encoding="utf-8")


def test_a_reference_in_the_landing_zone_is_read_by_every_reader(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A rehearsal of the blind check found the override half wired: the labels and their validation read it,
    but the estimates' judge sample (and the index names, and a refit by default) read the vendored reference,
    so the headline was corrected with judge labels the user had taken out."""
    from assets.estimate_inputs import read_reference_sample
    from pipelines import validate_labeler

    vendored = readers.load_reference(readers.REFERENCE_DIR)
    kept = {"cybench", "legalbench"}
    raw = tmp_path / "raw"
    _write_subset(raw / readers.REFERENCE_OVERRIDE, kept)
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(raw))

    assert readers.reference_folder() == raw / readers.REFERENCE_OVERRIDE
    assert validate_labeler.dev_reference_folder() == raw / readers.REFERENCE_OVERRIDE
    override = readers.load_reference()
    assert set(override["benchmark"].unique()) == kept
    assert override.height == vendored.filter(pl.col("benchmark").is_in(list(kept))).height
    sample = read_reference_sample()  # what the headline's correction reads
    assert set(sample["benchmark"].unique()) == kept
    assert sample["prompt_hash"].n_unique() == override["prompt_hash"].n_unique()
    # no design file in the override: the vendored design still names every sampled benchmark
    assert readers.sampling_design().height == readers.sampling_design(readers.REFERENCE_DIR).height

    # a reference of one's own with a training split only (a second read: it was ignored without a word), or a
    # development split only (every reader failed): read as it is
    for kept_split in ("train", "dev"):
        only = tmp_path / f"only_{kept_split}"
        _write_subset(only / readers.REFERENCE_OVERRIDE, kept)
        (only / readers.REFERENCE_OVERRIDE / SPLIT_FILES["dev" if kept_split == "train" else "train"]).unlink()
        monkeypatch.setenv("BENCHMAP_RAW_DIR", str(only))
        assert readers.reference_folder() == only / readers.REFERENCE_OVERRIDE
        rows = readers.load_reference()
        assert set(rows["split"].unique()) == {kept_split} and set(rows["benchmark"].unique()) == kept
        assert read_reference_sample()["prompt_hash"].n_unique() == rows["prompt_hash"].n_unique()
    with pytest.raises(Exception, match="holds no"):
        readers.load_reference(tmp_path)

    # a landing zone without the folder (or with neither split's file): the vendored reference
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(tmp_path / "empty"))
    assert readers.reference_folder() == readers.REFERENCE_DIR
    assert read_reference_sample()["benchmark"].n_unique() == vendored["benchmark"].n_unique()


def test_a_refit_without_a_development_split_reads_both_splits_for_its_targets() -> None:
    """`python -m pipelines.fit_labeler` on a training split alone ran the whole cross-validation, then failed
    with KeyError 'task_f1' (the development split's figures are empty)."""
    from pipelines import fit_labeler

    figures = {m: {"value": t + 0.01} for m, t in fit_labeler.TARGETS.items()}
    on, met = fit_labeler.targets_met({"cv_dev": {}, "cv_train_and_dev": figures})
    assert on == "cv_train_and_dev" and all(met.values())
    low = {m: {"value": t - 0.01} for m, t in fit_labeler.TARGETS.items()}
    on, met = fit_labeler.targets_met({"cv_dev": low, "cv_train_and_dev": figures})
    assert on == "cv_dev" and not any(met.values())
