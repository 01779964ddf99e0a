"""Building the offline labeler's TaskIndex from the O*NET reference frames, in named steps.

`index_fields` returns the keyword arguments of `TaskIndex` (models/labeling/offline/index.py); the steps
are the same expressions, in the same order of use, as the single `TaskIndex.build` method they came from,
so the matrices (and the labels read from them) are the same.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from threadpoolctl import threadpool_limits  # installed with scikit-learn

from models.labeling.offline.config import TITLE_SOURCE_WEIGHTS
from models.labeling.offline.text import (
    head_noun,
    pre_analyzed,
    tfidf_vectorizer,
    token_features,
    word_tokens,
)


def index_fields(tasks: pl.DataFrame, occupations: pl.DataFrame, job_titles: pl.DataFrame,
                 technology_skills: pl.DataFrame, task_dwas: pl.DataFrame | None = None, *,
                 lsa_components: int = 100) -> dict[str, Any]:
    """The fields of a TaskIndex built from the reference frames (see `TaskIndex.build`)."""
    started = time.perf_counter()
    tasks = _task_rows(tasks)
    codes = sorted(set(tasks["onet_soc_code"].to_list()))
    code_index = {c: i for i, c in enumerate(codes)}
    occupations = occupations.select("onet_soc_code", "title", "description").filter(
        pl.col("onet_soc_code").is_in(codes)).unique(subset=["onet_soc_code"], keep="first")
    title_by_code = dict(zip(occupations["onet_soc_code"], occupations["title"], strict=True))
    description_by_code = dict(zip(occupations["onet_soc_code"], occupations["description"], strict=True))
    titles_of = [title_by_code.get(c) or c for c in codes]

    tasks = _with_dwa_titles(tasks, task_dwas)
    task_occupation = np.array([code_index[c] for c in tasks["onet_soc_code"]], dtype=np.int32)
    task_docs = [f"{t}. {d}" for t, d in zip(tasks["task"], tasks["dwa_title"], strict=True)]

    titles = _title_rows(job_titles, codes, titles_of)
    title_fields = _title_fields(titles, codes, code_index)
    titles_text = titles.group_by("onet_soc_code", maintain_order=True).agg(pl.col("job_title").str.join(". "))
    titles_by_code = dict(zip(titles_text["onet_soc_code"], titles_text["job_title"], strict=True))
    technology_vectorizer, technology_matrix = _technology(technology_skills, codes)

    description_docs = [f"{titles_of[i]}. {description_by_code.get(c) or ''}" for i, c in enumerate(codes)]
    # each text is tokenized once: an occupation document is its parts joined by spaces, and word_tokens of
    # space-joined parts are the parts' tokens in order (no token or masked span crosses a space)
    task_tokens = [word_tokens(d) for d in task_docs]
    description_tokens = [word_tokens(d) for d in description_docs]
    opening_tokens = [word_tokens(titles_by_code.get(c, "")) for c in codes]
    occupation_tokens = _occupation_tokens(tasks, technology_skills, codes, description_tokens, opening_tokens,
                                           task_tokens)
    occupation_vectorizer, occupation_matrix = _fit_tokens(occupation_tokens)
    description_vectorizer, description_matrix = _fit_tokens(description_tokens)
    task_vectorizer, task_matrix = _fit_tokens(task_tokens)
    title_vectorizer, title_matrix = _fit(title_fields["title_strings"])
    opening_vectorizer, opening_matrix = _fit_tokens(opening_tokens)
    lsa_projection, lsa_occupations, n_components = _lsa(occupation_matrix, lsa_components, len(codes))

    with_dwas = task_dwas is not None and not task_dwas.is_empty()
    return {
        "occupation_codes": np.array(codes),
        "occupation_titles": titles_of,
        "task_ids": tasks["task_id"].to_numpy().astype(np.int64),
        "task_occupation": task_occupation,
        "task_starts": np.searchsorted(task_occupation, np.arange(len(codes))).astype(np.int64),
        "task_texts": tasks["task"].to_list(),
        "occupation_vectorizer": occupation_vectorizer,
        "occupation_matrix": occupation_matrix,
        "lsa_projection": lsa_projection,
        "lsa_occupations": lsa_occupations,
        "description_vectorizer": description_vectorizer,
        "description_matrix": description_matrix,
        "task_vectorizer": task_vectorizer,
        "task_matrix": task_matrix,
        "task_features": task_vectorizer.get_feature_names_out(),
        "title_vectorizer": title_vectorizer,
        "title_matrix": title_matrix,
        **title_fields,
        "opening_vectorizer": opening_vectorizer,
        "opening_matrix": opening_matrix,
        "technology_vectorizer": technology_vectorizer,
        "technology_matrix": technology_matrix,
        "build_seconds": time.perf_counter() - started,
        "meta": {"n_tasks": len(task_docs), "n_occupations": len(codes),
                 "n_titles": len(title_fields["title_strings"]), "with_dwas": with_dwas,
                 "lsa_components": n_components},
    }


def _task_rows(tasks: pl.DataFrame) -> pl.DataFrame:
    """Non-blank task statements, one per task_id, sorted by occupation then task_id."""
    tasks = (tasks.select("onet_soc_code", pl.col("task_id").cast(pl.Int64), "task")
             .filter(pl.col("task").is_not_null() & (pl.col("task").str.strip_chars() != ""))
             .unique(subset=["task_id"], keep="first").sort("onet_soc_code", "task_id"))
    if tasks.is_empty():
        raise ValueError("TaskIndex.build: the tasks frame has no task statements")
    return tasks


def _with_dwa_titles(tasks: pl.DataFrame, task_dwas: pl.DataFrame | None) -> pl.DataFrame:
    """tasks plus `dwa_title`: its DWA titles joined by '. ' ('' without task_dwas)."""
    if task_dwas is not None and not task_dwas.is_empty():
        dwa_text = (task_dwas.select(pl.col("task_id").cast(pl.Int64), "dwa_title").unique()
                    .sort("task_id", "dwa_title")
                    .group_by("task_id", maintain_order=True).agg(pl.col("dwa_title").str.join(". ")))
        tasks = tasks.join(dwa_text, on="task_id", how="left")
    else:
        tasks = tasks.with_columns(pl.lit(None, dtype=pl.String).alias("dwa_title"))
    return tasks.with_columns(pl.col("dwa_title").fill_null(""))


def _title_rows(job_titles: pl.DataFrame, codes: list[str], titles_of: list[str]) -> pl.DataFrame:
    """One row per (occupation, job title) with its best source weight; the official title always counts;
    rows grouped by occupation for reduceat."""
    titles = pl.concat([
        pl.DataFrame({"onet_soc_code": codes, "job_title": titles_of, "title_source": ["title"] * len(codes)}),
        job_titles.select("onet_soc_code", "job_title", "title_source"),
    ]).filter(pl.col("onet_soc_code").is_in(codes) & pl.col("job_title").is_not_null()).with_columns(
        pl.col("job_title").str.strip_chars()).filter(pl.col("job_title") != "")
    return (titles.with_columns(pl.col("title_source").replace_strict(
        TITLE_SOURCE_WEIGHTS, default=0.9, return_dtype=pl.Float64).alias("weight"))
        .group_by("onet_soc_code", "job_title").agg(pl.col("weight").max())
        .sort("onet_soc_code", "job_title"))


def _title_fields(titles: pl.DataFrame, codes: list[str], code_index: dict[str, int]) -> dict[str, Any]:
    """The TaskIndex fields of the job titles: strings, head nouns, source weights, occupation starts."""
    title_strings = titles["job_title"].to_list()
    title_occupation = np.array([code_index[c] for c in titles["onet_soc_code"]], dtype=np.int32)
    heads = [head_noun(t) for t in title_strings]
    head_ids = {h: i for i, h in enumerate(sorted(set(heads) - {""}))}
    return {
        "title_strings": title_strings,
        "title_head_ids": np.array([head_ids.get(h, -1) for h in heads], dtype=np.int32),
        "title_weights": titles["weight"].to_numpy().astype(np.float32),
        "title_starts": np.searchsorted(title_occupation, np.arange(len(codes))).astype(np.int64),
        "head_ids": head_ids,
    }


def _technology(technology_skills: pl.DataFrame, codes: list[str]) -> tuple[CountVectorizer, sp.csr_matrix]:
    """Binary words of each occupation's technology examples, weighted by idf over the occupations listing
    them (occupations x words)."""
    examples = (technology_skills.select("onet_soc_code", "example")
                .filter(pl.col("onet_soc_code").is_in(codes) & pl.col("example").is_not_null())
                .group_by("onet_soc_code").agg(pl.col("example").str.join(". ")))
    examples_by_code = dict(zip(examples["onet_soc_code"], examples["example"], strict=True))
    technology_vectorizer = CountVectorizer(analyzer=pre_analyzed, binary=True, dtype=np.float32)
    technology_counts = technology_vectorizer.fit_transform(
        [word_tokens(examples_by_code.get(c, "")) for c in codes]).tocsc()
    occupations_listing = np.diff(technology_counts.indptr)
    technology_idf = np.log(len(codes) / np.maximum(occupations_listing, 1)).astype(np.float32)
    return technology_vectorizer, (technology_counts @ sp.diags(technology_idf)).tocsr()


def _occupation_tokens(tasks: pl.DataFrame, technology_skills: pl.DataFrame, codes: list[str],
                       description_tokens: list[list[str]], opening_tokens: list[list[str]],
                       task_tokens: list[list[str]]) -> list[list[str]]:
    """The word tokens of one document per occupation: title and description, job titles, task statements
    with their DWA titles (tasks are grouped by occupation), technology examples and commodity titles."""
    tech = (technology_skills.select("onet_soc_code", "example", "commodity_title")
            .filter(pl.col("onet_soc_code").is_in(codes))
            .with_columns(pl.concat_str([pl.col("example").fill_null(""),
                                         pl.col("commodity_title").fill_null("")], separator=" "))
            .group_by("onet_soc_code").agg(pl.col("example").str.join(". ")))
    tech_by_code = dict(zip(tech["onet_soc_code"], tech["example"], strict=True))
    of_code: dict[str, list[str]] = {}
    for code, tokens in zip(tasks["onet_soc_code"], task_tokens, strict=True):
        of_code.setdefault(code, []).extend(tokens)
    return [[*description_tokens[i], *opening_tokens[i], *of_code.get(c, []),
             *word_tokens(tech_by_code.get(c, ""))] for i, c in enumerate(codes)]


def _fit(docs: Sequence[str]) -> tuple[TfidfVectorizer, sp.csr_matrix]:
    return _fit_tokens([word_tokens(d) for d in docs])


def _fit_tokens(tokens: Sequence[list[str]]) -> tuple[TfidfVectorizer, sp.csr_matrix]:
    vectorizer = tfidf_vectorizer()
    matrix = vectorizer.fit_transform([token_features(t) for t in tokens]).tocsr()
    return vectorizer, matrix


def _lsa(occupation_matrix: sp.csr_matrix, lsa_components: int, n_codes: int
         ) -> tuple[np.ndarray, np.ndarray, int]:
    """(projection, unit occupation embeddings, components kept) of LSA from the Gram matrix: X = U S V',
    a query q maps to q V = (q X') U / S, and q X' is the cosine row already computed for the document
    signal."""
    gram = (occupation_matrix @ occupation_matrix.T).toarray().astype(np.float64)
    # one BLAS thread: the decomposition's last bits depend on the thread count, so the index is the same on
    # every machine; and on 2 busy cores OpenBLAS's threads spin on this ~900 x 900 matrix (~4 CPU-s, not 0.2)
    with threadpool_limits(limits=1, user_api="blas"):
        eigenvalues, eigenvectors = np.linalg.eigh(gram)
    keep = np.argsort(-eigenvalues, kind="stable")[: max(1, min(lsa_components, n_codes - 1))]
    singular = np.sqrt(np.clip(eigenvalues[keep], 1e-12, None))
    vectors = eigenvectors[:, keep]
    vectors = vectors * np.where(vectors.sum(axis=0) < 0, -1.0, 1.0)  # fix the sign: deterministic
    lsa_occupations = vectors * singular
    lsa_occupations /= np.maximum(np.linalg.norm(lsa_occupations, axis=1, keepdims=True), 1e-12)
    return (vectors / singular).astype(np.float32), lsa_occupations.astype(np.float32), int(len(keep))
