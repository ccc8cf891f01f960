"""Bulk writes through COPY into a temporary staging table (one round trip per batch)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection


def vector_literal(vec: Sequence[float] | None) -> str | None:
    """pgvector text form ``[x,y,...]`` (None stays None)."""
    if vec is None:
        return None
    return "[" + ",".join(f"{float(x):.7g}" for x in vec) + "]"


def copy_rows(
    conn: Connection, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> int:
    """COPY ``rows`` into ``table`` on the connection's current transaction."""
    raw = conn.connection.driver_connection
    assert raw is not None
    count = 0
    with raw.cursor() as cur, cur.copy(
        f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    ) as copy:
        for row in rows:
            copy.write_row(row)
            count += 1
    return count


def stage(
    conn: Connection, name: str, ddl: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> int:
    """Create temp table ``name`` (dropped at commit) and COPY rows into it."""
    raw = conn.connection.driver_connection
    assert raw is not None
    raw.execute(f"DROP TABLE IF EXISTS pg_temp.{name}")
    raw.execute(f"CREATE TEMP TABLE {name} ({ddl}) ON COMMIT DROP")
    return copy_rows(conn, name, columns, rows)
