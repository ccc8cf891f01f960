"""krag inside other people's LangChain / LangGraph code.

``from graph_flows.integrations import KragRetriever, KragQueryTool``:

- :class:`KragRetriever`: a ``langchain_core`` ``BaseRetriever`` over the query graph's
  retrieval (the ranked passages, no answer model);
- :class:`KragQueryTool`: a ``BaseTool`` named ``kag_query``, the MCP tool of the same name
  (one description and argument schema, :mod:`graph_flows.services.kag_args`).

Both open the database the settings describe (``KRAG_DATABASE_URL``, else the embedded
PostgreSQL under ``KRAG_DATA_DIR``) and close it with ``close()`` or a ``with`` block.
Nothing is imported or opened until a class is used (no side effects at import).
"""

from __future__ import annotations

from typing import Any

__all__ = ["KragQueryTool", "KragRetriever"]


def __getattr__(name: str) -> Any:
    if name == "KragRetriever":
        from graph_flows.integrations.retriever import KragRetriever

        return KragRetriever
    if name == "KragQueryTool":
        from graph_flows.integrations.tool import KragQueryTool

        return KragQueryTool
    raise AttributeError(name)
