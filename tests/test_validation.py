"""Validation metrics and agreement on hand-built frames: exact expected numbers."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from models import validation as v
from models.errors import InputError
from models.validation import gold as validation_gold
from resources.readers import read_gold_csv

OCCUPATIONS = pl.DataFrame(
    {
        "onet_soc_code": [
            "13-2011.00",
            "13-1021.00",
            "13-1022.00",
            "13-1023.00",
            "15-1252.00",
            "11-1011.00",
            "11-1011.03",
        ],
        "title": [
            "Accountants and Auditors",
            "Buyers and Purchasing Agents, Farm Products",
            "Wholesale and Retail Buyers, Except Farm Products",
            "Purchasing Agents, Except Wholesale",
            "Software Developers",
            "Chief Executives",
            "Chief Sustainability Officers",
        ],
    }
)
TASKS = pl.DataFrame(
    {
        "onet_soc_code": ["13-2011.00", "13-2011.00", "13-1023.00", "15-1252.00", "11-1011.00", "11-1011.03"],
        "task_id": [1, 2, 3, 4, 5, 6],
        "task": [
            "Examine financial statements.",
            "Prepare tax returns.",
            "Purchase supplies.",
            "Write code.",
            "Direct  operations.",
            "direct operations.",
        ],
    }
)


def labels(rows: list[tuple], labeler: str = "offline", version: str = "v1") -> pl.DataFrame:
    """rows: (benchmark, prompt_id, task_id, onet_soc_code, rank)."""
    return pl.DataFrame(
        [
            {
                "benchmark": b,
                "prompt_id": p,
                "prompt_hash": f"h-{b}-{p}",
                "onet_soc_code": s,
                "task_id": t,
                "labeler": labeler,
                "labeler_version": version,
                "rank": r,
                "score": 1.0 / r,
                "rationale": None,
            }
            for b, p, t, s, r in rows
        ]
    )


def prompts(rows: list[tuple]) -> pl.DataFrame:
    """rows: (benchmark, prompt_id, occupation, onet_task)."""
    return pl.DataFrame(
        [
            {
                "benchmark": b,
                "prompt_id": p,
                "prompt": f"text {p}",
                "prompt_hash": f"h-{b}-{p}",
                "occupation": o,
                "onet_soc_code": None,
                "onet_task_id": None,
                "onet_task": t,
            }
            for b, p, o, t in rows
        ],
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


def test_soc_patterns() -> None:
    assert v.soc6("13-2011.00") == "13-2011"
    assert v.soc_pattern_prefix("13-1020") == "13-102"
    assert v.soc_pattern_prefix("15-1200") == "15-12"
    assert v.soc_pattern_prefix("15-0000") == "15-"
    assert v.soc_matches("13-1023.00", ["13-1020"])
    assert not v.soc_matches("13-1031.00", ["13-1020"])
    assert v.soc_matches("15-1299.09", ["15-1200"])
    assert not v.soc_matches("13-2011", ["13-2012"])
    with pytest.raises(ValueError):
        v.soc_pattern_prefix("banana")


def test_title_mapping_exact_case_insensitive_and_group() -> None:
    mapping, unmatched = v.map_titles_to_soc(
        ["accountants AND auditors", "Buyers and Purchasing Agents", "Astronauts",
         "Purchasing Agents Except Wholesale"], OCCUPATIONS
    )
    # a title without O*NET's comma still matches
    assert mapping == {"accountants AND auditors": ["13-2011"], "Buyers and Purchasing Agents": ["13-1020"],
                       "Purchasing Agents Except Wholesale": ["13-1023"]}
    assert unmatched == ["Astronauts"]


def test_rank_occupations_reciprocal_rank_sum() -> None:
    lab = labels(
        [
            ("b", "p1", 1, "13-2011.00", 1),
            ("b", "p1", 3, "13-1023.00", 2),
            ("b", "p1", 9, "13-1023.00", 3),
            ("b", "p2", 1, "13-2011.00", 2),
            ("b", "p2", 4, "15-1252.00", 1),
            ("b", "p2", 2, "13-2011.00", 3),
        ]
    )
    ranked = v.rank_occupations(lab).sort("prompt_id", "occ_rank")
    assert ranked.select("prompt_id", "soc_code", "occ_rank").rows() == [
        ("p1", "13-2011", 1),
        ("p1", "13-1023", 2),
        ("p2", "15-1252", 1),
        ("p2", "13-2011", 2),
    ]
    assert ranked["occ_score"].to_list() == pytest.approx([1.0, 0.5 + 1 / 3, 1.0, 0.5 + 1 / 3])


def test_validate_labels_exact_occupation_and_task_metrics() -> None:
    bench_prompts = prompts(
        [
            ("gdpval", "g1", "Accountants and Auditors", None),
            ("gdpval", "g2", "Buyers and Purchasing Agents", None),
            ("gdpval", "g3", "Software Developers", None),  # gold but never labeled: a miss
            ("gdpval", "g4", "Astronauts", None),  # unmatched title: out of the gold set
            ("gdpval", "g5", None, None),  # withheld label
            ("theagentcompany", "t1", "Software Development Engineer (SDE)", None),
            ("theagentcompany", "t2", "Other", None),
            ("jobbench", "j1", "Whatever", "direct operations."),  # tasks 5 and 6 (case/space-insensitive)
            ("jobbench", "j2", "Whatever", "Prepare tax returns."),
        ]
    )
    lab = labels(
        [
            ("gdpval", "g1", 1, "13-2011.00", 1),
            ("gdpval", "g2", 4, "15-1252.00", 1),
            ("gdpval", "g2", 3, "13-1023.00", 2),
            ("gdpval", "g5", 4, "15-1252.00", 1),
            ("theagentcompany", "t1", 4, "15-1252.00", 1),
            ("theagentcompany", "t2", 1, "13-2011.00", 1),
            ("jobbench", "j1", 4, "15-1252.00", 1),
            ("jobbench", "j1", 6, "11-1011.03", 2),
            ("jobbench", "j2", 1, "13-2011.00", 1),
            ("jobbench", "j2", 3, "13-1023.00", 2),
            ("jobbench", "j2", 5, "11-1011.00", 3),
            ("jobbench", "j2", 4, "15-1252.00", 4),
            ("jobbench", "j2", 11, "15-1252.00", 5),
            ("jobbench", "j2", 12, "15-1252.00", 6),
            ("jobbench", "j2", 2, "13-2011.00", 7),
        ]
    )
    table, notes = v.validate_labels(
        lab, bench_prompts, OCCUPATIONS, TASKS, n_boot=200, tac_role_to_soc={"SDE": ["15-1252.00"]}
    )
    got = {(r["benchmark"], r["metric"]): (r["value"], r["n"]) for r in table.iter_rows(named=True)}
    assert got[("gdpval", "occupation_top1")] == (pytest.approx(1 / 3), 3)
    assert got[("gdpval", "occupation_top5")] == (pytest.approx(2 / 3), 3)
    assert got[("theagentcompany", "occupation_top1")] == (1.0, 1)
    # JobBench j1: gold tasks {5, 6} (soc 11-1011); labeled 4 then 6 -> hit@1 0, hit@5 1; occupation
    # top-1 miss.
    # j2: gold {2}; task 2 at rank 7 -> hit@1 0, hit@5 0, hit@10 1; its occupation 13-2011 ranks first.
    assert got[("jobbench", "task_hit_at1")] == (0.0, 2)
    assert got[("jobbench", "task_hit_at5")] == (0.5, 2)
    assert got[("jobbench", "task_hit_at10")] == (1.0, 2)
    assert got[("jobbench", "occupation_top1")] == (0.5, 2)
    # JobBench's `occupation` is read as a title too (its "Whatever" matches nothing); TAC's is a role
    assert notes["unmatched_titles"] == ["gdpval: Astronauts", "jobbench: Whatever"]
    assert notes["title_gold_prompts"] == 3 and notes["tac_gold_prompts"] == 1
    assert set(table.columns) == set(v.METRIC_COLUMNS)
    for row in table.iter_rows(named=True):
        assert row["ci_low"] <= row["value"] <= row["ci_high"]
    # a share of hits gets Wilson's interval: 0 of 2 hits is not "0% (0%-0%)", as a percentile bootstrap over
    # prompts that all missed would say, nor is 1 of 1 "100% (100%-100%)"
    from models.stats import wilson_ci

    def interval(bench: str, metric: str) -> tuple[float, float]:
        return table.filter((pl.col("benchmark") == bench) & (pl.col("metric") == metric)).select(
            "ci_low", "ci_high").row(0)

    none_of_two = wilson_ci(0, 2)
    assert interval("jobbench", "task_hit_at1") == (0.0, pytest.approx(none_of_two.ci_high))
    assert none_of_two.ci_high > 0.6  # two prompts say little
    low, high = interval("theagentcompany", "occupation_top1")
    assert high == pytest.approx(1.0) and low == pytest.approx(wilson_ci(1, 1).ci_low) and low < 0.25
    floors = {"gdpval:occupation_top5": 0.70, "osworld:occupation_top1": 0.1}
    failures, missing = v.check_floors(table, floors)
    assert [(f["benchmark"], f["metric"], f["floor"]) for f in failures] == [
        ("gdpval", "occupation_top5", 0.70)
    ]
    assert missing == ["osworld:occupation_top1"]
    assert v.check_floors(table, {"gdpval:occupation_top5": 0.60})[0] == []


def test_set_scores_precision_recall_f1() -> None:
    gold = pl.DataFrame(
        {
            "benchmark": ["b"] * 4 + ["b"],
            "prompt_id": ["p1"] * 3 + ["p2", "p3"],
            "task_id": [1, 2, 3, None, 7],
        },
        schema_overrides={"task_id": pl.Int64},
    )
    lab = labels(
        [
            ("b", "p1", 2, "x", 1),
            ("b", "p1", 3, "x", 2),
            ("b", "p1", 4, "x", 3),
            ("b", "p1", 5, "x", 4),
            ("b", "p2", 9, "x", 1),
        ]
    )
    scores = v.set_scores(gold, lab).sort("prompt_id")
    p1, p2, p3 = scores.iter_rows(named=True)
    assert (p1["task_precision"], p1["task_recall"], p1["task_f1"]) == (
        0.5,
        pytest.approx(2 / 3),
        pytest.approx(4 / 7),
    )
    assert p2["task_precision"] == 0.0 and math.isnan(p2["task_recall"]) and p2["task_f1"] == 0.0
    assert math.isnan(p3["task_precision"]) and p3["task_recall"] == 0.0 and p3["task_f1"] == 0.0
    rows = {
        r["metric"]: (r["value"], r["n"])
        for r in v.summarise(scores, ["task_precision", "task_recall", "task_f1"], n_boot=100)
    }
    assert rows["task_precision"] == (0.25, 2)
    assert rows["task_recall"] == (pytest.approx(1 / 3), 2)
    assert rows["task_f1"] == (pytest.approx(4 / 21), 3)


def test_labeler_agreement_exact() -> None:
    def cache_rows(labeler: str, rows: list[tuple]) -> list[dict]:
        return [
            {
                "prompt_hash": h,
                "labeler": labeler,
                "labeler_version": f"{labeler}-v",
                "task_id": t,
                "onet_soc_code": s,
                "rank": r,
                "score": 1.0 / r,
            }
            for h, t, s, r in rows
        ]

    lab = pl.DataFrame(
        cache_rows(
            "offline",
            [
                ("h1", 1, "11-1011.00", 1),
                ("h1", 2, "13-2011.00", 2),
                ("h2", 4, "15-1252.00", 1),
                ("h3", 4, "15-1252.00", 1),
            ],
        )
        + cache_rows(
            "openai",
            [
                ("h1", 1, "11-1011.00", 1),
                ("h1", 3, "15-1252.00", 2),
                ("h2", 5, "11-1011.00", 1),
                ("h2", 4, "15-1252.00", 2),
            ],
        )
    )
    where = pl.DataFrame({"benchmark": ["b", "b", "b"], "prompt_hash": ["h1", "h2", "h3"]})
    out = v.labeler_agreement(lab, where, n_boot=200)
    got = {r["metric"]: (r["value"], r["n"]) for r in out.iter_rows(named=True)}
    # h1: tasks {1,2} vs {1,3} -> 1/3; top-1 both 11-1011; Spearman over {11-1011, 13-2011, 15-1252}:
    # offline ranks (1, 2, 3 [unranked -> bottom]) vs openai (1, 3 [bottom], 2) -> rho = 0.5.
    # h2: {4} vs {5,4} -> 1/2; top-1 15-1252 vs 11-1011 -> 0; ranks (2 [bottom], 1) vs (1, 2) -> rho = -1.
    # h3: labeled by one labeler only -> not compared.
    assert got["task_jaccard"] == (pytest.approx((1 / 3 + 1 / 2) / 2), 2)
    assert got["occupation_top1_agreement"] == (0.5, 2)
    assert got["occupation_spearman"] == (pytest.approx((0.5 - 1.0) / 2), 2)
    assert out["labeler_a"].unique().to_list() == ["offline"]
    assert out["labeler_b"].unique().to_list() == ["openai"]
    assert v.labeler_agreement(lab.filter(pl.col("labeler") == "openai"), where).is_empty()


def test_gold_csv_import_wide_long_and_errors(tmp_path: Path) -> None:
    wide = tmp_path / "wide.csv"
    wide.write_text(
        "benchmark,prompt_id,task_ids,annotator,prompt\n"
        'b,p1,"1; 2",ann,"multi\nline prompt"\n'
        "b,p2,,ann,x\n"
        "\n"
        ",p3,4,,x\n",
        encoding="utf-8",
    )
    gold = read_gold_csv(wide)
    assert gold.select("prompt_id", "task_id", "line_number").rows() == [
        ("p1", 1, 2),
        ("p1", 2, 2),
        ("p2", None, 4),
        ("p3", 4, 6),
    ]
    long = tmp_path / "long.csv"
    long.write_text("prompt_id,task_id\np1,3\np1,2\n", encoding="utf-8")
    assert read_gold_csv(long)["task_id"].to_list() == [3, 2]
    bad = tmp_path / "bad.csv"
    bad.write_text("prompt_id,task_ids\np1,12\np2,1;x7\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.csv, line 3, record p2: task ID 'x7'"):
        read_gold_csv(bad)
    with pytest.raises(InputError, match="line 1"):
        (tmp_path / "nocol.csv").write_text("id,tasks\n1,2\n", encoding="utf-8")
        read_gold_csv(tmp_path / "nocol.csv")

    bench_prompts = prompts([("b", "p1", None, None), ("b", "p2", None, None), ("c", "p3", None, None)])
    resolved, notes = v.resolve_gold(pl.concat([gold, read_gold_csv(long)]), bench_prompts, TASKS)
    assert resolved.select("benchmark", "prompt_id", "task_id").unique().sort(
        "prompt_id", "task_id", nulls_last=True
    ).rows() == [("b", "p1", 1), ("b", "p1", 2), ("b", "p1", 3), ("b", "p2", None), ("c", "p3", 4)]
    assert notes["gold_prompts"] == 3
    with pytest.raises(InputError, match="task ID 99 is not an O"):
        v.resolve_gold(
            pl.DataFrame(
                [
                    {
                        "benchmark": "b",
                        "prompt_id": "p1",
                        "task_id": 99,
                        "annotator": None,
                        "source_file": "f.csv",
                        "line_number": 2,
                    }
                ],
                schema=v.GOLD_SCHEMA,
            ),
            bench_prompts,
            TASKS,
        )


def test_annotation_sample_is_stratified_and_importable(tmp_path: Path) -> None:
    bench_prompts = prompts([("a", f"a{i}", None, None) for i in range(5)] + [("b", "b0", None, None)])
    lab = labels(
        [("a", f"a{i}", 1 + i % 3, "13-2011.00", 1) for i in range(5)]
        + [("a", "a0", 4, "15-1252.00", 2), ("b", "b0", 2, "13-2011.00", 1)]
    )
    sample = v.annotation_sample(bench_prompts, lab, TASKS, OCCUPATIONS, per_benchmark=3, top_k=1)
    assert sample.group_by("benchmark").len().sort("benchmark").rows() == [("a", 3), ("b", 1)]
    assert all(len(c.split(";")) == 1 for c in sample["candidate_task_ids"])
    assert (
        sample.filter(pl.col("prompt_id") == "b0")["candidates"]
        .item()
        .startswith("2 | 13-2011.00 Accountants and Auditors | Prepare tax returns.")
    )
    path = tmp_path / "sample.csv"
    sample.with_columns(pl.col("candidate_task_ids").alias("task_ids")).write_csv(path)
    assert read_gold_csv(path).height == 4


def test_task_statement_gold_exact_then_shortened() -> None:
    bench_prompts = prompts(
        [
            ("jobbench", "j1", None, "DIRECT operations."),  # exact, shared by two occupations
            ("jobbench", "j2", None, "Examine statements."),  # shortened from task 1 (ratio 0.79)
            ("jobbench", "j3", None, "Write."),  # contained in task 4 but too short a fragment (ratio < 0.75)
            ("jobbench", "j4", None, "Purchase equipment."),  # a word missing from every statement
        ]
    )
    gold, unmatched = v.task_statement_gold(bench_prompts, TASKS)
    assert gold.select("prompt_id", "task_id", "match").rows() == [
        ("j1", 5, "exact"),
        ("j1", 6, "exact"),
        ("j2", 1, "shortened"),
    ]
    assert unmatched == ["j3", "j4"]


def test_occupation_ranking_methods_and_per_prompt_adapter() -> None:
    lab = labels(
        [("b", "p1", 1, "13-2011.00", 1), ("b", "p1", 3, "13-1023.00", 2), ("b", "p1", 9, "13-1023.00", 3)]
    )
    lab = lab.with_columns(pl.Series("score", [0.5, 0.4, 0.3]))
    # score sum: 13-1023 has 0.7 > 0.5; reciprocal rank: 13-2011 has 1 > 1/2 + 1/3
    assert v.rank_occupations(lab)["soc_code"].to_list() == ["13-1023", "13-2011"]
    assert v.rank_occupations(lab, method="reciprocal_rank")["soc_code"].to_list() == ["13-2011", "13-1023"]
    adapter = v.per_prompt_ranker(lambda tl: sorted({t.onet_soc_code for t in tl}, reverse=True))
    assert adapter(lab).select("soc_code", "occ_rank").rows() == [("13-2011", 1), ("13-1023", 2)]


def test_annotation_sample_draw_needs_only_the_keys() -> None:
    """annotation_sample_keys over (benchmark, prompt_id) in any order picks the same prompts as over the
    full prompt rows, and annotation_rows over the sample's texts and labels alone gives annotation_sample."""
    rows = [("a", f"a{i:02d}", None, None) for i in range(30)] + [("b", f"b{i}", None, None) for i in range(7)]
    rows += [("c", "c0", None, None), ("d", "d0", None, None)]  # d0 is not labeled: never sampled
    bench_prompts = prompts(rows)
    lab = labels([(b, p, 1 + i % 5, "13-2011.00", 1) for i, (b, p, _, _) in enumerate(rows) if b != "d"])
    lab = pl.concat([lab, labels([(b, p, 4, "15-1252.00", 2) for b, p, _, _ in rows if b == "a"])])
    full = v.annotation_sample(bench_prompts, lab, TASKS, OCCUPATIONS, per_benchmark=5, top_k=3, seed=7)
    pool = bench_prompts.join(lab, on=["benchmark", "prompt_id"], how="semi").select("benchmark", "prompt_id")
    keys = v.annotation_sample_keys(pool.sample(fraction=1.0, shuffle=True, seed=1), per_benchmark=5, seed=7)
    assert keys.rows() == full.select("benchmark", "prompt_id").rows()
    assert keys.group_by("benchmark").len().sort("benchmark").rows() == [("a", 5), ("b", 5), ("c", 1)]
    texts = bench_prompts.select("benchmark", "prompt_id", "prompt_hash", "prompt")
    sample = keys.join(texts, on=["benchmark", "prompt_id"], how="left", maintain_order="left")
    only_sampled = lab.join(keys, on=["benchmark", "prompt_id"], how="semi").select(
        "benchmark", "prompt_id", "labeler", "rank", "task_id", "onet_soc_code")
    assert v.annotation_rows(sample, only_sampled, TASKS, OCCUPATIONS, top_k=3).equals(full)
    empty = v.annotation_sample_keys(pool.clear(), per_benchmark=5)
    assert empty.is_empty() and v.annotation_rows(empty, lab, TASKS, OCCUPATIONS).columns == v.ANNOTATION_COLUMNS


