"""Chunks as evidence: passage search (full text, vector), the bounded graph neighbourhood
personalized PageRank runs on, and chunk embeddings (migration 0006).

Scope: chunks belong to a scope through their document; every function takes a scope or a
scope chain (storage.scopes). Relations are filtered to those valid at ``as_of`` like the
other searches (storage.search); chunks carry no validity of their own.

Full text: Okapi BM25 (the formula of storage.fulltext) over the generated ``chunks.tsv``
column, with the candidates found by the GIN index (any question lexeme, OR-ed), so the cost
grows with the chunks sharing a word with the question, not with the corpus. A candidate's
term frequencies come from its vector cut to the question's lexemes in C (``setweight`` marks
them, ``ts_filter`` keeps them; the generated vectors carry no weights of their own), not
from unnesting all of it (half the time, measured on MuSiQue).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain, count
from typing import Any

import numpy as np
from sqlalchemy import Connection

from storage.access import set_local
from storage.bulk import vector_literal
from storage.fulltext import BM25_B, BM25_K1
from storage.search import _VALID, Scope, _scopes
from storage.statements import fetch, text

# Chunks matched by the full-text candidates before BM25 ranks them (bounds common words).
FULLTEXT_POOL = 2000
# With cached statistics: the rarest question lexemes whose document frequencies add up to
# this many chunks find the candidates (ten times the 30 hits the ppr recipe asks for).
FULLTEXT_PROBE = 300


@dataclass(frozen=True, slots=True)
class ChunkHit:
    """A chunk found by one method; ``score`` is method-specific (cosine, BM25)."""

    id: str
    method: str
    score: float


@dataclass(frozen=True, eq=False)
class Neighbourhood:
    """The bounded graph around the seeds, as arrays: ``nodes`` (entity and chunk ids) and
    edges as index pairs into them, so a few thousand edges cost no Python object each.

    ``mention``: (entity, chunk) provenance pairs; ``relation``: (subject, object), one per
    valid relation (parallel ones repeat); ``synonym``: (seed, entity) pairs whose name
    vectors are nearly the same (HippoRAG's synonym edges: "Kael" and "Orsina Kael" kept
    apart by resolution still join up). ``counts``: per node, the chunks the entity appears
    in (whole graph; 0 for chunks). ``degree`` (merged neighbourhoods only): per node, those
    chunks plus the relation and synonym edges kept, counting every mention even when only
    ``per_entity`` were kept. The tuple views (:attr:`mentions` ...) are for tests and
    reports, not the ranking path."""

    nodes: list[str] = field(default_factory=list)
    mention: np.ndarray = field(default_factory=lambda: _no_pairs())
    relation: np.ndarray = field(default_factory=lambda: _no_pairs())
    synonym: np.ndarray = field(default_factory=lambda: _no_pairs())
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    degree: np.ndarray | None = None
    index: dict[str, int] = field(default_factory=dict)
    """Node id -> position in ``nodes`` (merged neighbourhoods only)."""
    pending: tuple[np.ndarray, list[str]] = field(
        default_factory=lambda: (np.zeros(0, dtype=np.int64), []))
    """A part's mentions as they come: entity numbers and chunk ids (the chunks are
    numbered when parts are merged)."""

    def _named(self, pairs: np.ndarray) -> list[tuple[str, str]]:
        nodes = self.nodes
        return [(nodes[a], nodes[b]) for a, b in pairs.tolist()]

    @property
    def mentions(self) -> list[tuple[str, str]]:
        return self._named(self.mention)

    @property
    def relations(self) -> list[tuple[str, str]]:
        return self._named(self.relation)

    @property
    def synonyms(self) -> list[tuple[str, str]]:
        return self._named(self.synonym)

    @property
    def chunk_counts(self) -> dict[str, int]:
        """Entity id -> chunks it appears in (entities in none are left out)."""
        return {self.nodes[i]: int(self.counts[i]) for i in np.flatnonzero(self.counts)}

    @property
    def degrees(self) -> dict[str, int]:
        """Entity id -> its degree (entities of degree 0 are left out; chunks have none)."""
        if self.degree is None:
            return {}
        return {self.nodes[i]: int(self.degree[i]) for i in np.flatnonzero(self.degree)}

    def chunk_ids(self) -> list[str]:
        """The chunks at the end of a kept mention."""
        return [self.nodes[i] for i in np.unique(self.mention[:, 1]).tolist()]

    def count(self, entity_id: str) -> int:
        """Chunks ``entity_id`` appears in, when it is a node here (else 0)."""
        i = self.index.get(entity_id)
        return 0 if i is None else int(self.counts[i])


def _no_pairs() -> np.ndarray:
    return np.zeros((0, 2), dtype=np.int64)


def _ints(packed: bytes | None) -> np.ndarray:
    """Integers sent as concatenated ``int4send`` values (big-endian int32)."""
    return np.frombuffer(packed or b"", dtype=">i4").astype(np.int64)


# The tsquery is built in the CTE, not cast inside the chunks' condition: a text -> tsquery
# cast can raise on its input, so it is not LEAKPROOF and, under the row-level security
# policies (migration 0014), would keep the condition off the GIN index (a scan of every
# chunk of the scope: 483 ms p50 at 100k).
_BM25 = f"""
WITH q AS (SELECT array_agg(DISTINCT l) AS terms,
                  CAST(string_agg(DISTINCT quote_literal(l), ' | ') AS tsquery) AS query
           FROM unnest(tsvector_to_array(to_tsvector('english', :q))) AS l
           WHERE l !~ '[\\\\]'),
