"""`langgraph dev` (in-memory LangGraph server) loads both graphs and serves their HTTP API:
the drawings Studio shows (the query loop's cycle), runs, streamed rounds, one-line refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from graph_flows.query import loop
from storage import KnowledgeStore
from tests.procs import free_port
from tests.query_fixtures import seed_graph

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def langgraph_server(db_url: str, tmp_path: Path):
    cli = Path(sys.executable).parent / "langgraph"
    if not cli.exists():
        pytest.skip("langgraph-cli is not installed in this environment")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KRAG_")}
    env.update(KRAG_DATABASE_URL=db_url, KRAG_CHAT_MODEL="none",
               LANGGRAPH_CLI_NO_ANALYTICS="1", PYTHONPATH=str(ROOT),
               PYTHONUNBUFFERED="1")  # the log is read while the server runs
    log = (tmp_path / "langgraph.log").open("w")
    proc = subprocess.Popen(
        [str(cli), "dev", "--port", str(port), "--no-browser", "--no-reload",
         "--config", str(ROOT / "langgraph.json")],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited: {(tmp_path / 'langgraph.log').read_text()}")
            time.sleep(0.5)
        else:
            pytest.fail(f"langgraph dev not ready: {(tmp_path / 'langgraph.log').read_text()}")
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


@pytest.mark.slow
def test_langgraph_dev_serves_both_graphs(langgraph_server: str, db_url: str) -> None:
    store = KnowledgeStore.open(db_url, embedding_model="local:minilm", embedding_dim=384)
    seed_graph(store)
    store.close()
    with httpx.Client(base_url=langgraph_server, timeout=120) as client:
        assistants = client.post("/assistants/search", json={}).json()
        assert {"query", "indexing"} <= {a["graph_id"] for a in assistants}
        for assistant in assistants:  # what Studio reads to draw its input form
            schemas = client.get(f"/assistants/{assistant['assistant_id']}/schemas").json()
            field = "query" if assistant["graph_id"] == "query" else "paths"
            assert field in (schemas.get("input_schema") or {}).get("properties", {}), schemas
            # what Studio's graph view draws: the nodes and edges of the graph
            drawn = client.get(f"/assistants/{assistant['assistant_id']}/graph")
            assert drawn.status_code == 200, drawn.text[:500]
            ids = {n["id"] for n in drawn.json()["nodes"]}
            node = "retrieve_knowledge" if assistant["graph_id"] == "query" else "extract"
            assert {"__start__", node, "__end__"} <= ids, ids
            assert drawn.json()["edges"], drawn.json()
        out = client.post("/runs/wait", json={
            "assistant_id": "query", "input": {"query": "What did Ada Lovelace write?"}}).json()
        assert out["answer_mode"] == "extractive", json.dumps(out)[:2000]
        assert any("first program" in c["fact"] for c in out["citations"])
        ingest = client.post("/runs/wait", json={
            "assistant_id": "indexing",
            "input": {"texts": ["Grace Hopper created the COBOL language at Remington Rand."],
                      "source": "api-test"}}).json()
        assert "error" not in ingest, json.dumps(ingest)[:2000]
        # a run on a thread with an unknown input key names the key it meant, for both graphs
        # (was tests/query/test_query_graph.py::test_langgraph_dev_names_unknown_input_keys,
        # which started a server of its own)
        for graph_id, payload, message in (
                ("query", {"question": "Who?"}, "did you mean 'query'?"),
                ("indexing", {"text": ["x"]}, "did you mean 'texts'?")):
            thread = client.post("/threads", json={}).json()["thread_id"]
            out = client.post(f"/threads/{thread}/runs/wait", json={
                "assistant_id": graph_id, "input": payload}).json()
            assert message in str(out), out
            assert "query is empty" not in str(out)


def test_graph_schemas_build_on_this_python() -> None:
    """Studio's input form needs the JSON schemas (typing_extensions TypedDicts on < 3.12)."""
    from graph_flows.indexing.graph import graph as indexing
    from graph_flows.query.graph import graph as query

    assert query.get_input_jsonschema()["required"] == ["query"]
    assert "answer" in query.get_output_jsonschema()["properties"]
    assert {"paths", "texts"} <= set(indexing.get_input_jsonschema()["properties"])
    assert "chunks" in indexing.get_output_jsonschema()["properties"]


