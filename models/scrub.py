"""Mask secrets in untrusted text (what a server or an exception says) before it is stored, logged or printed.

`scrub(text, known_secrets)` replaces
- every known secret (an API key the process holds), wherever it occurs, also URL-encoded, whatever its length
  (which values count as secrets is the caller's choice: resources.untrusted leaves out environment values
  shorter than MIN_SECRET_CHARS, and the key the process sends when shorter than 4 characters);
- the value after `Authorization:` / `Bearer` / `api_key=` (whatever the token looks like);
- any `sk-...`-shaped token (OpenAI-style keys, also those the process does not know, e.g. a proxy's own key)

by `[redacted]`. Pure: the secrets the process knows are collected by `resources.untrusted`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from urllib.parse import quote

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


# any of the patterns can only match where one of these words is: most texts need no regex pass at all
_TRIGGER = re.compile(r"(?i)authorization|bearer|api[_-]?key|access[_-]?token|secret[_-]?key|client[_-]?secret|sk-")


def scrub(text: str | None, known_secrets: Iterable[str] = ()) -> str | None:
    """`text` with every secret masked (None stays None)."""
    if not text:
        return text
    for secret in sorted({s for s in known_secrets if s}, key=len, reverse=True):
        for form in {secret, quote(secret, safe="")}:
            text = text.replace(form, MASK)
    if _TRIGGER.search(text):
        for pattern in _PATTERNS:
            text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


def scrubber(known_secrets: Iterable[str]) -> Callable[[str | None], str | None]:
    """`scrub` with the secrets fixed once (for many texts: the set is not rebuilt per text)."""
    secrets = tuple(sorted({s for s in known_secrets if s}, key=len, reverse=True))
    return lambda text: scrub(text, secrets)


def contains_secret(text: str | None, known_secrets: Iterable[str]) -> bool:
    """Whether a known secret appears in `text` (for asserting, never for deciding what to store)."""
    return bool(text) and any(s and s in text for s in known_secrets)


__all__ = ["MASK", "MIN_SECRET_CHARS", "contains_secret", "scrub", "scrubber"]
