"""Gold occupation and task sets from the benchmarks' own human labels: occupation titles (GDPval's, JobBench's:
the documented `occupation` field of any benchmark), TheAgentCompany role categories, task statements or ids
(exact or shortened) and O*NET-SOC codes."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

import polars as pl

from models.validation.soc import (
    FALLBACK_TAC_ROLE_TO_SOC,
    TAC_EXCLUDED_ROLES,
    map_titles_to_soc,
    norm_text,
    normalise_role_mapping,
    tac_role,
)

_OCC_GOLD_SCHEMA: dict[str, pl.DataType] = {"benchmark": pl.Utf8, "prompt_id": pl.Utf8,
                                         "gold_soc": pl.List(pl.Utf8)}


# --- gold occupation / task sets from the benchmarks' own human labels -------------------------------------

# a benchmark whose `occupation` field is a role category read through its own mapping (tac_gold), not a title
ROLE_CATEGORY_BENCHMARKS = ("theagentcompany",)


def title_gold(prompts: pl.DataFrame, occupations: pl.DataFrame,
               role_category_benchmarks: Sequence[str] = ROLE_CATEGORY_BENCHMARKS) -> tuple[pl.DataFrame, list[str]]:
    """Prompts whose `occupation` field gives a human occupation title (GDPval's, JobBench's, or any benchmark
    that fills the documented field) -> (benchmark, prompt_id, gold_soc), and the unmatched titles as
    `benchmark: title`. Read for every benchmark, not by name, so a new or renamed benchmark giving titles is
    validated too. Prompts whose title matches nothing are left out of the gold set (and listed)."""
    labeled = prompts.filter(~pl.col("benchmark").is_in(list(role_category_benchmarks))
                             & pl.col("occupation").is_not_null()
                             & (pl.col("occupation").str.strip_chars() != ""))
    mapping, unmatched = map_titles_to_soc(labeled["occupation"].to_list(), occupations)
    rows = [{"benchmark": b, "prompt_id": p, "gold_soc": mapping[t]}
            for b, p, t in labeled.select("benchmark", "prompt_id", "occupation").iter_rows() if t in mapping]
    missing = set(unmatched)
    named = sorted({f"{b}: {t}" for b, t in labeled.select("benchmark", "occupation").iter_rows() if t in missing})
    return pl.DataFrame(rows, schema=_OCC_GOLD_SCHEMA), named


def tac_gold(prompts: pl.DataFrame, role_to_soc: dict | None = None, benchmark: str = "theagentcompany"
             ) -> tuple[pl.DataFrame, list[str]]:
    """TheAgentCompany prompts with a role category -> gold SOC patterns ('Other', unmapped roles excluded).

    Returns the gold frame and the roles without a mapping (excluding 'Other')."""
    mapping = normalise_role_mapping(role_to_soc if role_to_soc is not None else FALLBACK_TAC_ROLE_TO_SOC)
    labeled = prompts.filter((pl.col("benchmark") == benchmark) & pl.col("occupation").is_not_null())
    rows, unmapped = [], set()
    for prompt_id, category in labeled.select("prompt_id", "occupation").iter_rows():
        role = tac_role(category)
        if role in TAC_EXCLUDED_ROLES or role is None:
            continue
        if role not in mapping:
            unmapped.add(role)
            continue
        rows.append({"benchmark": benchmark, "prompt_id": prompt_id, "gold_soc": mapping[role]})
    return pl.DataFrame(rows, schema=_OCC_GOLD_SCHEMA), sorted(unmapped)


_WORD = re.compile(r"[a-z0-9]+")
SHORTENED_MIN_RATIO = 0.75


def _words(text: str) -> set[str]:
    return set(_WORD.findall(norm_text(text)))


def shortened_match(text: str, candidates: Sequence[tuple[int, str, str, set[str]]]
                     ) -> list[tuple[int, str]]:
    """The O*NET statement a shortened statement was cut from: every word of `text` occurs in it, and its
    character similarity (difflib ratio) is the single best and >= SHORTENED_MIN_RATIO."""
    words = _words(text)
    if not words:
        return []
    pool = [(tid, soc, task) for tid, soc, task, task_words in candidates if words <= task_words]
    scored = sorted(((difflib.SequenceMatcher(None, norm_text(text), norm_text(task)).ratio(), tid, soc)
                     for tid, soc, task in pool), reverse=True)
    if not scored or scored[0][0] < SHORTENED_MIN_RATIO:
        return []
    best = [(tid, soc) for ratio, tid, soc in scored if ratio == scored[0][0]]
    return best


def soc_code_gold(prompts: pl.DataFrame, occupations: pl.DataFrame) -> pl.DataFrame:
    """Prompts of any benchmark whose source gives the O*NET-SOC code (the documented `onet_soc_code` field) ->
    (benchmark, prompt_id, gold_soc), codes that are O*NET occupations only. GDPval's titles and
    TheAgentCompany's roles need their own mappings (above); this field needs none, so a new benchmark that
    carries it is validated under its own name."""
    if "onet_soc_code" not in prompts.columns:
        return pl.DataFrame(schema=_OCC_GOLD_SCHEMA)
    known = occupations["onet_soc_code"].unique().to_list()
    labeled = (prompts.select("benchmark", "prompt_id", pl.col("onet_soc_code").cast(pl.Utf8).str.strip_chars())
               .filter(pl.col("onet_soc_code").is_in(known)))
    return labeled.select("benchmark", "prompt_id", pl.concat_list("onet_soc_code").alias("gold_soc")).cast(
        _OCC_GOLD_SCHEMA)


def task_statement_gold(prompts: pl.DataFrame, tasks: pl.DataFrame, benchmark: str | None = None
                        ) -> tuple[pl.DataFrame, list[str]]:
    """Prompts carrying the O*NET task statement they were built on -> the O*NET task(s) with that statement.

    `onet_task_id` wins when the source gives it (match 'id'); else the statement is matched exactly, case-
    and whitespace-insensitive, against onet_tasks.task (match 'exact'; a statement shared by several
    occupations gives several tasks); else, because JobBench's website shortens some statements ("Estimate
    quantities and cost of materials, equipment, or labor." for "... labor to determine project
    feasibility."), the single O*NET statement containing every word with difflib ratio >= 0.75 (match
    'shortened').
    `benchmark`: that benchmark's prompts only; by default every benchmark whose prompts carry the fields (the
    documented landing fields: not JobBench's alone, so a new benchmark that gives them is validated too).
    Returns benchmark, prompt_id, task_id, onet_soc_code, match, and the prompts matched to no task (their
    prompt_id, prefixed "benchmark:" outside JobBench).
    """
    labeled = prompts.filter((pl.col("onet_task").is_not_null() | pl.col("onet_task_id").is_not_null())
                             & ((pl.col("benchmark") == benchmark) if benchmark is not None else pl.lit(True)))
    by_text: dict[str, list[tuple[int, str]]] = {}
    by_id: dict[int, str] = {}
    candidates: list[tuple[int, str, str, set[str]]] = []
    for tid, soc, text in tasks.select("task_id", "onet_soc_code", "task").iter_rows():
        by_text.setdefault(norm_text(text), []).append((int(tid), soc))
        by_id[int(tid)] = soc
    shortened: dict[str, list[tuple[int, str]]] = {}  # a statement shared by many prompts is matched once
    rows, unmatched = [], []
    for name, prompt_id, task_id, text in labeled.select("benchmark", "prompt_id", "onet_task_id",
                                                         "onet_task").iter_rows():
        matches, how = [], None
        if task_id is not None and str(task_id).strip() and int(task_id) in by_id:
            matches, how = [(int(task_id), by_id[int(task_id)])], "id"
        elif text and norm_text(text) in by_text:
            matches, how = by_text[norm_text(text)], "exact"
        elif text:
            if not candidates:
                candidates = [(int(t), s, x, _words(x))
                              for t, s, x in tasks.select("task_id", "onet_soc_code", "task").iter_rows()]
            if text not in shortened:
                shortened[text] = shortened_match(text, candidates)
            matches, how = shortened[text], "shortened"
        if not matches:
            unmatched.append(prompt_id if name == "jobbench" else f"{name}:{prompt_id}")
        rows += [{"benchmark": name, "prompt_id": prompt_id, "task_id": t, "onet_soc_code": s,
                  "match": how} for t, s in matches]
    return pl.DataFrame(rows, schema={"benchmark": pl.Utf8, "prompt_id": pl.Utf8, "task_id": pl.Int64,
                                      "onet_soc_code": pl.Utf8, "match": pl.Utf8}), unmatched


def occupations_of_tasks(gold_tasks: pl.DataFrame) -> pl.DataFrame:
    """Gold task rows -> gold occupation rows (benchmark, prompt_id, gold_soc = SOC codes of gold tasks)."""
    if gold_tasks.is_empty():
        return pl.DataFrame(schema=_OCC_GOLD_SCHEMA)
    return (gold_tasks.filter(pl.col("onet_soc_code").is_not_null())
            .with_columns(pl.col("onet_soc_code").str.slice(0, 7).alias("soc"))
            .group_by("benchmark", "prompt_id", maintain_order=True)
            .agg(pl.col("soc").unique().sort().alias("gold_soc")))
