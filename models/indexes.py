"""Named, versioned benchmark indexes: which landed benchmarks count, by criteria stated in a file.

An index is a TOML file `data/indexes/<name>.toml` (the file name is the index name):

    title = "Economic-work agentic index"
    version = "1"
    description = "..."                      # optional

    [[rule]]                                 # every rule must pass; the first one that fails decides
    name = "enough_public_tasks"             # optional (default: the column)
    column = "public_items"                  # a benchmarks column or a measured property (PROPERTIES)
    op = ">="                                # == != > >= < <= in not_in
    value = 25
    unknown = "exclude"                      # a null value: "exclude" (default) or "include" (then flagged)
    reason = "the Benchmark Map needs at least 25 public tasks"

    [[assume]]                               # a value the index asserts where the metadata has none
    benchmark = "osworld"
    column = "agentic"
    value = true
    reason = "SOURCES.md: tasks run by an agent in an Ubuntu VM"

    [[include]]                              # in, whatever the rules say (never dropped by the cap)
    benchmark = "..."
    reason = "..."

    [[exclude]]                              # out, whatever the rules say
    benchmark = "..."
    reason = "..."

    [cap]                                    # at most `max` benchmarks per SOC major group
    max = 3
    group = "major_group"                    # the property grouping benchmarks (default major_group)
    tie_break = ["work_share desc", "public_items desc", "benchmark asc"]
    unknown_group = "exclude"                # a benchmark whose group is unknown: "exclude" or "uncapped"
    reason = "..."

Evaluation (`evaluate_index`), per landed benchmark: an exclude entry, else an include entry, else the rules
in file order (a null value fails the rule unless the rule says `unknown = "include"`, and then the row lists
it in `unknown_passed`); the benchmarks passing every rule are then capped per group, best by the tie-break
first. Every row says what decided (`decided_by`), why (`reason`) and every value read (`values_read`), so
unknown metadata never passes a rule silently.

Parsing (`parse_index`) takes the file's text and raises `InputError` naming the file and line for an unknown
field, an unknown column, a bad operator or value; `evaluate_index` raises it for a benchmark that was never
landed. `evaluate_indexes` evaluates several files and returns the errors of the broken ones next to the
membership of the others.

No dagster, no file I/O here: the asset reads the files and passes their text.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from models.coverage import select_labeler
from models.errors import InputError

ALL_INDEX = "all"  # every landed benchmark: today's numbers
NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
OPERATORS = ("==", "!=", ">", ">=", "<", "<=", "in", "not_in")
UNKNOWN_POLICIES = ("exclude", "include")
GROUP_POLICIES = ("exclude", "uncapped")

# Columns of the `benchmarks` table a rule may read (metadata from benchmark.toml and landing counts) ...
METADATA_COLUMNS: tuple[str, ...] = (
    "title", "version", "source_url", "license", "agentic", "public_items", "saturated",
    "target_major_group", "n_prompts", "n_results", "n_rejects",
)
# ... and the properties measured here.
PROPERTIES: dict[str, str] = {
    "work_share": "share of the benchmark's prompts the labeler judged occupational work (prompt_work.is_work)",
    "n_work_judged": "prompts with a work decision in prompt_work",
    "labeled_major_group": "the SOC major group holding most of the benchmark's top-ranked task labels",
    "labeled_major_group_share": "share of the benchmark's top-ranked labels in labeled_major_group",
    "major_group": "target_major_group when benchmark.toml gives it, else labeled_major_group",
}
COLUMNS: tuple[str, ...] = METADATA_COLUMNS + tuple(PROPERTIES)
# why a measured property can be unknown (shown with the unknown value)
UNKNOWN_WHY: dict[str, str] = {
    "work_share": "no work decision in prompt_work for this benchmark",
    "n_work_judged": "no work decision in prompt_work for this benchmark",
    "labeled_major_group": "no top-ranked task label",
    "labeled_major_group_share": "no top-ranked task label",
    "major_group": "no target_major_group and no top-ranked task label",
}

_TOP_KEYS = {"title", "version", "description", "rule", "assume", "include", "exclude", "cap"}
_RULE_KEYS = {"name", "column", "op", "value", "unknown", "reason"}
_ENTRY_KEYS = {"benchmark", "reason"}
_ASSUME_KEYS = {"benchmark", "column", "value", "reason"}
_CAP_KEYS = {"max", "group", "tie_break", "unknown_group", "reason"}
_SECTION = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-]+)\s*\]\]?")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=")

MEMBERSHIP_SCHEMA: dict[str, pl.DataType] = {
    "benchmark_index": pl.Utf8(),
    "version": pl.Utf8(),
    "title": pl.Utf8(),
    "benchmark": pl.Utf8(),
    "included": pl.Boolean(),
    "decided_by": pl.Utf8(),
    "reason": pl.Utf8(),
    "values_read": pl.Utf8(),
    "unknown_passed": pl.Utf8(),
    "major_group": pl.Utf8(),
    "index_file": pl.Utf8(),
}


# --------------------------------------------------------------------------------------------- the file
@dataclass(frozen=True)
class Rule:
    name: str
    column: str
    op: str
    value: Any
    unknown: str
    reason: str
    line: int


@dataclass(frozen=True)
class Entry:
    benchmark: str
    reason: str
    line: int


@dataclass(frozen=True)
class Assumption:
    benchmark: str
    column: str
    value: Any
    reason: str
    line: int


@dataclass(frozen=True)
class Cap:
    max: int
    group: str
    tie_break: tuple[tuple[str, bool], ...]  # (column, descending)
    unknown_group: str
    reason: str
    line: int


@dataclass(frozen=True)
class IndexDefinition:
    name: str
    title: str
    version: str
    description: str
    path: str
    rules: tuple[Rule, ...] = ()
    assumptions: tuple[Assumption, ...] = ()
    include: tuple[Entry, ...] = ()
    exclude: tuple[Entry, ...] = ()
    cap: Cap | None = None

    def where(self, line: int) -> str:
        return f"{self.path}:{line}"


class _Lines:
    """Line numbers of the sections and keys of a TOML text (tomllib gives none)."""

    def __init__(self, text: str) -> None:
        self.sections: dict[tuple[str, int], tuple[int, int]] = {}  # (name, occurrence) -> (first, last)
        self.top_end = 0
        counts: dict[str, int] = {}
        self.lines = text.split("\n")
        current: tuple[str, int] | None = None
        for number, line in enumerate(self.lines, start=1):
            found = _SECTION.match(line)
            if found:
                name = found.group(2)
                occurrence = counts.get(name, 0)
                counts[name] = occurrence + 1
                if current is not None:
                    self.sections[current] = (self.sections[current][0], number - 1)
                current = (name, occurrence)
                self.sections[current] = (number, number)
            elif current is None:
                self.top_end = number
        if current is not None:
            self.sections[current] = (self.sections[current][0], len(self.lines))

    def section(self, name: str, occurrence: int = 0) -> int:
        return self.sections.get((name, occurrence), (1, 1))[0]

    def key(self, key: str, section: str | None = None, occurrence: int = 0) -> int:
        if section is None:
            first, last = 1, max(self.top_end, 1)
        else:
            first, last = self.sections.get((section, occurrence), (1, len(self.lines)))
        for number in range(first, last + 1):
            found = _KEY.match(self.lines[number - 1])
            if found and found.group(1) == key:
                return number
        return first


def _check_keys(table: Mapping[str, Any], allowed: set[str], path: str, lines: _Lines,
                section: str | None, occurrence: int = 0) -> None:
    for key in table:
        if key not in allowed:
            where = "top level" if section is None else f"[{section}]"
            raise InputError(f"unknown field {key!r} in {where}; allowed: {', '.join(sorted(allowed))}",
                             path=path, line=lines.key(key, section, occurrence))


def _text(table: Mapping[str, Any], key: str, path: str, line: int, *, required: bool = True) -> str:
    value = table.get(key)
    if value is None:
        if required:
            raise InputError(f"field {key!r} is required", path=path, line=line)
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise InputError(f"field {key!r} must be a non-empty string, got {value!r}", path=path, line=line)
    return value.strip()


def _column(value: Any, path: str, line: int) -> str:
    if value not in COLUMNS:
        raise InputError(f"column {value!r} does not exist; rules can read: {', '.join(COLUMNS)}",
                         path=path, line=line)
    return str(value)


def _tables(document: Mapping[str, Any], key: str, path: str, lines: _Lines) -> list[dict[str, Any]]:
    value = document.get(key, [])
    if isinstance(value, dict):
        raise InputError(f"[{key}] must be an array of tables: write [[{key}]]", path=path,
                         line=lines.section(key))
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InputError(f"{key!r} must be an array of tables ([[{key}]])", path=path, line=lines.key(key))
    return value


def parse_index(text: str, path: str, name: str | None = None) -> IndexDefinition:
    """One index file's text -> IndexDefinition; `InputError` (file and line) on anything it cannot use."""
    name = name if name is not None else path.rsplit("/", 1)[-1].removesuffix(".toml")
    if not NAME.match(name):
        raise InputError(f"index name {name!r} (the file name) must be lowercase letters, digits and "
                         "underscores, starting with a letter", path=path, line=1)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        raise InputError(f"not valid TOML: {exc}", path=path, line=int(found.group(1)) if found else None) from exc
    lines = _Lines(text)
    _check_keys(document, _TOP_KEYS, path, lines, None)
    title = _text(document, "title", path, lines.key("title"))
    version_value = document.get("version")
    if isinstance(version_value, int | float) and not isinstance(version_value, bool):
        version_value = str(version_value)
    version = _text({"version": version_value}, "version", path, lines.key("version"))
    description = _text(document, "description", path, lines.key("description"), required=False)

    rules: list[Rule] = []
    for i, table in enumerate(_tables(document, "rule", path, lines)):
        _check_keys(table, _RULE_KEYS, path, lines, "rule", i)
        start = lines.section("rule", i)
        column = _column(table.get("column"), path, lines.key("column", "rule", i))
        op = table.get("op")
        if op not in OPERATORS:
            raise InputError(f"operator {op!r} is not one of {', '.join(OPERATORS)}", path=path,
                             line=lines.key("op", "rule", i))
        if "value" not in table:
            raise InputError("field 'value' is required", path=path, line=start)
        value = table["value"]
        value_line = lines.key("value", "rule", i)
        if op in ("in", "not_in") and not isinstance(value, list):
            raise InputError(f"operator {op!r} needs a list value, got {value!r}", path=path, line=value_line)
        if op in (">", ">=", "<", "<=") and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError(f"operator {op!r} needs a number, got {value!r}", path=path, line=value_line)
        unknown = table.get("unknown", "exclude")
        if unknown not in UNKNOWN_POLICIES:
            raise InputError(f"unknown = {unknown!r}: use 'exclude' or 'include'", path=path,
                             line=lines.key("unknown", "rule", i))
        rule_name = _text(table, "name", path, start, required=False) or column
        rules.append(Rule(rule_name, column, op, value, unknown,
                          _text(table, "reason", path, start, required=False), start))

    entries: dict[str, list[Entry]] = {}
    for key in ("include", "exclude"):
        entries[key] = []
        for i, table in enumerate(_tables(document, key, path, lines)):
            _check_keys(table, _ENTRY_KEYS, path, lines, key, i)
            start = lines.section(key, i)
            entries[key].append(Entry(_text(table, "benchmark", path, start),
                                      _text(table, "reason", path, start), lines.key("benchmark", key, i)))
    both = {e.benchmark for e in entries["include"]} & {e.benchmark for e in entries["exclude"]}
    if both:
        first = min(e.line for e in entries["exclude"] if e.benchmark in both)
        raise InputError(f"benchmark(s) {sorted(both)} are both included and excluded", path=path, line=first)

    assumptions: list[Assumption] = []
    for i, table in enumerate(_tables(document, "assume", path, lines)):
        _check_keys(table, _ASSUME_KEYS, path, lines, "assume", i)
        start = lines.section("assume", i)
        column = _column(table.get("column"), path, lines.key("column", "assume", i))
        if column in PROPERTIES:
            raise InputError(f"column {column!r} is measured, not metadata: it cannot be assumed", path=path,
                             line=lines.key("column", "assume", i))
        if "value" not in table:
            raise InputError("field 'value' is required", path=path, line=start)
        assumptions.append(Assumption(_text(table, "benchmark", path, start), column, table["value"],
                                      _text(table, "reason", path, start), lines.key("benchmark", "assume", i)))

    cap = None
    if "cap" in document:
        table = document["cap"]
        if not isinstance(table, dict):
            raise InputError("cap must be a table: write [cap]", path=path, line=lines.key("cap"))
        _check_keys(table, _CAP_KEYS, path, lines, "cap")
        start = lines.section("cap")
        limit = table.get("max")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InputError(f"cap max must be a positive integer, got {limit!r}", path=path,
                             line=lines.key("max", "cap"))
        group = _column(table.get("group", "major_group"), path, lines.key("group", "cap"))
        tie_break: list[tuple[str, bool]] = []
        raw_ties = table.get("tie_break")
        if not isinstance(raw_ties, list) or not raw_ties:
            raise InputError("cap needs tie_break, a list like [\"work_share desc\", \"benchmark asc\"]",
                             path=path, line=lines.key("tie_break", "cap"))
        for item in raw_ties:
            parts = str(item).split()
            if len(parts) not in (1, 2) or (len(parts) == 2 and parts[1] not in ("asc", "desc")):
                raise InputError(f"tie_break item {item!r} must be '<column> asc' or '<column> desc'",
                                 path=path, line=lines.key("tie_break", "cap"))
            column = parts[0] if parts[0] == "benchmark" else _column(parts[0], path, lines.key("tie_break", "cap"))
            tie_break.append((column, len(parts) == 2 and parts[1] == "desc"))
        if "benchmark" not in [c for c, _ in tie_break]:
            tie_break.append(("benchmark", False))  # a total order
        unknown_group = table.get("unknown_group", "exclude")
        if unknown_group not in GROUP_POLICIES:
            raise InputError(f"unknown_group = {unknown_group!r}: use 'exclude' or 'uncapped'", path=path,
                             line=lines.key("unknown_group", "cap"))
        cap = Cap(limit, group, tuple(tie_break), unknown_group, _text(table, "reason", path, start,
                                                                       required=False), start)
    return IndexDefinition(name, title, version, description, path, tuple(rules), tuple(assumptions),
                           tuple(entries["include"]), tuple(entries["exclude"]), cap)


