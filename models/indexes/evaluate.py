"""Evaluating an index: the measured properties of each landed benchmark, and which benchmarks an index
includes and why (`evaluate_index`: entries, then rules, then the cap per group; `evaluate_indexes` for
several files, the broken ones reported beside the others' membership)."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from models.coverage import select_labeler
from models.errors import InputError
from models.indexes.definition import (
    ALL_INDEX,
    MEMBERSHIP_SCHEMA,
    METADATA_COLUMNS,
    UNKNOWN_WHY,
    Assignment,
    Cap,
    Entry,
    IndexDefinition,
    Rule,
    all_index,
    parse_index,
)
from models.indexes.groups import (
    GROUP_SHARE_SCHEMA,
    RULE_ESTIMATED,
    RULE_LABELS,
    RULE_TARGET,
    group_properties,
    runner_up,
    share_of,
)


def measured_properties(
    benchmarks: pl.DataFrame,
    label_counts: pl.DataFrame | None = None,
    prompt_work: pl.DataFrame | None = None,
    *,
    labeler: str | None = None,
    group_shares: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per landed benchmark: the METADATA_COLUMNS plus the PROPERTIES (null where unknown), and
    `major_group_rule` (how major_group was read) and `major_group_shares` (every group's estimated share).

    work_share: mean of prompt_work.is_work over the benchmark's prompts with a decision, of the labeler the
    coverage uses (null when prompt_work is absent or has no row of the benchmark). labeled_major_group: from
    the top-ranked labels (task_label_counts rows with min_depth 1) of that labeler. estimated_major_group:
    the largest of `group_shares` (benchmark, major_group_code, share: each benchmark's estimated share of its
    work per SOC major group, e.g. groups.shares_from_benchmark_estimates). major_group: target_major_group,
    else estimated_major_group, else labeled_major_group (an index's [[assign]] entry wins over all three, at
    evaluation)."""
    frame = benchmarks.select(
        pl.col("benchmark").cast(pl.Utf8),
        *[(pl.col(c) if c in benchmarks.columns else pl.lit(None)).alias(c) for c in METADATA_COLUMNS],
    ).unique("benchmark", keep="first").sort("benchmark")
    frame = frame.with_columns(pl.col("target_major_group").cast(pl.Utf8))

    work = pl.DataFrame(schema={"benchmark": pl.Utf8, "work_share": pl.Float64, "n_work_judged": pl.Int64})
    if prompt_work is not None and prompt_work.height and {"benchmark", "is_work"} <= set(prompt_work.columns):
        chosen, _ = select_labeler(prompt_work, labeler) if "labeler" in prompt_work.columns else (prompt_work, None)
        keys = [c for c in ("benchmark", "prompt_id") if c in chosen.columns]
        judged = chosen.filter(pl.col("is_work").is_not_null()).unique(keys, keep="first")
        work = judged.group_by("benchmark").agg(
            pl.col("is_work").cast(pl.Float64).mean().alias("work_share"),
            pl.len().cast(pl.Int64).alias("n_work_judged"),
        )
    frame = frame.join(work, on="benchmark", how="left")

    groups = pl.DataFrame(schema={"benchmark": pl.Utf8, "labeled_major_group": pl.Utf8,
                                  "labeled_major_group_share": pl.Float64})
    if label_counts is not None and label_counts.height:
        counts, _ = select_labeler(label_counts, labeler)
        if "min_depth" in counts.columns:
            counts = counts.filter(pl.col("min_depth") == 1)
        per_group = (
            counts.with_columns((pl.col("onet_soc_code").str.slice(0, 2) + "-0000").alias("group"))
            .group_by("benchmark", "group").agg(pl.col("n_prompts").sum())
        )
        groups = (
            per_group.with_columns((pl.col("n_prompts") / pl.col("n_prompts").sum().over("benchmark"))
                                   .alias("labeled_major_group_share"))
            .sort(["benchmark", "n_prompts", "group"], descending=[False, True, False])
            .unique("benchmark", keep="first")
            .select("benchmark", pl.col("group").alias("labeled_major_group"), "labeled_major_group_share")
        )
    frame = frame.join(groups, on="benchmark", how="left")
    estimated = group_properties(group_shares if group_shares is not None else pl.DataFrame(schema=GROUP_SHARE_SCHEMA))
    frame = frame.join(estimated, on="benchmark", how="left")
    target = pl.col("target_major_group").str.extract(r"^(\d{2})", 1) + "-0000"
    return frame.with_columns(
        pl.coalesce(target, pl.col("estimated_major_group"), pl.col("labeled_major_group")).alias("major_group"),
        pl.when(target.is_not_null()).then(pl.lit(RULE_TARGET))
        .when(pl.col("estimated_major_group").is_not_null()).then(pl.lit(RULE_ESTIMATED))
        .when(pl.col("labeled_major_group").is_not_null()).then(pl.lit(RULE_LABELS))
        .otherwise(pl.lit(None, dtype=pl.Utf8)).alias("major_group_rule"),
    )


