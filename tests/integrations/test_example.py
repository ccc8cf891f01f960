"""docs/examples/langchain_agent.py runs as a user runs it (its own process, the database
from KRAG_DATABASE_URL, offline): the retriever's passages, the LCEL chain's answer, the
ReAct agent's call of kag_query and its answer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from storage.roles import prepare_embedded

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "langchain_agent.py"


def test_the_langchain_example_runs(corpus_url: str, tmp_path: Path) -> None:
    app_url, owner_url = prepare_embedded(corpus_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KRAG_")}
    env |= {"KRAG_DATABASE_URL": app_url, "KRAG_DATABASE_OWNER_URL": owner_url,
            "KRAG_CHAT_MODEL": "none", "KRAG_SCOPE": "default",
            "KRAG_REQUEST_TIMEOUT_S": "300", "KRAG_SEARCH_TIMEOUT_S": "60"}
    done = subprocess.run([sys.executable, str(EXAMPLE)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    passages = out.split("== passages from KragRetriever\n")[1].split("\n\n")[0].splitlines()
    assert len(passages) == 3 and passages[0].startswith("[1] The Relational Model")
    assert "== LCEL chain\nCodd proposed the relational model [1]" in out
    agent = out.split("== ReAct agent with kag_query\n")[1].splitlines()
    assert agent[0] == f"human: {QUESTION}"
    assert agent[1] == "ai: calls kag_query"
    assert agent[2].startswith(f"tool: Knowledge Graph Results for: {QUESTION} (+")
    assert agent[3].startswith("ai: Codd proposed the relational model [F1]")


QUESTION = "What did Edgar Codd propose, and which systems were built on it?"
