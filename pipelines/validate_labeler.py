"""Score the configured labeler on the reference's development split before a big spend, and price a full run.

    .venv/bin/python -m pipelines.validate_labeler --limit 20          # 20 dev prompts, then:
    .venv/bin/python -m pipelines.validate_labeler                     # all 210 dev prompts
    .venv/bin/python -m pipelines.validate_labeler --labeler offline   # the offline labeler, same metrics
    .venv/bin/python -m pipelines.validate_labeler --local --limit 5   # the local Gemma 270M (plumbing check)

The labeler is the one the pipeline would use (`BENCHMAP_LABELER`, `OPENAI_API_KEY`, `OPENAI_BASE_URL`,
`BENCHMAP_LLM_MODEL`, `BENCHMAP_LLM_OCCUPATION_LIST`; flags override them). Prompts are taken from the
reference's development split (`dev_reference_folder`: data/reference/ or the landing zone's override, else
the mirror's; models/reference_labels.py), `--limit` of them picked
round-robin over benchmarks so that 20 prompts already span 20 benchmarks. Their texts come from the
warehouse's `benchmark_prompts` (read-only) or, without a warehouse, from the mirrored benchmarks.

Labels go through the label cache of `--warehouse` (default `$BENCHMAP_WAREHOUSE`): a prompt labeled here is
never paid for again by the pipeline, and a second run of this command makes no requests. `--no-cache` labels
in memory and writes nothing.

It prints (and writes as JSON with `--json`): task precision / recall / F1, hit@1 / hit@5, first-occupation
agreement and work accuracy against the reference (models.reference_labels, the same metrics as the offline
labeler's), the ceiling (the reference's two passes against each other on the same prompts), tokens per
prompt per step, requests per prompt, and the estimated cost of labeling every landed prompt (distinct
prompt texts not yet cached for this labeler) at list prices, with cached input tokens at the cached price.

Exit code 0; 4 (EXIT_LABEL_FAILURES) when prompts failed to label: the metrics then leave them out, so a
script that gates on this command must not read them as a pass; 1 for an error in the input or the environment
(pipelines/cli.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from models import reference_labels as rl
from models.labeling import cache as lc
from models.labeling.base import LabelOutcome, PromptRecord
from resources import readers
from resources import warehouse as wh
from resources.label_cache import LabelCache
from resources.readers import load_reference, load_selector_fit
from resources.settings import settings

EXIT_LABEL_FAILURES = 4  # as run_all's: prompts failed to label, so the metrics cover fewer than asked for

# USD per 1M cached input tokens (list prices); models absent here are priced at the full input price.
CACHED_PRICES_PER_MTOK: dict[str, float] = {
    "gpt-4o-mini": 0.075, "gpt-4o": 1.25, "gpt-4.1": 0.50, "gpt-4.1-mini": 0.10, "gpt-4.1-nano": 0.025,
    "gpt-5": 0.125, "gpt-5-mini": 0.025, "gpt-5-nano": 0.005,
}
USAGE = ("input_tokens", "output_tokens", *lc.USAGE_COLUMNS)


def mirror_dir() -> Path:
    return settings().mirror_or_shared


def dev_reference_folder() -> Path:
    """The reference whose development split the validation labels: `resources.readers.reference_folder()`
    when it holds one, else the mirror's reference_labels/."""
    folder = readers.reference_folder()
    if (folder / rl.SPLIT_FILES["dev"]).exists():
        return folder
    return mirror_dir() / "reference_labels"


def pick_prompts(dev: pl.DataFrame, limit: int | None) -> pl.DataFrame:
    """Distinct dev prompts (one row per sample_id), round-robin over benchmarks in sample_id order."""
    prompts = dev.sort("sample_id").unique("sample_id", keep="first", maintain_order=True)
    prompts = prompts.with_columns(pl.int_range(pl.len()).over("benchmark").alias("_turn"))
    prompts = prompts.sort("_turn", "benchmark", "sample_id").drop("_turn")
    return prompts.head(limit) if limit else prompts


