"""blind_rehearsal: do the published out-of-sample label figures predict what a held-back split scores?

    .venv/bin/python bench/blind_rehearsal.py                      # every scenario; prints one JSON object
    .venv/bin/python bench/blind_rehearsal.py --scenarios dev_as_blind --reuse

An end-to-end rehearsal of the blind check (data/reference/SOURCES.md: 5 more texts per mirrored benchmark,
plus 36 texts of 3 benchmarks never seen) with the pipeline's *own published labels*: for each scenario a
scratch copy of the project (`git clone` of this checkout, `.venv` linked, its own Dagster home, warehouse and
landing zone, the read-only mirror) gets a fitting reference with a part of the judged texts removed, refits
the selector and the neighbour stack on it (`python -m pipelines.fit_labeler`), runs the pipeline
(`python -m pipelines.run_all`, offline labeler, neighbour step on) and scores the published labels of the
removed texts (prompt_task_labels + prompt_work, read as label validation reads them:
`models.reference_labels.predictions_from_labels`, `per_prompt_metrics`, `summarise_metrics`) against every
judge pass of them. Beside each score: what that warehouse publishes as its out-of-sample figures
(labeler_validation ref_cv_*, neighbour_fit.json), what the project's committed fit publishes, and a paired
comparison on the same texts with the committed fit's cross-fitted labels (neighbour_oof.json: leave one
judged text out; selector_oof.json: leave one benchmark out).

Scenarios:
- `dev_as_blind`: the fitting reference is the training split only (its rows written as the development split's
  file, the training file left empty: FIT_NEEDS_DEV below; the development counts in sampling_design.csv set to
  0); the development split's 210 texts (420 passes) are the blind set.
- `unseen_<seed>`: three benchmarks of three different domains (DOMAINS; the rule: numpy default_rng(seed)
  picks 3 of the 4 domains, then one benchmark of each, from sorted lists; jobbench is left out: 4 judged texts)
  lose every reference row (both splits); their judged texts are the blind set (every pass).

FIT_NEEDS_DEV: `python -m pipelines.fit_labeler` failed with an empty development split (KeyError 'task_f1':
it read the development split's cross-validated figures for its targets; fixed 2026-12-06, it now reads both
splits' then), so `dev_as_blind` writes the training rows into the development split's file and leaves the
training file empty; the rehearsal of 2026-12-06 ran that way and is kept so. Nothing reads the split name but
the figures' reporting and the estimates' choice of pass (every training row is pass 'a', kept either way), so
the labels, fits and estimates are those of a training-only reference; the fit's and the warehouse's `cv_dev` /
`dev` figures are then over the training texts.

The scratch copies are edited in their data files only (data/reference/ of the copy): no code is changed. The
vendored folder is edited, not the landing zone's reference_labels/ override: when the rehearsal ran (2026-12-06)
the override was read by the labels and label validation but not by the estimates, which would have kept the
removed texts in the headline's judge sample (every reader takes the override since:
resources.readers.reference_folder).

Each scenario's fit and run take ~10-25 minutes on 2 cores; `--reuse` keeps a scratch copy whose reference,
fit and warehouse match (checked by the reference files' sha256 recorded in the fit and by the warehouse's
labeler version) and only scores it again. Scratch root: --scratch (default $BENCHMAP_BENCH_DIR/blind, the bench state folder).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402
from models import reference_labels as rl  # noqa: E402

REFERENCE = common.PROJECT_ROOT / "data" / "reference"
MAIN_FIT_DIR = common.PROJECT_ROOT / "models" / "labeling"
DEFAULT_SCRATCH = Path(os.environ.get("BENCHMAP_BENCH_DIR", Path(tempfile.gettempdir()) / "benchmap-bench")) / "blind"
DEFAULT_MAIN_WAREHOUSE = common.PROJECT_ROOT / "data" / "warehouse" / "benchmap.duckdb"
# $BENCHMAP_MIRROR first: a git worktree elsewhere has no ../shared/data (common.DEFAULT_MIRROR)
DEFAULT_MIRROR = common.DEFAULT_MIRROR
SCORED = ("task_f1", "task_precision", "task_recall", "first_occupation_agreement", "work_accuracy")
N_BOOT = 2000
# the mirrored benchmarks by the kind of work their prompts ask for (jobbench, 4 judged texts and no training
# split, is in none: too few texts to score a held-out benchmark on)
DOMAINS = {
    "computer_and_web_use": ["agentbench", "officebench", "osworld", "toolbench", "travelplanner", "visualwebarena",
                             "webarena", "webshop", "webvoyager", "workbench"],
    "customer_service": ["crmarena", "tau2_bench", "tau_bench"],
    "software_and_data": ["cybench", "da_code", "infiagent_dabench", "mle_bench", "paperbench", "spider2",
                          "swe_lancer"],
    "professional_services": ["agentclinic", "apex_agents", "finance_agent_benchmark", "financebench", "gdpval",
                              "legalbench", "occubench", "theagentcompany"],
}


def unseen_benchmarks(seed: int) -> list[tuple[str, str]]:
    """(domain, benchmark) x 3: default_rng(seed) picks 3 of the 4 domains, then one benchmark of each."""
    rng = np.random.default_rng(seed)
    domains = sorted(str(d) for d in rng.choice(sorted(DOMAINS), 3, replace=False))
    return [(d, str(rng.choice(sorted(DOMAINS[d])))) for d in domains]


# ------------------------------------------------------------------------------------------------ the copy
def held_out_of(scenario: str) -> dict[str, Any]:
    """Which reference rows a scenario removes from the fitting reference: {'splits': [...]} or
    {'benchmarks': [...]}, with the rule that chose them."""
    if scenario == "dev_as_blind":
        return {"rule": "the development split (every benchmark, both passes)", "splits": ["dev"]}
    if scenario.startswith("unseen_"):
        seed = int(scenario.split("_", 1)[1])
        picked = unseen_benchmarks(seed)
        return {"rule": f"numpy default_rng({seed}): 3 of the 4 DOMAINS, one benchmark of each (train + dev rows)",
                "seed": seed, "domains": dict((b, d) for d, b in picked), "benchmarks": [b for _, b in picked]}
    raise SystemExit(f"unknown scenario {scenario!r} (dev_as_blind, unseen_<seed>)")


def write_fitting_reference(folder: Path, held: dict[str, Any]) -> None:
    """The copy's data/reference/ with the held-out rows removed: JSONL lines kept byte for byte, the
    sampling design's counts of what was removed set to 0 (a split file stays, empty, where all its rows go:
    resources.readers.load_reference reads both split files)."""
    benchmarks = set(held.get("benchmarks", []))
    kept: dict[str, str] = {}
    for split, name in rl.SPLIT_FILES.items():
        lines = (REFERENCE / name).read_text(encoding="utf-8").splitlines(keepends=True)
        kept[split] = "" if split in held.get("splits", []) else "".join(
            line for line in lines if not line.strip() or json.loads(line)["benchmark"] not in benchmarks)
    moved = held.get("splits") == ["dev"]
    if moved:  # FIT_NEEDS_DEV: the training rows go into the development file, the training file is empty
        kept = {"train": "", "dev": kept["train"]}
    for split, name in rl.SPLIT_FILES.items():
        (folder / name).write_text(kept[split], encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO((REFERENCE / rl.DESIGN_FILE).read_text(encoding="utf-8"))))
    for row in rows:
        for split in ("train", "dev"):
            if split in held.get("splits", []) or row["benchmark"] in benchmarks:
                row[f"n_{split}"] = "0"
        if moved:
            row["n_train"], row["n_dev"] = "0", row["n_train"]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (folder / rl.DESIGN_FILE).write_text(out.getvalue(), encoding="utf-8")


def digest(folder: Path) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in rl.SPLIT_FILES.values()}


def prepare_copy(root: Path, held: dict[str, Any], *, reuse: bool) -> Path:
    """<root>/code: a clone of this checkout with .venv linked and the fitting reference written."""
    code = root / "code"
    if code.exists() and not reuse:
        shutil.rmtree(root)
    if not code.exists():
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(common.PROJECT_ROOT), str(code)], check=True)
        (code / ".venv").symlink_to(common.PROJECT_ROOT / ".venv")
    write_fitting_reference(code / "data" / "reference", held)
    return code


def child_env(code: Path, mirror: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"OPENAI_API_KEY", "OPENAI_BASE_URL", "BENCHMAP_LABELER"}}
    env.update({"PYTHONPATH": str(code), "BENCHMAP_MIRROR": str(mirror), "BENCHMAP_OFFLINE": "1",
                "PYTHONUNBUFFERED": "1"})
    return env


def fitted_for(code: Path) -> bool:
    """The copy's selector and stack were fitted on its current reference."""
    want = digest(code / "data" / "reference")
    try:
        selector = json.loads((code / "models/labeling/selector_fit.json").read_text())
        stack = json.loads((code / "models/labeling/neighbour_fit.json").read_text())
    except (OSError, ValueError):
        return False
    return (selector.get("trained_on", {}).get("reference_sha256") == want
            and stack.get("trained_on", {}).get("reference_sha256") == want)


