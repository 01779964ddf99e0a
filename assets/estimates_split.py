"""The split check's relabeling with the neighbour step on (issue 25): estimate_split_check relabels each split's
judged texts from its estimation part alone (models/labeling/stacking_split.py says why), reading the judged
texts as the labeling step reads them (assets.labels.judged_sample), the stack fit and the selector's
cross-validated labels."""

from __future__ import annotations

from typing import Any

import polars as pl

from models import estimates as es
from resources.dagster_resources import Warehouse
from resources.readers import load_stack_fit, read_judged_signals, read_selector_oof


def split_relabeler(warehouse: Warehouse, labeler_version: str | None, texts: pl.DataFrame, problem: es.Problem,
                    log: Any = None) -> tuple[Any, str]:
    """(relabel for es.split_sample_problem or None, what the split check does: said in its table). None when
    the published labels are not the neighbour stack's (the labels of a held-out text then owe nothing to the
    judge labels of other texts)."""
    from assets.labels import judged_sample, prompt_records
    from models.labeling.stacking import stacked_on
    from models.labeling.stacking_split import EstimationPartRelabeler

    if labeler_version is None or stacked_on(labeler_version) is None:
        return None, "labels kept (they do not learn from judged texts)"
    fit = load_stack_fit()
    selector = read_selector_oof()
    if fit is None or not labeler_version.endswith(f"+{fit.version}") or selector is None \
            or selector.get("fit_version") != fit.selector_version:
        reason = (f"labels kept: NOT an honest check (the labels' stack {labeler_version} has no matching "
                  "neighbour_fit.json and selector_oof.json: refit with `python -m pipelines.fit_labeler`)")
        if log is not None:
            log.warning(reason)
        return None, reason
    sampled = texts.filter(pl.col("sampled")).select("benchmark", "prompt_hash")
    prompts = warehouse.prompts_of_texts(list(sampled.iter_rows()))
    judged = [judged_sample(warehouse, str(b), prompt_records(group))
              for (b,), group in prompts.group_by(["benchmark"], maintain_order=True)]
    keys = problem.task_keys
    relabel = EstimationPartRelabeler(
        fit, pl.concat(judged) if judged else pl.DataFrame(), list(zip(texts["benchmark"], texts["prompt_hash"],
                                                                        strict=True)),
        {r["prompt_hash"]: [(int(t), c, float(p)) for t, c, p in r["labels"]] for r in selector["prompts"]},
        {r["prompt_hash"]: bool(r["is_work"]) for r in selector["prompts"]},
        {(str(c), int(t)): k for k, (c, t) in enumerate(keys.select("onet_soc_code", "task_id").iter_rows())},
        read_judged_signals(fit.selector_version))
    return relabel, "relabeled from the estimation part's judged texts alone"
