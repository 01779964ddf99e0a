"""labeler_quality: the calibrated offline labeler against the task-level reference, cross-validated.

    .venv/bin/python bench/labeler_quality.py      # prints one JSON object; fold progress on stderr

Leave one benchmark out over the reference's training and development splits (models/labeling/selector_cv.py:
the held-out benchmark's prompts are never seen by the fit that labels them; thresholds are chosen by an
inner cross-validation on the other benchmarks), scored on the development split (both passes) and on both
splits. Also reports labeling throughput of the calibrated labeler on the mirrored prompts. Targets
(issue 13): task F1 >= 0.20, first occupation >= 0.45, work decision >= 0.88, >= 50 prompts/s.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import polars as pl  # noqa: E402

from models import benchmarks as bm  # noqa: E402
from models.labeling import selector_cv as cv  # noqa: E402
from models.labeling.base import PromptRecord  # noqa: E402
from models.labeling.offline import OfflineLabeler  # noqa: E402
from pipelines import fit_labeler  # noqa: E402
from resources.landing import read_prompts  # noqa: E402
from resources.readers import REFERENCE_DIR, load_selector_fit  # noqa: E402
from resources.sources import discover_landing  # noqa: E402


def throughput(index: object, n: int = 2000) -> dict:
    labeler = OfflineLabeler.calibrated(index, load_selector_fit())  # type: ignore[arg-type]
    records: list[PromptRecord] = []
    for folder in sorted(discover_landing().benchmarks.values(), key=lambda f: f.name):
        frame, _ = read_prompts(folder.path / bm.PROMPTS_FILE, folder.name)
        records += [PromptRecord(*r) for r in frame.select("benchmark", "prompt_id", "prompt_hash",
                                                             "prompt").head(80).iter_rows()]
    records = records[:n]
    started = time.perf_counter()
    labeler.prepare(records)
    prepared = time.perf_counter() - started
    outcomes = labeler.label(records)
    seconds = time.perf_counter() - started
    return {"prompts": len(records), "seconds": round(seconds, 2), "context_seconds": round(prepared, 2),
            "prompts_per_second": round(len(records) / seconds, 1),
            "not_work_share": round(sum(o.is_work is False for o in outcomes) / len(outcomes), 3),
            "labels_per_work_prompt": round(sum(len(o.labels) for o in outcomes)
                                            / max(1, sum(o.is_work is True for o in outcomes)), 2)}


def main() -> int:
    os.environ.setdefault("BENCHMAP_MIRROR", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    started = time.perf_counter()
    reference, prompts, index, evidence = fit_labeler.prepare(REFERENCE_DIR)
    per_prompt, folds = cv.cross_validate(prompts, reference, index, evidence,
                                          log=lambda m: print(m, file=sys.stderr))
    dev = cv.cv_summary(per_prompt, "dev")
    result = {
        "bench": "labeler_quality",
        "cv": "leave one benchmark out (29 folds), thresholds chosen inside the folds",
        "dev_pooled": fit_labeler.summary_dict(dev),
        "train_and_dev_pooled": fit_labeler.summary_dict(cv.cv_summary(per_prompt, None)),
        "dev_task_f1_per_benchmark": {r["benchmark"]: round(r["value"], 3) for r in dev.filter(
            (pl.col("metric") == "task_f1") & (pl.col("benchmark") != "all")).iter_rows(named=True)},
        "targets": fit_labeler.TARGETS,
        "throughput": throughput(index),
        "seconds": round(time.perf_counter() - started, 1),
    }
    result["targets_met"] = {m: result["dev_pooled"][m]["value"] >= t for m, t in fit_labeler.TARGETS.items()}
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
