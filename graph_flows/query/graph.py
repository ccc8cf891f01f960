"""The query graph: analyze_query -> retrieve_knowledge -> assess_evidence ->
(retrieve_knowledge again | build_context) -> generate_response.

retrieve_knowledge and assess_evidence form a bounded loop (graph_flows.query.loop): after
each round assess_evidence either ends it (the evidence suffices, ``max_rounds`` of the run
context, the request deadline, a planner reply that adds nothing) or sets the follow-up
query the next round searches for.

``QueryContext.generate_answer=False`` ends the run after build_context (retrieval and
context only, no answer model): one graph serves answers and plain retrieval. An input key
:class:`QueryInput` does not declare, or a bad value (an empty query, a control character in
the query, a hint, the scope or ``as_of``: :func:`graph_flows.query.analyze.check_request`)
fails the run at its entry with an :class:`InvalidQueryError`
(:func:`graph_flows.shared.graph_input.refuse_unknown_keys`).
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graph_flows.query.analyze import InvalidQueryError, check_request
from graph_flows.query.context import QueryContext
from graph_flows.query.nodes import (
    after_assessment,
    analyze_query,
    assess_evidence,
    build_context,
    context_first,
    generate_response,
    retrieve_knowledge,
)
from graph_flows.query.state import LoopState, QueryInput, QueryOutput, QueryState
from graph_flows.shared.graph_input import refuse_unknown_keys
from graph_flows.shared.reads import read_only_request
from graph_flows.shared.scoped import scoped_node


def after_context(
    state: QueryState, runtime: Runtime[QueryContext]
) -> Literal["generate_response", "__end__"]:
    """Route after build_context: the answer step, or the end when the run context says
    ``generate_answer=False``."""
    ctx = runtime.context
    wanted = ctx.get("generate_answer", True) if isinstance(ctx, dict) else getattr(
        ctx, "generate_answer", True)
    return "generate_response" if wanted else END


builder = StateGraph(QueryState, context_schema=QueryContext, input_schema=QueryInput,
                     output_schema=QueryOutput)
# each node reads the store with its run's scope's access (graph_flows.shared.scoped), as a
# read-only request (a read replica may serve it: graph_flows.shared.reads)
_in_scope = scoped_node(lambda state: state.get("scope"))
for node in (analyze_query, retrieve_knowledge, assess_evidence, build_context,
             generate_response):
    # retrieve_knowledge also reads round 1's private channel (state.LoopState)
    wrapped = read_only_request(_in_scope(node))
    builder.add_node(context_first(wrapped) if node is analyze_query else wrapped,
                     input_schema=LoopState if node is retrieve_knowledge else None)
builder.add_edge(START, "analyze_query")
builder.add_edge("analyze_query", "retrieve_knowledge")
builder.add_edge("retrieve_knowledge", "assess_evidence")
builder.add_conditional_edges("assess_evidence", after_assessment,
                              ["retrieve_knowledge", "build_context"])
builder.add_conditional_edges("build_context", after_context)
builder.add_edge("generate_response", END)

graph = refuse_unknown_keys(builder.compile(name="query"), QueryInput, InvalidQueryError,
                            check_request)
