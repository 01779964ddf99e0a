"""Untrusted text in, masked text out: `scrub_untrusted(text)` with every secret this process knows.

Anything a server says (error bodies, answers, the rationale an LLM writes) and any exception text is
untrusted: an OpenAI-compatible proxy may echo the API key in its error message. The pure masking is
`models.scrub.scrub`; this module adds the secrets the process knows: the API key of the settings
(OPENAI_API_KEY, the key the process sends, from SENT_KEY_MIN_CHARS on), every other environment variable whose
name says it is a secret (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*`) from MIN_SECRET_CHARS on,
and any key handed in (`extra`: e.g. the labeler's configured key, from SENT_KEY_MIN_CHARS on).

Applied where such text enters the process (resources/llm_client.py: every server text) and, as a second guard,
where it is stored or shown (resources/label_cache.py: label_cache, label_failures and the label store;
pipelines/run_report.py: the step errors run_all prints).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable

from models.scrub import MIN_SECRET_CHARS, scrub, scrubber

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_NOT_SECRET_NAMES = {"GPG_AGENT_INFO", "SSH_AUTH_SOCK"}  # paths and sockets, not secrets


# the keys the process sends: masked from SENT_KEY_MIN_CHARS on (a local server's `--api-key hunter2` is short,
# and a server that echoes it must not get it stored); a 1-3 character placeholder such as "1" would mask the
# digits of every answer, and guards nothing
_SENT_KEYS = ("OPENAI_API_KEY",)
SENT_KEY_MIN_CHARS = 4


def known_secrets(extra: Iterable[str | None] = ()) -> list[str]:
    """The secret values of the environment (read now: a test or a resource may have set them since): those whose
    name looks like a secret's from MIN_SECRET_CHARS on, the keys the process sends and `extra` from
    SENT_KEY_MIN_CHARS on."""
    values = [v for k, v in os.environ.items()
              if len(v) >= (SENT_KEY_MIN_CHARS if k in _SENT_KEYS else MIN_SECRET_CHARS)
              and (k in _SENT_KEYS or (_SECRET_NAME.search(k) and k not in _NOT_SECRET_NAMES))]
    return [*values, *(e for e in extra if e and len(e) >= SENT_KEY_MIN_CHARS)]


def scrub_untrusted(text: str | None, extra: Iterable[str | None] = ()) -> str | None:
    """`text` (from a server or an exception) with every secret the process knows masked."""
    if not text:
        return text
    return scrub(text, known_secrets(extra))


def untrusted_scrubber(extra: Iterable[str | None] = ()) -> Callable[[str | None], str | None]:
    """`scrub_untrusted` with the secrets read once: for the many texts of a labeled batch."""
    return scrubber(known_secrets(extra))


__all__ = ["known_secrets", "scrub_untrusted", "untrusted_scrubber"]