def prompt_texts(hashes: Sequence[str], warehouse: Path | None) -> dict[str, str]:
    """prompt_hash -> text, from the warehouse's benchmark_prompts when there, else the mirrored benchmarks."""
    texts: dict[str, str] = {}
    if warehouse is not None and warehouse.exists():
        with wh.connect(warehouse, read_only=True) as con:
            has = wh.table_exists(con, "benchmark_prompts")
        if has:
            frame = wh.query(warehouse, "select prompt_hash, any_value(prompt) as prompt from benchmark_prompts "
                             "where prompt_hash in (select unnest(?::varchar[])) group by prompt_hash",
                             [list(hashes)])
            texts.update(dict(zip(frame["prompt_hash"], frame["prompt"], strict=True)))
    missing = set(hashes) - set(texts)
    if missing:
        from models.benchmarks import PROMPTS_FILE
        from resources.landing import read_prompts

        root = mirror_dir() / "benchmarks"
        for folder in sorted(p for p in root.iterdir() if (p / PROMPTS_FILE).exists()):
            frame, _ = read_prompts(folder / PROMPTS_FILE, folder.name)
            for h, text in zip(frame["prompt_hash"], frame["prompt"], strict=True):
                if h in missing:
                    texts.setdefault(h, text)
    return texts


def landed_prompt_hashes(warehouse: Path | None) -> tuple[set[str], str]:
    """Distinct prompt texts the pipeline would label: the warehouse's, else the mirror's."""
    if warehouse is not None and warehouse.exists():
        with wh.connect(warehouse, read_only=True) as con:
            has = wh.table_exists(con, "benchmark_prompts")
        if has:
            frame = wh.query(warehouse, "select distinct prompt_hash from benchmark_prompts")
            return set(frame["prompt_hash"].to_list()), f"warehouse {warehouse}"
    from models.benchmarks import PROMPTS_FILE
    from resources.landing import read_prompts

    hashes: set[str] = set()
    root = mirror_dir() / "benchmarks"
    for folder in sorted(p for p in root.iterdir() if (p / PROMPTS_FILE).exists()):
        frame, _ = read_prompts(folder / PROMPTS_FILE, folder.name)
        hashes.update(frame["prompt_hash"].to_list())
    return hashes, f"mirror {root}"


@dataclass
class Report:
    labeler: str
    labeler_version: str
    prompts: int
    labeled_now: int
    cached_before: int
    failed: int
    not_work: int
    seconds: float
    metrics: pl.DataFrame
    ceiling: pl.DataFrame
    usage: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        pooled = {r["metric"]: [round(r["value"], 3), round(r["ci_low"], 3), round(r["ci_high"], 3), r["n"]]
                  for r in self.metrics.filter(pl.col("benchmark") == "all").iter_rows(named=True)}
        ceiling = {r["metric"]: round(r["value"], 3)
                   for r in self.ceiling.filter(pl.col("benchmark") == "all").iter_rows(named=True)}
        return {"labeler": self.labeler, "labeler_version": self.labeler_version, "prompts": self.prompts,
                "labeled_now": self.labeled_now, "cached_before": self.cached_before, "failed": self.failed,
                "not_work": self.not_work, "seconds": round(self.seconds, 1),
                "metrics_all": pooled, "ceiling_all": ceiling, "usage": self.usage, "cost": self.cost,
                "failures": self.failures[:10]}


def _median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def _mean(values: Sequence[float]) -> float | None:
    return float(statistics.fmean(values)) if values else None


