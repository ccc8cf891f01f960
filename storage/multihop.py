"""Multi-hop expansion: facts within ``max_hops`` of seed entities, by a bounded recursive CTE.

A fact's hop is 1 + the distance of its nearer endpoint from the seeds (facts touching a seed
are hop 1). The walk follows only facts valid at ``as_of`` (default now) of the scope (or
scope chain), is capped at :data:`MAX_HOPS` levels, follows at most ``fanout`` facts out of
each entity (the most confident) and deduplicates (entity, depth) pairs, so it visits each
entity at most :data:`MAX_HOPS` times however cyclic the graph is and its size is bounded by
seeds x fanout^(hops-1). Results are ordered by hop, then confidence, and cut at ``limit``.
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

_NEIGHBOURS = f"""
WITH RECURSIVE walk(entity_id, depth) AS (
    SELECT s.id, 0 FROM unnest(CAST(:seeds AS text[])) AS s(id)
    UNION
    SELECT n.id, w.depth + 1
    FROM walk w
    CROSS JOIN LATERAL (
        SELECT x.id FROM (
            SELECT r.object_id AS id, r.confidence FROM relations r
            WHERE r.subject_id = w.entity_id AND r.scope = ANY(:s) AND {_VALID}
            UNION ALL
            SELECT r.subject_id, r.confidence FROM relations r
            WHERE r.object_id = w.entity_id AND r.scope = ANY(:s) AND {_VALID}
        ) AS x ORDER BY x.confidence DESC, x.id LIMIT :fanout
    ) AS n
    WHERE w.depth < :max_depth
),
reached AS (SELECT entity_id, min(depth) AS depth FROM walk GROUP BY entity_id),
hops AS (
    SELECT r.id, min(x.depth) + 1 AS hop
    FROM reached x
    JOIN relations r ON r.scope = ANY(:s) AND {_VALID}
                    AND (r.subject_id = x.entity_id OR r.object_id = x.entity_id)
    GROUP BY r.id
)
SELECT r.id, r.subject_id, r.predicate, r.object_id, r.fact, r.confidence, r.valid_at,
       r.invalid_at, h.hop, se.name AS subject_name, oe.name AS object_name
FROM hops h
JOIN relations r ON r.id = h.id
JOIN entities se ON se.id = r.subject_id
JOIN entities oe ON oe.id = r.object_id
WHERE (CAST(:source AS text) IS NULL OR EXISTS (
    SELECT 1 FROM relation_provenance p JOIN chunks c ON c.id = p.chunk_id
    JOIN documents d ON d.id = c.document_id
    WHERE p.relation_id = r.id AND d.scope = ANY(:s) AND d.source = :source))
ORDER BY h.hop, r.confidence DESC, r.id
LIMIT :n
"""


@dataclass(frozen=True, slots=True)
class HopFact:
    """A fact reached by the walk, with its hop count and endpoint names."""

    fact: Fact
    hop: int
    subject: str
    object: str


def neighbour_facts(
    conn: Connection, scope: Scope, seed_ids: Sequence[str], max_hops: int, limit: int,
    *, source: str | None = None, as_of: Any = None, fanout: int = 50,
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
        "source": source, "as_of": as_of, "fanout": fanout}).all()
    return [HopFact(Fact(r.id, r.subject_id, r.predicate, r.object_id, r.fact, r.confidence,
                         r.valid_at, r.invalid_at), int(r.hop), r.subject_name, r.object_name)
            for r in rows]