def all_index(path: str = "(built in)") -> IndexDefinition:
    """The `all` index when no file defines it: every landed benchmark."""
    return IndexDefinition(ALL_INDEX, "Every landed benchmark", "1", "", path)


# --------------------------------------------------------------------------------------------- properties
def measured_properties(
    benchmarks: pl.DataFrame,
    label_counts: pl.DataFrame | None = None,
    prompt_work: pl.DataFrame | None = None,
    *,
    labeler: str | None = None,
) -> pl.DataFrame:
    """One row per landed benchmark: the METADATA_COLUMNS plus the PROPERTIES (null where unknown).

    work_share: mean of prompt_work.is_work over the benchmark's prompts with a decision, of the labeler the
    coverage uses (null when prompt_work is absent or has no row of the benchmark). labeled_major_group: from
    the top-ranked labels (task_label_counts rows with min_depth 1) of that labeler."""
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
    target = pl.col("target_major_group").str.extract(r"^(\d{2})", 1) + "-0000"
    return frame.with_columns(pl.coalesce(target, pl.col("labeled_major_group")).alias("major_group"))


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


def _rule_text(rule: Rule) -> str:
    return f"{rule.column} {rule.op} {_show(rule.value) if not isinstance(rule.value, list) else rule.value}"


@dataclass
class _Decision:
    included: bool
    decided_by: str
    reason: str
    values: list[str] = field(default_factory=list)
    unknown_passed: list[str] = field(default_factory=list)


