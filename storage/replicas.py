"""Read replicas: read-only requests served by PostgreSQL streaming replicas
(``KRAG_DATABASE_READ_URL``), writes always by the primary.

- A request that only reads installs a :class:`ReadRequest` (:func:`read_only`); the first
  read of the store inside it picks a replica (:meth:`ReplicaSet.choose`) and keeps it for
  the rest of the request. Without one installed, every statement goes to the primary.
- A client's session (an MCP session, a UI session; a CLI process) installs its
  :class:`ReadSession` (:func:`use_session`). A commit on the primary marks it as having
  written (:func:`note_commit`, the primary engine's ``commit`` event; :func:`note_write` for
  writes made in other processes); the next read then takes the primary's WAL position
  (``pg_current_wal_lsn()``) and reads from the primary until a replica has replayed up to
  it (``pg_last_wal_replay_lsn()``): read-your-writes, per session, never per process.
- Each choice probes the replica (:mod:`storage.replica_checks`): down, lagging beyond the
  maximum, or not a usable replica of this primary (the primary itself, no pgvector,
  another cluster's system identifier, promoted) -> skipped, the primary serves, and one
  warning line says so when its state changes. A replica that failed is re-probed at most
  every :data:`RETRY_S` seconds.
- Replica connections are ``default_transaction_read_only``: even a replica promoted to a
  primary mid-run never receives a write through them; writes use the primary's engine.

The state shared between requests is the pools' and each replica's last probe (like a
connection pool's), never a request's choice or a session's position.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from storage import replica_checks
from storage.access import installed
from storage.engine import make_engine, mask_password
from storage.errors import DatabaseUnavailableError
from storage.request_memo import request_memo

log = logging.getLogger("krag.storage")

RETRY_S = 5.0
"""A replica that was down or unusable is probed again after this many seconds."""
CONNECT_TIMEOUT_S = 2
"""A replica that does not answer within this is down (the primary serves meanwhile)."""


@dataclass
class ReadSession:
    """One client's session: whether it wrote since its last read, and the primary's WAL
    position after its last write (its reads need a replica that has replayed it)."""

    wrote: bool = False
    write_lsn: str | None = None


@dataclass
class ReadRequest:
    """A read-only request: the replica each store picked for it (None: the primary)."""

    pins: dict[int, Replica | None] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_session: ContextVar[ReadSession | None] = ContextVar("krag_read_session", default=None)
_request: ContextVar[ReadRequest | None] = ContextVar("krag_read_request", default=None)


def use_session(session: ReadSession) -> Any:
    """Install a client's session for this context until the block ends."""
    return installed(_session, session)


@contextmanager
def read_only() -> Iterator[ReadRequest]:
    """Mark this context's request as read-only (replicas may serve it); a request already
    marked keeps its own (and its choice of replica). A new request gets its own
    :func:`storage.request_memo.request_memo` (the values it reads once)."""
    current = _request.get()
    if current is not None:
        yield current
        return
    with installed(_request, ReadRequest()) as request, request_memo():
        yield request


def current_request() -> ReadRequest | None:
    return _request.get()


def note_commit(_conn: Any = None) -> None:
    """The session of this context wrote on the primary (the primary engine's ``commit``
    event; also for writes made by other processes on the session's behalf)."""
    session = _session.get()
    if session is not None:
        session.wrote = True


note_write = note_commit


@dataclass
class Replica:
    """One read URL: its engines (made on first use) and its last probe."""

    url: str
    pool_size: int
    state: replica_checks.ReplicaState | None = None
    probed_at: float = 0.0
    clock: replica_checks.LagClock = field(default_factory=replica_checks.LagClock)
    engine: Engine | None = None
    _search: dict[int, Engine] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def shown(self) -> str:
        return mask_password(self.url)

    def connect_engine(self) -> Engine:
        """The replica's pool (made on first use: read-only transactions)."""
        with self._lock:
            if self.engine is None:
                self.engine = make_engine(self.url, pool_size=self.pool_size, read_only=True,
                                          connect_timeout_s=CONNECT_TIMEOUT_S)
            return self.engine

    def search_engine(self, timeout_ms: int) -> Engine:
        """Its pool for searches (``statement_timeout``, no pre-ping), as the primary's."""
        with self._lock:
            engine = self._search.get(timeout_ms)
            if engine is None:
                engine = make_engine(self.url, pool_size=self.pool_size, read_only=True,
                                     statement_timeout_ms=timeout_ms, pre_ping=False,
                                     connect_timeout_s=CONNECT_TIMEOUT_S)
                self._search[timeout_ms] = engine
            return engine

    def dispose(self) -> None:
        """Close its pools (a down replica's: the next use connects anew)."""
        with self._lock:
            engines, self.engine, self._search = [self.engine, *self._search.values()], None, {}
        for engine in engines:
            if engine is not None:
                engine.dispose()


