"""Bulk re-embedding support (`krag reembed`): page through texts, write vectors back."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from sqlalchemy import Engine, text

from storage.bulk import vector_literal

TABLES = ("entities", "relations")
_TEXTS = {
    "entities": "SELECT id, CASE WHEN summary = '' THEN name ELSE name || ': ' || summary END "
                "AS body FROM entities WHERE id > :after ORDER BY id LIMIT :n",
    "relations": "SELECT id, fact AS body FROM relations WHERE id > :after ORDER BY id LIMIT :n",
}


def count_rows(engine: Engine) -> dict[str, int]:
    """Rows per embedded table."""
    with engine.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar() or 0 for t in TABLES}


def iter_texts(engine: Engine, table: str, page: int) -> Iterator[list[tuple[str, str]]]:
    """Pages of (id, text to embed) of ``table`` in id order (keyset pagination)."""
    after = ""
    while True:
        with engine.connect() as conn:
            rows = [(r.id, r.body) for r in conn.execute(
                text(_TEXTS[table]), {"after": after, "n": page}).all()]
        if not rows:
            return
        yield rows
        after = rows[-1][0]


def write_vectors(
    engine: Engine, table: str, vectors: Sequence[tuple[str, Sequence[float]]]
) -> None:
    """Set the embedding of each (id, vector) of ``table``."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}")
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE {table} SET embedding = CAST(:v AS vector) WHERE id = :id"),
                     [{"id": i, "v": vector_literal(v)} for i, v in vectors])


def drop_vector_indexes(engine: Engine) -> None:
    """Drop the HNSW indexes (a bulk load is much faster without them)."""
    with engine.begin() as conn:
        for table in TABLES:
            conn.execute(text(f"DROP INDEX IF EXISTS {table}_embedding_hnsw"))


def create_vector_indexes(engine: Engine) -> None:
    """(Re)create the HNSW cosine indexes after a bulk load."""
    with engine.begin() as conn:
        for table in TABLES:
            conn.execute(text(f"CREATE INDEX IF NOT EXISTS {table}_embedding_hnsw ON {table} "
                              "USING hnsw (embedding vector_cosine_ops)"))
