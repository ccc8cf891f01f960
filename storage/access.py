"""Which scopes the current request may read and write: what PostgreSQL's row-level
security policies enforce (migration 0014).

A request installs its :class:`Access` with :func:`use_access` (a
:class:`~contextvars.ContextVar`, so it belongs to the request's context and never to the
process). At the start of every transaction the storage engine copies it into three
transaction-local settings (:func:`apply`, ``set_config(name, value, true)`` = ``SET
LOCAL``) that the policies read:

- ``krag.read_scopes``: the readable scope names joined with ``,`` (a scope name is
  letters, digits and ``-_.:/`` only, :func:`storage.scopes.check_name`, so ``,`` cannot
  occur in one);
- ``krag.write_scope``: the one writable scope (empty: none);
- ``krag.all_scopes``: ``on`` for :data:`WHOLE_STORE`, the explicit whole-store access
  of admin operations (status over all scopes, removal, re-embedding, migrations, workers
  claiming any scope's chunks).

No access installed: the settings are empty and the policies show no scoped row and
accept no write (fail closed).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any, TypeVar

from storage.scopes import check_name

T = TypeVar("T")

READ_SETTING = "krag.read_scopes"
WRITE_SETTING = "krag.write_scope"
ALL_SETTING = "krag.all_scopes"
SEPARATOR = ","

_SET_SQL = (
    f"SELECT set_config('{READ_SETTING}', %s, true), set_config('{WRITE_SETTING}', %s, true), "
    f"set_config('{ALL_SETTING}', %s, true)")


@dataclass(frozen=True, slots=True)
class Access:
    """Readable scopes, the writable scope (or None), or the whole store."""

    read_scopes: tuple[str, ...]
    write_scope: str | None
    whole_store: bool = False

    def __post_init__(self) -> None:
        """Check every name (a one-line InvalidInputError for ``*``, quotes, empty ...)."""
        from storage.errors import InvalidInputError

        for name in self.read_scopes:
            check_name(name)
        if self.write_scope is not None:
            check_name(self.write_scope)
            if self.write_scope not in self.read_scopes:
                raise InvalidInputError(
                    f"write scope {self.write_scope!r} is not among the readable scopes; a "
                    "request writes its own scope only")

    def settings(self) -> tuple[str, str, str]:
        """The values of ``krag.read_scopes``, ``krag.write_scope``, ``krag.all_scopes``."""
        return (SEPARATOR.join(self.read_scopes), self.write_scope or "",
                "on" if self.whole_store else "off")


WHOLE_STORE = Access((), None, whole_store=True)
NO_ACCESS = Access((), None)


def for_scopes(read_scopes: Sequence[str], write_scope: str | None) -> Access:
    """Access reading ``read_scopes`` and writing ``write_scope`` (which must be one of
    them); every name is checked (:func:`storage.scopes.check_name`: a one-line
    :class:`~storage.errors.InvalidInputError` for an empty name, ``*``, quotes, ...)."""
    return Access(tuple(dict.fromkeys(read_scopes)), write_scope)


_current: ContextVar[Access | None] = ContextVar("krag_access", default=None)


def current() -> Access | None:
    """The access installed for this context, or None (fail closed)."""
    return _current.get()


@contextmanager
def installed(var: ContextVar[T | None], value: T) -> Iterator[T]:
    """``value`` set in ``var`` for this context until the block ends (the previous value
    back even when the block ends in another context, e.g. a generator closed elsewhere)."""
    token = var.set(value)
    try:
        yield value
    finally:
        try:
            var.reset(token)
        except ValueError:  # ended in another context (a generator closed elsewhere)
            old = token.old_value
            var.set(None if old is Token.MISSING else old)


def use_access(access: Access) -> AbstractContextManager[Access]:
    """Install ``access`` for the transactions this context starts until the block ends."""
    return installed(_current, access)


def apply(dbapi_connection: Any) -> None:
    """Copy the current access into the transaction-local settings of the transaction
    ``dbapi_connection`` (psycopg) is starting (the engine's ``begin`` event).

    A plain transaction (no isolation level, read-only or deferrable option) is opened
    here with ``BEGIN`` and the settings in one round trip: psycopg sends its own ``BEGIN``
    only while the server reports no transaction, so the first statement then goes straight
    in (otherwise every transaction paid one more round trip; a retrieval runs ~15).
    Anything else: psycopg's own ``BEGIN``, then the settings as a statement of their own."""
    pending = _pending.get()
    extra = pending.settings if pending is not None else ()
    values = [*(current() or NO_ACCESS).settings(), *(v for pair in extra for v in pair)]
    sql = _SET_SQL + "".join(", set_config(%s, %s, true)" for _ in extra)
    if _plain_begin(dbapi_connection):
        from psycopg import pq

        pgconn = dbapi_connection.pgconn
        escape = pq.Escaping(pgconn)
        literals = [escape.escape_literal(v.encode()).decode() for v in values]
        result = pgconn.exec_(("BEGIN; " + sql.replace("%s", "{}").format(*literals)).encode())
        if result.status == pq.ExecStatus.TUPLES_OK:
            if pending is not None:
                pending.applied = True
            return
        # failed: the statement below raises psycopg's own error for it (a BEGIN that
        # went through is undone first, else the error would be "transaction aborted")
        if pgconn.transaction_status == pq.TransactionStatus.INERROR:
            pgconn.exec_(b"ROLLBACK")
    with dbapi_connection.cursor() as cur:
        cur.execute(sql, values)
    if pending is not None:
        pending.applied = True


@dataclass
class _Pending:
    """Transaction-local settings waiting for the transaction :func:`set_local` begins."""

    settings: tuple[tuple[str, str], ...]
    applied: bool = False


_pending: ContextVar[_Pending | None] = ContextVar("krag_pending_settings", default=None)


def set_local(conn: Any, settings: Mapping[str, str]) -> None:
    """Transaction-local ``settings`` (as ``SET LOCAL``) for the transaction of ``conn`` (a
    SQLAlchemy connection). Not begun yet: begun here, the settings sent in the same round
    trip as its ``BEGIN`` and access settings (:func:`apply`); a search paid one more round
    trip per setting statement before (five a question). Already begun, or an engine
    without the access hook: one ``set_config`` statement."""
    pairs = tuple((str(k), str(v)) for k, v in settings.items())
    if not conn.in_transaction():
        pending = _Pending(pairs)
        with installed(_pending, pending):
            conn.begin()
        if pending.applied:
            return
    conn.exec_driver_sql(
        "SELECT " + ", ".join("set_config(%s, %s, true)" for _ in pairs),
        tuple(v for pair in pairs for v in pair))


def _plain_begin(conn: Any) -> bool:
    """Whether psycopg would open the transaction with a bare ``BEGIN`` and has not yet."""
    from psycopg import pq

    return (not conn.autocommit and conn.isolation_level is None and conn.read_only is None
            and conn.deferrable is None
            and conn.pgconn.transaction_status == pq.TransactionStatus.IDLE)