def evaluate_index(definition: IndexDefinition, properties: pl.DataFrame) -> pl.DataFrame:
    """Membership rows (MEMBERSHIP_SCHEMA) of one index over the landed benchmarks in `properties`
    (`measured_properties`). Raises `InputError` (file and line) for a named benchmark that never landed."""
    landed = set(properties["benchmark"].to_list())
    named = [(e.benchmark, e.line, "include") for e in definition.include]
    named += [(e.benchmark, e.line, "exclude") for e in definition.exclude]
    named += [(a.benchmark, a.line, "assume") for a in definition.assumptions]
    for benchmark, line, kind in named:
        if benchmark not in landed:
            raise InputError(f"{kind} names benchmark {benchmark!r}, which was never landed "
                             f"(landed: {', '.join(sorted(landed))})", path=definition.path, line=line)
    includes = {e.benchmark: e for e in definition.include}
    excludes = {e.benchmark: e for e in definition.exclude}
    assumed = {(a.benchmark, a.column): a for a in definition.assumptions}

    records = {r["benchmark"]: r for r in properties.iter_rows(named=True)}
    decisions: dict[str, _Decision] = {}

    def value_of(benchmark: str, column: str) -> tuple[Any, str]:
        record = records[benchmark]
        value = record.get(column)
        assumption = assumed.get((benchmark, column))
        if value is None and assumption is not None:
            return assumption.value, (f"{column}={_show(assumption.value)} (assumed by "
                                      f"{definition.where(assumption.line)}: {assumption.reason})")
        shown = f"{column}={_show(value)}"
        if value is None and column in UNKNOWN_WHY:
            shown += f" ({UNKNOWN_WHY[column]})"
        if column == "work_share" and value is not None:
            shown += f" (n={record.get('n_work_judged')})"
        if column == "major_group" and value is not None:
            source = "target_major_group" if record.get("target_major_group") else "labeled_major_group"
            shown += f" (from {source})"
        return value, shown

    for benchmark in sorted(landed):
        if benchmark in excludes:
            entry = excludes[benchmark]
            decisions[benchmark] = _Decision(False, f"exclude entry ({definition.where(entry.line)})", entry.reason)
            continue
        if benchmark in includes:
            entry = includes[benchmark]
            decisions[benchmark] = _Decision(True, f"include entry ({definition.where(entry.line)})", entry.reason)
            continue
        decision = _Decision(True, "every rule passed" if definition.rules else "no rules: every landed benchmark",
                             "")
        for rule in definition.rules:
            value, shown = value_of(benchmark, rule.column)
            decision.values.append(shown)
            label = f"rule {rule.name} ({_rule_text(rule)}; {definition.where(rule.line)})"
            if value is None:
                if rule.unknown == "include":
                    decision.unknown_passed.append(f"{rule.name}: {rule.column} unknown, let through by "
                                                   "unknown = \"include\"")
                    continue
                decision.included, decision.decided_by = False, label
                why = f" ({UNKNOWN_WHY[rule.column]})" if rule.column in UNKNOWN_WHY else ""
                decision.reason = f"{rule.column} is unknown{why} and the rule excludes unknown values"
                break
            if not _passes(value, rule.op, rule.value):
                decision.included, decision.decided_by = False, label
                decision.reason = f"{shown} fails {_rule_text(rule)}" + (f": {rule.reason}" if rule.reason else "")
                break
        decisions[benchmark] = decision

    cap = definition.cap
    if cap is not None:
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
        for group, members in in_groups.items():
            def key(benchmark: str) -> tuple[Any, ...]:
                parts: list[Any] = [benchmark not in includes]  # include entries first: never capped
                for column, descending in cap.tie_break:
                    value = benchmark if column == "benchmark" else value_of(benchmark, column)[0]
                    missing = value is None
                    if isinstance(value, bool):
                        value = int(value)
                    if isinstance(value, int | float) and descending:
                        value = -value
                    elif descending and isinstance(value, str):
                        value = tuple(-ord(c) for c in value)
                    parts += [missing, value if not missing else 0]
                return tuple(parts)
            ranked = sorted(members, key=key)
            ties = ", ".join(f"{c} {'desc' if d else 'asc'}" for c, d in cap.tie_break)
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
    rows = []
    for benchmark, decision in sorted(decisions.items()):
        group = records[benchmark].get("major_group")
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
            "index_file": definition.path,
        })
    return pl.DataFrame(rows, schema=MEMBERSHIP_SCHEMA)


