"""Retrieval SQL: each function is one search method, one statement on a pooled connection
(two or three of them may share a transaction: graph_flows.query.retrieval_base).

Methods (docs/bench/HISTORY.md, "Differences from the literal seed recipe", says how they
differ from the literal seed recipe):

- ``entity_like``: normalised-name equality (b-tree), then ``name ILIKE`` or
  ``alias_text ILIKE`` substring hits (GIN trigram; aliases: migration 0015), user text
  escaped so ``%`` and ``_`` match literally;
- ``entity_fuzzy``: typo-tolerant name hits: each query word -> nearest words used in entity
  names (trigram, GIN on ``entity_words``) -> entities whose name has one of them (GIN on
  ``name_words``) -> ``similarity(name, term) > threshold``; and entities whose aliases are
  trigram-similar to a term (GIN on ``alias_text``);
- ``entity_summary``: summary substring hits (GIN trigram);
- ``entity_vector``: pgvector HNSW cosine KNN (fallback); ``fact_vector``: HNSW over the
  fact vectors' sign bits, candidates re-ranked by exact cosine;
- ``fact_like``: fact-sentence substring hits; ``fact_by_endpoints``: facts touching the
  retrieved entities ranked by word similarity to the query terms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from storage.access import set_local
from storage.bulk import vector_literal
from storage.ids import normalize_name
from storage.models import Entity, Fact
from storage.request_memo import once
from storage.statements import fetch
from storage.text_match import contains_pattern

_E = "e.id, e.name, e.type, e.summary, e.confidence, e.scope, e.aliases"
_F = ("r.id, r.subject_id, r.predicate, r.object_id, r.fact, r.confidence, r.valid_at, "
      "r.invalid_at, r.predicate_text")
MIN_LIKE_CHARS = 3
# Temporal filter: facts valid at ``:as_of`` (default now). Invalidated facts (``invalid_at``
# in the past) stay stored as history but are not retrieved unless asked "as of" earlier.
_VALID = ("(r.invalid_at IS NULL OR r.invalid_at > coalesce(CAST(:as_of AS timestamptz), now()))"
          " AND (r.valid_at IS NULL OR r.valid_at <= coalesce(CAST(:as_of AS timestamptz), now()))")
# Pages read in order before the index is asked, on tables of more rows than
# HEAD_MIN_ROWS (storage.search._head_first).
HEAD_PAGES = 64
HEAD_MIN_ROWS = 50_000
# Candidates per nearest fact asked from the sign-bit index, re-ranked by exact cosine
# (storage.search.fact_vector). Sign bits lose neighbours: at 3M synthetic facts an exact
# Hamming top-100 re-ranked kept .66 of the true 20 nearest, a top-200 .79; on MuSiQue 5 lost
# R@5 .009, AllSupp@10 .03 and Ans@answer .04 against the full-vector index, 10 left every
# measure within one question of it (HISTORY: million_cold.md).
FACT_OVERSAMPLE = 10
# Pages read in order after the head, when the head found a match (storage.search._head_first).
NEXT_PAGES = 16 * HEAD_PAGES
# word_similarity() on long fact text is the cost of fact ranking: bound candidates x terms.
SIMILARITY_TERMS = 6


@dataclass(frozen=True, slots=True)
class EntityHit:
    """An entity found by one method; ``similarity`` is method-specific (0..1)."""

    entity: Entity
    method: str
    field: str
    similarity: float


@dataclass(frozen=True, slots=True)
class FactHit:
    """A fact found by one method."""

    fact: Fact
    method: str
    similarity: float


Scope = str | Sequence[str]


def _scopes(scope: Scope) -> list[str]:
    """A scope, or a scope chain (own scope + ancestors, see storage.scopes), as a list."""
    return [scope] if isinstance(scope, str) else list(scope)


def _entity(row) -> Entity:
    return Entity(row.id, row.name, row.type, row.summary, row.confidence, row.scope,
                  tuple(row.aliases or ()))


def _fact(row) -> Fact:
    return Fact(row.id, row.subject_id, row.predicate, row.object_id, row.fact, row.confidence,
                row.valid_at, row.invalid_at, row.predicate_text)


def needed_patterns(terms: Sequence[str]) -> list[str]:
    """``terms`` less those an OR of substring matches does not need: a repeat, and a term
    holding another of them (ASCII, as written): whatever text holds ``Lars Stonexgri``
    holds ``Lars``, so ``ILIKE '%Lars Stonexgri%' OR ILIKE '%Lars%'`` matches the rows
    ``ILIKE '%Lars%'`` does, in any case mapping (a character-wise one maps a substring
    to a substring; a non-ASCII term is never taken as the shorter one, where a locale's
    mapping may depend on the neighbouring letters). The rows are the same; the index
    work is not: a long term's many trigrams are the GIN scan's most expensive part
    (1M facts: 109 ms of a 320 ms statement for one six-word term)."""
    distinct = list(dict.fromkeys(terms))
    return [t for t in distinct
            if not any(u != t and u.isascii() and u in t for u in distinct)]


def _ilike_any(column: str, terms: Sequence[str],
               also: str | None = None) -> tuple[str, dict[str, str]]:
    """``(col ILIKE :p0 OR col ILIKE :p1 ...)`` so the planner can BitmapOr GIN scans
    (``also``: a second column tried with each pattern)."""
    usable = needed_patterns([t for t in terms if len(t) >= MIN_LIKE_CHARS])
    params = {f"p{i}": contains_pattern(t) for i, t in enumerate(usable)}
    columns = [column] if also is None else [column, also]
    clause = " OR ".join(f"{c} ILIKE :p{i}" for i in range(len(usable)) for c in columns)
    return f"({clause})" if clause else "", params


def _head_first(conn: Connection, columns: str, table: str, where: str, *,
                fenced: bool = False) -> str:
    """``SELECT columns FROM table WHERE where LIMIT :n`` (any ``:n`` matching rows, in
    physical order). On a table of more than :data:`HEAD_MIN_ROWS` rows (the planner's
    count), as three branches of a UNION ALL: the table's first :data:`HEAD_PAGES` pages
    read in order (a TID range scan); when they gave a match, the next :data:`NEXT_PAGES`
    read in order too, fenced from the index (the words are common enough that the limit is
    likely reached there; skipped otherwise, where they would cost ~25 ms for nothing at 1M
    facts); then the rest by whatever plan the planner picks (the GIN trigram index for
    substrings), from the end of the pages read. A branch runs only when those before it found fewer
    than ``:n``: a common word is matched in the first pages instead of building a bitmap of
    tens of thousands of rows (100k-entity graph: 13-32 ms -> 0.4-2 ms; 1M: fact LIKE over
    240 questions 10 s -> 3 s with the next pages and :func:`needed_patterns`, the same
    rows: HISTORY: million_p95.md). ``fenced``: a smaller table gets
    :func:`_all_then_first` instead of the plain statement. On a smaller table
    that bitmap is cheap and the head only costs (MuSiQue, 17k-38k facts: retrieval p95
    66-72 ms with the head, 54-59 ms without), so it is the plain statement there (where
    the common words of long texts are found in the first rows read, :func:`_all_then_first`
    was slower: fact LIKE p50 6.7 -> 16.5 ms on MuSiQue)."""
    name, alias = table.split()[0], table.split()[-1]
    rows = planner_rows(conn, name)
    if rows is None or rows <= HEAD_MIN_ROWS:
        select = f"SELECT {columns} FROM {table} WHERE {where}"
        return _all_then_first(select) if fenced else f"{select} LIMIT :n"
    head = f"{alias}.ctid < '({HEAD_PAGES},0)'::tid"
    after = f"{alias}.ctid >= '({HEAD_PAGES},0)'::tid"
    end = f"{alias}.ctid < '({HEAD_PAGES + NEXT_PAGES},0)'::tid"
    # the rest: after the next pages when they were read, else after the head
    rest = (f"{after} AND (NOT EXISTS (SELECT 1 FROM head) "
            f"OR {alias}.ctid >= '({HEAD_PAGES + NEXT_PAGES},0)'::tid)")
    # the next pages as a fenced range (OFFSET 0): with the conditions beside the range the
    # planner may answer them with the same GIN bitmap the rest builds (seen at 1M facts
    # for a rare word of common trigrams: the bitmap built twice, 75 + 52 ms)
    pages = (f"(SELECT * FROM {name} {alias} WHERE {after} AND {end} "
             f"AND EXISTS (SELECT 1 FROM head) OFFSET 0) {alias}")
    return (f"WITH head AS MATERIALIZED (SELECT {columns} FROM {table} WHERE {head} AND "
            f"{where} LIMIT :n) SELECT * FROM ((SELECT * FROM head) "
            f"UNION ALL (SELECT {columns} FROM {pages} WHERE {where}) "
            f"UNION ALL (SELECT {columns} FROM {table} WHERE {rest} AND {where})) m "
            "LIMIT :n")


# The tables whose row counts choose a search's plan shape (_head_first): read together.
SEARCHED_TABLES = ("entities", "relations")


def planner_rows(conn: Connection, table: str) -> float | None:
    """The planner's row count of ``table`` (``pg_class.reltuples``; -1 before the first
    ANALYZE), read once per read-only request (:mod:`storage.request_memo`): a question's
    searches ask it 3-4 times. The counts of :data:`SEARCHED_TABLES` are read together, in
    one statement (the entity and the fact searches read theirs apart before: two
    statements a question)."""
    tables = SEARCHED_TABLES if table in SEARCHED_TABLES else (table,)
    counts = once(("reltuples", tables), lambda: {r.relname: r.reltuples for r in fetch(
        conn, "SELECT reltuples, relname FROM pg_class WHERE oid = ANY(CAST(:t AS regclass[]))",
        {"t": list(tables)})})
    return counts.get(table)


def _all_then_first(select: str) -> str:
    """``select``'s first ``:n`` rows, planned as if all were wanted (a MATERIALIZED CTE is
    planned for all its rows and read only as far as the LIMIT asks). A plain ``LIMIT`` on
    substring matches lets the planner expect the matches early and scan the table in
    order, testing every pattern on every row until ``:n`` are found: on MuSiQue's 20k
    entities 14-36 ms for a question whose words are rare in names, where the GIN bitmap
    of the same rows takes 0.8 ms. The rows are the same: both plans read the table in
    physical order."""
    return f"WITH m AS MATERIALIZED ({select}) SELECT * FROM m LIMIT :n"


def entity_exact(conn: Connection, scope: Scope, names: Sequence[str]) -> list[EntityHit]:
    """Entities whose normalised name is one of ``names`` (already normalised)."""
    rows = fetch(conn,
        f"SELECT {_E} FROM entities e WHERE e.scope = ANY(:s) AND e.normalized_name = ANY(:n) "
        "ORDER BY e.confidence DESC LIMIT 50", {"s": _scopes(scope), "n": list(names)})
    return [EntityHit(_entity(r), "like", "name", 1.0) for r in rows]


def entity_like(
    conn: Connection, scope: Scope, terms: Sequence[str], limit: int
) -> list[EntityHit]:
    """Exact normalised names first (b-tree), then ``name ILIKE`` or ``alias_text ILIKE``
    substring hits (GIN trigram: an entity is found by its aliases too), in one statement."""
    clause, params = _ilike_any("e.name", terms, also="e.alias_text")
    norms = [normalize_name(t) for t in terms]
    like = "" if not clause or limit <= 0 else "UNION ALL ({})".format(_head_first(
        conn, f"{_E}, 0.9 AS sim", "entities e", f"e.scope = ANY(:s) AND {clause}",
        fenced=True))
    rows = fetch(conn,
        f"(SELECT {_E}, 1.0 AS sim FROM entities e WHERE e.scope = ANY(:s) "
        f"AND e.normalized_name = ANY(:norms) ORDER BY e.confidence DESC LIMIT 50) {like}",
        {"s": _scopes(scope), "n": limit, "norms": norms, **params})
    hits = [EntityHit(_entity(r), "like", "name", float(r.sim)) for r in rows]
    return sorted(hits, key=lambda h: -h.similarity)


def entity_summary(
    conn: Connection, scope: Scope, terms: Sequence[str], limit: int
) -> list[EntityHit]:
    clause, params = _ilike_any("e.summary", [t for t in terms if len(t) >= 4])
    if not clause or limit <= 0:
        return []
    rows = fetch(conn, _head_first(conn, _E, "entities e", f"e.scope = ANY(:s) AND {clause}"),
                 {"s": _scopes(scope), "n": limit, **params})
    return [EntityHit(_entity(r), "trigram", "summary", 0.5) for r in rows]


_FUZZY = f"""
WITH qw AS (
    SELECT q.word FROM unnest(CAST(:words AS text[])) AS q(word)
    WHERE NOT EXISTS (SELECT 1 FROM entity_words x WHERE x.word = q.word)
),
near AS (
    SELECT DISTINCT w.word
    FROM qw, LATERAL (SELECT word FROM entity_words
                      WHERE word % qw.word AND n <= :max_n
                      ORDER BY similarity(word, qw.word) DESC LIMIT :per_word) AS w
),
cand AS MATERIALIZED (
    SELECT {_E},
           (SELECT max(similarity(e.name, t)) FROM unnest(CAST(:terms AS text[])) AS t) AS sim
    FROM entities e
    WHERE e.scope = ANY(:s) AND e.name_words && ARRAY(SELECT word FROM near)
    UNION ALL
    SELECT {_E}, similarity(e.alias_text, t.term) AS sim
    FROM unnest(CAST(:terms AS text[])) AS t(term)
    JOIN LATERAL (SELECT x.id FROM entities x
                  WHERE x.scope = ANY(:s) AND x.alias_text % t.term
                  ORDER BY similarity(x.alias_text, t.term) DESC LIMIT :n) AS a ON true
    JOIN entities e ON e.id = a.id
    WHERE EXISTS (SELECT 1 FROM qw)
)
SELECT * FROM cand e WHERE e.sim > :threshold ORDER BY e.sim DESC, e.confidence DESC LIMIT :n
"""

# Near-word lookup threshold: a typo shares most trigrams with the word it misspells; at the
# connection default (0.1) nearly every word in entity_words would be a GIN candidate.
NEAR_WORD_SIMILARITY = 0.3
# Words used by more names than this are left to the LIKE step (see migration 0003).
MAX_WORD_FREQUENCY = 1000


def entity_fuzzy(
    conn: Connection, scope: Scope, terms: Sequence[str], limit: int,
    threshold: float = 0.1, per_word: int = 5,
) -> list[EntityHit]:
    """Typo-tolerant name hits: only query words that are not already name words (those are
    exact hits for the LIKE step) are expanded to their nearest name words."""
    words = sorted({w for t in terms for w in t.casefold().split() if len(w) >= 3})
    if not words or limit <= 0:
        return []
    set_local(conn, {"pg_trgm.similarity_threshold": str(NEAR_WORD_SIMILARITY)})
    rows = fetch(conn, _FUZZY, {
        "words": words, "terms": [t.casefold() for t in terms], "s": _scopes(scope), "n": limit,
        "threshold": threshold, "per_word": per_word, "max_n": MAX_WORD_FREQUENCY})
    return [EntityHit(_entity(r), "trigram", "name", float(r.sim)) for r in rows]


def entity_vector(
    conn: Connection, scope: Scope, vector: Sequence[float], limit: int
) -> list[EntityHit]:
    if limit <= 0:
        return []
    rows = fetch(conn,
        f"SELECT {_E}, 1 - (e.embedding <=> CAST(:v AS vector)) AS sim FROM entities e "
        "WHERE e.scope = ANY(:s) AND e.embedding IS NOT NULL "
        "ORDER BY e.embedding <=> CAST(:v AS vector) LIMIT :n",
        {"s": _scopes(scope), "v": vector_literal(vector), "n": limit})
    return [EntityHit(_entity(r), "vector", "embedding", float(r.sim)) for r in rows]


def fact_like(
    conn: Connection, scope: Scope, terms: Sequence[str], limit: int, as_of: Any = None
) -> list[FactHit]:
    clause, params = _ilike_any("r.fact", terms)
    if not clause or limit <= 0:
        return []
    rows = fetch(conn, _head_first(conn, _F, "relations r",
                                   f"r.scope = ANY(:s) AND {clause} AND {_VALID}"),
                 {"s": _scopes(scope), "n": limit, "as_of": as_of, **params})
    return [FactHit(_fact(r), "like", 0.9) for r in rows]


_BY_ENDPOINTS = """
WITH cand AS MATERIALIZED (
    SELECT {columns},
           (r.subject_id = ANY(:ids))::int + (r.object_id = ANY(:ids))::int AS ends,
           (r.predicate = ANY(:predicates)) AS pred,
           {words} AS words
    FROM relations r, LATERAL (SELECT lower(r.fact) AS fact OFFSET 0) lowered
    WHERE r.scope = ANY(:s) AND (r.subject_id = ANY(:ids) OR r.object_id = ANY(:ids))
      AND {valid}
    ORDER BY ends DESC, pred DESC, words DESC, r.confidence DESC
    LIMIT :pool
)
SELECT c.*, (SELECT coalesce(max(word_similarity(t, c.fact)), 0)
               FROM unnest(CAST(:terms AS text[])) AS t) AS sim
