"""PostgreSQL enforces the scopes (row-level security, migration 0014): statements run through
the application's connection see and write only what the request's access allows, whatever
their own WHERE clauses say (real PostgreSQL, the application's role like the product)."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, ProgrammingError

from graph_flows import query_flow
from graph_flows.services import explore
from graph_flows.services.errors import RequestError
from graph_flows.services.memory import KnowledgeTools
from graph_flows.shared.resources import NO_LLM, Resources, use_resources
from graph_flows.shared.settings import Settings
from storage import DocumentIn, EntityIn, InvalidInputError, KnowledgeStore, RelationIn, ids
from storage.access import WHOLE_STORE, Access, use_access
from storage.scopes import set_parent
from tests.pg_fixtures import TEST_DIM, open_app_store, url_rows
from tests.query_fixtures import _EMBEDDER, seed_graph

SCOPED_TABLES = ("documents", "chunks", "extraction_status", "entities", "entity_provenance",
                 "relations", "relation_provenance")
SECRET = ("Zorblax Quantum Vault", "Quinterra Labs")  # team-b's entities


def _seed_team_b(store: KnowledgeStore) -> tuple[list[str], str]:
    """team-b's own graph: two entities and one fact; their ids and the fact's id."""
    fact = f"{SECRET[1]} built the {SECRET[0]}."
    doc = DocumentIn(scope="team-b", source="secret", uri="secret.md",
                     content_hash=ids.content_hash(fact), title="secret")
    (chunk,) = store.sync_document(doc, [fact]).new_chunk_ids
    ents = [EntityIn(n, "concept", "team-b", f"{n} is team-b's secret.", 0.9,
                     _EMBEDDER.embed_query(n), (chunk,)) for n in SECRET]
    rel = RelationIn(ents[1].id, "BUILT", ents[0].id, fact, "team-b", 0.9,
                     _EMBEDDER.embed_query(fact), chunk_ids=(chunk,))
    store.write_graph(ents, [rel])
    return [e.id for e in ents], rel.id


@pytest.fixture
def tenants(store: KnowledgeStore) -> dict[str, Any]:
    """platform > realm > team-a | team-b; the history graph in team-a, realm and platform,
    team-b's secret graph (written with whole-store access, as an admin load would)."""
    with store.transaction() as conn:
        set_parent(conn, "realm", "platform")
        set_parent(conn, "team-a", "realm")
        set_parent(conn, "team-b", "realm")
    for scope in ("team-a", "realm", "platform"):
        seed_graph(store, scope=scope, source=f"src-{scope}")
    b_ids, b_fact = _seed_team_b(store)
    return {"store": store, "b_entities": b_ids, "b_fact": b_fact}


def _scopes(store: KnowledgeStore, table: str) -> set[str]:
    with store.connect() as conn:  # no WHERE at all: only the policies decide
        return set(conn.execute(text(f"SELECT scope FROM {table}")).scalars())


