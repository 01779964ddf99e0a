"""The estimators' count matrices: labels as truth, the labeler's calibrated draws, the design (expansion)
estimator, and the model-assisted multiple imputation (ModelAssisted)."""

from __future__ import annotations

import numpy as np

from models.estimates.problem import CALIBRATION_PRIOR, Problem, task_counts

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

    def draw(self, rng: np.random.Generator, factors: np.ndarray | None = None) -> np.ndarray:
        pr = self.problem
        g_p, r_p = self.g_p, self.r_p
        if factors is not None:
            g_p = np.minimum(1.0, g_p * factors[self.g_bench])
            r_p = np.minimum(1.0, r_p * factors[pr.text_bench[self.r_text]])
        flat = np.bincount(self.g_flat, weights=rng.binomial(self.g_n, g_p), minlength=pr.n_bench * pr.n_tasks)
        counts = flat.reshape(pr.n_bench, pr.n_tasks)
        if self.r_p.size:
            keep = rng.random(self.r_p.size) < r_p
            counts += task_counts(pr, self.r_text, self.r_task, self.r_mult * keep)
        return counts


def labeler_draw(problem: Problem, rng: np.random.Generator, grouped: GroupedLabels | None = None) -> np.ndarray:
    """One draw of the label set from the calibrated p_exercised (each label kept with its probability)."""
    if grouped is None:
        grouped = GroupedLabels(problem, np.arange(problem.lab_p.shape[0]))
    return grouped.draw(rng)


def _bootstrap_text_weights(problem: Problem, rng: np.random.Generator | None) -> np.ndarray:
    """Times each text is drawn in a stratified bootstrap of the judge sample (1 for every sampled text
    without `rng`; 0 for unsampled texts)."""
    weights = problem.text_sampled.astype(np.float64)
    if rng is None:
        return weights
    sampled = np.flatnonzero(problem.text_sampled)
    benches = problem.text_bench[sampled]
    out = np.zeros_like(weights)
    for b in np.unique(benches):
        members = sampled[benches == b]
        out[members] = rng.multinomial(members.size, np.full(members.size, 1.0 / members.size))
    return out


def design_counts(problem: Problem, rng: np.random.Generator | None = None) -> np.ndarray:
    """Expansion estimator of T[b, j] from the judge sample (one stratified bootstrap replicate with `rng`)."""
    n_texts = np.bincount(problem.text_bench, minlength=problem.n_bench).astype(float)
    n_sampled = np.bincount(problem.text_bench, weights=problem.text_sampled, minlength=problem.n_bench)
    expansion = np.divide(n_texts, n_sampled, out=np.zeros(np.shape(n_texts), dtype=float), where=n_sampled > 0)
    boot = _bootstrap_text_weights(problem, rng)
    text = problem.jud_text
    weight = expansion[problem.text_bench[text]] * boot[text] * problem.text_mult[text]
    return task_counts(problem, text, problem.jud_task, weight)


def calibration_factors(
    problem: Problem, boot: np.ndarray, prior: float = CALIBRATION_PRIOR, sampled_rows: np.ndarray | None = None
) -> np.ndarray:
    """a_b: judge-confirmed labels / expected labels on the (bootstrap-weighted) sampled texts' labeled pairs,
    shrunk to the pooled factor with `prior` expected labels of weight. `sampled_rows`: the label rows of
    sampled texts (computed when not given)."""
    if sampled_rows is None:
        sampled_rows = np.flatnonzero(problem.text_sampled[problem.lab_text])
    text = problem.lab_text[sampled_rows]
    w = boot[text] * problem.text_mult[text]
    bench = problem.text_bench[text]
    expected = np.bincount(bench, weights=w * problem.lab_p[sampled_rows], minlength=problem.n_bench)
    jw = boot[problem.jud_text] * problem.text_mult[problem.jud_text] * problem.jud_in_labels
    confirmed = np.bincount(problem.text_bench[problem.jud_text], weights=jw, minlength=problem.n_bench)
    pooled = confirmed.sum() / expected.sum() if expected.sum() > 0 else 1.0
    return (confirmed + prior * pooled) / (expected + prior)


UNIFORM_SHARE = 0.01  # share of the missed-label distribution uniform over every task (no task has zero chance)
MIX_STEP = 0.1  # grid step of the mixture weights (a simplex of three weights)


def _simplex_grid(parts: int, step: float = MIX_STEP) -> np.ndarray:
    """Every weight vector of `parts` non-negative weights on a grid of `step` that sums to 1."""
    n = int(round(1 / step))
    rows: list[tuple[int, ...]] = [()]
    for _ in range(parts - 1):
        rows = [r + (i,) for r in rows for i in range(n + 1 - sum(r))]
    return np.array([(*r, n - sum(r)) for r in rows], dtype=float) / n