def refit(code: Path, root: Path, mirror: Path, *, reuse: bool) -> dict[str, Any]:
    out = root / "fit.json"
    if reuse and fitted_for(code) and out.exists():
        common.log(f"[blind] {code}: fit matches the reference, kept")
        return {"reused": True, **json.loads(out.read_text())}
    common.log(f"[blind] {code}: python -m pipelines.fit_labeler (selector CV + fit, stack CV + fit)")
    measured = common.run_measured([common.PYTHON, "-m", "pipelines.fit_labeler"], child_env(code, mirror),
                                   cwd=code, echo=False)
    (root / "fit.err").write_text(measured.stderr)
    if measured.returncode != 0:
        raise RuntimeError(f"fit_labeler failed in {code} (exit {measured.returncode}): "
                           f"{measured.stderr.strip().splitlines()[-1:]}")
    result = json.loads(measured.stdout[measured.stdout.index("{"):])
    result["wall_s"] = round(measured.wall_s, 1)
    out.write_text(json.dumps(result))
    return {"reused": False, **result}


def run_pipeline(code: Path, root: Path, mirror: Path, *, reuse: bool) -> dict[str, Any]:
    state = common.State(root / "state", code)
    marker = root / "run_all.json"
    if reuse and marker.exists() and state.warehouse.exists():
        done = json.loads(marker.read_text())
        if done.get("returncode") == 0 and done.get("selector_sha256") == _fit_sha(code):
            common.log(f"[blind] {state.warehouse}: run for this fit, kept")
            return {"reused": True, **done}
    if state.root.exists():
        shutil.rmtree(state.root)
    state.create()
    common.log(f"[blind] {code}: python -m pipelines.run_all (DAGSTER_HOME {state.home})")
    measured = common.run_measured([common.PYTHON, "-m", "pipelines.run_all"], state.env(mirror=mirror),
                                   cwd=code, echo=False)
    (root / "run_all.err").write_text(measured.stderr)
    (root / "run_all.out").write_text(measured.stdout)
    done = {"returncode": measured.returncode, "wall_s": round(measured.wall_s, 1),
            "cpu_s": round(measured.cpu_s, 1), "selector_sha256": _fit_sha(code),
            "last_lines": measured.stdout.strip().splitlines()[-3:]}
    marker.write_text(json.dumps(done))
    if measured.returncode != 0:
        raise RuntimeError(f"run_all failed in {code} (exit {measured.returncode}); see {root / 'run_all.err'}")
    return {"reused": False, **done}