@dataclass
class IndexResult:
    membership: pl.DataFrame
    errors: dict[str, str]  # index name -> error message (file and line)
    definitions: dict[str, IndexDefinition]


def evaluate_indexes(files: Mapping[str, str], properties: pl.DataFrame) -> IndexResult:
    """Evaluate every index file (path -> text). A broken file is reported in `errors` and left out; the
    others still compute. `all` is always present (built in when no file defines it)."""
    frames: list[pl.DataFrame] = []
    errors: dict[str, str] = {}
    definitions: dict[str, IndexDefinition] = {}
    for path, text in sorted(files.items()):
        name = path.rsplit("/", 1)[-1].removesuffix(".toml")
        try:
            definition = parse_index(text, path, name)
            frames.append(evaluate_index(definition, properties))
            definitions[name] = definition
        except InputError as exc:
            errors[name] = str(exc)
    if ALL_INDEX not in definitions and ALL_INDEX not in errors:
        definitions[ALL_INDEX] = all_index()
        frames.append(evaluate_index(definitions[ALL_INDEX], properties))
    membership = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=MEMBERSHIP_SCHEMA)
    return IndexResult(sort_membership(membership), errors, definitions)


def sort_membership(membership: pl.DataFrame) -> pl.DataFrame:
    """`all` first, then the other indexes by name; benchmarks by name."""
    return membership.sort(
        [pl.col("benchmark_index") != ALL_INDEX, pl.col("benchmark_index"), pl.col("benchmark")]
    )


