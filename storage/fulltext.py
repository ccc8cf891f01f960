"""Reads for quality evaluation: a scope's chunks, Postgres full-text (BM25-style) search
over them, and the documents retrieved entities and facts were extracted from.

BM25 over Postgres full text: the question and each chunk are parsed with
``to_tsvector('english', ...)`` (stop words dropped, words stemmed); a chunk scores
``sum over query lexemes of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))``
with ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` over the scope's chunks, k1 1.5, b .75;
tf is the lexeme's position count and len the chunk's distinct lexeme count. (Ranking with
``ts_rank_cd`` of an OR-ed ``websearch_to_tsquery`` instead, no idf, found half as much:
R@5 .25 against .49 on the shared multihop set.)

Per-scope statistics (migration 0008): the document frequency of each lexeme and the scope's
chunk count and mean length, cached in ``chunk_term_stats`` / ``chunk_scope_stats`` so query
time BM25 (storage.evidence.chunk_fulltext) needs no pass over the scope. They are rebuilt for
a scope by :func:`ensure_term_stats` when missing, or when the chunks table changed (its
insert + delete counter, ``pg_stat_get_tuples_inserted/deleted``) and they are older than
:data:`STATS_MAX_AGE_S`: between rebuilds, new chunks are found (the GIN index is always
current) and only their lexemes' frequencies lag.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from storage.statements import fetch, text

log = logging.getLogger(__name__)

BM25_K1 = 1.5
BM25_B = 0.75
STATS_MAX_AGE_S = 60


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


_VERSION = ("SELECT (pg_stat_get_tuples_inserted(c.oid) + pg_stat_get_tuples_deleted(c.oid)"
            ")::bigint FROM pg_class c WHERE c.oid = 'chunks'::regclass")
_STALE = f"""
SELECT s.scope FROM unnest(CAST(:s AS text[])) AS s(scope)
LEFT JOIN chunk_scope_stats t ON t.scope = s.scope
WHERE t.scope IS NULL
   OR (t.version <> ({_VERSION}) AND t.built_at < now() - make_interval(secs => :age))
"""
_REFRESH = [
    "DELETE FROM chunk_term_stats WHERE scope = :s",
    """INSERT INTO chunk_term_stats (scope, lexeme, df)
       SELECT :s, u.lexeme, count(*) FROM chunks c JOIN documents d ON d.id = c.document_id,
       unnest(c.tsv) AS u WHERE d.scope = :s GROUP BY u.lexeme""",
    f"""INSERT INTO chunk_scope_stats (scope, chunks, avg_length, version, built_at)
       SELECT :s, count(*), coalesce(avg(length(c.tsv)), 0), ({_VERSION}), now()
       FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.scope = :s
       ON CONFLICT (scope) DO UPDATE SET chunks = excluded.chunks,
         avg_length = excluded.avg_length, version = excluded.version,
         built_at = excluded.built_at""",
]


def stale_term_stats(conn: Connection, scopes: Sequence[str],
                     max_age_s: float = STATS_MAX_AGE_S) -> list[str]:
    """The scopes of ``scopes`` whose full-text statistics are missing, or out of date
    (chunks changed since) and older than ``max_age_s`` seconds."""
    return [r.scope for r in fetch(conn, _STALE, {"s": list(scopes), "age": max_age_s})]


def refresh_term_stats(conn: Connection, scope: str) -> bool:
    """Rebuild the full-text statistics of ``scope`` on ``conn``'s transaction; False (and
    nothing done) when another session is rebuilding them (a transaction-scoped advisory
    lock)."""
    if not conn.execute(text("SELECT pg_try_advisory_xact_lock(hashtext('chunk_term_stats'), "
                             "hashtext(:s))"), {"s": scope}).scalar():
        return False
    for statement in _REFRESH:
        conn.execute(text(statement), {"s": scope})
    return True


def ensure_term_stats(conn: Connection, scopes: Sequence[str],
                      max_age_s: float = STATS_MAX_AGE_S) -> list[str]:
    """Rebuild the stale statistics of ``scopes`` (see :func:`stale_term_stats`), each in a
    transaction of its own that this function commits, on a connection with no transaction
    open; returns the scopes rebuilt. A rebuild that fails (e.g. the statement timeout of a
    search connection on a large scope) is logged and rolled back: BM25 then uses the exact
    per-query statistics for that scope. On a read replica's read-only connection nothing is
    rebuilt (the primary rebuilds them at its next ingest or query)."""
    stale = stale_term_stats(conn, scopes, max_age_s)
    read_only = stale and conn.execute(text("SHOW transaction_read_only")).scalar() == "on"
    conn.rollback()
    if read_only:
        log.debug("full-text statistics of %s stale; not rebuilt on a read replica", stale)
        return []
    done = []
    for scope in stale:
        try:
            with conn.begin():
                if refresh_term_stats(conn, scope):
                    done.append(scope)
        except DBAPIError:
            log.warning("rebuilding the full-text statistics of scope %s failed", scope,
                        exc_info=True)
    return done
