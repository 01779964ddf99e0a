"""The labeling stage: cache, resume after a crash, failures, and (end to end) labels of real benchmarks."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from assets import module_assets, module_checks
from models.labeling import cache as lc
from models.labeling.base import LabelOutcome, PromptRecord, TaskLabel
from models.reference_labels import REFERENCE_SCHEMA
from resources import label_cache
from resources import label_queries as lq
from resources import warehouse as wh
from resources.label_cache import LabelCache


class FakeLabeler:
    """Counts the prompts it labels; fails the prompts in `fail`; crashes on call number `crash_on_call`."""

    name = "fake"
    model = "fake-model"
    template_version = "t1"

    def __init__(self, fail: set[str] | None = None, crash_on_call: int | None = None) -> None:
        self.fail = fail or set()
        self.crash_on_call = crash_on_call
        self.calls = 0
        self.prompts_seen: list[str] = []
        self.prepared: list[str] = []  # the prompts `prepare` was shown, before any label call

    @property
    def labeler_version(self) -> str:
        return f"{self.model}+{self.template_version}"

    def prepare(self, prompts: list[PromptRecord]) -> None:  # no benchmark context: records what it was shown
        assert self.calls == 0, "prepare comes before the first label call"
        self.prepared = [p.prompt_id for p in prompts]

    def label(self, prompts: list[PromptRecord]) -> list[LabelOutcome]:
        self.calls += 1
        if self.crash_on_call is not None and self.calls == self.crash_on_call:
            raise KeyboardInterrupt("killed mid-run")
        self.prompts_seen += [p.prompt_id for p in prompts]
        out = []
        for p in prompts:
            if p.prompt_id in self.fail:
                out.append(
                    LabelOutcome(
                        p.prompt_hash, error="model answer was not JSON", attempts=3, input_tokens=100
                    )
                )
            else:
                n = int(p.prompt_id[1:])
                out.append(
                    LabelOutcome(
                        p.prompt_hash,
                        [
                            TaskLabel(1000 + n, "15-1252.00", 1, 0.9, "why"),
                            TaskLabel(2000 + n, "13-2011.00", 2, 0.5),
                        ],
                        input_tokens=1000,
                        output_tokens=200,
                    )
                )
        return out


def records(n: int, benchmark: str = "b") -> list[PromptRecord]:
    return [PromptRecord(benchmark, f"p{i}", f"hash{i}", f"prompt {i}") for i in range(n)]


def test_cache_roundtrip_batches_and_second_run_zero_calls(warehouse_path: Path) -> None:
    cache = LabelCache(warehouse_path)
    labeler = FakeLabeler()
    prompts = records(10) + [PromptRecord("b", "dup", "hash3", "prompt 3")]  # same text as p3
    messages: list[str] = []
    labels, stats = lc.label_with_cache(
        prompts, labeler, cache, "29.2", batch_size=4, progress_every=4, log_fn=messages.append
    )
    assert labeler.prompts_seen == [f"p{i}" for i in range(10)]  # the duplicate hash is labeled once
    assert (stats.n_unique, stats.n_cached, stats.n_labeled, stats.labeler_calls, stats.n_batches) == (
        10,
        0,
        10,
        10,
        3,
    )
    assert (stats.input_tokens, stats.output_tokens) == (10_000, 2_000)
    assert stats.estimated_cost_usd is None  # tokens were used but fake-model has no price
    assert labels["hash7"] == [
        TaskLabel(1007, "15-1252.00", 1, 0.9, "why"),
        TaskLabel(2007, "13-2011.00", 2, 0.5),
    ]
    progress = [m for m in messages if m.startswith("labeled")]
    assert [m.split(" prompts")[0] for m in progress] == ["labeled 4/10", "labeled 8/10", "labeled 10/10"]
    assert all("prompts/s, ETA" in m for m in progress)
    with wh.connect(warehouse_path, read_only=True) as con:
        assert con.execute("select count(*) from label_cache").fetchone()[0] == 10

    frame = lc.labels_frame(prompts, labels, labeler.name, labeler.labeler_version)
    assert frame.height == 22 and list(frame.columns) == list(lc.LABEL_COLUMNS)
    assert frame.filter(pl.col("prompt_id") == "dup")["task_id"].to_list() == [1003, 2003]

    assert labeler.prepared == [p.prompt_id for p in prompts]  # every prompt, the duplicate too

    again = FakeLabeler()
    labels2, stats2 = lc.label_with_cache(prompts, again, cache, "29.2", batch_size=4)
    assert again.calls == 0 and stats2.labeler_calls == 0 and stats2.n_cached == 10
    assert again.prepared == []  # nothing to label: no context is built
    grown = FakeLabeler()  # one new prompt: the context is pooled from all of them, cached ones included
    lc.label_with_cache([*prompts, PromptRecord("b", "p10", "hash10", "prompt 10")], grown, cache, "29.2")
    assert grown.prompts_seen == ["p10"] and len(grown.prepared) == len(prompts) + 1
    assert labels2 == labels
    # another O*NET version or template version is another cache key: everything is labeled again
    other = FakeLabeler()
    other.template_version = "t2"
    lc.label_with_cache(prompts, other, cache, "29.2")
    assert len(other.prompts_seen) == 10


def test_cost_estimate_uses_list_prices() -> None:
    assert lc.estimate_cost_usd("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert lc.estimate_cost_usd("gpt-4o-mini-2024-07-18", 2_000_000, 0) == pytest.approx(0.30)
    assert lc.estimate_cost_usd("my-local-model", 10, 10) is None
    assert lc.estimate_cost_usd("offline", 0, 0) == 0.0


def test_kill_mid_run_keeps_completed_batches_and_resumes(warehouse_path: Path) -> None:
    cache = LabelCache(warehouse_path)
    prompts = records(10)
    crashing = FakeLabeler(crash_on_call=3)  # batches 1 and 2 (p0..p5) complete, the third call dies
    with pytest.raises(KeyboardInterrupt):
        lc.label_with_cache(prompts, crashing, cache, "29.2", batch_size=3)
    key = lc.CacheKey("29.2", "fake", "fake-model", "t1")
    assert sorted(cache.read(key)) == [f"hash{i}" for i in range(6)]

    resumed = FakeLabeler()
    labels, stats = lc.label_with_cache(prompts, resumed, cache, "29.2", batch_size=3)
    assert resumed.prompts_seen == ["p6", "p7", "p8", "p9"]
    assert (stats.n_cached, stats.n_labeled) == (6, 4)
    assert sorted(labels) == sorted(p.prompt_hash for p in prompts)
    assert FakeLabeler().calls == 0


def test_failed_batch_write_is_rolled_back(warehouse_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch is one transaction: if writing it fails, none of its labels or failures are kept."""
    cache = LabelCache(warehouse_path)
    lc.label_with_cache(records(2), FakeLabeler(), cache, "29.2", batch_size=2)
    original = lc.labels_to_json
    calls = {"n": 0}

    def broken(labels):  # serialises fine, but the insert then meets a NOT NULL violation
        calls["n"] += 1
        return None if calls["n"] == 2 else original(labels)

    monkeypatch.setattr(label_cache, "labels_to_json", broken)  # where the store serialises a batch
    with pytest.raises(Exception, match="(?i)not.null|constraint"):
        lc.label_with_cache(records(6), FakeLabeler(fail={"p5"}), cache, "29.2", batch_size=4)
    key = lc.CacheKey("29.2", "fake", "fake-model", "t1")
    assert sorted(cache.read(key)) == ["hash0", "hash1"]
    assert cache.failures().is_empty()


