"""The estimators' count matrices: labels as truth, the labeler's calibrated draws, the design (expansion)
estimator, and the model-assisted multiple imputation (ModelAssisted)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from functools import cache
from typing import Any, cast

import numpy as np
from threadpoolctl import ThreadpoolController  # installed with scikit-learn

from models.estimates.problem import CALIBRATION_PRIOR, Problem, sorted_unique, task_counts
from models.estimates.streams import DrawStreams, Rng, as_streams
from models.estimates.weighted_blocks import WeightedBlocks, loo_share, simplex_grid


@cache
def _thread_pools() -> ThreadpoolController:
    return ThreadpoolController()


def one_blas_thread() -> AbstractContextManager[None]:
    """A context in which BLAS runs on one thread. The draws' products are small (a 1,001 x 600 matrix times a
    vector: 0.2 CPU-ms on one thread, 4.4 on two, start-up and spin), once per draw. A cached controller limits
    in 0.01 ms (threadpool_limits() looks the libraries up again: 0.4 ms)."""
    return cast(AbstractContextManager[None], _thread_pools().limit(limits=1, user_api="blas"))


# --- the estimators -------------------------------------------------------------------------------------------


def labels_as_truth_counts(problem: Problem) -> np.ndarray:
    return task_counts(problem, problem.lab_text, problem.lab_task, problem.text_mult[problem.lab_text])


class GroupedLabels:
    """Label rows grouped by (benchmark, task) for fast draws: a group of n single-prompt texts with expected
    labels sum(p) draws Binomial(n, mean p) (same mean as the sum of its Bernoulli draws, variance a little
    larger: conservative), texts shared by several prompts are drawn row by row. A draw costs O(groups),
    not O(label rows), so 10x the prompts costs about the same."""

    def __init__(self, problem: Problem, rows: np.ndarray) -> None:
        self.problem = problem
        k = problem.n_tasks
        text, task, p = problem.lab_text[rows], problem.lab_task[rows], problem.lab_p[rows]
        mult = problem.text_mult[text]
        single = mult == 1
        flat = problem.text_bench[text[single]] * k + task[single]
        groups, inverse = np.unique(flat, return_inverse=True)
        self.g_flat = groups
        self.g_bench = groups // k
        self.g_n = np.bincount(inverse, minlength=groups.size).astype(np.int64)
        self.g_p = np.bincount(inverse, weights=p[single], minlength=groups.size) / np.maximum(self.g_n, 1)
        self.r_text, self.r_task, self.r_p = text[~single], task[~single], p[~single]
        self.r_mult = mult[~single]
        self.r_bench = problem.text_bench[self.r_text]

    def draw(self, rng: Rng, factors: np.ndarray | None = None) -> np.ndarray:
        pr = self.problem
        streams = as_streams(rng)
        g_p, r_p = self.g_p, self.r_p
        if factors is not None:
            g_p = np.minimum(1.0, g_p * factors[self.g_bench])
            r_p = np.minimum(1.0, r_p * factors[pr.text_bench[self.r_text]])
        flat = np.bincount(self.g_flat, weights=streams.binomial(self.g_n, g_p, self.g_bench),
                           minlength=pr.n_bench * pr.n_tasks)
        # float like every count matrix (weighted bincounts): with no group at all (every text judged) numpy
        # gives int64, and adding the judged texts' counts failed
        counts = flat.reshape(pr.n_bench, pr.n_tasks).astype(np.float64, copy=False)
        if self.r_p.size:
            keep = streams.random(self.r_bench) < r_p
            counts += task_counts(pr, self.r_text, self.r_task, self.r_mult * keep)
        return counts


def labeler_draw(problem: Problem, rng: Rng, grouped: GroupedLabels | None = None) -> np.ndarray:
    """One draw of the label set from the calibrated p_exercised (each label kept with its probability)."""
    if grouped is None:
        grouped = GroupedLabels(problem, np.arange(problem.lab_p.shape[0]))
    return grouped.draw(rng)


class StratifiedBootstrap:
    """A stratified bootstrap of the judge sample: each benchmark's n_b sampled texts are drawn n_b times with
    replacement. One uniform per draw, all benchmarks at once (the multinomial of each benchmark, vectorised)."""

    def __init__(self, problem: Problem) -> None:
        sampled = np.flatnonzero(problem.text_sampled)
        order = np.argsort(problem.text_bench[sampled], kind="stable")
        self.sampled = sampled[order]
        bench = self.bench = problem.text_bench[self.sampled]
        size = np.bincount(bench, minlength=problem.n_bench)
        self.start = (np.cumsum(size) - size)[bench]  # first position of each draw's benchmark
        self.size = size[bench]
        self.n_texts = problem.text_bench.shape[0]

    def draw(self, rng: Rng | None) -> np.ndarray:
        """Times each text is drawn (1 for every sampled text without `rng`; 0 for unsampled texts)."""
        out = np.zeros(self.n_texts)
        if rng is None:
            out[self.sampled] = 1.0
            return out
        offset = np.minimum((as_streams(rng).random(self.bench) * self.size).astype(np.int64), self.size - 1)
        out[self.sampled] = np.bincount(self.start + offset, minlength=self.sampled.size)
        return out


def design_counts(problem: Problem, rng: Rng | None = None,
                  bootstrap: StratifiedBootstrap | None = None) -> np.ndarray:
    """Expansion estimator of T[b, j] from the judge sample (one stratified bootstrap replicate with `rng`;
    `bootstrap`: a prepared StratifiedBootstrap of `problem`, to draw many)."""
    n_texts = np.bincount(problem.text_bench, minlength=problem.n_bench).astype(float)
    n_sampled = np.bincount(problem.text_bench, weights=problem.text_sampled, minlength=problem.n_bench)
    expansion = np.divide(n_texts, n_sampled, out=np.zeros(np.shape(n_texts), dtype=float), where=n_sampled > 0)
    boot = (bootstrap or StratifiedBootstrap(problem)).draw(rng)
    text = problem.jud_text
    weight = expansion[problem.text_bench[text]] * boot[text] * problem.text_mult[text]
    return task_counts(problem, text, problem.jud_task, weight)


def calibration_factors(
    problem: Problem, boot: np.ndarray, prior: float = CALIBRATION_PRIOR, sampled_rows: np.ndarray | None = None,
    with_pooled: bool = False,
) -> Any:
    """a_b: judge-confirmed labels / expected labels on the (bootstrap-weighted) sampled texts' labeled pairs,
    shrunk to the pooled factor with `prior` expected labels of weight. `sampled_rows`: the label rows of
    sampled texts (computed when not given). `with_pooled`: (a_b, the pooled factor)."""
    if sampled_rows is None:
        sampled_rows = np.flatnonzero(problem.text_sampled[problem.lab_text])
    text = problem.lab_text[sampled_rows]
    w = boot[text] * problem.text_mult[text]
    bench = problem.text_bench[text]
    expected = np.bincount(bench, weights=w * problem.lab_p[sampled_rows], minlength=problem.n_bench)
    jw = boot[problem.jud_text] * problem.text_mult[problem.jud_text] * problem.jud_in_labels
    confirmed = np.bincount(problem.text_bench[problem.jud_text], weights=jw, minlength=problem.n_bench)
    pooled = confirmed.sum() / expected.sum() if expected.sum() > 0 else 1.0
    if with_pooled:
        return (confirmed + prior * pooled) / (expected + prior), float(pooled)
    return (confirmed + prior * pooled) / (expected + prior)


UNIFORM_SHARE = 0.01  # share of the missed-label distribution uniform over every task (no task has zero chance)


class ModelAssisted:
    """Multiple imputation of the judge's labels on unsampled texts (see the module docstring).

    Missed labels (the judge's tasks outside the labeler's set) of an unsampled text: their number is that of
    a random donor (a sampled text of the same benchmark, bootstrap-weighted); each one's task is drawn from a
    mixture: u uniform over every task and, with weights chosen on the sample, (0) the benchmark's sampled
    missed tasks, (1) the labeler's label mass in the benchmark (sum of m p per task), (2) a task of one of
    *this text's* labeled occupations (picked by its labels' p, the task uniform within it; a text without
    labels uses its benchmark's occupations), (3) a task of one of the benchmark's missed occupations, (4) a
    task of one of its missed major groups. The weights maximise the leave-one-text-out likelihood of the
    sample's missed tasks, so the data decide how often a miss is a task seen before in the benchmark and how
    often a new task of an occupation seen there. The spread parts matter for the threshold counts: the
    judge's misses are mostly tasks no other sampled text has, and only parts that spread over whole
    occupations reproduce that diversity (with parts 0 and 1 alone, tasks at >= 1 came out a third too low and
    at >= 5 a quarter too high in the split-sample check).

    A draw is vectorised over benchmarks: every per-benchmark distribution (donors, sampled misses, their
    occupations and groups, the labeler's mass) is one block of a WeightedBlocks, reweighted by the draw's
    bootstrap, so its cost does not grow with the number of benchmarks or texts beyond a few array passes.
    """

    def __init__(self, problem: Problem, prior: float = CALIBRATION_PRIOR) -> None:
        self.problem = problem
        self.prior = prior
        pr = problem
        n_texts = pr.text_bench.shape[0]
        self.has_sample = np.bincount(pr.text_bench, weights=pr.text_sampled, minlength=pr.n_bench) > 0
        self.bootstrap = StratifiedBootstrap(pr)
        # labeled pairs of texts that are not in the sample (imputed); judge pairs of sampled texts (kept)
        self.unsampled_rows = ~pr.text_sampled[pr.lab_text]
        self.unsampled_labels = GroupedLabels(pr, np.flatnonzero(self.unsampled_rows))
        self.sampled_rows = np.flatnonzero(~self.unsampled_rows)
        self.judge_known = task_counts(pr, pr.jud_text, pr.jud_task, pr.text_mult[pr.jud_text])
        missed = ~pr.jud_in_labels
        self.missed_text = pr.jud_text[missed]
        self.missed_task = pr.jud_task[missed]
        self.missed_per_text = np.bincount(self.missed_text, minlength=n_texts).astype(np.int64)
        lab_mass = task_counts(pr, pr.lab_text, pr.lab_task, pr.text_mult[pr.lab_text] * pr.lab_p)
        totals = lab_mass.sum(axis=1, keepdims=True)
        self.q_labeler = np.divide(lab_mass, totals, out=np.zeros(np.shape(lab_mass), dtype=float), where=totals > 0)
        lab_bench = pr.text_bench[pr.lab_text]
        self.lab_mass = WeightedBlocks(lab_bench, pr.lab_task, pr.text_mult[pr.lab_text] * pr.lab_p, pr.n_bench,
                                        pr.n_tasks)
        # the occupations of each text's labels, and of each benchmark's (for texts without labels)
        n_occ = pr.n_occ
        label_occ = pr.task_occ[pr.lab_task]
        p = np.maximum(pr.lab_p, 1e-6)
        self.text_occ = WeightedBlocks(pr.lab_text, label_occ, p, n_texts, n_occ, owner_bench=pr.text_bench)
        self.bench_occ = WeightedBlocks(lab_bench, label_occ, p * pr.text_mult[pr.lab_text], pr.n_bench, n_occ)
        self.occ_size = np.bincount(pr.task_occ, minlength=n_occ)
        self.occ_start = np.concatenate([[0], np.cumsum(self.occ_size)[:-1]])
        self.tasks_by_occ = np.argsort(pr.task_occ, kind="stable")
        task_group = pr.occ_group[pr.task_occ]
        self.group_size = np.bincount(task_group, minlength=pr.n_groups)
        self.group_start = np.concatenate([[0], np.cumsum(self.group_size)[:-1]])
        self.tasks_by_group = np.argsort(task_group, kind="stable")
        # donors (sampled texts) per benchmark, as blocks whose values are positions in `donors`
        self.donors = np.flatnonzero(pr.text_sampled & self.has_sample[pr.text_bench])
        self.donor_blocks = WeightedBlocks(pr.text_bench[self.donors], np.arange(self.donors.size),
                                            np.ones(self.donors.size), pr.n_bench, max(self.donors.size, 1))
        self.recipients = np.flatnonzero(~pr.text_sampled & self.has_sample[pr.text_bench])
        # the sample's missed tasks, their occupations and major groups per benchmark (reweighted per draw)
        missed_bench = pr.text_bench[self.missed_text]
        missed_occ = pr.task_occ[self.missed_task]
        ones = np.ones(self.missed_task.size)
        self.seen = WeightedBlocks(missed_bench, self.missed_task, ones, pr.n_bench, pr.n_tasks)
        self.seen_occ = WeightedBlocks(missed_bench, missed_occ, ones, pr.n_bench, n_occ)
        self.seen_group = WeightedBlocks(missed_bench, pr.occ_group[missed_occ], ones, pr.n_bench, pr.n_groups)
        self.weights = self._choose_weights()
        self.label_keys = sorted_unique(pr.lab_text.astype(np.int64) * pr.n_tasks + pr.lab_task)

    @property
    def alpha(self) -> float:
        return float(self.weights[0])

    def _labeled(self, texts: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        keys = texts.astype(np.int64) * self.problem.n_tasks + tasks
        pos = np.searchsorted(self.label_keys, keys)
        pos = np.minimum(pos, max(self.label_keys.size - 1, 0))
        return self.label_keys[pos] == keys if self.label_keys.size else np.zeros(keys.shape, dtype=bool)

    def _occupation_share(self, texts: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        """The occupation part's probability of each task for its text: its occupation's share of the text's
        labels (else of its benchmark's), spread uniformly over the occupation's tasks."""
        pr = self.problem
        occ = pr.task_occ[tasks]
        own = self.text_occ.has(texts)
        share = np.where(own, self.text_occ.share(texts, occ), self.bench_occ.share(pr.text_bench[texts], occ))
        none = ~own & ~self.bench_occ.has(pr.text_bench[texts])
        return np.where(none, 1.0 / pr.n_tasks, share / self.occ_size[occ])

    def _choose_weights(self) -> np.ndarray:
        """Weights of the five parts (the benchmark's missed tasks, the labeler's mass, the text's labeled
        occupations, the benchmark's missed occupations and major groups) maximising the leave-one-text-out log
        likelihood of the sample's missed tasks, q = u / K + (1 - u) sum_i w_i part_i(task); a part with no
        mass for a text gives its weight to the others. Keeps each sampled text's log likelihood per grid
        point (`text_loglik`), so a bootstrap replicate of the sample re-chooses the weights by one matrix
        product (`weights_for`): the draws carry the uncertainty of the mixture, not only of the sample.
        Every missed row of every benchmark at once: the leave-one-out shares are counts per (benchmark,
        value) minus the row's own text's, and the grid's mixtures are two matrix products."""
        pr = self.problem
        self.grid = simplex_grid(5)
        self.loglik_texts = np.unique(self.missed_text)
        self.text_loglik = np.zeros((self.grid.shape[0], self.loglik_texts.size))
        if self.missed_text.size == 0:
            return np.array([0.0, 0.5, 0.5, 0.0, 0.0])
        k = pr.n_tasks
        texts, tasks = self.missed_text, self.missed_task
        bench = pr.text_bench[texts]
        occ = pr.task_occ[tasks]
        group = pr.occ_group[occ]
        own_total = np.bincount(texts, minlength=texts.max() + 1)[texts]
        total_loo = np.bincount(bench, minlength=pr.n_bench)[bench] - own_total
        lab_total = self.lab_mass.total[bench]
        parts = np.stack([
            loo_share(texts, bench, tasks, k, total_loo),
            self.q_labeler[bench, tasks],
            self._occupation_share(texts, tasks),
            loo_share(texts, bench, occ, pr.n_occ, total_loo) / self.occ_size[occ],
            loo_share(texts, bench, group, pr.n_groups, total_loo) / self.group_size[group],
        ])  # (5, n)
        present = np.stack([total_loo > 0, lab_total > 0, np.ones(tasks.size, dtype=bool), total_loo > 0,
                            total_loo > 0]).astype(float)
        with one_blas_thread():  # (G, 5) x (5, n): a second thread only spins
            norm = self.grid @ present  # (G, n)
            weighted = self.grid @ (present * parts)
        mix = np.divide(weighted, norm, out=np.full(norm.shape, 1.0 / k), where=norm > 0)
        row_loglik = np.log(UNIFORM_SHARE / k + (1 - UNIFORM_SHARE) * mix)  # (G, n)
        column = np.searchsorted(self.loglik_texts, texts)
        order = np.argsort(column, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(column[order]) != 0])
        self.text_loglik = np.add.reduceat(row_loglik[:, order], starts, axis=1)
        return self.grid[int(np.argmax(self.text_loglik.sum(axis=1)))]

    def weights_for(self, boot: np.ndarray) -> np.ndarray:
        """The mixture weights a bootstrap replicate of the sample (times each text is drawn) would choose."""
        if self.loglik_texts.size == 0:
            return self.weights
        with one_blas_thread():
            return self.grid[int(np.argmax(self.text_loglik @ boot[self.loglik_texts]))]

    def _part_cdf(self, mixture: np.ndarray, seen: WeightedBlocks) -> np.ndarray:
        """(B, 6) cumulative probabilities of the parts per benchmark (uniform first); a part without mass in a
        benchmark gives its weight to the others."""
        weights = np.tile(mixture, (self.problem.n_bench, 1))
        weights[np.ix_(seen.total <= 0, [0, 3, 4])] = 0.0
        weights[self.lab_mass.total <= 0, 1] = 0.0
        norm = weights.sum(axis=1, keepdims=True)
        weights = np.where(norm > 0, weights / np.where(norm > 0, norm, 1.0), np.array([0.0, 0.0, 1.0, 0.0, 0.0]))
        probs = np.concatenate([np.full((weights.shape[0], 1), UNIFORM_SHARE), (1 - UNIFORM_SHARE) * weights], axis=1)
        cdf = np.cumsum(probs, axis=1)
        return cdf / cdf[:, -1:]

    def _draw_tasks(self, rng: Rng, owner: np.ndarray, cdf: np.ndarray,
                    blocks: tuple[WeightedBlocks, WeightedBlocks, WeightedBlocks]) -> np.ndarray:
        """One task per missed label of the `owner` texts, from their benchmarks' mixtures (`cdf`, _part_cdf);
        `blocks`: this draw's sampled misses, their occupations and major groups."""
        pr = self.problem
        rng = as_streams(rng)
        seen, seen_occ, seen_group = blocks
        bench = pr.text_bench[owner]
        part = np.minimum((rng.random(bench)[:, None] >= cdf[bench]).sum(axis=1), cdf.shape[1] - 1)
        tasks = rng.integers(pr.n_tasks, bench)  # part 0: uniform
        for code, dist in ((1, seen), (2, self.lab_mass)):
            chosen = part == code
            if chosen.any():
                tasks[chosen] = dist.draw(rng, bench[chosen])
        occ = np.full(owner.size, -1, dtype=np.int64)
        chosen = part == 3
        if chosen.any():
            texts = owner[chosen]
            picked = self.text_occ.draw(rng, texts)
            fallback = picked < 0
            if fallback.any():
                picked[fallback] = self.bench_occ.draw(rng, pr.text_bench[texts[fallback]])
            occ[chosen] = picked
        chosen = part == 4
        if chosen.any():
            occ[chosen] = seen_occ.draw(rng, bench[chosen])
        chosen = part == 5  # a task uniform within a major group of the benchmark's missed labels
        if chosen.any():
            group = seen_group.draw(rng, bench[chosen])
            offset = (rng.random(bench[chosen]) * self.group_size[group]).astype(np.int64)
            tasks[chosen] = self.tasks_by_group[self.group_start[group] + offset]
        spread = occ >= 0  # a task uniform within the drawn occupation
        if spread.any():
            o = occ[spread]
            offset = (rng.random(bench[spread]) * self.occ_size[o]).astype(np.int64)
            tasks[spread] = self.tasks_by_occ[self.occ_start[o] + offset]
        return tasks

    def parameters(self, rng: Rng | DrawStreams, bootstrap: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A draw's (bootstrap weights, calibration factors, mixture weights); kept as `last_parameters` so the
        per-text estimates (models.estimates.texts) follow the very draws the headline makes."""
        boot_rng = rng.boot if isinstance(rng, DrawStreams) else rng
        boot = self.bootstrap.draw(boot_rng if bootstrap else None)
        factors = calibration_factors(self.problem, boot, self.prior, self.sampled_rows)
        mixture = self.weights_for(boot) if bootstrap else self.weights
        self.last_parameters = (boot, factors, mixture)
        return boot, factors, mixture

    def draw(self, rng: Rng | DrawStreams, bootstrap: bool = True,
             parameters: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """One imputed count matrix. `rng`: a Generator, or DrawStreams (per-benchmark streams: `parameters`, the
        pooled (bootstrap, factors, mixture) of this draw, are then given: models/estimates/bench_draws.py)."""
        pr = self.problem
        if parameters is not None:
            boot, factors, mixture = self.last_parameters = parameters
        else:
            boot, factors, mixture = self.parameters(rng, bootstrap)
        streams = as_streams(rng.draw if isinstance(rng, DrawStreams) else rng)
        counts = self.unsampled_labels.draw(streams, np.where(self.has_sample, factors, 1.0))
        counts += self.judge_known  # judged texts are sampled: a benchmark without a sample has a row of zeros
        # (per benchmark: a benchmark's numbers must not depend on whether another one has misses)
        if self.recipients.size == 0 or (self.missed_task.size == 0 and not streams.per_benchmark):
            return counts
        # each unsampled text takes as many missed labels as a random donor of its benchmark
        donors = self.donor_blocks.reweighted(boot[self.donors])
        donor = self.donors[donors.draw(streams, pr.text_bench[self.recipients])]
        owner = np.repeat(self.recipients, self.missed_per_text[donor])
        row_boot = boot[self.missed_text]
        blocks = (self.seen.reweighted(row_boot), self.seen_occ.reweighted(row_boot),
                  self.seen_group.reweighted(row_boot))
        cdf = self._part_cdf(mixture, blocks[0])
        tasks = self._draw_tasks(streams, owner, cdf, blocks)
        weights = pr.text_mult[owner].copy()
        # a missed label is by definition outside the recipient's own label set: redraw those that are not (up to
        # 4 times; only the redrawn rows are checked again, the others cannot have changed)
        clash = np.flatnonzero(self._labeled(owner, tasks))
        for _ in range(4):
            if clash.size == 0:
                break
            tasks[clash] = self._draw_tasks(streams, owner[clash], cdf, blocks)
            clash = clash[self._labeled(owner[clash], tasks[clash])]
        weights[clash] = 0.0
        # added in place (counts are whole numbers of prompts: exact in any order), not a dense B x K bincount
        np.add.at(counts, (pr.text_bench[owner], tasks), weights)
        return counts
