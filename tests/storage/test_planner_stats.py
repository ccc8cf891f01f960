"""Planner statistics for a new store's graph tables (storage.planner_stats)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from sqlalchemy import text

from graph_flows.indexing.context import IndexingContext
from graph_flows.services import ingest as runner
from graph_flows.shared.resources import NO_LLM, Resources, use_resources
from graph_flows.shared.settings import Settings
from storage import KnowledgeStore, planner_stats
from storage.models import EntityIn

SAMPLE = Path(__file__).resolve().parents[2] / "graph_flows" / "sample_corpus"


def never_analyzed(store: KnowledgeStore) -> list[str]:
    with store.connect() as conn:
        return planner_stats.never_analyzed(conn)


def reltuples(store: KnowledgeStore, table: str) -> float:
    """The planner's row count of ``table``: -1 until it is first analyzed (or vacuumed).
    (pg_stats would show the column statistics, but hides those of row-secured tables.)"""
    with store.connect() as conn:
        return float(conn.execute(text(
            "SELECT reltuples FROM pg_class WHERE oid = to_regclass(:t)"), {"t": table}).scalar())


def entity(name: str, scope: str = "default") -> EntityIn:
    return EntityIn(name=name, type="Person", scope=scope, summary=f"{name}, a person",
                    confidence=0.9, embedding=[0.1] * 384, chunk_ids=(), aliases=())


def test_tables_with_rows_and_no_statistics_are_analyzed_once(store: KnowledgeStore) -> None:
    # a new store: no table has statistics, and those without rows are left alone
    assert "entities" not in never_analyzed(store)
    assert store.analyze_new_tables() == [] or "entities" not in never_analyzed(store)
    with store.connect(autocommit=True) as conn:  # analyzed while empty: no rows known
        planner_stats.analyze(conn, ["entities"])
    assert reltuples(store, "entities") == 0 and "entities" not in never_analyzed(store)
    store.write_graph([entity(f"Person {i}") for i in range(40)], [])
    assert "entities" in never_analyzed(store)  # at once, not when the row counts arrive

    analyzed = store.analyze_new_tables()  # as the owner: the application's role may not

    assert "entities" in analyzed and set(analyzed) <= set(planner_stats.GRAPH_TABLES)
    assert "entities" not in never_analyzed(store)
    assert reltuples(store, "entities") == 40
    assert "entities" not in store.analyze_new_tables()  # once: autovacuum keeps them after


def test_analyze_takes_only_the_graph_tables_names(store: KnowledgeStore) -> None:
    with store.connect(autocommit=True) as conn:
        planner_stats.analyze(conn, ["chunks; DROP TABLE chunks"])  # nothing, not all
    assert reltuples(store, "chunks") == -1 and reltuples(store, "entities") == -1
    with store.connect(autocommit=True) as conn:
        planner_stats.analyze(conn, ["entities; DROP TABLE entities", "entities"])
    assert reltuples(store, "entities") == 0  # analyzed, empty; the table is still there


def without_autovacuum(store: KnowledgeStore) -> None:
    """Autovacuum off for the graph tables, so that their statistics are the product's alone:
    a visit mid-run (its launcher comes every ``naptime / databases``, sooner on a server
    that has made many test databases, and a slow run under load spans more visits) analyzes
    ``entities`` at its peak, before the documents' last merges delete rows (369 rows known,
    361 left), and would hide an ingest that never analyzed."""
    with store.connect(autocommit=True) as conn:
        for table in planner_stats.GRAPH_TABLES:
            conn.execute(text(f"ALTER TABLE {table} SET (autovacuum_enabled = false)"))


def test_a_no_llm_ingest_analyzes_its_new_graph_tables(store: KnowledgeStore) -> None:
    without_autovacuum(store)
    res = Resources(Settings(_env_file=None), store, DeterministicFakeEmbedding(size=384),
                    chat_override=NO_LLM)
    with use_resources(res):
        out: dict[str, Any] = runner.run_indexing({"paths": [str(SAMPLE)]}, IndexingContext())
    assert out["chunks"]["completed"] > 0
    # written during the run, long before autovacuum's first visit (a minute)
    assert {"entities", "relations", "chunks"}.isdisjoint(never_analyzed(store))
    # analyzed once it had rows (after a first batch), by the ingest; autovacuum's to keep
    # up after that (off here)
    assert 0 < reltuples(store, "entities") <= store.counts()["entities"]
