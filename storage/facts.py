"""Facts stated directly by a caller (the MCP ``remember`` / ``correct`` tools).

Remembered facts get provenance like extracted ones: each scope has one document (source
``mcp``, uri ``mcp:remember``) and every remembered fact is a chunk of it with a completed
extraction status, so ``krag status`` lists them and ``krag remove mcp`` removes them.
Corrections never delete: they set ``invalid_at``. A relation id is a hash of its triple, so
re-stating a triple whose row is invalidated writes a new version (``rel_`` + hash of the base
id and a version number) and the old row keeps its history.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import Connection, text

from storage import graph_writes, ids, supersede
from storage.models import EntityIn, Fact, RelationIn

MCP_SOURCE = "mcp"
MCP_URI = "mcp:remember"
MAX_VERSIONS = 1000


@dataclass(frozen=True, slots=True)
class VersionedRelationIn(RelationIn):
    """A relation whose triple already has an invalidated row: version n > 0 gets its own id."""

    version: int = 0

    @property
    def id(self) -> str:
        base = ids.relation_id(self.subject_id, self.predicate, self.object_id,
                               self.predicate_text)
        if self.version == 0:
            return base
        return "rel_" + hashlib.sha256(f"{base}:v{self.version}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class StoredFact:
    """A fact row with its scope and endpoint names."""

    fact: Fact
    scope: str
    subject: str
    subject_type: str
    object: str
    object_type: str
    attribute: str | None = None
    invalidated_by: str | None = None
    invalid_reason: str | None = None


def mcp_document_id(scope: str) -> str:
    return ids.document_id(scope, MCP_SOURCE, MCP_URI)


def ensure_mcp_document(conn: Connection, scope: str) -> str:
    """The scope's MCP document (created on first use); returns its id."""
    doc_id = mcp_document_id(scope)
    conn.execute(text("""
        INSERT INTO documents (id, scope, source, uri, title, content_hash, metadata)
        VALUES (:id, :scope, :source, :uri, :title, :hash, CAST(:meta AS jsonb))
        ON CONFLICT (id) DO NOTHING"""),
        {"id": doc_id, "scope": scope, "source": MCP_SOURCE, "uri": MCP_URI,
         "title": "Facts remembered through MCP", "hash": ids.content_hash(MCP_URI),
         "meta": json.dumps({"kind": "mcp"})})
    return doc_id


def find_entity(
    conn: Connection, scope: str, name: str, type_: str | None
) -> tuple[str, str] | None:
    """(name, type) of the scope's entity with this normalised name and type; with no type
    (None), the most confident, then oldest, one of any type; None when there is none."""
    row = conn.execute(text("""
        SELECT name, type FROM entities WHERE scope = :s AND normalized_name = :n
          AND (CAST(:t AS text) IS NULL OR type = :t)
        ORDER BY confidence DESC, created_at, id LIMIT 1"""),
        {"s": scope, "n": ids.normalize_name(name), "t": type_}).first()
    return (row.name, row.type) if row else None


def _add_chunk(conn: Connection, doc_id: str, body: str, relation_count: int) -> str:
    h = ids.content_hash(body)
    chunk_id = ids.chunk_id(doc_id, h, 0)
    conn.execute(text("""
        INSERT INTO chunks (id, document_id, ordinal, text, content_hash)
        SELECT :id, :doc, coalesce(max(ordinal) + 1, 0), :body, :h
        FROM chunks WHERE document_id = :doc
        ON CONFLICT (id) DO NOTHING"""),
        {"id": chunk_id, "doc": doc_id, "body": body, "h": h})
    conn.execute(text("""
        INSERT INTO extraction_status (chunk_id, status, entity_count, relation_count)
        VALUES (:id, 'completed', 2, :r)
        ON CONFLICT (chunk_id) DO UPDATE SET status = 'completed', updated_at = now()"""),
        {"id": chunk_id, "r": relation_count})
    return chunk_id


def _free_version(conn: Connection, relation: VersionedRelationIn) -> VersionedRelationIn:
    """The first version of the triple with no row, or a still-valid row (upserted in place)."""
    for version in range(MAX_VERSIONS):
        candidate = replace(relation, version=version)
        invalid = conn.execute(text(
            "SELECT invalid_at IS NOT NULL FROM relations WHERE id = :id FOR UPDATE"),
            {"id": candidate.id}).scalar()
        if not invalid:
            return candidate
    raise RuntimeError(f"more than {MAX_VERSIONS} invalidated versions of one fact")


