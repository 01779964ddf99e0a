"""The benchmark landing zone: parsing, validation and hashing of a folder's files (pure; no Dagster, no I/O).

A benchmark is a folder `<root>/<name>/` under `data/raw/benchmarks/` or `$BENCHMAP_MIRROR/benchmarks/`
holding `prompts.jsonl`, optionally `results.csv` and `benchmark.toml` (or `.yaml`/`.yml`). A folder under
data/raw wins over the mirror's folder of the same name (the whole folder; files are never mixed between roots).
The folders are found and their files read in `resources/landing.py` (`discover`, `read_folder`); the
functions here take the files' bytes (`files`: file name -> bytes, CONTENT_FILES that exist).

Parsing never raises on bad lines: each line that cannot be taken becomes a reject row (file, line number,
reason, excerpt) and the rest of the benchmark ingests. Lines are split on b"\\n" (b"\\r" in a file without one),
never with `str.splitlines()`: real prompts (gdpval, mle_bench) contain U+2028, which `splitlines()` treats as a
line break (models/landing_lines.py). results.csv is parsed in models/benchmark_results.py.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from models.benchmark_metadata import (  # noqa: F401
    KEY_IGNORED,
    METADATA_FILES,
    UNREADABLE,
    parse_metadata,
    parse_metadata_with_rejects,
)
from models.benchmark_results import (  # noqa: F401 - the landing format's results half, re-exported
    MAX_QUOTED_LINES,
    RESULT_COLUMNS,
    RESULTS_SCHEMA,
    parse_results,
    parse_score,
)
from models.landing_lines import (  # noqa: F401 - Reject, EXCERPT_CHARS and the file names re-exported
    EXCERPT_CHARS,
    PROMPTS_FILE,
    RESULTS_FILE,
    Reject,
    cut_last_line,
    decode_line,
    excerpt,
    lone_surrogate,
    looks_utf16,
    physical_lines,
    utf16_reason,
    utf16_text_lines,
)
from models.markdown import markdown_table

log = logging.getLogger(__name__)

CONTENT_FILES = (PROMPTS_FILE, RESULTS_FILE, *METADATA_FILES)

# A benchmark name becomes a partition key, a table value and a path segment: lowercase letters, digits and
# underscores, starting with a letter (so case-insensitive file systems cannot produce two spellings).
SAFE_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")  # whole name (fullmatch: "$" would let a trailing newline by)
# Names the tables already use for something else: "all" is the pooled rows of every table (scope / benchmark
# "all"); a benchmark of that name was mixed into the totals of the release.
RESERVED_NAMES = frozenset({"all"})
# Landing-zone problems that belong to no benchmark (unsafe folder names, folders without prompts.jsonl) are
# recorded in this reserved partition; it cannot collide with a benchmark because names start with a letter.
LANDING_PARTITION = "_landing"
NO_PROBLEMS_HASH = "none"  # LANDING_PARTITION's content hash when no folder has a problem
_TEXT_FIELDS = ("occupation", "onet_soc_code", "onet_task", "sector")
_PROMPT_FIELDS = {"benchmark", "prompt_id", "prompt", "onet_task_id", "extra", *_TEXT_FIELDS}
_WS = re.compile(r"\s+")

BENCHMARKS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8, "title": pl.Utf8, "version": pl.Utf8, "source_url": pl.Utf8, "license": pl.Utf8,
    "agentic": pl.Boolean, "public_items": pl.Int64, "saturated": pl.Boolean, "target_major_group": pl.Utf8,
    "n_prompts": pl.Int64, "n_results": pl.Int64, "n_rejects": pl.Int64, "content_hash": pl.Utf8,
    "first_seen": pl.Datetime("us"), "last_changed": pl.Datetime("us"), "metadata_warnings": pl.Utf8,
    "landing_origin": pl.Utf8, "landing_path": pl.Utf8,
}
PROMPTS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8, "prompt_id": pl.Utf8, "prompt": pl.Utf8, "prompt_hash": pl.Utf8,
    "occupation": pl.Utf8, "onet_soc_code": pl.Utf8, "onet_task_id": pl.Int64, "onet_task": pl.Utf8,
    "sector": pl.Utf8, "extra": pl.Utf8, "line_number": pl.Int64,
}
# Parser limits: a line beyond one is a reject naming the limit, never a failure of the benchmark.
MAX_LINE_BYTES = 32 * 2**20  # a JSONL line (and so any string in it); real prompts reach 33 KB, a test 5 MB
MAX_JSON_DEPTH = 64  # nesting of objects and arrays in one line (real lines: 5)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # integers are stored as 64-bit (DuckDB BIGINT, polars Int64)

REJECTS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8, "file": pl.Utf8, "line_number": pl.Int64, "reason": pl.Utf8, "raw_excerpt": pl.Utf8,
}


# --------------------------------------------------------------------------------------------- discovery
@dataclass(frozen=True)
class BenchmarkFolder:
    name: str
    path: Path
    origin: str  # 'raw' | 'mirror'


@dataclass(frozen=True)
class LandingProblem:
    """A folder in a landing root that cannot be a benchmark (recorded under LANDING_PARTITION)."""

    origin: str
    path: Path
    reason: str


@dataclass
class Landing:
    benchmarks: dict[str, BenchmarkFolder] = field(default_factory=dict)
    problems: list[LandingProblem] = field(default_factory=list)

    def problems_hash(self) -> str | None:
        """A hash of the problem list (None when there are none): the sensor's trigger for `_landing`."""
        if not self.problems:
            return None
        text = "\n".join(sorted(f"{p.origin}\t{p.path}\t{p.reason}" for p in self.problems))
        return hashlib.sha256(text.encode()).hexdigest()


