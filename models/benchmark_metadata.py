"""A benchmark folder's metadata file (`benchmark.toml`, `.yaml` or `.yml`): parsed with defaults, never raising.

Every default taken and every value that cannot be read is named in the warnings, which the benchmarks
registry keeps (`metadata_warnings`). Split out of models/benchmarks.py, which re-exports `parse_metadata`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from typing import Any

from models.landing_lines import lone_surrogate, utf16_reason, utf16_text_lines

METADATA_FILES = ("benchmark.toml", "benchmark.yaml", "benchmark.yml")
INT64_MAX = 2**63 - 1  # public_items is stored as a 64-bit integer
_MAJOR_GROUP = re.compile(r"^(\d{2})(?:-0000)?$")

_META_ALIASES = {
    "title": ("title", "name"),
    "version": ("version",),
    "source_url": ("source_url", "url", "source", "homepage"),
    "license": ("license", "licence"),
    "agentic": ("agentic", "is_agentic"),
    "public_items": ("public_items", "public_item_count", "n_items"),
    "saturated": ("saturated", "is_saturated"),
    "target_major_group": ("target_major_group", "major_group", "soc_major_group", "target_soc_major_group"),
}
_TRUE = {"true", "yes", "y", "1", "saturated", "agentic"}
_FALSE = {"false", "no", "n", "0", "not saturated", "unsaturated"}
_UNKNOWN = {"", "unknown", "n/a", "na", "none", "null", "?"}


def _bool(value: Any) -> tuple[bool | None, bool]:
    """(value, understood)."""
    if isinstance(value, bool):
        return value, True
    text = str(value).strip().lower()
    if text in _TRUE:
        return True, True
    if text in _FALSE:
        return False, True
    return None, text in _UNKNOWN


UNREADABLE = "could not be read"  # a metadata file's reject says so; its benchmark then keeps its stored metadata
KEY_IGNORED = "the key is ignored"  # a key refused for a lone surrogate: its benchmark also keeps the stored metadata


def _error_line(exc: Exception) -> int | None:
    """The 1-based line of a TOML or YAML syntax error, when the error says it."""
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return int(mark.line) + 1
    found = re.search(r"at line (\d+)", str(exc))
    return int(found.group(1)) if found else None


def _load_metadata_file(files: Mapping[str, bytes]
                        ) -> tuple[dict[str, Any], str | None, list[str], tuple[int | None, str] | None]:
    """(raw mapping, file name, warnings, (line, reason) when the file cannot be read)."""
    present = [name for name in METADATA_FILES if name in files]
    if not present:
        return {}, None, [], None
    name = present[0]
    warnings = [f"{name} used; ignored {', '.join(present[1:])}"] if len(present) > 1 else []
    if (utf16 := utf16_reason(files[name], name)) is not None:  # not a codec error or a NUL-riddled excerpt
        reason = f"{name} {UNREADABLE}: {utf16}"
        return {}, name, [*warnings, reason], (1, reason)
    try:
        text = files[name].decode("utf-8-sig")  # a BOM (as Windows editors save) is not part of the text
        if name.endswith(".toml"):
            data = tomllib.loads(text)
        else:
            import yaml  # PyYAML ships with Dagster

            data = yaml.safe_load(text) or {}
    except Exception as exc:  # bad TOML/YAML, bad bytes: a reject naming the line; the caller keeps what was stored
        # a YAML error's first line is its context ("while scanning ..."); the problem is what to fix
        said = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        reason = f"{name} {UNREADABLE} ({type(exc).__name__}: {said[:200]})"
        return {}, name, [*warnings, reason], (_error_line(exc), reason)
    if not isinstance(data, Mapping):
        reason = f"{name} {UNREADABLE}: it is not a table/mapping"
        return {}, name, [*warnings, reason], (1, reason)
    return dict(data), name, warnings, None


def _surrogate_entries(raw: dict[str, Any], text: str) -> list[tuple[str, int | None, str]]:
    """(key, line, reason) of each entry whose key or value holds a lone surrogate (YAML's `"\\ud83d"` without its
    pair; TOML refuses one itself): no UTF-8 table can store it, and it failed the whole benchmark."""
    refused = []
    for key, value in raw.items():
        code = lone_surrogate(key) or lone_surrogate(value)
        if code is None:
            continue
        bad_key = lone_surrogate(key) is not None
        line = None if bad_key else key_line(text, str(key))
        if line is None:  # the escape itself, for a key that is not found by its name
            line = next((n for n, t in enumerate(text.split("\n"), 1) if code.lower() in t.lower()), None)
        shown = f"key {ascii(key)}" if bad_key else f"{str(key)!r}"
        refused.append((key, line, f"{shown} holds a lone surrogate {code}, not valid Unicode: {KEY_IGNORED}"))
    return refused


def _excerpt_line(data: bytes, line: int | None) -> str:
    """The text of line `line` (1-based) of a file, for a reject's excerpt (of the UTF-16 text it may be)."""
    if utf16_reason(data, "") is not None:
        return next((text[:200] for number, text in utf16_text_lines(data) if number == line), "")
    lines = data.decode("utf-8-sig", errors="replace").split("\n")
    return lines[line - 1][:200] if line is not None and 0 < line <= len(lines) else ""


