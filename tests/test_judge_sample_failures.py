"""The LLM judge's failures are failures (an audit of failures reported as success): a benchmark none of whose
sampled texts the judge labeled fails the step instead of quietly using the vendored reference, and texts it
failed on count in run_all's open failures (exit 4) and are retried, like the labeler's."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from dagster import DagsterInstance, materialize

from models.labeling.base import LabelOutcome, TaskLabel


class _Judge:
    name, model, template_version, labeler_version = "openai", "judge-model", "t1", "judge-model+t1"

    def __init__(self, fails: set[str]) -> None:
        self.fails = fails

    def prepare(self, prompts) -> None:  # noqa: ANN001 - the Labeler protocol
        pass

    def label(self, batch):  # noqa: ANN001
        return [LabelOutcome(r.prompt_hash, error="HTTP 500: down") if r.prompt_hash in self.fails else
                LabelOutcome(r.prompt_hash, [TaskLabel(task_id=1, onet_soc_code="15-1252.00", rank=1, score=1.0)])
                for r in batch]


class _JudgeResource:
    kind = "openai"

    model = "judge-model"

    def __init__(self, fails: set[str]) -> None:
        self.fails = fails

    def build(self, index):  # noqa: ANN001
        return _Judge(self.fails)


def _materialize(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: set[str], resource: object = None):
    import assets.judge_sample as js
    import assets.labels as labels
    from resources.dagster_resources import Warehouse

    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "benchmap.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("create table benchmark_prompts as select 'b' as benchmark, 'p' || i as prompt_id, "
                    "'h' || i as prompt_hash, 'work text ' || i as prompt from range(6) t(i)")
    monkeypatch.setattr(js, "judge_sample_setting", lambda value=None: (1.0, 1))  # judge every text
    monkeypatch.setattr(js, "labeler_resource_for_judge", lambda: resource or _JudgeResource(fails))
    monkeypatch.setattr(labels, "load_task_index", lambda warehouse, log: (None, None, None))
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("benchmark", ["b"])
    result = materialize([js.judge_sample], partition_key="b", instance=instance, raise_on_error=False,
                         resources={"warehouse": Warehouse(path=str(path))})
    return result, path


def test_a_judge_that_labels_none_of_a_benchmarks_sample_fails_the_step(tmp_path, monkeypatch):
    result, _ = _materialize(tmp_path, monkeypatch, {f"h{i}" for i in range(6)})
    assert not result.success  # it succeeded, and the estimates fell back to the vendored reference
    failure = next(e for e in result.all_events if e.is_step_failure).step_failure_data.error
    assert "labeled none of the sampled texts of b (6 texts" in failure.message
    # and why, not only where to look (a probe: "label_failures says why")
    assert "6 texts; the last error: HTTP 500: down; label_failures holds each)" in failure.message
    from pipelines import run_report as rr

    assert not rr.failed_after_writing(result)  # nothing written: a failed step for run_all (exit 1)


def test_run_alls_lines_count_the_texts_of_a_lost_sample(tmp_path, monkeypatch):
    """An audit: with the judge's step failed (no design written) run_all's closing line said "0 failed"."""
    from pipelines import run_report as rr
    from pipelines.step_runner import Runner

    result, _ = _materialize(tmp_path, monkeypatch, {f"h{i}" for i in range(6)})
    assert rr.failure_metadata_value(result, "n_failed_by_benchmark") == [{"b": 6}]
    runner = Runner.__new__(Runner)  # its counting only: no definitions or instance needed
    runner.totals = {"n_prompts": 0, "n_results": 0, "n_rejects": 0, "labeler_calls": 0, "n_labeled": 0,
                     "n_failed": 0, "judge_failed": 0, "judge_labeled": 0}
    assert "the judge FAILED on 6 sampled texts" in runner.partition_detail("b", result)
    assert runner.partition_detail("other", result).count("judge") == 0  # another benchmark's line: none of b's
    assert runner.totals["judge_failed"] == 6


def test_texts_the_judge_failed_on_count_as_open_failures_of_the_run(tmp_path, monkeypatch):
    from pipelines import run_report as rr
    from pipelines.run_steps import judge_failures, judge_of_the_run
    from resources.label_cache import LabelCache

    result, path = _materialize(tmp_path, monkeypatch, {"h1", "h4"})
    # its tables written (the estimates use the other texts), and still a failure of the run: it was a SUCCESS
    assert not result.success and rr.failed_after_writing(result)
    assert rr.failure_metadata_value(result, "prompts_failed_after_writing") == [{"b": 2}]
    assert {e.asset_key.path[-1] for e in rr.materializations(result)} == {"judge_sample_labels",
                                                                           "judge_sample_design"}
    assert result.output_for_node("judge_sample", "judge_sample_design")["n_failed"].to_list() == [2]

    judge = judge_of_the_run()
    assert judge is not None and judge[0] == "openai"
    # the offline labeler's run with the LLM judge's sample: run_all counts the judge's failed texts (exit 4)
    # from its latest design, and the retry finds its failure rows below the retry limit
    assert LabelCache(path).open_failures_by_benchmark(["b"], "offline") == {}  # what it counted before
    with duckdb.connect(str(path)) as con:  # the asset's design output, as the IO manager would store it
        con.execute("create table judge_sample_design as select 'b' as benchmark, 6 as n_sampled, 2 as n_failed")
    assert judge_failures(str(path), ["b", "other"]) == {"b": 2}
    from resources.dagster_resources import Warehouse

    assert dict(Warehouse(path=str(path)).judge_failed_texts().iter_rows()) == {"b": 2}  # what summary.md names
    cache = LabelCache(path)
    assert cache.open_failures_by_benchmark(["b"], judge[0], labeler_version_prefix=judge[1]) == {"b": 2}
    # an earlier openai labeler's failures with another model are not the judge's
    assert cache.open_failures_by_benchmark(["b"], "openai", labeler_version_prefix="other-model+") == {}
    # a malformed BENCHMAP_JUDGE_SAMPLE does not crash run_all's closing count (the step reports it)
    import assets.judge_sample as js

    def malformed() -> None:  # as labeler_resource_for_judge does with BENCHMAP_JUDGE_SAMPLE=10%
        raise ValueError("BENCHMAP_JUDGE_SAMPLE='10%': expected a fraction in [0, 1]")

    monkeypatch.setattr(js, "labeler_resource_for_judge", malformed)
    assert judge_of_the_run() is None and judge_failures(str(path), ["b"]) == {}


def test_a_range_run_gives_each_partition_its_own_failure_count(tmp_path, monkeypatch):
    """An audit: in a run of several benchmarks each partition's judge_sample_labels said the range's n_failed (7
    for benchmarks the judge never failed on) and each design record showed every benchmark's rows."""
    import assets.judge_sample as js
    import assets.labels as labels
    from resources.dagster_resources import Warehouse
    from resources.io_manager import WarehouseIOManager

    path = tmp_path / "benchmap.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("create table benchmark_prompts as select b as benchmark, 'p' || i as prompt_id, "
                    "b || '-h' || i as prompt_hash, 'work text ' || b || i as prompt from range(6) t(i), "
                    "(values ('b'), ('c')) v(b)")
    monkeypatch.setattr(js, "judge_sample_setting", lambda value=None: (1.0, 1))
    monkeypatch.setattr(js, "labeler_resource_for_judge", lambda: _JudgeResource({"b-h1", "b-h4"}))
    monkeypatch.setattr(labels, "load_task_index", lambda warehouse, log: (None, None, None))
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("benchmark", ["b", "c"])
    warehouse = Warehouse(path=str(path))
    result = materialize([js.judge_sample], instance=instance,
                         resources={"warehouse": warehouse, "io_manager": WarehouseIOManager(warehouse=warehouse)},
                         tags={"dagster/asset_partition_range_start": "b", "dagster/asset_partition_range_end": "c"},
                         raise_on_error=False)
    from pipelines import run_report as rr

    assert rr.failed_after_writing(result)  # written, then failed for b's 2 texts alone
    assert rr.failure_metadata_value(result, "prompts_failed_after_writing") == [{"b": 2}]
    records = {(e.asset_key.path[-1], e.partition): e.metadata for e in
               (ev.event_specific_data.materialization for ev in result.get_asset_materialization_events())}
    assert records[("judge_sample_labels", "b")]["n_failed"].value == 2
    assert records[("judge_sample_labels", "c")]["n_failed"].value == 0
    assert "| c " not in records[("judge_sample_design", "b")]["design"].value
    assert "| b " not in records[("judge_sample_design", "c")]["design"].value


