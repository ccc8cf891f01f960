"""The embedded cluster's shared_buffers (storage.embedded): sized from the machine's memory
at the next start, a value chosen with ALTER SYSTEM kept."""

from __future__ import annotations

import os

import psycopg
import pytest

from storage.embedded import MAX_SHARED_BUFFERS_MB, _size_shared_buffers, shared_buffers_mb

pytestmark = pytest.mark.skipif(bool(os.environ.get("KRAG_TEST_DATABASE_URL")),
                                reason="tunes the embedded cluster only")


def test_shared_buffers_is_a_quarter_of_memory_within_bounds() -> None:
    gib = 2**30
    assert shared_buffers_mb(2 * gib) == 512
    assert shared_buffers_mb(256 * 2**20) == 128  # never under PostgreSQL's own default
    assert shared_buffers_mb(64 * gib) == MAX_SHARED_BUFFERS_MB
    assert shared_buffers_mb(0) == 128


def _pending(url: str) -> str | None:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT setting FROM pg_file_settings WHERE name = 'shared_buffers' "
                           "AND sourcefile LIKE '%postgresql.auto.conf'").fetchone()
    return None if row is None else row[0]


def test_embedded_start_sizes_shared_buffers_and_keeps_a_chosen_value(
        pg_server_url: str) -> None:
    assert _pending(pg_server_url) == f"{shared_buffers_mb()}MB"  # set by start_embedded
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET shared_buffers = '200MB'")
    try:
        _size_shared_buffers(pg_server_url)
        assert _pending(pg_server_url) == "200MB"  # an operator's choice stays
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM RESET shared_buffers")
        _size_shared_buffers(pg_server_url)
    assert _pending(pg_server_url) == f"{shared_buffers_mb()}MB"
