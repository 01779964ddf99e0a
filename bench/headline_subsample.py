"""headline_subsample: how much of the headline's move with fewer judged texts is the sample, how much the labels?

    .venv/bin/python bench/headline_subsample.py > bench/headline-subsample-<date>.json   # progress on stderr

The rehearsal of the blind check (bench/blind_rehearsal.py) refitted the labeler on the training split alone and
the headline's hours share at >= 5 prompts fell from 7.9% to 6.5%, beyond its interval. This takes the fall
apart on the warehouse of the last run (data/warehouse, or BENCHMAP_WAREHOUSE), with the labels held fixed
(the estimates' inputs as the headline step reads them, cross-fitted labels of the judged texts swapped in):
the model-assisted estimate (pooled scope, 100 draws, seed 16) with
- every judged text as the judge sample (the published headline, up to the draws' Monte Carlo error);
- the training split's texts only (the rehearsal's judge sample, today's labels);
- random subsamples of the judged texts, as many per benchmark as its training split has (4 seeds): the spread
  such a subsample has by itself.
What the rehearsal's figure adds beyond the training-split row is the refit's (labels fitted on fewer texts).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from bench import common  # noqa: E402

QUANTITIES = {"tasks": 0, "occupations": 1, "hours": 3}  # Aggregator.headline's quantity axis
DRAWS = 100
SEED = 16
SUBSAMPLE_SEEDS = (0, 1, 2, 3)


def headline(inputs: dict[str, Any], judge_rows: pl.DataFrame) -> dict[str, Any]:
    """Mean and 2.5-97.5% of the model-assisted draws at >= 5 prompts, pooled over every benchmark."""
    import models.estimates as es
    from models.estimates.draws import ModelAssisted
    from models.estimates.problem import Aggregator, Scope

    texts = es.text_frame(inputs["prompts"], judge_rows)
    problem = es.build_problem(texts, es.labeler_pairs(inputs["labels"]),
                               es.judge_pairs(judge_rows.drop_nulls("task_id")), inputs["tasks"],
                               inputs["task_hours"])
    agg = Aggregator(problem, [Scope("all", "all", tuple(range(len(problem.benchmarks))))], (1, 5))
    model = ModelAssisted(problem)
    rng = np.random.default_rng(SEED)
    stack = np.stack([agg.headline(model.draw(rng)) for _ in range(DRAWS)])
    out: dict[str, Any] = {"judged_texts": judge_rows.select("benchmark", "prompt_hash").n_unique()}
    for name, q in QUANTITIES.items():
        v = stack[:, 0, q, 1] * (100 if name == "hours" else 1)
        out[f"{name}_at_5"] = [round(float(v.mean()), 2), round(float(np.quantile(v, 0.025)), 2),
                               round(float(np.quantile(v, 0.975)), 2)]
    return out


def main() -> None:
    from assets.estimate_inputs import read_inputs
    from resources.dagster_resources import Warehouse
    from resources.readers import load_reference
    from resources.settings import settings

    started = time.time()
    inputs = read_inputs(Warehouse(path=str(settings().warehouse)))
    judge_rows: pl.DataFrame = inputs["judge_rows"]  # type: ignore[assignment]
    train = load_reference().filter(pl.col("split") == "train").select("benchmark", "prompt_hash").unique()
    keys = judge_rows.select("benchmark", "prompt_hash").unique().sort("benchmark", "prompt_hash")
    result: dict[str, Any] = {"bench": "headline_subsample", "draws": DRAWS, "seed": SEED,
                              "measured_at": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
                              "machine": common.machine()}
    result["every_judged_text"] = headline(inputs, judge_rows)
    common.log(f"[headline_subsample] every judged text: {time.time() - started:.0f} s")
    result["training_split_only"] = headline(inputs, judge_rows.join(train, on=["benchmark", "prompt_hash"],
                                                                     how="semi"))
    # stratified as the training split is: each benchmark keeps as many judged texts as its training split has
    per_benchmark = dict(train.join(keys, on=["benchmark", "prompt_hash"], how="semi")
                         .group_by("benchmark").len().iter_rows())
    result["random_subsamples"] = []
    for seed in SUBSAMPLE_SEEDS:
        subsample = pl.concat([group.sample(n=per_benchmark.get(b, 0), seed=seed)
                               for (b,), group in keys.group_by(["benchmark"], maintain_order=True)])
        row = headline(inputs, judge_rows.join(subsample, on=["benchmark", "prompt_hash"], how="semi"))
        result["random_subsamples"].append({"seed": seed, **row})
        common.log(f"[headline_subsample] subsample {seed}: {time.time() - started:.0f} s")
    result["seconds"] = round(time.time() - started, 1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
