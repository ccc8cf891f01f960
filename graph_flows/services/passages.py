"""The ranked passages of a question, without an answer: what a retriever hands out
(:class:`graph_flows.integrations.KragRetriever`).

It runs the one query graph as MCP ``kag_query`` does (``generate_answer=False``: analysis,
the retrieval loop, build_context; no answer model) and returns the passages the retrieval
ranked (recipe ``ppr``; merged over the loop's rounds), before build_context fits them to
the answer prompt's token budget. Passage texts and titles come out of the query graph
already under the injection defence (:func:`graph_flows.shared.untrusted.guard_passage`:
instruction-like spans withheld, tags neutralised), as MCP gives them. Each passage gains the
retrieved entities and facts extracted from it (their provenance): what linked it to the
question in the PageRank graph.

The checks of the retriever's arguments live here too, each one line naming the argument
(a :class:`~graph_flows.services.errors.RequestError`, a ``ValueError``).
"""

from __future__ import annotations

import logging
from typing import Any

from graph_flows.query import analyze, readable
from graph_flows.query.graph import graph
from graph_flows.query.retrieval_base import RECIPES
from graph_flows.services.errors import RequestError
from graph_flows.services.scopes import scope_chains
from graph_flows.shared.dates import DateParseError, require_date
from graph_flows.shared.reads import read_only_request
from graph_flows.shared.resources import get_resources
from graph_flows.shared.scoped import check_scope, in_scope
from storage import InvalidInputError, links

log = logging.getLogger(__name__)

MAX_K = 100
PASSAGE_RECIPES = ("ppr",)
"""The recipes whose retrieval ranks passages (the others rank entities and facts only)."""


def check_k(k: Any) -> int:
    """``k`` (passages to return) when it is an integer 1..MAX_K."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise RequestError(f"k must be an integer 1..{MAX_K}, got {str(k)[:40]!r}.")
    return k


def check_recipe(recipe: Any) -> str | None:
    """``recipe`` when it is None (the run context's default, 'ppr') or a recipe that ranks
    passages."""
    if recipe is None:
        return None
    if recipe not in RECIPES:
        raise RequestError(f"recipe must be one of {', '.join(RECIPES)}, got "
                           f"{str(recipe)[:40]!r}.")
    if recipe not in PASSAGE_RECIPES:
        raise RequestError(f"recipe {recipe!r} ranks no passages (only "
                           f"{', '.join(PASSAGE_RECIPES)} does); use recipe='ppr' or None.")
    return recipe


def check_as_of(as_of: Any) -> str | None:
    """``as_of`` as an ISO string when it is a date (YYYY, YYYY-MM, YYYY-MM-DD, ISO 8601, a
    ``date`` or ``datetime``), None when empty."""
    try:
        when = require_date(as_of, field="as_of")
    except DateParseError as exc:
        raise RequestError(str(exc)) from None
    return None if when is None else when.isoformat()


def check_scope_name(scope: Any) -> str:
    """``scope`` when it is a valid scope name."""
    if not isinstance(scope, str):
        raise RequestError(f"scope must be a scope name, got {str(scope)[:40]!r}.")
    try:
        return check_scope(scope)
    except InvalidInputError as exc:
        said = str(exc)  # "scope contains a control character ..." names the scope itself
        raise RequestError(said if said.startswith("scope ") else f"scope: {said}.") from None


def check_scope_known(store: Any, scope: str) -> str:
    """``scope`` when the store knows it (declared, holding documents or entities, or the
    configured default scope): a typo is an error, not an empty result. (The list is read
    with whole-store access, by :func:`~graph_flows.services.scopes.scope_chains`; only
    the answer leaves here, not other scopes' names.)"""
    known = scope_chains(store, get_resources().settings.scope)
    if scope not in known:
        raise RequestError(f"unknown scope {scope!r}: nothing is stored in it and it is not "
                           "declared (`krag scope list` lists the known scopes).")
    return scope


@read_only_request
@in_scope
def ranked_passages(scope: str, query: str, k: int, *, recipe: str | None = None,
                    max_rounds: int | None = None, as_of: str | None = None,
                    ) -> dict[str, Any]:
    """The first ``k`` passages the query graph's retrieval ranked for ``query`` in
    ``scope`` (``passages``: rank, score, entity and fact links), with its ``rounds`` and
    ``errors``. Arguments are checked as by the check functions above."""
    check_k(k)
    context: dict[str, Any] = {"generate_answer": False}
    if check_recipe(recipe):
        context["recipe"] = recipe
    if max_rounds is not None:
        context["max_rounds"] = max_rounds
    payload: dict[str, Any] = {"query": query, "scope": scope}
    if as_of := check_as_of(as_of):
        payload["as_of"] = as_of
    ranked: list[dict[str, Any]] = []
    final: dict[str, Any] = {}
    try:
        for mode, chunk in graph.stream(payload, context=context,
                                        stream_mode=["updates", "values"]):
            if mode == "updates" and "passages" in (chunk.get("retrieve_knowledge") or {}):
                ranked = chunk["retrieve_knowledge"]["passages"]  # every round: all so far
            elif mode == "values":
                final = chunk
    except analyze.InvalidQueryError as exc:
        log.debug("ranked_passages refused: %s", exc)  # the surface logs it
        raise RequestError(str(exc)) from None
    errors = list(final.get("errors", []))
    if errors:  # e.g. a store without chunk embeddings: recipe 'split', no passages
        (log.info if ranked else log.warning)("ranked_passages in %s: %s", scope,
                                              "; ".join(errors))
    passages = _linked(ranked[:k], final.get("entities", []), final.get("facts", []))
    return {"scope": scope, "query": final.get("query", query), "passages": passages,
            "rounds": list(final.get("rounds", [])), "errors": errors,
            "recipe": (final.get("search_metrics") or {}).get("recipe")}


def _linked(passages: list[dict[str, Any]], entities: list[dict[str, Any]],
            facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``passages`` with their rank (1..), section path and document short name
    (:func:`graph_flows.query.readable.passage_fields`) and the retrieved entities and facts
    extracted from each."""
    if not passages:
        return []
    with get_resources().store.connect() as conn:
        by_chunk = links.chunk_links(conn, [p["id"] for p in passages],
                                     [e["id"] for e in entities], [f["id"] for f in facts])
    ents = {e["id"]: e for e in entities}
    found = {f["id"]: f for f in facts}
    out = []
    for rank, p in enumerate(passages, start=1):
        ent_ids, fact_ids = by_chunk.get(p["id"], ([], []))
        out.append({**p, **readable.passage_fields(p), "rank": rank,
                    "entities": [{"id": i, "name": ents[i]["name"], "type": ents[i]["type"]}
                                 for i in ent_ids],
                    "facts": [{"id": i, "fact": found[i]["fact"],
                               "subject": found[i]["subject"],
                               "predicate": found[i]["predicate"],
                               "object": found[i]["object"]} for i in fact_ids]})
    return out
