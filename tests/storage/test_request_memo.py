"""Values a read-only request reads once (storage.request_memo): the planner's row counts
and the scope chain, counted as statements on the real PostgreSQL."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from graph_flows.services import ask
from graph_flows.shared.resources import Resources
from storage import KnowledgeStore, scopes
from storage.replicas import read_only
from storage.request_memo import once, peek, request_memo


def test_once_reads_once_per_request_and_every_time_outside() -> None:
    reads: list[int] = []

    def read() -> int:
        reads.append(1)
        return len(reads)

    assert once("k", read) == 1 and once("k", read) == 2  # no request: read each time
    with request_memo():
        assert once("k", read) == 3 and once("k", read) == 3 and peek("k") == 3
    with request_memo():  # a new request reads again
        assert peek("k") is None and once("k", read) == 4
    assert peek("k") is None


def test_one_request_s_threads_asking_at_once_read_once() -> None:
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from contextvars import copy_context

    started, release = threading.Event(), threading.Event()
    reads: list[int] = []

    def read() -> int:
        reads.append(1)
        started.set()
        release.wait(5)  # the other thread asks while this read is under way
        return 7

    with request_memo(), ThreadPoolExecutor(3) as pool:
        first = pool.submit(copy_context().run, once, "k", read)
        assert started.wait(5)
        second = pool.submit(copy_context().run, once, "k", read)
        other = pool.submit(copy_context().run, once, "other", lambda: 9)
        assert other.result(5) == 9  # another key is not held up by the read under way
        release.set()
        assert first.result(5) == second.result(5) == 7
    assert reads == [1]


def test_a_request_ended_in_another_context_ends_without_error_and_leaves_no_memo_there(
) -> None:
    from contextvars import copy_context

    def request() -> Iterator[None]:
        with request_memo():
            once("k", lambda: 1)
            yield

    ctx = copy_context()
    gen = request()
    ctx.run(next, gen)
    assert ctx.run(peek, "k") == 1
    gen.close()  # closed here, not in the context that entered it (a streamed request)
    assert peek("k") is None and once("k", lambda: 2) == 2  # nothing kept here


@pytest.fixture
def statements(seeded_store: KnowledgeStore) -> Iterator[Counter[str]]:
    """Statements run on any of the store's engines, by their first words."""
    seen: Counter[str] = Counter()

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        words = " ".join(statement.split())
        if words.startswith("SELECT reltuples") and "FROM pg_class" in words:
            seen["reltuples"] += 1
        elif words.startswith("WITH RECURSIVE chain"):
            seen["scope_chain"] += 1
        seen["all"] += 1

    from sqlalchemy.engine import Engine

    event.listen(Engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", count)


@pytest.mark.parametrize("recipe", ["ppr", "split"])
def test_a_question_reads_row_counts_and_the_scope_chain_once(
        resources: Resources, statements: Counter[str], recipe: str) -> None:
    out = ask.kag_query("default", "Who worked with Charles Babbage?", recipe=recipe)
    assert "Ada Lovelace" in out["context"]
    # entities' and relations' counts read once, together (before: 3-4 statements a
    # question, then one per table)
    assert statements["reltuples"] == 1
    assert statements["scope_chain"] == 1  # the access's read, reused by retrieval (before: 2)


def test_a_changed_parent_is_seen_by_the_next_request(store: KnowledgeStore) -> None:
    with store.transaction() as conn:
        scopes.set_parent(conn, "child", None)
    with read_only():
        with store.connect() as conn:
            assert scopes.scope_chain(conn, "child") == ["child"]
        assert scopes.known_chain("child") == ["child"]
    with store.transaction() as conn:  # a write outside any read-only request: no memo
        assert scopes.set_parent(conn, "child", "parent") == ["child", "parent"]
        assert scopes.scope_chain(conn, "child") == ["child", "parent"]
    with read_only():
        assert scopes.known_chain("child") is None
        with store.connect() as conn:
            assert scopes.scope_chain(conn, "child") == ["child", "parent"]
