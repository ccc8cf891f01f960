"""MCP server (official ``mcp`` SDK, ``MCPServer`` - FastMCP's name since mcp 2): the knowledge
graph as tools for any MCP client, over stdio or streamable HTTP (``krag mcp``).

Tools, all confined to the server's one scope (``--scope``, default ``KRAG_SCOPE``), or
over HTTP with tokens to the scope of the request's bearer token (:mod:`ui.mcp_auth`), reads
including its ancestors':

- ``kag_query``: the query graph without the answer step (analysis, retrieval, context):
  entities, relations with dates and sources, a formatted context and counts; ``max_hops`` > 1
  adds facts up to that many hops from the entities named (the query graph's walk; recipes
  ``split`` and ``rrf``, ``ppr`` follows the graph by PageRank); ``max_rounds`` bounds its
  retrieval loop and ``rounds`` says what each round searched, added and why it stopped;
- ``recall``: facts matching a text (LIKE + vector), currently valid ones or as of a date;
- ``remember``: store a caller's fact through the extraction validation
  (:func:`~graph_flows.indexing.extraction.validation.validate_extraction`) with MCP provenance;
- ``correct``: invalidate a fact (``invalid_at``; nothing is deleted), optionally stating the
  corrected sentence.

This module is the adapter only (schemas, transports); the tools' work is in
:mod:`graph_flows.services.memory` and :mod:`graph_flows.services.ask`. Anticipated failures
(limits, unknown ids, rejected facts) raise :class:`~graph_flows.services.errors.RequestError`
there and come back as tool errors whose text says what to change; nothing else from the
server's internals reaches the client. Arguments are checked against the published schema
with unknown names refused (``additionalProperties: false``), and a rejected argument is one
line too (``max_hops must be 1..3, got 4.``, as the use cases word it), not pydantic's report;
``max_rounds`` is checked by the use case itself, so its error is the one every surface gives.
``server_info.version`` is the installed package's version.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
from collections.abc import Callable
from importlib import metadata
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from pydantic import ConfigDict, Field, ValidationError

from graph_flows.services.errors import RequestError, first_line, is_user_error, log_failure
from graph_flows.services.kag_args import (
    KAG_QUERY_DESCRIPTION,
    KagQueryArgs,
    argument_error,
)
from graph_flows.services.memory import MAX_RECALL, KnowledgeTools
from graph_flows.services.tokens import has_active_tokens
from graph_flows.shared.reads import ReadSession, use_session
from graph_flows.shared.resources import get_resources
from ui import mcp_auth

log = logging.getLogger(__name__)
T = TypeVar("T")
DISTRIBUTION = "knowledge-rag-flow"


def package_version() -> str:
    """The installed version of krag's distribution ("0+unknown" when not installed)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _strict(tool: Tool) -> Tool:
    """``tool`` with unknown argument names refused (and said so in its input schema)."""
    base = tool.fn_metadata.arg_model

    class Strict(base):  # type: ignore[valid-type,misc]
        model_config = ConfigDict(extra="forbid", title=base.__name__)

    tool.fn_metadata.arg_model = Strict
    tool.parameters = Strict.model_json_schema(by_alias=True)
    return tool


def _shared_args(tool: Tool, args: type[KagQueryArgs]) -> Tool:
    """``tool`` whose arguments are checked against, and published as, the service's model
    ``args`` (unknown names refused there); its fields are the function's parameters."""

    class Shared(args, ArgModelBase):  # type: ignore[valid-type,misc]
        model_config = ConfigDict(extra="forbid", title=args.model_config.get("title"))

    tool.fn_metadata.arg_model = Shared
    tool.parameters = Shared.model_json_schema(by_alias=True)
    return tool


