"""docker/initdb/002-roles.sh, run by psql as the compose postgres image runs it (as the
superuser, on a new database), makes the roles krag needs: the app's role is then bound by
row-level security (krag doctor's check), the owner migrates."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from sqlalchemy import text

from storage import KnowledgeStore, roles
from tests.pg_fixtures import TEST_DIM, TEST_MODEL, with_database

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docker" / "initdb" / "002-roles.sh"


@pytest.fixture
def fresh_db(pg_server_url: str) -> Iterator[str]:
    """A new empty database on the test server (its superuser's URL)."""
    name = f"krag_compose_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield with_database(pg_server_url, name)
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_roles_script_makes_an_app_role_bound_by_the_policies(fresh_db: str) -> None:
    if shutil.which("psql") is None:
        pytest.skip("psql (the PostgreSQL client) is not installed")
    if os.environ.get("KRAG_TEST_DATABASE_URL"):
        pytest.skip("needs the embedded server (socket trust; roles are cluster-wide)")
    parts = urlsplit(fresh_db)
    query = dict(p.split("=", 1) for p in parts.query.split("&") if "=" in p)
    env = {**os.environ, "PGHOST": query.get("host", parts.hostname or ""),
           "PGPORT": str(parts.port or query.get("port", 5432)),
           "POSTGRES_USER": parts.username or "postgres", "POSTGRES_DB": parts.path[1:],
           "KRAG_DB_APP_PASSWORD": "app-pw", "KRAG_DB_OWNER_PASSWORD": "owner-pw"}
    for _ in range(2):  # idempotent: the documented rerun on an older volume works
        done = subprocess.run(["sh", str(SCRIPT)], env=env, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
    app, owner = (roles.role_url(fresh_db, r) for r in (roles.APP_ROLE, roles.OWNER_ROLE))
    store = KnowledgeStore.open(app, owner_url=owner, embedding_model=TEST_MODEL,
                                embedding_dim=TEST_DIM)
    try:
        assert store.rls_bypass() is None  # what krag doctor reports
        with store.connect() as conn:
            assert conn.execute(text("SELECT current_user")).scalar() == roles.APP_ROLE
        with store.connect() as conn:
            owner_of = conn.execute(text(
                "SELECT tableowner FROM pg_tables WHERE tablename = 'entities'")).scalar()
        assert owner_of == roles.OWNER_ROLE
    finally:
        store.close()
