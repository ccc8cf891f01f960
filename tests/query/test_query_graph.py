"""The query graph on a real PostgreSQL with a seeded graph and scripted chat models."""

from __future__ import annotations

import asyncio
import re

import pytest
from langchain_core.messages import AIMessage
from sqlalchemy import text

from graph_flows import query_flow
from graph_flows.query import scoring
from graph_flows.query.analyze import InvalidQueryError, heuristic_analysis
from graph_flows.query.answer import EXTRACTIVE_HEADER
from graph_flows.query.mermaid import build_mermaid, escape_label
from graph_flows.query.retrieval import SearchConfig, retrieve
from storage import search
from tests.query_fixtures import analysis_message, scripted, seed_graph


def names(result) -> list[str]:
    return [e["name"] for e in result["entities"]]


# --- pure functions -------------------------------------------------------------------
def test_split_and_fallback_rules() -> None:
    assert scoring.split_limit(15, 0.6) == (9, 6)
    assert scoring.split_limit(20, 0.6) == (12, 8)
    assert scoring.needs_fallback(7, 15, 0.5) and not scoring.needs_fallback(8, 15, 0.5)
    assert scoring.needs_fallback(9, 20, 0.5) and not scoring.needs_fallback(10, 20, 0.5)


def test_scores() -> None:
    assert scoring.entity_score(True, True) == 6
    assert scoring.entity_score(True, False) == 4 > scoring.entity_score(False, True) == 3
    assert scoring.entity_score(False, False) == 1
    assert scoring.fact_score(True, True, True) == 6
    assert scoring.fact_score(False, True, True) == 4 > scoring.fact_score(True, False, False)
    assert scoring.fact_score(False, True, False) == 2 > scoring.fact_score(False, False, False)


def test_heuristic_keeps_names_whole_and_drops_stopwords() -> None:
    a = heuristic_analysis('How is Ada Lovelace related to the "Analytical Engine"?', [])
    assert a["entities"] == ["Analytical Engine", "Ada Lovelace"]
    assert a["intent"] == "relationship" and a["method"] == "heuristic"
    b = heuristic_analysis("what does postgresql use for trigram search", [])
    assert b["keywords"] == ["postgresql", "trigram", "search"] and b["intent"] == "factual"
    assert heuristic_analysis("Give me an overview of pgvector", [])["intent"] == "summary"


# --- each method alone ----------------------------------------------------------------
def test_each_search_method_alone(seeded_store) -> None:
    with seeded_store.connect() as c:
        assert [h.entity.name for h in search.entity_exact(c, "default", ["postgresql"])] == [
            "PostgreSQL"]
        assert {h.entity.name for h in search.entity_like(c, "default", ["Engine"], 9)} == {
            "Analytical Engine"}
        fuzzy = search.entity_fuzzy(c, "default", ["Lovelase"], 6)  # typo
        assert fuzzy[0].entity.name == "Ada Lovelace" and fuzzy[0].similarity > 0.1
        summ = search.entity_summary(c, "default", ["mathematician"], 6)
        assert [h.entity.name for h in summ] == ["Ada Lovelace"]
        facts = search.fact_like(c, "default", ["punched"], 12)
        assert [h.fact.fact for h in facts] == ["The Analytical Engine uses punched cards."]
        eid = search.entity_exact(c, "default", ["london"])[0].entity.id
        ends = search.fact_by_endpoints(c, "default", [eid], ["lived"], [], 8)
        assert [h.fact.fact for h in ends] == ["Charles Babbage lived in London."]
    from tests.query_fixtures import _EMBEDDER
    with seeded_store.connect() as c:
        v = _EMBEDDER.embed_query("relational database software")
        assert search.entity_vector(c, "default", v, 3)[0].entity.name == "PostgreSQL"
        v = _EMBEDDER.embed_query("who lived in the capital of England")
        assert "London" in search.fact_vector(c, "default", v, 3)[0].fact.fact


def _retrieve(store, terms, **cfg):
    from tests.query_fixtures import _EMBEDDER
    return retrieve(store, "default", terms, [], SearchConfig(**cfg),
                    lambda: _EMBEDDER.embed_query(" ".join(terms)))


