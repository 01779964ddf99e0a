"""Within-benchmark evidence: the votes of a text's nearest judged texts of the same benchmark (issue 25).

A benchmark is made of similar tasks, and its judge sample (data/reference/, or the user's own judge sample)
holds about 27 judged texts. For any text of the benchmark, its `k` nearest judged texts by TF-IDF cosine
(vocabulary and IDF from the benchmark's judged texts, for a judged text from the others, as for a text the judge
never read; word 1-2 grams, sublinear tf), weighted by similarity ** `power`, vote:

- `work`: the weighted share of neighbours the judge read as occupational work;
- `occupation[c]`: the weighted share listing occupation c (the judge's 1-3 occupations, passes averaged);
- `task[t]`: the weighted share keeping task t.

**A judged text never votes for itself** (`neighbour_votes` drops every judged text with the query's
prompt_hash): so a judged text's votes are a leave-one-text-out prediction, which is what the estimators'
correction needs (cross-fitting). The combination with the calibrated selector is models/labeling/stacking.py.
Pure numpy/scipy/scikit-learn on frames; nothing here reads files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from models.labeling.neighbour_tfidf import NEIGHBOUR_TFIDF

if TYPE_CHECKING:
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import TfidfVectorizer

# scikit-learn and scipy.sparse are imported where a model is fitted or texts vectorised, not with this module:
# every Definitions build (every warm `run_all`, issue 29) imports it through the asset modules (~2 CPU-s).

# One row per judged text: its passes' decisions side by side (a text judged twice counts once).
JUDGED_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.Utf8(), "prompt_hash": pl.Utf8(), "prompt": pl.Utf8(), "is_work": pl.Float64(),
    "occupations": pl.List(pl.List(pl.Utf8())), "task_ids": pl.List(pl.List(pl.Int64())),
}


def judged_texts(reference: pl.DataFrame, texts: pl.DataFrame) -> pl.DataFrame:
    """JUDGED_SCHEMA rows from judge rows in the reference layout (benchmark, prompt_hash, is_work,
    occupations, task_ids; one row per pass) and the texts (benchmark, prompt_hash, prompt). A judged text
    with no landed text is left out (it cannot be a neighbour)."""
    if reference.is_empty():
        return pl.DataFrame(schema=JUDGED_SCHEMA)
    grouped = (reference.group_by("benchmark", "prompt_hash", maintain_order=True)
               .agg(pl.col("is_work").cast(pl.Float64).mean(), pl.col("occupations"), pl.col("task_ids")))
    prompts = texts.select("benchmark", "prompt_hash", "prompt").unique(["benchmark", "prompt_hash"])
    # in the reference's order: a join's row order varies from call to call, and the order of a benchmark's judged
    # texts sets its TF-IDF (vocabulary numbering, so the order of each norm's sum) and breaks ties among equally
    # similar neighbours: the step's decisions differed between two runs of the same inputs
    return grouped.join(prompts, on=["benchmark", "prompt_hash"], maintain_order="left").select(
        list(JUDGED_SCHEMA)).cast(JUDGED_SCHEMA)  # type: ignore[arg-type]


def judged_from_task_rows(rows: pl.DataFrame, texts: pl.DataFrame) -> pl.DataFrame:
    """JUDGED_SCHEMA rows from a judge sample stored as task rows (benchmark, prompt_hash, task_id null for a
    not-work text, onet_soc_code): one pass, occupations = the kept tasks' occupations, most tasks first."""
    if rows.is_empty():
        return pl.DataFrame(schema=JUDGED_SCHEMA)
    occupations = (rows.drop_nulls("task_id").group_by("benchmark", "prompt_hash", "onet_soc_code")
                   .len().sort("len", "onet_soc_code", descending=[True, False])
                   .group_by("benchmark", "prompt_hash", maintain_order=True).agg(pl.col("onet_soc_code")))
    per_text = (rows.group_by("benchmark", "prompt_hash", maintain_order=True)
                .agg(pl.col("task_id").drop_nulls().unique(maintain_order=True).alias("task_ids"))
                .join(occupations, on=["benchmark", "prompt_hash"], how="left")
                .with_columns((pl.col("task_ids").list.len() > 0).alias("is_work"),
                              pl.col("onet_soc_code").fill_null(pl.lit([], pl.List(pl.Utf8))).alias("occupations")))
    return judged_texts(per_text.select("benchmark", "prompt_hash", "is_work", "occupations", "task_ids"), texts)


