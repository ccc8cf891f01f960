"""Multi-hop in the query graph (bounded recursive CTE) and the per-answer confidence label."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from graph_flows import query_flow
from graph_flows.query import scoring
from graph_flows.query.analyze import InvalidQueryError
from graph_flows.query.retrieval import SearchConfig, retrieve
from storage import KnowledgeStore, ids, multihop
from storage.models import DocumentIn, EntityIn, RelationIn

# A chain Zorvak -uses-> Quillon -contains-> Brevicore -part_of-> Haldane, plus decoys that
# share the question's words ("contains") so LIKE alone fills its share with other facts.
CHAIN = [("Zorvak Studio", "technology"), ("Quillon Engine", "technology"),
         ("Brevicore Module", "technology"), ("Haldane Suite", "technology")]
HOP1 = "Zorvak Studio uses Quillon Engine for rendering."
HOP2 = "Quillon Engine contains Brevicore Module as its physics core."
HOP3 = "Brevicore Module is part of Haldane Suite."


def _seed(store: KnowledgeStore) -> dict[str, str]:
    doc = DocumentIn("default", "chain", "chain.md", ids.content_hash("chain"))
    (chunk,) = store.sync_document(doc, ["chain"]).new_chunk_ids
    ents = [EntityIn(n, t, "default", "", 0.9, chunk_ids=(chunk,)) for n, t in CHAIN]
    ents += [EntityIn(f"Decoy {i}", "technology", "default", "", 0.9, chunk_ids=(chunk,))
             for i in range(40)]
    eid = {e.name: e.id for e in ents}
    rels = [RelationIn(eid["Zorvak Studio"], "uses", eid["Quillon Engine"], HOP1, "default",
                       0.9, chunk_ids=(chunk,)),
            RelationIn(eid["Quillon Engine"], "contains", eid["Brevicore Module"], HOP2,
                       "default", 0.9, chunk_ids=(chunk,)),
            RelationIn(eid["Brevicore Module"], "part_of", eid["Haldane Suite"], HOP3,
                       "default", 0.9, chunk_ids=(chunk,))]
    rels += [RelationIn(eid[f"Decoy {i}"], "contains", eid[f"Decoy {i + 1}"],
                        f"Decoy {i} contains Decoy {i + 1} for the engine.", "default", 0.95,
                        chunk_ids=(chunk,)) for i in range(39)]
    store.write_graph(ents, rels)
    return eid


def _facts(store: KnowledgeStore, **cfg) -> dict[str, dict]:
    terms = ["Zorvak Studio", "inside"]  # no word of the second-hop fact
    r = retrieve(store, "default", terms, ["contains", "uses"],
                 SearchConfig(fallback_ratio=0.0, **cfg), lambda: [0.0] * 384)
    return {f["fact"]: f for f in r.facts}


@pytest.mark.parametrize("recipe", ["split", "rrf"])
def test_second_hop_fact_needs_the_walk(store: KnowledgeStore, recipe: str) -> None:
    _seed(store)
    one = _facts(store, recipe=recipe, max_hops=1)
    assert HOP1 in one and HOP2 not in one
    two = _facts(store, recipe=recipe, max_hops=2)
    assert HOP1 in two and HOP2 in two and HOP3 not in two
    assert "graph" in two[HOP2]["methods"] and two[HOP2]["hop"] == 2
    assert two[HOP2]["agreement"] in {"medium", "high"}
    three = _facts(store, recipe=recipe, max_hops=3)
    assert HOP3 in three and three[HOP3]["hop"] == 3


def test_split_keeps_its_shares_when_the_walk_finds_nothing_far(store: KnowledgeStore) -> None:
    _seed(store)
    one = _facts(store, max_hops=1)
    two = _facts(store, max_hops=2, fact_limit=20)
    assert len(two) <= 20
    # Facts two hops away take at most a quarter of the limit.
    assert sum(1 for f in two.values() if (f["hop"] or 0) >= 2
               and set(f["methods"]) == {"graph"}) <= 5
    assert set(one) - set(two) <= {f for f in one if one[f]["score"] <= 2}


def test_walk_is_bounded_and_respects_validity(store: KnowledgeStore) -> None:
    eid = _seed(store)
    with store.transaction() as c:
        c.execute(text("UPDATE relations SET invalid_at = '2020-01-01' WHERE fact = :f"),
                  {"f": HOP2})
        got = multihop.neighbour_facts(c, "default", [eid["Zorvak Studio"]], 3, 50)
        assert [h.fact.fact for h in got] == [HOP1]  # the broken link stops the walk
        then = multihop.neighbour_facts(c, "default", [eid["Zorvak Studio"]], 3, 50,
                                        as_of=datetime(2019, 1, 1, tzinfo=UTC))
        assert [h.fact.fact for h in then] == [HOP1, HOP2, HOP3]
        # fanout 1 from a decoy in the middle of the decoy chain: one neighbour per step.
        mid = multihop.neighbour_facts(c, "default", [eid["Decoy 20"]], 3, 100, fanout=1)
        assert len(mid) <= 2 + 2 + 2
        for bad in ({"max_hops": 4}, {"max_hops": 0}):
            with pytest.raises(ValueError, match="max_hops"):
                multihop.neighbour_facts(c, "default", ["x"], bad["max_hops"], 10)
        with pytest.raises(ValueError, match="fanout"):
            multihop.neighbour_facts(c, "default", ["x"], 2, 10, fanout=0)


def test_query_graph_max_hops_and_answer_confidence(resources) -> None:
    _seed(resources.store)
    out = query_flow.invoke({"query": "What is inside what Zorvak Studio runs on?"},
                            context={"max_hops": 2})
    facts = {f["fact"]: f for f in out["facts"]}
    assert HOP2 in facts and out["search_metrics"]["max_hops"] == 2
    conf = out["answer_confidence"]
    assert conf["label"] in {"high", "medium", "low"} and "Zorvak Studio" in conf["reason"]
    with pytest.raises(InvalidQueryError, match="max_hops must be 1..3"):
        query_flow.invoke({"query": "x"}, context={"max_hops": 4})
    empty = query_flow.invoke({"query": "qqqzzzxxx wwwvvv"}, context={"fallback_ratio": 0.0})
    assert empty["answer_confidence"]["label"] == "none"


def test_search_agreement_labels() -> None:
    """Per-fact agreement of the search methods (a retrieval label; the answer's confidence
    is rated by question coverage: tests/query/test_answer_extractive.py)."""
    assert scoring.agreement(["graph"]) == "medium"
    assert scoring.agreement(["graph", "trigram"]) == "high"
