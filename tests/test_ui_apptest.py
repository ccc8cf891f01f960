"""The Streamlit app driven headlessly by AppTest against a seeded database (no-LLM mode)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from graph_flows.runtime import Resources
from graph_flows.settings import load_settings
from storage import KnowledgeStore
from tests.pg_fixtures import TEST_DIM, TEST_MODEL
from tests.query_fixtures import seed_graph
from ui import backend

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "ui" / "app.py")
EXPLORE = str(ROOT / "ui" / "pages" / "explore.py")
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
    from graph_flows import ask

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
