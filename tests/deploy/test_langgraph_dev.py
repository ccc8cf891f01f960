"""`langgraph dev` (in-memory LangGraph server) loads both graphs and serves their HTTP API."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

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
               LANGGRAPH_CLI_NO_ANALYTICS="1", PYTHONPATH=str(ROOT))
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
