"""Read replicas (issue 43) against a real streaming replica made from the embedded server's
binaries: questions answered on the replica, a session reading its own writes, the replica
stopped or lagging, row-level security on the replica, and the bad read URLs (the primary
itself, a database without pgvector, another cluster's replica, a replica promoted mid-run).

One primary and one replica for the module; the promotion test ends the replica's life as a
replica, so it runs last."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from graph_flows.query.graph import graph
from graph_flows.services import tokens
from graph_flows.services.memory import KnowledgeTools
from graph_flows.shared.reads import ReadSession, read_only, use_session
from graph_flows.shared.resources import NO_LLM, Resources, use_resources
from graph_flows.shared.settings import Settings
from storage import KnowledgeStore
from storage.access import NO_ACCESS, for_scopes, use_access
from storage.roles import bypass_reason
from tests.procs import krag_env, mcp_http_server
from tests.query_fixtures import _EMBEDDER, seed_graph
from tests.replica_fixtures import Cluster, new_scope, start_cluster, wait_until
from tests.security.test_security_mcp_tokens import _call as _http_call
from tests.security.test_security_mcp_tokens import _client

QUESTION = "Who designed the Analytical Engine?"
NEW_FACT = {"subject": "Ada Lovelace", "predicate": "translated", "object": "Sketch Notes",
            "fact": "Ada Lovelace translated the Sketch of the Analytical Engine."}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from start_cluster()


@pytest.fixture
def store(cluster: Cluster) -> Iterator[KnowledgeStore]:
    """A store reading from the module's replica (lag limit 30 s)."""
    s = cluster.open_store()
    try:
        yield s
    finally:
        s.close()


def _resources(store: KnowledgeStore) -> Resources:
    settings = Settings(_env_file=None, chat_model="none", database_url=None)
    return Resources(settings=settings, store=store, embeddings=_EMBEDDER, chat_override=NO_LLM)


def _seeded(cluster: Cluster, store: KnowledgeStore) -> str:
    scope = new_scope()
    seed_graph(store, scope=scope)
    cluster.replica.wait_replayed()
    return scope


def _reads_from_replica(store: KnowledgeStore) -> bool:
    with read_only():
        return store.read_replica() is not None


def _facts(out: dict[str, Any]) -> set[str]:
    return {r["fact"] for r in out.get("relations", out.get("facts", []))}


def _replica_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "read replica" in r.getMessage()]


def test_a_question_is_answered_on_the_replica(cluster: Cluster, store: KnowledgeStore) -> None:
    scope = _seeded(cluster, store)
    before = cluster.replica_rows(
        "SELECT tup_returned FROM pg_stat_database WHERE datname = current_database()")[0][0]
    with use_resources(_resources(store)), use_session(ReadSession()):
        out = KnowledgeTools(scope).kag_query(QUESTION)
        recalled = KnowledgeTools(scope).recall("Analytical Engine")
    assert "Charles Babbage designed the Analytical Engine in 1837." in _facts(out)
    assert _facts(recalled)
    assert _reads_from_replica(store)
    store.close()  # the backends exit and flush their statistics

    def counted() -> bool:
        after = cluster.replica_rows(
            "SELECT pg_stat_clear_snapshot(), tup_returned FROM pg_stat_database "
            "WHERE datname = current_database()")[0][1]
        return bool(after > before)
    wait_until(counted)


def test_reads_see_the_replica_and_a_session_its_own_writes(
        cluster: Cluster, store: KnowledgeStore) -> None:
    scope = _seeded(cluster, store)
    writer, reader = ReadSession(), ReadSession()
    cluster.pause()
    try:
        with use_resources(_resources(store)):
            with use_session(writer):
                KnowledgeTools(scope).remember(**NEW_FACT)
                assert NEW_FACT["fact"] in _facts(KnowledgeTools(scope).recall("Sketch"))
                assert not _reads_from_replica(store)  # the replica has not replayed it
            with use_session(reader):  # another session: the (paused) replica serves it
                assert NEW_FACT["fact"] not in _facts(KnowledgeTools(scope).recall("Sketch"))
                assert _reads_from_replica(store)
                # the query graph invoked directly (LangGraph Server, flow.invoke) too
                state = graph.invoke({"query": "What did Ada Lovelace translate?",
                                      "scope": scope}, context={"generate_answer": False})
                assert NEW_FACT["fact"] not in {f["fact"] for f in state["facts"]}
    finally:
        cluster.resume()
    with use_resources(_resources(store)), use_session(writer):
        assert _reads_from_replica(store)  # replayed: back to the replica
        assert NEW_FACT["fact"] in _facts(KnowledgeTools(scope).recall("Sketch"))


