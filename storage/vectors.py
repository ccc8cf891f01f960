"""Bulk re-embedding support (`krag reembed`): page through texts, write vectors back."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, text

from storage.bulk import vector_literal

TABLES = ("entities", "relations", "chunks")
_TEXTS = {
    "entities": "SELECT id, name AS body FROM entities WHERE id > :after ORDER BY id LIMIT :n",
    "relations": "SELECT id, fact AS body FROM relations WHERE id > :after ORDER BY id LIMIT :n",
    "chunks": "SELECT id, text AS body FROM chunks WHERE id > :after ORDER BY id LIMIT :n",
}


def count_rows(conn: Connection) -> dict[str, int]:
    """Rows per embedded table."""
    return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar() or 0 for t in TABLES}


def text_page(
    conn: Connection, table: str, after: str, page: int
) -> list[tuple[str, str]]:
    """Up to ``page`` (id, text to embed) of ``table`` with ids after ``after``, in id order
    (keyset pagination: pass the last id of one page to get the next; ``""`` to start)."""
    return [(r.id, r.body) for r in conn.execute(
        text(_TEXTS[table]), {"after": after, "n": page}).all()]


def write_vectors(
    conn: Connection, table: str, vectors: Sequence[tuple[str, Sequence[float]]]
) -> None:
    """Set the embedding of each (id, vector) of ``table``."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}")
    if vectors:
        conn.execute(text(f"UPDATE {table} SET embedding = CAST(:v AS vector) WHERE id = :id"),
                     [{"id": i, "v": vector_literal(v)} for i, v in vectors])


def drop_vector_indexes(conn: Connection) -> None:
    """Drop the HNSW indexes (a bulk load is much faster without them)."""
    for table in TABLES:
        conn.execute(text(f"DROP INDEX IF EXISTS {table}_embedding_hnsw"))


def create_vector_indexes(conn: Connection) -> None:
    """(Re)create the HNSW cosine indexes after a bulk load."""
    for table in TABLES:
        conn.execute(text(f"CREATE INDEX IF NOT EXISTS {table}_embedding_hnsw ON {table} "
                          "USING hnsw (embedding vector_cosine_ops)"))