def validate(labeler: Any, *, limit: int | None = 20, warehouse: Path | None = None, use_cache: bool = True,
             onet_version: str | None = None, batch_size: int = 16, log: Any = None) -> Report:
    """Label `limit` dev prompts (through the cache unless use_cache=False) and score them on the reference."""
    from models.labeling.offline import occupation_ranking_from_labels
    from models.sources import ONET_VERSION

    onet_version = onet_version or ONET_VERSION
    say = log or (lambda msg: None)
    dev = load_reference(dev_reference_folder(), splits=("dev",))
    chosen = pick_prompts(dev, limit)
    texts = prompt_texts(chosen["prompt_hash"].to_list(), warehouse)
    absent = [h for h in chosen["prompt_hash"].to_list() if h not in texts]
    if absent:
        say(f"{len(absent)} reference prompts have no landed text; left out")
    chosen = chosen.filter(pl.col("prompt_hash").is_in(list(texts)))
    records = [PromptRecord(r["benchmark"], r["prompt_id"], r["prompt_hash"], texts[r["prompt_hash"]])
               for r in chosen.iter_rows(named=True)]
    key = lc.CacheKey.for_labeler(labeler, onet_version)
    cache = LabelCache(warehouse) if (use_cache and warehouse is not None) else None
    usage_rows: dict[str, dict[str, Any]] = {}
    labels: dict[str, list] = {}
    cached_before = 0
    if cache is not None:
        frame = cache.read_frame(key, [r.prompt_hash for r in records])
        for row in frame.iter_rows(named=True):
            labels[row["prompt_hash"]] = lc.labels_from_json(row["labels_json"])
            usage_rows[row["prompt_hash"]] = {c: row.get(c) for c in USAGE}
        cached_before = len(labels)
    todo = [r for r in records if r.prompt_hash not in labels]
    say(f"{labeler.name} ({labeler.labeler_version}): {len(records)} dev prompts, {cached_before} cached, "
        f"{len(todo)} to label")
    started = time.perf_counter()
    failures: list[str] = []
    outcomes: list[LabelOutcome] = []
    for start in range(0, len(todo), batch_size):
        batch = todo[start:start + batch_size]
        got = labeler.label(batch)
        outcomes += got
        if cache is not None:
            cache.write_batch(key, labeler.labeler_version, got, lc.unique_by_hash(batch))
        for o in got:
            if o.ok:
                labels[o.prompt_hash] = list(o.labels)
                usage_rows[o.prompt_hash] = {c: getattr(o, c, None) for c in USAGE}
            else:
                failures.append(f"{o.prompt_hash[:12]}: {o.error}")
        say(f"labeled {min(start + batch_size, len(todo))}/{len(todo)}")
    seconds = time.perf_counter() - started
    rows = []
    for r in records:
        if r.prompt_hash not in labels:
            continue  # a failure: not scored (counted in `failed`)
        mine = sorted(labels[r.prompt_hash], key=lambda x: x.rank)
        ranking = occupation_ranking_from_labels(mine)
        rows.append({"prompt_hash": r.prompt_hash, "is_work": bool(mine), "tasks": [x.task_id for x in mine],
                     "ranking": [x.task_id for x in mine], "first_occupation": ranking[0] if ranking else None})
    pred = pl.DataFrame(rows, schema={"prompt_hash": pl.Utf8, "is_work": pl.Boolean, "tasks": pl.List(pl.Int64),
                                      "ranking": pl.List(pl.Int64), "first_occupation": pl.Utf8})
    ref = dev.filter(pl.col("prompt_hash").is_in(pred["prompt_hash"].implode()))
    metrics = rl.summarise_metrics(rl.per_prompt_metrics(pred, ref))
    ceiling = rl.summarise_metrics(rl.pass_agreement(ref), by_benchmark=False)
    usage = usage_summary(list(usage_rows.values()), outcomes, seconds)
    cost = full_run_cost(labeler, usage, warehouse, cache, key)
    return Report(labeler.name, labeler.labeler_version, len(records), len(todo) - len(failures), cached_before,
                  len(failures), int((~pred["is_work"]).sum()), seconds, metrics, ceiling, usage, cost, failures)


