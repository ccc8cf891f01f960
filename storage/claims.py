"""Work-queue maintenance around :meth:`KnowledgeStore.claim_chunks`.

Workers record themselves on claimed chunks as ``<hostname>:<pid>``, or
``<hostname>:<pid>/<tag>`` for a claim that must be undone exactly (:func:`tagged`: the
look-ahead's claims, put back by :func:`release_worker_claims` with the tag even when the
claim's own reply was lost). A worker killed with ``kill -9`` leaves its chunks
'extracting'. Claims of *dead processes on this host* are put back to 'pending' at once
(:func:`release_dead_local_claims`); claims of other hosts fall back to the claim's stale
timeout (``stale_after_s``). PID reuse can only delay a takeover (a reused PID looks alive),
never cause one.
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path

from sqlalchemy import Connection, Engine, text


def local_worker_id() -> str:
    """``<hostname>:<pid>`` of this process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def tagged(worker: str) -> str:
    """``worker`` with a new random tag: ``<worker>/<12 hex digits>``."""
    return f"{worker}/{secrets.token_hex(6)}"


def worker_pid(worker: str) -> int | None:
    """The process id in ``<hostname>:<pid>`` or ``<hostname>:<pid>/<tag>`` (None: another
    form, e.g. a name set with ``IndexingContext.worker_id``)."""
    pid = worker.rsplit(":", 1)[-1].split("/", 1)[0]
    return int(pid) if pid.isdigit() else None


def like_prefix(prefix: str) -> str:
    """``prefix`` escaped for LIKE, followed by ``%``."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def pid_alive(pid: int) -> bool:
    """True if a process with this PID runs here (zombies count as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    try:
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in {"Z", "X"}


def release_dead_local_claims(conn: Connection, hostname: str | None = None) -> int:
    """Put chunks claimed by dead processes of this host back to pending; returns how many."""
    host = hostname or socket.gethostname()
    workers = list(conn.execute(text(
        "SELECT DISTINCT worker FROM extraction_status "
        "WHERE status = 'extracting' AND worker LIKE :prefix"),
        {"prefix": like_prefix(host + ":")}).scalars())
    dead = [w for w in workers if (pid := worker_pid(w)) is not None and not pid_alive(pid)]
    if not dead:
        return 0
    return conn.execute(text(
        "UPDATE extraction_status SET status = 'pending', worker = NULL, updated_at = now() "
        "WHERE status = 'extracting' AND worker = ANY(:dead)"), {"dead": dead}).rowcount


def requeue_failed(conn: Connection, scope: str, source: str | None = None) -> int:
    """Put failed chunks of a scope (and source) back to pending for ``--retry-failed``.

    Done once at the start of a run, so chunks failing again are not retried in a loop.
    """
    return conn.execute(text("""
        UPDATE extraction_status s SET status = 'pending', updated_at = now()
        FROM chunks c JOIN documents d ON d.id = c.document_id
        WHERE s.chunk_id = c.id AND s.status = 'failed' AND d.scope = :scope
          AND (CAST(:source AS text) IS NULL OR d.source = :source)"""),
        {"scope": scope, "source": source}).rowcount


def release_worker_claims(engine: Engine, worker: str) -> int:
    """Put chunks still claimed by ``worker`` (and by its tagged claims, ``<worker>/<tag>``)
    back to pending (a run of this process that failed left them); returns how many.
    Idempotent: safe to repeat when its own reply was lost."""
    with engine.begin() as conn:
        return conn.execute(text(
            "UPDATE extraction_status SET status = 'pending', worker = NULL, "
            "updated_at = now() WHERE status = 'extracting' "
            "AND (worker = :w OR worker LIKE :tags)"),
            {"w": worker, "tags": like_prefix(worker + "/")}).rowcount
