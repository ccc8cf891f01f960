"""Store turns: batches of one scope resolved and written in claim order, whoever claimed them.

Resolution depends on what is already stored (the stored entity wins over a near duplicate,
a document's short forms are joined once it is complete, synonym edges are a k-NN over the
stored names), so a graph is the one-process graph only if each batch is resolved and
written after every batch claimed before it. Several workers (processes or machines) may
extract at once; :func:`store_turn` makes them take turns for the part that reads and
writes the graph:

- the turn is a session-level advisory lock of the scope (one writer at a time), taken on a
  connection of its own and held until the turn ends; a process that dies loses it with its
  connection;
- it is taken only once no chunk of the scope (and source) that comes before the batch in
  claim order (``document_id``, ``ordinal``: the order of :mod:`storage.work`'s claim) is
  still claimed by another worker. Claims of dead processes of this host are put back to
  pending while waiting, and a claim older than ``stale_after_s`` (another host's dead
  worker) no longer holds a turn back, as it no longer holds its chunks
  (:mod:`storage.claims`). Pending chunks do not hold it back: they are claimed after this
  batch whatever happens.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, text

from storage.claims import like_prefix, release_dead_local_claims

log = logging.getLogger(__name__)

TURN_CLASS = 0x6B74  # first key of the two-key advisory lock: "kt", krag's store turns
POLL_S = (0.005, 0.05)  # first and longest wait between two looks at the earlier claims
RELEASE_EVERY_S = 1.0  # how often a waiting worker frees the claims of dead local processes

_EARLIER_CLAIMED = """
SELECT EXISTS (
    SELECT 1 FROM extraction_status s
    JOIN chunks c ON c.id = s.chunk_id
    JOIN documents d ON d.id = c.document_id
    WHERE s.status = 'extracting'
      AND s.claimed_at >= now() - make_interval(secs => :stale)
      AND s.worker <> :worker AND s.worker NOT LIKE :tags
      AND (c.document_id, c.ordinal) < (:document_id, :ordinal)
      AND d.scope = :scope
      AND (CAST(:source AS text) IS NULL OR d.source = :source)
)
"""


@dataclass
class Turn:
    """What taking the turn cost: seconds waited and looks at the earlier claims."""

    waited_s: float = 0.0
    looks: int = 0


def scope_key(scope: str) -> int:
    """The advisory lock's second key for ``scope`` (a signed 32-bit CRC)."""
    return zlib.crc32(scope.encode()) - (1 << 31)


@contextmanager
def store_turn(
    engine: Engine, *, scope: str, source: str | None, first: tuple[str, int], worker: str,
    stale_after_s: float,
) -> Iterator[Turn]:
    """Hold the scope's store turn for a batch whose first chunk in claim order is ``first``
    (``document_id``, ``ordinal``), claimed by ``worker`` (see the module docstring)."""
    turn = Turn()
    started = time.monotonic()
    with engine.connect() as conn:
        try:
            _take(conn, turn, scope=scope, source=source, first=first, worker=worker,
                  stale_after_s=stale_after_s)
        except BaseException:
            conn.invalidate()  # it may hold the lock: closed, never back in the pool
            raise
        turn.waited_s = time.monotonic() - started
        try:
            yield turn
        finally:
            _give_back(conn, scope)


def _take(conn: Connection, turn: Turn, *, scope: str, source: str | None,
          first: tuple[str, int], worker: str, stale_after_s: float) -> None:
    key = scope_key(scope)
    pause, released_at = POLL_S[0], time.monotonic()
    params = {"stale": stale_after_s, "worker": worker, "tags": like_prefix(worker + "/"),
              "document_id": first[0], "ordinal": first[1], "scope": scope, "source": source}
    while True:
        turn.looks += 1
        got = conn.execute(text("SELECT pg_try_advisory_lock(:a, :b)"),
                           {"a": TURN_CLASS, "b": key}).scalar()
        if got:
            if not conn.execute(text(_EARLIER_CLAIMED), params).scalar():
                conn.commit()
                return
            conn.execute(text("SELECT pg_advisory_unlock(:a, :b)"), {"a": TURN_CLASS, "b": key})
        if time.monotonic() - released_at >= RELEASE_EVERY_S:
            release_dead_local_claims(conn)
            released_at = time.monotonic()
        conn.commit()
        time.sleep(pause)
        pause = min(POLL_S[1], pause * 2)


def _give_back(conn: Connection, scope: str) -> None:
    """Release the turn; a connection that cannot say so is closed (its lock ends with it),
    never returned to the pool holding the turn."""
    try:
        conn.rollback()
        conn.execute(text("SELECT pg_advisory_unlock(:a, :b)"),
                     {"a": TURN_CLASS, "b": scope_key(scope)})
        conn.commit()
    except Exception:  # noqa: BLE001 - closing the connection releases the lock as well
        log.debug("releasing the store turn failed; closing its connection", exc_info=True)
        conn.invalidate()
