"""Which of a query's retrieved entities and facts were extracted from which chunk (their
provenance), for the passages a retriever hands out (graph_flows.services.passages)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, text


def chunk_links(conn: Connection, chunk_ids: Sequence[str], entity_ids: Sequence[str],
                fact_ids: Sequence[str]) -> dict[str, tuple[list[str], list[str]]]:
    """chunk id -> (ids of ``entity_ids`` extracted from it, ids of ``fact_ids`` extracted
    from it), each list in the order of the given ids; every chunk of ``chunk_ids`` has an
    entry. Row-level security applies as to every read (the request's scopes)."""
    out: dict[str, tuple[list[str], list[str]]] = {c: ([], []) for c in chunk_ids}
    if not chunk_ids or not (entity_ids or fact_ids):
        return out
    rows = conn.execute(text("""
        SELECT 'e' AS kind, entity_id AS id, chunk_id FROM entity_provenance
        WHERE chunk_id = ANY(:chunks) AND entity_id = ANY(:entities)
        UNION ALL
        SELECT 'f', relation_id, chunk_id FROM relation_provenance
        WHERE chunk_id = ANY(:chunks) AND relation_id = ANY(:facts)"""),
        {"chunks": list(chunk_ids), "entities": list(entity_ids),
         "facts": list(fact_ids)}).all()
    found = {(r.kind, r.id, r.chunk_id) for r in rows}
    for chunk, (ents, facts) in out.items():
        ents += [i for i in entity_ids if ("e", i, chunk) in found]
        facts += [i for i in fact_ids if ("f", i, chunk) in found]
    return out
