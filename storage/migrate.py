"""Versioned, idempotent schema migrations with Alembic.

Why Alembic: it is the migration tool made for SQLAlchemy (version table, ordered revisions,
upgrade from any earlier version), so we do not hand-roll one. Migrations are plain SQL in
``storage/migrations/versions``; the embedding dimension is a parameter of the first one.
Concurrent starters (many workers) serialise on a PostgreSQL advisory lock.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

_MIGRATIONS = Path(__file__).parent / "migrations"
_LOCK_KEY = 0x6B726167  # "krag"


def _config(embedding_dim: int) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    cfg.attributes["embedding_dim"] = embedding_dim
    return cfg


def head_revision() -> str:
    """The newest revision shipped with this code."""
    head = ScriptDirectory.from_config(_config(1)).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, or None for an empty database."""
    with engine.connect() as conn:
        exists = conn.execute(text("SELECT to_regclass('krag_schema_version')")).scalar()
        if exists is None:
            return None
        return conn.execute(text("SELECT version_num FROM krag_schema_version")).scalar()


def upgrade(engine: Engine, embedding_dim: int) -> None:
    """Bring the schema to head. Safe to call any number of times, from many processes."""
    with engine.connect() as conn:
        conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _LOCK_KEY})
        conn.commit()
        try:
            cfg = _config(embedding_dim)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
            conn.commit()
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _LOCK_KEY})
            conn.commit()
