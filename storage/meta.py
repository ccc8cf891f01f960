"""The store's own metadata (``krag_meta``: embedding model and dimension) and the checks
:meth:`storage.KnowledgeStore.open` runs before and after migrating."""

from __future__ import annotations

from sqlalchemy import Connection, Engine, text

from storage.errors import EmbeddingDimensionMismatchError, ExtensionMissingError


def read_meta(conn: Connection) -> dict[str, str]:
    """``krag_meta`` as a dict (empty before the first migration)."""
    if conn.execute(text("SELECT to_regclass('krag_meta')")).scalar() is None:
        return {}
    return dict(conn.execute(text("SELECT key, value FROM krag_meta")).all())


def write_meta(conn: Connection, model: str, dim: int) -> None:
    """Record the embedding model and dimension of the stored vectors."""
    conn.execute(text(
        "INSERT INTO krag_meta (key, value) VALUES ('embedding_model', :m), "
        "('embedding_dim', :d) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"),
        {"m": model, "d": str(dim)})


def check_extensions_available(engine: Engine) -> None:
    """Raise :class:`ExtensionMissingError` unless the server offers vector and pg_trgm."""
    with engine.connect() as conn:
        available = set(conn.execute(text(
            "SELECT name FROM pg_available_extensions WHERE name IN ('vector', 'pg_trgm')"
        )).scalars())
    missing = {"vector", "pg_trgm"} - available
    if missing:
        raise ExtensionMissingError(
            f"PostgreSQL server lacks extension(s) {', '.join(sorted(missing))}; install "
            "pgvector/contrib (e.g. the pgvector/pgvector image) or unset KRAG_DATABASE_URL.")


def check_or_record_embedding(engine: Engine, model: str, dim: int) -> None:
    """Record the embedding model of a new store; refuse a store built with another."""
    with engine.begin() as conn:
        meta = read_meta(conn)
        if not meta:
            write_meta(conn, model, dim)
            return
        stored_model, stored_dim = meta.get("embedding_model"), int(meta["embedding_dim"])
        if stored_model != model or stored_dim != dim:
            raise EmbeddingDimensionMismatchError(
                f"this store holds {stored_dim}-d vectors from {stored_model}, but "
                f"KRAG_EMBEDDING_MODEL is {model} ({dim}-d); set it back, or run "
                f"`krag reembed` to re-embed everything with {model}.")
