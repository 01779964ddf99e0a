"""The key a kept result is stored under: a digest of everything it depends on (issue 29's caches).

One helper for the three kinds of key: the headline's per-benchmark draws (models/estimates/bench_draws.py),
the judged checks (models/estimates/judged.py: checks_key, led by the judged problem's fingerprint) and results
read back by their input frames (resources/estimate_cache.py: frames_key, figure_key; assets/kept_rows.py,
assets/figure_reuse.py). Only hashlib: imported on the warm path.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

SEPARATOR = b"\x1e"


def result_key(parts: Iterable[object], *, head: bytes = b"", chunks: Iterable[bytes] = ()) -> str:
    """blake2b (16 bytes, hex) of `head`, then each part as SEPARATOR + repr(part) (repr: a string and the number
    it spells differ, as do ("a", "b") and "a", "b"), then `chunks` (bytes the caller already made, e.g. a
    frame's row hashes) as they are."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(head)
    for part in parts:
        digest.update(SEPARATOR + repr(part).encode())
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()
