"""Per-occupation model scores from the estimated occupations of each text (issue 25 item 5): with certain
probabilities the estimate is the mean and its interval the cluster-robust one (worked by hand); uncertain
probabilities add between-draw variance (the labeler's error) and move the estimate to the p-weighted mean."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from models.scores_estimated import ESTIMATED_SCORES_SCHEMA, estimated_occupation_scores


def _inputs(p_uncertain: float) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    scores = {("b1", "a"): 1.0, ("b1", "b"): 0.0, ("b1", "c"): 1.0, ("b2", "d"): 0.5, ("b2", "e"): 0.0,
              ("b3", "f"): 1.0, ("b3", "g"): 0.0}
    results = pl.DataFrame([{"benchmark": b, "prompt_id": i, "model": "m", "score": s}
                            for (b, i), s in scores.items()]
                           + [{"benchmark": "b1", "prompt_id": "a", "model": "m", "score": 0.0}])  # 2nd run
    prompts = pl.DataFrame([{"benchmark": b, "prompt_id": i, "prompt_hash": f"h{i}"} for b, i in scores])
    p = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0, "f": p_uncertain, "g": 0.0}
    estimates = pl.DataFrame([{"prompt_hash": f"h{i}", "benchmark": b, "onet_soc_code": "15-1252.00", "p": p[i]}
                              for b, i in scores] + [
        {"prompt_hash": "ha", "benchmark": "b1", "onet_soc_code": "43-4051.00", "p": 0.5}])
    return results, prompts, estimates


def test_certain_probabilities_give_the_clustered_interval_by_hand():
    results, prompts, estimates = _inputs(1.0)
    frame = estimated_occupation_scores(results, prompts, estimates, n_draws=20)
    assert frame.columns == list(ESTIMATED_SCORES_SCHEMA)
    row = frame.filter(pl.col("onet_soc_code") == "15-1252.00").row(0, named=True)
    s = np.array([0.5, 0.0, 1.0, 0.5, 0.0, 1.0])  # a averages its two runs; g has p = 0 and is left out
    cluster = np.array([0, 0, 0, 1, 1, 2])
    mean = s.mean()
    sums = np.array([(s[cluster == c] - mean).sum() for c in range(3)])
    variance = 3 / 2 * (sums**2).sum() / s.size**2
    assert row["n_prompts"] == 6 and row["expected_prompts"] == 6.0 and row["n_clusters"] == 3
    assert row["cluster_unit"] == "benchmark" and row["between_var"] == 0.0
    assert row["estimated_mean"] == pytest.approx(mean)
    assert row["within_var"] == pytest.approx(variance) and row["se"] == pytest.approx(math.sqrt(variance))
    assert row["ci_low"] == pytest.approx(max(0.0, mean - 1.959963984540054 * math.sqrt(variance)))
    # 43-4051 has half a prompt expected: below the minimum, no row
    assert frame.filter(pl.col("onet_soc_code") == "43-4051.00").is_empty()


def test_uncertain_probabilities_add_the_labelers_error():
    certain = estimated_occupation_scores(*_inputs(1.0), n_draws=400).row(0, named=True)
    unsure = estimated_occupation_scores(*_inputs(0.3), n_draws=400, seed=1).row(0, named=True)
    # f (score 1) is in 30% of the draws: the estimate moves toward the mean without it
    without_f = np.array([0.5, 0.0, 1.0, 0.5, 0.0]).mean()
    assert without_f < unsure["estimated_mean"] < certain["estimated_mean"]
    weighted = (0.5 + 0 + 1 + 0.5 + 0 + 0.3) / 5.3
    assert unsure["estimated_mean"] == pytest.approx(weighted, abs=0.03)
    assert unsure["between_var"] > 0 and 0 < unsure["fraction_missing_info"] < 1
    assert unsure["expected_prompts"] == pytest.approx(5.3)
    # the interval is a t interval around the mean with Rubin's total variance
    total = unsure["within_var"] + (1 + 1 / unsure["n_draws"]) * unsure["between_var"]
    assert unsure["se"] == pytest.approx(math.sqrt(total))
    assert stats.norm.ppf(0.975) * unsure["se"] <= unsure["estimated_mean"] - unsure["ci_low"] + 1e-12


def test_single_benchmark_clusters_by_prompt():
    results, prompts, estimates = _inputs(1.0)
    only_b1 = estimated_occupation_scores(results.filter(pl.col("benchmark") == "b1"), prompts, estimates,
                                          n_draws=5).filter(pl.col("onet_soc_code") == "15-1252.00")
    row = only_b1.row(0, named=True)
    assert (row["cluster_unit"], row["n_clusters"], row["n_prompts"]) == ("prompt", 3, 3)
    s = np.array([0.5, 0.0, 1.0])
    assert row["within_var"] == pytest.approx(1.5 * ((s - s.mean()) ** 2).sum() / 9)


@pytest.mark.slow
def test_estimated_scores_on_the_mirror(full_pipeline):
    """On the mirror: the asset holds one row per occupation x model with at least one expected scored prompt,
    each estimate inside its interval, and the estimate of the occupation with most expected prompts agrees
    with the p-weighted mean recomputed from the tables (to the draws' Monte Carlo error)."""
    from resources import warehouse as wh

    frame = wh.read_table(full_pipeline.warehouse, "occupation_model_scores_estimated")
    assert frame.height > 0 and frame.columns == list(ESTIMATED_SCORES_SCHEMA)
    assert (frame["expected_prompts"] >= 1.0).all()
    # every row is an estimate: a pair whose draws never hold two clusters (one prompt) has none and no row
    # (61 such rows of NaN were published before)
    assert (frame["n_draws"] > 0).all()
    assert frame.filter(pl.col("estimated_mean").is_null() | pl.col("estimated_mean").is_nan()).is_empty()
    inside = frame.filter(pl.col("ci_low").is_not_null())
    assert ((inside["ci_low"] <= inside["estimated_mean"] + 1e-12)
            & (inside["estimated_mean"] <= inside["ci_high"] + 1e-12)).all()
    # no interval of zero width (equal scores get none: 7 such rows were published before)
    assert (inside["ci_high"] - inside["ci_low"] > 1e-9).all()
    assert frame.filter(pl.col("ci_low").is_null())["se"].max() <= 1e-9
    top = frame.sort("expected_prompts", descending=True).row(0, named=True)
    with wh.connect(full_pipeline.warehouse, read_only=True) as con:
        weighted = con.execute(
            """select sum(s.score * e.p_calibrated) / sum(e.p_calibrated) from (
                   select benchmark, prompt_id, avg(score) as score from benchmark_results
                   where model = ? and score is not null group by 1, 2) s
               join benchmark_prompts p using (benchmark, prompt_id)
               join prompt_occupation_estimates e on e.benchmark = p.benchmark and e.prompt_hash = p.prompt_hash
               where e.onet_soc_code = ?""",
            [top["model"], top["onet_soc_code"]],
        ).fetchone()[0]
    assert top["estimated_mean"] == pytest.approx(weighted, abs=max(0.02, 3 * top["se"] / 10))


def _draw_statistics_one_hot(score, p, cluster, n_draws, rng):
    """The draws' statistics as first written (a (draws x clusters x prompts) one-hot array): the reference the
    memory-bounded version must equal to the bit."""
    included = (rng.random((n_draws, score.size)) < p).astype(float)
    k = included.sum(axis=1)
    q = np.divide(included @ score, k, out=np.full(n_draws, np.nan), where=k > 0)
    residual = included * (score[None, :] - np.nan_to_num(q)[:, None])
    n_clusters = int(cluster.max()) + 1
    per_cluster = np.zeros((n_draws, n_clusters))
    for c in range(n_clusters):
        per_cluster[:, c] = residual[:, cluster == c].sum(axis=1)
    present = (included[:, None, :] * (cluster[None, None, :] == np.arange(n_clusters)[None, :, None])).sum(axis=2)
    g = (present > 0).sum(axis=1)
    u = np.divide(g / np.maximum(g - 1, 1) * (per_cluster**2).sum(axis=1), k**2,
                  out=np.full(n_draws, np.nan), where=(k > 0) & (g > 1))
    return q, u


@pytest.mark.parametrize("clusters", ["benchmarks", "prompts", "shuffled prompts"])
def test_draw_statistics_equal_the_one_hot_formula(clusters):
    from models.scores_estimated import _draw_statistics

    gen = np.random.default_rng(3)
    n = 300
    score = gen.random(n)
    p = np.where(gen.random(n) < 0.3, 1.0, gen.random(n))
    cluster = {"benchmarks": gen.integers(0, 7, n), "prompts": np.arange(n),
               "shuffled prompts": gen.permutation(n)}[clusters]
    cluster = np.unique(cluster, return_inverse=True)[1]
    q, u, _ = _draw_statistics(score, p, cluster, 50, np.random.default_rng(9))
    q_ref, u_ref = _draw_statistics_one_hot(score, p, cluster, 50, np.random.default_rng(9))
    np.testing.assert_array_equal(q, q_ref)
    np.testing.assert_array_equal(u, u_ref)
    assert np.isfinite(u).all()


def test_a_large_single_benchmark_stays_small_in_memory():
    """7,500 prompts of one benchmark (financebench at 50x the mirror): the prompts are the clusters; the one-hot
    array was 50 x 7,500 x 7,500 floats (22 GB). Now the draws' arrays are 50 x 7,500 (3 MB each)."""
    import tracemalloc

    from models.scores_estimated import _draw_statistics

    n = 7_500
    gen = np.random.default_rng(5)
    tracemalloc.start()
    q, u, _ = _draw_statistics(gen.random(n), np.full(n, 0.5), np.arange(n), 50, np.random.default_rng(1))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 100 * 2**20
    assert q.shape == u.shape == (50,)
    # half the prompts drawn: the mean of uniform scores, its variance that of a mean of ~3,750 prompts
    assert abs(float(q.mean()) - 0.5) < 0.02
    assert float(np.median(u)) == pytest.approx(1 / 12 / 3_750, rel=0.1)


def test_kept_model_rows_are_read_back_only_for_the_same_inputs(tmp_path):
    """occupation_model_scores_estimated's rows kept per model (assets/kept_rows.py, the asset's store): the table
    equals computing every model anew; a model whose probabilities changed is recomputed, the other read back."""
    from assets.kept_rows import model_score_rows_store
    from resources.dagster_resources import Warehouse

    results, prompts, estimates = _inputs(0.6)
    results = pl.concat([results, results.with_columns(pl.lit("m2").alias("model"),
                                                       (1.0 - pl.col("score")).alias("score"))])
    warehouse = Warehouse(path=str(tmp_path / "benchmap.duckdb"))
    computed: list[str] = []

    def store():
        rows = model_score_rows_store(warehouse, "estimated_scores")
        return lambda model, frame, parts, compute: rows(model, frame, parts,
                                                         lambda: computed.append(model) or compute())

    fresh = estimated_occupation_scores(results, prompts, estimates, n_draws=40)
    assert fresh["model"].to_list() == ["m", "m2"]
    assert estimated_occupation_scores(results, prompts, estimates, n_draws=40, kept=store()).equals(fresh)
    assert computed == ["m", "m2"]
    computed.clear()
    assert estimated_occupation_scores(results, prompts, estimates, n_draws=40, kept=store()).equals(fresh)
    assert computed == []
    changed = results.with_columns(pl.when((pl.col("model") == "m2") & (pl.col("prompt_id") == "d"))
                                   .then(1.0).otherwise(pl.col("score")).alias("score"))
    refreshed = estimated_occupation_scores(changed, prompts, estimates, n_draws=40, kept=store())
    assert computed == ["m2"]
    assert refreshed.equals(estimated_occupation_scores(changed, prompts, estimates, n_draws=40))
    assert not refreshed.equals(fresh)


def test_equal_scores_get_no_interval():
    """Every prompt of the pair scored the same and each is certain: the total variance is 0, so there is no
    interval (a zero-width one would claim certainty from two prompts)."""
    results = pl.DataFrame([{"benchmark": "b1", "prompt_id": i, "model": "m", "score": 0.0} for i in ("a", "b")])
    prompts = pl.DataFrame([{"benchmark": "b1", "prompt_id": i, "prompt_hash": f"h{i}"} for i in ("a", "b")])
    estimates = pl.DataFrame([{"prompt_hash": f"h{i}", "benchmark": "b1", "onet_soc_code": "15-1252.00", "p": 1.0}
                              for i in ("a", "b")])
    row = estimated_occupation_scores(results, prompts, estimates, n_draws=10).row(0, named=True)
    assert row["estimated_mean"] == 0.0 and row["se"] == 0.0
    assert row["ci_low"] is None and row["ci_high"] is None
    # nor a share of its variance: 0/0 of rounding read 1.0 in the release (an audit, 2026-12-07)
    assert row["fraction_missing_info"] is None


def test_a_draw_with_one_prompt_counts_with_the_others_variance():
    """A certain prompt (0.50) and one a text exercises with p = 0.13 (0.12), the audit's Lawyers x model pair:
    87% of the draws hold the certain prompt alone. Those draws count (the estimate is the mean over every draw
    holding a prompt, about 0.87 x 0.50 + 0.13 x 0.31 = 0.475) with the per-cluster variance of the two-prompt
    draws; dropping them published 0.31, the plain mean of both, with no labeler error."""
    results = pl.DataFrame([{"benchmark": "jobbench", "prompt_id": i, "model": "m", "score": s}
                            for i, s in (("lawyers", 0.5), ("engineers", 0.12))])
    prompts = pl.DataFrame([{"benchmark": "jobbench", "prompt_id": i, "prompt_hash": f"h{i}"}
                            for i in ("lawyers", "engineers")])
    estimates = pl.DataFrame([{"prompt_hash": f"h{i}", "benchmark": "jobbench", "onet_soc_code": "23-2011.00",
                               "p": p} for i, p in (("lawyers", 1.0), ("engineers", 0.13))])
    row = estimated_occupation_scores(results, prompts, estimates, n_draws=4000).row(0, named=True)
    assert row["n_draws"] == 4000  # every draw holds the certain prompt
    both = 0.13
    assert row["estimated_mean"] == pytest.approx((1 - both) * 0.5 + both * 0.31, abs=0.01)
    # two prompts as clusters: U = 2 x (0.19^2 + 0.19^2) / 2^2; one prompt: the per-cluster variance 2 U
    two = 2 * (0.19**2 * 2) / 4
    assert row["within_var"] == pytest.approx((1 - both) * 2 * two + both * two, rel=0.03)
    assert row["between_var"] == pytest.approx(both * (1 - both) * 0.19**2, rel=0.1)
    assert 0 < row["fraction_missing_info"] < 0.2
    assert row["estimated_mean_mc_se"] == pytest.approx(math.sqrt(row["between_var"] / 4000))
    # the Monte Carlo error is what another seed's estimate differs by
    reruns = [estimated_occupation_scores(results, prompts, estimates, n_draws=50, seed=s).row(0, named=True)
              for s in range(40)]
    spread = float(np.std([r["estimated_mean"] for r in reruns], ddof=1))
    assert spread == pytest.approx(float(np.mean([r["estimated_mean_mc_se"] for r in reruns])), rel=0.35)
