"""The O*NET lookups the release carries: what the codes in every other table name (a task_id in
`task_estimates`, an onet_soc_code in `occupation_estimates`). Copied as the warehouse holds them; O*NET is
CC BY 4.0, so the release may carry them (with the attribution the source column gives)."""

from __future__ import annotations

from models.data_dictionary.common import BOOL, CODE, COMMON, COUNT, ONET, ONET_RATINGS, TEXT, Entry

_RATINGS_FILES = "models/reference/onet_ratings.py (RATINGS_SOURCES)"

TABLES: dict[str, dict[str, Entry]] = {
    "onet_occupations": {
        "onet_soc_code": COMMON["onet_soc_code"],
        "title": COMMON["title"],
        "description": ("O*NET occupation description", TEXT, ONET),
        "soc_code": COMMON["soc_code"],
        "major_group_code": COMMON["major_group_code"],
        "major_group_title": COMMON["major_group_title"],
        "has_tasks": (
            "the occupation has O*NET task statements; only these count in coverage and hours (the others, such "
            "as the 'All Other' codes, carry no tasks)",
            BOOL,
            ONET,
        ),
    },
    "onet_tasks": {
        "onet_soc_code": COMMON["onet_soc_code"],
        "task_id": COMMON["task_id"],
        "task": COMMON["task"],
        "task_type": ("O*NET task type: Core or Supplemental; null where O*NET gives n/a", TEXT, ONET),
        "incumbents_responding": ("incumbents who rated the task statement (O*NET Task Statements)", COUNT,
                                  ONET),
        "task_date": ("month the statement was last updated (O*NET, MM/YYYY)", TEXT, ONET),
        "domain_source": ("who supplied the statement (Incumbent, Occupational Expert, Analyst, ...)", TEXT, ONET),
        "importance": ("O*NET task importance (IM scale, 1-5); null when the task is unrated", "scale 1-5",
                       ONET_RATINGS),
        "relevance": ("O*NET task relevance (RT: share of respondents rating the task relevant, 0-100); null when "
                      "unrated", "percent (0-100)", ONET_RATINGS),
        "frequency_category": ("modal O*NET frequency category (FT 1-7); null where the ratings source has no "
                               "FT categories", "category 1-7", ONET_RATINGS),
        "has_ratings": ("the task has O*NET importance and relevance ratings", BOOL, ONET_RATINGS),
        "ratings_source": ("which ratings file rated the task, best first: onet_task_ratings_full, im_rt_29x, "
                           "workbank_partial; null when unrated", TEXT, _RATINGS_FILES),
        "is_core": ("task is a Core task: O*NET's task type, or where it is n/a O*NET's own rule (relevance >= 67% "
                    "and importance >= 3.0)", BOOL, CODE),
    },
}
DESCRIPTIONS: dict[str, str] = {
    "onet_occupations": "O*NET 29.2 occupations: the title, SOC major group and description of every "
    "onet_soc_code in the other tables.",
    "onet_tasks": "O*NET 29.2 task statements with their ratings: the text of every task_id in the other tables.",
}