def test_a_text_the_judge_gave_up_on_fails_the_step_and_is_asked_again_when_forced(tmp_path, monkeypatch):
    """A probe of the labeler's side: after MAX_LABEL_RUNS failed runs a text is not asked again, and the step
    then asked nothing and succeeded. The judge's step still fails for it, and a run tagged
    benchmap/retry_given_up=1 (what `run_all --force` sets) asks for it again."""
    import assets.judge_sample as js
    import assets.labels as labels
    from assets.written_with_failures import RETRY_GIVEN_UP_TAG
    from models.labeling.limits import MAX_LABEL_RUNS
    from pipelines import run_report as rr
    from resources.dagster_resources import Warehouse

    asked: list[str] = []

    class CountingJudge(_Judge):
        def label(self, batch):  # noqa: ANN001
            asked.extend(r.prompt_hash for r in batch)
            return super().label(batch)

    class CountingResource(_JudgeResource):
        def build(self, index):  # noqa: ANN001
            return CountingJudge(self.fails)

    path = tmp_path / "benchmap.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("create table benchmark_prompts as select 'b' as benchmark, 'p' || i as prompt_id, "
                    "'h' || i as prompt_hash, 'work text ' || i as prompt from range(6) t(i)")
    monkeypatch.setattr(js, "judge_sample_setting", lambda value=None: (1.0, 1))
    monkeypatch.setattr(js, "labeler_resource_for_judge", lambda: CountingResource({"h1"}))
    monkeypatch.setattr(labels, "load_task_index", lambda warehouse, log: (None, None, None))
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("benchmark", ["b"])

    def run(tags=None):  # noqa: ANN001, ANN202
        asked.clear()
        return materialize([js.judge_sample], partition_key="b", instance=instance, raise_on_error=False,
                           resources={"warehouse": Warehouse(path=str(path))}, tags=tags)

    assert rr.failed_after_writing(run()) and sorted(asked) == [f"h{i}" for i in range(6)]
    for _ in range(MAX_LABEL_RUNS - 1):
        assert rr.failed_after_writing(run()) and asked == ["h1"]
    given_up = run()
    assert asked == [] and rr.failed_after_writing(given_up)  # not asked, and still no success
    assert rr.failure_metadata_value(given_up, "prompts_failed_after_writing") == [{"b": 1}]
    forced = run({RETRY_GIVEN_UP_TAG: "1"})
    assert asked == ["h1"] and rr.failed_after_writing(forced)


