"""Chunks as evidence: passage search (full text, vector), the bounded graph neighbourhood
personalized PageRank runs on, and chunk embeddings (migration 0006).

Scope: chunks belong to a scope through their document; every function takes a scope or a
scope chain (storage.scopes). Relations are filtered to those valid at ``as_of`` like the
other searches (storage.search); chunks carry no validity of their own.

Full text: Okapi BM25 (the formula of storage.fulltext) over the generated ``chunks.tsv``
column, with the candidates found by the GIN index (any question lexeme, OR-ed), so the cost
grows with the chunks sharing a word with the question, not with the corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, text

from storage.bulk import vector_literal
from storage.fulltext import BM25_B, BM25_K1
from storage.search import _VALID, Scope, _scopes

# Chunks matched by the full-text candidates before BM25 ranks them (bounds common words).
FULLTEXT_POOL = 2000


@dataclass(frozen=True, slots=True)
class ChunkHit:
    """A chunk found by one method; ``score`` is method-specific (cosine, BM25)."""

    id: str
    method: str
    score: float


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    """Edges of the bounded graph around the seeds: (entity, chunk) provenance pairs and
    (subject, object) relation pairs (one per valid relation)."""

    mentions: list[tuple[str, str]]
    relations: list[tuple[str, str]]


_BM25 = f"""
WITH q AS (SELECT array_agg(DISTINCT l) AS terms,
                  string_agg(DISTINCT quote_literal(l), ' | ') AS query
           FROM unnest(tsvector_to_array(to_tsvector('english', :q))) AS l
           WHERE l !~ '[\\\\]'),
docs AS MATERIALIZED (
    SELECT c.id, c.tsv FROM chunks c JOIN documents d ON d.id = c.document_id, q
    WHERE d.scope = ANY(:s) AND q.query IS NOT NULL AND c.tsv @@ CAST(q.query AS tsquery)
    LIMIT {FULLTEXT_POOL}),
stats AS (SELECT count(*)::float AS n, coalesce(avg(length(c.tsv)), 1)::float AS avgdl
          FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.scope = ANY(:s)),
hits AS (SELECT docs.id, u.lexeme, length(docs.tv)::float AS dl,
                coalesce(array_length(u.positions, 1), 1) AS tf
         FROM (SELECT id, tsv AS tv FROM docs) docs, unnest(docs.tv) AS u, q
         WHERE u.lexeme = ANY(q.terms)),
df AS (SELECT lexeme, count(*)::float AS df FROM hits GROUP BY lexeme)
SELECT h.id, sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5)) * h.tf * (:k1 + 1)
                 / (h.tf + :k1 * (1 - :b + :b * h.dl / greatest(s.avgdl, 1)))) AS score
FROM hits h JOIN df USING (lexeme), stats s
GROUP BY h.id ORDER BY score DESC, h.id LIMIT :n
"""


def chunk_fulltext(conn: Connection, scope: Scope, query: str, limit: int) -> list[ChunkHit]:
    """Chunks sharing a lexeme with ``query`` (GIN, OR-ed), ranked by Okapi BM25 (document
    frequencies over those candidates, collection size and mean length over the scope)."""
    if limit <= 0 or not query.strip():
        return []
    rows = conn.execute(text(_BM25), {"q": query, "s": _scopes(scope), "n": limit,
                                      "k1": BM25_K1, "b": BM25_B}).all()
    return [ChunkHit(r.id, "fulltext", float(r.score)) for r in rows]


def chunk_vector(conn: Connection, scope: Scope, vector: Sequence[float], limit: int,
                 ef_search: int | None = None) -> list[ChunkHit]:
    """Nearest chunks by cosine (HNSW; ``ef_search`` widens the search for this statement's
    transaction, at least ``limit``)."""
    if limit <= 0:
        return []
    ef = max(int(ef_search or 0), limit)
    conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {min(ef, 1000)}")
    rows = conn.execute(text(
        "SELECT c.id, 1 - (c.embedding <=> CAST(:v AS vector)) AS sim "
        "FROM chunks c JOIN documents d ON d.id = c.document_id "
        "WHERE d.scope = ANY(:s) AND c.embedding IS NOT NULL "
        "ORDER BY c.embedding <=> CAST(:v AS vector) LIMIT :n"),
        {"s": _scopes(scope), "v": vector_literal(vector), "n": limit}).all()
    return [ChunkHit(r.id, "vector", float(r.sim)) for r in rows]


_SEED_NEIGHBOURS = f"""
SELECT r.subject_id, r.object_id FROM relations r
WHERE r.scope = ANY(:s) AND (r.subject_id = ANY(:ids) OR r.object_id = ANY(:ids)) AND {_VALID}
ORDER BY r.confidence DESC, r.id LIMIT :m
"""
_CHUNK_ENTITIES = """
SELECT p.entity_id, p.chunk_id FROM entity_provenance p JOIN entities e ON e.id = p.entity_id
WHERE p.chunk_id = ANY(:chunks) AND e.scope = ANY(:s) ORDER BY p.chunk_id, p.entity_id LIMIT :m
"""
_MENTIONS = """
SELECT x.id AS entity_id, c.chunk_id FROM unnest(CAST(:ids AS text[])) AS x(id),
LATERAL (SELECT p.chunk_id FROM entity_provenance p WHERE p.entity_id = x.id
         ORDER BY p.chunk_id LIMIT :per) AS c
