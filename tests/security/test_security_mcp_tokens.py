"""MCP over HTTP needs a bearer token bound to a scope (issue 23.2): `krag token` on the real
PostgreSQL, the verifier's reasons, the serving policy, and a real `krag mcp --transport
http` subprocess called with raw HTTP and with the SDK's own client."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from graph_flows.services import scopes as scope_service
from graph_flows.services import tokens
from storage import DocumentIn, EntityIn, KnowledgeStore, RelationIn, ids
from storage.access import WHOLE_STORE, use_access
from tests.pg_fixtures import execute, migrated_database, open_app_store, rows
from tests.procs import free_port, krag_env, mcp_http_server, run_cli
from tests.query_fixtures import _EMBEDDER, seed_graph
from ui.hosts import is_loopback, ui_exposure_warning
from ui.mcp import build_server
from ui.mcp_auth import StoreTokenVerifier, auth_settings, decide_http

ROOT = Path(__file__).resolve().parents[2]
HOSTILE_SCOPES = ["a'; RESET ROLE; --", "*", "", "team a", "x" * 101, "a\nb", "%"]


@pytest.fixture
def cli_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """`krag` in this process against the test database."""
    for key in [k for k in os.environ if k.startswith("KRAG_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)  # no stray .env
    for key, value in krag_env(db_url, tmp_path).items():
        if key.startswith("KRAG_"):
            monkeypatch.setenv(key, value)
    return db_url


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# -- krag token: create, list, revoke -----------------------------------------------------

def test_token_cli_create_list_revoke_stores_only_a_hash(
        cli_env: str, store: KnowledgeStore, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "token", "create", "--scope", "team-a", "--name", "ci",
                             "--read-only", "--expires", "30d", "--json")
    assert code == 0, err
    made = json.loads(out)
    secret = made["token"]
    assert secret.startswith("krag_") and len(secret) == tokens.TOKEN_LENGTH
    assert (made["name"], made["scope"], made["read_only"], made["status"]) == (
        "ci", "team-a", True, "active")
    assert made["expires_at"] is not None

    code, out, err = run_cli(capsys, "token", "create", "--scope", "team-a")
    assert code == 0, err
    plain = out.strip()
    assert plain.startswith("krag_") and "\n" not in plain and plain != secret
    assert "shown once" in err

    stored = rows(store, "SELECT * FROM api_tokens ORDER BY name")
    assert len(stored) == 2
    dump = repr([tuple(r) for r in stored])
    assert secret not in dump and plain not in dump  # no plaintext anywhere in the rows
    by_name = {r.name: r for r in stored}
    assert by_name["ci"].token_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert rows(store, "SELECT name FROM scopes WHERE name = 'team-a'")  # declared

    code, out, err = run_cli(capsys, "token", "create", "--scope", "team-b", "--name", "ci")
    assert code == 2 and "already exists" in _one_error_line(err)
    assert len(rows(store, "SELECT 1 FROM api_tokens")) == 2
    assert not rows(store, "SELECT 1 FROM api_tokens WHERE scope = 'team-b'")

    code, out, err = run_cli(capsys, "token", "list", "--json")
    assert code == 0, err
    listed = json.loads(out)
    assert [t["name"] for t in listed][0] == "ci" and len(listed) == 2
    assert all("token" not in t and "token_hash" not in t for t in listed)
    assert secret not in out and by_name["ci"].token_hash not in out

    code, out, err = run_cli(capsys, "token", "revoke", "ci", "--json")
    assert code == 0 and json.loads(out)["status"] == "revoked"
    code, out, _ = run_cli(capsys, "token", "list")
    assert "ci  scope=team-a  read-only  revoked" in out

    code, out, err = run_cli(capsys, "token", "revoke", "nobody")
    assert code == 2 and "no token named 'nobody'" in _one_error_line(err)


@pytest.mark.parametrize("scope", HOSTILE_SCOPES)
def test_hostile_scope_names_are_refused_and_write_nothing(
        scope: str, cli_env: str, store: KnowledgeStore,
        capsys: pytest.CaptureFixture[str]) -> None:
    before = rows(store, "SELECT count(*) FROM scopes")[0][0]
    code, out, err = run_cli(capsys, "token", "create", "--scope", scope, "--json")
    assert code == 2 and out == ""
    assert "invalid scope name" in _one_error_line(err)
    assert rows(store, "SELECT count(*) FROM api_tokens")[0][0] == 0
    assert rows(store, "SELECT count(*) FROM scopes")[0][0] == before
    assert rows(store, "SELECT 1 FROM pg_roles WHERE rolname = current_user")  # role intact


@pytest.mark.parametrize(("args", "words"), [
    (["--expires", "soon"], "--expires must be a duration"),
    (["--expires", "-5d"], "--expires must be a duration"),
    (["--expires", "2001-01-01"], "is not in the future"),
    (["--expires", "99999d"], "more than 3650 days"),
    (["--name", "two words"], "invalid --name"),
    (["--name", "n" * 65], "invalid --name"),
])
def test_bad_options_are_one_line_errors(args: list[str], words: str, cli_env: str,
                                         store: KnowledgeStore,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "token", "create", "--scope", "team-a", *args)
    assert code == 2 and words in _one_error_line(err) and out == ""
    assert rows(store, "SELECT count(*) FROM api_tokens")[0][0] == 0


# -- the verifier's reasons -----------------------------------------------------------------

def test_verify_token_says_why(store: KnowledgeStore) -> None:
    ok = tokens.create_token(store, "team-a", name="ok")
    assert tokens.verify_token(store, ok.token).row.scope == "team-a"  # type: ignore[union-attr]
    assert rows(store, "SELECT last_used_at FROM api_tokens WHERE name = 'ok'")[0][0]

    def reason(token: str) -> str:
        verdict = tokens.verify_token(store, token)
        assert verdict.row is None and "\n" not in verdict.reason
        assert token[:20] not in verdict.reason or not token  # the token is never echoed
        return verdict.reason

    assert "unknown bearer token" in reason("krag_" + "A" * 43)
    assert "malformed bearer token" in reason("hunter2")
    assert "malformed bearer token" in reason("")
    assert "malformed bearer token" in reason("krag_a'; RESET ROLE; --")
    assert "too long" in reason("krag_" + "a" * 5000)

    old = tokens.create_token(store, "team-a", name="old", expires="1m")
    execute(store, "UPDATE api_tokens SET expires_at = now() - interval '1 hour' "
                   "WHERE name = 'old'")
    assert "token 'old' expired at" in reason(old.token)
    gone = tokens.create_token(store, "team-a", name="gone")
    tokens.revoke_token(store, "gone")
    assert "token 'gone' was revoked" in reason(gone.token)
    # A deleted scope (its row removed): the token stops working.
    lost = tokens.create_token(store, "team-x", name="lost")
    execute(store, "DELETE FROM scopes WHERE name = 'team-x'")
    assert "scope 'team-x' of token 'lost' no longer exists" in reason(lost.token)
    assert {t.name: tokens.status(t) for t in tokens.list_tokens(store)} == {
        "ok": "active", "old": "expired", "gone": "revoked", "lost": "scope gone"}
    assert tokens.has_active_tokens(store)
    tokens.revoke_token(store, "ok")
    assert not tokens.has_active_tokens(store)


# -- the serving policy -----------------------------------------------------------------------

def test_http_policy_and_loopback() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.8.9.1"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.5", "example.org", ""))
    public = decide_http("0.0.0.0", 8765, active_tokens=False)
    assert not public.require_tokens and "krag token create --scope S" in public.refusal
    assert "\n" not in public.refusal
    local = decide_http("127.0.0.1", 8765, active_tokens=False)
    assert not local.require_tokens and not local.refusal and "open to every" in local.notice
    for host in ("127.0.0.1", "0.0.0.0"):
        assert decide_http(host, 8765, active_tokens=True).require_tokens
        assert not decide_http(host, 8765, active_tokens=True).refusal


def test_ui_beyond_loopback_warns_about_the_missing_login() -> None:
    assert ui_exposure_warning("127.0.0.1") == "" and ui_exposure_warning("localhost") == ""
    warning = ui_exposure_warning("0.0.0.0")
    assert "no login" in warning and "proxy" in warning and "\n" not in warning


@pytest.mark.parametrize(("host", "warned"), [("0.0.0.0", True), ("127.0.0.1", False)])
def test_krag_ui_beyond_loopback_prints_the_warning_first(
        host: str, warned: bool, cli_env: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # A setting Streamlit's launch would need is bad, so the command stops (one error line)
    # right after the warning, before anything starts or binds.
    monkeypatch.setenv("KRAG_DATABASE_URL", "mysql://nowhere/krag")
    code, out, err = run_cli(capsys, "ui", "--host", host, "--port", str(free_port()))
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and lines[-1].startswith("error: ") and "KRAG_DATABASE_URL" in lines[-1]
    assert len(lines) == (2 if warned else 1)
    if warned:
        assert lines[0].startswith("warning: the UI has no login") and "proxy" in lines[0]


def test_a_server_requiring_tokens_never_falls_back_to_its_own_scope(
        store: KnowledgeStore) -> None:
    server = build_server("team-b", token_verifier=StoreTokenVerifier(store),
                          auth=auth_settings())

    async def scenario() -> list[str]:
        async with Client(server) as client:  # in-process: no HTTP, so no token at all
            return [await _error(client, "recall", {"query": "Ada"}),
                    await _error(client, "remember", {"subject": "A", "predicate": "uses",
                                                      "object": "B", "fact": "A uses B."})]

    for text in asyncio.run(scenario()):
        assert "refused: no verified bearer token on this request" in text
    assert rows(store, "SELECT count(*) FROM relations")[0][0] == 0


@pytest.mark.slow
def test_non_loopback_without_tokens_is_refused(store: KnowledgeStore, db_url: str,
                                                tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ui.cli.app", "mcp", "--transport", "http", "--host",
         "0.0.0.0", "--port", str(free_port())], env=krag_env(db_url, tmp_path), cwd=tmp_path,
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    line = _one_error_line(done.stderr)
    assert "refusing to serve MCP on 0.0.0.0" in line and "krag token create --scope" in line


# -- a real server over streamable HTTP -------------------------------------------------------

def _two_teams(store: KnowledgeStore) -> None:
    """org (the graph) > team-a (nothing of its own); team-b with its own copy."""
    seed_graph(store, scope="org", source="org-history")
    seed_graph(store, scope="team-b", source="b-history")
    _team_b_only(store)
    scope_service.set_parent(store, "team-a", "org")


B_ONLY = "Grace Hopper created the COBOL language at Remington Rand."


def _team_b_only(store: KnowledgeStore) -> None:
    """A fact, its entities and its passage that only team-b holds."""
    doc = DocumentIn(scope="team-b", source="b-only", uri="hopper.md",
                     content_hash=ids.content_hash(B_ONLY), title="hopper")
    (chunk,) = store.sync_document(doc, [B_ONLY]).new_chunk_ids
    hopper, cobol = (EntityIn(n, t, "team-b", s, 0.9, _EMBEDDER.embed_query(n), (chunk,))
                     for n, t, s in (("Grace Hopper", "person", "A computer scientist."),
                                     ("COBOL", "technology", "A programming language.")))
    store.write_graph([hopper, cobol], [RelationIn(
        hopper.id, "created", cobol.id, B_ONLY, "team-b", 0.9, _EMBEDDER.embed_query(B_ONLY),
        chunk_ids=(chunk,))])


@pytest.fixture(scope="module")
def served(pg_server_url: str, pg_template: str, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[str, KnowledgeStore]]:
    """One `krag mcp --transport http --scope team-b` (with a token in the database) for
    this module's HTTP tests, on one database of :func:`_two_teams`: (its URL, the store).
    Each test makes tokens of its own names and writes only in team-a (one test, which
    first checks team-a holds nothing of its own)."""
    tmp = tmp_path_factory.mktemp("mcp-http")
    with migrated_database(pg_server_url, pg_template) as db_url:
        store = open_app_store(db_url)
        try:
            with use_access(WHOLE_STORE):
                _two_teams(store)
                tokens.create_token(store, "team-b", name="bootstrap")
            with mcp_http_server(krag_env(db_url, tmp), tmp, "--scope", "team-b") as url:
                yield url, store
        finally:
            store.close()


@pytest.fixture
def server(served: tuple[str, KnowledgeStore]) -> str:
    return served[0]


@pytest.fixture
def two_teams(served: tuple[str, KnowledgeStore]) -> KnowledgeStore:
    return served[1]


_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"}}}


def _post(url: str, headers: Any) -> httpx.Response:
    base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx.Client(timeout=30) as client:
        return client.post(url, json=_INIT, headers=httpx.Headers([*base.items(), *headers]))


def _refused(url: str, headers: Any) -> str:
    """The one-line reason of a 401 (WWW-Authenticate and the body say the same)."""
    res = _post(url, headers)
    assert res.status_code == 401, (res.status_code, res.text[:200])
    www = res.headers["www-authenticate"]
    assert www.startswith('Bearer error="invalid_token", error_description="')
    reason = res.json()["error_description"]
    assert reason in www and "\n" not in reason and len(reason) <= 300
    return reason


def _client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60)


async def _call(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def _error(client: Client, name: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(name, args)
    assert result.is_error, result.structured_content
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert "\n" not in text
    return text


@pytest.mark.slow
def test_http_refuses_requests_without_a_good_token(server: str,
                                                    two_teams: KnowledgeStore) -> None:
    url = server
    valid = tokens.create_token(two_teams, "team-a", name="valid").token
    assert "missing Authorization header" in _refused(url, [])
    assert "malformed Authorization header" in _refused(url, [("Authorization", "Basic YTpi")])
    assert "malformed Authorization header" in _refused(url, [("Authorization", valid)])
    assert "malformed bearer token" in _refused(url, [("Authorization", "Bearer not!a token")])
    assert "more than one Authorization header" in _refused(
        url, [("Authorization", f"Bearer {valid}"), ("Authorization", "Bearer x")])
    long = _refused(url, [("Authorization", "Bearer krag_" + "a" * 8000)])
    assert "too long (8005 characters" in long
    huge = _refused(url, [("Authorization", "Bearer krag_" + "a" * 1_000_000)])  # not a 500
    assert "too long (1000005 characters" in huge
    wrong = "krag_" + "B" * 43
    assert "unknown bearer token" in _refused(url, [("Authorization", f"Bearer {wrong}")])
    hostile = "krag_a'; RESET ROLE; --"
    assert "malformed bearer token" in _refused(url, [("Authorization", f"Bearer {hostile}")])

    old = tokens.create_token(two_teams, "team-a", name="old", expires="1m").token
    execute(two_teams, "UPDATE api_tokens SET expires_at = now() - interval '1 minute' "
                       "WHERE name = 'old'")
    assert "token 'old' expired" in _refused(url, [("Authorization", f"Bearer {old}")])

    # Accepted, then revoked while the server runs: refused from the next request on.
    assert _post(url, [("Authorization", f"Bearer {valid}")]).status_code == 200
    tokens.revoke_token(two_teams, "valid")
    assert "token 'valid' was revoked" in _refused(url, [("Authorization", f"Bearer {valid}")])

    lost = tokens.create_token(two_teams, "team-x", name="lost").token
    execute(two_teams, "DELETE FROM scopes WHERE name = 'team-x'")
    assert "no longer exists" in _refused(url, [("Authorization", f"Bearer {lost}")])
    for secret in (valid, old, lost):  # never echoed
        assert secret not in _post(url, [("Authorization", f"Bearer {secret}")]).text


@pytest.mark.slow
def test_token_scope_wins_over_server_scope_and_arguments(
        server: str, two_teams: KnowledgeStore) -> None:
    team_b_fact = rows(two_teams, "SELECT id FROM relations WHERE scope = 'team-b' LIMIT 1")[0][0]
    writer = tokens.create_token(two_teams, "team-a", name="writer").token

    async def scenario() -> dict[str, Any]:
        async with _client(server, writer) as client:
            got = await _call(client, "kag_query", {"query": "Ada Lovelace",
                                                    "entities": ["Ada Lovelace"],
                                                    "max_hops": 3})
            assert got["scope"] == "team-a" and got["relations"]  # org's, as an ancestor
            # recall reads the own scope only (as over stdio): team-b's copy never shows
            recalled = await _call(client, "recall", {"query": "Ada Lovelace"})
            assert recalled["scope"] == "team-a" and recalled["facts"] == []
            assert "no source 'b-history' in scope 'team-a'" in await _error(
                client, "kag_query", {"query": "Ada", "source_id": "b-history"})
            assert "no fact" in await _error(client, "correct", {"fact_id": team_b_fact})
            # team-b's own names as the question and as entity hints: nothing of team-b
            for recipe in ("ppr", "split"):
                hopper = await _call(client, "kag_query", {
                    "query": "What did Grace Hopper create?", "recipe": recipe,
                    "entities": ["Grace Hopper", "COBOL", team_b_fact]})
                assert "Hopper" not in json.dumps(hopper["relations"] + hopper["entities"]
                                                  + hopper.get("passages", []))
                assert "COBOL" not in hopper["context"], hopper["context"]
            stored = await _call(client, "remember", {
                "subject": "Team A", "predicate": "uses", "object": "PostgreSQL",
                "fact": "Team A uses PostgreSQL."})
            assert stored["scope"] == "team-a"
            mine = await _call(client, "recall", {"query": "Team A PostgreSQL"})
            assert [f["id"] for f in mine["facts"]] == [stored["fact_id"]]
            return {"query": got, "recall": mine, "stored": stored}

    async def team_b_sees_it() -> dict[str, Any]:  # the same call finds it for team-b
        async with _client(server, tokens.create_token(two_teams, "team-b").token) as client:
            return await _call(client, "kag_query", {
                "query": "What did Grace Hopper create?", "recipe": "split",
                "entities": ["Grace Hopper", "COBOL"]})

    assert "COBOL" in asyncio.run(team_b_sees_it())["context"]
    out = asyncio.run(scenario())
    seen = [r["id"] for r in out["query"]["relations"]] + [
        f["id"] for f in out["recall"]["facts"]]
    scopes_seen = {r[0] for r in rows(two_teams, "SELECT DISTINCT scope FROM relations "
                                                 "WHERE id = ANY(:ids)", ids=seen)}
    assert scopes_seen == {"org", "team-a"}  # never team-b, whatever --scope says
    assert rows(two_teams, "SELECT scope FROM relations WHERE id = :i",
                i=out["stored"]["fact_id"])[0][0] == "team-a"
    assert rows(two_teams, "SELECT count(*) FROM relations WHERE scope = 'team-b' "
                           "AND invalid_at IS NOT NULL")[0][0] == 0


@pytest.mark.slow
def test_read_only_token_cannot_write(server: str, two_teams: KnowledgeStore) -> None:
    reader = tokens.create_token(two_teams, "team-a", name="reader", read_only=True).token
    org_fact = rows(two_teams, "SELECT id FROM relations WHERE scope = 'org' LIMIT 1")[0][0]
    counts = "SELECT (SELECT count(*) FROM relations), (SELECT count(*) FROM entities), " \
             "(SELECT count(*) FROM documents), (SELECT count(*) FROM relations " \
             "WHERE invalid_at IS NOT NULL)"
    before = rows(two_teams, counts)

    async def scenario() -> tuple[str, str]:
        async with _client(server, reader) as client:
            assert (await _call(client, "recall", {"query": "Ada"}))["scope"] == "team-a"
            return (await _error(client, "remember", {
                        "subject": "Team A", "predicate": "uses", "object": "PostgreSQL",
                        "fact": "Team A uses PostgreSQL."}),
                    await _error(client, "correct", {"fact_id": org_fact,
                                                     "replacement": "Ada did not."}))

    remember, correct = asyncio.run(scenario())
    assert "remember refused: this token is read-only" in remember
    assert "correct refused: this token is read-only" in correct
    assert rows(two_teams, counts) == before