def test_both_graphs_draw_with_the_input_check_in_place() -> None:
    """get_graph() is what Studio's graph view calls; the unknown-key check stays."""
    from graph_flows.indexing.graph import graph as indexing
    from graph_flows.query.analyze import InvalidQueryError
    from graph_flows.query.graph import graph as query

    drawn = query.get_graph().draw_mermaid()
    for edge in ("__start__ --> analyze_query", "analyze_query --> retrieve_knowledge",
                 "build_context -.-> generate_response"):
        assert edge in drawn, drawn
    assert "claim_batch" in indexing.get_graph().draw_mermaid()
    with pytest.raises(InvalidQueryError, match="did you mean 'query'"):
        query.invoke({"question": "x"})
    with pytest.raises(ValueError, match="unknown field 'path'"):
        indexing.invoke({"path": ["x"]})


def _sse(text: str) -> list[tuple[str, Any]]:
    """(event, data) pairs of a server-sent-events body."""
    events, name = [], ""
    for line in text.splitlines():
        if line.startswith("event:"):
            name = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            events.append((name, json.loads(line.removeprefix("data:").strip() or "null")))
    return events


@pytest.mark.slow
def test_langgraph_dev_draws_the_loop_and_runs_it(langgraph_server: str, db_url: str,
                                                  tmp_path: Path) -> None:
    """Studio's view of the query loop: the cycle drawn (both graphs draw), the rounds
    streamed and in the final values, a bad max_rounds in the run context (or an assistant's
    context, as Studio saves it), an unknown input key and a NUL in the query refused in one
    line (and a bare string as the indexing graph's texts), and logged by the server as one
    warning line each, without a traceback."""
    store = KnowledgeStore.open(db_url, embedding_model="local:minilm", embedding_dim=384)
    seed_graph(store)
    store.close()
    question = {"query": "What did Ada Lovelace write?"}
    with httpx.Client(base_url=langgraph_server, timeout=120) as client:
        drawn = client.get("/assistants/query/graph").json()
        edges = {(e["source"], e["target"]): e.get("conditional", False)
                 for e in drawn["edges"]}
        assert edges.get(("retrieve_knowledge", "assess_evidence")) is False, edges
        assert edges.get(("assess_evidence", "retrieve_knowledge")) is True, edges
        assert edges.get(("assess_evidence", "build_context")) is True, edges
        indexing = client.get("/assistants/indexing/graph")
        assert indexing.status_code == 200 and indexing.json()["edges"], indexing.text[:500]

        bad = client.post("/runs/wait", json={"assistant_id": "query", "input": question,
                                              "context": {"max_rounds": 9}}).json()
        assert bad["__error__"] == {"error": "InvalidQueryError", "message": (
            "max_rounds must be 1..4 (got 9); 1 turns the loop off")}, bad
        saved = client.post("/assistants", json={"graph_id": "query", "name": "nine rounds",
                                                  "context": {"max_rounds": 9}})
        assert saved.status_code == 200, saved.text[:500]
        bad = client.post("/runs/wait", json={
            "assistant_id": saved.json()["assistant_id"], "input": question}).json()
        assert bad["__error__"]["message"].startswith("max_rounds must be 1..4 (got 9)"), bad
        unknown = client.post("/runs/wait", json={
            "assistant_id": "query", "input": {"question": question["query"]}}).json()
        assert unknown["__error__"]["message"].startswith(
            "unknown field 'question'; did you mean 'query'?"), unknown
        nul = client.post("/runs/wait", json={
            "assistant_id": "query", "input": {"query": "Ada\u0000?"}}).json()
        assert nul["__error__"] == {"error": "InvalidQueryError", "message": (
            "query contains a control character (U+0000 at character 4); remove it and "
            "try again.")}, nul
        listed = client.post("/runs/wait", json={
            "assistant_id": "indexing", "input": {"texts": "not a list"}}).json()
        assert listed["__error__"] == {"error": "InvalidIndexingInputError", "message": (
            "texts must be a list of document texts, got str 'not a list'; e.g. "
            "texts: [\"...\"].")}, listed

        thread = client.post("/threads", json={}).json()["thread_id"]
        streamed = client.post(f"/threads/{thread}/runs/stream", json={
            "assistant_id": "query", "input": question, "context": {"max_rounds": 2},
            "stream_mode": ["values", "custom"]})
        events = _sse(streamed.text)
    live = [data["round"] for name, data in events if name == "custom" and "round" in data]
    final = [data for name, data in events if name == "values"][-1]
    assert final["rounds"] == live and [r["round"] for r in live] == [1], live
    # the seeded store has no passage vectors: recipe 'ppr' runs 'split', one round
    assert live[0]["stop"] == loop.NO_PASSAGES.format(recipe="split")
    assert final["answer_mode"] == "extractive"
    log = (tmp_path / "langgraph.log").read_text()
    refused = [line for line in log.splitlines() if "run refused: " in line]
    assert len(refused) == 5 and all("warning" in line for line in refused), refused
    assert sum("query contains a control character" in line for line in refused) == 1
    assert "Traceback" not in log and "Run encountered an error" not in log, log[-3000:]
