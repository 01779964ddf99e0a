"""The O*NET reference frames the offline labeler's index is built from, read from the raw O*NET text
files with the reference parsers (one O*NET loader: models/reference/)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from models import reference as ref


def load_onet_reference_frames(onet_dir: Path | str) -> dict[str, pl.DataFrame]:
    """Read the raw O*NET text files into the frames `TaskIndex.build` takes, with the reference parsers
    (`models.reference`: the same validation and the same tables as the warehouse's onet_* assets).

    Returns tasks (onet_soc_code, task_id, task, task_type), occupations (onet_soc_code, title,
    description), job_titles (onet_soc_code, job_title, title_source), technology_skills (onet_soc_code,
    example, commodity_title, hot_technology) and, when `Tasks to DWAs.txt` and `DWA Reference.txt` exist,
    task_dwas (onet_soc_code, task_id, dwa_title).
    """
    onet_dir = Path(onet_dir)
    occupations = ref.parse_occupation_data(onet_dir / "Occupation Data.txt")
    frames = {
        "tasks": ref.parse_task_statements(onet_dir / "Task Statements.txt").select(
            "onet_soc_code", "task_id", "task", "task_type"
        ),
        "occupations": occupations,
        "job_titles": ref.build_onet_job_titles(
            occupations,
            ref.parse_alternate_titles(onet_dir / "Alternate Titles.txt"),
            ref.parse_reported_titles(onet_dir / "Sample of Reported Titles.txt"),
        ),
        "technology_skills": ref.parse_technology_skills(onet_dir / "Technology Skills.txt").select(
            "onet_soc_code", "example", "commodity_title", "hot_technology"
        ),
    }
    tasks_to_dwas, dwa_reference = onet_dir / "Tasks to DWAs.txt", onet_dir / "DWA Reference.txt"
    if tasks_to_dwas.exists() and dwa_reference.exists():
        frames["task_dwas"] = ref.build_task_dwas(
            ref.parse_tasks_to_dwas(tasks_to_dwas), ref.parse_dwa_reference(dwa_reference)
        )
    return frames

