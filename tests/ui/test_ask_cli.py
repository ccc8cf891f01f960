"""`krag ask` as a user runs it: streamed answer, sources, --json, --mermaid, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from storage import KnowledgeStore
from tests.query_fixtures import seed_graph

ROOT = Path(__file__).resolve().parents[2]


def krag(args: list[str], db_url: str, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KRAG_")}
    env.update(KRAG_DATABASE_URL=db_url, KRAG_CHAT_MODEL="none", **extra)
    return subprocess.run([sys.executable, "-m", "ui.cli.app", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def _seed(db_url: str) -> None:
    store = KnowledgeStore.open(db_url, embedding_model="local:minilm", embedding_dim=384)
    seed_graph(store)
    store.close()


@pytest.mark.slow
def test_ask_streams_answer_then_sources(db_url: str) -> None:
    _seed(db_url)
    r = krag(["ask", "What did Ada Lovelace write?", "--mermaid"], db_url)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("No-LLM mode: extractive answer")
    assert "Sources:" in r.stdout and "(history:history.md)" in r.stdout
    assert "graph LR" in r.stdout and "answer mode: extractive" in r.stdout
    assert "confidence: " in r.stdout and "cited fact" in r.stdout


@pytest.mark.slow
def test_ask_json_has_the_whole_result(db_url: str) -> None:
    _seed(db_url)
    r = krag(["ask", "pgvector", "--json"], db_url)
    out = json.loads(r.stdout)
    assert {"answer", "facts", "citations", "mermaid", "search_metrics",
            "answer_confidence"} <= out.keys()
    r = krag(["ask", "pgvector", "--json", "--max-hops", "2"], db_url)
    assert json.loads(r.stdout)["search_metrics"]["max_hops"] == 2
    r = krag(["ask", "pgvector", "--max-hops", "4"], db_url)
    assert r.returncode == 2 and "error: max_hops must be 1..3, got 4." in r.stderr


@pytest.mark.slow
def test_ask_bad_input_is_one_line(db_url: str) -> None:
    r = krag(["ask", "x" * 10_001], db_url)
    assert r.returncode == 2
    assert r.stderr.strip() == "error: query is 10,001 bytes; the limit is 10,000 bytes."


@pytest.mark.slow
def test_ask_as_of_bad_date_is_one_line(db_url: str) -> None:
    r = krag(["ask", "pgvector", "--as-of", "yesterday"], db_url)
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: as_of 'yesterday' is not a date: use YYYY, YYYY-MM, "
                                "YYYY-MM-DD or an ISO 8601 date-time")
