"""Relevance scoring and the search split: small pure functions, testable without a database."""

from __future__ import annotations

import math

NAME_MATCH, SUMMARY_MATCH, BASE = 3, 2, 1
FACT_TEXT_MATCH, BOTH_ENDPOINTS, ONE_ENDPOINT = 2, 3, 1


def split_limit(limit: int, like_share: float) -> tuple[int, int]:
    """(LIKE share, trigram share) of a limit: 15 at 0.6 -> (9, 6); 20 -> (12, 8)."""
    like = min(limit, max(0, math.floor(limit * like_share + 0.5)))
    return like, limit - like


def needs_fallback(found: int, limit: int, ratio: float) -> bool:
    """Vector fallback when LIKE + trigram found under ``ratio`` of the limit."""
    return found < limit * ratio


def entity_score(name_match: bool, summary_match: bool) -> int:
    """Name match 3, summary match 2, base 1."""
    return BASE + NAME_MATCH * name_match + SUMMARY_MATCH * summary_match


def fact_score(text_match: bool, subject_in: bool, object_in: bool) -> int:
    """Base 1, fact text match 2, both endpoints among retrieved entities 3, one endpoint 1."""
    ends = BOTH_ENDPOINTS if subject_in and object_in else (
        ONE_ENDPOINT if subject_in or object_in else 0)
    return BASE + FACT_TEXT_MATCH * text_match + ends
