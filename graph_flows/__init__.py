"""krag's LangGraph flows: the query graph and the indexing graph.

``from graph_flows import query_flow, indexing_flow`` gives the compiled graphs. They are
built lazily on first access (no side effects at import).
"""

from __future__ import annotations

from typing import Any

__all__ = ["indexing_flow", "query_flow"]


def __getattr__(name: str) -> Any:
    if name == "query_flow":
        from graph_flows.query.graph import graph

        return graph
    if name == "indexing_flow":
        from graph_flows.indexing.graph import graph

        return graph
    raise AttributeError(name)
