"""Schedules: a weekly refresh of the reference data (the analysis automation then refreshes the analysis)."""

from __future__ import annotations

from dagster import DefaultScheduleStatus, ScheduleDefinition

from pipelines.jobs import reference_refresh_job

reference_weekly_schedule = ScheduleDefinition(
    name="reference_weekly_schedule",
    job=reference_refresh_job,
    cron_schedule="0 3 * * 1",  # Mondays 03:00 UTC
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Weekly re-read of the reference tables (O*NET 29.2, OEWS May 2024, exposure, WORKBank, task "
    "hours) and a rebuild of the labeler's task index from them: the "
    "sources are pinned versions, so it brings no new release of them. Its materializations set off one "
    "analysis refresh.",
)

SCHEDULES: list = [reference_weekly_schedule]
