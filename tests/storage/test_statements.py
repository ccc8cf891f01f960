"""Query-path statements: built once per SQL string, and run by storage.statements.fetch
with the same SQL, rows, access settings, listeners and error handling as SQLAlchemy's own
``conn.execute``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import TextClause, event
from sqlalchemy.exc import DBAPIError, ProgrammingError

from storage import KnowledgeStore, access, evidence, fulltext, scopes, search
from storage.statements import fetch, text
from tests.pg_fixtures import execute

SQL = ("SELECT s.name, s.n, s.name ILIKE '%b%' AS has_b, s.name % :q AS near, "
       "CAST(:when AS timestamptz) AS at, CAST(:ids AS text[]) AS ids "
       "FROM (VALUES ('abc', 1), ('xyz', 2)) AS s(name, n) WHERE s.n <= :n ORDER BY s.n")
PARAMS = {"q": "ab", "when": None, "ids": ["a", "b"], "n": 2}


def test_the_same_sql_gives_the_same_construct() -> None:
    first = text("SELECT 1 WHERE :a = :a")
    assert isinstance(first, TextClause) and text("SELECT 1 WHERE :a = :a") is first
    assert text("SELECT 2") is not first
    assert set(first.compile().params) == {"a"}


def test_the_query_path_runs_its_statements_with_fetch() -> None:
    assert search.fetch is evidence.fetch is scopes.fetch is fulltext.fetch is fetch


@pytest.fixture
def sent(store: KnowledgeStore) -> Iterator[list[str]]:
    """Statements the read engine's listeners see."""
    seen: list[str] = []

    def note(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(store.read_engine(), "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(store.read_engine(), "before_cursor_execute", note)


def test_fetch_sends_what_execute_sends_and_returns_the_same_rows(
        store: KnowledgeStore, sent: list[str]) -> None:
    with store.connect() as conn:
        expected = conn.execute(text(SQL), PARAMS).all()
        got = fetch(conn, SQL, PARAMS)
    assert sent[0] == sent[1] and "%%" in sent[1]  # the same text, '%' doubled
    assert [tuple(r) for r in got] == [tuple(r) for r in expected]
    assert [r._asdict() for r in got] == [dict(r._mapping) for r in expected]
    assert got[0].name == "abc" and got[0].ids == ["a", "b"] and got[0].at is None


def test_fetch_begins_the_transaction_with_the_requests_access(store: KnowledgeStore) -> None:
    execute(store, "INSERT INTO entities (id, name, normalized_name, type, scope) VALUES "
            "('e1', 'Ada', 'ada', 'person', 'team-a'), ('e2', 'Bob', 'bob', 'person', 'team-b')")
    visible = "SELECT id, current_setting('krag.read_scopes') AS scopes FROM entities ORDER BY id"
    with access.use_access(access.for_scopes(["team-a"], None)), store.connect() as conn:
        rows = fetch(conn, visible, {})  # the first statement of the transaction
        assert conn.in_transaction()
    assert [(r.id, r.scopes) for r in rows] == [("e1", "team-a")]
    with access.use_access(access.NO_ACCESS), store.connect() as conn:
        assert fetch(conn, visible, {}) == []  # row-level security, fail closed


def test_a_failed_statement_raises_sqlalchemys_error(store: KnowledgeStore) -> None:
    with store.connect() as conn:
        with pytest.raises(ProgrammingError) as caught:
            fetch(conn, "SELECT * FROM no_such_table WHERE id = :i", {"i": 1})
        assert isinstance(caught.value.orig, psycopg.errors.UndefinedTable)
        conn.rollback()
        assert fetch(conn, "SELECT 1 AS one", {})[0].one == 1  # the connection still works


def test_a_dropped_connection_is_invalidated_for_the_retry(store: KnowledgeStore) -> None:
    with store.connect() as conn:
        pid = fetch(conn, "SELECT pg_backend_pid() AS pid", {})[0].pid
        conn.commit()
        with store.transaction() as other:
            other.exec_driver_sql("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(DBAPIError) as caught:
            fetch(conn, "SELECT 1 AS one", {})
    assert caught.value.connection_invalidated  # what retrieval_base._with_retry retries on
    with store.connect() as conn:
        assert fetch(conn, "SELECT 1 AS one", {})[0].one == 1
