"""Secrets: the OpenAI API key and database passwords are never logged or shown — not by
`krag doctor`, not in ingest/query errors (state["errors"], extraction_status.error), not
in any log record at DEBUG, stdout or stderr."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from sqlalchemy import text

from graph_flows import query_flow
from graph_flows.indexing.context import IndexingContext
from graph_flows.services import ingest as runner
from graph_flows.shared import providers
from graph_flows.shared.providers import make_chat_model
from graph_flows.shared.resources import Resources, use_resources
from graph_flows.shared.settings import Settings
from graph_flows.testing.llm_server import LLMServer
from storage import KnowledgeStore
from tests.ui.test_doctor_cli import run_krag

KEY = "sk-test-SECRET-7f3a9c1e5b2d4f6a8c0e"
PASSWORD = "hunter2-SECRET-pw"


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    providers.clear_probe_cache()
    runner.clear_model_cache()
    yield
    runner.clear_model_cache()


@pytest.mark.parametrize("reachable", [True, False])
@pytest.mark.slow
def test_doctor_never_shows_the_key(llm_server: LLMServer, db_url: str, tmp_path,
                                    reachable: bool) -> None:
    base = llm_server.openai_url if reachable else "http://127.0.0.1:9/v1"
    env = {"KRAG_DATABASE_URL": db_url, "KRAG_CHAT_MODEL": "openai:gpt-4o-mini",
           "KRAG_OPENAI_API_KEY": KEY, "KRAG_OPENAI_BASE_URL": base}
    for args in (["doctor"], ["doctor", "--json"]):
        r = run_krag(args, env, tmp_path)
        assert KEY not in r.stdout + r.stderr
        assert "SECRET" not in r.stdout + r.stderr
    report = json.loads(r.stdout)  # the last run above: doctor --json
    assert report["settings"]["openai_api_key"] == "****"
    assert report["providers"]["chat"]["ok"] is reachable
    if reachable:  # the key did reach the server, only there
        assert any(h.headers.get("authorization") == f"Bearer {KEY}"
                   for h in llm_server.requests)


@pytest.mark.slow
def test_doctor_masks_database_password(tmp_path) -> None:
    env = {"KRAG_DATABASE_URL": f"postgresql://krag:{PASSWORD}@127.0.0.1:9/krag",
           "KRAG_CHAT_MODEL": "none", "KRAG_OPENAI_API_KEY": KEY}
    for args in (["doctor"], ["doctor", "--json"], ["ask", "hello"]):
        r = run_krag(args, env, tmp_path)
        assert PASSWORD not in r.stdout + r.stderr and KEY not in r.stdout + r.stderr
        if args == ["doctor"]:  # (was test_doctor_cli's own process, with another password)
            assert r.returncode == 1
            assert "cannot connect to postgresql://krag:***@127.0.0.1:9/krag" in r.stdout


def _settings(llm_server: LLMServer) -> Settings:
    return Settings(_env_file=None, chat_model="openai:gpt-4o-mini", openai_api_key=KEY,
                    openai_base_url=llm_server.openai_url, llm_timeout_s=5)


@pytest.mark.parametrize("status", [401, 500])
def test_ingest_and_query_errors_and_logs_never_contain_the_key(
        llm_server: LLMServer, store: KnowledgeStore, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str], status: int) -> None:
    caplog.set_level(logging.DEBUG)
    cfg = _settings(llm_server)
    model = make_chat_model(cfg.chat_model, cfg, temperature=0, streaming=False)
    llm_server.fail_next(50, status)
    res = Resources(cfg, store, DeterministicFakeEmbedding(size=384), chat_override=model)
    with use_resources(res):
        out = runner.run_indexing({"texts": ["Ada Lovelace worked with Charles Babbage."]},
                                  IndexingContext())
        assert out["chunks"]["failed"] == 1
        answer = query_flow.invoke({"query": "Who worked with Charles Babbage?"})
    with store.connect() as conn:
        errors = [r.error for r in conn.execute(text("SELECT error FROM extraction_status"))]
    assert errors and all(e and str(status) in e for e in errors)
    assert answer["errors"]
    shown = json.dumps([out, answer, errors], default=str)
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''} {r.__dict__}" for r in caplog.records)
    captured = capsys.readouterr()
    for where, value in (("state/errors", shown), ("logs", logged),
                         ("stdout", captured.out), ("stderr", captured.err)):
        assert KEY not in value and "SECRET" not in value, where
    assert len(llm_server.requests) >= 2  # the calls really went out (with the key)


def test_settings_repr_and_masked_never_show_secrets() -> None:
    cfg = Settings(_env_file=None, openai_api_key=KEY,
                   database_url=f"postgresql://krag:{PASSWORD}@db:5432/krag")
    for shown in (repr(cfg), str(cfg), json.dumps(cfg.masked(), default=str)):
        assert KEY not in shown
    assert PASSWORD not in json.dumps(cfg.masked(), default=str)
