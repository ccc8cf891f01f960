"""Bulk vector writes: COPY (id, vector) pairs into a staging table, then one UPDATE.

For loads of many rows at once (the synthetic benchmark graph); ``storage.vectors``
``write_vectors`` does the same one UPDATE per row, which suits ``krag reembed``'s pages.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, text

from storage.bulk import as_vector, stage
from storage.vectors import TABLES


def copy_vectors(
    conn: Connection, table: str, vectors: Iterable[tuple[str, Sequence[float]]]
) -> int:
    """Set the embedding of each (id, vector) of ``table`` on ``conn``'s transaction;
    returns how many rows were updated (ids not in ``table`` are ignored)."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}")
    stage(conn, "stage_vectors", "id text, v vector", ("id", "v"),
          ((i, as_vector(v)) for i, v in vectors), ("text", "vector"))
    return conn.execute(text(
        f"UPDATE {table} t SET embedding = s.v "
        "FROM stage_vectors s WHERE t.id = s.id")).rowcount
