"""Temporal facts: retrieval defaults to facts valid now; "as of" sees the past."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from graph_flows.query.retrieval import SearchConfig, retrieve
from tests.query_fixtures import _EMBEDDER

FACT = "The Analytical Engine uses punched cards."


def _facts(store, terms, **kw) -> list[str]:
    r = retrieve(store, "default", terms, [], SearchConfig(fallback_ratio=0.0),
                 lambda: _EMBEDDER.embed_query(" ".join(terms)), **kw)
    return [f["fact"] for f in r.facts]


def test_invalidated_fact_is_history_not_current(seeded_store) -> None:
    assert FACT in _facts(seeded_store, ["punched"])
    with seeded_store.transaction() as c:
        c.execute(text("UPDATE relations SET invalid_at = now() - interval '1 day' "
                       "WHERE fact = :f"), {"f": FACT})
    assert FACT not in _facts(seeded_store, ["punched"])
    week_ago = datetime.now(UTC) - timedelta(days=7)
    assert FACT in _facts(seeded_store, ["punched"], as_of=week_ago)
    with seeded_store.connect() as c:  # kept as history, never deleted
        assert c.execute(text("SELECT count(*) FROM relations WHERE fact = :f"),
                         {"f": FACT}).scalar() == 1


def test_fact_valid_from_a_later_date_is_not_current_yet(seeded_store) -> None:
    with seeded_store.transaction() as c:
        c.execute(text("UPDATE relations SET valid_at = now() + interval '30 days' "
                       "WHERE fact = :f"), {"f": FACT})
    assert FACT not in _facts(seeded_store, ["punched"])
    later = datetime.now(UTC) + timedelta(days=60)
    assert FACT in _facts(seeded_store, ["punched"], as_of=later)


def test_vector_fallback_respects_validity(seeded_store) -> None:
    with seeded_store.transaction() as c:
        c.execute(text("UPDATE relations SET invalid_at = now() - interval '1 hour'"))
    r = retrieve(seeded_store, "default", ["zzzz qqqq"], [], SearchConfig(),
                 lambda: _EMBEDDER.embed_query("mechanical computer cards"))
    assert r.metrics["fallback"]["facts"] and r.facts == []


def test_query_graph_as_of(resources) -> None:
    import pytest

    from graph_flows import query_flow
    from graph_flows.query.analyze import InvalidQueryError

    with resources.store.transaction() as c:
        c.execute(text("UPDATE relations SET invalid_at = '2020-01-01' WHERE fact = :f"),
                  {"f": FACT})
    now = query_flow.invoke({"query": "punched cards"}, context={"fallback_ratio": 0.0})
    assert FACT not in [f["fact"] for f in now["facts"]]
    then = query_flow.invoke({"query": "punched cards", "as_of": "2019-06-01"},
                             context={"fallback_ratio": 0.0})
    fact = next(f for f in then["facts"] if f["fact"] == FACT)
    assert "invalid since 2020-01-01" in then["facts_text"] and fact["invalid_at"]
    with pytest.raises(InvalidQueryError, match="as_of 'last tuesday' is not a date"):
        query_flow.invoke({"query": "x", "as_of": "last tuesday"})