LIMIT :m
"""
_AMONG = f"""
SELECT r.subject_id, r.object_id FROM relations r
WHERE r.scope = ANY(:s) AND r.subject_id = ANY(:ids) AND r.object_id = ANY(:ids) AND {_VALID}
ORDER BY r.confidence DESC, r.id LIMIT :m
"""


def neighbourhood(
    conn: Connection, scope: Scope, entity_ids: Sequence[str], chunk_ids: Sequence[str], *,
    per_entity: int = 20, max_edges: int = 5000, as_of: Any = None,
) -> Neighbourhood:
    """The graph PageRank runs on, bounded by the seeds (never the whole graph): the seed
    entities, their relation neighbours and the entities of the seed chunks; up to
    ``per_entity`` chunks each of those entities appears in; the valid relations among them.
    At most ``max_edges`` edges of each kind."""
    s, m = _scopes(scope), max_edges
    seeds = list(dict.fromkeys(entity_ids))
    rel = [(r.subject_id, r.object_id) for r in conn.execute(
        text(_SEED_NEIGHBOURS), {"s": s, "ids": seeds, "m": m, "as_of": as_of})] \
        if seeds else []
    in_chunks = [(r.entity_id, r.chunk_id) for r in conn.execute(
        text(_CHUNK_ENTITIES), {"s": s, "chunks": list(chunk_ids), "m": m})] \
        if chunk_ids else []
    nodes = list(dict.fromkeys(seeds + [e for pair in rel for e in pair]
                               + [e for e, _ in in_chunks]))
    if not nodes:
        return Neighbourhood([], [])
    mentions = [(r.entity_id, r.chunk_id) for r in conn.execute(
        text(_MENTIONS), {"ids": nodes, "per": per_entity, "m": m})]
    among = [(r.subject_id, r.object_id) for r in conn.execute(
        text(_AMONG), {"s": s, "ids": nodes, "m": m, "as_of": as_of})]
    return Neighbourhood(list(dict.fromkeys(in_chunks + mentions))[:m],
                         list(dict.fromkeys(rel + among))[:m])


def entity_chunk_counts(conn: Connection, entity_ids: Sequence[str]) -> dict[str, int]:
    """How many chunks each entity was extracted from (entities without any are left out)."""
    if not entity_ids:
        return {}
    rows = conn.execute(text(
        "SELECT entity_id, count(*) AS n FROM entity_provenance WHERE entity_id = ANY(:ids) "
        "GROUP BY entity_id"), {"ids": list(entity_ids)}).all()
    return {r.entity_id: int(r.n) for r in rows}


def chunk_rows(conn: Connection, chunk_ids: Sequence[str]) -> list[dict[str, Any]]:
    """id, text, ordinal and document (id, uri, title, source, scope) of each chunk, in the
    order of ``chunk_ids`` (unknown ids are left out)."""
    if not chunk_ids:
        return []
    rows = conn.execute(text("""
        SELECT c.id, c.text, c.ordinal, d.id AS document_id, d.uri,
               coalesce(d.title, '') AS title, d.source, d.scope
        FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id = ANY(:ids)"""),
        {"ids": list(chunk_ids)}).all()
    by_id = {r.id: dict(r._mapping) for r in rows}
    return [by_id[i] for i in chunk_ids if i in by_id]


def embedding_coverage(conn: Connection, scope: Scope | None = None) -> tuple[int, int]:
    """(chunks, chunks with an embedding) of ``scope`` (a scope chain), or of the store."""
    row = conn.execute(text(
        "SELECT count(*) AS n, count(c.embedding) AS embedded FROM chunks c "
        "JOIN documents d ON d.id = c.document_id "
        "WHERE CAST(:s AS text[]) IS NULL OR d.scope = ANY(:s)"),
        {"s": None if scope is None else _scopes(scope)}).one()
    return int(row.n), int(row.embedded)


def fill_chunk_embeddings(
    conn: Connection, embed: Callable[[list[str]], list[list[float]]], *,
    chunk_ids: Sequence[str] | None = None, batch: int = 64, limit: int | None = None,
) -> int:
    """Embed chunks that have no vector yet (only ``chunk_ids`` when given, else any), in
    batches of ``batch`` texts through ``embed``; at most ``limit`` chunks. Returns how many
    were written (on ``conn``'s transaction)."""
    done, step = 0, max(1, batch)
    ids = None if chunk_ids is None else list(chunk_ids)
    after = ""
    while limit is None or done < limit:
        n = step if limit is None else min(step, limit - done)
        rows = conn.execute(text(
            "SELECT id, text FROM chunks WHERE embedding IS NULL AND id > :after "
            "AND (CAST(:ids AS text[]) IS NULL OR id = ANY(:ids)) ORDER BY id LIMIT :n"),
            {"after": after, "ids": ids, "n": n}).all()
        if not rows:
            break
        vectors = embed([r.text for r in rows])
        conn.execute(text("UPDATE chunks SET embedding = CAST(:v AS vector) WHERE id = :id"),
                     [{"id": r.id, "v": vector_literal(v)}
                      for r, v in zip(rows, vectors, strict=True)])
        done += len(rows)
        after = rows[-1].id
    return done


def has_chunk_embeddings(conn: Connection, scope: Scope) -> bool:
    """Whether any chunk of ``scope`` (a scope chain) has an embedding (stops at the first:
    cheap enough to ask on every query)."""
    return bool(conn.execute(text(
        "SELECT EXISTS (SELECT 1 FROM chunks c JOIN documents d ON d.id = c.document_id "
        "WHERE d.scope = ANY(:s) AND c.embedding IS NOT NULL)"), {"s": _scopes(scope)}).scalar())
