"""Per-request timeouts (issue 7, item 4): ``request_timeout_s`` bounds a whole query,
``search_timeout_s`` (statement_timeout) bounds each search statement; both degrade the
answer (reported in ``errors``) instead of failing the query."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from graph_flows import query_flow
from graph_flows.query import retrieval
from graph_flows.query.answer import EXTRACTIVE_HEADER
from graph_flows.shared import providers
from graph_flows.shared.resources import Resources
from graph_flows.shared.settings import Settings
from graph_flows.testing.llm_server import LLMServer
from storage import search

QUESTION = "What does the Analytical Engine use?"


@pytest.fixture(autouse=True)
def _fresh_probes() -> Iterator[None]:
    providers.clear_probe_cache()
    yield
    providers.clear_probe_cache()


def use_llm(resources: Resources, server: LLMServer, **kw: Any) -> None:
    resources.chat_override = None
    resources.settings = Settings(_env_file=None, chat_model="ollama:qwen2.5:7b-instruct",
                                  ollama_host=server.url, **kw)


def stream(query: str) -> tuple[list[str], dict[str, Any], float]:
    t0 = time.monotonic()
    tokens: list[str] = []
    out: dict[str, Any] = {}
    for mode, chunk in query_flow.stream({"query": query}, stream_mode=["custom", "values"]):
        if mode == "custom" and "token" in chunk:
            tokens.append(chunk["token"])
        elif mode == "values":
            out = chunk
    return tokens, out, time.monotonic() - t0


@pytest.fixture
def warm(resources: Resources, llm_server: LLMServer) -> float:
    """Seconds the question takes now without the models, once the process is warm.

    A process's first question imports the query graph's modules and loads its models and
    LLM client (8.5 s, then 0.3 s, for the no-LLM question on 2 busy cores; 2.0 s, then
    0.3 s, in LLM mode), which the timed bounds are not about: a serving process is warmed
    before its first question (graph_flows.services.warm). So one untimed question in each
    mode first; the bounds then allow twice the time the question's own work takes at this
    moment's load on top of the budget. The server's records, the resources' settings and
    the provider probes are left as they were."""
    settings, chat = resources.settings, resources.chat_override
    stream(QUESTION)
    use_llm(resources, llm_server, request_timeout_s=60, llm_timeout_s=60)
    stream(QUESTION)
    resources.settings, resources.chat_override = settings, chat
    own = stream(QUESTION)[2]
    llm_server.requests.clear()
    providers.clear_probe_cache()
    return own


def server_threads() -> list[threading.Thread]:
    """The fake server's request handlers still running."""
    return [t for t in threading.enumerate() if "process_request_thread" in t.name]


def client_threads() -> set[threading.Thread]:
    """Every other thread of the process (the graph's, the clients', ours)."""
    return set(threading.enumerate()) - set(server_threads())


def assert_no_client_thread_left(before: set[threading.Thread]) -> None:
    """Nothing of the request runs on: no thread was left behind by a timed-out call."""
    left = [t for t in client_threads() - before  # the search pools' idle workers stay
            if t.is_alive() and not t.name.startswith(("krag-search", "krag-candidates"))]
    assert not left, [t.name for t in left]


def test_request_budget_cuts_a_slow_answer_stream(
        resources: Resources, llm_server: LLMServer, warm: float) -> None:
    use_llm(resources, llm_server, extraction_model="none", request_timeout_s=2.0,
            llm_timeout_s=60)
    llm_server.default_reply = "The Analytical Engine uses punched cards [F1]. " * 10
    llm_server.token_delay = 0.2  # ~70 tokens: 14 s to stream in full
    before, serving = client_threads(), set(server_threads())
    tokens, out, elapsed = stream(QUESTION)
    assert elapsed < 2.0 + 1.5 + 2 * warm, (elapsed, warm)
    assert_no_client_thread_left(before)
    # The client closed the stream: the server's writes fail and its handler ends at once
    # instead of streaming the remaining ~12 s.
    deadline = time.monotonic() + 1.5
    while set(server_threads()) - serving and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(server_threads()) - serving, "the server still streams to a client"
    assert out["answer_mode"] == "extractive" and out["answer"].startswith(EXTRACTIVE_HEADER)
    assert any("did not finish within the 2 s request budget" in e for e in out["errors"])
    streamed = "".join(tokens)
    cut = streamed[: -len(out["answer"])]
    assert cut.startswith("The Analytical Engine") and cut.endswith("\n\n")  # partial, then
    assert streamed.endswith(out["answer"])  # the labelled extractive answer
    assert out["citations"]


