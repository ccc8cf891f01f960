"""Multi-hop expansion: facts within ``max_hops`` of seed entities, by a bounded recursive CTE.

A fact's hop is 1 + the distance of its nearer endpoint from the seeds (facts touching a seed
are hop 1). The walk follows only facts valid at ``as_of`` (default now) of the scope (or
scope chain), is capped at :data:`MAX_HOPS` levels, follows at most ``fanout`` facts out of
each entity (the most confident) and deduplicates (entity, depth) pairs, so it visits each
entity at most :data:`MAX_HOPS` times however cyclic the graph is and its size is bounded by
seeds x fanout^(hops-1).

``predicates`` (the relation types a question names, e.g. ``uses`` and ``contains`` for "what
does the tool X uses contain?") guide the walk: out of each entity it follows matching facts
first, and results are ordered by the number of facts on the path (this one included) whose
predicate does *not* match, then by the number that do (paths following the question's
relations furthest first), then by hop, then confidence; ``limit`` cuts the list. With no
predicates that is simply hop order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, text

from storage.models import Fact
from storage.search import _VALID, Scope, _scopes

MAX_HOPS = 3
MAX_LIMIT = 500
MAX_FANOUT = 200

_MATCH = "(r.predicate = ANY(CAST(:preds AS text[])))::int"

_NEIGHBOURS = f"""
WITH RECURSIVE walk(entity_id, depth, matched, via) AS (
    SELECT s.id, 0, 0, CAST(NULL AS text) FROM unnest(CAST(:seeds AS text[])) AS s(id)
    UNION
    SELECT n.id, w.depth + 1, w.matched + n.hit, n.rid
    FROM walk w
    CROSS JOIN LATERAL (
        SELECT x.id, x.hit, x.rid FROM (
            SELECT r.object_id AS id, r.confidence, {_MATCH} AS hit, r.id AS rid
            FROM relations r
            WHERE r.subject_id = w.entity_id AND r.scope = ANY(:s) AND {_VALID}
            UNION ALL
            SELECT r.subject_id, r.confidence, {_MATCH}, r.id FROM relations r
            WHERE r.object_id = w.entity_id AND r.scope = ANY(:s) AND {_VALID}
        ) AS x ORDER BY x.hit DESC, x.confidence DESC, x.rid LIMIT :fanout
    ) AS n
    WHERE w.depth < :max_depth
),
reached AS (
    SELECT DISTINCT ON (entity_id) entity_id, depth, matched, via FROM walk
    ORDER BY entity_id, depth, matched DESC, via
),
hops AS (
    SELECT DISTINCT ON (r.id) r.id, r.subject_id, r.predicate, r.object_id, r.fact,
           r.confidence, r.valid_at, r.invalid_at, r.predicate_text, x.depth + 1 AS hop,
           x.matched + {_MATCH} AS matched, x.via
    FROM reached x
    JOIN relations r ON r.scope = ANY(:s) AND {_VALID}
                    AND (r.subject_id = x.entity_id OR r.object_id = x.entity_id)
    ORDER BY r.id, x.depth, x.matched DESC
),
ranked AS (
    SELECT h.* FROM hops h
    WHERE (CAST(:source AS text) IS NULL OR EXISTS (
        SELECT 1 FROM relation_provenance p JOIN chunks c ON c.id = p.chunk_id
        JOIN documents d ON d.id = c.document_id
        WHERE p.relation_id = h.id AND d.scope = ANY(:s) AND d.source = :source))
    ORDER BY h.hop - h.matched, h.matched DESC, h.hop, h.confidence DESC, h.id
    LIMIT :n
)
SELECT h.id, h.subject_id, h.predicate, h.object_id, h.fact, h.confidence, h.valid_at,
       h.invalid_at, h.predicate_text, h.hop, h.matched, h.via, se.name AS subject_name,
       oe.name AS object_name
FROM ranked h
JOIN entities se ON se.id = h.subject_id
JOIN entities oe ON oe.id = h.object_id
ORDER BY h.hop - h.matched, h.matched DESC, h.hop, h.confidence DESC, h.id
"""


@dataclass(frozen=True, slots=True)
class HopFact:
    """A fact reached by the walk, with its hop count and endpoint names."""

    fact: Fact
    hop: int
    subject: str
    object: str
    via: str | None = None
    """The fact the walk crossed to reach this fact's nearer endpoint (None at hop 1)."""


def neighbour_facts(
    conn: Connection, scope: Scope, seed_ids: Sequence[str], max_hops: int, limit: int,
    *, source: str | None = None, as_of: Any = None, fanout: int = 50,
    predicates: Sequence[str] = (),
) -> list[HopFact]:
    """Facts of ``scope`` (or a scope chain) valid at ``as_of`` (default now) within
    ``max_hops`` (1..3) of ``seed_ids``, following at most ``fanout`` facts per entity.

    ``source``: only facts with provenance in a document of that source.
    """
    if not 1 <= max_hops <= MAX_HOPS:
        raise ValueError(f"max_hops must be 1..{MAX_HOPS}, got {max_hops}")
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be 1..{MAX_LIMIT}, got {limit}")
    if not 1 <= fanout <= MAX_FANOUT:
        raise ValueError(f"fanout must be 1..{MAX_FANOUT}, got {fanout}")
    if not seed_ids:
        return []
    rows = conn.execute(text(_NEIGHBOURS), {
        "seeds": list(seed_ids), "s": _scopes(scope), "max_depth": max_hops - 1, "n": limit,
        "source": source, "as_of": as_of, "fanout": fanout,
        "preds": list(predicates)}).all()
    return [HopFact(Fact(r.id, r.subject_id, r.predicate, r.object_id, r.fact, r.confidence,
                         r.valid_at, r.invalid_at, r.predicate_text), int(r.hop),
                    r.subject_name, r.object_name, r.via)
            for r in rows]
