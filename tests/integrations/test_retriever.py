"""KragRetriever beyond the standard suite: what a Document holds, the injection defence and
the scope's row-level security as MCP has them, the event loop kept free, one-line errors
for every bad argument, and closing what it opened (the embedded PostgreSQL included)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from langchain_core.messages import AIMessage

from graph_flows.integrations import KragRetriever
from graph_flows.services.memory import KnowledgeTools
from graph_flows.shared.embeddings import MiniLMEmbeddings
from graph_flows.shared.resources import Resources, use_resources
from graph_flows.shared.untrusted import MARKER
from storage import KnowledgeStore
from storage.access import Access, use_access
from storage.embedded import cluster_dir, holds_embedded
from storage.roles import prepare_embedded
from tests.evidence_corpus import P2
from tests.evidence_corpus import QUESTION as TWO_HOP
from tests.integrations.conftest import OTHER, QUESTION, corpus_settings
from tests.loop_corpus import ENOUGH, FOLLOW, seed_two_hop
from tests.pg_fixtures import url_rows
from tests.query_fixtures import analysis_message, scripted

KEYS = {"id", "document_id", "uri", "title", "source", "scope", "score", "rank", "facts",
        "entities", "methods", "withheld", "section", "document"}


@pytest.fixture
def own_access() -> None:
    """Nothing installed around the call (the tests' whole-store access removed): the
    retriever reads with its scope's access only, as in an application."""
    with use_access(Access((), None)):
        yield


def test_documents_are_the_ranked_passages_with_what_linked_them(corpus: Resources) -> None:
    docs = KragRetriever(resources=corpus, k=5).invoke(QUESTION)
    assert len(docs) == 5
    assert [d.metadata["rank"] for d in docs] == [1, 2, 3, 4, 5]
    assert all(set(d.metadata) == KEYS and d.id == d.metadata["id"] for d in docs)
    top = docs[0].metadata
    assert "01-relational-origins.md" in top["uri"] and top["source"] == "sample"
    assert top["document"] == "01-relational-origins.md"  # the short name, and where in it
    assert top["section"][0] == "The Relational Model and the First SQL Databases"
    assert top["scope"] == "default" and top["score"] > 0
    assert any("Codd" in e["name"] for e in top["entities"])
    assert top["facts"] and all({"id", "fact", "subject", "predicate", "object"}
                                <= set(f) for f in top["facts"])
    assert "Codd" in docs[0].page_content
    # the passages are those of MCP kag_query's retrieval (the same graph), in its order
    with use_resources(corpus):
        mcp = KnowledgeTools("default").kag_query(QUESTION, max_hops=2)
    assert [d.id for d in docs[:3]] == [p["id"] for p in mcp["passages"][:3]]


def test_k_of_a_call_wins_and_ainvoke_matches_invoke(corpus: Resources) -> None:
    retriever = KragRetriever(resources=corpus, k=2)
    assert len(retriever.invoke(QUESTION)) == 2
    assert len(retriever.invoke(QUESTION, k=6)) == 6
    docs = asyncio.run(retriever.ainvoke(QUESTION, k=3))
    assert [d.id for d in docs] == [d.id for d in retriever.invoke(QUESTION, k=3)]


def test_ainvoke_leaves_the_event_loop_free(corpus: Resources) -> None:
    """A ticker on the caller's loop keeps ticking while the retrieval runs."""
    retriever = KragRetriever(resources=corpus)

    async def scenario() -> tuple[int, float, int]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.005)

        task = asyncio.create_task(ticker())
        start = time.perf_counter()
        docs = await retriever.ainvoke(QUESTION)
        elapsed = time.perf_counter() - start
        done.set()
        await task
        return ticks, elapsed, len(docs)

    ticks, elapsed, n = asyncio.run(scenario())
    assert n == 4
    # blocked, the ticker would tick once; free, about every 5 ms of the retrieval
    assert ticks >= max(3, int(elapsed / 0.005 / 4)), (ticks, elapsed)


