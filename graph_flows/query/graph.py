"""The query graph: analyze_query -> retrieve_knowledge -> build_context -> generate_response."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graph_flows.query.context import QueryContext
from graph_flows.query.nodes import (
    analyze_query,
    build_context,
    generate_response,
    retrieve_knowledge,
)
from graph_flows.query.state import QueryInput, QueryOutput, QueryState

builder = StateGraph(QueryState, context_schema=QueryContext, input_schema=QueryInput,
                     output_schema=QueryOutput)
builder.add_node(analyze_query)
builder.add_node(retrieve_knowledge)
builder.add_node(build_context)
builder.add_node(generate_response)
builder.add_edge(START, "analyze_query")
builder.add_edge("analyze_query", "retrieve_knowledge")
builder.add_edge("retrieve_knowledge", "build_context")
builder.add_edge("build_context", "generate_response")
builder.add_edge("generate_response", END)

graph = builder.compile(name="query")
