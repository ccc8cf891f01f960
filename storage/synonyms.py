"""Synonym edges between entities, stored (migration 0011): pairs whose name vectors are
nearly the same (HippoRAG 2's synonymy edges: "Kael" and "Orsina Kael", kept apart by
resolution, still join up in the ``ppr`` recipe's graph).

An entity's synonyms are its :data:`PER_ENTITY` nearest entities by name vector (HNSW) among
those it can be seen with, its scope and the scope's ancestors (storage.scopes), at cosine
:data:`MIN_SIMILARITY` or more; each pair is stored both ways, so an entity of a child scope
found near one of its parent's is a synonym of that one too (the parent's own search never
looks into its children). Queries read them for the seeds (storage.evidence) and keep the
pairs whose other end is in their scope chain. The stored bounds are looser than the
recipe's (5 per seed at .9), so those can be changed without computing them again.

``entity_synonyms_computed`` lists the entities whose are computed; an entity not listed is
looked up by the query itself, as before this table (a store upgraded to it, a batch being
written). Nothing here writes the entity rows (that would be a new version of each, and of
its index entries, right after the ingest wrote it).

They are computed after each ingest batch is written (:func:`fill`; a batch's entities only
once committed, so of two workers writing near names at once the later one finds the other's),
again for a scope moved under another parent and for all by ``krag reembed`` (:func:`reset`
then :func:`fill`).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from storage import scopes
from storage.statements import text

PER_ENTITY = 10
MIN_SIMILARITY = 0.8
EF_SEARCH = 20
"""The HNSW candidate list of the lookups: twice :data:`PER_ENTITY`. The pairs kept are
near duplicates (cosine .8 or more), which a search at ef 20 finds as 40 does: on the
19,680 entities of the MuSiQue/HotpotQA no-LLM graph both gave the same 22,170 pairs at
35 % less time; at 10 it lost 782 (HISTORY: ingest_turn.md). The lookups run in each
no-LLM batch's store turn (graph_flows.indexing.in_order), which the workers take one at a
time."""
PAGE = 500  # entities computed per statement

# An entity ``e`` with a vector whose synonyms are not computed, of ``:scopes`` (NULL: any).
_NOT_COMPUTED = """e.embedding IS NOT NULL
  AND (CAST(:scopes AS text[]) IS NULL OR e.scope = ANY(:scopes))
  AND NOT EXISTS (SELECT 1 FROM entity_synonyms_computed c WHERE c.entity_id = e.id)"""

_PENDING = f"""
SELECT e.id, e.scope FROM entities e
WHERE {_NOT_COMPUTED} AND e.id > :after AND (CAST(:ids AS text[]) IS NULL OR e.id = ANY(:ids))
ORDER BY e.id LIMIT :n
"""

_FILL = """
WITH found AS (
    SELECT e.id AS a, x.id AS b, x.sim FROM entities e,
    LATERAL (SELECT s.id, 1 - (s.embedding <=> e.embedding) AS sim FROM entities s
             WHERE s.scope = ANY(:chain) AND s.id <> e.id AND s.embedding IS NOT NULL
             ORDER BY s.embedding <=> e.embedding LIMIT :k) x
    WHERE e.id = ANY(:ids) AND x.sim >= :min),
pairs AS (SELECT a, b, sim FROM found UNION ALL SELECT b, a, sim FROM found)
INSERT INTO entity_synonyms AS y (entity_id, synonym_id, similarity)
SELECT a, b, max(sim) FROM pairs GROUP BY a, b ORDER BY a, b
ON CONFLICT (entity_id, synonym_id) DO UPDATE SET similarity = EXCLUDED.similarity
"""
# Pairs (and below, computed entities) inserted in key order, so two transactions writing
# the same rows wait on each other instead of deadlocking; two workers computing the same
# entity at once only repeat each other's work.


def fill(conn: Connection, *, entity_ids: Sequence[str] | None = None,
         scope_names: Sequence[str] | None = None) -> int:
    """Compute the synonyms of the entities that have a vector and none computed yet (only
    ``entity_ids`` / those of ``scope_names`` when given), on ``conn``'s transaction; returns
    how many entities were computed. Nothing while the entity vectors have no HNSW index
    (dropped for a bulk load): each entity would scan the table; the load's end fills them."""
    if not conn.execute(text("SELECT to_regclass('entities_embedding_hnsw') IS NOT NULL")
                        ).scalar():
        return 0
    conn.execute(text("SELECT set_config('hnsw.ef_search', :ef, true)"),
                 {"ef": str(max(EF_SEARCH, PER_ENTITY))})
    ids = None if entity_ids is None else list(entity_ids)
    names = None if scope_names is None else list(scope_names)
    done, after, chains = 0, "", {}
    while True:
        rows = conn.execute(text(_PENDING), {"after": after, "ids": ids, "scopes": names,
                                             "n": PAGE}).all()
        if not rows:
            return done
        by_scope: dict[str, list[str]] = {}
        for r in rows:
            by_scope.setdefault(r.scope, []).append(r.id)
        for scope, members in by_scope.items():
            if scope not in chains:
                chains[scope] = scopes.scope_chain(conn, scope)
            conn.execute(text(_FILL), {"ids": members, "chain": chains[scope],
                                       "k": PER_ENTITY, "min": MIN_SIMILARITY})
        conn.execute(text(
            "INSERT INTO entity_synonyms_computed (entity_id) SELECT unnest(CAST(:ids AS "
            "text[])) ORDER BY 1 ON CONFLICT (entity_id) DO UPDATE SET computed_at = now()"),
            {"ids": [r.id for r in rows]})
        done += len(rows)
        after = rows[-1].id


def reset(conn: Connection, scope_names: Sequence[str] | None = None) -> None:
    """Forget the synonyms of every entity (of ``scope_names`` when given: both ends of
    their pairs), so :func:`fill` computes them again."""
    if scope_names is None:
        # DELETE, not TRUNCATE: the application's role may not truncate (TRUNCATE skips
        # the row-level security policies), so this needs whole-store access
        conn.execute(text("DELETE FROM entity_synonyms"))
        conn.execute(text("DELETE FROM entity_synonyms_computed"))
        return
    members = "(SELECT id FROM entities WHERE scope = ANY(:s))"
    for table, column in (("entity_synonyms", "entity_id"), ("entity_synonyms", "synonym_id"),
                          ("entity_synonyms_computed", "entity_id")):
        conn.execute(text(f"DELETE FROM {table} WHERE {column} IN {members}"),
                     {"s": list(scope_names)})


def pending(conn: Connection, scope_names: Sequence[str] | None = None) -> int:
    """Entities with a vector whose synonyms are not computed (of ``scope_names``)."""
    return int(conn.execute(text(f"SELECT count(*) FROM entities e WHERE {_NOT_COMPUTED}"), {
        "scopes": None if scope_names is None else list(scope_names)}).scalar() or 0)