docs AS MATERIALIZED (
    SELECT c.id, c.tsv FROM chunks c JOIN documents d ON d.id = c.document_id, q
    WHERE d.scope = ANY(:s) AND q.query IS NOT NULL AND c.tsv @@ q.query
    LIMIT {FULLTEXT_POOL}),
stats AS (SELECT count(*)::float AS n, coalesce(avg(length(c.tsv)), 1)::float AS avgdl
          FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.scope = ANY(:s)),
hits AS (SELECT docs.id, u.lexeme, length(docs.tsv)::float AS dl,
                coalesce(array_length(u.positions, 1), 1) AS tf
         FROM docs, q, unnest(ts_filter(setweight(docs.tsv, 'A', q.terms), '{{a}}')) AS u),
df AS (SELECT lexeme, count(*)::float AS df FROM hits GROUP BY lexeme)
SELECT h.id, sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5)) * h.tf * (:k1 + 1)
                 / (h.tf + :k1 * (1 - :b + :b * h.dl / greatest(s.avgdl, 1)))) AS score
FROM hits h JOIN df USING (lexeme), stats s
GROUP BY h.id ORDER BY score DESC, h.id LIMIT :n
"""


_BM25_CACHED = f"""
WITH q AS (SELECT DISTINCT l AS lexeme
           FROM unnest(tsvector_to_array(to_tsvector('english', :q))) AS l WHERE l !~ '[\\\\]'),
st AS (SELECT sum(chunks)::float AS n,
              (sum(chunks * avg_length) / greatest(sum(chunks), 1))::float AS avgdl
       FROM chunk_scope_stats WHERE scope = ANY(:s)),
w AS (SELECT t.lexeme, t.df, ln(1 + (st.n - t.df + 0.5) / (t.df + 0.5)) AS idf,
             sum(t.df) OVER (ORDER BY t.df, t.lexeme) - t.df AS rarer
      FROM (SELECT q.lexeme, coalesce(sum(c.df), 0)::float AS df FROM q
            LEFT JOIN chunk_term_stats c ON c.lexeme = q.lexeme AND c.scope = ANY(:s)
            GROUP BY q.lexeme) t, st),
probe AS (SELECT CAST(string_agg(quote_literal(lexeme), ' | ') AS tsquery) AS query FROM w
          WHERE rarer < :probe AND rarer + df <= :pool),
docs AS MATERIALIZED (
    SELECT c.id, c.tsv FROM chunks c, probe
    WHERE probe.query IS NOT NULL AND c.tsv @@ probe.query
      AND c.document_id IN (SELECT d.id FROM documents d WHERE d.scope = ANY(:s))
    LIMIT {FULLTEXT_POOL}),
terms AS (SELECT array_agg(lexeme) AS a FROM w),
hits AS (SELECT docs.id, u.lexeme, length(docs.tsv)::float AS dl,
                coalesce(array_length(u.positions, 1), 1) AS tf
         FROM docs, terms, unnest(ts_filter(setweight(docs.tsv, 'A', terms.a), '{{a}}')) AS u)
SELECT h.id, sum(w.idf * h.tf * (:k1 + 1)
                 / (h.tf + :k1 * (1 - :b + :b * h.dl / greatest(st.avgdl, 1)))) AS score
