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


# HNSW build parameters per table (pgvector's defaults otherwise: m 16, ef_construction 64).
# Entities: ef_construction 32 (the least pgvector allows with m 16), migration 0018. Each
# ingested name is inserted into this index (and each batch's synonym k-NN reads it): at 8k
# of MuSiQue's entity vectors the inserts took 26-34 % less server CPU than with 64, with
# recall@10 at ef_search 40 still 1.0 against exact search (docs/bench/ingest_18.md).
HNSW_OPTIONS = {"entities": " WITH (ef_construction = 32)"}


def hnsw_definition(table: str, *, if_not_exists: bool = False) -> str:
    """The ``CREATE INDEX`` of ``table``'s HNSW cosine index (``{table}_embedding_hnsw``)."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}")
    guard = "IF NOT EXISTS " if if_not_exists else ""
    return (f"CREATE INDEX {guard}{table}_embedding_hnsw ON {table} "
            f"USING hnsw (embedding vector_cosine_ops){HNSW_OPTIONS.get(table, '')}")


def create_vector_indexes(conn: Connection) -> None:
    """(Re)create the HNSW cosine indexes after a bulk load."""
    for table in TABLES:
        conn.execute(text(hnsw_definition(table, if_not_exists=True)))
