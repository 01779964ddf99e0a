"""Validating labelers against human labels, and measuring agreement between two labelers.

Human labels available (see `$BENCHMAP_MIRROR/human_labels/SOURCES.md`):
- GDPval `occupation`: an O*NET/BLS occupation title per prompt (110 of 220 prompts).
- TheAgentCompany `occupation`: a role category (SDE, PM, HR, Admin, DS, Finance, Other) per prompt.
- JobBench `onet_task`: the O*NET task statement each of its 6 prompts was built on.
- Gold task labels from annotators (docs/gold_labels.md): prompt -> O*NET task IDs.

Occupation metrics rank the occupations of a prompt from its labeled tasks and match at the 6-digit SOC level
(`13-2011`). A gold occupation is a list of SOC *patterns*: a detailed code (`13-2011`, last digit non-zero)
matches itself; a broad group (`13-1020`) matches any detailed code in it (13-1021/13-1022/13-1023); a minor
group (`15-1200`) and a major group (`15-0000`) likewise.

Every metric is a mean over prompts with n and a 95% percentile-bootstrap interval over prompts, returned in
one tidy frame: benchmark, labeler, labeler_version, metric, value, ci_low, ci_high, n.

No dagster here.
"""

from __future__ import annotations

import csv
import difflib
import math
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats as scipy_stats

from models.errors import InputError
from models.labeling.base import TaskLabel
from models.stats import bootstrap_ci

N_BOOT = 1000
SEED = 0
OCCUPATION_KS: tuple[int, ...] = (1, 5)
TASK_KS: tuple[int, ...] = (1, 5, 10)

METRIC_COLUMNS: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8, "labeler": pl.Utf8, "labeler_version": pl.Utf8, "metric": pl.Utf8,
    "value": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "n": pl.Int64,
}
AGREEMENT_COLUMNS: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8, "labeler_a": pl.Utf8, "labeler_version_a": pl.Utf8, "labeler_b": pl.Utf8,
    "labeler_version_b": pl.Utf8, "metric": pl.Utf8, "value": pl.Float64, "ci_low": pl.Float64,
    "ci_high": pl.Float64, "n": pl.Int64,
}

# Floors the labeler_validation check enforces: "<benchmark>:<metric>" -> minimum point estimate.
_OCC_GOLD_SCHEMA: dict[str, pl.DataType] = {"benchmark": pl.Utf8, "prompt_id": pl.Utf8,
                                         "gold_soc": pl.List(pl.Utf8)}

DEFAULT_FLOORS: dict[str, float] = {"gdpval:occupation_top5": 0.70}

# Titles that name a SOC group rather than one O*NET occupation (checked before the exact title match fails).
GROUP_TITLES: dict[str, list[str]] = {
    "buyers and purchasing agents": ["13-1020"],  # O*NET 13-1021, 13-1022, 13-1023
}

# TheAgentCompany role categories -> SOC patterns; used when models.labeling.offline has no TAC_ROLE_TO_SOC.
# SDE: software developers, QA analysts/testers, web developers, computer programmers.
# PM: project management specialists, IT project managers (15-1299), computer & information systems managers.
# HR: HR managers, HR specialists, compensation/training specialists, HR assistants.
# Admin: administrative services managers, office supervisors, secretaries/admin assistants, office clerks.
# DS: data scientists, statisticians, operations research analysts, database architects.
# Finance: financial managers, accountants/auditors, financial analysts, budget analysts, bookkeeping clerks.
FALLBACK_TAC_ROLE_TO_SOC: dict[str, list[str]] = {
    "SDE": ["15-1252", "15-1253", "15-1254", "15-1251"],
    "PM": ["13-1082", "15-1299", "11-3021", "11-9199"],
    "HR": ["11-3121", "13-1071", "13-1141", "13-1151", "43-4161"],
    "Admin": ["11-3012", "43-1011", "43-6011", "43-6014", "43-9061", "43-4171"],
    "DS": ["15-2051", "15-2041", "15-2031", "15-1243"],
    "Finance": ["11-3031", "13-2011", "13-2051", "13-2031", "43-3031"],
}
TAC_EXCLUDED_ROLES = {"Other"}


# --- SOC helpers --------------------------------------------------------------------------------------------

def soc6(onet_soc_code: str | None) -> str | None:
    """'13-2011.00' -> '13-2011' (the 6-digit SOC code)."""
    if onet_soc_code is None:
        return None
    return str(onet_soc_code)[:7]


def soc_pattern_prefix(pattern: str) -> str:
    """The prefix a 6-digit SOC code must have to match `pattern` (detailed, broad, minor or major group)."""
    code = soc6(pattern) or ""
    if not re.fullmatch(r"\d\d-\d{4}", code):
        raise ValueError(f"not a SOC code or group: {pattern!r}")
    if code.endswith("0000"):
        return code[:3]  # major group '15-'
    if code.endswith("00"):
        return code[:5]  # minor group '15-12'
    if code.endswith("0"):
        return code[:6]  # broad group '13-102'
    return code


def soc_matches(code: str | None, patterns: Iterable[str]) -> bool:
    if code is None:
        return False
    code = soc6(code) or ""
    return any(code.startswith(soc_pattern_prefix(p)) for p in patterns)


def _norm(text: str | None) -> str:
    return re.sub(r"\s+", " ", (text or "")).strip().casefold()


