"""Validating labelers against human labels, and measuring agreement between two labelers.

Human labels available (see `$BENCHMAP_MIRROR/human_labels/SOURCES.md`):
- GDPval `occupation`: an O*NET/BLS occupation title per prompt (110 of 220 prompts); JobBench's too. The
  `occupation` field of any benchmark is read as a title (`title_gold`), but TheAgentCompany's.
- TheAgentCompany `occupation`: a role category (SDE, PM, HR, Admin, DS, Finance, Other) per prompt.
- JobBench `onet_task`: the O*NET task statement each of its 6 prompts was built on (any benchmark's
  `onet_task` / `onet_task_id` / `onet_soc_code` are read the same way).
- Gold task labels from annotators (docs/gold_labels.md): prompt -> O*NET task IDs.

Occupation metrics rank the occupations of a prompt from its labeled tasks and match at the 6-digit SOC level
(`13-2011`). A gold occupation is a list of SOC *patterns*: a detailed code (`13-2011`, last digit non-zero)
matches itself; a broad group (`13-1020`) matches any detailed code in it (13-1021/13-1022/13-1023); a minor
group (`15-1200`) and a major group (`15-0000`) likewise.

Every metric is a mean over prompts with n and a 95% interval, returned in one tidy frame: benchmark, labeler,
labeler_version, metric, value, ci_low, ci_high, n. A share of 0/1 hits gets Wilson's score interval (a
percentile bootstrap over a few prompts is too narrow, and over prompts that all hit it has zero width); other
metrics a percentile bootstrap over prompts.

No dagster here.

The package, by concern (every public name is importable from models.validation):
  soc.py         SOC codes and patterns, titles to SOC, TheAgentCompany roles
  metrics.py     occupation rankings, per-prompt hits and set scores, bootstrap summaries
  gold.py        gold sets from the benchmarks' own labels (titles, roles, task statements, codes)
  table.py       validate_labels (the labeler_validation table) and check_floors
  agreement.py   labeler_agreement between two labelers
  annotation.py  the gold annotation sample, and reading and resolving the annotators' answers
"""

from models.validation.agreement import (
    AGREEMENT_COLUMNS,
    labeler_agreement,
    spearman_union,
)
from models.validation.annotation import (
    ANNOTATION_COLUMNS,
    GOLD_SCHEMA,
    annotation_rows,
    annotation_sample,
    annotation_sample_keys,
    parse_gold_csv,
    resolve_gold,
)
from models.validation.gold import (
    SHORTENED_MIN_RATIO,
    occupations_of_tasks,
    shortened_match,
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
    labeler_versions,
    metric_row,
    occupation_hits,
    per_prompt_ranker,
    rank_occupations,
    set_scores,
    summarise,
    task_hits,
)
from models.validation.soc import (
    FALLBACK_TAC_ROLE_TO_SOC,
    GROUP_TITLES,
    TAC_EXCLUDED_ROLES,
    map_titles_to_soc,
    norm_text,
    normalise_role_mapping,
    soc6,
    soc_matches,
    soc_pattern_prefix,
    tac_role,
)
from models.validation.table import (
    DEFAULT_FLOORS,
    check_floors,
    validate_labels,
)

__all__ = [
    "AGREEMENT_COLUMNS",
    "ANNOTATION_COLUMNS",
    "DEFAULT_FLOORS",
    "FALLBACK_TAC_ROLE_TO_SOC",
    "GOLD_SCHEMA",
    "GROUP_TITLES",
    "METRIC_COLUMNS",
    "N_BOOT",
    "OCCUPATION_KS",
    "SEED",
    "SHORTENED_MIN_RATIO",
    "TAC_EXCLUDED_ROLES",
    "TASK_KS",
    "annotation_rows",
    "annotation_sample",
    "annotation_sample_keys",
    "check_floors",
    "labeler_agreement",
    "labeler_versions",
    "map_titles_to_soc",
    "metric_row",
    "norm_text",
    "normalise_role_mapping",
    "occupation_hits",
    "occupations_of_tasks",
    "parse_gold_csv",
    "per_prompt_ranker",
    "rank_occupations",
    "resolve_gold",
    "set_scores",
    "shortened_match",
    "soc6",
    "soc_matches",
    "soc_pattern_prefix",
    "spearman_union",
    "summarise",
    "tac_gold",
    "title_gold",
    "tac_role",
    "task_hits",
    "soc_code_gold",
    "task_statement_gold",
    "validate_labels",
]
