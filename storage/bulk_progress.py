"""Progress of a resumable bulk load, kept in ``krag_meta`` (one JSON value per key).

A loader writes what it has committed (phases done, batches done per phase) after each
batch's transaction; a loader started again on the same database reads it and skips
what is already there. The loader owns the JSON's shape; this module only stores it.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, text


def read(conn: Connection, key: str) -> dict[str, Any] | None:
    """The value stored under ``key`` (None when there is none)."""
    raw = conn.execute(text("SELECT value FROM krag_meta WHERE key = :k"), {"k": key}).scalar()
    return json.loads(raw) if raw else None


def write(conn: Connection, key: str, value: dict[str, Any]) -> None:
    """Store ``value`` under ``key`` (replacing what was there)."""
    conn.execute(text(
        "INSERT INTO krag_meta (key, value) VALUES (:k, :v) "
        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"),
        {"k": key, "v": json.dumps(value)})


def clear(conn: Connection, key: str) -> None:
    conn.execute(text("DELETE FROM krag_meta WHERE key = :k"), {"k": key})