class ReplicaSet:
    """The read replicas of one store and the choice of one for a read-only request."""

    def __init__(self, urls: Sequence[str], primary: Engine, *, max_lag_s: float,
                 pool_size: int = 10) -> None:
        self.primary = primary
        self.max_lag_s = max_lag_s
        self.replicas = [Replica(u, pool_size) for u in urls]
        self._next = itertools.count()
        self._primary_id: str | None = None

    def primary_id(self) -> str:
        """The primary's system identifier (read once: it never changes)."""
        if self._primary_id is None:
            self._primary_id = replica_checks.system_identifier(self.primary)
        return self._primary_id

    def choose(self, session: ReadSession | None) -> Replica | None:
        """A replica fit to serve this session's read now, or None (the primary serves).
        The primary's WAL position is read first: a primary that cannot be reached raises
        its own one-line :class:`DatabaseUnavailableError`, never blamed on a replica."""
        primary_at = replica_checks.primary_lsn(self.primary)
        if session is not None and session.wrote:
            session.write_lsn, session.wrote = primary_at, False
        start = next(self._next)
        n = len(self.replicas)
        for i in range(n):
            replica = self.replicas[(start + i) % n]
            state = self.probe(replica, primary_at, session.write_lsn if session else None)
            if state.usable and state.has_session_writes:
                return replica
        return None

    def probe(self, replica: Replica, primary_at: str, session_lsn: str | None = None,
              *, force: bool = False, quiet: bool = False) -> replica_checks.ReplicaState:
        """Probe ``replica`` (a failed one at most every :data:`RETRY_S` s unless
        ``force``); logs one line when its state changes (unless ``quiet``: the caller
        shows it)."""
        last = replica.state
        if (not force and last is not None and not last.usable
                and time.monotonic() - replica.probed_at < RETRY_S):
            return last
        state = self._probe(replica, primary_at, session_lsn)
        replica.state, replica.probed_at = state, time.monotonic()
        if not quiet and (last is None or state.problem != last.problem):
            if state.problem:
                log.warning("read replica %s skipped, the primary serves its reads: %s",
                            replica.shown, state.problem)
            elif last is not None:
                log.warning("read replica %s serves reads again", replica.shown)
        return state

    def _probe(self, replica: Replica, primary_at: str,
               session_lsn: str | None) -> replica_checks.ReplicaState:
        primary_id = self.primary_id()
        try:
            engine = replica.connect_engine()
            return replica_checks.probe(engine, primary_id, primary_at, session_lsn,
                                        self.max_lag_s, replica.clock)
        except DatabaseUnavailableError as exc:
            replica.dispose()
            return replica_checks.ReplicaState.down(str(exc))
        except Exception as exc:  # a dropped connection mid-probe, a refused statement
            log.debug("probe of %s failed", replica.shown, exc_info=True)
            replica.dispose()
            reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
            return replica_checks.ReplicaState.down(
                f"unreachable ({reason[0] if reason else type(exc).__name__})")

    def report(self, *, quiet: bool = False) -> list[dict[str, object]]:
        """Each replica's state after a fresh probe (``krag doctor``: ``quiet``)."""
        primary_at = replica_checks.primary_lsn(self.primary)
        return [{"url": r.shown, **self.probe(r, primary_at, force=True, quiet=quiet).as_dict()}
                for r in self.replicas]

    def close(self) -> None:
        for replica in self.replicas:
            replica.dispose()


def pinned(replicas: ReplicaSet | None, key: int) -> Replica | None:
    """The replica the current read-only request reads ``key``'s store from (chosen on
    its first read), or None: not a read-only request, no replicas, or none fit."""
    request = _request.get()
    if request is None or replicas is None:
        return None
    with request.lock:
        if key not in request.pins:
            request.pins[key] = replicas.choose(_session.get())
        return request.pins[key]


def split_urls(value: str | None) -> list[str]:
    """The read URLs of ``KRAG_DATABASE_READ_URL`` (comma-separated; blanks dropped)."""
    return [u.strip() for u in (value or "").split(",") if u.strip()]
