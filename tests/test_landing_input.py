"""Bad benchmark folders, built from the mirror's apex_agents as an audit of the landing zone built them, and
what each gets (each test's docstring says what it got before).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_benchmarks import Env, env  # noqa: F401 - env is a fixture

SOURCE = "apex_agents"


def source_lines(mirror: Path) -> list[dict]:
    data = (mirror / "benchmarks" / SOURCE / "prompts.jsonl").read_bytes()
    return [json.loads(line) for line in data.split(b"\n") if line.strip()]


def apex_copy(root: Path, mirror: Path, name: str, *, rename: bool = True) -> tuple[Path, list[bytes]]:
    """`<root>/<name>/` holding the mirror's apex_agents files, its lines naming `name` (`rename`) or, as a
    folder copied by hand, still `apex_agents`; returns the folder and its prompt lines (written by `write`)."""
    folder = root / name
    folder.mkdir(parents=True)
    lines = [json.dumps({**r, "benchmark": name} if rename else r, ensure_ascii=False).encode()
             for r in source_lines(mirror)]
    results = (mirror / "benchmarks" / SOURCE / "results.csv").read_text(encoding="utf-8")
    (folder / "results.csv").write_text(results.replace(f"\n{SOURCE},", f"\n{name},") if rename else results,
                                        encoding="utf-8")
    (folder / "benchmark.toml").write_bytes((mirror / "benchmarks" / SOURCE / "benchmark.toml").read_bytes())
    write(folder, lines)
    return folder, lines


def write(folder: Path, lines: list[bytes]) -> None:
    (folder / "prompts.jsonl").write_bytes(b"\n".join(lines) + b"\n")


# ------------------------------------------------------------------------------------------------ stored metadata
def test_a_metadata_file_that_cannot_be_read_keeps_the_stored_metadata_in_the_warehouse(
        env: Env, mirror: Path) -> None:  # noqa: F811
    """Documented since the metadata rejects came in, and true of the parser alone, but the asset handed it a
    registry row of three columns: a typo in benchmark.toml reset title, agentic and public_items to the
    defaults (the benchmark left the economic_agentic index) while the warning said "kept"."""
    folder, lines = apex_copy(env.landing, mirror, "apex_meta")
    env.instance.add_dynamic_partitions("benchmark", ["apex_meta"])
    assert env.run_partition("apex_meta").success
    columns = ["title", "version", "license", "agentic", "public_items", "saturated"]
    stored = env.table("benchmarks", "apex_meta").select(columns).row(0, named=True)
    assert stored["title"] != "apex_meta" and stored["agentic"] is True  # read from the mirror's benchmark.toml
    toml = (folder / "benchmark.toml").read_text(encoding="utf-8")
    (folder / "benchmark.toml").write_text(toml.replace("agentic = true", "agentic = tru"), encoding="utf-8")
    assert env.run_partition("apex_meta").success
    row = env.table("benchmarks", "apex_meta").row(0, named=True)
    assert {c: row[c] for c in columns} == stored
    assert row["n_rejects"] == 1 and "the stored metadata is kept" in row["metadata_warnings"]