def key_line(text: str, key: str) -> int | None:
    """The 1-based line where `key` is set in a TOML (`key = ...`) or YAML (`key: ...`) text, if found."""
    pattern = re.compile(rf"""^\s*["']?{re.escape(key)}["']?\s*[=:]""")
    for number, line in enumerate(text.split("\n"), start=1):
        if pattern.match(line):
            return number
    return None


def parse_metadata(files: Mapping[str, bytes], benchmark: str, n_prompts: int) -> tuple[dict[str, Any], list[str]]:
    """Benchmark metadata with defaults; every default or unreadable value is named in the warnings.

    `files`: the folder's files by name (the METADATA_FILES among them are used, the first one present)."""
    out, warnings, _ = parse_metadata_with_rejects(files, benchmark, n_prompts)
    return out, warnings


def parse_metadata_with_rejects(files: Mapping[str, bytes], benchmark: str, n_prompts: int
                                ) -> tuple[dict[str, Any], list[str], list[tuple[str, int | None, str, str]]]:
    """parse_metadata, plus (file, line, reason, excerpt) of each value refused because it is out of range
    (public_items beyond a 64-bit integer), and of a file that cannot be read at all (its reason holds
    UNREADABLE; models.benchmarks.ingest_benchmark then keeps the stored metadata): the benchmark's reject rows.
    The default is taken as documented."""
    raw, filename, warnings, unreadable = _load_metadata_file(files)
    rejects: list[tuple[str, int | None, str, str]] = []
    if filename is None:
        warnings.append(f"no {' / '.join(METADATA_FILES)}: defaults used for all metadata")
    if unreadable is not None:  # one reject names the file and line; no "missing" warning per key after it
        line, reason = unreadable
        rejects.append((filename or "", line, reason, _excerpt_line(files[filename or ""], line)))
    refused: set[Any] = set()
    if filename is not None and raw:  # a lone surrogate: that entry is a reject, the rest of the file is read
        for key, line, reason in _surrogate_entries(raw, files[filename].decode("utf-8-sig", errors="replace")):
            rejects.append((filename, line, reason, _excerpt_line(files[filename], line)))
            warnings.append(f"{filename} line {line}: {reason}")
            refused.add(key)
            del raw[key]
    values: dict[str, Any] = {}
    used: set[str] = set()
    for target, aliases in _META_ALIASES.items():
        for alias in aliases:
            if alias in raw:
                values[target] = raw[alias]
                used.add(alias)
                break
    unknown = sorted(set(raw) - used)
    if unknown:
        warnings.append(f"unknown metadata key(s) ignored: {', '.join(unknown)}")
    quiet = filename is None  # one warning already covers a missing file

    def default(name: str, value: Any, why: str = "missing") -> Any:
        if why == "missing" and refused.intersection(_META_ALIASES[name]):
            return value  # refused for a lone surrogate: its reject and warning say so
        if (not quiet or why != "missing") and unreadable is None:  # an unreadable file: its reject says it all
            warnings.append(f"{name} {why}; default {value!r}")
        return value

    out: dict[str, Any] = {}
    for name in ("title", "version", "source_url", "license"):
        value = values.get(name)
        text = None if value is None or isinstance(value, dict | list) else str(value).strip() or None
        if text is None:
            text = default(name, benchmark if name == "title" else None,
                           "missing" if value is None else f"unreadable ({value!r})")
        out[name] = text
    for name in ("agentic", "saturated"):
        if name not in values:
            out[name] = default(name, None)
            continue
        flag, understood = _bool(values[name])
        if not understood:
            warnings.append(f"{name} value {values[name]!r} not understood; default None")
        out[name] = flag
    items = values.get("public_items")
    digits = items.strip().replace(",", "") if isinstance(items, str) else ""
    if isinstance(items, str) and digits.isascii() and digits.isdigit() and len(digits) <= 20:
        items = int(digits)
    if items is None:
        out["public_items"] = default("public_items", n_prompts, "missing (prompt count used)")
    elif isinstance(items, int) and not isinstance(items, bool) and 0 <= items <= INT64_MAX:
        out["public_items"] = items
    elif isinstance(items, int) and not isinstance(items, bool) and items > INT64_MAX:
        key = next(a for a in _META_ALIASES["public_items"] if a in raw)
        line = key_line(files[filename].decode("utf-8-sig", errors="replace"), key) if filename else None
        shown = str(items) if len(str(items)) <= 30 else f"{str(items)[:12]}...({len(str(items)):,} digits)"
        reason = (f"{key} = {shown} is out of range (at most {INT64_MAX:,}, a 64-bit integer); "
                  f"default: the prompt count {n_prompts}")
        rejects.append((filename or "", line, reason, f"{key} = {shown}"))
        out["public_items"] = n_prompts
        warnings.append(f"{filename} line {line}: {reason}")
    else:
        out["public_items"] = default("public_items", n_prompts, f"unreadable ({items!r}; prompt count used)")
    group = values.get("target_major_group")
    match = _MAJOR_GROUP.match(str(group).strip()) if group is not None else None
    if group is None:
        out["target_major_group"] = default("target_major_group", None)
    elif match is None:
        out["target_major_group"] = default("target_major_group", None,
                                            f"unreadable ({group!r}; expected like '13-0000')")
    else:
        out["target_major_group"] = f"{match.group(1)}-0000"
    return out, warnings, rejects