def map_titles_to_soc(titles: Iterable[str], occupations: pl.DataFrame
                      ) -> tuple[dict[str, list[str]], list[str]]:
    """Occupation title -> SOC patterns: exact case-insensitive match on onet_occupations.title, else a known
    SOC group title (GROUP_TITLES). Returns the mapping and the titles left unmatched (sorted)."""
    by_title: dict[str, set[str]] = {}
    for row in occupations.select("onet_soc_code", "title").iter_rows():
        by_title.setdefault(_norm(row[1]), set()).add(soc6(row[0]))
    mapping: dict[str, list[str]] = {}
    unmatched: list[str] = []
    for title in sorted({t for t in titles if t}):
        key = _norm(title)
        if key in by_title:
            mapping[title] = sorted(by_title[key])
        elif key in GROUP_TITLES:
            mapping[title] = list(GROUP_TITLES[key])
        else:
            unmatched.append(title)
    return mapping, unmatched


def tac_role(category: str | None) -> str | None:
    """'Software Development Engineer (SDE)' -> 'SDE'; 'Finance' -> 'Finance'."""
    if not category:
        return None
    found = re.search(r"\(([^)]+)\)\s*$", category)
    return found.group(1).strip() if found else category.strip()


def normalise_role_mapping(mapping: dict) -> dict[str, list[str]]:
    """Accept role -> code, role -> [codes], with O*NET codes ('15-1252.00') or SOC codes/groups."""
    out: dict[str, list[str]] = {}
    for role, codes in mapping.items():
        items = [codes] if isinstance(codes, str) else list(codes)
        out[str(role)] = sorted({soc6(c) for c in items if c})
    return out


# --- occupation ranking -------------------------------------------------------------------------------------

def rank_occupations(labels: pl.DataFrame, keys: Sequence[str] = ("benchmark", "prompt_id"),
                     method: str = "score_sum") -> pl.DataFrame:
    """Rank the 6-digit SOC occupations of each prompt from its task labels.

    method 'score_sum' (default; the rule of models.labeling.offline.occupation_ranking_from_labels): an
    occupation scores the sum of its tasks' scores. 'reciprocal_rank': the sum of 1/rank (scale-free, for
    labelers whose scores are not comparable). Ties go to the better best-task rank, then the code.
    Returns keys..., soc_code, occ_score, occ_rank (1 = best).
    """
    keys = list(keys)
    if method not in {"score_sum", "reciprocal_rank"}:
        raise ValueError("method must be 'score_sum' or 'reciprocal_rank'")
    if labels.is_empty():
        return pl.DataFrame(schema={**{k: labels.schema.get(k, pl.Utf8) for k in keys}, "soc_code": pl.Utf8,
                                    "occ_score": pl.Float64, "occ_rank": pl.Int64})
    weight = (pl.col("score").cast(pl.Float64) if method == "score_sum"
              else 1.0 / pl.col("rank").cast(pl.Float64))
    return (
        labels.with_columns(pl.col("onet_soc_code").str.slice(0, 7).alias("soc_code"))
        .group_by([*keys, "soc_code"])
        .agg(weight.sum().alias("occ_score"), pl.col("rank").min().alias("_best"))
        .sort([*keys, "occ_score", "_best", "soc_code"],
              descending=[False] * len(keys) + [True, False, False])
        .with_columns(pl.int_range(1, pl.len() + 1).over(keys).cast(pl.Int64).alias("occ_rank"))
        .drop("_best")
    )


def per_prompt_ranker(rank_labels: Callable[[list[TaskLabel]], list[str]],
                      keys: Sequence[str] = ("benchmark", "prompt_id")) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """Adapt a one-prompt ranking function (TaskLabels -> SOC codes, best first; e.g. the offline module's
    `occupation_ranking_from_labels(labels, level='soc')`) to the frame interface of rank_occupations."""
    keys = list(keys)

    def rank(labels: pl.DataFrame) -> pl.DataFrame:
        # One pass over the rows (prompts in order of first appearance, each prompt's labels in row order):
        # iterating a polars group_by materializes a frame per prompt, which dominated at 10^4 prompts.
        by_prompt: dict[tuple, list[TaskLabel]] = {}
        for *key, t, s, r, sc in labels.select(*keys, "task_id", "onet_soc_code", "rank", "score").iter_rows():
            by_prompt.setdefault(tuple(key), []).append(TaskLabel(int(t), s, int(r), float(sc)))
        rows: list[dict] = []
        for key, tl in by_prompt.items():
            for i, code in enumerate(rank_labels(tl)):
                rows.append({**dict(zip(keys, key, strict=True)), "soc_code": soc6(code),
                             "occ_score": None, "occ_rank": i + 1})
        schema = {**{k: pl.Utf8 for k in keys}, "soc_code": pl.Utf8, "occ_score": pl.Float64,
                  "occ_rank": pl.Int64}
        return pl.DataFrame(rows, schema=schema)

    return rank


# --- metric rows --------------------------------------------------------------------------------------------