@pytest.fixture
def mcp_http(cluster: Cluster, store: KnowledgeStore, tmp_path: Path
             ) -> Iterator[tuple[str, str, str, str]]:
    """`krag mcp --transport http` on the primary, reading from the replica, and two tokens
    (two clients) on a seeded scope: (url, scope, writer's token, reader's token)."""
    scope = _seeded(cluster, store)
    mine, theirs = (tokens.create_token(store, scope, name=f"{scope}-{who}").token
                    for who in ("writer", "reader"))
    cluster.replica.wait_replayed()
    env = krag_env(cluster.app_url, tmp_path) | {
        "KRAG_DATABASE_OWNER_URL": cluster.owner_url,
        "KRAG_DATABASE_READ_URL": cluster.replica_app_url()}
    with mcp_http_server(env, tmp_path) as url:
        yield url, scope, mine, theirs


@pytest.mark.slow
def test_each_mcp_client_reads_its_own_writes_over_http(
        cluster: Cluster, mcp_http: tuple[str, str, str, str]) -> None:
    url, _, mine, theirs = mcp_http

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with _client(url, mine) as writer, _client(url, theirs) as reader:
            await _http_call(reader, "recall", {"query": "Sketch"})  # warm: both served
            await _http_call(writer, "remember", NEW_FACT)
            return (await _http_call(writer, "recall", {"query": "Sketch"}),
                    await _http_call(reader, "recall", {"query": "Sketch"}))

    cluster.pause()
    try:
        seen_by_writer, seen_by_reader = asyncio.run(scenario())
    finally:
        cluster.resume()
    assert NEW_FACT["fact"] in _facts(seen_by_writer)  # the primary: its own write
    assert NEW_FACT["fact"] not in _facts(seen_by_reader)  # the paused replica


def test_a_replica_stopped_mid_run_is_skipped_once(
        cluster: Cluster, store: KnowledgeStore, caplog: pytest.LogCaptureFixture) -> None:
    scope = _seeded(cluster, store)
    tools = KnowledgeTools(scope)
    with use_resources(_resources(store)):
        assert _facts(tools.kag_query(QUESTION)) and _reads_from_replica(store)
        cluster.replica.stop()
        try:
            with caplog.at_level(logging.WARNING, logger="krag.storage"):
                answers = [tools.kag_query(QUESTION) for _ in range(3)]
                assert not _reads_from_replica(store)
        finally:
            cluster.replica.start()
    assert all("Charles Babbage designed the Analytical Engine in 1837." in _facts(a)
               for a in answers)
    warnings = _replica_warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "skipped" in warnings[0] and "\n" not in warnings[0]
    assert store.replica_report()[0]["status"] == "streaming"  # back once it is up