class _Sparse:
    """A discrete distribution kept as its non-zero entries and their cumulative mass (the distributions here
    have a few hundred non-zero entries of 18,796): `sample` is one searchsorted, far cheaper than
    rng.choice(p=) over every task."""

    def __init__(self, dist: np.ndarray) -> None:
        self.support = np.flatnonzero(dist)
        self.cdf = np.cumsum(dist[self.support])
        self.total = float(self.cdf[-1]) if self.cdf.size else 0.0

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        pos = np.searchsorted(self.cdf, rng.random(size) * self.total, side="right")
        return self.support[np.minimum(pos, self.support.size - 1)]


def _loo_share(texts: np.ndarray, values: np.ndarray, n_values: int, total_loo: np.ndarray) -> np.ndarray:
    """Each row's value's share among the other texts' rows (leave its own text out)."""
    counts = np.bincount(values, minlength=n_values).astype(float)
    _, inverse = np.unique(texts.astype(np.int64) * n_values + values, return_inverse=True)
    own = np.bincount(inverse)[inverse]
    return np.divide(counts[values] - own, total_loo, out=np.zeros(values.size), where=total_loo > 0)


class _WeightedBlocks:
    """Discrete distributions over occupations, one per owner (a text, or a benchmark), as sorted CSR rows:
    owner, occupation, weight. `draw(owners)` picks one occupation per entry by its owner's weights."""

    def __init__(self, owner: np.ndarray, occ: np.ndarray, weight: np.ndarray, n_owners: int, n_occ: int) -> None:
        keys, inverse = np.unique(owner.astype(np.int64) * n_occ + occ, return_inverse=True)
        self.n_occ = n_occ
        self.keys = keys
        self.owner = keys // n_occ
        self.occ = keys % n_occ
        self.weight = np.bincount(inverse, weights=weight, minlength=keys.size)
        self.cum = np.cumsum(self.weight)
        self.first = np.searchsorted(self.owner, np.arange(n_owners))
        self.last = np.searchsorted(self.owner, np.arange(n_owners), side="right")
        self.total = np.bincount(self.owner, weights=self.weight, minlength=n_owners)

    def has(self, owners: np.ndarray) -> np.ndarray:
        return self.last[owners] > self.first[owners]

    def share(self, owners: np.ndarray, occ: np.ndarray) -> np.ndarray:
        """Each owner's weight share of `occ` (0 where the owner has none)."""
        keys = owners.astype(np.int64) * self.n_occ + occ
        pos = np.minimum(np.searchsorted(self.keys, keys), max(self.keys.size - 1, 0))
        hit = self.keys[pos] == keys if self.keys.size else np.zeros(keys.shape, dtype=bool)
        weight = np.where(hit, self.weight[pos] if self.keys.size else 0.0, 0.0)
        total = self.total[owners]
        return np.divide(weight, total, out=np.zeros(weight.shape), where=total > 0)

    def draw(self, rng: np.random.Generator, owners: np.ndarray) -> np.ndarray:
        """One occupation per owner (owners without a distribution: -1)."""
        first, last = self.first[owners], self.last[owners]
        has = last > first
        out = np.full(owners.size, -1, dtype=np.int64)
        if not has.any():
            return out
        lo = np.where(first > 0, self.cum[np.maximum(first - 1, 0)], 0.0)  # mass before each owner's block
        value = lo[has] + rng.random(int(has.sum())) * self.total[owners[has]]
        pos = np.clip(np.searchsorted(self.cum, value, side="right"), first[has], last[has] - 1)
        out[has] = self.occ[pos]
        return out


