"""The `offline` labeler: a TF-IDF hybrid that maps a prompt to the O*NET tasks it exercises, no network.

How a prompt is scored (calibration and measured accuracy: docs/offline_labeler.md):

1. Occupation evidence, one score per O*NET occupation that has task statements (923 in O*NET 29.2):
   * role: prompts often open with the worker's role ("You are a Senior Staff Accountant at ...").
     The role phrase is cut out by regular expressions and matched against every O*NET job title
     (occupation titles, alternate, short and reported titles) with word uni+bigram TF-IDF; a title whose
     head noun ("accountant" in "Staff Accountant") differs from the role's head counts for less. The best
     title per occupation gives the role score; it enters squared so near-exact title matches dominate.
   * occupation document: the whole prompt vs. one document per occupation (title, description, job
     titles, task statements, DWA titles, technology examples and commodity titles), cosine TF-IDF.
   * latent semantic (LSA) similarity over the same occupation documents (computed from the 923x923 Gram
     matrix, so it is exact and deterministic, and costs one small matrix product per prompt).
   * technology mentions: the technology examples of O*NET Technology Skills ('GitLab', 'Docker',
     'Python'), each word weighted by how few occupations list it, summed per occupation. It counts only as
     far as no role was found (prompts that name a role are decided by it; terse agent tasks that name
     tools are not).
   * the prompt's opening (its first ~250 characters: the role and the setting) vs. the occupation's job
     titles and vs. the occupation document; the whole prompt vs. the occupation description; the clause
     around the role phrase vs. the occupation document.
   Each document signal is divided by its best value for the prompt (scale-free) and the signals are summed
   with the weights of `OfflineLabelerConfig`.
2. Task evidence: the prompt vs. each task statement (with its DWA titles), cosine TF-IDF.
3. A task scores `occupation score x (1 - w + w x task similarity / best task similarity within its
   occupation)`, w = `task_weight`: the best task of an occupation scores exactly the occupation's score, so
   occupations rank the same from the labels as from the evidence. A prompt keeps the best tasks while they
   score at least `relative_threshold` times the top task, at most `max_tasks` in all and
   `max_tasks_per_occupation` from one occupation (so the labels name several candidate occupations).

Everything is vectorised over a batch of prompts (sparse matrix products); the index is built once from the
reference frames and pickles.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse as sp
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer, TfidfVectorizer

from models import reference as ref
from models.labeling.base import LabelOutcome, PromptRecord, TaskLabel

INDEX_VERSION = "v1"  # bump when the index or the scoring changes: it is part of the label cache key
METHOD = "tfidf-hybrid"
LABELER_VERSION = f"offline-{METHOD}+{INDEX_VERSION}"

# TheAgentCompany role categories -> SOC codes or groups ('15-1200' = minor group 15-12, '13-2000' = 13-2).
# A prompt of the category counts as matched when its top occupation falls under one of the patterns.
# SDE: programmers, software developers, QA testers, web developers and designers, network/system and
#   database administrators, computer occupations n.e.c. (systems engineers/architects, web administrators).
# PM: project management specialists, IT project managers (15-1299.09), computer and information systems
#   managers, general and operations managers.
# HR: HR, compensation/benefits and training managers; HR, labor relations, compensation and training
#   specialists; HR assistants.
# Admin: administrative services and facilities managers, office supervisors, executive and other
#   secretaries/administrative assistants, general office clerks, receptionists.
# DS: data scientists (incl. business intelligence analysts), statisticians, operations research analysts,
#   database architects (incl. data warehousing specialists).
# Finance: financial managers, financial specialists (13-2: accountants, auditors, budget, credit, financial
#   and investment analysts, tax), financial clerks (43-3: bookkeeping, billing, payroll).
# 'Other' is not mapped and not scored.
TAC_ROLE_TO_SOC: dict[str, list[str]] = {
    "SDE": ["15-1251", "15-1252", "15-1253", "15-1254", "15-1255", "15-1244", "15-1242", "15-1299"],
    "PM": ["13-1082", "15-1299", "11-3021", "11-1021"],
    "HR": ["11-3121", "11-3111", "11-3131", "13-1071", "13-1075", "13-1141", "13-1151", "43-4161"],
    "Admin": ["11-3012", "11-3013", "43-1011", "43-6011", "43-6014", "43-9061", "43-4171"],
    "DS": ["15-2051", "15-2041", "15-2031", "15-1243"],
    "Finance": ["11-3031", "13-2000", "43-3000"],
}

# Official and incumbent-reported titles are the canonical names of an occupation; alternate titles are
# looser and short titles are abbreviations ("CTO"), so they count a little less.
TITLE_SOURCE_WEIGHTS: dict[str, float] = {"title": 1.0, "reported": 1.0, "alternate": 0.9, "short": 0.8}


def soc6(code: str) -> str:
    """The 6-digit SOC code of an O*NET-SOC code: '13-1021.00' -> '13-1021'."""
    return str(code)[:7]


# --------------------------------------------------------------------------------------------- text analysis
_TOKEN = re.compile(r"[a-z0-9][a-z0-9+#]*")
# URLs, e-mail addresses and file paths carry host and folder names ('the-agent-company.com' -> 'agent',
# 'company'), not work vocabulary.
_NOT_WORDS = re.compile(r"\b(?:https?://|www\.)\S+|\S+@\S+\.\w+|(?:[\w.-]*/){2,}[\w.-]*", re.IGNORECASE)
_STOP_WORDS = frozenset(ENGLISH_STOP_WORDS)
_SUFFIXES = (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("s", ""))


@lru_cache(maxsize=500_000)
def _stem(word: str) -> str:
    """A light suffix stripper (plurals, -ing, -ed): merges 'accountants'/'accountant' and 'auditing'/'audit'
    but keeps agent nouns apart from activities ('investigator' vs 'investigation'), which a full Porter
    stemmer merged without a measurable gain."""
    if len(word) <= 3:
        return word
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            return word[: -len(suffix)] + replacement
    return word


def word_tokens(text: str) -> list[str]:
    """Lower-cased, stop-word-free, stemmed word tokens (digits-only tokens and single letters dropped)."""
    text = _NOT_WORDS.sub(" ", text).lower().replace("’", "'").replace("'s ", " ")
    return [_stem(t) for t in _TOKEN.findall(text) if len(t) > 1 and t not in _STOP_WORDS and not t.isdigit()]


def text_features(text: str) -> list[str]:
    """Unigrams plus adjacent bigrams of `word_tokens` ('staff accountant', 'audit sample')."""
    tokens = word_tokens(text)
    return tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)]


def _pre_analyzed(features: list[str]) -> list[str]:
    """Analyzer for vectorizers fed with `text_features` output (module level so the index pickles)."""
    return features


def _vectorizer() -> TfidfVectorizer:
    return TfidfVectorizer(analyzer=_pre_analyzed, sublinear_tf=True, dtype=np.float32)


# ------------------------------------------------------------------------------------------ role extraction
_ARTICLE = r"(?:an?|the|our|my|your|one\s+of\s+(?:the|our)|part\s+of\s+(?:an?|the|our))\s+"
_ROLE_INTRO = re.compile(
    r"(?:\byou\s+are|\byou['’]re|\byou(?:\s+have|['’]ve)\s+been\s+(?:hired|engaged|retained|brought\s+on|"
    r"appointed|asked\s+to\s+(?:act|serve)|assigned)\s+as|\byou\s+(?:work|serve|act)\s+as|\bworking\s+as|"
    r"\bact\s+as|\bacting\s+as|\bin\s+your\s+(?:role|capacity)\s+as|\bpretend\s+(?:to\s+be|you\s+are)|"
    r"(?:^|[.!?\n])\s*as|\byou\s+are\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\s*,)\s+" + _ARTICLE,
    re.IGNORECASE,
)
_ROLE_LABEL = re.compile(r"\b(?:role|position|job\s+title|occupation|persona)\s*:\s*", re.IGNORECASE)
# Words that end a role phrase: prepositions and verbs introducing the employer, duty or setting.
_ROLE_END_WORDS = (
    "at|for|in|with|who|whose|that|which|working|responsible|on|within|serving|assigned|based|from|to|"
    "tasked|supporting|representing|caring|covering|leading|overseeing|involved|specializing|specialising|"
    "assisting|preparing|located|helping|of\\s+(?:an?|the|your|our|this|its|their)|by|where|when|under|"
    "reporting|looking|trying|currently|employed|asked|is|are|was|were|you|your|has|have|had|will|would|"
    "can|i|we|it|there|handling|managing|running|during|since|after|before|across|into|like|via|using"
)
_ROLE_END = re.compile(r"\s+(?:" + _ROLE_END_WORDS + r")\b|[.,;:!?()\[\]\n\"“”/]|\s[-–—]\s|[–—]",
                       re.IGNORECASE)
_LOWER_CONJUNCTION = re.compile(r"\s+(?:and|or|&)\s+(?![A-Z])")  # 'auditor and as part' ends; 'Parks and Recreation' not
_CLAUSE_END = re.compile(r"[.;:!?\n]|\s[-–—]\s")
_SENIORITY = re.compile(
    r"(?:senior|sr|junior|jr|mid-level|entry-level|lead|new|newly|recently|experienced|current|independent|"
    r"licensed|dedicated|seasoned|veteran|principal|certified|expert|skilled|helpful|young|highly|hired|"
    r"promoted|acting|interim|former|us|american|remote|freelance|contract|full-time|part-time)",
    re.IGNORECASE,
)
_NOT_A_ROLE = re.compile(
    r"^(?:result|such|well|follows|needed|usual|always|part|soon|much|many|long|far|an?\s+ai|ai|assistant|"
    r"language|large\s+language|helpful|agent|intelligent|autonomous|llm|model|chatbot|bot|expert\s+in)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RolePhrase:
    role: str  # 'Staff Accountant'
    clause: str  # the words after the intro up to the end of the clause: 'Staff Accountant at Aurisic'


def extract_role_phrases(prompt: str, head_chars: int = 1500, max_words: int = 6,
                         clause_words: int = 12) -> list[RolePhrase]:
    """Role phrases introduced near the start of a prompt ('You are a ...', 'As our ...', 'Role: ...').

    Seniority words are dropped unless they are the head ('Finance Lead' keeps 'Lead'). Whether a phrase
    names an occupation is decided later, against the head nouns of the O*NET job titles.
    """
    head = prompt[:head_chars].replace("U.S.", "US")
    found: list[RolePhrase] = []
    matches = sorted([*_ROLE_INTRO.finditer(head), *_ROLE_LABEL.finditer(head)], key=lambda m: m.start())
    for match in matches:
        rest = head[match.end(): match.end() + 300]
        if _NOT_A_ROLE.match(rest):
            continue
        end = _ROLE_END.search(rest)
        phrase = rest[: end.start()] if end else rest
        conjunction = _LOWER_CONJUNCTION.search(phrase)
        phrase = phrase[: conjunction.start()] if conjunction else phrase
        words = [w.strip("-'’") for w in phrase.split()]
        words = [w for i, w in enumerate(words) if w and (i == len(words) - 1 or not _SENIORITY.fullmatch(w))]
        role = " ".join(words[:max_words])
        if not role or any(r.role == role for r in found):
            continue
        clause_end = _CLAUSE_END.search(rest)
        clause = " ".join((rest[: clause_end.start()] if clause_end else rest).split()[:clause_words])
        found.append(RolePhrase(role, clause))
    return found


_HEAD_SPLIT = re.compile(r"\s+(?:of|for|in|to)\s+", re.IGNORECASE)


def head_noun(phrase: str) -> str:
    """The stemmed head noun of a role or title: last word before 'of/for/in/to' ('Director of Nursing' ->
    'director'), parentheses ignored ('Chief Technology Officer (CTO)' -> 'officer')."""
    part = _HEAD_SPLIT.split(phrase, maxsplit=1)[0]
    tokens = word_tokens(re.sub(r"\(.*?\)", " ", part)) or word_tokens(part)
    return tokens[-1] if tokens else ""


# ------------------------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class OfflineLabelerConfig:
    """Scoring weights and the label-selection rule; defaults calibrated in docs/offline_labeler.md."""

    max_tasks: int = 20  # cap on tasks kept per prompt
    relative_threshold: float = 0.3  # keep tasks scoring >= this x the prompt's top task score
    max_tasks_per_occupation: int = 5  # so a prompt's labels can name several candidate occupations
    task_weight: float = 0.3  # task score = occupation score x (1 - w + w x relative task similarity)
    # occupation evidence weights (role enters squared; document signals are scaled to a best of 1)
    role_weight: float = 1.0
    document_weight: float = 0.25
    lsa_weight: float = 0.5
    opening_titles_weight: float = 0.5
    opening_document_weight: float = 0.5
    description_weight: float = 0.25
    role_clause_weight: float = 0.25
    technology_weight: float = 0.5  # scaled by (1 - the prompt's best role score)
    title_head_mismatch: float = 0.3  # a title whose head noun differs from the role's counts this much
    opening_chars: int = 250  # the prompt's opening: about the first sentence, where the role is
    shortlist_per_occupation: int = 8  # shortlist(): at most this many candidates from one occupation
    batch_size: int = 256  # prompts per matrix product

    def __post_init__(self) -> None:
        if self.max_tasks < 1 or self.max_tasks_per_occupation < 1 or self.shortlist_per_occupation < 1:
            raise ValueError("max_tasks, max_tasks_per_occupation and shortlist_per_occupation must be >= 1")
        if not 0.0 <= self.relative_threshold <= 1.0 or not 0.0 <= self.task_weight <= 1.0:
            raise ValueError("relative_threshold and task_weight must be in [0, 1]")
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")

    @property
    def version(self) -> str:
        """Short fingerprint of the settings that change labels (part of template_version)."""
        return (f"k{self.max_tasks}r{self.relative_threshold:g}o{self.max_tasks_per_occupation}"
                f"w{self.task_weight:g}")


# -------------------------------------------------------------------------------------------- reference data
def load_onet_reference_frames(onet_dir: Path | str) -> dict[str, pl.DataFrame]:
    """Read the raw O*NET text files into the frames `TaskIndex.build` takes, with the reference parsers
    (`models.reference`: the same validation and the same tables as the warehouse's onet_* assets).

    Returns tasks (onet_soc_code, task_id, task, task_type), occupations (onet_soc_code, title,
    description), job_titles (onet_soc_code, job_title, title_source), technology_skills (onet_soc_code,
    example, commodity_title, hot_technology) and, when `Tasks to DWAs.txt` and `DWA Reference.txt` exist,
    task_dwas (onet_soc_code, task_id, dwa_title).
    """
    onet_dir = Path(onet_dir)
    occupations = ref.parse_occupation_data(onet_dir / "Occupation Data.txt")
    frames = {
        "tasks": ref.parse_task_statements(onet_dir / "Task Statements.txt").select(
            "onet_soc_code", "task_id", "task", "task_type"
        ),
        "occupations": occupations,
        "job_titles": ref.build_onet_job_titles(
            occupations,
            ref.parse_alternate_titles(onet_dir / "Alternate Titles.txt"),
            ref.parse_reported_titles(onet_dir / "Sample of Reported Titles.txt"),
        ),
        "technology_skills": ref.parse_technology_skills(onet_dir / "Technology Skills.txt").select(
            "onet_soc_code", "example", "commodity_title", "hot_technology"
        ),
    }
    tasks_to_dwas, dwa_reference = onet_dir / "Tasks to DWAs.txt", onet_dir / "DWA Reference.txt"
    if tasks_to_dwas.exists() and dwa_reference.exists():
        frames["task_dwas"] = ref.build_task_dwas(
            ref.parse_tasks_to_dwas(tasks_to_dwas), ref.parse_dwa_reference(dwa_reference)
        )
    return frames


def _scaled_to_best(scores: np.ndarray) -> np.ndarray:
    """Divide each row by its maximum (rows with no positive score stay 0)."""
    best = scores.max(axis=1, keepdims=True)
    return np.where(best > 0, scores / np.where(best > 0, best, 1.0), 0.0).astype(np.float32)


def _dense(matrix: Any) -> np.ndarray:
    return np.asarray(matrix.toarray() if sp.issparse(matrix) else matrix, dtype=np.float32)


# --------------------------------------------------------------------------------------------------- index
@dataclass
class _BatchEvidence:
    occupation: np.ndarray  # n x occupations, combined occupation score (scaled to a best of 1 per prompt)
    task: np.ndarray  # n x tasks, task similarity / the best similarity within the task's occupation
    role: np.ndarray  # n x occupations, role-title score in [0, 1]
    roles: list[list[RolePhrase]]
    task_queries: sp.csr_matrix  # n x task vocabulary (for rationales)


@dataclass
class TaskIndex:
    """O*NET tasks, occupations and job titles as TF-IDF matrices; build once with `TaskIndex.build`."""

    occupation_codes: np.ndarray  # occupations with task statements, sorted
    occupation_titles: list[str]
    task_ids: np.ndarray  # int64
    task_occupation: np.ndarray  # index into occupation_codes, per task (tasks grouped by occupation)
    task_starts: np.ndarray  # first task row of each occupation (for np.maximum.reduceat)
    task_texts: list[str]
    occupation_vectorizer: TfidfVectorizer
    occupation_matrix: sp.csr_matrix  # occupation documents
    lsa_projection: np.ndarray  # occupations x k: cosine row -> LSA query embedding
    lsa_occupations: np.ndarray  # occupations x k, unit rows
    description_vectorizer: TfidfVectorizer
    description_matrix: sp.csr_matrix
    task_vectorizer: TfidfVectorizer
    task_matrix: sp.csr_matrix
    task_features: np.ndarray  # task vocabulary, for rationales
    title_vectorizer: TfidfVectorizer
    title_matrix: sp.csr_matrix  # one row per job title, rows grouped by occupation
    title_strings: list[str]
    title_head_ids: np.ndarray  # head noun id per title
    title_weights: np.ndarray  # source weight per title
    title_starts: np.ndarray  # first title row of each occupation (for np.maximum.reduceat)
    head_ids: dict[str, int]  # head noun -> id; a role phrase must end in one of these
    opening_vectorizer: TfidfVectorizer
    opening_matrix: sp.csr_matrix  # one document of all job titles per occupation
    technology_vectorizer: CountVectorizer  # binary words of technology examples
    technology_matrix: sp.csr_matrix  # occupations x words, idf over occupations where listed, else 0
    build_seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    # -- build
    @classmethod
    def build(cls, tasks: pl.DataFrame, occupations: pl.DataFrame, job_titles: pl.DataFrame,
              technology_skills: pl.DataFrame, task_dwas: pl.DataFrame | None = None, *,
              lsa_components: int = 100) -> TaskIndex:
        """Build from the reference frames (warehouse tables onet_tasks, onet_occupations, onet_job_titles,
        onet_technology_skills; optional task_dwas with onet_soc_code, task_id, dwa_title).

        Only occupations with task statements are labeled. Without task_dwas the task and occupation
        documents lack DWA titles (slightly weaker; see docs/offline_labeler.md).
        """
        started = time.perf_counter()
        tasks = (tasks.select("onet_soc_code", pl.col("task_id").cast(pl.Int64), "task")
                 .filter(pl.col("task").is_not_null() & (pl.col("task").str.strip_chars() != ""))
                 .unique(subset=["task_id"], keep="first").sort("onet_soc_code", "task_id"))
        if tasks.is_empty():
            raise ValueError("TaskIndex.build: the tasks frame has no task statements")
        codes = sorted(set(tasks["onet_soc_code"].to_list()))
        code_index = {c: i for i, c in enumerate(codes)}
        occupations = occupations.select("onet_soc_code", "title", "description").filter(
            pl.col("onet_soc_code").is_in(codes)).unique(subset=["onet_soc_code"], keep="first")
        title_by_code = dict(zip(occupations["onet_soc_code"], occupations["title"], strict=True))
        description_by_code = dict(zip(occupations["onet_soc_code"], occupations["description"], strict=True))
        titles_of = [title_by_code.get(c) or c for c in codes]

        if task_dwas is not None and not task_dwas.is_empty():
            dwa_text = (task_dwas.select(pl.col("task_id").cast(pl.Int64), "dwa_title").unique()
                        .sort("task_id", "dwa_title")
                        .group_by("task_id", maintain_order=True).agg(pl.col("dwa_title").str.join(". ")))
            tasks = tasks.join(dwa_text, on="task_id", how="left")
        else:
            tasks = tasks.with_columns(pl.lit(None, dtype=pl.String).alias("dwa_title"))
        tasks = tasks.with_columns(pl.col("dwa_title").fill_null(""))
        task_occupation = np.array([code_index[c] for c in tasks["onet_soc_code"]], dtype=np.int32)
        task_docs = [f"{t}. {d}" for t, d in zip(tasks["task"], tasks["dwa_title"], strict=True)]

        # job titles: the official title always counts; rows grouped by occupation for reduceat
        titles = pl.concat([
            pl.DataFrame({"onet_soc_code": codes, "job_title": titles_of, "title_source": ["title"] * len(codes)}),
            job_titles.select("onet_soc_code", "job_title", "title_source"),
        ]).filter(pl.col("onet_soc_code").is_in(codes) & pl.col("job_title").is_not_null()).with_columns(
            pl.col("job_title").str.strip_chars()).filter(pl.col("job_title") != "")
        titles = (titles.with_columns(pl.col("title_source").replace_strict(
            TITLE_SOURCE_WEIGHTS, default=0.9, return_dtype=pl.Float64).alias("weight"))
            .group_by("onet_soc_code", "job_title").agg(pl.col("weight").max())
            .sort("onet_soc_code", "job_title"))
        title_strings = titles["job_title"].to_list()
        title_occupation = np.array([code_index[c] for c in titles["onet_soc_code"]], dtype=np.int32)
        title_starts = np.searchsorted(title_occupation, np.arange(len(codes))).astype(np.int64)
        heads = [head_noun(t) for t in title_strings]
        head_ids = {h: i for i, h in enumerate(sorted(set(heads) - {""}))}
        title_head_ids = np.array([head_ids.get(h, -1) for h in heads], dtype=np.int32)

        titles_text = titles.group_by("onet_soc_code", maintain_order=True).agg(pl.col("job_title").str.join(". "))
        titles_by_code = dict(zip(titles_text["onet_soc_code"], titles_text["job_title"], strict=True))
        tech = (technology_skills.select("onet_soc_code", "example", "commodity_title")
                .filter(pl.col("onet_soc_code").is_in(codes))
                .with_columns(pl.concat_str([pl.col("example").fill_null(""),
                                             pl.col("commodity_title").fill_null("")], separator=" "))
                .group_by("onet_soc_code").agg(pl.col("example").str.join(". ")))
        tech_by_code = dict(zip(tech["onet_soc_code"], tech["example"], strict=True))
        task_text = (tasks.group_by("onet_soc_code", maintain_order=True)
                     .agg(pl.concat_str(["task", "dwa_title"], separator=". ").str.join(" ")))
        task_text_by_code = dict(zip(task_text["onet_soc_code"], task_text["task"], strict=True))

        examples = (technology_skills.select("onet_soc_code", "example")
                    .filter(pl.col("onet_soc_code").is_in(codes) & pl.col("example").is_not_null())
                    .group_by("onet_soc_code").agg(pl.col("example").str.join(". ")))
        examples_by_code = dict(zip(examples["onet_soc_code"], examples["example"], strict=True))
        technology_vectorizer = CountVectorizer(analyzer=_pre_analyzed, binary=True, dtype=np.float32)
        technology_counts = technology_vectorizer.fit_transform(
            [word_tokens(examples_by_code.get(c, "")) for c in codes]).tocsc()
        occupations_listing = np.diff(technology_counts.indptr)
        technology_idf = np.log(len(codes) / np.maximum(occupations_listing, 1)).astype(np.float32)
        technology_matrix = (technology_counts @ sp.diags(technology_idf)).tocsr()

        description_docs = [f"{titles_of[i]}. {description_by_code.get(c) or ''}" for i, c in enumerate(codes)]
        occupation_docs = [
            " ".join([description_docs[i], titles_by_code.get(c, ""), task_text_by_code.get(c, ""),
                      tech_by_code.get(c, "")])
            for i, c in enumerate(codes)
        ]

        def fit(docs: Sequence[str]) -> tuple[TfidfVectorizer, sp.csr_matrix]:
            vectorizer = _vectorizer()
            matrix = vectorizer.fit_transform([text_features(d) for d in docs]).tocsr()
            return vectorizer, matrix

        occupation_vectorizer, occupation_matrix = fit(occupation_docs)
        description_vectorizer, description_matrix = fit(description_docs)
        task_vectorizer, task_matrix = fit(task_docs)
        title_vectorizer, title_matrix = fit(title_strings)
        opening_vectorizer, opening_matrix = fit([titles_by_code.get(c, "") for c in codes])

        # LSA from the Gram matrix: X = U S V', a query q maps to q V = (q X') U / S, and q X' is the cosine
        # row already computed for the document signal.
        gram = (occupation_matrix @ occupation_matrix.T).toarray().astype(np.float64)
        eigenvalues, eigenvectors = np.linalg.eigh(gram)
        keep = np.argsort(-eigenvalues, kind="stable")[: max(1, min(lsa_components, len(codes) - 1))]
        singular = np.sqrt(np.clip(eigenvalues[keep], 1e-12, None))
        vectors = eigenvectors[:, keep]
        vectors = vectors * np.where(vectors.sum(axis=0) < 0, -1.0, 1.0)  # fix the sign: deterministic
        lsa_occupations = vectors * singular
        lsa_occupations /= np.maximum(np.linalg.norm(lsa_occupations, axis=1, keepdims=True), 1e-12)

        return cls(
            occupation_codes=np.array(codes),
            occupation_titles=titles_of,
            task_ids=tasks["task_id"].to_numpy().astype(np.int64),
            task_occupation=task_occupation,
            task_starts=np.searchsorted(task_occupation, np.arange(len(codes))).astype(np.int64),
            task_texts=tasks["task"].to_list(),
            occupation_vectorizer=occupation_vectorizer,
            occupation_matrix=occupation_matrix,
            lsa_projection=(vectors / singular).astype(np.float32),
            lsa_occupations=lsa_occupations.astype(np.float32),
            description_vectorizer=description_vectorizer,
            description_matrix=description_matrix,
            task_vectorizer=task_vectorizer,
            task_matrix=task_matrix,
            task_features=task_vectorizer.get_feature_names_out(),
            title_vectorizer=title_vectorizer,
            title_matrix=title_matrix,
            title_strings=title_strings,
            title_head_ids=title_head_ids,
            title_weights=titles["weight"].to_numpy().astype(np.float32),
            title_starts=title_starts,
            head_ids=head_ids,
            opening_vectorizer=opening_vectorizer,
            opening_matrix=opening_matrix,
            technology_vectorizer=technology_vectorizer,
            technology_matrix=technology_matrix,
            build_seconds=time.perf_counter() - started,
            meta={"n_tasks": len(task_docs), "n_occupations": len(codes), "n_titles": len(title_strings),
                  "with_dwas": task_dwas is not None and not task_dwas.is_empty(),
                  "lsa_components": int(len(keep))},
        )

    # -- public queries
    def task_info(self) -> dict[int, tuple[str, str]]:
        """task_id -> (task statement, occupation title); the LLM labeler shows these to the model."""
        return {int(t): (s, self.occupation_titles[o])
                for t, s, o in zip(self.task_ids, self.task_texts, self.task_occupation, strict=True)}

    def shortlist(self, prompt: str, k: int, config: OfflineLabelerConfig | None = None
                  ) -> list[tuple[int, str, float]]:
        """The k best candidate tasks (task_id, onet_soc_code, score), best first, at most
        `config.shortlist_per_occupation` from one occupation so the list spans several occupations."""
        config = config or OfflineLabelerConfig()
        if not prompt or not prompt.strip() or k < 1:
            return []
        scores = self.task_scores(self.evidence([prompt], config), 0, config)
        picked = self._select(scores, k, 0.0, config.shortlist_per_occupation)
        return [(int(self.task_ids[j]), str(self.occupation_codes[self.task_occupation[j]]), float(scores[j]))
                for j in picked]

    def rank_occupations(self, prompt: str, k: int, config: OfflineLabelerConfig | None = None
                         ) -> list[tuple[str, float]]:
        """The k best occupations (onet_soc_code, combined score scaled to a best of 1), best first."""
        config = config or OfflineLabelerConfig()
        if not prompt or not prompt.strip() or k < 1:
            return []
        scores = self.evidence([prompt], config).occupation[0]
        order = np.argsort(-scores, kind="stable")[:k]
        return [(str(self.occupation_codes[j]), float(scores[j])) for j in order if scores[j] > 0]

    # -- scoring
    def evidence(self, prompts: Sequence[str], config: OfflineLabelerConfig) -> _BatchEvidence:
        """Occupation and task scores for a batch of prompts (one sparse product per signal)."""
        return self._evidence(prompts, config)[0]

    def evidence_with_signals(self, prompts: Sequence[str], config: OfflineLabelerConfig
                              ) -> tuple[_BatchEvidence, dict[str, np.ndarray]]:
        """`evidence` plus each occupation signal on its own (n x occupations, as summed into the
        combined score: role squared, document signals scaled to a best of 1, technology scaled by the
        absence of a role) and the raw task similarities (n x tasks): the selector's features."""
        return self._evidence(prompts, config)

    def _evidence(self, prompts: Sequence[str], config: OfflineLabelerConfig
                  ) -> tuple[_BatchEvidence, dict[str, np.ndarray]]:
        features = [text_features(p) for p in prompts]
        occupation_query = self.occupation_vectorizer.transform(features)
        document = _dense(occupation_query @ self.occupation_matrix.T)
        description = _dense(self.description_vectorizer.transform(features) @ self.description_matrix.T)
        task_query = self.task_vectorizer.transform(features).tocsr()
        task = _dense(task_query @ self.task_matrix.T)
        openings = [text_features(p[: config.opening_chars]) for p in prompts]
        opening = _dense(self.opening_vectorizer.transform(openings) @ self.opening_matrix.T)
        opening_document = _dense(self.occupation_vectorizer.transform(openings) @ self.occupation_matrix.T)

        # row by row: a batched matrix product may round differently with the batch size, and labels
        # must not depend on which prompts share a batch
        lsa = np.zeros_like(document)
        for i, row in enumerate(document):
            query = row @ self.lsa_projection
            query /= max(float(np.linalg.norm(query)), 1e-12)
            lsa[i] = np.clip(self.lsa_occupations @ query, 0.0, None)

        roles = [self.occupation_roles(p) for p in prompts]
        role = self._role_scores(roles, config)
        clauses = [text_features(" ".join(r.clause for r in rs)) for rs in roles]
        clause = _dense(self.occupation_vectorizer.transform(clauses) @ self.occupation_matrix.T)
        technology = _dense(self.technology_vectorizer.transform(features) @ self.technology_matrix.T)
        without_role = 1.0 - role.max(axis=1, keepdims=True)

        signals = {
            "role": role ** 2,
            "document": _scaled_to_best(document),
            "lsa": _scaled_to_best(lsa),
            "opening_titles": _scaled_to_best(opening),
            "opening_document": _scaled_to_best(opening_document),
            "description": _scaled_to_best(description),
            "role_clause": _scaled_to_best(clause),
            "technology": without_role * _scaled_to_best(technology),
        }
        occupation = (config.role_weight * signals["role"]
                      + config.document_weight * signals["document"]
                      + config.lsa_weight * signals["lsa"]
                      + config.opening_titles_weight * signals["opening_titles"]
                      + config.opening_document_weight * signals["opening_document"]
                      + config.description_weight * signals["description"]
                      + config.role_clause_weight * signals["role_clause"]
                      + config.technology_weight * signals["technology"])
        best_in_occupation = np.maximum.reduceat(task, self.task_starts, axis=1)[:, self.task_occupation]
        relative_task = np.where(best_in_occupation > 0, task / np.where(best_in_occupation > 0,
                                                                         best_in_occupation, 1.0), 0.0)
        signals["document_raw"] = document
        signals["task_raw"] = task
        evidence = _BatchEvidence(_scaled_to_best(occupation), relative_task.astype(np.float32), role, roles,
                                  task_query)
        return evidence, signals

    def task_scores(self, evidence: _BatchEvidence, row: int, config: OfflineLabelerConfig) -> np.ndarray:
        """Task scores of one prompt of the batch: occupation score x (1 - w + w x relative task similarity)."""
        return evidence.occupation[row][self.task_occupation] * (
            1.0 - config.task_weight + config.task_weight * evidence.task[row])

    def occupation_roles(self, prompt: str) -> list[RolePhrase]:
        """The prompt's role phrases whose head noun is the head of some O*NET job title."""
        return [r for r in extract_role_phrases(prompt) if head_noun(r.role) in self.head_ids]

    def _role_title_scores(self, phrases: Sequence[RolePhrase], config: OfflineLabelerConfig) -> np.ndarray:
        """phrases x titles: TF-IDF cosine with each job title, discounted on a head-noun mismatch and
        weighted by the title's source."""
        query = self.title_vectorizer.transform([text_features(r.role) for r in phrases])
        scores = _dense(query @ self.title_matrix.T)
        role_heads = np.array([self.head_ids.get(head_noun(r.role), -2) for r in phrases])
        same_head = self.title_head_ids[None, :] == role_heads[:, None]
        return scores * np.where(same_head, 1.0, config.title_head_mismatch).astype(np.float32) * self.title_weights

    def _role_scores(self, roles: list[list[RolePhrase]], config: OfflineLabelerConfig) -> np.ndarray:
        out = np.zeros((len(roles), len(self.occupation_codes)), dtype=np.float32)
        flat = [(i, r) for i, rs in enumerate(roles) for r in rs]
        for start in range(0, len(flat), 64):  # 64 phrases x ~60k titles per dense block
            chunk = flat[start: start + 64]
            per_occupation = np.maximum.reduceat(
                self._role_title_scores([r for _, r in chunk], config), self.title_starts, axis=1)
            for (i, _), row in zip(chunk, per_occupation, strict=True):
                np.maximum(out[i], row, out=out[i])
        return np.clip(out, 0.0, 1.0)

    @staticmethod
    def _cap_per_group(order: np.ndarray, groups: np.ndarray, per_group: int, limit: int) -> list[int]:
        counts: dict[int, int] = {}
        picked: list[int] = []
        for j in order:
            g = int(groups[j])
            if counts.get(g, 0) >= per_group:
                continue
            counts[g] = counts.get(g, 0) + 1
            picked.append(int(j))
            if len(picked) >= limit:
                break
        return picked

    def _select(self, scores: np.ndarray, limit: int, relative_threshold: float, per_occupation: int
                ) -> list[int]:
        """Greedy pick of task rows by score: >= relative_threshold x top, per-occupation cap, limit."""
        top = float(scores.max()) if scores.size else 0.0
        if top <= 0:
            return []
        pool = min(scores.size, max(limit * 20, 200))
        candidates = np.argpartition(-scores, pool - 1)[:pool] if pool < scores.size else np.arange(scores.size)
        # stable order: score descending, then task row (task_id order) for ties
        candidates = candidates[np.lexsort((candidates, -scores[candidates]))]
        candidates = candidates[scores[candidates] >= relative_threshold * top]
        return self._cap_per_group(candidates, self.task_occupation, per_occupation, limit)

    def best_title(self, phrases: Sequence[RolePhrase], occupation: int, config: OfflineLabelerConfig
                   ) -> tuple[str, str, float] | None:
        """(role phrase, job title, score) of the best role-title match within one occupation."""
        if not phrases:
            return None
        lo = int(self.title_starts[occupation])
        hi = int(self.title_starts[occupation + 1]) if occupation + 1 < len(self.title_starts) else len(
            self.title_strings)
        scores = self._role_title_scores(phrases, config)[:, lo:hi]
        r, t = np.unravel_index(int(np.argmax(scores)), scores.shape)
        return phrases[r].role, self.title_strings[lo + t], float(scores[r, t])


# ------------------------------------------------------------------------------------------------- labeler
@dataclass(frozen=True)
class PromptRanking:
    """The ranked candidates of one prompt (not its labels), best first. GDPval/TheAgentCompany occupation
    top-k are measured on the retriever's occupation ranking (it reads a prompt's role best: GDPval top-1
    0.59 against 0.46 for the selector's), JobBench hit@k on the selector's task ranking."""

    occupations: list[tuple[str, float]]  # the retriever's ranking (onet_soc_code, combined score)
    tasks: list[tuple[int, str, float]]  # (task_id, onet_soc_code, p_exercised), by the selector
    selected_occupations: list[tuple[str, float]]  # the selector's (onet_soc_code, p listed by the judge)


class OfflineLabeler:
    """Labels prompts with O*NET tasks from a `TaskIndex`; implements models.labeling.base.Labeler.

    With a `selector` (the fitted models/labeling/selector.py, `OfflineLabeler.calibrated`) a prompt gets the
    tasks it exercises with calibrated probabilities, or none when it is not occupational work. Without one
    it keeps the retriever's best tasks (up to `config.max_tasks`), the method before the selector existed.
    """

    name = "offline"
    model = METHOD

    def __init__(self, index: TaskIndex, config: OfflineLabelerConfig = OfflineLabelerConfig(),
                 selector: Any = None) -> None:
        from models.labeling.selector import Selector

        self.index = index
        self.config = config
        self.selector = Selector(selector, index) if selector is not None else None
        self.contexts: dict[str, Any] = {}  # benchmark -> BenchmarkContext (see prepare)
        if self.selector is not None:
            self.model = f"{METHOD}+selector"
            self.template_version = f"{INDEX_VERSION}-{self.selector.fit.version}"
        else:
            self.template_version = f"{INDEX_VERSION}-{config.version}"

    @classmethod
    def calibrated(cls, index: TaskIndex, fit_path: str | Path | None = None) -> OfflineLabeler:
        """The default labeler: the retriever plus the fitted selector in models/labeling/selector_fit.json."""
        from models.labeling.selector import FIT_PATH, load_fit

        return cls(index, OfflineLabelerConfig(), load_fit(fit_path or FIT_PATH))

    @property
    def labeler_version(self) -> str:
        if self.selector is not None:
            return f"offline-calibrated+{INDEX_VERSION}+{self.selector.fit.version}"
        return LABELER_VERSION

    def prepare(self, prompts: Sequence[PromptRecord]) -> None:
        """Pool the evidence of each benchmark among `prompts` (all of a benchmark's landed prompts: the
        context is drawn from them) into its BenchmarkContext. label() and rankings() use the context of a
        prompt's benchmark; a benchmark not prepared gets its context from the prompts it is labeled with.
        Prompts already in the label cache keep the labels they got with the context of their time."""
        if self.selector is None:
            return
        from models.labeling.selector import context_sample

        by_benchmark: dict[str, list[PromptRecord]] = {}
        for record in prompts:
            if isinstance(record.prompt, str) and record.prompt.strip():
                by_benchmark.setdefault(record.benchmark, []).append(record)
        for benchmark, records in by_benchmark.items():
            sample = [records[i].prompt for i in context_sample([r.prompt_hash for r in records])]
            evidence, signals = self.index.evidence_with_signals(sample, self.config)
            self.contexts[benchmark] = self.selector.context(sample, evidence.occupation, evidence.task, signals)

    def _context(self, benchmark: str, records: Sequence[PromptRecord]) -> Any:
        if benchmark not in self.contexts:
            self.prepare([r for r in records if r.benchmark == benchmark])
        return self.contexts[benchmark]

    def rankings(self, prompts: Sequence[PromptRecord]) -> list[PromptRanking]:
        """The ranked candidates of each prompt (needs a selector): what validation's top-k metrics read."""
        if self.selector is None:
            raise ValueError("rankings() needs the calibrated selector (OfflineLabeler.calibrated)")
        index = self.index
        out: list[PromptRanking] = []
        size = self.config.batch_size
        for start in range(0, len(prompts), size):
            batch = list(prompts[start: start + size])
            texts = [p.prompt if isinstance(p.prompt, str) and p.prompt.strip() else " " for p in batch]
            evidence, signals = index.evidence_with_signals(texts, self.config)
            selections = self._select_batch(batch, prompts, texts, evidence, signals)
            for row, sel in enumerate(selections):
                combined = evidence.occupation[row]
                order = np.argsort(-combined, kind="stable")[:40]
                out.append(PromptRanking(
                    [(str(index.occupation_codes[o]), float(combined[o])) for o in order if combined[o] > 0],
                    [(int(index.task_ids[j]), str(index.occupation_codes[index.task_occupation[j]]), p)
                     for j, p in sel.ranking],
                    [(str(index.occupation_codes[o]), p) for o, p in sel.occupations]))
        return out

    def label(self, prompts: list[PromptRecord]) -> list[LabelOutcome]:
        """One outcome per prompt, in order; an empty prompt or one with no O*NET vocabulary gets an error."""
        outcomes: list[LabelOutcome | None] = [None] * len(prompts)
        usable: list[int] = []
        for i, record in enumerate(prompts):
            if not isinstance(record.prompt, str) or not record.prompt.strip():
                outcomes[i] = LabelOutcome(prompt_hash=record.prompt_hash, error="empty prompt")
            else:
                usable.append(i)
        size = self.config.batch_size
        for start in range(0, len(usable), size):
            batch = usable[start: start + size]
            texts = [prompts[i].prompt for i in batch]
            try:
                evidence, signals = self.index.evidence_with_signals(texts, self.config)
                selections = (self._select_batch([prompts[i] for i in batch], prompts, texts, evidence, signals)
                              if self.selector is not None else None)
            except Exception as exc:  # never fail a whole run for one batch: record it per prompt
                for i in batch:
                    outcomes[i] = LabelOutcome(prompt_hash=prompts[i].prompt_hash,
                                               error=f"scoring failed: {type(exc).__name__}: {exc}")
                continue
            for row, i in enumerate(batch):
                outcomes[i] = (self._selected_outcome(prompts[i], evidence, row, selections[row])
                               if selections is not None else self._outcome(prompts[i], evidence, row))
        return [o for o in outcomes if o is not None]

    def _outcome(self, record: PromptRecord, evidence: _BatchEvidence, row: int) -> LabelOutcome:
        try:
            index, config = self.index, self.config
            scores = index.task_scores(evidence, row, config)
            picked = index._select(scores, config.max_tasks, config.relative_threshold,
                                   config.max_tasks_per_occupation)
            if not picked:
                return LabelOutcome(prompt_hash=record.prompt_hash,
                                    error="no O*NET vocabulary in the prompt: nothing to match")
            rationales = self._rationales(evidence, row, picked)
            labels = [
                TaskLabel(task_id=int(index.task_ids[j]),
                          onet_soc_code=str(index.occupation_codes[index.task_occupation[j]]),
                          rank=rank, score=round(float(scores[j]), 6), rationale=rationales[k])
                for k, (rank, j) in enumerate(zip(range(1, len(picked) + 1), picked, strict=True))
            ]
            return LabelOutcome(prompt_hash=record.prompt_hash, labels=labels)
        except Exception as exc:  # one bad prompt must not sink the batch
            return LabelOutcome(prompt_hash=record.prompt_hash, error=f"labeling failed: {type(exc).__name__}: {exc}")

    def _select_batch(self, records: list[PromptRecord], everything: Sequence[PromptRecord], texts: list[str],
                      evidence: _BatchEvidence, signals: dict[str, np.ndarray]) -> list[Any]:
        """The selector's decisions for a batch, each prompt with its own benchmark's context."""
        assert self.selector is not None
        out: list[Any] = [None] * len(records)
        groups: dict[str, list[int]] = {}
        for row, record in enumerate(records):
            groups.setdefault(record.benchmark, []).append(row)
        for benchmark, rows in groups.items():
            picked = np.asarray(rows)
            part = {k: v[picked] for k, v in signals.items()}
            decisions = self.selector.select([texts[r] for r in rows], evidence.occupation[picked],
                                             evidence.task[picked], part, self._context(benchmark, everything))
            for r, decision in zip(rows, decisions, strict=True):
                out[r] = decision
        return out

    def _selected_outcome(self, record: PromptRecord, evidence: _BatchEvidence, row: int, selection: Any
                          ) -> LabelOutcome:
        """The selector's decision as an outcome: no labels for a not-work prompt, else its kept tasks."""
        try:
            p_work = round(selection.p_work, 6)
            if not selection.is_work:
                return LabelOutcome(prompt_hash=record.prompt_hash, is_work=False, p_work=p_work)
            picked = [j for j, _ in selection.tasks]
            rationales = self._rationales(evidence, row, picked)
            index = self.index
            labels = [
                TaskLabel(task_id=int(index.task_ids[j]),
                          onet_soc_code=str(index.occupation_codes[index.task_occupation[j]]),
                          rank=rank, score=round(p, 6), rationale=rationales[rank - 1], p_exercised=round(p, 6))
                for rank, (j, p) in enumerate(selection.tasks, start=1)
            ]
            return LabelOutcome(prompt_hash=record.prompt_hash, labels=labels, is_work=True, p_work=p_work)
        except Exception as exc:  # one bad prompt must not sink the batch
            return LabelOutcome(prompt_hash=record.prompt_hash, error=f"labeling failed: {type(exc).__name__}: {exc}")

    def _rationales(self, evidence: _BatchEvidence, row: int, picked: list[int]) -> list[str]:
        """'role "Staff Accountant" ~ title "Staff Accountant"; terms: audit, sample' per picked task."""
        index = self.index
        query = evidence.task_queries[row]
        shared = index.task_matrix[picked].multiply(query).tocsr()
        titles: dict[int, tuple[str, str, float] | None] = {}
        out: list[str] = []
        for k, j in enumerate(picked):
            occupation = int(index.task_occupation[j])
            parts: list[str] = []
            if evidence.role[row, occupation] >= 0.5:
                if occupation not in titles:
                    titles[occupation] = index.best_title(evidence.roles[row], occupation, self.config)
                match = titles[occupation]
                if match is not None:
                    parts.append(f'role "{match[0]}" ~ title "{match[1]}"')
            start, end = shared.indptr[k], shared.indptr[k + 1]
            if end > start:
                data, cols = shared.data[start:end], shared.indices[start:end]
                top = cols[np.lexsort((cols, -data))[:4]]
                parts.append("terms: " + ", ".join(str(index.task_features[c]) for c in top))
            if not parts:
                parts.append(f"occupation match: {index.occupation_titles[occupation]}")
            out.append("; ".join(parts))
        return out


# -------------------------------------------------------------------------------------- occupation ranking
def occupation_ranking_from_labels(labels: Iterable[TaskLabel], level: str = "onet") -> list[str]:
    """Rank the occupations of one prompt from its task labels, best first.

    An occupation ranks by its best label's score, then by the sum of its labels' scores, then by its best
    rank. The offline labeler gives an occupation's best task exactly the occupation's evidence score, so
    the best score is the occupation ranking; a plain sum would favour occupations for the number of their
    tasks kept, which the per-occupation cap makes arbitrary. level='soc' ranks 6-digit SOC codes (O*NET
    codes sharing a SOC code pool their tasks)."""
    if level not in {"onet", "soc"}:
        raise ValueError("level must be 'onet' or 'soc'")
    best: dict[str, float] = {}
    totals: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    for label in labels:
        code = soc6(label.onet_soc_code) if level == "soc" else label.onet_soc_code
        best[code] = max(best.get(code, float("-inf")), float(label.score))
        totals[code] = totals.get(code, 0.0) + float(label.score)
        best_rank[code] = min(best_rank.get(code, label.rank), label.rank)
    return sorted(totals, key=lambda c: (-round(best[c], 9), -totals[c], best_rank[c], c))
