"""Entity and relation upserts: max confidence kept, the longer summary kept (of two as long,
the first in code point order), a relation's fact of the higher confidence (then code point
order), aliases added, provenance merged. The summary and fact rules are total orders, so
workers writing the same entity at once end with what one worker writing them in any order
does (graph_flows.indexing.resolve.wins)."""

from __future__ import annotations

from collections.abc import Sequence

from psycopg.types.json import Jsonb
from sqlalchemy import Connection, text

from storage import supersede
from storage.bulk import as_vector, stage
from storage.ids import normalize_name
from storage.models import EntityIn, RelationIn

_ENTITY_UPSERT = """
WITH al AS (
    SELECT s.id, array_agg(DISTINCT a ORDER BY a) AS aliases
    FROM stage_entities s, jsonb_array_elements_text(s.aliases) a
    GROUP BY s.id
), up AS (
    INSERT INTO entities AS e (id, scope, name, normalized_name, type, summary, confidence,
                               embedding, aliases)
    SELECT DISTINCT ON (t.id) t.id, t.scope, t.name, t.normalized_name, t.type, t.summary,
           t.confidence, t.embedding, COALESCE(al.aliases, '{}')
    FROM stage_entities t LEFT JOIN al ON al.id = t.id
    ORDER BY t.id, t.confidence DESC, length(t.summary) DESC
    ON CONFLICT (id) DO UPDATE SET
        confidence = GREATEST(e.confidence, EXCLUDED.confidence),
        aliases = e.aliases || ARRAY(SELECT a FROM unnest(EXCLUDED.aliases) a
                                     WHERE a <> ALL(e.aliases) AND a <> e.name),
        summary = CASE WHEN (length(EXCLUDED.summary), e.summary COLLATE "C")
                            > (length(e.summary), EXCLUDED.summary COLLATE "C")
                       THEN EXCLUDED.summary ELSE e.summary END,
        embedding = CASE WHEN (length(EXCLUDED.summary), e.summary COLLATE "C")
                              > (length(e.summary), EXCLUDED.summary COLLATE "C")
                         THEN COALESCE(EXCLUDED.embedding, e.embedding)
                         ELSE COALESCE(e.embedding, EXCLUDED.embedding) END,
        updated_at = now()
    -- only when something changes: a row version rewritten with the same values still
    -- adds an entry to each of the row's indexes (HNSW, trigram GINs) when it cannot stay
    -- on its page (HOT), and stored entities are named again in most batches
    WHERE EXCLUDED.confidence > e.confidence
       OR EXISTS (SELECT 1 FROM unnest(EXCLUDED.aliases) a
                  WHERE a <> ALL(e.aliases) AND a <> e.name)
       OR (length(EXCLUDED.summary), e.summary COLLATE "C")
          > (length(e.summary), EXCLUDED.summary COLLATE "C")
       OR (e.embedding IS NULL AND EXCLUDED.embedding IS NOT NULL)
    RETURNING e.name_words, (xmax = 0) AS inserted
)
INSERT INTO entity_words AS w (word, n)
SELECT word, count(*) FROM up, unnest(up.name_words) AS word WHERE up.inserted GROUP BY word
ON CONFLICT (word) DO UPDATE SET n = w.n + EXCLUDED.n
"""

# A relation written again (or re-keyed by storage.merge) merges into the stored row ``r``:
# the higher confidence wins the fact (then code point order), dates kept
RELATION_MERGE = """
ON CONFLICT (id) DO UPDATE SET
    confidence = GREATEST(r.confidence, EXCLUDED.confidence),
    fact = CASE WHEN (EXCLUDED.confidence, r.fact COLLATE "C")
                     > (r.confidence, EXCLUDED.fact COLLATE "C")
                THEN EXCLUDED.fact ELSE r.fact END,
    embedding = CASE WHEN (EXCLUDED.confidence, r.fact COLLATE "C")
                          > (r.confidence, EXCLUDED.fact COLLATE "C")
                          AND EXCLUDED.embedding IS NOT NULL
                     THEN EXCLUDED.embedding ELSE COALESCE(r.embedding, EXCLUDED.embedding) END,
    valid_at = COALESCE(r.valid_at, EXCLUDED.valid_at),
    invalid_at = COALESCE(r.invalid_at, EXCLUDED.invalid_at),
    attribute = COALESCE(r.attribute, EXCLUDED.attribute),
    predicate_text = COALESCE(r.predicate_text, EXCLUDED.predicate_text),
    updated_at = now()
-- only when a value changes (as the entity upsert): a relation written again as it is
-- stored would otherwise take a new row version, and one that cannot stay on its full
-- page (HOT) a new entry in each of the relation's indexes, the HNSW one included, and
-- a dead one for vacuum to remove from each
WHERE EXCLUDED.confidence > r.confidence
   OR (EXCLUDED.confidence, r.fact COLLATE "C") > (r.confidence, EXCLUDED.fact COLLATE "C")
   OR (r.embedding IS NULL AND EXCLUDED.embedding IS NOT NULL)
   OR (r.valid_at IS NULL AND EXCLUDED.valid_at IS NOT NULL)
   OR (r.invalid_at IS NULL AND EXCLUDED.invalid_at IS NOT NULL)
   OR (r.attribute IS NULL AND EXCLUDED.attribute IS NOT NULL)
   OR (r.predicate_text IS NULL AND EXCLUDED.predicate_text IS NOT NULL)
"""