def test_a_benchmark_whose_sample_the_judge_lost_counts_in_every_later_runs_open_failures(tmp_path, monkeypatch):
    """A probe (2026-12-07): the judge lost benchmark a's sample (its step failed; no design written), and a later
    `run_all --benchmarks b` published a from the vendored reference with exit 0, because the judge's open
    failures were read from the design rows of the run's own benchmarks only. A landed benchmark with no design,
    while a judge sample is configured, is short of its whole sample."""
    import assets.judge_sample as js
    from pipelines.run_steps import judge_failures
    from resources.dagster_resources import Warehouse

    path = tmp_path / "benchmap.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("create table benchmark_prompts as select b.benchmark, 'p' || i as prompt_id, "
                    "b.benchmark || (i % 20) as prompt_hash, 'text' as prompt from range(30) t(i), "
                    "(values ('a'), ('b'), ('c')) b(benchmark)")  # 20 distinct texts each
        con.execute("create table judge_sample_design as select * from (values ('b', 5, 0), ('c', 5, 2)) "
                    "d(benchmark, n_sampled, n_failed)")
    monkeypatch.setattr(js, "judge_sample_setting", lambda value=None: (0.2, 3))  # max(3, ceil(0.2 * 20)) = 4
    monkeypatch.setattr(js, "labeler_resource_for_judge", lambda: _JudgeResource(set()))
    assert judge_failures(str(path), ["b"]) == {}  # b's own sample is whole
    assert judge_failures(str(path), ["a", "b", "c"]) == {"a": 4, "c": 2}  # what a released run now counts
    monkeypatch.setattr(js, "judge_sample_setting", lambda value=None: (0.01, 30))  # the minimum, capped at N
    assert judge_failures(str(path), ["a"]) == {"a": 20}
    # what summary.md names under the answer
    from assets.judge_sample import configured_sample

    assert dict(Warehouse(path=str(path)).judge_failed_texts(configured_sample()).iter_rows()) == {"a": 20, "c": 2}
    # no judge configured: the vendored reference is the sample of every benchmark, and nothing is open
    monkeypatch.setattr(js, "labeler_resource_for_judge", lambda: None)
    assert judge_failures(str(path), ["a", "b", "c"]) == {} and configured_sample() is None
    assert dict(Warehouse(path=str(path)).judge_failed_texts(configured_sample()).iter_rows()) == {"c": 2}


def test_a_judge_that_reads_every_sampled_text_as_not_work_is_named_in_the_runs_line(tmp_path, monkeypatch):
    """A probe (2026-12-07): a judge answering "no task" to every sampled text emptied the benchmark's estimates,
    and the run said so only in summary.md's "Counted but adding to no task". The step warns and run_all's line
    for the benchmark says it; a sample with one work text among them is not named."""
    from pipelines.step_runner import Runner

    class NoWorkJudge(_Judge):
        def label(self, batch):  # noqa: ANN001
            return [LabelOutcome(r.prompt_hash, [] if r.prompt_hash not in self.fails else
                                 [TaskLabel(task_id=1, onet_soc_code="15-1252.00", rank=1, score=1.0)]) for r in batch]

    class NoWorkResource(_JudgeResource):
        def build(self, index):  # noqa: ANN001
            return NoWorkJudge(self.fails)

    runner = Runner.__new__(Runner)  # its counting only
    runner.totals = {"n_prompts": 0, "n_results": 0, "n_rejects": 0, "labeler_calls": 0, "n_labeled": 0,
                     "n_failed": 0, "judge_failed": 0, "judge_labeled": 0}
    for work_texts, named in ((set(), True), ({"h3"}, False)):
        result, _ = _materialize(tmp_path / str(named), monkeypatch, set(), resource=NoWorkResource(work_texts))
        assert result.success
        line = runner.partition_detail("b", result)
        assert ("the judge read all 6 sampled texts as NOT WORK, so it counts no task" in line) is named, line
        assert "the judge labeled 6 sampled texts" in line
        from pipelines import run_report as rr

        assert rr.metadata_value(result, "judge_sample_labels", "judged_all_not_work") == ({"b": 6} if named else {})
