"""Shared fixtures: a real PostgreSQL (embedded or KRAG_TEST_DATABASE_URL), fake LLMs."""

from tests.llm_fixtures import llm_server  # noqa: F401
from tests.pg_fixtures import (  # noqa: F401
    db_url,
    empty_db_url,
    other_empty_db_url,
    pg_server_url,
    pg_template,
    store,
    whole_store_access,
)
from tests.query_fixtures import resources, seeded_store  # noqa: F401,E402
