"""Scope use cases: declare a scope's parent, list scopes, every known scope with its chain."""

from __future__ import annotations

import logging

from graph_flows.shared.scoped import whole_store_access
from storage import KnowledgeStore, synonyms
from storage import scopes as scope_store

log = logging.getLogger(__name__)


@whole_store_access()  # the scope and its descendants' synonym edges
def set_parent(store: KnowledgeStore, name: str, parent: str | None) -> list[str]:
    """Declare ``name`` (a root, or a child of ``parent``); its chain, nearest first. The
    synonym edges of the entities of ``name`` and its descendants are computed again.
    A bad name or a cycle raises :class:`storage.errors.InvalidInputError`."""
    with store.transaction() as conn:
        chain = scope_store.set_parent(conn, name, parent)
        # the scope and its descendants see other ancestors now: their synonym edges again
        moved = scope_store.subtree(conn, name)
        synonyms.reset(conn, moved)
        synonyms.fill(conn, scope_names=moved)
    return chain


@whole_store_access()  # an admin's listing: scopes holding documents
def list_scopes(store: KnowledgeStore) -> list[tuple[str, str | None]]:
    """Declared scopes and scopes holding documents, with their parents."""
    with store.connect() as conn:
        return scope_store.list_scopes(conn)


@whole_store_access()  # scopes holding entities (the UI's scope picker)
def scope_chains(store: KnowledgeStore, default: str) -> dict[str, list[str]]:
    """Every known scope (declared, holding documents or entities, or ``default``), sorted by
    name, mapped to its chain: the scope, then its ancestors, nearest first."""
    parents = dict(list_scopes(store))
    names = sorted({default, *parents, *store.held_scopes()})
    return {name: chain_of(name, parents) for name in names}


def chain_of(scope: str, parents: dict[str, str | None]) -> list[str]:
    """``scope`` followed by its ancestors in ``parents`` (stops at a repeat or the depth cap)."""
    chain = [scope]
    while ((parent := parents.get(chain[-1])) and parent not in chain
           and len(chain) < scope_store.MAX_DEPTH):
        chain.append(parent)
    return chain
