"""KragQueryTool beyond the standard suites: MCP kag_query's description, schema, result
and one-line errors, word for word, through the SDK's own client in-process; the text a
model reads (context, fact sources, rounds); errors handed back to an agent; closing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from mcp import Client

from graph_flows.integrations import KragQueryTool
from graph_flows.integrations.tool import KragToolError
from graph_flows.services.kag_args import KAG_QUERY_DESCRIPTION, KagQueryArgs
from graph_flows.shared.resources import Resources, use_resources
from tests.integrations.conftest import QUESTION
from tests.ui.test_mcp_server import _call, _error
from ui.mcp import build_server

BAD_CALLS = [
    {"query": QUESTION, "max_hops": 9},
    {"query": QUESTION, "limit": 0},
    {"question": QUESTION},
    {"query": QUESTION, "max_rounds": 7},
    {"query": QUESTION, "source_id": "nowhere"},
    {"query": QUESTION, "recipe": "bm25"},
    {"query": "   "},
    {"query": "What did Edgar\x00 Codd propose?"},
    {"query": QUESTION, "entities": ["Codd\x00"]},
    {"query": QUESTION, "source_id": "sam\x00ple"},
]


def _mcp(corpus: Resources, scenario: Any) -> Any:
    async def go() -> Any:
        async with Client(build_server("default")) as client:
            return await scenario(client)
    with use_resources(corpus):
        return asyncio.run(go())


def test_name_description_and_schema_are_mcps(corpus: Resources) -> None:
    tool = KragQueryTool(resources=corpus)
    listed = _mcp(corpus, lambda client: client.list_tools())
    mcp_tool = next(t for t in listed.tools if t.name == "kag_query")
    assert tool.name == mcp_tool.name
    assert tool.description is KAG_QUERY_DESCRIPTION == mcp_tool.description
    assert tool.args_schema is KagQueryArgs
    assert tool.get_input_schema().model_json_schema()["properties"] == \
        mcp_tool.input_schema["properties"]


def test_result_is_mcps_and_the_text_cites_and_shows_rounds(corpus: Resources) -> None:
    args = {"query": QUESTION, "max_hops": 2, "limit": 8}
    message = KragQueryTool(resources=corpus).invoke(
        {"type": "tool_call", "name": "kag_query", "id": "c1", "args": args})
    assert isinstance(message, ToolMessage) and message.status == "success"
    mcp = _mcp(corpus, lambda client: _call(client, "kag_query", args))
    result = message.artifact
    assert [r["id"] for r in result["relations"]] == [r["id"] for r in mcp["relations"]]
    assert [p["id"] for p in result["passages"]] == [p["id"] for p in mcp["passages"]]
    text = message.content
    assert text.startswith(mcp["context"])
    assert "[F1]" in text and "[P1]" in text
    assert "## Fact sources\n[F1] file://" in text
    assert "## Retrieval rounds\nround 1: the question" in text


@pytest.mark.parametrize("args", BAD_CALLS)
def test_bad_calls_raise_mcps_one_line_error(corpus: Resources, args: dict) -> None:
    expected = _mcp(corpus, lambda client: _error(client, "kag_query", args))
    with pytest.raises(KragToolError) as caught:
        KragQueryTool(resources=corpus).invoke(args)
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == expected and "\n" not in expected


def test_handle_tool_error_hands_the_line_to_the_agent(corpus: Resources) -> None:
    tool = KragQueryTool(resources=corpus, handle_tool_error=True)
    message = tool.invoke({"type": "tool_call", "name": "kag_query", "id": "c2",
                           "args": {"query": QUESTION, "max_hops": 9}})
    assert message.status == "error"
    assert message.content == ("Error executing tool kag_query: max_hops must be 1..3, "
                               "got 9.")


def test_async_call_and_scope_errors(corpus: Resources) -> None:
    tool = KragQueryTool(resources=corpus)
    text = asyncio.run(tool.ainvoke({"query": QUESTION}))
    assert text.startswith("Knowledge Graph Results for:")
    for scope, message in (("nowhere", "unknown scope 'nowhere'"),
                           ("a;b", "scope: invalid scope name")):
        with pytest.raises(ValueError, match=message):
            KragQueryTool(resources=corpus, scope=scope)


def test_closed_tool_refuses(corpus: Resources) -> None:
    with KragQueryTool(resources=corpus) as tool:
        assert tool.invoke({"query": QUESTION})
    assert tool._handle is not None and tool._handle.closed
    with pytest.raises(KragToolError, match="this KragQueryTool is closed"):
        tool.invoke({"query": QUESTION})
