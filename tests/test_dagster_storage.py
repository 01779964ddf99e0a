"""The instance storage of dagster.yaml (resources/dagster_storage.py): Dagster's SQLite storage whose event log
keeps its connections open. Same files as `storage: sqlite` (either reads what the other wrote), every event
stored, commits with synchronous=NORMAL, a bounded number of open engines."""

from pathlib import Path

import yaml
from dagster import AssetExecutionContext, DagsterInstance, asset, materialize

from resources.dagster_storage import ENGINES_KEPT, PooledSqliteEventLogStorage

PROJECT_ROOT = Path(__file__).resolve().parents[1]


@asset
def chatty(context: AssetExecutionContext) -> int:
    for i in range(30):
        context.log.info(f"line {i}")
    return 1


def _instance(home: Path, storage: dict) -> DagsterInstance:
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump({"storage": storage, "telemetry": {"enabled": False}}))
    return DagsterInstance.from_config(str(home))


def test_the_pooled_storage_keeps_every_event_and_reads_like_sqlite(tmp_path: Path) -> None:
    base = str(tmp_path / "storage")
    pooled_config = {"custom": {"module": "resources.dagster_storage", "class": "PooledSqliteStorage",
                                "config": {"base_dir": base}}}
    pooled = _instance(tmp_path / "pooled", pooled_config)
    storage = pooled.event_log_storage
    assert isinstance(storage, PooledSqliteEventLogStorage)
    runs = [materialize([chatty], instance=pooled).run_id for _ in range(ENGINES_KEPT + 2)]
    logged = [e for e in pooled.all_logs(runs[0]) if e.user_message.startswith("line ")]
    assert [e.user_message for e in logged] == [f"line {i}" for i in range(30)]
    assert len(storage._engines) <= ENGINES_KEPT  # the index shard and the latest runs' shards only
    with storage._connect(runs[-1]) as conn:  # a pooled connection: WAL, synchronous NORMAL (1)
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"

    plain = _instance(tmp_path / "plain", {"sqlite": {"base_dir": base}})  # the same files, Dagster's own class
    assert type(plain.event_log_storage).__name__ == "SqliteEventLogStorage"
    assert len(plain.get_runs()) == len(runs)
    assert [e.user_message for e in plain.all_logs(runs[0]) if e.user_message.startswith("line ")] == \
        [e.user_message for e in logged]
    record = plain.get_latest_materialization_event(chatty.key)
    assert record is not None and record.run_id == runs[-1]
    plain_run = materialize([chatty], instance=plain).run_id  # and the pooled one reads what sqlite wrote
    latest = pooled.get_latest_materialization_event(chatty.key)
    assert latest is not None and latest.run_id == plain_run
    pooled.dispose()
    plain.dispose()


def test_the_project_and_the_benches_use_it() -> None:
    project = yaml.safe_load((PROJECT_ROOT / "dagster.yaml").read_text())
    assert project["storage"]["custom"]["class"] == "PooledSqliteStorage"
    assert project["storage"]["custom"]["config"]["base_dir"] == ".dagster/storage"
    from bench import common

    bench = yaml.safe_load(common.DAGSTER_YAML.format(home="/h", pool_limit=4))
    assert bench["storage"]["custom"]["module"] == "resources.dagster_storage"
