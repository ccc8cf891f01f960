"""Extraction work queue on ``extraction_status``: claim with SKIP LOCKED, complete, fail."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import Connection, text

from storage.models import ChunkOutcome, ChunkWork

_CLAIM = """
WITH picked AS (
    SELECT s.chunk_id FROM extraction_status s
    JOIN chunks c ON c.id = s.chunk_id
    JOIN documents d ON d.id = c.document_id
    WHERE (s.status = 'pending'
           OR (s.status = 'extracting' AND s.claimed_at < now() - make_interval(secs => :stale))
           OR (:retry_failed AND s.status = 'failed'))
      AND (CAST(:scope AS text) IS NULL OR d.scope = :scope)
      AND (CAST(:source AS text) IS NULL OR d.source = :source)
    ORDER BY c.document_id, c.ordinal
    LIMIT :limit
    FOR UPDATE OF s SKIP LOCKED
)
UPDATE extraction_status s SET status = 'extracting', worker = :worker, claimed_at = now(),
       attempts = s.attempts + 1, updated_at = now()
FROM picked WHERE s.chunk_id = picked.chunk_id
RETURNING s.chunk_id, s.attempts
"""


def claim_chunks(
    conn: Connection, *, limit: int, worker: str, scope: str | None = None,
    source: str | None = None, retry_failed: bool = False, stale_after_s: float = 600.0,
) -> list[ChunkWork]:
    """Atomically claim up to ``limit`` chunks for this worker (others skip them)."""
    claimed = conn.execute(text(_CLAIM), {
        "limit": limit, "worker": worker, "scope": scope, "source": source,
        "retry_failed": retry_failed, "stale": stale_after_s,
    }).all()
    if not claimed:
        return []
    attempts = {r.chunk_id: r.attempts for r in claimed}
    rows = conn.execute(text("""
        SELECT c.id, c.document_id, c.ordinal, c.text, d.scope, d.source, d.uri
        FROM chunks c JOIN documents d ON d.id = c.document_id
        WHERE c.id = ANY(:ids) ORDER BY c.document_id, c.ordinal"""),
        {"ids": list(attempts)}).all()
    return [ChunkWork(r.id, r.document_id, r.ordinal, r.text, attempts[r.id], r.scope,
                      r.source, r.uri) for r in rows]


def complete_chunks(conn: Connection, outcomes: Sequence[ChunkOutcome]) -> None:
    """Mark chunks completed with their counts (same transaction as their graph writes);
    the worker that did it stays recorded, without the tag of a look-ahead's claim
    (storage.claims.tagged)."""
    if not outcomes:
        return
    conn.execute(text("""
        UPDATE extraction_status SET status = 'completed', error = NULL, updated_at = now(),
            worker = regexp_replace(worker, '/[0-9a-f]{12}$', ''),
            entity_count = :entities, relation_count = :relations,
            dropped = CAST(:dropped AS jsonb), llm_calls = llm_calls + :calls,
            input_tokens = input_tokens + :tin, output_tokens = output_tokens + :tout
        WHERE chunk_id = :id"""),
        [{"id": o.chunk_id, "entities": o.entity_count, "relations": o.relation_count,
          "dropped": json.dumps(o.dropped), "calls": o.llm_calls, "tin": o.input_tokens,
          "tout": o.output_tokens} for o in outcomes])


def fail_chunk(conn: Connection, chunk_id: str, error: str, llm_calls: int = 0) -> None:
    """Mark one chunk failed with its reason (it is retried with ``retry_failed``)."""
    conn.execute(text("""
        UPDATE extraction_status SET status = 'failed', error = :error, updated_at = now(),
            worker = regexp_replace(worker, '/[0-9a-f]{12}$', ''),
            llm_calls = llm_calls + :calls WHERE chunk_id = :id"""),
        {"id": chunk_id, "error": error[:2000], "calls": llm_calls})


def release_chunks(conn: Connection, chunk_ids: Sequence[str]) -> None:
    """Put claimed chunks back to pending (graceful shutdown)."""
    conn.execute(text(
        "UPDATE extraction_status SET status = 'pending', worker = NULL, updated_at = now() "
        "WHERE chunk_id = ANY(:ids) AND status = 'extracting'"), {"ids": list(chunk_ids)})
