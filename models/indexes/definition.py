"""Index files: their constants, the parsed form (`IndexDefinition` and its parts) and `parse_index`, which
raises `InputError` naming the file and line for anything it cannot use (the format: models/indexes/)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from models.errors import InputError
from models.soc import SOC_MAJOR_GROUPS

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
    "labeled_major_group": "the SOC major group holding most of the benchmark's top-ranked task labels (raw)",
    "labeled_major_group_share": "share of the benchmark's top-ranked labels in labeled_major_group",
    "estimated_major_group": "the SOC major group with the largest share of the benchmark's estimated work "
    "(prompt_occupation_estimates: each text's occupation probabilities, weighted by its prompts)",
    "estimated_major_group_share": "share of the benchmark's estimated work in estimated_major_group",
    "major_group": "the index file's [[assign]] entry, else target_major_group when benchmark.toml gives it, "
    "else estimated_major_group, else (no estimate) labeled_major_group",
}
COLUMNS: tuple[str, ...] = METADATA_COLUMNS + tuple(PROPERTIES)
# The kind of value each column holds: a rule's or an assumption's value of another kind can never match (a
# string "true" for agentic read "agentic=true ... fails agentic == true"; sorted beside numbers in a cap's
# tie-break it crashed every index), so it is the file's error, with its line.
BOOLEAN_COLUMNS = frozenset({"agentic", "saturated"})
NUMBER_COLUMNS = frozenset({"public_items", "n_prompts", "n_results", "n_rejects", "work_share", "n_work_judged",
                            "labeled_major_group_share", "estimated_major_group_share"})
# (target_major_group is benchmark.toml's text as written: compared as text)
GROUP_COLUMNS = frozenset({"labeled_major_group", "estimated_major_group", "major_group"})
# why a measured property can be unknown (shown with the unknown value)
UNKNOWN_WHY: dict[str, str] = {
    "work_share": "no work decision in prompt_work for this benchmark",
    "n_work_judged": "no work decision in prompt_work for this benchmark",
    "labeled_major_group": "no top-ranked task label",
    "labeled_major_group_share": "no top-ranked task label",
    "estimated_major_group": "no per-text estimate (prompt_occupation_estimates) for this benchmark",
    "estimated_major_group_share": "no per-text estimate (prompt_occupation_estimates) for this benchmark",
    "major_group": "no assignment, no target_major_group, no estimate and no top-ranked task label",
}

_TOP_KEYS = {"title", "version", "description", "rule", "assume", "include", "exclude", "cap", "assign"}
_RULE_KEYS = {"name", "column", "op", "value", "unknown", "reason"}
_ENTRY_KEYS = {"benchmark", "reason"}
_ASSUME_KEYS = {"benchmark", "column", "value", "reason"}
_ASSIGN_KEYS = {"benchmark", "major_group", "reason"}
_MAJOR_GROUP = re.compile(r"^(\d{2})(?:-0000)?$")
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
    "major_group_rule": pl.Utf8(),
    "major_group_share": pl.Float64(),
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
class Assignment:
    """A manual major group for a benchmark (`[[assign]]`): wins over every measured group."""

    benchmark: str
    major_group: str  # 'NN-0000'
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
    assign: tuple[Assignment, ...] = ()

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
    if isinstance(version_value, float):  # 1.10 would read as "1.1"
        raise InputError(f"version {version_value!r} is a number, which loses trailing zeros: quote it "
                         f"(version = \"...\")", path=path, line=lines.key("version"))
    if isinstance(version_value, int) and not isinstance(version_value, bool):
        version_value = str(version_value)
    version = _text({"version": version_value}, "version", path, lines.key("version"))
    description = _text(document, "description", path, lines.key("description"), required=False)

    rules = _parse_rules(document, path, lines)
    entries = _parse_entries(document, path, lines)
    assumptions = _parse_assumptions(document, path, lines)
    cap = _parse_cap(document, path, lines)
    assign = _parse_assign(document, path, lines)
    return IndexDefinition(name, title, version, description, path, rules, assumptions,
                           tuple(entries["include"]), tuple(entries["exclude"]), cap, assign)


def _major_group_code(text: str) -> str | None:
    """'15' or '15-0000' as 'NN-0000' (the code the tables hold), else None."""
    found = _MAJOR_GROUP.match(text)
    return f"{found.group(1)}-0000" if found else None


def _parse_assign(document: Mapping[str, Any], path: str, lines: _Lines) -> tuple[Assignment, ...]:
    """The [[assign]] tables: a benchmark's SOC major group set by hand ('15' or '15-0000'), with a reason;
    one per benchmark."""
    out: list[Assignment] = []
    for i, table in enumerate(_tables(document, "assign", path, lines)):
        _check_keys(table, _ASSIGN_KEYS, path, lines, "assign", i)
        start = lines.section("assign", i)
        benchmark = _text(table, "benchmark", path, start)
        group_line = lines.key("major_group", "assign", i)
        raw = table.get("major_group")
        group = _major_group_code(str(raw).strip()) if isinstance(raw, str | int) else None
        if group is None or group not in SOC_MAJOR_GROUPS:
            raise InputError(f"major_group {raw!r} is not a SOC major group (write e.g. \"15-0000\" or \"15\"; "
                             f"known: {', '.join(SOC_MAJOR_GROUPS)})", path=path, line=group_line)
        reason = _text(table, "reason", path, start)
        if any(a.benchmark == benchmark for a in out):
            raise InputError(f"benchmark {benchmark!r} is assigned twice", path=path,
                             line=lines.key("benchmark", "assign", i))
        out.append(Assignment(benchmark, group, reason, lines.key("benchmark", "assign", i)))
    return tuple(out)




def _parse_rules(document: Mapping[str, Any], path: str, lines: _Lines) -> tuple[Rule, ...]:
    """The [[rule]] tables, in file order."""
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
        if op not in ("in", "not_in") and isinstance(value, list):  # a column holds one value: it never equals a list
            raise InputError(f"operator {op!r} compares with one value, got the list {value!r} (use 'in' or "
                             "'not_in')", path=path, line=value_line)
        value = ([_column_value(column, v, path, value_line) for v in value] if isinstance(value, list)
                 else _column_value(column, value, path, value_line))
        if op in (">", ">=", "<", "<=") and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError(f"operator {op!r} needs a number, got {value!r}", path=path, line=value_line)
        unknown = table.get("unknown", "exclude")
        if unknown not in UNKNOWN_POLICIES:
            raise InputError(f"unknown = {unknown!r}: use 'exclude' or 'include'", path=path,
                             line=lines.key("unknown", "rule", i))
        rule_name = _text(table, "name", path, start, required=False) or column
        rules.append(Rule(rule_name, column, op, value, unknown,
                          _text(table, "reason", path, start, required=False), start))
    return tuple(rules)


def _column_value(column: str, value: Any, path: str, line: int | None) -> Any:
    """`value` as `column` holds it: true/false for a flag, a number for a count or share, a SOC major group as
    'NN-0000' ('15' is accepted, as in [[assign]]: written so it matched nothing); InputError otherwise."""
    if column in BOOLEAN_COLUMNS and not isinstance(value, bool):
        raise InputError(f"{column} holds true or false, got {value!r} (write {column} = true, unquoted)",
                         path=path, line=line)
    if column in NUMBER_COLUMNS and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise InputError(f"{column} holds a number, got {value!r}", path=path, line=line)
    if column in GROUP_COLUMNS:
        group = _major_group_code(value) if isinstance(value, str) else None
        if group is None or group not in SOC_MAJOR_GROUPS:  # "99": well formed, but it would match nothing
            raise InputError(f"{column} holds a SOC major group, got {value!r} (write e.g. \"15-0000\" or \"15\"; "
                             f"known: {', '.join(SOC_MAJOR_GROUPS)})", path=path, line=line)
        return group
    if column not in BOOLEAN_COLUMNS | NUMBER_COLUMNS and not isinstance(value, str):
        raise InputError(f"{column} holds text, got {value!r}", path=path, line=line)
    return value


def _parse_entries(document: Mapping[str, Any], path: str, lines: _Lines) -> dict[str, list[Entry]]:
    """The [[include]] and [[exclude]] entries; a benchmark may not be in both."""
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
    return entries


def _parse_assumptions(document: Mapping[str, Any], path: str, lines: _Lines) -> tuple[Assumption, ...]:
    """The [[assume]] tables: metadata values the index asserts (never a measured property)."""
    assumptions: list[Assumption] = []
    for i, table in enumerate(_tables(document, "assume", path, lines)):
        _check_keys(table, _ASSUME_KEYS, path, lines, "assume", i)
        start = lines.section("assume", i)
        column = _column(table.get("column"), path, lines.key("column", "assume", i))
        if column in PROPERTIES:
            raise InputError(f"column {column!r} is measured, not metadata: it cannot be assumed", path=path,
                             line=lines.key("column", "assume", i))
        if column == "target_major_group":  # an assumed one would be read by rules but place nothing for the cap
            raise InputError("target_major_group cannot be assumed: to place a benchmark in a major group, write "
                             "an [[assign]] entry (benchmark, major_group, reason)", path=path,
                             line=lines.key("column", "assume", i))
        if "value" not in table:
            raise InputError("field 'value' is required", path=path, line=start)
        value = _column_value(column, table["value"], path, lines.key("value", "assume", i))
        benchmark = _text(table, "benchmark", path, start)
        if any(a.benchmark == benchmark and a.column == column for a in assumptions):  # which one would hold?
            raise InputError(f"benchmark {benchmark!r} has {column!r} assumed twice", path=path,
                             line=lines.key("benchmark", "assume", i))
        assumptions.append(Assumption(benchmark, column, value, _text(table, "reason", path, start),
                                      lines.key("benchmark", "assume", i)))
    return tuple(assumptions)


def _parse_cap(document: Mapping[str, Any], path: str, lines: _Lines) -> Cap | None:
    """The [cap] table, or None; its tie-break always ends in the benchmark name (a total order)."""
    if "cap" not in document:
        return None
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
    return Cap(limit, group, tuple(tie_break), unknown_group, _text(table, "reason", path, start, required=False),
               start)


def all_index(path: str = "(built in)") -> IndexDefinition:
    """The `all` index when no file defines it: every landed benchmark."""
    return IndexDefinition(ALL_INDEX, "Every landed benchmark", "1", "", path)
