"""The use cases the surfaces share, called in-process on the seeded store (no-LLM mode)."""

from __future__ import annotations

import pytest

from graph_flows.query.graph import graph
from graph_flows.services import ask, explore, memory, scopes
from graph_flows.services.errors import RequestError
from graph_flows.shared.resources import Resources


def test_one_query_graph_ends_after_context_without_the_answer(resources: Resources) -> None:
    tokens: list[str] = []
    payload, context = ask.build_request("What did Ada Lovelace write?")
    full = ask.run_query_streaming(payload, context, tokens.append)
    assert full["answer"] and tokens and full["answer_mode"] == "extractive"
    ended = graph.invoke(payload, context={**context, "generate_answer": False})
    assert "answer" not in ended and "citations" not in ended
    assert ended["facts"] and ended["facts_text"] == full["facts_text"]


def test_kag_query_walks_hops_in_retrieval(resources: Resources) -> None:
    anchored = {"query": "Ada Lovelace", "entities": ["Ada Lovelace"]}
    one = ask.kag_query("default", **anchored, max_hops=1)
    two = ask.kag_query("default", **anchored, max_hops=2)
    hop2 = "Charles Babbage lived in London."
    assert hop2 not in {r["fact"] for r in one["relations"]}
    assert {r["hop"] for r in two["relations"] if r["fact"] == hop2} == {2}
    assert "London" in {e["name"] for e in two["entities"]}


@pytest.mark.parametrize(("call", "needle"), [
    (lambda: ask.kag_query("default", "Ada", max_hops=4), "max_hops"),
    (lambda: ask.kag_query("default", "Ada", limit=0), "limit"),
    (lambda: ask.kag_query("default", "   "), "empty"),
    (lambda: memory.KnowledgeTools().recall("Ada", as_of="last tuesday"), "as_of"),
    (lambda: memory.KnowledgeTools().correct("rel_nope"), "no fact 'rel_nope'"),
])
def test_bad_requests_are_one_line_request_errors(resources: Resources, call, needle) -> None:
    with pytest.raises(RequestError) as info:
        call()
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_scopes_and_explore(resources: Resources) -> None:
    store = resources.store
    assert scopes.set_parent(store, "team", "default") == ["team", "default"]
    chains = scopes.scope_chains(store, "default")
    assert chains["team"] == ["team", "default"] and chains["default"] == ["default"]
    (hit, *_) = explore.find_entities(store, "team", "Babbage")
    hood = explore.neighbourhood(store, "team", hit.id)
    assert hood["entity"].name == "Charles Babbage" and hood["facts"]
    assert scopes.chain_of("x", {"x": "y", "y": "x"}) == ["x", "y"]
