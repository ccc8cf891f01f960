"""`krag ask` as a user runs it: streamed answer, sources, --json, --mermaid, the retrieval
rounds, bad input.

A real `krag` process where the process is the point (the streamed answer and its sources,
the live round lines on stderr); options and refusals run in-process through
``ui.cli.app.main`` (the same typer app; each Python start costs seconds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graph_flows.query import loop
from graph_flows.testing.llm_server import LLMServer
from storage import KnowledgeStore
from tests.procs import run_cli
from tests.query_fixtures import seed_graph
from tests.ui.loop_fixtures import FOLLOW, QUESTION, llm_script, seed_two_hop

ROOT = Path(__file__).resolve().parents[2]


def krag(args: list[str], db_url: str, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KRAG_")}
    env.update({"KRAG_DATABASE_URL": db_url, "KRAG_CHAT_MODEL": "none", **extra})
    return subprocess.run([sys.executable, "-m", "ui.cli.app", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def ask_env(db_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """The environment `krag()` gives its process, set for in-process runs."""
    for key in [k for k in os.environ if k.startswith("KRAG_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("KRAG_DATABASE_URL", db_url)
    monkeypatch.setenv("KRAG_CHAT_MODEL", "none")
    monkeypatch.chdir(tmp_path)  # no stray .env
    return db_url


def ask(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess:
    """`krag ask ARGS` in this process, returned as `krag()` returns a process."""
    code, out, err = run_cli(capsys, "ask", *args)
    return subprocess.CompletedProcess(["krag", "ask", *args], code, out, err)


def _seed(db_url: str) -> None:
    store = KnowledgeStore.open(db_url, embedding_model="local:minilm", embedding_dim=384)
    seed_graph(store)
    store.close()


@pytest.mark.slow
def test_ask_streams_answer_then_sources(ask_env: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    db_url = ask_env
    _seed(db_url)
    r = krag(["ask", "What did Ada Lovelace write?", "--mermaid"], db_url)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("No-LLM mode: extractive answer")
    assert "Sources:" in r.stdout and "(history.md)" in r.stdout  # the short name
    assert "graph TD" in r.stdout and "answer mode: extractive" in r.stdout
    assert "legend: " in r.stdout and "green node = the answer" in r.stdout  # the diagram's key
    # the --json result in this process (the process above is the streamed one)
    conf = json.loads(ask(capsys, "What did Ada Lovelace write?", "--json").stdout
                      )["answer_confidence"]
    assert conf["label"] in {"high", "medium", "low"} and "Ada Lovelace" in conf["reason"]
    said = f"confidence: {conf['label']} ({conf['reason']})"  # the --json label, and why
    assert said in " ".join(r.stdout.split())


def test_ask_json_has_the_whole_result(ask_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    _seed(ask_env)
    r = ask(capsys, "pgvector", "--json")
    out = json.loads(r.stdout)
    assert {"answer", "facts", "citations", "mermaid", "search_metrics",
            "answer_confidence"} <= out.keys()
    assert out["entities"] and all(isinstance(e["aliases"], list) for e in out["entities"])
    r = ask(capsys, "pgvector", "--json", "--max-hops", "2")
    assert json.loads(r.stdout)["search_metrics"]["max_hops"] == 2
    r = ask(capsys, "pgvector", "--max-hops", "4")
    assert r.returncode == 2 and "error: max_hops must be 1..3, got 4." in r.stderr


def test_ask_bad_input_is_one_line(ask_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    r = ask(capsys, "x" * 10_001)
    assert r.returncode == 2
    assert r.stderr.strip() == "error: query is 10,001 bytes; the limit is 10,000 bytes."


def test_ask_as_of_bad_date_is_one_line(ask_env: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    r = ask(capsys, "pgvector", "--as-of", "yesterday")
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: as_of 'yesterday' is not a date: use YYYY, YYYY-MM, "
                                "YYYY-MM-DD or an ISO 8601 date-time")


# -- the query loop's rounds ----------------------------------------------------------------
def test_ask_shows_the_rounds_and_refuses_bad_max_rounds(
        ask_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    _seed(ask_env)
    r = ask(capsys, "What did Ada Lovelace write?")
    assert r.returncode == 0, r.stderr
    # the seeded store has no passage vectors: one round, said after the answer
    (line,) = [x for x in r.stdout.splitlines() if x.startswith("round ")]
    assert line.startswith("round 1: the question — ")
    assert line.endswith("; stopped: " + loop.NO_PASSAGES.format(recipe="split"))
    assert "round " not in r.stderr  # no live lines when the loop does not loop
    out = json.loads(ask(capsys, "pgvector", "--json", "--max-rounds", "1").stdout)
    assert [(x["round"], x["by"], x["stop"]) for x in out["rounds"]] == [
        (1, "question", loop.MAX_REACHED)]
    for bad in ("0", "9"):
        r = ask(capsys, "pgvector", "--max-rounds", bad)
        assert r.returncode == 2 and r.stdout == ""
        assert r.stderr.strip() == (f"error: max_rounds must be 1..4 (got {bad}); "
                                    "1 turns the loop off")
    r = ask(capsys, "pgvector", "--max-rounds", "two")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("error: Invalid value for '--max-rounds'")


@pytest.mark.slow
def test_ask_prints_each_follow_up_round_as_it_happens(
        store: KnowledgeStore, ask_env: str, llm_server: LLMServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A real `krag ask` against the fake LLM server: the planner asks one follow-up, then
    finds the evidence enough; the rounds go to stderr as they end, the answer to stdout."""
    seed_two_hop(store)
    answer = "Orsina Kael grew up in Trelvik [P1]."
    llm_server.script(*llm_script(answer))
    r = krag(["ask", QUESTION, "--max-rounds", "3"], ask_env,
             KRAG_CHAT_MODEL="ollama:qwen2.5:7b-instruct",
             KRAG_OLLAMA_HOST=llm_server.url)
    assert r.returncode == 0, r.stderr
    live = [x for x in r.stderr.splitlines() if x.startswith("round ")]
    assert live[0].startswith("round 1: the question — ") and "planner 1 call" in live[0]
    assert live[1].startswith(f"round 2: {FOLLOW['sub_question']} (asked by the planner, "
                              f"bridge: {FOLLOW['bridge_entity']}) — +")
    assert live[1].endswith(f"; stopped: {loop.SUFFICIENT}") and len(live) == 2
    assert r.stdout.startswith(answer)  # the answer stream is whole, no round line inside
    details = [x for x in r.stdout.splitlines() if x.startswith("round ")]
    assert details == live  # and the same lines after the answer
    # in this process, no LLM (as the process above would be without its KRAG_CHAT_MODEL)
    out = json.loads(ask(capsys, QUESTION, "--json", "--max-rounds", "1").stdout)
    assert [x["stop"] for x in out["rounds"]] == [loop.MAX_REACHED]
