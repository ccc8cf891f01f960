"""Use cases of the query graph: ask (streamed answer) and kag_query (retrieval only).

Both run the one compiled query graph (:mod:`graph_flows.query.graph`); kag_query ends it
after build_context (``QueryContext.generate_answer=False``).
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Callable
from typing import Any

from graph_flows.query import analyze, answer_diagram, answer_kind, confidence, loop, sections
from graph_flows.query.graph import graph
from graph_flows.services.errors import RequestError
from graph_flows.services.records import entity_record, relation_record
from graph_flows.shared.reads import read_only_request
from graph_flows.shared.resources import build_resources, get_resources, use_resources
from graph_flows.shared.scoped import in_scope
from graph_flows.shared.settings import Settings
from graph_flows.shared.untrusted import MARKER, for_prompt, withheld_counts
from storage import facts

log = logging.getLogger(__name__)

MAX_HOPS = 3
MAX_LIMIT = 100
MAX_ROUNDS = loop.MAX_ROUNDS
WHO_ASKED = {"question": "the question", "llm": "the planner", "rules": "the no-LLM rules"}


def build_request(
    question: str, scope: str | None = None, as_of: str | None = None,
    model: str | None = None, max_hops: int | None = None, max_rounds: int | None = None,
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
    if max_rounds is not None:
        check_rounds(max_rounds)
        context["max_rounds"] = max_rounds
    return payload, context


@read_only_request
def run_query_streaming(
    payload: dict[str, Any], context: dict[str, Any], on_token: Callable[[str], Any],
    on_round: Callable[[dict[str, Any]], Any] | None = None,
) -> dict[str, Any]:
    """Run the query graph, calling ``on_token`` for each streamed token and ``on_round``
    (when given) with each retrieval round's record as the loop decides after it; return
    the output."""
    final: dict[str, Any] = {}
    for mode, chunk in graph.stream(payload, context=context,
                                    stream_mode=["custom", "values"]):
        if mode == "custom" and "token" in chunk:
            on_token(chunk["token"])
        elif mode == "custom" and "round" in chunk:
            if on_round is not None:
                on_round(chunk["round"])
        elif mode == "values":
            final = chunk
    return final


@read_only_request
@in_scope
def ask(
    settings: Settings, question: str, on_token: Callable[[str], Any], *,
    scope: str | None = None, as_of: str | None = None, model: str | None = None,
    max_hops: int | None = None, max_rounds: int | None = None,
    on_round: Callable[[dict[str, Any]], Any] | None = None,
) -> dict[str, Any]:
    """Answer ``question`` with resources built from ``settings`` (as `krag ask` does);
    ``on_round`` sees each retrieval round as it ends."""
    payload, context = build_request(question, scope, as_of, model, max_hops, max_rounds)
    with use_resources(build_resources(settings)):
        return run_query_streaming(payload, context, on_token, on_round)


def check_hops(max_hops: int) -> None:
    """The one check (and message) of ``max_hops`` for every surface."""
    _check(1 <= max_hops <= MAX_HOPS, f"max_hops must be 1..{MAX_HOPS}, got {max_hops}.")


def check_rounds(max_rounds: Any) -> None:
    """The one check (and message) of ``max_rounds`` for every surface (the query graph's
    own, :func:`graph_flows.query.loop.check_rounds`)."""
    message = loop.check_rounds(max_rounds)
    _check(message is None, message or "")


def round_line(record: dict[str, Any]) -> str:
    """One plain line of a retrieval round (``rounds`` of the output): its number, what it
    searched and who asked (the question, the planner, the no-LLM rules), the bridge entity,
    what it added, its milliseconds and planner spend, and why the loop stopped after it."""
    by = record.get("by", "")
    added = record.get("added") or {}
    if by == "question":
        what, sign = "the question", ""
    else:
        bridge = f", bridge: {_plain(record['bridge'])}" if record.get("bridge") else ""
        what = f"{_plain(record.get('query', ''))} (asked by {WHO_ASKED.get(by, by)}{bridge})"
        sign = "+"
    counts = ", ".join(f"{sign}{_count(added.get(k, 0), k)}"
                       for k in ("passages", "facts", "entities"))
    line = (f"round {record.get('round', '?')}: {what} — {counts}, "
            f"{float(record.get('ms') or 0):.0f} ms")
    if record.get("calls"):
        line += (f", planner {_count(record['calls'], 'calls')}, "
                 f"{_count(record.get('tokens') or 0, 'tokens')}")
    if record.get("stop"):
        line += f"; stopped: {record['stop']}"
    return line


def _plain(text: Any, limit: int = 200) -> str:
    """``text`` (a model's words) on one line, without control characters (no terminal
    escape sequences), at most ``limit`` characters."""
    words = "".join(c for c in str(text) if unicodedata.category(c) != "Cc" or c.isspace())
    return " ".join(words.split())[:limit]


_SINGULAR = {"passages": "passage", "facts": "fact", "entities": "entity", "calls": "call",
             "tokens": "token"}


def _count(n: int, plural: str) -> str:
    return f"{n} {_SINGULAR[plural] if n == 1 else plural}"


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise RequestError(message)


@read_only_request
@in_scope
def kag_query(
    scope: str, query: str, entities: list[str] | None = None, include_relations: bool = True,
    max_hops: int = 1, limit: int = 20, source_id: str | None = None,
    recipe: str | None = None, max_rounds: int | None = None,
) -> dict[str, Any]:
    """Entities, facts and a formatted context for ``query`` in ``scope`` (no answer);
    ``passages`` (and a Passages part of the context) when the recipe ranked passages;
    ``rounds``: the retrieval rounds (at most ``max_rounds``, default KRAG_MAX_ROUNDS);
    ``confidence``: how likely the context answers the question (:func:`context_confidence`),
    also the context's last line; ``mermaid``: the diagram of that no-LLM answer, as
    `krag ask` draws it ("" when the label is ``none``)."""
    check_hops(max_hops)
    if max_rounds is not None:
        check_rounds(max_rounds)
    _check(1 <= limit <= MAX_LIMIT, f"limit must be 1..{MAX_LIMIT}, got {limit}.")
    if source_id is not None:
        source_id = source_id.strip()
        _check(0 < len(source_id) <= 500, "source_id must be 1..500 characters.")
    # Named entities anchor the query: no vector fill-up diluting them.
    context = {"entity_limit": limit, "fact_limit": limit, "max_hops": max_hops,
               "fallback_ratio": 0.0 if entities else 0.5, "generate_answer": False}
    if recipe:
        context["recipe"] = recipe
    if max_rounds is not None:
        context["max_rounds"] = max_rounds
    try:
        state = graph.invoke({"query": query, "scope": scope,
                              "entity_hints": list(entities or [])}, context=context)
    except analyze.InvalidQueryError as exc:
        log.debug("kag_query refused: %s", exc)  # the surface logs it
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
    definitions = _drawn(state, "definitions", "entities", ents, sections.definitions_text)
    facts_text = _drawn(state, "facts_text", "facts", rels, sections.facts_text)
    asked, _ = for_prompt(query.strip()[:500])
    text = f"Knowledge Graph Results for: {asked}\n\n## Entities\n" + (
        definitions or "(none found)")
    if include_relations:
        text += "\n\n## Facts\n" + (facts_text or "(none found)")
    passages = _passages(state, source_id)
    withheld = withheld_counts(passages)
    if passages:
        text += "\n\n## Passages\n" + _drawn(state, "passages_text", "passages", passages,
                                                 sections.passages_text)
    if withheld["passages"]:
        text += "\n\nNote: " + withheld_notice(withheld)
    with answer_kind.parsed_once():  # the label and the diagram read the same sentences
        said, label = context_answer(state, query, rels, passages)
        drawn = _diagram(scope, state, query, said, label["label"], ents, rels, passages)
    text += f"\n\nConfidence: {label['label']} — {label['reason']}"
    out = {
        "scope": scope, "query": state.get("query", query),
        "entities": [entity_record(e) for e in ents],
        "relations": [relation_record(f) for f in rels],
        "context": text, "definitions": definitions, "facts_text": facts_text,
        "total_entities": len(ents), "total_relations": len(rels),
        "total": len(ents) + len(rels), "confidence": label,
        "mermaid": drawn,
        "rounds": guard_rounds(state.get("rounds", [])),
        "errors": list(state.get("errors", [])),
    }
    if passages:
        out["passages"] = passages
        out["withheld"] = withheld
    return out


def _drawn(state: dict[str, Any], key: str, of: str, rows: list[dict[str, Any]],
           write: Callable[[list[dict[str, Any]]], str]) -> str:
    """``write(rows)``: the section text of ``rows`` (:mod:`graph_flows.query.sections`),
    taken from the state's ``key`` when the graph's build_context wrote it from the same
    rows (the state's ``of``, equal to ``rows``: the same function of the same input),
    else written here (kag_query keeps fewer entities or facts, or one source's
    passages)."""
    made = state.get(key)
    if isinstance(made, str) and state.get(of) == rows:
        return made
    return write(rows)


def context_confidence(state: dict[str, Any], query: str, rels: list[dict[str, Any]],
                       passages: list[dict[str, Any]]) -> dict[str, str]:
    """How likely this context answers ``query``: the confidence label and reason
    (:mod:`graph_flows.query.confidence`) of the no-LLM answer from the facts and passages
    returned, as `krag ask` would label it."""
    return context_answer(state, query, rels, passages)[1]


def context_answer(state: dict[str, Any], query: str, rels: list[dict[str, Any]],
                   passages: list[dict[str, Any]]) -> tuple[str, dict[str, str]]:
    """The no-LLM answer from the facts and passages returned and its confidence label
    (:func:`context_confidence`); no answer ("") when there is nothing to answer from."""
    if not rels and not passages:
        return "", {"label": "none", "reason": "The context holds no facts or passages."}
    return confidence.extractive_with_confidence(state.get("query", query), _names(state),
                                                 rels, passages)


def _names(state: dict[str, Any]) -> list[str]:
    return [*(state.get("analysis") or {}).get("entities", []),
            *state.get("entity_hints", [])]


def _diagram(scope: str, state: dict[str, Any], query: str, said: str, label: str,
             ents: list[dict[str, Any]], rels: list[dict[str, Any]],
             passages: list[dict[str, Any]]) -> str:
    """The Mermaid diagram of the no-LLM answer ``said`` (as `krag ask` draws it); "" when
    its label is ``none``."""
    if label == "none":
        return ""
    visible = (state.get("search_metrics") or {}).get("scopes") or scope
    with get_resources().store.connect() as conn:
        return answer_diagram.context_diagram(
            conn, visible, state.get("query", query), _names(state), said, label, ents,
            rels, passages, rounds=state.get("rounds") or [])


def guard_rounds(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rounds ready for an agent (kag_query's result): each searched query, reason and
    bridge entity with instruction-like spans withheld and tags neutralised, as the
    question in its context (a planner's words may echo document text)."""
    return [{**r, **{k: for_prompt(str(r.get(k) or ""))[0] for k in ("query", "why", "bridge")}}
            for r in rounds]


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
