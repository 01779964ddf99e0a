"""The SOC 2018 major groups: codes, titles, and the major group of an O*NET-SOC code.

Its own module because coverage (models/coverage/), the regressions (models/regression.py), the figures and
the map all group occupations the same way, and none of them should import another to do it.
"""

from __future__ import annotations

import polars as pl

# The 22 civilian SOC 2018 major groups (military 55-0000 has no O*NET tasks and is not counted).
SOC_MAJOR_GROUPS: dict[str, str] = {
    "11-0000": "Management Occupations",
    "13-0000": "Business and Financial Operations Occupations",
    "15-0000": "Computer and Mathematical Occupations",
    "17-0000": "Architecture and Engineering Occupations",
    "19-0000": "Life, Physical, and Social Science Occupations",
    "21-0000": "Community and Social Service Occupations",
    "23-0000": "Legal Occupations",
    "25-0000": "Educational Instruction and Library Occupations",
    "27-0000": "Arts, Design, Entertainment, Sports, and Media Occupations",
    "29-0000": "Healthcare Practitioners and Technical Occupations",
    "31-0000": "Healthcare Support Occupations",
    "33-0000": "Protective Service Occupations",
    "35-0000": "Food Preparation and Serving Related Occupations",
    "37-0000": "Building and Grounds Cleaning and Maintenance Occupations",
    "39-0000": "Personal Care and Service Occupations",
    "41-0000": "Sales and Related Occupations",
    "43-0000": "Office and Administrative Support Occupations",
    "45-0000": "Farming, Fishing, and Forestry Occupations",
    "47-0000": "Construction and Extraction Occupations",
    "49-0000": "Installation, Maintenance, and Repair Occupations",
    "51-0000": "Production Occupations",
    "53-0000": "Transportation and Material Moving Occupations",
}


def major_group_of(code_col: str = "onet_soc_code") -> pl.Expr:
    """SOC major group code ('15-0000') from an O*NET-SOC or SOC code column."""
    return pl.col(code_col).str.slice(0, 2) + pl.lit("-0000")


def short_group_title(title: str) -> str:
    """'Computer and Mathematical Occupations' -> 'Computer and Mathematical' (for compact labels)."""
    return title.removesuffix(" Occupations").strip()


__all__ = ["SOC_MAJOR_GROUPS", "major_group_of", "short_group_title"]
