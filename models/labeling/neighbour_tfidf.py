"""The neighbours' TF-IDF cosine of a benchmark's judged texts, for many parts of the same judged texts (the split
checks relabel them from a random half in every split: models/labeling/stacking_split.py).

`BenchmarkSample.of` fits a TfidfVectorizer (NEIGHBOUR_TFIDF, below) on the part's texts and transforms the
queries with it: tokenizing the same texts again in every split was most of the relabeling's cost. Here each
judged text is tokenized once (`TokenizedTexts`, the vectorizer's own analyzer) and a part's matrices are
assembled from the term counts as scikit-learn assembles them, to the bit: the vocabulary of the part in
alphabetical order, each document row stored in the order the part's terms first appear (CountVectorizer's
storage, which sets the order in which `normalize` sums a row's squares), idf = log((n + 1) / (df + 1)) + 1,
sublinear tf, L2 rows; the queries' rows in vocabulary order. tests/test_neighbours.py compares the result with
the vectorizer's on the mirror's judged texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# the neighbours' TF-IDF (models/labeling/neighbours.py): word 1-2 grams, sublinear tf
NEIGHBOUR_TFIDF = {"sublinear_tf": True, "lowercase": True, "ngram_range": (1, 2), "min_df": 1,
                   "token_pattern": r"(?u)\b\w+\b", "dtype": np.float64}


@dataclass(frozen=True)
class TokenizedTexts:
    """Judged texts as term counts: terms numbered in alphabetical order over all of them; per text its distinct
    terms in the order they first appear in it, and their counts."""

    terms: list[np.ndarray]  # per text: term numbers, first-appearance order
    counts: list[np.ndarray]  # per text: float64 counts of those terms

    @classmethod
    def of(cls, texts: Sequence[str]) -> TokenizedTexts:
        from sklearn.feature_extraction.text import TfidfVectorizer

        analyze = TfidfVectorizer(**NEIGHBOUR_TFIDF).build_analyzer()
        per_text: list[dict[str, int]] = []
        for text in texts:
            counter: dict[str, int] = {}
            for term in analyze(text):
                counter[term] = counter.get(term, 0) + 1
            per_text.append(counter)
        number = {t: i for i, t in enumerate(sorted({t for c in per_text for t in c}))}
        return cls([np.fromiter((number[t] for t in c), dtype=np.int64, count=len(c)) for c in per_text],
                   [np.fromiter(c.values(), dtype=np.float64, count=len(c)) for c in per_text])


def _tfidf_rows(indptr: list[int], indices: np.ndarray, data: np.ndarray, idf: np.ndarray, width: int) -> object:
    """TfidfTransformer.transform's steps on a count matrix (sublinear tf, idf, L2 rows), in place."""
    import scipy.sparse as sp
    from sklearn.preprocessing import normalize

    matrix = sp.csr_matrix((data, indices, np.asarray(indptr, dtype=np.int32)), shape=(len(indptr) - 1, width))
    np.log(matrix.data, matrix.data)
    matrix.data += 1.0
    matrix.data *= idf[matrix.indices]
    return normalize(matrix, norm="l2", copy=False)


