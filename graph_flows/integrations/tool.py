"""KragQueryTool: MCP's ``kag_query`` as a LangChain ``BaseTool``."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Literal

from langchain_core.runnables.config import run_in_executor
from langchain_core.tools import BaseTool, ToolException
from pydantic import BaseModel, Field, PrivateAttr, ValidationError

from graph_flows.integrations.handle import Handle, open_handle
from graph_flows.query.sections import clip
from graph_flows.services import passages as checks
from graph_flows.services.ask import round_line
from graph_flows.services.errors import RequestError
from graph_flows.services.kag_args import (
    KAG_QUERY,
    KAG_QUERY_DESCRIPTION,
    KagQueryArgs,
    argument_error,
)
from graph_flows.services.memory import KnowledgeTools
from graph_flows.shared.resources import Resources, use_resources
from graph_flows.shared.settings import Settings


class KragToolError(ToolException, ValueError):
    """A kag_query call the caller (or the agent) must change: one line, MCP's words."""


class KragQueryTool(BaseTool):
    """``kag_query``: the knowledge graph's entities, facts and ranked passages for a
    question, as the formatted context an LLM reads (labels F1.., P1.. to cite, with the
    facts' sources) followed by the retrieval rounds; the whole result (MCP's JSON) is the
    tool message's ``artifact``.

    The name, description and argument schema are the MCP tool's
    (:mod:`graph_flows.services.kag_args`) and so are the checks and their one-line errors:
    a call with bad arguments raises :class:`KragToolError` (a ``ToolException`` and a
    ``ValueError``) whose text is what MCP answers. ``handle_tool_error=True`` (the
    ``BaseTool`` field) returns that line to the agent as the tool's error message instead.

    ``scope`` (default ``KRAG_SCOPE``) is read with that scope's access (row-level
    security), as MCP reads it; an invalid or unknown scope is a one-line ``ValueError`` at
    construction. The database comes from ``settings`` (default: the environment), opened
    here and closed by :meth:`close` or a ``with`` block; ``resources`` lends open
    resources instead. krag's storage is synchronous: ``ainvoke`` runs the call in
    LangChain's executor (the event loop is not blocked).
    """

    name: str = KAG_QUERY
    description: str = KAG_QUERY_DESCRIPTION
    args_schema: type[BaseModel] = KagQueryArgs
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    scope: str | None = None
    settings: Settings | None = Field(default=None, exclude=True, repr=False)
    resources: Resources | None = Field(default=None, exclude=True, repr=False)
    _handle: Handle | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        if data.get("scope") is not None:
            checks.check_scope_name(data["scope"])
        super().__init__(**data)
        self._handle = open_handle(self.settings, self.resources)
        try:
            res = self._handle.resources
            with use_resources(res):
                self.scope = checks.check_scope_known(res.store,
                                                      self.scope or res.settings.scope)
        except BaseException:
            self._handle.close()
            raise

    def _parse_input(self, tool_input: str | dict, tool_call_id: str | None
                     ) -> str | dict[str, Any]:
        try:
            return super()._parse_input(tool_input, tool_call_id)
        except ValidationError as exc:
            schema = KagQueryArgs.model_json_schema()
            raise KragToolError(argument_error(self.name, exc, schema)) from None

    def _run(self, query: str, entities: list[str] | None = None,
             include_relations: bool = True, max_hops: int = 1, limit: int = 20,
             source_id: str | None = None, recipe: str | None = None,
             max_rounds: int | None = None) -> tuple[str, dict[str, Any]]:
        if self._handle is None or self._handle.closed:
            raise KragToolError("this KragQueryTool is closed; create a new one.")
        try:
            with use_resources(self._handle.resources):
                out = KnowledgeTools(self.scope).kag_query(
                    query, entities, include_relations, max_hops, limit, source_id, recipe,
                    max_rounds)
        except RequestError as exc:  # worded as MCP's tool error
            raise KragToolError(f"Error executing tool {self.name}: {exc}") from None
        return tool_text(out), out

    async def _arun(self, *args: Any, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        # no async storage engine: the sync call in an executor thread (see the class)
        return await run_in_executor(None, self._run, *args, **kwargs)

    def close(self) -> None:
        """Close the database this tool opened; borrowed ``resources`` stay open."""
        if self._handle is not None:
            self._handle.close()

    def __enter__(self) -> KragQueryTool:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def tool_text(out: dict[str, Any]) -> str:
    """What the model reads: kag_query's formatted context, the sources of the facts it
    labels, the retrieval rounds (one line each, as `krag ask` prints them) and notices."""
    parts = [out["context"]]
    cited = [f"[{r['label']}] " + "; ".join(clip(s.get("uri") or s.get("source", ""), 200)
                                            for s in r.get("sources", []))
             for r in out.get("relations", []) if r.get("label") and r.get("sources")]
    if cited:
        parts.append("## Fact sources\n" + "\n".join(cited))
    if out.get("rounds"):
        parts.append("## Retrieval rounds\n" + "\n".join(round_line(r) for r in out["rounds"]))
    if out.get("errors"):
        parts.append("## Notices\n" + "\n".join(f"- {e}" for e in out["errors"]))
    return "\n\n".join(parts)
