"""The source files benchmap reads: where each is published, its version and licence (pure constants).

Finding a file (data/raw, then the mirror, then a download) is I/O and lives in `resources.sources`.
"""

from __future__ import annotations

from dataclasses import dataclass


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
