"""A benchmark's results.csv (pure): per-prompt model scores, one row per (prompt, model), each bad line a reject
naming it (the header's problems skip the file line by line; a quoted field may span lines; a last line without a
newline is not trusted)."""

from __future__ import annotations

import csv
import decimal
import math
import sys
from collections.abc import Iterable
from typing import Any

import polars as pl

from models.landing_lines import (  # noqa: F401 - RESULTS_FILE re-exported
    PROMPTS_FILE,
    RESULTS_FILE,
    Reject,
    cut_last_line,
    decode_line,
    excerpt,
    physical_lines,
    utf16_reason,
    utf16_text_lines,
)

RESULT_COLUMNS = ("benchmark", "prompt_id", "model", "score")
RESULTS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8, "prompt_id": pl.Utf8, "model": pl.Utf8, "score": pl.Float64,
}


def parse_score(text: str) -> tuple[float, str | None]:
    """(score, None) for a finite number in [0, 1] (-0 becomes 0); (nan, why) otherwise, including a value
    whose magnitude is too small for a float (`1e-400` would silently become 0.0)."""
    try:
        score = float(text)
    except ValueError:
        return math.nan, f"score {text!r} is not a number"
    if not math.isfinite(score):
        return math.nan, f"score {text!r} is not a finite number"
    if score == 0.0 or abs(score) < sys.float_info.min:  # zero, or an underflow to 0 / a subnormal
        try:
            exact = decimal.Decimal(text.strip())
        except decimal.InvalidOperation:
            exact = decimal.Decimal(0)
        if exact != 0 and (score == 0.0 or abs(score) < sys.float_info.min):
            return math.nan, f"score {text!r} is too small to store as a number (it underflows)"
    if not 0.0 <= score <= 1.0:
        return math.nan, f"score {text} is outside [0, 1]"
    return score + 0.0, None  # -0.0 + 0.0 == 0.0: no negative zero is stored


MAX_QUOTED_LINES = 50  # line breaks a quoted CSV field may hold: a stray quote must not swallow the file
_OPEN_QUOTE = "unexpected end of data"  # csv's error for a quoted field still open at the end of its text
_CUT = "no final newline: the file may have been cut mid-write, so this last line is not trusted"


def _quoted_record(text: str, lines: list[tuple[int, bytes]], position: int
                   ) -> tuple[list[str], str, int, int] | None:
    """(fields, text, next position, last line number) of the CSV record that starts with `text` (whose quoted
    field is still open) and goes on over the lines from `position`, when a later line closes it within
    MAX_QUOTED_LINES; None when none does (or one is not UTF-8)."""
    for at in range(position, min(len(lines), position + MAX_QUOTED_LINES)):
        number, line = lines[at]
        more, _ = decode_line(line)
        if more is None:
            return None
        text = f"{text}\n{more}"
        try:
            return next(csv.reader([text], strict=True)), text, at + 1, number
        except csv.Error as exc:
            if _OPEN_QUOTE not in str(exc):
                return None
    return None