@dataclass(frozen=True)
class BenchmarkSample:
    """One benchmark's judged texts as matrices: TF-IDF rows, work share, occupation and task shares."""

    hashes: np.ndarray  # judged texts' prompt_hash
    vectorizer: TfidfVectorizer | None  # None: built without (the caller gives the similarities: neighbour_tfidf)
    vectors: sp.csr_matrix | None  # judged texts x terms, L2-normalised
    work: np.ndarray  # share of passes judging it work
    codes: np.ndarray  # occupation codes voted for (columns of `occupation`)
    occupation: np.ndarray  # judged texts x codes: share of passes listing it
    first_occupation: np.ndarray  # judged texts x codes: share of passes listing it first
    task_ids: np.ndarray  # task ids voted for (columns of `task`)
    task: np.ndarray  # judged texts x task_ids: share of passes keeping it

    @property
    def size(self) -> int:
        return int(self.hashes.shape[0])

    @classmethod
    def of(cls, judged: pl.DataFrame, vectorize: bool = True) -> BenchmarkSample:
        """The sample of one benchmark's JUDGED_SCHEMA rows (at least one); `vectorize` False: without its
        TF-IDF (for a caller that computes the similarities itself: models/labeling/neighbour_tfidf.py)."""
        rows = judged.to_dicts()
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectorizer = TfidfVectorizer(**NEIGHBOUR_TFIDF) if vectorize else None
        vectors = vectorizer.fit_transform([r["prompt"] or " " for r in rows]).tocsr() if vectorizer else None

        codes = sorted({c for r in rows for p in r["occupations"] for c in p})
        tasks = sorted({t for r in rows for p in r["task_ids"] for t in p})
        code_col = {c: i for i, c in enumerate(codes)}
        task_col = {t: i for i, t in enumerate(tasks)}
        occupation = np.zeros((len(rows), len(codes)))
        first = np.zeros((len(rows), len(codes)))
        task = np.zeros((len(rows), len(tasks)))
        for i, r in enumerate(rows):
            passes = max(1, len(r["occupations"]))
            for occupations, kept in zip(r["occupations"], r["task_ids"], strict=True):
                for rank, c in enumerate(dict.fromkeys(occupations)):
                    occupation[i, code_col[c]] += 1.0 / passes
                    if rank == 0:
                        first[i, code_col[c]] += 1.0 / passes
                for t in dict.fromkeys(kept):
                    task[i, task_col[t]] += 1.0 / passes
        return cls(np.array([r["prompt_hash"] for r in rows]), vectorizer, vectors,
                   np.array([r["is_work"] for r in rows], dtype=float), np.array(codes, dtype=object),
                   occupation, first, np.array(tasks, dtype=np.int64), task)


def samples_by_benchmark(judged: pl.DataFrame) -> dict[str, BenchmarkSample]:
    """benchmark -> its BenchmarkSample, for every benchmark with a judged text."""
    return {str(b): BenchmarkSample.of(g) for (b,), g in judged.group_by(["benchmark"], maintain_order=True)}


@dataclass(frozen=True)
class Votes:
    """The neighbours' votes for a batch of texts of one benchmark (rows = query texts)."""

    work: np.ndarray  # (q,)
    max_similarity: np.ndarray  # (q,) similarity of the nearest voting neighbour
    n_neighbours: np.ndarray  # (q,) judged texts that voted (0: no judged text but itself)
    codes: np.ndarray
    occupation: np.ndarray  # (q, codes)
    first_occupation: np.ndarray  # (q, codes)
    task_ids: np.ndarray
    task: np.ndarray  # (q, task_ids)


def query_similarity(sample: BenchmarkSample, texts: Sequence[str], hashes: Sequence[str]) -> np.ndarray:
    """(q, judged) TF-IDF cosine of each query text with each judged text; -1 for the query's own judged text
    (same prompt_hash: it never votes for itself). A query that is one of the judged texts is compared through a
    TF-IDF fitted on the others, as an unread text is (neighbour_tfidf.similarity_leaving_members_out): its own
    terms in the fit made its cosines lower than an unread text's, so the stack learnt on features that no
    unread text has (the 2026-12-05 fit: task F1 0.584 leaving one text out, 0.572 scored as an unread text;
    refitted on these features, 0.583). Shared by the votes of every neighbour setting."""
    if sample.vectorizer is None or sample.vectors is None:
        raise ValueError("a BenchmarkSample built without its TF-IDF needs the similarities from its caller")
    from models.labeling.neighbour_tfidf import fitted_cosines_left_out, query_rows

    # the vectorizer's transform, to the bit, without its analyzer's string bigrams (neighbour_tfidf.query_rows)
    queries = query_rows(sample.vectorizer.vocabulary_, sample.vectorizer.idf_,
                         [t if isinstance(t, str) and t.strip() else " " for t in texts])
    similarity = own_left_out(np.asarray((queries @ sample.vectors.T).todense(), dtype=float), sample, hashes)
    member = {str(h): j for j, h in enumerate(sample.hashes.tolist())}
    judged = [(row, member[str(h)]) for row, h in enumerate(hashes) if str(h) in member]
    if judged and sample.size > 1:
        left_out = fitted_cosines_left_out(sample.vectors, sample.vectorizer.idf_)
        similarity[[row for row, _ in judged]] = left_out[[j for _, j in judged]]
    return similarity


def own_left_out(similarity: np.ndarray, sample: BenchmarkSample, hashes: Sequence[str]) -> np.ndarray:
    """`similarity` (queries x judged texts) with -1 where the query is the judged text (in place)."""
    own = np.asarray(hashes, dtype=object)[:, None] == sample.hashes[None, :]
    similarity[own] = -1.0  # a judged text never votes for itself
    return similarity


