"""Finding source files on disk or on the web: the side-effecting half of `models.sources`.

Resolution order (DEVELOPERS.md): `data/raw/<source>/<file>` (BENCHMAP_RAW_DIR), then
`$BENCHMAP_MIRROR/<source>/<file>`, then a download from the official URL into `data/raw/<source>/<file>`;
BENCHMAP_OFFLINE=1 skips downloads. The three variables are read through `resources.settings` (the one place
that looks at the environment), at call time, so a test that sets them sees them. Every function takes an
optional `Settings` for callers that hold one (a resource, a test); by default it is `settings()`.
"""

from __future__ import annotations

import io
import shutil
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.benchmarks import Landing
from models.errors import SourceNotFoundError
from models.sources import SOURCES, SourceFile
from resources.export_files import sha256_file  # the one file hash (the export manifest uses it too)
from resources.landing import discover, outside_zone
from resources.settings import Settings, settings

DOWNLOAD_TIMEOUT_S = 60
USER_AGENT = "benchmap/0.1 (research pipeline)"


def raw_dir(config: Settings | None = None) -> Path:
    """The landing zone (BENCHMAP_RAW_DIR, default data/raw)."""
    return (config or settings()).raw_dir


def mirror_dir(config: Settings | None = None) -> Path | None:
    """The read-only data mirror (BENCHMAP_MIRROR; relative paths from the project root), or None."""
    return (config or settings()).mirror


def downloads_allowed(config: Settings | None = None) -> bool:
    return (config or settings()).downloads_allowed


@dataclass(frozen=True)
class ResolvedSource:
    spec: SourceFile
    path: Path
    origin: str  # 'raw' | 'mirror' | 'download'

    def sha256(self) -> str:
        return sha256_file(self.path)

    def metadata(self) -> dict[str, str]:
        return {
            "source_file": self.spec.key,
            "source_version": self.spec.version,
            "source_origin": self.origin,
            "source_path": str(self.path),
            "sha256": self.sha256(),
            "licence": self.spec.licence,
        }


def candidate_paths(spec: SourceFile, config: Settings | None = None) -> list[tuple[str, Path]]:
    """(origin, path) of every place the file may already be, best first; nothing is downloaded."""
    config = config or settings()
    places = [("raw", raw_dir(config) / spec.source / spec.filename)]
    mirror = mirror_dir(config)
    if mirror is not None:
        places.append(("mirror", mirror / spec.source / spec.filename))
    return places


def _download(spec: SourceFile, target: Path) -> None:
    assert spec.url is not None
    request = urllib.request.Request(spec.url, headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_S) as response:
        payload = response.read()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    if spec.archive_member:
        with zipfile.ZipFile(io.BytesIO(payload)) as archive, archive.open(spec.archive_member) as member, \
                open(partial, "wb") as out:
            shutil.copyfileobj(member, out)
    else:
        partial.write_bytes(payload)
    partial.replace(target)  # atomic: a half-written download never looks like a source file


def resolve_source(
    key_or_spec: str | SourceFile, *, required: bool = True, config: Settings | None = None
) -> ResolvedSource | None:
    """Find a source file: data/raw, then $BENCHMAP_MIRROR, then its official URL.

    Raises SourceNotFoundError naming the file, every place looked and the URL when nothing works
    (or returns None when `required` is False).
    """
    config = config or settings()
    spec = SOURCES[key_or_spec] if isinstance(key_or_spec, str) else key_or_spec
    places = candidate_paths(spec, config)
    refused = {}
    for origin, path in places:
        if origin == "raw" and (why := outside_zone(path, raw_dir(config), follow_links=config.follow_links)):
            refused[path] = why  # a link out of data/raw is not read (BENCHMAP_FOLLOW_LINKS=1 follows it)
            continue
        if path.is_file():
            return ResolvedSource(spec, path, origin)
    tried = [f"{origin}: {refused.get(path, path)}" for origin, path in places]
    if mirror_dir(config) is None:
        tried.append("mirror: BENCHMAP_MIRROR is not set")
    if spec.url and downloads_allowed(config):
        target = raw_dir(config) / spec.source / spec.filename
        try:
            _download(spec, target)
            return ResolvedSource(spec, target, "download")
        except Exception as exc:  # network errors, HTTP errors, a bad archive
            tried.append(f"download: {spec.url} failed ({type(exc).__name__}: {exc})")
    elif spec.url:
        tried.append(f"download: skipped (BENCHMAP_OFFLINE is set); URL {spec.url}")
    if not required:
        return None
    raise SourceNotFoundError(
        f"source file {spec.key!r} ({spec.version}) not found. Looked in: " + "; ".join(tried)
        + (f". Official URL: {spec.url}" if spec.url else "")
    )


def landing_roots(config: Settings | None = None) -> list[tuple[str, Path]]:
    """Where benchmark folders are looked for, highest priority first: data/raw/benchmarks, then the mirror's."""
    roots = [("raw", raw_dir(config) / "benchmarks")]
    mirror = mirror_dir(config)
    if mirror is not None:
        roots.append(("mirror", mirror / "benchmarks"))
    return roots


def discover_landing(config: Settings | None = None) -> Landing:
    """`resources.landing.discover` over the configured landing roots."""
    return discover(landing_roots(config))


def index_file_checksums(folder: Path | None = None) -> list[dict[str, Any]]:
    """The benchmark index definitions (data/indexes/*.toml or $BENCHMAP_INDEX_DIR), as source_checksums'
    entries: a release names the index files its per-index figures were selected by (four releases of
    different index files carried one input hash, a probe of 2026-12-07). Also what the index files'
    fingerprint hashes (resources/source_versions.py)."""
    folder = folder or settings().index_dir
    return [{"source_file": f"indexes/{path.name}", "version": None, "licence": "this project's",
             "url": None, "status": "present", "origin": "index_dir", "path": str(path),
             "bytes": path.stat().st_size, "sha256": sha256_file(path)}
            for path in (sorted(folder.glob("*.toml")) if folder.is_dir() else [])]


def source_checksums(config: Settings | None = None) -> list[dict[str, Any]]:
    """Every registered source file: version, licence, where it was found (data/raw or the mirror) and its
    SHA-256 -- without downloading anything. Files found nowhere are listed with status 'not present'.
    The export manifest's `sources` (resources.export_writer.write_exports takes them)."""
    entries = []
    for key in sorted(SOURCES):
        spec = SOURCES[key]
        entry: dict[str, Any] = {
            "source_file": key,
            "version": spec.version,
            "licence": spec.licence,
            "url": spec.url,
        }
        for origin, path in candidate_paths(spec, config):
            if path.is_file():
                entry |= {
                    "status": "present",
                    "origin": origin,
                    "path": str(path),
                    "bytes": path.stat().st_size,
                    "sha256": sha256_file(path),
                }
                break
        else:
            entry |= {"status": "not present", "origin": None, "path": None, "bytes": None, "sha256": None}
        entries.append(entry)
    return entries