def parse_results(data: bytes, benchmark: str, known_prompt_ids: Iterable[str], *, label: str | None = None
                  ) -> tuple[pl.DataFrame, list[Reject]]:
    """Valid result rows (RESULTS_SCHEMA) of a results.csv file's bytes; rows naming unknown prompts or bad
    scores become Rejects."""
    label = label or f"{benchmark}/{RESULTS_FILE}"
    known = set(known_prompt_ids)
    rows: list[dict[str, Any]] = []
    rejects: list[Reject] = []
    header: list[str] | None = None
    skipped_by: str | None = None  # the header's problem: every data line after it is a reject of its own
    seen: dict[tuple[str, str], int] = {}
    # a file that does not end in a newline may have been cut mid-write: its last line (`…,0.875` cut to `…,0.8`)
    # can still parse, with a wrong value
    if (utf16 := utf16_reason(data, RESULTS_FILE)) is not None:  # one reject, not one "not UTF-8" per line
        text_lines = utf16_text_lines(data)
        return pl.DataFrame(schema=RESULTS_SCHEMA), [Reject(
            benchmark, label, 1, f"{utf16} (none of its {len(text_lines):,} lines is read)",
            excerpt(text_lines[0][1] if text_lines else ""))]
    cut = cut_last_line(data)
    lines = list(physical_lines(data))
    position = 0
    while position < len(lines):
        number, line = lines[position]
        position += 1
        if not line.strip():
            continue
        if skipped_by is not None:
            rejects.append(Reject(benchmark, label, number, skipped_by, excerpt(line)))
            continue
        if number == cut and header is not None:
            rejects.append(Reject(benchmark, label, number, _CUT, excerpt(line)))
            continue
        text, problem = decode_line(line)
        if text is None:
            rejects.append(Reject(benchmark, label, number, problem or "not UTF-8", excerpt(line)))
            continue
        spans = ""  # a record whose quoted field holds line breaks spans several lines: its first names it
        try:
            fields = next(csv.reader([text], strict=True))
        except csv.Error as exc:
            quoted = _quoted_record(text, lines, position) if _OPEN_QUOTE in str(exc) else None
            why = f"invalid CSV: {exc}"
            if _OPEN_QUOTE in str(exc) and quoted is None:
                where = ("by the end of the file" if position + MAX_QUOTED_LINES >= len(lines)
                         else f"within {MAX_QUOTED_LINES} lines")
                why = f"invalid CSV: a quoted field opened on this line is not closed {where} (a stray double quote?)"
            elif quoted is not None and header is not None and len(quoted[0]) != len(header):
                # two stray quotes: the lines between are records of their own, not one field of this one
                why = (f"invalid CSV: a quoted field opened on this line closes on line {quoted[3]} into a record of "
                       f"{len(quoted[0])} fields, not {len(header)} (a stray double quote?)")
                quoted = None
            if quoted is None:
                rejects.append(Reject(benchmark, label, number, why, excerpt(text)))
                continue
            fields, text, position, last = quoted
            if last == cut and header is not None:
                rejects.append(Reject(benchmark, label, number, f"{_CUT} (a record over lines {number}-{last})",
                                      excerpt(text)))
                continue
            spans = f" (a record over lines {number}-{last})"
        if header is None:
            header = [f.strip().lower() for f in fields]
            repeated = sorted({c for c in header if c and header.count(c) > 1})
            if repeated:  # `score,score`: which one counts is not ours to guess
                reason = f"header repeats column(s) {', '.join(repeated)}: the whole file is skipped"
                rejects.append(Reject(benchmark, label, number, reason, excerpt(text)))
                skipped_by = f"skipped: the header (line {number}) repeats column(s) {', '.join(repeated)}"
                continue
            missing = [c for c in RESULT_COLUMNS if c not in header]
            if missing:
                reason = (f"header lacks column(s) {', '.join(missing)}: the whole file is skipped "
                          f"(expected {','.join(RESULT_COLUMNS)})")
                rejects.append(Reject(benchmark, label, number, reason, excerpt(text)))
                skipped_by = f"skipped: the header (line {number}) lacks column(s) {', '.join(missing)}"
            continue
        if len(fields) != len(header):
            rejects.append(Reject(benchmark, label, number,
                                  f"expected {len(header)} fields, found {len(fields)}{spans}", excerpt(text)))
            continue
        record = dict(zip(header, (f.strip() for f in fields), strict=True))
        reason = None
        score = math.nan
        if record["benchmark"] and record["benchmark"] != benchmark:
            reason = f"benchmark {record['benchmark']!r} does not match the folder {benchmark!r}"
        elif not record["prompt_id"]:
            reason = "missing prompt_id"
        elif record["prompt_id"] not in known:
            # (a prompt whose own line was rejected is not known either: its reject says why)
            reason = f"unknown prompt_id {record['prompt_id']!r} (no accepted prompt of {PROMPTS_FILE} has it)"
        elif not record["model"]:
            reason = "missing model"
        else:
            score, reason = parse_score(record["score"])
        key = (record["prompt_id"], record["model"])
        if reason is None and key in seen:
            reason = (f"duplicate result for prompt {key[0]!r} and model {key[1]!r} "
                      f"(first on line {seen[key]})")
        if reason is not None:
            rejects.append(Reject(benchmark, label, number, reason + spans, excerpt(text)))
            continue
        seen[key] = number
        rows.append({"benchmark": benchmark, "prompt_id": record["prompt_id"], "model": record["model"],
                     "score": score})
    if not rows and not rejects:  # nothing to read: a reject, so an empty file never replaces results silently
        rejects.append(Reject(benchmark, label, 1, "no header and no result row: the file is empty" if header is None
                              else "a header and no result row", excerpt(data[:200])))
    return pl.DataFrame(rows, schema=RESULTS_SCHEMA), rejects
