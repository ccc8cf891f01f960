"""The no-LLM second hop's reads (graph_flows.query.second_hop): the entities a passage
mentions, the passages of candidate bridge entities nearest the question, the passages
about the chosen bridges (their documents' titles say its name), and the facts those
passages state about them. Four small statements, each bounded by its arguments (a few
chunks, a few entities), so the follow-up round costs a fraction of a full search.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from storage.bulk import vector_literal
from storage.models import Entity, Fact
from storage.search import _E, _F, _VALID, Scope, _entity, _fact, _scopes
from storage.statements import fetch


@dataclass(frozen=True, slots=True)
class BridgeChunk:
    """A passage of a candidate bridge ``entity_id``: the chunk row (as
    storage.evidence.chunk_rows gives it), whether its document is the entity's own (its
    title, without a trailing parenthesis, is the entity's name) and its cosine to the
    question."""

    entity_id: str
    row: dict[str, Any]
    own: bool
    similarity: float


def chunk_entities(conn: Connection, chunk_ids: Sequence[str]) -> dict[str, list[Entity]]:
    """chunk id -> the entities extracted from it (name order); every chunk has an entry."""
    out: dict[str, list[Entity]] = {c: [] for c in chunk_ids}
    if not chunk_ids:
        return out
    rows = fetch(conn, f"""
        SELECT p.chunk_id, {_E} FROM entity_provenance p JOIN entities e ON e.id = p.entity_id
        WHERE p.chunk_id = ANY(:chunks) ORDER BY p.chunk_id, e.name, e.id""",
        {"chunks": list(chunk_ids)})
    for r in rows:
        out[r.chunk_id].append(_entity(r))
    return out


CHUNK_KEYS = ("id", "text", "ordinal", "injection_spans", "document_id", "uri", "title",
              "source", "scope")
"""The keys of a :class:`BridgeChunk`'s row."""


def entity_passages(entity_id: str, name: str, prefix: str = "") -> str:
    """The statement (a ``LATERAL`` body) reading the passages of the entity whose id and
    name are the SQL ``entity_id`` and ``name``, as :func:`bridge_chunks` orders and limits
    them (``:v``, ``:s``, ``:skip``, ``:per``): columns ``prefix`` + :data:`CHUNK_KEYS`,
    ``own`` and ``sim``."""
    pre = prefix
    return f"""
    SELECT c.id AS {pre}id, c.text AS {pre}text, c.ordinal AS {pre}ordinal,
           c.injection_spans AS {pre}injection_spans, d.id AS {pre}document_id,
           d.uri AS {pre}uri, coalesce(d.title, '') AS {pre}title, d.source AS {pre}source,
           d.scope AS {pre}scope,
           lower(regexp_replace(coalesce(d.title, ''), '\\s*\\([^()]*\\)\\s*$', ''))
               = lower({name}) AS {pre}own,
           1 - (c.embedding <=> CAST(:v AS vector)) AS {pre}sim
    FROM entity_provenance p JOIN chunks c ON c.id = p.chunk_id
    JOIN documents d ON d.id = c.document_id
    WHERE p.entity_id = {entity_id} AND d.scope = ANY(:s) AND c.embedding IS NOT NULL
      AND NOT d.id = ANY(CAST(:skip AS text[]))
    ORDER BY 10 DESC, c.embedding <=> CAST(:v AS vector), c.id LIMIT :per"""


_BRIDGE_CHUNKS = f"""
SELECT b.id AS entity_id, x.* FROM unnest(CAST(:ids AS text[])) AS b(id)
JOIN entities e ON e.id = b.id, LATERAL ({entity_passages("b.id", "e.name")}) x
"""


def bridge_chunks(conn: Connection, scope: Scope, entity_ids: Sequence[str],
                  vector: Sequence[float], skip_documents: Sequence[str], per_entity: int,
                  ) -> list[BridgeChunk]:
    """For each of ``entity_ids``: the chunks it was extracted from, outside the documents
    ``skip_documents``, its own document's first, then by cosine to ``vector``; at most
    ``per_entity`` each (exact cosine over the entity's chunks: an entity's provenance is
    small next to the corpus)."""
    if not entity_ids or per_entity <= 0:
        return []
    rows = fetch(conn, _BRIDGE_CHUNKS, {
        "ids": list(dict.fromkeys(entity_ids)), "v": vector_literal(vector),
        "s": _scopes(scope), "skip": list(skip_documents), "per": per_entity})
    return [BridgeChunk(r.entity_id, {k: getattr(r, k) for k in CHUNK_KEYS}, bool(r.own),
                        float(r.sim)) for r in rows]


