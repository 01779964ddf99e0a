"""bench/scale.py's synthetic landing zone and label-cache seeding (issue 29 item 5): copy 0 is the mirror's file
byte for byte, copies get new ids (and, with new texts, new hashes whose labels come from their originals)."""

from __future__ import annotations

import json

import duckdb

from bench.scale import scaled_landing, seed_label_cache
from models.benchmarks import prompt_hash


def _mirror(tmp_path):
    folder = tmp_path / "mirror" / "benchmarks" / "demo"
    folder.mkdir(parents=True)
    lines = [json.dumps({"benchmark": "demo", "prompt_id": f"p{i}", "prompt": f"write a short report on topic {i} "
                         "for the team"}) for i in range(3)]
    (folder / "prompts.jsonl").write_text("\n".join(lines + ["{not json"]) + "\n")
    (folder / "results.csv").write_text("benchmark,prompt_id,model,score\ndemo,p0,m,1\ndemo,p1,m,0\n")
    (folder / "benchmark.toml").write_text('title = "demo"\n')
    return tmp_path / "mirror"


def test_copies_get_new_ids_and_texts_copy_zero_is_the_file(tmp_path):
    mirror = _mirror(tmp_path)
    pairs: list[tuple[str, str]] = []
    counts = scaled_landing(mirror, tmp_path / "landing", 3, new_texts=True, hash_map=pairs)
    out = (tmp_path / "landing" / "demo" / "prompts.jsonl").read_bytes().split(b"\n")
    original = (mirror / "benchmarks" / "demo" / "prompts.jsonl").read_bytes().split(b"\n")
    assert out[:4] == original[:4]
    assert counts == {"benchmarks": 1, "prompt_lines": 12, "result_lines": 6}
    records = [json.loads(line) for line in out if line.strip() and line != b"{not json"]
    assert [r["prompt_id"] for r in records] == ["p0", "p1", "p2", "p0~r1", "p1~r1", "p2~r1", "p0~r2", "p1~r2", "p2~r2"]
    hashes = {prompt_hash(r["prompt"]) for r in records}
    assert len(hashes) == 9  # every copy a new text
    assert len(pairs) == 6 and {orig for _, orig in pairs} == {prompt_hash(r["prompt"]) for r in records[:3]}
    results = (tmp_path / "landing" / "demo" / "results.csv").read_text().splitlines()
    assert results[1:] == ["demo,p0,m,1", "demo,p1,m,0", "demo,p0~r1,m,1", "demo,p1~r1,m,0", "demo,p0~r2,m,1",
                           "demo,p1~r2,m,0"]
    same = scaled_landing(mirror, tmp_path / "same", 2, new_texts=False)
    texts = [json.loads(line)["prompt"] for line in (tmp_path / "same" / "demo" / "prompts.jsonl").read_bytes()
             .split(b"\n") if line.strip() and line != b"{not json"]
    assert same["prompt_lines"] == 8 and texts[:3] == texts[3:]


def test_seeding_copies_each_originals_label_sets(tmp_path):
    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    con.execute("create table label_cache (prompt_hash varchar, onet_version varchar, labeler varchar, model varchar, "
                "template_version varchar, labels_json varchar)")
    con.execute("insert into label_cache values ('a', 'o', 'offline', 'm', 't', '[1]'), ('a', 'o', 'openai', 'm', "
                "'t', '[2]'), ('b', 'o', 'offline', 'm', 't', '[3]')")
    con.close()
    added = seed_label_cache(path, [("a1", "a"), ("b1", "b"), ("b2", "b"), ("b2", "b"), ("a", "a")])
    assert added == 4  # a1 twice (two labelers), b1, b2 once; ("a", "a") is already there
    con = duckdb.connect(str(path))
    rows = con.execute("select prompt_hash, labeler, labels_json from label_cache order by all").fetchall()
    con.close()
    assert ("a1", "openai", "[2]") in rows and ("b2", "offline", "[3]") in rows and len(rows) == 7
