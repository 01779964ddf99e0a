"""Mask secrets in untrusted text (what a server or an exception says) before it is stored, logged or printed.

`scrub(text, known_secrets)` replaces
- every known secret (an API key the process holds), wherever it occurs, also URL-encoded, whatever its length
  (which values count as secrets is the caller's choice: resources.untrusted leaves out environment values
  shorter than MIN_SECRET_CHARS, and the key the process sends when shorter than 4 characters);
- the value after `Authorization:` / `Bearer` / `api_key=` (whatever the token looks like);
- any `sk-...`-shaped token (OpenAI-style keys, also those the process does not know, e.g. a proxy's own key)

by `[redacted]`, and a known secret cut short at the text's end (a truncation, with or without its ellipsis) or
start: its first (last) FRAGMENT_MIN_CHARS or more characters there are masked too. So is any run of
FRAGMENT_MIN_CHARS or more of a known secret's letters and digits anywhere in the text (holding a digit, or
WORDLIKE_FRAGMENT_CHARS long), compared without case and across whatever separates them (`_mask_fragments`): a
server echoed the key without its `sk-`, spaced out, upper-cased or with its `/` escaped as `\\/` (an audit,
2026-12-07); a key inside base64 (`Basic` or `Bearer` credentials encoded) is found through the base64 of the
key at each of its three alignments, and one in hexadecimal (or every byte percent-encoded) or reversed through
those forms of its letters and digits. Texts are masked as decoded: `scrub_strings` masks every string of a JSON
value (a key written as \\uXXXX escapes is only a key once decoded), and `scrub` masks a text as decoded when its
\\uXXXX escapes, HTML character references, percent-escapes or full-width letters (NFKC) hid a secret (a probe,
2026-12-07: `&#115;&#107;&#45;...`, `sk%2dPROBE...` and full-width echoes were stored whole).
A lone surrogate (JSON's "\\ud800" decodes to one) becomes U+FFFD: no UTF-8 store can encode it, and one in an
answer crashed the whole labeling step. Pure: the secrets the process knows are collected by
`resources.untrusted`.
"""

from __future__ import annotations

import base64
import functools
import html
import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote, unquote

MASK = "[redacted]"
MIN_SECRET_CHARS = 8  # an environment value found by its name's shape is a secret from this length: shorter
# ones ("1", "true") would mask ordinary words. The key the process sends has its own, lower floor
# (resources.untrusted.SENT_KEY_MIN_CHARS).

_PATTERNS = (
    # Authorization: Bearer xyz / Authorization: Basic xyz / "authorization": "xyz"
    re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?(?:bearer\s+|basic\s+|token\s+)?)[^\s\"',;}]+"),
    re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=\-]{16,}"),  # 16+: a token, not a word ("bearer bonds")
    re.compile(r"(?i)((?:api[_-]?key|access[_-]?token|secret[_-]?key|client[_-]?secret)[\"']?\s*[:=]\s*[\"']?)"
               r"[^\s\"',;&}]+"),
    re.compile(r"()\bsk-[A-Za-z0-9_\-]{8,}"),
)


FRAGMENT_MIN_CHARS = 8  # a secret's first (last) characters at a text's end (start): masked from this many on
_CUT_MARKS = ("…", "...")  # what a truncation may leave after the cut (models/labeling/llm_prompt.py clip)

_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str every surrogate is lone: JSON decodes pairs to one char

# any of the patterns can only match where one of these words is: most texts need no regex pass at all
_TRIGGER = re.compile(r"(?i)authorization|bearer|api[_-]?key|access[_-]?token|secret[_-]?key|client[_-]?secret|sk-")


# a \uXXXX escape written as text, however many backslashes a repr put before it (`\\u0073k-...`)
_ESCAPE = re.compile(r"\\+u([0-9a-fA-F]{4})")
_FULL_WIDTH = re.compile("[\uff01-\uff5e]")  # full-width ASCII: NFKC gives the key back


def scrub(text: str | None, known_secrets: Iterable[str] = ()) -> str | None:
    """`text` with every secret masked and every lone surrogate replaced (None stays None). A text holding
    escapes as characters (\\uXXXX, HTML character references, %XX, full-width letters: a server's HTML body
    quoting a key so) is masked as decoded when decoding them shows a secret: kept as it was, anyone could
    decode the key back."""
    if not text:
        return text
    secrets = sorted({s for s in known_secrets if s}, key=len, reverse=True)
    if (decoded := _decoded(text)) != text:
        masked = _scrub_plain(decoded, secrets)
        if masked != _SURROGATE.sub("\ufffd", decoded):  # a secret only its escapes hid (or one beside them)
            return masked
    return _scrub_plain(text, secrets)


def _decoded(text: str) -> str:
    """`text` with the escapes a server may write a key in decoded; each only where its marker occurs, so
    nearly every text is returned as it is without a pass."""
    if "\\" in text:
        text = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    if "&" in text:
        text = html.unescape(text)
    if "%" in text:
        text = unquote(text, errors="replace")
    if _FULL_WIDTH.search(text):  # only then: NFKC also rewrites a truncation's "…" and other marks
        text = unicodedata.normalize("NFKC", text)
    return text


def _scrub_plain(text: str, secrets: list[str]) -> str:
    text = _SURROGATE.sub("\ufffd", text)
    for secret in secrets:
        for form in {secret, quote(secret, safe="")}:
            text = text.replace(form, MASK)
    text = _mask_cut_secrets(text, secrets)
    text = _mask_fragments(text, tuple(secrets))
    if _TRIGGER.search(text):
        for pattern in _PATTERNS:
            text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


