"""Recipe "ppr" end to end on a tiny invented corpus: passages ranked by personalized
PageRank, the <passages> section, and the degradation of a store without chunk vectors."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from graph_flows import query_flow
from graph_flows.query import retrieval
from graph_flows.query.answer import EXTRACTIVE_HEADER
from graph_flows.shared.embeddings import MiniLMEmbeddings
from graph_flows.shared.resources import NO_LLM, Resources, use_resources
from graph_flows.shared.settings import Settings
from storage import KnowledgeStore, evidence
from tests.evidence_corpus import ANSWER, P1, P2, QUESTION, write_corpus
from tests.query_fixtures import ScriptedChatModel, analysis_message

_EMBEDDER = MiniLMEmbeddings()


class RecordingModel(ScriptedChatModel):
    """The scripted model, keeping the messages of every streamed call."""

    calls: list[Any] = []

    def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        self.calls.append(input)
        return super().stream(input, config, **kwargs)


def scripted(*messages: Any) -> RecordingModel:
    from langchain_core.messages import AIMessage

    return RecordingModel(messages=iter(
        [m if isinstance(m, AIMessage) else AIMessage(content=m) for m in messages]), calls=[])


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
    assert uris[0] == P1, uris
    # PageRank gives the second passage the most mass after the first (through the entity
    # they share) ...
    by_mass = sorted(out["passages"], key=lambda p: -p["score"])
    assert [p["uri"] for p in by_mass[:2]] == [P1, P2], by_mass
    # ... and the final order, which also weighs the question's match (passage_order),
    # still ranks it above plain vector search, though under the distractors that share
    # the question's words ("founder", "prize", "childhood")
    assert uris.index(P2) < _dense_rank(res.store, chunks[P2]), uris
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
    assert set(metrics["ppr"]["steps_ms"]) == {"search", "neighbourhood", "pagerank", "rows",
                                               "merge"}
    assert "Orsina Kael" in [e["name"] for e in out["entities"]][:3]
    assert out["facts"] and all("mass" in f for f in out["facts"])
    linked = [f for f in out["facts"] if "linked" in f]
    assert linked and all(f["sources"] for f in linked)  # fetched with the candidates'
    assert not {"fact_ends", "linked_sources"} & set(metrics["results"])
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


def test_extractive_answer_cites_the_passage_with_the_answer(corpus_resources) -> None:
    res, _ = corpus_resources
    _fill(res.store)
    out = query_flow.invoke({"query": QUESTION}, context={"recipe": "ppr"})
    assert out["answer_mode"] == "extractive" and out["answer"].startswith(EXTRACTIVE_HEADER)
    assert ANSWER in out["answer"]
    assert len(out["answer"].splitlines()) <= 8  # short: a lead and a few supporting lines
    labels = re.findall(r"\[([FP]\d+)\]", out["answer"])
    assert any(label.startswith("P") for label in labels)
    assert [c["label"] for c in out["citations"]] == list(dict.fromkeys(labels))
    by_label = {p["label"]: p for p in out["passages"]}
    for c in out["citations"]:
        if c["label"].startswith("P"):
            p = by_label[c["label"]]
            assert (c["passage_id"], c["uri"], c["title"]) == (p["id"], p["uri"], p["title"])
            assert c["source"] == "evidence"
    assert not out["errors"]


def test_llm_gets_passages_and_its_passage_citation_maps(corpus_resources) -> None:
    res, _ = corpus_resources
    _fill(res.store)
    model = scripted(analysis_message(["Velmor Prize"]),
                     "Orsina Kael founded it [F1] and grew up in Trelvik [P1][P9].")
    res.chat_override = model
    out = query_flow.invoke({"query": QUESTION}, context={"recipe": "ppr", "max_rounds": 1})
    assert out["answer_mode"] == "llm"
    system = dict(model.calls[-1])["system"]
    assert "<passages>\n[P1] (" in system and out["passages_text"] in system
    p1 = next(c for c in out["citations"] if c["label"] == "P1")
    assert p1["uri"] == out["passages"][0]["uri"] and p1["text"] == out["passages"][0]["text"]
    assert [c["label"] for c in out["citations"]] == ["F1", "P1"]
    assert any("P9" in e and "passage" in e for e in out["errors"])


def test_split_llm_prompt_has_no_passages(corpus_resources) -> None:
    res, _ = corpus_resources
    _fill(res.store)
    model = scripted(analysis_message(["Velmor Prize"]), "Founded by Orsina Kael [F1].")
    res.chat_override = model
    out = query_flow.invoke({"query": QUESTION}, context={"recipe": "split"})
    system = dict(model.calls[-1])["system"]
    assert "passages" not in out and "<passages>\n(none)\n</passages>" in system
    assert [c["label"] for c in out["citations"]] == ["F1"]


def test_kag_query_returns_passages_with_recipe_ppr(corpus_resources) -> None:
    from graph_flows.services import ask

    res, _ = corpus_resources
    _fill(res.store)
    out = ask.kag_query("default", QUESTION, recipe="ppr")
    assert out["passages"][0]["label"] == "P1" and "## Passages\n[P1] (" in out["context"]
    assert {P1, P2} <= {p["uri"] for p in out["passages"]}
    assert "passages" not in ask.kag_query("default", QUESTION, recipe="split")


def test_whole_ranking_is_kept_beside_the_budgeted_passages(corpus_resources) -> None:
    """The answer context keeps the passages its budget fits; the eval scores the whole
    PageRank ranking, as it scores a dense ranking's whole top 10."""
    from graph_flows.services.evaluation.multihop import graph_passages, ranked_documents

    res, _ = corpus_resources
    _fill(res.store)
    out = query_flow.invoke({"query": QUESTION},
                            context={"recipe": "ppr", "passage_tokens": 20})
    ranked = out["search_metrics"]["ppr"]["ranked"]
    assert [p["id"] for p in out["passages"]] == ranked[:1] and len(ranked) > 1
    with res.store.connect() as conn:
        docs = ranked_documents(conn, out)
    assert len(docs) == len(ranked) and docs[0] == P1 and P2 in docs
    assert graph_passages(out, {}, docs)[:len(set(docs))] == list(dict.fromkeys(docs))


def test_the_recipe_asks_for_synonyms_within_the_stored_bounds() -> None:
    """Stored synonym edges serve the recipe only as far as they were stored: no more per
    entity, at no lower cosine (else a seed would get fewer than a lookup gives)."""
    from graph_flows.query import evidence
    from storage import synonyms

    assert evidence.SYNONYMS <= synonyms.PER_ENTITY
    assert evidence.SYNONYM_MIN >= synonyms.MIN_SIMILARITY