def query_rows(vocabulary: dict[str, int], idf: np.ndarray, texts: Sequence[str]) -> object:
    """`vectorizer.transform(texts)` of a fitted NEIGHBOUR_TFIDF vectorizer (its `vocabulary_`, `idf_`), to the
    bit, without scikit-learn's analyzer: it joins every pair of adjacent words into a bigram string and looks
    each one up, while most of a query's bigrams are not in a benchmark's judged texts (about a fifth of the
    neighbour step's CPU in a cold run: bench/PROFILE.md). A bigram of the vocabulary is two of its words (the fit saw both), so a
    query's bigram is looked up as the pair of its words' columns; the counts are the vectorizer's csr (sorted
    columns, float64), weighted as TfidfTransformer does (`_tfidf_rows`)."""
    import re

    pattern = re.compile(str(NEIGHBOUR_TFIDF["token_pattern"]))
    width = len(vocabulary)
    words = {term: column for term, column in vocabulary.items() if " " not in term}
    pair_keys, pair_columns = [], []
    for term, column in vocabulary.items():
        if " " in term:
            first, second = term.split(" ")
            pair_keys.append(words[first] * width + words[second])
            pair_columns.append(column)
    unsorted = np.asarray(pair_keys, dtype=np.int64)
    order = np.argsort(unsorted, kind="stable")
    keys, columns_of_pairs = unsorted[order], np.asarray(pair_columns, dtype=np.int64)[order]
    ids: list[int] = []
    ends = [0]
    for text in texts:
        ids.extend([words.get(token, -1) for token in pattern.findall(text.lower())])
        ends.append(len(ids))
    token = np.asarray(ids, dtype=np.int64)
    document = np.repeat(np.arange(len(texts), dtype=np.int64), np.diff(ends))
    known = token >= 0
    # adjacent words of one text, both in the vocabulary: their pair's column when the fit saw the bigram
    adjacent = known[:-1] & known[1:] & (document[:-1] == document[1:])
    codes = token[:-1][adjacent] * width + token[1:][adjacent]
    at = np.minimum(np.searchsorted(keys, codes), max(len(keys) - 1, 0))
    seen = keys[at] == codes if len(keys) else np.zeros(len(codes), dtype=bool)
    entries = np.concatenate([document[known] * width + token[known],
                              document[:-1][adjacent][seen] * width + columns_of_pairs[at[seen]]])
    cells, counts = np.unique(entries, return_counts=True)  # per text, its columns sorted
    rows = cells // width
    indptr = np.searchsorted(rows, np.arange(len(texts) + 1)).tolist()
    return _tfidf_rows(indptr, (cells % width).astype(np.int32), counts.astype(np.float64), np.asarray(idf), width)


def part_vectors(tokens: TokenizedTexts, part: Sequence[int]) -> tuple[np.ndarray, object, np.ndarray] | None:
    """(vocabulary, vectors, idf) of a vectorizer fitted on the part's texts, to the bit: its alphabetical
    term numbers, `fit_transform`'s L2 rows (csr) and its `idf_`; None when the part has no term."""
    if not part:
        return None
    seen = np.concatenate([tokens.terms[i] for i in part])
    if not len(seen):
        return None
    vocabulary, first = np.unique(seen, return_index=True)  # alphabetical; where each term first appears
    rank = np.empty(len(vocabulary), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(vocabulary))  # the vectorizer's first numbering
    indptr, indices, data = [0], [], []
    for i in part:
        column = np.searchsorted(vocabulary, tokens.terms[i])
        order = np.argsort(rank[column], kind="stable")
        indices.append(column[order])
        data.append(tokens.counts[i][order])
        indptr.append(indptr[-1] + len(column))
    document_indices = np.concatenate(indices).astype(np.int32)
    df = np.bincount(document_indices, minlength=len(vocabulary)).astype(np.float64)
    df += 1.0
    idf = np.full_like(df, fill_value=len(part) + 1, dtype=np.float64)
    idf /= df
    np.log(idf, out=idf)
    idf += 1.0
    return vocabulary, _tfidf_rows(indptr, document_indices, np.concatenate(data), idf, len(vocabulary)), idf


def part_similarity(tokens: TokenizedTexts, part: Sequence[int], queries: Sequence[int],
                    fitted: tuple[np.ndarray, object, np.ndarray] | None = None) -> np.ndarray | None:
    """(queries, part) TF-IDF cosine, as `(vectorizer.transform(query texts) @ vectors.T).todense()` of a
    vectorizer fitted on the part's texts (rows: tokens' texts `queries`, columns: texts `part`, in these orders);
    None when the part has no term (the vectorizer would refuse it). `fitted`: part_vectors', when at hand."""
    fitted = fitted or part_vectors(tokens, part)
    if fitted is None:
        return None
    vocabulary, vectors, idf = fitted
    q_ptr, q_indices, q_data = [0], [], []
    for i in queries:
        terms = tokens.terms[i]
        column = np.searchsorted(vocabulary, terms)
        known = (column < len(vocabulary)) & (vocabulary[np.minimum(column, len(vocabulary) - 1)] == terms)
        order = np.argsort(column[known], kind="stable")  # the query rows' sorted indices
        q_indices.append(column[known][order])
        q_data.append(tokens.counts[i][known][order])
        q_ptr.append(q_ptr[-1] + int(known.sum()))
    rows = _tfidf_rows(q_ptr, np.concatenate(q_indices).astype(np.int32) if q_indices else np.zeros(0, np.int32),
                       np.concatenate(q_data) if q_data else np.zeros(0), idf, len(vocabulary))
    return np.asarray((rows @ vectors.T).todense(), dtype=float)  # type: ignore[attr-defined]