def test_request_budget_bounds_hung_analysis_and_answer_models(
        resources: Resources, llm_server: LLMServer, warm: float) -> None:
    # a third of the budget for the analysis; the rest leaves retrieval 6x its warm time
    # before the answer call (at 1.5 s a busy machine spent it all before that call)
    use_llm(resources, llm_server, request_timeout_s=3.0, llm_timeout_s=60)
    llm_server.fault = lambda req: 10.0 if req.path == "/api/chat" else None  # never in time
    before = client_threads()
    _, out, elapsed = stream(QUESTION)
    assert elapsed < 3.0 + 1.0 + 2 * warm, (elapsed, warm)
    assert_no_client_thread_left(before)  # the clients' own timeouts ended both calls
    assert len(llm_server.bodies("/api/chat")) == 2  # analysis and answer, no retries
    assert out["analysis"]["method"] == "heuristic" and out["answer_mode"] == "extractive"
    assert any("share of the 3 s request budget" in e for e in out["errors"])
    assert any("request budget" in e and "answer" in e for e in out["errors"])
    assert out["facts"] and out["citations"]


def test_spent_budget_skips_remaining_search_methods(
        resources: Resources, monkeypatch: pytest.MonkeyPatch, warm: float) -> None:
    resources.settings = Settings(_env_file=None, chat_model="none", request_timeout_s=1.0)
    slow = search.entity_summary

    def slow_summary(*args: Any) -> Any:
        time.sleep(1.3)
        return slow(*args)

    monkeypatch.setattr(search, "entity_summary", slow_summary)
    t0 = time.monotonic()
    out = query_flow.invoke({"query": "Analytical Engine"})
    assert time.monotonic() - t0 < 1.3 + 1.0 + 2 * warm
    skipped = out["search_metrics"]["skipped"]
    assert {"fact_trigram", "endpoints", "fact_sources"} <= set(skipped)
    assert any("1 s request budget was spent; skipped search methods: " in e
               for e in out["errors"])
    # What the first (parallel) methods found is still used.
    assert "Analytical Engine" in [e["name"] for e in out["entities"]]
    assert out["answer_mode"] in {"extractive", "empty"}


def test_retrieve_with_a_past_deadline_runs_nothing(resources: Resources) -> None:
    engine = resources.store.search_engine(5000)
    found = retrieval.retrieve(engine, "default", ["Ada Lovelace"], [],
                               retrieval.SearchConfig(), lambda: [0.0] * 384,
                               deadline=time.time() - 1)
    assert not found.entities and not found.facts and not found.metrics["errors"]
    assert found.metrics["skipped"][:4] == ["entity_like", "entity_trigram", "entity_summary",
                                            "fact_like"] or set(found.metrics["skipped"]) >= {
        "entity_like", "entity_trigram", "entity_summary", "fact_like", "fact_trigram"}


def test_search_timeout_degrades_a_blocked_method(resources: Resources, db_url: str,
                                                  warm: float) -> None:
    """statement_timeout (search_timeout_s) cancels searches stuck behind a lock; the
    methods on other tables still answer."""
    resources.settings = Settings(_env_file=None, chat_model="none", search_timeout_s=0.5)
    with psycopg.connect(db_url) as locker:
        locker.execute("LOCK TABLE entity_words IN ACCESS EXCLUSIVE MODE")
        t0 = time.monotonic()
        out = query_flow.invoke({"query": "Analytical Engine"})
        elapsed = time.monotonic() - t0
        locker.rollback()
    assert elapsed < 0.5 * 2 + 2.0 + 2 * warm, (elapsed, warm)
    errors = out["search_metrics"]["errors"]
    assert "entity_trigram" in errors, errors
    assert all("statement timeout" in msg for msg in errors.values()), errors
    assert any(e.startswith("search method entity_trigram failed and was skipped")
               for e in out["errors"])
    assert "Analytical Engine" in [e["name"] for e in out["entities"]]  # LIKE still works
    assert out["facts"] and out["answer_mode"] == "extractive"