class _Server(MCPServer):
    """MCPServer whose argument errors are one line (see :func:`argument_error`), and whose
    tool calls run with their MCP session's :class:`ReadSession` (a session reads its own
    writes when read replicas serve the reads: graph_flows.shared.reads)."""

    def __init__(self, name: str, *, tools: list[Tool], **kwargs: Any) -> None:
        super().__init__(name, tools=tools, **kwargs)
        self._schemas = {t.name: t.parameters for t in tools}
        self._reads: dict[str, ReadSession] = {}  # per token's client id; "": no token

    def read_session(self, context: Any) -> ReadSession:
        """The read session of the client behind ``context``: its streamable-HTTP session
        (``mcp-session-id``), else its verified bearer token, else the server's own (stdio
        serves one client; an open loopback server's clients share it, so each reads every
        write made through the server: never staler than asked). The SDK builds a
        ``ServerSession`` per request; the connection behind it (``_connection``, no public
        accessor in the pinned SDK) carries the session id and per-connection state."""
        try:
            connection = getattr(context.session, "_connection", None)
        except Exception:  # noqa: BLE001 - no request context: a call made in process
            connection = None
        if connection is not None and getattr(connection, "session_id", None):
            return connection.state.setdefault("krag.read_session", ReadSession())
        token = get_access_token()
        if token is not None:
            return self._reads.setdefault(token.client_id, ReadSession())
        return self._reads.setdefault("", ReadSession())

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        try:
            with use_session(self.read_session(context)):
                return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if type(exc) is ToolError and isinstance(cause, ValidationError):
                raise ToolError(argument_error(name, cause, self._schemas.get(name, {}))) \
                    from cause
            raise


def _tool_errors(fn: Callable[..., T]) -> Callable[..., T]:
    """A refusal of the caller's input (a :class:`RequestError` of the use case, or another
    user error: :func:`~graph_flows.services.errors.is_user_error`) becomes the tool error
    the client sees, logged as one warning line without a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if not is_user_error(exc):
                raise
            log_failure(log, fn.__name__, exc)
            raise ToolError(first_line(exc)) from None

    return wrapper


_INSTRUCTIONS = (
    "Knowledge graph of the documents indexed in krag (one scope). Use kag_query for questions "
    "about entities and how they relate, recall to look up stored facts, remember to store a "
    "new fact (validated), and correct to mark a fact wrong (it stays in history as invalid).")


def _bound(default: KnowledgeTools | None, name: str) -> Callable[..., Any]:
    """Tool ``name`` on the scope of the request: the verified bearer token's (and read-only
    when the token is), whatever the server's scope or the arguments; without a token (stdio,
    open loopback HTTP) the server's, ``default``. A server requiring tokens has no default:
    a call without a verified token is refused, never given the server's scope."""

    def call(*args: Any) -> Any:
        try:
            access = mcp_auth.access_claims(get_access_token())
        except PermissionError as exc:
            raise RequestError(f"{name} refused: {exc}.") from None
        if access is not None:
            tools = KnowledgeTools(access[0], read_only=access[1])
        elif default is not None:
            tools = default
        else:
            raise RequestError(f"{name} refused: no verified bearer token on this request.")
        return getattr(tools, name)(*args)

    call.__name__ = call.__qualname__ = name
    return _tool_errors(call)