def _fit_sha(code: Path) -> str:
    data = b"".join((code / "models/labeling" / n).read_bytes() for n in ("selector_fit.json", "neighbour_fit.json"))
    return hashlib.sha256(data).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------ scoring
def read_warehouse(path: Path) -> dict[str, pl.DataFrame]:
    """The published labels and work decisions, label validation and the headline of a warehouse (read only)."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        def frame(sql: str) -> pl.DataFrame:
            return con.sql(sql).pl()  # DuckDB 2: sql(), not execute(), has .pl()

        return {
            "labels": frame("select benchmark, prompt_id, prompt_hash, onet_soc_code, task_id, labeler, "
                            "labeler_version, rank from prompt_task_labels"),
            "work": frame("select benchmark, prompt_id, prompt_hash, labeler, labeler_version, is_work "
                          "from prompt_work"),
            "validation": frame("select * from labeler_validation where benchmark = 'all' and metric like 'ref_%'"),
            "headline": frame("select quantity, threshold, estimator, value, ci_low, ci_high, n_texts, n_sampled "
                              "from headline_estimates where published and benchmark_index = 'all' "
                              "and scope = 'all' order by quantity, threshold"),
        }
    finally:
        con.close()


def published_predictions(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One prediction per (benchmark, text) from the published labels, as label validation reads them."""
    return rl.predictions_from_labels(tables["labels"], tables["work"])