def test_failures_are_recorded_not_cached_and_retried(warehouse_path: Path) -> None:
    cache = LabelCache(warehouse_path)
    prompts = records(5)
    first = FakeLabeler(fail={"p1", "p3"})
    labels, stats = lc.label_with_cache(prompts, first, cache, "29.2", batch_size=2)
    assert stats.n_failed == 2 and stats.n_labeled == 3
    assert "hash1" not in labels and "hash3" not in labels
    failures = cache.failures()
    assert failures.select("prompt_id", "attempts", "labeler_version").rows() == [
        ("p1", 3, "fake-model+t1"),
        ("p3", 3, "fake-model+t1"),
    ]
    assert set(failures.columns) == {
        "prompt_hash",
        "benchmark",
        "prompt_id",
        "labeler",
        "labeler_version",
        "error",
        "attempts",
        "failed_at",
        "runs",  # labeling runs in which the prompt failed: bounded retries (MAX_LABEL_RUNS)
    }

    second = FakeLabeler(fail={"p3"})  # p1 now succeeds, p3 fails again
    _, stats2 = lc.label_with_cache(prompts, second, cache, "29.2", batch_size=2)
    assert second.prompts_seen == ["p1", "p3"]
    assert (stats2.n_labeled, stats2.n_failed) == (1, 1)
    failures = cache.failures()
    assert failures.select("prompt_id", "attempts", "runs").rows() == [("p3", 6, 2)]  # both accumulate across runs

    third = FakeLabeler()
    lc.label_with_cache(prompts, third, cache, "29.2", batch_size=2)
    assert third.prompts_seen == ["p3"] and cache.failures().is_empty()


def test_progress_rate_and_eta() -> None:
    now = {"t": 0.0}
    logged: list[str] = []
    progress = lc.Progress(total=1000, every=250, log=logged.append, clock=lambda: now["t"])
    now["t"] = 10.0
    progress.update(100)
    assert logged == []
    now["t"] = 20.0
    progress.update(200)  # 300 done in 20 s: 15/s, 700 left -> 46.7 s
    assert logged == ["labeled 300/1000 prompts (30.0%), 15.0 prompts/s, ETA 0m47s"]
    now["t"] = 60.0
    progress.update(700)
    assert logged[-1] == "labeled 1000/1000 prompts (100.0%), 16.7 prompts/s, ETA 0m00s"
    assert len(logged) == 2


# --- end to end: real benchmarks, the real offline labeler, a temporary warehouse ---------------------------

E2E_BENCHMARKS = ("gdpval", "theagentcompany", "jobbench")
REFERENCE_TABLES = {
    "onet_tasks",
    "oews_wages",
    "onet_occupations",
    "onet_job_titles",
    "onet_technology_skills",
}