def usage_summary(rows: list[dict[str, Any]], outcomes: list[LabelOutcome], seconds: float) -> dict[str, Any]:
    """Per prompt: median and mean tokens of each kind, requests; seconds per prompt labeled in this run."""
    out: dict[str, Any] = {"n": len(rows)}
    for column in USAGE:
        values = [float(r[column]) for r in rows if r.get(column) is not None]
        out[column] = {"median": _median(values), "mean": _mean(values)}
    out["seconds_per_prompt"] = round(seconds / len(outcomes), 2) if outcomes else None
    return out


def full_run_cost(labeler: Any, usage: dict[str, Any], warehouse: Path | None, cache: LabelCache | None,
                  key: lc.CacheKey) -> dict[str, Any]:
    landed, source = landed_prompt_hashes(warehouse)
    done = 0
    if cache is not None and landed:
        done = cache.read_frame(key, sorted(landed)).height
    remaining = len(landed) - done
    mean = {c: (usage.get(c) or {}).get("mean") or 0.0 for c in USAGE}
    tin, tcached, tout = (mean["input_tokens"] * remaining, mean["cached_input_tokens"] * remaining,
                          mean["output_tokens"] * remaining)
    out: dict[str, Any] = {"landed_prompts": len(landed), "source": source, "already_cached": done,
                           "to_label": remaining, "input_tokens": round(tin), "cached_input_tokens": round(tcached),
                           "output_tokens": round(tout), "requests": round((mean["requests"] or 0) * remaining)}
    price = lc.PRICES_PER_MTOK.get(labeler.model)
    if price is None:
        base = next((m for m in sorted(lc.PRICES_PER_MTOK, key=len, reverse=True)
                     if labeler.model.startswith(m)), None)
        price = lc.PRICES_PER_MTOK.get(base) if base else None
        cached_price = CACHED_PRICES_PER_MTOK.get(base) if base else None
    else:
        cached_price = CACHED_PRICES_PER_MTOK.get(labeler.model)
    if labeler.name == "offline":
        out["usd"] = 0.0
    elif price is None:
        out["usd"] = None
        out["note"] = f"no list price for model {labeler.model!r}: tokens only"
    else:
        cp = price[0] if cached_price is None else cached_price
        usd = (tin - tcached) / 1e6 * price[0] + tcached / 1e6 * cp + tout / 1e6 * price[1]
        out["usd"] = round(usd, 2)
        out["usd_batch_api"] = round(usd / 2, 2)
        out["prices_per_mtok"] = {"input": price[0], "cached_input": cp, "output": price[1]}
    return out


def print_report(report: Report, out: Any = sys.stdout) -> None:
    def p(line: str = "") -> None:
        print(line, file=out)

    p(f"labeler {report.labeler_version}: {report.prompts} dev prompts ({report.cached_before} cached, "
      f"{report.labeled_now} labeled now, {report.failed} failed, {report.not_work} judged not work) "
      f"in {report.seconds:.1f}s")
    ceiling = {r["metric"]: r["value"] for r in report.ceiling.filter(pl.col("benchmark") == "all").iter_rows(
        named=True)}
    p()
    p(f"{'metric':<28}{'value':>8}{'95% CI':>18}{'n':>6}{'ceiling':>10}")
    for r in report.metrics.filter(pl.col("benchmark") == "all").iter_rows(named=True):
        c = ceiling.get(r["metric"])
        ci = f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
        ceil = "" if c is None else f"{c:.3f}"
        p(f"{r['metric']:<28}{r['value']:>8.3f}{ci:>18}{r['n']:>6}{ceil:>10}")
    p("(ceiling: the reference's two passes scored against each other on the same prompts)")
    u = report.usage
    p()
    p("per prompt (median / mean):")
    for c in USAGE:
        m = u.get(c) or {}
        if m.get("median") is not None:
            p(f"  {c:<28}{m['median']:>10.0f} / {m['mean']:.0f}")
    if u.get("seconds_per_prompt") is not None:
        p(f"  seconds per prompt labeled now: {u['seconds_per_prompt']}")
    c = report.cost
    p()
    p(f"labeling every landed prompt ({c['landed_prompts']} distinct texts in the {c['source']}, "
      f"{c['already_cached']} already cached, {c['to_label']} to label):")
    p(f"  ~{c['input_tokens']:,} input tokens (~{c['cached_input_tokens']:,} of them cached), "
      f"~{c['output_tokens']:,} output tokens, ~{c['requests']:,} requests")
    if c.get("usd") is not None:
        extra = f", ~${c['usd_batch_api']:,} with the Batch API" if "usd_batch_api" in c else ""
        p(f"  estimated cost: ~${c['usd']:,} at list prices{extra}")
    elif c.get("note"):
        p(f"  {c['note']}")
    if report.failures:
        p()
        p(f"failures ({report.failed}):")
        for f in report.failures[:10]:
            p(f"  {f}")