def similarity_leaving_members_out(tokens: TokenizedTexts, part: Sequence[int], queries: Sequence[int]
                                   ) -> np.ndarray | None:
    """`part_similarity`, except for a query that is itself one of the part's texts: its row comes from a
    vectorizer fitted on the part without it, and its own column is -1 (it never votes for itself). An unread
    text is never in the vectorizer's fit (its unseen terms drop out, and its cosines with the judged texts run
    higher: median best 0.27 against 0.15 on the mirror), so a judged text must not be either, when its
    features train the stack or stand for an unread text's in an evaluation. None as part_similarity."""
    fitted = part_vectors(tokens, part)
    if fitted is None:
        return None
    column = {t: j for j, t in enumerate(part)}
    members = [(row, column[t]) for row, t in enumerate(queries) if t in column]
    others = [row for row, t in enumerate(queries) if t not in column]
    similarity = np.empty((len(queries), len(part)))
    similarity[others] = part_similarity(tokens, part, [queries[row] for row in others], fitted)
    if members:
        _, vectors, idf = fitted
        # from the fitted rows, as neighbours.query_similarity computes them from the vectorizer's: the same bits
        left_out = fitted_cosines_left_out(vectors, idf)
        similarity[[row for row, _ in members]] = left_out[[j for _, j in members]]
    return similarity


def fitted_cosines_left_out(vectors: object, idf: np.ndarray) -> np.ndarray:
    """`cosines_left_out` of texts given as their fitted TF-IDF rows (texts x terms) and the fit's idf: the rows
    divided by the idf are each text's sublinear tf up to its norm, all the cosines need."""
    import scipy.sparse as sp

    return cosines_left_out(vectors @ sp.diags(1.0 / idf))


def cosines_left_out(tf: object) -> np.ndarray:
    """(n, n) cosine of each of n texts with every other through a TF-IDF fitted on the texts without the first
    (NEIGHBOUR_TFIDF: smooth idf, L2 rows; the diagonal -1), from `tf` (texts x terms, csr: each text's sublinear
    tf, or any positive multiple of its row: the cosines do not see a row's scale, so a fitted vectorizer's
    rows divided by its idf will do). Leaving text i out of n changes the idf, log((n' + 1) / (df' + 1)) + 1
    with n' = n - 1, of every term: A = log(n / (df + 1)) + 1 for a term i lacks, B = log(n / df) + 1 for one of
    its own, which survives in its row only when another text has it. So the dot products are those of the
    B-weighted rows, and the squared norm of text j without i is sum_t tf_j^2 A^2 plus, over i's terms,
    tf_j^2 (B^2 - A^2): two matrix products instead of a vectorizer per text (the vectorizer's values to within
    1e-13 on the mirror's judged texts; tests/test_neighbours.py)."""
    import scipy.sparse as sp

    tf = sp.csr_matrix(tf)
    n = tf.shape[0]
    out = np.full((n, n), -1.0)
    if n < 2:
        return out
    present = tf.copy()
    present.data[:] = 1.0
    df = np.asarray(present.sum(axis=0)).ravel()
    a = np.log(n / (df + 1.0)) + 1.0
    b = np.log(n / np.maximum(df, 1.0)) + 1.0
    squared = tf.multiply(tf).tocsr()
    weighted = tf @ sp.diags(b)
    dot = (weighted @ weighted.T).toarray()
    norm_other = np.asarray(squared @ (a * a)).ravel()[None, :] + (present @ (squared @ sp.diags(b * b - a * a)).T
                                                                    ).toarray()
    norm_own = np.asarray(squared @ (b * b * (df >= 2))).ravel()[:, None]
    denominator = np.sqrt(norm_own * norm_other)
    np.divide(dot, denominator, out=out, where=denominator > 0)
    out[denominator <= 0] = 0.0
    np.fill_diagonal(out, -1.0)
    return out
