"""What run_all's closing line says of prompts without labels (an audit of the LLM path): it named exit 4 when
the process exited 1 (a step failed), so the line contradicted the exit code."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipelines import run_summary


def _closing_line(capsys: pytest.CaptureFixture, failures: list[str], judge_failed: int = 0) -> str:
    runner = SimpleNamespace(totals={"n_prompts": 8, "n_results": 0, "n_rejects": 0, "n_labeled": 6, "n_failed": 2,
                                     "judge_failed": judge_failed},
                             failures=failures, failed_error_checks=[], label_failed_steps=[])
    run_summary.print_summary(runner, ["bench"], None, Path("run.log"), time.monotonic(),  # type: ignore[arg-type]
                           skip_analysis=True, unlabeled=2)
    return next(line for line in capsys.readouterr().out.splitlines() if line.startswith("done in"))


def test_the_closing_line_names_exit_4_only_when_the_run_exits_4(capsys: pytest.CaptureFixture) -> None:
    line = _closing_line(capsys, [])
    assert line.endswith("6 labeled, 2 failed (see label_failures; 2 prompts without labels, exit 4)")
    line = _closing_line(capsys, ["[1/1] bench: prompt_task_labels: LabelerConfigError"])
    assert "1 step(s) FAILED" in line and line.endswith("(see label_failures; 2 prompts without labels)")
    assert "exit 4" not in line


def test_the_closing_line_counts_the_texts_of_a_sample_the_judge_lost(capsys: pytest.CaptureFixture) -> None:
    """An audit of the LLM path: a judge step that labeled none of a benchmark's sample fails (exit 1) and writes
    no design, and the line said only "6 labeled, 2 failed" (the labeler's)."""
    line = _closing_line(capsys, ["[1/1] bench: judge_sample: labeled none"], judge_failed=5)
    assert "6 labeled, 2 failed, the judge failed on 5 sampled texts (see label_failures" in line
    assert "judge" not in _closing_line(capsys, [])

    # the usual lost case: no labeler failure and no design to count from, still pointed to label_failures
    runner = SimpleNamespace(totals={"n_prompts": 8, "n_results": 0, "n_rejects": 0, "n_labeled": 6, "n_failed": 0,
                                     "judge_failed": 5}, failures=["[1/1] bench: judge_sample"], failed_error_checks=[],
                             label_failed_steps=[])
    run_summary.print_summary(runner, ["bench"], None, Path("run.log"), time.monotonic(),  # type: ignore[arg-type]
                           skip_analysis=True, unlabeled=0)
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("done in"))
    assert line.endswith("6 labeled, 0 failed, the judge failed on 5 sampled texts (see label_failures)")


def test_the_closing_line_tells_texts_the_judge_failed_on_from_prompts_without_labels(
        capsys: pytest.CaptureFixture) -> None:
    """A probe: the judge failing on 6 sampled texts read "12 labeled, 0 failed (see label_failures; 6 prompts
    without labels, exit 4)", of prompts that all had labels."""
    runner = SimpleNamespace(totals={"n_prompts": 12, "n_results": 0, "n_rejects": 0, "n_labeled": 12, "n_failed": 0,
                                     "judge_failed": 0}, failures=[], failed_error_checks=[], label_failed_steps=["b"])
    run_summary.print_summary(runner, ["bench"], None, Path("run.log"), time.monotonic(),  # type: ignore[arg-type]
                           skip_analysis=True, unlabeled=0, unjudged={"bench": 6})
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("done in"))
    assert line.endswith("12 labeled, 0 failed (see label_failures; 6 sampled texts without the judge's reading, "
                         "exit 4)"), line
    assert "1 labeling step FAILED on some prompts" in line