# --------------------------------------------------------------------------------------------- evaluation
def _show(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "unknown"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _passes(value: Any, op: str, target: Any) -> bool:
    if op == "==":
        return bool(value == target)
    if op == "!=":
        return bool(value != target)
    if op == "in":
        return value in target
    if op == "not_in":
        return value not in target
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return {">": value > target, ">=": value >= target, "<": value < target, "<=": value <= target}[op]


def rule_text(rule: Rule) -> str:
    return f"{rule.column} {rule.op} {_show(rule.value) if not isinstance(rule.value, list) else rule.value}"


@dataclass
class _Decision:
    included: bool
    decided_by: str
    reason: str
    values: list[str] = field(default_factory=list)
    unknown_passed: list[str] = field(default_factory=list)


def evaluate_index(definition: IndexDefinition, properties: pl.DataFrame,
                   available: Collection[str] = ()) -> pl.DataFrame:
    """Membership rows (MEMBERSHIP_SCHEMA) of one index over the landed benchmarks in `properties`
    (`measured_properties`). Raises `InputError` (file and line) for a named benchmark that never landed and
    is not in `available` (the benchmark folders of the landing roots and the benchmarks the vendored reference
    sampled: an entry for one of those that this warehouse did not land applies to nothing here, as the shipped
    file's entries for the mirror's benchmarks in a warehouse of a few of them)."""
    landed = set(properties["benchmark"].to_list())
    _check_named_landed(definition, landed, set(available))
    includes = {e.benchmark: e for e in definition.include}
    excludes = {e.benchmark: e for e in definition.exclude}
    value_of = _Values(definition, properties)
    decisions = {b: _decide(definition, b, includes, excludes, value_of) for b in sorted(landed)}
    if definition.cap is not None:
        _apply_cap(definition, definition.cap, decisions, includes, value_of)
    return _membership_frame(definition, decisions, value_of)


def _check_named_landed(definition: IndexDefinition, landed: set[str], available: set[str]) -> None:
    """Every benchmark an include, exclude, assume or assign entry names must have landed or be in a landing
    root or known to the reference (`available`): a name in neither is a typo, an entry that would silently
    apply to nothing."""
    named = [(e.benchmark, e.line, "include") for e in definition.include]
    named += [(e.benchmark, e.line, "exclude") for e in definition.exclude]
    named += [(a.benchmark, a.line, "assume") for a in definition.assumptions]
    named += [(a.benchmark, a.line, "assign") for a in definition.assign]
    for benchmark, line, kind in named:
        if benchmark not in landed and benchmark not in available:
            # "never landed" was false for a benchmark retired since (a probe, 2026-12-07): its entry must go too
            raise InputError(f"{kind} names benchmark {benchmark!r}, which is not landed here (a typo, or a "
                             "benchmark retired since: then remove the entry), is in no landing folder and not in "
                             f"the reference's sampling design (landed: {', '.join(sorted(landed))})",
                             path=definition.path, line=line)


class _Values:
    """value_of(benchmark, column) -> (value, how it reads in values_read): the measured or metadata value,
    else the index's assumption, with why it is unknown or where it came from."""

    def __init__(self, definition: IndexDefinition, properties: pl.DataFrame) -> None:
        self.definition = definition
        self.records = {r["benchmark"]: r for r in properties.iter_rows(named=True)}
        self.assumed = {(a.benchmark, a.column): a for a in definition.assumptions}
        self.assigned: dict[str, Assignment] = {a.benchmark: a for a in definition.assign}

    def group(self, benchmark: str) -> tuple[str | None, str | None, float | None]:
        """(major group, the rule that placed it, its share of the benchmark's estimated work)."""
        record = self.records[benchmark]
        assignment = self.assigned.get(benchmark)
        if assignment is not None:
            rule = f"assign entry ({self.definition.where(assignment.line)}): {assignment.reason}"
            return assignment.major_group, rule, share_of(record, assignment.major_group)
        group = record.get("major_group")
        return group, record.get("major_group_rule"), share_of(record, group)

    def __call__(self, benchmark: str, column: str) -> tuple[Any, str]:
        record = self.records[benchmark]
        if column == "major_group" and benchmark in self.assigned:
            group, rule, share = self.group(benchmark)
            return group, f"major_group={group} ({rule}; {_share_text(share, record, group)})"
        value = record.get(column)
        assumption = self.assumed.get((benchmark, column))
        if value is None and assumption is not None:
            return assumption.value, (f"{column}={_show(assumption.value)} (assumed by "
                                      f"{self.definition.where(assumption.line)}: {assumption.reason})")
        shown = f"{column}={_show(value)}"
        if value is None and column in UNKNOWN_WHY:
            shown += f" ({UNKNOWN_WHY[column]})"
        if column == "work_share" and value is not None:
            shown += f" (n={record.get('n_work_judged')})"
        if column == "major_group" and value is not None:
            shown += f" ({record.get('major_group_rule')}; {_share_text(share_of(record, value), record, value)})"
        return value, shown


def _share_text(share: float | None, record: dict | None = None, group: str | None = None) -> str:
    if share is None:
        return "no estimated share"
    second = runner_up(record, group) if record is not None else None
    # the next group beside it: a lead of a few points is within the estimate's error, and an [[assign]] decides
    return f"{share:.0%} of its estimated work" + (f", next {second[0]} {second[1]:.0%}" if second else "")


def _decide(definition: IndexDefinition, benchmark: str, includes: Mapping[str, Entry],
            excludes: Mapping[str, Entry], value_of: _Values) -> _Decision:
    """One benchmark's decision before the cap: an exclude entry, else an include entry, else the rules in
    file order (the first failing one decides)."""
    if benchmark in excludes:
        entry = excludes[benchmark]
        return _Decision(False, f"exclude entry ({definition.where(entry.line)})", entry.reason)
    if benchmark in includes:
        entry = includes[benchmark]
        return _Decision(True, f"include entry ({definition.where(entry.line)})", entry.reason)
    decision = _Decision(True, "every rule passed" if definition.rules else "no rules: every landed benchmark",
                         "")
    for rule in definition.rules:
        value, shown = value_of(benchmark, rule.column)
        decision.values.append(shown)
        label = f"rule {rule.name} ({rule_text(rule)}; {definition.where(rule.line)})"
        if value is None:
            if rule.unknown == "include":
                decision.unknown_passed.append(f"{rule.name}: {rule.column} unknown, let through by "
                                               "unknown = \"include\"")
                continue
            decision.included, decision.decided_by = False, label
            why = f" ({UNKNOWN_WHY[rule.column]})" if rule.column in UNKNOWN_WHY else ""
            decision.reason = f"{rule.column} is unknown{why} and the rule excludes unknown values"
            return decision
        if not _passes(value, rule.op, rule.value):
            decision.included, decision.decided_by = False, label
            decision.reason = f"{shown} fails {rule_text(rule)}" + (f": {rule.reason}" if rule.reason else "")
            return decision
    return decision


def _apply_cap(definition: IndexDefinition, cap: Cap, decisions: dict[str, _Decision],
               includes: Mapping[str, Entry], value_of: _Values) -> None:
    """At most cap.max included benchmarks per group, best by the tie-break first (include entries first and
    never dropped); a benchmark of unknown group is dropped or left uncapped per cap.unknown_group."""
    group_of = {b: value_of(b, cap.group) for b in decisions}
    in_groups: dict[Any, list[str]] = {}
    for benchmark, decision in decisions.items():
        if not decision.included:
            continue
        group, shown = group_of[benchmark]
        decision.values.append(shown)
        if group is None:
            if cap.unknown_group == "exclude" and benchmark not in includes:
                decision.included = False
                decision.decided_by = f"cap ({definition.where(cap.line)})"
                decision.reason = f"{cap.group} is unknown, so the cap per group cannot place it"
            continue
        in_groups.setdefault(group, []).append(benchmark)
    ties = ", ".join(f"{c} {'desc' if d else 'asc'}" for c, d in cap.tie_break)
    for group, members in in_groups.items():
        ranked = sorted(members, key=lambda b: _tie_key(b, cap, includes, value_of))
        for position, benchmark in enumerate(ranked, start=1):
            decision = decisions[benchmark]
            for column, _ in cap.tie_break:
                if column != "benchmark" and column not in [r.column for r in definition.rules]:
                    decision.values.append(value_of(benchmark, column)[1])
            if position > cap.max and benchmark not in includes:
                decision.included = False
                decision.decided_by = f"cap ({definition.where(cap.line)})"
                decision.reason = (f"rank {position} of {len(ranked)} in {group} by {ties}; the cap keeps "
                                   f"{cap.max}" + (f": {cap.reason}" if cap.reason else ""))
            elif decision.included and benchmark not in includes:
                decision.reason = f"rank {position} of {len(ranked)} in {group} by {ties} (cap {cap.max})"


def _tie_key(benchmark: str, cap: Cap, includes: Mapping[str, Entry], value_of: _Values) -> tuple[Any, ...]:
    """The cap's sort key: include entries first, then the tie-break columns (unknown values last)."""
    parts: list[Any] = [benchmark not in includes]  # include entries first: never capped
    for column, descending in cap.tie_break:
        value = benchmark if column == "benchmark" else value_of(benchmark, column)[0]
        missing = value is None
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, int | float) and descending:
            value = -value
        elif descending and isinstance(value, str):  # the end marks 1, above every -ord: "webx" before "web"
            value = (*(-ord(c) for c in value), 1)
        parts += [missing, value if not missing else 0]
    return tuple(parts)


