"""The neighbour step's cache (issue 25): one JSON file per benchmark beside the warehouse
(data/warehouse/neighbour_step/<benchmark>.json) holding the stacked decision of every text, under the
fingerprint of what they depend on (models.labeling.stacking.judged_fingerprint: the stack fit, the labeler
version, the benchmark's judged texts). A warm run with the same fingerprint relabels no text; a changed judge
sample or fit starts the file afresh. One partition writes one file, so parallel partitions never share one."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

CACHE_DIR = "neighbour_step"


def cache_path(warehouse_path: str | Path, benchmark: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in benchmark)
    return Path(warehouse_path).parent / CACHE_DIR / f"{safe}.json"


def read_decisions(path: Path, fingerprint: str) -> dict[str, Any]:
    """prompt_hash -> cached decision ([is_work, p_work, [[task, code, p], ...]] or None) under `fingerprint`;
    empty when the file is missing, unreadable (it is only a cache: recomputed) or for another fingerprint."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("fingerprint") != fingerprint:
        return {}
    return dict(data.get("decisions") or {})


def write_decisions(path: Path, fingerprint: str, decisions: dict[str, Any]) -> None:
    """Replace the file atomically (a crash leaves the old file or the new one, never half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"fingerprint": fingerprint, "decisions": decisions}, separators=(",", ":")),
                   encoding="utf-8")
    os.replace(tmp, path)