# --------------------------------------------------------------------------------------------- per index
def index_names(membership: pl.DataFrame | None) -> list[str]:
    """The indexes of a membership table, `all` first (just `all` without one)."""
    if membership is None or membership.is_empty():
        return [ALL_INDEX]
    names = sorted(set(membership["benchmark_index"].to_list()) - {ALL_INDEX})
    return [ALL_INDEX, *names]


def members(membership: pl.DataFrame | None, index: str) -> list[str] | None:
    """The included benchmarks of `index` (None for `all` or without a membership table: no filter)."""
    if membership is None or membership.is_empty() or index == ALL_INDEX:
        return None
    rows = membership.filter((pl.col("benchmark_index") == index) & pl.col("included"))
    return sorted(rows["benchmark"].to_list())


def per_index(frame: pl.DataFrame, membership: pl.DataFrame | None) -> list[tuple[str, pl.DataFrame]]:
    """(index, the rows of `frame` -- anything with a `benchmark` column, e.g. task_label_counts -- whose
    benchmark the index includes), `all` first and unfiltered."""
    out = []
    for name in index_names(membership):
        wanted = members(membership, name)
        out.append((name, frame if wanted is None else frame.filter(pl.col("benchmark").is_in(wanted))))
    return out


def with_index(frame: pl.DataFrame, index: str) -> pl.DataFrame:
    """`frame` with a leading `benchmark_index` column."""
    return frame.select(pl.lit(index, dtype=pl.Utf8).alias("benchmark_index"), pl.all())


