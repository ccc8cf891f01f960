"""Control characters in a query, an entity hint, a scope, a date, a path, a file name or a
fact are refused with one line on every surface (the query graph's flow.invoke, `krag ask`
and `krag ingest`, MCP tools, the UI), nothing is searched or stored, and a server logs the
refusal as one warning line without a traceback."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
import streamlit as st
from mcp import Client
from streamlit.testing.v1 import AppTest

from graph_flows import query_flow
from graph_flows.query.analyze import InvalidQueryError
from graph_flows.services.errors import log_failure
from graph_flows.shared.resources import Resources
from graph_flows.shared.settings import load_settings
from tests.pg_fixtures import rows
from tests.procs import run_cli
from tests.ui.test_as_of_formats import _surface_env
from ui.mcp import build_server
from ui.web import backend

QUESTION = "What did Ada Lovelace write?"


def said(what: str, code: int, at: int) -> str:
    return (f"{what} contains a control character (U+{code:04X} at character {at}); remove it "
            "and try again.")


def _tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Records logged with a traceback, or at error level (what bad input must not cause)."""
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records
            if r.exc_info or r.levelno >= logging.ERROR]


@pytest.mark.parametrize(("inputs", "message"), [
    ({"query": "What did Ada\x00 write?"}, said("query", 0, 13)),
    ({"query": "Ada\x7f?"}, said("query", 0x7F, 4)),
    ({"query": QUESTION, "entity_hints": ["Ada", "Love\x00lace"]}, said("entity hint 2", 0, 5)),
    ({"query": QUESTION, "entity_hints": ["\x85Ada"]}, said("entity hint 1", 0x85, 1)),
    ({"query": QUESTION, "scope": "def\x00ault"}, said("scope", 0, 4)),
    ({"query": QUESTION, "as_of": "2019\x00"}, said("as_of", 0, 5)),
    ({"query": QUESTION, "entity_hints": "Ada"}, "entity_hints must be a list of names."),
])
def test_query_graph_refuses_at_its_entry(
        resources: Resources, inputs: dict[str, Any], message: str,
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG), pytest.raises(InvalidQueryError) as caught:
        query_flow.invoke(inputs)
    assert str(caught.value) == message
    # refused before any node: no search ran (none failed on the NUL and was skipped)
    assert not [r for r in caplog.records if r.name.startswith("graph_flows.query")]


def test_tab_and_newline_are_not_control_characters_here(resources: Resources) -> None:
    out = query_flow.invoke({"query": "What did\tAda Lovelace\r\nwrite?"})
    assert not out["errors"] or all("DataError" not in e for e in out["errors"])
    assert any("first program" in f["fact"] for f in out["facts"])


