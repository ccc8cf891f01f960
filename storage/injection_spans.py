"""The instruction-like spans stored with each chunk (``chunks.injection_spans``, migration
0012): filled at ingest by the indexing graph, for whatever is left by ``krag ingest`` and
``krag reembed``; read with the passage text by :func:`storage.evidence.chunk_rows`.

The scanner is passed in (``scan(text) -> [start1, end1, ...]``): detection is the
application's (graph_flows.shared.untrusted), storage only keeps its result. NULL means
not scanned yet, ``{}`` clean.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import Connection

from storage.statements import text

Scanner = Callable[[str], list[int]]


def fill(conn: Connection, scan: Scanner, *, chunk_ids: Sequence[str] | None = None,
         scope_names: Sequence[str] | None = None, batch: int = 500) -> int:
    """Scan the chunks not scanned yet (only ``chunk_ids`` / chunks of ``scope_names`` when
    given) and store their spans, ``batch`` at a time; returns how many were scanned."""
    done, after = 0, ""
    ids = None if chunk_ids is None else list(chunk_ids)
    scopes = None if scope_names is None else list(scope_names)
    while True:
        rows = conn.execute(text(
            "SELECT c.id, c.text FROM chunks c "
            "WHERE c.injection_spans IS NULL AND c.id > :after "
            "AND (CAST(:ids AS text[]) IS NULL OR c.id = ANY(:ids)) "
            "AND (CAST(:s AS text[]) IS NULL OR c.document_id IN "
            "     (SELECT d.id FROM documents d WHERE d.scope = ANY(:s))) "
            "ORDER BY c.id LIMIT :n"),
            {"after": after, "ids": ids, "s": scopes, "n": max(1, batch)}).all()
        if not rows:
            return done
        conn.execute(text("UPDATE chunks SET injection_spans = CAST(:spans AS integer[]) "
                          "WHERE id = :id"),
                     [{"id": r.id, "spans": scan(r.text)} for r in rows])
        done += len(rows)
        after = rows[-1].id


def unscanned_ids(conn: Connection, scope_names: Sequence[str] | None = None) -> list[str]:
    """Ids of the chunks not scanned yet (of the documents of ``scope_names`` when given),
    in id order: the pages a bulk :func:`fill` over many transactions walks."""
    return list(conn.execute(text(
        "SELECT c.id FROM chunks c WHERE c.injection_spans IS NULL "
        "AND (CAST(:s AS text[]) IS NULL OR c.document_id IN "
        "     (SELECT d.id FROM documents d WHERE d.scope = ANY(:s))) ORDER BY c.id"),
        {"s": None if scope_names is None else list(scope_names)}).scalars())


def reset(conn: Connection) -> int:
    """Forget every chunk's spans (to scan again with a newer detector); returns how many."""
    return conn.execute(text(
        "UPDATE chunks SET injection_spans = NULL WHERE injection_spans IS NOT NULL")).rowcount


def counts(conn: Connection, scope_names: Sequence[str] | None = None) -> dict[str, int]:
    """``chunks``, ``flagged`` (some span withheld) and ``unscanned`` chunks of the store, or
    of the documents of ``scope_names``."""
    row = conn.execute(text(
        "SELECT count(*) AS chunks, "
        "count(*) FILTER (WHERE cardinality(c.injection_spans) > 0) AS flagged, "
        "count(*) FILTER (WHERE c.injection_spans IS NULL) AS unscanned "
        "FROM chunks c JOIN documents d ON d.id = c.document_id "
        "WHERE CAST(:s AS text[]) IS NULL OR d.scope = ANY(:s)"),
        {"s": None if scope_names is None else list(scope_names)}).one()
    return {"chunks": int(row.chunks), "flagged": int(row.flagged),
            "unscanned": int(row.unscanned)}