def only_index(frame: pl.DataFrame, index: str = ALL_INDEX) -> pl.DataFrame:
    """The rows of one index, without the column (frames without it are returned as they are)."""
    if "benchmark_index" not in frame.columns:
        return frame
    return frame.filter(pl.col("benchmark_index") == index).drop("benchmark_index")


def membership_lines(membership: pl.DataFrame, index: str) -> tuple[list[str], list[str]]:
    """(included benchmarks, 'benchmark: why' for each excluded one) of one index, for the summary."""
    rows = membership.filter(pl.col("benchmark_index") == index).sort("benchmark")
    included = rows.filter(pl.col("included"))["benchmark"].to_list()
    excluded = [
        f"{r['benchmark']} ({r['decided_by']}: {r['reason'] or 'no reason recorded'})"
        for r in rows.filter(~pl.col("included")).iter_rows(named=True)
    ]
    return included, excluded


def describe_rules(definition: IndexDefinition) -> list[str]:
    """Human-readable criteria of an index, in file order."""
    out = [f"{r.name}: {_rule_text(r)}" + (" (unknown passes, flagged)" if r.unknown == "include" else
                                           " (unknown fails)") for r in definition.rules]
    if definition.cap is not None:
        ties = ", ".join(f"{c} {'desc' if d else 'asc'}" for c, d in definition.cap.tie_break)
        out.append(f"at most {definition.cap.max} per {definition.cap.group} (tie-break: {ties})")
    return out
