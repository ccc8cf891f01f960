"""MCP ``kag_query`` and the query loop: ``max_rounds`` in the tool's schema, ``rounds`` in
its result, a bad value as the one line every surface gives; in-process (a scripted
planner) and over the real stdio server (the fake LLM server as the planner)."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from graph_flows.query import loop
from graph_flows.shared.embeddings import MiniLMEmbeddings
from graph_flows.shared.providers import ChatResolution
from graph_flows.shared.resources import Resources, use_resources
from graph_flows.shared.settings import Settings
from graph_flows.testing.llm_server import LLMServer
from storage import KnowledgeStore
from tests.procs import krag_env
from tests.query_fixtures import ScriptedChatModel, analysis_message
from tests.ui.loop_fixtures import ENOUGH, FOLLOW, QUESTION, llm_script, seed_two_hop, stops
from tests.ui.test_mcp_server import _call, _error
from ui.mcp import build_server

BAD = ("Error executing tool kag_query: max_rounds must be 1..4 (got {}); "
       "1 turns the loop off")


@dataclass
class ScriptedLLM(Resources):
    """Resources whose analysis and planner model (spec "ollama:scripted") is a scripted model."""

    model: Any = None

    def chat_resolution(self, spec: str | None = None, **_kw: Any) -> ChatResolution:
        if spec == "ollama:scripted":
            return ChatResolution(self.model, spec, True, None)
        return ChatResolution(None, spec or "none", False, "Running in no-LLM mode.")


def _plan(*replies: dict[str, Any]) -> list[AIMessage]:
    return [AIMessage(content="", tool_calls=[{"name": "FollowUp", "id": f"p{i}", "args": r}])
            for i, r in enumerate(replies)]


@pytest.fixture
def two_hop(store: KnowledgeStore) -> ScriptedLLM:
    seed_two_hop(store)
    settings = Settings(_env_file=None, chat_model="none", extraction_model="ollama:scripted",
                        database_url=None)
    return ScriptedLLM(settings=settings, store=store, embeddings=MiniLMEmbeddings())


def test_kag_query_takes_max_rounds_and_returns_the_rounds(two_hop: ScriptedLLM) -> None:
    two_hop.model = ScriptedChatModel(messages=iter(
        [analysis_message(["Velmor Prize"]), *_plan(FOLLOW, ENOUGH),
         analysis_message(["Velmor Prize"])]))

    async def scenario(client: Client) -> tuple[Any, ...]:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        prop = listed["kag_query"].input_schema["properties"]["max_rounds"]
        looped = await _call(client, "kag_query", {"query": QUESTION, "max_rounds": 3})
        once = await _call(client, "kag_query", {"query": QUESTION, "max_rounds": 1})
        errors = [await _error(client, "kag_query", {"query": QUESTION, "max_rounds": n})
                  for n in (0, 9)]
        return prop, looped, once, errors

    async def go() -> tuple[Any, ...]:
        async with Client(build_server("default")) as client:
            return await scenario(client)

    with use_resources(two_hop):
        prop, looped, once, errors = asyncio.run(go())
    assert (prop["minimum"], prop["maximum"]) == (1, 4) and "1 turns the loop off" in \
        prop["description"]
    rounds = looped["rounds"]
    assert stops(rounds) == [None, loop.SUFFICIENT]
    assert (rounds[1]["query"], rounds[1]["by"], rounds[1]["bridge"]) == (
        FOLLOW["sub_question"], "llm", FOLLOW["bridge_entity"])
    assert rounds[1]["added"]["passages"] > 0
    assert "kael.md" in {p["uri"] for p in looped["passages"]}  # the second hop's passage
    # each passage as a person reads it: its section path and its document's short name
    assert {p["uri"]: p["document"] for p in looped["passages"]}["kael.md"] == "kael.md"
    assert all(isinstance(p["section"], list) for p in looped["passages"])
    assert looped["total_relations"] == len(looped["relations"])  # the rest is still there
    assert stops(once["rounds"]) == [loop.MAX_REACHED]  # no planner call (script used up)
    assert errors == [BAD.format(0), BAD.format(9)]


@pytest.mark.slow
def test_stdio_kag_query_rounds_with_a_planner(store: KnowledgeStore, db_url: str,
                                               tmp_path: Path, llm_server: LLMServer) -> None:
    """The real `krag mcp` over stdio, the fake LLM server as analysis and planner model."""
    seed_two_hop(store)
    llm_server.script(*llm_script("")[:3])
    env = {"KRAG_CHAT_MODEL": "ollama:qwen2.5:7b-instruct", "KRAG_OLLAMA_HOST": llm_server.url}

    async def scenario() -> tuple[Any, ...]:
        async with _client(db_url, tmp_path, env) as client:
            looped = await _call(client, "kag_query", {"query": QUESTION, "max_rounds": 3})
            bad = await _error(client, "kag_query", {"query": QUESTION, "max_rounds": 5})
            wrong = await _error(client, "kag_query", {"query": QUESTION,
                                                       "max_rounds": "many"})
            return looped, bad, wrong

    looped, bad, wrong = asyncio.run(scenario())
    assert stops(looped["rounds"]) == [None, loop.SUFFICIENT]
    assert looped["rounds"][1]["query"] == FOLLOW["sub_question"]
    assert looped["rounds"][0]["calls"] == 1 and looped["rounds"][1]["calls"] == 1
    assert bad == BAD.format(5)
    assert wrong.startswith("Error executing tool kag_query: max_rounds") and "\n" not in wrong


def _client(db_url: str, tmp_path: Path, env: dict[str, str]) -> Client:
    """`krag mcp` over stdio, as tests/ui/test_mcp_server.py starts it, with ``env`` added."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ui.cli.app", "mcp"],
        env=krag_env(db_url, tmp_path) | env, cwd=str(tmp_path))
    return Client(params, read_timeout_seconds=60)
