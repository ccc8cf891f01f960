"""Documents and chunks: storing versions, removing them, cleaning up orphans."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import Connection, text

from storage import ids, supersede
from storage.bulk import stage
from storage.models import DocumentIn, DocumentSync, RemovalReport


def chunk_ids_for(document_id: str, chunk_texts: Sequence[str]) -> list[tuple[str, str]]:
    """(chunk id, content hash) for each chunk text, stable across document versions."""
    seen: dict[str, int] = {}
    out = []
    for chunk in chunk_texts:
        h = ids.content_hash(chunk)
        occurrence = seen.get(h, 0)
        seen[h] = occurrence + 1
        out.append((ids.chunk_id(document_id, h, occurrence), h))
    return out


def lock_document(conn: Connection, document_id: str) -> None:
    """The document's transaction-scoped advisory lock: its syncs and the join of its short
    forms (storage.merge) take turns."""
    conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 7))"),
                 {"k": f"document\x1f{document_id}"})


def sync_document(conn: Connection, doc: DocumentIn, chunk_texts: Sequence[str]) -> DocumentSync:
    """Store a document version; new chunks get a pending status, vanished ones are removed.

    Two workers syncing the same document (two `krag ingest` on one corpus) take turns on a
    transaction-scoped advisory lock of its id: the row does not exist yet for ``FOR
    UPDATE`` to lock, and of two racing inserts the second can meet the other unique key
    (scope, source, uri) before ``ON CONFLICT (id)`` sees the first (a UniqueViolation
    instead of an update). The second then finds the document stored and unchanged."""
    lock_document(conn, doc.id)
    old_hash = conn.execute(
        text("SELECT content_hash FROM documents WHERE id = :id FOR UPDATE"), {"id": doc.id}
    ).scalar()
    wanted = chunk_ids_for(doc.id, chunk_texts)
    if old_hash == doc.content_hash:
        return DocumentSync(doc.id, True, (), tuple(c for c, _ in wanted), RemovalReport())
    conn.execute(
        text("""
        INSERT INTO documents (id, scope, source, uri, title, content_hash, metadata)
        VALUES (:id, :scope, :source, :uri, :title, :hash, CAST(:meta AS jsonb))
        ON CONFLICT (id) DO UPDATE SET content_hash = EXCLUDED.content_hash,
            title = EXCLUDED.title, metadata = EXCLUDED.metadata, updated_at = now()"""),
        {"id": doc.id, "scope": doc.scope, "source": doc.source, "uri": doc.uri,
         "title": doc.title, "hash": doc.content_hash, "meta": json.dumps(doc.metadata)},
    )
    existing = set(conn.execute(
        text("SELECT id FROM chunks WHERE document_id = :d"), {"d": doc.id}
    ).scalars())
    wanted_ids = {c for c, _ in wanted}
    removed = delete_chunks(conn, sorted(existing - wanted_ids))
    rows = [(cid, doc.id, i, t, h)
            for i, ((cid, h), t) in enumerate(zip(wanted, chunk_texts, strict=True))]
    stage(conn, "stage_chunks", "id text, document_id text, ordinal int, text text, hash text",
          ("id", "document_id", "ordinal", "text", "hash"), rows)
    new_ids = list(conn.execute(text("""
        INSERT INTO chunks (id, document_id, ordinal, text, content_hash)
        SELECT id, document_id, ordinal, text, hash FROM stage_chunks
        ON CONFLICT (id) DO UPDATE SET ordinal = EXCLUDED.ordinal, updated_at = now()
        RETURNING id, (xmax = 0) AS inserted""")))
    fresh = [r.id for r in new_ids if r.inserted]
    if fresh:
        conn.execute(text(
            "INSERT INTO extraction_status (chunk_id) SELECT unnest(CAST(:ids AS text[])) "
            "ON CONFLICT DO NOTHING"), {"ids": fresh})
    kept = tuple(sorted(wanted_ids & existing))
    return DocumentSync(doc.id, False, tuple(fresh), kept, removed)


def delete_chunks(conn: Connection, chunk_ids: Sequence[str]) -> RemovalReport:
    """Delete chunks and every entity/relation left with no provenance."""
    if not chunk_ids:
        return RemovalReport()
    params = {"ids": list(chunk_ids)}
    rel_cand = list(conn.execute(text(
        "SELECT DISTINCT relation_id FROM relation_provenance WHERE chunk_id = ANY(:ids)"),
        params).scalars())
    ent_cand = list(conn.execute(text(
        "SELECT DISTINCT entity_id FROM entity_provenance WHERE chunk_id = ANY(:ids)"),
        params).scalars())
    chunks = conn.execute(text("DELETE FROM chunks WHERE id = ANY(:ids)"), params).rowcount
    return RemovalReport(chunks=chunks) + delete_orphans(conn, rel_cand, ent_cand)


def delete_orphans(
    conn: Connection, relation_ids: Sequence[str], entity_ids: Sequence[str]
) -> RemovalReport:
    """Delete the given relations/entities that no longer have any provenance; facts those
    relations had superseded are reopened (storage.supersede.reopen)."""
    removed = list(conn.execute(text("""
        DELETE FROM relations r WHERE r.id = ANY(:ids)
        AND NOT EXISTS (SELECT 1 FROM relation_provenance p WHERE p.relation_id = r.id)
        RETURNING r.id"""), {"ids": list(relation_ids)}).scalars()) if relation_ids else []
    gone = list(conn.execute(text("""
        SELECT e.id FROM entities e WHERE e.id = ANY(:ids)
        AND NOT EXISTS (SELECT 1 FROM entity_provenance p WHERE p.entity_id = e.id)"""),
        {"ids": list(entity_ids)}).scalars()) if entity_ids else []
    if gone:
        removed += conn.execute(text(
            "DELETE FROM relations WHERE subject_id = ANY(:ids) OR object_id = ANY(:ids) "
            "RETURNING id"), {"ids": gone}).scalars()
        conn.execute(text("DELETE FROM entities WHERE id = ANY(:ids)"), {"ids": gone})
    supersede.reopen(conn, removed)
    return RemovalReport(entities=len(gone), relations=len(removed))


def remove_documents(conn: Connection, document_ids: Sequence[str]) -> RemovalReport:
    """Remove documents with their chunks, provenance and orphaned graph rows."""
    if not document_ids:
        return RemovalReport()
    chunk_ids = list(conn.execute(
        text("SELECT id FROM chunks WHERE document_id = ANY(:ids)"),
        {"ids": list(document_ids)}).scalars())
    report = delete_chunks(conn, chunk_ids)
    docs = conn.execute(text("DELETE FROM documents WHERE id = ANY(:ids)"),
                        {"ids": list(document_ids)}).rowcount
    return report + RemovalReport(documents=docs)