def test_application_role_is_bound_by_the_policies(store: KnowledgeStore) -> None:
    assert store.rls_bypass() is None
    with store.connect() as conn:
        role = conn.execute(text(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")).one()
    assert role == (False, False)


def test_statement_without_scope_filter_returns_only_the_request_scopes(tenants) -> None:
    store = tenants["store"]
    for table in SCOPED_TABLES:
        assert "team-b" in _scopes(store, table), table  # whole store: every scope's rows
    with use_access(store.access_for("team-a")):
        for table in SCOPED_TABLES:
            assert _scopes(store, table) == {"team-a", "realm", "platform"}, table
        with store.connect() as conn:
            names = set(conn.execute(text("SELECT name FROM entities")).scalars())
            facts = list(conn.execute(text("SELECT fact FROM relations")).scalars())
        assert not names & set(SECRET)
        assert not any(SECRET[0] in f for f in facts)
    with use_access(store.access_for("realm")):  # a parent never sees its children
        assert _scopes(store, "entities") == {"realm", "platform"}


def test_no_access_installed_sees_nothing(tenants) -> None:
    store, seen = tenants["store"], {}

    def bare() -> None:  # a new thread: an empty context, no access installed
        for table in SCOPED_TABLES:
            seen[table] = _scopes(store, table)
        try:
            with store.transaction() as conn:
                conn.execute(text("INSERT INTO documents (id, scope, source, uri, content_hash)"
                                  " VALUES ('doc_x', 'team-a', 's', 'u', 'h')"))
        except ProgrammingError as exc:
            seen["insert"] = str(exc.orig)

    worker = threading.Thread(target=bare)
    worker.start()
    worker.join(30)
    assert {t: seen[t] for t in SCOPED_TABLES} == {t: set() for t in SCOPED_TABLES}
    assert "row-level security" in seen["insert"]


def test_write_outside_the_write_scope_fails_and_leaves_nothing(tenants) -> None:
    store = tenants["store"]
    before = {s: store.counts(s) for s in ("team-a", "team-b", "realm")}
    with use_access(store.access_for("team-a")):
        for scope in ("team-b", "realm"):  # a sibling, and an ancestor (readable only)
            with pytest.raises(ProgrammingError, match="row-level security"), \
                    store.transaction() as conn:
                conn.execute(text(
                    "INSERT INTO documents (id, scope, source, uri, content_hash) "
                    "VALUES (:i, :s, 'x', 'x.md', 'h')"), {"i": f"doc_{scope}", "s": scope})
            with pytest.raises(ProgrammingError, match="row-level security"):
                store.write_graph([EntityIn("Intruder", "concept", scope, "", 0.9, None)], [])
        with store.transaction() as conn:  # other scopes' rows are not there to change
            touched = conn.execute(text(
                "UPDATE entities SET summary = 'overwritten' WHERE scope <> 'team-a'")).rowcount
            gone = conn.execute(text("DELETE FROM relations WHERE scope <> 'team-a'")).rowcount
        assert (touched, gone) == (0, 0)
        with pytest.raises(ProgrammingError, match="row-level security"), \
                store.transaction() as conn:  # moving a row out of the scope
            conn.execute(text("UPDATE entities SET scope = 'team-b' WHERE scope = 'team-a'"))
    assert {s: store.counts(s) for s in before} == before
    with store.connect() as conn:
        assert conn.execute(text(
            "SELECT count(*) FROM entities WHERE summary = 'overwritten' OR name = 'Intruder'"
        )).scalar() == 0


def test_a_statement_asking_for_another_scope_gets_nothing(tenants) -> None:
    """The case the policies exist for: a statement whose own filter names the wrong scope."""
    from storage import search

    store, b_ids = tenants["store"], tenants["b_entities"]
    with use_access(store.access_for("team-a")), store.connect() as conn:
        assert search.entities_by_ids(conn, ["team-b"], b_ids) == []
        assert search.entity_exact(conn, ["team-b"], [n.lower() for n in SECRET]) == []
        assert conn.execute(text("SELECT count(*) FROM chunks c JOIN documents d "
                                 "ON d.id = c.document_id WHERE d.scope = 'team-b'")).scalar() == 0


@pytest.fixture
def team_resources(tenants) -> Any:
    settings = Settings(_env_file=None, chat_model="none", database_url=None, scope="team-a")
    res = Resources(settings=settings, store=tenants["store"], embeddings=_EMBEDDER,
                    chat_override=NO_LLM)
    with use_resources(res):
        yield res


def _found(out: dict[str, Any]) -> dict[str, Any]:
    """What a tool returned from the store (not its echo of the question)."""
    return {k: out[k] for k in ("entities", "relations", "definitions", "facts_text",
                                "passages", "facts") if k in out}


def _mentions_b(value: Any, b_ids: list[str], b_fact: str) -> bool:
    shown = repr(value)
    return any(s in shown for s in (*SECRET, *b_ids, b_fact, "team-b"))


def test_team_a_tools_never_read_team_b_through_hints_or_ids(tenants, team_resources) -> None:
    """The MCP tools' service calls for team-a (a token bound to team-a calls exactly these),
    given team-b's entity names as hints, in the question, and team-b's ids."""
    b_ids, b_fact = tenants["b_entities"], tenants["b_fact"]
    tools = KnowledgeTools("team-a")
    with use_access(Access((), None)):  # nothing installed around the request: its own only
        found = tools.kag_query(f"What did {SECRET[1]} build? {SECRET[0]}",
                                entities=list(SECRET))
        assert not _mentions_b(_found(found), b_ids, b_fact)
        recalled = tools.recall(f"{SECRET[1]} {SECRET[0]}")
        assert not _mentions_b(_found(recalled), b_ids, b_fact)
        with pytest.raises(RequestError, match="no fact"):
            tools.correct(b_fact, "team-a may not touch it")
        assert explore.neighbourhood(tenants["store"], "team-a", b_ids[0]) == {}
        assert not _mentions_b(explore.find_entities(tenants["store"], "team-a", SECRET[0]),
                               b_ids, b_fact)
        seen = tools.kag_query("Who designed the Analytical Engine?")  # its own data: found
        assert any("Babbage" in e["name"] for e in seen["entities"])
    with use_access(WHOLE_STORE), tenants["store"].connect() as conn:  # untouched
        assert conn.execute(text("SELECT invalid_at FROM relations WHERE id = :i"),
                            {"i": b_fact}).scalar() is None


def test_query_graph_run_directly_gets_its_state_scopes_access(tenants, team_resources) -> None:
    """LangGraph Studio / flow.invoke: no service around the run, the node installs the
    access of the state's scope (and only that)."""
    out: dict[str, Any] = {}

    def studio() -> None:  # an empty context, as a server's request thread
        with use_resources(team_resources):
            out["state"] = query_flow.invoke(
                {"query": f"{SECRET[0]} and the Analytical Engine", "scope": "team-a",
                 "entity_hints": list(SECRET)}, context={"generate_answer": False})

    worker = threading.Thread(target=studio)
    worker.start()
    worker.join(60)
    names = {e["name"] for e in out["state"]["entities"]}
    assert names and not names & set(SECRET)
    assert not _mentions_b(out["state"].get("facts", []), tenants["b_entities"],
                           tenants["b_fact"])


@pytest.mark.parametrize("bad", ["a'; RESET ROLE; --", "*", "", "team-a,team-b",
                                 "x' OR '1'='1", "a b"])
def test_bad_scope_names_are_refused_and_write_nothing(tenants, team_resources,
                                                       bad: str) -> None:
    store = tenants["store"]
    before = store.counts()
    with pytest.raises(InvalidInputError, match="invalid scope name") as err:
        store.access_for(bad)
    assert "\n" not in str(err.value)
    with pytest.raises(InvalidInputError, match="invalid scope name"):
        Access(("team-a", bad), "team-a")
    if bad:  # an empty scope argument means the configured scope (neutralised)
        with pytest.raises((InvalidInputError, RequestError), match="invalid scope name"):
            KnowledgeTools(bad).remember("Ada", "KNEW", "Charles", "Ada knew Charles.")
        with pytest.raises((InvalidInputError, RequestError), match="invalid scope name"):
            KnowledgeTools(bad).kag_query("Who is Ada?")
    assert store.counts() == before


def _upgrade_to(url: str, revision: str) -> None:
    """Migrate the database at ``url`` to ``revision`` (as the superuser, as before 0014)."""
    from alembic import command

    from storage import migrate
    from storage.engine import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            cfg = migrate._config(TEST_DIM)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
            conn.commit()
    finally:
        engine.dispose()


def test_store_from_before_0014_upgrades_and_is_enforced(empty_db_url: str) -> None:
    """An embedded store created by the superuser at 0011 (the old layout): its tables are
    handed to the owner, 0014 fills the new scope columns, and the policies hold."""
    _upgrade_to(empty_db_url, "0011")
    seed = [f"INSERT INTO documents (id, scope, source, uri, content_hash) VALUES "
            f"('doc_{s}', '{s}', 'src', 'u.md', 'h'); "
            f"INSERT INTO chunks (id, document_id, ordinal, text, content_hash) VALUES "
            f"('chk_{s}', 'doc_{s}', 0, 'text of {s}', 'h'); "
            f"INSERT INTO extraction_status (chunk_id) VALUES ('chk_{s}'); "
            f"INSERT INTO entities (id, scope, name, normalized_name, type) VALUES "
            f"('ent_{s}', '{s}', 'Name {s}', 'name {s}', 'concept'); "
            f"INSERT INTO entity_provenance (entity_id, chunk_id) VALUES ('ent_{s}', 'chk_{s}')"
            for s in ("old-a", "old-b")]
    with psycopg.connect(empty_db_url) as conn:  # committed on leaving the block
        for statement in seed:
            conn.execute(statement)
    store = open_app_store(empty_db_url)
    try:
        assert store.rls_bypass() is None
        owners = {r[0] for r in url_rows(
            empty_db_url, "SELECT DISTINCT pg_get_userbyid(relowner) FROM pg_class "
            "WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'")}
        assert owners == {"krag_owner"}
        with use_access(store.access_for("old-a")):
            for table in ("documents", "chunks", "extraction_status", "entities",
                          "entity_provenance"):
                assert _scopes(store, table) == {"old-a"}, table
        with use_access(store.access_for("old-a")):
            with store.transaction() as conn:  # a new chunk: the trigger fills its scope
                conn.execute(text(
                    "INSERT INTO chunks (id, document_id, ordinal, text, content_hash) "
                    "VALUES ('chk_a2', 'doc_old-a', 1, 'more', 'h2')"))
            with pytest.raises(DBAPIError), store.transaction() as conn:  # old-b's entity
                conn.execute(text("INSERT INTO entity_provenance (entity_id, chunk_id) "
                                  "VALUES ('ent_old-b', 'chk_old-a')"))
        assert url_rows(empty_db_url, "SELECT scope FROM chunks WHERE id = 'chk_a2'") == [
            ("old-a",)]
        assert url_rows(empty_db_url, "SELECT count(*) FROM entity_provenance") == [(2,)]
    finally:
        store.close()


def test_doctor_says_in_one_line_whether_the_policies_bind(db_url: str) -> None:
    from graph_flows.services.doctor import run_doctor
    from storage.roles import prepare_embedded

    app_url, owner_url = prepare_embedded(db_url)
    bound = run_doctor(Settings(_env_file=None, chat_model="none", database_url=app_url,
                                database_owner_url=owner_url))
    assert bound.database["row_level_security"].startswith("enforced")
    superuser = run_doctor(Settings(_env_file=None, chat_model="none", database_url=db_url))
    line = superuser.database["row_level_security"]
    assert line.startswith("NOT enforced: role ") and "is a superuser" in line
    assert "\n" not in line and "KRAG_DATABASE_OWNER_URL" in line
