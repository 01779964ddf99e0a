"""Named, versioned benchmark indexes: which landed benchmarks count, by criteria stated in a file.

An index is a TOML file `data/indexes/<name>.toml` (the file name is the index name):

    title = "Economic-work agentic index"
    version = "1"
    description = "..."                      # optional

    [[rule]]                                 # every rule must pass; the first one that fails decides
    name = "enough_public_tasks"             # optional (default: the column)
    column = "public_items"                  # a benchmarks column or a measured property (PROPERTIES)
    op = ">="                                # == != > >= < <= in not_in
    value = 25
    unknown = "exclude"                      # a null value: "exclude" (default) or "include" (then flagged)
    reason = "the Benchmark Map needs at least 25 public tasks"

    [[assume]]                               # a value the index asserts where the metadata has none
    benchmark = "osworld"
    column = "agentic"
    value = true
    reason = "SOURCES.md: tasks run by an agent in an Ubuntu VM"

    [[include]]                              # in, whatever the rules say (never dropped by the cap)
    benchmark = "..."
    reason = "..."

    [[exclude]]                              # out, whatever the rules say
    benchmark = "..."
    reason = "..."

    [[assign]]                               # a benchmark's SOC major group set by hand: wins over the
    benchmark = "cybench"                    # measured one (groups.py) for rules and the cap
    major_group = "15-0000"                  # "15" or "15-0000"
    reason = "..."

    [cap]                                    # at most `max` benchmarks per SOC major group
    max = 3
    group = "major_group"                    # the property grouping benchmarks (default major_group)
    tie_break = ["work_share desc", "public_items desc", "benchmark asc"]
    unknown_group = "exclude"                # a benchmark whose group is unknown: "exclude" or "uncapped"
    reason = "..."

Evaluation (`evaluate_index`), per landed benchmark: an exclude entry, else an include entry, else the rules
in file order (a null value fails the rule unless the rule says `unknown = "include"`, and then the row lists
it in `unknown_passed`); the benchmarks passing every rule are then capped per group, best by the tie-break
first. Every row says what decided (`decided_by`), why (`reason`) and every value read (`values_read`), so
unknown metadata never passes a rule silently; and which major group placed it (`major_group`), by which rule
(`major_group_rule`: an [[assign]] entry, benchmark.toml's target, the largest share of its estimated work, or
the raw labels without an estimate) and that group's share of its estimated work (`major_group_share`).

Parsing (`parse_index`) takes the file's text and raises `InputError` naming the file and line for an unknown
field, an unknown column, a bad operator or value; `evaluate_index` raises it for a benchmark that was never
landed and is in no landing folder (a typo). `evaluate_indexes` evaluates several files and returns the errors
of the broken ones next to the membership of the others.

No dagster, no file I/O here: the asset reads the files and passes their text.

The package, by concern (every public name is importable from models.indexes):
  definition.py  the columns a rule reads, the parsed form and parse_index
  evaluate.py    measured_properties, evaluate_index (entries, rules, cap) and evaluate_indexes
  groups.py      a benchmark's estimated work per SOC major group (the imputation draws' shares)
  membership.py  reading a membership table: index names, members, per-index frames, summary lines
"""

from models.indexes.definition import (
    ALL_INDEX,
    COLUMNS,
    GROUP_POLICIES,
    MEMBERSHIP_SCHEMA,
    METADATA_COLUMNS,
    NAME,
    OPERATORS,
    PROPERTIES,
    UNKNOWN_POLICIES,
    UNKNOWN_WHY,
    Assignment,
    Assumption,
    Cap,
    Entry,
    IndexDefinition,
    Rule,
    all_index,
    parse_index,
)
from models.indexes.evaluate import (
    IndexResult,
    evaluate_index,
    evaluate_indexes,
    measured_properties,
    rule_text,
    sort_membership,
)
from models.indexes.groups import (
    GROUP_SHARE_SCHEMA,
    RULE_ESTIMATED,
    RULE_LABELS,
    RULE_TARGET,
    estimated_group_shares,
    group_properties,
    shares_from_benchmark_estimates,
)
from models.indexes.membership import (
    describe_rules,
    index_names,
    members,
    membership_lines,
    only_index,
    per_index,
    with_index,
)

__all__ = [
    "ALL_INDEX",
    "COLUMNS",
    "GROUP_POLICIES",
    "GROUP_SHARE_SCHEMA",
    "MEMBERSHIP_SCHEMA",
    "METADATA_COLUMNS",
    "NAME",
    "OPERATORS",
    "PROPERTIES",
    "RULE_ESTIMATED",
    "RULE_LABELS",
    "RULE_TARGET",
    "UNKNOWN_POLICIES",
    "UNKNOWN_WHY",
    "Assignment",
    "Assumption",
    "Cap",
    "Entry",
    "IndexDefinition",
    "IndexResult",
    "Rule",
    "all_index",
    "describe_rules",
    "evaluate_index",
    "estimated_group_shares",
    "evaluate_indexes",
    "group_properties",
    "shares_from_benchmark_estimates",
    "index_names",
    "measured_properties",
    "members",
    "membership_lines",
    "only_index",
    "parse_index",
    "per_index",
    "rule_text",
    "sort_membership",
    "with_index",
]