def _membership_frame(definition: IndexDefinition, decisions: Mapping[str, _Decision],
                      value_of: _Values) -> pl.DataFrame:
    rows = []
    for benchmark, decision in sorted(decisions.items()):
        group, group_rule, group_share = value_of.group(benchmark)
        rows.append({
            "benchmark_index": definition.name,
            "version": definition.version,
            "title": definition.title,
            "benchmark": benchmark,
            "included": decision.included,
            "decided_by": decision.decided_by,
            "reason": decision.reason or None,
            "values_read": "; ".join(dict.fromkeys(decision.values)) or None,
            "unknown_passed": "; ".join(decision.unknown_passed) or None,
            "major_group": group,
            "major_group_rule": group_rule,
            "major_group_share": group_share,
            "index_file": definition.path,
        })
    return pl.DataFrame(rows, schema=MEMBERSHIP_SCHEMA)


@dataclass
class IndexResult:
    membership: pl.DataFrame
    errors: dict[str, str]  # index name -> error message (file and line)
    definitions: dict[str, IndexDefinition]


def evaluate_indexes(files: Mapping[str, str | bytes], properties: pl.DataFrame,
                     available: Collection[str] = ()) -> IndexResult:
    """Evaluate every index file (path -> text, or its bytes, read as UTF-8). A broken file is reported in
    `errors` and left out; the others still compute. `all` is always every landed benchmark: built in when no
    file defines it or its file is broken or selects (an exclude in all.toml left the figures of every benchmark
    under a count of one fewer; a broken one published an `all` of 0 benchmarks). `available`: the benchmark
    folders of the landing roots and the reference's benchmarks (evaluate_index)."""
    frames: list[pl.DataFrame] = []
    errors: dict[str, str] = {}
    definitions: dict[str, IndexDefinition] = {}
    for path, raw in sorted(files.items()):
        name = path.rsplit("/", 1)[-1].removesuffix(".toml")
        try:
            definition = parse_index(index_text(raw, path), path, name)
            if name == ALL_INDEX:
                refuse_a_selection(definition)
            frames.append(evaluate_index(definition, properties, available))
            definitions[name] = definition
        except InputError as exc:
            errors[name] = str(exc)
    if ALL_INDEX not in definitions:
        definitions[ALL_INDEX] = all_index()
        frames.append(evaluate_index(definitions[ALL_INDEX], properties))
    membership = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=MEMBERSHIP_SCHEMA)
    return IndexResult(sort_membership(membership), errors, definitions)


