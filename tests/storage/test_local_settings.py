"""Transaction-local settings of a search (storage.access.set_local): sent with the
transaction's BEGIN and access settings in one round trip, local to the transaction, and
with the row-level security settings of the request unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, text

from storage import KnowledgeStore, access

SHOW = ("SELECT current_setting('hnsw.ef_search'), current_setting('plan_cache_mode'), "
        "current_setting('krag.read_scopes', true), current_setting('krag.all_scopes', true)")


@pytest.fixture
def statements(store: KnowledgeStore) -> Iterator[list[str]]:
    """Statements the store's engine sends through its cursors (the BEGIN of a plain
    transaction and its settings go on the connection's own round trip)."""
    seen: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(" ".join(statement.split()))

    event.listen(store.read_engine(), "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(store.read_engine(), "before_cursor_execute", count)


def test_settings_ride_on_the_begin_of_a_new_transaction(
        store: KnowledgeStore, statements: list[str]) -> None:
    with access.use_access(access.for_scopes(["team-a", "shared"], "team-a")), \
            store.connect() as conn:
        access.set_local(conn, {"hnsw.ef_search": "123",
                                "plan_cache_mode": "force_generic_plan"})
        assert conn.in_transaction()
        got = conn.execute(text(SHOW)).one()
        conn.commit()
        assert tuple(got) == ("123", "force_generic_plan", "team-a,shared", "off")
        after = conn.execute(text(SHOW)).one()  # a new transaction: back to the defaults
        conn.commit()
    assert after[0] == "40" and after[1] == "force_custom_plan"
    assert not any("set_config" in s for s in statements)  # no statement of their own
    assert len(statements) == 2


def test_settings_inside_a_begun_transaction_are_one_statement(
        store: KnowledgeStore, statements: list[str]) -> None:
    with store.connect() as conn:
        conn.execute(text("SELECT 1"))
        access.set_local(conn, {"hnsw.ef_search": "77", "pg_trgm.similarity_threshold": "0.3"})
        got = conn.execute(text("SELECT current_setting('hnsw.ef_search'), "
                                "current_setting('pg_trgm.similarity_threshold'), "
                                "current_setting('krag.all_scopes', true)")).one()
        conn.rollback()
    assert tuple(got) == ("77", "0.3", "on")  # the tests' whole-store access still there
    assert sum("set_config" in s for s in statements) == 1


def test_an_engine_without_the_access_hook_still_gets_the_settings(store: KnowledgeStore) -> None:
    from sqlalchemy import create_engine

    plain = create_engine(store.read_engine().url)
    try:
        with plain.connect() as conn:
            access.set_local(conn, {"hnsw.ef_search": "55"})
            assert conn.execute(text("SELECT current_setting('hnsw.ef_search')")).scalar() == "55"
    finally:
        plain.dispose()


def test_a_bad_value_fails_as_the_statement_would(store: KnowledgeStore) -> None:
    from sqlalchemy.exc import DBAPIError

    with store.connect() as conn:
        with pytest.raises(DBAPIError, match="plan_cache_mode"):
            access.set_local(conn, {"plan_cache_mode": "sometimes"})
        conn.rollback()
        assert conn.execute(text("SELECT 1")).scalar() == 1  # the connection still serves