def test_like_share_caps_like_hits_and_trigram_gets_its_own(seeded_store) -> None:
    # 5 entities contain "g" words... use a term matching many names: "a" is too short,
    # "e" too; "ar" too short for LIKE. Make many LIKE hits by seeding more entities.
    from storage import EntityIn
    (chunk,) = seeded_store.sync_document(
        __import__("storage").DocumentIn("default", "more", "m.md", "h"), ["m"]).new_chunk_ids
    seeded_store.write_graph([EntityIn(f"Widget {i}", "concept", "default", "", 0.9, None,
                                       (chunk,)) for i in range(20)], [])
    r = _retrieve(seeded_store, ["Widget"], entity_limit=15, like_share=0.6)
    like_only = [e for e in r.entities if e["methods"] == ["like"]]
    assert len(like_only) <= 9
    assert r.metrics["split"]["entity_like"] == 9 and r.metrics["split"]["entity_trigram"] == 6
    ranked = [e for e in r.entities if e["score"] > 0]
    assert len(ranked) <= 15


def test_fallback_fires_under_half_and_not_above(seeded_store) -> None:
    r = _retrieve(seeded_store, ["relational database software"])
    assert r.metrics["fallback"]["entities"] is True
    assert "entity_vector" in r.metrics["results"]
    assert "PostgreSQL" in [e["name"] for e in r.entities]
    r2 = _retrieve(seeded_store, ["Lovelace"], entity_limit=2)
    assert r2.metrics["fallback"]["entities"] is False
    assert "entity_vector" not in r2.metrics["results"]


def test_name_match_outranks_summary_match(seeded_store) -> None:
    r = _retrieve(seeded_store, ["PostgreSQL"])
    top = [e for e in r.entities if e["score"] > 0]
    assert top[0]["name"] == "PostgreSQL" and top[0]["name_match"]
    summary_only = [e for e in top if e["summary_match"] and not e["name_match"]]
    assert summary_only and all(e["score"] < top[0]["score"] for e in summary_only)


def test_missing_endpoints_are_fetched(seeded_store) -> None:
    r = _retrieve(seeded_store, ["punched"], entity_limit=1, fallback_ratio=0)
    ids = {e["id"] for e in r.entities}
    assert r.facts and all(f["subject_id"] in ids and f["object_id"] in ids for f in r.facts)
    assert any(e["methods"] == ["endpoint"] for e in r.entities)


def test_failed_method_degrades_and_is_reported(seeded_store) -> None:
    with seeded_store.connect(autocommit=True) as c:  # DDL: as the tables' owner
        c.execute(text("DROP TABLE entity_words"))
    r = _retrieve(seeded_store, ["Lovelace"])
    assert "entity_trigram" in r.metrics["errors"]
    assert "Ada Lovelace" in [e["name"] for e in r.entities]


# --- mermaid --------------------------------------------------------------------------
_NODE = re.compile(r'^    n\d+\["(?:[A-Za-z0-9 .,:;!?()+\-_/@…]|#\d+;)+"\]$')
_EDGE = re.compile(r'^    n\d+ -->\|"(?:[A-Za-z0-9 .,:;!?()+\-_/@…]|#\d+;)+"\| n\d+$')
# lines without a label: generated ids and fixed text only (no unlabelled edge: "---")
_FIXED = re.compile(r"^    (?:classDef question fill:#fef3c7,stroke:#b45309,stroke-width:2px"
                    r"|classDef answer fill:#dcfce7,stroke:#15803d,stroke-width:3px"
                    r"|classDef focus fill:#e0e7ff,stroke:#4338ca,stroke-width:2px"
                    r"|class n\d+(?:,n\d+)* (?:question|answer|focus)|linkStyle \d+(?:,\d+)* "
                    r"stroke:#2563eb,stroke-width:3px)$")


def assert_valid_mermaid(diagram: str) -> None:
    """Strict grammar of what build_mermaid may emit ("" for no diagram)."""
    if diagram == "":
        return
    lines = diagram.split("\n")
    assert lines[0] == "graph TD"
    for line in lines[1:]:
        assert _NODE.match(line) or _EDGE.match(line) or _FIXED.match(line), line


HOSTILE = ['Robert"); DROP TABLE x;--', "a]b[c", "pipe|x", "line\nbreak",
           "<script>alert(1)</script>", "end", "click n1 call alert()", "`**md**`",
           "%%{init: {}}%%", "#quot;", "A --> B", "{curly}"]


def test_hostile_names_cannot_break_or_inject_mermaid() -> None:
    ents = [{"id": f"e{i}", "name": n, "type": "concept"} for i, n in enumerate(HOSTILE)]
    facts = [{"subject_id": f"e{i}", "object_id": f"e{i + 1}", "predicate": "x|y\"z",
              "subject": HOSTILE[i], "object": HOSTILE[i + 1]} for i in range(len(HOSTILE) - 1)]
    diagram = build_mermaid(ents, facts, max_nodes=50)
    assert_valid_mermaid(diagram)
    assert "<script>" not in diagram and "%%" not in diagram and "`" not in diagram
    assert escape_label("<b>") == "#60;b#62;"


