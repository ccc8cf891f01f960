"""Planner statistics for graph tables that have rows and none yet (a new store's first
batches).

PostgreSQL's autovacuum analyzes a table only when its launcher next visits the database
(``autovacuum_naptime``, a minute by default), and a new store's tables start without
column statistics. Until then the planner takes ``scope = ANY(...)`` to match 0.5 % of the
rows, so the synonym look-up's k-NN (storage.synonyms) reads and sorts every entity instead
of walking the HNSW index: 10-22 ms an entity at 3,000-10,000 entities against 0.45-0.57 ms
with statistics (HISTORY: ingest_turn.md). The full-corpus no-LLM ingest spent its first
minute there, inside the store turns the workers take one at a time. So a batch's writer
analyzes, after writing its graph, those of :data:`GRAPH_TABLES` that have rows and no
statistics of rows; after that autovacuum keeps the statistics, as for any table.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

GRAPH_TABLES = (
    "documents", "chunks", "extraction_status", "entities", "relations",
    "entity_provenance", "relation_provenance", "entity_synonyms",
    "entity_synonyms_computed", "entity_words",
)

# pg_class is readable by any role: ``reltuples`` is -1 until a table is first analyzed or
# vacuumed, 0 when it was empty then (a store's first statements can write and delete rows
# before any batch); such tables are analyzed once they have rows, which a query tells
# at once (the live-row counts of pg_stat_user_tables reach it up to seconds later)
_CANDIDATES = """
SELECT c.relname FROM pg_class c
WHERE c.oid = ANY(ARRAY(SELECT to_regclass(t) FROM unnest(CAST(:tables AS text[])) t))
  AND c.reltuples <= 0
ORDER BY c.relname
"""


def never_analyzed(conn: Connection, tables: tuple[str, ...] = GRAPH_TABLES) -> list[str]:
    """Those of ``tables`` that have rows and no statistics of rows (never analyzed, or
    analyzed while empty). Rows are those ``conn`` may see (its scope's, under row-level
    security: the writer's own)."""
    candidates = [t for t in conn.execute(text(_CANDIDATES), {"tables": list(tables)}).scalars()
                  if t in GRAPH_TABLES]
    return [t for t in candidates
            if conn.execute(text(f"SELECT EXISTS (SELECT 1 FROM {t})")).scalar()]


def analyze(conn: Connection, tables: list[str]) -> None:
    """ANALYZE ``tables`` (names from :func:`never_analyzed`) on ``conn``, which must be
    in autocommit mode and belong to the tables' owner (or a role with MAINTAIN)."""
    allowed = [t for t in tables if t in GRAPH_TABLES]  # names only ever from the list
    if allowed:  # (a bare ANALYZE would take every table of the database)
        conn.execute(text("ANALYZE " + ", ".join(allowed)))
