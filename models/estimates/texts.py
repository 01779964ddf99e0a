"""Per-text occupation estimates (issue 25, item 2): the share of the headline's draws in which a text exercises
an occupation.

A text the judge read keeps its judge labels (p = 1 for its occupations, 0 for every other). For any other text,
each model-assisted draw d (ModelAssisted: a bootstrap of the judge sample, calibration factors a_b, mixture
weights of the miss model) makes the text exercise occupation o unless none of its labels in o is kept and none
of its missed labels falls in o. Given the draw's parameters these are independent, so the draw's probability
is computed exactly instead of sampled (Rao-Blackwell: the same expectation as the share of draws, without the
per-draw sampling noise, and no Python loop per text):

    P_d(t, o) = 1 - prod_{labels of t in o} (1 - min(1, a_b p)) * sum_n pi_b(n) (1 - q_t(o))^n

pi_b: the number of missed labels of a donor (a judged text of the benchmark, bootstrap-weighted); q_t(o): the
miss mixture's probability of a task of o for this text (uniform part, the benchmark's sampled misses and their
occupations and major groups, the labeler's mass, the text's own labeled occupations). p = mean over draws.
Two approximations, both small: a missed task already among the text's labels is redrawn in the draws and not
here, and prompts sharing a text are not told apart (one text, one probability).

A benchmark without judge-sampled texts: its labels are recalibrated by the pooled factor (calibration_factors
shrinks an empty benchmark to it) and its texts get misses from the pooled donors, their tasks from the
labeler's mass and the text's own occupations (the parts that need no sample of the benchmark). The headline and
the per-unit tables count such a benchmark through the labeler alone; the per-text table is the better guess
for one text.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from models.estimates.draws import ModelAssisted, calibration_factors
from models.estimates.problem import Problem
from models.estimates.units import occupation_codes
from models.sliced_frame import SLICE_ROWS, SlicedFrame

P_MIN = 0.01  # the table keeps a text's occupations with p at least this (sparse)
PROMPT_OCCUPATION_SCHEMA: dict[str, pl.DataType] = {
    "prompt_hash": pl.Utf8(),
    "benchmark": pl.Utf8(),
    "onet_soc_code": pl.Utf8(),
    "p": pl.Float64(),
    "p_calibrated": pl.Float64(),
    "judged": pl.Boolean(),
}


class TextOccupationDraws:
    """Accumulates P_d(t, o) over the draws of one ModelAssisted (see the module docstring)."""

    def __init__(self, assisted: ModelAssisted, texts: np.ndarray | None = None, groups: int = 1) -> None:
        """`texts`: only these texts' probabilities (the calibration check's held-out texts; the arithmetic per
        text is the same, the other texts' and benchmarks' are skipped); None: every text. `groups` > 1 also
        keeps the sums of draw d in group d % groups, so `long_frame(leave_out=g)` gives p without group g (a
        jackknife of the Monte Carlo error)."""
        pr = assisted.problem
        self.assisted = assisted
        self.problem = pr
        n_occ, n_bench = pr.n_occ, pr.n_bench
        self.only = np.ones(pr.text_bench.size, dtype=bool)
        if texts is not None:
            self.only = np.zeros(pr.text_bench.size, dtype=bool)
            self.only[texts] = True
        # the benchmarks whose background (texts' unlabeled occupations) is needed
        self.bg_bench = np.unique(pr.text_bench[self.only & ~pr.text_sampled])
        rows = np.flatnonzero(~pr.text_sampled[pr.lab_text] & self.only[pr.lab_text])
        text = pr.lab_text[rows]
        occ = pr.task_occ[pr.lab_task[rows]]
        keys, self.row_pair = np.unique(text.astype(np.int64) * n_occ + occ, return_inverse=True)
        self.pair_text, self.pair_occ = keys // n_occ, keys % n_occ
        self.pair_bench = pr.text_bench[self.pair_text]
        self.row_p = pr.lab_p[rows]
        self.row_bench = pr.text_bench[text]
        self.pair_textshare = assisted.text_occ.share(self.pair_text, self.pair_occ)
        self.occ_size = assisted.occ_size.astype(float)
        group_size = assisted.group_size.astype(float)
        self.occ_in_group = self.occ_size / group_size[pr.occ_group]
        lab_bench = pr.text_bench[pr.lab_text]
        lab_occ = pr.task_occ[pr.lab_task]
        weight = pr.text_mult[pr.lab_text]
        self.lab_share = _row_shares(lab_bench, lab_occ, weight * pr.lab_p, n_bench, n_occ)
        bench_occ = _row_shares(lab_bench, lab_occ, weight * np.maximum(pr.lab_p, 1e-6), n_bench, n_occ)
        empty = bench_occ.sum(axis=1) <= 0  # no labels at all: the text-occupation part falls back to uniform
        bench_occ[empty] = self.occ_size / pr.n_tasks
        self.bench_occ_share = bench_occ
        self.missed_bench = pr.text_bench[assisted.missed_text]
        self.missed_occ = pr.task_occ[assisted.missed_task]
        self.donor_misses = assisted.missed_per_text[assisted.donors]
        self.donor_bench = pr.text_bench[assisted.donors]
        self.max_misses = int(self.donor_misses.max()) if self.donor_misses.size else 0
        self.sum_pair = np.zeros(keys.size)
        self.sum_bg_labeled = np.zeros((n_bench, n_occ))
        self.sum_bg_unlabeled = np.zeros((n_bench, n_occ))
        self.n = 0
        self.groups = max(int(groups), 1)
        if self.groups > 1:
            self.group_pair = np.zeros((self.groups, keys.size))
            self.group_bg = np.zeros((self.groups, 2, n_bench, n_occ))
            self.group_n = np.zeros(self.groups, dtype=np.int64)

    def _miss_counts(self, boot: np.ndarray) -> np.ndarray:
        """(B, max+1) distribution of a text's missed-label count: its benchmark's donors, bootstrap-weighted;
        the pooled donors for a benchmark without any."""
        pr, width = self.problem, self.max_misses + 1
        weight = boot[self.assisted.donors]
        per_bench = np.bincount(self.donor_bench * width + self.donor_misses, weights=weight,
                                minlength=pr.n_bench * width).reshape(pr.n_bench, width)
        pooled = per_bench.sum(axis=0)
        total = per_bench.sum(axis=1, keepdims=True)
        out = np.where(total > 0, per_bench / np.where(total > 0, total, 1.0), pooled / max(pooled.sum(), 1e-300))
        if pooled.sum() <= 0:  # no judged text anywhere: no misses
            out = np.zeros_like(out)
            out[:, 0] = 1.0
        return out

    def add(self, assisted: ModelAssisted | None = None, parameters: tuple | None = None) -> None:
        """One draw, from `parameters` (boot, factors, mixture) or the ModelAssisted's last draw."""
        boot, factors, mixture = parameters if parameters is not None else (assisted or self.assisted).last_parameters
        pr, a = self.problem, self.assisted
        n_occ = pr.n_occ
        keep = np.minimum(1.0, factors[self.row_bench] * self.row_p)
        certain = np.bincount(self.row_pair, weights=keep >= 1.0, minlength=self.sum_pair.size) > 0
        log_none = np.bincount(self.row_pair, weights=np.log1p(-np.minimum(keep, 1 - 1e-12)),
                               minlength=self.sum_pair.size)
        none_kept = np.where(certain, 0.0, np.exp(log_none))
        # the miss mixture's parts per benchmark (ModelAssisted._part_cdf, the draw's reweighted sample)
        row_boot = boot[a.missed_text]
        cdf = a._part_cdf(mixture, a.seen.reweighted(row_boot))
        probs = np.diff(np.concatenate([np.zeros((pr.n_bench, 1)), cdf], axis=1), axis=1)  # (B, 6)
        seen = _row_shares(self.missed_bench, self.missed_occ, row_boot, pr.n_bench, n_occ)
        seen_group = _row_shares(self.missed_bench, pr.occ_group[self.missed_occ], row_boot, pr.n_bench,
                                 pr.n_groups)
        base = (probs[:, [0]] * self.occ_size / pr.n_tasks
                + (probs[:, [1]] + probs[:, [4]]) * seen
                + probs[:, [2]] * self.lab_share
                + probs[:, [5]] * seen_group[:, pr.occ_group] * self.occ_in_group)
        counts = self._miss_counts(boot)
        powers = np.arange(counts.shape[1])

        def no_miss(q: np.ndarray, bench: np.ndarray) -> np.ndarray:
            return ((1.0 - np.clip(q, 0.0, 1.0))[..., None] ** powers * counts[bench]).sum(axis=-1)

        every, bg = self.bg_bench[:, None], self.bg_bench
        bg_labeled = 1.0 - no_miss(base[bg], every)
        bg_unlabeled = 1.0 - no_miss((base + probs[:, [3]] * self.bench_occ_share)[bg], every)
        q_pair = base[self.pair_bench, self.pair_occ] + probs[self.pair_bench, 3] * self.pair_textshare
        pair = 1.0 - none_kept * no_miss(q_pair, self.pair_bench)
        self.sum_bg_labeled[bg] += bg_labeled
        self.sum_bg_unlabeled[bg] += bg_unlabeled
        self.sum_pair += pair
        if self.groups > 1:
            g = self.n % self.groups
            self.group_pair[g] += pair
            self.group_bg[g, 0, bg] += bg_labeled
            self.group_bg[g, 1, bg] += bg_unlabeled
            self.group_n[g] += 1
        self.n += 1

    def long_frame(self, p_min: float = P_MIN, leave_out: int | None = None) -> pl.DataFrame:
        """t, o (indices), p, judged, labeled (the text has a label in the occupation): every text's occupations
        with p >= p_min; `leave_out`: p from the draws outside that group (needs `groups` > 1)."""
        pr = self.problem
        sum_pair, sum_labeled, sum_unlabeled, n = self.sum_pair, self.sum_bg_labeled, self.sum_bg_unlabeled, self.n
        if leave_out is not None:
            sum_pair = sum_pair - self.group_pair[leave_out]
            sum_labeled = sum_labeled - self.group_bg[leave_out, 0]
            sum_unlabeled = sum_unlabeled - self.group_bg[leave_out, 1]
            n -= int(self.group_n[leave_out])
        n = max(n, 1)
        mine = self.only[pr.jud_text]
        judged = np.unique(np.stack([pr.jud_text[mine].astype(np.int64), pr.task_occ[pr.jud_task[mine]]]), axis=1)
        pairs = pl.DataFrame({"t": self.pair_text, "o": self.pair_occ, "p": sum_pair / n,
                              "judged": False, "labeled": True})
        frames = [pl.DataFrame({"t": judged[0], "o": judged[1], "p": np.ones(judged.shape[1]),
                                "judged": True, "labeled": False}), pairs]
        unsampled = np.flatnonzero(~pr.text_sampled & self.only)
        with_labels = self.assisted.text_occ.has(unsampled)
        background = []
        for labeled_text, sums in ((True, sum_labeled), (False, sum_unlabeled)):
            b_idx, o_idx = np.nonzero(sums / n >= p_min)
            bg = pl.DataFrame({"b": b_idx, "o": o_idx, "p": sums[b_idx, o_idx] / n})
            owners = unsampled[with_labels == labeled_text]
            background.append(pl.DataFrame({"t": owners, "b": pr.text_bench[owners]}).join(bg, on="b").drop("b"))
        bg_rows = pl.concat([f.select(pl.col("t").cast(pl.Int64), pl.col("o").cast(pl.Int64), "p")
                             for f in background])
        bg_rows = bg_rows.join(pairs.select(pl.col("t").cast(pl.Int64), pl.col("o").cast(pl.Int64)), on=["t", "o"],
                               how="anti")
        frames.append(bg_rows.with_columns(pl.lit(False).alias("judged"), pl.lit(False).alias("labeled")))
        return pl.concat([f.select(pl.col("t").cast(pl.Int64), pl.col("o").cast(pl.Int64),
                                   pl.col("p").cast(pl.Float64).clip(0.0, 1.0), pl.col("judged").cast(pl.Boolean),
                                   pl.col("labeled").cast(pl.Boolean)) for f in frames]).filter(pl.col("p") >= p_min)

    def table(self, texts: pl.DataFrame, p_min: float = P_MIN,
              recalibrate: Callable[[pl.DataFrame], pl.Series] | None = None) -> pl.DataFrame:
        """`prompt_occupation_estimates` (PROMPT_OCCUPATION_SCHEMA): every text's occupations with p >= p_min;
        `texts`: the text_frame the problem was built from (benchmark, prompt_hash). `recalibrate` maps the
        long frame (t, o, p, judged, labeled, sampled_benchmark) to p_calibrated (calibration.Recalibration);
        without it p_calibrated = p. The whole frame: `table_slices` is the same rows a slice at a time."""
        return self.table_slices(texts, p_min, recalibrate).collect()

    def table_slices(self, texts: pl.DataFrame, p_min: float = P_MIN,
                     recalibrate: Callable[[pl.DataFrame], pl.Series] | None = None,
                     slice_rows: int = SLICE_ROWS) -> SlicedFrame:
        """`table`'s rows as a SlicedFrame: the integer-keyed rows (t, o, p, p_calibrated, judged) are held,
        sorted; each slice joins its texts' and occupations' strings as it is written (50x the mirror: 7.3M rows,
        ~0.2 GiB held instead of ~1 GiB of strings)."""
        pr = self.problem
        occupations = pl.DataFrame({"o": np.arange(pr.n_occ, dtype=np.int64), "onet_soc_code": occupation_codes(pr)})
        keys = (texts.select("benchmark", "prompt_hash").sort("benchmark", "prompt_hash").with_row_index("t")
                .with_columns(pl.col("t").cast(pl.Int64)))
        has_sample = self.assisted.has_sample[pr.text_bench]
        long = self.long_frame(p_min)
        long = long.with_columns(pl.Series("sampled_benchmark", has_sample[long["t"].to_numpy()]))
        calibrated = recalibrate(long) if recalibrate is not None else long["p"]
        # sorted on the integer index (t is the rank of (benchmark, prompt_hash)); a text's strings are joined
        # slice by slice, in that order
        ordered = (
            long.with_columns(pl.when(pl.col("judged")).then(pl.col("p")).otherwise(calibrated)
                              .alias("p_calibrated"))
            .select("t", "o", "p", "p_calibrated", "judged")
            .sort("t", "p", descending=[False, True])
        )
        del long, calibrated

        def rows(offset: int, length: int) -> pl.DataFrame:
            return (
                ordered.slice(offset, length).lazy()
                .join(keys.lazy(), on="t", how="left", maintain_order="left")
                .join(occupations.lazy(), on="o", how="left", maintain_order="left")
                .select(*PROMPT_OCCUPATION_SCHEMA)
                .collect()
            )

        return SlicedFrame(PROMPT_OCCUPATION_SCHEMA, ordered.height, rows, slice_rows)