FROM cand c
ORDER BY c.ends DESC, c.pred DESC, c.words DESC, sim DESC, c.confidence DESC
LIMIT :n
"""


def _words_in(column: str, terms: Sequence[str]) -> tuple[str, dict[str, str]]:
    """How many of ``terms`` (of at least :data:`MIN_LIKE_CHARS`) occur in ``column``, a
    lowercased text, ignoring case: ``(strpos(column, :w0) > 0)::int + ...``, the same count
    as ``column ILIKE '%term%'`` for each term (ILIKE lowercases both sides first). The text
    is lowercased once per row, not once per term: lower() was most of the cost of ranking
    a hub's facts (1,862 facts x 11 terms: 45 ms with ILIKE per term, 18 ms so)."""
    usable = [t.lower() for t in terms if len(t) >= MIN_LIKE_CHARS]
    params = {f"w{i}": t for i, t in enumerate(usable)}
    return " + ".join(f"(strpos({column}, :w{i}) > 0)::int" for i in range(len(usable))) \
        or "0", params


def fact_by_endpoints(
    conn: Connection, scope: Scope, entity_ids: Sequence[str], terms: Sequence[str],
    predicates: Sequence[str], limit: int, as_of: Any = None,
) -> list[FactHit]:
    """Facts touching ``entity_ids``: those touching two of them first, then those whose
    predicate the question names, then those holding more of ``terms``, ranked last by
    the best word similarity of a term to the fact sentence."""
    if not entity_ids or limit <= 0:
        return []
    words, params = _words_in("lowered.fact", terms)
    rows = fetch(conn, _BY_ENDPOINTS.format(columns=_F, words=words, valid=_VALID), {
        "s": _scopes(scope), "ids": list(entity_ids), **params,
        "terms": list(terms)[:SIMILARITY_TERMS] or [""],
        "predicates": list(predicates), "n": limit, "pool": limit * 2, "as_of": as_of})
    return [FactHit(_fact(r), "trigram", float(r.sim)) for r in rows]


