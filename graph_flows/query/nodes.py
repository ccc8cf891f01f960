"""The four nodes of the query graph. Each reads its context, does one thing, returns keys."""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from graph_flows.query import analyze, answer, retrieval, sections
from graph_flows.query.context import QueryContext
from graph_flows.query.mermaid import build_mermaid
from graph_flows.query.state import QueryState
from graph_flows.runtime import get_resources
from prompts import load_prompt
from storage import search

_RELATION_WORDS = {"uses": "uses", "use": "uses", "using": "uses", "contains": "contains",
                   "contain": "contains", "part": "part_of", "defines": "defines",
                   "define": "defines", "mentions": "mentions"}


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
              (1 <= ctx.max_diagram_nodes <= 200, "max_diagram_nodes must be 1..200")]
    for ok, message in checks:
        if not ok:
            raise analyze.InvalidQueryError(message)
    return ctx


def analyze_query(state: QueryState, runtime: Runtime[QueryContext]) -> dict[str, Any]:
    """Entities and intent: LLM structured output, or the heuristic (recorded)."""
    ctx = _ctx(runtime)
    query, hints = analyze.validate_input(state.get("query"), state.get("entity_hints"))
    res = get_resources()
    scope = state.get("scope") or res.settings.scope
    spec = ctx.analysis_model or res.settings.effective_extraction_model
    model = res.chat_model(spec, temperature=ctx.analysis_temperature)
    errors: list[str] = []
    result = None
    if model is not None:
        try:
            result = analyze.llm_analysis(model, query, hints, load_prompt("query_analysis_v1"))
        except Exception as exc:
            errors.append(f"query analysis by LLM failed ({type(exc).__name__}); "
                          "used the heuristic instead")
    if result is None:
        result = analyze.heuristic_analysis(query, hints)
    return {"query": query, "entity_hints": hints, "scope": scope, "analysis": result,
            "errors": errors}


def retrieve_knowledge(state: QueryState, runtime: Runtime[QueryContext]) -> dict[str, Any]:
    """LIKE + trigram (+ vector fallback) inside Postgres; every fact with both ends."""
    ctx = _ctx(runtime)
    res = get_resources()
    terms = analyze.search_terms(state["analysis"])
    predicates = sorted({_RELATION_WORDS[w] for t in terms for w in t.casefold().split()
                         if w in _RELATION_WORDS})
    cfg = retrieval.SearchConfig(
        entity_limit=ctx.entity_limit, fact_limit=ctx.fact_limit, like_share=ctx.like_share,
        fallback_ratio=ctx.fallback_ratio, trigram_threshold=ctx.trigram_threshold)
    engine = res.store.search_engine(int(res.settings.search_timeout_s * 1000))
    found = retrieval.retrieve(engine, state["scope"], terms, predicates, cfg,
                               lambda: res.embeddings.embed_query(state["query"]))
    errors = [f"search method {name} failed and was skipped: {msg}"
              for name, msg in found.metrics["errors"].items()]
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
            closest = search.closest_entities(conn, state["scope"], state["query"][:200])
        text, mode = answer.empty_answer(state["query"], [e.name for e in closest]), "empty"
        emit(text)
        return {"answer": text, "answer_mode": mode, "citations": [], "errors": errors}
    model = res.chat_model(ctx.answer_model or res.settings.chat_model,
                           temperature=ctx.answer_temperature)
    text, mode = "", "llm"
    if model is not None:
        try:
            text = answer.llm_answer(model, state["query"], state.get("definitions", ""),
                                     state.get("facts_text", ""), emit)
        except Exception as exc:
            errors.append(f"answer model failed ({type(exc).__name__}); showing an "
                          "extractive answer instead")
            emit("\n\n") if text else None
            text = ""
    if not text:
        text, mode = answer.extractive_answer(entities, facts), "extractive"
        for line in text.splitlines(keepends=True):
            emit(line)
    cited, unknown = answer.citations(text, facts)
    if unknown:
        errors.append(f"the answer cited {', '.join(unknown)}, which match no retrieved fact")
    return {"answer": text, "answer_mode": mode, "citations": cited, "errors": errors}
