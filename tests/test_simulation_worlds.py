"""The simulated worlds of the p_covered check (models/estimates/simulation.py): what `simulate`'s pool options
draw, the judge-sample statistics by hand, and MIRROR_LIKE against the mirror's own judge sample."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from models import estimates as es

# MIRROR_LIKE's statistics (mean over populations) within these of the mirror's; the statistics left out are
# the judge labels' own pair shares (the mirror's labels sit on fewer tasks and occupations than the world's:
# docs/estimates_calibration_log.md), which the miss model does not read. How often two misses repeat a task is held tightest:
# it sets how the seen part's imputed misses pile up (a first world at 0.017 against the mirror's 0.029 read
# the estimator's bins as better than they are)
TOLERANCE = {
    "judge_pairs_same_major_group": 0.12, "miss_pairs_same_task": 0.01, "miss_pairs_same_occupation": 0.04,
    "miss_pairs_same_major_group": 0.12, "misses_in_new_group": 0.02, "judge_labels_per_judged_text": 0.3,
    "misses_per_judged_text": 0.2, "labels_per_judged_text": 0.3, "labeler_recall": 0.08, "label_p": 0.05,
    "judged_without_labels": 0.08, "judged_without_judge_labels": 0.06,
}


def _world_statistics(settings: dict, populations: int = 6, seed: int = 3) -> dict[str, float]:
    return dict(es.world_statistics(settings, populations, seed).iter_rows())


def test_pools_stay_in_their_groups_and_occupations():
    settings = {"n_groups": 22, "n_occupations": 880, "tasks_per_occupation": 20, "pool_groups": 2,
                "pool_occupations": 3, "pool_size": 50}
    pr = es.simulate(np.random.default_rng(5), **settings).problem
    assert pr.n_groups == 22 and pr.n_occ == 880

    def units_per_bench(text: np.ndarray, task: np.ndarray) -> tuple[int, int]:
        bench, occ = pr.text_bench[text], pr.task_occ[task]
        groups = max(np.unique(pr.occ_group[occ[bench == b]]).size for b in np.unique(bench))
        occupations = max(np.unique(occ[bench == b]).size for b in np.unique(bench))
        return groups, occupations

    # labels and judge labels alike come from the pool: at most 2 groups and 3 occupations per benchmark
    assert units_per_bench(pr.lab_text, pr.lab_task) == (2, 3)
    assert units_per_bench(pr.jud_text, pr.jud_task) <= (2, 3)
    # scattered misses leave the pool's occupations but not its groups; surprises leave its groups too
    scattered = es.simulate(np.random.default_rng(5), **settings, scatter_share=1.0).problem
    miss = ~scattered.jud_in_labels
    assert miss.any()
    bench = scattered.text_bench[scattered.jud_text[miss]]
    occ = scattered.task_occ[scattered.jud_task[miss]]
    assert max(np.unique(scattered.occ_group[occ[bench == b]]).size for b in np.unique(bench)) <= 2
    assert max(np.unique(occ[bench == b]).size for b in np.unique(bench)) > 3
    surprised = es.simulate(np.random.default_rng(5), **settings, surprise_share=1.0).problem
    miss = ~surprised.jud_in_labels
    bench = surprised.text_bench[surprised.jud_text[miss]]
    group = surprised.occ_group[surprised.task_occ[surprised.jud_task[miss]]]
    assert max(np.unique(group[bench == b]).size for b in np.unique(bench)) > 2
    for p in (scattered, surprised):  # a miss is never one of its text's labels
        labels = set(zip(p.lab_text.tolist(), p.lab_task.tolist(), strict=True))
        missed = p.jud_text[~p.jud_in_labels], p.jud_task[~p.jud_in_labels]
        assert not labels & set(zip(missed[0].tolist(), missed[1].tolist(), strict=True))
    with pytest.raises(ValueError, match="fewer than pool_size"):
        es.simulate(np.random.default_rng(5), **{**settings, "pool_occupations": 2})


def test_judge_sample_statistics_by_hand():
    sim = es.simulate(np.random.default_rng(2), texts_per_benchmark=(30, 40))
    pr = sim.problem
    # four judged texts in benchmark 0: texts 0-1 share a task's occupation, text 2 another group, text 3 none
    occ_of = pr.task_occ
    first = int(np.flatnonzero(occ_of == 0)[0])
    same_occ = int(np.flatnonzero(occ_of == 0)[1])
    other_group = int(np.flatnonzero(pr.occ_group[occ_of] != pr.occ_group[occ_of[first]])[0])
    sampled = np.zeros(pr.text_bench.size, dtype=bool)
    sampled[[0, 1, 2, 3]] = True
    problem = es.Problem(**{**pr.__dict__, "text_sampled": sampled,
                            "jud_text": np.array([0, 1, 2]), "jud_task": np.array([first, same_occ, other_group]),
                            "jud_in_labels": np.array([True, False, False]),
                            "lab_text": np.array([0, 1]), "lab_task": np.array([first, first]),
                            "lab_p": np.array([0.5, 0.7])})
    stats = dict(es.judge_sample_statistics(problem).iter_rows())
    # judge pairs of different texts: (0,1) same occupation, (0,2) and (1,2) different groups
    assert stats["judge_pairs_same_task"] == 0.0
    assert stats["judge_pairs_same_occupation"] == pytest.approx(1 / 3)
    assert stats["judge_pairs_same_major_group"] == pytest.approx(1 / 3)
    assert stats["miss_pairs_same_major_group"] == 0.0  # misses of texts 1 and 2, different groups
    # text 2's miss is in a group no other judged text and no label has; text 1's group has text 0's judge label
    assert stats["misses_in_new_group"] == pytest.approx(0.5)
    assert stats["judge_labels_per_judged_text"] == pytest.approx(3 / 4)
    assert stats["misses_per_judged_text"] == pytest.approx(2 / 4)
    assert stats["labels_per_judged_text"] == pytest.approx(2 / 4)
    assert stats["labeler_recall"] == pytest.approx(1 / 3)
    assert stats["label_p"] == pytest.approx(0.6)
    assert stats["judged_without_labels"] == pytest.approx(2 / 4)
    assert stats["judged_without_judge_labels"] == pytest.approx(1 / 4)


@pytest.fixture(scope="module")
def mirror_statistics(full_pipeline) -> dict[str, float]:
    from assets.estimates import warehouse_problem
    from resources.dagster_resources import Warehouse

    return dict(es.judge_sample_statistics(warehouse_problem(Warehouse(path=str(full_pipeline.warehouse))))
                .iter_rows())


def test_mirror_like_world_has_the_mirrors_judge_sample(mirror_statistics):
    world = _world_statistics(es.MIRROR_LIKE)
    far = {s: (round(mirror_statistics[s], 3), round(world[s], 3)) for s, tolerance in TOLERANCE.items()
           if not abs(world[s] - mirror_statistics[s]) <= tolerance}
    assert not far, far
    # the default world is the stress case: its benchmarks' misses share a major group far less often
    default = _world_statistics({})
    assert default["miss_pairs_same_major_group"] < mirror_statistics["miss_pairs_same_major_group"] - 0.2
    assert default["misses_in_new_group"] < mirror_statistics["misses_in_new_group"] / 2
    assert all(math.isfinite(v) for v in mirror_statistics.values())


def test_p_covered_check_runs_both_worlds():
    check = es.unit_coverage_check(None, n_draws=20, simulated=8, seed=11)
    assert set(check.pairs) == {"simulated", "simulated_mirror_like"}
    assert set(check.table["check"].unique().to_list()) == {"simulated", "simulated_mirror_like"}
    # the mirror-like world's units: 22 major groups, 880 occupations; the default world's 12 and 60
    sizes = {name: pairs.filter(pl.col("replication") == 0).group_by("unit").len()
             for name, pairs in check.pairs.items()}
    counts = {name: dict(frame.iter_rows()) for name, frame in sizes.items()}
    assert counts["simulated_mirror_like"]["major_group"] == 2 * 22  # two thresholds
    assert counts["simulated"]["major_group"] == 2 * 12
