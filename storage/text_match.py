"""Helpers for matching user text literally in SQL."""

from __future__ import annotations


def escape_like(term: str) -> str:
    """Escape ``\\``, ``%`` and ``_`` so a term matches literally inside a LIKE pattern.

    Use with the default escape character (backslash): ``col ILIKE '%' || :p || '%'``.
    """
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def contains_pattern(term: str) -> str:
    """``%term%`` with the term escaped."""
    return f"%{escape_like(term)}%"
