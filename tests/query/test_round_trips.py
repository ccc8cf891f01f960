"""Round trips of one question on the real PostgreSQL (issue 43, questions per core): the
neighbourhood in one statement, and the small searches sharing transactions
(graph_flows.query.retrieval_base._Metrics.run_together)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from graph_flows.query.retrieval_base import _Metrics
from graph_flows.services import ask
from graph_flows.shared.resources import Resources
from storage import KnowledgeStore, evidence, search


@pytest.fixture
def seen() -> Iterator[Counter[str]]:
    """Transactions begun and statements run on any engine, by kind."""
    counts: Counter[str] = Counter()

    def statement(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
        counts["statements"] += 1
        if " ".join(sql.split()).startswith("WITH seed AS"):
            counts["neighbourhood"] += 1

    def begin(conn: Any) -> None:
        counts["transactions"] += 1

    event.listen(Engine, "before_cursor_execute", statement)
    event.listen(Engine, "begin", begin)
    try:
        yield counts
    finally:
        event.remove(Engine, "before_cursor_execute", statement)
        event.remove(Engine, "begin", begin)


def test_a_question_fetches_its_neighbourhood_once_in_fewer_transactions(
        resources: Resources, seen: Counter[str]) -> None:
    with resources.store.transaction() as conn:  # passages with vectors: the ppr recipe
        evidence.fill_chunk_embeddings(conn, resources.embeddings.embed_documents)
    seen.clear()
    ask.kag_query("default", "Who worked with Charles Babbage?", recipe="ppr", max_rounds=1)
    warm = Counter(seen)  # the first question also reads what later ones take from memos
    seen.clear()
    out = ask.kag_query("default", "Who worked with Charles Babbage?", recipe="ppr",
                        max_rounds=1)
    assert "Ada Lovelace" in out["context"] and out["passages"]
    # the seeds' side and the seed passages' side were two statements reading the same
    # entities' passages; one now
    assert seen["neighbourhood"] == warm["neighbourhood"] == 1
    # 16 before (the searches one transaction each, the access's and the diagram's); the
    # neighbourhood one, the lexical searches two by two, the endpoints with the sources,
    # the passages' and the facts' nearest neighbours: 11
    assert seen["transactions"] <= 11, seen


def test_searches_run_together_keep_their_own_metrics(seeded_store: KnowledgeStore) -> None:
    engine = seeded_store.search_engine(5000)
    m = _Metrics()
    like, summary = m.run_together(engine, (
        ("entity_like", search.entity_like, ["default"], ["Babbage"], 5),
        ("entity_summary", search.entity_summary, ["default"], ["Babbage"], 5)))
    assert "Charles Babbage" in [h.entity.name for h in like]
    assert m.results == {"entity_like": len(like), "entity_summary": len(summary)}
    assert set(m.ms) == {"entity_like", "entity_summary"} and not m.errors


def test_a_failing_search_run_together_costs_the_others_nothing(
        seeded_store: KnowledgeStore) -> None:
    engine = seeded_store.search_engine(5000)
    m = _Metrics()

    def broken(conn: Any, *args: Any) -> list:
        conn.exec_driver_sql("SELECT no_such_column FROM entities")
        return []

    # the failure aborts the shared transaction: each method then runs on its own
    bad, like = m.run_together(engine, (
        ("broken", broken), ("entity_like", search.entity_like, ["default"], ["Babbage"], 5)))
    assert bad == [] and "no_such_column" in m.errors["broken"]
    assert "Charles Babbage" in [h.entity.name for h in like]
    assert m.results["entity_like"] == len(like) and "entity_like" not in m.errors


def test_a_spent_budget_skips_each_search_of_the_group(seeded_store: KnowledgeStore) -> None:
    m = _Metrics(deadline=0.0)
    out = m.run_together(seeded_store.search_engine(5000), (
        ("entity_like", search.entity_like, ["default"], ["Babbage"], 5),
        ("fact_sources", search.fact_sources, ["r1"])))
    assert out == [[], []] and m.skipped == ["entity_like", "fact_sources"]
