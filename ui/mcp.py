"""MCP server (official ``mcp`` SDK, ``MCPServer`` - FastMCP's name since mcp 2): the knowledge
graph as tools for any MCP client, over stdio or streamable HTTP (``krag mcp``).

Tools, all confined to the server's one scope (``--scope``, default ``KRAG_SCOPE``):

- ``kag_query``: the query graph without the answer step (analysis, retrieval, context):
  entities, relations with dates and sources, a formatted context and counts; ``max_hops`` > 1
  adds facts up to that many hops from the entities named (the query graph's walk);
- ``recall``: facts matching a text (LIKE + vector), currently valid ones or as of a date;
- ``remember``: store a caller's fact through the extraction validation
  (:func:`~graph_flows.indexing.extraction.validation.validate_extraction`) with MCP provenance;
- ``correct``: invalidate a fact (``invalid_at``; nothing is deleted), optionally stating the
  corrected sentence.

This module is the adapter only (schemas, transports); the tools' work is in
:mod:`graph_flows.services.memory` and :mod:`graph_flows.services.ask`. Anticipated failures
(limits, unknown ids, rejected facts) raise :class:`~graph_flows.services.errors.RequestError`
there and come back as tool errors whose text says what to change; nothing else from the
server's internals reaches the client.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from graph_flows.services.ask import MAX_HOPS, MAX_LIMIT
from graph_flows.services.errors import RequestError
from graph_flows.services.memory import MAX_RECALL, KnowledgeTools
from graph_flows.shared.resources import get_resources

log = logging.getLogger(__name__)
T = TypeVar("T")


def _tool_errors(fn: Callable[..., T]) -> Callable[..., T]:
    """A :class:`RequestError` of the use case becomes the tool error the client sees."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except RequestError as exc:
            log.info("%s refused: %s", fn.__name__, exc)
            raise ToolError(str(exc)) from None

    return wrapper


_INSTRUCTIONS = (
    "Knowledge graph of the documents indexed in krag (one scope). Use kag_query for questions "
    "about entities and how they relate, recall to look up stored facts, remember to store a "
    "new fact (validated), and correct to mark a fact wrong (it stays in history as invalid).")


def build_server(scope: str | None = None) -> MCPServer:
    """The MCP server with the four tools bound to ``scope`` (default: KRAG_SCOPE)."""
    tools = KnowledgeTools(scope)
    kag, recall_, remember_, correct_ = (_tool_errors(f) for f in (
        tools.kag_query, tools.recall, tools.remember, tools.correct))
    server = MCPServer("krag", instructions=_INSTRUCTIONS, log_level="WARNING")

    @server.tool(description=(
        "Query the knowledge graph for entities and their relationships. Use this for "
        "questions about concepts, people, organizations, or how things relate to each other "
        "in the indexed documents. Returns entities, relations (facts with subject, predicate, "
        "object, dates and sources), a formatted context for an LLM, and counts."))
    def kag_query(
        query: Annotated[str, Field(description="Natural language question or search terms")],
        entities: Annotated[list[str] | None, Field(
            description="Optional: specific entity names to search for (anchors the search; "
                        "at most 50)")] = None,
        include_relations: Annotated[bool, Field(
            description="Include relationships between entities")] = True,
        max_hops: Annotated[int, Field(
            ge=1, le=MAX_HOPS,
            description="Maximum relationship hops for graph traversal (1..3)")] = 1,
        limit: Annotated[int, Field(
            ge=1, le=MAX_LIMIT,
            description="Maximum number of entities (and of relations) to return (1..100)")]
        = 20,
        source_id: Annotated[str | None, Field(
            description="Optional: limit search to specific KB source (as `krag status` "
                        "lists it)")] = None,
        recipe: Annotated[str | None, Field(
            description="Optional retrieval recipe (split, rrf or ppr); 'ppr' also returns "
                        "ranked source passages. Default: the server's")] = None,
    ) -> dict[str, Any]:
        return kag(query, entities, include_relations, max_hops, limit, source_id, recipe)

    @server.tool(description=(
        "Search stored facts by text and meaning. Returns only facts valid now, or valid at "
        "`as_of` when given, with their ids (for `correct`), dates and sources."))
    def recall(
        query: Annotated[str, Field(description="What to look for")],
        limit: Annotated[int, Field(ge=1, le=MAX_RECALL,
                                    description="Maximum facts to return (1..100)")] = 10,
        as_of: Annotated[str | None, Field(
            description="Optional date (YYYY, YYYY-MM, YYYY-MM-DD or ISO 8601): facts valid "
                        "then instead of now")] = None,
    ) -> dict[str, Any]:
        return recall_(query, limit, as_of)

    @server.tool(description=(
        "Store a fact: subject -predicate-> object, with the sentence stating it. Checked like "
        "extracted knowledge (prompt-injection filter, type normalisation, minimum "
        "confidence) and linked to existing entities of the same name. Returns the fact id."))
    def remember(
        subject: Annotated[str, Field(description="Subject entity name")],
        predicate: Annotated[str, Field(
            description="Relation: uses, contains, part_of, defines, mentions or relates_to "
                        "(other wording is mapped)")],
        object: Annotated[str, Field(description="Object entity name")],  # noqa: A002
        fact: Annotated[str, Field(description="The fact as one self-contained sentence")],
        subject_type: Annotated[str, Field(
            description="concept, person, organization, technology, location or section")]
        = "concept",
        object_type: Annotated[str, Field(
            description="concept, person, organization, technology, location or section")]
        = "concept",
        confidence: Annotated[float, Field(ge=0.0, le=1.0,
                                           description="How sure (0..1)")] = 0.9,
        valid_at: Annotated[str | None, Field(
            description="Optional date from which the fact holds (YYYY, YYYY-MM, YYYY-MM-DD "
                        "or ISO 8601)")] = None,
        attribute: Annotated[str | None, Field(
            description="Optional single-valued property of the subject this fact sets "
                        "(e.g. 'ceo', 'headquarters'): an older fact on the same subject and "
                        "attribute with another object is then marked invalid, kept in "
                        "history")] = None,
    ) -> dict[str, Any]:
        return remember_(subject, predicate, object, fact, subject_type, object_type,
                         confidence, valid_at, attribute)

    @server.tool(description=(
        "Mark a fact as no longer valid (sets invalid_at; the fact stays in history and is "
        "hidden from kag_query and recall). Optionally give the corrected sentence, stored as "
        "a new fact between the same entities."))
    def correct(
        fact_id: Annotated[str, Field(description="Id of the fact (rel_…) from kag_query or "
                                                  "recall")],
        reason: Annotated[str, Field(
            description="Why it is wrong (stored with the fact, returned and logged)")] = "",
        replacement: Annotated[str | None, Field(
            description="Optional corrected fact sentence (same subject, predicate and "
                        "object)")] = None,
    ) -> dict[str, Any]:
        return correct_(fact_id, reason, replacement)

    return server


Transport = Literal["stdio", "http"]


def serve(transport: Transport = "stdio", host: str = "127.0.0.1", port: int = 8765,
          scope: str | None = None) -> None:
    """Open the store and models (before the handshake, so errors show), then serve."""
    with contextlib.redirect_stdout(sys.stderr):  # stdout belongs to the protocol
        resources = get_resources()
    server = build_server(scope or resources.settings.scope)
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http":
        server.run("streamable-http", host=host, port=port)
    else:
        raise ValueError(f"transport must be 'stdio' or 'http', got {transport!r}")


if __name__ == "__main__":  # python -m ui.mcp: stdio with the configured scope
    serve()