_RELATION_UPSERT = f"""
INSERT INTO relations AS r (id, scope, subject_id, object_id, predicate, fact, confidence,
                            embedding, valid_at, invalid_at, attribute, predicate_text)
SELECT DISTINCT ON (id) id, scope, subject_id, object_id, predicate, fact, confidence,
       embedding, valid_at, invalid_at, attribute, predicate_text
FROM stage_relations
ORDER BY id, confidence DESC
{RELATION_MERGE}"""


# the staging tables' column types, for the binary COPY (embeddings as float32, not text)
_ENTITY_TYPES = ("text", "text", "text", "text", "text", "text", "float4", "vector", "jsonb")
_RELATION_TYPES = ("text", "text", "text", "text", "text", "text", "float4", "vector",
                   "timestamptz", "timestamptz", "text", "text")


def upsert_entities(conn: Connection, entities: Sequence[EntityIn]) -> int:
    """Bulk upsert entities and their chunk provenance; returns rows staged."""
    if not entities:
        return 0
    rows = [
        (e.id, e.scope, e.name, normalize_name(e.name), e.type, e.summary or "",
         float(e.confidence), as_vector(e.embedding),
         Jsonb([a for a in dict.fromkeys(e.aliases) if a != e.name]))
        for e in entities
    ]
    stage(conn, "stage_entities",
          "id text, scope text, name text, normalized_name text, type text, summary text, "
          "confidence real, embedding vector, aliases jsonb",
          ("id", "scope", "name", "normalized_name", "type", "summary", "confidence",
           "embedding", "aliases"), rows, _ENTITY_TYPES)
    conn.execute(text(_ENTITY_UPSERT))
    prov = {(e.id, c, e.scope) for e in entities for c in e.chunk_ids}
    _insert_provenance(conn, "entity_provenance", "entity_id", prov)
    return len(rows)


def upsert_relations(conn: Connection, relations: Sequence[RelationIn]) -> int:
    """Bulk upsert relations (endpoints must exist) and their chunk provenance; facts on a
    single-valued attribute then supersede contradicted ones (storage.supersede)."""
    if not relations:
        return 0
    groups = [(r.scope, r.subject_id, r.attribute) for r in relations if r.attribute]
    supersede.lock_groups(conn, groups)  # before any row lock: no deadlock between writers
    rows = [
        (r.id, r.scope, r.subject_id, r.object_id, r.predicate, r.fact, float(r.confidence),
         as_vector(r.embedding), r.valid_at, r.invalid_at, r.attribute,
         r.predicate_text or None)
        for r in relations
    ]
    stage(conn, "stage_relations",
          "id text, scope text, subject_id text, object_id text, predicate text, fact text, "
          "confidence real, embedding vector, valid_at timestamptz, invalid_at timestamptz, "
          "attribute text, predicate_text text",
          ("id", "scope", "subject_id", "object_id", "predicate", "fact", "confidence",
           "embedding", "valid_at", "invalid_at", "attribute", "predicate_text"), rows,
          _RELATION_TYPES)
    conn.execute(text(_RELATION_UPSERT))
    prov = {(r.id, c, r.scope) for r in relations for c in r.chunk_ids}
    _insert_provenance(conn, "relation_provenance", "relation_id", prov)
    supersede.settle(conn, groups)
    return len(rows)


def _insert_provenance(
    conn: Connection, table: str, key: str, rows: set[tuple[str, str, str]]
) -> None:
    """Insert (owner, chunk, owner's scope) links; the scope given, the insert trigger has
    nothing to look up (it only fills a missing one)."""
    if not rows:
        return
    stage(conn, f"stage_{table}", "owner text, chunk_id text, scope text",
          ("owner", "chunk_id", "scope"), sorted(rows))
    conn.execute(text(
        f"INSERT INTO {table} ({key}, chunk_id, scope) "
        f"SELECT owner, chunk_id, scope FROM stage_{table} ON CONFLICT DO NOTHING"
    ))