def oof_predictions(path: Path) -> pl.DataFrame:
    """A fit's cross-fitted labels of the judged texts (neighbour_oof.json / selector_oof.json) in the layout label
    validation scores: the label set, the rank-1 label's occupation (what the published labels say)."""
    return rl.predictions_from_out_of_fold(json.loads(path.read_text())["prompts"])


def bootstrap_se(per_prompt: pl.DataFrame, metric: str, *, seed: int = 0) -> float | None:
    """Standard error of a metric's mean over prompts: a bootstrap over texts (sample_id; passes move
    together), as summarise_metrics' interval resamples."""
    values = per_prompt.select("sample_id", metric).drop_nulls()
    if values.height < 2:
        return None
    ids, inverse = np.unique(values["sample_id"].to_numpy(), return_inverse=True)
    sums = np.bincount(inverse, weights=values[metric].to_numpy(), minlength=len(ids))
    counts = np.bincount(inverse, minlength=len(ids)).astype(float)
    draws = np.random.default_rng(seed).integers(0, len(ids), size=(N_BOOT, len(ids)))
    return float(np.std(sums[draws].sum(axis=1) / counts[draws].sum(axis=1), ddof=1))


def paired_difference(mine: pl.DataFrame, theirs: pl.DataFrame, metric: str, *, seed: int = 0) -> dict[str, Any]:
    """mine - theirs on the (text, pass) rows both define, with a bootstrap over texts (paired)."""
    keys = ["sample_id", "annotation"]
    both = (mine.select(*keys, pl.col(metric).alias("a")).join(theirs.select(*keys, pl.col(metric).alias("b")), on=keys)
            .drop_nulls())
    if both.height < 2:
        return {"n": both.height}
    ids, inverse = np.unique(both["sample_id"].to_numpy(), return_inverse=True)
    sa = np.bincount(inverse, weights=both["a"].to_numpy(), minlength=len(ids))
    sb = np.bincount(inverse, weights=both["b"].to_numpy(), minlength=len(ids))
    n = np.bincount(inverse, minlength=len(ids)).astype(float)
    draws = np.random.default_rng(seed).integers(0, len(ids), size=(N_BOOT, len(ids)))
    boot = (sa[draws].sum(axis=1) - sb[draws].sum(axis=1)) / n[draws].sum(axis=1)
    diff = float((sa.sum() - sb.sum()) / n.sum())
    return {"rehearsal": round(float(sa.sum() / n.sum()), 4), "committed_fit_oof": round(float(sb.sum() / n.sum()), 4),
            "difference": round(diff, 4), "se": round(float(np.std(boot, ddof=1)), 4),
            "ci95": [round(float(x), 4) for x in np.quantile(boot, [0.025, 0.975])], "n": both.height,
            "n_prompts": len(ids)}


