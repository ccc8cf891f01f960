"""The ``kag_query`` tool as agents see it: its one description, its arguments (names,
types, bounds, descriptions) and the one-line error of arguments that do not fit them.

Every surface that offers kag_query as a tool takes these from here: the MCP server
(``ui/mcp.py``) and the LangChain tool (:class:`graph_flows.integrations.KragQueryTool`).
The use case itself is :meth:`graph_flows.services.memory.KnowledgeTools.kag_query`.
``max_rounds`` carries its bounds in the schema only (``minimum`` / ``maximum``): the use
case checks it, so its error is the query loop's, the one every surface gives.
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graph_flows.services.ask import MAX_HOPS, MAX_LIMIT, MAX_ROUNDS

KAG_QUERY = "kag_query"
KAG_QUERY_DESCRIPTION = (
    "Query the knowledge graph for entities and their relationships. Use this for "
    "questions about concepts, people, organizations, or how things relate to each other "
    "in the indexed documents. Returns entities, relations (facts with subject, predicate, "
    "object, dates and sources), a formatted context for an LLM, counts, the "
    "retrieval rounds (what each searched, who asked, what it added, why the loop "
    "stopped), and a confidence label (high, medium, low, none) with its reason: how "
    "likely the context answers the question.")
_RANGE_ERRORS = {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}


class KagQueryArgs(BaseModel):
    """The arguments of kag_query (unknown names refused)."""

    model_config = ConfigDict(extra="forbid", title="kag_queryArguments")

    query: str = Field(description="Natural language question or search terms")
    entities: list[str] | None = Field(
        default=None, description="Optional: specific entity names to search for (anchors "
                                  "the search; at most 50)")
    include_relations: bool = Field(default=True,
                                    description="Include relationships between entities")
    max_hops: int = Field(
        default=1, ge=1, le=MAX_HOPS,
        description="Maximum relationship hops for graph traversal (1..3; recipes split and "
                    "rrf, ppr follows the graph by PageRank)")
    limit: int = Field(
        default=20, ge=1, le=MAX_LIMIT,
        description="Maximum number of entities (and of relations) to return (1..100)")
    source_id: str | None = Field(
        default=None, description="Optional: limit search to specific KB source (as `krag "
                                  "status` lists it)")
    recipe: str | None = Field(
        default=None, description="Optional retrieval recipe (split, rrf or ppr); 'ppr' also "
                                  "returns ranked source passages. Default: the server's")
    max_rounds: int | None = Field(
        default=None,
        description=f"Optional: retrieval rounds (1..{MAX_ROUNDS}): after each round the "
                    "evidence is assessed and, when short, a follow-up sub-question is "
                    "searched (recipe ppr, with the server's LLM as the planner; without "
                    "one a single round runs). 1 turns the loop off. Default: the "
                    "server's KRAG_MAX_ROUNDS",
        json_schema_extra={"minimum": 1, "maximum": MAX_ROUNDS})


def argument_error(tool: str, exc: ValidationError, schema: dict[str, Any]) -> str:
    """One line saying which arguments of ``tool`` to change (unknown, missing, out of range
    or of the wrong type), named as in ``schema``."""
    props: dict[str, Any] = schema.get("properties", {})
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    missing = [str(e["loc"][0]) for e in errors if e["type"] == "missing" and e["loc"]]
    parts = []
    for err in errors:
        name = ".".join(str(p) for p in err["loc"]) or "arguments"
        kind, got = err["type"], err.get("input")
        bounds = props.get(name, {})
        if kind == "extra_forbidden":  # a missing name it resembles, else any close name
            near = (difflib.get_close_matches(name, missing, n=1, cutoff=0.3)
                    or difflib.get_close_matches(name, list(props), n=1))
            hint = f"did you mean {near[0]!r}? " if near else ""
            parts.append(f"unknown argument {name[:40]!r}; {hint}{tool} takes "
                         f"{', '.join(props)}")
        elif kind == "missing":
            parts.append(f"missing argument {name!r}")
        elif kind in _RANGE_ERRORS and {"minimum", "maximum"} <= set(bounds):
            parts.append(f"{name} must be {bounds['minimum']}..{bounds['maximum']}, "
                         f"got {str(got)[:40]}")
        else:
            parts.append(f"{name}: {err['msg']}, got {str(got)[:40]!r}")
    return f"Error executing tool {tool}: " + "; ".join(parts) + "."
