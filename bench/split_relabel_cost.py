"""split_relabel_cost: CPU-s of the split checks' relabeling with the neighbour step on (issue 25).

    .venv/bin/python bench/split_relabel_cost.py    # one JSON object

The judged checks relabel the mirror's judged texts from each split's estimation part (assets/estimates_split.py,
models/labeling/stacking_split.py): 10 split-check and 6 p_covered splits per fraction (half, fifth). This runs
32 such splits (16 half, 16 fifth; fixed seed) of every judged text with the committed stack fit and reports the
process CPU-s and a digest of the labels (equal digests: the same labels, e.g. across code versions).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    import numpy as np
    import polars as pl

    from models.labeling.neighbours import judged_texts
    from models.labeling.stacking_split import EstimationPartRelabeler
    from pipelines.fit_labeler import landed_texts
    from resources.readers import load_reference, load_stack_fit, read_judged_signals, read_selector_oof

    reference = load_reference()
    texts = pl.DataFrame([{"benchmark": b, "prompt_hash": h, "prompt": t}
                          for b, pairs in landed_texts(reference).items() for h, t in pairs])
    judged = judged_texts(reference, texts).sort("benchmark", "prompt_hash")
    fit, selector = load_stack_fit(), read_selector_oof()
    if fit is None or selector is None:
        raise SystemExit("no neighbour_fit.json / selector_oof.json")
    keys = list(zip(judged["benchmark"], judged["prompt_hash"], strict=True))
    task_index: dict[tuple[str, int], int] = {}
    for r in selector["prompts"]:
        for t, c, _ in r["labels"]:
            task_index.setdefault((c, int(t)), len(task_index))
    relabel = EstimationPartRelabeler(
        fit, judged, keys, {r["prompt_hash"]: [(int(t), c, float(p)) for t, c, p in r["labels"]]
                            for r in selector["prompts"]},
        {r["prompt_hash"]: bool(r["is_work"]) for r in selector["prompts"]}, task_index,
        read_judged_signals(fit.selector_version))
    rng = np.random.default_rng(1)
    kept, bench = np.arange(len(keys)), np.array([b for b, _ in keys])
    labels, relabeled = [], 0
    started = time.process_time()
    for fraction in [0.5] * 16 + [0.2] * 16:
        sampled = np.zeros(len(keys), dtype=bool)
        for b in np.unique(bench):
            members = np.flatnonzero(bench == b)
            sampled[rng.choice(members, size=max(1, int(round(fraction * members.size))), replace=False)] = True
        labels.append([a.tolist() for a in relabel(kept, sampled)])
        relabeled += relabel.n_relabeled
    cpu = time.process_time() - started
    print(json.dumps({"bench": "split_relabel_cost", "judged_texts": len(keys), "splits": 32,
                      "texts_relabeled": relabeled, "cpu_s": round(cpu, 2),
                      "labels_digest": hashlib.sha256(json.dumps(labels).encode()).hexdigest()[:16]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
