"""The offline labeler's fast paths (issue 29: a cold run under a minute) give what the plain code gave, bit for
bit: the tokenizer's URL/e-mail/path filter searched only where it can match, and the selector's task features
built for all chosen occupations at once; and the neighbour step's TF-IDF of the query texts without the vectorizer's
analyzer (issue 25 item 7). Each is checked against the plain form it replaced."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from models.labeling import selector as sel
from models.labeling.offline import text as tx


def _plain_lowered_words(text: str) -> str:
    return tx._NOT_WORDS.sub(" ", text).lower()


@pytest.mark.parametrize("text", [
    "", "plain words only", "mail a.b@c.org now", "see:https://x.org/a b", "WWW.Example.com and Www.x.y",
    "a@b.com/x/y/z", "x//y", "/a/", "(foo@bar.com)", "a/b/c@d.e", "http://a www.b.c e@f.g h/i/j",
    "files in ./data/raw/x.csv\nand C:/Users/me/doc.txt", "tab\tsep/a/b\u00a0nbsp/c/d", "İstanbul/a/b é@x.fr",
])
def test_non_word_filter_equals_the_plain_substitution(text: str) -> None:
    assert tx._lowered_words(text) == _plain_lowered_words(text)


def test_non_word_filter_equals_the_plain_substitution_on_random_text() -> None:
    """Strings drawn from the characters the filter turns on (slashes, @, dots, 'www', every kind of space)."""
    rng = random.Random(29)
    alphabet = "ab/@.-_ wW\n\t:hsx1é\u00a0İ"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(30_000)]
    texts += ["".join(rng.choice(["www.", "http://", "a", "/", "@", ".com", " ", "W"]) for _ in range(12))
              for _ in range(5_000)]
    wrong = [t for t in texts if tx._lowered_words(t) != _plain_lowered_words(t)]
    assert not wrong, wrong[:5]
    assert sum(_plain_lowered_words(t) != t.lower() for t in texts) > 5_000  # the filter did replace text


def _plain_task_features(shape: sel.IndexShape, task_raw: np.ndarray, task_relative: np.ndarray,
                         occupations: np.ndarray, p_occupation: np.ndarray, priors: object, context: object
                         ) -> tuple[np.ndarray, np.ndarray]:
    """task_features as it was: one block per occupation, ranked by its own stable sort."""
    blocks, rows = [], []
    for rank, (occupation, p) in enumerate(zip(occupations, p_occupation, strict=True)):
        js = np.arange(shape.task_starts[occupation], shape.task_ends[occupation])
        raw = task_raw[js]
        similarity_rank = np.empty(len(js))
        similarity_rank[np.argsort(-raw, kind="stable")] = np.arange(len(js))
        blocks.append(np.column_stack([
            np.full(len(js), math.log(max(float(p), 1e-6))), np.full(len(js), float(rank)), task_relative[js],
            raw, np.log1p(similarity_rank), priors.task[js], priors.occupation_picks[js],  # type: ignore[attr-defined]
            np.full(len(js), math.log(len(js))), context.task[js]]))  # type: ignore[attr-defined]
        rows.append(js)
    if not blocks:
        return np.zeros((0, len(sel.TASK_FEATURES))), np.zeros(0, dtype=np.int64)
    return np.vstack(blocks), np.concatenate(rows)


class _Arrays:
    def __init__(self, **arrays: np.ndarray) -> None:
        self.__dict__.update(arrays)


def test_task_features_equal_the_per_occupation_blocks() -> None:
    """Ties in similarity (rounded scores) must rank in task order within each occupation, as a stable sort did."""
    rng = np.random.default_rng(29)
    counts = rng.integers(1, 30, 60)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    n_tasks = int(counts.sum())
    shape = sel.IndexShape(np.arange(60), np.arange(n_tasks), np.repeat(np.arange(60), counts), starts)
    priors = _Arrays(task=rng.random(n_tasks), occupation_picks=rng.random(n_tasks))
    context = _Arrays(task=rng.random(n_tasks))
    for _ in range(1_000):
        raw = np.round(rng.random(n_tasks), 1)
        relative = rng.random(n_tasks)
        occupations = rng.choice(60, int(rng.integers(0, 8)), replace=False)
        p = rng.random(len(occupations))
        p[rng.random(len(occupations)) < 0.2] = 0.0  # floored at 1e-6
        got = sel.task_features(shape, raw, relative, occupations, p, priors, context)  # type: ignore[arg-type]
        want = _plain_task_features(shape, raw, relative, occupations, p, priors, context)
        assert got[0].shape == want[0].shape and np.array_equal(got[0], want[0])
        assert got[1].dtype == want[1].dtype and np.array_equal(got[1], want[1])


def test_candidates_and_features_from_a_batch_sort_equal_the_row_sorts() -> None:
    rng = np.random.default_rng(7)
    combined = np.round(rng.random((40, 200)), 2)  # ties
    context = sel.BenchmarkContext(np.round(rng.random(200), 2), rng.random(10), 0.0, 40)
    orders = np.argsort(-combined, axis=1, kind="stable")
    for row in range(len(combined)):
        plain = sel.occupation_candidates(combined[row], 12, None)
        assert np.array_equal(sel.occupation_candidates(combined[row], 12, None, orders[row]), plain)
        with_context = np.argsort(-context.occupation, kind="stable")[:sel.K_BENCHMARK_CANDIDATES]
        merged = np.unique(np.concatenate([plain, with_context]))
        want = merged[np.argsort(-combined[row][merged], kind="stable")]
        assert np.array_equal(sel.occupation_candidates(combined[row], 12, context, orders[row]), want)


def _assert_same_rows(fast: object, slow: object) -> None:
    import scipy.sparse as sp

    fast, slow = sp.csr_matrix(fast), sp.csr_matrix(slow)
    assert fast.shape == slow.shape
    assert np.array_equal(fast.indptr, slow.indptr)
    assert np.array_equal(fast.indices, slow.indices)
    assert np.array_equal(fast.data, slow.data)  # bit for bit, not approximately


def test_query_rows_equal_the_vectorizers_transform_on_the_mirror(mirror: object) -> None:
    """The neighbour step's queries (every landed text of a judged benchmark) weighted by a TF-IDF fitted on the
    benchmark's judged texts, as `TfidfVectorizer.transform` weights them: the same csr, bit for bit."""
    import polars as pl
    from sklearn.feature_extraction.text import TfidfVectorizer

    from models.labeling.neighbour_tfidf import NEIGHBOUR_TFIDF, query_rows
    from models.labeling.neighbours import judged_texts
    from pipelines.fit_labeler import landed_texts
    from resources.readers import load_reference

    reference = load_reference()
    landed = landed_texts(reference)
    compared = 0
    for benchmark, pairs in landed.items():
        texts = pl.DataFrame([{"benchmark": benchmark, "prompt_hash": h, "prompt": t} for h, t in pairs])
        judged = judged_texts(reference.filter(pl.col("benchmark") == benchmark), texts)
        if judged.is_empty():
            continue
        vectorizer = TfidfVectorizer(**NEIGHBOUR_TFIDF).fit([t or " " for t in judged["prompt"].to_list()])
        queries = [t if isinstance(t, str) and t.strip() else " " for _, t in pairs]
        _assert_same_rows(query_rows(vectorizer.vocabulary_, vectorizer.idf_, queries),
                          vectorizer.transform(queries))
        compared += len(queries)
    assert len(landed) >= 25 and compared > 9_000


