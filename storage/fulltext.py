"""Reads for quality evaluation: a scope's chunks, Postgres full-text (BM25-style) search
over them, and the documents retrieved entities and facts were extracted from.

BM25 over Postgres full text: the question and each chunk are parsed with
``to_tsvector('english', ...)`` (stop words dropped, words stemmed); a chunk scores
``sum over query lexemes of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))``
with ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` over the scope's chunks, k1 1.5, b .75;
tf is the lexeme's position count and len the chunk's distinct lexeme count. (Ranking with
``ts_rank_cd`` of an OR-ed ``websearch_to_tsquery`` instead, no idf, found half as much:
R@5 .25 against .49 on the shared multihop set.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, text

BM25_K1 = 1.5
BM25_B = 0.75


@dataclass(frozen=True)
class ChunkText:
    """A chunk of a scope with the uri of its document."""

    id: str
    uri: str
    text: str


def scope_chunks(conn: Connection, scope: str) -> list[ChunkText]:
    """Every chunk of ``scope``, in document uri then chunk order."""
    rows = conn.execute(text("""
        SELECT c.id, d.uri, c.text FROM chunks c JOIN documents d ON d.id = c.document_id
        WHERE d.scope = :scope ORDER BY d.uri, c.ordinal"""), {"scope": scope}).all()
    return [ChunkText(r.id, r.uri, r.text) for r in rows]


def bm25_chunks(conn: Connection, scope: str, query: str, limit: int = 10,
                k1: float = BM25_K1, b: float = BM25_B) -> list[ChunkText]:
    """The ``limit`` chunks of ``scope`` ranked by Okapi BM25 over Postgres full-text
    lexemes (see the module docstring)."""
    rows = conn.execute(text("""
        WITH q AS (SELECT array_agg(DISTINCT l) AS terms
                   FROM unnest(tsvector_to_array(to_tsvector('english', :q))) AS l),
        docs AS (SELECT c.id, d.uri, c.text, to_tsvector('english', c.text) AS tv
                 FROM chunks c JOIN documents d ON d.id = c.document_id
                 WHERE d.scope = :scope),
        stats AS (SELECT count(*)::float AS n, avg(length(tv))::float AS avgdl FROM docs),
        hits AS (SELECT docs.id, u.lexeme, length(docs.tv)::float AS dl,
                        coalesce(array_length(u.positions, 1), 1) AS tf
                 FROM docs, unnest(docs.tv) AS u, q WHERE u.lexeme = ANY(q.terms)),
        df AS (SELECT lexeme, count(*)::float AS df FROM hits GROUP BY lexeme),
        ranked AS (
            SELECT h.id, sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
                             * h.tf * (:k1 + 1)
                             / (h.tf + :k1 * (1 - :b + :b * h.dl / s.avgdl))) AS score
            FROM hits h JOIN df USING (lexeme), stats s GROUP BY h.id)
        SELECT docs.id, docs.uri, docs.text FROM ranked JOIN docs USING (id)
        ORDER BY ranked.score DESC, docs.id LIMIT :n"""),
        {"q": query, "scope": scope, "n": limit, "k1": k1, "b": b}).all()
    return [ChunkText(r.id, r.uri, r.text) for r in rows]


def entity_documents(conn: Connection, entity_ids: Sequence[str]) -> dict[str, list[str]]:
    """Document uris each entity was extracted from: entity id -> [uri] (uri order)."""
    if not entity_ids:
        return {}
    rows = conn.execute(text("""
        SELECT DISTINCT p.entity_id, d.uri
        FROM entity_provenance p JOIN chunks c ON c.id = p.chunk_id
        JOIN documents d ON d.id = c.document_id
        WHERE p.entity_id = ANY(:ids) ORDER BY p.entity_id, d.uri"""),
        {"ids": list(entity_ids)}).all()
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(r.entity_id, []).append(r.uri)
    return out