class ModelAssisted:
    """Multiple imputation of the judge's labels on unsampled texts (see the module docstring).

    Missed labels (the judge's tasks outside the labeler's set) of an unsampled text: their number is that of
    a random donor (a sampled text of the same benchmark, bootstrap-weighted); each one's task is drawn from a
    mixture of four parts: u uniform over every task; and, with weights (alpha, beta, gamma) chosen on the
    sample, (alpha) the benchmark's sampled missed tasks, (beta) the labeler's label mass in the benchmark
    (sum of m p per task), (gamma) a task of one of *this text's* labeled occupations (picked by its labels'
    p, the task uniform within it; a text without labels uses its benchmark's occupations). The weights
    maximise the leave-one-text-out likelihood of the sample's missed tasks, so the data decide how often a
    miss is a task seen before in the benchmark and how often a new task of the occupation the labeler saw.
    The occupation part matters for the threshold counts: the judge's misses are mostly tasks no other
    sampled text has, and only a part that spreads over whole occupations reproduces that diversity (the
    first version, with alpha and beta alone, undercounted tasks at >= 1 by a third and overcounted them at
    >= 5 by a quarter in the split-sample check).
    """

    def __init__(self, problem: Problem, prior: float = CALIBRATION_PRIOR) -> None:
        self.problem = problem
        self.prior = prior
        pr = problem
        self.has_sample = np.bincount(pr.text_bench, weights=pr.text_sampled, minlength=pr.n_bench) > 0
        # labeled pairs of texts that are not in the sample (imputed); judge pairs of sampled texts (kept)
        self.unsampled_rows = ~pr.text_sampled[pr.lab_text]
        self.unsampled_labels = GroupedLabels(pr, np.flatnonzero(self.unsampled_rows))
        self.sampled_rows = np.flatnonzero(~self.unsampled_rows)
        self.judge_known = task_counts(pr, pr.jud_text, pr.jud_task, pr.text_mult[pr.jud_text])
        missed = ~pr.jud_in_labels
        self.missed_text = pr.jud_text[missed]
        self.missed_task = pr.jud_task[missed]
        self.missed_per_text = np.bincount(self.missed_text, minlength=pr.text_bench.shape[0]).astype(np.int64)
        lab_mass = task_counts(pr, pr.lab_text, pr.lab_task, pr.text_mult[pr.lab_text] * pr.lab_p)
        totals = lab_mass.sum(axis=1, keepdims=True)
        self.q_labeler = np.divide(lab_mass, totals, out=np.zeros(np.shape(lab_mass), dtype=float), where=totals > 0)
        self.lab_sparse = [_Sparse(row) for row in self.q_labeler]
        # the occupations of each text's labels, and of each benchmark's (for texts without labels)
        n_occ = pr.n_occ
        label_occ = pr.task_occ[pr.lab_task]
        p = np.maximum(pr.lab_p, 1e-6)
        self.text_occ = _WeightedBlocks(pr.lab_text, label_occ, p, pr.text_bench.shape[0], n_occ)
        self.bench_occ = _WeightedBlocks(pr.text_bench[pr.lab_text], label_occ, p * pr.text_mult[pr.lab_text],
                                         pr.n_bench, n_occ)
        self.occ_size = np.bincount(pr.task_occ, minlength=n_occ)
        self.occ_start = np.concatenate([[0], np.cumsum(self.occ_size)[:-1]])
        self.tasks_by_occ = np.argsort(pr.task_occ, kind="stable")
        task_group = pr.occ_group[pr.task_occ]
        self.group_size = np.bincount(task_group, minlength=pr.n_groups)
        self.group_start = np.concatenate([[0], np.cumsum(self.group_size)[:-1]])
        self.tasks_by_group = np.argsort(task_group, kind="stable")
        self.donors: dict[int, np.ndarray] = {}
        self.recipients: dict[int, np.ndarray] = {}
        for b in np.flatnonzero(self.has_sample):
            in_b = pr.text_bench == b
            self.donors[int(b)] = np.flatnonzero(in_b & pr.text_sampled)
            self.recipients[int(b)] = np.flatnonzero(in_b & ~pr.text_sampled)
        self.weights = self._choose_weights()
        self.label_keys = np.unique(pr.lab_text.astype(np.int64) * pr.n_tasks + pr.lab_task)
        self.missed_rows = {b: np.flatnonzero(pr.text_bench[self.missed_text] == b) for b in self.donors}

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
        product (`weights_for`): the draws carry the uncertainty of the mixture, not only of the sample."""
        pr = self.problem
        self.grid = _simplex_grid(5)
        self.loglik_texts = np.unique(self.missed_text)
        self.text_loglik = np.zeros((self.grid.shape[0], self.loglik_texts.size))
        if self.missed_text.size == 0:
            return np.array([0.0, 0.5, 0.5, 0.0, 0.0])
        k = pr.n_tasks
        for b in self.donors:
            rows = pr.text_bench[self.missed_text] == b
            if not rows.any():
                continue
            texts, tasks = self.missed_text[rows], self.missed_task[rows]
            occ = pr.task_occ[tasks]
            group = pr.occ_group[occ]
            own_total = np.bincount(texts, minlength=texts.max() + 1)[texts]
            total_loo = tasks.size - own_total
            parts = np.stack([
                _loo_share(texts, tasks, k, total_loo),
                self.q_labeler[b][tasks],
                self._occupation_share(texts, tasks),
                _loo_share(texts, occ, pr.n_occ, total_loo) / self.occ_size[occ],
                _loo_share(texts, group, pr.n_groups, total_loo) / self.group_size[group],
            ])  # (5, n)
            present = np.stack([total_loo > 0, np.full(tasks.size, self.q_labeler[b].sum() > 0),
                                np.ones(tasks.size, dtype=bool), total_loo > 0, total_loo > 0]).astype(float)
            w = self.grid[:, :, None] * present[None]  # (G, 5, n)
            norm = w.sum(axis=1)
            mix = np.divide((w * parts[None]).sum(axis=1), norm, out=np.full(norm.shape, 1.0 / k), where=norm > 0)
            row_loglik = np.log(UNIFORM_SHARE / k + (1 - UNIFORM_SHARE) * mix)  # (G, n)
            column = np.searchsorted(self.loglik_texts, texts)
            for g in range(self.grid.shape[0]):
                self.text_loglik[g] += np.bincount(column, weights=row_loglik[g], minlength=self.loglik_texts.size)
        return self.grid[int(np.argmax(self.text_loglik.sum(axis=1)))]

    def weights_for(self, boot: np.ndarray) -> np.ndarray:
        """The mixture weights a bootstrap replicate of the sample (times each text is drawn) would choose."""
        if self.loglik_texts.size == 0:
            return self.weights
        return self.grid[int(np.argmax(self.text_loglik @ boot[self.loglik_texts]))]

    def _draw_tasks(self, rng: np.random.Generator, b: int, owner: np.ndarray, empirical: _Sparse,
                    missed_occ: _Sparse, missed_group: _Sparse, mixture: np.ndarray) -> np.ndarray:
        """One task per missed label of `owner` texts of benchmark b, from the mixture with weights `mixture`
        (a part without mass in this benchmark gives its weight to the others)."""
        pr = self.problem
        weights = mixture.copy()
        lab = self.lab_sparse[b]
        if empirical.total <= 0:
            weights[[0, 3, 4]] = 0.0
        if lab.total <= 0:
            weights[1] = 0.0
        weights = weights / weights.sum() if weights.sum() > 0 else np.array([0.0, 0.0, 1.0, 0.0, 0.0])
        part = rng.choice(6, size=owner.size, p=np.concatenate([[UNIFORM_SHARE], (1 - UNIFORM_SHARE) * weights]))
        tasks = rng.integers(0, pr.n_tasks, size=owner.size)  # part 0: uniform
        for code, dist in ((1, empirical), (2, lab)):
            chosen = part == code
            if chosen.any():
                tasks[chosen] = dist.sample(rng, int(chosen.sum()))
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
            occ[chosen] = missed_occ.sample(rng, int(chosen.sum()))
        chosen = part == 5  # a task uniform within a major group of the benchmark's missed labels
        if chosen.any():
            group = missed_group.sample(rng, int(chosen.sum()))
            offset = (rng.random(group.size) * self.group_size[group]).astype(np.int64)
            tasks[chosen] = self.tasks_by_group[self.group_start[group] + offset]
        spread = occ >= 0  # a task uniform within the drawn occupation
        if spread.any():
            o = occ[spread]
            offset = (rng.random(o.size) * self.occ_size[o]).astype(np.int64)
            tasks[spread] = self.tasks_by_occ[self.occ_start[o] + offset]
        return tasks

    def draw(self, rng: np.random.Generator, bootstrap: bool = True) -> np.ndarray:
        pr = self.problem
        boot = _bootstrap_text_weights(pr, rng if bootstrap else None)
        factors = calibration_factors(pr, boot, self.prior, self.sampled_rows)
        mixture = self.weights_for(boot) if bootstrap else self.weights
        counts = self.unsampled_labels.draw(rng, np.where(self.has_sample, factors, 1.0))
        counts[self.has_sample] += self.judge_known[self.has_sample]
        k = pr.n_tasks
        for b, donors in self.donors.items():
            recipients = self.recipients[b]
            if recipients.size == 0:
                continue
            probs = boot[donors] / boot[donors].sum()
            choice = rng.choice(donors.size, size=recipients.size, p=probs)
            n_missed = self.missed_per_text[donors][choice]
            if int(n_missed.sum()) == 0:
                continue
            rows = self.missed_rows[b]
            boot_rows = boot[self.missed_text[rows]]
            seen = _Sparse(np.bincount(self.missed_task[rows], weights=boot_rows, minlength=k))
            occ_mass = np.bincount(pr.task_occ[self.missed_task[rows]], weights=boot_rows, minlength=pr.n_occ)
            missed_occ = _Sparse(occ_mass)
            missed_group = _Sparse(np.bincount(pr.occ_group, weights=occ_mass, minlength=pr.n_groups))
            owner = np.repeat(recipients, n_missed)
            weights = pr.text_mult[owner]
            tasks = self._draw_tasks(rng, b, owner, seen, missed_occ, missed_group, mixture)
            # a missed label is by definition outside the recipient's own label set: redraw those that are not
            for _ in range(4):
                clash = self._labeled(owner, tasks)
                if not clash.any():
                    break
                tasks[clash] = self._draw_tasks(rng, b, owner[clash], seen, missed_occ, missed_group, mixture)
            else:
                weights = weights * ~self._labeled(owner, tasks)
            counts[b] += np.bincount(tasks, weights=weights, minlength=k)
        return counts
