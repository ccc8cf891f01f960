"""Bulk vector writes: COPY (id, vector) pairs into a staging table, then one UPDATE.

For loads of many rows at once (the synthetic benchmark graph); ``storage.vectors``
``write_vectors`` does the same one UPDATE per row, which suits ``krag reembed``'s pages.
:func:`copy_chunk_evidence` writes a chunk's vector and its instruction-like spans
(storage.injection_spans) in the same UPDATE, as ``storage.evidence.fill_chunk_evidence``
does for an ingest: one new row version per chunk.
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


def copy_chunk_evidence(
    conn: Connection, rows: Iterable[tuple[str, Sequence[float], Sequence[int]]]
) -> int:
    """Set the embedding and the injection spans (flat offsets, ``[]`` for a clean chunk:
    storage.injection_spans) of each (chunk id, vector, spans) on ``conn``'s transaction, one
    UPDATE for all; returns how many chunks were updated (unknown ids are ignored)."""
    stage(conn, "stage_chunk_evidence", "id text, v vector, spans integer[]",
          ("id", "v", "spans"),
          ((i, as_vector(v), [int(x) for x in spans]) for i, v, spans in rows),
          ("text", "vector", "int4[]"))
    return conn.execute(text(
        "UPDATE chunks t SET embedding = s.v, injection_spans = s.spans "
        "FROM stage_chunk_evidence s WHERE t.id = s.id")).rowcount