def test_per_prompt_ranker_groups_in_first_appearance_and_row_order() -> None:
    lab = labels([("b", "p2", 4, "15-1252.00", 1), ("b", "p1", 1, "13-2011.00", 1), ("b", "p2", 2, "13-2011.00", 2),
                  ("b", "p1", 3, "13-1023.00", 2)])
    seen: list[list[int]] = []

    def rank_labels(tl: list) -> list[str]:
        seen.append([t.task_id for t in tl])
        return [t.onet_soc_code for t in tl]

    ranked = v.per_prompt_ranker(rank_labels)(lab)
    assert seen == [[4, 2], [1, 3]]
    assert ranked.select("prompt_id", "soc_code", "occ_rank").rows() == [
        ("p2", "15-1252", 1), ("p2", "13-2011", 2), ("p1", "13-2011", 1), ("p1", "13-1023", 2)]
    assert v.per_prompt_ranker(rank_labels)(lab.clear()).columns == [
        "benchmark", "prompt_id", "soc_code", "occ_score", "occ_rank"]


def test_validate_labels_with_gold_labels_is_reproducible() -> None:
    """The per-prompt order of the gold metrics feeds the seeded bootstrap: the same inputs give the same
    intervals (an unordered unique() of the gold rows made them vary from call to call)."""
    ids = [f"p{i:03d}" for i in range(120)]
    bench_prompts = prompts([("b", p, None, None) for p in ids])
    lab = labels([("b", p, 1 + i % 4, "13-2011.00", 1) for i, p in enumerate(ids)]
                 + [("b", p, 4, "15-1252.00", 2) for p in ids[::3]])
    gold = pl.DataFrame([{"benchmark": "b", "prompt_id": p, "task_id": 1 + i % 3, "annotator": "x",
                          "source_file": "g.csv", "line_number": i + 2} for i, p in enumerate(ids)],
                        schema=v.GOLD_SCHEMA)
    first, _ = v.validate_labels(lab, bench_prompts, OCCUPATIONS, TASKS, gold, n_boot=200)
    assert first.filter(pl.col("metric") == "task_f1").height == 1
    for _ in range(3):
        again, _ = v.validate_labels(lab, bench_prompts, OCCUPATIONS, TASKS, gold, n_boot=200)
        assert again.equals(first)


