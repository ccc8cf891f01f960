"""Query-path statements are built once per SQL string (storage.statements)."""

from __future__ import annotations

from sqlalchemy import TextClause

from storage import evidence, scopes, search
from storage.statements import text


def test_the_same_sql_gives_the_same_construct() -> None:
    first = text("SELECT 1 WHERE :a = :a")
    assert isinstance(first, TextClause) and text("SELECT 1 WHERE :a = :a") is first
    assert text("SELECT 2") is not first
    assert set(first.compile().params) == {"a"}


def test_the_query_path_uses_the_cached_constructs() -> None:
    assert search.text is evidence.text is scopes.text is text