class CountingLabeler:
    """Wraps a real labeler and counts the prompts it is asked to label (shared counter)."""

    def __init__(self, inner, counter: list[int]) -> None:
        self.inner = inner
        self.counter = counter
        self.name = inner.name
        self.model = inner.model
        self.template_version = inner.template_version

    @property
    def labeler_version(self) -> str:
        return self.inner.labeler_version

    def label(self, prompts: list[PromptRecord]) -> list[LabelOutcome]:
        self.counter[0] += len(prompts)
        return self.inner.label(prompts)

    def prepare(self, prompts: list[PromptRecord]) -> None:  # the benchmark context (no labeler call)
        getattr(self.inner, "prepare", lambda _prompts: None)(prompts)

    def context_digests(self, prompts: list[PromptRecord]) -> dict[str, str]:  # what the cache checks
        return getattr(self.inner, "context_digests", lambda _prompts: {})(prompts)


class E2E:
    """Materializes assets into one temporary warehouse with a counting offline labeler."""

    def __init__(self, root: Path) -> None:
        from dagster import ConfigurableResource, DagsterInstance

        from assets import benchmarks, label_validation, labeler_agreement, labels, reference
        from resources.dagster_resources import LabelerResource, Warehouse
        from resources.io_manager import WarehouseIOManager

        counter = [0]
        self.counter = counter

        class CountingLabelerResource(LabelerResource):
            def build(self, index):  # noqa: ANN001, ANN201
                return CountingLabeler(super().build(index), counter)

        assert issubclass(CountingLabelerResource, ConfigurableResource)
        self.warehouse = Warehouse(path=str(root / "warehouse" / "benchmap.duckdb"))
        self.resources = {
            "warehouse": self.warehouse,
            "io_manager": WarehouseIOManager(warehouse=self.warehouse),
            "labeler": CountingLabelerResource(kind="offline", model="offline"),
        }
        self.instance = DagsterInstance.ephemeral()
        self.reference = [a for a in module_assets(reference) if a.key.path[-1] in REFERENCE_TABLES]
        self.benchmark_assets = module_assets(benchmarks)
        self.labels = labels
        self.validation = label_validation
        self.agreement = labeler_agreement.labeler_agreement

    def materialize(
        self, assets: list, *, partition: str | None = None, selection: list | None = None, run_config=None
    ):
        from dagster import materialize

        result = materialize(
            assets,
            partition_key=partition,
            resources=self.resources,
            instance=self.instance,
            selection=selection,
            run_config=run_config,
            raise_on_error=True,
        )
        assert result.success
        return result

    def ingest_and_label(self, name: str) -> int:
        """Ingest one benchmark partition and label it; returns the labeler calls made by the labeling."""
        self.instance.add_dynamic_partitions("benchmark", [name])
        self.materialize(self.benchmark_assets, partition=name)
        before = self.counter[0]
        result = self.materialize(
            [
                self.labels.prompt_task_labels,
                *module_checks(self.labels),
                *self.benchmark_assets,
                self.labels.task_search_index,
                *self.reference,
            ],
            partition=name,
            selection=[self.labels.prompt_task_labels],
        )
        self.last_label_run = result
        return self.counter[0] - before

    def validate(self) -> pl.DataFrame:
        from assets import gold_labels as gl

        lab = self.validation
        unpartitioned = [gl.gold_task_labels, lab.reference_task_labels, lab.labeler_validation, self.agreement]
        self.last_validation_run = self.materialize(
            [*unpartitioned, *module_checks(self.labels), *module_checks(lab), *self.reference], selection=unpartitioned
        )
        return self.warehouse.read_table("labeler_validation")


@pytest.fixture(scope="module")
def e2e(tmp_path_factory: pytest.TempPathFactory, mirror: Path):
    root = tmp_path_factory.mktemp("e2e")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHMAP_RAW_DIR", str(root / "raw"))
        mp.setenv("BENCHMAP_OFFLINE", "1")
        run = E2E(root)
        run.materialize([*run.reference, run.labels.task_search_index])
        run.first_calls = {name: run.ingest_and_label(name) for name in E2E_BENCHMARKS}
        run.root = root
        yield run


def test_e2e_labels_are_real_tasks_and_cached(e2e: E2E) -> None:
    prompts = e2e.warehouse.read_table("benchmark_prompts")
    distinct = {b: prompts.filter(pl.col("benchmark") == b)["prompt_hash"].n_unique() for b in E2E_BENCHMARKS}
    # the first run labels each distinct prompt text once (a text shared with an earlier benchmark is cached)
    assert sum(e2e.first_calls.values()) == prompts["prompt_hash"].n_unique()
    assert e2e.first_calls["gdpval"] == distinct["gdpval"]

    labels = e2e.warehouse.read_table("prompt_task_labels")
    tasks = e2e.warehouse.read_table("onet_tasks")
    unknown = labels.join(tasks, on=["task_id", "onet_soc_code"], how="anti")
    assert labels.height > 0 and unknown.is_empty()
    assert set(labels["benchmark"].unique()) == set(E2E_BENCHMARKS)
    assert labels.group_by("benchmark", "prompt_id").agg(pl.col("rank").min())["rank"].unique().to_list() == [
        1
    ]
    # every prompt labeled (the offline labeler does not fail), none twice
    assert labels.select("benchmark", "prompt_id").unique().height == prompts.height
    assert labels.select("benchmark", "prompt_id", "task_id").is_duplicated().sum() == 0

    again = {name: e2e.ingest_and_label(name) for name in E2E_BENCHMARKS}
    assert again == {name: 0 for name in E2E_BENCHMARKS}
    assert (
        e2e.warehouse.read_table("prompt_task_labels")
        .sort(labels.columns)
        .equals(labels.sort(labels.columns))
    )