def test_diagram_is_capped_most_relevant_first() -> None:
    ents = [{"id": f"e{i}", "name": f"E{i}", "type": "concept"} for i in range(40)]
    facts = [{"subject_id": f"e{i}", "object_id": f"e{i + 1}", "predicate": "uses",
              "subject": f"E{i}", "object": f"E{i + 1}"} for i in range(39)]
    diagram = build_mermaid(ents, facts, max_nodes=10)
    assert diagram.count('["') == 10 and '"E0"' in diagram and '"E30"' not in diagram


# --- the whole graph ------------------------------------------------------------------
def test_invoke_no_llm_gives_labelled_extractive_answer(resources) -> None:
    out = query_flow.invoke({"query": "What did Ada Lovelace write?"})
    assert out["answer_mode"] == "extractive" and out["answer"].startswith(EXTRACTIVE_HEADER)
    assert out["analysis"]["method"] == "heuristic"
    labels = re.findall(r"\[(F\d+)\]", out["answer"])
    assert labels and {c["label"] for c in out["citations"]} == set(labels)
    assert any("first program" in c["fact"] for c in out["citations"])
    assert out["citations"][0]["sources"][0]["source"] == "history"
    assert_valid_mermaid(out["mermaid"])
    assert "Ada Lovelace" in out["mermaid"] and out["facts"][0]["label"] == "F1"
    assert out["search_metrics"]["total_ms"] > 0


def test_llm_answer_streams_and_citations_map(resources) -> None:
    resources.chat_override = scripted(
        analysis_message(["Analytical Engine"]),
        "The Analytical Engine uses punched cards [F1]. It was designed by Babbage [F9].")
    tokens = []
    final = None
    for mode, chunk in query_flow.stream({"query": "What does the Analytical Engine use?"},
                                         context={"max_rounds": 1},  # no planner call
                                         stream_mode=["custom", "values"]):
        if mode == "custom" and "token" in chunk:
            tokens.append(chunk["token"])
        elif mode == "values":
            final = chunk
    assert len(tokens) > 5 and "".join(tokens) == final["answer"]
    assert final["answer_mode"] == "llm" and final["analysis"]["method"] == "llm"
    assert [c["label"] for c in final["citations"]] == ["F1"]
    assert final["citations"][0]["fact"] == final["facts"][0]["fact"]
    assert any("F9" in e for e in final["errors"])


def test_llm_answer_confidence_from_the_same_evidence_and_the_models_refusal(
        resources) -> None:
    question = "Who designed the Analytical Engine?"
    resources.chat_override = scripted(
        analysis_message(["Analytical Engine"]),
        "Charles Babbage designed it [F1][F2].",
        analysis_message(["Analytical Engine"]),
        "The knowledge base does not say who designed the Analytical Engine [F1][F2].")
    answered = query_flow.invoke({"query": question}, context={"max_rounds": 1})
    assert answered["answer_mode"] == "llm" and len(answered["citations"]) == 2
    # the rules of the extractive answer, on the model's sentences and what they cite
    conf = answered["answer_confidence"]
    assert conf["label"] == "medium", conf  # one document: no other says Charles Babbage
    assert ("give Charles Babbage, a person, as the answer, in a sentence saying "
            "“designed”; no other document confirms it.") in conf["reason"], conf
    declined = query_flow.invoke({"query": question}, context={"max_rounds": 1})
    assert declined["answer_mode"] == "llm" and declined["citations"]
    assert declined["answer_confidence"] == {
        "label": "none", "reason": "The answer says the knowledge base does not hold the "
                                   "answer."}


def test_llm_failure_falls_back_without_stack_trace(resources) -> None:
    resources.chat_override = scripted()  # exhausted iterator: every call raises
    out = query_flow.invoke({"query": "Who designed the Analytical Engine?"})
    assert out["answer_mode"] == "extractive" and out["analysis"]["method"] == "heuristic"
    assert any("heuristic" in e for e in out["errors"])
    assert all("Traceback" not in e for e in out["errors"])


def test_nothing_retrieved_says_so_with_closest(resources) -> None:
    out = query_flow.invoke({"query": "zqxj"}, context={"fallback_ratio": 0.0})
    assert out["answer_mode"] == "empty"
    assert out["answer"].startswith("The knowledge base has nothing about “zqxj”")
    assert "Closest entities" in out["answer"] and out["citations"] == []


