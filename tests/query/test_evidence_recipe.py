"""Recipe "ppr" end to end on a tiny invented corpus: passages ranked by personalized
PageRank, the <passages> section, and the degradation of a store without chunk vectors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graph_flows import query_flow
from graph_flows.query import retrieval
from graph_flows.shared.embeddings import MiniLMEmbeddings
from graph_flows.shared.resources import NO_LLM, Resources, use_resources
from graph_flows.shared.settings import Settings
from storage import KnowledgeStore, evidence
from tests.evidence_corpus import ANSWER, P1, P2, QUESTION, write_corpus

_EMBEDDER = MiniLMEmbeddings()


@pytest.fixture
def corpus_resources(store: KnowledgeStore) -> Iterator[tuple[Resources, dict[str, str]]]:
    chunks = write_corpus(store, _EMBEDDER)
    settings = Settings(_env_file=None, chat_model="none", database_url=None)
    res = Resources(settings=settings, store=store, embeddings=_EMBEDDER,
                    chat_override=NO_LLM)
    with use_resources(res):
        yield res, chunks


def _fill(store: KnowledgeStore) -> None:
    with store.transaction() as conn:
        evidence.fill_chunk_embeddings(conn, _EMBEDDER.embed_documents)


def _dense_rank(store: KnowledgeStore, chunk: str) -> int:
    with store.connect() as conn:
        hits = evidence.chunk_vector(conn, ["default"], _EMBEDDER.embed_query(QUESTION), 50)
    return [h.id for h in hits].index(chunk)


def test_second_passage_is_reached_through_the_entity(corpus_resources) -> None:
    res, chunks = corpus_resources
    _fill(res.store)
    out = query_flow.invoke({"query": QUESTION}, context={"recipe": "ppr"})
    uris = [p["uri"] for p in out["passages"]]
    assert set(uris[:2]) == {P1, P2}, uris
    assert _dense_rank(res.store, chunks[P2]) >= 2  # plain vector search ranks it lower
    p2 = out["passages"][uris.index(P2)]
    assert "graph" in p2["methods"] and p2["score"] > 0 and p2["label"].startswith("P")
    assert out["passages"][0]["label"] == "P1"
    assert "<passages>" not in out["passages_text"] and "[P1] (" in out["passages_text"]
    assert ANSWER in out["passages_text"]
    metrics = out["search_metrics"]
    assert metrics["recipe"] == "ppr" and metrics["ppr"]["linked_facts"] > 0
    assert metrics["ppr"]["graph_edges"]["mentions"] > 0
    assert {"entity_like", "fact_question", "chunk_vector", "chunk_fulltext",
            "neighbourhood"} <= set(metrics["results"])
    assert "Orsina Kael" in [e["name"] for e in out["entities"]][:3]
    assert out["facts"] and all("mass" in f for f in out["facts"])
    assert not out["errors"]


def test_without_chunk_vectors_the_recipe_degrades_to_split(corpus_resources) -> None:
    out = query_flow.invoke({"query": QUESTION}, context={"recipe": "ppr"})
    assert out["search_metrics"]["recipe"] == "split"
    assert out["search_metrics"]["requested_recipe"] == "ppr"
    assert any("krag reembed" in e for e in out["errors"])
    assert "passages" not in out and out["entities"]


def test_split_output_is_unchanged(corpus_resources) -> None:
    res, _ = corpus_resources
    _fill(res.store)
    out = query_flow.invoke({"query": QUESTION}, context={"recipe": "split"})
    assert "passages" not in out and "passages_text" not in out
    assert out["search_metrics"]["recipe"] == "split"


def test_no_linkable_fact_still_gets_dense_passages(corpus_resources) -> None:
    res, chunks = corpus_resources
    _fill(res.store)
    with res.store.transaction() as conn:
        from sqlalchemy import text

        conn.execute(text("DELETE FROM relations"))
    out = query_flow.invoke({"query": "boats leaving a harbour at dawn"},
                            context={"recipe": "ppr"})
    assert out["passages"][0]["uri"] == "harbour.md"
    assert out["search_metrics"]["ppr"]["no_link"] is True


def test_passage_budget_and_bad_budget() -> None:
    from graph_flows.query import sections

    long = [{"id": str(i), "uri": f"u{i}", "title": "", "text": "word " * 300}
            for i in range(5)]
    fitted = sections.fit_passages(long, 700)  # 2800 characters: two 1500-character texts
    assert [p["label"] for p in fitted] == ["P1"]
    assert len(sections.fit_passages(long, 10)[0]["text"]) <= 40
    assert "ppr" in retrieval.RECIPES