FROM hits h JOIN w USING (lexeme), st
GROUP BY h.id ORDER BY score DESC, h.id LIMIT :n
"""


def chunk_fulltext(conn: Connection, scope: Scope, query: str, limit: int,
                   cached: bool | None = None) -> list[ChunkHit]:
    """Chunks sharing a lexeme with ``query`` (GIN, OR-ed), ranked by Okapi BM25.

    With the scope's cached statistics (storage.fulltext.ensure_term_stats): document
    frequencies, collection size and mean length come from them, and candidates are the
    chunks holding one of the question's rarest lexemes, taken rarest first until their
    frequencies add up to :data:`FULLTEXT_PROBE` (a chunk with only common words has only
    small idfs to add up), leaving out a lexeme that would take them past
    :data:`FULLTEXT_POOL` (its chunks would be an arbitrary cut of the pool, in physical
    order; a question with only such words finds none); every question lexeme then scores
    them. Without: frequencies over all chunks matching any lexeme, size and mean length
    over the scope, per query.
    ``cached``: whether every scope has its statistics, when the caller knows (else asked)."""
    if limit <= 0 or not query.strip():
        return []
    scopes = list(dict.fromkeys(_scopes(scope)))
    params = {"q": query, "s": scopes, "n": limit, "k1": BM25_K1, "b": BM25_B,
              "probe": FULLTEXT_PROBE, "pool": FULLTEXT_POOL}
    if cached is None:
        cached = conn.execute(text(
            "SELECT count(*) FROM chunk_scope_stats WHERE scope = ANY(:s)"),
            {"s": scopes}).scalar() == len(scopes)
    rows = fetch(conn, _BM25_CACHED if cached else _BM25, params)
    return [ChunkHit(r.id, "fulltext", float(r.score)) for r in rows]


def chunk_vector(conn: Connection, scope: Scope, vector: Sequence[float], limit: int,
                 ef_search: int | None = None) -> list[ChunkHit]:
    """Nearest chunks by cosine (HNSW; ``ef_search`` widens the search for this statement's
    transaction, at least ``limit``)."""
    if limit <= 0:
        return []
    ef = max(int(ef_search or 0), limit)
    set_local(conn, {"hnsw.ef_search": str(min(ef, 1000))})
    rows = fetch(conn,
        "SELECT c.id, 1 - (c.embedding <=> CAST(:v AS vector)) AS sim "
        "FROM chunks c JOIN documents d ON d.id = c.document_id "
        "WHERE d.scope = ANY(:s) AND c.embedding IS NOT NULL "
        "ORDER BY c.embedding <=> CAST(:v AS vector) LIMIT :n",
        {"s": _scopes(scope), "v": vector_literal(vector), "n": limit})
    return [ChunkHit(r.id, "vector", float(r.sim)) for r in rows]


_NEIGHBOURHOOD = f"""
WITH seed AS (SELECT DISTINCT unnest(CAST(:ids AS text[])) AS id),
rel AS (
    SELECT DISTINCT x.id, x.subject_id, x.object_id FROM seed,
    LATERAL (SELECT * FROM (
        (SELECT r.id, r.subject_id, r.object_id, r.confidence FROM relations r
         WHERE r.subject_id = seed.id AND r.scope = ANY(:s) AND {_VALID}
         ORDER BY r.confidence DESC, r.id LIMIT :per)
        UNION ALL
        (SELECT r.id, r.subject_id, r.object_id, r.confidence FROM relations r
         WHERE r.object_id = seed.id AND r.scope = ANY(:s) AND {_VALID}
         ORDER BY r.confidence DESC, r.id LIMIT :per)) ends
      ORDER BY confidence DESC, id LIMIT :per) x),
in_chunk AS (SELECT p.entity_id, p.chunk_id FROM entity_provenance p
             WHERE p.chunk_id = ANY(:chunks)),
