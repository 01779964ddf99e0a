"""The labeler_validation table (every metric against every gold source) and the floors its check enforces."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from models.validation.gold import (
    occupations_of_tasks,
    soc_code_gold,
    tac_gold,
    task_statement_gold,
    title_gold,
)
from models.validation.metrics import (
    METRIC_COLUMNS,
    N_BOOT,
    OCCUPATION_KS,
    SEED,
    TASK_KS,
    occupation_hits,
    set_scores,
    summarise,
    task_hits,
)

# Floors the labeler_validation check enforces: "<benchmark>:<metric>" -> minimum point estimate.
DEFAULT_FLOORS: dict[str, float] = {"gdpval:occupation_top5": 0.70}


# --- the validation table -----------------------------------------------------------------------------------

def validate_labels(labels: pl.DataFrame, prompts: pl.DataFrame, occupations: pl.DataFrame,
                    tasks: pl.DataFrame,
                    gold_task_labels: pl.DataFrame | None = None, *, tac_role_to_soc: dict | None = None,
                    rank_fn: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
                    n_boot: int = N_BOOT, seed: int = SEED, set_labels: pl.DataFrame | None = None
                    ) -> tuple[pl.DataFrame, dict]:
    """The labeler_validation table and notes (unmatched titles, unmapped roles, gold coverage).

    labels: prompt_task_labels rows; prompts: benchmark_prompts rows; occupations: onet_occupations;
    tasks: onet_tasks; gold_task_labels: benchmark, prompt_id, task_id (task_id null = no task fits).
    `set_labels`: the label sets, when `labels` holds rankings (a labeler whose ranked candidates are not its
    labels): gold precision/recall/F1 read them, top-k and hit@k read `labels`.
    """
    rows: list[dict] = []
    notes: dict = {}

    titled, unmatched_titles = title_gold(prompts, occupations)  # every benchmark giving occupation titles
    notes["title_gold_prompts"] = titled.height
    notes["unmatched_titles"] = unmatched_titles
    tac, unmapped_roles = tac_gold(prompts, tac_role_to_soc)
    notes["tac_gold_prompts"] = tac.height
    notes["tac_unmapped_roles"] = unmapped_roles
    task_gold, task_unmatched = task_statement_gold(prompts, tasks)  # every benchmark giving task statements or ids
    notes["task_gold_prompts"] = task_gold["prompt_id"].n_unique() if task_gold.height else 0
    notes["task_gold_unmatched_prompts"] = task_unmatched
    notes["task_gold_match"] = dict(
        task_gold.group_by("match").agg(pl.col("prompt_id").n_unique()).iter_rows()) if task_gold.height else {}

    coded = soc_code_gold(prompts, occupations)
    notes["soc_code_gold_prompts"] = coded.height
    # a prompt with a task statement and a code gets its gold occupations once (the task's SOC and the code)
    occ_gold = (pl.concat([titled, tac, occupations_of_tasks(task_gold), coded])
                .group_by("benchmark", "prompt_id", maintain_order=True)
                .agg(pl.col("gold_soc").list.explode(keep_nulls=False, empty_as_null=False)
                     .unique(maintain_order=True)))
    occ = occupation_hits(occ_gold, labels, OCCUPATION_KS, rank_fn)
    rows += summarise(occ, [f"hit_top{k}" for k in OCCUPATION_KS], n_boot=n_boot, seed=seed)
    rows += summarise(task_hits(task_gold, labels, TASK_KS), [f"task_hit_at{k}" for k in TASK_KS],
                      n_boot=n_boot, seed=seed)

    if gold_task_labels is not None and not gold_task_labels.is_empty():
        # maintain_order: the per-prompt order feeds the seeded bootstrap (else the intervals vary by run)
        gold = gold_task_labels.select("benchmark", "prompt_id", "task_id").unique(maintain_order=True)
        notes["gold_prompts"] = gold.select("benchmark", "prompt_id").unique().height
        rows += summarise(set_scores(gold, labels if set_labels is None else set_labels),
                          ["task_precision", "task_recall", "task_f1"],
                          pooled_label="all", n_boot=n_boot, seed=seed)
        rows += summarise(task_hits(gold, labels, TASK_KS), [f"task_hit_at{k}" for k in TASK_KS],
                          pooled_label="all", n_boot=n_boot, seed=seed)
    else:
        notes["gold_prompts"] = 0

    frame = pl.DataFrame(rows, schema=METRIC_COLUMNS)
    frame = frame.with_columns(pl.col("metric").str.replace(r"^hit_top(\d+)$", "occupation_top$1"))
    return frame.sort("benchmark", "labeler", "labeler_version", "metric"), notes


def check_floors(validation: pl.DataFrame, floors: dict[str, float] | None = None
                 ) -> tuple[list[dict], list[str]]:
    """Compare point estimates with floors ('benchmark:metric' -> minimum) for every labeler present.

    Returns (failures, not_evaluated): failures list the rows below their floor; floors with no matching row
    (e.g. the benchmark is not labeled yet) are reported as not evaluated."""
    floors = DEFAULT_FLOORS if floors is None else floors
    failures, missing = [], []
    for key, floor in floors.items():
        bench, _, metric = key.partition(":")
        if not metric:
            raise ValueError(f"floor keys look like 'benchmark:metric', got {key!r}")
        hits = validation.filter((pl.col("benchmark") == bench) & (pl.col("metric") == metric))
        if hits.is_empty():
            missing.append(key)
            continue
        for row in hits.iter_rows(named=True):
            if row["value"] is None or row["value"] < floor:
                failures.append({**row, "floor": floor})
    return failures, missing