def test_e2e_validation_against_human_labels(e2e: E2E) -> None:
    table = e2e.validate()
    got = {(r["benchmark"], r["metric"]): r for r in table.iter_rows(named=True)}
    top5 = got[("gdpval", "occupation_top5")]
    assert top5["n"] == 110
    assert top5["value"] >= 0.70
    assert top5["ci_low"] <= top5["value"] <= top5["ci_high"]
    assert got[("gdpval", "occupation_top1")]["value"] <= top5["value"]
    assert got[("theagentcompany", "occupation_top5")]["n"] == 167  # 174 labeled minus 7 'Other'
    assert got[("jobbench", "task_hit_at10")]["n"] == 6
    for row in table.iter_rows(named=True):
        assert row["ci_low"] <= row["value"] <= row["ci_high"], row
    agreement = e2e.warehouse.read_table("labeler_agreement")
    assert agreement.is_empty()  # one labeler only
    assert e2e.warehouse.read_table("gold_task_labels").is_empty()


def test_e2e_gold_sample_export_and_import(e2e: E2E) -> None:
    """Export an annotation sample, 'annotate' it with each prompt's top candidate, import it: recall and
    hit@1 are then exactly 1 and precision is the mean of 1 / (labels per prompt)."""
    from assets import gold_labels as gl

    e2e.materialize(
        [gl.gold_annotation_sample, *e2e.reference],
        selection=[gl.gold_annotation_sample],
        run_config={"ops": {"gold_annotation_sample": {"config": {"per_benchmark": 4, "top_k": 5}}}},
    )
    exported = Path(e2e.warehouse.path).parent / "annotation" / "gold_annotation_sample.csv"
    sample = pl.read_csv(exported, infer_schema_length=0)
    assert sample.group_by("benchmark").len().sort("benchmark").rows() == [
        (b, 4) for b in sorted(E2E_BENCHMARKS)
    ]
    assert (sample["task_ids"].fill_null("") == "").all() and sample["candidates"].str.contains(r"\| ").all()
    gold_dir = e2e.root / "raw" / "gold_labels"
    gold_dir.mkdir(parents=True, exist_ok=True)
    sample.with_columns(
        pl.col("candidate_task_ids").str.split(";").list.first().alias("task_ids"),
        pl.lit("test").alias("annotator"),
    ).write_csv(gold_dir / "annotator_a.csv")
    table = e2e.validate()
    labels = e2e.warehouse.read_table("prompt_task_labels").join(
        sample.select("benchmark", "prompt_id"), on=["benchmark", "prompt_id"], how="semi"
    )
    expected_precision = (
        labels.group_by("benchmark", "prompt_id").len().select((1 / pl.col("len")).mean()).item()
    )
    got = {(r["benchmark"], r["metric"]): r for r in table.iter_rows(named=True)}
    assert got[("all", "task_recall")]["value"] == 1.0 and got[("all", "task_recall")]["n"] == 12
    assert got[("all", "task_hit_at1")]["value"] == 1.0
    assert got[("all", "task_precision")]["value"] == pytest.approx(expected_precision)
    assert got[("gdpval", "task_f1")]["n"] == 4
    assert e2e.warehouse.read_table("gold_task_labels").height == 12
    (gold_dir / "annotator_a.csv").unlink()


def test_e2e_edited_prompts_relabel_what_a_run_from_scratch_would(e2e: E2E, mirror: Path) -> None:
    """Two edited prompts of a 12-prompt benchmark: the offline labeler's labels depend on the benchmark's context
    (its 300 smallest hashes' texts: here all 12), so its 10 unchanged prompts are labeled again too (before, they
    kept the old context's labels, and a refresh differed from a cold run); then nothing is labeled again."""
    import json

    source = [json.loads(line) for line in (mirror / "benchmarks" / "gdpval" / "prompts.jsonl").open()][:12]
    folder = e2e.root / "raw" / "benchmarks" / "tmpbench"
    folder.mkdir(parents=True)

    def write(records: list[dict]) -> None:
        with (folder / "prompts.jsonl").open("w") as handle:
            for rec in records:
                handle.write(json.dumps({**rec, "benchmark": "tmpbench"}) + "\n")

    records = [{**r, "prompt": r["prompt"] + "\n\nAnswer in British English."} for r in source]
    write(records)
    assert e2e.ingest_and_label("tmpbench") == 12
    records[3] = {**records[3], "prompt": records[3]["prompt"] + " Keep it under one page."}
    records[7] = {**records[7], "prompt": "Summarise the attached audit findings for the board."}
    write(records)
    assert e2e.ingest_and_label("tmpbench") == 12
    assert e2e.ingest_and_label("tmpbench") == 0
    labels = e2e.warehouse.read_table("prompt_task_labels").filter(pl.col("benchmark") == "tmpbench")
    prompts = e2e.warehouse.read_table("benchmark_prompts").filter(pl.col("benchmark") == "tmpbench")
    assert labels.join(prompts, on=["prompt_id", "prompt_hash"], how="anti").is_empty()  # no stale labels
    assert labels["prompt_id"].n_unique() == 12


