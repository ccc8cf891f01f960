"""Read-only statistics for `krag status` and the ingest progress bar."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Engine, text


@dataclass(slots=True)
class SourceStats:
    """One source of one scope: documents, chunk statuses, graph size, LLM usage."""

    scope: str
    source: str
    documents: int = 0
    chunks: dict[str, int] = field(default_factory=dict)
    entities: int = 0
    relations: int = 0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_chunks(self) -> int:
        return sum(self.chunks.values())


_SOURCES = """
SELECT d.scope, d.source, count(DISTINCT d.id) AS documents,
       count(s.chunk_id) FILTER (WHERE s.status = 'pending') AS pending,
       count(s.chunk_id) FILTER (WHERE s.status = 'extracting') AS extracting,
       count(s.chunk_id) FILTER (WHERE s.status = 'completed') AS completed,
       count(s.chunk_id) FILTER (WHERE s.status = 'failed') AS failed,
       coalesce(sum(s.llm_calls), 0) AS llm_calls,
       coalesce(sum(s.input_tokens), 0) AS input_tokens,
       coalesce(sum(s.output_tokens), 0) AS output_tokens
FROM documents d
LEFT JOIN chunks c ON c.document_id = d.id
LEFT JOIN extraction_status s ON s.chunk_id = c.id
WHERE (CAST(:scope AS text) IS NULL OR d.scope = :scope)
  AND (CAST(:sources AS text[]) IS NULL OR d.source = ANY(CAST(:sources AS text[])))
GROUP BY d.scope, d.source
ORDER BY d.scope, d.source
"""

_GRAPH = """
SELECT d.scope, d.source,
       (SELECT count(DISTINCT p.entity_id) FROM entity_provenance p
          JOIN chunks c ON c.id = p.chunk_id JOIN documents x ON x.id = c.document_id
         WHERE x.scope = d.scope AND x.source = d.source) AS entities,
       (SELECT count(DISTINCT p.relation_id) FROM relation_provenance p
          JOIN chunks c ON c.id = p.chunk_id JOIN documents x ON x.id = c.document_id
         WHERE x.scope = d.scope AND x.source = d.source) AS relations
FROM (SELECT DISTINCT scope, source FROM documents
       WHERE (CAST(:scope AS text) IS NULL OR scope = :scope)
         AND (CAST(:sources AS text[]) IS NULL OR source = ANY(CAST(:sources AS text[])))) d
"""


def source_stats(
    engine: Engine, scope: str | None = None, sources: Sequence[str] | None = None,
    *, graph: bool = True,
) -> list[SourceStats]:
    """Per (scope, source) statistics; ``graph=False`` skips the entity/relation counts."""
    params = {"scope": scope, "sources": list(sources) if sources is not None else None}
    with engine.connect() as conn:
        rows = conn.execute(text(_SOURCES), params).all()
        sizes = {(r.scope, r.source): (r.entities, r.relations)
                 for r in conn.execute(text(_GRAPH), params).all()} if graph else {}
    out = []
    for r in rows:
        ents, rels = sizes.get((r.scope, r.source), (0, 0))
        out.append(SourceStats(
            r.scope, r.source, r.documents,
            {"pending": r.pending, "extracting": r.extracting, "completed": r.completed,
             "failed": r.failed},
            ents, rels, r.llm_calls, r.input_tokens, r.output_tokens))
    return out


def embedding_info(engine: Engine) -> tuple[str | None, int | None]:
    """(model, dimension) of the stored vectors, from ``krag_meta``."""
    with engine.connect() as conn:
        meta = dict(conn.execute(text("SELECT key, value FROM krag_meta")).all())
    dim = meta.get("embedding_dim")
    return meta.get("embedding_model"), int(dim) if dim else None


def failed_chunks(
    engine: Engine, scope: str | None = None, source: str | None = None, limit: int = 20
) -> list[tuple[str, str, str]]:
    """(uri, chunk id, error) of failed chunks, most recent first."""
    with engine.connect() as conn:
        rows = conn.execute(text("""
            SELECT d.uri, s.chunk_id, coalesce(s.error, '') AS error
            FROM extraction_status s JOIN chunks c ON c.id = s.chunk_id
            JOIN documents d ON d.id = c.document_id
            WHERE s.status = 'failed'
              AND (CAST(:scope AS text) IS NULL OR d.scope = :scope)
              AND (CAST(:source AS text) IS NULL OR d.source = :source)
            ORDER BY s.updated_at DESC, s.chunk_id LIMIT :limit"""),
            {"scope": scope, "source": source, "limit": limit}).all()
    return [(r.uri, r.chunk_id, r.error) for r in rows]


def graph_names(engine: Engine, scope: str) -> tuple[list[str], list[str]]:
    """(entity names, stated relation texts) of one scope's current graph, for counting
    fragments (bench/fragment_names.py)."""
    with engine.connect() as conn:
        names = conn.execute(text("SELECT name FROM entities WHERE scope = :s"),
                             {"s": scope}).scalars().all()
        said = conn.execute(text(
            "SELECT predicate_text FROM relations WHERE scope = :s AND invalid_at IS NULL "
            "AND predicate_text IS NOT NULL"), {"s": scope}).scalars().all()
    return list(names), list(said)
