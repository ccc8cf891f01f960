"""The four nodes of the query graph. Each reads its context, does one thing, returns keys."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from graph_flows.query import analyze, answer, retrieval, scoring, sections
from graph_flows.query.context import QueryContext
from graph_flows.query.mermaid import build_mermaid
from graph_flows.query.state import QueryState
from graph_flows.shared.resources import get_resources
from prompts import load_prompt
from storage import search

T = TypeVar("T")
# Share of request_timeout_s the query-analysis LLM call may use; the heuristic replaces it
# when it takes longer, so retrieval and the answer keep the rest of the budget.
ANALYSIS_SHARE = 1 / 3


def _ctx(runtime: Runtime[QueryContext] | None) -> QueryContext:
    ctx = getattr(runtime, "context", None)
    if isinstance(ctx, dict):
        ctx = QueryContext(**ctx)
    ctx = ctx or QueryContext()
    checks = [(1 <= ctx.entity_limit <= 100, "entity_limit must be 1..100"),
              (1 <= ctx.fact_limit <= 200, "fact_limit must be 1..200"),
              (0.0 <= ctx.like_share <= 1.0, "like_share must be 0..1"),
              (0.0 <= ctx.fallback_ratio <= 1.0, "fallback_ratio must be 0..1"),
              (0.0 <= ctx.trigram_threshold <= 1.0, "trigram_threshold must be 0..1"),
              (1 <= ctx.max_diagram_nodes <= 200, "max_diagram_nodes must be 1..200"),
              (isinstance(ctx.max_hops, int) and 1 <= ctx.max_hops <= 3,
               f"max_hops must be 1..3 (got {ctx.max_hops!r})"),
              (ctx.recipe in retrieval.RECIPES,
               f"recipe must be one of {', '.join(retrieval.RECIPES)} (got {ctx.recipe!r})")]
    for ok, message in checks:
        if not ok:
            raise analyze.InvalidQueryError(message)
    return ctx


def _as_of(value: Any) -> datetime | None:
    """Parse the optional "as of" date; a bad one is an input error naming the field."""
    if value in (None, ""):
        return None
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        raise analyze.InvalidQueryError(
            f"as_of must be an ISO date such as 2024-05-01 (got {str(value)[:40]!r})") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def analyze_query(state: QueryState, runtime: Runtime[QueryContext]) -> dict[str, Any]:
    """Entities and intent: LLM structured output, or the heuristic (recorded)."""
    ctx = _ctx(runtime)
    query, hints = analyze.validate_input(state.get("query"), state.get("entity_hints"))
    _as_of(state.get("as_of"))  # a bad date fails here, before any work
    res = get_resources()
    scope = state.get("scope") or res.settings.scope
    spec = ctx.analysis_model or res.settings.effective_extraction_model
    model = res.chat_model(spec, temperature=ctx.analysis_temperature)
    budget = res.settings.request_timeout_s
    deadline = state.get("deadline") or time.time() + budget
    errors: list[str] = []
    result = None
    if model is not None:
        try:
            result = call_within(
                lambda: analyze.llm_analysis(model, query, hints,
                                             load_prompt("query_analysis_v1")),
                min(budget * ANALYSIS_SHARE, deadline - time.time()))
        except TimeoutError:
            errors.append(f"query analysis by LLM took longer than its share of the "
                          f"{budget:g} s request budget; used the heuristic instead")
        except Exception as exc:
            errors.append(f"query analysis by LLM failed ({type(exc).__name__}); "
                          "used the heuristic instead")
    if result is None:
        result = analyze.heuristic_analysis(query, hints)
    return {"query": query, "entity_hints": hints, "scope": scope, "analysis": result,
            "errors": errors, "deadline": deadline}


def call_within(fn: Callable[[], T], timeout_s: float) -> T:
    """``fn()`` on a helper thread; :class:`TimeoutError` if it needs over ``timeout_s``
    (the helper is abandoned: it ends with the client's own timeout)."""
    if timeout_s <= 0:
        raise TimeoutError
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=contextvars.copy_context().run, args=(target,),
                              daemon=True, name="krag-analysis")
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise TimeoutError
    if "error" in box:
        raise box["error"]
    return box["value"]