def build_labeler(args: argparse.Namespace, server: Any = None) -> Any:
    from resources.dagster_resources import build_labeler_resource
    from resources.local_server import build_index

    kind = args.labeler or ("openai" if server is not None else settings().labeler)
    index = build_index(mirror_dir() / "onet")
    if kind == "offline":
        from models.labeling.offline import OfflineLabeler

        return OfflineLabeler.calibrated(index, load_selector_fit())
    resource = build_labeler_resource() if settings().labeler == "openai" else None
    from models.labeling.llm_config import LLMConfig
    from resources.llm_labeler import OpenAILabeler

    base = resource.llm_config() if resource is not None else LLMConfig()
    overrides: dict[str, Any] = {}
    if server is not None:
        overrides.update(model=server.model_alias, base_url=server.base_url, response_format="auto",
                         max_concurrency=1, timeout_s=600.0, max_retries=2, backoff_base_s=0.5)
    for name in ("model", "base_url", "occupation_list", "occupation_k", "max_concurrency"):
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    fields = {f: getattr(base, f) for f in base.__dataclass_fields__}
    fields.update(overrides)
    return OpenAILabeler(index, LLMConfig(**fields))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=0, help="score this many dev prompts (0 = all 210)")
    ap.add_argument("--labeler", choices=["offline", "openai"], default=None,
                    help="default: the pipeline's (BENCHMAP_LABELER / OPENAI_API_KEY)")
    ap.add_argument("--model", default=None)
    ap.add_argument("--base-url", dest="base_url", default=None)
    ap.add_argument("--occupation-list", dest="occupation_list", choices=["all", "ranked"], default=None)
    ap.add_argument("--occupation-k", dest="occupation_k", type=int, default=None)
    ap.add_argument("--concurrency", dest="max_concurrency", type=int, default=None)
    ap.add_argument("--warehouse", default=None, help="label cache and landed prompts (default $BENCHMAP_WAREHOUSE)")
    ap.add_argument("--no-cache", action="store_true", help="label in memory; write nothing")
    ap.add_argument("--local", action="store_true", help="start the local llama.cpp server (Gemma 3 270M)")
    ap.add_argument("--json", default=None, help="also write the report as JSON here")
    args = ap.parse_args(argv)
    warehouse = Path(args.warehouse or settings().warehouse)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    server = None
    if args.local:
        from resources.local_server import LocalLLMServer

        server = LocalLLMServer(settings().gguf, startup_timeout_s=300).start()
    try:
        labeler = build_labeler(args, server)
        report = validate(labeler, limit=args.limit or None, warehouse=warehouse, use_cache=not args.no_cache,
                          log=log)
    finally:
        if server is not None:
            server.stop()
    print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report.as_dict(), indent=2))
    if report.failed:  # metrics over fewer prompts than asked for are not a passing validation
        print(f"python -m pipelines.validate_labeler: error: {report.failed} of {report.prompts} prompts failed to "
              f"label; the metrics leave them out (exit {EXIT_LABEL_FAILURES})", file=sys.stderr)
        return EXIT_LABEL_FAILURES
    return 0


if __name__ == "__main__":
    from pipelines import cli

    raise SystemExit(cli.run_cli(main, prog="python -m pipelines.validate_labeler"))