def index_text(raw: str | bytes, path: str) -> str:
    """An index file's text: UTF-8, a byte-order mark dropped (it read as "not valid TOML ... line 1, column
    1"); InputError naming the file and line when it is not UTF-8 (it stopped every index, naming no file)."""
    if isinstance(raw, str):
        return raw.removeprefix("\ufeff")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 (byte 0x{raw[exc.start]:02x}): save the file as UTF-8", path=path,
                         line=raw[:exc.start].count(b"\n") + 1) from None


def refuse_a_selection(definition: IndexDefinition) -> None:
    """InputError when the `all` index's file selects: `all` is every landed benchmark (the published headline),
    so its file gives the title, version and description, and [[assign]]; a selection is an index of its own."""
    selecting = [key for key, used in (("rule", definition.rules), ("assume", definition.assumptions),
                                       ("include", definition.include), ("exclude", definition.exclude),
                                       ("cap", definition.cap)) if used]
    if selecting:
        raise InputError(f"the index {ALL_INDEX!r} is every landed benchmark: its file may not hold "
                         f"{', '.join(f'[{k}]' if k == 'cap' else f'[[{k}]]' for k in selecting)} (write the "
                         "selection in an index file of its own); the built-in index 'all' is used", path=definition.path,
                         line=1)


def sort_membership(membership: pl.DataFrame) -> pl.DataFrame:
    """`all` first, then the other indexes by name; benchmarks by name."""
    return membership.sort(
        [pl.col("benchmark_index") != ALL_INDEX, pl.col("benchmark_index"), pl.col("benchmark")]
    )