def is_safe_name(name: str) -> bool:
    return bool(SAFE_NAME.fullmatch(name)) and name not in RESERVED_NAMES


def unsafe_name_reason(name: str) -> str:
    """Why a folder name cannot be a benchmark's (for the landing problem it becomes)."""
    if name in RESERVED_NAMES:
        return f"folder name {name!r} is reserved: the tables use it for every benchmark pooled (rename the folder)"
    return (f"folder name {name!r} is not a safe benchmark identifier (use lowercase letters, digits and "
            "underscores, starting with a letter, at most 64 chars)")


def landing_from_listing(roots: Iterable[tuple[str, Iterable[tuple[Path, bool | str]]]]) -> Landing:
    """Every benchmark folder of the landing roots (earlier roots win) and every folder that cannot be one.

    `roots`: per root, highest priority first, (origin, [(folder, has a prompts.jsonl file), ...]) of its
    sub-folders in name order, hidden ones left out (`resources.landing.discover` lists them); instead of the
    bool, a text says why the folder is refused (a link outside the landing zone)."""
    landing = Landing()
    invalid: dict[str, LandingProblem] = {}
    for origin, entries in roots:
        for entry, has_prompts in entries:  # has_prompts: a str is why the folder is refused
            if isinstance(has_prompts, str):
                invalid.setdefault(entry.name, LandingProblem(origin, entry, has_prompts))
                continue
            name = entry.name
            if not is_safe_name(name):
                invalid.setdefault(f"{origin}/{name}", LandingProblem(origin, entry, unsafe_name_reason(name)))
                continue
            if name in landing.benchmarks:
                continue  # a higher-priority root already has it
            if not has_prompts:
                invalid.setdefault(name, LandingProblem(origin, entry, f"folder has no {PROMPTS_FILE}"))
                continue
            landing.benchmarks[name] = BenchmarkFolder(name, entry, origin)
            invalid.pop(name, None)
    landing.problems = [p for key, p in invalid.items() if key not in landing.benchmarks]
    return landing