def test_asset_records_failures_and_fails_when_nothing_labels(
    warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """prompt_task_labels through Dagster with a fake labeler: partial failures -> labels + label_failures +
    metadata; every prompt failing -> the step fails and the stored labels stay."""
    from dagster import DagsterInstance, materialize

    from assets import benchmarks
    from assets import labels as la
    from resources.dagster_resources import LabelerResource, Warehouse
    from resources.io_manager import WarehouseIOManager

    fail: set[str] = {"p1"}

    class FakeResource(LabelerResource):
        def build(self, index):  # noqa: ANN001, ANN201
            return FakeLabeler(fail=fail)

    monkeypatch.setattr(la, "load_task_index", lambda warehouse, log=None: (None, "test", 0.0))
    prompts = pl.DataFrame(
        {
            "benchmark": ["b"] * 4,
            "prompt_id": [f"p{i}" for i in range(4)],
            "prompt": [f"text {i}" for i in range(4)],
            "prompt_hash": [f"h{i}" for i in range(4)],
        }
    )
    wh.replace_table(warehouse_path, "benchmark_prompts", prompts)
    warehouse = Warehouse(path=str(warehouse_path))
    resources = {
        "warehouse": warehouse,
        "io_manager": WarehouseIOManager(warehouse=warehouse),
        "labeler": FakeResource(kind="offline", batch_size=3, progress_every=2),
    }
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("benchmark", ["b"])

    def run():
        return materialize(
            [la.prompt_task_labels, *module_assets(benchmarks)],
            selection=[la.prompt_task_labels],
            partition_key="b",
            resources=resources,
            instance=instance,
            raise_on_error=False,
        )

    result = run()
    # the partial labels written, then the step failed for p1 (a success in Dagster's run list before)
    assert not result.success
    assert "1 of 4 prompts of 'b' have no labels: 1 failed in this run" in str(
        result.failure_data_for_node("prompt_task_labels").user_failure_data.description)
    meta = {
        k: v.value
        for k, v in result.asset_materializations_for_node("prompt_task_labels")[0].metadata.items()
    }
    assert (meta["n_labeled"], meta["n_failed"], meta["labeler_calls"], meta["n_batches"]) == (3, 1, 4, 2)
    assert meta["input_tokens"] == 3100 and "p1" in meta["failures_preview"]
    assert "labeled 4/4 prompts" in meta["progress_log"]
    stored = wh.read_table(warehouse_path, "prompt_task_labels")
    assert sorted(stored["prompt_id"].unique()) == ["p0", "p2", "p3"]
    assert wh.read_table(warehouse_path, "label_failures")["prompt_id"].to_list() == ["p1"]

    fail.update({"p4", "p5"})  # a re-ingest where nothing can be labeled: p1 still fails, p4/p5 are new
    edited = pl.DataFrame(
        {
            "benchmark": ["b"] * 3,
            "prompt_id": ["p1", "p4", "p5"],
            "prompt": ["text 1", "x", "y"],
            "prompt_hash": ["h1", "h4", "h5"],
        }
    )
    wh.replace_table(warehouse_path, "benchmark_prompts", edited)
    result = run()
    assert not result.success
    failure = result.failure_data_for_node("prompt_task_labels")
    assert "every prompt of 'b' failed to label (3 distinct prompts" in str(
        failure.user_failure_data.description
    )
    assert wh.read_table(warehouse_path, "prompt_task_labels").equals(stored)  # left unchanged
    failures = wh.read_table(warehouse_path, "label_failures").sort("prompt_id")
    assert failures.select("prompt_id", "attempts").rows() == [("p1", 6), ("p4", 3), ("p5", 3)]


def test_a_range_run_fails_for_the_partition_whose_prompts_failed_alone(
    warehouse_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """One Dagster run of two benchmarks (run_all's range run), one prompt of b failing: the run fails after
    writing both benchmarks' labels, and run_all's lines say FAILED for b alone (c's prompts all labeled)."""
    from dagster import DagsterInstance, materialize

    from assets import benchmarks
    from assets import labels as la
    from pipelines import run_report as rr
    from pipelines.step_runner import Runner, StepOutcome
    from resources.dagster_resources import LabelerResource, Warehouse
    from resources.io_manager import WarehouseIOManager

    class RangeLabeler(FakeLabeler):
        def prepare(self, prompts: list[PromptRecord]) -> None:  # once per benchmark of the range
            pass

    class FakeResource(LabelerResource):
        def build(self, index):  # noqa: ANN001, ANN201
            return RangeLabeler(fail={"b1"})

    monkeypatch.setattr(la, "load_task_index", lambda warehouse, log=None: (None, "test", 0.0))
    wh.replace_table(warehouse_path, "benchmark_prompts", pl.DataFrame({
        "benchmark": ["b"] * 3 + ["c"] * 3, "prompt_id": ["b0", "b1", "b2", "c0", "c1", "c2"],
        "prompt": [f"text {i}" for i in range(6)], "prompt_hash": [f"h{i}" for i in range(6)]}))
    warehouse = Warehouse(path=str(warehouse_path))
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("benchmark", ["b", "c"])
    result = materialize([la.prompt_task_labels, *module_assets(benchmarks)], selection=[la.prompt_task_labels],
                         instance=instance, raise_on_error=False,
                         resources={"warehouse": warehouse, "io_manager": WarehouseIOManager(warehouse=warehouse),
                                    "labeler": FakeResource(kind="offline", batch_size=3)},
                         tags={"dagster/asset_partition_range_start": "b", "dagster/asset_partition_range_end": "c"})
    assert not result.success and rr.failed_after_writing(result)
    assert rr.failed_prompts_by_benchmark(result) == {"b": 1}
    stored = wh.read_table(warehouse_path, "prompt_task_labels")
    assert sorted(stored["prompt_id"].unique()) == ["b0", "b2", "c0", "c1", "c2"]  # written before the failure

    runner = Runner.__new__(Runner)  # its lines only
    runner.failures, runner.label_failed_steps, runner.failed_error_checks = [], [], []
    for name in ("b", "c"):
        runner.report(f"[-] {name}", StepOutcome(result, 1.0), "its counts", partition=name)
    out = capsys.readouterr().out
    assert "- [-] b: FAILED in 1.0s: its counts" in out and "- [-] c: ok in 1.0s: its counts" in out, out
    assert "1 of 3 prompts of 'b' have no labels: 1 failed in this run" in out
    assert runner.label_failed_steps == ["[-] b"] and runner.failures == []  # counted as exit 4, not exit 1


def test_a_neighbour_step_error_fails_the_step_after_its_labels_are_cached(
    warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The neighbour step of a benchmark runs as soon as its labels are written, while the workers label the
    next ones (a cold run's speed-up); an error it raises there is kept and raised in the benchmark's turn: the
    step fails, nothing is published, and the labels already paid for stay in the cache."""
    from dagster import DagsterInstance, materialize

    from assets import benchmarks
    from assets import labels as la
    from resources.dagster_resources import LabelerResource, Warehouse
    from resources.io_manager import WarehouseIOManager

    class FakeResource(LabelerResource):
        def build(self, index):  # noqa: ANN001, ANN201
            return FakeLabeler(fail=set())

    def broken(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise RuntimeError("neighbour step broke")

    monkeypatch.setattr(la, "load_task_index", lambda warehouse, log=None: (None, "test", 0.0))
    monkeypatch.setattr(la, "neighbour_step", broken)
    prompts = pl.DataFrame({"benchmark": ["b"] * 3, "prompt_id": ["p0", "p1", "p2"],
                            "prompt": ["text 0", "text 1", "text 2"], "prompt_hash": ["h0", "h1", "h2"]})
    wh.replace_table(warehouse_path, "benchmark_prompts", prompts)
    warehouse = Warehouse(path=str(warehouse_path))
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("benchmark", ["b"])
    result = materialize(
        [la.prompt_task_labels, *module_assets(benchmarks)], selection=[la.prompt_task_labels],
        partition_key="b", instance=instance, raise_on_error=False,
        resources={"warehouse": warehouse, "io_manager": WarehouseIOManager(warehouse=warehouse),
                   "labeler": FakeResource(kind="offline", batch_size=3, progress_every=2)})
    assert not result.success
    assert "neighbour step broke" in str(result.failure_data_for_node("prompt_task_labels").error)
    assert not warehouse.table_exists("prompt_task_labels")
    assert wh.read_table(warehouse_path, "label_cache")["prompt_hash"].n_unique() == 3  # kept for the rerun


def test_e2e_agreement_and_validation_with_a_second_labeler(e2e: E2E) -> None:
    """A second labeler in label_cache (here: the offline labels cut to their top task, for GDPval only)."""
    cache = LabelCache(e2e.warehouse.path)
    gdpval = e2e.warehouse.read_table("benchmark_prompts").filter(pl.col("benchmark") == "gdpval")
    offline = cache.read_frame(hashes=gdpval["prompt_hash"].unique().to_list())
    assert offline["labeler"].unique().to_list() == ["offline"]
    outcomes = [
        LabelOutcome(h, lc.labels_from_json(js)[:1])
        for h, js in offline.select("prompt_hash", "labels_json").iter_rows()
    ]
    cache.write_batch(lc.CacheKey("29.2", "shadow", "top1", "t0"), "top1+t0", outcomes, {})
    e2e.materialize([e2e.agreement, *e2e.reference], selection=[e2e.agreement])
    agreement = e2e.warehouse.read_table("labeler_agreement")
    got = {r["metric"]: r for r in agreement.iter_rows(named=True)}
    assert agreement["benchmark"].unique().to_list() == ["gdpval"]
    expected = offline.select(
        pl.col("labels_json")
        .map_elements(lambda js: 1 / len(lc.labels_from_json(js)), return_dtype=pl.Float64)
        .mean()
    ).item()
    assert got["task_jaccard"]["n"] == offline.height
    assert got["task_jaccard"]["value"] == pytest.approx(expected)
    assert got["task_jaccard"]["ci_low"] <= got["task_jaccard"]["value"] <= got["task_jaccard"]["ci_high"]
    assert 0 < got["occupation_top1_agreement"]["value"] <= 1
    table = e2e.validate()
    shadow = table.filter(pl.col("labeler_version") == "top1+t0")
    # human labels: gdpval only; the task-level reference compares both labelers on the same prompts too
    human = shadow.filter(~pl.col("metric").str.starts_with("ref_"))
    assert human["benchmark"].unique().to_list() == ["gdpval"]  # validated from the cache, not floor-checked
    assert set(shadow.filter(pl.col("metric") == "ref_task_f1")["benchmark"]) == {"all", "gdpval"}
    assert shadow.filter(pl.col("metric") == "occupation_top5")["n"].item() == 110
    floors = [
        e
        for e in e2e.last_validation_run.get_asset_check_evaluations()
        if e.check_name == "labeler_validation_floors"
    ]
    assert floors and floors[0].passed


def test_disambiguate_versions_keeps_configurations_apart() -> None:
    frame = pl.DataFrame(
        {
            "labeler": ["offline", "offline", "openai"],
            "labeler_version": ["off+v1", "off+v1", "gpt+t1"],
            "model": ["m", "m", "gpt"],
            "template_version": ["v1-a", "v1-b", "t1"],
        }
    )
    assert lc.disambiguate_versions(frame)["labeler_version"].to_list() == [
        "off+v1@v1-a",
        "off+v1@v1-b",
        "gpt+t1",
    ]
    assert lc.disambiguate_versions(frame[2:])["labeler_version"].to_list() == ["gpt+t1"]


# --- validation assets on a small warehouse: filtered in DuckDB, same results as loading everything ---------

SMALL_TASKS = pl.DataFrame(
    {
        "onet_soc_code": ["13-2011.00", "13-2011.00", "15-1252.00", "11-1011.00"],
        "task_id": [1, 2, 4, 5],
        "task": [
            "Examine financial statements.",
            "Prepare tax returns.",
            "Write code.",
            "Direct operations.",
        ],
    }
)
SMALL_OCCUPATIONS = pl.DataFrame(
    {
        "onet_soc_code": ["13-2011.00", "15-1252.00", "11-1011.00"],
        "title": ["Accountants and Auditors", "Software Developers", "Chief Executives"],
    }
)


def _small_warehouse(warehouse_path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """benchmark_prompts and prompt_task_labels (rows deliberately not in key order) written to the warehouse;
    GDPval and JobBench prompts carry human labels, the others do not."""
    human = {"gdpval": ("Accountants and Auditors", None), "jobbench": (None, "Write code.")}
    rows = []
    for bench in ("zeta", "gdpval", "alpha", "jobbench"):
        for i in (3, 0, 2, 1, 4):
            occupation, task = human.get(bench, (None, None))
            rows.append(
                {
                    "benchmark": bench,
                    "prompt_id": f"{bench[0]}{i}",
                    "prompt": f"text of {bench} {i}",
                    "prompt_hash": f"h-{bench}-{i}",
                    "occupation": occupation,
                    "onet_soc_code": None,
                    "onet_task_id": None,
                    "onet_task": task,
                }
            )
    prompts = pl.DataFrame(
        rows,
        schema={
            "benchmark": pl.Utf8,
            "prompt_id": pl.Utf8,
            "prompt": pl.Utf8,
            "prompt_hash": pl.Utf8,
            "occupation": pl.Utf8,
            "onet_soc_code": pl.Utf8,
            "onet_task_id": pl.Int64,
            "onet_task": pl.Utf8,
        },
    )
    labeled = prompts.filter(pl.col("prompt_id") != "z4")  # one prompt without labels: never sampled
    label_rows = []
    for n, (b, p, h) in enumerate(labeled.select("benchmark", "prompt_id", "prompt_hash").iter_rows()):
        for rank, (task, soc) in enumerate(
            [(1 + n % 2, "13-2011.00"), (4, "15-1252.00"), (5, "11-1011.00")][: 1 + n % 3]
        ):
            label_rows.append(
                {
                    "benchmark": b,
                    "prompt_id": p,
                    "prompt_hash": h,
                    "onet_soc_code": soc,
                    "task_id": task,
                    "labeler": "offline",
                    "labeler_version": "v1",
                    "rank": rank + 1,
                    "score": round(1.0 - 0.1 * rank - 0.01 * n, 3),
                    "rationale": f"why {p}",
                }
            )
    labels = pl.DataFrame(label_rows, schema=lc.LABEL_COLUMNS).sample(fraction=1.0, shuffle=True, seed=3)
    # every prompt has its work decision (the labeling step writes both tables): the labels are not behind
    work = prompts.select("benchmark", "prompt_id", "prompt_hash", labeler=pl.lit("offline"),
                          labeler_version=pl.lit("v1"), is_work=pl.col("prompt_id") != "z4",
                          p_work=pl.when(pl.col("prompt_id") != "z4").then(0.9).otherwise(0.1))
    wh.replace_table(warehouse_path, "benchmark_prompts", prompts)
    wh.replace_table(warehouse_path, "prompt_task_labels", labels)
    wh.replace_table(warehouse_path, "prompt_work", work.select(list(lc.WORK_COLUMNS)).cast(lc.WORK_COLUMNS))
    return prompts, labels


def test_labeler_validation_loads_human_labeled_prompts_only_and_matches_a_full_load(
    warehouse_path: Path,
) -> None:
    from dagster import build_asset_context

    from assets import gold_labels as gl
    from assets import label_validation as lab
    from models import validation as val
    from resources.dagster_resources import Warehouse

    prompts, labels = _small_warehouse(warehouse_path)
    warehouse = Warehouse(path=str(warehouse_path))
    gold = pl.DataFrame(
        [
            {
                "benchmark": "alpha",
                "prompt_id": "a2",
                "task_id": 4,
                "annotator": "x",
                "source_file": "g.csv",
                "line_number": 2,
            },
            {
                "benchmark": "zeta",
                "prompt_id": "z0",
                "task_id": None,
                "annotator": "x",
                "source_file": "g.csv",
                "line_number": 3,
            },
        ],
        schema=val.GOLD_SCHEMA,
    )
    prompt_schema = {c: gl.PROMPT_COLUMNS[c] for c in gl.VALIDATION_PROMPT_COLUMNS}
    loaded_prompts, loaded_labels = lq.validation_inputs(warehouse.path, gold, prompt_schema, lc.LABEL_COLUMNS)
    assert "prompt" not in loaded_prompts.columns  # no texts
    keys = {("alpha", "a2"), ("zeta", "z0")} | {
        (b, f"{b[0]}{i}") for b in ("gdpval", "jobbench") for i in range(5)
    }
    assert set(loaded_prompts.select("benchmark", "prompt_id").rows()) == keys
    assert loaded_prompts["prompt_id"].to_list() == [
        p for b, p in prompts.select("benchmark", "prompt_id").rows() if (b, p) in keys
    ]  # table order
    expected = labels.filter(
        pl.struct("benchmark", "prompt_id").map_elements(
            lambda k: (k["benchmark"], k["prompt_id"]) in keys, return_dtype=pl.Boolean
        )
    )
    assert loaded_labels.drop("rationale").equals(expected.drop("rationale"))  # table order too
    assert loaded_labels["rationale"].null_count() == loaded_labels.height

    mapping, _ = lab.tac_role_mapping()
    ranker, _ = lab.occupation_ranker()
    for gold_labels in (gold, gold.clear()):
        table = lab.labeler_validation(
            build_asset_context(), warehouse, SMALL_TASKS, SMALL_OCCUPATIONS, gold_labels,
            pl.DataFrame(schema=REFERENCE_SCHEMA),  # no reference prompt in this small warehouse
        )
        full, _ = val.validate_labels(
            labels,
            prompts,
            SMALL_OCCUPATIONS,
            SMALL_TASKS,
            gold_labels,
            tac_role_to_soc=mapping,
            rank_fn=ranker,
        )
        assert table.equals(full)
        assert set(table["benchmark"]) >= {"gdpval", "jobbench"}
        gold_benchmarks = set(table.filter(pl.col("metric") == "task_f1")["benchmark"])
        assert gold_benchmarks == ({"all", "alpha", "zeta"} if gold_labels.height else set())


def test_gold_annotation_sample_reads_the_sample_only_and_matches_the_in_memory_sample(
    warehouse_path: Path, tmp_path: Path
) -> None:
    from dagster import Failure, build_asset_context

    from assets import gold_labels as gl
    from models import validation as val
    from resources.dagster_resources import Warehouse

    prompts, labels = _small_warehouse(warehouse_path)
    warehouse = Warehouse(path=str(warehouse_path))
    config = gl.AnnotationSampleConfig(per_benchmark=3, top_k=2, seed=5)
    sample = gl.gold_annotation_sample(
        build_asset_context(), config, warehouse, SMALL_TASKS, SMALL_OCCUPATIONS
    )
    expected = val.annotation_sample(
        prompts, labels, SMALL_TASKS, SMALL_OCCUPATIONS, per_benchmark=3, top_k=2, seed=5
    )
    assert sample.equals(expected)
    assert sample.group_by("benchmark").len().sort("benchmark").rows() == [
        ("alpha", 3),
        ("gdpval", 3),
        ("jobbench", 3),
        ("zeta", 3),
    ]
    csv = warehouse_path.parent / "annotation" / gl.ANNOTATION_FILE
    assert csv.read_bytes() == expected.write_csv().encode()

    # nothing labeled yet: a failure naming the labels (it was an empty sheet reported as a success)
    empty = Warehouse(path=str(tmp_path / "empty" / "benchmap.duckdb"))
    with pytest.raises(Failure, match="gold_annotation_sample: not run.*no prompt_task_labels"):
        gl.gold_annotation_sample(build_asset_context(), config, empty, SMALL_TASKS, SMALL_OCCUPATIONS)


def test_e2e_the_task_index_version_is_what_it_is_built_from(e2e: E2E) -> None:
    """task_search_index's data version is its code and inputs' digest, not Dagster's default over every reference
    input: a new OEWS file gave the index a new version, and the landing sensor relabeled all 29 partitions for an
    index whose content had not changed (a probe, 2026-12-08). Here a new version of the reference files (what
    the sensor observes when any of them changes) gives the wage table a new version and the index the same."""
    from dagster import AssetKey
    from dagster._core.definitions.data_version import extract_data_version_from_entry

    from resources import source_versions as sv

    def version(key: str) -> str:
        record = e2e.instance.get_latest_data_version_record(AssetKey(key))
        return extract_data_version_from_entry(record.event_log_entry).value

    e2e.instance.report_runless_asset_event(sv.observation(sv.REFERENCE_FILES_KEY, "before"))
    e2e.materialize([*e2e.reference, e2e.labels.task_search_index])
    before = {key: version(key) for key in ("oews_wages", "onet_tasks", "task_search_index")}
    e2e.instance.report_runless_asset_event(sv.observation(sv.REFERENCE_FILES_KEY, "a new OEWS file"))
    e2e.materialize([*e2e.reference, e2e.labels.task_search_index])
    after = {key: version(key) for key in ("oews_wages", "onet_tasks", "task_search_index")}
    assert after["oews_wages"] != before["oews_wages"] and after["onet_tasks"] != before["onet_tasks"]
    assert after["task_search_index"] == before["task_search_index"]
