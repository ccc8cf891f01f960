"""The five nodes of the query graph. Each reads its context, does one thing, returns keys.

Model calls run in the node's own thread, bounded by the request budget through the
clients' own timeouts (a model built for the remaining budget): nothing is left running
when a node gives up. A failure the user sees as one line in ``errors`` keeps its cause in
the log.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from graph_flows.query import (
    analyze,
    answer,
    answer_diagram,
    answer_kind,
    confidence,
    extractive,
    follow_up,
    guess_search,
    loop,
    planner,
    retrieval,
    second_hop,
    sections,
)
from graph_flows.query.context import QueryContext
from graph_flows.query.state import LoopState, QueryState
from graph_flows.shared.dates import DateParseError, require_date
from graph_flows.shared.resources import get_resources
from graph_flows.shared.untrusted import withheld_counts
from prompts import load_prompt
from storage import search

log = logging.getLogger(__name__)
# Share of request_timeout_s the query-analysis LLM call may use; the heuristic replaces it
# when it takes longer, so retrieval and the answer keep the rest of the budget.
ANALYSIS_SHARE = 1 / 3
# Share of the time left that one follow-up planning call may use (the rest is for the next
# round and the answer).
PLANNER_SHARE = 1 / 3


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
              (1 <= ctx.passage_tokens <= 20000, "passage_tokens must be 1..20000"),
              (isinstance(ctx.max_hops, int) and 1 <= ctx.max_hops <= 3,
               f"max_hops must be 1..3 (got {ctx.max_hops!r})"),
              (ctx.max_rounds is None or loop.check_rounds(ctx.max_rounds) is None,
               loop.check_rounds(ctx.max_rounds) or ""),
              (ctx.recipe in retrieval.RECIPES,
               f"recipe must be one of {', '.join(retrieval.RECIPES)} (got {ctx.recipe!r})")]
    for ok, message in checks:
        if not ok:
            raise analyze.InvalidQueryError(message)
    return ctx


def _as_of(value: Any) -> datetime | None:
    """Parse the optional "as of" date (a bare year means its first day); a bad one is an
    input error naming the field."""
    try:
        return require_date(value, field="as_of")
    except DateParseError as exc:
        raise analyze.InvalidQueryError(str(exc)) from None


def context_first(node: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate the graph's first node: the run context is checked (:func:`_ctx`) before
    the node's other wrappers open anything (the store, an embedded server), so a bad
    context is one line and nothing started."""
    @functools.wraps(node)
    def run(state: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        _ctx(kwargs.get("runtime"))
        return node(state, *args, **kwargs)
    return run


def analyze_query(state: QueryState, runtime: Runtime[QueryContext]) -> dict[str, Any]:
    """Entities and intent: LLM structured output, or the heuristic (recorded)."""
    ctx = _ctx(runtime)
    query, hints = analyze.validate_input(state.get("query"), state.get("entity_hints"))
    _as_of(state.get("as_of"))  # a bad date fails here, before any work
    res = get_resources()
    scope = state.get("scope") or res.settings.scope
    budget = res.settings.request_timeout_s
    deadline = state.get("deadline") or time.time() + budget
    result, errors = _llm_analysis(res, ctx, query, hints,
                                   min(budget * ANALYSIS_SHARE, deadline - time.time()))
    if result is None:
        result = analyze.heuristic_analysis(query, hints)
    return {"query": query, "entity_hints": hints, "scope": scope, "analysis": result,
            "errors": errors, "deadline": deadline}


def _llm_analysis(res: Any, ctx: QueryContext, query: str, hints: list[str],
                  share_s: float) -> tuple[dict[str, Any] | None, list[str]]:
    """The analysis model's answer within ``share_s`` (its client gives up then), or None
    and the line saying why the heuristic is used."""
    if share_s <= 0:
        return None, []
    spec = ctx.analysis_model or res.settings.effective_extraction_model
    model = res.chat_model(spec, temperature=ctx.analysis_temperature, timeout_s=share_s)
    if model is None:
        return None, []
    call_deadline = time.time() + share_s
    try:
        return analyze.llm_analysis(model, query, hints,
                                    load_prompt("query_analysis_v2")), []
    except Exception as exc:
        log.warning("query analysis by %s failed; using the heuristic", spec, exc_info=True)
        if answer.budget_spent(call_deadline):
            return None, [f"query analysis by LLM took longer than its share of the "
                          f"{res.settings.request_timeout_s:g} s request budget; used the "
                          "heuristic instead"]
        return None, [f"query analysis by LLM failed ({type(exc).__name__}); "
                      "used the heuristic instead"]


def retrieve_knowledge(state: LoopState, runtime: Runtime[QueryContext]) -> dict[str, Any]:
    """One retrieval round: the question (round 1) or assess_evidence's follow-up, searched
    inside Postgres (LIKE + trigram (+ vector fallback), and for recipe 'ppr' passages and
    facts ranked by PageRank); a follow-up's evidence is merged into the evidence so far
    (graph_flows.query.loop) and its round recorded."""
    ctx = _ctx(runtime)
    follow = state.get("follow_up")
    rounds = [dict(r) for r in state.get("rounds") or []]
    if not follow:
        found = _search(ctx, state, state["query"], state["analysis"])
        vector = found.pop("vector", None)
        if vector is not None:  # a follow-up from hop-1 passages matches the same question
            found["question_vector"] = vector
        record = loop.new_round(1, state["query"], "the question", "question")
        record["ms"] = found["search_metrics"].get("total_ms", 0.0)
        record["added"] = {"passages": len(found.get("passages", [])),
                           "facts": len(found["facts"]),
                           "entities": len(found["entities"])}
        return {**found, "rounds": [record]}
    if follow.get("hops"):
        merged, added, own = second_hop.run_round(state, follow, _asked_names(state),
                                                  _as_of(state.get("as_of")))
        record = loop.new_round(len(rounds) + 1, own.pop("query"), follow.get("why", ""),
                                "rules") | own | {"added": added}
        return {**merged, "rounds": [*rounds, record], "follow_up": None}
    if follow.get("by") == "llm":
        analysis = analyze.heuristic_analysis(follow["query"], [follow["bridge"]]
                                              if follow.get("bridge") else [])
        found = _search(ctx, state, follow["query"], analysis)
        merged, added = loop.merge_evidence(state, found, loop.LLM_HEAD,
                                            entity_limit=ctx.entity_limit,
                                            fact_limit=ctx.fact_limit)
    else:  # a guess brings one document: only what decides it is searched (guess_search)
        found = _search(ctx, state, follow["query"], None)
        merged, added = loop.merge_guess(state, found)
    if merged["passages"]:
        merged["search_metrics"]["withheld"] = withheld_counts(merged["passages"])
    record = loop.new_round(len(rounds) + 1, follow["query"], follow.get("why", ""),
                            follow.get("by", ""), follow.get("bridge", ""))
    record |= {"ms": found["search_metrics"].get("total_ms", 0.0), "added": added}
    return {**merged, "rounds": [*rounds, record], "follow_up": None,
            "errors": found["errors"]}


def _search(ctx: QueryContext, state: QueryState, query: str,
            analysis: dict[str, Any] | None) -> dict[str, Any]:
    """Entities, facts, passages (recipe 'ppr'), metrics, error lines and the query's
    ``vector`` of one search; without ``analysis``, a rule round's search
    (graph_flows.query.guess_search) in round 1's scopes."""
    res = get_resources()
    cfg = retrieval.SearchConfig(
        entity_limit=ctx.entity_limit, fact_limit=ctx.fact_limit, like_share=ctx.like_share,
        fallback_ratio=ctx.fallback_ratio, trigram_threshold=ctx.trigram_threshold,
        recipe=ctx.recipe, max_hops=ctx.max_hops)
    engine = res.store.search_engine(int(res.settings.search_timeout_s * 1000))
    embed = partial(res.embeddings.embed_query, query)
    as_of, deadline = _as_of(state.get("as_of")), state.get("deadline")
    if analysis is None:
        chain = (state.get("search_metrics") or {}).get("scopes") or [state["scope"]]
        found = guess_search.retrieve_guess(engine, chain, query, cfg, embed,
                                            deadline=deadline, as_of=as_of)
    else:
        terms = analyze.search_terms(analysis)
        found = retrieval.retrieve(engine, state["scope"], terms,
                                   analyze.question_predicates(query, terms), cfg, embed,
                                   deadline=deadline, as_of=as_of, question=query)
    errors = [f"search method {name} failed and was skipped: {msg}"
              for name, msg in found.metrics["errors"].items()]
    errors += found.metrics.get("notices", [])
    if found.metrics.get("skipped"):
        errors.append(f"the {res.settings.request_timeout_s:g} s request budget was spent; "
                      f"skipped search methods: {', '.join(found.metrics['skipped'])}")
    out = {"entities": found.entities, "facts": found.facts,
           "search_metrics": found.metrics, "errors": errors, "vector": found.vector}
    if found.passages:  # recipe "ppr" only: the other recipes' output stays as it was
        out["passages"] = found.passages
        found.metrics["withheld"] = withheld_counts(found.passages)
    return out


def assess_evidence(state: QueryState, runtime: Runtime[QueryContext]) -> dict[str, Any]:
    """Decide after each round: the evidence is enough (or the loop is bounded: max_rounds,
    the deadline, a recipe without passages) -> build_context; else the next round's query,
    from the planner model or, when on, the no-LLM assessment. Emits the round as a custom
    stream event ``{"round": ...}``."""
    ctx = _ctx(runtime)
    rounds = [dict(r) for r in state.get("rounds") or []]
    last = rounds[-1]
    decision = _decide(ctx, state, rounds)
    errors = decision.pop("errors", [])
    last |= {k: decision.pop(k) for k in ("calls", "tokens") if k in decision}
    last["stop"] = decision.get("stop")
    follow = None if decision.get("stop") else decision
    runtime.stream_writer({"round": dict(last)})
    metrics = dict(state.get("search_metrics") or {})
    metrics["planner"] = {"calls": sum(r["calls"] for r in rounds),
                          "tokens": sum(r["tokens"] for r in rounds)}
    out = {"rounds": rounds, "follow_up": follow, "search_metrics": metrics,
           "errors": errors}
    if follow is None:  # the loop is done: round 1's vector is not kept past it
        out["question_vector"] = None
    return out


def _decide(ctx: QueryContext, state: QueryState, rounds: list[dict[str, Any]],
            ) -> dict[str, Any]:
    """``{"stop": reason}`` or the next round (``query``, ``why``, ``by``, ``bridge``),
    with the planner's ``calls`` / ``tokens`` and ``errors`` lines when it ran."""
    if rounds[-1].get("hops"):  # one follow-up per hop-1 passage
        return {"stop": loop.FOLLOWED}
    if len(rounds) > 1 and not any(rounds[-1]["added"].values()):
        return {"stop": loop.FOUND_NOTHING}
    if len(rounds) >= (ctx.max_rounds or get_resources().settings.max_rounds):
        return {"stop": loop.MAX_REACHED}
    recipe = (state.get("search_metrics") or {}).get("recipe", ctx.recipe)
    if recipe != "ppr":  # a notice for whoever asked for more rounds in the run context
        stop = loop.NO_PASSAGES.format(recipe=recipe)
        return {"stop": stop, "errors": [f"{stop} (the follow-up loop needs recipe 'ppr' "
                                         "with chunk embeddings)"] if ctx.max_rounds else []}
    if not state.get("passages"):
        return {"stop": loop.NOTHING_FOUND}
    deadline = state.get("deadline")
    if deadline is not None and deadline <= time.time():
        return {"stop": loop.DEADLINE}
    res = get_resources()
    spec = ctx.planner_model or ctx.analysis_model or res.settings.effective_extraction_model
    share = None if deadline is None else max(deadline - time.time(), 0.0) * PLANNER_SHARE
    model = res.chat_model(spec, temperature=0.0, streaming=False, timeout_s=share)
    asked = [r["query"] for r in rounds]
    if model is None:
        return _rules_follow_up(ctx, state) if ctx.no_llm_follow_up else {
            "stop": loop.NO_PLANNER}
    try:
        result = planner.plan(model, load_prompt(planner.PROMPT), planner.planner_message(
            state["query"], asked, state.get("passages") or [], state.get("facts") or []))
    except Exception as exc:
        log.warning("planner %s failed; the loop stops", spec, exc_info=True)
        late = deadline is not None and deadline <= time.time()
        stop = loop.DEADLINE if late else loop.PLANNER_FAILED.format(
            error=type(exc).__name__)
        return {"stop": stop, "calls": 1,
                "errors": [] if late else [f"follow-up planning by LLM failed "
                                           f"({type(exc).__name__}); answered from the "
                                           "evidence found so far"]}
    spent = {"calls": result.calls, "tokens": result.tokens}
    if deadline is not None and deadline <= time.time():
        return {"stop": loop.DEADLINE, **spent}
    if result.plan is None:
        return {"stop": result.error, **spent}
    if result.plan.sufficient:
        return {"stop": loop.SUFFICIENT, **spent}
    sub = " ".join(result.plan.sub_question.split())[:planner.MAX_SUB_QUESTION]
    bridge = " ".join(result.plan.bridge_entity.split())[:200]
    bad = loop.check_sub_question(sub, bridge, [state["query"], *asked])
    if bad:
        return {"stop": bad, **spent}
    return {"query": sub, "why": " ".join(result.plan.reason.split())[:300], "by": "llm",
            "bridge": bridge, **spent}


def _rules_follow_up(ctx: QueryContext, state: QueryState) -> dict[str, Any]:
    """The no-LLM assessment's next round, or its stop reason."""
    verdict = follow_up.assess(state["query"], _asked_names(state),
                               state.get("passages") or [], state.get("facts") or [],
                               state.get("entities") or [])
    if verdict.query is None:
        return {"stop": verdict.stop}
    if verdict.hops:  # the bridges are chosen by the round (graph_flows.query.second_hop)
        return {"query": verdict.query, "by": "rules", "bridge": "",
                "uncovered": list(verdict.uncovered),
                "hops": [{"id": h.passage["id"], "name": h.name, "by": h.by}
                         for h in verdict.hops],
                "why": "not covered by the passages of what the question names: "
                       + ", ".join(verdict.uncovered)}
    asked = [state["query"], *(r["query"] for r in state.get("rounds") or [])]
    bad = loop.check_sub_question(verdict.query, verdict.bridge, asked)
    if bad:
        return {"stop": bad}
    return {"query": verdict.query, "by": "rules", "bridge": verdict.bridge,
            "why": f"not covered by the top passages: {', '.join(verdict.uncovered)}"}


def after_assessment(state: QueryState) -> str:
    """Route after assess_evidence: another round, or build_context."""
    return "retrieve_knowledge" if state.get("follow_up") else "build_context"


def build_context(state: QueryState, runtime: Runtime[QueryContext]) -> dict[str, Any]:
    """<definitions>, numbered <facts> and numbered <passages> (when the recipe ranked
    passages). No diagram yet: it explains the answer (generate_response draws it)."""
    ctx = _ctx(runtime)
    facts = [dict(f) for f in state.get("facts", [])]
    sections.label_facts(facts)
    entities = state.get("entities", [])
    out = {"facts": facts, "definitions": sections.definitions_text(entities),
           "facts_text": sections.facts_text(facts), "mermaid": ""}
    if state.get("passages"):
        passages = sections.fit_passages(state["passages"], ctx.passage_tokens)
        out |= {"passages": passages, "passages_text": sections.passages_text(passages)}
    return out


def generate_response(state: QueryState, runtime: Runtime[QueryContext]) -> dict[str, Any]:
    """Stream the answer (LLM, or extractive in no-LLM mode); map citations to facts and
    passages; rate how well they cover the question; redraw the diagram around the cited
    facts (the label and the diagram read one parse of each sentence)."""
    with answer_kind.parsed_once():
        return _respond(state, runtime)


def _respond(state: QueryState, runtime: Runtime[QueryContext]) -> dict[str, Any]:
    ctx = _ctx(runtime)
    res = get_resources()
    write = get_stream_writer()

    def emit(token: str) -> None:
        write({"token": token})

    entities, facts = state.get("entities", []), state.get("facts", [])
    passages = state.get("passages", [])
    question = extractive.question(state["query"], _asked_names(state))
    if not entities and not facts:
        text = answer.empty_answer(state["query"], _closest(res, state))
        emit(text)
        return {"answer": text, "answer_mode": "empty", "citations": [], "errors": [],
                "answer_confidence": confidence.assess(question, state["query"], text, [],
                                                       retrieved=False)}
    text, errors = _llm_text(res, ctx, state, emit)
    mode, label = "llm", None
    if not text:
        text, label = _extractive_text(state, question, entities)
        mode = "extractive"
        for line in text.splitlines(keepends=True):
            emit(line)
    cited, unknown = answer.citations(text, facts, passages)
    if unknown:
        what = "fact or passage" if passages else "fact"
        errors.append(f"the answer cited {', '.join(unknown)}, which match no retrieved {what}")
    label = label or confidence.assess(question, state["query"], text, cited, facts, passages)
    diagram = answer_diagram.answer_diagram(
        state["query"], question, text, mode, label["label"], cited, entities, facts,
        _passage_facts(res, state, text, cited, label["label"], errors),
        ctx.max_diagram_nodes, state.get("rounds") or [], passages)
    return {"answer": text, "answer_mode": mode, "citations": cited, "errors": errors,
            "answer_confidence": label, "mermaid": diagram}


def _passage_facts(res: Any, state: QueryState, text: str, cited: list[dict[str, Any]],
                   label: str, errors: list[str]) -> list[dict[str, Any]]:
    """The facts of the passages the answer cites, for its diagram
    (:func:`answer_diagram.cited_passage_facts`); none when nothing relevant was found or
    the store fails (a line in ``errors``: the answer stands without them)."""
    if label == "none" or not any("passage_id" in c for c in cited):
        return []
    visible = (state.get("search_metrics") or {}).get("scopes") or state["scope"]
    try:
        with res.store.connect() as conn:
            return answer_diagram.cited_passage_facts(
                conn, visible, text, cited, _as_of(state.get("as_of")),
                known=answer_diagram.known_names(state.get("entities", []),
                                                 state.get("facts", [])))
    except Exception:
        log.warning("reading the cited passages' facts for the diagram failed", exc_info=True)
        errors.append("the diagram could not read the cited passages' facts; it shows the "
                      "retrieved ones only")
        return []


def _asked_names(state: QueryState) -> list[str]:
    """The names the question asks about, from its analysis and the caller's hints."""
    return [*(state.get("analysis") or {}).get("entities", []), *state.get("entity_hints", [])]


def _closest(res: Any, state: QueryState) -> list[str]:
    """Names of the scope's entities closest to the question (trigram), for an empty answer."""
    with res.store.connect() as conn:
        visible = state.get("search_metrics", {}).get("scopes") or state["scope"]
        return [e.name for e in search.closest_entities(conn, visible, state["query"][:200])]


def _extractive_text(state: QueryState, question: extractive.Question,
                     entities: list[dict[str, Any]]) -> tuple[str, dict[str, str]]:
    """The no-LLM answer and its confidence (:mod:`graph_flows.query.confidence`): the best
    cited sentences, or, when what they cite names none of the question (confidence
    "none"), a plain "nothing relevant found" naming what it does know."""
    facts, passages = state.get("facts", []), state.get("passages", [])
    text, label = confidence.extractive_with_confidence(
        state["query"], _asked_names(state), facts, passages, question)
    if label["label"] != "none":
        return text, label
    closest = [e["name"] for e in entities[:5]]
    return answer.nothing_relevant_answer(label["reason"], closest), label


def _llm_text(res: Any, ctx: QueryContext, state: QueryState,
              emit: Callable[[str], None]) -> tuple[str, list[str]]:
    """The answer model's text streamed within the request budget ("" in no-LLM mode or
    when it fails or runs out of time: the caller answers extractively) and the errors."""
    deadline = state.get("deadline")
    spec = ctx.answer_model or res.settings.chat_model
    model = res.chat_model(spec, temperature=ctx.answer_temperature, timeout_s=None
                           if deadline is None else max(deadline - time.time(), 0.0))
    budget = res.settings.request_timeout_s
    if model is None:
        return "", []
    if deadline is not None and deadline <= time.time():
        return "", [f"the {budget:g} s request budget was spent before the answer model "
                    "could run; showing an extractive answer"]
    streamed: list[str] = []

    def emit_llm(token: str) -> None:
        streamed.append(token)
        emit(token)

    try:
        return answer.llm_answer(model, state["query"], state.get("definitions", ""),
                                 state.get("facts_text", ""), emit_llm, deadline,
                                 passages=state.get("passages_text", "")), []
    except answer.AnswerTimeoutError:
        log.warning("answer model %s ran out of the request budget", spec, exc_info=True)
        error = (f"answer model did not finish within the {budget:g} s request budget; "
                 "showing an extractive answer instead")
    except Exception as exc:
        log.warning("answer model %s failed; answering extractively", spec, exc_info=True)
        error = f"answer model failed ({type(exc).__name__}); showing an extractive answer instead"
    if streamed:
        emit("\n\n")  # keep the extractive answer apart from the cut-off stream
    return "", [error]