syn AS (SELECT seed.id AS a, x.id AS b FROM seed JOIN entities e ON e.id = seed.id,
         LATERAL (SELECT y.synonym_id AS id FROM entity_synonyms y
                  JOIN entities s ON s.id = y.synonym_id
                  WHERE y.entity_id = e.id AND s.scope = ANY(:s)
                    AND y.similarity >= :syn_min
                  ORDER BY y.similarity DESC, y.synonym_id LIMIT :syn_k) x
         WHERE EXISTS (SELECT 1 FROM entity_synonyms_computed c WHERE c.entity_id = e.id)
         UNION ALL
         SELECT seed.id, x.id FROM seed JOIN entities e ON e.id = seed.id,
         LATERAL (SELECT s.id, s.embedding <=> e.embedding AS d FROM entities s
                  WHERE s.scope = ANY(:s) AND s.id <> e.id AND s.embedding IS NOT NULL
                  ORDER BY s.embedding <=> e.embedding LIMIT :syn_k) x
         WHERE e.embedding IS NOT NULL AND x.d <= 1 - :syn_min
           AND NOT EXISTS (SELECT 1 FROM entity_synonyms_computed c
                           WHERE c.entity_id = e.id)
         UNION ALL
         -- a name one document joined into a fuller one ("Robeson" -> "Paul Robeson") and
         -- the entity other documents still call by it: the bridge the join moved away
         SELECT seed.id, x.id FROM seed JOIN entities e ON e.id = seed.id,
         -- each side fenced (OFFSET 0) so it is planned by its own index (GIN on aliases,
         -- scope + normalized_name): under the outer ORDER BY id LIMIT the planner chose
         -- the primary key in order with the OR as a filter, which reads every entity of
         -- the table when nothing matches (1.6 s per seed at 1M entities)
         LATERAL (SELECT u.id FROM (
                    (SELECT s.id FROM entities s
                     WHERE s.aliases @> ARRAY[e.name] AND s.scope = ANY(:s) AND s.id <> e.id
                     OFFSET 0)
                    UNION
                    (SELECT s.id FROM entities s
                     WHERE s.scope = ANY(:s) AND s.id <> e.id
                       AND s.normalized_name = ANY(ARRAY(
                           SELECT lower(btrim(regexp_replace(normalize(a, NFKC),
                                                             '[[:space:]]+', ' ', 'g')))
                           FROM unnest(e.aliases) a))
                     OFFSET 0)) u
                  ORDER BY u.id LIMIT :syn_k) x
         WHERE :syn_k > 0),
node AS (SELECT id FROM seed UNION SELECT subject_id FROM rel UNION SELECT object_id FROM rel
         UNION SELECT entity_id FROM in_chunk UNION SELECT b FROM syn),
hood AS (
    SELECT n.id, c.n, c.chunks FROM node n,
    LATERAL (SELECT count(*)::int AS n,
                    (array_agg(p.chunk_id ORDER BY p.chunk_id))[1:(:per)] AS chunks
             FROM entity_provenance p WHERE p.entity_id = n.id) c)
SELECT h.entities, h.counts, h.kept, h.chunks, k.entities AS seed_entities,
       k.chunks AS seed_chunks, r.subjects, r.objects, y.seeds AS synonym_seeds,
       y.others AS synonyms
FROM (SELECT string_agg(id, ' ') AS entities, string_agg(int4send(n), ''::bytea) AS counts,
             string_agg(int4send(coalesce(cardinality(chunks), 0)), ''::bytea) AS kept,
             string_agg(coalesce(array_to_string(chunks, ' '), ''), ' ') AS chunks
      FROM hood) h,
     (SELECT string_agg(entity_id, ' ') AS entities, string_agg(chunk_id, ' ') AS chunks
      FROM in_chunk) k,
     (SELECT string_agg(subject_id, ' ') AS subjects, string_agg(object_id, ' ') AS objects
      FROM rel) r,
     (SELECT string_agg(a, ' ') AS seeds, string_agg(b, ' ') AS others FROM syn) y
