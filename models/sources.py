"""Where each source file comes from: the landing zone, the mirror, or its official URL.

Resolution order (DEVELOPERS.md): `data/raw/<source>/<file>`, then `$BENCHMAP_MIRROR/<source>/<file>`, then a
download from the official URL into `data/raw/<source>/<file>`. Set `BENCHMAP_OFFLINE=1` to skip downloads.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from models.errors import SourceNotFoundError

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RAW_DIR = PROJECT_ROOT / "data" / "raw"
DOWNLOAD_TIMEOUT_S = 60


@dataclass(frozen=True)
class SourceFile:
    """One file of one source, with the URL it is published at (an archive member when `archive_member` is set)."""

    source: str  # folder name under data/raw and the mirror
    filename: str
    url: str | None
    version: str
    archive_member: str | None = None
    licence: str = ""

    @property
    def key(self) -> str:
        return f"{self.source}/{self.filename}"


ONET_VERSION = "29.2"
_ONET_ZIP = "https://www.onetcenter.org/dl_files/database/db_29_2_text.zip"
_ELOUNDOU = "https://raw.githubusercontent.com/openai/GPTs-are-GPTs/0471612fef3cc22b74fb884d27bff9dbd3770582/data"
_MIT_WAL = (
    "https://raw.githubusercontent.com/MIT-Work-Analytics-Laboratory/US_AI_MAP/"
    "3149b67dd46f9e050e22f6ce4c179bab688fd2f5/data/_cache"
)
_WORKBANK = "https://huggingface.co/datasets/SALT-NLP/WORKBank/resolve/main"


def _onet(name: str) -> SourceFile:
    return SourceFile("onet", name, _ONET_ZIP, f"O*NET {ONET_VERSION}", archive_member=f"db_29_2_text/{name}",
                      licence="CC BY 4.0")


SOURCES: dict[str, SourceFile] = {
    s.key: s
    for s in [
        _onet("Occupation Data.txt"),
        _onet("Task Statements.txt"),
        _onet("Alternate Titles.txt"),
        _onet("Sample of Reported Titles.txt"),
        _onet("Technology Skills.txt"),
        _onet("Tasks to DWAs.txt"),
        _onet("DWA Reference.txt"),
        # The full ratings file is not mirrored (too large for the snapshot); a user with internet gets it.
        SourceFile("onet", "Task Ratings.txt",
                   "https://www.onetcenter.org/dl_files/database/db_29_2_text/Task%20Ratings.txt",
                   f"O*NET {ONET_VERSION}", licence="CC BY 4.0"),
        # IM and RT of all 17,639 rated 29.x tasks, one row per task (a derived copy; see its SOURCES.md)
        SourceFile("onet_task_ratings", "task_ratings_im_rt_29x.csv",
                   "https://raw.githubusercontent.com/theodorewright11/aei_data_analysis/"
                   "028ed65b46e35707e57ffb8691625aed4a4c80b5/scripts/task_level_with_freq_importance_relevance.csv",
                   "O*NET 29.x Task Ratings IM/RT (derived copy, T. Wright @ 028ed65)", licence="CC BY 4.0"),
        SourceFile("onet_task_ratings", "task_ratings_partial_from_workbank.csv",
                   f"{_WORKBANK}/task_data/task_statement_with_metadata.csv",
                   "WORKBank task metadata (O*NET 29.x ratings of 2,131 tasks)", licence="O*NET CC BY 4.0"),
        SourceFile("oews", "national_M2024_dl.xlsx", "https://www.bls.gov/oes/special-requests/oesm24nat.zip",
                   "BLS OEWS May 2024", archive_member="oesm24nat/national_M2024_dl.xlsx",
                   licence="public domain"),
        SourceFile("task_hours", "onet_task_labor_input_30_2.parquet",
                   f"{_MIT_WAL}/onet_task_labor_input_30_2.parquet", "MIT WAL task shares, O*NET 30.2",
                   licence="CC BY-NC-ND 4.0"),
        SourceFile("eloundou", "full_labelset.tsv", f"{_ELOUNDOU}/full_labelset.tsv",
                   "openai/GPTs-are-GPTs @ 0471612", licence="MIT"),
        SourceFile("workbank", "domain_worker_desires.csv", f"{_WORKBANK}/worker_data/domain_worker_desires.csv",
                   "SALT-NLP/WORKBank", licence="none stated"),
        SourceFile("workbank", "expert_rated_technological_capability.csv",
                   f"{_WORKBANK}/expert_ratings/expert_rated_technological_capability.csv", "SALT-NLP/WORKBank",
                   licence="none stated"),
        SourceFile("workbank", "task_statement_with_metadata.csv",
                   f"{_WORKBANK}/task_data/task_statement_with_metadata.csv", "SALT-NLP/WORKBank",
                   licence="none stated"),
    ]
}


def raw_dir() -> Path:
    return Path(os.environ.get("BENCHMAP_RAW_DIR", DEFAULT_RAW_DIR))


def mirror_dir() -> Path | None:
    mirror = os.environ.get("BENCHMAP_MIRROR")
    if not mirror:
        return None
    path = Path(mirror)
    return path if path.is_absolute() else (PROJECT_ROOT / path).resolve()


def downloads_allowed() -> bool:
    return os.environ.get("BENCHMAP_OFFLINE", "").lower() not in {"1", "true", "yes"}


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


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def candidate_paths(spec: SourceFile) -> list[tuple[str, Path]]:
    places = [("raw", raw_dir() / spec.source / spec.filename)]
    mirror = mirror_dir()
    if mirror is not None:
        places.append(("mirror", mirror / spec.source / spec.filename))
    return places


def _download(spec: SourceFile, target: Path) -> None:
    assert spec.url is not None
    request = urllib.request.Request(spec.url, headers={"User-Agent": "benchmap/0.1 (research pipeline)"})
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


def resolve_source(key_or_spec: str | SourceFile, *, required: bool = True) -> ResolvedSource | None:
    """Find a source file: data/raw, then $BENCHMAP_MIRROR, then its official URL.

    Raises SourceNotFoundError naming the file, every place looked and the URL when nothing works
    (or returns None when `required` is False).
    """
    spec = SOURCES[key_or_spec] if isinstance(key_or_spec, str) else key_or_spec
    places = candidate_paths(spec)
    for origin, path in places:
        if path.is_file():
            return ResolvedSource(spec, path, origin)
    tried = [f"{origin}: {path}" for origin, path in places]
    if mirror_dir() is None:
        tried.append("mirror: BENCHMAP_MIRROR is not set")
    if spec.url and downloads_allowed():
        target = raw_dir() / spec.source / spec.filename
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