def score(predictions: pl.DataFrame, reference: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Per (text, pass) metrics and their summary: pooled (with a bootstrap SE) and per benchmark."""
    per_prompt = rl.per_prompt_metrics(predictions, reference)
    summary = rl.summarise_metrics(per_prompt, n_boot=N_BOOT)
    out: dict[str, Any] = {"n_passes": per_prompt.height, "n_prompts": per_prompt["sample_id"].n_unique(),
                           "n_reference_passes": reference.height, "overall": {}, "by_benchmark": {}}
    for row in summary.filter(pl.col("metric").is_in(SCORED)).iter_rows(named=True):
        figure = {"value": round(row["value"], 4), "ci95": [round(row["ci_low"], 4), round(row["ci_high"], 4)],
                  "n": row["n"]}
        if row["benchmark"] == "all":
            figure["se"] = round(bootstrap_se(per_prompt, row["metric"]) or float("nan"), 4)
            out["overall"][row["metric"]] = figure
        else:
            out["by_benchmark"].setdefault(row["benchmark"], {})[row["metric"]] = figure
    return per_prompt, out


def between_benchmark_spread(held: list[str], scored: dict[str, Any]) -> dict[str, Any]:
    """How much a mean over 3 held-out benchmarks moves with which 3 they are: the committed fit's
    leave-one-benchmark-out labels (selector_oof.json) scored per benchmark over every judged text of both
    splits; the mean and SD of the per-benchmark figures, the SE of a mean over 3 benchmarks drawn from them
    (SD / sqrt(3), without replacement: x sqrt((B-3)/(B-1))), and where the rehearsal's 3 fall (z)."""
    from resources.readers import load_reference

    reference = load_reference(REFERENCE)
    per_prompt = rl.per_prompt_metrics(oof_predictions(MAIN_FIT_DIR / "selector_oof.json"), reference)
    out: dict[str, Any] = {"labels": "main's models/labeling/selector_oof.json, every judged text of both splits"}
    for metric in SCORED:
        by = (per_prompt.filter(pl.col(metric).is_not_null()).group_by("benchmark")
              .agg(pl.col(metric).mean()).sort("benchmark"))
        values = by[metric].to_numpy()
        n = len(values)
        sd = float(np.std(values, ddof=1))
        se3 = sd / np.sqrt(3) * np.sqrt((n - 3) / (n - 1))
        held_mean = float(by.filter(pl.col("benchmark").is_in(held))[metric].mean())
        rehearsal = scored["overall"][metric]["value"]
        out[metric] = {"benchmarks": n, "mean_of_benchmarks": round(float(values.mean()), 4),
                       "sd_between_benchmarks": round(sd, 4), "se_mean_of_3": round(float(se3), 4),
                       "committed_oof_mean_of_these_3": round(held_mean, 4),
                       "rehearsal_z_vs_mean_of_benchmarks": round((rehearsal - float(values.mean())) / se3, 2),
                       "per_benchmark": {b: round(v, 4) for b, v in by.iter_rows()}}
    return out


def fit_figures(folder: Path) -> dict[str, Any]:
    """The out-of-sample figures a fit publishes (neighbour_fit.json and selector_fit.json), pooled."""
    stack = json.loads((folder / "neighbour_fit.json").read_text())["cross_validation"]
    selector = json.loads((folder / "selector_fit.json").read_text()).get("cross_validation", {})

    def pick(figures: dict[str, Any]) -> dict[str, Any]:
        return {m: {"value": figures[m]["value"], "ci95": [figures[m]["ci_low"], figures[m]["ci_high"]],
                    "n": figures[m]["n"]} for m in SCORED if m in figures}

    return {
        "within_benchmark_all": pick(stack["within_benchmark"]["neighbour_stack"]["all"]),
        "within_benchmark_dev": pick(stack["within_benchmark"]["neighbour_stack"].get("dev", {})),
        "new_benchmark_all": pick(stack["new_benchmark"]["neighbour_stack"]["all"]),
        "new_benchmark_dev": pick(stack["new_benchmark"]["neighbour_stack"].get("dev", {})),
        "selector_cv_dev": pick(selector.get("cv_dev", {})),
        "selector_cv_train_and_dev": pick(selector.get("cv_train_and_dev", {})),
    }


def validation_rows(tables: dict[str, pl.DataFrame]) -> dict[str, Any]:
    """labeler_validation's pooled ref_* rows of the published labeler (offline) and the judge ceiling."""
    rows = tables["validation"].filter(pl.col("labeler").is_in(["offline", rl.CEILING_LABELER]))
    return {f"{r['labeler']}:{r['metric']}": {"value": round(r["value"], 4), "ci95": [round(r["ci_low"], 4),
            round(r["ci_high"], 4)], "n": r["n"]}
            for r in rows.iter_rows(named=True)
            if any(r["metric"].endswith(m) for m in SCORED)}


def headline(tables: dict[str, pl.DataFrame]) -> list[dict[str, Any]]:
    return [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}
            for r in tables["headline"].iter_rows(named=True)]


def held_reference(held: dict[str, Any]) -> pl.DataFrame:
    from resources.readers import load_reference

    reference = load_reference(REFERENCE)
    if "splits" in held:
        return reference.filter(pl.col("split").is_in(held["splits"]))
    return reference.filter(pl.col("benchmark").is_in(held["benchmarks"]))