def test_cli(resources: Resources, db_url: str, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    _surface_env(monkeypatch, db_url)
    monkeypatch.setenv("KRAG_DATA_DIR", str(tmp_path / "krag"))
    before = rows(resources.store, "SELECT count(*) FROM documents")
    bad_path = str(tmp_path / "no\x01tes.md")  # (a NUL cannot reach argv: click refuses it)
    cases = [(("ask", "What did Ada\x00 write?"), said("query", 0, 13)),
             (("ask", QUESTION, "--scope", "d\x00"), said("scope", 0, 2)),
             (("ask", QUESTION, "--as-of", "2019\x01", "--json"), said("as_of", 1, 5)),
             (("ingest", bad_path), said(f"path {bad_path[:60]!r}", 1, bad_path.index("\x01") + 1)),
             (("ingest", str(tmp_path), "--scope", "t\x00"), said("scope", 0, 2)),
             (("ingest", str(tmp_path), "--source", "s\x1b"), said("source", 0x1B, 2))]
    for args, message in cases:
        code, out, err = run_cli(capsys, *args)
        assert (code, out, err.splitlines()) == (2, "", [f"error: {message}"]), args
    assert rows(resources.store, "SELECT count(*) FROM documents") == before


async def _tool_errors(calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    async with Client(build_server("default")) as client:
        out = []
        for name, args in calls:
            result = await client.call_tool(name, args)
            assert result.is_error, (name, result.structured_content)
            out.append(" ".join(getattr(c, "text", "") for c in result.content))
        return out


def test_mcp_tools(resources: Resources, caplog: pytest.LogCaptureFixture) -> None:
    fact = {"subject": "Ada Lovelace", "predicate": "wrote", "object": "Notes",
            "fact": "Ada Lovelace wrote the Notes."}
    calls = [
        ("kag_query", {"query": "What did Ada\x00 write?"}, said("query", 0, 13)),
        ("kag_query", {"query": QUESTION, "entities": ["Ada\x00"]}, said("entity hint 1", 0, 4)),
        ("kag_query", {"query": QUESTION, "source_id": "hist\x00ory"}, said("source_id", 0, 5)),
        ("recall", {"query": "Ada\x00"}, said("query", 0, 4)),
        ("recall", {"query": "Ada", "as_of": "2019\x00"}, said("as_of", 0, 5)),
        ("remember", {**fact, "subject": "Ada\x00"}, said("subject", 0, 4)),
        ("remember", {**fact, "fact": "Ada wrote\x00 the Notes."}, said("fact", 0, 10)),
        ("remember", {**fact, "valid_at": "1843\x00"}, said("valid_at", 0, 5)),
        ("correct", {"fact_id": "rel_\x00"}, said("fact_id", 0, 5)),
        ("correct", {"fact_id": "rel_x", "reason": "wrong\x00"}, said("reason", 0, 6)),
    ]
    before = rows(resources.store, "SELECT count(*), count(invalid_at) FROM relations")
    with caplog.at_level(logging.INFO):
        errors = asyncio.run(_tool_errors([(name, args) for name, args, _ in calls]))
    for (name, _, message), error in zip(calls, errors, strict=True):
        assert error == f"Error executing tool {name}: {message}", error
    assert rows(resources.store, "SELECT count(*), count(invalid_at) FROM relations") == before
    assert _tracebacks(caplog) == []
    refused = [r.getMessage() for r in caplog.records
               if r.name == "ui.mcp" and r.levelno == logging.WARNING]
    assert len(refused) == len(calls), refused
    assert refused[0] == f"kag_query refused: {said('query', 0, 13)} (RequestError)"


def test_ui_chat_and_upload_name(resources: Resources, db_url: str, tmp_path: Any,
                                 monkeypatch: pytest.MonkeyPatch,
                                 caplog: pytest.LogCaptureFixture) -> None:
    from tests.ui.test_ui_apptest import APP, TIMEOUT

    _surface_env(monkeypatch, db_url)
    monkeypatch.setenv("KRAG_DATA_DIR", str(tmp_path / "krag"))
    settings = load_settings()
    assert backend.check_upload("no\x00tes.md", 10, settings) == (
        "the file name contains a control character (U+0000); rename the file")
    try:
        with caplog.at_level(logging.INFO):
            at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
            at.chat_input[0].set_value("What did Ada\x00 write?").run(timeout=TIMEOUT)
        assert not at.exception, at.exception
        assert [e.value for e in at.error] == [f"Sorry, that failed: {said('query', 0, 13)}"]
        at.sidebar.get("file_uploader")[0].set_value([
            ("no\x00tes.md", b"# Notes\n\nAda Lovelace wrote notes.\n", "text/markdown"),
            ("hopper.md", b"# Hopper\n\nGrace Hopper developed COBOL.\n", "text/markdown"),
        ]).run()
        at.sidebar.button[0].click().run()
        assert not at.exception, at.exception
        assert [w.value.replace("\\", "") for w in at.sidebar.warning] == [
            "1 ingested, 1 refused: no_tes.md: the file name contains a control character "
            "(U+0000); rename the file"]
        assert sorted(p.name for p in (tmp_path / "krag" / "uploads" / "default").iterdir()) \
            == ["hopper.md"]
    finally:
        st.cache_resource.clear()
    assert _tracebacks(caplog) == []
    refused = [r.getMessage() for r in caplog.records
               if r.name == "ui.web.backend" and r.levelno >= logging.WARNING]
    assert refused == [f"query refused: {said('query', 0, 13)} (InvalidQueryError)"]


def test_a_fault_still_logs_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("tests.bad_input")
    with caplog.at_level(logging.INFO):
        log_failure(log, "query", InvalidQueryError(said("query", 0, 1)))
        log_failure(log, "query", ConnectionError("server closed the connection"))
    bad, fault = caplog.records
    assert (bad.levelno, bad.exc_info) == (logging.WARNING, None)
    assert fault.levelno == logging.WARNING and fault.exc_info is not None


def test_explore_search_drops_control_characters(resources: Resources,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """Explore's search box is typed into live: a NUL is dropped, not sent to SQL."""
    with caplog.at_level(logging.INFO):
        found = backend.find_entities(resources, "default", "Ada\x00 Lovelace")
    assert "Ada Lovelace" in [e.name for e in found]
    assert _tracebacks(caplog) == []
