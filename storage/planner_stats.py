"""Planner statistics for graph tables that have rows and none yet (a new store's first
batches).

PostgreSQL's autovacuum analyzes a table only when its launcher next visits the database
(``autovacuum_naptime``, a minute by default), and a new store's tables start without
column statistics. Until then the planner takes ``scope = ANY(...)`` to match 0.5 % of the
rows, so the synonym look-up's k-NN (storage.synonyms) reads and sorts every entity instead
of walking the HNSW index: 10-22 ms an entity at 3,000-10,000 entities against 0.45-0.57 ms
with statistics (docs/bench/ingest_turn.md). The full-corpus no-LLM ingest spent its first
minute there, inside the store turns the workers take one at a time. So a batch's writer
analyzes, after writing its graph, those of :data:`GRAPH_TABLES` that have rows and were
never analyzed; after that autovacuum keeps the statistics, as for any table.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

GRAPH_TABLES = (
    "documents", "chunks", "extraction_status", "entities", "relations",
    "entity_provenance", "relation_provenance", "entity_synonyms",
    "entity_synonyms_computed", "entity_words",
)

# pg_stat_user_tables is readable by any role. "Has rows" is read from the table's size,
# not from its live-row count, which a writing session reports only within a second or so
_NEVER_ANALYZED = """
SELECT s.relname FROM pg_stat_user_tables s
WHERE s.relid = ANY(ARRAY(SELECT to_regclass(t) FROM unnest(CAST(:tables AS text[])) t))
  AND s.last_analyze IS NULL AND s.last_autoanalyze IS NULL
  AND pg_relation_size(s.relid) > 0
ORDER BY s.relname
"""


def never_analyzed(conn: Connection, tables: tuple[str, ...] = GRAPH_TABLES) -> list[str]:
    """Those of ``tables`` that have rows and were never analyzed (by anyone)."""
    return list(conn.execute(text(_NEVER_ANALYZED), {"tables": list(tables)}).scalars())


def analyze(conn: Connection, tables: list[str]) -> None:
    """ANALYZE ``tables`` (names from :func:`never_analyzed`) on ``conn``, which must be
    in autocommit mode and belong to the tables' owner (or a role with MAINTAIN)."""
    if tables:
        allowed = [t for t in tables if t in GRAPH_TABLES]  # names only ever from the list
        conn.execute(text("ANALYZE " + ", ".join(allowed)))
