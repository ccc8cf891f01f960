"""Statements built once per distinct SQL string, and the searches' way of running them.

``sqlalchemy.text()`` parses its string for bind parameters on every call: about 60 us of
CPU per statement here, on the query path's fifteen or so statements per question. The
searches ask for the same few strings again and again, so the constructs are kept (they are
immutable and safe to share between threads; SQLAlchemy's compiled cache is keyed on them).

:func:`fetch` runs a read statement on the psycopg connection under a SQLAlchemy
connection: the same SQL text as ``conn.execute(text(sql), params)`` sends (SQLAlchemy
compiles it, once per string), in the same transaction (begun here when none is, so the
engine's ``begin`` hook installs the request's access settings first, storage.access), the
same parameters and the same values back, without SQLAlchemy's per-statement execution
context and result wrapping (~80 us of CPU a statement, a fifth of a small search's; the
query path runs ~19 a question). Errors go through SQLAlchemy's own handling (a dropped
connection invalidated and raised ``connection_invalidated``, the ``handle_error`` hooks),
and the ``before_cursor_execute`` / ``after_cursor_execute`` listeners still see every
statement.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, TextClause
from sqlalchemy import text as _text


@lru_cache(maxsize=1024)
def text(sql: str) -> TextClause:
    """``sqlalchemy.text(sql)``, built once per string (the 1,024 most recent kept)."""
    return _text(sql)


@lru_cache(maxsize=1024)
def _compiled(sql: str, dialect: Any) -> str:
    """``sql`` as SQLAlchemy sends it on ``dialect`` (psycopg: ``%(name)s`` parameters,
    ``%`` doubled)."""
    return str(text(sql).compile(dialect=dialect))


def fetch(conn: Connection, sql: str, params: dict[str, Any]) -> list[Any]:
    """The rows of the read statement ``sql`` (``:name`` parameters, as for ``text()``)
    with ``params``, as named tuples (``row.column``, ``row._asdict()``), on ``conn``'s
    transaction (see the module docstring)."""
    from psycopg.rows import namedtuple_row

    if not conn.in_transaction():
        conn.begin()
    statement = _compiled(sql, conn.dialect)
    dbapi = conn.connection.dbapi_connection
    events = conn._has_events or conn.engine._has_events
    cursor = None
    try:
        cursor = dbapi.cursor(row_factory=namedtuple_row)  # type: ignore[union-attr]
        if events:
            for fn in conn.dispatch.before_cursor_execute:
                statement, params = fn(conn, cursor, statement, params, None, False)
        cursor.execute(statement, params)
        if events:
            conn.dispatch.after_cursor_execute(conn, cursor, statement, params, None, False)
        rows = cursor.fetchall()
        cursor.close()
        return rows
    except BaseException as exc:  # as SQLAlchemy's own execute: wrapped, invalidated, hooks
        conn._handle_dbapi_exception(exc, statement, params, cursor, None)  # raises
        raise  # unreachable: for type checkers
