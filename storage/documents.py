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
    lock_documents(conn, [document_id])


def lock_documents(conn: Connection, document_ids: Sequence[str]) -> None:
    """:func:`lock_document` of each of ``document_ids``, in one statement and in id order
    (the rows of ``unnest`` are read, and their locks taken, in the array's order)."""
    conn.execute(text("SELECT count(pg_advisory_xact_lock(hashtextextended(k, 7))) "
                      "FROM unnest(CAST(:ks AS text[])) AS k"),
                 {"ks": [f"document\x1f{d}" for d in sorted(document_ids)]})


def sync_document(conn: Connection, doc: DocumentIn, chunk_texts: Sequence[str]) -> DocumentSync:
    """Store a document version; see :func:`sync_documents`."""
    return sync_documents(conn, [(doc, chunk_texts)])[0]


def sync_documents(
    conn: Connection, items: Sequence[tuple[DocumentIn, Sequence[str]]]
) -> list[DocumentSync]:
    """Store document versions (each with its chunk texts), one result each in order: new
    chunks get a pending status, vanished ones are removed, an unchanged document (same
    content hash) is left as it is. A document may appear once per call.

    The statements cover every document of the call at once (one temporary table, one
    insert of chunks), not one round of them per document: storing the 2,884 passages of
    the multihop corpus one transaction each cost PostgreSQL a temporary table and about ten
    statements per passage (HISTORY: ingest_docphase.md).

    Two workers syncing the same document (two `krag ingest` on one corpus) take turns on a
    transaction-scoped advisory lock of its id, taken in id order (two calls over overlapping
    documents cannot wait on each other in a cycle): the row does not exist yet for ``FOR
    UPDATE`` to lock, and of two racing inserts the second can meet the other unique key
    (scope, source, uri) before ``ON CONFLICT (id)`` sees the first (a UniqueViolation
    instead of an update). The second then finds the document stored and unchanged."""
    ids_in = [doc.id for doc, _ in items]
    if len(set(ids_in)) != len(ids_in):
        raise ValueError("sync_documents: a document appears twice in one call")
    lock_documents(conn, ids_in)
    old = dict(conn.execute(
        text("SELECT id, content_hash FROM documents WHERE id = ANY(:ids) FOR UPDATE"),
        {"ids": ids_in}).all())
    wanted = {doc.id: chunk_ids_for(doc.id, texts) for doc, texts in items}
    changed = [(doc, texts) for doc, texts in items if old.get(doc.id) != doc.content_hash]
    out: dict[str, DocumentSync] = {
        doc.id: DocumentSync(doc.id, True, (), tuple(c for c, _ in wanted[doc.id]),
                             RemovalReport())
        for doc, _ in items if old.get(doc.id) == doc.content_hash}
    if not changed:
        return [out[i] for i in ids_in]
    conn.execute(
        text("""
        INSERT INTO documents (id, scope, source, uri, title, content_hash, metadata)
        VALUES (:id, :scope, :source, :uri, :title, :hash, CAST(:meta AS jsonb))
        ON CONFLICT (id) DO UPDATE SET content_hash = EXCLUDED.content_hash,
            title = EXCLUDED.title, metadata = EXCLUDED.metadata, updated_at = now()"""),
        [{"id": doc.id, "scope": doc.scope, "source": doc.source, "uri": doc.uri,
          "title": doc.title, "hash": doc.content_hash, "meta": json.dumps(doc.metadata)}
         for doc, _ in changed],
    )
    existing: dict[str, set[str]] = {doc.id: set() for doc, _ in changed}
    for chunk_id, doc_id in conn.execute(
            text("SELECT id, document_id FROM chunks WHERE document_id = ANY(:d)"),
            {"d": list(existing)}):
        existing[doc_id].add(chunk_id)
    removed = {doc.id: delete_chunks(conn, sorted(
        existing[doc.id] - {c for c, _ in wanted[doc.id]})) for doc, _ in changed}
    stage(conn, "stage_chunks", "id text, document_id text, ordinal int, text text, hash text",
          ("id", "document_id", "ordinal", "text", "hash"),
          [(cid, doc.id, i, t, h) for doc, texts in changed
           for i, ((cid, h), t) in enumerate(zip(wanted[doc.id], texts, strict=True))])
    inserted = {r.id for r in conn.execute(text("""
        INSERT INTO chunks (id, document_id, ordinal, text, content_hash)
        SELECT id, document_id, ordinal, text, hash FROM stage_chunks
        ON CONFLICT (id) DO UPDATE SET ordinal = EXCLUDED.ordinal, updated_at = now()
        RETURNING id, (xmax = 0) AS inserted""")) if r.inserted}
    fresh = {doc.id: [c for c, _ in wanted[doc.id] if c in inserted] for doc, _ in changed}
    if inserted:
        conn.execute(text(
            "INSERT INTO extraction_status (chunk_id) SELECT unnest(CAST(:ids AS text[])) "
            "ON CONFLICT DO NOTHING"), {"ids": [c for cs in fresh.values() for c in cs]})
    for doc, _ in changed:
        wanted_ids = {c for c, _ in wanted[doc.id]}
        out[doc.id] = DocumentSync(doc.id, False, tuple(dict.fromkeys(fresh[doc.id])),
                                   tuple(sorted(wanted_ids & existing[doc.id])),
                                   removed[doc.id])
    return [out[i] for i in ids_in]


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
