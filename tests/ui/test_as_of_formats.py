"""``as_of`` reads the same formats on every surface (graph input, CLI, MCP, UI), through the
one parser (graph_flows/shared/dates.py): a bare year or month is its first day.

The seeded fact below is made valid from 2019-06-01: "as of 2019" (2019-01-01) is before it,
"as of 2019-06" is its first day; any surface reading a bare year as "some time in 2019" or a
month as its end would disagree."""

from __future__ import annotations

import asyncio
import json
from datetime import date

import pytest
import streamlit as st
from mcp import Client
from sqlalchemy import text
from streamlit.testing.v1 import AppTest

from graph_flows import query_flow
from graph_flows.shared.resources import Resources
from tests.pg_fixtures import TEST_DIM, TEST_MODEL
from tests.procs import run_cli
from ui.mcp import build_server

FACT = "The Analytical Engine uses punched cards."
QUESTION = "punched cards Analytical Engine"
CASES = [("2019", False), ("2019-05", False), ("2019-06", True), ("2019-06-01", True),
         ("2019-06-01T00:00:00Z", True), ("2019-05-31T23:00:00-02:00", True),
         ("2019-05-31T23:00:00+02:00", False)]


@pytest.fixture
def dated(resources: Resources) -> Resources:
    with resources.store.transaction() as conn:
        conn.execute(text("UPDATE relations SET valid_at = '2019-06-01T00:00:00Z' "
                          "WHERE fact = :f"), {"f": FACT})
    return resources


def test_graph_input(dated: Resources) -> None:
    for as_of, seen in CASES:
        out = query_flow.invoke({"query": QUESTION, "as_of": as_of})
        assert (FACT in {f["fact"] for f in out["facts"]}) is seen, as_of


def test_mcp_recall(dated: Resources) -> None:
    async def scenario() -> dict[str, bool]:
        async with Client(build_server("default")) as client:
            found = {}
            for as_of, _ in CASES:
                out = await client.call_tool("recall", {"query": QUESTION, "as_of": as_of})
                assert not out.is_error, out.content
                found[as_of] = FACT in {f["fact"] for f in out.structured_content["facts"]}
            return found

    assert asyncio.run(scenario()) == dict(CASES)


def _surface_env(monkeypatch: pytest.MonkeyPatch, db_url: str) -> None:
    monkeypatch.setenv("KRAG_DATABASE_URL", db_url)
    monkeypatch.setenv("KRAG_CHAT_MODEL", "none")
    monkeypatch.setenv("KRAG_EMBEDDING_MODEL", TEST_MODEL)
    monkeypatch.setenv("KRAG_EMBEDDING_DIM", str(TEST_DIM))
    monkeypatch.setenv("KRAG_SCOPE", "default")


def test_cli_ask(dated: Resources, db_url: str, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str]) -> None:
    _surface_env(monkeypatch, db_url)
    for as_of, seen in (CASES[0], CASES[2]):
        code, out, err = run_cli(capsys, "ask", QUESTION, "--as-of", as_of, "--json")
        assert code == 0, err
        assert (FACT in {f["fact"] for f in json.loads(out)["facts"]}) is seen, as_of


def test_ui_date_picker(dated: Resources, db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The UI offers a date picker (no free text); the day it sends is read the same way."""
    from tests.ui.test_ui_apptest import APP, TIMEOUT, _ask, _sources

    _surface_env(monkeypatch, db_url)
    try:
        at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
        at.sidebar.checkbox(key="as_of_enabled").check().run()
        for day, seen in ((date(2019, 5, 31), False), (date(2019, 6, 1), True)):
            at.sidebar.date_input(key="as_of_date").set_value(day).run()
            _ask(at, QUESTION)
            panels = [e for e in at.chat_message[-1].expander if e.label.startswith("Sources")]
            shown = _sources(at) if panels else ""
            assert (FACT in shown) is seen, (day, shown)
    finally:
        st.cache_resource.clear()