def remember_fact(
    conn: Connection, scope: str, entities: Sequence[EntityIn], relation: RelationIn,
    chunk_text: str,
) -> str:
    """Store a caller's fact with MCP provenance (one transaction: ``conn``); returns the id
    of the relation row written (a new version when the triple's row is invalidated)."""
    doc_id = ensure_mcp_document(conn, scope)
    chunk_id = _add_chunk(conn, doc_id, chunk_text, 1)
    ents = [replace(e, scope=scope, chunk_ids=(chunk_id,)) for e in entities]
    graph_writes.upsert_entities(conn, ents)
    fields = {f: getattr(relation, f) for f in RelationIn.__dataclass_fields__}
    rel = _free_version(conn, VersionedRelationIn(**{**fields, "scope": scope,
                                                     "chunk_ids": (chunk_id,)}))
    graph_writes.upsert_relations(conn, [rel])
    return rel.id


def invalidate_fact(
    conn: Connection, scope: str, fact_id: str, reason: str = ""
) -> datetime | None:
    """Mark a fact of ``scope`` invalid from now (an already invalid one keeps its time and
    reason); ``reason`` is kept as ``invalid_reason`` (default ``'corrected'``).

    Returns its ``invalid_at``, or None when no such fact exists in this scope. Never deletes.
    """
    return conn.execute(text("""
        UPDATE relations SET
            invalid_reason = CASE WHEN invalid_at IS NULL THEN :why ELSE invalid_reason END,
            invalid_at = coalesce(invalid_at, now()), updated_at = now()
        WHERE id = :id AND scope = :s RETURNING invalid_at"""),
        {"id": fact_id, "s": scope, "why": reason or "corrected"}).scalar()


def superseded_by(conn: Connection, fact_id: str) -> list[dict[str, object]]:
    """Facts that ``fact_id`` superseded (storage.supersede): id, sentence, invalid_at."""
    rows = conn.execute(text("""
        SELECT id, fact, invalid_at FROM relations
        WHERE invalidated_by = :id AND invalid_reason = :reason ORDER BY invalid_at, id"""),
        {"id": fact_id, "reason": supersede.SUPERSEDED}).all()
    return [{"fact_id": r.id, "fact": r.fact,
             "invalid_at": r.invalid_at.isoformat() if r.invalid_at else None} for r in rows]


def get_fact(conn: Connection, scope: str, fact_id: str) -> StoredFact | None:
    """One fact of ``scope`` with its endpoints (valid or not), or None."""
    r = conn.execute(text("""
        SELECT r.id, r.subject_id, r.predicate, r.object_id, r.fact, r.confidence, r.valid_at,
               r.invalid_at, r.scope, se.name AS sn, se.type AS st, oe.name AS on_,
               oe.type AS ot, r.attribute, r.invalidated_by, r.invalid_reason, r.predicate_text
        FROM relations r JOIN entities se ON se.id = r.subject_id
        JOIN entities oe ON oe.id = r.object_id
        WHERE r.id = :id AND r.scope = :s"""), {"id": fact_id, "s": scope}).first()
    if r is None:
        return None
    fact = Fact(r.id, r.subject_id, r.predicate, r.object_id, r.fact, r.confidence, r.valid_at,
                r.invalid_at, r.predicate_text)
    return StoredFact(fact, r.scope, r.sn, r.st, r.on_, r.ot, r.attribute, r.invalidated_by,
                      r.invalid_reason)


def entities_with_source(
    conn: Connection, scope: str, entity_ids: Sequence[str], source: str
) -> set[str]:
    """Those of ``entity_ids`` with provenance in a document of ``source`` (same scope)."""
    if not entity_ids:
        return set()
    return set(conn.execute(text("""
        SELECT DISTINCT p.entity_id FROM entity_provenance p
        JOIN chunks c ON c.id = p.chunk_id JOIN documents d ON d.id = c.document_id
        WHERE p.entity_id = ANY(:ids) AND d.scope = :s AND d.source = :src"""),
        {"ids": list(entity_ids), "s": scope, "src": source}).scalars())


def scope_sources(conn: Connection, scope: str) -> list[str]:
    """The sources with documents in ``scope`` (as `krag status` lists them), sorted."""
    return list(conn.execute(text(
        "SELECT DISTINCT source FROM documents WHERE scope = :s ORDER BY source"),
        {"s": scope}).scalars())