def _row_shares(owner: np.ndarray, value: np.ndarray, weight: np.ndarray, n_owner: int, n_value: int) -> np.ndarray:
    """(owners, values) each owner's weight share of every value (rows without weight are 0)."""
    # float always: bincount of an empty input (no judged misses anywhere) returns integers
    mass = np.bincount(owner.astype(np.int64) * n_value + value, weights=weight,
                       minlength=n_owner * n_value).astype(np.float64).reshape(n_owner, n_value)
    total = mass.sum(axis=1, keepdims=True)
    return np.divide(mass, total, out=np.zeros_like(mass), where=total > 0)


def batch_parameters(assisted: ModelAssisted, rng: np.random.Generator, n_draws: int
                     ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """`n_draws` calls of assisted.parameters(rng) (the same random numbers: only the bootstrap draws any), with
    the mixture weights of every draw chosen by one matrix product instead of one per draw."""
    boots = [assisted.bootstrap.draw(rng) for _ in range(n_draws)]
    factors = [calibration_factors(assisted.problem, b, assisted.prior, assisted.sampled_rows) for b in boots]
    if assisted.loglik_texts.size and boots:
        scores = assisted.text_loglik @ np.stack([b[assisted.loglik_texts] for b in boots], axis=1)
        mixtures = [assisted.grid[i] for i in np.argmax(scores, axis=0)]
    else:
        mixtures = [assisted.weights] * n_draws
    return list(zip(boots, factors, mixtures, strict=True))


def text_occupation_probabilities(problem: Problem, n_draws: int, seed: int, texts: np.ndarray | None = None,
                                  groups: int = 1, assisted: ModelAssisted | None = None) -> TextOccupationDraws:
    """The per-text estimates of `problem` (of `texts` only, when given) from `n_draws` fresh model-assisted
    draw parameters (no count draws): the calibration check's held-out folds. `assisted`: the problem's
    ModelAssisted, when the caller has one."""
    assisted = assisted if assisted is not None else ModelAssisted(problem)
    collector = TextOccupationDraws(assisted, texts, groups)
    for parameters in batch_parameters(assisted, np.random.default_rng(seed), n_draws):
        collector.add(parameters=parameters)
    return collector
