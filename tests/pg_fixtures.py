"""PostgreSQL for tests: the embedded cluster (or KRAG_TEST_DATABASE_URL), a template
database migrated once per session, and a fresh database cloned from it for each test."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from sqlalchemy import text

from storage import KnowledgeStore, start_embedded, stop_embedded
from storage.access import WHOLE_STORE, use_access
from storage.roles import prepare_embedded

TEST_DIM = 384
TEST_MODEL = "local:minilm"
TEMPLATE = "krag_test_template"


def template_name() -> str:
    """The template database of this test process: one per pytest-xdist worker, so workers
    sharing an external server (``KRAG_TEST_DATABASE_URL``) never drop each other's."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return f"{TEMPLATE}_{worker}" if worker else TEMPLATE


def with_database(url: str, dbname: str) -> str:
    """The same server URL pointing at another database."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{dbname}"))


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """URL of a PostgreSQL server tests may create databases on.

    The embedded cluster lives in its own temp dir, not pytest's (pytest prunes old
    ``pytest-N`` dirs, which would pull a running cluster away when runs overlap).
    """
    external = os.environ.get("KRAG_TEST_DATABASE_URL")
    if external:
        yield external
        return
    data_dir = Path(tempfile.mkdtemp(prefix="krag-test-"))
    yield start_embedded(data_dir)
    stop_embedded(data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)


def _admin(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True)


@pytest.fixture(scope="session")
def pg_template(pg_server_url: str) -> str:
    """Name of a template database with the schema at head."""
    name = template_name()
    with _admin(pg_server_url) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    store = open_app_store(with_database(pg_server_url, name))
    store.close()
    return name


def open_app_store(superuser_url: str, **kwargs: Any) -> KnowledgeStore:
    """A KnowledgeStore connected like the product's: as the application's role (subject to
    row-level security), migrated as the owner (:func:`storage.roles.prepare_embedded`)."""
    app_url, owner_url = prepare_embedded(superuser_url)
    kwargs.setdefault("embedding_model", TEST_MODEL)
    kwargs.setdefault("embedding_dim", TEST_DIM)
    return KnowledgeStore.open(app_url, owner_url=owner_url, **kwargs)


@pytest.fixture(autouse=True)
def whole_store_access() -> Iterator[None]:
    """Tests that call the store directly get whole-store access (product code never relies
    on it: every entry point installs its request's access; tests of access install theirs,
    which wins inside their block)."""
    with use_access(WHOLE_STORE):
        yield


@contextmanager
def _scratch_database(server_url: str, prefix: str, options: str = "") -> Iterator[str]:
    """A database created for one test (``CREATE DATABASE ... options``), dropped after."""
    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    with _admin(server_url) as conn:
        conn.execute(f"CREATE DATABASE {name} {options}".rstrip())
    try:
        yield with_database(server_url, name)
    finally:
        with _admin(server_url) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextmanager
def migrated_database(server_url: str, template: str, prefix: str = "krag_t_"
                      ) -> Iterator[str]:
    """A database cloned from the migrated ``template`` (its URL), dropped on exit."""
    with _scratch_database(server_url, prefix,
                           f"TEMPLATE {template} STRATEGY FILE_COPY") as url:
        yield url


@pytest.fixture
def db_url(pg_server_url: str, pg_template: str) -> Iterator[str]:
    """A fresh, migrated database for one test (dropped afterwards)."""
    with migrated_database(pg_server_url, pg_template) as url:
        yield url


@pytest.fixture
def empty_db_url(pg_server_url: str) -> Iterator[str]:
    """A fresh database with no schema at all."""
    with _scratch_database(pg_server_url, "krag_e_") as url:
        yield url


@pytest.fixture
def other_empty_db_url(pg_server_url: str) -> Iterator[str]:
    """A second fresh database with no schema (a test comparing two loads from scratch)."""
    with _scratch_database(pg_server_url, "krag_e_") as url:
        yield url


@pytest.fixture
def store(db_url: str) -> Iterator[KnowledgeStore]:
    """An open KnowledgeStore on a fresh database, connected as the application's role."""
    s = open_app_store(db_url)
    try:
        yield s
    finally:
        s.close()


def rows(store: KnowledgeStore, sql: str, **params: Any) -> list[Any]:
    """Rows of one read-only statement on ``store`` (tests checking database state)."""
    with store.connect() as conn:
        return list(conn.execute(text(sql), params).all())


def execute(store: KnowledgeStore, sql: str, **params: Any) -> int:
    """Run one statement in its own transaction on ``store``; returns the row count."""
    with store.transaction() as conn:
        return conn.execute(text(sql), params).rowcount or 0


def url_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Rows of one statement on the database at ``url`` (libpq or SQLAlchemy form)."""
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://", 1)) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]