def test_task_statement_gold_matches_a_shortened_statement_once_per_text(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = validation_gold.shortened_match
    monkeypatch.setattr(validation_gold, "shortened_match", lambda text, cands: calls.append(text) or real(text, cands))
    bench_prompts = prompts([("jobbench", f"j{i}", None, "Examine statements.") for i in range(5)])
    gold, unmatched = v.task_statement_gold(bench_prompts, TASKS)
    assert calls == ["Examine statements."] and unmatched == []
    assert gold.select("prompt_id", "task_id", "match").rows() == [(f"j{i}", 1, "shortened") for i in range(5)]


def test_norm_text_is_the_regex_normalisation() -> None:
    """models.validation.soc.norm_text (str.split) gives what re.sub(r"\\s+", " ", ...).strip().casefold() gives,
    on every whitespace and case the O*NET statements and prompts may carry."""
    import re

    from models.validation.soc import norm_text

    spaces = [chr(c) for c in range(0x3000 + 1) if chr(c).isspace()] + ["\u200b", "\ufeff", "\x1c", "\x85"]
    texts = [None, "", "  ", "Estimate  quantities\tand\ncost ", "\u00a0Straße\u2003ΣΑΣ\x1fx", "ﬁle İstanbul"]
    texts += [f"a{s}b{s}{s}c{s}" for s in spaces]
    for text in texts:
        assert norm_text(text) == re.sub(r"\s+", " ", text or "").strip().casefold(), repr(text)


def test_a_new_benchmark_carrying_the_documented_label_fields_is_validated_under_its_own_name() -> None:
    """An audit (benchmarks renamed): task gold was read from `jobbench` alone and `onet_soc_code` never, so a
    blind benchmark giving the documented onet_task / onet_soc_code fields was not validated, and the summary
    said no human-labeled prompt had been labeled."""
    bench_prompts = prompts([("b14", "j1", None, "Examine financial statements."),
                             ("newbench", "n1", None, None), ("newbench", "n2", None, None),
                             ("newbench", "n3", None, None)])
    bench_prompts = bench_prompts.with_columns(
        pl.when(pl.col("prompt_id") == "n1").then(pl.lit("13-2011.00"))
        .when(pl.col("prompt_id") == "n2").then(pl.lit(" 15-1252.00 "))
        .when(pl.col("prompt_id") == "n3").then(pl.lit("99-9999.00")).otherwise(None).alias("onet_soc_code"))
    gold, unmatched = v.task_statement_gold(bench_prompts, TASKS)
    assert gold.select("benchmark", "prompt_id", "task_id").rows() == [("b14", "j1", 1)] and unmatched == []
    coded = v.soc_code_gold(bench_prompts, OCCUPATIONS)
    assert coded.rows() == [("newbench", "n1", ["13-2011.00"]), ("newbench", "n2", ["15-1252.00"])]  # not 99-
    lab = labels([("b14", "j1", 1, "13-2011.00", 1), ("newbench", "n1", 4, "15-1252.00", 1),
                  ("newbench", "n2", 4, "15-1252.00", 1)])
    table, notes = v.validate_labels(lab, bench_prompts, OCCUPATIONS, TASKS, n_boot=50)
    top1 = {b: x for b, m, x in table.select("benchmark", "metric", "value").rows() if m == "occupation_top1"}
    assert top1 == {"b14": 1.0, "newbench": 0.5}
    assert notes["soc_code_gold_prompts"] == 2
    assert table.filter((pl.col("benchmark") == "b14") & (pl.col("metric") == "task_hit_at1"))["value"].item() == 1.0


def test_occupation_titles_of_any_benchmark_are_gold_not_only_gdpvals() -> None:
    """Title gold was read from the benchmark named gdpval alone: GDPval landed under another name (or a new
    benchmark filling the documented `occupation` field) was not validated at all. TheAgentCompany's field is
    a role category, read through its role mapping and not as a title."""
    bench_prompts = prompts([("b09", "g1", "Accountants and Auditors", None),
                             ("b09", "g2", "Software Developers", None), ("b09", "g3", "Astronauts", None),
                             ("theagentcompany", "t1", "Software Development Engineer (SDE)", None)])
    lab = labels([("b09", "g1", 1, "13-2011.00", 1), ("b09", "g2", 1, "13-2011.00", 1),
                  ("theagentcompany", "t1", 4, "15-1252.00", 1)])
    table, notes = v.validate_labels(lab, bench_prompts, OCCUPATIONS, TASKS, n_boot=50,
                                     tac_role_to_soc={"SDE": ["15-1252.00"]})
    got = {(b, m): (x, n) for b, m, x, n in table.select("benchmark", "metric", "value", "n").rows()}
    assert got[("b09", "occupation_top1")] == (0.5, 2)  # g3's title matches nothing: out of the gold set
    assert got[("theagentcompany", "occupation_top1")] == (1.0, 1)
    assert notes["unmatched_titles"] == ["b09: Astronauts"]  # TAC's role is not a title left unmatched
    assert notes["title_gold_prompts"] == 2


def test_the_validation_inputs_hold_prompts_labeled_only_by_code_or_task_id(tmp_path) -> None:
    """A second read: the asset's inputs dropped onet_soc_code (VALIDATION_PROMPT_COLUMNS) and selected no prompt
    giving only onet_soc_code or onet_task_id (HUMAN_LABELED_SQL), so soc_code_gold never saw one."""
    import duckdb

    from assets.label_validation import _validation_inputs
    from resources.dagster_resources import Warehouse

    path = tmp_path / "w.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("create table benchmark_prompts (benchmark varchar, prompt_id varchar, prompt_hash varchar, "
                    "prompt varchar, occupation varchar, onet_soc_code varchar, onet_task_id bigint, "
                    "onet_task varchar)")
        con.execute("insert into benchmark_prompts values ('nb', 'c', 'hc', 't', null, '13-2011.00', null, null), "
                    "('nb', 'i', 'hi', 't', null, null, 2, null), ('nb', 'none', 'hn', 't', null, null, null, null)")
    gold = pl.DataFrame(schema={"benchmark": pl.Utf8, "prompt_id": pl.Utf8, "task_id": pl.Int64})
    prompts_in, _ = _validation_inputs(Warehouse(path=str(path)), gold)
    assert prompts_in.select("prompt_id", "onet_soc_code", "onet_task_id").rows() == [
        ("c", "13-2011.00", None), ("i", None, 2)]
    assert v.soc_code_gold(prompts_in, OCCUPATIONS)["prompt_id"].to_list() == ["c"]
    gold_tasks, _ = v.task_statement_gold(prompts_in, TASKS)
    assert gold_tasks.select("prompt_id", "task_id").rows() == [("i", 2)]