def retrieve_knowledge(state: QueryState, runtime: Runtime[QueryContext]) -> dict[str, Any]:
    """LIKE + trigram (+ vector fallback) inside Postgres; every fact with both ends."""
    ctx = _ctx(runtime)
    res = get_resources()
    terms = analyze.search_terms(state["analysis"])
    predicates = analyze.question_predicates(state["query"], terms)
    cfg = retrieval.SearchConfig(
        entity_limit=ctx.entity_limit, fact_limit=ctx.fact_limit, like_share=ctx.like_share,
        fallback_ratio=ctx.fallback_ratio, trigram_threshold=ctx.trigram_threshold,
        recipe=ctx.recipe, max_hops=ctx.max_hops)
    engine = res.store.search_engine(int(res.settings.search_timeout_s * 1000))
    deadline = state.get("deadline")
    found = retrieval.retrieve(engine, state["scope"], terms, predicates, cfg,
                               lambda: res.embeddings.embed_query(state["query"]),
                               deadline=deadline, as_of=_as_of(state.get("as_of")))
    errors = [f"search method {name} failed and was skipped: {msg}"
              for name, msg in found.metrics["errors"].items()]
    if found.metrics.get("skipped"):
        errors.append(f"the {res.settings.request_timeout_s:g} s request budget was spent; "
                      f"skipped search methods: {', '.join(found.metrics['skipped'])}")
    return {"entities": found.entities, "facts": found.facts,
            "search_metrics": found.metrics, "errors": errors}


def build_context(state: QueryState, runtime: Runtime[QueryContext]) -> dict[str, Any]:
    """<definitions>, numbered <facts> and the Mermaid diagram."""
    ctx = _ctx(runtime)
    facts = [dict(f) for f in state.get("facts", [])]
    sections.label_facts(facts)
    entities = state.get("entities", [])
    return {"facts": facts, "definitions": sections.definitions_text(entities),
            "facts_text": sections.facts_text(facts),
            "mermaid": build_mermaid(entities, facts, ctx.max_diagram_nodes)}


def generate_response(state: QueryState, runtime: Runtime[QueryContext]) -> dict[str, Any]:
    """Stream the answer (LLM, or extractive in no-LLM mode); map citations to facts."""
    ctx = _ctx(runtime)
    res = get_resources()
    write = get_stream_writer()

    def emit(token: str) -> None:
        write({"token": token})

    entities, facts = state.get("entities", []), state.get("facts", [])
    errors: list[str] = []
    if not entities and not facts:
        with res.store.engine.connect() as conn:
            visible = state.get("search_metrics", {}).get("scopes") or state["scope"]
            closest = search.closest_entities(conn, visible, state["query"][:200])
        text, mode = answer.empty_answer(state["query"], [e.name for e in closest]), "empty"
        emit(text)
        return {"answer": text, "answer_mode": mode, "citations": [], "errors": errors,
                "answer_confidence": scoring.answer_confidence([], [])}
    model = res.chat_model(ctx.answer_model or res.settings.chat_model,
                           temperature=ctx.answer_temperature)
    text, mode = "", "llm"
    deadline = state.get("deadline")
    streamed: list[str] = []

    def emit_llm(token: str) -> None:
        streamed.append(token)
        emit(token)

    if model is not None and deadline is not None and deadline <= time.time():
        errors.append(f"the {res.settings.request_timeout_s:g} s request budget was spent "
                      "before the answer model could run; showing an extractive answer")
    elif model is not None:
        try:
            text = answer.llm_answer(model, state["query"], state.get("definitions", ""),
                                     state.get("facts_text", ""), emit_llm, deadline)
        except answer.AnswerTimeoutError:
            errors.append(f"answer model did not finish within the "
                          f"{res.settings.request_timeout_s:g} s request budget; showing an "
                          "extractive answer instead")
            text = ""
        except Exception as exc:
            errors.append(f"answer model failed ({type(exc).__name__}); showing an "
                          "extractive answer instead")
            text = ""
        if not text and streamed:
            emit("\n\n")  # keep the extractive answer apart from the cut-off stream
    if not text:
        text, mode = answer.extractive_answer(entities, facts), "extractive"
        for line in text.splitlines(keepends=True):
            emit(line)
    cited, unknown = answer.citations(text, facts)
    if unknown:
        errors.append(f"the answer cited {', '.join(unknown)}, which match no retrieved fact")
    return {"answer": text, "answer_mode": mode, "citations": cited, "errors": errors,
            "answer_confidence": scoring.answer_confidence(cited, facts)}
