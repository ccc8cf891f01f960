"""The Streamlit app driven headlessly by AppTest against a seeded database (no-LLM mode)."""

from __future__ import annotations

import socket
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import streamlit as st
from sqlalchemy import text
from streamlit.testing.v1 import AppTest

from graph_flows.query import sections
from graph_flows.shared.resources import Resources
from graph_flows.shared.settings import load_settings
from storage import KnowledgeStore
from storage.scopes import set_parent
from tests.pg_fixtures import TEST_DIM, TEST_MODEL
from tests.query_fixtures import seed_graph
from ui.web import backend, components

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "ui" / "web" / "app.py")
EXPLORE = str(ROOT / "ui" / "web" / "pages" / "explore.py")
TIMEOUT = 120


def _env(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("KRAG_DATABASE_URL", url)
    monkeypatch.setenv("KRAG_CHAT_MODEL", "none")
    monkeypatch.setenv("KRAG_EMBEDDING_MODEL", TEST_MODEL)
    monkeypatch.setenv("KRAG_EMBEDDING_DIM", str(TEST_DIM))
    monkeypatch.setenv("KRAG_SCOPE", "default")


@pytest.fixture
def seeded_url(db_url: str, monkeypatch: pytest.MonkeyPatch):
    store = KnowledgeStore.open(db_url, embedding_model=TEST_MODEL, embedding_dim=TEST_DIM)
    try:
        seed_graph(store)
    finally:
        store.close()
    _env(monkeypatch, db_url)
    yield db_url
    st.cache_resource.clear()


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [t.value for t in at.text]
    parts += [c.value for c in at.caption] + [w.value for w in at.warning]
    return "\n".join(str(p) for p in parts)


def _sql(url: str, statement: str, **params: object) -> None:
    """Change the seeded database directly (dates, scope parents) before the app runs."""
    store = KnowledgeStore.open(url, embedding_model=TEST_MODEL, embedding_dim=TEST_DIM)
    try:
        with store.transaction() as conn:
            conn.execute(text(statement), params)
    finally:
        store.close()


def _sources(at: AppTest) -> str:
    """The last answer's Sources panel, backslash escapes removed."""
    (panel,) = [e for e in at.chat_message[-1].expander if e.label.startswith("Sources")]
    return "\n".join(m.value for m in panel.markdown).replace("\\", "")


def _ask(at: AppTest, question: str) -> AppTest:
    at.chat_input[0].set_value(question).run(timeout=TIMEOUT)
    assert not at.exception, at.exception
    return at


def test_ask_streams_answer_with_sources_and_no_llm_banner(seeded_url: str) -> None:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    assert any("No-LLM mode" in w.value for w in at.warning)
    assert "KRAG_CHAT_MODEL=ollama" in at.warning[0].value
    assert any(m.label == "Documents" for m in at.sidebar.get("metric"))

    _ask(at, "Who designed the Analytical Engine?")
    answer = "\n".join(m.value for m in at.chat_message[1].markdown)
    assert "Charles Babbage" in answer and "[F" in answer  # streamed extractive answer
    (expander,) = [e for e in at.expander if e.label.startswith("Sources")]
    panel = "\n".join(m.value for m in expander.markdown)
    assert "designed the Analytical Engine in 1837" in panel.replace("\\", "")
    assert "history" in panel  # the document the fact came from
    assert any("retrieval" in c.value and "ms" in c.value for c in at.caption)
    assert any(c.value.startswith("Confidence: ") and "cited" in c.value
               for c in at.caption)  # from the real query graph, not injected
    assert len(at.session_state["history"]) == 2

    _ask(at, "What does pgvector add?")  # the session keeps going, history replayed
    assert len(at.session_state["history"]) == 4
    assert len(at.chat_message) == 4


def test_empty_message_is_ignored(seeded_url: str) -> None:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    _ask(at, "   ")
    assert at.session_state["history"] == []
    assert len(at.chat_message) == 0


def test_failing_query_shows_error_and_session_continues(
    seeded_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graph_flows.services import ask

    real = ask.run_query_streaming

    def boom(*_a, **_k):
        raise ConnectionError("server closed the connection unexpectedly")

    monkeypatch.setattr(ask, "run_query_streaming", boom)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    _ask(at, "Who designed the Analytical Engine?")
    errors = [e.value for e in at.error]
    assert any("ConnectionError: server closed the connection" in e for e in errors), errors
    assert "Traceback" not in _texts(at) + "\n".join(errors)

    monkeypatch.setattr(ask, "run_query_streaming", real)
    _ask(at, "Who designed the Analytical Engine?")
    assert "Charles Babbage" in at.chat_message[-1].markdown[0].value


def test_unreachable_database_shows_error_not_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    _env(monkeypatch, f"postgresql://krag:krag@127.0.0.1:{port}/krag")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    assert any("Knowledge base unavailable" in e.value for e in at.sidebar.error)
    _ask(at, "Who designed the Analytical Engine?")
    assert any("Sorry, that failed" in e.value for e in at.error)
    assert "Traceback" not in _texts(at)
    st.cache_resource.clear()


def test_hostile_names_are_escaped() -> None:
    hostile = "<img src=x onerror=alert(1)>Evil [x](javascript:alert(1)) $x$ :red[y]"
    escaped = backend.md_escape(hostile)
    assert "\\<img" in escaped and "](" not in escaped and "\\$" in escaped
    assert backend.neutralise_images("see ![a](http://x/y.png)") == "see !\\[a](http://x/y.png)"
    assert backend.neutralise_images("[a](b)", prev="!").startswith("\\[")


def test_upload_checks(seeded_url: str) -> None:
    settings = load_settings(max_upload_mb=1)
    assert "unsupported file type '.exe'" in backend.check_upload("x.exe", 10, settings)
    assert "over the 1 MB limit" in backend.check_upload("big.md", 2 * 1024 * 1024, settings)
    assert "empty" in backend.check_upload("e.md", 0, settings)
    assert backend.check_upload("notes.MD", 100, settings) is None
    assert backend.safe_filename("../../etc/pass wd<>.md") == "pass wd_.md"


def test_upload_runs_indexing_graph_with_progress(seeded_url: str) -> None:
    settings = load_settings()
    resources: Resources = backend.open_resources(backend.settings_key(settings))
    try:
        before = resources.store.counts("default")
        progress: list[float] = []
        text = ("# Grace Hopper\n\nGrace Hopper developed the COBOL programming language. "
                "Grace Hopper worked at Harvard University with Howard Aiken.\n")
        out = backend.ingest_files([("hopper.md", text.encode())], "default", resources,
                                   lambda frac, _msg: progress.append(frac))
        after = resources.store.counts("default")
    finally:
        resources.store.close()
    assert out["documents"]["new"] == 1, out
    assert after["documents"] == before["documents"] + 1
    assert after["entities"] > before["entities"]
    assert progress and progress[-1] == 1.0


def test_explore_page_finds_entity_and_neighbours(seeded_url: str) -> None:
    at = AppTest.from_file(EXPLORE, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    at.text_input[0].set_value("Babage").run()  # fuzzy: a typo still finds him
    hit = [b for b in at.button if "Charles Babbage" in b.label.replace("\\", "")]
    assert hit, [b.label for b in at.button]
    hit[0].click().run()
    page = _texts(at).replace("\\", "")
    assert "English inventor who designed mechanical computers" in page
    assert "Charles Babbage lived in London" in page
    nb = [b for b in at.button if b.label.replace("\\", "") == "London"]
    nb[0].click().run()
    assert "Capital city of England" in _texts(at).replace("\\", "")


def test_explore_sees_the_ancestor_scopes(seeded_url: str) -> None:
    """The seeded graph lives in "default"; a child scope of it finds it, a root does not."""
    _sql(seeded_url, "INSERT INTO scopes (name) VALUES ('default'), ('other')")
    _sql(seeded_url, "INSERT INTO scopes (name, parent) VALUES ('team', 'default')")
    settings = load_settings()
    res = backend.open_resources(backend.settings_key(settings))
    hits = backend.find_entities(res, "team", "Babbage")
    assert [e.name for e in hits] == ["Charles Babbage"]
    hood = backend.neighbourhood(res, "team", hits[0].id)
    assert "Charles Babbage lived in London." in {f["fact"] for f in hood["facts"]}
    assert backend.find_entities(res, "other", "Babbage") == []


CARDS = "The Analytical Engine uses punched cards."
DESIGNED = "Charles Babbage designed the Analytical Engine in 1837."


def test_scope_picker_labels_chains_and_caption_names_them(seeded_url: str) -> None:
    store = KnowledgeStore.open(seeded_url, embedding_model=TEST_MODEL, embedding_dim=TEST_DIM)
    try:
        with store.transaction() as conn:
            set_parent(conn, "realm", "platform")
            set_parent(conn, "team-a", "realm")
    finally:
        store.close()
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    picker = at.sidebar.selectbox[0]
    assert picker.options == ["default", "platform", "realm  (realm › platform)",
                              "team-a  (team-a › realm › platform)"]
    caption = "\n".join(c.value for c in at.sidebar.caption).replace("\\", "")
    assert "Answers use: default" in caption and "uploads go to default" in caption

    picker.select("team-a").run()
    assert not at.exception, at.exception
    assert at.session_state["scope"] == "team-a"  # the value is the name, not the label
    caption = "\n".join(c.value for c in at.sidebar.caption).replace("\\", "")
    assert "Answers use: team-a, realm, platform" in caption
    assert "uploads go to team-a" in caption


def test_as_of_date_reaches_the_query_and_shows_validity(seeded_url: str) -> None:
    _sql(seeded_url, "UPDATE relations SET valid_at = '1996-01-01', invalid_at = '2020-01-01' "
         "WHERE fact = :f", f=CARDS)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    _ask(at, "punched cards")
    assert CARDS not in "\n".join(m.value for m in at.chat_message[-1].markdown)  # ended

    at.sidebar.checkbox(key="as_of_enabled").check().run()
    at.sidebar.date_input(key="as_of_date").set_value(date(2019, 6, 1)).run()
    assert at.session_state["as_of"] == "2019-06-01"
    _ask(at, "punched cards")
    panel = _sources(at)
    assert f"{CARDS} *(valid 1996-01-01 – 2020-01-01)*" in panel, panel
    metrics = [c.value for c in at.chat_message[-1].caption if "retrieval" in c.value]
    assert metrics and "as of 2019-06-01" in metrics[0].replace("\\", "")


def test_sources_show_valid_from_and_confidence_caption(
    seeded_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graph_flows.services import ask

    _sql(seeded_url, "UPDATE relations SET valid_at = '1996-01-01' WHERE fact = :f", f=DESIGNED)
    real = ask.run_query_streaming
    reason = "3 of 4 cited facts were found by two or more search methods"

    def with_confidence(*a, **k):
        return {**real(*a, **k), "answer_confidence": {"label": "high", "reason": reason}}

    monkeypatch.setattr(ask, "run_query_streaming", with_confidence)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    _ask(at, "Who designed the Analytical Engine?")
    assert f"{DESIGNED} *(valid from 1996-01-01)*" in _sources(at)
    captions = [c.value.replace("\\", "") for c in at.chat_message[-1].caption]
    line = f"Confidence: high — {reason}"
    assert line in captions, captions
    assert captions.index(line) < next(i for i, c in enumerate(captions) if "retrieval" in c)


def _extras(result: dict) -> None:
    from ui.web import components

    components.render_answer_extras(result, diagram=False)


def test_answer_extras_without_confidence_or_dates() -> None:
    result = {"answer": "x [F1]", "answer_mode": "extractive",
              "citations": [{"label": "F1", "fact_id": "r1", "fact": "A knows B.", "sources": []}],
              "facts": [{"id": "r1", "fact": "A knows B.", "valid_at": None, "invalid_at": None}]}
    at = AppTest.from_function(_extras, args=(result,)).run()
    assert not at.exception, at.exception
    assert not any("Confidence" in c.value for c in at.caption)
    (panel,) = at.expander
    assert panel.markdown[0].value.replace("\\", "") == "**[F1]** A knows B."
    assert components.confidence_line({}) is None
    assert components.confidence_line({"answer_confidence": None}) is None
    assert components.confidence_line({"answer_confidence": {"label": ""}}) is None
    assert components.confidence_line(
        {"answer_confidence": {"label": "low", "reason": "<b>[x](y)</b>"}}
    ) == "Confidence: low — \\<b\\>\\[x\\]\\(y\\)\\</b\\>"


def test_validity_and_chain_helpers() -> None:
    start = datetime(1996, 1, 1, tzinfo=UTC)
    assert sections.validity({"valid_at": start}) == "valid from 1996-01-01"
    assert sections.validity({"valid_at": "1996-01-01T00:00:00+00:00",
                                "invalid_at": "2021-06-30T00:00:00"}) == \
        "valid 1996-01-01 – 2021-06-30"  # ISO strings, as after a JSON round trip
    assert sections.validity({"invalid_at": date(2021, 6, 30)}) == "until 2021-06-30"
    assert sections.validity({"valid_at": None, "invalid_at": "not a date"}) == ""
    parents = {"team-a": "realm", "realm": "platform", "platform": None, "x": "y", "y": "x"}
    assert backend.chain_of("team-a", parents) == ["team-a", "realm", "platform"]
    assert backend.chain_of("x", parents) == ["x", "y"]  # a cycle cannot loop forever
    assert components.scope_label("team-a", ["team-a", "realm"]) == "team-a  (team-a › realm)"
    assert components.scope_label("platform", ["platform"]) == "platform"