def test_query_rows_equal_the_vectorizers_transform_on_random_text() -> None:
    """Few distinct words, so that bigrams repeat within and across texts and a query's bigram of two known words
    is often one the fit never saw; words the fit never saw; unicode, digits, underscores; a fit without any
    bigram; no query at all."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from models.labeling.neighbour_tfidf import NEIGHBOUR_TFIDF, query_rows

    rng = random.Random(25)
    words = ["a", "B", "c1", "d_e", "été", "İz", "x", "Y", "zz", "q", "a-b", "n't", "9"]

    def text() -> str:
        return "".join(rng.choice(words) + rng.choice([" ", ", ", ".\n", "/", "  "])
                       for _ in range(rng.randint(1, 40)))

    for _ in range(40):
        fitted = [text() for _ in range(rng.randint(1, 8))]
        queries = [text() for _ in range(rng.randint(0, 30))] + ["unseen words only", " "]
        vectorizer = TfidfVectorizer(**NEIGHBOUR_TFIDF).fit(fitted)
        _assert_same_rows(query_rows(vectorizer.vocabulary_, vectorizer.idf_, queries), vectorizer.transform(queries))
    single = TfidfVectorizer(**NEIGHBOUR_TFIDF).fit(["one", "two", "two"])  # no text of two words: no bigram
    queries = ["one two one", "two two"]
    _assert_same_rows(query_rows(single.vocabulary_, single.idf_, queries), single.transform(queries))
    for weigh in (lambda: single.transform([]), lambda: query_rows(single.vocabulary_, single.idf_, [])):
        with pytest.raises(ValueError, match="0 sample"):  # no query: both refuse it alike
            weigh()
