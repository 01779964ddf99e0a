"""SOC helpers of label validation: codes and patterns, occupation titles to SOC, TheAgentCompany roles."""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl

# Titles that name a SOC group rather than one O*NET occupation (checked before the exact title match fails).
GROUP_TITLES: dict[str, list[str]] = {
    "buyers and purchasing agents": ["13-1020"],  # O*NET 13-1021, 13-1022, 13-1023
}

# TheAgentCompany role categories -> SOC patterns; used when models.labeling.offline has no TAC_ROLE_TO_SOC.
# SDE: software developers, QA analysts/testers, web developers, computer programmers.
# PM: project management specialists, IT project managers (15-1299), computer & information systems managers.
# HR: HR managers, HR specialists, compensation/training specialists, HR assistants.
# Admin: administrative services managers, office supervisors, secretaries/admin assistants, office clerks.
# DS: data scientists, statisticians, operations research analysts, database architects.
# Finance: financial managers, accountants/auditors, financial analysts, budget analysts, bookkeeping clerks.
FALLBACK_TAC_ROLE_TO_SOC: dict[str, list[str]] = {
    "SDE": ["15-1252", "15-1253", "15-1254", "15-1251"],
    "PM": ["13-1082", "15-1299", "11-3021", "11-9199"],
    "HR": ["11-3121", "13-1071", "13-1141", "13-1151", "43-4161"],
    "Admin": ["11-3012", "43-1011", "43-6011", "43-6014", "43-9061", "43-4171"],
    "DS": ["15-2051", "15-2041", "15-2031", "15-1243"],
    "Finance": ["11-3031", "13-2011", "13-2051", "13-2031", "43-3031"],
}
TAC_EXCLUDED_ROLES = {"Other"}


# --- SOC helpers --------------------------------------------------------------------------------------------

def soc6(onet_soc_code: str | None) -> str | None:
    """'13-2011.00' -> '13-2011' (the 6-digit SOC code)."""
    if onet_soc_code is None:
        return None
    return str(onet_soc_code)[:7]


def soc_pattern_prefix(pattern: str) -> str:
    """The prefix a 6-digit SOC code must have to match `pattern` (detailed, broad, minor or major group)."""
    code = soc6(pattern) or ""
    if not re.fullmatch(r"\d\d-\d{4}", code):
        raise ValueError(f"not a SOC code or group: {pattern!r}")
    if code.endswith("0000"):
        return code[:3]  # major group '15-'
    if code.endswith("00"):
        return code[:5]  # minor group '15-12'
    if code.endswith("0"):
        return code[:6]  # broad group '13-102'
    return code


def soc_matches(code: str | None, patterns: Iterable[str]) -> bool:
    if code is None:
        return False
    code = soc6(code) or ""
    return any(code.startswith(soc_pattern_prefix(p)) for p in patterns)


def norm_text(text: str | None) -> str:
    """Whitespace runs to one space, ends stripped, casefolded. str.split() splits where re's \\s+ matches (both
    take Py_UNICODE_ISSPACE), at a fifth of the cost (the gold matching normalizes every O*NET statement, ~19k)."""
    return " ".join((text or "").split()).casefold()


_PUNCTUATION = re.compile(r"[^\w\s]")


def _bare(title: str) -> str:
    """A title without punctuation: 'Purchasing Agents Except Wholesale' is O*NET's 'Purchasing Agents, Except
    Wholesale' (a source that drops O*NET's commas)."""
    return norm_text(_PUNCTUATION.sub(" ", title))


def map_titles_to_soc(titles: Iterable[str], occupations: pl.DataFrame
                      ) -> tuple[dict[str, list[str]], list[str]]:
    """Occupation title -> SOC patterns: exact case-insensitive match on onet_occupations.title, else the same
    without punctuation, else a known SOC group title (GROUP_TITLES). Returns the mapping and the titles left
    unmatched (sorted)."""
    by_title: dict[str, set[str]] = {}
    by_bare: dict[str, set[str]] = {}
    for row in occupations.select("onet_soc_code", "title").iter_rows():
        by_title.setdefault(norm_text(row[1]), set()).add(soc6(row[0]))
        by_bare.setdefault(_bare(row[1]), set()).add(soc6(row[0]))
    mapping: dict[str, list[str]] = {}
    unmatched: list[str] = []
    for title in sorted({t for t in titles if t}):
        key = norm_text(title)
        if key in by_title:
            mapping[title] = sorted(by_title[key])
        elif _bare(title) in by_bare:
            mapping[title] = sorted(by_bare[_bare(title)])
        elif key in GROUP_TITLES:
            mapping[title] = list(GROUP_TITLES[key])
        else:
            unmatched.append(title)
    return mapping, unmatched


def tac_role(category: str | None) -> str | None:
    """'Software Development Engineer (SDE)' -> 'SDE'; 'Finance' -> 'Finance'."""
    if not category:
        return None
    found = re.search(r"\(([^)]+)\)\s*$", category)
    return found.group(1).strip() if found else category.strip()


def normalise_role_mapping(mapping: dict) -> dict[str, list[str]]:
    """Accept role -> code, role -> [codes], with O*NET codes ('15-1252.00') or SOC codes/groups."""
    out: dict[str, list[str]] = {}
    for role, codes in mapping.items():
        items = [codes] if isinstance(codes, str) else list(codes)
        out[str(role)] = sorted({soc6(c) for c in items if c})
    return out
