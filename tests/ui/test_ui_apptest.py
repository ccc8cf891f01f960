"""The Streamlit app driven headlessly by AppTest against a seeded database (no-LLM mode)."""

from __future__ import annotations

import socket
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import streamlit as st
from sqlalchemy import text
from streamlit.testing.v1 import AppTest

from graph_flows.query import loop, sections
from graph_flows.shared.resources import Resources
from graph_flows.shared.settings import Settings, load_settings
from storage import KnowledgeStore
from storage.scopes import set_parent
from tests.pg_fixtures import TEST_DIM, TEST_MODEL
from tests.query_fixtures import seed_graph
from ui.web import backend, components, panels

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "ui" / "web" / "app.py")
EXPLORE = "views/explore.py"  # a page of APP's navigation
TIMEOUT = 120
DEFAULT_CHAT_MODEL = str(Settings.model_fields["chat_model"].default)


def _env(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("KRAG_DATABASE_URL", url)
    monkeypatch.setenv("KRAG_CHAT_MODEL", "none")
    monkeypatch.setenv("KRAG_EMBEDDING_MODEL", TEST_MODEL)
    monkeypatch.setenv("KRAG_EMBEDDING_DIM", str(TEST_DIM))
    monkeypatch.setenv("KRAG_SCOPE", "default")


@pytest.fixture
def seeded_url(db_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("KRAG_DATA_DIR", str(tmp_path / ".krag"))  # uploads are kept there
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
    assert DEFAULT_CHAT_MODEL.startswith("ollama:")  # the banner names the default model
    assert f"`KRAG_CHAT_MODEL={DEFAULT_CHAT_MODEL}`" in at.warning[0].value
    assert f"`ollama pull {DEFAULT_CHAT_MODEL.removeprefix('ollama:')}`" in at.warning[0].value
    assert any(m.label == "Documents" for m in at.sidebar.get("metric"))

    _ask(at, "Who designed the Analytical Engine?")
    answer = "\n".join(m.value for m in at.chat_message[1].markdown)
    assert "Charles Babbage" in answer and "[F" in answer  # streamed extractive answer
    (expander,) = [e for e in at.expander if e.label.startswith("Sources")]
    panel = "\n".join(m.value for m in expander.markdown)
    assert "designed the Analytical Engine in 1837" in panel.replace("\\", "")
    assert "history" in panel  # the document the fact came from
    (details,) = [e for e in at.chat_message[1].expander if e.label == "Details"]
    assert any("methods: " in c.value and "retrieval" in c.value and "ms" in c.value
               for c in details.caption)  # the per-method line is folded away
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


def test_explore_page_finds_entity_with_facts_sources_and_neighbours(seeded_url: str) -> None:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page(EXPLORE).run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Explore the graph"]
    at.text_input[0].set_value("Babage").run()  # fuzzy: a typo still finds him
    hit = [b for b in at.button if "Charles Babbage" in b.label.replace("\\", "")]
    assert hit, [b.label for b in at.button]
    hit[0].click().run()
    page = _texts(at).replace("\\", "")
    assert "English inventor who designed mechanical computers" in page
    assert ("- Charles Babbage lived in London.  \n  Charles Babbage → *relates to* → London"
            "  \n  *from:* history (history:history.md)") in page, page
    assert "**Sources** (1)" in page and "- history (history:history.md)" in page
    nb = [b for b in at.button if b.label.replace("\\", "") == "London"]
    nb[0].click().run()
    assert "Capital city of England" in _texts(at).replace("\\", "")


def test_explore_shows_type_and_aliases_and_finds_by_alias(seeded_url: str) -> None:
    """Two entities named alike are told apart by their type; an alias finds its entity and
    is shown on the hit and on the entity's page."""
    _sql(seeded_url, "UPDATE entities SET aliases = ARRAY['Babbage', 'C. Babbage'] "
                     "WHERE name = 'Charles Babbage'")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page(EXPLORE).run()
    at.text_input[0].set_value("C. Babbage").run()
    labels = [b.label.replace("\\", "") for b in at.button]
    assert "Charles Babbage (person)" in labels, labels
    assert "also: Babbage, C. Babbage" in _texts(at).replace("\\", "")
    [b for b in at.button if "Charles Babbage" in b.label][0].click().run()
    assert "**Aliases:** Babbage, C. Babbage" in _texts(at).replace("\\", "")


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
    results: list[dict] = []

    def recorded(*a, **k):
        results.append(real(*a, **k))
        return results[-1]

    monkeypatch.setattr(ask, "run_query_streaming", recorded)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    _ask(at, "Who designed the Analytical Engine?")
    assert f"{DESIGNED} *(valid from 1996-01-01)*" in _sources(at)
    captions = [c.value.replace("\\", "") for c in at.chat_message[-1].caption]
    conf = results[-1]["answer_confidence"]  # the query graph's own label and reason
    assert conf["label"] in {"high", "medium", "low"}
    assert conf["reason"].startswith("The cited") and "Analytical Engine" in conf["reason"]
    line = f"Confidence: {conf['label']} — {conf['reason']}"
    assert line in captions, captions
    assert captions.index(line) < next(i for i, c in enumerate(captions) if "retrieval" in c)


def _extras(result: dict) -> None:
    from ui.web import panels

    panels.render_answer(result, diagram=False)


def test_answer_extras_without_confidence_or_dates() -> None:
    result = {"answer": "x [F1]", "answer_mode": "extractive",
              "citations": [{"label": "F1", "fact_id": "r1", "fact": "A knows B.", "sources": []}],
              "facts": [{"id": "r1", "fact": "A knows B.", "valid_at": None, "invalid_at": None}]}
    at = AppTest.from_function(_extras, args=(result,)).run()
    assert not at.exception, at.exception
    assert not any("Confidence" in c.value for c in at.caption)
    panel, details = at.expander
    assert panel.markdown[0].value.replace("\\", "") == "**[F1]** A knows B."
    assert details.label == "Details" and "answer: extractive" in details.caption[0].value
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


def test_no_llm_banner_names_the_configured_ollama_model(
    seeded_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once the block ends
    monkeypatch.setenv("KRAG_CHAT_MODEL", "ollama:mistral-nemo:12b")
    monkeypatch.setenv("KRAG_OLLAMA_HOST", f"http://127.0.0.1:{port}")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    banner = at.warning[0].value
    assert "`ollama pull mistral-nemo:12b`" in banner, banner
    assert "`KRAG_CHAT_MODEL=ollama:mistral-nemo:12b`" in banner
    assert panels.suggested_model(Settings(_env_file=None, chat_model="openai:gpt-4o")) == \
        DEFAULT_CHAT_MODEL.removeprefix("ollama:")


def _metric(at: AppTest, label: str) -> int:
    (metric,) = [m for m in at.sidebar.get("metric") if m.label == label]
    return int(metric.value)


def test_upload_of_three_files_one_refused_reports_and_refreshes_statistics(
    seeded_url: str, tmp_path: Path
) -> None:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    before = _metric(at, "Documents")
    at.sidebar.get("file_uploader")[0].set_value([
        ("hopper.md", b"# Grace Hopper\n\nGrace Hopper developed the COBOL language.\n",
         "text/markdown"),
        ("aiken.txt", b"Howard Aiken built the Harvard Mark I at Harvard University.\n",
         "text/plain"),
        ("tool.exe", b"MZ\x90\x00", "application/octet-stream"),
    ]).run()
    at.sidebar.button[0].click().run()
    assert not at.exception, at.exception
    (line,) = [w.value for w in at.sidebar.warning]
    plain = line.replace("\\", "")
    assert plain.startswith("2 ingested, 1 refused: tool.exe: unsupported file type '.exe'"), plain
    assert "/tmp" not in plain and "krag-upload" not in plain and str(tmp_path) not in plain
    assert _metric(at, "Documents") == before + 2  # the statistics count the upload at once
    stored = sorted(p.name for p in (tmp_path / ".krag" / "uploads" / "default").iterdir())
    assert stored == ["aiken.txt", "hopper.md"]
    # the uploader starts over empty: no "Ingest" button to press a second time
    (uploader,) = at.sidebar.get("file_uploader")
    assert not uploader.value and not at.sidebar.button, uploader.value


def test_upload_of_the_same_file_again_reports_unchanged(seeded_url: str) -> None:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    note = ("notes.md", b"# Notes\n\nAda Lovelace wrote notes on the Analytical Engine.\n",
            "text/markdown")
    reports = []
    for _ in range(2):
        at.sidebar.get("file_uploader")[0].set_value([note]).run()
        at.sidebar.button[0].click().run()
        assert not at.exception, at.exception
        reports.append([e.value.replace("\\", "") for e in
                        [*at.sidebar.success, *at.sidebar.info, *at.sidebar.warning,
                         *at.sidebar.error]])
        documents = _metric(at, "Documents")
    assert reports == [["1 ingested"], ["1 unchanged"]], reports
    at.run()  # the report is shown once, on the run after the ingest
    assert not at.sidebar.success and not at.sidebar.info
    assert _metric(at, "Documents") == documents


def test_upload_report_names_files_the_run_skipped(seeded_url: str) -> None:
    from graph_flows.services.uploads import upload_report

    settings = load_settings()
    resources: Resources = backend.open_resources(backend.settings_key(settings))
    try:
        out = backend.ingest_files([("notes.md", b"# Notes\n\nAda Lovelace wrote notes.\n"),
                                    ("blob.txt", b"\x00\x01\x02binary\x00" * 50)],
                                   "default", resources)
        again = backend.ingest_files([("notes.md", b"# Notes\n\nAda Lovelace wrote notes.\n")],
                                     "default", resources)
    finally:
        resources.store.close()
    report = upload_report([("x.exe", "unsupported file type '.exe'")], out)
    assert report.ingested == ["notes.md"]
    assert [name for name, _ in report.refused] == ["x.exe", "blob.txt"]
    assert report.line().startswith(
        "1 ingested, 2 refused: x.exe: unsupported file type '.exe'; blob.txt: ")
    assert "file://" not in report.line()
    kept = Path(settings.data_dir) / "uploads" / "default"
    assert sorted(p.name for p in kept.iterdir()) == ["notes.md"]  # the skipped blob is gone
    assert again["documents"].get("unchanged") == 1  # the same stored path: no second copy
    assert not again["documents"].get("new")
    assert upload_report([], again).line() == "1 unchanged"


# -- the query loop's rounds in Details -----------------------------------------------------
def _details(at: AppTest) -> list[str]:
    """The captions of the last answer's Details expander, backslash escapes removed."""
    (details,) = [e for e in at.chat_message[-1].expander if e.label == "Details"]
    return [c.value.replace("\\", "") for c in details.caption]


def test_details_list_the_rounds_of_a_real_query(seeded_url: str) -> None:
    at = _ask(AppTest.from_file(APP, default_timeout=TIMEOUT).run(),
              "Who designed the Analytical Engine?")
    rounds = at.session_state["history"][-1]["result"]["rounds"]
    assert [r["round"] for r in rounds] == [1]
    (line,) = [c for c in _details(at) if c.startswith("round ")]
    # the seeded store has no passage vectors: recipe 'ppr' runs 'split', one round
    assert line.startswith("round 1: the question — ")
    assert line.endswith("; stopped: " + loop.NO_PASSAGES.format(recipe="split"))


def test_details_list_every_round_escaped() -> None:
    hostile = "Where is [x](javascript:alert(1)) <b>Kael</b>?"
    rounds = [{"round": 1, "query": "q", "why": "the question", "by": "question", "bridge": "",
               "added": {"passages": 8, "facts": 3, "entities": 1}, "ms": 41.6, "calls": 1,
               "tokens": 120, "stop": None},
              {"round": 2, "query": hostile, "why": "missing", "by": "llm", "bridge": "Kael",
               "added": {"passages": 2, "facts": 0, "entities": 1}, "ms": 9.0, "calls": 1,
               "tokens": 90, "stop": loop.SUFFICIENT}]
    at = AppTest.from_function(_extras, args=({"answer_mode": "llm", "rounds": rounds},)).run()
    assert not at.exception, at.exception
    (details,) = at.expander
    captions = [c.value for c in details.caption]
    assert captions[1:] == panels.rounds_lines({"rounds": rounds})
    assert [c.replace("\\", "") for c in captions[1:]] == [
        "round 1: the question — 8 passages, 3 facts, 1 entity, 42 ms, planner 1 call, "
        "120 tokens",
        f"round 2: {hostile} (asked by the planner, bridge: Kael) — +2 passages, +0 facts, "
        f"+1 entity, 9 ms, planner 1 call, 90 tokens; stopped: {loop.SUFFICIENT}"]
    assert "](" not in captions[2] and "<b>" not in captions[2]  # inert markdown


def test_opening_the_resources_loads_the_models_before_the_first_question(
    seeded_url: str,
) -> None:
    from graph_flows.services import warm
    from graph_flows.shared.nlp import load_nlp

    load_nlp.cache_clear()
    resources: Resources = backend.open_resources(backend.settings_key(load_settings()))
    try:
        assert load_nlp.cache_info().currsize == 1  # spaCy is loaded: the question won't wait
        assert resources.chat_override is None  # the probe's no-LLM mode stayed the probe's
        assert set(warm.warm_query(resources)) == {"query"}  # a whole graph run, no error
    finally:
        resources.store.close()
