"""Use cases of the query graph: ask (streamed answer) and kag_query (retrieval only).

Both run the one compiled query graph (:mod:`graph_flows.query.graph`); kag_query ends it
after build_context (``QueryContext.generate_answer=False``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from graph_flows.query import analyze, sections
from graph_flows.query.graph import graph
from graph_flows.services.errors import RequestError
from graph_flows.services.records import entity_record, relation_record
from graph_flows.shared.resources import build_resources, get_resources, use_resources
from graph_flows.shared.scoped import in_scope
from graph_flows.shared.settings import Settings
from graph_flows.shared.untrusted import MARKER, for_prompt, withheld_counts
from storage import facts

log = logging.getLogger(__name__)

MAX_HOPS = 3
MAX_LIMIT = 100


def build_request(
    question: str, scope: str | None = None, as_of: str | None = None,
    model: str | None = None, max_hops: int | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(graph input, run context) of a question from plain arguments (None = default)."""
    payload: dict[str, Any] = {"query": question}
    if scope:
        payload["scope"] = scope
    if as_of:
        payload["as_of"] = as_of
    context: dict[str, Any] = {"answer_model": model} if model else {}
    if max_hops is not None:
        check_hops(max_hops)
        context["max_hops"] = max_hops
    return payload, context


def run_query_streaming(
    payload: dict[str, Any], context: dict[str, Any], on_token: Callable[[str], Any]
) -> dict[str, Any]:
    """Run the query graph, calling ``on_token`` for each streamed token; return the output."""
    final: dict[str, Any] = {}
    for mode, chunk in graph.stream(payload, context=context,
                                    stream_mode=["custom", "values"]):
        if mode == "custom" and "token" in chunk:
            on_token(chunk["token"])
        elif mode == "values":
            final = chunk
    return final


@in_scope
def ask(
    settings: Settings, question: str, on_token: Callable[[str], Any], *,
    scope: str | None = None, as_of: str | None = None, model: str | None = None,
    max_hops: int | None = None,
) -> dict[str, Any]:
    """Answer ``question`` with resources built from ``settings`` (as `krag ask` does)."""
    payload, context = build_request(question, scope, as_of, model, max_hops)
    with use_resources(build_resources(settings)):
        return run_query_streaming(payload, context, on_token)


def check_hops(max_hops: int) -> None:
    """The one check (and message) of ``max_hops`` for every surface."""
    _check(1 <= max_hops <= MAX_HOPS, f"max_hops must be 1..{MAX_HOPS}, got {max_hops}.")


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise RequestError(message)


@in_scope
def kag_query(
    scope: str, query: str, entities: list[str] | None = None, include_relations: bool = True,
    max_hops: int = 1, limit: int = 20, source_id: str | None = None,
    recipe: str | None = None,
) -> dict[str, Any]:
    """Entities, facts and a formatted context for ``query`` in ``scope`` (no answer);
    ``passages`` (and a Passages part of the context) when the recipe ranked passages."""
    check_hops(max_hops)
    _check(1 <= limit <= MAX_LIMIT, f"limit must be 1..{MAX_LIMIT}, got {limit}.")
    if source_id is not None:
        source_id = source_id.strip()
        _check(0 < len(source_id) <= 500, "source_id must be 1..500 characters.")
    # Named entities anchor the query: no vector fill-up diluting them.
    context = {"entity_limit": limit, "fact_limit": limit, "max_hops": max_hops,
               "fallback_ratio": 0.0 if entities else 0.5, "generate_answer": False}
    if recipe:
        context["recipe"] = recipe
    try:
        state = graph.invoke({"query": query, "scope": scope,
                              "entity_hints": list(entities or [])}, context=context)
    except analyze.InvalidQueryError as exc:
        log.info("kag_query refused: %s", exc)
        raise RequestError(str(exc)) from None
    found, ents = list(state.get("facts", [])), list(state.get("entities", []))
    if source_id:
        found, ents = _from_source(scope, found, ents, source_id)
    rels = found[:limit] if include_relations else []
    ends = {f[k] for f in rels for k in ("subject_id", "object_id")}
    retrieved = [e for e in ents if e.get("methods") != ["endpoint"]][:limit]
    shown = {e["id"] for e in retrieved}
    ents = retrieved + [e for e in ents if e["id"] in ends and e["id"] not in shown]
    sections.label_facts(rels)
    definitions, facts_text = sections.definitions_text(ents), sections.facts_text(rels)
    asked, _ = for_prompt(query.strip()[:500])
    text = f"Knowledge Graph Results for: {asked}\n\n## Entities\n" + (
        definitions or "(none found)")
    if include_relations:
        text += "\n\n## Facts\n" + (facts_text or "(none found)")
    passages = _passages(state, source_id)
    withheld = withheld_counts(passages)
    if passages:
        text += "\n\n## Passages\n" + sections.passages_text(passages)
    if withheld["passages"]:
        text += "\n\nNote: " + withheld_notice(withheld)
    out = {
        "scope": scope, "query": state.get("query", query),
        "entities": [entity_record(e) for e in ents],
        "relations": [relation_record(f) for f in rels],
        "context": text, "definitions": definitions, "facts_text": facts_text,
        "total_entities": len(ents), "total_relations": len(rels),
        "total": len(ents) + len(rels), "errors": list(state.get("errors", [])),
    }
    if passages:
        out["passages"] = passages
        out["withheld"] = withheld
    return out


def withheld_notice(counts: dict[str, int]) -> str:
    """One line for people and agents: passages were partly withheld, and why."""
    n = counts["passages"]
    return (f"{n} passage{'s' if n != 1 else ''} partly withheld: instruction-like text "
            f"in the source documents is shown as {MARKER} (docs/SECURITY.md).")


def _passages(state: dict[str, Any], source_id: str | None) -> list[dict[str, Any]]:
    """The ranked passages of the state (recipe "ppr"), only those of ``source_id`` when
    given, labelled P1..Pn."""
    rows = [dict(p) for p in state.get("passages", [])
            if not source_id or p.get("source") == source_id]
    for i, p in enumerate(rows, start=1):
        p["label"] = f"P{i}"
    return rows


def _from_source(
    scope: str, found: list[dict[str, Any]], ents: list[dict[str, Any]], source_id: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The facts and entities with provenance in ``source_id``."""
    found = [f for f in found if any(s["source"] == source_id for s in f.get("sources", []))]
    with get_resources().store.connect() as conn:
        keep = facts.entities_with_source(conn, scope, [e["id"] for e in ents], source_id)
    return found, [e for e in ents if e["id"] in keep]