def _nan_to_none(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def metric_row(benchmark: str, labeler: str, labeler_version: str, metric: str, values: Sequence[float],
               n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    """One tidy metric row: mean of per-prompt values (NaN dropped) with its bootstrap interval."""
    interval = bootstrap_ci(np.asarray(values, dtype=float), np.mean, n_boot=n_boot, seed=seed)
    return {"benchmark": benchmark, "labeler": labeler, "labeler_version": labeler_version, "metric": metric,
            "value": _nan_to_none(interval.estimate), "ci_low": _nan_to_none(interval.ci_low),
            "ci_high": _nan_to_none(interval.ci_high), "n": int(interval.n)}


def _labelers(labels: pl.DataFrame) -> list[tuple[str, str]]:
    if labels.is_empty():
        return []
    return [tuple(r) for r in labels.select("labeler", "labeler_version").unique().sort(
        "labeler", "labeler_version").iter_rows()]


def occupation_hits(gold: pl.DataFrame, labels: pl.DataFrame, ks: Sequence[int] = OCCUPATION_KS,
                    rank_fn: Callable[[pl.DataFrame], pl.DataFrame] | None = None) -> pl.DataFrame:
    """Per gold prompt and labeler: hit_top{k} (any of the top-k ranked occupations matches a gold pattern).

    gold: benchmark, prompt_id, gold_soc (list of SOC patterns). labels: prompt_task_labels rows.
    A gold prompt the labeler left unlabeled (e.g. a failure) counts as a miss.
    Returns benchmark, prompt_id, labeler, labeler_version, hit_top{k}... .
    """
    rank_fn = rank_fn or rank_occupations
    rows: list[dict] = []
    gold_by_bench = {b: g for (b,), g in gold.group_by("benchmark")} if not gold.is_empty() else {}
    for labeler, version in _labelers(labels):
        mine = labels.filter((pl.col("labeler") == labeler) & (pl.col("labeler_version") == version))
        ranked = rank_fn(mine)
        ranking: dict[tuple[str, str], list[str]] = {}
        for b, p, soc in ranked.sort("benchmark", "prompt_id", "occ_rank").select(
                "benchmark", "prompt_id", "soc_code").iter_rows():
            ranking.setdefault((b, p), []).append(soc)
        for bench, g in gold_by_bench.items():
            if mine.filter(pl.col("benchmark") == bench).is_empty():
                continue  # this labeler did not label this benchmark at all: no metric, not a zero
            for prompt_id, patterns in g.select("prompt_id", "gold_soc").iter_rows():
                predicted = ranking.get((bench, prompt_id), [])
                row = {"benchmark": bench, "prompt_id": prompt_id, "labeler": labeler,
                       "labeler_version": version}
                for k in ks:
                    row[f"hit_top{k}"] = float(any(soc_matches(c, patterns) for c in predicted[:k]))
                rows.append(row)
    schema = {"benchmark": pl.Utf8, "prompt_id": pl.Utf8, "labeler": pl.Utf8, "labeler_version": pl.Utf8,
              **{f"hit_top{k}": pl.Float64 for k in ks}}
    return pl.DataFrame(rows, schema=schema)


def task_hits(gold_tasks: pl.DataFrame, labels: pl.DataFrame, ks: Sequence[int] = TASK_KS) -> pl.DataFrame:
    """Per gold prompt and labeler: task_hit_at{k} (a gold task among the top-k labeled tasks).

    gold_tasks: benchmark, prompt_id, task_id (one row per acceptable task). Returns benchmark, prompt_id,
    labeler, labeler_version, task_hit_at{k}... .
    """
    rows: list[dict] = []
    gold: dict[tuple[str, str], set[int]] = {}
    for b, p, t in gold_tasks.select("benchmark", "prompt_id", "task_id").iter_rows():
        gold.setdefault((b, p), set())
        if t is not None:
            gold[(b, p)].add(int(t))
    for labeler, version in _labelers(labels):
        mine = labels.filter((pl.col("labeler") == labeler) & (pl.col("labeler_version") == version))
        predicted: dict[tuple[str, str], list[int]] = {}
        for b, p, t in mine.sort("benchmark", "prompt_id", "rank").select(
                "benchmark", "prompt_id", "task_id").iter_rows():
            predicted.setdefault((b, p), []).append(int(t))
        benches = set(mine["benchmark"].unique().to_list())
        for (b, p), tasks in gold.items():
            if b not in benches or not tasks:
                continue
            row = {"benchmark": b, "prompt_id": p, "labeler": labeler, "labeler_version": version}
            for k in ks:
                row[f"task_hit_at{k}"] = float(bool(tasks & set(predicted.get((b, p), [])[:k])))
            rows.append(row)
    schema = {"benchmark": pl.Utf8, "prompt_id": pl.Utf8, "labeler": pl.Utf8, "labeler_version": pl.Utf8,
              **{f"task_hit_at{k}": pl.Float64 for k in ks}}
    return pl.DataFrame(rows, schema=schema)


def set_scores(gold_tasks: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Per gold prompt and labeler: task-set precision, recall and F1 of all labeled tasks vs the gold set.

    A prompt annotated with no task (task_id null: "no O*NET task fits") has undefined recall; its precision
    and F1 are 0 when the labeler labeled anything, undefined otherwise. Undefined values are NaN (dropped
    from means). An unlabeled gold prompt has precision undefined, recall 0, F1 0.
    """
    gold: dict[tuple[str, str], set[int]] = {}
    for b, p, t in gold_tasks.select("benchmark", "prompt_id", "task_id").iter_rows():
        gold.setdefault((b, p), set())
        if t is not None:
            gold[(b, p)].add(int(t))
    rows: list[dict] = []
    for labeler, version in _labelers(labels):
        mine = labels.filter((pl.col("labeler") == labeler) & (pl.col("labeler_version") == version))
        predicted: dict[tuple[str, str], set[int]] = {}
        for b, p, t in mine.select("benchmark", "prompt_id", "task_id").iter_rows():
            predicted.setdefault((b, p), set()).add(int(t))
        benches = set(mine["benchmark"].unique().to_list())
        for (b, p), g in gold.items():
            if b not in benches:
                continue
            pred = predicted.get((b, p), set())
            hit = len(pred & g)
            precision = hit / len(pred) if pred else math.nan
            recall = hit / len(g) if g else math.nan
            if pred and g:
                f1 = 2 * hit / (len(pred) + len(g))
            elif pred or g:
                f1 = 0.0
            else:
                f1 = math.nan
            rows.append({"benchmark": b, "prompt_id": p, "labeler": labeler, "labeler_version": version,
                         "task_precision": precision, "task_recall": recall, "task_f1": f1})
    return pl.DataFrame(rows, schema={"benchmark": pl.Utf8, "prompt_id": pl.Utf8, "labeler": pl.Utf8,
                                      "labeler_version": pl.Utf8, "task_precision": pl.Float64,
                                      "task_recall": pl.Float64, "task_f1": pl.Float64})


def summarise(per_prompt: pl.DataFrame, metrics: Sequence[str], *, pooled_label: str | None = None,
              n_boot: int = N_BOOT, seed: int = SEED) -> list[dict]:
    """Tidy metric rows per (benchmark, labeler, labeler_version) from per-prompt columns; optionally a
    pooled row over all benchmarks labeled `pooled_label` (when more than one benchmark is present)."""
    rows: list[dict] = []
    if per_prompt.is_empty():
        return rows
    groups = per_prompt.group_by("benchmark", "labeler", "labeler_version", maintain_order=True)
    for (bench, labeler, version), g in sorted(groups, key=lambda x: x[0]):
        for metric in metrics:
            rows.append(metric_row(bench, labeler, version, metric, g[metric].to_list(), n_boot, seed))
    if pooled_label and per_prompt["benchmark"].n_unique() > 1:
        for (labeler, version), g in sorted(per_prompt.group_by("labeler", "labeler_version"),
                                            key=lambda x: x[0]):
            for metric in metrics:
                rows.append(metric_row(pooled_label, labeler, version, metric, g[metric].to_list(),
                                       n_boot, seed))
    return rows


# --- gold occupation / task sets from the benchmarks' own human labels -------------------------------------

def gdpval_gold(prompts: pl.DataFrame, occupations: pl.DataFrame, benchmark: str = "gdpval"
                ) -> tuple[pl.DataFrame, list[str]]:
    """GDPval prompts with a human occupation title -> (benchmark, prompt_id, gold_soc), unmatched titles.

    Prompts whose title matches nothing are left out of the gold set (and listed)."""
    labeled = prompts.filter((pl.col("benchmark") == benchmark) & pl.col("occupation").is_not_null()
                             & (pl.col("occupation").str.strip_chars() != ""))
    mapping, unmatched = map_titles_to_soc(labeled["occupation"].to_list(), occupations)
    rows = [{"benchmark": benchmark, "prompt_id": p, "gold_soc": mapping[t]}
            for p, t in labeled.select("prompt_id", "occupation").iter_rows() if t in mapping]
    return pl.DataFrame(rows, schema=_OCC_GOLD_SCHEMA), unmatched


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
    return set(_WORD.findall(_norm(text)))


def _shortened_match(text: str, candidates: Sequence[tuple[int, str, str, set[str]]]
                     ) -> list[tuple[int, str]]:
    """The O*NET statement a shortened statement was cut from: every word of `text` occurs in it, and its
    character similarity (difflib ratio) is the single best and >= SHORTENED_MIN_RATIO."""
    words = _words(text)
    if not words:
        return []
    pool = [(tid, soc, task) for tid, soc, task, task_words in candidates if words <= task_words]
    scored = sorted(((difflib.SequenceMatcher(None, _norm(text), _norm(task)).ratio(), tid, soc)
                     for tid, soc, task in pool), reverse=True)
    if not scored or scored[0][0] < SHORTENED_MIN_RATIO:
        return []
    best = [(tid, soc) for ratio, tid, soc in scored if ratio == scored[0][0]]
    return best


def task_statement_gold(prompts: pl.DataFrame, tasks: pl.DataFrame, benchmark: str = "jobbench"
                        ) -> tuple[pl.DataFrame, list[str]]:
    """Prompts carrying the O*NET task statement they were built on -> the O*NET task(s) with that statement.

    `onet_task_id` wins when the source gives it (match 'id'); else the statement is matched exactly, case-
    and whitespace-insensitive, against onet_tasks.task (match 'exact'; a statement shared by several
    occupations gives several tasks); else, because JobBench's website shortens some statements ("Estimate
    quantities and cost of materials, equipment, or labor." for "... labor to determine project
    feasibility."), the single O*NET statement containing every word with difflib ratio >= 0.75 (match
    'shortened').
    Returns benchmark, prompt_id, task_id, onet_soc_code, match, and the prompt_ids matched to no task.
    """
    labeled = prompts.filter((pl.col("benchmark") == benchmark)
                             & (pl.col("onet_task").is_not_null() | pl.col("onet_task_id").is_not_null()))
    by_text: dict[str, list[tuple[int, str]]] = {}
    by_id: dict[int, str] = {}
    candidates: list[tuple[int, str, str, set[str]]] = []
    for tid, soc, text in tasks.select("task_id", "onet_soc_code", "task").iter_rows():
        by_text.setdefault(_norm(text), []).append((int(tid), soc))
        by_id[int(tid)] = soc
    shortened: dict[str, list[tuple[int, str]]] = {}  # a statement shared by many prompts is matched once
    rows, unmatched = [], []
    for prompt_id, task_id, text in labeled.select("prompt_id", "onet_task_id", "onet_task").iter_rows():
        matches, how = [], None
        if task_id is not None and str(task_id).strip() and int(task_id) in by_id:
            matches, how = [(int(task_id), by_id[int(task_id)])], "id"
        elif text and _norm(text) in by_text:
            matches, how = by_text[_norm(text)], "exact"
        elif text:
            if not candidates:
                candidates = [(int(t), s, x, _words(x))
                              for t, s, x in tasks.select("task_id", "onet_soc_code", "task").iter_rows()]
            if text not in shortened:
                shortened[text] = _shortened_match(text, candidates)
            matches, how = shortened[text], "shortened"
        if not matches:
            unmatched.append(prompt_id)
        rows += [{"benchmark": benchmark, "prompt_id": prompt_id, "task_id": t, "onet_soc_code": s,
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


# --- the validation table -----------------------------------------------------------------------------------

def validate_labels(labels: pl.DataFrame, prompts: pl.DataFrame, occupations: pl.DataFrame,
                    tasks: pl.DataFrame,
                    gold_task_labels: pl.DataFrame | None = None, *, tac_role_to_soc: dict | None = None,
                    rank_fn: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
                    n_boot: int = N_BOOT, seed: int = SEED, set_labels: pl.DataFrame | None = None
                    ) -> tuple[pl.DataFrame, dict]:
    """The labeler_validation table and notes (unmatched titles, unmapped roles, gold coverage).

    labels: prompt_task_labels rows; prompts: benchmark_prompts rows; occupations: onet_occupations;
    tasks: onet_tasks; gold_task_labels: benchmark, prompt_id, task_id (task_id null = no task fits).
    `set_labels`: the label sets, when `labels` holds rankings (a labeler whose ranked candidates are not its
    labels): gold precision/recall/F1 read them, top-k and hit@k read `labels`.
    """
    rows: list[dict] = []
    notes: dict = {}

    gdp, unmatched_titles = gdpval_gold(prompts, occupations)
    notes["gdpval_gold_prompts"] = gdp.height
    notes["gdpval_unmatched_titles"] = unmatched_titles
    tac, unmapped_roles = tac_gold(prompts, tac_role_to_soc)
    notes["tac_gold_prompts"] = tac.height
    notes["tac_unmapped_roles"] = unmapped_roles
    jb_tasks, jb_unmatched = task_statement_gold(prompts, tasks)
    notes["jobbench_gold_prompts"] = jb_tasks["prompt_id"].n_unique() if jb_tasks.height else 0
    notes["jobbench_unmatched_prompts"] = jb_unmatched
    notes["jobbench_match"] = dict(
        jb_tasks.group_by("match").agg(pl.col("prompt_id").n_unique()).iter_rows()) if jb_tasks.height else {}

    occ_gold = pl.concat([gdp, tac, occupations_of_tasks(jb_tasks)])
    occ = occupation_hits(occ_gold, labels, OCCUPATION_KS, rank_fn)
    rows += summarise(occ, [f"hit_top{k}" for k in OCCUPATION_KS], n_boot=n_boot, seed=seed)
    rows += summarise(task_hits(jb_tasks, labels, TASK_KS), [f"task_hit_at{k}" for k in TASK_KS],
                      n_boot=n_boot, seed=seed)

    if gold_task_labels is not None and not gold_task_labels.is_empty():
        # maintain_order: the per-prompt order feeds the seeded bootstrap (else the intervals vary by run)
        gold = gold_task_labels.select("benchmark", "prompt_id", "task_id").unique(maintain_order=True)
        notes["gold_prompts"] = gold.select("benchmark", "prompt_id").unique().height
        rows += summarise(set_scores(gold, labels if set_labels is None else set_labels),
                          ["task_precision", "task_recall", "task_f1"],
                          pooled_label="all", n_boot=n_boot, seed=seed)
        rows += summarise(task_hits(gold, labels, TASK_KS), [f"task_hit_at{k}" for k in TASK_KS],
                          pooled_label="all", n_boot=n_boot, seed=seed)
    else:
        notes["gold_prompts"] = 0

    frame = pl.DataFrame(rows, schema=METRIC_COLUMNS)
    frame = frame.with_columns(pl.col("metric").str.replace(r"^hit_top(\d+)$", "occupation_top$1"))
    return frame.sort("benchmark", "labeler", "labeler_version", "metric"), notes


def check_floors(validation: pl.DataFrame, floors: dict[str, float] | None = None
                 ) -> tuple[list[dict], list[str]]:
    """Compare point estimates with floors ('benchmark:metric' -> minimum) for every labeler present.

    Returns (failures, not_evaluated): failures list the rows below their floor; floors with no matching row
    (e.g. the benchmark is not labeled yet) are reported as not evaluated."""
    floors = DEFAULT_FLOORS if floors is None else floors
    failures, missing = [], []
    for key, floor in floors.items():
        bench, _, metric = key.partition(":")
        if not metric:
            raise ValueError(f"floor keys look like 'benchmark:metric', got {key!r}")
        hits = validation.filter((pl.col("benchmark") == bench) & (pl.col("metric") == metric))
        if hits.is_empty():
            missing.append(key)
            continue
        for row in hits.iter_rows(named=True):
            if row["value"] is None or row["value"] < floor:
                failures.append({**row, "floor": floor})
    return failures, missing


# --- agreement between two labelers -------------------------------------------------------------------------

def _spearman_union(rank_a: dict[str, int], rank_b: dict[str, int]) -> float:
    """Spearman correlation over the union of two occupation rankings.

    An occupation one labeler did not rank gets that labeler's tied bottom rank (the mean of the ranks left
    over). Undefined (NaN) with fewer than two occupations or when one side is constant."""
    union = sorted(set(rank_a) | set(rank_b))
    if len(union) < 2:
        return math.nan

    def ranks(ranking: dict[str, int]) -> list[float]:
        placed = sorted(ranking.items(), key=lambda kv: kv[1])
        position = {code: float(i + 1) for i, (code, _) in enumerate(placed)}
        missing = [c for c in union if c not in position]
        bottom = (len(placed) + 1 + len(union)) / 2.0 if missing else 0.0
        return [position.get(c, bottom) for c in union]

    a, b = ranks(rank_a), ranks(rank_b)
    if len(set(a)) < 2 or len(set(b)) < 2:
        return math.nan
    return float(scipy_stats.spearmanr(a, b).statistic)


def labeler_agreement(labels: pl.DataFrame, prompt_benchmarks: pl.DataFrame, *, n_boot: int = N_BOOT,
                      seed: int = SEED, rank_fn: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
                      labeled: pl.DataFrame | None = None) -> pl.DataFrame:
    """Agreement between every pair of labelers on the prompts both labeled, per benchmark.

    labels: prompt_hash, labeler, labeler_version, task_id, onet_soc_code, rank, score (label_cache exploded).
    prompt_benchmarks: benchmark, prompt_hash (a hash in two benchmarks counts in both).
    Metrics per prompt: task_jaccard (|A∩B|/|A∪B| of task-ID sets), occupation_top1_agreement (same top
    occupation), occupation_spearman (see _spearman_union), task_f1 (2|A∩B|/(|A|+|B|)). Returns
    AGREEMENT_COLUMNS.

    `labeled` (prompt_hash, labeler, labeler_version): every prompt each labeler labeled, including those it
    judged not occupational work (no label rows). With it, a prompt counts as labeled by both even when one
    side has no task: its task_f1 is 0 (1 when both have none), and work_agreement (both work, or both not)
    is reported over all of them; the occupation metrics stay over prompts both gave tasks.
    """
    if labels.is_empty():
        return pl.DataFrame(schema=AGREEMENT_COLUMNS)
    pairs_of = prompt_benchmarks.select("benchmark", "prompt_hash").unique()
    who = _labelers(labels)
    tasks: dict[tuple[str, str], dict[str, set[int]]] = {}
    occ_rank: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
    for labeler, version in who:
        mine = labels.filter((pl.col("labeler") == labeler) & (pl.col("labeler_version") == version))
        task_sets: dict[str, set[int]] = {}
        for h, t in mine.select("prompt_hash", "task_id").iter_rows():
            task_sets.setdefault(h, set()).add(int(t))
        if labeled is not None:
            for (h,) in labeled.filter((pl.col("labeler") == labeler) & (pl.col("labeler_version") == version)
                                       ).select("prompt_hash").iter_rows():
                task_sets.setdefault(h, set())  # labeled, no task: judged not work
        tasks[(labeler, version)] = task_sets
        ranking: dict[str, dict[str, int]] = {}
        ranked = rank_fn(mine) if rank_fn else rank_occupations(mine, keys=["prompt_hash"])
        for h, soc, r in ranked.select(
                "prompt_hash", "soc_code", "occ_rank").iter_rows():
            ranking.setdefault(h, {})[soc] = int(r)
        occ_rank[(labeler, version)] = ranking
    rows: list[dict] = []
    for i, a in enumerate(who):
        for b in who[i + 1:]:
            both = set(tasks[a]) & set(tasks[b])
            if not both:
                continue
            for (bench,), g in sorted(pairs_of.filter(pl.col("prompt_hash").is_in(list(both)))
                                      .group_by("benchmark"), key=lambda x: x[0]):
                hashes = sorted(g["prompt_hash"].to_list())
                jac, top1, rho, f1, work = [], [], [], [], []
                for h in hashes:
                    ta, tb = tasks[a][h], tasks[b][h]
                    work.append(float(bool(ta) == bool(tb)))
                    f1.append(2 * len(ta & tb) / (len(ta) + len(tb)) if ta or tb else 1.0)
                    if not (ta and tb):
                        continue  # one side judged it not work: no task set or occupation to compare
                    jac.append(len(ta & tb) / len(ta | tb))
                    ra, rb = occ_rank[a].get(h, {}), occ_rank[b].get(h, {})
                    if not (ra and rb):
                        continue
                    top_a = min(ra, key=ra.get)
                    top_b = min(rb, key=rb.get)
                    top1.append(float(top_a == top_b))
                    rho.append(_spearman_union(ra, rb))
                metrics = [("task_jaccard", jac), ("occupation_top1_agreement", top1), ("occupation_spearman", rho),
                           ("task_f1", f1)] + ([("work_agreement", work)] if labeled is not None else [])
                for metric, values in metrics:
                    if not values:
                        continue
                    base = metric_row(bench, a[0], a[1], metric, values, n_boot, seed)
                    rows.append({"benchmark": bench, "labeler_a": a[0], "labeler_version_a": a[1],
                                 "labeler_b": b[0], "labeler_version_b": b[1], "metric": metric,
                                 "value": base["value"], "ci_low": base["ci_low"], "ci_high": base["ci_high"],
                                 "n": base["n"]})
    return pl.DataFrame(rows, schema=AGREEMENT_COLUMNS)


# --- gold annotation: export a sample, import the answers ---------------------------------------------------

GOLD_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8, "prompt_id": pl.Utf8, "task_id": pl.Int64, "annotator": pl.Utf8,
    "source_file": pl.Utf8, "line_number": pl.Int64,
}
ANNOTATION_COLUMNS = ["sample_id", "benchmark", "prompt_id", "prompt_hash", "task_ids", "annotator", "notes",
                      "candidate_task_ids", "candidates", "prompt"]


def annotation_sample_keys(pool: pl.DataFrame, *, per_benchmark: int = 20, seed: int = 0) -> pl.DataFrame:
    """The stratified random draw of annotation_sample: up to `per_benchmark` rows per benchmark of `pool`
    (one row per labeled prompt: benchmark, prompt_id and any other columns), in benchmark order and, within a
    benchmark, in prompt_id order. The draw depends only on the sorted pool's keys and the seed, so the keys
    of the labeled prompts alone give the same sample as the full prompt rows."""
    pool = pool.sort("benchmark", "prompt_id")
    rng = np.random.default_rng(seed)
    picked = []
    for _bench, g in sorted(pool.group_by("benchmark"), key=lambda x: x[0]):
        idx = np.sort(rng.choice(g.height, size=min(per_benchmark, g.height), replace=False))
        picked.append(g[idx.tolist()])
    if not picked:
        return pool.clear()
    return pl.concat(picked)


def annotation_rows(sample: pl.DataFrame, labels: pl.DataFrame, tasks: pl.DataFrame,
                    occupations: pl.DataFrame, *, top_k: int = 10, max_prompt_chars: int = 6000) -> pl.DataFrame:
    """The annotation file rows (ANNOTATION_COLUMNS) of sampled prompts, in `sample` order.

    sample: benchmark, prompt_id, prompt_hash, prompt (annotation_sample_keys' rows with their texts).
    labels: at least benchmark, prompt_id, labeler, rank, task_id, onet_soc_code; labels of prompts outside
    the sample are ignored, so only the sample's labels need to be loaded."""
    if sample.is_empty():
        return pl.DataFrame(schema={c: pl.Utf8 for c in ANNOTATION_COLUMNS})
    titles = dict(occupations.select("onet_soc_code", "title").iter_rows())
    statements = dict(tasks.select("task_id", "task").iter_rows())
    top = (labels.join(sample.select("benchmark", "prompt_id"), on=["benchmark", "prompt_id"], how="semi")
           .sort("benchmark", "prompt_id", "labeler", "rank")
           .unique(["benchmark", "prompt_id", "task_id"], keep="first", maintain_order=True)
           .group_by("benchmark", "prompt_id", maintain_order=True).head(top_k))
    cands: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for b, p, t, soc in top.select("benchmark", "prompt_id", "task_id", "onet_soc_code").iter_rows():
        cands.setdefault((b, p), []).append((int(t), soc))
    rows = []
    chosen = sample.select("benchmark", "prompt_id", "prompt_hash", "prompt").iter_rows()
    for i, (b, p, h, text) in enumerate(chosen):
        c = cands.get((b, p), [])
        text = text or ""
        if len(text) > max_prompt_chars:
            text = text[:max_prompt_chars] + f" [... {len(text) - max_prompt_chars} more characters]"
        rows.append({
            "sample_id": f"{b}-{i + 1:04d}", "benchmark": b, "prompt_id": p, "prompt_hash": h, "task_ids": "",
            "annotator": "", "notes": "", "candidate_task_ids": ";".join(str(t) for t, _ in c),
            "candidates": "\n".join(f"{t} | {soc} {titles.get(soc, '')} | {statements.get(t, '')}"
                                    for t, soc in c),
            "prompt": text,
        })
    return pl.DataFrame(rows, schema={c: pl.Utf8 for c in ANNOTATION_COLUMNS})


def annotation_sample(prompts: pl.DataFrame, labels: pl.DataFrame, tasks: pl.DataFrame,
                      occupations: pl.DataFrame, *, per_benchmark: int = 20, top_k: int = 10, seed: int = 0,
                      max_prompt_chars: int = 6000) -> pl.DataFrame:
    """A stratified random sample of prompts (up to `per_benchmark` per benchmark, among labeled prompts)
    with their top-k candidate tasks, in the annotation format of docs/gold_labels.md.

    The annotator fills `task_ids` (and `annotator`, `notes`); the filled file is itself a valid import file.
    In memory: annotation_sample_keys then annotation_rows (the gold_annotation_sample asset runs the same two
    steps on keys drawn in SQL, loading texts and labels of the sampled prompts only).
    """
    labeled = labels.select("benchmark", "prompt_id").unique()
    pool = prompts.join(labeled, on=["benchmark", "prompt_id"], how="semi")
    sample = annotation_sample_keys(pool, per_benchmark=per_benchmark, seed=seed)
    return annotation_rows(sample, labels, tasks, occupations, top_k=top_k, max_prompt_chars=max_prompt_chars)


_ID_SPLIT = re.compile(r"[;,|\s]+")


def read_gold_csv(path: str | Path) -> pl.DataFrame:
    """One annotator CSV (docs/gold_labels.md) -> long rows: benchmark, prompt_id, task_id, annotator,
    source_file, line_number. Wide (`task_ids`, several IDs per row) and long (`task_id`) layouts are
    accepted; an empty `task_ids` means "no O*NET task fits" (one row with task_id null). Raises InputError
    naming the file and line for a missing column, an empty prompt_id or a task ID that is not an integer."""
    path = Path(path)
    rows: list[dict] = []
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = [h.strip() for h in next(reader, [])]
        if "prompt_id" not in header or not ({"task_ids", "task_id"} & set(header)):
            raise InputError(f"a gold label file needs the columns prompt_id and task_ids (or task_id); "
                             f"found {header}", path=path, line=1)
        id_column = "task_ids" if "task_ids" in header else "task_id"
        end_of_previous = reader.line_num
        for cells in reader:
            line = end_of_previous + 1  # a quoted field may span lines: report where the record starts
            end_of_previous = reader.line_num
            if not any(c.strip() for c in cells):
                continue  # a blank line
            record = dict(zip(header, cells, strict=False))
            prompt_id = (record.get("prompt_id") or "").strip()
            if not prompt_id:
                raise InputError("empty prompt_id", path=path, line=line)
            raw = (record.get(id_column) or "").strip()
            ids: list[int | None] = []
            for token in filter(None, _ID_SPLIT.split(raw)):
                try:
                    ids.append(int(token[:-2]) if re.fullmatch(r"\d+\.0", token) else int(token))
                except ValueError:
                    raise InputError(f"task ID {token!r} is not an integer", path=path, line=line,
                                     record=prompt_id) from None
            base = {"benchmark": (record.get("benchmark") or "").strip() or None, "prompt_id": prompt_id,
                    "annotator": (record.get("annotator") or "").strip() or None, "source_file": path.name,
                    "line_number": line}
            for task_id in ids or [None]:
                rows.append({**base, "task_id": task_id})
    return pl.DataFrame(rows, schema=GOLD_SCHEMA)


def resolve_gold(gold: pl.DataFrame, prompts: pl.DataFrame, tasks: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    """Attach benchmarks to gold rows that lack one (prompt_id must then be unique across benchmarks), drop
    rows for prompts not in benchmark_prompts (reported), and refuse task IDs absent from onet_tasks.

    A prompt annotated with some tasks loses any "no task fits" row (a prompt cannot be both)."""
    notes: dict = {"gold_rows_read": gold.height}
    if gold.is_empty():
        return gold, notes
    ids = prompts.select("benchmark", "prompt_id").unique()
    bench_of = ids.group_by("prompt_id").agg(pl.col("benchmark").alias("_benches"))
    resolved = gold.join(bench_of, on="prompt_id", how="left")
    for row in resolved.filter(pl.col("benchmark").is_null() & (pl.col("_benches").list.len() > 1)).head(1) \
            .iter_rows(named=True):
        raise InputError(f"prompt_id {row['prompt_id']!r} exists in several benchmarks {row['_benches']}: "
                         f"add a benchmark column", path=row["source_file"], line=row["line_number"])
    resolved = resolved.with_columns(
        pl.coalesce(pl.col("benchmark"), pl.col("_benches").list.first()).alias("benchmark")).drop("_benches")
    known = resolved.join(ids, on=["benchmark", "prompt_id"], how="semi")
    unknown = resolved.join(ids, on=["benchmark", "prompt_id"], how="anti")
    notes["gold_unknown_prompts"] = sorted(
        {f"{r[0]}/{r[1]}" for r in unknown.select("benchmark", "prompt_id").iter_rows()})
    valid_tasks = set(tasks["task_id"].to_list())
    for row in known.filter(pl.col("task_id").is_not_null() & ~pl.col("task_id").is_in(list(valid_tasks))) \
            .head(1).iter_rows(named=True):
        raise InputError(f"task ID {row['task_id']} is not an O*NET task in onet_tasks",
                         path=row["source_file"], line=row["line_number"], record=row["prompt_id"])
    has_tasks = known.filter(pl.col("task_id").is_not_null()).select("benchmark", "prompt_id").unique()
    empty_rows = known.filter(pl.col("task_id").is_null()).join(has_tasks, on=["benchmark", "prompt_id"],
                                                                 how="anti")
    out = pl.concat([known.filter(pl.col("task_id").is_not_null()), empty_rows]) \
        .unique(["benchmark", "prompt_id", "task_id", "annotator"], keep="first", maintain_order=True) \
        .select(list(GOLD_SCHEMA)).sort("benchmark", "prompt_id", "task_id", nulls_last=True)
    notes["gold_prompts"] = out.select("benchmark", "prompt_id").unique().height
    return out, notes