def fact_vector(
    conn: Connection, scope: Scope, vector: Sequence[float], limit: int, as_of: Any = None,
    ef_search: int | None = None,
) -> list[FactHit]:
    """Nearest valid facts by cosine: :data:`FACT_OVERSAMPLE` candidates per fact asked
    from the HNSW index over the vectors' sign bits (Hamming distance; migration 0018),
    re-ranked by exact cosine on the stored vectors. ``ef_search`` widens the index search
    for this statement's transaction (never below the candidates asked)."""
    if limit <= 0:
        return []
    pool = limit * FACT_OVERSAMPLE
    ef = min(max(ef_search or 0, pool), 1000)
    set_local(conn, {"hnsw.ef_search": str(ef)})
    rows = fetch(conn, _BY_VECTOR.format(columns=_F, valid=_VALID, bits=len(vector)), {
        "s": _scopes(scope), "v": vector_literal(vector), "n": limit, "pool": pool,
        "as_of": as_of})
    return [FactHit(_fact(r), "vector", float(r.sim)) for r in rows]


# The candidates' statement has the index's expression (``bits`` = the vectors' dimension,
# the same for the question's vector and the stored ones); the outer ORDER BY re-ranks them
# by exact cosine.
_BY_VECTOR = """
SELECT {columns}, 1 - (r.embedding <=> CAST(:v AS vector)) AS sim
FROM (SELECT r.* FROM relations r
      WHERE r.scope = ANY(:s) AND r.embedding IS NOT NULL AND {valid}
      ORDER BY CAST(binary_quantize(r.embedding) AS bit({bits}))
               <~> binary_quantize(CAST(:v AS vector))
      LIMIT :pool) r
ORDER BY r.embedding <=> CAST(:v AS vector), r.id
LIMIT :n
"""


