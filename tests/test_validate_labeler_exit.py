"""`python -m pipelines.validate_labeler` is a gate before a big spend: when prompts fail to label its metrics
leave them out, so it must not exit 0 (it did, even when every prompt failed: an audit of failures reported as
success)."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.labeling.base import LabelOutcome
from pipelines import validate_labeler


class _Labeler:
    """A labeler whose server answers 500 to every request (or only to some prompts)."""

    name, model, template_version, labeler_version = "openai", "stub-model", "t1", "stub-model+t1"

    def __init__(self, fail_every: int = 1) -> None:
        self.fail_every = fail_every
        self.calls = 0

    def prepare(self, prompts) -> None:  # noqa: ANN001 - the Labeler protocol
        pass

    def label(self, batch):  # noqa: ANN001
        out = []
        for record in batch:
            self.calls += 1
            failed = self.calls % self.fail_every == 0
            out.append(LabelOutcome(prompt_hash=record.prompt_hash, error="HTTP 500: down" if failed else None,
                                    is_work=None if failed else False))
        return out


@pytest.mark.parametrize(("fail_every", "code"), [(1, 4), (2, 4), (10**6, 0)])
def test_validate_labeler_exits_non_zero_when_prompts_fail(mirror: Path, monkeypatch, capsys, fail_every, code):
    monkeypatch.setenv("BENCHMAP_MIRROR", str(mirror))
    monkeypatch.setattr(validate_labeler, "build_labeler", lambda args, server=None: _Labeler(fail_every))
    assert validate_labeler.main(["--limit", "4", "--no-cache", "--warehouse", "/nonexistent/w.duckdb"]) == code
    err = capsys.readouterr().err
    assert ("prompts failed to label; the metrics leave them out (exit 4)" in err) == (code == 4)