def test_a_lagging_replica_is_skipped(cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    strict = cluster.open_store(max_lag_s=0.5)
    try:
        scope = _seeded(cluster, strict)
        cluster.pause()
        try:
            seed_graph(strict, scope=new_scope())  # WAL the replica does not replay
            wait_until(lambda: strict.replica_report()[0]["status"] == "lagging")
            with caplog.at_level(logging.WARNING, logger="krag.storage"), \
                    use_resources(_resources(strict)):
                out = KnowledgeTools(scope).kag_query(QUESTION)
                assert not _reads_from_replica(strict)
            (state,) = strict.replica_report()
        finally:
            cluster.resume()
    finally:
        strict.close()
    assert _facts(out)
    assert state["replay_paused"] is True and state["lag_s"] > 0.5
    assert "lagging" in str(state["problem"]) and "KRAG_REPLICA_MAX_LAG_S" in str(state["problem"])


def test_row_level_security_holds_on_the_replica(
        cluster: Cluster, store: KnowledgeStore) -> None:
    mine, other = _seeded(cluster, store), _seeded(cluster, store)
    sql = text("SELECT scope, count(*) FROM entities WHERE scope IN (:a, :b) GROUP BY scope")
    with use_access(for_scopes([mine], mine)), read_only():
        assert store.read_replica() is not None
        with store.connect() as conn:
            seen = dict(conn.execute(sql, {"a": mine, "b": other}).all())
    assert seen.keys() == {mine}
    with use_access(NO_ACCESS), read_only(), store.connect() as conn:
        assert conn.execute(sql, {"a": mine, "b": other}).all() == []  # fail closed
    assert store.replicas is not None
    assert bypass_reason(store.replicas.replicas[0].connect_engine()) is None
    with use_resources(_resources(store)):
        with use_access(store.access_for(other)):
            KnowledgeTools(other).remember(**NEW_FACT)  # the other scope's own fact
        cluster.replica.wait_replayed()
        with use_access(store.access_for(mine)), use_session(ReadSession()):
            assert _reads_from_replica(store)
            assert NEW_FACT["fact"] not in _facts(KnowledgeTools(mine).recall("Sketch"))
            out = KnowledgeTools(mine).kag_query("What did Ada Lovelace translate?")
            assert NEW_FACT["fact"] not in _facts(out)
        with use_access(store.access_for(other)), use_session(ReadSession()):
            assert NEW_FACT["fact"] in _facts(KnowledgeTools(other).recall("Sketch"))


def _bad_url_store(cluster: Cluster, url: str, caplog: pytest.LogCaptureFixture
                   ) -> tuple[str, list[dict[str, Any]]]:
    """Open a store reading from ``url`` as the product does; a question still answered."""
    from graph_flows.shared.store import open_store

    settings = Settings(_env_file=None, chat_model="none", database_url=cluster.app_url,
                        database_owner_url=cluster.owner_url, database_read_url=url)
    with caplog.at_level(logging.WARNING, logger="krag.storage"):
        s = open_store(settings)
    try:
        scope = new_scope()
        seed_graph(s, scope=scope)
        with use_resources(_resources(s)):
            assert _facts(KnowledgeTools(scope).kag_query(QUESTION))
            assert not _reads_from_replica(s)
        report = s.replica_report()
    finally:
        s.close()
    (warning,) = _replica_warnings(caplog)
    return warning, report


def test_a_read_url_at_the_primary_is_one_line(cluster: Cluster,
                                                caplog: pytest.LogCaptureFixture) -> None:
    warning, report = _bad_url_store(cluster, cluster.app_url, caplog)
    assert "the primary itself" in warning and "KRAG_DATABASE_READ_URL" in warning
    assert report[0]["status"] == "rejected"


def test_a_read_url_without_pgvector_is_one_line(cluster: Cluster,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    warning, _ = _bad_url_store(cluster, cluster.replica_app_url("postgres"), caplog)
    assert "no pgvector" in warning


def test_a_replica_of_another_cluster_is_one_line(
        cluster: Cluster, db_url: str, caplog: pytest.LogCaptureFixture) -> None:
    from tests.pg_fixtures import open_app_store

    with caplog.at_level(logging.WARNING, logger="krag.storage"):
        s = open_app_store(db_url, read_urls=[cluster.replica_app_url()])
        try:
            (state,) = s.replica_report()
            assert not _reads_from_replica(s)
        finally:
            s.close()
    assert "replicates another database (system identifier" in str(state["problem"])
    assert len(_replica_warnings(caplog)) == 1


@pytest.mark.slow
def test_cli_says_a_bad_read_url_in_one_line_and_still_answers(
        cluster: Cluster, store: KnowledgeStore, tmp_path: Path) -> None:
    scope = _seeded(cluster, store)
    env = krag_env(cluster.app_url, tmp_path) | {
        "KRAG_DATABASE_OWNER_URL": cluster.owner_url, "KRAG_DATABASE_READ_URL": cluster.app_url}
    (tmp_path / "krag").mkdir()
    status = subprocess.run([sys.executable, "-m", "ui.cli.app", "status", "--scope", scope],
                            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert status.returncode == 0, status.stderr
    lines = [ln for ln in status.stderr.splitlines() if "read replica" in ln]
    assert len(lines) == 1 and "skipped" in lines[0] and "the primary itself" in lines[0]
    assert "history" in status.stdout  # the source, read from the primary
    doctor = subprocess.run([sys.executable, "-m", "ui.cli.app", "doctor"], env=env,
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    shown = [ln for ln in doctor.stdout.splitlines() if "skipped (the primary serves)" in ln]
    assert len(shown) == 1 and "read_replicas" in shown[0], doctor.stdout
    assert "read replica" not in doctor.stderr  # said once, in the report


def test_doctor_shows_each_replica(cluster: Cluster, store: KnowledgeStore) -> None:
    from graph_flows.services.doctor import run_doctor

    urls = f"{cluster.replica_app_url()},{cluster.app_url}"
    settings = Settings(_env_file=None, chat_model="none", database_url=cluster.app_url,
                        database_owner_url=cluster.owner_url, database_read_url=urls)
    lines = run_doctor(settings).database["read_replicas"]
    assert isinstance(lines, list) and len(lines) == 2
    assert ": streaming, lag " in lines[0] and "bytes behind" in lines[0]
    assert "rejected, skipped (the primary serves): it is the primary itself" in lines[1]


def test_a_promoted_replica_never_takes_writes(cluster: Cluster, store: KnowledgeStore,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """Runs last: the replica becomes a primary of its own."""
    scope = _seeded(cluster, store)
    assert _reads_from_replica(store)
    cluster.replica.execute("SELECT pg_promote()")
    wait_until(lambda: cluster.replica.execute("SELECT NOT pg_is_in_recovery()"))
    with caplog.at_level(logging.WARNING, logger="krag.storage"), \
            use_resources(_resources(store)), use_session(ReadSession()):
        stored = KnowledgeTools(scope).remember(**NEW_FACT)
        assert NEW_FACT["fact"] in _facts(KnowledgeTools(scope).recall("Sketch"))
        assert not _reads_from_replica(store)
    sql = "SELECT count(*) FROM relations WHERE id = %(id)s"
    assert cluster.primary_rows(sql, id=stored["fact_id"]) == [(1,)]
    assert cluster.replica_rows(sql, id=stored["fact_id"]) == [(0,)]
    (warning,) = _replica_warnings(caplog)
    assert "promoted" in warning
    assert store.replicas is not None  # and its connections refuse a write even if asked
    with pytest.raises(DBAPIError, match="read-only transaction"), \
            store.replicas.replicas[0].connect_engine().begin() as conn:
        conn.execute(text("CREATE TABLE stray (x int)"))


def test_read_urls_setting_is_checked_in_one_line() -> None:
    from graph_flows.shared.settings import SettingsError, load_settings
    from storage.replicas import split_urls

    two = load_settings(_env_file=None, database_read_url=" postgresql://a@h1/k , "
                        "postgres://b:pw@h2/k ,")
    assert split_urls(two.database_read_url) == ["postgresql://a@h1/k", "postgres://b:pw@h2/k"]
    assert two.masked()["database_read_url"] == "postgresql://a@h1/k,postgres://b:***@h2/k"
    with pytest.raises(SettingsError) as bad:
        load_settings(_env_file=None, database_read_url="postgresql://a@h1/k,mysql://h2/k")
    assert str(bad.value).startswith("KRAG_DATABASE_READ_URL: must be postgresql:// URLs")
    assert "\n" not in str(bad.value)


def test_lag_counts_from_the_first_position_the_replica_has_not_replayed() -> None:
    from storage.replica_checks import LagClock

    clock = LagClock()
    assert clock.lag(100, 100, now=0.0) == 0.0  # caught up
    assert clock.lag(200, 100, now=1.0) == 0.0  # behind since now
    assert clock.lag(300, 150, now=4.0) == 3.0  # 200 (seen at 1.0) still not replayed
    assert clock.lag(300, 250, now=5.0) == 1.0  # 300 seen at 4.0 is the oldest left
    assert clock.lag(300, 300, now=6.0) == 0.0