"""
# One row of space-separated ids (ids are a prefix and a hex digest) and packed int4
# numbers: the entities, each one's chunk count and how many of its chunks follow, those
# chunks, the seed chunks' (entity, chunk) pairs, the relations' and the synonym pairs' ends.
# Each aggregate group reads its rows once, so its columns line up. A row per entity with a
# text[] each, and a tuple per edge, were a quarter of the query process's CPU on the 100k
# graph (array output and parsing, Python objects). A seed's relations: the most confident of
# each side by an index-only scan (migration 0009), then the most confident of both.


def neighbourhood(
    conn: Connection, scope: Scope, entity_ids: Sequence[str], chunk_ids: Sequence[str], *,
    per_entity: int = 20, max_edges: int = 5000, as_of: Any = None, synonyms: int = 0,
    synonym_min: float = 0.9,
) -> Neighbourhood:
    """The graph PageRank runs on, bounded by the seeds (never the whole graph), in one
    statement: the seed entities and up to ``per_entity`` of their valid relations (most
    confident first), the entities of the seed chunks (which come from ``scope``), and up to
    ``per_entity`` chunks each of those entities appears in, besides the seed chunks. Also
    how many chunks each entity appears in, and its degree: those chunks plus the relations
    kept, so PageRank can let the mass of the mentions left out leak instead of inflating
    the ones kept. At most ``max_edges`` edges of each kind.

    ``synonyms``: each seed entity also gets up to that many synonym edges, to the entities
    of ``scope`` whose name vectors are nearest to its own at cosine ``synonym_min`` or
    more; those entities join the neighbourhood with their passages. They are the stored
    pairs (storage.synonyms: at most ``PER_ENTITY`` per entity, at ``MIN_SIMILARITY`` or
    more, so ``synonyms`` and ``synonym_min`` within those), or for a seed whose pairs are
    not computed yet an HNSW search of its own."""
    part = neighbourhood_part(conn, scope, entity_ids, chunk_ids, per_entity=per_entity,
                              as_of=as_of, synonyms=synonyms, synonym_min=synonym_min)
    return merge_neighbourhoods([part], max_edges)


def neighbourhood_part(
    conn: Connection, scope: Scope, entity_ids: Sequence[str], chunk_ids: Sequence[str], *,
    per_entity: int = 20, as_of: Any = None, synonyms: int = 0, synonym_min: float = 0.9,
) -> Neighbourhood:
    """:func:`neighbourhood`'s statement as it comes (a mention may repeat, no degrees):
    for parts fetched apart and merged once by :func:`merge_neighbourhoods`."""
    seeds, chunks = list(dict.fromkeys(entity_ids)), list(dict.fromkeys(chunk_ids))
    if not seeds and not chunks:
        return Neighbourhood()
    # A short candidate list for the synonym lookups of seeds without stored synonyms (the
    # only HNSW scans here): the same pairs as the default 40 on MuSiQue. A generic
    # plan (the statement is prepared by psycopg after a few runs on a connection): its
    # shape does not depend on the ids, and planning it each time cost 0.5-1.2 ms of its
    # 4-6 ms (MuSiQue, 200 statements, same rows).
    set_local(conn, {"hnsw.ef_search": str(max(2 * int(synonyms), 10)),
                     "plan_cache_mode": "force_generic_plan"})
    (row,) = fetch(conn, _NEIGHBOURHOOD, {
        "s": _scopes(scope), "ids": seeds, "chunks": chunks, "per": per_entity,
        "as_of": as_of, "syn_k": max(0, synonyms), "syn_min": synonym_min})
    nodes = _split(row.entities)
    local = {e: i for i, e in enumerate(nodes)}

    def places(ids: list[str]) -> np.ndarray:
        return np.fromiter(map(local.__getitem__, ids), dtype=np.int64, count=len(ids))

    def pairs(a: str | None, b: str | None) -> np.ndarray:
        return np.stack([places(_split(a)), places(_split(b))], axis=1)

    kept = _ints(row.kept)
    ends = np.concatenate([places(_split(row.seed_entities)),
                           np.repeat(np.arange(len(nodes), dtype=np.int64), kept)])
    return Neighbourhood(nodes, _no_pairs(), pairs(row.subjects, row.objects),
                         pairs(row.synonym_seeds, row.synonyms), _ints(row.counts),
                         pending=(ends, _split(row.seed_chunks) + _split(row.chunks)))


def _split(ids: str | None) -> list[str]:
    """Space-separated ids (None: none)."""
    return ids.split() if ids else []


def merge_neighbourhoods(parts: Sequence[Neighbourhood], max_edges: int = 5000,
                         ) -> Neighbourhood:
    """One neighbourhood from parts fetched apart (e.g. the seeds' side and the seed
    chunks' side, concurrently): nodes numbered once (entities, then the chunks),
    mentions and synonym pairs deduplicated (the first of each kept, in the parts' order),
    at most ``max_edges`` edges of each kind, degrees counted (an entity's chunks plus its
    relation and synonym edges)."""
    index: dict[str, int] = {}
    pending_chunks = [p.pending[1] for p in parts]
    for ids in ([p.nodes for p in parts], pending_chunks):  # numbered in C, not a loop
        fresh = dict.fromkeys(chain.from_iterable(ids))
        if fresh.keys() & index.keys():  # only when merging merged parts again
            fresh = {c: None for c in fresh if c not in index}
        index.update(zip(fresh, count(len(index))))
    places = [np.fromiter(map(index.__getitem__, p.nodes), dtype=np.int64,
                          count=len(p.nodes)) for p in parts]
    n = len(index)
    counts = np.zeros(n, dtype=np.int64)
    mentions = []
    for part, at, ids in zip(parts, places, pending_chunks, strict=True):
        counts[at] = np.maximum(counts[at], part.counts)
        mentions.append(at[part.mention])
        if ids:
            ends = np.fromiter(map(index.__getitem__, ids), dtype=np.int64, count=len(ids))
            mentions.append(np.stack([at[part.pending[0]], ends], axis=1))

    def joined(pairs: list[np.ndarray], unique: bool) -> np.ndarray:
        out = np.concatenate(pairs + [_no_pairs()])
        if unique and len(out):
            _, first = np.unique(out[:, 0] * n + out[:, 1], return_index=True)
            out = out[np.sort(first)]
        return out[:max_edges]

    mention = joined(mentions, unique=True)
    relation = joined([at[p.relation] for p, at in zip(parts, places, strict=True)],
                      unique=False)  # parallel relations count
    synonym = joined([at[p.synonym] for p, at in zip(parts, places, strict=True)],
                     unique=True)
    degree = counts.copy()
    for pairs in (relation, synonym):
        degree += np.bincount(pairs[:, 0], minlength=n)
        other = pairs[pairs[:, 1] != pairs[:, 0], 1]  # a self-loop counts once
        degree += np.bincount(other, minlength=n)
    return Neighbourhood(list(index), mention, relation, synonym, counts, degree, index)


def chunk_rows(conn: Connection, chunk_ids: Sequence[str]) -> list[dict[str, Any]]:
    """id, text, ordinal, injection spans (``injection_spans``: flat offsets, None when not
    scanned yet; storage.injection_spans) and document (id, uri, title, source, scope) of
    each chunk, in the order of ``chunk_ids`` (unknown ids are left out)."""
    if not chunk_ids:
        return []
    rows = fetch(conn, """
        SELECT c.id, c.text, c.ordinal, c.injection_spans, d.id AS document_id, d.uri,
               coalesce(d.title, '') AS title, d.source, d.scope
        FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id = ANY(:ids)""",
        {"ids": list(chunk_ids)})
    by_id = {r.id: r._asdict() for r in rows}
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


def fill_chunk_evidence(
    conn: Connection, vectors: dict[str, Sequence[float]],
    scan: Callable[[str], list[int]],
) -> tuple[int, int]:
    """Store the given chunks' vectors (``vectors``: chunk id -> vector, computed by the
    caller from the chunks' texts) where they have none, and scan those not scanned yet for
    instruction-like spans, in one ``UPDATE`` per chunk: one new row version, so the chunk's
    indexes (HNSW, full text) take one entry per chunk instead of one per column written.
    Returns (vectors written, chunks scanned), on ``conn``'s transaction."""
    if not vectors:
        return 0, 0
    rows = conn.execute(text(
        "SELECT id, text, embedding IS NULL AS no_vector, injection_spans IS NULL AS unscanned "
        "FROM chunks WHERE id = ANY(:ids) AND (embedding IS NULL OR injection_spans IS NULL) "
        "ORDER BY id"), {"ids": sorted(vectors)}).all()
    if not rows:
        return 0, 0
    conn.execute(text(
        "UPDATE chunks SET embedding = COALESCE(embedding, CAST(:v AS vector)), "
        "injection_spans = COALESCE(injection_spans, CAST(:spans AS integer[])) "
        "WHERE id = :id"),
        [{"id": r.id, "v": vector_literal(vectors[r.id]) if r.no_vector else None,
          "spans": scan(r.text) if r.unscanned else None} for r in rows])
    return sum(r.no_vector for r in rows), sum(r.unscanned for r in rows)


def has_chunk_embeddings(conn: Connection, scope: Scope) -> bool:
    """Whether any chunk of ``scope`` (a scope chain) has an embedding (stops at the first:
    cheap enough to ask on every query)."""
    return bool(conn.execute(text(
        "SELECT EXISTS (SELECT 1 FROM chunks c JOIN documents d ON d.id = c.document_id "
        "WHERE d.scope = ANY(:s) AND c.embedding IS NOT NULL)"), {"s": _scopes(scope)}).scalar())