def test_a_scope_reads_only_its_own_passages_with_instructions_withheld(
        corpus: Resources, own_access: None) -> None:
    question = "Where did the Zanthor vault project store Edgar Codd's notes?"
    default = KragRetriever(resources=corpus, scope="default").invoke(question)
    assert default and not any("Zanthor" in d.page_content for d in default)
    other = KragRetriever(resources=corpus, scope=OTHER).invoke(question)
    assert [d.metadata["scope"] for d in other] == [OTHER]
    text = other[0].page_content
    assert "Zanthor vault project" in text and MARKER in text
    assert "Ignore all previous instructions" not in text
    assert other[0].metadata["withheld"] == 1
    with use_resources(corpus):  # what MCP kag_query gives for the same passage
        mcp = KnowledgeTools(OTHER).kag_query(question)
    assert mcp["passages"][0]["text"] == text


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"k": 0}, "k must be an integer 1..100, got '0'."),
    ({"k": 101}, "k must be an integer 1..100, got '101'."),
    ({"k": "3"}, "k must be an integer 1..100, got '3'."),
    ({"scope": "nowhere"}, "unknown scope 'nowhere'"),
    ({"scope": "a b"}, "scope: invalid scope name 'a b'"),
    ({"recipe": "bm25"}, "recipe must be one of"),
    ({"recipe": "split"}, "recipe 'split' ranks no passages"),
    ({"as_of": "last tuesday"}, "as_of 'last tuesday' is not a date"),
    ({"scope": "def\x00ault"}, "scope contains a control character (U+0000 at character 4)"),
    ({"as_of": "2019\x00"}, "as_of contains a control character (U+0000 at character 5)"),
    ({"max_rounds": 9}, "max_rounds must be 1..4"),
])
def test_bad_arguments_are_one_line_errors_at_construction(
        corpus: Resources, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        KragRetriever(resources=corpus, **kwargs)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_bad_k_of_a_call_and_unknown_call_arguments(corpus: Resources) -> None:
    retriever = KragRetriever(resources=corpus)
    with pytest.raises(ValueError, match=r"^k must be an integer 1\.\.100, got '0'\.$"):
        retriever.invoke(QUESTION, k=0)
    with pytest.raises(ValueError, match="unknown argument 'top_k'; KragRetriever.invoke"):
        retriever.invoke(QUESTION, top_k=3)
    with pytest.raises(ValueError) as caught:  # refused before any search (and its SQL)
        retriever.invoke("What did Edgar\x00 Codd propose?")
    assert str(caught.value) == ("query contains a control character (U+0000 at character "
                                 "15); remove it and try again.")


def test_as_of_reads_the_facts_valid_then(corpus: Resources) -> None:
    docs = KragRetriever(resources=corpus, as_of="1950", k=2).invoke(QUESTION)
    assert len(docs) == 2  # passages are not dated; the facts linking them are
    assert KragRetriever(resources=corpus, as_of="1950").as_of.startswith("1950-01-01")


def _app_connections(superuser_url: str) -> int:
    db = urlsplit(superuser_url).path.lstrip("/")
    return url_rows(superuser_url, "SELECT count(*) FROM pg_stat_activity WHERE "
                                   f"datname = '{db}' AND usename = 'krag_app'")[0][0]


def test_settings_open_the_database_and_close_releases_it(corpus_url: str) -> None:
    app_url, owner_url = prepare_embedded(corpus_url)
    settings = corpus_settings(database_url=app_url, database_owner_url=owner_url)
    before = _app_connections(corpus_url)
    with KragRetriever(settings=settings) as retriever:
        assert len(retriever.invoke(QUESTION)) == 4
        assert _app_connections(corpus_url) > before  # its own pools
    # closed: a closed connection's server process exits a moment later (pg_stat_activity
    # still lists it meanwhile), so the count is read until it is back or 10 s have passed
    deadline = time.monotonic() + 10
    while _app_connections(corpus_url) != before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _app_connections(corpus_url) == before
    with pytest.raises(ValueError, match="this KragRetriever is closed"):
        retriever.invoke(QUESTION)


@pytest.mark.slow
def test_embedded_postgres_started_for_a_retriever_is_released() -> None:
    """No KRAG_DATABASE_URL: the embedded cluster of KRAG_DATA_DIR, started for the
    retriever and stopped by close() (its postmaster exits)."""
    # not pytest's tmp_path: the cluster's own user must reach it (as tests/pg_fixtures.py)
    tmp_path = Path(tempfile.mkdtemp(prefix="krag-test-"))
    settings = corpus_settings(data_dir=tmp_path)
    assert not holds_embedded(tmp_path)
    first = KragRetriever(settings=settings)
    second = KragRetriever(settings=settings)
    assert holds_embedded(tmp_path)
    assert first.invoke(QUESTION) == []  # an empty store: nothing ranked, no error
    pid_file = cluster_dir(tmp_path) / "postmaster.pid"
    assert pid_file.exists()
    first.close()
    assert holds_embedded(tmp_path)  # the second one still uses it
    second.close()
    assert not holds_embedded(tmp_path)
    deadline = time.time() + 30
    while pid_file.exists() and time.time() < deadline:
        time.sleep(0.2)
    assert not pid_file.exists()
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_max_rounds_bounds_the_query_loop_behind_the_documents(store: KnowledgeStore) -> None:
    """The two-hop corpus (tests/loop_corpus.py) with a scripted model: the analysis, then
    the planner's follow-up and its "enough". Two rounds (the planner asked once, after
    round 1) reach the second hop's passage and add to round 1's; one round never asks."""
    seed_two_hop(store)

    def lent() -> Resources:
        model = scripted(analysis_message(["Velmor Prize"]),
                         *(AIMessage(content="", tool_calls=[{"name": "FollowUp", "id": f"c{i}",
                                                              "args": reply}])
                           for i, reply in enumerate((FOLLOW, ENOUGH))))
        return Resources(settings=corpus_settings(), store=store,
                         embeddings=MiniLMEmbeddings(), chat_override=model)

    two = lent()
    docs = KragRetriever(resources=two, max_rounds=2, k=100).invoke(TWO_HOP)
    assert P2 in [d.metadata["uri"] for d in docs]
    assert next(two.chat_override.messages).tool_calls[0]["args"] == ENOUGH  # left over
    one = lent()
    first = KragRetriever(resources=one, max_rounds=1, k=100).invoke(TWO_HOP)
    assert next(one.chat_override.messages).tool_calls[0]["args"] == FOLLOW  # never asked
    assert len(docs) > len(first)
