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


def vector_index(table: str, dim: int) -> tuple[str, str]:
    """The name and ``CREATE INDEX IF NOT EXISTS`` of ``table``'s nearest-neighbour index
    over vectors of ``dim`` dimensions: cosine HNSW over the vectors; for ``relations``
    HNSW over their sign bits (migration 0018, read by storage.search.fact_vector)."""
    if table == "relations":
        return ("relations_embedding_bq_hnsw",
                "CREATE INDEX IF NOT EXISTS relations_embedding_bq_hnsw ON relations USING hnsw "
                f"((binary_quantize(embedding)::bit({int(dim)})) bit_hamming_ops)")
    return (f"{table}_embedding_hnsw", f"CREATE INDEX IF NOT EXISTS {table}_embedding_hnsw "
            f"ON {table} USING hnsw (embedding vector_cosine_ops)")


def column_dimension(conn: Connection, table: str) -> int:
    """The dimension of ``table.embedding`` (its pgvector type modifier)."""
    return int(conn.execute(text(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = CAST(:t AS regclass) "
        "AND attname = 'embedding'"), {"t": table}).scalar_one())


def drop_vector_indexes(conn: Connection) -> None:
    """Drop the HNSW indexes (a bulk load is much faster without them)."""
    for table in TABLES:
        name, _ = vector_index(table, 0)
        conn.execute(text(f"DROP INDEX IF EXISTS {name}"))


def create_vector_indexes(conn: Connection) -> None:
    """(Re)create the missing HNSW indexes after a bulk load."""
    for table in TABLES:
        conn.execute(text(vector_index(table, column_dimension(conn, table))[1]))