def entities_by_ids(conn: Connection, scope: Scope, ids: Sequence[str]) -> list[Entity]:
    if not ids:
        return []
    rows = fetch(conn,
        f"SELECT {_E} FROM entities e WHERE e.scope = ANY(:s) AND e.id = ANY(:ids)",
        {"s": _scopes(scope), "ids": list(ids)})
    return [_entity(r) for r in rows]


def closest_entities(conn: Connection, scope: Scope, query: str, limit: int = 5) -> list[Entity]:
    """Nearest entity names by trigram distance (for "nothing found" answers)."""
    rows = fetch(conn,
        f"SELECT {_E} FROM entities e WHERE e.scope = ANY(:s) "
        "ORDER BY similarity(e.name, :q) DESC LIMIT :n",
        {"s": _scopes(scope), "q": query, "n": limit})
    return [_entity(r) for r in rows]


def fact_sources(conn: Connection, fact_ids: Sequence[str]) -> dict[str, list[dict[str, str]]]:
    """Documents each fact was extracted from: fact id -> [{source, uri, title}]."""
    if not fact_ids:
        return {}
    rows = fetch(conn, """
        SELECT DISTINCT p.relation_id, d.source, d.uri, coalesce(d.title, '') AS title
        FROM relation_provenance p JOIN chunks c ON c.id = p.chunk_id
        JOIN documents d ON d.id = c.document_id
        WHERE p.relation_id = ANY(:ids) ORDER BY d.source, d.uri""",
        {"ids": list(fact_ids)})
    out: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        out.setdefault(r.relation_id, []).append(
            {"source": r.source, "uri": r.uri, "title": r.title})
    return out


def facts_of_chunks(conn: Connection, scope: Scope, chunk_ids: Sequence[str],
                    limit: int = 200, as_of: Any = None) -> list[Fact]:
    """Valid facts extracted from the chunks ``chunk_ids`` (what a cited passage says),
    in id order, at most ``limit``."""
    if not chunk_ids or limit <= 0:
        return []
    rows = fetch(conn, f"""
        SELECT {_F} FROM relations r
        WHERE r.scope = ANY(:s) AND {_VALID} AND r.id IN (
            SELECT p.relation_id FROM relation_provenance p WHERE p.chunk_id = ANY(:c))
        ORDER BY r.id LIMIT :n""",
        {"s": _scopes(scope), "c": list(chunk_ids), "n": limit, "as_of": as_of})
    return [_fact(r) for r in rows]
