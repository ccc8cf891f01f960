"""Reads and small writes for entity resolution in the indexing graph.

- :func:`existing_entities` / :func:`existing_relations`: what the store already has for a
  set of deterministic ids (to merge exact matches and to skip re-embedding).
- :func:`similar_entities`: near-duplicate candidates of the same type and scope through the
  pg_trgm GIN index on ``entities.name``.
- :func:`similar_name_pairs` / :func:`name_similarities`: pg_trgm ``similarity()`` of the
  batch's own names, computed by PostgreSQL (no Python copy of pg_trgm to keep equal).
- :func:`document_entities`: the entities earlier batches stored from a document (the names
  a later chunk's short forms may stand for); :func:`source_entities`: a source's entities
  per document (the alias measure of ``krag eval extraction``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, text

# Candidates are fetched above this (loose) similarity; the caller applies its own threshold
# and its compact-name rule ("Postgre SQL" = "PostgreSQL", similarity 0.64).
CANDIDATE_THRESHOLD = 0.3
CANDIDATES_PER_NAME = 3


@dataclass(frozen=True, slots=True)
class KnownEntity:
    """An entity already stored (``similarity`` to the queried name when from a search)."""

    id: str
    name: str
    type: str
    summary: str
    has_embedding: bool
    similarity: float = 1.0


@dataclass(frozen=True, slots=True)
class KnownRelation:
    """A relation already stored."""

    id: str
    confidence: float
    has_embedding: bool
    fact: str = ""


def existing_entities(conn: Connection, entity_ids: Sequence[str]) -> dict[str, KnownEntity]:
    """Stored entities among ``entity_ids``, by id."""
    if not entity_ids:
        return {}
    rows = conn.execute(text(
        "SELECT id, name, type, summary, embedding IS NOT NULL AS has_embedding "
        "FROM entities WHERE id = ANY(:ids)"), {"ids": list(entity_ids)}).all()
    return {r.id: KnownEntity(r.id, r.name, r.type, r.summary, r.has_embedding) for r in rows}


def existing_relations(
    conn: Connection, relation_ids: Sequence[str]
) -> dict[str, KnownRelation]:
    """Stored relations among ``relation_ids``, by id."""
    if not relation_ids:
        return {}
    rows = conn.execute(text(
        "SELECT id, confidence, embedding IS NOT NULL AS has_embedding, fact "
        "FROM relations WHERE id = ANY(:ids)"), {"ids": list(relation_ids)}).all()
    return {r.id: KnownRelation(r.id, r.confidence, r.has_embedding, r.fact) for r in rows}


_SIMILAR = """
SELECT q.i, e.id, e.name, e.type, e.summary, e.embedding IS NOT NULL AS has_embedding, e.sim
FROM unnest(CAST(:names AS text[]), CAST(:types AS text[])) WITH ORDINALITY AS q(name, type, i)
CROSS JOIN LATERAL (
    SELECT c.id, c.name, c.type, c.summary, c.embedding, similarity(c.name, q.name) AS sim
    FROM entities c
    WHERE c.name %% q.name AND c.scope = :scope AND c.type = q.type
    ORDER BY sim DESC, c.id
    LIMIT :k
) e
ORDER BY q.i, e.sim DESC, e.id
"""


def similar_entities(
    conn: Connection, scope: str, queries: Sequence[tuple[str, str]]
) -> list[list[KnownEntity]]:
    """For each (name, type): stored entities of that type and scope with similar names.

    Uses the GIN trigram index (``%`` at :data:`CANDIDATE_THRESHOLD`, set for the rest of
    ``conn``'s transaction only); best first.
    """
    out: list[list[KnownEntity]] = [[] for _ in queries]
    if not queries:
        return out
    conn.execute(text(f"SET LOCAL pg_trgm.similarity_threshold = {CANDIDATE_THRESHOLD}"))
    rows = conn.execute(text(_SIMILAR.replace("%%", "%")), {
        "names": [n for n, _ in queries], "types": [t for _, t in queries],
        "scope": scope, "k": CANDIDATES_PER_NAME}).all()
    for r in rows:
        out[r.i - 1].append(
            KnownEntity(r.id, r.name, r.type, r.summary, r.has_embedding, float(r.sim)))
    return out


_PAIRS = """
SELECT a.name AS a, b.name AS b
FROM unnest(CAST(:names AS text[]), CAST(:groups AS text[])) WITH ORDINALITY AS a(name, grp, i)
JOIN unnest(CAST(:names AS text[]), CAST(:groups AS text[])) WITH ORDINALITY AS b(name, grp, i)
  ON a.grp = b.grp AND a.i < b.i
WHERE similarity(a.name, b.name) >= :threshold
"""


def similar_name_pairs(
    engine: Engine, names: Sequence[tuple[str, str]], threshold: float
) -> set[tuple[str, str]]:
    """Pairs of names of the same group whose pg_trgm similarity is >= ``threshold``.

    ``names`` holds (group, name) tuples; each pair is returned in both orders.
    """
    unique = sorted(set(names))
    if len(unique) < 2:
        return set()
    with engine.connect() as conn:
        rows = conn.execute(text(_PAIRS), {
            "names": [n for _, n in unique], "groups": [g for g, _ in unique],
            "threshold": threshold}).all()
    return {(r.a, r.b) for r in rows} | {(r.b, r.a) for r in rows}


def name_similarities(engine: Engine, pairs: Sequence[tuple[str, str]]) -> list[float]:
    """pg_trgm ``similarity(a, b)`` of each (a, b) pair, in order."""
    if not pairs:
        return []
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT similarity(a, b) FROM unnest(CAST(:a AS text[]), CAST(:b AS text[])) "
            "WITH ORDINALITY AS p(a, b, i) ORDER BY i"),
            {"a": [a for a, _ in pairs], "b": [b for _, b in pairs]}).scalars().all()
    return [float(r) for r in rows]


@dataclass(frozen=True, slots=True)
class DocumentEntity:
    """An entity stored from a chunk of a document: its id, name, type and aliases."""

    document_id: str
    id: str
    name: str
    type: str
    aliases: tuple[str, ...]


def document_entities(
    conn: Connection, document_ids: Sequence[str], skip_chunk_ids: Sequence[str] = ()
) -> dict[str, list[DocumentEntity]]:
    """Entities stored from chunks of ``document_ids`` other than ``skip_chunk_ids``, per
    document, in the order of the first chunk that names them (the document's reading
    order)."""
    if not document_ids:
        return {}
    rows = conn.execute(text("""
        SELECT c.document_id, e.id, e.name, e.type, e.aliases, min(c.ordinal) AS first
        FROM chunks c JOIN entity_provenance p ON p.chunk_id = c.id
        JOIN entities e ON e.id = p.entity_id
        WHERE c.document_id = ANY(:docs) AND NOT (c.id = ANY(:skip))
        GROUP BY c.document_id, e.id, e.name, e.type, e.aliases
        ORDER BY c.document_id, first, e.name"""),
        {"docs": list(document_ids), "skip": list(skip_chunk_ids)}).all()
    return _by_key(rows, "document_id")


def source_entities(conn: Connection, scope: str, source: str) -> dict[str, list[DocumentEntity]]:
    """Entities stored from each document of ``source`` in ``scope``, by document uri (the
    entity's ``document_id`` is the uri here)."""
    rows = conn.execute(text("""
        SELECT d.uri AS document_id, e.id, e.name, e.type, e.aliases, min(c.ordinal) AS first
        FROM documents d JOIN chunks c ON c.document_id = d.id
        JOIN entity_provenance p ON p.chunk_id = c.id JOIN entities e ON e.id = p.entity_id
        WHERE d.scope = :scope AND d.source = :source
        GROUP BY d.uri, e.id, e.name, e.type, e.aliases
        ORDER BY d.uri, first, e.name"""), {"scope": scope, "source": source}).all()
    return _by_key(rows, "document_id")


def _by_key(rows: Sequence[Any], key: str) -> dict[str, list[DocumentEntity]]:
    out: dict[str, list[DocumentEntity]] = {}
    for r in rows:
        out.setdefault(getattr(r, key), []).append(
            DocumentEntity(r.document_id, r.id, r.name, r.type, tuple(r.aliases or ())))
    return out