_TITLED_CHUNKS = """
SELECT x.* FROM unnest(CAST(:ids AS text[]), CAST(:names AS text[])) AS b(id, name),
LATERAL (
    SELECT b.id AS entity_id, c.id, c.text, c.ordinal, c.injection_spans,
           d.id AS document_id, d.uri, coalesce(d.title, '') AS title, d.source, d.scope,
           1 - (c.embedding <=> CAST(:v AS vector)) AS sim
    FROM chunks c JOIN documents d ON d.id = c.document_id
    WHERE c.tsv @@ phraseto_tsquery('english', b.name)
      AND to_tsvector('english', coalesce(d.title, '')) @@ phraseto_tsquery('english', b.name)
      AND d.scope = ANY(:s) AND c.embedding IS NOT NULL
      AND NOT d.id = ANY(CAST(:skip AS text[]))
    ORDER BY c.embedding <=> CAST(:v AS vector), c.id LIMIT :per) x
"""


def titled_chunks(conn: Connection, scope: Scope, names: Sequence[tuple[str, str]],
                  vector: Sequence[float], skip_documents: Sequence[str], per_entity: int,
                  ) -> list[BridgeChunk]:
    """For each ``(entity id, name)`` of ``names``: the chunks that say the name, of
    documents whose title says it too (full-text phrase matches: whole words, stemmed;
    "British Hong Kong" for "Hong Kong"), outside the documents ``skip_documents``, nearest
    ``vector`` first; at most ``per_entity`` each. Found by what the text says, not by
    what an extractor stored: an extractor that keeps a thing under the phrase one passage
    uses ("British Hong Kong") links no other name to that passage."""
    names = [(i, n) for i, n in dict.fromkeys(names) if n.strip()]
    if not names or per_entity <= 0:
        return []
    rows = fetch(conn, _TITLED_CHUNKS, {
        "ids": [i for i, _ in names], "names": [n for _, n in names],
        "v": vector_literal(vector), "s": _scopes(scope), "skip": list(skip_documents),
        "per": per_entity})
    keys = ("id", "text", "ordinal", "injection_spans", "document_id", "uri", "title",
            "source", "scope")
    return [BridgeChunk(r.entity_id, {k: getattr(r, k) for k in keys}, False, float(r.sim))
            for r in rows]


@dataclass(frozen=True, slots=True)
class ChunkFact:
    """A fact extracted from one of the asked chunks, with its ends' names and sources."""

    fact: Fact
    subject: str
    object: str
    sources: list[dict[str, str]]


def chunk_facts(conn: Connection, scope: Scope, chunk_ids: Sequence[str],
                entity_ids: Sequence[str], limit: int, as_of: Any = None) -> list[ChunkFact]:
    """Facts valid at ``as_of`` extracted from ``chunk_ids`` with an end among
    ``entity_ids`` (highest confidence first, at most ``limit``)."""
    if not chunk_ids or not entity_ids or limit <= 0:
        return []
    rows = fetch(conn, f"""
        SELECT DISTINCT ON (r.confidence, r.id) {_F}, s.name AS subject, o.name AS object,
               d.source, d.uri, coalesce(d.title, '') AS title
        FROM relation_provenance p JOIN relations r ON r.id = p.relation_id
        JOIN entities s ON s.id = r.subject_id JOIN entities o ON o.id = r.object_id
        JOIN chunks c ON c.id = p.chunk_id JOIN documents d ON d.id = c.document_id
        WHERE p.chunk_id = ANY(:chunks) AND r.scope = ANY(:s)
          AND (r.subject_id = ANY(:ids) OR r.object_id = ANY(:ids)) AND {_VALID}
        ORDER BY r.confidence DESC, r.id LIMIT :n""",
        {"chunks": list(chunk_ids), "ids": list(entity_ids), "s": _scopes(scope),
         "as_of": as_of, "n": limit})
    return [ChunkFact(_fact(r), r.subject, r.object,
                      [{"source": r.source, "uri": r.uri, "title": r.title}]) for r in rows]
