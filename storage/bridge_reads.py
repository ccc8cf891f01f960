"""The second hop's reads in fewer round trips (graph_flows.query.second_hop): the entities
hop-1 chunks mention together with each one's passages nearest the question (one statement
where storage.bridges takes two), and the facts of a set of chunks about given entities
with the chunk each row comes from (so a caller can fetch them beside another statement,
before it knows which of those chunks it keeps, and cut them after).

Each statement gives the rows the statements of storage.bridges give for the same
arguments: the entity rows of ``chunk_entities``, the passages ``bridge_chunks`` reads per
entity (same order, same limit per entity), and ``chunk_facts``'s facts once cut to the
chunks kept (:func:`cut_facts`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection

from storage.bridges import CHUNK_KEYS, BridgeChunk, ChunkFact, entity_passages
from storage.bulk import vector_literal
from storage.models import Entity
from storage.search import _E, _F, _VALID, Scope, _entity, _fact, _scopes
from storage.statements import fetch

_MENTIONED = f"""
SELECT m.chunk_id AS hop_chunk, {_E.replace("e.", "m.")}, x.* FROM (
    SELECT p.chunk_id, {_E} FROM entity_provenance p JOIN entities e ON e.id = p.entity_id
    WHERE p.chunk_id = ANY(:chunks)) m
LEFT JOIN LATERAL ({entity_passages("m.id", "m.name", "c_")}) x ON true
ORDER BY m.chunk_id, m.name, m.id, x.c_own DESC, x.c_sim DESC, x.c_id
"""


def mentioned_with_chunks(conn: Connection, scope: Scope, chunk_ids: Sequence[str],
                          vector: Sequence[float], skip_documents: Sequence[str],
                          per_entity: int,
                          ) -> tuple[dict[str, list[Entity]], list[BridgeChunk]]:
    """chunk id -> the entities extracted from it (name order; every chunk has an entry),
    and for each of those entities its chunks outside ``skip_documents``, its own
    document's first, then by cosine to ``vector``, at most ``per_entity`` each (in the
    order the entities are first met): storage.bridges.chunk_entities and bridge_chunks
    in one statement."""
    mentioned: dict[str, list[Entity]] = {c: [] for c in chunk_ids}
    if not chunk_ids:
        return mentioned, []
    rows = fetch(conn, _MENTIONED, {
        "chunks": list(chunk_ids), "v": vector_literal(vector), "s": _scopes(scope),
        "skip": list(skip_documents), "per": max(per_entity, 0)})
    hits: dict[str, list[BridgeChunk]] = {}
    seen: set[tuple[str, str]] = set()
    for r in rows:
        if (r.hop_chunk, r.id) not in seen:
            seen.add((r.hop_chunk, r.id))
            mentioned[r.hop_chunk].append(_entity(r))
        if r.c_id is None or any(h.row["id"] == r.c_id for h in hits.get(r.id, ())):
            continue  # no passage; or the same entity's rows again (said in both chunks)
        row = {k: getattr(r, f"c_{k}") for k in CHUNK_KEYS}
        if len(hits.setdefault(r.id, [])) < per_entity:
            hits[r.id].append(BridgeChunk(r.id, row, bool(r.c_own), float(r.c_sim)))
    order = dict.fromkeys(e.id for es in mentioned.values() for e in es)
    return mentioned, [h for i in order for h in hits.get(i, [])]


def chunk_fact_rows(conn: Connection, scope: Scope, chunk_ids: Sequence[str],
                    entity_ids: Sequence[str], as_of: Any = None,
                    ) -> list[tuple[str, ChunkFact]]:
    """(chunk id, fact) of every fact valid at ``as_of`` extracted from ``chunk_ids`` with
    an end among ``entity_ids``, one row per chunk it was extracted from, highest
    confidence first (then fact id, chunk id)."""
    if not chunk_ids or not entity_ids:
        return []
    rows = fetch(conn, f"""
        SELECT p.chunk_id AS from_chunk, {_F}, s.name AS subject, o.name AS object,
               d.source, d.uri, coalesce(d.title, '') AS title
        FROM relation_provenance p JOIN relations r ON r.id = p.relation_id
        JOIN entities s ON s.id = r.subject_id JOIN entities o ON o.id = r.object_id
        JOIN chunks c ON c.id = p.chunk_id JOIN documents d ON d.id = c.document_id
        WHERE p.chunk_id = ANY(:chunks) AND r.scope = ANY(:s)
          AND (r.subject_id = ANY(:ids) OR r.object_id = ANY(:ids)) AND {_VALID}
        ORDER BY r.confidence DESC, r.id, p.chunk_id""",
        {"chunks": list(chunk_ids), "ids": list(entity_ids), "s": _scopes(scope),
         "as_of": as_of})
    return [(r.from_chunk, ChunkFact(_fact(r), r.subject, r.object,
                                     [{"source": r.source, "uri": r.uri, "title": r.title}]))
            for r in rows]


def cut_facts(rows: Iterable[tuple[str, ChunkFact]], chunk_ids: Iterable[str],
              entity_ids: Iterable[str], limit: int) -> list[ChunkFact]:
    """The facts of ``rows`` (:func:`chunk_fact_rows`) from ``chunk_ids`` with an end among
    ``entity_ids``, each once (its first row), in the rows' order, at most ``limit``: what
    storage.bridges.chunk_facts gives for those arguments."""
    chunks, ids = set(chunk_ids), set(entity_ids)
    out: dict[str, ChunkFact] = {}
    for chunk, found in rows:
        f = found.fact
        if chunk in chunks and f.id not in out and (f.subject_id in ids or f.object_id in ids):
            out[f.id] = found
    return list(out.values())[:max(limit, 0)]
