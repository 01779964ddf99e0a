"""Text analysis of the offline labeler: word tokens and features, and the role phrases a prompt opens
with ('You are a Senior Staff Accountant at ...') with their head nouns."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

_TOKEN = re.compile(r"[a-z0-9][a-z0-9+#]*")
# URLs, e-mail addresses and file paths carry host and folder names ('the-agent-company.com' -> 'agent',
# 'company'), not work vocabulary.
_NOT_WORDS = re.compile(r"\b(?:https?://|www\.)\S+|\S+@\S+\.\w+|(?:[\w.-]*/){2,}[\w.-]*", re.IGNORECASE)
# No part of _NOT_WORDS matches whitespace, so each match lies inside one whitespace-free run holding '/', '@' or
# 'www.': only those runs are searched (the same text; on long prompts _NOT_WORDS tried at every character cost
# more than the rest of the tokenizing).
_MAY_NOT_BE_WORDS = re.compile(r"(?<!\S)[^\s/@]*(?:[/@]|www\.)\S*", re.IGNORECASE)

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


@lru_cache(maxsize=500_000)
def _word(token: str) -> str:
    """The stem of a token, or '' for a token that is not a word (stop word, digits, one letter)."""
    return "" if len(token) <= 1 or token in _STOP_WORDS or token.isdigit() else _stem(token)


def _lowered_words(text: str) -> str:
    """`text` lower-cased, every _NOT_WORDS match replaced by a space."""
    lowered = text.lower()
    if "/" not in text and "@" not in text and "www." not in lowered:  # most prompts: nothing to replace
        return lowered
    return _MAY_NOT_BE_WORDS.sub(lambda run: _NOT_WORDS.sub(" ", run.group()), text).lower()


def word_tokens(text: str) -> list[str]:
    """Lower-cased, stop-word-free, stemmed word tokens (digits-only tokens and single letters dropped)."""
    text = _lowered_words(text).replace("’", "'").replace("'s ", " ")
    return [w for w in map(_word, _TOKEN.findall(text)) if w]


def text_features(text: str) -> list[str]:
    """Unigrams plus adjacent bigrams of `word_tokens` ('staff accountant', 'audit sample')."""
    return token_features(word_tokens(text))


def token_features(tokens: list[str]) -> list[str]:
    """`text_features` of a text whose `word_tokens` are given."""
    return tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)]


def pre_analyzed(features: list[str]) -> list[str]:
    """Analyzer for vectorizers fed with `text_features` output (module level so the index pickles)."""
    return features


def tfidf_vectorizer() -> TfidfVectorizer:
    return TfidfVectorizer(analyzer=pre_analyzed, sublinear_tf=True, dtype=np.float32)


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

