"""Reading the files whose parsers live in models/: the one place those files are opened.

The parsers in models/ are pure: they take a file's content (bytes) and a `source` name for their error
messages (`parser(data, source, ...)`). The functions here open the file and pass its path as `source`, so
every error names the file and line as it did when the parsers opened the files themselves.

- `read_text`, `read_index_files` (the benchmark index TOML files, `models.indexes` evaluates them).
- `read_source(path, parser, ...)`: the reference parsers (`models.reference.parse_*`); a file that cannot
  be read (missing, a directory, no permission) is an InputError naming the path.
- `load_onet_reference_frames(onet_dir)`: the O*NET frames the offline labeler's index is built from.
- The task-level reference (vendored in REFERENCE_DIR = data/reference/): `read_reference`,
  `load_reference`, `sampling_design`; annotators' gold CSVs: `read_gold_csv`; the human labels of the
  mirrored benchmarks: `read_mirror_prompts`; the selector's coefficients: `load_selector_fit` (FIT_PATH).

The benchmark landing zone's files are read in `resources/landing.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import polars as pl

from models import reference as ref
from models import reference_labels as rl
from models.errors import InputError
from models.validation import annotation
from resources.landing import outside_zone
from resources.settings import PROJECT_ROOT, settings

if TYPE_CHECKING:
    from models.labeling.selector import SelectorFit
    from models.labeling.stacking import StackFit

# the vendored task-level reference (data/reference/SOURCES.md) and the selector fitted on it
REFERENCE_DIR = PROJECT_ROOT / "data" / "reference"
REFERENCE_OVERRIDE = "reference_labels"  # <landing zone>/reference_labels/ overrides the vendored data/reference/
FIT_PATH = PROJECT_ROOT / "models" / "labeling" / "selector_fit.json"

P = ParamSpec("P")
T = TypeVar("T")


def read_bytes(path: str | Path) -> bytes:
    """The file's bytes; InputError naming the path when it cannot be read (missing, a directory, ...)."""
    path = Path(path)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file ({exc})", path=path) from exc


def read_text(path: str | Path) -> str:
    """A UTF-8 text file (a written artefact such as the coverage map); InputError naming it if unreadable."""
    return read_bytes(path).decode("utf-8")


def read_index_files(folder: Path, project_root: Path = PROJECT_ROOT) -> dict[str, bytes]:
    """path -> bytes of every `*.toml` in the index folder (paths relative to the project when inside it),
    for `models.indexes.evaluate_indexes`, which decodes each (a file that is not UTF-8 is that file's error);
    a missing folder has none."""
    files = {}
    for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
        try:
            shown = str(path.resolve().relative_to(project_root))
        except ValueError:
            shown = str(path)
        files[shown] = read_bytes(path)
    return files