def test_a_failed_completeness_check_names_the_benchmarks_without_labels(capsys: pytest.CaptureFixture) -> None:
    """A probe: a run whose own benchmark was fully labeled exited 6 on `prompt_task_labels_complete`, and
    nothing on the console said that another benchmark's prompts were the ones without labels. Prompts without
    labels are exit 4's cause, wherever they are; another ERROR check beside it is still exit 6."""
    import polars as pl

    warehouse = SimpleNamespace(undecided_prompts=lambda: pl.DataFrame({"benchmark": ["other"], "n": [3]}))
    runner = SimpleNamespace(totals={"n_prompts": 8, "n_results": 0, "n_rejects": 0, "n_labeled": 8, "n_failed": 0,
                                     "judge_failed": 0}, failures=[], label_failed_steps=[],
                             failed_error_checks=["analysis: prompt_task_labels:prompt_task_labels_complete (ERROR)"],
                             resources={"warehouse": warehouse})
    run_summary.print_summary(runner, ["bench"], None, Path("run.log"), time.monotonic(),  # type: ignore[arg-type]
                           skip_analysis=True)
    err = capsys.readouterr().err
    assert "prompt_task_labels_complete (ERROR) (exit 4)" in err and run_summary.exit_code(runner, 0, 0) == 4
    assert ("prompts without labels: other 3 prompts (other not in this run: `python -m pipelines.run_all --force "
            "--benchmarks other` asks for them again)") in err, err

    runner.failed_error_checks.append("analysis: estimates:estimate_figures_drawn (ERROR)")
    run_summary.print_summary(runner, ["bench"], None, Path("run.log"), time.monotonic(),  # type: ignore[arg-type]
                              skip_analysis=True)
    err = capsys.readouterr().err
    assert "estimate_figures_drawn (ERROR) (exit 6)" in err and run_summary.exit_code(runner, 0, 0) == 6
    runner.failed_error_checks = []
    assert run_summary.exit_code(runner, 0, 0) == 0 and run_summary.exit_code(runner, 0, 2) == 4


def test_the_release_line_says_when_no_new_release_was_written(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture) -> None:
    """A probe: `--force` with the same figures wrote no release (the exports step said "release ... stands") while
    the console printed the standing release as if this run had made it."""
    release = tmp_path / "exports" / "2026-12-07T094113Z-beb683e6"
    release.mkdir(parents=True)
    (release / "manifest.json").write_text("{}")
    (tmp_path / "exports" / "latest.txt").write_text(release.name)
    runner = SimpleNamespace(totals={"n_prompts": 8, "n_results": 0, "n_rejects": 0, "n_labeled": 0, "n_failed": 0,
                                     "judge_failed": 0}, failures=[], label_failed_steps=[], failed_error_checks=[])
    warehouse = str(tmp_path / "benchmap.duckdb")
    _, line = run_summary.print_summary(runner, ["bench"], warehouse, Path("run.log"),  # type: ignore[arg-type]
                                     time.monotonic(), skip_analysis=False, release_before=release)
    assert line is not None and "still the newest: this run's figures and tables are the same, so no new release" in line
    _, line = run_summary.print_summary(runner, ["bench"], warehouse, Path("run.log"),  # type: ignore[arg-type]
                                     time.monotonic(), skip_analysis=False, release_before=None)
    assert line == f"release: {release} (newest; also {release.parent / 'latest'})"
    capsys.readouterr()


def test_a_failed_check_prints_the_file_and_line_its_errors_name() -> None:
    """A typo in an index file printed only `CHECK FAILED ...benchmark_index_files_valid (ERROR)`: the file and
    line were in Dagster's log alone (a probe, 2026-12-07)."""
    from dagster import AssetKey, JsonMetadataValue

    from pipelines import run_report as rr

    said = {"economic_agentic": "data/indexes/economic_agentic.toml, line 87: benchmark 'webshopp', which was "
                                "never landed\nmore", "other": "x", "third": "y", "fourth": "z"}
    evaluation = SimpleNamespace(asset_key=AssetKey("benchmark_index_membership"), check_name="benchmark_index_files_valid",
                                 passed=False, metadata={"errors": JsonMetadataValue(said)},
                                 severity=SimpleNamespace(value="ERROR"))
    result = SimpleNamespace(get_asset_check_evaluations=lambda: [evaluation])
    [failed] = rr.failed_evaluations(result)  # type: ignore[arg-type]
    errors = rr.check_errors(failed)
    assert len(errors) == 3 and errors[0].startswith("data/indexes/economic_agentic.toml, line 87: benchmark 'webshopp'")
    evaluation.passed = True
    assert rr.failed_evaluations(result) == []  # type: ignore[arg-type]  # a passed check: no lines


def test_a_failed_step_is_named_once_before_its_reason() -> None:
    """run_all printed "FAILED exports: exports: not run, nothing published ...": a gate's description opens with
    its step already (a probe, 2026-12-07); another step's reason gets its name in front."""
    from dagster import DagsterEventType

    from pipelines import run_report as rr

    def failure(step: str, message: str) -> SimpleNamespace:
        error = SimpleNamespace(message=rr.FAILURE_PREFIX + message, cause=None)
        return SimpleNamespace(event_type=DagsterEventType.STEP_FAILURE, step_key=step, message="",
                               event_specific_data=SimpleNamespace(error=error))

    result = SimpleNamespace(all_events=[failure("exports", "exports: not run, nothing published (x): broken"),
                                         failure("task_coverage", "division by zero")])
    assert rr.errors(result) == ["exports: not run, nothing published (x): broken",  # type: ignore[arg-type]
                                 "task_coverage: division by zero"]
