"""The SQL that decides whether a read replica may serve a read (:mod:`storage.replicas`),
and how far behind it is.

A replica is usable when its database has pgvector and krag's schema, it is in recovery (a
standby: ``pg_is_in_recovery()``) and a copy of this primary's cluster (the same
``system_identifier`` in ``pg_control_system()``), and it lags at most the maximum.

Lag (:class:`LagClock`): how long ago krag first saw the primary at a WAL position the
replica has not replayed yet (``pg_current_wal_lsn()`` against ``pg_last_wal_replay_lsn()``
at each probe). Not the usual ``now() - pg_last_xact_replay_timestamp()``: after an idle
spell that reads as the whole idle time the moment a new write is not yet replayed (a
replica milliseconds behind skipped, with a warning, after every quiet period). The clock
starts at a process's first probe, so a replica found behind then counts its lag from
there; ``krag doctor`` also shows the bytes it is behind, the age of its last replayed
commit and whether replay is paused.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field

from sqlalchemy import Engine, text

_PROBE = text("""
SELECT pg_is_in_recovery() AS standby,
       (pg_control_system()).system_identifier::text AS system_id,
       pg_last_wal_replay_lsn()::text AS replay,
       COALESCE(pg_last_wal_replay_lsn() >= CAST(:mine AS pg_lsn), true) AS has_mine,
       pg_wal_lsn_diff(CAST(:primary AS pg_lsn), pg_last_wal_replay_lsn()) AS behind_bytes,
       EXTRACT(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) AS replay_age,
       CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() END AS paused,
       (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vector,
       to_regclass('public.krag_schema_version') IS NOT NULL AS has_schema
""")
_KEPT_POSITIONS = 512


def lsn(value: str) -> int:
    """A ``pg_lsn`` text (``16/B374D848``) as a number."""
    high, _, low = value.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """A replica's last probe: ``problem`` is None when it may serve reads."""

    status: str  # streaming | lagging | down | rejected
    problem: str | None = None
    lag_s: float | None = None
    behind_bytes: int | None = None
    replay_paused: bool = False
    last_replayed_commit_age_s: float | None = None
    has_session_writes: bool = True

    @property
    def usable(self) -> bool:
        return self.problem is None

    @classmethod
    def down(cls, reason: str) -> ReplicaState:
        return cls("down", reason)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class LagClock:
    """WAL positions seen on the primary that one replica has not replayed yet, with when
    they were seen: the oldest one's age is the replica's lag."""

    seen: deque[tuple[int, float]] = field(default_factory=deque)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def lag(self, primary: int, replayed: int, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        with self.lock:
            while self.seen and self.seen[0][0] <= replayed:
                self.seen.popleft()
            if replayed >= primary:
                self.seen.clear()
                return 0.0
            if (not self.seen or self.seen[-1][0] < primary) and \
                    len(self.seen) < _KEPT_POSITIONS:
                self.seen.append((primary, now))
            return now - self.seen[0][1]


def primary_lsn(engine: Engine) -> str:
    """The primary's current WAL write position."""
    with engine.connect() as conn:
        return str(conn.execute(text("SELECT pg_current_wal_lsn()")).scalar())


def system_identifier(engine: Engine) -> str:
    """The cluster's system identifier (the same on a primary and its streaming replicas)."""
    with engine.connect() as conn:
        return str(conn.execute(text(
            "SELECT (pg_control_system()).system_identifier::text")).scalar())


def probe(engine: Engine, primary_id: str, primary_at: str, session_lsn: str | None,
          max_lag_s: float, clock: LagClock) -> ReplicaState:
    """The state of the replica behind ``engine`` against the primary (system identifier
    ``primary_id``, WAL position ``primary_at``) and a session's last write ``session_lsn``."""
    with engine.connect() as conn:
        r = conn.execute(_PROBE, {"primary": primary_at, "mine": session_lsn}).one()
    rejected = _rejection(r, primary_id)
    if rejected:
        return ReplicaState("rejected", rejected)
    lag = clock.lag(lsn(primary_at), lsn(r.replay) if r.replay else 0)
    behind = max(int(r.behind_bytes or 0), 0)
    paused, age = bool(r.paused), None if r.replay_age is None else float(r.replay_age)
    if lag > max_lag_s:
        why = f"lagging {lag:.1f} s behind the primary (KRAG_REPLICA_MAX_LAG_S={max_lag_s:g})"
        return ReplicaState("lagging", why + ("; WAL replay is paused" if paused else ""),
                            lag, behind, paused, age, bool(r.has_mine))
    return ReplicaState("streaming", None, lag, behind, paused, age, bool(r.has_mine))


def _rejection(r: object, primary_id: str) -> str | None:
    """Why the server probed is not a usable replica of this primary, or None."""
    if r.vector is None:  # type: ignore[attr-defined]
        return ("its database has no pgvector extension: it is not a copy of krag's "
                "database; point KRAG_DATABASE_READ_URL at a streaming replica of it")
    if not r.standby:  # type: ignore[attr-defined]
        if r.system_id == primary_id:  # type: ignore[attr-defined]
            return ("it is the primary itself (or a replica promoted to primary): it is not "
                    "in recovery; point KRAG_DATABASE_READ_URL at a streaming replica")
        return ("it is not a replica (not in recovery: it accepts writes); point "
                "KRAG_DATABASE_READ_URL at a streaming replica of KRAG_DATABASE_URL")
    if r.system_id != primary_id:  # type: ignore[attr-defined]
        return (f"it replicates another database (system identifier "
                f"{r.system_id}, the primary's is {primary_id}); point "  # type: ignore[attr-defined]
                "KRAG_DATABASE_READ_URL at a replica of KRAG_DATABASE_URL")
    if not r.has_schema:  # type: ignore[attr-defined]
        return ("its database has no krag schema (is the URL's database the primary's?); "
                "point KRAG_DATABASE_READ_URL at the replica of krag's database")
    return None
