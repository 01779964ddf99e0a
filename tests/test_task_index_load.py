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


def test_the_index_is_the_same_whatever_the_blas_threads() -> None:
    """The LSA step's eigendecomposition runs on one BLAS thread, so the task index (and every label) is the same
    on a machine with any number of cores, and a worker process builds the index its step would. With two
    threads the mirror's occupation embeddings differed from one thread's in their last bits."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    tables, dwas = task_index.tables_from_sources(), task_index.task_dwas_frame()
    built = []
    for threads in (2, 1):
        with threadpool_limits(limits=threads, user_api="blas"):
            built.append(task_index.build_index(tables, dwas))
    two, one = built
    arrays = [name for name, value in vars(two).items() if isinstance(value, np.ndarray)]
    assert {"lsa_occupations", "lsa_projection"} <= set(arrays)
    assert [name for name in arrays if not np.array_equal(vars(two)[name], vars(one)[name])] == []