def _mask_cut_secrets(text: str, secrets: Iterable[str]) -> str:
    """A secret a truncation cut short: its first characters at the end of `text` (before a trailing ellipsis)
    or its last characters at the start, FRAGMENT_MIN_CHARS or more of them, masked. One `find` per secret
    when there is no such fragment (the store masks every label's rationale)."""
    for secret in secrets:
        if len(secret) <= FRAGMENT_MIN_CHARS:
            continue
        end = len(text.rstrip())
        mark = next((m for m in _CUT_MARKS if text.endswith(m, 0, end)), "")
        end = len(text[: end - len(mark)].rstrip())
        # the earliest start of the secret's head within reach of the end is the longest fragment
        i = text.find(secret[:FRAGMENT_MIN_CHARS], max(0, end - len(secret) + 1), end)
        while i != -1 and not secret.startswith(text[i:end]):
            i = text.find(secret[:FRAGMENT_MIN_CHARS], i + 1, end)
        if i != -1:
            text = text[:i] + MASK + text[end:]
        if len(text) < FRAGMENT_MIN_CHARS:
            continue
        j = secret.find(text[:FRAGMENT_MIN_CHARS], 1)
        while j != -1 and not text.startswith(secret[j:]):
            j = secret.find(text[:FRAGMENT_MIN_CHARS], j + 1)
        if j != -1:
            text = MASK + text[len(secret) - j:]
    return text


_ALNUM_RUN = re.compile(r"[^\W_]+")  # letters and digits: what a fragment is compared on
WORDLIKE_FRAGMENT_CHARS = 16  # a fragment of letters alone is masked from this many on, one with a digit from 8


def _alnum(text: str) -> str:
    return "".join(_ALNUM_RUN.findall(text)).lower()


def _base64_cores(secret: str) -> list[str]:
    """The base64 characters that stand for `secret` wherever it sits in an encoded text: one core per
    alignment (0, 1 or 2 bytes before it), without the characters shared with what surrounds it."""
    raw = secret.encode()
    cores = []
    for offset, skip in ((0, 0), (1, 2), (2, 3)):
        encoded = base64.b64encode(b"\0" * offset + raw).decode()
        cores.append(encoded[skip:len(encoded) - 4])  # the last group may hold the next bytes
    return [c for c in cores if len(c) >= FRAGMENT_MIN_CHARS]


@functools.lru_cache(maxsize=8)
def _fragment_search(secrets: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]] | None:
    """Every FRAGMENT_MIN_CHARS letters and digits in a row of a secret (or of its base64, its hexadecimal, the
    secret reversed), lower-cased, and the secrets' letters and digits to grow a hit against; None when no secret
    has that many."""
    forms = tuple({f for s in secrets for f in (_alnum(s), _alnum(s[::-1]), s.encode().hex(),
                                                 *map(_alnum, _base64_cores(s)))
                   if len(f) >= FRAGMENT_MIN_CHARS})
    grams = frozenset(f[i:i + FRAGMENT_MIN_CHARS] for f in forms for i in range(len(f) - FRAGMENT_MIN_CHARS + 1))
    return (grams, forms) if grams else None


def _mask_fragments(text: str, secrets: tuple[str, ...]) -> str:
    """Every run of FRAGMENT_MIN_CHARS or more letters and digits of a known secret (or of its base64) in
    `text`, wherever it is and whatever separates its characters there, masked from its first to its last
    character. One set lookup per letter of the text when there is none."""
    search = _fragment_search(secrets)
    if search is None:
        return text
    grams, forms = search
    flat = "".join(_ALNUM_RUN.findall(text)).lower()
    starts = [i for i in range(len(flat) - FRAGMENT_MIN_CHARS + 1) if flat[i:i + FRAGMENT_MIN_CHARS] in grams]
    if not starts:  # nearly every text
        return text
    where = [i for run in _ALNUM_RUN.finditer(text) for i in range(run.start(), run.end())]  # a letter's place
    spans: list[tuple[int, int]] = []
    end = 0
    for start in starts:
        if start < end:
            continue
        stop = start + FRAGMENT_MIN_CHARS
        while stop < len(flat) and any(flat[start:stop + 1] in f for f in forms):
            stop += 1
        if stop - start < WORDLIKE_FRAGMENT_CHARS and not any(c.isdigit() for c in flat[start:stop]):
            continue  # letters alone, shorter than that: a key made of words ("given-key") shares them with text
        spans.append((where[start], where[stop - 1] + 1))
        end = stop
    for first, last in reversed(spans):
        text = text[:first] + MASK + text[last:]
    return text


def scrub_strings(value: Any, clean: Callable[[str | None], str | None]) -> Any:
    """A decoded JSON value with `clean` applied to every string in it (object keys included)."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list):
        return [scrub_strings(v, clean) for v in value]
    if isinstance(value, dict):
        return {scrub_strings(k, clean): scrub_strings(v, clean) for k, v in value.items()}
    return value


def scrubber(known_secrets: Iterable[str]) -> Callable[[str | None], str | None]:
    """`scrub` with the secrets fixed once (for many texts: the set is not rebuilt per text)."""
    secrets = tuple(sorted({s for s in known_secrets if s}, key=len, reverse=True))
    return lambda text: scrub(text, secrets)


def contains_secret(text: str | None, known_secrets: Iterable[str]) -> bool:
    """Whether a known secret appears in `text` (for asserting, never for deciding what to store)."""
    return bool(text) and any(s and s in text for s in known_secrets)


__all__ = ["FRAGMENT_MIN_CHARS", "MASK", "MIN_SECRET_CHARS", "contains_secret", "scrub", "scrub_strings", "scrubber"]
