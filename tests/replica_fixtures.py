"""A primary and one real streaming replica for a test module (issue 43): an embedded
cluster of its own (so the base backup copies one small database, never other tests'),
``pg_basebackup -R`` into a second data directory, a port of its own; both removed after."""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from graph_flows.testing.replica import StreamingReplica, make_replica
from storage import KnowledgeStore, start_embedded, stop_embedded
from storage.roles import APP_ROLE, prepare_embedded, role_url
from tests.pg_fixtures import TEST_DIM, TEST_MODEL, open_app_store, with_database

DATABASE = "kragdb"


@dataclass
class Cluster:
    """The module's primary (krag's database ``kragdb``, superuser URL) and its replica."""

    primary_url: str
    replica: StreamingReplica

    @property
    def app_url(self) -> str:
        return prepare_embedded(self.primary_url)[0]

    @property
    def owner_url(self) -> str:
        return prepare_embedded(self.primary_url)[1]

    def replica_app_url(self, database: str = DATABASE) -> str:
        """The replica's URL as the application's role (bound by row-level security)."""
        return role_url(self.replica.url(database), APP_ROLE)

    def open_store(self, read_urls: Sequence[str] | None = None,
                   max_lag_s: float = 30.0) -> KnowledgeStore:
        """A store on the primary reading from ``read_urls`` (default: the replica)."""
        app, owner = prepare_embedded(self.primary_url)
        return KnowledgeStore.open(
            app, owner_url=owner, embedding_model=TEST_MODEL, embedding_dim=TEST_DIM,
            read_urls=[self.replica_app_url()] if read_urls is None else read_urls,
            replica_max_lag_s=max_lag_s, pool_size=2)

    def replica_rows(self, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.replica.url(DATABASE), autocommit=True) as conn:
            return [tuple(r) for r in conn.execute(sql, params).fetchall()]  # type: ignore[arg-type]

    def primary_rows(self, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.primary_url, autocommit=True) as conn:
            return [tuple(r) for r in conn.execute(sql, params).fetchall()]  # type: ignore[arg-type]

    def pause(self) -> None:
        self.replica.execute("SELECT pg_wal_replay_pause()")

    def resume(self) -> None:
        self.replica.execute("SELECT pg_wal_replay_resume()")
        self.replica.wait_replayed()


def new_scope() -> str:
    return f"r{uuid.uuid4().hex[:10]}"


def start_cluster() -> Iterator[Cluster]:
    """Yield a primary with krag's schema and a replica that has replayed it; remove both."""
    base = Path(tempfile.mkdtemp(prefix="krag-replica-"))
    try:
        server = start_embedded(base / "primary")
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        primary = with_database(server, DATABASE)
        open_app_store(primary).close()  # roles, extensions, schema
        replica = make_replica(primary, base / "replica" / "pg")
        try:
            replica.wait_replayed()
            yield Cluster(primary, replica)
        finally:
            replica.remove()
    finally:
        stop_embedded(base / "primary")
        shutil.rmtree(base, ignore_errors=True)


def wait_until(check: Any, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached")
        time.sleep(0.1)
