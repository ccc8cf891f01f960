"""The retrieval recipes' per-method runner (graph_flows.query.retrieval_base)."""

from __future__ import annotations

from sqlalchemy import text

from graph_flows.query.retrieval_base import _Metrics
from storage import KnowledgeStore, search


def test_search_connections_keep_their_prepared_statements(store: KnowledgeStore) -> None:
    engine = store.search_engine(5000)  # used one call at a time: one pooled connection
    m = _Metrics()
    for _ in range(7):  # psycopg prepares a statement on its fifth run on a connection
        assert m.run(engine, "entities", search.entities_by_ids, ["default"], ["e1"]) == []
    with engine.connect() as conn:
        prepared = conn.execute(text(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE "
            "'%e.id = ANY%'")).scalar()
    # ended by COMMIT: a ROLLBACK would have made psycopg forget (and the server re-parse)
    assert prepared == 1
    assert m.results == {"entities": 0} and not m.errors