def content_hash(files: Mapping[str, bytes]) -> str:
    """sha256 over the folder's prompts.jsonl, results.csv and benchmark.toml/yaml bytes (name-delimited).

    `files`: file name -> bytes of the CONTENT_FILES the folder has (others are ignored)."""
    digest = hashlib.sha256()
    for filename in CONTENT_FILES:
        if filename not in files:
            continue
        data = files[filename]
        digest.update(f"{filename}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------- hashing
def normalise_prompt(text: str) -> str:
    """Unicode NFC, every whitespace run (including U+2028) collapsed to one space, stripped."""
    return _WS.sub(" ", unicodedata.normalize("NFC", text)).strip()


def prompt_hash(text: str) -> str:
    return hashlib.sha256(normalise_prompt(text).encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------------------------- parsing
def _text(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool | dict | list):
        raise ValueError(f"{name} must be text, got {type(value).__name__}")
    text = str(value).strip()
    return text or None


def _task_id(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError("onet_task_id must be an integer, got a boolean")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() and len(value.strip()) <= 19:
        value = int(value.strip())
    if isinstance(value, int) and 0 <= value <= INT64_MAX:
        return value
    raise ValueError(f"onet_task_id must be a non-negative 64-bit integer, got {str(value)[:40]!r}")


class _LimitExceeded(ValueError):
    """A JSON line beyond a parser limit (its message is the reject reason)."""


def _bounded_int(text: str) -> int:
    digits = text.lstrip("-")
    value = int(text) if len(digits) <= 20 else None  # int() refuses over 4,300 digits: never try
    if value is None or not INT64_MIN <= value <= INT64_MAX:
        shown = text if len(text) <= 30 else f"{text[:12]}...({len(digits):,} digits)"
        raise _LimitExceeded(f"number {shown} is out of range (integers must fit in 64 bits)")
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _LimitExceeded(f"number {text[:30]} is out of range (larger than a 64-bit float)")
    return value


def _no_constant(text: str) -> Any:
    raise _LimitExceeded(f"{text} is not a JSON number (NaN and Infinity are not JSON)")


def _depth(value: Any) -> int:
    """Nesting depth of objects and arrays, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are unique: a repeated key (`"prompt"` twice) is a reject, not last-one-wins."""
    out = dict(pairs)
    if len(out) != len(pairs):
        repeated = sorted({k for k, _ in pairs if sum(1 for j, _ in pairs if j == k) > 1})
        raise ValueError(f"a JSON object repeats key(s) {', '.join(map(repr, repeated))}")
    return out


def load_json_line(text: str) -> Any:
    """json.loads within the parser limits: raises json.JSONDecodeError (bad JSON) or ValueError naming the
    limit (nesting deeper than MAX_JSON_DEPTH, an integer outside 64 bits, a float overflowing to infinity,
    NaN/Infinity) or a key an object repeats."""
    try:
        value = json.loads(text, parse_int=_bounded_int, parse_float=_finite_float, parse_constant=_no_constant,
                           object_pairs_hook=_unique_keys)
    except RecursionError:  # Python's parser stops near 1,000 levels: far beyond the limit
        raise _LimitExceeded(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth(value) > MAX_JSON_DEPTH:
        raise _LimitExceeded(f"JSON nested deeper than {MAX_JSON_DEPTH} levels ({_depth(value)})")
    return value


# an escape of a UTF-16 surrogate: the only way a line decoded from UTF-8 can yield one (`lone_surrogate`)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _surrogate_problem(record: Any) -> str | None:
    """The reject reason of a decoded line holding a lone surrogate (`\\ud83d` without its pair), naming the
    field; None when it holds none."""
    fields = record.items() if isinstance(record, dict) else [(None, record)]
    for key, value in fields:
        if key is not None and (code := lone_surrogate(key)) is not None:
            return f"a field name holds a lone surrogate {code}, not valid Unicode"
        if (code := lone_surrogate(value)) is not None:
            where = "the JSON value" if key is None else f"field {key!r}"
            return f"{where} holds a lone surrogate {code}, not valid Unicode"
    return None


def _prompt_row(record: Any, benchmark: str, number: int, seen: dict[str, int]) -> dict[str, Any]:
    """Validate one decoded JSON value; raises ValueError with the reject reason."""
    if not isinstance(record, dict):
        raise ValueError(f"not a JSON object (got {type(record).__name__})")
    named = record.get("benchmark")
    if named is not None and named != benchmark:
        raise ValueError(f"benchmark field {named!r} does not match the folder {benchmark!r}")
    raw_id = record.get("prompt_id")
    if raw_id is None or isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        raise ValueError("missing prompt_id" if raw_id is None else
                         f"prompt_id must be text or an integer, got {type(raw_id).__name__}")
    prompt_id = str(raw_id).strip()
    if not prompt_id:
        raise ValueError("missing prompt_id (empty)")
    if prompt_id in seen:
        raise ValueError(f"duplicate prompt_id {prompt_id!r} (first on line {seen[prompt_id]})")
    prompt = record.get("prompt")
    if prompt is None:
        raise ValueError("empty prompt (no 'prompt' field)")
    if not isinstance(prompt, str):
        raise ValueError(f"prompt must be text, got {type(prompt).__name__}")
    normalised = normalise_prompt(prompt)
    if not normalised:
        raise ValueError("empty prompt")
    if not any(unicodedata.category(c)[0] not in "CZ" for c in normalised):  # e.g. only U+200B zero-width spaces
        raise ValueError("empty prompt (only invisible characters)")
    extra = record.get("extra")
    unknown = {k: v for k, v in record.items() if k not in _PROMPT_FIELDS}
    if unknown:  # keep unexpected top-level fields rather than dropping them
        extra = {**(extra if isinstance(extra, dict) else {"extra": extra} if extra is not None else {}),
                 **unknown}
    row = {
        "benchmark": benchmark,
        "prompt_id": prompt_id,
        "prompt": prompt,
        "prompt_hash": prompt_hash(prompt),
        **{name: _text(record.get(name), name) for name in _TEXT_FIELDS},
        "onet_task_id": _task_id(record.get("onet_task_id")),
        "extra": None if extra is None else json.dumps(extra, ensure_ascii=False),
        "line_number": number,
    }
    seen[prompt_id] = number
    return row


def parse_prompts(data: bytes, benchmark: str, *, label: str | None = None
                  ) -> tuple[pl.DataFrame, list[Reject]]:
    """Valid prompt rows (PROMPTS_SCHEMA) of a prompts.jsonl file's bytes and one Reject per line that cannot
    be taken (`label` names the file in the rejects; default `<benchmark>/prompts.jsonl`)."""
    label = label or f"{benchmark}/{PROMPTS_FILE}"
    rows: list[dict[str, Any]] = []
    rejects: list[Reject] = []
    seen: dict[str, int] = {}
    if (reason := utf16_reason(data, PROMPTS_FILE)) is not None:  # one reason for every line, not bad JSON
        rejects = [Reject(benchmark, label, number, reason, excerpt(text)) for number, text in utf16_text_lines(data)]
        return pl.DataFrame(schema=PROMPTS_SCHEMA), rejects or [Reject(benchmark, label, 1, reason, "")]
    cut = cut_last_line(data)  # a last line that parses is a whole record (a JSON value ends in its own close)
    for number, line in physical_lines(data):
        if not line.strip():
            continue  # blank lines (e.g. the final newline) are not records
        if len(line) > MAX_LINE_BYTES:
            rejects.append(Reject(benchmark, label, number, f"line is {len(line):,} bytes, over the "
                                  f"{MAX_LINE_BYTES:,}-byte limit of one record", excerpt(line[:1000])))
            continue
        text, problem = decode_line(line)
        if text is None:
            rejects.append(Reject(benchmark, label, number, problem or "not UTF-8", excerpt(line)))
            continue
        try:
            record = load_json_line(text)
        except json.JSONDecodeError as exc:
            # "Unterminated string starting at" is a whole message: "... at at column 56" read as a slip
            why = f"invalid JSON: {exc.msg} (column {exc.colno})"
            if number == cut:
                why += "; the file does not end in a newline, so it may have been cut mid-write: land it again whole"
            rejects.append(Reject(benchmark, label, number, why, excerpt(text)))
            continue
        except ValueError as exc:  # a parser limit (_LimitExceeded) or a repeated key (_unique_keys)
            rejects.append(Reject(benchmark, label, number, str(exc), excerpt(text)))
            continue
        if _SURROGATE_ESCAPE.search(text) and (problem := _surrogate_problem(record)) is not None:
            rejects.append(Reject(benchmark, label, number, problem, excerpt(text)))
            continue
        try:
            rows.append(_prompt_row(record, benchmark, number, seen))
        except ValueError as exc:
            rejects.append(Reject(benchmark, label, number, str(exc), excerpt(text)))
    if not rows and not rejects:  # an empty file: said, not a silent benchmark of 0 prompts
        rejects.append(Reject(benchmark, label, 1, EMPTY_FILE, excerpt(data[:200])))
    return pl.DataFrame(rows, schema=PROMPTS_SCHEMA), rejects


EMPTY_FILE = "no prompt: the file is empty"
SHORT_REASON_CHARS = 100  # a reject's reason on a console line


def _short(text: str, limit: int = SHORT_REASON_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def first_reject(rejects: pl.DataFrame) -> str | None:
    """The first reject as `file:line: reason` (reason cut short), for a console line; None when there is none."""
    if rejects.is_empty():
        return None
    row = rejects.row(0, named=True)
    where = row["file"] if row["line_number"] is None else f"{row['file']}:{row['line_number']}"
    return f"{where}: {_short(row['reason'])}"


def no_prompt_reason(rejects: pl.DataFrame, benchmark: str) -> str:
    """Why a benchmark's prompts.jsonl landed no prompt, in one line: "0 of 58 lines landed; first reject line 1:
    ..." (or that the file is empty). A benchmark without a prompt measures nothing: its step fails with this."""
    own = rejects.filter(pl.col("file") == f"{benchmark}/{PROMPTS_FILE}")
    if own.is_empty():
        return "no line landed"
    first = own.row(0, named=True)
    if own.height == 1 and first["reason"] == EMPTY_FILE:
        return "the file is empty (no line to land)"
    return f"0 of {own.height:,} lines landed; first reject line {first['line_number']}: {_short(first['reason'])}"


# --------------------------------------------------------------------------------------------- one benchmark
@dataclass
class IngestedBenchmark:
    name: str
    registry: pl.DataFrame  # one row, BENCHMARKS_SCHEMA
    prompts: pl.DataFrame
    results: pl.DataFrame
    rejects: pl.DataFrame
    content_hash: str
    warnings: list[str]


def rejects_frame(rejects: Iterable[Reject]) -> pl.DataFrame:
    return pl.DataFrame([r.as_row() for r in rejects], schema=REJECTS_SCHEMA)


def ingest_benchmark(folder: BenchmarkFolder, files: Mapping[str, bytes], *,
                     previous: Mapping[str, Any] | None = None, now: datetime | None = None,
                     refused: Mapping[str, str] | None = None) -> IngestedBenchmark:
    """Parse one benchmark folder's files (file name -> bytes of the CONTENT_FILES it has; read by
    `resources.landing.read_folder`) into the four tables' rows.

    `previous` is the benchmark's existing registry row (or None): its first_seen is kept, and last_changed is
    kept when the content hash is unchanged. `refused`: file name -> why, for files not read (a link outside
    the landing zone): each is a reject row.
    """
    name = folder.name
    if not is_safe_name(name):
        raise ValueError(f"not a safe benchmark name: {name!r}")
    now = now or datetime.now(UTC).replace(tzinfo=None)
    digest = content_hash(files)
    prompts, rejects = parse_prompts(files[PROMPTS_FILE], name)
    if RESULTS_FILE in files:
        results, result_rejects = parse_results(files[RESULTS_FILE], name, prompts["prompt_id"].to_list())
        rejects += result_rejects
    else:
        results = pl.DataFrame(schema=RESULTS_SCHEMA)
    metadata, warnings, meta_refused = parse_metadata_with_rejects(files, name, prompts.height)
    if previous and any(UNREADABLE in why or KEY_IGNORED in why for _, _, why, _ in meta_refused):
        # a typo in benchmark.toml must not reset the metadata the indexes read (agentic, public_items, ...)
        metadata = {key: previous.get(key, value) for key, value in metadata.items()}
        warnings.append("the stored metadata is kept until the file can be read")
    rejects += [Reject(name, f"{name}/{file}", line, why, excerpt) for file, line, why, excerpt in meta_refused]
    rejects += [Reject(name, f"{name}/{file}", None, why, file) for file, why in (refused or {}).items()]
    first_seen = previous.get("first_seen") if previous else None
    unchanged = bool(previous) and previous.get("content_hash") == digest
    last_changed = (previous.get("last_changed") if unchanged else None) or now
    registry = pl.DataFrame([{
        "benchmark": name, **metadata,
        "n_prompts": prompts.height, "n_results": results.height, "n_rejects": len(rejects),
        "content_hash": digest, "first_seen": first_seen or now, "last_changed": last_changed,
        "metadata_warnings": "; ".join(warnings) or None,
        "landing_origin": folder.origin, "landing_path": str(folder.path),
    }], schema=BENCHMARKS_SCHEMA)
    return IngestedBenchmark(name, registry, prompts, results, rejects_frame(rejects), digest, warnings)


def landing_rejects(problems: Iterable[LandingProblem]) -> pl.DataFrame:
    """Reject rows for LANDING_PARTITION: one per folder that cannot be a benchmark."""
    return rejects_frame(
        Reject(LANDING_PARTITION, f"{p.origin}:{p.path}", None, p.reason, excerpt(p.path.name)) for p in problems)


def rejects_markdown(rejects: pl.DataFrame, limit: int = 20) -> str:
    """A Markdown table of the first `limit` rejects (for asset metadata)."""
    shown = rejects.select("file", pl.col("line_number").alias("line"), "reason")
    return markdown_table(shown, max_rows=limit, empty="No rejects.")