def build_server(scope: str | None = None, **auth: Any) -> MCPServer:
    """The MCP server with the four tools bound to ``scope`` (default: KRAG_SCOPE), or to a
    verified token's scope; ``auth``: the SDK's ``token_verifier=`` and ``auth=``."""
    default = None if auth.get("token_verifier") else KnowledgeTools(scope)
    kag, recall_, remember_, correct_ = (_bound(default, name) for name in (
        "kag_query", "recall", "remember", "correct"))
    registered: list[Tool] = []

    def tool(description: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def register(fn: Callable[..., T]) -> Callable[..., T]:
            registered.append(_strict(Tool.from_function(fn, description=description)))
            return fn
        return register

    # kag_query's description and arguments are the service's (graph_flows.services.kag_args),
    # shared with the LangChain tool: the function's signature only names them
    def kag_query(query: str, entities: list[str] | None = None, include_relations: bool = True,
                  max_hops: int = 1, limit: int = 20, source_id: str | None = None,
                  recipe: str | None = None, max_rounds: int | None = None) -> dict[str, Any]:
        return kag(query, entities, include_relations, max_hops, limit, source_id, recipe,
                   max_rounds)

    registered.append(_shared_args(Tool.from_function(
        kag_query, description=KAG_QUERY_DESCRIPTION), KagQueryArgs))

    @tool(description=(
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

    @tool(description=(
        "Store a fact: subject -predicate-> object, with the sentence stating it. Checked like "
        "extracted knowledge (prompt-injection filter, type normalisation, minimum "
        "confidence) and linked to existing entities of the same name. Returns the fact id."))
    def remember(
        subject: Annotated[str, Field(description="Subject entity name")],
        predicate: Annotated[str, Field(
            description="The relation as you would say it ('acquired', 'was founded by', "
                        "'uses'): kept as stated, and mapped to a relation type (uses, "
                        "contains, part_of, defines, mentions or relates_to) as a label")],
        object: Annotated[str, Field(description="Object entity name")],  # noqa: A002
        fact: Annotated[str, Field(description="The fact as one self-contained sentence")],
        subject_type: Annotated[str | None, Field(
            description="concept, person, organization, technology, location or section "
                        "(kept as given; omitted: an existing entity of that name, else "
                        "concept)")] = None,
        object_type: Annotated[str | None, Field(
            description="concept, person, organization, technology, location or section "
                        "(kept as given; omitted: an existing entity of that name, else "
                        "concept)")] = None,
        confidence: Annotated[float, Field(ge=0.0, le=1.0,
                                           description="How sure (0..1)")] = 0.9,
        valid_at: Annotated[str | None, Field(
            description="Optional date from which the fact holds (YYYY, YYYY-MM, YYYY-MM-DD "
                        "or ISO 8601; a bare year is its first day); omitted: unknown")]
        = None,
        attribute: Annotated[str | None, Field(
            description="Optional single-valued property of the subject this fact sets "
                        "(e.g. 'ceo', 'headquarters'): an older fact on the same subject and "
                        "attribute with another object is then marked invalid, kept in "
                        "history")] = None,
    ) -> dict[str, Any]:
        return remember_(subject, predicate, object, fact, subject_type, object_type,
                         confidence, valid_at, attribute)

    @tool(description=(
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

    return _Server("krag", instructions=_INSTRUCTIONS, version=package_version(),
                   log_level="WARNING", tools=registered, **auth)


Transport = Literal["stdio", "http"]


def serve(transport: Transport = "stdio", host: str = "127.0.0.1", port: int = 8765,
          scope: str | None = None) -> None:
    """Open the store and models (before the handshake, so errors show), then serve."""
    with contextlib.redirect_stdout(sys.stderr):  # stdout belongs to the protocol
        resources = get_resources()
    scope = scope or resources.settings.scope
    if transport == "stdio":
        build_server(scope).run("stdio")
    elif transport == "http":
        serve_http(resources.store, host, port, scope)
    else:
        raise ValueError(f"transport must be 'stdio' or 'http', got {transport!r}")


def serve_http(store: Any, host: str, port: int, scope: str) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp under :func:`mcp_auth.decide_http`'s policy:
    with an active token in the database every request needs one (the SDK's bearer
    middleware), without one only loopback is served (open, said on stderr)."""
    policy = mcp_auth.decide_http(host, port, has_active_tokens(store))
    if policy.refusal:
        raise RequestError(policy.refusal)
    if policy.notice:
        print(policy.notice, file=sys.stderr, flush=True)
    if not policy.require_tokens:
        build_server(scope).run("streamable-http", host=host, port=port)
        return
    import anyio
    import uvicorn

    server = build_server(scope, token_verifier=mcp_auth.StoreTokenVerifier(store),
                          auth=mcp_auth.auth_settings())
    app = mcp_auth.AuthReasons(server.streamable_http_app(host=host))
    # as MCPServer.run_streamable_http_async, around the app wrapped for the 401 reasons
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    anyio.run(uvicorn.Server(config).serve)


if __name__ == "__main__":  # python -m ui.mcp: stdio with the configured scope
    serve()