def read_source(
    path: str | Path, parser: Callable[Concatenate[bytes, str, P], T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """`parser(bytes of path, str(path), *args, **kwargs)`: a reference file read and parsed, its errors
    naming the path (e.g. `read_source(p, ref.parse_task_statements)`)."""
    return parser(read_bytes(path), str(path), *args, **kwargs)


def load_onet_reference_frames(onet_dir: Path | str) -> dict[str, pl.DataFrame]:
    """Read the raw O*NET text files into the frames `TaskIndex.build` takes, with the reference parsers
    (`models.reference`: the same validation and the same tables as the warehouse's onet_* assets).

    Returns tasks (onet_soc_code, task_id, task, task_type), occupations (onet_soc_code, title,
    description), job_titles (onet_soc_code, job_title, title_source), technology_skills (onet_soc_code,
    example, commodity_title, hot_technology) and, when `Tasks to DWAs.txt` and `DWA Reference.txt` exist,
    task_dwas (onet_soc_code, task_id, dwa_title).
    """
    onet_dir = Path(onet_dir)
    occupations = read_source(onet_dir / "Occupation Data.txt", ref.parse_occupation_data)
    frames = {
        "tasks": read_source(onet_dir / "Task Statements.txt", ref.parse_task_statements).select(
            "onet_soc_code", "task_id", "task", "task_type"
        ),
        "occupations": occupations,
        "job_titles": ref.build_onet_job_titles(
            occupations,
            read_source(onet_dir / "Alternate Titles.txt", ref.parse_alternate_titles),
            read_source(onet_dir / "Sample of Reported Titles.txt", ref.parse_reported_titles),
        ),
        "technology_skills": read_source(onet_dir / "Technology Skills.txt", ref.parse_technology_skills).select(
            "onet_soc_code", "example", "commodity_title", "hot_technology"
        ),
    }
    tasks_to_dwas, dwa_reference = onet_dir / "Tasks to DWAs.txt", onet_dir / "DWA Reference.txt"
    if tasks_to_dwas.exists() and dwa_reference.exists():
        frames["task_dwas"] = ref.build_task_dwas(
            read_source(tasks_to_dwas, ref.parse_tasks_to_dwas),
            read_source(dwa_reference, ref.parse_dwa_reference),
        )
    return frames


# --- the task-level reference (models/reference_labels.py parses) -----------------------------------------

# parsed files by (what was asked, digest of the content): the neighbour step reads the reference and the judged
# texts' signals once per benchmark (labels, the split checks' relabeling), ~0.1 CPU-s a parse; keyed by the
# content, so an edited file is parsed again
_PARSED: dict[tuple[object, str], Any] = {}


def _parsed_once(name: object, data: bytes, parse: Callable[[bytes], Any]) -> Any:
    """parse(data), computed once per (name, content) and process (a few entries kept)."""
    import hashlib

    key = (name, hashlib.blake2b(data, digest_size=16).hexdigest())
    if key not in _PARSED:
        if len(_PARSED) >= 8:
            _PARSED.clear()
        _PARSED[key] = parse(data)
    return _PARSED[key]


def read_reference(path: str | Path, split: str | None = None) -> pl.DataFrame:
    """One reference JSONL file (split inferred from the file name when not given)."""
    path = Path(path)
    refuse_link_out_of_landing_zone(path)
    if not path.is_file():
        raise InputError("reference file not found (or not a file)", path=path)
    split = split or rl.split_of(path.name)
    return _parsed_once((str(path), split), path.read_bytes(),
                        lambda data: rl.parse_reference(data, str(path), split))


def refuse_link_out_of_landing_zone(path: Path) -> None:
    """A reference file in the landing zone is untrusted input, as a benchmark's files are: one that links outside
    it (data/raw/reference_labels/x.jsonl -> /etc/...) is an InputError naming it, never read
    (`resources.landing.outside_zone`; BENCHMAP_FOLLOW_LINKS=1 follows such links)."""
    raw = settings().raw_dir
    if path.absolute().is_relative_to(raw.absolute()) and (why := outside_zone(path, raw)) is not None:
        raise InputError(why, path=path)


def reference_folder() -> Path:
    """The task-level reference every reader uses: the landing zone's reference_labels/ (data/raw, or
    BENCHMAP_RAW_DIR) when it holds either split's file, else the vendored data/reference/. One choice, so the
    labels' judged texts, their validation, the estimates' judge sample and a refit all read the same reference
    (the estimates once read the vendored one whatever the landing zone held)."""
    override = settings().raw_dir / REFERENCE_OVERRIDE
    if any((override / name).is_file() for name in rl.SPLIT_FILES.values()):
        return override
    return REFERENCE_DIR


def load_reference(folder: str | Path | None = None, splits: Sequence[str] = ("train", "dev")) -> pl.DataFrame:
    """The reference splits of `folder` (default: `reference_folder()`), concatenated. A split whose file the
    folder does not hold has no rows (a reference of one's own may have only a training or only a development
    split); a folder holding none of them is an InputError naming it."""
    folder = Path(folder) if folder is not None else reference_folder()
    present = [s for s in splits if (folder / rl.SPLIT_FILES[s]).exists()]
    if not present:
        missing = " or ".join(rl.SPLIT_FILES[s] for s in splits)
        raise InputError(f"reference file not found: the folder holds no {missing}", path=folder)
    return pl.concat([read_reference(folder / rl.SPLIT_FILES[s], s) for s in present])


def sampling_design(folder: str | Path | None = None) -> pl.DataFrame:
    """benchmark, distinct_texts, n_train, n_dev, n_blind: how the reference sample was drawn (default:
    `reference_folder()`'s design file, the vendored one when an override folder has none)."""
    if folder is None:
        folder = reference_folder()
        folder = folder if (folder / rl.DESIGN_FILE).is_file() else REFERENCE_DIR
    refuse_link_out_of_landing_zone(Path(folder) / rl.DESIGN_FILE)
    return rl.parse_sampling_design(read_bytes(Path(folder) / rl.DESIGN_FILE))


def gold_files(folder: Path) -> list[Path]:
    """The annotators' CSV files in `folder` (data/raw/gold_labels/), sorted; none when it is not there. A file
    linking outside the folder's parent (data/raw) is left out (BENCHMAP_FOLLOW_LINKS=1 follows it)."""
    return sorted(p for p in folder.glob("*.csv") if outside_zone(p, folder.parent) is None) if folder.is_dir() else []


def read_gold_csv(path: str | Path) -> pl.DataFrame:
    """One annotator CSV (docs/gold_labels.md; `models.validation.parse_gold_csv` says what is accepted)."""
    path = Path(path)
    return annotation.parse_gold_csv(read_bytes(path), str(path))


def read_mirror_prompts(mirror: Path | str, benchmark: str) -> list[dict]:
    """The JSON objects of `<mirror>/benchmarks/<benchmark>/prompts.jsonl` (the human labels' prompts)."""
    from models.labeling import human_labels  # the offline labeler's imports, only where they are needed

    path = Path(mirror) / "benchmarks" / benchmark / "prompts.jsonl"
    return human_labels.parse_prompt_lines(read_bytes(path))


def load_selector_fit(path: str | Path = FIT_PATH) -> SelectorFit:
    """The selector's fitted coefficients (models/labeling/selector_fit.json unless told otherwise)."""
    from models.labeling.selector import SelectorFit

    return SelectorFit.from_json(read_text(path))


STACK_PATH = FIT_PATH.with_name("neighbour_fit.json")  # the neighbour stack (models/labeling/stacking.py)


def load_stack_fit(path: str | Path = STACK_PATH) -> StackFit | None:
    """The neighbour stack's fit (models/labeling/neighbour_fit.json unless told otherwise), None without one."""
    from models.labeling.stacking import StackFit

    path = Path(path)
    return StackFit.from_json(read_text(path)) if path.is_file() else None


def read_labeler_oof(labeler_version: str | None) -> dict | None:
    """The cross-fitted labels of the judged texts for the published labeler: the neighbour stack's
    (neighbour_oof.json) when the labels carry its version, else the selector's (selector_oof.json)."""
    stack = STACK_PATH.with_name("neighbour_oof.json")
    if labeler_version and stack.is_file():
        data = json.loads(read_text(stack))
        if labeler_version.endswith(f"+{data.get('fit_version')}"):
            return data
    return read_selector_oof()


def read_judged_signals(selector_version: str | None = None) -> dict[str, tuple[float, list[tuple]]]:
    """The reference texts' out-of-sample text signals the neighbour stack reads (models/labeling/
    neighbour_signals.json, written by `python -m pipelines.fit_labeler`; models.labeling.stacking.TextSignals),
    empty without the file or when it is for another selector fit than `selector_version`."""
    path = STACK_PATH.with_name("neighbour_signals.json")
    if not path.is_file():
        return {}

    def parse(data: bytes) -> tuple[str | None, dict[str, tuple[float, list[tuple]]]]:
        parsed = json.loads(data.decode("utf-8"))
        return parsed.get("selector_version"), {
            h: (float(v[0]), [tuple(x) for x in v[1]]) for h, v in parsed["signals"].items()}

    version, signals = _parsed_once(str(path), read_text(path).encode("utf-8"), parse)
    if selector_version is not None and version != selector_version:
        return {}
    return dict(signals)  # a copy each call


def read_selector_oof(path: str | Path | None = None) -> dict | None:
    """The selector's cross-validated labels of the reference texts (models/labeling/selector_oof.json, written
    by `python -m pipelines.fit_labeler`), or None when there is no such file."""
    path = Path(path) if path is not None else FIT_PATH.with_name("selector_oof.json")
    if not path.is_file():
        return None
    return json.loads(read_text(path))
