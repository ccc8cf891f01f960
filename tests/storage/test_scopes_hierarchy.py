"""Hierarchical scopes: a query sees its scope and its ancestors'; never a child's or sibling's."""

from __future__ import annotations

import pytest

from graph_flows.query.retrieval import SearchConfig, retrieve
from storage import InvalidInputError
from storage.scopes import list_scopes, scope_chain, set_parent, subtree
from tests.query_fixtures import _EMBEDDER, seed_graph


def _names(store, scope: str, term: str) -> set[str]:
    r = retrieve(store, scope, [term], [], SearchConfig(fallback_ratio=0.0),
                 lambda: _EMBEDDER.embed_query(term))
    return {e["scope"] for e in r.entities}


def test_chain_and_cycles(store) -> None:
    with store.transaction() as c:
        assert set_parent(c, "realm", "platform") == ["realm", "platform"]
        assert set_parent(c, "team-a", "realm") == ["team-a", "realm", "platform"]
        set_parent(c, "team-b", "realm")
        assert scope_chain(c, "unknown") == ["unknown"]
        with pytest.raises(InvalidInputError, match="cycle"):
            set_parent(c, "platform", "team-a")
        with pytest.raises(InvalidInputError, match="invalid scope name"):
            set_parent(c, "bad scope!", None)
    with store.connect() as c:
        assert ("team-a", "realm") in list_scopes(c)
        assert subtree(c, "realm") == ["realm", "team-a", "team-b"]
        assert subtree(c, "platform") == ["platform", "realm", "team-a", "team-b"]
        assert subtree(c, "team-a") == ["team-a"] and subtree(c, "unknown") == ["unknown"]


def test_query_sees_own_and_ancestors_only(store) -> None:
    with store.transaction() as c:
        set_parent(c, "realm", "platform")
        set_parent(c, "team-a", "realm")
        set_parent(c, "team-b", "realm")
    for scope in ("platform", "team-a", "team-b"):
        seed_graph(store, scope=scope, source=f"src-{scope}")
    assert _names(store, "team-a", "Lovelace") == {"team-a", "platform"}
    assert _names(store, "realm", "Lovelace") == {"platform"}
    assert _names(store, "platform", "Lovelace") == {"platform"}
    assert "team-a" not in _names(store, "team-b", "Lovelace")
