"""The task index loaded ahead in a thread (resources.task_index.load_in_background, a cold run's speed-up):
the later load is that one, and a broken file is raised by the later load, not lost in the thread."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path

import pytest

from resources import task_index


def test_a_background_load_is_the_one_the_step_reads(tmp_path: Path) -> None:
    path = tmp_path / "index.pkl"
    path.write_bytes(pickle.dumps({"tasks": [1, 2, 3]}))
    task_index.load_in_background(path).join(timeout=30)
    loaded = task_index.load_pickle(path)
    assert loaded == {"tasks": [1, 2, 3]}
    assert task_index.load_pickle(path) is loaded  # the thread's object, not a second load


def test_a_broken_index_file_is_raised_by_the_step_not_lost_in_the_thread(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "broken.pkl"
    path.write_bytes(b"not a pickle")
    escaped: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: escaped.append(args.exc_value))
    task_index.load_in_background(path).join(timeout=30)
    assert escaped == []  # the thread swallowed it quietly
    with pytest.raises(pickle.UnpicklingError):
        task_index.load_pickle(path)  # and the step that needs the index sees it
