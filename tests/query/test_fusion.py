"""Fused ranking (recipe "rrf"): RRF, MMR, agreement labels, and the recipe on a real store."""

from __future__ import annotations

import re

import pytest

from graph_flows import query_flow
from graph_flows.query import scoring
from graph_flows.query.analyze import InvalidQueryError
from graph_flows.query.retrieval import SearchConfig, retrieve

LABELS = {"high", "medium", "low"}


# --- pure functions -------------------------------------------------------------------
def test_rrf_sums_reciprocal_ranks_from_one() -> None:
    fused = scoring.rrf([["a", "b", "c"], ["b", "a"]], k=60)
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    assert scoring.rrf([["x"]], k=0) == {"x": 1.0}


def test_rrf_rewards_agreement_and_ignores_repeats_in_one_list() -> None:
    fused = scoring.rrf([["solo", "both"], ["other", "both"]])
    assert fused["both"] > fused["solo"] and fused["both"] > fused["other"]
    assert scoring.rrf([["a", "a", "b"]]) == pytest.approx({"a": 1 / 61, "b": 1 / 63})
    assert scoring.rrf([]) == {} and scoring.rrf([[], []]) == {}


def test_mmr_drops_near_duplicates_and_keeps_relevance_order() -> None:
    cands = [("f1", 1.0, "Ada Lovelace worked with Charles Babbage"),
             ("f2", 0.95, "Ada Lovelace worked with Charles Babbage ."),
             ("f3", 0.6, "The Analytical Engine uses punched cards")]
    assert scoring.mmr(cands, 2) == ["f1", "f3"]
    assert scoring.mmr(cands, 3) == ["f1", "f3", "f2"]
    assert scoring.mmr(cands, 10, lambda_=1.0) == ["f1", "f2", "f3"]  # pure relevance
    assert scoring.mmr(cands, 0) == [] and scoring.mmr([], 5) == []


def test_mmr_ties_keep_input_order_and_ids_count_once() -> None:
    cands = [("a", 0.5, "alpha"), ("b", 0.5, "beta"), ("a", 0.9, "alpha")]
    assert scoring.mmr(cands, 5) == ["a", "b"]


def test_jaccard() -> None:
    w = scoring._words
    assert scoring.jaccard(w("A b"), w("a B")) == 1.0
    assert scoring.jaccard(w("a b"), w("c d")) == 0.0
    assert scoring.jaccard(w(""), w("")) == 0.0


@pytest.mark.parametrize(("methods", "label"), [
    (["like", "vector"], "high"),
    (["like", "trigram"], "high"),
    (["trigram", "vector", "endpoint"], "high"),
    (["like"], "medium"),
    (["trigram", "trigram"], "medium"),
    (["trigram", "endpoint"], "medium"),
    (["vector"], "low"),
    (["endpoint"], "low"),
    (["vector", "endpoint"], "low"),
    ([], "low"),
])
def test_agreement(methods, label) -> None:
    assert scoring.agreement(methods) == label


# --- the recipe on the seeded store -----------------------------------------------------
def _retrieve(store, terms, **cfg):
    from tests.query_fixtures import _EMBEDDER
    return retrieve(store, "default", terms, [], SearchConfig(**cfg),
                    lambda: _EMBEDDER.embed_query(" ".join(terms)))


def test_rrf_recipe_finds_top_entity_without_duplicates(seeded_store) -> None:
    r = _retrieve(seeded_store, ["PostgreSQL"], recipe="rrf")
    assert r.metrics["recipe"] == "rrf"
    assert r.entities[0]["name"] == "PostgreSQL"
    assert r.entities[0]["agreement"] == "high"  # LIKE + trigram + vector at least
    ids = [e["id"] for e in r.entities]
    assert len(ids) == len(set(ids))
    fact_ids = [f["id"] for f in r.facts]
    assert fact_ids and len(fact_ids) == len(set(fact_ids))
    fused = [e["fused"] for e in r.entities if "fused" in e]
    assert fused == sorted(fused, reverse=True)
    assert all(e["agreement"] in LABELS for e in r.entities)
    assert all(f["agreement"] in LABELS for f in r.facts)
    # every fact keeps both ends, and the vector list always ran (no threshold in rrf)
    known = set(ids)
    assert all(f["subject_id"] in known and f["object_id"] in known for f in r.facts)
    assert "entity_vector" in r.metrics["results"] and "fact_vector" in r.metrics["results"]


def test_rrf_recipe_respects_limits(seeded_store) -> None:
    r = _retrieve(seeded_store, ["Lovelace", "Babbage"], recipe="rrf", entity_limit=2,
                  fact_limit=3)
    ranked = [e for e in r.entities if e["methods"] != ["endpoint"]]
    assert len(ranked) <= 2 and len(r.facts) <= 3
    assert {"Ada Lovelace", "Charles Babbage"} <= {e["name"] for e in ranked}


def test_split_recipe_rows_carry_agreement(seeded_store) -> None:
    r = _retrieve(seeded_store, ["punched"], entity_limit=1, fallback_ratio=0)
    assert r.entities and r.facts
    assert all(e["agreement"] in LABELS for e in r.entities + r.facts)
    assert all(e["agreement"] == "low" for e in r.entities if e["methods"] == ["endpoint"])


def test_unknown_recipe_is_rejected() -> None:
    with pytest.raises(ValueError, match="recipe must be one of split, rrf"):
        _retrieve(None, ["x"], recipe="magic")  # rejected before any database work


def test_unknown_recipe_in_context_names_accepted_values() -> None:
    with pytest.raises(InvalidQueryError, match=re.escape("recipe must be one of split, rrf")):
        query_flow.invoke({"query": "q"}, context={"recipe": "magic"})


def test_query_flow_runs_with_rrf_recipe(resources) -> None:
    out = query_flow.invoke({"query": "Who worked with Charles Babbage?"},
                            context={"recipe": "rrf"})
    assert out["search_metrics"]["recipe"] == "rrf"
    assert "Charles Babbage" in [e["name"] for e in out["entities"]]
    assert all(f["agreement"] in LABELS for f in out["facts"])