def test_async_invoke_works(resources) -> None:
    out = asyncio.run(query_flow.ainvoke({"query": "pgvector"}))
    assert "pgvector" in [e["name"] for e in out["entities"]]


def test_wildcards_and_quotes_match_literally(resources) -> None:
    out = query_flow.invoke({"query": '"100%" cotton'}, context={"fallback_ratio": 0.0})
    assert names(out)[0] == "100% Cotton"
    out = query_flow.invoke({"query": '"snake_" o\'brien \\'}, context={"fallback_ratio": 0.0})
    assert names(out)[:1] == ["snake_case"]
    out = query_flow.invoke({"query": '"e_g"'}, context={"fallback_ratio": 0.0})
    assert out["answer_mode"] == "empty"


def test_unknown_scope_returns_nothing_from_other_scopes(resources) -> None:
    seed_graph(resources.store, scope="tenant-b", source="b")
    out = query_flow.invoke({"query": "Ada Lovelace", "scope": "nobody"})
    assert out["entities"] == [] and out["facts"] == [] and out["answer_mode"] == "empty"
    out = query_flow.invoke({"query": "Ada Lovelace", "scope": "tenant-b"})
    assert out["entities"] and all(e["scope"] == "tenant-b" for e in out["entities"])


@pytest.mark.parametrize(("payload", "context", "message"), [
    ({"query": "   "}, None, "query is empty"),
    ({"query": "x" * 10_001}, None, "limit is 10,000 bytes"),
    ({"query": "q", "entity_hints": ["h"] * 51}, None, "limit is 50"),
    ({"query": "q"}, {"entity_limit": 0}, "entity_limit must be 1..100"),
    ({"query": "q"}, {"fact_limit": 500}, "fact_limit must be 1..200"),
    ({"query": "q"}, {"like_share": 1.5}, "like_share must be 0..1"),
])
def test_bad_input_names_the_limit(resources, payload, context, message) -> None:
    # on the test's resources: without them, the run context is checked after the default
    # resources open, which started an embedded PostgreSQL in ./.krag (the checkout)
    with pytest.raises(InvalidQueryError, match=re.escape(message)):
        query_flow.invoke(payload, context=context)


def test_entity_hints_are_searched(resources) -> None:
    out = query_flow.invoke({"query": "tell me more", "entity_hints": ["London"]})
    assert names(out)[0] == "London"


def test_analysis_message_helper_is_structured() -> None:
    msg = analysis_message(["X"])
    assert isinstance(msg, AIMessage) and msg.tool_calls[0]["args"]["entities"] == ["X"]


# --- unknown input keys (issue 15.4): an error at the entry, not "query is empty" --------
@pytest.mark.parametrize(("payload", "message"), [
    ({"question": "Who wrote the first program?"},
     "unknown field 'question'; did you mean 'query'?"),
    ({"query": "q", "as-of": "2019"}, "unknown field 'as-of'; did you mean 'as_of'?"),
    ({"query": "q", "zzz": 1}, "unknown field 'zzz'. Accepted fields: query, scope, "
                               "entity_hints, as_of."),
])
def test_unknown_input_keys_are_named(payload, message) -> None:
    with pytest.raises(InvalidQueryError, match=re.escape(message)):
        query_flow.invoke(payload)
    with pytest.raises(InvalidQueryError, match=re.escape(message)):
        list(query_flow.stream(payload))
    with pytest.raises(InvalidQueryError, match=re.escape(message)):
        asyncio.run(query_flow.ainvoke(payload))


def test_unknown_indexing_input_keys_are_named() -> None:
    from graph_flows.indexing.graph import graph as indexing

    with pytest.raises(ValueError, match=re.escape("unknown field 'path'; did you mean "
                                                   "'paths'?")):
        indexing.invoke({"path": ["docs/"]})


def test_known_keys_still_run(resources) -> None:
    out = query_flow.invoke({"query": "Ada Lovelace", "scope": "default",
                             "entity_hints": ["Ada Lovelace"], "as_of": "2100"})
    assert out["entities"]


def test_a_bad_run_context_is_refused_before_resources_open(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The run context is checked before the first node's wrappers open the store (which
    would start an embedded server for a request about to be refused)."""
    from graph_flows.shared import resources as runtime

    def build(*args: object) -> None:
        raise AssertionError("resources opened for a refused context")

    monkeypatch.setattr(runtime, "_default", None)
    monkeypatch.setattr(runtime, "build_resources", build)
    with pytest.raises(InvalidQueryError, match="max_hops"):
        query_flow.invoke({"query": "Who wrote it?"}, context={"max_hops": 7})
