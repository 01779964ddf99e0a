"""The task-level reference in the landing zone (data/raw/reference_labels/) overrides the vendored one for every
reader: the labels' judged texts, their validation, the estimates' judge sample, the index names and a refit."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from models.errors import InputError
from models.reference_labels import DESIGN_FILE, SPLIT_FILES
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


def test_a_reference_file_linking_out_of_the_landing_zone_is_refused(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A reference in the landing zone is untrusted input, as a benchmark folder is: a split file (or the design
    file, or the whole folder) that links outside data/raw is an error naming it, not read; before, it was read
    wherever it pointed. BENCHMAP_FOLLOW_LINKS=1 follows such links, as for benchmark folders. (The sources' data
    version still hashes every file of data/raw, links included: the O*NET and OEWS readers follow links, and a
    file left out of the hash would leave their assets unflagged when it changed.)"""
    outside = tmp_path / "outside"
    _write_subset(outside, {"cybench"})
    raw = tmp_path / "raw"
    folder = raw / readers.REFERENCE_OVERRIDE
    folder.mkdir(parents=True)
    for name in SPLIT_FILES.values():
        (folder / name).symlink_to(outside / name)
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(raw))
    monkeypatch.delenv("BENCHMAP_FOLLOW_LINKS", raising=False)
    assert readers.reference_folder() == folder  # chosen, so the refusal is an error, not a silent fallback
    with pytest.raises(InputError, match="outside the landing zone") as refused:
        readers.load_reference()
    assert str(folder) in str(refused.value)

    # the design file too (the splits read here are inside the zone)
    inside = tmp_path / "inside"
    _write_subset(inside / readers.REFERENCE_OVERRIDE, {"cybench"})
    (inside / readers.REFERENCE_OVERRIDE / DESIGN_FILE).symlink_to(readers.REFERENCE_DIR / DESIGN_FILE)
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(inside))
    assert readers.load_reference()["benchmark"].unique().to_list() == ["cybench"]
    with pytest.raises(InputError, match="outside the landing zone"):
        readers.sampling_design()

    # the whole folder a link out of the zone
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / readers.REFERENCE_OVERRIDE).symlink_to(outside, target_is_directory=True)
    monkeypatch.setenv("BENCHMAP_RAW_DIR", str(linked))
    with pytest.raises(InputError, match="outside the landing zone"):
        readers.load_reference()

    monkeypatch.setenv("BENCHMAP_FOLLOW_LINKS", "1")
    assert readers.load_reference()["benchmark"].unique().to_list() == ["cybench"]
