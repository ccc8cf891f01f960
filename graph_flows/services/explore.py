"""Explore use cases: find entities by name, an entity's neighbourhood (facts, neighbours),
and its facts as a person reads them (:func:`fact_groups`: each sentence once, with its
relations).

The look-ups read the scope and its ancestors, like a query does.
"""

from __future__ import annotations

import logging
from typing import Any

from graph_flows.shared.control_chars import CONTROL
from graph_flows.shared.reads import read_only_request
from graph_flows.shared.scoped import in_scope
from storage import KnowledgeStore, search
from storage.ids import normalize_name
from storage.scopes import scope_chain

log = logging.getLogger(__name__)


@read_only_request
@in_scope
def find_entities(store: KnowledgeStore, scope: str, term: str, limit: int = 10) -> list[Any]:
    """Entities of ``scope`` or its ancestors whose name matches ``term`` (exact, substring,
    then trigram-fuzzy); control characters in ``term`` are dropped (a NUL cannot be
    searched: graph_flows.shared.control_chars), as a search box is typed into live."""
    term = CONTROL.sub("", term).strip()[:200]
    if not term:
        return []
    with store.connect() as conn:
        chain = scope_chain(conn, scope)
        hits = search.entity_exact(conn, chain, [normalize_name(term)])
        hits += search.entity_like(conn, chain, [term], limit)
        hits += search.entity_fuzzy(conn, chain, [term], limit)
    seen: dict[str, Any] = {}
    for hit in hits:
        seen.setdefault(hit.entity.id, hit.entity)
    return list(seen.values())[:limit]


@read_only_request
@in_scope
def neighbourhood(store: KnowledgeStore, scope: str, entity_id: str,
                  limit: int = 30) -> dict[str, Any]:
    """An entity, its facts (with both endpoint names) and its neighbours ({} if unknown)."""
    with store.connect() as conn:
        chain = scope_chain(conn, scope)
        (entity,) = search.entities_by_ids(conn, chain, [entity_id]) or (None,)
        if entity is None:
            return {}
        facts = [h.fact for h in search.fact_by_endpoints(conn, chain, [entity_id], [], [],
                                                          limit)]
        ids = {f.subject_id for f in facts} | {f.object_id for f in facts} | {entity_id}
        names = {e.id: e for e in search.entities_by_ids(conn, chain, list(ids))}
    rows = [{"id": f.id, "subject_id": f.subject_id, "object_id": f.object_id,
             "predicate": f.predicate, "predicate_text": f.predicate_text, "fact": f.fact,
             "subject": names[f.subject_id].name if f.subject_id in names else "?",
             "object": names[f.object_id].name if f.object_id in names else "?"}
            for f in facts]
    neighbours = [names[i] for i in dict.fromkeys(
        f.object_id if f.subject_id == entity_id else f.subject_id for f in facts)
        if i in names and i != entity_id]
    return {"entity": entity, "facts": rows, "neighbours": neighbours}


GENERIC = "relates_to"
"""The predicate of a relation that says only that two things are named together."""


def relation_text(fact: dict[str, Any]) -> str:
    """A fact's relation as stated ("was based on"), else its type in words ("relates to")."""
    text = " ".join(str(fact.get("predicate_text") or "").split())
    return text or str(fact.get("predicate") or "").replace("_", " ")


def fact_groups(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each fact sentence once, in order of first appearance: ``{"fact", "relations",
    "ids"}`` where ``relations`` are its (subject, relation text, object) triples, each
    once, a pair's generic "relates to" dropped when the sentence states a relation of the
    same pair, and ``ids`` the ids of its facts (one sentence often yields several)."""
    groups: dict[str, dict[str, Any]] = {}
    for f in facts:
        sentence = " ".join(str(f.get("fact", "")).split())
        group = groups.setdefault(sentence, {"fact": sentence, "relations": [], "ids": [],
                                             "_generic": set()})
        triple = (str(f.get("subject", "?")), relation_text(f), str(f.get("object", "?")))
        if triple not in group["relations"]:
            group["relations"].append(triple)
        if f.get("predicate") == GENERIC and not f.get("predicate_text"):
            group["_generic"].add(triple)
        group["ids"].append(f.get("id"))
    for group in groups.values():
        generic = group.pop("_generic")
        stated = {(s, o) for s, r, o in group["relations"] if (s, r, o) not in generic}
        group["relations"] = [t for t in group["relations"]
                              if t not in generic or (t[0], t[2]) not in stated]
    return list(groups.values())
