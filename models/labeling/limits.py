"""How often a prompt that fails to label is asked again: a module of its own, so that the report's text which
quotes it does not take the labeling loop into the exports' code versions (pipelines/code_versions.py)."""

MAX_LABEL_RUNS = 3  # runs that may fail on one prompt before it is given up (asked again only when forced)