def neighbour_weights(sample: BenchmarkSample, texts: Sequence[str], hashes: Sequence[str], k: int,
                      power: float, similarity: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """((q, judged) vote weights, (q, judged) cosine similarities). Weights: similarity ** power for each query's k most similar judged texts, zero for
    the rest and for the query's own judged text (same prompt_hash: leave one text out), rows summing to 1
    (a query with no other judged text: all zero). `similarity`: query_similarity's, when already computed."""
    if similarity is None:
        similarity = query_similarity(sample, texts, hashes)
    keep = min(k, sample.size)
    order = np.argsort(-similarity, axis=1, kind="stable")[:, :keep]
    weights = np.zeros_like(similarity)
    rows = np.arange(similarity.shape[0])[:, None]
    chosen = similarity[rows, order]
    # a floor so that texts sharing no word still vote (equally): a benchmark's texts are alike anyway
    weights[rows, order] = np.where(chosen >= 0, np.maximum(chosen, 1e-3) ** power, 0.0)
    total = weights.sum(axis=1, keepdims=True)
    return np.divide(weights, total, out=np.zeros_like(weights), where=total > 0), similarity


def neighbour_votes(sample: BenchmarkSample, texts: Sequence[str], hashes: Sequence[str], k: int = 7,
                    power: float = 1.0, similarity: np.ndarray | None = None) -> Votes:
    """The votes of each query text's k nearest judged texts (never itself), similarity-weighted."""
    weights, similarity = neighbour_weights(sample, texts, hashes, k, power, similarity)
    voting = weights > 0
    return Votes(work=weights @ sample.work, max_similarity=np.where(voting, similarity, 0.0).max(axis=1, initial=0.0),
                 n_neighbours=voting.sum(axis=1), codes=sample.codes, occupation=weights @ sample.occupation,
                 first_occupation=weights @ sample.first_occupation, task_ids=sample.task_ids,
                 task=weights @ sample.task)


def first_occupation_trust(sample: BenchmarkSample, hashes: Sequence[str], first_of: Mapping[str, str | None]
                           ) -> np.ndarray:
    """(q,) for each query text, the mean over the sample's judged texts other than itself of the share of
    passes listing `first_of[judged text]` (a labeler's first occupation of that text; 0 without one): how
    often that labeler names an occupation the judge lists in this benchmark, leave one text out."""
    col = {str(c): i for i, c in enumerate(sample.codes.tolist())}
    hit = np.array([sample.occupation[j, col[c]] if (c := first_of.get(str(h))) in col else 0.0
                    for j, h in enumerate(sample.hashes.tolist())])
    own = np.asarray(hashes, dtype=object)[:, None] == sample.hashes[None, :]
    others = (~own).sum(axis=1)
    total = hit.sum() - (own * hit[None, :]).sum(axis=1)
    return np.divide(total, others, out=np.zeros(len(hashes)), where=others > 0)


def work_shares_by_logit(sample: BenchmarkSample, hashes: Sequence[str], query_logit: np.ndarray,
                         judged_logit: Mapping[str, float]) -> tuple[np.ndarray, ...]:
    """((q,) above, (q,) below, (q,) share, (q,) quantile gap): the work share of the sample's judged texts (other than the query itself)
    whose text work logit is >= / < the query's, each shrunk toward the benchmark's work share by one text.
    Places a text on its benchmark's own scale of the text-level work evidence (mixed benchmarks: the
    judge's work texts are the ones that read most like work); the benchmark's work share (shrunk by one
    half text each way) and how far the query's logit quantile among them lies above 1 - that share. Judged
    texts without a logit are left out."""
    known = np.array([str(h) in judged_logit for h in sample.hashes.tolist()])
    logit = np.array([judged_logit.get(str(h), 0.0) for h in sample.hashes.tolist()])
    own = np.asarray(hashes, dtype=object)[:, None] == sample.hashes[None, :]
    use = known[None, :] & ~own
    n = use.sum(axis=1)
    prior = np.divide((use * sample.work[None, :]).sum(axis=1), n, out=np.full(len(hashes), 0.5), where=n > 0)
    higher = use & (logit[None, :] >= np.asarray(query_logit, dtype=float)[:, None])
    lower = use & ~higher
    above = ((higher * sample.work[None, :]).sum(axis=1) + prior) / (higher.sum(axis=1) + 1.0)
    below = ((lower * sample.work[None, :]).sum(axis=1) + prior) / (lower.sum(axis=1) + 1.0)
    # the quantile rule: a text whose logit beats the benchmark's (1 - work share) quantile reads as work
    share = ((use * sample.work[None, :]).sum(axis=1) + 0.5) / (n + 1.0)
    quantile = np.divide(lower.sum(axis=1), n, out=np.full(len(hashes), 0.5), where=n > 0)
    return above, below, share, quantile - (1.0 - share)
