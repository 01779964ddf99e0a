"""Reference data: O*NET 29.2, BLS OEWS May 2024, task shares (π), exposure labels and WORKBank ratings.

Pure functions (no Dagster, no environment, no downloads, no file reads: the assets resolve the files and
`resources.readers.read_source(path, parser)` reads them): `parse_*(data, source)` parse one source file's
bytes into a typed polars frame and raise `InputError(path=source, line=...)` on a truncated or malformed
file; `build_*` turn parsed frames into the warehouse tables of docs/ARCHITECTURE.md;
`*_summary` compute the numbers the assets record as metadata and the tests assert.

One module per source, each stating its decisions:
- `readers`: O*NET files are tab-separated with no quoting; the literal `n/a` means missing. A record whose
  field count differs from the header's, or a file that does not end with a newline (all O*NET files do), is
  an error.
- `onet_occupations`, `onet_tasks` (also the task -> DWA titles), `onet_titles`, `onet_technology`: O*NET 29.2.
  Where no rating exists, `is_core` follows O*NET's Task Type (Core = relevance >= 67% and importance >= 3.0);
  tasks with Task Type `n/a` use that rule on their ratings when rated and are not core when unrated.
- `onet_ratings`: up to three ratings sources, best first (RATINGS_SOURCES); each task takes all its rating
  columns from the first that rates it.
- `oews`: the `*` / `**` / `#` markers, imputed hourly/annual wages, wage_bill and annual_hours.
- `occupation_wages`: matching O*NET occupations to OEWS rows (`build_occupation_wages`).
- `task_hours`: task shares π and task hours (`build_task_hours`).
- `exposure`: Eloundou et al. labels; `workbank`: WORKBank ratings and zones.

Import from here (`from models import reference as ref`); the modules are the layout, not the interface.
"""

from models.reference.exposure import (
    EXPOSURE_LABELS,
    build_task_exposure,
    parse_eloundou_labels,
    task_exposure_summary,
)
from models.reference.occupation_wages import build_occupation_wages, occupation_wages_summary
from models.reference.oews import (
    HOURS_PER_YEAR,
    OEWS_GROUPS,
    OEWS_SHEET,
    TOP_CODED_ANNUAL,
    TOP_CODED_HOURLY,
    oews_summary,
    parse_oews_national,
)
from models.reference.onet_occupations import (
    MILITARY_MAJOR_GROUP,
    ONET_OCCUPATIONS,
    ONET_OCCUPATIONS_WITH_TASKS,
    SOC_MAJOR_GROUPS,
    build_onet_occupations,
    parse_occupation_data,
)
from models.reference.onet_ratings import (
    ONET_TASKS_RATED,
    RATINGS_SCHEMA,
    RATINGS_SOURCES,
    combine_task_ratings,
    parse_task_ratings,
)
from models.reference.onet_tasks import (
    CORE_MIN_IMPORTANCE,
    CORE_MIN_RELEVANCE,
    ONET_TASKS,
    build_onet_tasks,
    build_task_dwas,
    onet_tasks_summary,
    parse_dwa_reference,
    parse_task_statements,
    parse_tasks_to_dwas,
)
from models.reference.onet_technology import parse_technology_skills
from models.reference.onet_titles import build_onet_job_titles, parse_alternate_titles, parse_reported_titles
from models.reference.readers import (
    LINE,
    NA,
    cast_flag,
    cast_number,
    check_in_set,
    check_pattern,
    check_unique,
    decode_text,
    markdown_preview,
    parse_csv_records,
    parse_tsv,
)
from models.reference.task_hours import build_task_hours, parse_task_shares, pi_sums, task_hours_summary
from models.reference.workbank import (
    ZONE_THRESHOLD,
    ZONES,
    build_workbank_tasks,
    parse_workbank_capability,
    parse_workbank_desires,
    parse_workbank_tasks,
    workbank_summary,
    zone_expr,
)

__all__ = [
    "CORE_MIN_IMPORTANCE",
    "CORE_MIN_RELEVANCE",
    "EXPOSURE_LABELS",
    "HOURS_PER_YEAR",
    "LINE",
    "MILITARY_MAJOR_GROUP",
    "NA",
    "OEWS_GROUPS",
    "OEWS_SHEET",
    "ONET_OCCUPATIONS",
    "ONET_OCCUPATIONS_WITH_TASKS",
    "ONET_TASKS",
    "ONET_TASKS_RATED",
    "RATINGS_SCHEMA",
    "RATINGS_SOURCES",
    "SOC_MAJOR_GROUPS",
    "TOP_CODED_ANNUAL",
    "TOP_CODED_HOURLY",
    "ZONES",
    "ZONE_THRESHOLD",
    "build_occupation_wages",
    "build_onet_job_titles",
    "build_onet_occupations",
    "build_onet_tasks",
    "build_task_dwas",
    "build_task_exposure",
    "build_task_hours",
    "build_workbank_tasks",
    "cast_flag",
    "cast_number",
    "check_in_set",
    "check_pattern",
    "check_unique",
    "combine_task_ratings",
    "decode_text",
    "markdown_preview",
    "occupation_wages_summary",
    "oews_summary",
    "onet_tasks_summary",
    "parse_alternate_titles",
    "parse_dwa_reference",
    "parse_eloundou_labels",
    "parse_occupation_data",
    "parse_oews_national",
    "parse_reported_titles",
    "parse_task_ratings",
    "parse_task_shares",
    "parse_task_statements",
    "parse_tasks_to_dwas",
    "parse_technology_skills",
    "parse_workbank_capability",
    "parse_workbank_desires",
    "parse_workbank_tasks",
    "pi_sums",
    "parse_csv_records",
    "parse_tsv",
    "task_exposure_summary",
    "task_hours_summary",
    "workbank_summary",
    "zone_expr",
]