def scenario(name: str, scratch: Path, mirror: Path, main: dict[str, Any], *, reuse: bool) -> dict[str, Any]:
    started = time.perf_counter()
    held = held_out_of(name)
    root = scratch / name
    code = prepare_copy(root, held, reuse=reuse)
    fit = refit(code, root, mirror, reuse=reuse)
    run = run_pipeline(code, root, mirror, reuse=reuse)
    tables = read_warehouse(common.State(root / "state", code).warehouse)
    reference = held_reference(held)
    per_prompt, scored = score(published_predictions(tables), reference)
    # the same texts, labeled by the committed fit's cross-validation (what main publishes about them)
    oof_file = "neighbour_oof.json" if "splits" in held else "selector_oof.json"
    committed_pp = rl.per_prompt_metrics(oof_predictions(MAIN_FIT_DIR / oof_file), reference)
    extra: dict[str, Any] = {}
    if "splits" in held:
        # what fewer judged texts cost the step by itself: the training texts' leave-one-text-out labels of this
        # fit (~20 other judged texts vote, 578 texts fit the stack) against the committed fit's (~26 vote, 788)
        train = held_reference({"splits": ["train"]})
        mine = rl.per_prompt_metrics(oof_predictions(code / "models/labeling/neighbour_oof.json"), train)
        theirs = rl.per_prompt_metrics(oof_predictions(MAIN_FIT_DIR / "neighbour_oof.json"), train)
        extra["fewer_voters_on_training_texts"] = {
            "what": "this fit's cross-fitted labels of the training texts minus the committed fit's (paired)",
            **{m: paired_difference(mine, theirs, m) for m in SCORED}}
    else:
        extra["between_benchmark_spread"] = between_benchmark_spread(held["benchmarks"], scored)
    result: dict[str, Any] = {
        "held_out": held,
        **extra,
        "fitting_reference": {"rows": {s: sum(1 for line in (code / "data/reference" / n).read_text().splitlines()
                                              if line.strip()) for s, n in rl.SPLIT_FILES.items()},
                              "sha256": digest(code / "data" / "reference")},
        "fit": {k: fit.get(k) for k in ("reused", "fit_version", "seconds", "wall_s", "work_threshold",
                                        "task_threshold", "cv_dev", "cv_train_and_dev")}
        | {"stack_version": fit.get("stack", {}).get("stack_version"),
           "stack_seconds": fit.get("stack", {}).get("seconds")},
        "run_all": run,
        "labeler_version": tables["labels"]["labeler_version"].unique().to_list(),
        "rehearsal_score": scored,
        "paired_vs_committed_oof": {"labels": f"main's models/labeling/{oof_file}",
                                    **{m: paired_difference(per_prompt, committed_pp, m) for m in SCORED}},
        "published_by_this_warehouse": {"labeler_validation": validation_rows(tables),
                                        "fit_files": fit_figures(code / "models" / "labeling")},
        "headline": headline(tables),
        "headline_main": main.get("headline"),
        "seconds": round(time.perf_counter() - started, 1),
    }
    return result


def main_figures(warehouse: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"fit_files": fit_figures(MAIN_FIT_DIR)}
    if warehouse.exists():
        try:
            tables = read_warehouse(warehouse)
            out.update(warehouse=str(warehouse), labeler_validation=validation_rows(tables),
                       headline=headline(tables),
                       labeler_version=tables["labels"]["labeler_version"].unique().to_list())
        except Exception as exc:  # noqa: BLE001 - main's warehouse is optional (read only, may be locked)
            out["warehouse_error"] = f"{type(exc).__name__}: {exc}"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="dev_as_blind,unseen_1,unseen_2")
    parser.add_argument("--scratch", type=Path, default=DEFAULT_SCRATCH)
    parser.add_argument("--mirror", type=Path, default=Path(os.environ.get("BENCHMAP_MIRROR", DEFAULT_MIRROR)),
                        help="the read-only data mirror (default: $BENCHMAP_MIRROR, else ../shared/data)")
    parser.add_argument("--main-warehouse", type=Path, default=DEFAULT_MAIN_WAREHOUSE)
    parser.add_argument("--reuse", action="store_true", help="keep a scratch copy's matching fit and warehouse")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    main = main_figures(args.main_warehouse)
    result: dict[str, Any] = {"bench": "blind_rehearsal", "measured_at": common.now_iso(),
                              "machine": common.machine(), "code_version": common.code_version(),
                              "mirror": str(args.mirror), "domains": DOMAINS, "main": main, "scenarios": {}}
    for name in [s.strip() for s in args.scenarios.split(",") if s.strip()]:
        common.log(f"[blind] scenario {name}")
        try:
            result["scenarios"][name] = scenario(name, args.scratch, args.mirror, main, reuse=args.reuse)
        except Exception as exc:  # noqa: BLE001 - a failed scenario is a finding: reported, the others still run
            result["scenarios"][name] = {"error": f"{type(exc).__name__}: {exc}"}
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    common.emit(result)
    failed = [n for n, r in result["scenarios"].items() if isinstance(r, dict) and "error" in r]
    if failed:
        common.log(f"[blind] FAILED: {', '.join(failed)} (their errors are in the JSON)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
